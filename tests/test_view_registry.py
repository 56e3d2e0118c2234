"""The view registry (app.view_registry): the dashboard, its export menus, File > Export figure and file
names are built from it, and a new view is one class plus one registry line."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtWidgets  # noqa: E402

from app import view_registry as registry  # noqa: E402
from app.views import Dashboard  # noqa: E402


class DummyView(QtWidgets.QLabel):
    """A view that records what the dashboard gives it (vocabulary, model, clear)."""

    def __init__(self) -> None:
        super().__init__("dummy view")
        self.calls = []

    def set_vocabulary(self, vocab) -> None:
        self.calls.append(("vocabulary", vocab))

    def set_model(self, model, corpus) -> None:
        self.calls.append(("model", model, corpus))

    def clear(self) -> None:
        self.calls.append(("clear",))


class _Plain:
    """A fitted HMM as the dashboard reads it (arrays, no history)."""
    kind = "standard"
    n_states, n_symbols = 2, 3
    startprob_ = np.array([0.5, 0.5])
    transmat_ = np.array([[0.9, 0.1], [0.2, 0.8]])
    emissionprob_ = np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])
    history_ = None

    def arrays(self):
        return {"params": {"startprob": self.startprob_, "transmat": self.transmat_,
                           "emissionprob": self.emissionprob_}}

    def get_config(self):
        return {"n_states": 2, "n_symbols": 3, "seed": 1}

    def predict(self, seqs):
        return [np.zeros(len(s), dtype=int) for s in seqs]

    def score_per_sequence(self, seqs):
        return np.zeros(len(seqs))

    def decode(self, seqs):
        return [np.zeros(len(s), dtype=int) for s in seqs], np.zeros(len(seqs))

    def predict_proba(self, seqs):
        return [np.full((len(s), 2), 0.5) for s in seqs]


def test_dashboard_is_built_from_the_registry(qtbot):
    d = Dashboard()
    qtbot.addWidget(d)
    views = d.views()
    assert set(views) == {"dashboard"} | {v.name for v in registry.VIEWS}
    for info in registry.VIEWS:
        assert views[info.name].objectName() == info.name
        assert views[info.name]._export_actions[0].text() == "Export figure..."
        texts = [a.text() for a in views[info.name]._export_actions]
        assert ("Export matrices and embeddings (CSV)..." in texts) == info.csv, info.name
        assert ("Export dashboard..." in texts) == (info.name != "live" and registry.in_live_page(info.name))
    # the tabs are the registry's pages, in its order, with its titles (the tags page hidden until tagged data)
    tabs = [(d.tabs.tabText(i), d.tabs.widget(i)) for i in range(d.tabs.count())]
    assert tabs == [(p.page, views[p.name]) for p in registry.pages()]
    assert [d.tabs.isTabVisible(i) for i in range(d.tabs.count())] == [p.shown for p in registry.pages()]
    # a part is the widget its parent holds
    assert views["transmat"] is d.heatmaps.transmat and views["top_words"] is d.heatmaps.top_words
    assert d.file_name("transmat", "svg") == "transitions.svg"
    d.set_file_stem("dense-em_n3_l2_seed0")
    assert d.file_name("overview", "pdf") == "dense-em_n3_l2_seed0_before_after.pdf"
    assert d.file_name("dashboard", "png") == "dense-em_n3_l2_seed0_dashboard.png"


def test_a_new_view_is_one_registry_line(qtbot, monkeypatch):
    line = registry.ViewInfo("dummy", "A dummy view", "dummy_word", page="Dummy",
                             widget=f"{__name__}:DummyView", csv=True,
                             needs=frozenset({"vocabulary", "model", "job"}))
    monkeypatch.setattr(registry, "VIEWS", registry.VIEWS + (line,))
    d = Dashboard()
    qtbot.addWidget(d)
    view = d.views()["dummy"]
    assert isinstance(view, DummyView) and view.objectName() == "dummy"
    assert d.tabs.tabText(d.tabs.indexOf(view)) == "Dummy"
    assert [a.text() for a in view._export_actions] == ["Export figure...", "Export matrices and embeddings (CSV)..."]
    assert d.file_name("dummy", "png") == "dummy_word.png"
    d.set_vocabulary(["a", "b", "c"])
    model, corpus = _Plain(), [np.array([0, 1, 2])]
    d.set_model(model, corpus)
    d.clear()
    assert view.calls == [("vocabulary", ["a", "b", "c"]), ("model", model, corpus), ("clear",)]
    # a view without "job" in its needs keeps its content when the job changes
    monkeypatch.setattr(registry, "VIEWS", registry.VIEWS[:-1] + (dataclasses.replace(line, needs=frozenset()),))
    d2 = Dashboard()
    qtbot.addWidget(d2)
    d2.set_vocabulary(["x"])
    d2.clear()
    assert d2.views()["dummy"].calls == []


def test_export_figure_dialog_lists_titles_and_names_files(make_window, monkeypatch, tmp_path):
    """File > Export figure: the registry's titles (not internal names); the file is named after the view."""
    seen = {}

    def get_item(parent, title, label, items, current, editable):
        if label == "Which view?":
            seen["items"] = list(items)
            return registry.view_info("transmat").title, True
        return "1×", True

    def get_save(parent, caption, start, filters):
        seen["start"] = start
        return str(tmp_path / "a.png"), "PNG image (*.png)"
    monkeypatch.setattr(QtWidgets.QInputDialog, "getItem", staticmethod(get_item))
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(get_save))
    window = make_window()
    window.results_ctl.export_figure_dialog()
    assert seen["items"] == ["Whole dashboard (current tab)"] + [v.title for v in registry.VIEWS]
    assert os.path.basename(seen["start"]) == "transitions.png"
    assert (tmp_path / "a.png").stat().st_size > 1000

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

    resolved_config = get_config

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


def test_export_figure_dialog_lists_titles_and_names_files(make_window, monkeypatch, tmp_path, qtbot):
    """File > Export figure (issue 24.4): every view at once by its registry title (no internal names),
    the parts of a page beneath it, only pages that show (no Tags without tagged data); the file is named
    after the view; the PNG resolution dialog offers the figure's pixel sizes and its title is not cut."""
    from PySide6 import QtCore, QtGui
    from app.export import ViewChooser, figure_size
    seen = {}

    def get_save(parent, caption, start, filters):
        seen["start"] = start
        return str(tmp_path / "a.png"), "PNG image (*.png)"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(get_save))
    window = make_window()
    d = window.dashboard

    def answer():
        dlg = QtWidgets.QApplication.activeModalWidget()
        if dlg is None:
            QtCore.QTimer.singleShot(20, answer)
            return
        if isinstance(dlg, ViewChooser):
            seen["items"] = dlg.titles()
            tree = dlg.tree
            fm = tree.fontMetrics()
            seen["fits"] = all(tree.visualItemRect(it).left() + fm.horizontalAdvance(it.text(0))
                               <= tree.viewport().width() for it in tree.findItems(
                                   "", QtCore.Qt.MatchFlag.MatchContains | QtCore.Qt.MatchFlag.MatchRecursive))
            a_title = registry.view_info("transmat").title
            seen["parent_of_A"] = tree.findItems(a_title, QtCore.Qt.MatchFlag.MatchRecursive)[0].parent().text(0)
            dlg.select(registry.view_info("transmat").title)
            dlg.accept()
            QtCore.QTimer.singleShot(20, answer)
            return
        combo = dlg.findChild(QtWidgets.QComboBox)
        seen["scale_title"] = dlg.windowTitle()
        seen["scale_width"] = dlg.width()
        seen["scales"] = [combo.itemText(i) for i in range(combo.count())]
        combo.setCurrentIndex(0)
        dlg.accept()
    QtCore.QTimer.singleShot(20, answer)
    window.results_ctl.export_figure_dialog()
    # (B shows as a heatmap: its top-words table, which shows for a vocabulary, is not offered)
    titles = [v.title for v in registry.VIEWS if v.name not in ("tags", "state_tags", "tagging", "top_words")]
    assert seen["items"] == ["Whole dashboard (current tab: Dashboard)"] + titles
    assert not {v.name for v in registry.VIEWS} & set(seen["items"])      # no internal names
    assert seen["fits"]                                                    # no title elided
    assert seen["parent_of_A"] == registry.view_info("matrices").title
    assert os.path.basename(seen["start"]) == "transitions.png"
    size = figure_size(d.transmat)
    assert seen["scales"][1] == f"2x  ({2 * size.width()} x {2 * size.height()} pixels)"
    # the title bar holds the title (bold, plus icon and three buttons), as the screenshot shows
    title_px = QtGui.QFontMetrics(QtGui.QFont(window.font().family(), weight=QtGui.QFont.Weight.Bold)
                                  ).horizontalAdvance(seen["scale_title"])
    assert seen["scale_width"] >= title_px + 4 * 28
    img = QtGui.QImage(str(tmp_path / "a.png"))
    assert (img.width(), img.height()) == (size.width(), size.height())   # 1x chosen
    # a tagged corpus adds the Tags page and its parts
    d.tabs.setTabVisible(d.tabs.indexOf(d.tags_page), True)
    names = [n for n, _t, _o in d.export_choices()]
    assert names[-3:] == ["tags", "state_tags", "tagging"]
    # a vocabulary-sized B shows as each state's top words: that is offered, the hidden heatmap is not
    rng = np.random.default_rng(0)
    d.heatmaps.set_params({"emissionprob": rng.dirichlet(np.ones(300), 4)})
    names = [n for n, _t, _o in d.export_choices()]
    assert "top_words" in names and "emission" not in names

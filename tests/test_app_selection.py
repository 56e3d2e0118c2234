"""Issue 24 items 2 and 10: a new job replaces the selection; Cancel acts on what is selected and asks
before cancelling several; Compare needs exactly two; Score on data shows its result in full.  Selecting
another job while the Decode or Overview tab is shown shows that job there."""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QMessageBox  # noqa: E402

from app.modelspec import ModelSpec  # noqa: E402


def long_job(window, n=3):
    """A standard HMM that trains until cancelled (the demo data set)."""
    return window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=n, n_iter=10 ** 7, tol=-1e300))


def test_a_new_job_replaces_the_selection(make_window, qtbot):
    w = make_window()
    w.data_ctl.load_demo()
    panel = w.jobs_panel
    a, b = long_job(w), long_job(w, 4)
    for job in (a, b):                                  # the user selects both rows (Ctrl+click)
        panel.items[job.id].setSelected(True)
    assert set(panel.selected_jobs()) == {a, b} and set(w.state.selection) == {a, b}
    # "Show new jobs" is on: c replaces the selection (JobsPanel.select says ClearAndSelect explicitly: a plain
    # setCurrentItem follows the keyboard's modifiers, and with Ctrl still down from Ctrl+T it added c to the
    # selection; offscreen Qt cannot hold a modifier down, so this checks the outcome only)
    c = long_job(w, 5)
    assert panel.selected_jobs() == [c] and w.state.selection == [c] and w.current_job is c
    # Cancel selected (the button and Ctrl+.) acts on c only, without asking
    asked = []
    qtbot_patch = pytest.MonkeyPatch()
    qtbot_patch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: asked.append(a) or
                                                              QMessageBox.StandardButton.No))
    try:
        w.menus.act_cancel.trigger()
        qtbot.waitUntil(lambda: c.state.is_final, timeout=20000)
        assert not asked and not a.state.is_final and not b.state.is_final
        # several selected: asked first; "No" cancels nothing, "Yes" cancels exactly those
        for job in (a, b):
            panel.items[job.id].setSelected(True)
        panel.items[c.id].setSelected(False)
        panel.cancel_sel.click()
        assert len(asked) == 1 and "these 2 jobs" in asked[0][2] and f"Job {a.id}" in asked[0][2]
        assert not a.state.is_final and not b.state.is_final
        qtbot_patch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes))
        panel.cancel_sel.click()
        qtbot.waitUntil(lambda: a.state.is_final and b.state.is_final, timeout=20000)
    finally:
        qtbot_patch.undo()


def test_compare_needs_exactly_two_models(make_window, qtbot, monkeypatch):
    w = make_window()
    w.data_ctl.load_demo()
    jobs = [w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=n, n_iter=2, tol=0.0)) for n in (2, 3, 4)]
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    said = []
    monkeypatch.setattr(QMessageBox, "information", staticmethod(lambda *a, **k: said.append(a[2])))
    compared = []
    monkeypatch.setattr(w.results_ctl, "compare_jobs", lambda a, b, on_done=None: compared.append((a, b)))
    w.jobs_panel.tree.selectAll()
    w.menus.act_compare.trigger()
    assert not compared and said and "exactly two" in said[0] and "3 selected" in said[0]
    w.jobs_panel.tree.clearSelection()
    for job in jobs[:2]:
        w.jobs_panel.items[job.id].setSelected(True)
    w.menus.act_compare.trigger()
    assert compared == [(jobs[0], jobs[1])]


def test_score_on_data_shows_the_result_in_full(make_window, qtbot):
    w = make_window()
    w.data_ctl.load_demo()
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=3, n_iter=3, tol=0.0))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    res = []
    w.results_ctl.score_job(job, on_done=res.append)
    qtbot.waitUntil(lambda: bool(res), timeout=30000)
    box = w.results_ctl.score_box
    assert box is not None and box.isVisible() and not box.isModal()
    for key, value in res[0].items():   # every value, at full precision (repr), not a cut-off cell
        assert key in box.text() and repr(value) in box.text()
    assert w.current_dataset.name in box.text()


def test_selecting_a_job_on_the_decode_or_overview_tab_shows_it_there(make_window, qtbot):
    """The model's parts of the dashboard are drawn while their own tab shows: before, they waited for
    the live page, and Decode stayed on "finish or open a model" until the user left the tab."""
    w = make_window()
    w.data_ctl.load_demo()
    jobs = [w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=n, n_iter=2)) for n in (3, 4)]
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    d = w.dashboard
    dec, ov = d.views()["decode"], d.views()["overview"]
    w.jobs_panel.select(jobs[0])
    d.tabs.setCurrentWidget(dec)
    qtbot.waitUntil(lambda: dec.current_path() is not None and dec.posterior_image().shape[0] == 3, timeout=5000)
    w.jobs_panel.select(jobs[1])                        # the Decode tab stays current
    qtbot.waitUntil(lambda: dec.posterior_image() is not None and dec.posterior_image().shape[0] == 4,
                    timeout=5000)
    np.testing.assert_array_equal(dec.current_path(), jobs[1].model.decode([dec.current_sequence()])[0][0])
    d.tabs.setCurrentWidget(ov)
    w.jobs_panel.select(jobs[0])
    qtbot.waitUntil(ov.has_content, timeout=5000)
    assert not d.live_visible() and d.live_update_pending   # the hidden live page's parts wait for it
    d.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: not d.live_update_pending, timeout=5000)

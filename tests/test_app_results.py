"""The Jobs panel's results table: filled from the jobs (against the core's own numbers), sorted, grouped."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QSettings, Qt  # noqa: E402

from app.jobs import JobState  # noqa: E402
from app.modelspec import ModelSpec  # noqa: E402
from qtshow import settled  # noqa: E402 - this folder


@pytest.fixture
def window(qtbot, tmp_path):
    os.environ["DENSEHMM_JOB_EXECUTOR"] = "thread"   # small models: no worker process needed
    from app.mainwindow import MainWindow
    from app.settings import Settings
    w = MainWindow(Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)))
    qtbot.addWidget(w)
    w.data_ctl.load_demo()
    yield w
    w.jobs.cancel_all()
    w.jobs.wait(20)
    os.environ.pop("DENSEHMM_JOB_EXECUTOR", None)


def _finish(qtbot, jobs):
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)


def test_results_table_fills_from_jobs_and_sorts_numerically(window, qtbot):
    from densehmm_core.metrics import normalized_nll
    from densehmm_core.standard import n_parameters_standard
    from app.panels import jobs_panel as jp
    jobs = [window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=n, n_iter=s, tol=0.0, seed=0))
            for n, s in ((2, 3), (4, 6), (3, 12))]
    _finish(qtbot, jobs)
    panel = window.jobs_panel
    ds = window.current_dataset
    for job in jobs:
        row = panel.row(job)
        item = panel.items[job.id]
        n = job.model.n_states
        # the oracle: the core scores the final model itself
        test_nll = normalized_nll(job.model.score(ds.test), ds.test)
        train_nll = normalized_nll(job.model.score(ds.train), ds.train)
        assert row["test_nll"] == pytest.approx(test_nll, rel=1e-12)
        assert row["result"] == row["test_nll"]
        assert row["train_nll"] == pytest.approx(train_nll, rel=1e-12)
        assert row["parameters"] == n_parameters_standard(n, ds.n_symbols)
        assert (row["model"], row["n"], row["iterations"]) == ("Standard", n, job.spec["n_iter"])
        assert row["stop"] == job.reason and row["device"] == "cpu"
        assert item.text(jp.C_MODEL) == "Standard" and item.text(jp.C_N) == str(n)
        assert item.text(jp.C_RESULT) == f"{test_nll:.4f}"        # the final test NLL, not "max_steps"
        assert item.text(jp.C_STOP) == job.reason == "max_steps"
        # its tooltip says what the machine value means
        assert item.toolTip(jp.C_STOP) == "max_steps: every iteration or step it was given was run"
    tree = panel.tree
    # sort by test NLL, both ways: the table's order is the order of the numbers
    for order in (Qt.AscendingOrder, Qt.DescendingOrder):
        tree.sortByColumn(jp.C_TEST, order)
        ids = panel.visible_order()
        values = [panel.rows[i]["test_nll"] for i in ids]
        assert values == sorted(values, reverse=order == Qt.DescendingOrder)
    # numbers sort as numbers (12 after 6, not before as text would)
    tree.sortByColumn(jp.C_ITER, Qt.AscendingOrder)
    assert [panel.rows[i]["iterations"] for i in panel.visible_order()] == [3, 6, 12]
    tree.sortByColumn(jp.C_PARAMS, Qt.DescendingOrder)
    assert [panel.rows[i]["n"] for i in panel.visible_order()] == [4, 3, 2]


def test_sweep_jobs_are_grouped_and_the_first_is_shown(window, qtbot):
    from app.panels import jobs_panel as jp
    window.set_pool_size(1)
    first = window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=2, tol=0.0))
    jobs = window.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=2, tol=0.0), 2)
    tree = window.jobs_panel.tree
    assert tree.topLevelItemCount() == 2                # the single job and the sweep's group
    group = window.jobs_panel.groups[jobs[0].sweep]
    assert group.childCount() == len(jobs) == 6
    assert window.jobs_panel.current_job() is jobs[0] and window.current_job is jobs[0]
    _finish(qtbot, [first] + jobs)
    assert f"{len(jobs)} jobs, {len(jobs)} done" in group.text(jp.C_NAME)
    # selecting the group row selects its jobs (e.g. for Export)
    tree.clearSelection()
    group.setSelected(True)
    assert sorted(window.jobs_panel.selected_jobs(), key=lambda j: j.id) == jobs
    # names sort naturally: n=3 before n=10
    tree.sortByColumn(jp.C_NAME, Qt.AscendingOrder)
    assert [window.jobs_panel.rows[i]["n"] for i in window.jobs_panel.visible_order()] == [2, 3, 3, 5, 5, 10, 10]
    rows = window.jobs_panel.sweep_rows(jobs[0].sweep)
    assert sorted(r["job"] for r in rows) == sorted(j.id for j in jobs)
    assert all(np.isfinite(r["test_nll"]) for r in rows)


def test_new_jobs_stay_unselected_when_the_setting_says_so(window, qtbot):
    window.jobs_panel.select_new.setChecked(False)
    assert window.settings.select_new_jobs is False
    a = window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=2, tol=0.0))
    b = window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=3, n_iter=2, tol=0.0))
    assert window.jobs_panel.current_job() is a       # the first job only (nothing was selected)
    assert window.current_job is a and b is not None
    _finish(qtbot, [a, b])


# ---------------------------------------------------------------- narrow widths
def _long_named_fasta(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "kinase_domains_uniprot_2024_subsampled_for_a_long_name.fasta"
    path.write_text("".join(f">s{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 60))}\n" for i in range(20)))
    return str(path)


def _visible_columns(panel):
    return [c for c in range(panel.tree.columnCount()) if not panel.tree.isColumnHidden(c)]


def test_a_running_jobs_time_tooltips_follow_its_time_cell(window, qtbot):
    """The Time cell ticks once a second between progress events; its tooltip, and the Job cell's line
    for Time while the column is hidden, tick with it (they kept the last event's time)."""
    from app.panels import jobs_panel as jp
    window.data_ctl.load_demo()
    running = window.jobs_ctl.start_training(
        ModelSpec.make(model_type="standard", n=6, n_iter=10 ** 6, tol=0.0, seed=3))
    panel = window.jobs_panel
    try:
        qtbot.waitUntil(lambda: running.state == JobState.RUNNING and running.step > 0, timeout=30000)
        item = panel.items[running.id]
        for hidden in (False, True):
            panel.set_hidden_columns(["time_s"] if hidden else [])
            running.started_at -= 100.0        # 100 s later, with no progress event in between
            panel._tick_times()
            text = item.text(jp.C_TIME)
            assert text.startswith("1:4" if not hidden else "3:2") and item.toolTip(jp.C_TIME) == text
            if hidden:
                assert f"{panel.column_title(jp.C_TIME)}: {text}" in item.toolTip(jp.C_NAME).split("\n")
    finally:
        panel.set_hidden_columns([])
        window.jobs_ctl.cancel_job(running)
        qtbot.waitUntil(lambda: running.state.is_final, timeout=30000)


def test_jobs_table_fits_a_narrow_dock_without_scrolling_sideways(window, qtbot, tmp_path):
    from app.panels import jobs_panel as jp
    window.show()
    window.open_files([_long_named_fasta(tmp_path)])
    qtbot.waitUntil(lambda: len(window.datasets) == 2 and not window.data_ctl.loading, timeout=30000)
    jobs = [window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=3, n_iter=4, tol=0.0, seed=0)),
            window.jobs_ctl.start_training(
                ModelSpec.make(model_type="standard_fair", n=4, l=2, n_iter=4, tol=0.0, seed=1))]
    window.data_ctl.select_dataset(0)   # the demo
    jobs.append(window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=4, tol=0.0, seed=2)))
    _finish(qtbot, jobs)
    running = window.jobs_ctl.start_training(
        ModelSpec.make(model_type="standard", n=6, n_iter=10 ** 6, tol=0.0, seed=3))
    try:
        _check_narrow_and_wide(window, qtbot)
    finally:   # closing the window with a running job would ask first
        window.jobs_ctl.cancel_job(running)
    _finish(qtbot, [running])
    # no job active: no Cancel column
    qtbot.waitUntil(lambda: window.jobs_panel.tree.isColumnHidden(jp.C_CANCEL), timeout=5000)


def _check_narrow_and_wide(window, qtbot):
    from app.panels import jobs_panel as jp
    qtbot.waitUntil(lambda: window.jobs.running_jobs() != [], timeout=30000)
    panel, tree = window.jobs_panel, window.jobs_panel.tree
    dock = window.jobs_dock
    dock.setFloating(True)
    for width in (420, 1400):
        dock.resize(width, 330)
        qtbot.waitUntil(lambda: abs(dock.width() - width) < 2, timeout=5000)
        settled(qtbot, lambda: (_visible_columns(panel), tree.viewport().width(),
                                [tree.columnWidth(c) for c in _visible_columns(panel)]))
        shown = _visible_columns(panel)
        room = tree.viewport().width()
        assert not tree.horizontalScrollBar().isVisible(), width
        assert sum(tree.columnWidth(c) for c in shown) <= room
        # the columns shown are the most important ones: a prefix of PRIORITY
        assert shown == sorted(jp.PRIORITY[:len(shown)]), width
        assert panel.minimumSizeHint().width() <= 420
        for item in panel.items.values():
            job = panel.job_for_item(item)
            lines = item.toolTip(jp.C_NAME).split("\n")
            assert lines[0] == job.name
            # every hidden column's value is in the Job cell's tooltip
            for c in panel.hidden_columns():
                if c not in (jp.C_PROG, jp.C_CANCEL):
                    assert f"{panel.column_title(c)}: {item.text(c)}" in lines
            # and every other cell's tooltip holds its full text (shown elided where it is too long)
            for c in shown:
                if c not in (jp.C_NAME, jp.C_PROG, jp.C_CANCEL) and item.text(c):
                    assert item.text(c) in item.toolTip(c), (c, item.text(c), item.toolTip(c))
        # a finished job's Cancel button is gone for good (the tree shows its item widgets
        # again after each layout: once, disabled ones came back)
        for job in window.jobs.jobs:
            btn = panel.cancel_buttons.get(job.id)
            assert btn is None or btn.isVisible() == (not job.state.is_final and jp.C_CANCEL in shown)
        if width == 420:
            assert jp.C_DATA not in shown and jp.C_DEVICE not in shown
            assert shown[:4] == [jp.C_NAME, jp.C_ID, jp.C_STATE, jp.C_PROG]   # the job number fits too
            # the buttons wrap onto a second line rather than widening the dock
            assert panel.select_new.y() > panel.cancel_sel.geometry().bottom()
            assert all(w.geometry().right() <= panel.toolbar.width()
                       for w in (panel.cancel_sel, panel.export_btn, panel.compare_btn, panel.score_btn,
                                 panel.select_new, panel.pool))
        else:
            assert {jp.C_DATA, jp.C_TEST, jp.C_CANCEL} <= set(shown)
            # one line
            assert abs(panel.select_new.geometry().center().y() - panel.cancel_sel.geometry().center().y()) <= 1
            # the Data column shows the long file name's first 200 pixels at least
            assert tree.columnWidth(jp.C_DATA) >= 200


def test_the_column_choice_is_kept_in_the_settings(window, qtbot, tmp_path):
    from app.mainwindow import MainWindow
    from app.panels import jobs_panel as jp
    from app.settings import Settings
    panel = window.jobs_panel
    menu = panel.column_menu()
    titles = [a.text() for a in menu.actions() if a.isCheckable()]
    assert "Job" not in titles and len(titles) == len(jp.COLUMNS) - 1     # Job always shows
    mad = next(a for a in menu.actions() if a.text().split(" (")[0] == "MAD")
    assert mad.isChecked()
    mad.trigger()                                   # unticked: the user hides the MAD column
    assert panel.tree.isColumnHidden(jp.C_MAD) and window.settings.jobs_hidden_columns == ["mad"]
    window.settings.sync()
    again = MainWindow(Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)))
    qtbot.addWidget(again)
    assert again.jobs_panel.user_hidden == {jp.C_MAD} and again.jobs_panel.tree.isColumnHidden(jp.C_MAD)
    assert not next(a for a in again.jobs_panel.column_menu().actions() if a.text().startswith("MAD")).isChecked()
    show_all = next(a for a in again.jobs_panel.column_menu().actions() if a.text() == "Show all columns")
    show_all.trigger()
    assert again.settings.jobs_hidden_columns == [] and again.jobs_panel.user_hidden == set()
    # a hand-edited settings file: unknown ids and "name" (Job) are ignored
    again.jobs_panel.set_hidden_columns(["name", "bogus", "device"])
    assert again.jobs_panel.user_hidden == {jp.C_DEVICE}


def test_an_infinite_test_nll_says_why_in_its_cells(window, qtbot):
    """A standard HMM gives probability 0 to a symbol its training part lacks: its Test NLL and Result
    read "inf" (in the finished colour), and their tooltips say why and what to do."""
    from app.datasets import DataSet
    from app.jobrows import INFINITE_TEST_NLL
    from app.panels import jobs_panel as jp
    rng = np.random.default_rng(0)
    train = [rng.integers(0, 3, 50) for _ in range(10)]                  # symbols 0, 1, 2
    test = [np.concatenate([rng.integers(0, 3, 49), [3]]) for _ in range(5)]   # and 3, never trained on
    window.data_ctl.add_dataset(DataSet("unseen symbol", None, train, test, vocabulary=list("ABCD")))
    job = window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=3, tol=0.0, seed=0))
    _finish(qtbot, [job])
    row = window.jobs_panel.row(job)
    assert row["test_nll"] == float("inf")
    item = window.jobs_panel.items[job.id]
    assert item.text(jp.C_TEST) == item.text(jp.C_RESULT) == "inf"
    assert item.toolTip(jp.C_TEST) == item.toolTip(jp.C_RESULT) == INFINITE_TEST_NLL
    # a finite one keeps its value as the tooltip
    window.data_ctl.load_demo()
    other = window.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=3, tol=0.0, seed=0))
    _finish(qtbot, [other])
    it2 = window.jobs_panel.items[other.id]
    assert it2.toolTip(jp.C_TEST) == it2.text(jp.C_TEST) != "inf"

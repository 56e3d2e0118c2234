"""The Jobs panel's results table: filled from the jobs (against the core's own numbers), sorted, grouped."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QSettings, Qt  # noqa: E402

from app.modelspec import ModelSpec  # noqa: E402


@pytest.fixture
def window(qtbot, tmp_path):
    os.environ["DENSEHMM_JOB_EXECUTOR"] = "thread"   # small models: no worker process needed
    from app.mainwindow import MainWindow
    from app.settings import Settings
    w = MainWindow(Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)))
    qtbot.addWidget(w)
    w.load_demo()
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
    jobs = [window.start_training(ModelSpec(kind="standard", n=n, steps=s, tol=0.0, seed=0))
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
        assert (row["model"], row["n"], row["iterations"]) == ("Standard", n, job.spec["steps"])
        assert row["stop"] == job.reason and row["device"] == "cpu"
        assert item.text(jp.C_MODEL) == "Standard" and item.text(jp.C_N) == str(n)
        assert item.text(jp.C_RESULT) == f"{test_nll:.4f}"        # the final test NLL, not "max_steps"
        assert item.text(jp.C_STOP) == job.reason
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
    first = window.start_training(ModelSpec(kind="standard", n=2, steps=2, tol=0.0))
    jobs = window.start_sweep(ModelSpec(kind="standard", steps=2, tol=0.0), 2)
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
    a = window.start_training(ModelSpec(kind="standard", n=2, steps=2, tol=0.0))
    b = window.start_training(ModelSpec(kind="standard", n=3, steps=2, tol=0.0))
    assert window.jobs_panel.current_job() is a       # the first job only (nothing was selected)
    assert window.current_job is a and b is not None
    _finish(qtbot, [a, b])

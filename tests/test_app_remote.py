"""App sweeps on a Dask cluster (issue 17, app part; pytest-qt, offscreen): remote runs fill the
Jobs panel with their state and final metrics (the numbers of the same fit done here), the sweep
view fills, models come back through a shared folder, and Cancel cancels a remote run."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")
distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    from app.mainwindow import MainWindow
    from app.settings import Settings
    errors = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(lambda p, t, m, *a, **k: errors.append(m)))
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.Yes))
    w = MainWindow(Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)))
    w.errors = errors
    qtbot.addWidget(w)
    w.show()
    yield w
    w.jobs.cancel_all()
    w.jobs_ctl.close()   # the Dask sweeps, if any
    w.jobs.wait(10)


@pytest.fixture(scope="module")
def cluster():
    c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                 dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    yield c
    c.close()


def _oracle(job):
    """The same model fitted here on the job's data: (train NLL, test NLL, MAD, model)."""
    from densehmm_core.metrics import normalized_nll
    from densehmm_core.standard import StandardHMM
    m = job.model
    local = StandardHMM(m.n_states, m.n_symbols, n_iter=m.n_iter, tol=m.tol, seed=m.seed)
    local.fit(job.train, eval_data=job.test)
    return normalized_nll(local, job.train), normalized_nll(local, job.test), local.history_[-1]["mad"], local


def test_app_start_does_not_import_dask(tmp_path):
    code = ("import sys; from PySide6.QtWidgets import QApplication; app = QApplication([]);"
            "from app.mainwindow import MainWindow; w = MainWindow(); w.show(); app.processEvents();"
            "print('distributed' in sys.modules, 'dask' in sys.modules)")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=REPO,
               XDG_CONFIG_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split()[-2:] == ["False", "False"], out.stderr[-2000:]


def test_sweep_target_dialog_and_settings(window, qtbot):
    from app.panels.sweep_target import SweepTargetDialog
    d = SweepTargetDialog("", "")
    qtbot.addWidget(d)
    assert d.values() == ("", "") and not d.shared.isEnabled()   # the default: this app
    d.local.setChecked(True)
    assert d.values() == ("local", "") and d.shared.isEnabled()
    qtbot.keyClicks(d.address, "tcp://head:8786")                  # typing an address picks it
    d.shared.setText("/shared/models")
    assert d.values() == ("tcp://head:8786", "/shared/models")
    window.jobs_ctl.set_sweep_target(*d.values())
    assert (window.settings.sweep_target, window.settings.sweep_shared_dir) == ("tcp://head:8786", "/shared/models")
    assert window.model_form.sweep_target_label.text() == "Runs on: the Dask scheduler tcp://head:8786"
    window.jobs_ctl.set_sweep_target("")
    assert window.model_form.sweep_target_label.text() == "Runs on: this app's worker pool"


def test_sweep_target_dialog_refuses_a_malformed_address(qtbot):
    from PySide6.QtWidgets import QDialog

    from app.panels.sweep_target import SweepTargetDialog
    d = SweepTargetDialog("", "")
    qtbot.addWidget(d)
    d.show()
    for text, why in (("", "enter the scheduler's address"), ("tcp://head", "invalid Dask scheduler address"),
                      ("http://head:8786", "invalid Dask scheduler address")):
        d.remote.setChecked(True)
        d.address.setText(text)
        d.accept()                       # OK: refused, the dialog stays open and says why
        assert d.isVisible() and d.result() != QDialog.Accepted
        assert d.problem.isVisible() and why in d.problem.text(), d.problem.text()
    qtbot.keyClicks(d.address, "x")      # typing hides the old reason
    assert not d.problem.isVisible()
    d.address.setText("tls://head:8786")
    d.accept()
    assert d.result() == QDialog.Accepted and d.values() == ("tls://head:8786", "")


def test_sweep_on_a_scheduler_fills_the_jobs_panel_with_remote_runs(window, qtbot, cluster, tmp_path):
    from app.jobs import JobState
    from app.modelspec import ModelSpec
    from app.panels import jobs_panel as jp
    from app.remote_jobs import RemoteJob
    window.jobs_ctl.set_sweep_target(cluster.scheduler_address)
    assert window.model_form.sweep_target_label.text() == f"Runs on: the Dask scheduler {cluster.scheduler_address}"
    jobs = window.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=6, tol=1e-4), 1)
    assert len(jobs) == 3 and all(isinstance(j, RemoteJob) for j in jobs)
    assert window.jobs_panel.groups[jobs[0].sweep].childCount() == 3      # listed at once, queued
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=120000)
    workers = set(cluster.scheduler_info["workers"])
    for job in jobs:
        assert job.state == JobState.FINISHED, (job.reason, window.errors)
        assert not job.has_model  # no shared folder: the model stayed on the worker
        row = window.jobs_panel.rows[job.id]
        train_nll, test_nll, mad, _ = _oracle(job)
        assert row["train_nll"] == pytest.approx(train_nll, rel=1e-9)
        assert row["test_nll"] == pytest.approx(test_nll, rel=1e-9)
        assert row["mad"] == pytest.approx(mad, rel=1e-9)
        assert row["state"] == "finished" and row["stop"] in ("converged", "max_steps")
        item = window.jobs_panel.items[job.id]
        assert job.worker in workers and item.text(jp.C_DEVICE) in ("dask 0", "dask 1")  # worker names
        assert (job.step, job.total) == (row["iterations"], 6)
        assert item.text(jp.C_TEST) not in ("", "—")
        assert not window.jobs_panel.cancel_buttons[job.id].isEnabled()
    # the sweep summary view filled with the three rows
    assert len(window.dashboard.sweep.rows()) == 3
    # showing a remote run without its model: its curves and a title that says so
    window.jobs_ctl.show_job(jobs[0])
    assert "model stayed on the cluster" in window.dashboard.title.text()
    assert window.dashboard.model() is None
    # with a shared folder the workers save their models and the app shows them
    window.jobs_ctl.set_sweep_target(cluster.scheduler_address, str(tmp_path))
    again = window.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=6, tol=1e-4), 1)
    qtbot.waitUntil(lambda: all(j.state.is_final for j in again), timeout=120000)
    for job in again:
        assert job.state == JobState.FINISHED and job.has_model
        _, test_nll, _, local = _oracle(job)
        np.testing.assert_allclose(job.model.transmat_, local.transmat_, rtol=1e-12)
        assert window.jobs_panel.rows[job.id]["test_nll"] == pytest.approx(test_nll, rel=1e-9)
        assert os.path.exists(os.path.join(str(tmp_path), f"{job.run_id}.h5"))
    assert not window.errors


def test_cancel_cancels_a_remote_run_on_a_local_cluster(window, qtbot, tmp_path):
    from app.jobs import JobState
    from app.modelspec import ModelSpec
    window.jobs_ctl.set_sweep_target("local")
    window.set_pool_size(2)
    # Baum-Welch that never converges: runs until cancelled
    jobs = window.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=10 ** 7, tol=-np.inf), 1)
    qtbot.waitUntil(lambda: any(j.state == JobState.RUNNING and j.step > 0 for j in jobs), timeout=120000)
    running = next(j for j in jobs if j.state == JobState.RUNNING)
    queued = [j for j in jobs if j.state == JobState.QUEUED]
    window.jobs_panel.cancel_buttons[running.id].click()
    assert running.state == JobState.CANCELLED and not window.jobs_panel.cancel_buttons[running.id].isEnabled()
    assert window.jobs_panel.rows[running.id]["state"] == "cancelled"
    sweep = window.jobs_ctl.remote_sweeps.sweeps[-1]
    assert sweep.core.state(running.run_id) == "cancelled"
    client = sweep.core.client
    # the app's local cluster is private (issue 25): TLS with its own credentials, loopback only
    from listeners import assert_loopback_only, attack, listeners
    address = sweep.core.cluster.scheduler_address
    assert address.startswith("tls://127.0.0.1:")
    assert_loopback_only(listeners(os.getpid()))
    for mode in ("plain", "other-ca"):   # strangers without the credentials cannot run code
        assert attack(address, mode, tmp_path / "pwned").startswith("REFUSED")
    assert not (tmp_path / "pwned").exists()

    def executing(dask_worker):
        return dask_worker.state.executing_count
    # the cancelled fit stops on its worker; the queued run starts there instead
    deadline = time.monotonic() + 30
    while not all(j.state == JobState.RUNNING for j in queued) and time.monotonic() < deadline:
        qtbot.wait(100)
    assert all(j.state == JobState.RUNNING for j in queued)
    assert sum(client.run(executing).values()) == 2
    window.jobs.cancel_all()
    assert all(j.state == JobState.CANCELLED for j in jobs)
    qtbot.waitUntil(lambda: sweep.closed and sweep.core.client is None, timeout=60000)
    assert not window.errors


def test_cancel_while_connecting_submits_nothing(window, qtbot, cluster):
    from app.jobs import JobState
    from app.modelspec import ModelSpec
    window.jobs_ctl.set_sweep_target(cluster.scheduler_address)
    jobs = window.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=10 ** 7, tol=-np.inf), 1)
    window.jobs.cancel_all()          # before the background connection is made
    assert all(j.state == JobState.CANCELLED and j.reason == "cancelled before start" for j in jobs)
    sweep = window.jobs_ctl.remote_sweeps.sweeps[-1]
    qtbot.waitUntil(lambda: sweep.closed and sweep.started and sweep.core.client is None, timeout=60000)
    prefix = f"densehmm-{sweep.core.sweep_id}"
    qtbot.waitUntil(lambda: not any(str(k).startswith(prefix) for k in cluster.scheduler.tasks), timeout=20000)
    assert not window.errors

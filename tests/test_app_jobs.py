"""Desktop app: training jobs on the thread pool, live views, cancel, divergence, .h5 export, closing."""
import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def dialogs(monkeypatch):
    calls = []

    def record(kind, answer):
        def f(parent, title, text, *a, **k):
            calls.append((kind, title, text))
            return answer
        return staticmethod(f)

    monkeypatch.setattr(QMessageBox, "critical", record("critical", QMessageBox.Ok))
    monkeypatch.setattr(QMessageBox, "information", record("information", QMessageBox.Ok))
    monkeypatch.setattr(QMessageBox, "question", record("question", QMessageBox.Yes))
    return calls


@pytest.fixture
def window(qtbot, tmp_path, dialogs):
    from app.mainwindow import MainWindow
    from app.settings import Settings
    w = MainWindow(Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)))
    qtbot.addWidget(w)
    w.show()
    w.data_ctl.load_demo()
    yield w
    w.jobs.cancel_all()
    w.jobs.wait(20)


def spec(kind="standard", **kw):
    from app.modelspec import ModelSpec, type_defaults
    d = dict(type_defaults(kind, kw.pop("preset", "paper")), model_type=kind, n=5, l=3, seed=0)
    d.update(kw)
    return ModelSpec.make(**d)


def wait_final(qtbot, jobs, timeout=60000):
    jobs = jobs if isinstance(jobs, (list, tuple)) else [jobs]
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=timeout)


def test_standard_job_runs_and_heatmaps_equal_model(window, qtbot):
    from app.jobs import JobState
    window.model_form.set_spec(spec("standard", steps=15, tol=0.0))
    qtbot.mouseClick(window.model_form.train_button, Qt.LeftButton)
    job = window.jobs.jobs[-1]
    assert job.spec["model_type"] == "standard" and job.spec["n_iter"] == 15
    assert window.jobs_panel.current_job() is job
    wait_final(qtbot, job)
    assert job.state == JobState.FINISHED, job.reason + job.error
    assert job.step == 15
    m = job.model
    d = window.dashboard
    np.testing.assert_array_equal(d.image_data("transmat"), m.transmat_)
    np.testing.assert_array_equal(d.image_data("emissionprob"), m.emissionprob_)
    np.testing.assert_array_equal(d.image_data("startprob").ravel(), m.startprob_)
    # the model really learnt: its training log-likelihood beats the random start
    assert m.history_[-1]["train_ll"] > m.history_[0]["train_ll"]
    bar = window.jobs_panel.bars[job.id]
    assert bar.value() == bar.maximum()
    from app.panels.jobs_panel import C_STATE
    assert window.jobs_panel.items[job.id].text(C_STATE) == "finished"
    # throttled: at most ~10 dispatches per second (+ the final one)
    assert job.n_dispatched <= 10 * job.elapsed + 2
    assert len(job.model.history_) == 16 and job.n_events >= 16   # and the spectral start's progress events


def test_every_job_trains_on_the_device_it_was_placed_on(window):
    """The job's device (its slot) is the model's device for standard and dense models alike, so a
    job counted on the CPU slot never runs its E-step on a GPU through engine="auto"."""
    window.jobs.set_devices(["/CPU:0", "/GPU:0"])          # as if TensorFlow or CuPy listed a GPU
    ds = window.current_dataset
    for kind in ("standard", "standard_fair", "dense_em"):
        for device, placed in (("cpu", "cpu"), ("/GPU:0", "/GPU:0"), ("auto", "/GPU:0")):
            job = window.jobs_ctl.make_job(spec(kind, device=device), ds)
            assert job.device == placed, (kind, device)
            assert job.model.get_config()["device"] == placed, (kind, device)


def test_dense_job_on_demo_updates_views(window, qtbot):
    from app.jobs import JobState
    job = window.jobs_ctl.start_training(spec("dense_cooc", steps=500, preset="paper"))
    wait_final(qtbot, job, timeout=120000)
    assert job.state == JobState.FINISHED, job.reason + job.error
    m = job.model
    d = window.dashboard
    np.testing.assert_array_equal(d.image_data("transmat"), m.transmat_)
    np.testing.assert_array_equal(d.image_data("emissionprob"), m.emissionprob_)
    assert job.initial_params is not None
    assert not np.allclose(job.initial_params["transmat"], m.transmat_)
    assert d.embeddings.coordinates("U") is not None


def test_cancel_mid_job_keeps_model(window, qtbot):
    from app.jobs import JobState
    job = window.jobs_ctl.start_training(spec("standard", n=8, steps=100000, tol=0.0))
    qtbot.waitUntil(lambda: job.step >= 3, timeout=60000)
    window.jobs_panel.cancel_buttons[job.id].click()
    wait_final(qtbot, job, timeout=20000)
    assert job.state == JobState.CANCELLED
    assert 3 <= job.step < 100000
    A = job.model.transmat_
    assert A is not None and np.all(np.isfinite(A))
    np.testing.assert_allclose(A.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_array_equal(window.dashboard.image_data("transmat"), A)
    assert not window.jobs_panel.cancel_buttons[job.id].isEnabled()


def test_queued_job_cancels_at_once(window, qtbot):
    from app.jobs import JobState
    window.set_pool_size(1)
    a = window.jobs_ctl.start_training(spec("standard", steps=100000, tol=0.0))
    b = window.jobs_ctl.start_training(spec("standard", steps=10, tol=0.0))
    assert b.state == JobState.QUEUED
    window.jobs_ctl.cancel_job(b)
    assert b.state == JobState.CANCELLED and b.started_at is None
    window.jobs_ctl.cancel_job(a)
    wait_final(qtbot, a, timeout=20000)


def test_diverging_job_turns_red_and_keeps_finite_model(window, qtbot):
    from app.jobs import JobState
    job = window.jobs_ctl.start_training(spec("dense_cooc", lr=1e6, steps=300, preset="paper"))
    wait_final(qtbot, job, timeout=120000)
    assert job.state == JobState.DIVERGED, (job.state, job.reason)
    assert job.reason
    from app.panels.jobs_panel import C_STATE
    item = window.jobs_panel.items[job.id]
    assert item.background(0).color().red() > 150 and item.text(C_STATE) == "diverged"
    for a in (job.model.transmat_, job.model.emissionprob_, job.model.startprob_):
        assert np.all(np.isfinite(a))
    # the dashboard's header says it diverged and why (its last progress event does not), shown live
    # and when the job is selected again
    for again in (False, True):
        if again:
            window.jobs_ctl.show_job(None)
            window.jobs_ctl.show_job(job)
        qtbot.waitUntil(lambda: "[diverged]" in window.dashboard.title.text(), timeout=5000)
        assert job.reason in window.dashboard.title.text()


def test_sweep_creates_the_paper_grid(window, qtbot):
    window.set_pool_size(1)
    jobs = window.jobs_ctl.start_sweep(spec("dense_cooc", steps=50), 2)
    grid = sorted({(j.spec["n"], j.spec["l"]) for j in jobs})
    assert grid == [(3, 1), (3, 2), (3, 3), (5, 2), (5, 3), (5, 5), (10, 2), (10, 3), (10, 5), (10, 10)]
    assert len(jobs) == 20 and len({j.spec["seed"] for j in jobs}) == 2
    assert all(j.sweep == jobs[0].sweep for j in jobs)
    tree = window.jobs_panel.tree
    assert tree.topLevelItemCount() == 1 and tree.topLevelItem(0).childCount() == 20   # grouped
    assert window.jobs_panel.current_job() is jobs[0]   # a new sweep is shown at once
    window.jobs.cancel_all()
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    # fair standard HMM: n_fair states from the core
    from densehmm_core.standard import n_fair
    fair = window.jobs_ctl.start_sweep(spec("standard_fair", steps=5), 1)
    assert sorted(j.model.n_states for j in fair) == sorted(n_fair(n, 5, l) for n, l in grid)
    window.jobs.cancel_all()
    qtbot.waitUntil(lambda: all(j.state.is_final for j in fair), timeout=60000)


def test_sweep_over_the_forms_grid(window, qtbot):
    """The form's Grid field takes the command line's --grid text: Run sweep (the menu action as the
    button) trains its pairs; a bad text disables Run sweep, says why and starts nothing."""
    from app.modelspec import sweep_grid
    window.set_pool_size(1)
    form = window.model_form
    form.kind.setCurrentIndex(form.kind.findData("dense_cooc"))
    form.sweep_grid.setText("n=4,6 l=2,3")
    form.repeats.setValue(2)
    assert "n=4: l∈{2, 3}, n=6: l∈{2, 3}" in form.sweep_info.text() and "8 jobs" in form.sweep_info.text()
    got = []
    form.sweep_requested.connect(lambda *a: got.append(a))
    before = list(window.jobs.jobs)
    window.menus.act_sweep.trigger()
    jobs = [j for j in window.jobs.jobs if j not in before]
    assert len(got) == 1 and form.sweep_values() == (2, ((4, 2), (4, 3), (6, 2), (6, 3)))
    seed = form.spec().seed
    assert sorted((j.spec["n"], j.spec["l"], j.spec["seed"]) for j in jobs) == sorted(
        (n, l, seed + r) for n in (4, 6) for l in (2, 3) for r in (0, 1))
    assert len({j.sweep for j in jobs}) == 1
    window.jobs.cancel_all()
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    # a standard HMM has no l: the grid's n values only
    assert [s.n for s in sweep_grid(spec("standard", steps=3), 1, ((4, 2), (4, 3), (6, 2)))] == [4, 6]
    for bad, why in (("n=4", "l=... is missing"), ("n=4 l=x", "positive integers"),
                     ("model=a n=1 l=1", "unknown name")):
        form.sweep_grid.setText(bad)
        assert not form.sweep_button.isEnabled() and why in form.sweep_info.text()
        assert form.request_sweep() is False
    assert len(got) == 1 and len(window.jobs.jobs) == len(before) + 8
    form.sweep_grid.setText("")
    assert form.sweep_button.isEnabled() and form.sweep_info.text().startswith("the paper's grid")


def test_finished_sweep_jobs_fill_the_sweep_view(window, qtbot):
    from app.jobs import JobState
    jobs = window.jobs_ctl.start_sweep(spec("standard", steps=3), 1)
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=120000)
    done = [j for j in jobs if j.state == JobState.FINISHED]
    view = window.dashboard.sweep
    assert len(done) == len(jobs) and len(view.rows()) == len(done)
    ns, med, _q25, _q75 = view.series("nll")["standard"]
    want = {j.spec["n"]: j.history[-1]["test_nll"] for j in done}
    assert list(ns) == sorted(want) and med.tolist() == [want[n] for n in sorted(want)]
    assert view.series("mad")["standard"][1].tolist() == [
        {j.spec["n"]: j.history[-1]["mad"] for j in done}[n] for n in sorted(want)]


def test_h5_export_reloads_identically_and_opens_in_views(window, qtbot, tmp_path):
    from app.jobs import JobState
    from densehmm_core.modelfile import list_models, load_model
    a = window.jobs_ctl.start_training(spec("standard", steps=5, tol=0.0))
    b = window.jobs_ctl.start_training(spec("dense_cooc", steps=200))
    wait_final(qtbot, [a, b], timeout=120000)
    path = str(tmp_path / "models.h5")
    names = []
    window.results_ctl.export_models([a, b], path, on_done=names.extend)
    qtbot.waitUntil(lambda: len(names) == 2, timeout=30000)
    assert list_models(path) == names
    for job, name in zip([a, b], names):
        m = load_model(path, name)
        for attr in ("startprob_", "transmat_", "emissionprob_"):
            np.testing.assert_array_equal(getattr(m, attr), getattr(job.model, attr))
        assert m.score(job.test) == job.model.score(job.test)
    for k in ("U", "Z", "W", "V", "z_start"):
        np.testing.assert_array_equal(load_model(path, names[1]).embeddings_[k], b.model.embeddings_[k])
    # opening the .h5 shows its models in the same views and scores them on the loaded data
    n_before = len(window.jobs.jobs)
    window.open_files([path])
    qtbot.waitUntil(lambda: len(window.jobs.jobs) == n_before + 2, timeout=30000)
    loaded = window.jobs.jobs[-2:]
    assert all(j.state == JobState.FINISHED for j in loaded)
    window.jobs_panel.select(loaded[1])
    np.testing.assert_array_equal(window.dashboard.image_data("transmat"), b.model.transmat_)
    res = []
    window.results_ctl.score_job(loaded[0], on_done=res.append)
    qtbot.waitUntil(lambda: bool(res), timeout=30000)
    tokens = sum(len(s) for s in window.current_dataset.test)
    assert res[0]["nll"] == pytest.approx(-a.model.score(window.current_dataset.test) / tokens,
                                                     rel=1e-12)
    # compare the two loaded models: both scored on the current data set's test split (the same
    # NLL per token as Score on data), with the Jobs panel's elapsed time
    compared = []
    # scored off the GUI thread
    window.results_ctl.compare_jobs(loaded[0], loaded[1], on_done=lambda: compared.append(True))
    qtbot.waitUntil(lambda: bool(compared), timeout=30000)
    from app.views.theme import fmt_compact
    rows = window.compare_view.table_rows()
    nll_row = [k for k in rows if k == "NLL / token, same data"]
    assert len(nll_row) == 1 and rows[nll_row[0]][0] == fmt_compact(res[0]["nll"])
    assert rows["time (s)"][:2] == [fmt_compact(loaded[0].elapsed), fmt_compact(loaded[1].elapsed)]


def test_closing_with_running_jobs_exits_cleanly(window, qtbot, dialogs):
    from app.jobs import JobState
    jobs = [window.jobs_ctl.start_training(spec("standard", n=8, steps=100000, tol=0.0)),
            window.jobs_ctl.start_training(spec("dense_cooc", steps=1000000, preset="paper"))]
    qtbot.waitUntil(lambda: all(j.state == JobState.RUNNING and j.step > 0 for j in jobs), timeout=120000)
    # "No" keeps the window and the jobs
    from PySide6.QtWidgets import QMessageBox
    orig = QMessageBox.question
    QMessageBox.question = staticmethod(lambda *a, **k: QMessageBox.No)
    try:
        window.close()
        assert window.isVisible() and all(j.state == JobState.RUNNING for j in jobs)
    finally:
        QMessageBox.question = orig
    t0 = time.perf_counter()
    window.close()
    took = time.perf_counter() - t0
    assert not window.isVisible()
    # The window waits at most CLOSE_WAIT_S for the workers (the 2 s exit itself is checked in
    # a subprocess below and timed in tests/benchmarks/bench_gui_latency.py); generous bound
    # here because the shared test machine can be heavily loaded.
    from app.mainwindow import CLOSE_WAIT_S
    assert took < CLOSE_WAIT_S + 3.0, took
    assert any(c[0] == "question" for c in dialogs)
    # every job was told to stop and ends cancelled, keeping its model
    assert all(j.token.cancelled for j in jobs)
    wait_final(qtbot, jobs, timeout=30000)
    assert all(j.state == JobState.CANCELLED for j in jobs)
    assert all(np.all(np.isfinite(j.model.transmat_)) for j in jobs)


def test_process_exits_within_2s_when_closed_with_running_jobs(tmp_path):
    """The real app process: close while two jobs train -> asked, cancelled, process gone in < 2 s."""
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = """
import sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMessageBox
from app import main as m
from app.mainwindow import MainWindow
from app.modelspec import ModelSpec
QMessageBox.question = staticmethod(lambda *a, **k: QMessageBox.Yes)
orig_init = MainWindow.__init__
def init(self, *a, **k):
    orig_init(self, *a, **k)
    def start():
        self.data_ctl.load_demo()
        jobs = [self.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=8, n_iter=10**6, tol=0.0))
                for _ in range(2)]
        def poll():
            if all(j.step > 0 for j in jobs):
                print("CLOSING", time.time(), flush=True)
                self.close()
            else:
                QTimer.singleShot(50, poll)
        poll()
    QTimer.singleShot(0, start)
MainWindow.__init__ = init
sys.exit(m.main(["main.py", "--no-tensorflow"]))
"""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    p = subprocess.Popen([sys.executable, "-c", code], cwd=repo, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = ""
    deadline = time.time() + 120
    while "CLOSING" not in line and time.time() < deadline:
        line = p.stdout.readline()
        if not line and p.poll() is not None:
            break
    assert "CLOSING" in line, p.stderr.read()
    t_close = float(line.split()[1])
    rc = p.wait(timeout=30)
    took = time.time() - t_close
    err = p.stderr.read()
    assert rc == 0, err
    assert "Fatal" not in err and "Traceback" not in err, err
    assert took < 5.0, took   # target 2 s: measured in tests/benchmarks/bench_gui_latency.py


SLOW_TF = {
    # thread executor: the app imports TensorFlow itself, on a pool thread
    "thread": """
import densehmm_core.device as dev
dev.import_tf = slow_import_tf
""",
    # process executor: a real worker process is importing TensorFlow while the app's background
    # thread waits for its answer (made to wait a minute)
    "process": """
from densehmm_core import worker
def slow_query(self):
    w = self.acquire()
    w.warm()
    print("WORKER", w.process.pid, flush=True)
    slow_import_tf()
worker.WorkerPool.query_tensorflow = slow_query
""",
}


@pytest.mark.parametrize("executor", ["process", "thread"])
def test_quit_while_tensorflow_still_imports_exits_at_once(tmp_path, executor):
    """Quitting during a slow background import (app.tasks' pool, not the jobs' pool): the process
    neither waits for the import nor crashes at exit; settings are flushed; status 0; no worker
    process is left behind."""
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = """
import sys, time
from PySide6.QtCore import QTimer
from app import main as m
from app.mainwindow import MainWindow
started = []
def slow_import_tf(*a, **k):          # a TensorFlow import that takes a minute, holding a pool thread
    started.append(1)
    t = time.time()
    while time.time() - t < 60:
        sum(range(1000))
    raise RuntimeError("not reached")
""" + SLOW_TF[executor] + """
orig_init = MainWindow.__init__
def init(self, *a, **k):
    orig_init(self, *a, **k)
    def poll():
        if started:
            self.settings.add_recent_file("/data/marker.fasta")
            print("CLOSING", time.time(), flush=True)
            self.close()
        else:
            QTimer.singleShot(20, poll)
    QTimer.singleShot(0, poll)
MainWindow.__init__ = init
sys.exit(m.main(["main.py"]))
"""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_STATE_HOME=str(tmp_path / "state"), DENSEHMM_JOB_EXECUTOR=executor)
    p = subprocess.Popen([sys.executable, "-c", code], cwd=repo, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError("the app waited for the background import instead of quitting:\n" + err[-2000:])
    t_end = time.time()
    assert p.returncode == 0, (p.returncode, err[-2000:])
    assert "Traceback" not in err and "Segmentation fault" not in err
    closing = [ln for ln in out.splitlines() if ln.startswith("CLOSING")]
    assert closing, out + err[-2000:]
    assert t_end - float(closing[0].split()[1]) < 15   # not the 60 s of the import (loose: busy CI)
    conf = tmp_path / "cfg" / "DenseHMM" / "DenseHMM Studio.conf"
    assert "marker.fasta" in conf.read_text()           # settings flushed before os._exit
    log = tmp_path / "state" / "DenseHMM" / "DenseHMM Studio" / "densehmm-studio.log"
    assert "thread(s) still busy" in log.read_text()
    assert (executor == "process") == any(ln.startswith("WORKER") for ln in out.splitlines())
    for line in out.splitlines():
        if line.startswith("WORKER"):       # the training worker process is gone too
            pid = int(line.split()[1])
            deadline = time.time() + 5
            while os.path.exists(f"/proc/{pid}") and time.time() < deadline:
                time.sleep(0.05)
            assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read()


def _in_process_fit(job):
    """The same model trained here, on this thread, from the job's own spec (the oracle)."""
    from app.modelspec import ModelSpec, build_model
    model, _, fit_kwargs = build_model(ModelSpec.from_dict(job.spec), job.dataset.n_symbols, device=job.device)
    return model.fit(job.train, eval_data=job.test, **fit_kwargs)


def test_jobs_train_in_worker_processes_with_the_same_result(window, qtbot):
    """Responsiveness (issue 6): by default a job's fit runs in a worker process, not in the app;
    the model the app ends up with is bit-identical to an in-process fit."""
    from app.jobs import JobState
    from densehmm_core.worker import shared_pool
    assert window.jobs.executor == "process"
    job = window.jobs_ctl.start_training(spec("standard", steps=12, tol=0.0, seed=3))
    wait_final(qtbot, job)
    assert job.state == JobState.FINISHED, job.reason + job.error
    assert shared_pool().n_processes >= 1
    oracle = _in_process_fit(job)
    for k in ("startprob_", "transmat_", "emissionprob_"):
        np.testing.assert_array_equal(getattr(job.model, k), getattr(oracle, k))
    assert [h["train_ll"] for h in job.model.history_] == [h["train_ll"] for h in oracle.history_]
    assert len(job.model.history_) == 13 and job.n_events >= 13   # and the spectral start's progress events


def test_thread_executor_still_trains(qtbot, tmp_path, dialogs, monkeypatch):
    """DENSEHMM_JOB_EXECUTOR=thread: the fit runs on the pool thread (the former mode)."""
    from app.jobs import JobState
    from app.mainwindow import MainWindow
    from app.settings import Settings
    monkeypatch.setenv("DENSEHMM_JOB_EXECUTOR", "thread")
    w = MainWindow(Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)))
    qtbot.addWidget(w)
    w.show()
    w.data_ctl.load_demo()
    assert w.jobs.executor == "thread"
    job = w.jobs_ctl.start_training(spec("standard", steps=8, tol=0.0, seed=4))
    wait_final(qtbot, job)
    assert job.state == JobState.FINISHED, job.reason + job.error
    oracle = _in_process_fit(job)
    np.testing.assert_array_equal(job.model.transmat_, oracle.transmat_)
    np.testing.assert_array_equal(w.dashboard.image_data("transmat"), oracle.transmat_)
    w.jobs.cancel_all()
    w.jobs.wait(20)


def test_unknown_executor_in_the_environment_falls_back_to_processes(qtbot, monkeypatch, caplog):
    from app.jobs import JobManager
    monkeypatch.setenv("DENSEHMM_JOB_EXECUTOR", "fibers")
    assert JobManager().executor == "process"
    assert "fibers" in caplog.text
    with pytest.raises(ValueError):
        JobManager(executor="fibers")


def test_without_worker_processes_jobs_train_in_the_app_and_say_so(window, qtbot, monkeypatch):
    """A platform where no worker process can be started: the job still trains (on its pool thread)
    and the log says why."""
    from app.jobs import JobState
    from densehmm_core import worker

    def refuse(self, needs_tensorflow=None):
        raise OSError("process creation not permitted")
    monkeypatch.setattr(worker.WorkerPool, "acquire", refuse)
    job = window.jobs_ctl.start_training(spec("standard", steps=6, tol=0.0, seed=5))
    wait_final(qtbot, job)
    assert job.state == JobState.FINISHED, job.reason + job.error
    np.testing.assert_array_equal(job.model.transmat_, _in_process_fit(job).transmat_)
    assert any(level == "warning" and "no worker process could be started" in text
               and "process creation not permitted" in text for level, text in window.log_panel.lines)


def test_tagged_corpus_job_fills_the_tags_tab(window, qtbot):
    """A job on a CoNLL-U file: the Tags tab shows its states against the gold tags, scored by the core."""
    import pathlib
    from app.jobs import JobState
    from densehmm_core.metrics import tagging_scores
    path = pathlib.Path(__file__).parent / "fixtures" / "data" / "words.conllu"
    n_before = len(window.datasets)
    window.open_files([str(path)])
    qtbot.waitUntil(lambda: len(window.datasets) == n_before + 1 and window.current_dataset is window.datasets[-1],
                    timeout=30000)
    job = window.jobs_ctl.start_training(spec("standard", n=3, steps=5))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    assert job.state == JobState.FINISHED
    window.jobs_ctl.show_job(job)
    d = window.dashboard
    qtbot.waitUntil(lambda: d.tabs.isTabVisible(d.tabs.indexOf(d.tags_page)) and not d.live_tagging_busy(),
                    timeout=10000)
    data = window.jobs_ctl._decode_data(job)
    want = tagging_scores(job.model.predict(data.sequences), data.tags, n_states=3,
                          n_tags=len(data.tag_vocabulary))
    np.testing.assert_array_equal(d.state_tags.counts(), want["contingency"])
    assert d.state_tags.col_labels() == [str(t) for t in data.tag_vocabulary]

"""A plain .h5 model file opened in the app (issue 24.11): each model is a finished job whose
dashboard header and Jobs-panel row show the metrics the file records (the final train/test NLL per
token, MAD, the step reached and why training stopped), as the job that trained it showed them."""
import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    for name in ("critical", "information", "warning"):
        monkeypatch.setattr(QMessageBox, name, staticmethod(lambda *a, **k: QMessageBox.Ok))
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.Yes))
    from app.mainwindow import MainWindow
    from app.settings import Settings
    w = MainWindow(Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)))
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    w.data_ctl.load_demo()
    yield w
    w.jobs.cancel_all()
    w.jobs.wait(20)


def spec(kind, **kw):
    from app.modelspec import ModelSpec, type_defaults
    d = dict(type_defaults(kind, "paper"), model_type=kind, n=5, l=3, seed=0)
    d.update(kw)
    return ModelSpec.make(**d)


def _trained_and_reopened(window, qtbot, tmp_path, specs):
    """Train ``specs`` in the app, export their models to one .h5 file, open it: (trained, opened) jobs."""
    from app.jobs import JobState
    jobs = [window.jobs_ctl.start_training(s) for s in specs]
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=120000)
    assert all(j.state == JobState.FINISHED for j in jobs), [j.reason for j in jobs]
    path = str(tmp_path / "models.h5")
    names = []
    window.results_ctl.export_models(jobs, path, on_done=names.extend)
    qtbot.waitUntil(lambda: len(names) == len(jobs), timeout=30000)
    n_before = len(window.jobs.jobs)
    window.open_files([path])
    qtbot.waitUntil(lambda: len(window.jobs.jobs) == n_before + len(jobs), timeout=30000)
    return jobs, window.jobs.jobs[n_before:]


def _header(window, job, qtbot):
    window.jobs_panel.select(job)
    window.jobs_ctl.show_job(job)
    qtbot.waitUntil(lambda: window.dashboard.title.text().startswith(f"Job {job.id}:"), timeout=5000)
    return window.dashboard.title.text()


def test_models_from_a_file_show_the_recorded_metrics_in_header_and_row(window, qtbot, tmp_path):
    from app.views.theme import fmt_value
    trained, opened = _trained_and_reopened(window, qtbot, tmp_path, [
        spec("standard", steps=6, tol=0.0), spec("dense_cooc", steps=300)])
    panel = window.jobs_panel
    for src, job in zip(trained, opened):
        last = src.history[-1]
        assert job.model.history_[-1]["test_nll"] == last["test_nll"]     # what the file recorded
        # the header: the final step and its metrics, as the trained job's header shows them
        head_src, head = _header(window, src, qtbot), _header(window, job, qtbot)
        tail_src, tail = head_src.split("  —  ", 1)[1], head.split("  —  ", 1)[1]
        for key in ("test_nll", "mad"):
            assert f"{key} {fmt_value(last[key])}" in tail
        if "train_nll" in last:     # (Baum-Welch: its loss, the NLL per token, says it once)
            said = "NLL/token" if last.get("phase") == "baum-welch" else "train_nll"
            assert f"{said} {fmt_value(last['train_nll'])}" in tail
            assert tail.count(fmt_value(last["train_nll"])) == 1
        # the same text (both ran all their steps: "6/6"; the reason is the model's stop reason)
        assert src.model.stop_reason_ == "max_steps"
        assert tail == tail_src.replace(f"[{src.reason}]", f"[{src.model.stop_reason_}]")
        assert job.total == job.step == last["step"]
        assert tail.startswith(f"{last['phase']} {last['step']}/{last['step']}  ·  ")
        # the row: the same numbers as the trained job's row (time as recorded)
        row_src, row = panel.rows[src.id], panel.rows[job.id]
        for key in ("train_nll", "test_nll", "mad", "iterations", "n", "l", "parameters", "model"):
            assert row[key] == row_src[key], key
        assert row["test_nll"] == pytest.approx(last["test_nll"], rel=0, abs=0)
        assert row["stop"] == src.model.stop_reason_
        assert row["time_s"] == pytest.approx(src.elapsed, abs=1e-9)   # the job's own time, as its row said
        assert row["time_s"] != pytest.approx(last["elapsed"])           # (not the history's, without the start)
        assert job.fraction == 1.0


def test_a_cancelled_job_stays_cancelled_through_a_model_file(window, qtbot, tmp_path):
    """Exported and opened again, a cancelled job reads "cancelled" at its step of its planned total (the
    file records why it stopped and what was planned), not "finished, 100%"."""
    from app.jobs import JobState
    job = window.jobs_ctl.start_training(spec("dense_cooc", steps=100000, lr=1e-4))
    qtbot.waitUntil(lambda: job.step >= 2, timeout=120000)
    window.jobs.cancel(job)
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    assert job.state == JobState.CANCELLED and job.total >= 100000     # (the finish's steps after the Adam steps)
    path = str(tmp_path / "cancelled.h5")
    names = []
    window.results_ctl.export_models([job], path, on_done=names.extend)
    qtbot.waitUntil(lambda: len(names) == 1, timeout=30000)
    n_before = len(window.jobs.jobs)
    window.open_files([path])
    qtbot.waitUntil(lambda: len(window.jobs.jobs) == n_before + 1, timeout=30000)
    back = window.jobs.jobs[-1]
    assert back.state == JobState.CANCELLED and back.model.stop_reason_ == "cancelled"
    assert (back.step, back.total) == (job.history[-1]["step"], job.total) and back.fraction < 0.1
    assert window.jobs_panel.rows[back.id]["time_s"] == pytest.approx(job.elapsed, abs=1e-9)


def test_a_model_file_without_history_shows_the_metrics_it_records(window, qtbot, tmp_path):
    """A model saved by the library without a history (here: cleared before saving, as for parameters
    set by hand) but with its metrics: the header and the row take the numbers from the file's
    metrics group."""
    from densehmm_core.modelfile import save_model
    from densehmm_core.standard import StandardHMM
    from app.views.theme import fmt_value
    ds = window.current_dataset
    model = StandardHMM(4, n_iter=5, tol=0.0, seed=1).fit(ds.train, eval_data=ds.test)
    last = model.history_[-1]
    path = str(tmp_path / "plain.h5")
    model.history_ = []
    save_model(path, model, metrics={"test_nll": last["test_nll"], "train_nll": last["train_nll"], "mad": last["mad"]})
    n_before = len(window.jobs.jobs)
    window.open_files([path])
    qtbot.waitUntil(lambda: len(window.jobs.jobs) == n_before + 1, timeout=30000)
    job = window.jobs.jobs[-1]
    assert not job.model.history_
    head = _header(window, job, qtbot)
    for key in ("train_nll", "test_nll", "mad"):
        assert f"{key} {fmt_value(last[key])}" in head
    row = window.jobs_panel.rows[job.id]
    assert (row["train_nll"], row["test_nll"], row["mad"]) == (last["train_nll"], last["test_nll"], last["mad"])
    np.testing.assert_array_equal(job.model.transmat_, model.transmat_)


def test_a_comparison_stays_while_other_jobs_are_shown(window, qtbot, tmp_path):
    """Compare two models read from a file, then select one of them and then a third job: the Compare
    tab keeps its table and differences (it used to fall back to its placeholder on every selection),
    and its symbol axis names the compared models' symbols."""
    _, opened = _trained_and_reopened(window, qtbot, tmp_path, [spec("standard", steps=4, tol=0.0),
                                                                spec("standard", steps=4, tol=0.0, seed=1)])
    other = window.jobs_ctl.start_training(spec("standard", steps=2, tol=0.0, seed=2))
    qtbot.waitUntil(lambda: other.state.is_final, timeout=120000)
    done = []
    window.results_ctl.compare_jobs(opened[0], opened[1], on_done=lambda: done.append(True))
    qtbot.waitUntil(lambda: len(done) == 1, timeout=30000)
    view = window.compare_view
    rows, diff = view.table_rows(), view.difference("emissionprob")
    assert rows and diff is not None
    for job in (opened[0], other):
        window.jobs_panel.select(job)
        window.jobs_ctl.show_job(job)
        qtbot.waitUntil(lambda job=job: window.dashboard.title.text().startswith(f"Job {job.id}:"), timeout=5000)
        assert view.table_rows() == rows
        np.testing.assert_array_equal(view.difference("emissionprob"), diff)

"""The job pool knows devices: at most ``pool_size`` CPU jobs and ``gpu_slots`` jobs per GPU run at once."""
import threading
from collections import defaultdict

import pytest

pytest.importorskip("PySide6")

from densehmm_core.events import ProgressEvent  # noqa: E402


class Tracker:
    """How many fits run at once on each device, and the peak."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = defaultdict(int)
        self.peak = defaultdict(int)


class GatedModel:
    """A fit that runs until released (or cancelled), counted per device by a Tracker."""

    def __init__(self, device, tracker):
        self.device, self.tracker = device, tracker
        self.release = threading.Event()

    def iter_fit(self, train, eval_data=None, cancel=None, **kw):
        t = self.tracker
        with t.lock:
            t.now[self.device] += 1
            t.peak[self.device] = max(t.peak[self.device], t.now[self.device])
        try:
            yield ProgressEvent(step=0, total=1, phase="test")
            while not self.release.wait(0.01):
                if cancel is not None and cancel.cancelled:
                    break
            yield ProgressEvent(step=1, total=1, phase="test", done=True, reason="max_steps")
        finally:
            with t.lock:
                t.now[self.device] -= 1


@pytest.fixture
def manager(qtbot):
    from app.jobs import JobManager
    jm = JobManager(pool_size=2, executor="thread", gpu_slots=1)
    jm.set_devices(["/CPU:0", "/GPU:0"])
    yield jm
    jm.cancel_all()
    assert jm.wait(20)


def submit(jm, device, tracker, n):
    from app.jobs import Job
    jobs = []
    for i in range(n):
        model = GatedModel(jm.slot_of(device), tracker)
        jobs.append(jm.submit(Job(f"{device} {i}", model, [], device=device)))
    return jobs


def states(jobs):
    return sorted(j.state.value for j in jobs)


def test_one_running_job_per_gpu_slot_and_cpu_jobs_beside_them(manager, qtbot):
    from app.jobs import JobState
    tracker = Tracker()
    gpu = submit(manager, "/GPU:0", tracker, 3)
    cpu = submit(manager, "cpu", tracker, 3)
    running = lambda jobs: [j for j in jobs if j.state == JobState.RUNNING]  # noqa: E731
    qtbot.waitUntil(lambda: len(running(gpu)) == 1 and len(running(cpu)) == 2, timeout=10000)
    qtbot.wait(200)                                      # nothing else starts meanwhile
    assert len(running(gpu)) == 1 and len(running(cpu)) == 2
    assert [j.state for j in gpu].count(JobState.QUEUED) == 2
    # the first GPU job ends: the next one (in submission order) takes its slot
    first = running(gpu)[0]
    assert first is gpu[0]
    first.model.release.set()
    qtbot.waitUntil(lambda: first.state == JobState.FINISHED and gpu[1].state == JobState.RUNNING, timeout=10000)
    assert gpu[2].state == JobState.QUEUED
    for j in gpu + cpu:
        j.model.release.set()
    qtbot.waitUntil(lambda: all(j.state == JobState.FINISHED for j in gpu + cpu), timeout=10000)
    assert tracker.peak["/GPU:0"] == 1 and tracker.peak["cpu"] == 2


def test_more_gpu_slots_run_more_jobs_at_once(manager, qtbot):
    from app.jobs import JobState
    manager.set_gpu_slots(2)
    assert manager.pool.maxThreadCount() == 2 + 2      # CPU slots + GPU slots x 1 GPU
    tracker = Tracker()
    gpu = submit(manager, "/GPU:0", tracker, 3)
    qtbot.waitUntil(lambda: [j.state for j in gpu].count(JobState.RUNNING) == 2, timeout=10000)
    qtbot.wait(200)
    assert gpu[2].state == JobState.QUEUED
    for j in gpu:
        j.model.release.set()
    qtbot.waitUntil(lambda: all(j.state == JobState.FINISHED for j in gpu), timeout=10000)
    assert tracker.peak["/GPU:0"] == 2


def test_a_waiting_job_cancels_at_once(manager, qtbot):
    from app.jobs import JobState
    tracker = Tracker()
    first, waiting = submit(manager, "/GPU:0", tracker, 2)
    qtbot.waitUntil(lambda: first.state == JobState.RUNNING, timeout=10000)
    manager.cancel(waiting)
    assert waiting.state == JobState.CANCELLED and waiting.reason == "cancelled before start"
    first.model.release.set()
    qtbot.waitUntil(lambda: first.state == JobState.FINISHED, timeout=10000)
    assert tracker.peak["/GPU:0"] == 1


@pytest.mark.parametrize("device,slot", [("cpu", "cpu"), ("/CPU:0", "cpu"), ("auto", "cpu"), ("file", "cpu"),
                                         ("gpu", "/GPU:0"), ("/GPU:1", "/GPU:1"), ("/device:GPU:2", "/GPU:2")])
def test_slot_of(device, slot):
    from app.jobs import JobManager
    assert JobManager.slot_of(device) == slot


def test_gpu_slots_setting(tmp_path):
    from PySide6.QtCore import QSettings

    from app.settings import Settings
    s = Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    assert s.gpu_slots == 1
    s.gpu_slots = 3
    assert Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)).gpu_slots == 3


@pytest.mark.parametrize("slots, user, expected", [(2, None, 4), (3, None, 2), (16, None, 1), (2, "3", 3)])
def test_each_started_job_gets_its_share_of_the_cpus(qtbot, monkeypatch, slots, user, expected):
    """A job's worker gets ``cpus // CPU slots`` threads (densehmm_core.threads.fit_threads), taken
    when the job starts; DENSEHMM_THREADS, when the user set it, is each fit's number."""
    from app.jobs import JobManager
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    if user is None:
        monkeypatch.delenv("DENSEHMM_THREADS", raising=False)
    else:
        monkeypatch.setenv("DENSEHMM_THREADS", user)
    jm = JobManager(pool_size=slots, executor="thread")
    try:
        tracker = Tracker()
        job, = submit(jm, "cpu", tracker, 1)
        runner = jm._runners[job.id]
        assert runner.threads == expected
        job.model.release.set()
    finally:
        jm.cancel_all()
        assert jm.wait(20)


def test_a_job_on_the_thread_executor_fits_with_its_share(qtbot, monkeypatch):
    """With executor "thread" the fit runs on the pool thread inside the job's budget
    (densehmm_core.threads.fit_budget): what its fit reads is the job's share."""
    from app.jobs import Job, JobManager, JobState
    from densehmm_core.threads import cpu_threads
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    monkeypatch.delenv("DENSEHMM_THREADS", raising=False)

    class Reader:
        seen = None

        def iter_fit(self, train, eval_data=None, cancel=None, **kw):
            Reader.seen = cpu_threads()
            yield ProgressEvent(step=1, total=1, phase="test", done=True, reason="max_steps")

    jm = JobManager(pool_size=4, executor="thread")
    try:
        job = jm.submit(Job("reader", Reader(), [], device="cpu"))
        qtbot.waitUntil(lambda: job.state == JobState.FINISHED, timeout=10000)
        assert Reader.seen == 2
    finally:
        jm.cancel_all()
        assert jm.wait(20)

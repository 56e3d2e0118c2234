"""Training jobs: a :class:`JobManager` runs each :class:`Job` on a :class:`QThreadPool`.

Words used in the app: a **runner** is the pool thread's task (:class:`_JobRunner`, a
``QRunnable``) that drives one job's progress stream; a **worker** is always a training
process of :mod:`densehmm_core.worker`.  With ``executor="process"`` (the default) the fit
runs in a worker and the runner only relays its events (it waits on a pipe, without the
GIL): training never competes with the GUI thread for Python's GIL, and the worker runs
at a lower CPU priority.  ``executor="thread"`` runs ``model.iter_fit(...)`` on the pool
thread itself (also used for model types a worker cannot train).

The runner posts every event to the manager's :class:`app.live.LiveFeed`, which owns
what the GUI sees and when (newest event, newest parameters, throttle, drawing cost).

No maths here: the runner only drives the core's generator.
"""
from __future__ import annotations

import datetime as _dt
import enum
import itertools
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from densehmm_core import config
from densehmm_core.threads import fit_budget, fit_threads

from .live import LiveFeed

__all__ = ["JobState", "Job", "JobManager"]


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


class JobState(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    DIVERGED = "diverged"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in (JobState.FINISHED, JobState.CANCELLED, JobState.DIVERGED, JobState.FAILED)

    @property
    def has_model(self) -> bool:
        """Finished, cancelled and diverged jobs keep a usable model."""
        return self in (JobState.FINISHED, JobState.CANCELLED, JobState.DIVERGED)


_ids = itertools.count(1)


class Job:
    """One training run: the model, its data, its state and its latest progress.

    Parameters
    ----------
    name : str
        Label shown in the Jobs panel.
    model : BaseHMM
        An unfitted ``StandardHMM`` or ``DenseHMM``.
    train, test : sequences or Corpus
        Training data and (optional) evaluation data passed to ``iter_fit``.
    dataset : object, optional
        The app-side data set the job trains on (for the decode view and .h5 provenance).
    device : str
        Where the job runs ("cpu", "/GPU:0", ...), for display and placement.
    sweep : str, optional
        The sweep the job belongs to (for "export all jobs of a sweep").
    fit_kwargs : dict
        Extra keyword arguments of ``iter_fit``.
    """

    #: trained elsewhere (a Dask worker: :class:`app.remote_jobs.RemoteJob`), adopted by the manager
    remote = False

    def __init__(self, name: str, model: Any, train: Any, test: Any = None, *, dataset: Any = None,
                 device: str = "cpu", sweep: Optional[str] = None, spec: Optional[dict] = None,
                 fit_kwargs: Optional[dict] = None) -> None:
        from densehmm_core.events import CancelToken
        self.id = next(_ids)
        self.name = name
        self.model = model
        self.train = train
        self.test = test
        self.dataset = dataset
        self.device = device
        self.sweep = sweep
        self.spec = dict(spec or {})
        self.fit_kwargs = dict(fit_kwargs or {})
        self.token = CancelToken()
        self.state = JobState.QUEUED
        self.reason = ""          # why it ended (converged, max_steps, cancelled, divergence message)
        self.error = ""           # traceback of an unexpected failure
        self.notes: List[str] = []  # warnings for the log (e.g. trained without a worker process)
        self.scores: Dict[str, float] = {}  # "Score on data": normalised NLL of the model on other data
        self.score_text = ""      # ... as the Result column shows it
        # a words job's tagging scores against gold tags as a session stores them (app.session.tagging_record)
        self.tagging: Optional[dict] = None
        self.dataset_name = ""    # the data set's name when it is not open (a restored job)
        self.step = 0
        self.total: Optional[int] = None
        self.started_at: Optional[float] = None
        self.finished_at: Optional[float] = None
        self.finished_utc: Optional[str] = None   # when training ended (ISO 8601): the .h5 "trained"
        # progress, kept up to date by the manager's LiveFeed
        self.last_event = None    # newest event taken on the GUI thread (params filled in)
        self.last_params: Optional[dict] = None
        self.initial_params: Optional[dict] = None
        self.n_events = 0         # events posted by the runner
        self.n_dispatched = 0     # updates forwarded to the views

    # ------------------------------------------------------------ display
    @property
    def elapsed(self) -> float:
        if self.started_at is None:
            return 0.0
        end = self.finished_at if self.finished_at is not None else time.perf_counter()
        return max(0.0, end - self.started_at)

    @property
    def fraction(self) -> Optional[float]:
        if self.state == JobState.FINISHED:
            return 1.0
        if not self.total:
            return None
        return min(1.0, max(0.0, self.step / self.total))

    @property
    def eta(self) -> Optional[float]:
        """Seconds left, extrapolated from the steps done so far (None if unknown)."""
        if self.state != JobState.RUNNING or not self.total or self.step <= 0:
            return None
        return self.elapsed * (self.total - self.step) / self.step

    @property
    def history(self) -> List[dict]:
        return list(getattr(self.model, "history_", []) or [])

    @property
    def has_model(self) -> bool:
        """A fitted model is here to show, export, compare and score (a remote job's only
        once its saved model has been read: :class:`app.remote_jobs.RemoteJob`); a job cancelled
        during its start has none (its model never had parameters)."""
        return self.state.has_model and getattr(self.model, "emissionprob_", None) is not None

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<Job {self.id} {self.name!r} {self.state.value}>"


class _RunnerSignals(QObject):
    started = Signal(object)            # job
    finished = Signal(object, object, str, str)  # job, JobState, reason, error text
    tensorflow = Signal(object)         # {"tf_version", "devices", "where": "worker" | "app"}


class _JobRunner(QRunnable):
    """Drives one job's progress stream on a pool thread and posts each event to ``live``."""

    def __init__(self, job: Job, signals: _RunnerSignals, live: LiveFeed, executor: str = "process") -> None:
        super().__init__()
        self.job = job
        self.signals = signals
        self.live = live
        self.executor = executor
        self.worker = None       # the training worker process of the job's fit, if any
        #: CPU threads of the job's fit, in its worker process or on this thread (set when the job
        #: starts: the CPUs shared by the CPU slots; densehmm_core.threads)
        self.threads: Optional[int] = None
        # Python owns the runnable (kept in JobManager._runners for the job's lifetime), so a
        # queued job can still be taken off the pool and no wrapper ever outlives its C++ object.
        self.setAutoDelete(False)

    def stream(self, job: Job):
        """The job's progress events: from a worker process, or from ``iter_fit`` on this thread."""
        if self.executor == "process":
            from densehmm_core.worker import shared_pool, supports
            if supports(job.model):
                pool = shared_pool()
                try:
                    worker = pool.acquire(job.model.needs_tensorflow)   # EM jobs never wait for TensorFlow
                except Exception as exc:  # noqa: BLE001 - no worker process here (any reason): train in the app
                    job.notes.append(f"no worker process could be started ({type(exc).__name__}: {exc}); "
                                     f"the job trained in the app's process")
                else:
                    self.worker = worker

                    def replaced(new) -> None:   # the worker had ended before it took the fit
                        self.worker = new
                        job.notes.append("the first worker process had ended before it took the job; "
                                         "a new one trained it")
                    return pool.iter_fit_on(worker, job.model, job.train, eval_data=job.test, on_worker=replaced,
                                            cancel=job.token, threads=self.threads, **job.fit_kwargs)
        return job.model.iter_fit(job.train, eval_data=job.test, cancel=job.token, **job.fit_kwargs)

    def tensorflow_info(self) -> Optional[dict]:
        """TensorFlow's version and devices once the fit's process has imported it, else None:
        as the worker process reported it, or from this process (the fit runs here)."""
        if self.worker is not None:
            info = self.worker.tf_info
            return None if info is None else dict(info, where="worker")
        from densehmm_core.device import imported_tf, list_devices
        tf = imported_tf()
        if tf is None:
            return None
        return {"tf_version": str(tf.__version__), "devices": list_devices(), "where": "app"}

    def run(self) -> None:  # runs on a pool thread
        job, sig = self.job, self.signals
        if job.token.cancelled:
            sig.finished.emit(job, JobState.CANCELLED, "cancelled before start", "")
            return
        job.started_at = time.perf_counter()
        sig.started.emit(job)
        state, reason, error = JobState.FINISHED, "", ""
        from densehmm_core.events import TrainingDiverged
        try:
            last = None
            told_tf = False
            with fit_budget(self.threads):      # a fit on this thread (executor "thread") takes the job's share
                for ev in self.stream(job):
                    last = ev
                    self.live.post(job, ev)
                    if not told_tf:  # the fit may just have imported TensorFlow: tell the window
                        info = self.tensorflow_info()
                        if info is not None:
                            told_tf = True
                            sig.tensorflow.emit(info)
            reason = (last.reason if last is not None else "") or "done"
            if reason == "cancelled" or (job.token.cancelled and reason != "converged"):
                state = JobState.CANCELLED
        except TrainingDiverged as exc:
            state, reason = JobState.DIVERGED, str(exc) or "training diverged"
        except Exception as exc:  # noqa: BLE001 - the app must survive any trainer failure (shown in the job)
            state, reason, error = JobState.FAILED, f"{type(exc).__name__}: {exc}", traceback.format_exc()
            remote = getattr(exc, "remote_traceback", "")
            if remote:  # a failure inside the worker process: show its traceback
                reason, error = str(exc), remote
        sig.finished.emit(job, state, reason, error)


class JobManager(QObject):
    """Owns the thread pool and the jobs; progress reaches the GUI through :attr:`live`.

    Signals
    -------
    job_added(job), job_changed(job)
        A job was added / its state or progress changed (for the Jobs panel).
    job_event(job, event)
        Throttled progress event (:class:`app.live.LiveFeed`: at most ``max_rate`` per second
        per job, always the newest; its ``params`` hold the newest snapshot seen).
    job_finished(job)
        The job reached a final state.
    tensorflow_loaded(info)
        A job's fit runs where TensorFlow is imported (said once per manager):
        ``{"tf_version": str, "devices": [device dicts], "where": "worker" | "app"}``.
    """

    job_added = Signal(object)
    job_changed = Signal(object)
    job_event = Signal(object, object)
    job_finished = Signal(object)
    tensorflow_loaded = Signal(object)

    def __init__(self, parent: Optional[QObject] = None, pool_size: int = 2, max_rate: float = 10.0,
                 executor: Optional[str] = None, gpu_slots: int = 1) -> None:
        super().__init__(parent)
        if executor is None:  # the environment may choose; an unknown value is ignored, with a warning
            executor = config.job_executor()
            if executor not in ("process", "thread"):
                import logging
                logging.getLogger(__name__).warning(
                    "DENSEHMM_JOB_EXECUTOR=%r is neither 'process' nor 'thread': using 'process'", executor)
                executor = "process"
        if executor not in ("process", "thread"):
            raise ValueError("executor must be 'process' or 'thread'")
        #: "process": fits run in worker processes (densehmm_core.worker); "thread": on the pool threads
        self.executor = executor
        self.pool = QThreadPool(self)
        #: device slots: at most ``cpu_slots`` CPU jobs and ``gpu_slots`` jobs per GPU run at once;
        #: the others wait here (in submission order) until a slot of their device frees up
        self.cpu_slots = max(1, int(pool_size))
        self.gpu_slots = max(1, int(gpu_slots))
        self._waiting: List[_JobRunner] = []
        self._running_on: Dict[int, str] = {}    # job id -> slot ("cpu" or "/GPU:i") of started jobs
        self.gpus: List[str] = []
        self._resize_pool()
        #: the owner of live updates (newest event, throttle, drawing of the selected job)
        self.live = LiveFeed(self, max_rate=max_rate)
        self.live.event.connect(self.job_event)
        self.live.changed.connect(self.job_changed)
        self.jobs: List[Job] = []
        self._signals = _RunnerSignals()
        self._signals.started.connect(self._on_started)
        self._signals.finished.connect(self._on_finished)
        self._signals.tensorflow.connect(self._on_tensorflow)
        self.tf_info: Optional[dict] = None      # the first TensorFlow report of a job
        self._runners: Dict[int, _JobRunner] = {}
        self._external: Dict[int, Callable[[], None]] = {}   # adopted job id -> its cancel

    # --------------------------------------------------------- settings
    @property
    def pool_size(self) -> int:
        """CPU slots: how many jobs on the CPU run at once."""
        return self.cpu_slots

    def set_pool_size(self, n: int) -> None:
        self.cpu_slots = max(1, int(n))
        self._resize_pool()
        self._dispatch()

    def set_gpu_slots(self, n: int) -> None:
        """How many jobs run at once on each GPU (they share its memory)."""
        self.gpu_slots = max(1, int(n))
        self._resize_pool()
        self._dispatch()

    def _resize_pool(self) -> None:
        """One pool thread per slot; as many idle worker processes (none is started here)."""
        threads = self.cpu_slots + self.gpu_slots * len(self.gpus)
        self.pool.setMaxThreadCount(max(1, threads))
        if self.executor == "process":
            from densehmm_core.worker import shared_pool
            pool = shared_pool()
            pool.max_idle = threads

    def set_devices(self, devices: List[str]) -> None:
        """The accelerator devices that ``device="auto"`` jobs are spread over."""
        self.gpus = [d for d in devices if "gpu" in d.lower()]
        self._resize_pool()
        self._dispatch()

    @staticmethod
    def slot_of(device: str) -> str:
        """The slot a job's device uses: ``"/GPU:i"`` for a GPU, else ``"cpu"``."""
        from densehmm_core.device import DeviceError, parse_device
        try:
            kind, index = parse_device(device)
        except DeviceError:        # "file" (a loaded model) and other non-devices
            return "cpu"
        return f"/GPU:{index}" if kind == "gpu" else "cpu"

    def slot_capacity(self, slot: str) -> int:
        return self.cpu_slots if slot == "cpu" else self.gpu_slots

    def _dispatch(self) -> None:
        """Start every waiting job whose device has a free slot (in submission order)."""
        busy: Dict[str, int] = {}
        for slot in self._running_on.values():
            busy[slot] = busy.get(slot, 0) + 1
        for runner in list(self._waiting):
            slot = self.slot_of(runner.job.device)
            if busy.get(slot, 0) < self.slot_capacity(slot):
                busy[slot] = busy.get(slot, 0) + 1
                self._waiting.remove(runner)
                self._running_on[runner.job.id] = slot
                runner.threads = fit_threads(self.cpu_slots)
                self.pool.start(runner)

    def place(self, device: str) -> str:
        """Per-device placement: "auto" goes to the GPU with the fewest active jobs, else the CPU."""
        if device != "auto":
            return device
        if not self.gpus:
            return "cpu"
        load = {g: 0 for g in self.gpus}
        for j in self.active_jobs():
            if j.device in load:
                load[j.device] += 1
        return min(self.gpus, key=lambda g: (load[g], self.gpus.index(g)))

    # ------------------------------------------------------------- jobs
    def submit(self, job: Job) -> Job:
        self.jobs.append(job)
        runner = _JobRunner(job, self._signals, self.live, self.executor)
        self._runners[job.id] = runner
        self.job_added.emit(job)
        self._waiting.append(runner)
        self._dispatch()
        return job

    def adopt(self, job: Job, cancel: Callable[[], None]) -> Job:
        """Follow a job that runs elsewhere (a Dask sweep: :mod:`app.remote_jobs`): it is listed
        with the others, :meth:`cancel` calls ``cancel()``, and its runner reports through
        :meth:`mark_running` and :meth:`mark_finished`."""
        self.jobs.append(job)
        self._external[job.id] = cancel
        self.job_added.emit(job)
        return job

    def mark_running(self, job: Job) -> None:
        """An adopted job started."""
        self._on_started(job)

    def mark_finished(self, job: Job, state: "JobState", reason: str, error: str = "") -> None:
        """An adopted job ended (ignored when it already had)."""
        self._on_finished(job, state, reason, error)

    def active_jobs(self) -> List[Job]:
        return [j for j in self.jobs if not j.state.is_final]

    def running_jobs(self) -> List[Job]:
        return [j for j in self.jobs if j.state == JobState.RUNNING]

    def sweep_jobs(self, sweep: str) -> List[Job]:
        return [j for j in self.jobs if j.sweep == sweep]

    def cancel(self, job: Job) -> None:
        """Ask a job to stop; a queued job is taken off the pool at once. The model so far is kept."""
        if job.state.is_final:
            return
        job.token.cancel()
        if job.id in self._external:
            self._external[job.id]()
            return
        runner = self._runners.get(job.id)
        if job.state == JobState.QUEUED and runner is not None and runner in self._waiting:
            self._waiting.remove(runner)
            self._on_finished(job, JobState.CANCELLED, "cancelled before start", "")
        elif job.state == JobState.QUEUED and runner is not None and self.pool.tryTake(runner):
            self._on_finished(job, JobState.CANCELLED, "cancelled before start", "")

    def cancel_all(self) -> None:
        for job in list(self.jobs):
            self.cancel(job)

    def remove(self, job: Job) -> None:
        if not job.state.is_final:
            raise RuntimeError("cancel the job before removing it")
        self.jobs.remove(job)
        self.live.forget(job)
        if self.pool.activeThreadCount() == 0:
            self._runners.pop(job.id, None)

    def wait(self, timeout_s: float) -> bool:
        """Wait for the runners (processing queued signals meanwhile); True when all are done."""
        from PySide6.QtCore import QCoreApplication
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            done = self.pool.waitForDone(20)
            QCoreApplication.processEvents()      # finished jobs free their slots: waiting ones start
            if done and not self._waiting:
                return True
        return self.pool.activeThreadCount() == 0 and not self._waiting

    # --------------------------------------------------- runner signals
    def _on_tensorflow(self, info: dict) -> None:
        if self.tf_info is None:
            self.tf_info = info
            self.tensorflow_loaded.emit(info)

    def _on_started(self, job: Job) -> None:
        if job.state == JobState.QUEUED:
            job.state = JobState.RUNNING
        self.job_changed.emit(job)

    def _on_finished(self, job: Job, state: JobState, reason: str, error: str) -> None:
        if job.state.is_final:
            return
        self._running_on.pop(job.id, None)
        self.live.take(job)
        job.finished_at = time.perf_counter() if job.started_at is not None else None
        job.finished_utc = _utc_now()
        job.state, job.reason, job.error = state, reason, error
        if state == JobState.DIVERGED:
            # The model keeps its last finite parameters: show those.
            job.last_params = job.model.arrays()["params"]
        self.live.finish(job)       # its last update now; its past points go (its model has its history)
        self.job_finished.emit(job)
        self._dispatch()

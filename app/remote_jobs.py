"""App sweeps on a Dask cluster: :class:`RemoteJob` rows in the Jobs panel, fed by
:class:`RemoteSweeps` from the core's :class:`~densehmm_core.experiments.remote.RemoteSweep`.

Where a sweep runs is a setting (:attr:`app.settings.Settings.sweep_target`): empty -- the
app's own worker pool, as for single jobs --, ``"local"`` -- a local Dask cluster of as many
single-threaded worker processes as the Jobs panel's "Parallel jobs", private to the app (TLS
with credentials made for it, 127.0.0.1 only, no dashboard) -- or a scheduler address such as
``tls://head:8786`` (TLS from Dask's configuration), which the app then trusts: results come
back as pickles.

A remote run is a :class:`RemoteJob` in the :class:`~app.jobs.JobManager` (adopted, not run
by its thread pool): queued, then running on a worker (with its step count about once a
second), then finished with its metrics row and the model's history, or diverged, failed or
cancelled; Cancel cancels its future.  Live matrices are drawn for local jobs only.  A
remote run's final model reaches the app only as a file: with a local cluster every worker
writes to a temporary folder of this machine, with a scheduler to the shared folder of the
settings (``sweep_shared_dir``, storage every worker can write); the app then reads the
``.h5`` (off the GUI thread) and the job shows its model like a local one.  Without a
shared folder the job keeps its metrics row and curves (``has_model`` stays False).

Threads: the core calls back on Dask's threads; this module only emits queued Qt signals
from there and touches jobs and widgets on the GUI thread.  ``distributed`` is imported
when a Dask sweep starts, never at app start-up.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional

from PySide6.QtCore import QObject, Signal

from . import tasks
from .jobs import Job, JobManager, JobState

__all__ = ["RemoteJob", "RemoteSweeps", "describe_target", "target_problem"]

_STATES = {"finished": JobState.FINISHED, "diverged": JobState.DIVERGED, "failed": JobState.FAILED,
           "cancelled": JobState.CANCELLED}


def target_problem(target: str) -> str:
    """Why ``target`` (a scheduler address) cannot be used, in one line; ``""`` if it can."""
    from densehmm_core.experiments.remote import SchedulerError, check_address
    try:
        check_address(target)
    except SchedulerError as exc:
        return str(exc)
    return ""


def describe_target(target: str) -> str:
    """Where a sweep runs, in words (for the model form and the log)."""
    if not target:
        return "this app's worker pool"
    if target == "local":
        return "a local Dask cluster"
    return f"the Dask scheduler {target}"


class RemoteJob(Job):
    """A job trained on a Dask worker.

    ``model`` is the unfitted model whose ``get_config()`` was sent (its sizes fill the
    Jobs panel's row) until the worker's saved ``.h5`` is read; ``row`` is the core's
    metrics row and ``history`` the fitted model's history as returned by the worker.
    """

    remote = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.run_id = f"job{self.id}"
        self.row: dict = {}
        self.remote_history: List[dict] = []
        self.worker = ""
        self.model_loaded = False

    @property
    def history(self) -> List[dict]:
        if self.model_loaded or not self.remote_history:
            return super().history
        return list(self.remote_history)

    @property
    def has_model(self) -> bool:
        """Only once the worker's saved model has been read (otherwise: metrics only)."""
        return self.state.has_model and self.model_loaded


class _Sweep:
    """One app sweep on Dask: the core sweep, its jobs and where its models are written."""

    def __init__(self, core, jobs: Dict[str, RemoteJob], save_dir: Optional[str], temp_dir: bool) -> None:
        self.core = core
        self.jobs = jobs
        self.save_dir = save_dir
        self.temp_dir = temp_dir
        self.started = False
        self.closed = False
        self.pending_loads = 0


class RemoteSweeps(QObject):
    """Runs the app's Dask sweeps and relays them to a :class:`~app.jobs.JobManager`.

    ``log(message, level)`` receives one-line messages for the Log panel.
    """

    # emitted on Dask's threads, delivered (queued) on the GUI thread
    _result = Signal(object, object)            # _Sweep, RunResult
    _progress = Signal(object, str, object)     # _Sweep, run id, info dict

    def __init__(self, manager: JobManager, log: Callable[[str, str], None], parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.manager = manager
        self.log = log
        self.sweeps: List[_Sweep] = []
        self._result.connect(self._on_result)
        self._progress.connect(self._on_progress)

    # ------------------------------------------------------------------ start
    def start(self, jobs: List[RemoteJob], target: str, *, workers: int, shared_dir: str = "",
              on_failed: Optional[Callable[[str], None]] = None) -> None:
        """Adopt ``jobs`` (they appear queued) and send them to ``target`` ("local" or an address).

        Connecting happens off the GUI thread; if it fails, every job fails with the one-line
        reason and ``on_failed(reason)`` is called.
        """
        from densehmm_core.experiments.remote import RemoteRun, RemoteSweep
        if not jobs:
            return
        if shared_dir:
            save_dir, temp = shared_dir, False
        elif target == "local":  # the workers run on this machine: a temporary folder is shared
            save_dir, temp = tempfile.mkdtemp(prefix="densehmm-sweep-"), True
        else:
            save_dir, temp = None, False
        first = jobs[0]
        runs = [RemoteRun(j.run_id, j.model.kind, j.model.get_config(), label=j.name, fit_kwargs=j.fit_kwargs)
                for j in jobs]
        holder: Dict[str, _Sweep] = {}
        core = RemoteSweep(runs, first.train, first.test, scheduler=target, workers=workers, save_dir=save_dir,
                           on_result=lambda r: self._result.emit(holder["s"], r),
                           on_progress=lambda rid, info: self._progress.emit(holder["s"], rid, info))
        sweep = holder["s"] = _Sweep(core, {j.run_id: j for j in jobs}, save_dir, temp)
        self.sweeps.append(sweep)
        for job in jobs:
            self.manager.adopt(job, cancel=lambda j=job, s=sweep: self._cancel(s, j))

        def started(_):
            for job in jobs:  # cancelled while connecting
                if job.state == JobState.CANCELLED:
                    core.cancel(job.run_id)
            # started only now: a cancel's result (handled at once on this thread) must not close the
            # sweep while the loop above still cancels its other runs through the client
            sweep.started = True
            self.log(f"{first.sweep}: {len(jobs)} runs sent to {core.where}"
                     + (f"; models are written to {save_dir}" if save_dir and not temp else ""), "info")
            self._maybe_close(sweep)   # every run may have been cancelled meanwhile

        def failed(exc, _tb):
            reason = str(exc) or type(exc).__name__
            for job in jobs:
                self.manager.mark_finished(job, JobState.FAILED, reason)
            self._close(sweep)
            if on_failed is not None:
                on_failed(reason)

        tasks.run_background(core.start, started, failed)

    # ---------------------------------------------------------------- follow
    def _on_progress(self, sweep: _Sweep, run_id: str, info: dict) -> None:
        job = sweep.jobs.get(run_id)
        if job is None or job.state.is_final:
            return
        if info.get("state") == "running":
            job.worker = str(info.get("worker", ""))
            name = str(info.get("name", ""))   # a local cluster's workers are called 0, 1, ...
            short = name if name and len(name) <= 12 else job.worker.split("://")[-1]
            job.device = f"dask {short}" if short else "dask"
            if job.started_at is None:
                job.started_at = time.perf_counter()
            self.manager.mark_running(job)
            return
        job.step = int(info.get("step") or 0)
        job.total = info.get("total")
        self.manager.job_changed.emit(job)

    def _on_result(self, sweep: _Sweep, result) -> None:
        job = sweep.jobs.get(result.run_id)
        if job is None or job.state.is_final:
            self._maybe_close(sweep)
            return
        if job.started_at is None:
            job.started_at = time.perf_counter()
        job.row = dict(result.row)
        job.remote_history = list(result.history)
        if job.remote_history:
            job.step = int(job.remote_history[-1].get("step") or 0)
        if job.row.get("total"):
            job.total = int(job.row["total"])
        state = _STATES[result.state]
        reason = result.error or job.row.get("stop") or result.state
        if state == JobState.DIVERGED:
            reason = job.row.get("status", reason)
        path = result.model_path
        if path and state.has_model:
            sweep.pending_loads += 1
            tasks.run_background(lambda p=path: _read_model(p),
                                 lambda model, j=job, s=sweep, st=state, r=reason, p=path:
                                 self._model_read(s, j, st, r, p, model),
                                 lambda exc, _tb, j=job, s=sweep, st=state, r=reason:
                                 self._model_unread(s, j, st, r, exc))
            return
        if state.has_model and sweep.save_dir is None:
            job.notes.append("its model stayed on the cluster: set a shared folder for Dask sweeps "
                             "to see the final models (the metrics are in the Jobs panel)")
        self.manager.mark_finished(job, state, reason, result.error)
        self._maybe_close(sweep)

    def _model_read(self, sweep: _Sweep, job: RemoteJob, state: JobState, reason: str, path: str, model) -> None:
        sweep.pending_loads -= 1
        if getattr(model, "vocabulary", None) is None and getattr(job.model, "vocabulary", None) is not None:
            model.vocabulary = list(job.model.vocabulary)
        job.model = model
        job.model_loaded = True
        if sweep.temp_dir:
            _remove(path)
        self.manager.mark_finished(job, state, reason)
        self._maybe_close(sweep)

    def _model_unread(self, sweep: _Sweep, job: RemoteJob, state: JobState, reason: str, exc) -> None:
        sweep.pending_loads -= 1
        job.notes.append(f"its saved model could not be read: {exc}")
        self.manager.mark_finished(job, state, reason)
        self._maybe_close(sweep)

    # --------------------------------------------------------------- control
    def _cancel(self, sweep: _Sweep, job: RemoteJob) -> None:
        if sweep.started:
            sweep.core.cancel(job.run_id)
        self.manager.mark_finished(job, JobState.CANCELLED,
                                   "cancelled" if job.started_at is not None else "cancelled before start")
        self._maybe_close(sweep)

    def _maybe_close(self, sweep: _Sweep) -> None:
        if sweep.closed or not sweep.started or sweep.pending_loads:
            return
        if all(j.state.is_final for j in sweep.jobs.values()):
            sweep.closed = True
            # nothing to report back: a plain thread (a local cluster takes a second or two)
            threading.Thread(target=self._close, args=(sweep,), name="densehmm-dask-close", daemon=True).start()

    def _close(self, sweep: _Sweep) -> None:
        """Disconnect (a local cluster is shut down); runs off the GUI thread or at quit."""
        sweep.closed = True
        sweep.core.close()
        if sweep.temp_dir and sweep.save_dir:
            shutil.rmtree(sweep.save_dir, ignore_errors=True)

    def close_all(self) -> None:
        """At quit: cancel what is left of every sweep and disconnect."""
        for sweep in self.sweeps:
            self._close(sweep)   # waits for a close already under way on a background thread
        self.sweeps.clear()


def _read_model(path: str):
    from densehmm_core.modelfile import load_model
    return load_model(path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass

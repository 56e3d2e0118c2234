"""Training runs on a Dask cluster, one task per run, for front ends (the app's sweeps).

:class:`RemoteSweep` sends the training and test sequences to the cluster once
(``scatter(..., broadcast=True)``) and submits one task per :class:`RemoteRun`.  A
task (:func:`train_run`) builds the model from its ``(kind, config)`` -- the model's
``get_config()`` -- with :func:`densehmm_core.model_from_config`, fits it on the
scattered training split with the test split as evaluation data, and returns a metrics
row and the model's ``history_`` (plain numbers).  No model crosses the network: with
``save_dir`` (a folder every worker can write, i.e. shared storage) the worker also saves
the fitted model to ``save_dir/<run id>.h5`` and the row names that file.

How a front end follows the runs (all Qt-free; the callbacks run on Dask's threads,
never on the caller's):

* ``on_result(RunResult)``: a run ended (``finished``, ``diverged``, ``failed`` or
  ``cancelled``).  The same results are queued for :meth:`RemoteSweep.poll`.
* ``on_progress(run_id, info)``: a run started on a worker (``info["state"] ==
  "running"``, ``info["worker"]``: its address, ``info["name"]``: its name), then about once a second its progress
  (``step``, ``total``, ``loss``).  These are Dask worker events
  (``Worker.log_event`` / ``Client.subscribe_topic``): small dicts of numbers.

:meth:`RemoteSweep.cancel` cancels a run's future; a run that is already running is
also told to stop (a Dask :class:`~distributed.Event` that its cancel token polls
twice a second), so its worker is free again within about a second.

A local cluster (``scheduler="local"``) is private to this process: TLS with credentials made
for it, every listener on 127.0.0.1, no dashboard (:mod:`.dask_executor`).  A named
scheduler is trusted: results come back as pickles.

Importing this module does not import Dask; :meth:`RemoteSweep.start` does.
"""
from __future__ import annotations

import queue
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..events import CancelToken
from .dask_executor import DaskTarget, SchedulerError, check_address

__all__ = ["RemoteRun", "RunResult", "RemoteSweep", "train_run", "RUN_STATES", "DaskTarget", "SchedulerError",
           "check_address"]

#: The final states of a run.
RUN_STATES = ("finished", "diverged", "failed", "cancelled")
#: Seconds between two progress events of a running task, and between two cancel checks.
PROGRESS_INTERVAL_S = 1.0
CANCEL_POLL_S = 0.5


@dataclass(frozen=True)
class RemoteRun:
    """One training run: a model given by its ``kind`` and ``config`` (``model.get_config()``)."""

    run_id: str
    kind: str
    config: dict
    label: str = ""
    fit_kwargs: dict = field(default_factory=dict)   # extra keyword arguments of ``iter_fit``


@dataclass
class RunResult:
    """How a run ended.

    ``row``: the metrics of :func:`train_run` (empty unless ``state`` is ``finished`` or
    ``diverged``); ``history``: the fitted model's ``history_``; ``error``: why it failed.
    """

    run_id: str
    state: str
    row: dict = field(default_factory=dict)
    history: List[dict] = field(default_factory=list)
    error: str = ""

    @property
    def model_path(self) -> Optional[str]:
        return self.row.get("model_path") or None


class _EventCancel(CancelToken):
    """A cancel token that also polls a Dask :class:`~distributed.Event` (at most every 0.5 s)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        import distributed
        self._remote = distributed.Event(name)
        self._next_check = 0.0

    @property
    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._event.is_set() and now >= self._next_check:
            self._next_check = now + CANCEL_POLL_S
            if self._remote.is_set():
                self._event.set()
        return self._event.is_set()


def train_run(kind: str, config: dict, shared: dict, *, run_id: str = "", save_dir: Optional[str] = None,
              topic: Optional[str] = None, cancel_event: Optional[str] = None,
              fit_kwargs: Optional[dict] = None) -> dict:
    """Build the model of ``(kind, config)``, fit it on ``shared["train"]`` (evaluation data
    ``shared["test"]``) and return ``{"row": metrics, "history": model.history_}``.

    Row keys: ``status`` (``ok``, ``diverged: ...`` or ``cancelled``), ``stop`` (the
    trainer's stop reason), ``iterations``, ``total`` (the most it could have done),
    ``train_nll`` and ``test_nll`` (negative log-likelihood per token,
    :func:`densehmm_core.metrics.normalized_nll`), ``mad`` (the trainer's last
    co-occurrence MAD, ``None`` when it reports none), ``n_states``, ``n_symbols``,
    ``parameters``, ``fit_seconds``, ``model_path`` (``None`` unless ``save_dir``) and
    ``worker`` (its address, ``""`` outside Dask).  ``fit_kwargs``: extra arguments of
    ``iter_fit``.

    ``topic``: the Dask worker-event topic that receives ``running`` and progress events;
    ``cancel_event``: the name of the Dask event that asks this run to stop.  Both are
    only used inside a Dask task; called directly, the function trains in this process.
    """
    import os

    from ..events import TrainingDiverged
    from ..metrics import normalized_nll
    from ..registry import model_from_config
    worker = None
    if topic is not None:
        import distributed
        worker = distributed.get_worker()
        worker.log_event(topic, {"run": run_id, "state": "running", "worker": worker.address,
                                 "name": str(worker.name)})
    cancel = _EventCancel(cancel_event) if cancel_event else None
    train, test = shared["train"], shared.get("test")
    model = model_from_config(kind, config)
    status = "ok"
    t0 = time.perf_counter()
    next_report = t0 + PROGRESS_INTERVAL_S
    total = None
    try:
        for ev in model.iter_fit(train, eval_data=test, cancel=cancel, **dict(fit_kwargs or {})):
            total = ev.total
            if worker is not None and time.perf_counter() >= next_report:
                next_report = time.perf_counter() + PROGRESS_INTERVAL_S
                worker.log_event(topic, {"run": run_id, "state": "progress", "step": int(ev.step),
                                         "total": None if ev.total is None else int(ev.total),
                                         "loss": None if ev.loss is None else float(ev.loss)})
    except TrainingDiverged as exc:  # the model keeps its last finite parameters
        status = f"diverged: {exc}"
    fit_seconds = time.perf_counter() - t0
    stop = getattr(model, "stop_reason_", "") or ""
    if stop == "cancelled":
        status = "cancelled"
    history = [dict(r) for r in model.history_]
    mad = None
    for rec in reversed(history):
        if isinstance(rec.get("mad"), (int, float)):
            mad = float(rec["mad"])
            break
    row = {
        "status": status, "stop": stop, "iterations": int(history[-1]["step"]) if history else 0,
        "total": None if total is None else int(total),
        "train_nll": float(normalized_nll(model, train)),
        "test_nll": None if not test else float(normalized_nll(model, test)),
        "mad": mad, "n_states": int(model.n_states), "n_symbols": int(model.n_symbols),
        "parameters": int(model.n_parameters), "fit_seconds": round(fit_seconds, 4),
        "model_path": None, "worker": "" if worker is None else worker.address,
    }
    if save_dir and status != "cancelled":
        from ..modelfile import save_model
        path = os.path.join(save_dir, f"{run_id or 'model'}.h5")
        save_model(path, model, name=run_id or None, overwrite=True)
        row["model_path"] = path
    return {"row": row, "history": history}


class RemoteSweep:
    """Training runs on a Dask cluster (see the module docstring).

    Parameters
    ----------
    runs : the runs (their ``run_id`` must be unique).
    train, test : the data (anything :func:`densehmm_core.sequences.as_sequences` takes),
        sent to every worker once; ``test`` may be None.
    scheduler : ``"local"`` or None starts a :class:`~distributed.LocalCluster` of
        ``workers`` single-threaded processes (closed by :meth:`close`), private to this
        process (TLS with temporary credentials, 127.0.0.1 only, no dashboard); an address
        such as ``tls://host:8786`` (or a
        :class:`~densehmm_core.experiments.dask_executor.DaskTarget` with TLS files) uses that
        cluster, which this process then trusts (results come back as pickles).
    workers : size of a local cluster.
    save_dir : each worker also saves its fitted model to ``save_dir/<run_id>.h5``
        (storage every worker can write; the caller creates the folder).
    on_result, on_progress : callbacks, called on Dask's threads.
    retries : how often a task that raised is tried again (a worker that dies is handled by
        the scheduler: its task runs again elsewhere).
    """

    def __init__(self, runs: Sequence[RemoteRun], train: Any, test: Any = None, *,
                 scheduler: Union[None, str, DaskTarget] = None, workers: int = 2, save_dir: Optional[str] = None,
                 on_result: Optional[Callable[[RunResult], None]] = None,
                 on_progress: Optional[Callable[[str, dict], None]] = None, retries: int = 1) -> None:
        from ..sequences import as_sequences
        ids = [r.run_id for r in runs]
        if len(set(ids)) != len(ids):
            raise ValueError("run ids must be unique")
        self.runs = {r.run_id: r for r in runs}
        self._data = {"train": as_sequences(train),
                      "test": None if test is None else as_sequences(test)}
        self.target = DaskTarget.of(scheduler)
        self.scheduler = self.target.address
        self.workers = max(1, int(workers))
        self.save_dir = None if save_dir is None else str(save_dir)
        self.on_result = on_result
        self.on_progress = on_progress
        self.retries = int(retries)
        self.sweep_id = uuid.uuid4().hex[:10]
        self.topic = f"densehmm-sweep-{self.sweep_id}"
        self.client: Any = None  # a distributed.Client once started
        self.cluster: Any = None
        self._futures: Dict[str, Any] = {}
        self._ended: Dict[str, str] = {}
        self._lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closed = False
        self._results: "queue.Queue[RunResult]" = queue.Queue()

    # ---------------------------------------------------------------- set-up
    @property
    def where(self) -> str:
        """Where the runs go, in words."""
        return self.scheduler or f"a local Dask cluster of {self.workers} worker processes"

    def _needs_tf(self) -> bool:
        """Whether a run fits with TensorFlow (a DenseHMM's co-occurrence fit): a local cluster's
        workers are then forked with it (dask_executor.start_forkserver)."""
        from ..registry import model_from_config
        for run in self.runs.values():
            try:
                if getattr(model_from_config(run.kind, dict(run.config)), "needs_tensorflow", False):
                    return True
            except Exception:  # noqa: BLE001 - a bad config fails its run later, with its own message
                continue
        return False

    def start(self) -> None:
        """Connect (or start a local cluster), send the data and submit every run.

        Blocks for the connection (seconds); raises
        :class:`~densehmm_core.experiments.dask_executor.SchedulerError` (one line) when the
        scheduler cannot be reached.
        """
        from .dask_executor import connect
        from .runner import _worker_env
        client, cluster = connect(self.workers, self.target, env=_worker_env(self.workers),
                                  preload_tf=self._needs_tf())
        with self._close_lock:
            if self._closed:  # closed while connecting (e.g. the app quit): submit nothing
                client.close()
                if cluster is not None:
                    cluster.close()
                return
            self.client, self.cluster = client, cluster
        try:
            self.client.subscribe_topic(self.topic, self._on_event)
            shared = self.client.scatter([self._data], broadcast=True, hash=False)[0]
            for run_id, run in self.runs.items():
                key = f"densehmm-{self.sweep_id}-{run_id}"
                fut = self.client.submit(
                    train_run, run.kind, dict(run.config), shared, run_id=run_id, save_dir=self.save_dir,
                    topic=self.topic, cancel_event=f"{key}-cancel", fit_kwargs=dict(run.fit_kwargs),
                    key=key, retries=self.retries, pure=False)
                with self._lock:
                    self._futures[run_id] = fut
                fut.add_done_callback(lambda f, rid=run_id: self._on_done(rid, f))
        except BaseException:
            self.close()
            raise

    # -------------------------------------------------------------- following
    def _on_event(self, event) -> None:
        """A worker event of this sweep (runs on the client's event loop thread)."""
        _, msg = event
        run_id = msg.get("run")
        if self.on_progress is None or run_id not in self.runs:
            return
        with self._lock:
            if run_id in self._ended:
                return
        self.on_progress(run_id, dict(msg))

    def _finish(self, result: RunResult) -> None:
        with self._lock:
            if result.run_id in self._ended:
                return
            self._ended[result.run_id] = result.state
        self._results.put(result)
        if self.on_result is not None:
            self.on_result(result)

    def _on_done(self, run_id: str, fut) -> None:
        if fut.status == "cancelled":
            self._finish(RunResult(run_id, "cancelled"))
            return
        try:
            out = fut.result()
        except Exception as exc:  # noqa: BLE001 - a run that raised (or whose workers kept dying)
            err = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self._finish(RunResult(run_id, "failed", error=err))
            return
        row, history = out["row"], out["history"]
        state = {"ok": "finished", "cancelled": "cancelled"}.get(row["status"], "diverged")
        self._finish(RunResult(run_id, state, row=row, history=history))

    def poll(self) -> List[RunResult]:
        """The results that arrived since the last call."""
        out = []
        while True:
            try:
                out.append(self._results.get_nowait())
            except queue.Empty:
                return out

    def state(self, run_id: str) -> str:
        """``pending`` (submitted, not ended) or its final state."""
        with self._lock:
            return self._ended.get(run_id, "pending")

    @property
    def done(self) -> bool:
        with self._lock:
            return len(self._ended) == len(self.runs)

    def wait(self, timeout: float) -> bool:
        """Wait until every run ended; True if they did within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.done and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.done

    # ---------------------------------------------------------------- control
    def cancel(self, run_id: str) -> bool:
        """Cancel a run (its future; a running task is told to stop). False if it had ended."""
        with self._lock:
            fut = self._futures.get(run_id)
            ended = run_id in self._ended
        if fut is None or ended or self.client is None:
            return False
        import distributed
        client = self.client
        try:
            distributed.Event(f"{fut.key}-cancel", client=client).set()
            client.cancel([fut])
        except Exception:  # noqa: BLE001 - any error of a client that close() (another thread) is closing
            if not self._closed:
                raise
            # close() cancels every run that is left anyway, and the cluster forgets the sweep's tasks
        self._finish(RunResult(run_id, "cancelled"))
        return True

    def cancel_all(self) -> None:
        for run_id in list(self.runs):
            self.cancel(run_id)

    def close(self) -> None:
        """Cancel what is left and disconnect (a local cluster is shut down).

        Thread-safe and idempotent: a second caller waits for the first one's close; a
        :meth:`start` still connecting then submits nothing.
        """
        with self._close_lock:
            self._closed = True
            if self.client is not None:
                if not self.done:
                    self.cancel_all()
                try:
                    self.client.unsubscribe_topic(self.topic)
                finally:
                    self.client.close()
            if self.cluster is not None:
                self.cluster.close()
            self.client = self.cluster = None

"""Training in a separate worker process: the same progress stream, over a pipe.

A front end that must stay responsive while models train (the desktop app) runs each
fit in a worker process instead of a thread: the training then never competes with the
front end for Python's GIL, and the worker lowers its own CPU priority (``nice``), so
the front end's thread gets a core whenever it needs one.

:meth:`WorkerPool.iter_fit` behaves like ``model.iter_fit``: it yields the same
:class:`~densehmm_core.events.ProgressEvent` objects (``model.history_`` grows with them),
honours a :class:`~densehmm_core.events.CancelToken`, and when the stream ends the
model in *this* process holds exactly the worker's result (matrices, embeddings,
history, stop reason, seed and device used), also after a cancel or a divergence
(:class:`~densehmm_core.events.TrainingDiverged` is raised here, as in-process, after the
last finite parameters were copied over).

Workers are persistent (TensorFlow is imported once per worker) and are reused one fit
at a time.  Messages are JSON plus raw ``.npy`` buffers (``allow_pickle=False``): no
pickles cross the pipe, only plain numbers, strings and numeric arrays.  Parameter
snapshots are sent at most every ``params_interval`` seconds (always with the first and
the last event); every event itself is forwarded.  Only :class:`~densehmm_core.DenseHMM`
and :class:`~densehmm_core.StandardHMM` can be trained in a worker (:func:`supports`).
"""
from __future__ import annotations

import dataclasses
import io
import json
import os
import queue
import struct
import sys
import threading
import time
import traceback
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from .events import CancelToken, ProgressEvent, TrainingDiverged

__all__ = ["WorkerPool", "TrainingWorker", "WorkerError", "supports", "shared_pool", "close_shared_pool",
           "encode_message", "decode_message"]

class WorkerError(RuntimeError):
    """The worker process failed (an exception in the fit, or the process died).

    ``remote_traceback`` holds the worker's formatted traceback when there is one.
    """

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback


# ---------------------------------------------------------------- wire format
_MAGIC = b"DHW1"


def encode_message(msg: Any) -> bytes:
    """Encode plain data (dict with str keys, list, tuple, str, int, float, bool, None,
    numpy scalars and numeric arrays) as JSON + ``.npy`` buffers; never pickles."""
    arrays: List[np.ndarray] = []

    def enc(o):
        if isinstance(o, np.ndarray):
            if o.dtype.hasobject:
                raise TypeError("object arrays cannot be sent to a worker")
            arrays.append(o)
            return {"__nd__": len(arrays) - 1}
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, dict):
            if any(not isinstance(k, str) for k in o):
                raise TypeError("only str keys can be sent to a worker")
            if "__nd__" in o:
                raise TypeError("the key '__nd__' is reserved")
            return {k: enc(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [enc(v) for v in o]
        if o is None or isinstance(o, (str, bool, int, float)):
            return o
        raise TypeError(f"{type(o).__name__} cannot be sent to a worker")

    header = json.dumps(enc(msg), allow_nan=True).encode("utf-8")
    out = io.BytesIO()
    out.write(_MAGIC)
    out.write(struct.pack("<QI", len(header), len(arrays)))
    out.write(header)
    for a in arrays:
        np.lib.format.write_array(out, np.ascontiguousarray(a), allow_pickle=False)
    return out.getvalue()


def decode_message(data: bytes) -> Any:
    """Inverse of :func:`encode_message` (arrays come back with their dtype and shape)."""
    if data[:4] != _MAGIC:
        raise ValueError("not a worker message")
    hlen, narr = struct.unpack("<QI", data[4:16])
    header = json.loads(data[16:16 + hlen].decode("utf-8"))
    buf = io.BytesIO(data[16 + hlen:])
    arrays = [np.lib.format.read_array(buf, allow_pickle=False) for _ in range(narr)]

    def dec(o):
        if isinstance(o, dict):
            if set(o) == {"__nd__"}:
                return arrays[o["__nd__"]]
            return {k: dec(v) for k, v in o.items()}
        if isinstance(o, list):
            return [dec(v) for v in o]
        return o

    return dec(header)


# ------------------------------------------------------- model <-> plain data
def supports(model: Any) -> bool:
    """True for the models a worker can train: those of the registry
    (:func:`densehmm_core.model_from_config` rebuilds them from ``kind`` and ``get_config()``)."""
    from .hmm_base import BaseHMM
    from .registry import MODEL_KINDS, model_class
    return isinstance(model, BaseHMM) and model.kind in MODEL_KINDS and type(model) is model_class(model.kind)


def _as_plain_sequences(data, n_symbols) -> Optional[dict]:
    if data is None:
        return None
    from .sequences import as_sequences
    seqs = as_sequences(data, n_symbols=n_symbols)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    tokens = np.concatenate(seqs).astype(np.int32, copy=False) if len(seqs) else np.zeros(0, np.int32)
    return {"tokens": tokens, "lengths": lengths}


def _from_plain_sequences(d: Optional[dict]):
    if d is None:
        return None
    lengths = np.asarray(d["lengths"], dtype=np.int64)
    return np.split(np.asarray(d["tokens"]), np.cumsum(lengths)[:-1]) if len(lengths) else []


def _event_to_plain(ev: ProgressEvent, with_params: bool) -> dict:
    d = {f.name: getattr(ev, f.name) for f in dataclasses.fields(ev)}
    if not with_params:
        d["params"] = None
    return d


# -------------------------------------------------------------- worker side
def _child_main(ctrl, data, nice: int) -> None:  # pragma: no cover - runs in the worker process
    """Entry point of a worker process: serve ``fit`` requests until ``stop`` or EOF."""
    if nice and hasattr(os, "nice"):
        try:
            os.nice(int(nice))
        except OSError:
            pass
    inbox: "queue.Queue" = queue.Queue()
    current: Dict[str, Any] = {}       # the running fit: its "job" number and "token"
    cancelled: set = set()             # job numbers cancelled, possibly before their fit started
    lock = threading.Lock()

    def reader():
        while True:
            try:
                msg = decode_message(ctrl.recv_bytes())
            except (EOFError, OSError):
                msg = {"op": "stop"}
            op = msg.get("op")
            if op in ("cancel", "stop"):
                with lock:
                    if op == "cancel":
                        cancelled.add(msg.get("job"))
                    if current.get("token") is not None and (op == "stop" or current.get("job") == msg.get("job")):
                        current["token"].cancel()
            if op == "cancel":
                continue
            inbox.put(msg)
            if op == "stop":
                return

    threading.Thread(target=reader, name="densehmm-worker-control", daemon=True).start()

    def send(msg):
        data.send_bytes(encode_message(msg))

    while True:
        msg = inbox.get()
        op = msg.get("op")
        if op == "stop":
            break
        if op == "warm":
            try:
                from .device import import_tf, list_devices
                tf = import_tf()
                send({"op": "warm", "tf_version": tf.__version__, "devices": list_devices()})
            except Exception as exc:  # noqa: BLE001 - reported to the caller
                send({"op": "warm", "error": f"{type(exc).__name__}: {exc}"})
            continue
        if op == "fit":
            token = CancelToken()
            with lock:
                current.update(job=msg.get("job"), token=token)
                if msg.get("job") in cancelled:  # cancelled while it waited behind other work
                    token.cancel()
            try:
                _serve_fit(msg, token, send)
            finally:
                with lock:
                    current.clear()
                    cancelled.discard(msg.get("job"))


def _serve_fit(msg: dict, token: CancelToken, send) -> None:  # pragma: no cover - worker process
    from .registry import model_from_config
    model = None
    try:
        model = model_from_config(msg["kind"], msg["config"])
        if msg.get("vocabulary") is not None:
            model.vocabulary = list(msg["vocabulary"])
        train = _from_plain_sequences(msg["train"])
        test = _from_plain_sequences(msg.get("test"))
        interval = float(msg.get("params_interval", 0.05))
        last_params = float("-inf")
        first = True
        for ev in model.iter_fit(train, eval_data=test, cancel=token, **(msg.get("fit_kwargs") or {})):
            now = time.monotonic()
            with_params = bool(ev.params) and (first or ev.done or now - last_params >= interval)
            if with_params:
                last_params = now
                first = False
            send({"op": "event", "event": _event_to_plain(ev, with_params)})
        send({"op": "end", "outcome": "done", "state": model.arrays()})
    except TrainingDiverged as exc:
        send({"op": "end", "outcome": "diverged", "message": str(exc), "state": model.arrays()})
    except BaseException as exc:  # noqa: BLE001 - reported to the caller
        send({"op": "end", "outcome": "failed", "message": f"{type(exc).__name__}: {exc}",
              "traceback": traceback.format_exc()})


# -------------------------------------------------------------- caller side
def _context():
    import multiprocessing
    return multiprocessing.get_context("spawn")


class TrainingWorker:
    """One worker process (spawned, persistent), used by one fit at a time.

    Parameters
    ----------
    nice : int
        How much the worker lowers its CPU priority (``os.nice``; ignored where
        unavailable).  ``0`` keeps the caller's priority.
    """

    def __init__(self, nice: int = 10) -> None:
        ctx = _context()
        ctrl_recv, self._ctrl = ctx.Pipe(duplex=False)
        self._data, data_send = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_child_main, args=(ctrl_recv, data_send, int(nice)),
                                   name="densehmm-training-worker", daemon=True)
        self.process.start()
        ctrl_recv.close()
        data_send.close()
        self._send_lock = threading.Lock()
        self._jobs = 0            # fits sent so far: each fit and its cancel carry its number
        self.broken = False
        self.warm_info: Optional[dict] = None
        self._warm_pending = False

    @property
    def alive(self) -> bool:
        return not self.broken and self.process.is_alive()

    def _send(self, msg: dict) -> None:
        with self._send_lock:
            self._ctrl.send_bytes(encode_message(msg))

    def warm(self) -> None:
        """Ask the worker to import TensorFlow now (answered before the next fit starts)."""
        self._send({"op": "warm"})
        self._warm_pending = True

    def _recv(self, cancel: Optional[CancelToken] = None, job: Optional[int] = None,
              timeout: Optional[float] = None, poll_s: float = 0.05) -> dict:
        """The next message; forwards a cancel of ``cancel`` (for fit number ``job``) meanwhile.
        Raises :class:`WorkerError` when the process dies, :class:`TimeoutError` after ``timeout``."""
        cancel_sent = False
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if cancel is not None and cancel.cancelled and not cancel_sent:
                try:
                    self._send({"op": "cancel", "job": job})
                except OSError:
                    pass
                cancel_sent = True
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the training process did not answer in time")
            try:
                if self._data.poll(poll_s):
                    return decode_message(self._data.recv_bytes())
            except (EOFError, OSError):
                pass
            else:
                if self.process.is_alive():
                    continue
                if self._data.poll(0):
                    continue
            self.broken = True
            self.process.join(1.0)
            raise WorkerError(f"the training process ended unexpectedly (exit code {self.process.exitcode})")

    def _drain_warm(self) -> None:
        while self._warm_pending:
            msg = self._recv(None)
            if msg.get("op") == "warm":
                self._warm_pending = False
                self.warm_info = msg

    def iter_fit(self, model, data, *, eval_data=None, cancel: Optional[CancelToken] = None,
                 params_interval: float = 0.05, **fit_kwargs) -> Iterator[ProgressEvent]:
        """Like ``model.iter_fit(data, eval_data=..., cancel=..., **fit_kwargs)``, in the worker."""
        if not supports(model):
            raise TypeError(f"{type(model).__name__} cannot be trained in a worker process")
        if model.n_symbols is None:
            model._resolve_n_symbols(data)
        config = model.get_config()
        self._jobs += 1
        job = self._jobs
        msg = {"op": "fit", "job": job, "kind": model.kind, "config": config,
               "vocabulary": list(model.vocabulary) if model.vocabulary is not None else None,
               "train": _as_plain_sequences(data, model.n_symbols),
               "test": _as_plain_sequences(eval_data, model.n_symbols),
               "fit_kwargs": dict(fit_kwargs), "params_interval": float(params_interval)}
        self._drain_warm()
        self._send(msg)
        model.history_ = []
        ended = False
        try:
            while True:
                reply = self._recv(cancel, job)
                op = reply.get("op")
                if op == "event":
                    ev = ProgressEvent(**reply["event"])
                    model.record_event(ev)
                    yield ev
                elif op == "end":
                    ended = True
                    outcome = reply["outcome"]
                    if outcome == "failed":
                        raise WorkerError(reply.get("message", "the fit failed"), reply.get("traceback", ""))
                    model.set_arrays(reply["state"])
                    if outcome == "diverged":
                        raise TrainingDiverged(reply.get("message") or "training diverged")
                    return
        finally:
            if not ended and not self.broken:
                # The caller stopped iterating early: stop the fit and wait for its end message.
                try:
                    self._send({"op": "cancel", "job": job})
                    deadline = time.monotonic() + 5.0
                    while self._recv(timeout=max(0.0, deadline - time.monotonic())).get("op") != "end":
                        pass
                except (WorkerError, OSError, TimeoutError):
                    self.broken = True  # released as broken: the pool stops the process

    def close(self, timeout: float = 0.5) -> None:
        """Stop the process: ask, then terminate, then kill (never blocks much longer than ``timeout``)."""
        try:
            self._send({"op": "stop"})
        except (OSError, ValueError):
            pass
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(0.5)
        if self.process.is_alive():  # pragma: no cover - last resort
            self.process.kill()
            self.process.join(0.5)
        self.broken = True
        for c in (self._ctrl, self._data):
            try:
                c.close()
            except OSError:
                pass


class WorkerPool:
    """Persistent worker processes, handed out one per running fit (thread-safe).

    Parameters
    ----------
    max_idle : int
        Workers kept alive while idle (more are started on demand and stopped when
        released beyond this number).
    nice : int
        CPU priority decrease of the workers (see :class:`TrainingWorker`).
    """

    def __init__(self, max_idle: int = 2, nice: int = 10) -> None:
        self.max_idle = int(max_idle)
        self.nice = int(nice)
        self._idle: List[TrainingWorker] = []
        self._busy: List[TrainingWorker] = []
        self._lock = threading.Lock()
        self._closed = False

    def acquire(self) -> TrainingWorker:
        with self._lock:
            if self._closed:
                raise WorkerError("the worker pool is closed")
            while self._idle:
                w = self._idle.pop()
                if w.alive:
                    self._busy.append(w)
                    return w
                w.close(0)
        w = TrainingWorker(nice=self.nice)
        with self._lock:
            self._busy.append(w)
        return w

    def release(self, w: TrainingWorker) -> None:
        with self._lock:
            if w in self._busy:
                self._busy.remove(w)
            keep = not self._closed and w.alive and len(self._idle) < self.max_idle
            if keep:
                self._idle.append(w)
        if not keep:
            w.close()

    def warm(self, count: int = 1) -> None:
        """Start ``count`` idle workers now and let them import TensorFlow in the background."""
        with self._lock:
            missing = max(0, min(int(count), self.max_idle) - len(self._idle) - len(self._busy))
        for _ in range(missing):
            w = TrainingWorker(nice=self.nice)
            w.warm()
            with self._lock:
                self._idle.append(w)

    def query_tensorflow(self) -> dict:
        """TensorFlow's version and devices as a worker sees them (imports TF there, not here).

        Returns ``{"tf_version": str, "devices": [...]}`` (see
        :func:`densehmm_core.device.list_devices`); raises :class:`WorkerError` on failure.
        """
        w = self.acquire()
        try:
            if w.warm_info is None:
                if not w._warm_pending:
                    w.warm()
                w._drain_warm()
            info = dict(w.warm_info or {})
        finally:
            self.release(w)
        if "error" in info:
            raise WorkerError(info["error"])
        return info

    def iter_fit(self, model, data, **kw) -> Iterator[ProgressEvent]:
        """:meth:`TrainingWorker.iter_fit` on a worker taken from the pool for the fit's duration."""
        return self.iter_fit_on(self.acquire(), model, data, **kw)

    def iter_fit_on(self, worker: "TrainingWorker", model, data, **kw) -> Iterator[ProgressEvent]:
        """Like :meth:`iter_fit` with a worker already :meth:`acquire`-d (released at the end)."""
        try:
            yield from worker.iter_fit(model, data, **kw)
        finally:
            self.release(worker)

    @property
    def n_processes(self) -> int:
        with self._lock:
            return sum(w.alive for w in self._idle + self._busy)

    def close(self, timeout: float = 0.5) -> None:
        """Stop every worker (busy ones too: their fits end with :class:`WorkerError`)."""
        with self._lock:
            self._closed = True
            workers = self._idle + self._busy
            self._idle, self._busy = [], []
        for w in workers:
            w.close(timeout)


_shared: Optional[WorkerPool] = None
_shared_lock = threading.Lock()


def shared_pool() -> WorkerPool:
    """The process-wide pool (created on first use, closed at interpreter exit)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._closed:
            _shared = WorkerPool()
            import atexit
            atexit.register(_shared.close, 0.2)
        return _shared


def close_shared_pool(timeout: float = 0.5) -> None:
    """Stop the process-wide pool's workers now (a later :func:`shared_pool` starts a new pool)."""
    with _shared_lock:
        pool = _shared
    if pool is not None:
        pool.close(timeout)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("densehmm_core.worker is started by WorkerPool, not run directly")

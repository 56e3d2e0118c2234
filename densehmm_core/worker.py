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

The first time a fit imports TensorFlow in a worker, the worker says so (a "tensorflow"
reply with its version and devices, ahead of the fit's next event): the caller finds it in
:attr:`TrainingWorker.tf_info`, so that a front end that never asked (``--no-tensorflow``)
still learns which TensorFlow its fits use.
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

from .device import import_tf, imported_tf
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
    """Inverse of :func:`encode_message` (arrays come back with their dtype and shape).

    Any malformed input raises :class:`ValueError` (never a memory bomb: every array's
    declared size is checked against the bytes present before it is allocated).
    """
    try:
        return _decode(data)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - struct.error, UnicodeDecodeError, IndexError, KeyError, ...
        raise ValueError(f"malformed worker message ({type(exc).__name__}: {exc})") from None


def _decode(data: bytes) -> Any:
    data = bytes(data)
    if data[:4] != _MAGIC:
        raise ValueError("not a worker message")
    if len(data) < 16:
        raise ValueError("truncated worker message")
    hlen, narr = struct.unpack("<QI", data[4:16])
    if 16 + hlen > len(data) or narr > len(data):
        raise ValueError("truncated worker message")
    header = json.loads(data[16:16 + hlen].decode("utf-8"))
    buf = io.BytesIO(data[16 + hlen:])
    arrays = [_read_npy(buf) for _ in range(narr)]

    def dec(o):
        if isinstance(o, dict):
            if set(o) == {"__nd__"}:
                i = o["__nd__"]
                if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(arrays):
                    raise ValueError(f"array reference {i!r} out of range")
                return arrays[i]
            return {k: dec(v) for k, v in o.items()}
        if isinstance(o, list):
            return [dec(v) for v in o]
        return o

    return dec(header)


def _read_npy(buf: io.BytesIO) -> np.ndarray:
    """One ``.npy`` buffer, its size checked before anything is allocated (no pickles)."""
    fmt = np.lib.format
    version = fmt.read_magic(buf)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(buf)
    elif version == (2, 0):
        shape, fortran, dtype = fmt.read_array_header_2_0(buf)
    else:
        raise ValueError(f"unsupported array format version {version}")
    if dtype.hasobject:
        raise ValueError("object arrays are not accepted")
    count = 1
    for d in shape:
        count *= int(d)
    nbytes = count * dtype.itemsize
    left = len(buf.getbuffer()) - buf.tell()
    if nbytes > left:
        raise ValueError(f"an array declares {nbytes} bytes but only {left} follow")
    raw = bytearray(buf.read(nbytes))
    arr = np.frombuffer(raw, dtype=dtype, count=count)
    return arr.reshape(shape, order="F" if fortran else "C")


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


# ---------------------------------------------------------------- protocol
#: control messages the worker accepts (parent -> worker)
CONTROL_OPS = ("fit", "cancel", "stop", "warm")
#: replies the parent accepts (worker -> parent)
REPLY_OPS = ("event", "end", "warm", "tensorflow", "alive", "cancel_ack", "protocol_error")
#: seconds between the worker's "alive" messages (so a stopped or hung worker is noticed)
HEARTBEAT_S = 0.5


def _check_control(msg: Any) -> dict:
    """A control message as the worker expects it; ValueError naming what is wrong."""
    from .registry import MODEL_KINDS
    if not isinstance(msg, dict):
        raise ValueError(f"a control message must be an object, not {type(msg).__name__}")
    op = msg.get("op")
    if op not in CONTROL_OPS:
        raise ValueError(f"unknown control message {op!r}")
    if op in ("fit", "cancel"):
        job = msg.get("job")
        if not isinstance(job, int) or isinstance(job, bool):
            raise ValueError(f"{op} message without a job number")
    if op == "fit":
        if msg.get("kind") not in MODEL_KINDS:
            raise ValueError(f"fit message with an unknown model kind {msg.get('kind')!r}")
        if not isinstance(msg.get("config"), dict):
            raise ValueError("fit message without a config object")
        train = msg.get("train")
        if not (isinstance(train, dict) and isinstance(train.get("tokens"), np.ndarray)
                and isinstance(train.get("lengths"), np.ndarray)):
            raise ValueError("fit message without training sequences")
    return msg


def _check_tf_info(msg: dict) -> None:
    """The TensorFlow report of a "warm" or "tensorflow" reply: ``tf_version`` (a non-empty
    string) and ``devices`` (objects whose "name", "type" and "spec" are strings)."""
    version, devices = msg.get("tf_version"), msg.get("devices")
    if not isinstance(version, str) or not version:
        raise ValueError(f"{msg['op']} reply without TensorFlow's version")
    if not isinstance(devices, list) or not all(
            isinstance(d, dict) and all(isinstance(d.get(k), str) for k in ("name", "type", "spec"))
            for d in devices):
        raise ValueError(f"{msg['op']} reply with a bad device list")


def _check_reply(msg: Any) -> dict:
    """A worker's reply as the parent expects it; ValueError naming what is wrong."""
    if not isinstance(msg, dict):
        raise ValueError(f"a reply must be an object, not {type(msg).__name__}")
    op = msg.get("op")
    if op not in REPLY_OPS:
        raise ValueError(f"unknown reply {op!r}")
    if op == "event":
        ev = msg.get("event")
        if not isinstance(ev, dict):
            raise ValueError("event reply without an event")
        try:
            msg["event"] = ProgressEvent(**ev)
        except TypeError as exc:
            raise ValueError(f"bad event ({exc})") from None
        if not isinstance(msg["event"].step, int) or not isinstance(msg["event"].metrics, dict):
            raise ValueError("bad event (step or metrics of the wrong type)")
        if msg["event"].params is not None and not isinstance(msg["event"].params, dict):
            raise ValueError("bad event (params is not an object)")
    elif op == "end":
        outcome = msg.get("outcome")
        if outcome not in ("done", "diverged", "failed"):
            raise ValueError(f"end reply with an unknown outcome {outcome!r}")
        if outcome != "failed" and not isinstance(msg.get("state"), dict):
            raise ValueError("end reply without the model's state")
    elif op == "tensorflow":
        _check_tf_info(msg)
    elif op == "warm":
        if "error" in msg:
            if not isinstance(msg["error"], str):
                raise ValueError("warm reply with a bad error")
        else:
            _check_tf_info(msg)
    return msg


# -------------------------------------------------------------- worker side
def _child_main(ctrl, data, nice: int) -> None:  # pragma: no cover - runs in the worker process
    """Entry point of a worker process: serve ``fit`` requests until ``stop`` or EOF.

    A control thread reads every message at once (so a cancel is seen during a fit and
    the parent's writes never block); a heartbeat thread sends "alive" every
    :data:`HEARTBEAT_S`.  A malformed control message is a protocol error: it is
    reported to the parent, and the worker stops.
    """
    if nice and hasattr(os, "nice"):
        try:
            os.nice(int(nice))
        except OSError:
            pass
    inbox: "queue.Queue" = queue.Queue()
    current: Dict[str, Any] = {}       # the running fit: its "job" number and "token"
    cancelled: set = set()             # job numbers cancelled, possibly before their fit started
    lock = threading.Lock()
    send_lock = threading.Lock()
    stopping = threading.Event()

    def send(msg):
        payload = encode_message(msg)
        with send_lock:
            data.send_bytes(payload)

    def stop_all():
        stopping.set()
        with lock:
            if current.get("token") is not None:
                current["token"].cancel()
        inbox.put({"op": "stop"})

    def reader():
        while True:
            try:
                raw = ctrl.recv_bytes()
            except (EOFError, OSError):
                stop_all()
                return
            try:
                msg = _check_control(decode_message(raw))
            except Exception as exc:  # noqa: BLE001 - any malformed message is a protocol error
                try:
                    send({"op": "protocol_error", "message": f"bad control message: {exc}"})
                except (OSError, ValueError):
                    pass
                stop_all()
                return
            op = msg["op"]
            if op in ("cancel", "stop"):
                with lock:
                    if op == "cancel":
                        cancelled.add(msg["job"])
                    if current.get("token") is not None and (op == "stop" or current.get("job") == msg["job"]):
                        current["token"].cancel()
                if op == "cancel":
                    try:
                        send({"op": "cancel_ack", "job": msg["job"]})
                    except (OSError, ValueError):
                        stop_all()
                        return
                    continue
            inbox.put(msg)
            if op == "stop":
                stopping.set()
                return

    def heartbeat():
        while not stopping.wait(HEARTBEAT_S):
            try:
                send({"op": "alive"})
            except (OSError, ValueError):
                stop_all()
                return

    told_tf: List[bool] = []           # non-empty once the parent knows this process's TensorFlow

    def tell_tensorflow():
        """Once per process, as soon as a fit has imported TensorFlow: its version and devices."""
        if not told_tf and imported_tf() is not None:
            told_tf.append(True)
            send({"op": "tensorflow", **_tensorflow_info()})

    threading.Thread(target=reader, name="densehmm-worker-control", daemon=True).start()
    threading.Thread(target=heartbeat, name="densehmm-worker-heartbeat", daemon=True).start()

    while True:
        msg = inbox.get()
        op = msg.get("op")
        if op == "stop" or stopping.is_set():
            break
        try:
            if op == "warm":
                try:
                    import_tf()
                    send({"op": "warm", **_tensorflow_info()})
                    told_tf.append(True)
                except (OSError, ValueError):
                    raise
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
                    _serve_fit(msg, token, send, tell_tensorflow)
                finally:
                    with lock:
                        current.clear()
                        cancelled.discard(msg.get("job"))
        except (OSError, ValueError):  # the parent is gone (broken pipe)
            break
    stopping.set()


def _tensorflow_info() -> dict:  # pragma: no cover - worker process
    """TensorFlow's version and devices (TensorFlow already imported)."""
    from .device import list_devices
    return {"tf_version": str(imported_tf().__version__), "devices": list_devices()}


def _serve_fit(msg: dict, token: CancelToken, send, tell_tensorflow) -> None:  # pragma: no cover - worker process
    """Run one fit; ``tell_tensorflow()`` is called before every message (it reports
    TensorFlow once the fit has imported it, ahead of the event that follows)."""
    model = None
    from .registry import model_from_config
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
            tell_tensorflow()
            send({"op": "event", "event": _event_to_plain(ev, with_params)})
        tell_tensorflow()
        send({"op": "end", "outcome": "done", "state": model.arrays()})
    except TrainingDiverged as exc:
        tell_tensorflow()
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
    silence_timeout : float
        Seconds without any message (the worker sends "alive" every
        :data:`HEARTBEAT_S`) after which the worker is taken as stopped or hung: it is
        killed and the fit ends with :class:`WorkerError`.
    cancel_timeout : float
        Seconds a cancelled fit's worker has to acknowledge the cancel (and then to keep
        answering until the fit ends); past it the worker is killed, and the fit ends as
        cancelled with the last parameters received.
    send_timeout : float
        Seconds a message to the worker may take to be written (a worker that does not
        read its pipe is killed).

    Every protocol error (a malformed or unknown message in either direction) ends the
    worker with :class:`WorkerError` naming the reason.
    """

    def __init__(self, nice: int = 10, *, silence_timeout: float = 60.0, cancel_timeout: float = 5.0,
                 send_timeout: float = 10.0, _target=None) -> None:
        ctx = _context()
        ctrl_recv, self._ctrl = ctx.Pipe(duplex=False)
        self._data, data_send = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_target or _child_main, args=(ctrl_recv, data_send, int(nice)),
                                   name="densehmm-training-worker", daemon=True)
        self.process.start()
        ctrl_recv.close()
        data_send.close()
        self.silence_timeout = float(silence_timeout)
        self.cancel_timeout = float(cancel_timeout)
        self.send_timeout = float(send_timeout)
        self._send_lock = threading.Lock()
        self._jobs = 0            # fits sent so far: each fit and its cancel carry its number
        self.broken = False
        self.warm_info: Optional[dict] = None
        #: ``{"tf_version": str, "devices": [...]}`` once the process has imported TensorFlow
        #: (for a fit, or asked to by :meth:`warm`); set by the reader thread
        self.tf_info: Optional[dict] = None
        self._warm_pending = False
        self._cancel_acked: set = set()
        self._closing = threading.Event()
        self._last_heard = time.monotonic()
        # A reader thread drains the pipe at all times (the worker never blocks on a full
        # pipe while this process is busy elsewhere); the bounded queue keeps back-pressure.
        self._inbox: "queue.Queue" = queue.Queue(maxsize=256)
        self._reader = threading.Thread(target=self._read_loop, name="densehmm-worker-reader", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return not self.broken and self.process.is_alive()

    # ------------------------------------------------------------- receiving
    def _put(self, item) -> bool:
        while not self._closing.is_set():
            try:
                self._inbox.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _read_loop(self) -> None:
        while True:
            try:
                raw = self._data.recv_bytes()
            except (EOFError, OSError):
                self._put(("eof", None))
                return
            self._last_heard = time.monotonic()
            try:
                msg = _check_reply(decode_message(raw))
            except Exception as exc:  # noqa: BLE001 - any malformed reply is a protocol error
                self._put(("bad", f"malformed reply from the training process: {exc}"))
                return
            op = msg["op"]
            if op == "alive":
                continue
            if op == "cancel_ack":
                self._cancel_acked.add(msg.get("job"))
                continue
            if op in ("tensorflow", "warm") and "error" not in msg:
                self.tf_info = {"tf_version": msg["tf_version"], "devices": msg["devices"]}
                if op == "tensorflow":
                    continue
            if op == "protocol_error":
                self._put(("bad", f"the training process refused a message: {msg.get('message', '')}"))
                return
            if not self._put(("msg", msg)):
                return

    def _fail(self, reason: str) -> WorkerError:
        """Kill the process (it is unusable) and return the error to raise."""
        self.broken = True
        self._kill()
        return WorkerError(reason)

    def _kill(self) -> None:
        self.broken = True
        if self.process.is_alive():
            try:
                self.process.kill()  # SIGKILL: also ends a stopped (SIGSTOP) process
            except (OSError, ValueError):
                pass
        self.process.join(2.0)

    def _next(self, wait: float = 0.05, silence: Optional[float] = None) -> Optional[dict]:
        """The next reply, or None after ``wait`` seconds.

        Raises :class:`WorkerError` when the process died, broke the protocol, or sent
        nothing (not even "alive") for ``silence`` seconds (default ``silence_timeout``).
        """
        try:
            kind, payload = self._inbox.get(timeout=max(0.0, wait))
        except queue.Empty:
            limit = self.silence_timeout if silence is None else silence
            quiet = time.monotonic() - self._last_heard
            if quiet > limit:
                state = _process_state(self.process.pid)
                how = "is stopped (SIGSTOP)" if state == "T" else "stopped answering"
                raise self._fail(f"the training process {how}: no message for {quiet:.1f} s; it was killed")
            if not self.process.is_alive() and quiet > 2.0:
                self.broken = True
                raise WorkerError(f"the training process ended unexpectedly (exit code {self.process.exitcode})")
            return None
        if kind == "eof":
            self.broken = True
            self.process.join(1.0)
            raise WorkerError(f"the training process ended unexpectedly (exit code {self.process.exitcode})")
        if kind == "bad":
            raise self._fail(f"protocol error: {payload}")
        if payload["op"] == "warm":
            self._warm_pending = False
            self.warm_info = payload
        return payload

    def _recv(self, timeout: Optional[float] = None) -> dict:
        """The next reply (not "alive"); :class:`TimeoutError` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
            if left < 0:
                raise TimeoutError("the training process did not answer in time")
            msg = self._next(left)
            if msg is not None:
                return msg

    # --------------------------------------------------------------- sending
    def _send(self, msg: dict, timeout: Optional[float] = None) -> None:
        """Write a message; a worker that does not take it within ``timeout`` is killed (WorkerError)."""
        payload = encode_message(msg)
        limit = self.send_timeout if timeout is None else float(timeout)
        box: List[BaseException] = []

        def write():
            try:
                with self._send_lock:
                    self._ctrl.send_bytes(payload)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box.append(exc)

        t = threading.Thread(target=write, name="densehmm-worker-send", daemon=True)
        t.start()
        t.join(limit)
        if t.is_alive():
            raise self._fail(f"the training process did not read its messages for {limit:g} s; it was killed")
        if box:
            exc = box[0]
            if isinstance(exc, (OSError, ValueError, EOFError)):
                self.broken = True
                raise WorkerError(f"the training process cannot be reached ({type(exc).__name__}: {exc})")
            raise exc

    def warm(self) -> None:
        """Ask the worker to import TensorFlow now (answered before the next fit starts)."""
        self._send({"op": "warm"})
        self._warm_pending = True

    def _drain_warm(self) -> None:
        while self._warm_pending:
            self._recv()

    # --------------------------------------------------------------- fitting
    def iter_fit(self, model, data, *, eval_data=None, cancel: Optional[CancelToken] = None,
                 params_interval: float = 0.05, **fit_kwargs) -> Iterator[ProgressEvent]:
        """Like ``model.iter_fit(data, eval_data=..., cancel=..., **fit_kwargs)``, in the worker.

        A cancel is sent once; a worker that does not acknowledge it within
        ``cancel_timeout`` seconds (stopped, hung) is killed, and the stream ends with a
        final "cancelled" event: the model holds the last parameters received.  When the
        worker dies or breaks the protocol, the model also holds the last parameters
        received and :class:`WorkerError` is raised.
        """
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
        last: Optional[ProgressEvent] = None
        last_params: Optional[dict] = None
        cancel_at: Optional[float] = None
        try:
            while True:
                if cancel is not None and cancel.cancelled and cancel_at is None:
                    cancel_at = self._cancel(job)
                if cancel_at is not None and job not in self._cancel_acked \
                        and time.monotonic() - cancel_at > self.cancel_timeout:
                    self._kill()
                    ended = True
                    ev = self._killed_on_cancel(model, last, last_params)
                    model.record_event(ev)
                    yield ev
                    return
                try:
                    reply = self._next(0.05, silence=None if cancel_at is None else self.cancel_timeout)
                except WorkerError:
                    if cancel_at is not None and not self.process.is_alive():
                        ended = True
                        ev = self._killed_on_cancel(model, last, last_params)
                        model.record_event(ev)
                        yield ev
                        return
                    raise
                if reply is None:
                    continue
                op = reply["op"]
                if op == "event":
                    ev = reply["event"]
                    last = ev
                    if ev.params:
                        last_params = ev.params
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
        except WorkerError:
            if not ended:
                _apply_params(model, last_params)
            raise
        finally:
            self._cancel_acked.discard(job)
            if not ended and not self.broken:
                # The caller stopped iterating early: stop the fit and wait for its end message.
                try:
                    if cancel_at is None:
                        cancel_at = self._cancel(job)
                    deadline = time.monotonic() + self.cancel_timeout
                    while True:
                        r = self._next(max(0.0, min(0.05, deadline - time.monotonic())), silence=self.cancel_timeout)
                        if r is not None and r["op"] == "end":
                            break
                        if time.monotonic() > deadline:
                            raise TimeoutError
                except (WorkerError, OSError, TimeoutError):
                    self._kill()  # released as broken: the pool replaces it

    def _cancel(self, job: int) -> float:
        """Send the cancel of fit ``job`` (once); returns when it was sent."""
        try:
            self._send({"op": "cancel", "job": job}, timeout=self.cancel_timeout)
        except WorkerError:
            pass  # a worker that cannot take it is killed; the caller notices
        return time.monotonic()

    @staticmethod
    def _killed_on_cancel(model, last: Optional[ProgressEvent], last_params: Optional[dict]) -> ProgressEvent:
        """The final event of a cancelled fit whose worker had to be killed."""
        _apply_params(model, last_params)
        model.stop_reason_ = "cancelled"
        return ProgressEvent(step=last.step if last else 0, total=last.total if last else None,
                             phase=last.phase if last else "", loss=last.loss if last else None,
                             params=last_params, done=True, reason="cancelled",
                             elapsed=last.elapsed if last else 0.0)

    def close(self, timeout: float = 0.5) -> None:
        """Stop the process: ask, then terminate, then kill (never blocks much longer than ``timeout``)."""
        self._closing.set()
        if not self.broken and self.process.is_alive():
            try:
                self._send({"op": "stop"}, timeout=min(timeout, 0.5))
            except (WorkerError, OSError, ValueError):
                pass
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(0.5)
        if self.process.is_alive():  # a stopped process ignores SIGTERM until continued
            self.process.kill()
            self.process.join(0.5)
        self.broken = True
        for c in (self._ctrl, self._data):
            try:
                c.close()
            except OSError:
                pass


def _process_state(pid: Optional[int]) -> str:
    """The process's state letter from /proc ("R", "S", "T" = stopped, ...); "" if unknown."""
    if pid is None:
        return ""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
        return text[text.rindex(")") + 2]
    except (OSError, ValueError, IndexError):
        return ""


def _apply_params(model, params: Optional[dict]) -> None:
    """Give ``model`` the parameters of a progress event (after its worker was lost)."""
    if params:
        model.set_arrays({"params": params})


class WorkerPool:
    """Persistent worker processes, handed out one per running fit (thread-safe).

    Parameters
    ----------
    max_idle : int
        Workers kept alive while idle (more are started on demand and stopped when
        released beyond this number).
    nice : int
        CPU priority decrease of the workers (see :class:`TrainingWorker`).
    **worker_options
        ``silence_timeout``, ``cancel_timeout``, ``send_timeout`` of the workers
        (see :class:`TrainingWorker`).
    """

    def __init__(self, max_idle: int = 2, nice: int = 10, **worker_options) -> None:
        self.max_idle = int(max_idle)
        self.nice = int(nice)
        self.worker_options = dict(worker_options)
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
        w = TrainingWorker(nice=self.nice, **self.worker_options)
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
            w = TrainingWorker(nice=self.nice, **self.worker_options)
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

"""The worker process's side: serve ``fit`` requests over the pipe (started by
:class:`~densehmm_core.worker.pool.TrainingWorker`; never imported for anything else).

TensorFlow is imported for a job only when its model says it needs it
(``model.needs_tensorflow``: a DenseHMM's co-occurrence fit), or when the parent asks
("warm"): a worker that trains standard HMMs never loads it.
"""
from __future__ import annotations

import os
import queue
import threading
import time
import traceback
from typing import Any, Dict, List

from ..device import import_tf, imported_tf
from ..events import CancelToken, ProgressEvent, TrainingDiverged
from ..threads import fit_budget
from .lifeline import die_with_parent
from .wire import HEARTBEAT_S, check_control, decode_message, encode_message, event_to_plain, from_plain_sequences


def worker_main(target, parent_pid: int, ctrl, data, nice: int) -> None:  # pragma: no cover - worker process
    """A worker process's entry point: end with the parent (:func:`~.lifeline.die_with_parent`),
    then run ``target(ctrl, data, nice)`` (:func:`child_main`, or a test's fake worker)."""
    die_with_parent(parent_pid)
    target(ctrl, data, nice)


def child_main(ctrl, data, nice: int) -> None:  # pragma: no cover - runs in the worker process
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
                msg = check_control(decode_message(raw))
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
        # the first "alive" at once: the parent then knows the process has started
        while True:
            try:
                send({"op": "alive"})
            except (OSError, ValueError):
                stop_all()
                return
            if stopping.wait(HEARTBEAT_S):
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
    from ..device import list_devices
    return {"tf_version": str(imported_tf().__version__), "devices": list_devices()}


def _serve_fit(msg: dict, token: CancelToken, send_any, tell_tensorflow) -> None:  # pragma: no cover - worker
    """Run one fit; ``tell_tensorflow()`` is called before every message (it reports
    TensorFlow once the fit has imported it, ahead of the event that follows).  Every event and
    the end carry the fit's job number (the parent may have stopped waiting for a fit cancelled
    before its first event: it skips that fit's messages).  A fit cancelled before it began (while
    TensorFlow was being imported, or while it waited) ends without training."""
    model = None
    job = msg.get("job")

    def send(reply):
        send_any(dict(reply, job=job))

    from ..registry import model_from_config
    try:
        model = model_from_config(msg["kind"], msg["config"])
        if model.needs_tensorflow and not token.cancelled:  # per job: standard HMMs never load it
            import_tf()
        if token.cancelled:
            model.stop_reason_ = "cancelled"
            tell_tensorflow()
            send({"op": "event", "event": event_to_plain(
                ProgressEvent(step=0, done=True, reason="cancelled"), False)})
            send({"op": "end", "outcome": "done", "state": model.arrays()})
            return
        if msg.get("vocabulary") is not None:
            model.vocabulary = list(msg["vocabulary"])
        train = from_plain_sequences(msg["train"])
        test = from_plain_sequences(msg.get("test"))
        interval = float(msg.get("params_interval", 0.05))
        last_params = float("-inf")
        first = True
        with fit_budget(msg.get("threads")):      # the fit's CPU threads (checked by check_control)
            for ev in model.iter_fit(train, eval_data=test, cancel=token, **(msg.get("fit_kwargs") or {})):
                now = time.monotonic()
                with_params = bool(ev.params) and (first or ev.done or now - last_params >= interval)
                if with_params:
                    last_params = now
                    first = False
                tell_tensorflow()
                send({"op": "event", "event": event_to_plain(ev, with_params)})
        tell_tensorflow()
        send({"op": "end", "outcome": "done", "state": model.arrays()})
    except TrainingDiverged as exc:
        tell_tensorflow()
        send({"op": "end", "outcome": "diverged", "message": str(exc), "state": model.arrays()})
    except BaseException as exc:  # noqa: BLE001 - reported to the caller
        send({"op": "end", "outcome": "failed", "message": f"{type(exc).__name__}: {exc}",
              "traceback": traceback.format_exc()})

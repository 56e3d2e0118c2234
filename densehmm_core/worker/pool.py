"""The caller's side: :class:`TrainingWorker` (one worker process, one fit at a time) and
:class:`WorkerPool` (persistent workers handed out per fit; :func:`shared_pool`)."""
from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time
from typing import Callable, Iterator, List, Optional

import numpy as np

from ..events import CancelToken, ProgressEvent, TrainingDiverged
from ..memory import check_inference
from .lifeline import main_script_reruns, start_process, warn_if_main_reruns
from .server import child_main, worker_main
from .wire import (WorkerError, WorkerUnreachable, as_plain_sequences, check_reply, decode_message, encode_message,
                   supports)

__all__ = ["TrainingWorker", "WorkerPool", "shared_pool", "close_shared_pool"]

_log = logging.getLogger(__name__)


def ended_how(exitcode: Optional[int]) -> str:
    """How a process ended, in words: ``exit code 3``, ``killed by signal SIGKILL``, or ``still running``."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


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
        :data:`~.wire.HEARTBEAT_S`) after which the worker is taken as stopped or hung: it is
        killed and the fit ends with :class:`WorkerError`.
    cancel_timeout : float
        Seconds a cancelled fit's worker has to acknowledge the cancel (and then to keep
        answering until the fit ends); past it the worker is killed, and the fit ends as
        cancelled with the last parameters received.
    send_timeout : float
        Seconds a message to the worker may take to be written (a worker that does not
        read its pipe is killed).  Until the worker has sent its first message (it says
        "alive" as soon as it runs) the limit is ``silence_timeout`` instead: a worker
        process can take many seconds to start on a loaded machine.

    Every protocol error (a malformed or unknown message in either direction) ends the
    worker with :class:`WorkerError` naming the reason.  The worker ends within
    :data:`~.lifeline.CHECK_S` seconds when this process ends, ``kill -9`` included
    (:mod:`.lifeline`).
    """

    def __init__(self, nice: int = 10, *, silence_timeout: float = 60.0, cancel_timeout: float = 5.0,
                 send_timeout: float = 10.0, _target=None) -> None:
        warn_if_main_reruns()
        ctx = _context()
        ctrl_recv, self._ctrl = ctx.Pipe(duplex=False)
        self._data, data_send = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=worker_main,
                                   args=(_target or child_main, os.getpid(), ctrl_recv, data_send, int(nice)),
                                   name="densehmm-training-worker", daemon=True)
        start_process(self.process)   # the worker ends with this process (lifeline.py)
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
        self._warm_answered = threading.Event()   # set by the reader thread when "warm" is answered
        self._cancel_acked: set = set()
        #: fits cancelled before their first event that the caller stopped waiting for: the
        #: process still ends them (a TensorFlow import may be under way); their messages are skipped
        self._abandoned: set = set()
        self._abandoned_lock = threading.Lock()
        self._closing = threading.Event()
        self._release_lock = threading.Lock()
        self._ctrl_orphaned = False   # close() left the control pipe to the write under way
        self._last_heard = time.monotonic()
        self._heard = threading.Event()   # set by the first message: the process runs
        # A reader thread drains the pipe at all times (the worker never blocks on a full
        # pipe while this process is busy elsewhere); the bounded queue keeps back-pressure.
        self._inbox: "queue.Queue" = queue.Queue(maxsize=256)
        self._reader = threading.Thread(target=self._read_loop, name="densehmm-worker-reader", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return not self.broken and self.process.is_alive()

    @property
    def importing(self) -> bool:
        """The process is importing TensorFlow (asked to by :meth:`warm`, not answered yet): a fit sent
        now would start after the import (seconds)."""
        return self._warm_pending and not self._warm_answered.is_set()

    @property
    def busy(self) -> bool:
        """The process is still ending a fit cancelled before its first event (see :meth:`iter_fit`)."""
        with self._abandoned_lock:
            return bool(self._abandoned)

    def _skip(self, msg: dict) -> bool:
        """True for an event or end of an abandoned fit (its end forgets the fit)."""
        job = msg.get("job")
        if msg["op"] not in ("event", "end") or job is None:
            return False
        with self._abandoned_lock:
            if job not in self._abandoned:
                return False
            if msg["op"] == "end":
                self._abandoned.discard(job)
        return True

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
        try:
            self._read_replies()
        finally:
            if self._closing.is_set():     # close() has run or is running: the pipe is this thread's to close
                self._release(self._data)

    def _read_replies(self) -> None:
        while True:
            try:
                raw = self._data.recv_bytes()
            except (EOFError, OSError):
                self._put(("eof", None))
                return
            self._last_heard = time.monotonic()
            self._heard.set()
            try:
                msg = check_reply(decode_message(raw))
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
            if op == "warm":
                self._warm_answered.set()
            if op == "protocol_error":
                self._put(("bad", f"the training process refused a message: {msg.get('message', '')}"))
                return
            if self._skip(msg):
                continue
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
                raise self._fail(f"the training process {how}: no message for {quiet:.1f} s; it was killed"
                                 + self._never_started())
            if not self.process.is_alive() and quiet > 2.0:
                self.broken = True
                raise WorkerError(f"the training process ended unexpectedly ({ended_how(self.process.exitcode)})"
                                  + self._never_started())
            return None
        if kind == "eof":
            self.broken = True
            self.process.join(1.0)
            raise WorkerError(f"the training process ended unexpectedly ({ended_how(self.process.exitcode)})"
                                  + self._never_started())
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
    def _send_payload(self, payload: bytes) -> None:
        """Write one encoded message, holding the send lock for the whole write (messages never
        interleave, and :meth:`close` never closes the pipe under a write: see :meth:`_release`).
        A write that was under way when the worker was closed closes the pipe when it ends."""
        with self._send_lock:
            try:
                self._ctrl.send_bytes(payload)
            finally:
                if self._ctrl_orphaned:
                    self._release(self._ctrl)

    def _send(self, msg: dict, timeout: Optional[float] = None) -> None:
        """Write a message; a worker that does not take it within ``timeout`` is killed (WorkerError)."""
        self._write(msg, timeout)

    def _write(self, msg: dict, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None) -> bool:
        """:meth:`_send`; with ``cancel``: returns False as soon as the token is set while the message is still being
        written (a large fit message waits for a starting process to read it); the write goes on
        in its thread, and messages sent later follow it.  Else True once written."""
        payload = encode_message(msg)
        limit = self.send_timeout if timeout is None else float(timeout)
        if timeout is None and not self._heard.is_set():   # still starting (imports): the silence limit
            limit = max(limit, self.silence_timeout)         # (a given limit, close()'s, is kept)
        box: List[BaseException] = []

        def write():
            try:
                self._send_payload(payload)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box.append(exc)

        t = threading.Thread(target=write, name="densehmm-worker-send", daemon=True)
        t.start()
        deadline = time.monotonic() + limit
        while t.is_alive() and time.monotonic() < deadline:
            t.join(min(0.05, max(0.0, deadline - time.monotonic())) if cancel is not None else limit)
            if cancel is not None and cancel.cancelled and t.is_alive():
                return False
        if t.is_alive():
            raise self._fail(f"the training process did not read its messages for {limit:g} s; it was killed"
                             + self._never_started())
        if box:
            exc = box[0]
            if isinstance(exc, (OSError, ValueError, EOFError)):
                raise self._unreachable(exc)
            raise exc
        return True

    def _never_started(self) -> str:
        """What to add to an error when the process never said it runs (its first "alive")."""
        if self._heard.is_set():
            return ""
        path = main_script_reruns()
        if path is None:
            return " (no message from it at all: it never started)"
        return (f" (no message from it at all: it never started; it runs {path} again first, as every worker "
                f"process imports the main script; put the script's work under 'if __name__ == \"__main__\":')")

    def _unreachable(self, exc: BaseException) -> WorkerUnreachable:
        """The error for a message the process could not take (its end of the pipe is closed): why it
        ended, as far as it said (a refused message: a protocol error) or its exit status says."""
        self.broken = True
        refusal = None
        deadline = time.monotonic() + 1.0
        while refusal is None and time.monotonic() < deadline:   # the reader may still hold its last words
            try:
                kind, payload = self._inbox.get(timeout=0.05)
            except queue.Empty:
                if not self._reader.is_alive() and self._inbox.empty():
                    break
                continue
            if kind == "bad":
                refusal = payload
            elif kind == "eof":
                break
        self.process.join(1.0)
        why = f"protocol error: {refusal}" if refusal else ended_how(self.process.exitcode)
        return WorkerUnreachable(f"the training process cannot be reached ({type(exc).__name__}: {exc}); "
                                 f"it had ended: {why}" + self._never_started(),
                                 retry=refusal is None and self._heard.is_set())

    def _send_later(self, msg: dict) -> None:
        """Write a message without waiting for it (the cancel of an abandoned fit: it may queue behind
        that fit's message, still being written).  A process that never reads it is killed when
        it is closed, which ends the write."""
        payload = encode_message(msg)

        def write():
            try:
                self._send_payload(payload)
            except (OSError, ValueError, EOFError):
                pass

        threading.Thread(target=write, name="densehmm-worker-send", daemon=True).start()

    def warm(self) -> None:
        """Ask the worker to import TensorFlow now (answered before the next fit starts)."""
        self._warm_answered.clear()
        self._send({"op": "warm"})
        self._warm_pending = True

    def _drain_warm(self, cancel: Optional[CancelToken] = None) -> bool:
        """Wait for the answer to :meth:`warm`; False as soon as ``cancel`` is set meanwhile."""
        while self._warm_pending:
            if cancel is not None and cancel.cancelled:
                return False
            msg = self._next(0.05)
            if msg is not None and msg["op"] == "end":
                self._skip(msg)
        return True

    # --------------------------------------------------------------- fitting
    def iter_fit(self, model, data, *, eval_data=None, cancel: Optional[CancelToken] = None,
                 params_interval: float = 0.05, threads: Optional[int] = None,
                 **fit_kwargs) -> Iterator[ProgressEvent]:
        """Like ``model.iter_fit(data, eval_data=..., cancel=..., **fit_kwargs)``, in the worker.

        ``threads``: the CPU threads the fit may use (the worker runs it inside
        :func:`densehmm_core.threads.fit_budget` of the number); None: the worker's own budget.

        Work whose engine buffers would not fit the memory budget is refused before anything
        is sent (:class:`densehmm_core.memory.TooLargeError`, a ValueError).  A cancel is sent
        once; a worker that does not acknowledge it within
        ``cancel_timeout`` seconds (stopped, hung) is killed, and the stream ends with a
        final "cancelled" event: the model holds the last parameters received.  When the
        worker dies or breaks the protocol, the model also holds the last parameters
        received and :class:`WorkerError` is raised.
        """
        if not supports(model):
            raise TypeError(f"{type(model).__name__} cannot be trained in a worker process")
        n, vocabulary = model._fit_alphabet(data, eval_data=eval_data, init=fit_kwargs.get("init", True))
        train = as_plain_sequences(data, n)
        test = as_plain_sequences(eval_data, n)
        model._adopt_alphabet(n, vocabulary)
        config = model.resolved_config()      # the alphabet resolved here (the worker sees plain sequences)
        # the worker's engine buffers must fit (a single long sequence forms a chunk of its own)
        check_inference(np.concatenate([part["lengths"] for part in (train, test) if part is not None]),
                        model.n_states, model.n_symbols, tensorflow=model.needs_tensorflow)
        self._jobs += 1
        job = self._jobs
        msg = {"op": "fit", "job": job, "kind": model.kind, "config": config,
               "vocabulary": list(model.vocabulary) if model.vocabulary is not None else None,
               "train": train, "test": test,
               "fit_kwargs": dict(fit_kwargs), "params_interval": float(params_interval),
               "threads": None if threads is None else max(1, int(threads))}
        model.history_ = []
        started = time.monotonic()
        # cancelled before the fit was sent, or while the process imported TensorFlow
        if not self._drain_warm(cancel) or (cancel is not None and cancel.cancelled):
            yield self._cancelled_before_start(model, started)
            return
        if not self._write(msg, cancel=cancel):     # cancelled while the process was starting
            self._abandon(job)
            yield self._cancelled_before_start(model, started)
            return
        ended = False
        last: Optional[ProgressEvent] = None
        last_params: Optional[dict] = None
        cancel_at: Optional[float] = None
        try:
            while True:
                if cancel is not None and cancel.cancelled and cancel_at is None and last is None:
                    # Not begun (the process is starting, importing TensorFlow or busy): the fit ends
                    # here at once, as a fit cancelled during its start; the process ends it meanwhile.
                    ended = True
                    self._abandon(job)
                    yield self._cancelled_before_start(model, started)
                    return
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
                if op in ("event", "end") and reply.get("job", job) != job:   # an earlier, abandoned fit's
                    self._skip(reply)
                    continue
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
                        if r is not None and r["op"] == "end" and r.get("job", job) == job:
                            break
                        if time.monotonic() > deadline:
                            raise TimeoutError
                except (WorkerError, OSError, TimeoutError):
                    self._kill()  # released as broken: the pool replaces it

    def _abandon(self, job: int) -> None:
        """Stop waiting for fit ``job`` (cancelled before its first event): its cancel is sent without
        waiting, and what the process still sends of it is skipped."""
        with self._abandoned_lock:
            self._abandoned.add(job)
        self._send_later({"op": "cancel", "job": job})

    @staticmethod
    def _cancelled_before_start(model, started: float) -> ProgressEvent:
        """The final event of a fit cancelled before it began: the model stays as it was."""
        ev = ProgressEvent(step=0, done=True, reason="cancelled", elapsed=time.monotonic() - started)
        model.record_event(ev)
        return ev

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
        """Stop the process: ask, then terminate, then kill, then close the pipes (never blocks much
        longer than ``timeout``, plus at most 2 s for a pipe another thread is still using)."""
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
        # A pipe is closed only while no other thread is inside a call on it: a write or read under
        # way keeps using the descriptor's number, which a new pipe (the next worker's) may take
        # as soon as it is closed; a write that went on there once sent a new worker the rest of an
        # old fit message (a 32 MB "header" of tokens), and its fit waited forever.  The process is
        # gone, so a write under way fails and the reader reaches the end of its pipe at once.
        if self._send_lock.acquire(timeout=1.0):
            try:
                self._release(self._ctrl)
            finally:
                self._send_lock.release()
        else:                        # (the read end held elsewhere): the write closes it when it ends
            self._ctrl_orphaned = True
            if self._send_lock.acquire(blocking=False):   # (it ended meanwhile, before it saw the flag)
                try:
                    self._release(self._ctrl)
                finally:
                    self._send_lock.release()
        self._reader.join(1.0)
        if not self._reader.is_alive():
            self._release(self._data)   # (else the reader closes it when it ends: _read_loop)

    def _release(self, conn) -> None:
        """Close one of the two pipes, once, whichever thread gets there (under a lock)."""
        with self._release_lock:
            try:
                conn.close()
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

    def acquire(self, needs_tensorflow: Optional[bool] = None) -> TrainingWorker:
        """An idle worker (or a new one) for one fit, until :meth:`release`.

        ``needs_tensorflow`` (the model's ``needs_tensorflow``): prefer an idle worker that
        has already imported TensorFlow (True) or one that has not (False), so that fits
        which need it start at once and the others leave TensorFlow-free workers free.  A fit that
        does not need it (False: EM) never waits for an import under way (:meth:`warm`): without
        another idle worker it gets a new one (a process starts in about a second; the import
        takes several).
        """
        def tf_rank(w: TrainingWorker) -> int:   # with TensorFlow as wished: 0; importing it: 1
            if needs_tensorflow is None:
                return 0
            if needs_tensorflow:
                return 0 if w.tf_info is not None else (1 if w.importing else 2)
            return 0 if w.tf_info is None else 2

        with self._lock:
            if self._closed:
                raise WorkerError("the worker pool is closed")
            for w in [w for w in self._idle if not w.alive]:
                self._idle.remove(w)
                w.close(0)
            # one that is not still ending an abandoned fit, with TensorFlow as wished, else any
            usable = [w for w in self._idle if not (needs_tensorflow is False and w.importing)]
            if usable:
                pick = sorted(reversed(usable), key=lambda w: (w.busy, tf_rank(w)))[0]
                self._idle.remove(pick)
                self._busy.append(pick)
                return pick
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
        """:meth:`TrainingWorker.iter_fit` on a worker taken from the pool for the fit's duration
        (one that has TensorFlow loaded when the model needs it, if there is one)."""
        return self.iter_fit_on(self.acquire(supports(model) and model.needs_tensorflow), model, data, **kw)

    def iter_fit_on(self, worker: "TrainingWorker", model, data, *,
                    on_worker: Optional[Callable[["TrainingWorker"], None]] = None,
                    **kw) -> Iterator[ProgressEvent]:
        """Like :meth:`iter_fit` with a worker already :meth:`acquire`-d (released at the end).

        A worker process that had ended before it took the fit (killed or crashed while idle:
        :class:`~densehmm_core.worker.wire.WorkerUnreachable` with ``retry``, no event yet) is
        replaced once: the fit goes to a new process, and ``on_worker`` (if given) is called with
        it.  A process that refused the fit's message (a protocol error) or never started is not:
        the error is raised.
        """
        events = 0
        current: Optional[TrainingWorker] = worker
        try:
            try:
                for ev in worker.iter_fit(model, data, **kw):
                    events += 1
                    yield ev
                return
            except WorkerUnreachable as exc:
                if events or not exc.retry:
                    raise
                _log.warning("%s; the fit goes to a new worker process", exc)
            current = None
            self.release(worker)          # broken: closed, not kept
            current = self.acquire(supports(model) and model.needs_tensorflow)
            if on_worker is not None:
                on_worker(current)
            yield from current.iter_fit(model, data, **kw)
        finally:
            if current is not None:
                self.release(current)

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

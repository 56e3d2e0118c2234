"""Stopping an interrupted sweep's fits (the thread executor): the sweep's CancelToken reaches the fits of
its tasks (:func:`fit_cancellable`), a fit it stopped is no result (:class:`TaskCancelled`), and a second
Ctrl-C while the sweep waits for them ends the process at once (:func:`second_interrupt_exits`).
Used by :func:`densehmm_core.experiments.runner.run_tasks` and the task functions."""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Optional

__all__ = ["TaskCancelled", "cancel_token", "fit_cancellable", "call_with_token", "was_cancelled",
           "second_interrupt_exits"]


class TaskCancelled(Exception):
    """A task whose fit the sweep's cancel token stopped (an interrupted sweep): it has no result."""


_task_local = threading.local()


def cancel_token():
    """The :class:`~densehmm_core.events.CancelToken` of the sweep running the current task (a task on
    the thread executor), or None (in a worker process, a Dask worker or outside a sweep)."""
    return getattr(_task_local, "cancel", None)


def fit_cancellable(est, *args, method: str = "fit", **kw):
    """``est.fit(*args, cancel=cancel_token(), **kw)`` (or ``method``): an interrupted sweep stops the fit at
    its next check (an EM iteration, a chunk of Adam steps) and the task raises :class:`TaskCancelled`
    (no row: a fit stopped half-way is not a result).  A fit that ended on its own is kept."""
    token = cancel_token()
    if token is not None and token.cancelled:
        raise TaskCancelled("the sweep was interrupted")
    result = getattr(est, method)(*args, cancel=token, **kw)
    if token is not None and token.cancelled and getattr(result, "stop_reason_", "") == "cancelled":
        raise TaskCancelled("the sweep was interrupted")
    return result


def call_with_token(token, call, *args):
    """``call(*args)`` (the runner's ``call_task``) on a thread of the thread executor, with the sweep's
    cancel token (:func:`cancel_token`)."""
    _task_local.cancel = token
    try:
        return call(*args)
    finally:
        _task_local.cancel = None


def was_cancelled(err: Optional[str]) -> bool:
    return err is not None and "TaskCancelled" in (err.strip().splitlines() or [""])[-1]


@contextmanager
def second_interrupt_exits():
    """While an interrupted sweep waits for its threads' fits to stop: a second Ctrl-C ends the process at
    once, exit status 130, one line and no traceback (threads cannot be killed, and the interpreter's exit
    would join them).  Rows are written by this (main) thread, never during the wait."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def second(signum, frame):   # pragma: no cover - runs in a child process (tests/test_sweep_audit.py)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - exiting anyway
                pass
        os.write(2, b"interrupted again: not waiting for the runs in flight; finished runs are saved\n")
        os._exit(130)
    old = signal.signal(signal.SIGINT, second)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)

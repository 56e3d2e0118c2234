"""Stopping an interrupted sweep's fits (the thread executor): the sweep's CancelToken reaches the fits of
its tasks (:func:`fit_cancellable`, the factorization's Adam loop), a fit it stopped is no result
(:class:`TaskCancelled`), the runs that end while the sweep waits are saved as each ends, and a second
Ctrl-C meanwhile ends the process at once, never in the middle of a save (:func:`save_as_they_end`).
Used by :func:`densehmm_core.experiments.runner.run_tasks` and the task functions."""
from __future__ import annotations

import os
import signal
import sys
import threading
from concurrent.futures import as_completed
from contextlib import contextmanager
from typing import Callable, Dict

__all__ = ["TaskCancelled", "cancel_token", "check_cancelled", "fit_cancellable", "call_with_token",
           "save_as_they_end", "second_interrupt_exits"]


class TaskCancelled(Exception):
    """A task whose fit the sweep's cancel token stopped (an interrupted sweep): it has no result."""


_task_local = threading.local()


def cancel_token():
    """The :class:`~densehmm_core.events.CancelToken` of the sweep running the current task (a task on
    the thread executor), or None (in a worker process, a Dask worker or outside a sweep)."""
    return getattr(_task_local, "cancel", None)


def check_cancelled(token) -> None:
    """Raise :class:`TaskCancelled` when ``token`` (a :class:`~densehmm_core.events.CancelToken` or None)
    is set: the check of a task's own loop (e.g. the factorization's Adam steps)."""
    if token is not None and token.cancelled:
        raise TaskCancelled("the sweep was interrupted")


def fit_cancellable(est, *args, method: str = "fit", **kw):
    """``est.fit(*args, cancel=cancel_token(), **kw)`` (or ``method``): an interrupted sweep stops the fit at
    its next check (an EM iteration, a chunk of Adam steps) and the task raises :class:`TaskCancelled`
    (no row: a fit stopped half-way is not a result).  A fit that ended on its own is kept."""
    token = cancel_token()
    check_cancelled(token)
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


def save_as_they_end(running: Dict, finish: Callable, out: Callable[[str], None]) -> None:
    """An interrupted thread sweep: wait for the tasks still running (``{future: task}``; their fits stop at
    their next check of the token) and ``finish(task, rows, seconds, error)`` each one as it ends, so that
    a run that finished meanwhile is saved at once; a task its token stopped (:class:`TaskCancelled`,
    which reaches this thread as itself: a thread's exception is not pickled) is dropped.  A second Ctrl-C
    meanwhile exits at once (:func:`second_interrupt_exits`), after the save under way if one is.
    ``out`` gets one line saying how many runs it waits for (once a second Ctrl-C is handled)."""
    with second_interrupt_exits() as saving:
        if running:
            out(f"waiting for {len(running)} run(s) in flight to stop (Ctrl-C again: exit now)")
        for fut in as_completed(running):
            try:
                rows, secs, err = fut.result()
            except TaskCancelled:
                continue
            with saving():
                finish(running[fut], rows, secs, err)


@contextmanager
def second_interrupt_exits():
    """While an interrupted sweep waits for its threads' fits to stop: a second Ctrl-C ends the process at
    once, exit status 130, one line and no traceback (threads cannot be killed, and the interpreter's exit
    would join them).  Yields ``saving``, a context manager for each save: a second Ctrl-C during one
    exits when it ends, so that a run is saved whole (its row, its failure record, its log entry) or not
    at all.  (Signal handlers run in the main thread between its steps, so the flag is enough: no other
    thread saves.)"""
    state = {"saving": False, "again": False}

    def exit_now():   # pragma: no cover - ends the process (tests/test_sweep_audit.py runs it in a child)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - exiting anyway
                pass
        os.write(2, b"interrupted again: not waiting for the runs in flight; finished runs are saved\n")
        os._exit(130)

    @contextmanager
    def saving():
        state["saving"] = True
        try:
            yield
        finally:
            state["saving"] = False
            if state["again"]:
                exit_now()

    if threading.current_thread() is not threading.main_thread():
        yield saving
        return

    def second(signum, frame):
        if state["saving"]:
            state["again"] = True     # exits when the save ends
        else:
            exit_now()
    old = signal.signal(signal.SIGINT, second)
    try:
        yield saving
    finally:
        signal.signal(signal.SIGINT, old)

"""Run short one-off work (file loading, preprocessing, scoring, TensorFlow import) off the GUI thread."""
from __future__ import annotations

import time
import traceback
from typing import Any, Callable, Optional, Set

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

__all__ = ["run_background", "background_pool", "wait_background"]

_pool: Optional[QThreadPool] = None
_alive: Set["_Task"] = set()


def background_pool() -> QThreadPool:
    """A pool separate from the training jobs' pool, so loading never waits behind training."""
    global _pool
    if _pool is None:
        _pool = QThreadPool()
        _pool.setMaxThreadCount(2)
    return _pool


class _Signals(QObject):
    done = Signal(object)
    failed = Signal(object, str)   # exception, formatted traceback
    progress = Signal(object, object)  # done, total (object: 64-bit byte counts)


class _Task(QRunnable):
    def __init__(self, fn: Callable[..., Any], with_progress: bool = False,
                 min_interval: float = 0.1) -> None:
        super().__init__()
        self.fn = fn
        self.signals = _Signals()
        self.with_progress = with_progress
        self.min_interval = float(min_interval)
        self._last_report = float("-inf")
        self.setAutoDelete(False)

    def report(self, done, total) -> None:
        """Progress from the background thread: forwarded at most every ``min_interval`` s, and always when complete."""
        now = time.monotonic()
        complete = total is not None and total > 0 and done >= total
        if complete or now - self._last_report >= self.min_interval:
            self._last_report = now
            self.signals.progress.emit(done, total)

    def run(self) -> None:
        try:
            result = self.fn(self.report) if self.with_progress else self.fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the GUI thread
            self._emit("failed", exc, traceback.format_exc())
        else:
            self._emit("done", result)

    def _emit(self, name: str, *args) -> None:
        """Send a result through ``self.signals``; dropped when that object is gone.  A task still
        running while the process ended (a script that closed its window and returned) found it
        deleted by the interpreter's teardown, and Qt printed "Signal source has been deleted" with a
        traceback; no one is left to receive the result then."""
        try:
            getattr(self.signals, name).emit(*args)
        except RuntimeError:
            if shiboken6.isValid(self.signals):
                raise


class _Receiver(QObject):
    """Lives on the GUI thread, so the background thread's signals reach it through queued connections."""

    def __init__(self, task: "_Task", on_done, on_error, on_progress=None) -> None:
        super().__init__()
        self.task, self.on_done, self.on_error, self.on_progress = task, on_done, on_error, on_progress

    @Slot(object, object)
    def progress(self, done, total) -> None:
        if self.on_progress is not None and self.task in _alive:
            self.on_progress(done, total)

    @Slot(object)
    def done(self, result) -> None:
        _alive.discard(self.task)
        self.on_done(result)

    @Slot(object, str)
    def failed(self, exc, tb) -> None:
        _alive.discard(self.task)
        if self.on_error is not None:
            self.on_error(exc, tb)


def run_background(fn: Callable[..., Any], on_done: Callable[[Any], None],
                   on_error: Optional[Callable[[BaseException, str], None]] = None,
                   on_progress: Optional[Callable[[Any, Any], None]] = None,
                   progress_interval: float = 0.1) -> None:
    """Call ``fn()`` on a background thread; ``on_done(result)`` / ``on_error(exc, tb)`` run on the GUI thread.

    With ``on_progress``, ``fn`` is called as ``fn(report)``: ``fn`` calls
    ``report(done, total)`` as often as it likes; ``on_progress(done, total)`` runs on the
    GUI thread at most every ``progress_interval`` seconds (the final ``done >= total``
    report always gets through), and never after ``on_done``/``on_error``.
    """
    task = _Task(fn, with_progress=on_progress is not None, min_interval=progress_interval)
    task.receiver = _Receiver(task, on_done, on_error, on_progress)
    task.signals.done.connect(task.receiver.done)
    task.signals.failed.connect(task.receiver.failed)
    task.signals.progress.connect(task.receiver.progress)
    _alive.add(task)
    background_pool().start(task)


def wait_background(timeout_ms: int = 2000) -> bool:
    """Wait for the one-off tasks (tests, shutdown)."""
    return background_pool().waitForDone(timeout_ms)

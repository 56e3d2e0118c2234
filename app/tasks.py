"""Run short one-off work (file loading, preprocessing, scoring, TensorFlow import) off the GUI thread."""
from __future__ import annotations

import traceback
from typing import Any, Callable, Optional, Set

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


class _Task(QRunnable):
    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__()
        self.fn = fn
        self.signals = _Signals()
        self.setAutoDelete(False)

    def run(self) -> None:
        try:
            result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the GUI thread
            self.signals.failed.emit(exc, traceback.format_exc())
        else:
            self.signals.done.emit(result)


class _Receiver(QObject):
    """Lives on the GUI thread, so the worker's signals reach it through queued connections."""

    def __init__(self, task: "_Task", on_done, on_error) -> None:
        super().__init__()
        self.task, self.on_done, self.on_error = task, on_done, on_error

    @Slot(object)
    def done(self, result) -> None:
        _alive.discard(self.task)
        self.on_done(result)

    @Slot(object, str)
    def failed(self, exc, tb) -> None:
        _alive.discard(self.task)
        if self.on_error is not None:
            self.on_error(exc, tb)


def run_background(fn: Callable[[], Any], on_done: Callable[[Any], None],
                   on_error: Optional[Callable[[BaseException, str], None]] = None) -> None:
    """Call ``fn()`` on a worker thread; ``on_done(result)`` / ``on_error(exc, tb)`` run on the GUI thread."""
    task = _Task(fn)
    task.receiver = _Receiver(task, on_done, on_error)
    task.signals.done.connect(task.receiver.done)
    task.signals.failed.connect(task.receiver.failed)
    _alive.add(task)
    background_pool().start(task)


def wait_background(timeout_ms: int = 2000) -> bool:
    """Wait for the one-off tasks (tests, shutdown)."""
    return background_pool().waitForDone(timeout_ms)

"""Run Python's cyclic garbage collector on the GUI thread only.

Qt objects must be destroyed in the thread that owns them.  When Python's automatic
garbage collection happens to run in a worker thread (a training job, the background
TensorFlow import) it may destroy unreachable PySide6 wrappers of widgets there; the
destructor then waits for a Qt mutex held by the GUI thread while the GUI thread waits for
the GIL — a deadlock (seen in the test suite: a QMenu collected during ``import tensorflow``
in a job thread).  :func:`install` turns automatic collection off and collects from a
QTimer on the GUI thread instead, the standard remedy for threaded Qt applications.
"""
from __future__ import annotations

import gc
from typing import Optional

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

__all__ = ["install", "freeze", "GuiThreadCollector"]


class GuiThreadCollector(QObject):
    """Collects young generations every ``interval_ms`` (cheap when thresholds are not reached)
    and everything at most every ``full_every`` ticks, always on the GUI thread."""

    def __init__(self, parent: QObject, interval_ms: int = 500, full_every: int = 120) -> None:
        super().__init__(parent)
        self.full_every = int(full_every)
        self._ticks = 0
        self._timer = QTimer(self)
        self._timer.setInterval(int(interval_ms))
        self._timer.timeout.connect(self.collect)
        gc.disable()
        self._timer.start()

    def collect(self) -> None:
        """What Python's automatic collection would do, here on the GUI thread: young
        generations when their thresholds are passed; the (slow, ~0.2 s with TensorFlow
        loaded) full collection at most every ``full_every`` ticks and only when due."""
        self._ticks += 1
        t0, t1, t2 = gc.get_threshold()
        c0, c1, c2 = gc.get_count()
        if self._ticks % self.full_every == 0 and (c2 > t2 or self.full_every == 1):
            gc.collect()
        elif c0 > t0:
            gc.collect(1 if c1 > t1 else 0)


_collector: Optional[GuiThreadCollector] = None


def freeze() -> None:
    """Collect once, then freeze every object alive now (``gc.freeze``): later collections,
    full ones included, only look at objects created afterwards.  Called after start-up and
    after TensorFlow is loaded (with TensorFlow in the process a full collection otherwise
    takes 0.1-0.2 s of GUI-thread time)."""
    gc.collect()
    gc.freeze()


def install() -> Optional[GuiThreadCollector]:
    """Install the collector once per QApplication (call from the GUI thread)."""
    global _collector
    app = QApplication.instance()
    if app is None:
        return None
    if _collector is not None:
        try:
            if _collector.parent() is app:
                gc.disable()
                return _collector
        except RuntimeError:  # the C++ side of a previous QApplication is gone
            pass
    _collector = GuiThreadCollector(app)
    return _collector

"""Drag and drop: files dropped anywhere on the window are opened.

The platform delivers a drag to the window's native window (its :class:`~PySide6.QtGui.QWindow`)
before Qt hands it to the widget under the cursor.  :class:`DropFilter` filters that one object: it
sees a drag over any widget of the window, text fields and plots included, and nothing else of the
application's traffic.  (It used to filter the whole application: every event of every widget, paint
and timer events included, went through Python, each call waiting for the GIL while a file was read
or a job started on another thread.  Reading the Brown corpus again as words froze the window for
up to 180 ms then, 90 ms after this change alone: docs/PERFORMANCE.md.)
"""
from __future__ import annotations

from typing import Callable, List, Optional

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QWindow
from PySide6.QtWidgets import QWidget

__all__ = ["local_paths", "DropFilter"]

_DRAG = (QEvent.DragEnter, QEvent.DragMove, QEvent.Drop)


def local_paths(mime) -> List[str]:
    """Local file paths carried by a drag's mime data."""
    if mime is None or not mime.hasUrls():
        return []
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]


class DropFilter(QObject):
    """Drag and drop's controller: opens the files dropped on the window or any widget inside it
    (``open_files(paths)``); :meth:`install` / :meth:`remove`.

    It filters the window's native window, attached when that exists (the window is shown, or
    its native window is created again); the window itself is filtered only to notice that.
    Drags of anything but local files go on to the widgets as usual.  Floating docks are windows
    of their own: a drop there goes to their widgets."""

    def __init__(self, window: QWidget, open_files: Callable[[List[str]], None]) -> None:
        super().__init__(window)
        self.window = window
        self.open_files = open_files
        self.handle: Optional[QWindow] = None    # the native window filtered

    def install(self) -> None:
        self.window.setAcceptDrops(True)
        self.window.installEventFilter(self)
        self._attach()

    def remove(self) -> None:
        self.window.removeEventFilter(self)
        if self.handle is not None:
            self.handle.removeEventFilter(self)
            self.handle = None

    def _attach(self) -> None:
        handle = self.window.windowHandle()
        if handle is None or handle is self.handle:
            return
        if self.handle is not None:
            self.handle.removeEventFilter(self)
        handle.installEventFilter(self)
        self.handle = handle

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        et = event.type()
        if et not in _DRAG:
            if et in (QEvent.WinIdChange, QEvent.Show) and obj is self.window:
                self._attach()
            return False
        if obj is not self.handle:
            return False
        paths = local_paths(event.mimeData())
        if not paths:
            return False
        event.acceptProposedAction()
        if et == QEvent.Drop:
            self.open_files(paths)
        return True

"""Drag and drop: files dropped anywhere on the window are opened."""
from __future__ import annotations

from typing import Callable, List

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget

__all__ = ["local_paths", "DropFilter"]


def local_paths(mime) -> List[str]:
    """Local file paths carried by a drag's mime data."""
    if mime is None or not mime.hasUrls():
        return []
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]


class DropFilter(QObject):
    """Drag and drop's controller: an application-wide event filter that opens the files dropped on the
    window or ANY widget inside it (``open_files(paths)``); :meth:`install` / :meth:`remove`."""

    def __init__(self, window: QWidget, open_files: Callable[[List[str]], None]) -> None:
        super().__init__(window)
        self.window = window
        self.open_files = open_files

    def install(self) -> None:
        self.window.setAcceptDrops(True)
        QApplication.instance().installEventFilter(self)

    def remove(self) -> None:
        QApplication.instance().removeEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        et = event.type()
        if et not in (QEvent.DragEnter, QEvent.DragMove, QEvent.Drop):
            return False
        if not isinstance(obj, QWidget) or obj.window() is not self.window:
            return False
        paths = local_paths(event.mimeData())
        if not paths:
            return False
        event.acceptProposedAction()
        if et == QEvent.Drop:
            self.open_files(paths)
        return True

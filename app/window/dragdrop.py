"""Drag and drop: files dropped anywhere on the window are opened."""
from __future__ import annotations

from typing import List

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget

__all__ = ["local_paths", "DropFilter", "DropMixin"]


def local_paths(mime) -> List[str]:
    """Local file paths carried by a drag's mime data."""
    if mime is None or not mime.hasUrls():
        return []
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]


class DropFilter(QObject):
    """Application-wide filter: files dropped on ANY widget of the window are opened."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        et = event.type()
        if et not in (QEvent.DragEnter, QEvent.DragMove, QEvent.Drop):
            return False
        if not isinstance(obj, QWidget) or obj.window() is not self.window:
            return False
        paths = local_paths(event.mimeData())
        if not paths:
            return False
        if et == QEvent.Drop:
            event.acceptProposedAction()
            self.window.open_files(paths)
        else:
            event.acceptProposedAction()
        return True


class DropMixin:
    """Accepts drops on the window itself; :class:`DropFilter` catches them on every child widget."""

    def install_drop_filter(self) -> None:
        self.setAcceptDrops(True)
        self._drop_filter = DropFilter(self)
        QApplication.instance().installEventFilter(self._drop_filter)

    def remove_drop_filter(self) -> None:
        QApplication.instance().removeEventFilter(self._drop_filter)

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if local_paths(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        paths = local_paths(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.open_files(paths)

"""The log panel: warnings from readers ("2 empty records skipped"), job results, errors."""
from __future__ import annotations

import html
import time

from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit

__all__ = ["LogPanel"]

_COLOURS = {"info": None, "warning": "#b36b00", "error": "#c62828"}


class LogPanel(QTextEdit):
    """A read-only, timestamped log. ``log(message, level)``; ``lines`` keeps the plain text."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setAcceptDrops(False)
        self.lines = []

    def log(self, message: str, level: str = "info") -> None:
        stamp = time.strftime("%H:%M:%S")
        self.lines.append((level, message))
        text = html.escape(f"{stamp}  {level.upper():7s} {message}").replace("\n", "<br>")
        colour = _COLOURS.get(level)
        if colour:
            text = f'<span style="color:{colour}">{text}</span>'
        self.append(f'<span style="font-family:monospace">{text}</span>')
        self.moveCursor(QTextCursor.End)

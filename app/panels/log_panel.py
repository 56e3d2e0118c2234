"""The log panel: warnings from readers ("2 empty records skipped"), job results, errors.

Every line shown in the panel also goes to the Python logger ``densehmm.studio``;
:func:`install_log_file` (called by ``app.main``) makes that logger append to
``densehmm-studio.log`` in the per-user state folder (``QStandardPaths.StateLocation``,
e.g. ``~/.local/state/DenseHMM/DenseHMM Studio/`` on Linux; ``AppLocalDataLocation``
where Qt has no state folder), rotated at about 1 MB with 3 old files kept.
"""
from __future__ import annotations

import html
import logging
import logging.handlers
import os
import time
from typing import Optional

from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QTextEdit

__all__ = ["LogPanel", "LOGGER_NAME", "LOG_FILE_NAME", "log_folder", "install_log_file", "remove_log_file"]

_COLOURS = {"info": None, "warning": "#b36b00", "error": "#c62828"}
_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}

LOGGER_NAME = "densehmm.studio"
LOG_FILE_NAME = "densehmm-studio.log"
MAX_BYTES = 1_000_000
BACKUPS = 3

logger = logging.getLogger(LOGGER_NAME)
logger.setLevel(logging.INFO)
logger.propagate = False                 # the panel is the app's console; no stderr echo
logger.addHandler(logging.NullHandler())  # ... and no "last resort" handler either


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
        logger.log(_LEVELS.get(level, logging.INFO), message)


class _QuietRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler that never disturbs the app: on a write error it stops logging."""

    def handleError(self, record) -> None:  # noqa: N802 (logging API)
        self.disabled = True  # e.g. disk full, folder removed: the window still has the log


def log_folder() -> Optional[str]:
    """The per-user folder of the log file: Qt's StateLocation, else AppLocalDataLocation."""
    from PySide6.QtCore import QStandardPaths
    kinds = [getattr(QStandardPaths.StandardLocation, "StateLocation", None),
             QStandardPaths.StandardLocation.AppLocalDataLocation]
    for kind in kinds:
        if kind is None:
            continue
        folder = QStandardPaths.writableLocation(kind)
        if folder:
            return folder
    return None


def install_log_file(folder: Optional[str] = None) -> Optional[str]:
    """Make the log panel's lines also go to ``folder/densehmm-studio.log`` (default :func:`log_folder`).

    Idempotent; returns the file's path, or None when no folder is known or it cannot be
    created or written (the app then keeps its log in the window only).
    """
    folder = folder or log_folder()
    if not folder:
        return None
    path = os.path.join(folder, LOG_FILE_NAME)
    for h in logger.handlers:
        if isinstance(h, _QuietRotatingFileHandler) and os.path.abspath(h.baseFilename) == os.path.abspath(path):
            return path
    try:
        os.makedirs(folder, exist_ok=True)
        handler = _QuietRotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8",
                                            delay=False)
    except OSError:
        return None
    # the process id on every line: two instances of the app may write to the same log file
    handler.setFormatter(logging.Formatter("%(asctime)s [%(process)d] %(levelname)-7s %(message)s"))
    logger.addHandler(handler)
    logger.info("DenseHMM Studio started (pid %d)", os.getpid())
    return path


def remove_log_file() -> None:
    """Detach and close the log file handlers (end of the app, tests)."""
    for h in list(logger.handlers):
        if isinstance(h, _QuietRotatingFileHandler):
            logger.removeHandler(h)
            try:
                h.close()
            except OSError:  # pragma: no cover
                pass

"""Locate bundled resources (icons) from a source checkout or a PyInstaller bundle."""
from __future__ import annotations

import pathlib
import sys
from typing import Optional

__all__ = ["resource_root", "resource_path", "app_icon", "APP_ICON"]

APP_ICON = "icons/densehmm-studio.svg"


def resource_root() -> pathlib.Path:
    """The ``resources/`` folder: ``sys._MEIPASS/resources`` in a PyInstaller bundle, else the repo's."""
    base = getattr(sys, "_MEIPASS", None)
    if base:
        return pathlib.Path(base) / "resources"
    return pathlib.Path(__file__).resolve().parent.parent / "resources"


def resource_path(relative: str) -> Optional[pathlib.Path]:
    """Absolute path of a resource, or None when it is missing."""
    p = resource_root() / relative
    return p if p.exists() else None


def app_icon():
    """The application icon as a QIcon (an empty icon when the file is missing)."""
    from PySide6.QtGui import QIcon
    p = resource_path(APP_ICON)
    return QIcon(str(p)) if p is not None else QIcon()

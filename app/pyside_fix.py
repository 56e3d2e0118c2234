"""Work around a reference-count bug of PySide6 6.12 on Python 3.11: Qt calls eat ``None`` and ``True``.

With PySide6 6.12.0 on CPython 3.11, every call of a Qt method returning ``void``
(``QWidget.resize``, ``QGraphicsItem.setPos``, ``update``...) returns ``None`` without
taking a reference to it, so ``None``'s reference count drops by one per call.  A live
pyqtgraph window makes tens of thousands of such calls within seconds; when the count
reaches zero the interpreter aborts with "Fatal Python error: none_dealloc".  ``True``
leaks the same way on other paths (a pyqtgraph window lost ~1,400 references to ``True``
in 50 redraws; "bool_dealloc" at exit).  From Python 3.12 on ``None``, ``True`` and
``False`` are immortal and the bug is harmless.

:func:`ensure_none_survives` measures the leak with a harmless Qt call and, only when it
is present, raises the reference counts of ``None``, ``True`` and ``False`` by 2**40 (no
real program makes that many calls), which is what Python 3.12 does for immortal objects.  It is idempotent and
is applied on import of this module, which :mod:`app.views`, :mod:`app.export` and the main window import.
"""
from __future__ import annotations

import ctypes
import sys

__all__ = ["ensure_none_survives", "leaks_none"]

_BOOST = 1 << 40
_applied = False


def leaks_none(calls: int = 64) -> bool:
    """True if a void PySide6 call lowers ``None``'s reference count (the 6.12 bug)."""
    if sys.version_info >= (3, 12):
        return False
    from PySide6.QtCore import QObject
    obj = QObject()
    before = sys.getrefcount(None)
    for _ in range(calls):
        obj.setObjectName("probe")
    after = sys.getrefcount(None)
    return after < before - calls // 2


def ensure_none_survives() -> bool:
    """Apply the work-around if this PySide6 leaks ``None``; returns whether it is applied."""
    global _applied
    if _applied:
        return True
    if not leaks_none():
        return False
    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += _BOOST
    _applied = True
    return True


ensure_none_survives()

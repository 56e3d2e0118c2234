"""Helpers of the Qt tests: a widget on screen at a given size (offscreen Qt), a layout read once settled."""
from __future__ import annotations


def shown(qtbot, widget, size=(900, 600)):
    """``widget``, handed to ``qtbot``, resized to ``size``, shown and exposed."""
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def settled(qtbot, read, timeout=5000):
    """``read()`` once it gives the same value in two rounds of events 50 ms apart (up to
    ``timeout`` ms).  A layout settles over several rounds (a resize, the plots' ranges, the labels);
    one fixed wait read it half done on a slow, loaded host (a CI failure)."""
    seen = [object()]

    def agree():
        qtbot.wait(50)
        now = read()
        same, seen[0] = now == seen[0], now
        return same
    qtbot.waitUntil(agree, timeout=timeout)
    return seen[0]

"""One helper of the Qt tests: a widget on screen at a given size (offscreen Qt)."""
from __future__ import annotations


def shown(qtbot, widget, size=(900, 600)):
    """``widget``, handed to ``qtbot``, resized to ``size``, shown and exposed."""
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    return widget

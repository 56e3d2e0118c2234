"""Exported figures are print-ready whatever the window's theme: white background and margins, dark
text and axes, no window furniture (splitter grips).  Used by :mod:`app.export` while a figure is
drawn; everything is put back afterwards, so the screen keeps its theme.

* The figure's widget gets a white palette (window, base, buttons) with black text: margins, the
  window-grey band where hidden controls were, tables, labels.
* Every pyqtgraph plot inside it is re-coloured as :func:`app.window.appearance.restyle_plots` does for
  a theme (backgrounds white; axes, axis labels, titles, legends and texts drawn in the theme's text
  colour black), each item's own colours remembered and restored; texts in colours of their own (state
  colours) keep them.
* Splitter handles (their grip dots) are not painted.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, List

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["print_colours", "print_palette", "PAPER", "INK"]

#: the figure's background and its text / axis colour
PAPER = QtGui.QColor(255, 255, 255)
INK = QtGui.QColor(0, 0, 0)


def print_palette() -> QtGui.QPalette:
    """White window, base and buttons with black text (every colour group)."""
    pal = QtGui.QPalette(PAPER, PAPER)   # (button, window): Qt derives the light / dark shades
    for group in (QtGui.QPalette.ColorGroup.Active, QtGui.QPalette.ColorGroup.Inactive):
        for role in (QtGui.QPalette.ColorRole.Window, QtGui.QPalette.ColorRole.Base, QtGui.QPalette.ColorRole.Button):
            pal.setColor(group, role, PAPER)
        pal.setColor(group, QtGui.QPalette.ColorRole.AlternateBase, QtGui.QColor(245, 245, 245))
        for role in (QtGui.QPalette.ColorRole.WindowText, QtGui.QPalette.ColorRole.Text,
                     QtGui.QPalette.ColorRole.ButtonText):
            pal.setColor(group, role, INK)
    pal.setColor(QtGui.QPalette.ColorGroup.Disabled, QtGui.QPalette.ColorRole.WindowText, QtGui.QColor(120, 120, 120))
    pal.setColor(QtGui.QPalette.ColorGroup.Disabled, QtGui.QPalette.ColorRole.Text, QtGui.QColor(120, 120, 120))
    for role in (QtGui.QPalette.ColorRole.Window, QtGui.QPalette.ColorRole.Base):
        pal.setColor(QtGui.QPalette.ColorGroup.Disabled, role, PAPER)
    return pal


class _NoPaint(QtCore.QObject):
    """Swallows the paint events of the objects it filters (splitter grips while a figure is drawn)."""

    def eventFilter(self, obj, ev) -> bool:  # noqa: N802 (Qt API)
        return ev.type() == QtCore.QEvent.Type.Paint


def _recolour_plots(root: QtWidgets.QWidget, old_fg: QtGui.QColor, undo: List[Callable[[], None]]) -> None:
    """Plots under ``root`` in :data:`PAPER` / :data:`INK`; ``undo`` gets what puts each item back."""
    views = root.findChildren(pg.GraphicsView) + ([root] if isinstance(root, pg.GraphicsView) else [])
    ink = pg.mkPen(INK)
    for view in views:
        brush = QtGui.QBrush(view.backgroundBrush())
        view.setBackgroundBrush(QtGui.QBrush(PAPER))
        undo.append(lambda v=view, b=brush: v.setBackgroundBrush(b))
        scene = view.scene()
        if scene is None:
            continue
        for item in scene.items():
            _recolour_item(item, old_fg, ink, undo)


def _recolour_item(item: Any, old_fg: QtGui.QColor, ink: QtGui.QPen, undo: List[Callable[[], None]]) -> None:
    if isinstance(item, pg.AxisItem):
        pen, text_pen, style = QtGui.QPen(item.pen()), QtGui.QPen(item.textPen()), dict(item.labelStyle)
        item.setPen(ink)
        item.setTextPen(ink)
        if item.labelText:
            item.labelStyle = dict(style, color=INK.name())
            item._updateLabel()

        def back(a=item, p=pen, t=text_pen, s=style) -> None:
            a.setPen(p)
            a.setTextPen(t)
            a.labelStyle = s
            if a.labelText:
                a._updateLabel()
        undo.append(back)
    elif isinstance(item, pg.PlotItem) and getattr(item, "_title_color", None) is not None:
        colour = item._title_color   # a later refit of the title (set_plot_title) draws it in this colour
        item._title_color = INK.name()
        undo.append(lambda p=item, c=colour: setattr(p, "_title_color", c))
    elif isinstance(item, pg.LegendItem):
        colour = item.opts.get("labelTextColor")
        item.opts["labelTextColor"] = QtGui.QColor(INK)
        undo.append(lambda lg=item, c=colour: lg.opts.__setitem__("labelTextColor", c))
    elif isinstance(item, pg.LabelItem) and item.text:
        colour = item.opts.get("color")
        if colour is not None and not _same(colour, old_fg):
            return   # a colour of its own
        item.setText(item.text, color=INK.name())
        undo.append(lambda lb=item, c=colour: lb.setText(lb.text, color=c))
    elif isinstance(item, pg.TextItem) and _same(item.color, old_fg):
        colour = QtGui.QColor(item.color)
        item.setColor(INK)
        undo.append(lambda t=item, c=colour: t.setColor(c))


def _same(colour: Any, other: QtGui.QColor) -> bool:
    try:
        return pg.mkColor(colour).name() == other.name()
    except Exception:   # noqa: BLE001 - a colour pyqtgraph does not read: not the theme's
        return False


@contextlib.contextmanager
def print_colours(widget: QtWidgets.QWidget):
    """While the block runs, ``widget`` and its plots are drawn print-ready (see the module doc)."""
    old_fg = QtGui.QColor(widget.palette().color(QtGui.QPalette.ColorRole.Text))
    had_palette = widget.testAttribute(QtCore.Qt.WidgetAttribute.WA_SetPalette)
    palette = QtGui.QPalette(widget.palette())
    undo: List[Callable[[], None]] = []
    no_paint = _NoPaint()
    handles = [h for h in widget.findChildren(QtWidgets.QSplitterHandle) if h.isVisibleTo(widget)]
    try:
        widget.setPalette(print_palette())
        _recolour_plots(widget, old_fg, undo)
        for h in handles:
            h.installEventFilter(no_paint)
        yield
    finally:
        for h in handles:
            h.removeEventFilter(no_paint)
        for step in reversed(undo):
            step()
        widget.setPalette(palette if had_palette else QtGui.QPalette())
        if not had_palette:
            widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_SetPalette, False)

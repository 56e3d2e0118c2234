"""View > Theme: light, dark or the system's, for the widgets and the plots.

Qt's colour-scheme hint (``QStyleHints.setColorScheme``) is ignored by many platform themes (and
by none at all under X11 without one), so the dark theme sets a dark palette on the Fusion style
itself; the pyqtgraph plots, which draw with colours taken when they were built, are then
re-coloured in place (backgrounds, axes, titles, axis labels).  Plots built later read the
palette themselves (``app.views.theme.theme_colors``).
"""
from __future__ import annotations

from typing import Optional

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory, QWidget

from ..views.theme import set_plot_title

__all__ = ["apply_theme", "dark_palette", "restyle_plots", "THEMES"]

THEMES = ("system", "light", "dark")
_original = {}   # the style and palette the application started with


def dark_palette() -> QPalette:
    """A dark palette (Fusion's colour roles), readable text and visible disabled items."""
    p = QPalette()
    window, base, text = QColor(45, 45, 48), QColor(30, 30, 32), QColor(225, 225, 225)
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        p.setColor(group, QPalette.ColorRole.Window, window)
        p.setColor(group, QPalette.ColorRole.WindowText, text)
        p.setColor(group, QPalette.ColorRole.Base, base)
        p.setColor(group, QPalette.ColorRole.AlternateBase, QColor(40, 40, 43))
        p.setColor(group, QPalette.ColorRole.ToolTipBase, QColor(60, 60, 64))
        p.setColor(group, QPalette.ColorRole.ToolTipText, text)
        p.setColor(group, QPalette.ColorRole.PlaceholderText, QColor(150, 150, 150))
        p.setColor(group, QPalette.ColorRole.Text, text)
        p.setColor(group, QPalette.ColorRole.Button, QColor(55, 55, 59))
        p.setColor(group, QPalette.ColorRole.ButtonText, text)
        p.setColor(group, QPalette.ColorRole.BrightText, QColor(255, 90, 90))
        p.setColor(group, QPalette.ColorRole.Link, QColor(110, 170, 255))
        p.setColor(group, QPalette.ColorRole.Highlight, QColor(60, 110, 190))
        p.setColor(group, QPalette.ColorRole.HighlightedText, QColor(255, 255, 255))
        p.setColor(group, QPalette.ColorRole.Light, QColor(75, 75, 80))
        p.setColor(group, QPalette.ColorRole.Midlight, QColor(62, 62, 66))
        p.setColor(group, QPalette.ColorRole.Mid, QColor(40, 40, 43))
        p.setColor(group, QPalette.ColorRole.Dark, QColor(25, 25, 27))
        p.setColor(group, QPalette.ColorRole.Shadow, QColor(10, 10, 10))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(130, 130, 130))
    for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Button):
        p.setColor(QPalette.ColorGroup.Disabled, role, window)
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Base, QColor(38, 38, 40))
    return p


def apply_theme(theme: str, app: Optional[QApplication] = None) -> None:
    """``"dark"``: the Fusion style with :func:`dark_palette`; ``"light"``: Fusion with its light
    palette; ``"system"``: the style and palette the application started with.  Open plots are
    re-coloured (:func:`restyle_plots`)."""
    app = app or QApplication.instance()
    from ..views.theme import theme_colors
    old_fg = theme_colors(None)[1]
    if not _original:
        _original["style"] = app.style().name()
        _original["palette"] = QPalette(app.palette())
    hints = QApplication.styleHints()
    if hasattr(hints, "setColorScheme"):   # Qt >= 6.8: tell the platform too, where it listens
        hints.setColorScheme({"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}
                             .get(theme, Qt.ColorScheme.Unknown))
    if theme == "dark":
        app.setStyle(QStyleFactory.create("Fusion"))
        app.setPalette(dark_palette())
    elif theme == "light":
        style = QStyleFactory.create("Fusion")
        app.setStyle(style)
        app.setPalette(style.standardPalette())
    else:
        app.setStyle(QStyleFactory.create(_original["style"]) or app.style())
        app.setPalette(_original["palette"])
    for w in app.topLevelWidgets():
        restyle_plots(w, old_fg)


def restyle_plots(root: QWidget, old_fg: Optional[QColor] = None) -> None:
    """Re-colour every pyqtgraph plot under ``root`` from the current palette: the backgrounds of
    graphics widgets built by ``make_graphics_widget``, axis lines and tick labels, plot titles and
    axis titles, legends (their entries to come too), and the texts drawn in the old text colour
    ``old_fg`` (notes inside plots, symbol labels); texts in colours of their own (state colours)
    keep them."""
    from ..views.theme import theme_colors
    bg, fg = theme_colors(None)   # the application palette: widgets get theirs by posted events
    views = root.findChildren(pg.GraphicsView)
    if isinstance(root, pg.GraphicsView):
        views.append(root)
    window = QApplication.palette().color(QPalette.ColorRole.Window)
    for view in views:
        if getattr(view, "_theme_window_bg", False) or view.backgroundBrush().style() == Qt.BrushStyle.NoBrush:
            # a "transparent" plot (the data panel's): pyqtgraph gives its viewport a palette of its
            # own, which does not follow the application's, so it gets the window colour
            view._theme_window_bg = True
            view.setBackground(window)
        else:
            view.setBackground(bg)
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem):
                item.setPen(pg.mkPen(fg))
                item.setTextPen(pg.mkPen(fg))
                if item.labelText:
                    item.labelStyle = dict(item.labelStyle, color=fg.name())
                    item._updateLabel()
            elif isinstance(item, pg.PlotItem):
                item._styled_fg = fg.name()
                title = getattr(item, "_styled_title", None)
                if title is not None:
                    set_plot_title(item, title, fg)
            elif isinstance(item, pg.LegendItem):
                # entries added later (a series gets its first point) take the legend's colour: it
                # was the theme's at start, so a job shown after a switch to dark had dark legend text
                item.setLabelTextColor(fg)
            elif isinstance(item, pg.LabelItem) and item.text:
                item.setText(item.text, color=fg.name())
            elif isinstance(item, pg.TextItem) and old_fg is not None and item.color.name() == old_fg.name():
                item.setColor(fg)
        view.viewport().update()

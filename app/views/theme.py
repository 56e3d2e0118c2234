"""Theme and formatting helpers of the plotting views: colour maps, palette-following plot
styles, axis titles, state colours, tick and number formatting.

Functions only (the axes and widgets built on them are in :mod:`app.views.axes` and
:mod:`app.views.widgets`); display code, no model maths.
"""
from __future__ import annotations

import html
import math
import re
import weakref
from typing import Any, List, Optional, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

__all__ = [
    "theme_colors", "make_graphics_widget", "style_plot", "state_colors", "symbol_labels", "state_labels",
    "SEQUENTIAL_CMAP", "DIVERGING_CMAP", "sequential_cmap", "diverging_cmap", "first_of", "fmt_value",
    "as_single", "tick_strings", "use_precise_ticks", "marker_icon", "fmt_compact", "label_axis_text",
    "set_plot_title", "plot_title", "TITLE_POINTS", "label_axis_texts", "log_tick_strings",
]

#: Perceptual sequential colour map for probabilities.
SEQUENTIAL_CMAP = "viridis"
#: Perceptual diverging colour map (blue - white - red) for differences.
DIVERGING_CMAP = "CET-D1"

_CMAP_CACHE: dict = {}


def sequential_cmap() -> pg.ColorMap:
    """The viridis colour map (cached)."""
    if SEQUENTIAL_CMAP not in _CMAP_CACHE:
        _CMAP_CACHE[SEQUENTIAL_CMAP] = pg.colormap.get(SEQUENTIAL_CMAP)
    return _CMAP_CACHE[SEQUENTIAL_CMAP]


def diverging_cmap() -> pg.ColorMap:
    """A perceptual diverging colour map (CET-D1, cached)."""
    if DIVERGING_CMAP not in _CMAP_CACHE:
        _CMAP_CACHE[DIVERGING_CMAP] = pg.colormap.get(DIVERGING_CMAP)
    return _CMAP_CACHE[DIVERGING_CMAP]


def theme_colors(widget: Optional[QtWidgets.QWidget] = None):
    """Background and foreground colours following the application palette (light/dark)."""
    pal = widget.palette() if widget is not None else QtWidgets.QApplication.palette()
    bg = pal.color(QtGui.QPalette.ColorRole.Base)
    fg = pal.color(QtGui.QPalette.ColorRole.Text)
    return bg, fg


def make_graphics_widget(parent: Optional[QtWidgets.QWidget] = None) -> pg.GraphicsLayoutWidget:
    """A GraphicsLayoutWidget whose background follows the palette."""
    glw = pg.GraphicsLayoutWidget(parent=parent)
    bg, _ = theme_colors(parent)
    glw.setBackground(bg)
    glw.ci.setContentsMargins(4, 4, 4, 4)
    return glw


def style_plot(plot: pg.PlotItem, widget: Optional[QtWidgets.QWidget] = None,
               title: Optional[str] = None) -> None:
    """Axis and title colours from the palette so labels are readable in light and dark themes.

    Cheap to call repeatedly: pens and the title are only touched when they change
    (each change makes pyqtgraph re-lay out the axes and re-render HTML labels).
    """
    _, fg = theme_colors(widget)
    if getattr(plot, "_styled_fg", None) != fg.name():
        plot._styled_fg = fg.name()
        for name in ("left", "bottom", "right", "top"):
            ax = plot.getAxis(name)
            ax.setPen(pg.mkPen(fg))
            ax.setTextPen(pg.mkPen(fg))
        plot._styled_title = None
    if title is not None and getattr(plot, "_styled_title", None) != title:
        set_plot_title(plot, title, fg)


#: A plot title's point sizes, largest first: the first whose text fits the plot is used
#: (:func:`set_plot_title`); a plain title too wide even at the last is elided.
TITLE_POINTS = (11.0, 10.0, 9.0, 8.0)
_TAG = re.compile(r"<[^>]+>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def set_plot_title(plot: pg.PlotItem, title: str, color: QtGui.QColor) -> None:
    """Give ``plot`` the title ``title`` (HTML allowed, ``<br>`` between lines: the title row grows) in
    ``color``.

    The title fits its plot: where it is wider than the plot at 11 pt (three curves side by side on a
    1024 x 600 netbook), it is drawn smaller, down to 8 pt, and where it is wider than its view box it
    reaches over the left axis instead of over the neighbouring plot; a one-line plain title still too
    wide is elided (…).  Refitted whenever the plot's width changes.  Never sets the plot's minimum
    width (:func:`_let_title_overflow`).
    """
    plot._styled_title = title
    plot._title_color = QtGui.QColor(color).name()
    plot._title_fit = None
    _let_title_overflow(plot)
    _fit_title(plot)


def plot_title(plot: pg.PlotItem) -> str:
    """The title given to ``plot`` (:func:`set_plot_title`), whole: the one drawn may be elided."""
    return getattr(plot, "_styled_title", None) or ""


def _title_lines(title: str) -> List[str]:
    return [html.unescape(_TAG.sub("", line)) for line in _BREAK.split(title)]


def _fit_title(plot: pg.PlotItem) -> None:
    """Draw the plot's title at the largest of :data:`TITLE_POINTS` that fits (see :func:`set_plot_title`)."""
    title = getattr(plot, "_styled_title", None)
    if title is None or getattr(plot, "_fitting_title", False):
        return
    lbl = plot.titleLabel
    cell, right = lbl.geometry(), _title_right(plot)
    centred = 2 * min(cell.center().x(), right - cell.center().x()) - 4
    leftward = cell.right() - 2          # right-aligned, reaching over the left axis
    room = max(centred, leftward)
    text, points, justify = title, TITLE_POINTS[0], "center"
    if cell.width() > 0 and right > 0:    # (not laid out yet: drawn at full size, fitted on the first resize)
        font = QtGui.QFont(lbl.item.font())
        lines = _title_lines(title)
        need = 0.0
        for points in TITLE_POINTS:
            font.setPointSizeF(points)
            metrics = QtGui.QFontMetricsF(font)
            need = max(metrics.horizontalAdvance(line) for line in lines)
            if need <= room:
                break
        if need > room and len(lines) == 1 and "<" not in title:
            elided = metrics.elidedText(lines[0], QtCore.Qt.TextElideMode.ElideRight, max(room, 0.0))
            need = metrics.horizontalAdvance(elided)
            text = html.escape(elided, quote=False)
        if need > centred:
            justify = "right"
    _title_tip(lbl, None if text == title else _title_lines(title)[0])
    key = (title, text, points, justify, plot._title_color)
    if plot._title_fit == key:
        return
    plot._title_fit = key
    plot._fitting_title = True   # setTitle re-enters through the label's resize
    try:
        plot.setTitle(text, color=plot._title_color, size=f"{points:g}pt", justify=justify)
        if len(_title_lines(title)) > 1:   # pyqtgraph's title row is one line high
            height = int(math.ceil(lbl.item.boundingRect().height())) + 4
            lbl.setMaximumHeight(height)
            plot.layout.setRowFixedHeight(0, height)
    finally:
        plot._fitting_title = False


def _title_tip(label: pg.LabelItem, whole: Optional[str]) -> None:
    """An elided title's tooltip is the whole title; a tooltip of the plot's own (the loss plot's
    explanation) is kept."""
    ours = getattr(label, "_elided_tip", None)
    if label.toolTip() not in ("", ours):
        return
    label._elided_tip = whole
    label.setToolTip(whole or "")


def _from_event_loop(holder, flag: str, plot: pg.PlotItem, fn) -> None:
    """Call ``fn()`` once from the event loop, however often asked before it runs (``flag`` on
    ``holder`` marks it queued); dropped with ``plot``.  Refits asked for by a resize run there: the
    resize arrives while the plot's layout sets its items' geometry, and changing a title there (its
    row's height) corrupted the layout (a crash)."""
    if getattr(holder, flag, False):
        return
    setattr(holder, flag, True)

    def run() -> None:
        setattr(holder, flag, False)
        fn()

    QtCore.QTimer.singleShot(0, plot, run)


def _refit_title_later(plot: pg.PlotItem) -> None:
    _from_event_loop(plot, "_title_refit_queued", plot, lambda: _fit_title(plot))


def _title_right(plot: pg.PlotItem) -> float:
    """How far right of the plot's left edge its title may reach: to the next plot with a title on its
    right in the same layout, else to the layout's edge (over a colour bar, for instance)."""
    own = plot.sceneBoundingRect()
    layout = plot.parentItem()
    if not isinstance(layout, pg.GraphicsLayout):
        return own.width()
    right = layout.sceneBoundingRect().right()
    for other in layout.items:
        if other is plot or not isinstance(other, pg.PlotItem):
            continue
        r = other.sceneBoundingRect()
        if r.left() >= own.right() - 1 and r.top() < own.bottom() and r.bottom() > own.top():
            right = min(right, r.left())
    return right - own.left()


def _let_title_overflow(plot: pg.PlotItem) -> None:
    """Keep the title from setting the plot's minimum width.

    pyqtgraph makes the title's text width the minimum width of the view box's column, so a
    narrow heatmap grew wider than its widget and lost its colour bar off the right edge.
    The title may now reach over the axes instead (:func:`_fit_title` keeps it inside the plot).
    """
    lbl = plot.titleLabel
    if getattr(lbl, "_overflow_ok", False):
        return
    lbl._overflow_ok = True
    orig = lbl.updateMin
    owner = weakref.ref(plot)   # (no reference cycle through the label: the plot goes with its scene)

    def update_min():
        orig()
        h = lbl._sizeHint.get(QtCore.Qt.SizeHint.MinimumSize, (0, 0))[1]
        lbl._sizeHint[QtCore.Qt.SizeHint.MinimumSize] = (0, h)
        lbl.setMinimumWidth(0)
        lbl.updateGeometry()
        p = owner()
        if p is not None:
            _refit_title_later(p)   # its width changed (resize) or its text did

    lbl.updateMin = update_min  # LabelItem calls it from setText and resizeEvent
    update_min()


def label_axis_text(plot: pg.PlotItem, side: str, text: str, widget=None) -> None:
    """Axis title in the palette's text colour (no-op when unchanged)."""
    ax = plot.getAxis(side)
    if getattr(ax, "_styled_label", None) == text:
        return
    ax._styled_label = text
    # no "(x0.001)" after the title with ticks of -500 .. 500 for embeddings within +-0.5: pyqtgraph's
    # SI scaling, meant for values with units, only obscures unitless coordinates and scores
    if ax.autoSIPrefix:
        ax.enableAutoSIPrefix(False)
    # (pyqtgraph's enableAutoSIPrefix(False) on a shown label still computes a scale from the range)
    ax.autoSIPrefixScale, ax.labelUnitPrefix = 1.0, ""
    _, fg = theme_colors(widget)
    plot.setLabel(side, text, color=fg.name())


def label_axis_texts(plot: pg.PlotItem, side: str, texts: Sequence[str], widget=None) -> None:
    """Axis title: the first of ``texts`` (longest first) that fits along the axis, else the last;
    chosen again whenever the plot is resized (a short embedding plot on a netbook cut "PC 2 (19% of
    variance)" to "PC 2 (19% of varianc")."""
    ax = plot.getAxis(side)
    ax._fit_texts = [str(t) for t in texts]
    ax._fit_widget = widget
    _fit_axis_text(plot, side)
    if not getattr(ax, "_fit_hooked", False):
        ax._fit_hooked = True
        owner = weakref.ref(plot)

        def resized(*_args) -> None:
            p = owner()
            if p is not None:
                _from_event_loop(ax, "_fit_queued", p, lambda: _fit_axis_text(p, side))

        plot.vb.sigResized.connect(resized)


def _fit_axis_text(plot: pg.PlotItem, side: str) -> None:
    ax = plot.getAxis(side)
    texts = getattr(ax, "_fit_texts", None)
    if not texts:
        return
    rect = plot.vb.boundingRect()
    length = rect.height() if side in ("left", "right") else rect.width()
    metrics = QtGui.QFontMetricsF(ax.label.font())
    chosen = next((t for t in texts if metrics.horizontalAdvance(t) <= length - 4), texts[-1])
    label_axis_text(plot, side, chosen, ax._fit_widget)


def tick_strings(values: Sequence[float], spacing: float) -> List[str]:
    """Tick labels with just enough digits that ticks ``spacing`` apart read differently.

    pyqtgraph's default drops digits when the range is narrow compared with the values
    (every label of 355625.1 .. 355625.9 reads "355625", a colour bar of 0.1000 .. 0.1002
    shows nothing or "0"); here the number of decimals follows the spacing, values of
    1e6 and more (or below 1e-3) use scientific notation with enough significant digits,
    and labels are made distinct by adding digits if rounding still merged two of them.
    """
    vals = [float(v) for v in values]
    if not vals:
        return []
    finite = [abs(v) for v in vals if math.isfinite(v)]
    big = max(finite) if finite else 0.0
    spacing = abs(float(spacing)) if spacing and math.isfinite(spacing) else 0.0
    if spacing <= 0:
        diffs = [abs(b - a) for a, b in zip(vals, vals[1:]) if b != a]
        spacing = min(diffs) if diffs else (big or 1.0)
    sci = big >= 1e6 or (0 < big < 1e-3)

    def fmt(v: float, extra: int) -> str:
        if not math.isfinite(v):
            return str(v)
        if abs(v) < spacing * 1e-6:
            v = 0.0  # no "-0.000" or "1e-17" at the zero tick
        if sci:
            digits = max(0, int(math.ceil(math.log10(max(big, 1e-300) / spacing) - 1e-9))) + extra
            return f"{v:.{min(digits, 15)}e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")
        dec = max(0, int(math.ceil(-math.log10(spacing) - 1e-9))) + extra
        return f"{v:.{min(dec, 15)}f}"

    for extra in range(0, 4):
        out = [fmt(v, extra) for v in vals]
        if len(set(out)) == len(set(vals)):
            return out
    return out


def log_tick_strings(values: Sequence[float]) -> List[str]:
    """Labels of a log axis' tick values (the values themselves, not their logarithms), in one
    notation for the whole axis: scientific ("2e-4", "1.5e-4") when any is below 1e-4 or any
    reaches 1e6, else plain ("0.002", "50").  Each value alone mixed them on one axis
    ("0.0002, 0.0001, 9e-05")."""
    vals = [float(v) for v in values]
    finite = [abs(v) for v in vals if math.isfinite(v) and v != 0]
    sci = bool(finite) and (min(finite) < 1e-4 or max(finite) >= 1e6)

    def fmt(v: float) -> str:
        if not math.isfinite(v):
            return str(v)
        if not sci:
            return f"{v:.6g}"
        mant, exp = f"{v:.2e}".split("e")
        mant = mant.rstrip("0").rstrip(".")
        return f"{mant}e{int(exp)}"

    return [fmt(v) for v in vals]


def _precise_tick_strings(axis: pg.AxisItem, values, scale, spacing):
    if axis.logMode:
        return pg.AxisItem.logTickStrings(axis, values, scale, spacing)
    return tick_strings([v * scale for v in values], spacing * scale)


def use_precise_ticks(axis: pg.AxisItem) -> pg.AxisItem:
    """Give an existing axis (e.g. a ColorBarItem's) :func:`tick_strings` labels."""
    axis.tickStrings = lambda values, scale, spacing: _precise_tick_strings(axis, values, scale, spacing)
    axis.picture = None
    return axis


#: tab10, then Kelly's colours of maximum contrast (without white, black and near-duplicates).
_CATEGORICAL = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22", "#17becf", "#f3c300", "#875692", "#a1caf1", "#be0032", "#c2b280", "#008856",
                "#e68fac", "#0067a5", "#f99379", "#604e97", "#882d17", "#8db600", "#654522", "#2b3d26"]


def state_colors(n: int) -> List[QtGui.QColor]:
    """``n`` well-separated categorical colours for states (tab10, Kelly's colours, then a hue wheel)."""
    if n <= len(_CATEGORICAL):
        return [QtGui.QColor(c) for c in _CATEGORICAL[:n]]
    return [pg.intColor(i, hues=n, values=1, maxValue=230, minValue=150) for i in range(n)]


def state_labels(n: int) -> List[str]:
    return [str(i) for i in range(n)]


class SymbolNames(list):
    """Symbol names already made text (:func:`symbol_names`): the views pass them on as they are (a list
    shared by the views, never changed)."""


def symbol_names(vocabulary: Optional[Sequence[Any]]) -> Optional[SymbolNames]:
    """``vocabulary`` as text, converted once: the dashboard hands the same names to seven views, and
    each converting 30,499 words again cost the click that starts a job about 15 ms."""
    if vocabulary is None or isinstance(vocabulary, SymbolNames):
        return vocabulary
    return SymbolNames([str(s) for s in vocabulary])


def symbol_labels(m: int, vocabulary: Optional[Sequence[str]]) -> List[str]:
    """The vocabulary if it fits ``m`` symbols, else ``0..m-1``."""
    if vocabulary is not None and len(vocabulary) == m:
        return list(symbol_names(vocabulary))
    return [str(i) for i in range(m)]


def first_of(d: Optional[dict], *keys):
    """First key present in ``d`` with a non-None value."""
    if not d:
        return None
    for k in keys:
        v = d.get(k)
        if v is not None:
            return v
    return None


def fmt_value(v) -> str:
    """Compact exact-ish number formatting for tables and tooltips."""
    if v is None:
        return "—"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return str(f)
        return f"{f:.6g}"
    return str(v)


def fmt_compact(v, digits: int = 5) -> str:
    """Short number text for tables: ``digits`` significant digits, no trailing zeros.

    Integers stay exact; very large or small floats use scientific notation
    (``0.000132808`` -> ``1.3281e-4``, ``-355625.37`` -> ``-355625``).
    """
    if isinstance(v, (float, np.floating)) and not isinstance(v, (bool, np.bool_)):
        f = float(v)
        if not math.isfinite(f):
            return str(f)
        if f == 0:
            return "0"
        a = abs(f)
        if a >= 10 ** digits:  # keep the integer part: 355625 rather than 3.5562e5
            return f"{f:.0f}" if a < 1e12 else f"{f:.{digits - 1}e}".replace("e+", "e")
        if a < 1e-3:
            m, e = f"{f:.{digits - 1}e}".split("e")
            m = m.rstrip("0").rstrip(".")
            return f"{m}e{int(e)}"
        return f"{f:.{digits}g}"
    return fmt_value(v)


def as_single(result):
    """First sequence of a result that may be a list of arrays or one array."""
    if isinstance(result, (list, tuple)):
        return np.asarray(result[0])
    arr = np.asarray(result)
    return arr


def marker_icon(symbol: str, color, size: int = 14) -> QtGui.QIcon:
    """A small icon of a scatter marker (for check boxes that double as the legend)."""
    pm = QtGui.QPixmap(size, size)
    pm.fill(QtCore.Qt.GlobalColor.transparent)
    p = QtGui.QPainter(pm)
    p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
    p.translate(size / 2.0, size / 2.0)
    p.scale(size * 0.8, size * 0.8)
    p.setPen(pg.mkPen("#333333", width=0))
    p.setBrush(pg.mkBrush(color))
    from pyqtgraph.graphicsItems.ScatterPlotItem import Symbols
    path = Symbols.get(symbol, Symbols["o"])
    p.drawPath(path)
    p.end()
    return QtGui.QIcon(pm)

"""Shared pieces of the plotting views: theme, colour maps, label axes, state colours.

Everything here is display code (Qt / pyqtgraph); no model maths.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

__all__ = [
    "theme_colors", "make_graphics_widget", "style_plot", "LabelAxis", "state_colors",
    "symbol_labels", "state_labels", "SEQUENTIAL_CMAP", "DIVERGING_CMAP", "sequential_cmap",
    "diverging_cmap", "first_of", "ThinLogAxis", "fmt_value", "as_single", "tick_strings",
    "use_precise_ticks", "FlowLayout", "marker_icon", "fmt_compact",
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
        plot._styled_title = title
        plot.setTitle(title, color=fg.name(), size="11pt")
        _let_title_overflow(plot)


def _let_title_overflow(plot: pg.PlotItem) -> None:
    """Keep the title from setting the plot's minimum width.

    pyqtgraph makes the title's text width the minimum width of the view box's column, so a
    narrow heatmap grew wider than its widget and lost its colour bar off the right edge.
    The (centred) title may now reach over the axes instead.
    """
    lbl = plot.titleLabel
    if getattr(lbl, "_overflow_ok", False):
        return
    lbl._overflow_ok = True
    orig = lbl.updateMin

    def update_min():
        orig()
        h = lbl._sizeHint.get(QtCore.Qt.SizeHint.MinimumSize, (0, 0))[1]
        lbl._sizeHint[QtCore.Qt.SizeHint.MinimumSize] = (0, h)
        lbl.setMinimumWidth(0)
        lbl.updateGeometry()

    lbl.updateMin = update_min  # LabelItem calls it from setText and resizeEvent
    update_min()


def label_axis_text(plot: pg.PlotItem, side: str, text: str, widget=None) -> None:
    """Axis title in the palette's text colour (no-op when unchanged)."""
    ax = plot.getAxis(side)
    if getattr(ax, "_styled_label", None) == text:
        return
    ax._styled_label = text
    _, fg = theme_colors(widget)
    plot.setLabel(side, text, color=fg.name())


class LabelAxis(pg.AxisItem):
    """An axis whose ticks are integer positions ``0..k-1`` named by strings.

    Labels are thinned to a stride that fits the axis length in pixels (at any zoom),
    so amino-acid letters all show while long tag or word lists stay readable.
    """

    def __init__(self, orientation: str, **kw) -> None:
        super().__init__(orientation, **kw)
        self._labels: List[str] = []
        self._char_w = 7.0

    def set_labels(self, labels: Optional[Sequence[str]]) -> None:
        self._labels = [str(s) for s in labels] if labels is not None else []
        fm = QtGui.QFontMetricsF(self.font() if hasattr(self, "font") else QtGui.QFont())
        self._char_w = max(5.0, fm.averageCharWidth())
        self.picture = None
        self.update()

    @property
    def labels(self) -> List[str]:
        return list(self._labels)

    def _pixel_per_label(self) -> float:
        if not self._labels:
            return 20.0
        if self.orientation in ("left", "right"):
            return 14.0
        longest = max(len(s) for s in self._labels)
        return self._char_w * longest + 8.0

    def tickValues(self, minVal, maxVal, size):  # noqa: N802 (pyqtgraph API)
        k = len(self._labels)
        if k == 0:
            return super().tickValues(minVal, maxVal, size)
        minVal, maxVal = min(minVal, maxVal), max(minVal, maxVal)
        lo = max(0, int(math.ceil(minVal - 0.5)))
        hi = min(k - 1, int(math.floor(maxVal + 0.5)))
        if hi < lo:
            return []
        visible = hi - lo + 1
        fit = max(1, int(size // self._pixel_per_label()))
        stride = max(1, int(math.ceil(visible / fit)))
        start = lo - (lo % stride)
        vals = [float(v) for v in range(start, hi + 1, stride) if v >= lo]
        return [(float(stride), vals)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph API)
        if not self._labels:
            return super().tickStrings(values, scale, spacing)
        out = []
        for v in values:
            i = int(round(v))
            out.append(self._labels[i] if 0 <= i < len(self._labels) else "")
        return out


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


def _precise_tick_strings(axis: pg.AxisItem, values, scale, spacing):
    if axis.logMode:
        return pg.AxisItem.logTickStrings(axis, values, scale, spacing)
    return tick_strings([v * scale for v in values], spacing * scale)


def use_precise_ticks(axis: pg.AxisItem) -> pg.AxisItem:
    """Give an existing axis (e.g. a ColorBarItem's) :func:`tick_strings` labels."""
    axis.tickStrings = lambda values, scale, spacing: _precise_tick_strings(axis, values, scale, spacing)
    axis.picture = None
    return axis


class ThinLogAxis(pg.AxisItem):
    """A value axis whose log-mode ticks never crowd.

    Below one decade pyqtgraph puts all of 2..9 x 10^k on one tick level, which is always
    drawn and overlaps on short plots; here such levels keep 1-2-5 values, or only the
    decades, when the axis is too short for all of them.
    """

    def logTickValues(self, minVal, maxVal, size, stdTicks):  # noqa: N802 (pyqtgraph API)
        levels = super().logTickValues(minVal, maxVal, size, stdTicks)
        room = max(2, int(size // 22))
        out = []
        for spacing, values in levels:
            values = list(values)
            if spacing is None and len(values) > room:
                mant = [round(10 ** (v - math.floor(v + 1e-9)), 6) for v in values]
                values = [v for v, m in zip(values, mant) if m in (1.0, 2.0, 5.0)]
                if len(values) > room:
                    values = [v for v, m in zip(values, mant) if m == 1.0] or values[:1]
            out.append((spacing, values))
        if not any(v for _, v in out):
            # less than a decade and no 1-2-5 value in view: one tick in the middle, not a bare axis
            mid = 0.5 * (minVal + maxVal)
            out = [(None, [mid])]
        return out

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph API)
        if self.logMode:
            return [f"{10.0 ** float(v):.3g}" for v in values]
        return tick_strings([v * scale for v in values], spacing * scale)


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


def symbol_labels(m: int, vocabulary: Optional[Sequence[str]]) -> List[str]:
    """The vocabulary if it fits ``m`` symbols, else ``0..m-1``."""
    if vocabulary is not None and len(vocabulary) == m:
        return [str(s) for s in vocabulary]
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


class Placeholder(QtWidgets.QLabel):
    """Centered grey text shown where a view has nothing to show yet."""

    def __init__(self, text: str, parent=None) -> None:
        super().__init__(text, parent)
        self.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        pal = self.palette()
        pal.setColor(QtGui.QPalette.ColorRole.WindowText,
                     pal.color(QtGui.QPalette.ColorGroup.Disabled, QtGui.QPalette.ColorRole.WindowText))
        self.setPalette(pal)


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


class FlowLayout(QtWidgets.QLayout):
    """Lays its widgets out left to right and wraps to a new line when the width runs out."""

    def __init__(self, parent=None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: List[QtWidgets.QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item) -> None:  # noqa: N802 (Qt API)
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, i):  # noqa: N802 (Qt API)
        return self._items[i] if 0 <= i < len(self._items) else None

    def takeAt(self, i):  # noqa: N802 (Qt API)
        return self._items.pop(i) if 0 <= i < len(self._items) else None

    def expandingDirections(self):  # noqa: N802 (Qt API)
        return QtCore.Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt API)
        return self._do_layout(QtCore.QRect(0, 0, width, 0), True)

    def setGeometry(self, rect) -> None:  # noqa: N802 (Qt API)
        super().setGeometry(rect)
        self._do_layout(rect, False)

    def sizeHint(self):  # noqa: N802 (Qt API)
        w = sum(it.sizeHint().width() + self._spacing for it in self._items)
        h = max((it.sizeHint().height() for it in self._items), default=0)
        m = self.contentsMargins()
        return QtCore.QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    def minimumSize(self):  # noqa: N802 (Qt API)
        size = QtCore.QSize()
        for it in self._items:
            size = size.expandedTo(it.minimumSize())
        m = self.contentsMargins()
        return size + QtCore.QSize(m.left() + m.right(), m.top() + m.bottom())

    def _do_layout(self, rect, test_only: bool) -> int:
        m = self.contentsMargins()
        r = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_h = r.x(), r.y(), 0
        for it in self._items:
            hint = it.sizeHint()
            if x + hint.width() > r.right() + 1 and line_h > 0:
                x, y, line_h = r.x(), y + line_h + 2, 0
            if not test_only:
                it.setGeometry(QtCore.QRect(QtCore.QPoint(x, y), hint))
            x += hint.width() + self._spacing
            line_h = max(line_h, hint.height())
        return y + line_h - rect.y() + m.bottom()

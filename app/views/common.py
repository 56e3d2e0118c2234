"""Shared pieces of the plotting views: theme, colour maps, label axes, state colours.

Everything here is display code (Qt / pyqtgraph); no model maths.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

__all__ = [
    "theme_colors", "make_graphics_widget", "style_plot", "LabelAxis", "state_colors",
    "symbol_labels", "state_labels", "SEQUENTIAL_CMAP", "DIVERGING_CMAP", "sequential_cmap",
    "diverging_cmap", "first_of", "ThinLogAxis", "fmt_value", "as_single", "tick_strings",
    "use_precise_ticks", "FlowLayout", "marker_icon", "fmt_compact", "HeaderLabel",
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
    """An axis whose ticks are integer positions ``0..k-1`` named by strings (categories).

    A bottom axis labels every category when the names fit side by side; otherwise it
    turns them upright (rotated 90 degrees, reading bottom to top) when one text line fits
    per category; otherwise it shows a regular subset (every ``stride``-th category, with
    the stride as small as the space allows).  Left / right axes label every row that fits
    one text line, else a regular subset.  Names longer than ``max_label_px`` are elided
    ("…").  Hovering over the axis shows the full name of the category under the mouse,
    so a name left out or elided is never lost.
    """

    #: pixels between neighbouring labels
    GAP = 3.0

    def __init__(self, orientation: str, max_label_px: float = 120.0, **kw) -> None:
        super().__init__(orientation, **kw)
        self._labels: List[str] = []
        self._max_px = float(max_label_px)
        self._layout: tuple = ("horizontal", 1)  # (mode, stride) of the last tick computation
        self._drawn: List[tuple] = []  # (index, text, QRectF in axis coordinates, rotated)
        self._rot_height: Optional[int] = None
        self.setAcceptHoverEvents(True)

    # ------------------------------------------------------------------ API
    def set_labels(self, labels: Optional[Sequence[str]]) -> None:
        self._labels = [str(s) for s in labels] if labels is not None else []
        self._widths = None
        self.picture = None
        self._relayout_now()
        self.update()

    def _relayout_now(self) -> None:
        """Choose the label layout (and the room it needs) from the current size and range,
        before painting: a figure exported before the first paint is laid out right too."""
        if not getattr(self, "_labels", None) or self.orientation not in ("bottom", "top"):
            return  # (also called from pyqtgraph's constructor, before ours ran)
        size = self.width()
        if size <= 1:
            return
        lo, hi = min(self.range), max(self.range)
        mode, stride = self._choose(int(math.ceil(max(hi - lo, 1.0))), size)
        self._layout = (mode, stride)
        self._fit_rotated_height(mode)

    def resizeEvent(self, ev=None) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(ev)
        self._relayout_now()

    def linkedViewChanged(self, view, newRange=None) -> None:  # noqa: N802 (pyqtgraph API)
        super().linkedViewChanged(view, newRange)
        self._relayout_now()

    @property
    def labels(self) -> List[str]:
        return list(self._labels)

    def layout_mode(self) -> tuple:
        """``(mode, stride)`` of the last drawing: mode "horizontal" or "rotated", stride 1 = every label."""
        return self._layout

    def drawn_labels(self) -> List[tuple]:
        """What the last paint wrote: ``(index, text, QRectF, rotated)`` per label (axis coordinates)."""
        return list(self._drawn)

    def label_at(self, value: float) -> Optional[str]:
        """The full name of the category at axis value ``value`` (for the hover tooltip)."""
        i = int(round(value))
        return self._labels[i] if 0 <= i < len(self._labels) else None

    # ------------------------------------------------------------- internals
    #: smallest point size category labels shrink to so that every category is named
    MIN_POINT_SIZE = 7.0

    def _fm(self, font: Optional[QtGui.QFont] = None) -> QtGui.QFontMetricsF:
        return QtGui.QFontMetricsF(font or self.style.get("tickFont") or self.font())

    def _base_font(self) -> QtGui.QFont:
        if getattr(self, "_base", None) is None:
            self._base = QtGui.QFont(self.style.get("tickFont") or self.font())
        return self._base

    def _label_widths(self, font: Optional[QtGui.QFont] = None) -> List[float]:
        f = font or self.style.get("tickFont") or self.font()
        key = (f.family(), f.pointSizeF(), tuple(self._labels))
        if getattr(self, "_widths_key", None) != key:
            fm = self._fm(f)
            self._widths_key, self._widths = key, [fm.horizontalAdvance(s) for s in self._labels]
        return self._widths

    def _elide(self, text: str) -> str:
        return self._fm().elidedText(text, QtCore.Qt.TextElideMode.ElideRight, self._max_px)

    def _strides(self, font: QtGui.QFont, per: float) -> tuple:
        fm = self._fm(font)
        widest = min(max(self._label_widths(font) or [0.0]), self._max_px)
        # single letters carry their own side bearings: a small gap keeps them apart
        gap = 1.5 if widest <= 0.8 * fm.height() else self.GAP
        stride_h = max(1, int(math.ceil((widest + gap) / per)))
        stride_r = max(1, int(math.ceil((fm.height() + 1.0) / per)))
        if widest <= 1.5 * fm.height():
            stride_r = stride_h + 1  # one or two letters: turning them upright gains nothing
        return stride_h, stride_r

    def _choose(self, visible: int, size: float) -> tuple:
        """(mode, stride) for ``visible`` categories on ``size`` pixels.

        A bottom axis that cannot name every category at its font tries smaller sizes (down to
        :attr:`MIN_POINT_SIZE`) first: 21 residue letters on a narrow chart are all named in a
        slightly smaller font rather than every second one."""
        per = max(size, 1.0) / max(visible, 1)
        if self.orientation in ("left", "right"):
            return "horizontal", max(1, int(math.ceil((self._fm().height() + 1.0) / per)))
        base = self._base_font()
        font = base
        stride_h, stride_r = self._strides(base, per)
        if min(stride_h, stride_r) > 1 and base.pointSizeF() > self.MIN_POINT_SIZE:
            pt = base.pointSizeF() - 0.5
            while pt >= self.MIN_POINT_SIZE:
                f = QtGui.QFont(base)
                f.setPointSizeF(pt)
                sh, sr = self._strides(f, per)
                if min(sh, sr) == 1:
                    font, stride_h, stride_r = f, sh, sr
                    break
                pt -= 0.5
        cur = self.style.get("tickFont")
        if (cur is None and font is not base) or (cur is not None and cur != font):
            self.setStyle(tickFont=font)
        if stride_h == 1:
            return "horizontal", 1
        return ("rotated", stride_r) if stride_r < stride_h else ("horizontal", stride_h)

    def tickValues(self, minVal, maxVal, size):  # noqa: N802 (pyqtgraph API)
        k = len(self._labels)
        if k == 0:
            return super().tickValues(minVal, maxVal, size)
        minVal, maxVal = min(minVal, maxVal), max(minVal, maxVal)
        lo = max(0, int(math.ceil(minVal - 0.5)))
        hi = min(k - 1, int(math.floor(maxVal + 0.5)))
        if hi < lo:
            return []
        # categories per pixel follow the view range (maxVal - minVal), not only the visible count
        span = max(maxVal - minVal, 1.0)
        mode, stride = self._choose(int(math.ceil(span)), size)
        self._layout = (mode, stride)
        start = lo - (lo % stride)
        vals = [float(v) for v in range(start, hi + 1, stride) if v >= lo]
        self._fit_rotated_height(mode)
        return [(float(stride), vals)]

    def _fit_rotated_height(self, mode: str) -> None:
        """Room beneath a bottom axis for upright labels (only re-set when it changes)."""
        if self.orientation not in ("bottom", "top"):
            return
        if mode == "rotated":
            text_h = min(max(self._label_widths() or [0.0]), self._max_px)
            h = int(math.ceil(text_h + max(0, self.style["tickLength"]) + self.style["tickTextOffset"][1] + 4))
            if self.label.isVisible():
                h += int(self.label.boundingRect().height() * 0.8)
        else:
            h = None
        if h != self._rot_height:
            self._rot_height = h
            self.setHeight(h)

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph API)
        if not self._labels:
            return super().tickStrings(values, scale, spacing)
        out = []
        for v in values:
            i = int(round(v))
            out.append(self._elide(self._labels[i]) if 0 <= i < len(self._labels) else "")
        return out

    def generateDrawSpecs(self, p):  # noqa: N802 (pyqtgraph API)
        specs = super().generateDrawSpecs(p)
        if specs is None or not self._labels:
            self._drawn = []
            return specs
        axis_spec, tick_specs, text_specs = specs
        mode = self._layout[0]
        if mode != "rotated" or self.orientation not in ("bottom", "top"):
            self._drawn = [(self._index_of_rect(r), t, QtCore.QRectF(r), False) for r, _f, t in text_specs]
            return specs
        # upright labels: one spec per tick, the rectangle is the rotated text's box
        fm = self._fm()
        gap = self.style["tickTextOffset"][1]
        ends = [max(a.y(), b.y()) for _pen, a, b in tick_specs] or [0.0]
        starts = [min(a.y(), b.y()) for _pen, a, b in tick_specs] or [0.0]
        top = max(ends) + gap  # beneath the ticks (bottom axis)
        new_specs, drawn = [], []
        for _pen, p1, _p2 in tick_specs:
            x = p1.x()
            i = self._index_at_x(x)
            if i is None:
                continue
            text = self._elide(self._labels[i])
            w, h = fm.horizontalAdvance(text), fm.height()
            if self.orientation == "bottom":
                rect = QtCore.QRectF(x - h / 2.0, top, h, w)
            else:
                rect = QtCore.QRectF(x - h / 2.0, min(starts) - gap - w, h, w)
            new_specs.append((rect, None, text))
            drawn.append((i, self._labels[i], rect, True))
        self._drawn = drawn
        return axis_spec, tick_specs, new_specs

    def _index_at_x(self, x: float) -> Optional[int]:
        vb = self.linkedView()
        if vb is None:
            return None
        pt = vb.mapSceneToView(self.mapToScene(QtCore.QPointF(x, 0)))
        i = int(round(pt.x()))
        return i if 0 <= i < len(self._labels) else None

    def _index_of_rect(self, rect: QtCore.QRectF) -> Optional[int]:
        vb = self.linkedView()
        if vb is None:
            return None
        c = self.mapToScene(rect.center())
        pt = vb.mapSceneToView(c)
        v = pt.x() if self.orientation in ("bottom", "top") else pt.y()
        i = int(round(v))
        return i if 0 <= i < len(self._labels) else None

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs):  # noqa: N802 (pyqtgraph API)
        if not any(flags is None for _r, flags, _t in textSpecs):
            return super().drawPicture(p, axisSpec, tickSpecs, textSpecs)
        super().drawPicture(p, axisSpec, tickSpecs, [])
        if self.style["tickFont"] is not None:
            p.setFont(self.style["tickFont"])
        p.setPen(self.textPen())
        p.setClipping(False)  # the first and last label may reach half a line past the axis ends
        for rect, _flags, text in textSpecs:
            p.save()
            # rotate about the box's bottom-left corner: text runs upwards from the axis
            p.translate(rect.left(), rect.bottom() if self.orientation == "bottom" else rect.bottom())
            p.rotate(-90)
            align = QtCore.Qt.AlignmentFlag.AlignRight if self.orientation == "bottom" else \
                QtCore.Qt.AlignmentFlag.AlignLeft
            p.drawText(QtCore.QRectF(0, 0, rect.height(), rect.width()),
                       int(align | QtCore.Qt.AlignmentFlag.AlignVCenter), text)
            p.restore()

    def hoverMoveEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        vb = self.linkedView()
        text = None
        if vb is not None and self._labels:
            pt = vb.mapSceneToView(self.mapToScene(ev.pos()))
            text = self.label_at(pt.x() if self.orientation in ("bottom", "top") else pt.y())
        self.setToolTip(text or "")


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
    decades, when the axis is too short for all of them.  Well inside one decade, where
    fewer than two such values are in view, the ticks are evenly spaced values instead.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._linear_labels: Dict[float, str] = {}  # log10 tick value -> label, of the even ticks

    def logTickValues(self, minVal, maxVal, size, stdTicks):  # noqa: N802 (pyqtgraph API)
        levels = super().logTickValues(minVal, maxVal, size, stdTicks)
        room = max(2, int(size // 22))
        out = []
        for spacing, values in levels:
            values = list(values)
            if spacing is None and len(values) > room:
                mant = [round(10 ** (v - math.floor(v + 1e-9)), 6) for v in values]
                nice = [v for v, m in zip(values, mant) if m in (1.0, 2.0, 5.0)]
                if len(nice) > room:
                    nice = [v for v, m in zip(values, mant) if m == 1.0] or nice[:1]
                values = nice
            out.append((spacing, values))
        # a value on two levels (a decade is also a "1" of the 1-2-5 level) is drawn once, else its
        # label is painted twice, slightly offset, and reads bold and blurred
        seen: set = set()
        for i, (spacing, values) in enumerate(out):
            keep = [v for v in values if round(v, 9) not in seen]
            seen.update(round(v, 9) for v in values)
            out[i] = (spacing, keep)
        self._linear_labels = {}
        if sum(minVal <= v <= maxVal for _, vals in out for v in vals) < 2:
            # well inside one decade, fewer than two decade / 1-2-5 values in view (e.g. a MAD of
            # 0.0021 .. 0.0029): evenly spaced values instead, 2 to 6 of them, labelled as apart
            lin = self._linear_ticks(10.0 ** minVal, 10.0 ** maxVal, min(room, 6))
            if len(lin) >= 2:
                logs = [math.log10(v) for v in lin]
                spacing = lin[1] - lin[0]
                self._linear_labels = {round(lv, 9): t for lv, t in zip(logs, tick_strings(lin, spacing))}
                return [(None, logs)]
        if not any(v for _, v in out):
            # no value to label at all: one tick in the middle, not a bare axis
            mid = 0.5 * (minVal + maxVal)
            out = [(None, [mid])]
        return out

    @staticmethod
    def _linear_ticks(lo: float, hi: float, most: int) -> List[float]:
        """Multiples of the largest 1-2-5 step that puts 2 to ``most`` values in ``[lo, hi]``."""
        if not (0 < lo < hi) or not math.isfinite(hi):
            return []
        top = math.floor(math.log10(hi - lo))
        for e in range(top, top - 4, -1):
            for mult in (5, 2, 1):
                step = mult * 10.0 ** e
                first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
                if 2 <= last - first + 1 <= max(2, most):
                    return [k * step for k in range(first, last + 1)]
        return []

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph API)
        if self.logMode:
            known = self._linear_labels
            return [known.get(round(float(v), 9), f"{10.0 ** float(v):.3g}") for v in values]
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


class HeaderLabel(QtWidgets.QWidget):
    """A one-to-``max_lines`` line header that never clips.

    The text is broken into lines at its separators (``"  ·  "``, ``"  —  "``, then
    spaces); when it needs more than ``max_lines`` lines the last one is elided ("…")
    and the whole text is in the tooltip.  Its height is fixed (``max_lines`` lines), so
    a header that changes with every progress event never re-lays out the views beneath
    it, and its width never sets the page's minimum width.  It paints itself, so an
    exported figure shows exactly what is on screen.
    """

    SEPARATORS = ("  —  ", "  ·  ")

    def __init__(self, text: str = "", max_lines: int = 2, bold: bool = True, parent=None) -> None:
        super().__init__(parent)
        self._text = ""
        self._lines: List[str] = []
        self._elided = False
        self._tip_extra = ""
        self._max_lines = max(1, int(max_lines))
        if bold:
            f = self.font()
            f.setBold(True)
            self.setFont(f)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(10)
        self._fix_height()
        self.setText(text)

    # ------------------------------------------------------------------ API
    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 (QLabel-like API)
        text = str(text)
        if text == self._text:
            return
        self._text = text
        self._relayout()
        self.update()

    def set_error_tip(self, text: str) -> None:
        """Extra text for the tooltip (e.g. a view's error), shown below the full header."""
        self._tip_extra = str(text or "")
        self._update_tip()

    def visible_lines(self) -> List[str]:
        """The lines drawn at the current width."""
        return list(self._lines)

    def is_elided(self) -> bool:
        """Whether some of the text is left out on screen (it is then in the tooltip)."""
        return self._elided

    # ------------------------------------------------------------- internals
    def _fix_height(self) -> None:
        fm = QtGui.QFontMetrics(self.font())
        self.setFixedHeight(fm.lineSpacing() * self._max_lines + 4)

    def changeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        if ev.type() == QtCore.QEvent.Type.FontChange:
            self._fix_height()
            self._relayout()
        super().changeEvent(ev)

    def resizeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(ev)
        self._relayout()

    def _tokens(self) -> List[str]:
        """Pieces the text may break between (each keeps its leading separator)."""
        parts = [self._text]
        for sep in self.SEPARATORS:
            out = []
            for p in parts:
                bits = p.split(sep)
                out.extend([bits[0]] + [sep + b for b in bits[1:]])
            parts = out
        return [p for p in parts if p]

    def _relayout(self) -> None:
        fm = QtGui.QFontMetricsF(self.font())
        width = max(10.0, float(self.width() - 4))
        lines: List[str] = []
        cur = ""
        for tok in self._tokens():
            cand = cur + tok
            if not cur or fm.horizontalAdvance(cand) <= width:
                cur = cand
                continue
            lines.append(cur)
            cur = tok.lstrip(" ·—") if tok.startswith(self.SEPARATORS) else tok
        if cur:
            lines.append(cur)
        # a piece wider than the line breaks at spaces
        wrapped: List[str] = []
        for line in lines:
            while fm.horizontalAdvance(line) > width and " " in line.strip():
                words = line.split(" ")
                head = ""
                for i in range(len(words)):
                    cand = " ".join(words[:i + 1])
                    if fm.horizontalAdvance(cand) > width and head:
                        break
                    head = cand
                if not head or head == line:
                    break
                wrapped.append(head.rstrip())
                line = line[len(head):].lstrip()
            wrapped.append(line)
        elided = len(wrapped) > self._max_lines
        if elided:
            rest = " ".join(wrapped[self._max_lines - 1:])
            wrapped = wrapped[:self._max_lines - 1] + [rest]
        out = []
        for line in wrapped:
            short = fm.elidedText(line, QtCore.Qt.TextElideMode.ElideRight, width)
            elided = elided or short != line
            out.append(short)
        self._lines, self._elided = out, elided
        self._update_tip()

    def _update_tip(self) -> None:
        tip = self._text if self._elided else ""
        if self._tip_extra:
            tip = f"{tip}\n{self._tip_extra}" if tip else self._tip_extra
        self.setToolTip(tip)

    def paintEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        p = QtGui.QPainter(self)
        p.setPen(self.palette().color(QtGui.QPalette.ColorRole.WindowText))
        p.setFont(self.font())
        fm = QtGui.QFontMetrics(self.font())
        y = 2 + fm.ascent()
        for line in self._lines:
            p.drawText(2, y, line)
            y += fm.lineSpacing()
        p.end()

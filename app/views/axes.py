"""Plot axes of the views: category axes (:class:`LabelAxis`), numeric axes whose labels never run
together (:class:`GappedAxis`, :func:`space_vertical_labels`) and log axes that never crowd
(:class:`ThinLogAxis`, whose labels also stand apart: :func:`spaced_levels`).

Built on the formatting helpers of :mod:`app.views.theme`; display code, no model maths.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from .theme import log_tick_strings, tick_strings

__all__ = ["LabelAxis", "GappedAxis", "space_vertical_labels", "spaced_levels", "labels_crowded", "ThinLogAxis"]

class LabelAxis(pg.AxisItem):
    """An axis whose ticks are integer positions ``0..k-1`` named by strings (categories).

    A bottom axis labels every category when the names fit side by side; otherwise it
    turns them upright (rotated 90 degrees, reading bottom to top) when one text line fits
    per category; otherwise it shows a regular subset (every ``stride``-th category, with
    the stride as small as the space allows).  Left / right axes label every row that fits
    one text line, else a regular subset.  Names longer than ``max_label_px`` are elided
    ("…").  Hovering over the axis shows the full name of the category under the mouse,
    so a name left out or elided is never lost.

    Upright labels get the height of the longest label shown so far (since :meth:`set_labels` or
    :meth:`refit`), not of the longest in the whole set: a word chart showing its most frequent,
    short words keeps its bars tall, and panning to longer words grows the axis (it does not
    shrink back while the user pans, so the chart does not jump).
    """

    #: pixels between neighbouring labels
    GAP = 3.0

    def __init__(self, orientation: str, max_label_px: float = 120.0, **kw) -> None:
        super().__init__(orientation, **kw)
        self._labels: List[str] = []
        self._by_length: Optional[List[str]] = None     # the distinct labels, longest first (_widest)
        self._widest_by_font: Dict[tuple, float] = {}
        self._max_px = float(max_label_px)
        self._layout: tuple = ("horizontal", 1)  # (mode, stride) of the last tick computation
        self._drawn: List[tuple] = []  # (index, text, QRectF in axis coordinates, rotated)
        self._rot_height: Optional[int] = None
        #: (font key, widest upright label shown since set_labels / refit, capped at max_label_px)
        self._shown_widest: Optional[tuple] = None
        self.setAcceptHoverEvents(True)

    # ------------------------------------------------------------------ API
    def set_labels(self, labels: Optional[Sequence[str]]) -> None:
        self._labels = [str(s) for s in labels] if labels is not None else []
        self._by_length, self._widest_by_font = None, {}    # measured again, once per font (_widest)
        self.refit()

    def refit(self) -> None:
        """Fit the room for upright labels to the labels in view now (it only grows while the view
        pans and zooms: a chart's Reset calls this to shrink it back)."""
        self._shown_widest = None
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
        self._fit_rotated_height(mode, self._shown(lo, hi, stride))

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

    def _widest(self, font: Optional[QtGui.QFont] = None) -> float:
        """The widest label's width at ``font``, at most ``max_label_px`` (longer names are elided),
        found once per font and set of labels.  Choosing a layout tries several point sizes on
        every resize and range change; measuring all 11,968 words of a vocabulary at five sizes took
        0.13 s of the data panel's first drawing.  The labels are measured longest first, and the
        search stops as soon as no shorter one can be wider (``len`` times the widest character used
        bounds a label's width) or the widest reached the cap: for a vocabulary, a handful of measurements."""
        f = font or self.style.get("tickFont") or self.font()
        if self._by_length is None:     # (once per set_labels: comparing 30,000 names each time took 6 ms)
            self._by_length = sorted(set(self._labels), key=len, reverse=True)
            self._chars = set("".join(self._by_length))
        key = (f.family(), f.pointSizeF(), f.weight(), f.italic(), f.stretch())
        widest = self._widest_by_font.get(key)
        if widest is None:
            fm = self._fm(f)
            # the widest character the labels use bounds a label's width per character (the font's
            # maxWidth, of some glyph no label has, let a 30,000-word vocabulary be measured almost whole)
            per_char = max([fm.horizontalAdvance(c) for c in self._chars] + [1e-9])
            widest = 0.0
            for text in self._by_length:
                if widest >= self._max_px or len(text) * per_char <= widest:
                    break
                widest = max(widest, fm.horizontalAdvance(text))
            widest = self._widest_by_font[key] = min(widest, self._max_px)
        return widest

    def _elide(self, text: str) -> str:
        return self._fm().elidedText(text, QtCore.Qt.TextElideMode.ElideRight, self._max_px)

    def _strides(self, font: QtGui.QFont, per: float) -> tuple:
        fm = self._fm(font)
        widest = self._widest(font)
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
        if not self._labels:
            return super().tickValues(minVal, maxVal, size)
        minVal, maxVal = min(minVal, maxVal), max(minVal, maxVal)
        # categories per pixel follow the view range (maxVal - minVal), not only the visible count
        span = max(maxVal - minVal, 1.0)
        mode, stride = self._choose(int(math.ceil(span)), size)
        self._layout = (mode, stride)
        vals = self._shown(minVal, maxVal, stride)
        self._fit_rotated_height(mode, vals)
        return [(float(stride), [float(v) for v in vals])] if vals else []

    def _shown(self, lo_val: float, hi_val: float, stride: int) -> List[int]:
        """The categories labelled in the view ``lo_val..hi_val``: every ``stride``-th."""
        lo = max(0, int(math.ceil(lo_val - 0.5)))
        hi = min(len(self._labels) - 1, int(math.floor(hi_val + 0.5)))
        start = lo - (lo % stride)
        return [v for v in range(start, hi + 1, stride) if v >= lo]

    def _widest_shown(self, shown: Sequence[int]) -> float:
        """The widest upright label shown since :meth:`refit`, ``shown`` included (at most
        ``max_label_px``), at the tick font (a new font starts the measure again)."""
        f = self.style.get("tickFont") or self.font()
        key = (f.family(), f.pointSizeF(), f.weight(), f.italic(), f.stretch())
        fm = self._fm(f)
        widest = max([fm.horizontalAdvance(self._labels[i]) for i in shown] + [0.0])
        if self._shown_widest is not None and self._shown_widest[0] == key:
            widest = max(widest, self._shown_widest[1])
        widest = min(widest, self._max_px)
        self._shown_widest = (key, widest)
        return widest

    def _fit_rotated_height(self, mode: str, shown: Sequence[int]) -> None:
        """Room beneath a bottom axis for the upright labels ``shown`` (only re-set when it changes)."""
        if self.orientation not in ("bottom", "top"):
            return
        if mode == "rotated":
            text_h = self._widest_shown(shown)
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


class GappedAxis(pg.AxisItem):
    """A numeric axis whose horizontal tick labels keep at least a digit's width between them.

    pyqtgraph labels a finer tick level while its labels fill up to 60 % of the axis, and on a narrow
    plot "-4 -3 -2 -1" then ran together into "-4-3-2-1" (the dashboard's embeddings, PC 1 from -4.5
    to 8 in 240 px).  Where two neighbouring labels would be closer than a digit, the finest labelled
    level loses its labels (its ticks stay), down to the coarsest level, which pyqtgraph spaces
    widely.  Vertical axes are left as pyqtgraph draws them.
    """

    def generateDrawSpecs(self, p):  # noqa: N802 (pyqtgraph API)
        if self.orientation not in ("bottom", "top"):
            return super().generateDrawSpecs(p)
        levels = self.style["maxTextLevel"]
        font = self.style["tickFont"] or p.font()
        gap = QtGui.QFontMetricsF(font).horizontalAdvance("0")
        try:
            # the levels whose labels keep the gap, judged from the labels' widths (one drawing, not
            # one per level: a drawing costs 1-2 ms, and the curves' axes are drawn with every update)
            keep = self.style["maxTextLevel"] = self._levels_apart(font, gap, levels)
            specs = super().generateDrawSpecs(p)
            while specs is not None and keep > 0 and labels_crowded([r for r, _f, _t in specs[2]], gap):
                keep -= 1        # (the estimate was short: pyqtgraph's boxes are what is drawn)
                self.style["maxTextLevel"] = keep
                specs = super().generateDrawSpecs(p)
        finally:
            self.style["maxTextLevel"] = levels
        return specs

    def _levels_apart(self, font, gap: float, levels: int) -> int:
        """The finest tick level up to ``levels`` whose labels, with the coarser ones', stand ``gap``
        apart along the axis (0: the coarsest level alone)."""
        lo, hi = self.range
        length = self.geometry().width()
        if not (hi > lo) or length <= 0:
            return levels
        fm = QtGui.QFontMetricsF(font)
        scale = self.scale * self.autoSIPrefixScale
        spans: list = []
        keep = 0
        for i, (spacing, values) in enumerate(self.tickValues(lo, hi, length)[:levels + 1]):
            for v, text in zip(values, self.tickStrings(values, scale, spacing)):
                x, half = (v - lo) / (hi - lo) * length, fm.horizontalAdvance(text) / 2.0
                spans.append(QtCore.QRectF(x - half, 0.0, 2.0 * half, 1.0))
            if i > 0 and labels_crowded(spans, gap):
                break
            keep = i
        return keep


#: A vertical axis' tick labels stand at least this many text lines apart, centre to centre.
LABEL_LINES_APART = 1.25


def space_vertical_labels(axis: pg.AxisItem) -> pg.AxisItem:
    """Give an existing vertical axis (a ColorBarItem's) labels at least :data:`LABEL_LINES_APART`
    lines apart: pyqtgraph labels at least two intervals whatever the axis' length, and a colour bar
    45 px tall read "1.0 0.8 0.6 0.4 0.2" on top of each other (:func:`spaced_levels`)."""
    own = axis.tickSpacing

    def spacing(minVal, maxVal, size):  # noqa: N803 (pyqtgraph API)
        return spaced_levels(axis, own(minVal, maxVal, size), minVal, maxVal, size)

    axis.tickSpacing = spacing
    axis.picture = None
    return axis


def spaced_levels(axis: pg.AxisItem, levels, minVal: float, maxVal: float, size: float):  # noqa: N803
    """pyqtgraph's tick ``levels`` of a vertical axis ``size`` px long, or, where its labels would stand
    less than :data:`LABEL_LINES_APART` lines apart, one level of the next wider 1-2-5 step (labels
    only, no finer level) as long as two values stay in view (one label alone gives no scale): first
    its multiples, else the multiples shifted by the narrower step (0.55 and 0.65 on 0.51 .. 0.66,
    where 0.1 alone shows only 0.6). A long axis keeps pyqtgraph's levels."""
    if not levels or maxVal <= minVal:
        return levels
    line = QtGui.QFontMetricsF(axis.style["tickFont"] or axis.font()).height()

    def in_view(step: float, offset: float) -> int:
        return math.floor((maxVal - offset) / step + 1e-9) - math.ceil((minVal - offset) / step - 1e-9) + 1

    step, offset = levels[0][0], 0.0
    while step * size / (maxVal - minVal) < LABEL_LINES_APART * line:
        mant = round(step / 10 ** math.floor(math.log10(step) + 1e-9), 6)
        wider = step * (2.5 if mant == 2.0 else 2.0)     # 1 -> 2 -> 5 -> 10
        shifts = [k * step for k in range(int(round(wider / step + 0.5)))]   # 0, then the narrower step's
        shift = next((sh for sh in shifts if in_view(wider, sh) >= 2), None)
        if shift is None:
            break
        step, offset = wider, shift
    return levels if step == levels[0][0] else [(step, offset)]


def labels_crowded(rects, gap: float) -> bool:
    """Whether two of these side-by-side label boxes are less than ``gap`` apart (or overlap)."""
    spans = sorted((r.left(), r.right()) for r in rects)
    return any(nxt[0] - cur[1] < gap for cur, nxt in zip(spans, spans[1:]))


class ThinLogAxis(pg.AxisItem):
    """A value axis whose ticks never crowd.

    Its labels stand apart (:meth:`tickSpacing`). In log mode, below one decade pyqtgraph puts all of
    2..9 x 10^k on one tick level, which is always drawn and overlaps on short plots; here such levels
    keep 1-2-5 values, or only the decades, when the axis is too short for all of them.  Well inside
    one decade, where fewer than two such values are in view, the ticks are evenly spaced values instead.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._linear_labels: Dict[float, str] = {}  # log10 tick value -> label, of the even ticks

    def tickSpacing(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph API)
        """A vertical axis' labels stand apart (:func:`spaced_levels`; in log mode its levels are
        decades): pyqtgraph always labels its first level, and a short NLL plot read "0.60 0.58 0.56
        0.54 0.52", a short loss plot "1e0 1e-2 1e-4 1e-6 1e-8", each label touching the next."""
        levels = super().tickSpacing(minVal, maxVal, size)
        if self.orientation not in ("left", "right"):
            return levels
        return spaced_levels(self, levels, minVal, maxVal, size)

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
            plain = log_tick_strings([10.0 ** float(v) for v in values])
            return [known.get(round(float(v), 9), text) for v, text in zip(values, plain)]
        return tick_strings([v * scale for v in values], spacing * scale)

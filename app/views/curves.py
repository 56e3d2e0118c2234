"""Training curves: loss, train / test normalised NLL and co-occurrence MAD against the step.

Three stacked plots share the x axis (step or EM / Baum-Welch iteration).  Points come
from progress events (``add_event``) or from a model's history (``set_history``); the
plots use ``setData`` with clip-to-view and automatic downsampling, so 10,000-step
histories stay cheap to redraw.

The middle plot prefers the normalised NLL per token: ``metrics["train_nll"]`` /
``metrics["test_nll"]`` as the core's trainers put them in the stream; where an event only
carries the total log-likelihood (the co-occurrence fit's final ``test_ll``, the dense EM's
``test_ll``) it is divided by the token count of that split, known from
:meth:`TrainingCurves.set_token_counts`, from ``metrics["n_tokens"]`` / ``["test_tokens"]``, or
(for the training split) from an event carrying both ``train_ll`` and ``train_nll``.  Only
when no normalised value can be had does the plot show ``-train_ll`` / ``-test_ll`` and say
so in its title.

Ranges are set by the view (not pyqtgraph's per-paint auto range): the x axis spans the
stream's ``total`` steps when known, y ranges change only when the data leave them or
shrink well inside them, so a live update repaints the plots once without re-laying out
the axes.  Tick labels have enough digits to differ on narrow ranges.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from ..jobrows import INFINITE_TEST_NLL
from .theme import label_axis_text, make_graphics_widget, style_plot, theme_colors
from .axes import GappedAxis, ThinLogAxis

__all__ = ["TrainingCurves", "SERIES"]

#: series name -> (plot, legend text, colour, dashed)
SERIES = {
    "loss": ("loss", "loss", "#1f77b4", False),
    "train_nll": ("nll", "train", "#2ca02c", False),
    "test_nll": ("nll", "test", "#d62728", True),
    "mad": ("mad", "MAD", "#9467bd", False),
}


#: Series with at most this many points also get markers (a single test evaluation shows).
SPARSE_POINTS = 30

#: The x axis of a running job: its planned steps once its points cover this share of them (or when it plans
#: at most :data:`SMALL_TOTAL` steps); before that the points with room for GROW_ROOM times their span (a job
#: cancelled at 18 of 5000 steps drew its curves as a vertical line at x = 0).  An ended stream: its points.
TOTAL_SHARE = 0.25
SMALL_TOTAL = 100
GROW_ROOM = 4.0

#: phase of the stream -> (loss plot title, axis label, tooltip): the loss is named for what it is
LOSS_KINDS = {
    "em": ("EM objective −Q per token", "−Q / token",
           "DenseHMM-EM minimises −Q in each M-step: minus the expected complete-data log-likelihood "
           "under the posteriors of the last E-step, per token.  −Q = NLL + (posterior cross-entropy) "
           "≥ NLL, and each E-step changes the posteriors, so −Q need not fall when the NLL falls: "
           "judge the fit by the NLL plot.  The initial model has no −Q (no E-step yet)."),
    "cooc": ("Co-occurrence loss", "loss",
             "The direct fit's objective: the squared difference between the data's co-occurrence "
             "matrix Ω (adjacent symbol pairs) and the model's B^T diag(π) A B.  It does not compute "
             "the likelihood while it trains."),
    "baum-welch": ("Training NLL per token (Baum-Welch)", "NLL / token",
                   "Baum-Welch maximises the likelihood itself: its loss is the training NLL per token."),
}
DEFAULT_LOSS = ("Training loss", "loss", "The objective the trainer minimises (see the model's documentation).")


def _count(v) -> Optional[float]:
    """A positive token count or ``None``."""
    f = _num(v)
    return None if np.isnan(f) or f <= 0 else f


def _num(v) -> float:
    if v is None:
        return math.nan
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


def _is_plus_inf(v) -> bool:
    try:
        return v is not None and float(v) == math.inf
    except (TypeError, ValueError):
        return False


#: Pixels a tick label of the x axis may reach past the axis' ends (its first and last steps).
TICK_OVERHANG_PX = 12

#: A legend whose entries, stacked, would be taller than this share of its plot puts them in one row.
LEGEND_MAX_HEIGHT = 0.4

#: At most this share of a plot's height is kept free above the curves for its legend (when every
#: corner of the plot is crossed by a curve).
LEGEND_MAX_ROOM = 0.5

#: Where a plot's legend may sit: ``(item anchor, parent anchor, offset)`` per corner, the first preferred.
LEGEND_CORNERS = {"top-right": ((1, 0), (1, 0), (-6, 6)), "top-left": ((0, 0), (0, 0), (6, 6)),
                  "bottom-left": ((0, 1), (0, 1), (6, -6)), "bottom-right": ((1, 1), (1, 1), (-6, -6))}


def _y_pad(lo: float, hi: float, log: bool) -> float:
    """Room below and above values from ``lo`` to ``hi`` in a fitted y range (log: in decades)."""
    if hi - lo <= 0:
        return 0.5 if log else max(abs(lo) * 0.05, 1e-9)
    return 0.08 * (hi - lo)


class TrainingCurves(QtWidgets.QWidget):
    """Loss, normalised NLL (train and test) and MAD against step."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None, orientation: str = "vertical") -> None:
        super().__init__(parent)
        if orientation not in ("vertical", "horizontal"):
            raise ValueError("orientation must be 'vertical' (stacked) or 'horizontal' (side by side)")
        self._steps: List[float] = []
        self._values: Dict[str, List[float]] = {k: [] for k in SERIES}
        self._nll_kind = "nll"  # "nll" (normalised) or "ll" (-total log-likelihood)
        self._shown = None      # (nll kind, log loss, log mad) last applied to the plots
        self._tokens_set = {"train": None, "test": None}  # from set_token_counts
        self._tokens = dict(self._tokens_set)              # plus what the stream told
        self._total: Optional[float] = None                # steps of the stream, for the x range
        self._phase: Optional[str] = None                  # "em", "cooc", "baum-welch" (names the loss)
        self._mad_note: Optional[str] = None               # why a stream has no MAD (from its events)
        self._test_impossible = False                      # a test NLL of +inf was reported
        self._ended = False                                # the stream ended (its last event, a history)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.graphics = make_graphics_widget(self)
        # room on the right for the last step's label, which may reach TICK_OVERHANG_PX past its axis
        # (the right-hand plot's "1500" was cut to "150" at the widget's edge)
        left, top, right, bottom = self.graphics.ci.layout.getContentsMargins()
        self.graphics.ci.setContentsMargins(left, top, max(right, TICK_OVERHANG_PX + 4), bottom)
        lay.addWidget(self.graphics)
        _, fg = theme_colors(self)
        self.plots: Dict[str, pg.PlotItem] = {}
        titles = {"loss": ("Training loss", "loss"),
                  "nll": ("Normalised NLL (train, test)", "NLL per token"),
                  "mad": ("Co-occurrence MAD", "MAD")}
        for i, (key, (title, ylab)) in enumerate(titles.items()):
            row, col = (i, 0) if orientation == "vertical" else (0, i)
            p = self.graphics.addPlot(row=row, col=col, axisItems={"left": ThinLogAxis("left"),
                                                                   "bottom": GappedAxis("bottom")})
            style_plot(p, self, title)
            label_axis_text(p, "left", ylab, self)
            # no grid: its alpha-blended lines double the repaint cost of a live plot
            p.setClipToView(True)
            p.setDownsampling(auto=True, mode="peak")
            p.disableAutoRange()  # ranges are set in _fit_ranges: no per-paint auto range
            p.getAxis("left").setWidth(72)
            p.getAxis("left").enableAutoSIPrefix(False)
            # fewer tick labels than pyqtgraph's default: short plots (log axes above all) stay readable
            p.getAxis("left").setStyle(textFillLimits=[(0, 0.45), (2, 0.3), (4, 0.2)])
            # the first and last step's tick labels may reach past the axis' ends (pyqtgraph hid them
            # in a narrow plot: the MAD plot's x axis read 1 ... 7 for steps 0 ... 8)
            p.getAxis("bottom").setStyle(hideOverlappingLabels=TICK_OVERHANG_PX)
            p.addLegend(offset=(-6, 6), labelTextColor=fg, labelTextSize="8pt")
            p.legend.layout.setContentsMargins(2, 0, 2, 0)  # pyqtgraph's 9 px around made one row 40 px tall
            p.legend._corner = "top-right"
            # a note inside the plot when it has nothing (or one point) to show, saying why
            note = pg.TextItem("", color=fg, anchor=(0.5, 0.5))
            small = note.textItem.font()
            small.setPointSizeF(max(7.0, small.pointSizeF() - 1.5))  # fits a short plot in two lines
            note.setFont(small)
            note.setParentItem(p.vb)
            note.setZValue(20)
            p.vb.sigResized.connect(lambda _vb=None, k=key: self._resized(k))
            p._note = note
            p._legend_room = 0.0   # share of the plot's height kept free above the curves for the legend
            self.plots[key] = p
        # one x range for all three: the loss plot leads (a single test point must not zoom it)
        self._orientation = orientation
        if orientation == "vertical":
            # stacked: one linked x axis (zooming one zooms all).  Side by side pyqtgraph's x link
            # would offset the ranges by the plots' screen positions: _fit_ranges sets each instead.
            for key in ("nll", "mad"):
                self.plots[key].setXLink(self.plots["loss"])
        else:
            for col in range(3):
                self.graphics.ci.layout.setColumnStretchFactor(col, 1)
                self.graphics.ci.layout.setColumnPreferredWidth(col, 10)
        for key in (("mad",) if orientation == "vertical" else tuple(self.plots)):
            label_axis_text(self.plots[key], "bottom", "step / iteration", self)
        self.curves: Dict[str, pg.PlotDataItem] = {}
        for key, (plot, name, color, dashed) in SERIES.items():
            pen = pg.mkPen(color, width=2, style=pg.QtCore.Qt.PenStyle.DashLine if dashed else
                           pg.QtCore.Qt.PenStyle.SolidLine)
            self.curves[key] = self.plots[plot].plot([], [], pen=pen, name=name)
            self.curves[key]._in_legend = True
        self._set_loss_axis()
        self.setMinimumSize(260, 300 if orientation == "vertical" else 130)

    # ------------------------------------------------------------------ API
    def clear(self) -> None:
        self._steps = []
        self._values = {k: [] for k in SERIES}
        self._nll_kind = "nll"
        self._tokens = dict(self._tokens_set)
        self._total = None
        self._phase = None
        self._mad_note = None
        self._test_impossible = False
        self._ended = False
        for c in self.curves.values():
            c.setData([], [])
        self._drop_legend_room()
        self._shown = None
        self._set_loss_axis()
        self._set_nll_axis()
        self._sync_legend()
        self._update_notes()
        self._fit_ranges()

    def set_token_counts(self, train: Optional[int] = None, test: Optional[int] = None) -> None:
        """Token counts of the training and test split, to normalise totals (``-ll / tokens``).

        Events that carry a normalised NLL (``metrics["train_nll"]`` / ``["test_nll"]``) are
        shown as they are; these counts only turn a bare total log-likelihood into NLL per token.
        """
        self._tokens_set = {"train": _count(train), "test": _count(test)}
        self._tokens.update({k: v for k, v in self._tokens_set.items() if v is not None})

    def token_counts(self):
        """``(train, test)`` token counts the view normalises with (``None`` where unknown)."""
        return self._tokens["train"], self._tokens["test"]

    def add_event(self, ev, redraw: bool = True) -> None:
        """Append the point of one :class:`~densehmm_core.events.ProgressEvent`.

        ``redraw=False`` only records it (a hidden view); :meth:`redraw` draws later.
        """
        if getattr(ev, "total", None):
            self._total = float(ev.total)
        self._note_phase(getattr(ev, "phase", None), ev.metrics or {})
        self._append(ev.step, ev.loss, ev.train_ll, ev.test_ll, ev.metrics or {})
        self._ended = bool(getattr(ev, "done", False))
        self._dirty = not redraw
        if redraw:
            self._redraw()

    def set_total(self, total: Optional[float]) -> None:
        """The stream's number of steps, known before its first point (a job in its start): the x axis
        spans it from the first frame."""
        if total and not self._steps and self._total != float(total):
            self._total = float(total)
            xs = (0.0, float(total))
            lead = self.plots["loss"]
            lead._fitted_x = xs
            for p in ([lead] if self._orientation == "vertical" else self.plots.values()):
                p.setXRange(xs[0], xs[1], padding=0.02)

    def end_stream(self) -> None:
        """The job ended without a final event of its own (it diverged, failed or was cancelled): the x axis
        fits the points (no longer the planned steps)."""
        if not self._ended:
            self._ended = True
            if self._steps:
                self._fit_ranges()
                self._update_notes()

    def redraw(self) -> None:
        """Draw points recorded with ``add_event(..., redraw=False)`` (no-op when up to date)."""
        if getattr(self, "_dirty", False):
            self._dirty = False
            self._redraw()

    def set_history(self, history: Optional[List[dict]]) -> None:
        """Replace the curves by a model's ``history_`` (step, loss, train_ll, test_ll, metrics)."""
        self._steps = []
        self._values = {k: [] for k in SERIES}
        self._nll_kind = "nll"
        for rec in history or []:
            metrics = rec.get("metrics") if isinstance(rec.get("metrics"), dict) else rec
            self._note_phase(rec.get("phase"), metrics)
            self._append(rec.get("step"), rec.get("loss"), rec.get("train_ll"), rec.get("test_ll"), metrics)
        # a history ends at its last step (records carry no total): the x axis fits it, without the
        # room a live stream of unknown length gets; live events that follow set their own total
        self._total = max(self._steps) if self._steps else None
        self._ended = True      # a model's history is a finished stream
        self._dirty = False
        self._drop_legend_room()
        self._redraw()

    def series(self, key: str):
        """``(steps, values)`` of a series as arrays, NaN where a step had no value."""
        return np.asarray(self._steps, dtype=float), np.asarray(self._values[key], dtype=float)

    def curve_data(self, key: str):
        """What the curve item holds: ``(x, y)`` arrays (finite points only)."""
        c = self.curves[key]
        x, y = c.xData, c.yData
        return (np.array([]) if x is None else np.asarray(x)), (np.array([]) if y is None else np.asarray(y))

    def set_phase(self, phase: Optional[str]) -> None:
        """Name the loss for the trainer: ``"em"``, ``"cooc"`` or ``"baum-welch"`` (events say it too)."""
        self._note_phase(phase, {})
        self._update_notes()

    def loss_title(self) -> str:
        """The loss plot's title (e.g. "EM objective −Q per token")."""
        return LOSS_KINDS.get(self._phase, DEFAULT_LOSS)[0]

    def note(self, plot: str) -> str:
        """The explanation written inside plot ``"loss"``, ``"nll"`` or ``"mad"`` ("" when none)."""
        return self.plots[plot]._note.toPlainText()

    def legend_names(self, plot: str) -> List[str]:
        """Entries of a plot's legend (only series that have points are listed)."""
        return [label.text for _item, label in self.plots[plot].legend.items]

    def nll_kind(self) -> str:
        """``"nll"`` when the middle plot shows normalised NLL, ``"ll"`` for -total log-likelihood."""
        return self._nll_kind

    # ------------------------------------------------------------- internals
    def _append(self, step, loss, train_ll, test_ll, metrics) -> None:
        if step is None:
            step = (self._steps[-1] + 1) if self._steps else 0
        if self._steps and float(step) < self._steps[-1]:
            # a restart or a new stream: the curves start again
            self._steps = []
            self._values = {k: [] for k in SERIES}
        metrics = metrics or {}
        tr, te = metrics.get("train_nll"), metrics.get("test_nll")
        for split, keys in (("train", ("train_tokens", "n_tokens")), ("test", ("test_tokens", "eval_tokens"))):
            for k in keys:
                c = _count(metrics.get(k))
                if c is not None:
                    self._tokens[split] = c
                    break
        if self._tokens["train"] is None and tr is not None and train_ll is not None:
            # the stream's own normalisation tells the token count of the training split
            t = _num(train_ll), _num(tr)
            if not any(np.isnan(t)) and t[1] != 0 and -t[0] / t[1] > 0:
                self._tokens["train"] = -t[0] / t[1]
        if tr is None and train_ll is not None and self._tokens["train"]:
            tr = -float(train_ll) / self._tokens["train"]
        if te is None and test_ll is not None and self._tokens["test"]:
            te = -float(test_ll) / self._tokens["test"]
        if tr is None and te is None and (train_ll is not None or test_ll is not None):
            if self._nll_kind == "nll" and any(math.isfinite(v) for v in self._values["train_nll"]):
                pass  # keep normalised values once we have them
            else:
                self._nll_kind = "ll"
                tr = None if train_ll is None else -float(train_ll)
                te = None if test_ll is None else -float(test_ll)
        if _is_plus_inf(te):
            self._test_impossible = True      # test NLL +inf: a test sequence has probability 0
        point = {"loss": _num(loss), "train_nll": _num(tr), "test_nll": _num(te),
                 "mad": _num(metrics.get("mad") if metrics else None)}
        if self._steps and float(step) == self._steps[-1]:
            # the same step again (a history followed by its last event): update, keep known values
            for k, v in point.items():
                if not np.isnan(v):
                    self._values[k][-1] = v
            return
        self._steps.append(float(step))
        for k, v in point.items():
            self._values[k].append(v)

    def _note_phase(self, phase, metrics) -> None:
        if phase and phase in LOSS_KINDS and phase != self._phase:
            self._phase = phase
            self._set_loss_axis()
        skipped = (metrics or {}).get("mad_skipped")
        if skipped:
            self._mad_note = f"No co-occurrence MAD: {skipped}"

    def _set_loss_axis(self) -> None:
        title, label, tip = LOSS_KINDS.get(self._phase, DEFAULT_LOSS)
        p = self.plots["loss"]
        style_plot(p, self, title)
        label_axis_text(p, "left", label, self)
        p.setToolTip(tip)
        p.titleLabel.setToolTip(tip)

    def _place_note(self, key: str) -> None:
        """An empty plot: the note in its centre.  A plot with a point or two: the note in the lower
        left, clear of the legend (upper right) and of a final point (at the right end)."""
        p = self.plots[key]
        r = p.vb.rect()
        if getattr(p._note, "_beside", False):
            p._note.setAnchor((0.0, 1.0))
            # leave the right-hand corners to the legend: in a short plot the wrapped note reaches
            # the top, and a legend beside it must not cover it (_place_legend avoids the note)
            legend = p.legend.boundingRect().width() + 20.0 if p.legend.items else 0.0
            p._note.setTextWidth(max(60.0, min(0.62 * r.width(), r.width() - legend)))
            p._note.setPos(r.left() + 4.0, r.bottom() - 2.0)
        else:
            p._note.setAnchor((0.5, 0.5))
            p._note.setTextWidth(max(60.0, r.width() - 16.0))
            p._note.setPos(r.center())

    def _update_notes(self) -> None:
        """Say inside a plot why it is empty or shows a single point (never a bare axis)."""
        counts = {k: int(np.isfinite(np.asarray(v, dtype=float)).sum()) for k, v in self._values.items()}
        notes = {"loss": "", "nll": "", "mad": ""}
        if not self._steps:
            notes = {k: "" for k in notes}
        else:
            yet = "" if self._ended else " yet"     # an ended stream will not bring one
            if counts["loss"] == 0:
                notes["loss"] = f"No loss in this stream{yet}."
            nll = counts["train_nll"] + counts["test_nll"]
            if self._phase == "cooc" and nll <= 1:
                notes["nll"] = "Co-occurrence fit: the test NLL is computed once, at the end."
            elif nll == 0:
                notes["nll"] = f"No likelihood in this stream{yet}."
            if self._test_impossible and counts["test_nll"] == 0:
                notes["nll"] = INFINITE_TEST_NLL
            if counts["mad"] == 0:
                notes["mad"] = self._mad_note or "No co-occurrence MAD in this stream."
        for key, text in notes.items():
            note = self.plots[key]._note
            beside = bool(text) and key == "nll" and counts["train_nll"] + counts["test_nll"] > 0
            if note.toPlainText() != text or getattr(note, "_beside", None) != beside:
                note._beside = beside
                note.setText(text)
                self._place_note(key)

    def _sync_legend(self) -> None:
        """List a series in its plot's legend only while it has points (no "train" beside nothing)."""
        for key, curve in self.curves.items():
            has = curve.yData is not None and len(curve.yData) > 0
            if has == curve._in_legend:
                continue
            legend = self.plots[SERIES[key][0]].legend
            if has:
                legend.addItem(curve, SERIES[key][1])
            else:
                legend.removeItem(curve)
            curve._in_legend = has

    def _set_nll_axis(self) -> None:
        p = self.plots["nll"]
        if self._nll_kind == "ll":
            # no per-token value in the stream and no token count known (Dashboard.set_token_counts)
            style_plot(p, self, "−log-likelihood, total")
            label_axis_text(p, "left", "−log L", self)
        else:
            style_plot(p, self, "Normalised NLL (train, test)")
            label_axis_text(p, "left", "NLL per token", self)

    def _redraw(self) -> None:
        x = np.asarray(self._steps, dtype=float)
        for key, curve in self.curves.items():
            y = np.asarray(self._values[key], dtype=float)
            ok = np.isfinite(y)
            if ok.any():
                sparse = int(ok.sum()) <= SPARSE_POINTS
                if sparse != getattr(curve, "_sparse", None):
                    curve._sparse = sparse
                    color = SERIES[key][2]
                    curve.setSymbol("o" if sparse else None)
                    curve.setSymbolSize(6)
                    curve.setSymbolBrush(pg.mkBrush(color))
                    curve.setSymbolPen(pg.mkPen(color))
                curve.setData(x[ok], y[ok])
            else:
                curve.setData([], [])
        # MAD and a co-occurrence loss span decades: log axes when the values are positive
        mad = np.asarray(self._values["mad"], dtype=float)
        good = mad[np.isfinite(mad)]
        log_mad = bool(good.size and np.all(good > 0))
        loss = np.asarray(self._values["loss"], dtype=float)
        good = loss[np.isfinite(loss)]
        log_loss = bool(good.size > 1 and np.all(good > 0) and good.max() / max(good.min(), 1e-300) > 20)
        shown = (self._nll_kind, log_loss, log_mad)
        if shown != self._shown:
            self._shown = shown
            self._set_nll_axis()
            self.plots["mad"].setLogMode(False, log_mad)
            self.plots["loss"].setLogMode(False, log_loss)
            for p in self.plots.values():
                p._fitted_y = None  # log mode changed: the view range is in other units
                # pyqtgraph's setLogMode turns auto range back on: a lone MAD point at step 0 got an x
                # axis of -0.5..0.5 of its own; the ranges are set below, for every plot
                p.disableAutoRange()
            self.plots["loss"]._fitted_x = None
        self._sync_legend()
        self._update_notes()
        self._fit_ranges()
        for key in self.plots:
            self._place_legend(key)

    def legend_corner(self, plot: str) -> str:
        """The corner of plot ``"loss"``, ``"nll"`` or ``"mad"`` its legend sits in (``"top-right"``, ...)."""
        return self.plots[plot].legend._corner

    def _place_legend(self, key: str, again: bool = False) -> None:
        """Put the plot's legend in the corner its curves cross least (a test NLL that stays high ran
        under the upper-right legend), keeping the current corner unless another is strictly clearer; the
        lower left stays free while a note sits there."""
        p = self.plots[key]
        legend = p.legend
        if not legend.items:
            return
        r = p.vb.rect()
        (x0, x1), (y0, y1) = p.vb.viewRange()
        if r.width() <= 0 or r.height() <= 0 or x1 <= x0 or y1 <= y0:
            return
        xs, ys = [], []
        for ck, curve in self.curves.items():
            if SERIES[ck][0] != key:
                continue
            x, y = curve.getData()
            if x is None or len(x) == 0:
                continue
            x, y = np.asarray(x, float), np.asarray(y, float)
            if len(x) > 1:   # the lines between the points too: 400 samples along x
                grid = np.linspace(x.min(), x.max(), 400)
                y = np.interp(grid, x, y)
                x = grid
            xs.append(x)
            ys.append(y)
        if not xs:
            return
        px = (np.concatenate(xs) - x0) / (x1 - x0) * r.width()
        yv = np.concatenate(ys)   # (as displayed: log10 on a log axis, as the view range)
        # in a short plot (a small screen) the entries stand side by side: stacked, "train" and "test"
        # covered half the plot and the lower one ran past its bottom
        n_items = len(legend.items)
        rows = math.ceil(n_items / max(1, legend.columnCount))
        stacked = legend.boundingRect().height() / max(1, rows) * n_items
        cols = n_items if stacked > LEGEND_MAX_HEIGHT * r.height() else 1
        if cols != legend.columnCount:
            legend.setColumnCount(cols)
        box = legend.boundingRect()
        note = None     # the note beside a point or two: no corner whose legend would cover it
        if getattr(p._note, "_beside", False) and p._note.toPlainText():
            text = p._note.textItem
            note = text.mapRectToItem(p.vb, text.boundingRect()).translated(-r.left(), -r.top())

        def crossings(bottom: float, top: float, gap: float) -> Dict[str, int]:
            """Points under the legend in each corner, the y range from ``bottom`` to ``top``, the
            legend ``gap`` px from the plot's edge; corners where it would cover the note are left out
            (all of them kept if it would cover it everywhere, but the note's own lower left)."""
            py = (top - yv) / (top - bottom) * r.height()
            w, h = box.width() + 8.0, box.height() + gap + 2.0
            spans = {"top-right": ((r.width() - w, r.width()), (0.0, h)), "top-left": ((0.0, w), (0.0, h)),
                     "bottom-left": ((0.0, w), (r.height() - h, r.height())),
                     "bottom-right": ((r.width() - w, r.width()), (r.height() - h, r.height()))}
            blocked: set = set()
            if note is not None:
                blocked = {c for c, ((a, b), (lo, hi)) in spans.items()
                           if QtCore.QRectF(a, lo, b - a, hi - lo).intersects(note)}
                if len(blocked) == len(spans):
                    blocked = {"bottom-left"}
            return {c: int(np.count_nonzero((px >= a) & (px <= b) & (py >= lo) & (py <= hi)))
                    for c, ((a, b), (lo, hi)) in spans.items() if c not in blocked}

        # room above the curves only while every corner is crossed in the range fitted to them without
        # it (a short plot, curves at the top and the bottom); the legend then sits in it, 1 px from
        # the top.  (Judged on a fresh fit, not on the range shown, which lags the data.)
        room = p._legend_room
        fin = yv[np.isfinite(yv)]
        if fin.size == 0:
            return
        lo, hi = float(fin.min()), float(fin.max())
        pad = _y_pad(lo, hi, p.getAxis("left").logMode)
        plain = crossings(lo - pad, hi + pad, 6.0)
        needs_room = min(plain.values()) > 0
        if needs_room != bool(room) and not again:
            p._legend_room = min(LEGEND_MAX_ROOM, (box.height() + 3.0) / r.height()) if needs_room else 0.0
            p._fitted_y = None
            self._fit_ranges()
            self._place_legend(key, again=True)
            return
        gap = 1.0 if room else 6.0
        crossed = crossings(y0, y1, gap)
        order = [legend._corner] + [c for c in LEGEND_CORNERS if c != legend._corner]
        best = min((c for c in order if c in crossed), key=lambda c: crossed[c])
        if best != legend._corner or getattr(legend, "_gap", 6.0) != gap:
            legend._corner, legend._gap = best, gap
            item_anchor, parent_anchor, (ox, oy) = LEGEND_CORNERS[best]
            legend.anchor(item_anchor, parent_anchor, (ox, math.copysign(gap, oy)))

    def _drop_legend_room(self) -> None:
        """New curves (or none): no room kept for the legends until their placement asks again."""
        for p in self.plots.values():
            if p._legend_room:
                p._legend_room = 0.0
                p._fitted_y = None

    def _resized(self, key: str) -> None:
        """A plot's size changed: its note and legend are placed again (the legend's room asked anew:
        a taller plot may have a free corner without it)."""
        p = self.plots[key]
        self._place_note(key)
        if p._legend_room:
            p._legend_room = 0.0
            p._fitted_y = None
            self._fit_ranges()
        self._place_legend(key)

    def legend_room(self, plot: str) -> float:
        """The share of plot ``plot``'s height kept free above its curves for its legend (0: none)."""
        return float(self.plots[plot]._legend_room)

    def _fit_ranges(self) -> None:
        """Set x and y ranges; unchanged unless the data leave them or shrink well inside."""
        x = np.asarray(self._steps, dtype=float)
        lead = self.plots["loss"]
        grow = False        # the data fitted, with room up to the planned total still ahead
        if x.size == 0:
            want = (0.0, 1.0)
        else:
            lo, hi = min(0.0, float(x.min())), float(x.max())
            hi = hi if hi > lo else lo + 1.0
            total = self._total if self._total is not None and not self._ended and self._total >= hi else None
            if total is not None and (total <= SMALL_TOTAL or hi - lo >= TOTAL_SHARE * (total - lo)):
                want = (lo, total)     # the points cover a fair part of the planned steps: show them all
            else:
                want = (lo, hi)        # ended: the data; far from the planned total: the data, with room
                grow = total is not None
        cur = getattr(lead, "_fitted_x", None)
        shrink = TOTAL_SHARE / 2 if grow else 0.5
        if cur is None or want[0] < cur[0] or want[1] > cur[1] or (want[1] - want[0]) < shrink * (cur[1] - cur[0]) \
                or (grow and want[1] >= cur[1]) \
                or (self._ended and x.size and want != cur):
            if grow:        # room for the next points: fewer rescales (x GROW_ROOM each), the planned total at most
                want = (want[0], min(self._total, want[0] + GROW_ROOM * (want[1] - want[0])))
            elif self._total is None and not self._ended and x.size and cur is not None and want[1] > cur[1]:
                want = (want[0], want[0] + 1.5 * (want[1] - want[0]))  # room to grow: fewer rescales
            lead._fitted_x = want
            for p in ([lead] if self._orientation == "vertical" else self.plots.values()):
                p.setXRange(want[0], want[1], padding=0.02)
        for plot_key, plot in self.plots.items():
            ys = [self.curves[k].yData for k in SERIES if SERIES[k][0] == plot_key]
            ys = [np.asarray(y, float) for y in ys if y is not None and len(y)]
            log = plot.getAxis("left").logMode
            if not ys:
                want = (0.0, 1.0) if not log else (-1.0, 0.0)
                if getattr(plot, "_fitted_y", None) != want:
                    plot._fitted_y = want
                    plot.setYRange(*want, padding=0)
                continue
            y = np.concatenate(ys)
            y = y[np.isfinite(y) & (y > 0)] if log else y[np.isfinite(y)]
            if y.size == 0:
                continue
            if log:
                y = np.log10(y)
            lo, hi = float(y.min()), float(y.max())
            span = hi - lo
            pad = _y_pad(lo, hi, log)
            cur = getattr(plot, "_fitted_y", None)
            room = plot._legend_room
            if cur is not None and cur[0] <= lo and hi <= cur[1] - room * (cur[1] - cur[0]) and \
                    (span + 2 * pad) >= 0.3 * (cur[1] - cur[0]):
                continue
            new = [lo - pad, hi + pad]
            if cur is not None and span > 0:
                # a live curve keeps moving the way it left the range: leave room in that direction
                if lo < cur[0]:
                    new[0] -= 0.5 * span
                if hi > cur[1]:
                    new[1] += 0.5 * span
            if room:   # the legend's room above the curves: that share of the new range
                new[1] += (new[1] - new[0]) * room / (1.0 - room)
            plot._fitted_y = tuple(new)
            plot.setYRange(new[0], new[1], padding=0)

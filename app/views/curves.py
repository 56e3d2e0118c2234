"""Training curves: loss, train / test normalised NLL and co-occurrence MAD against the step.

Three stacked plots share the x axis (step or EM / Baum-Welch iteration).  Points come
from progress events (``add_event``) or from a model's history (``set_history``); the
plots use ``setData`` with clip-to-view and automatic downsampling, so 10,000-step
histories stay cheap to redraw.

Where the events carry no normalised NLL (``metrics["train_nll"]``) but do carry the
total log-likelihood, the middle plot shows ``-train_ll`` / ``-test_ll`` and says so
on its axis: the view never computes a normalisation itself.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from .common import ThinLogAxis, label_axis_text, make_graphics_widget, style_plot, theme_colors

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


def _num(v) -> float:
    if v is None:
        return math.nan
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


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
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.graphics = make_graphics_widget(self)
        lay.addWidget(self.graphics)
        _, fg = theme_colors(self)
        self.plots: Dict[str, pg.PlotItem] = {}
        titles = {"loss": ("Training loss", "loss"),
                  "nll": ("Normalised negative log-likelihood", "NLL per token"),
                  "mad": ("Co-occurrence MAD", "MAD")}
        for i, (key, (title, ylab)) in enumerate(titles.items()):
            row, col = (i, 0) if orientation == "vertical" else (0, i)
            p = self.graphics.addPlot(row=row, col=col, axisItems={"left": ThinLogAxis("left")})
            style_plot(p, self, title)
            label_axis_text(p, "left", ylab, self)
            # no grid: its alpha-blended lines double the repaint cost of a live plot
            p.setClipToView(True)
            p.setDownsampling(auto=True, mode="peak")
            p.getAxis("left").setWidth(72)
            p.getAxis("left").enableAutoSIPrefix(False)
            # fewer tick labels than pyqtgraph's default: short plots (log axes above all) stay readable
            p.getAxis("left").setStyle(textFillLimits=[(0, 0.45), (2, 0.3), (4, 0.2)])
            p.addLegend(offset=(-6, 6), labelTextColor=fg)
            self.plots[key] = p
        # one x range for all three: the loss plot leads (a single test point must not zoom it)
        for key in ("nll", "mad"):
            self.plots[key].setXLink(self.plots["loss"])
            self.plots[key].enableAutoRange(x=False)
        for key in (("mad",) if orientation == "vertical" else tuple(self.plots)):
            label_axis_text(self.plots[key], "bottom", "step / iteration", self)
        self.curves: Dict[str, pg.PlotDataItem] = {}
        for key, (plot, name, color, dashed) in SERIES.items():
            pen = pg.mkPen(color, width=2, style=pg.QtCore.Qt.PenStyle.DashLine if dashed else
                           pg.QtCore.Qt.PenStyle.SolidLine)
            self.curves[key] = self.plots[plot].plot([], [], pen=pen, name=name)
        self.setMinimumSize(260, 300 if orientation == "vertical" else 160)

    # ------------------------------------------------------------------ API
    def clear(self) -> None:
        self._steps = []
        self._values = {k: [] for k in SERIES}
        self._nll_kind = "nll"
        for c in self.curves.values():
            c.setData([], [])
        self._shown = None
        self._set_nll_axis()

    def add_event(self, ev) -> None:
        """Append the point of one :class:`~densehmm_core.events.ProgressEvent`."""
        self._append(ev.step, ev.loss, ev.train_ll, ev.test_ll, ev.metrics or {})
        self._redraw()

    def set_history(self, history: Optional[List[dict]]) -> None:
        """Replace the curves by a model's ``history_`` (step, loss, train_ll, test_ll, metrics)."""
        self._steps = []
        self._values = {k: [] for k in SERIES}
        self._nll_kind = "nll"
        for rec in history or []:
            metrics = rec.get("metrics") if isinstance(rec.get("metrics"), dict) else rec
            self._append(rec.get("step"), rec.get("loss"), rec.get("train_ll"), rec.get("test_ll"), metrics)
        self._redraw()

    def series(self, key: str):
        """``(steps, values)`` of a series as arrays, NaN where a step had no value."""
        return np.asarray(self._steps, dtype=float), np.asarray(self._values[key], dtype=float)

    def curve_data(self, key: str):
        """What the curve item holds: ``(x, y)`` arrays (finite points only)."""
        c = self.curves[key]
        x, y = c.xData, c.yData
        return (np.array([]) if x is None else np.asarray(x)), (np.array([]) if y is None else np.asarray(y))

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
        tr = metrics.get("train_nll") if metrics else None
        te = metrics.get("test_nll") if metrics else None
        if tr is None and te is None and (train_ll is not None or test_ll is not None):
            if self._nll_kind == "nll" and any(math.isfinite(v) for v in self._values["train_nll"]):
                pass  # keep normalised values once we have them
            else:
                self._nll_kind = "ll"
                tr = None if train_ll is None else -float(train_ll)
                te = None if test_ll is None else -float(test_ll)
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

    def _set_nll_axis(self) -> None:
        p = self.plots["nll"]
        if self._nll_kind == "ll":
            style_plot(p, self, "Negative log-likelihood (total; no normalised NLL in the stream)")
            label_axis_text(p, "left", "−log L", self)
        else:
            style_plot(p, self, "Normalised negative log-likelihood")
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
        for plot_key, plot in self.plots.items():
            if not any(c.xData is not None and len(c.xData) for k, c in self.curves.items()
                       if SERIES[k][0] == plot_key):
                if plot.getAxis("left").logMode:
                    plot.setLogMode(False, False)
                    self._shown = None  # log modes are re-applied when data arrives
                plot.setYRange(0, 1, padding=0.05)
                plot.enableAutoRange(y=True)  # setYRange switched it off; later data must rescale
        if x.size == 0:
            self.plots["loss"].setXRange(0, 1, padding=0.05)
            self.plots["loss"].enableAutoRange(x=True)
        lx = self.curves["loss"].xData
        if (lx is None or len(lx) == 0) and x.size and self.plots["loss"].vb.autoRangeEnabled()[0]:
            self.plots["loss"].setXRange(float(x.min()), float(x.max()) + (x.max() == x.min()), padding=0.02)
            self.plots["loss"].enableAutoRange(x=True)
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

"""Views for a corpus with gold tags (unsupervised part-of-speech induction).

* :class:`StateTagView`: the state x tag contingency table as a heatmap (each row scaled to
  ``P(tag | state)``; the token counts are in the tooltip), rows labelled with each state's
  mapped tag (``"3 → NOUN"``), and M-1 / 1-1 / V-measure in the title.
* :class:`TaggingCurves`: M-1, 1-1 and V-measure against training step (live curves).

They take plain arrays and dicts: the scores come from the core
(:func:`densehmm_core.metrics.tagging_scores`, whose dict they accept as it is); when and on what
they are computed is :mod:`app.views.tag_scoring`'s business.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from .theme import label_axis_text, make_graphics_widget, style_plot, theme_colors
from .axes import GappedAxis
from .widgets import PageStack, Placeholder
from .heatmap import MatrixHeatmap

__all__ = ["StateTagView", "TaggingCurves", "state_tag_labels"]

#: score key -> (legend name, colour)
SCORES = {"m1": ("M-1", "#1f77b4"), "one_to_one": ("1-1", "#ff7f0e"), "v_measure": ("V-measure", "#2ca02c")}
#: score key -> (marker, size): M-1 drawn first and largest, so that 1-1 on the same value (as often:
#: one state per tag) leaves a ring of it visible instead of hiding it
MARKERS = {"m1": ("o", 11), "one_to_one": ("s", 6), "v_measure": ("t", 8)}


def state_tag_labels(mapping: Optional[Sequence[int]], tag_names: Sequence[str], n: int) -> List[str]:
    """Row labels ``"i → TAG"`` from a state-to-tag mapping (-1 or missing: ``"i → —"``)."""
    out = []
    for i in range(n):
        t = -1 if mapping is None or i >= len(mapping) else int(mapping[i])
        out.append(f"{i} → {tag_names[t]}" if 0 <= t < len(tag_names) else f"{i} → —")
    return out


def _score_text(scores: dict) -> str:
    parts = []
    for key, (name, _c) in SCORES.items():
        v = scores.get(key)
        if v is not None:
            parts.append(f"{name} {float(v):.3f}")
    return ",  ".join(parts)


class StateTagView(QtWidgets.QWidget):
    """Contingency of hidden states and gold tags; rows named by each state's mapped tag."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self._counts: Optional[np.ndarray] = None
        self._tags: List[str] = []
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.stack = PageStack()
        self.placeholder = Placeholder("State x tag: shown for a data set with gold tags once a model is "
                                       "trained or opened (the states of the decoded tokens against their "
                                       "gold tags).")
        self.heatmap = MatrixHeatmap("States x gold tags: P(tag | state)", "state → mapped tag", "gold tag",
                                     symbol="P", fixed_range=True)
        self.heatmap.hover_text = self._hover_text
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.heatmap)
        lay.addWidget(self.stack)
        self.setMinimumSize(320, 260)

    def set_scores(self, scores: dict, tag_names: Sequence[str]) -> None:
        """Show a :func:`~densehmm_core.metrics.tagging_scores` result (``contingency``, ``mapping``,
        ``m1``, ``one_to_one``, ``v_measure``) with the tag vocabulary ``tag_names``."""
        C = np.asarray(scores["contingency"], dtype=np.float64)
        n, k = C.shape
        self._tags = [str(t) for t in tag_names][:k] + [str(i) for i in range(len(tag_names), k)]
        self._counts = C
        totals = C.sum(axis=1, keepdims=True)
        P = np.divide(C, totals, out=np.zeros_like(C), where=totals > 0)
        rows = state_tag_labels(scores.get("mapping"), self._tags, n)
        self.heatmap.set_matrix(P, rows, self._tags)
        # the scores on a line of their own: one line was cut in a narrow view (and its figures)
        self.heatmap.set_title(f"States x gold tags: P(tag | state)<br>{_score_text(scores)}")
        self.stack.setCurrentWidget(self.heatmap)

    def counts(self) -> Optional[np.ndarray]:
        """The token counts shown (states x tags), a copy."""
        return None if self._counts is None else self._counts.copy()

    def row_labels(self) -> List[str]:
        return self.heatmap.row_labels()

    def col_labels(self) -> List[str]:
        return self.heatmap.col_labels()

    def clear(self) -> None:
        self._counts = None
        self.heatmap.clear()
        self.stack.setCurrentWidget(self.placeholder)

    def _hover_text(self, row: int, col: int) -> str:
        if self._counts is None:
            return ""
        c = int(self._counts[row, col])
        total = int(self._counts[row].sum())
        p = c / total if total else 0.0
        return (f"state {self.heatmap.row_labels()[row]}, gold tag {self._tags[col]}\n"
                f"{c} of the state's {total} tokens (P = {p:.4f})")


class TaggingCurves(QtWidgets.QWidget):
    """M-1, 1-1 and V-measure against step (one plot, 0..1)."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self._steps: List[float] = []
        self._values: Dict[str, List[float]] = {k: [] for k in SCORES}
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.graphics = make_graphics_widget(self)
        lay.addWidget(self.graphics)
        _, fg = theme_colors(self)
        self.plot = self.graphics.addPlot(axisItems={"bottom": GappedAxis("bottom")})
        style_plot(self.plot, self, "M-1, 1-1, V-measure")
        label_axis_text(self.plot, "left", "score", self)
        label_axis_text(self.plot, "bottom", "step / iteration", self)
        self.plot.addLegend(offset=(-6, -6), labelTextColor=fg)
        self.plot.setYRange(0.0, 1.0, padding=0.02)
        self.plot.hideButtons()
        self.note = pg.TextItem("", color=fg, anchor=(0.5, 0.5))
        self.note.setParentItem(self.plot.vb)
        self.plot.vb.sigResized.connect(self._place_note)
        self.curves = {}
        for key, (name, color) in SCORES.items():
            marker, size = MARKERS[key]
            self.curves[key] = self.plot.plot([], [], pen=pg.mkPen(color, width=2), name=name, symbol=marker,
                                              symbolSize=size, symbolBrush=pg.mkBrush(color),
                                              symbolPen=pg.mkPen(color))
        self.setMinimumSize(260, 180)

    def add_point(self, step: float, scores: dict) -> None:
        """One evaluation (a :func:`~densehmm_core.metrics.tagging_scores` dict) at ``step``."""
        step = float(step)
        if self._steps and step <= self._steps[-1]:
            if step < self._steps[-1]:  # a new stream
                self.clear()
            else:
                for k in SCORES:
                    self._values[k].pop()
                self._steps.pop()
        self._steps.append(step)
        for k in SCORES:
            v = scores.get(k)
            self._values[k].append(float(v) if v is not None else np.nan)
        self._redraw()

    def set_history(self, points: Sequence[tuple]) -> None:
        """Replace the curves by ``[(step, scores dict), ...]``."""
        self.clear()
        for step, scores in points:
            self.add_point(step, scores)

    def series(self, key: str):
        return np.asarray(self._steps, float), np.asarray(self._values[key], float)

    def clear(self) -> None:
        self._steps = []
        self._values = {k: [] for k in SCORES}
        for c in self.curves.values():
            c.setData([], [])
        self.set_note("")

    def set_note(self, text: str) -> None:
        """A sentence inside the plot (e.g. why it has one point only)."""
        self.note.setText(text)
        self._place_note()

    def _place_note(self, *_a) -> None:
        r = self.plot.vb.rect()
        self.note.setTextWidth(max(60.0, r.width() - 16.0))
        self.note.setPos(r.center().x(), r.top() + 0.3 * r.height())

    def _redraw(self) -> None:
        x = np.asarray(self._steps, float)
        for k, c in self.curves.items():
            y = np.asarray(self._values[k], float)
            ok = np.isfinite(y)
            c.setData(x[ok], y[ok])
        if x.size:
            lo, hi = min(0.0, float(x.min())), max(float(x.max()), 1.0)
            self.plot.setXRange(lo, hi + 0.08 * (hi - lo), padding=0.02)  # the last point off the border


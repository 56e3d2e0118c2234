"""Scatter plot of a DenseHMM's embeddings: U, Z, W (states), V (symbols) and z_start.

For ``l == 2`` the vectors are drawn directly; for ``l > 2`` they are projected on the
first two principal axes of all embedding vectors together (one common projection, so
toggling a set does not move the others; the axes say so, with the explained variance);
for ``l == 1`` each set gets its own row and the x axis is the value.

The check boxes above the plot carry the marker of their set and serve as the legend
(they wrap onto a second line in a narrow window); an exported figure, which leaves the
check boxes out, gets a legend row of the sets shown beneath the plot instead.  Symbol points (V) are labelled;
state points are labelled only on request ("state labels"), every point has a hover
tooltip with its name and vector.  The view range is set by the view and only changes
when points leave it or shrink well inside it, so a live update repaints once.
"""
from __future__ import annotations

import contextlib
import math
from typing import Dict, Iterator, List, Optional, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from ..flow import FlowLayout
from .theme import label_axis_texts, make_graphics_widget, marker_icon, style_plot, symbol_names, theme_colors
from .axes import GappedAxis, LabelAxis
from .widgets import PageStack, Placeholder
from .projection import pca_2d

__all__ = ["EmbeddingScatter", "EMBEDDING_SETS", "UniformScatter"]

#: name -> (description, marker, colour, is a state set)
EMBEDDING_SETS = {
    "U": ("U: incoming state vectors u_j (columns of A, π)", "o", "#1f77b4", True),
    "Z": ("Z: outgoing state vectors z_i (rows of A)", "s", "#ff7f0e", True),
    "W": ("W: state vectors w_i towards the symbols (rows of B)", "t", "#2ca02c", True),
    "V": ("V: symbol vectors v_j (columns of B)", "d", "#9467bd", False),
    "z_start": ("z_start: start vector (π)", "star", "#d62728", False),
}
#: Label at most this many points of one set.
MAX_LABELS = 150
#: Places of a label beside its point (pyqtgraph TextItem anchors), tried in this order: right, left,
#: above, below; a label that fits nowhere is hidden (its name stays in the point's hover tooltip).
LABEL_ANCHORS = ((-0.35, 0.55), (1.25, 0.55), (0.5, 1.15), (0.5, -0.15))
#: With symbol frequencies known, only this many most frequent symbols are drawn in full and
#: labelled; the others are faint small points (their names in the hover tooltip).
TOP_LABELLED = 50
#: A set of at most this many labels (a DNA or protein alphabet) names every point it can: over another
#: point's marker where no place beside it is free of them; larger sets keep off the markers.
LABEL_ALL_UP_TO = 30
#: grid cell (pixels) of the markers a label is kept off (EmbeddingScatter._marker_boxes)
MARK_CELL_PX = 24.0
#: label items made per event-loop turn, LABEL_GAP_MS apart (each batch is painted in between)
LABEL_BATCH = 10
LABEL_GAP_MS = 15


#: The embedding view's placeholder when no model is shown.
NO_EMBEDDINGS = "No embeddings: this view shows DenseHMM models (a standard HMM has no dense representation)."


def _over_marker(cells: Dict[tuple, list], box: tuple, px: float, py: float) -> bool:
    """Whether ``box`` (x0, y0, x1, y1) overlaps a marker of ``cells`` other than the one at ``(px, py)``."""
    for cx in range(math.floor(box[0] / MARK_CELL_PX), math.floor(box[2] / MARK_CELL_PX) + 1):
        for cy in range(math.floor(box[1] / MARK_CELL_PX), math.floor(box[3] / MARK_CELL_PX) + 1):
            for m in cells.get((cx, cy), ()):
                if box[0] < m[2] and m[0] < box[2] and box[1] < m[3] and m[1] < box[3] and (m[4] != px or m[5] != py):
                    return True
    return False


class UniformScatter(pg.ScatterPlotItem):
    """A scatter whose points all share the item's symbol, size, pen and brush (no per-point style, no
    hover style): the faint symbols of a vocabulary.  pyqtgraph looks every new point's style up in its
    symbol atlas, one Python tuple per point, 40 ms of the GUI thread for the Brown corpus's 30,499 words
    at every snapshot; here the one style is looked up once and its place in the atlas given to all."""

    _ids: Optional[np.ndarray] = None   # the points' ids as last set (set_points)

    def updateSpots(self, dataSet=None):  # noqa: N802, N803 (pyqtgraph API)
        data = self.data if dataSet is None else dataSet
        if not (self.opts["pxMode"] and self.opts["useCache"]) or not len(data):
            return super().updateSpots(dataSet)
        fresh = data["sourceRect"]["w"] == 0
        if np.any(fresh):
            style = (self.opts["symbol"], self.opts["size"], self.opts["pen"], self.opts["brush"])
            data["sourceRect"][fresh] = self.fragmentAtlas[[style]][0]
            self._maybeRebuildAtlas()
            self.invalidate()
        self._updateMaxSpotSizes(data=data)

    def set_points(self, x: np.ndarray, y: np.ndarray, ids: np.ndarray) -> None:
        """``setData(x=x, y=y, data=ids)``.  The same points in new places (a live snapshot of the same
        vocabulary) are moved in place: pyqtgraph's ``setData`` builds a new record array of 30,000
        rows, about 15 ms of each snapshot at the Brown corpus's vocabulary.  New points are made from
        one: pyqtgraph builds the record of the first point (this item's one style), which is copied
        for the others (numpy's ``empty``, which ``setData`` uses, fills the record's five object fields
        row by row: 11 ms for 30,499 rows, the copies 3 ms)."""
        ids = np.asarray(ids)
        n = ids.size
        if not (self._ids is not None and len(self.data) == n == len(x) and np.array_equal(self._ids, ids)):
            if n < 2 or len(x) != n or len(y) != n:
                self.setData(x=x, y=y, data=ids)
                self._ids = ids.copy()
                return
            self.setData(x=x[:1], y=y[:1], data=ids[:1])
            self.data = self.data.repeat(n)
            self.data["data"] = ids
            self._ids = ids.copy()
        self.data["x"] = x
        self.data["y"] = y
        self.prepareGeometryChange()
        self.informViewBoundsChanged()
        self.bounds = [None, None]
        self.invalidate()
        self.sigPlotChanged.emit(self)

    def clear(self) -> None:
        self._ids = None
        super().clear()


class EmbeddingScatter(QtWidgets.QWidget):
    """The embedding scatter; ``set_embeddings(dict)`` with keys U, Z, W, V, z_start."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None, controls: bool = True,
                 title: str = "Embeddings") -> None:
        super().__init__(parent)
        self._emb: Dict[str, np.ndarray] = {}
        self._vocab: Optional[Sequence[str]] = None
        self._coords: Dict[str, np.ndarray] = {}
        self._mode = "none"
        self._explained = np.zeros(2)
        self._labels: Dict[str, List[pg.TextItem]] = {k: [] for k in EMBEDDING_SETS}
        self._crowded: set = set()  # ids of labels hidden because they would overlap another
        self._freq: Optional[np.ndarray] = None  # symbol counts: label the most frequent only
        self._top_n = TOP_LABELLED
        self._top_order: Optional[np.ndarray] = None   # _top_symbols, for the counts in _freq
        self._labels_stale = False      # the counts changed since the labels were made
        self._label_todo: List[tuple] = []   # (set, text, colour) of label items still to make
        self._label_timer = QtCore.QTimer(self)
        self._label_timer.setSingleShot(True)
        self._label_timer.timeout.connect(self._more_labels)
        self._no_pen = pg.mkPen(None)   # the faint points' (one object: one symbol in pyqtgraph's atlas)
        self._label_idx: Dict[str, List[int]] = {k: [] for k in EMBEDDING_SETS}
        self._spare: List[pg.TextItem] = []   # label items not in use: hidden, in the plot, reused
        self._title = title
        self._axes: Optional[np.ndarray] = None   # the PCA axes of the last frame (no sign flips)

        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        row = FlowLayout(spacing=8, line_spacing=2)
        row.setContentsMargins(0, 0, 0, 0)
        self.boxes: Dict[str, QtWidgets.QCheckBox] = {}
        for key, (desc, marker, color, _) in EMBEDDING_SETS.items():
            box = QtWidgets.QCheckBox(key)
            box.setIcon(marker_icon(marker, color))
            box.setToolTip(f"Show {desc}")
            box.setChecked(True)
            box.toggled.connect(self._refresh_visibility)
            self.boxes[key] = box
            row.addWidget(box)
        self.labels_box = QtWidgets.QCheckBox("labels")
        self.labels_box.setToolTip("Write the symbol names (V) next to their points")
        self.labels_box.setChecked(True)
        self.labels_box.toggled.connect(self._refresh_visibility)
        row.addWidget(self.labels_box)
        self.state_labels_box = QtWidgets.QCheckBox("state labels")
        self.state_labels_box.setToolTip("Also name the state points (u0, z0, w0, ...); "
                                         "hovering a point always shows its name")
        self.state_labels_box.setChecked(False)
        self.state_labels_box.toggled.connect(self._state_labels_toggled)
        row.addWidget(self.state_labels_box)
        self.controls = QtWidgets.QWidget()
        self.controls.setLayout(row)
        pol = self.controls.sizePolicy()
        pol.setHeightForWidth(True)
        pol.setHorizontalPolicy(QtWidgets.QSizePolicy.Policy.Ignored)
        self.controls.setSizePolicy(pol)
        self._with_controls = controls
        self.controls.setVisible(False)   # shown with the plot: no check boxes beside a placeholder
        lay.addWidget(self.controls)

        self.stack = PageStack()
        self.placeholder = Placeholder(NO_EMBEDDINGS)
        self.graphics = make_graphics_widget(self)
        self._left = LabelAxis("left")
        self.plot: pg.PlotItem = self.graphics.addPlot(axisItems={"left": self._left, "bottom": GappedAxis("bottom")})
        style_plot(self.plot, self, self._title)
        self.plot.disableAutoRange()  # _fit_range sets it: no auto range on every paint
        self._fitted = None
        # no grid: its alpha-blended lines double the repaint cost of a live plot
        _, fg = theme_colors(self)
        self.legend = None  # the check boxes above the plot carry the markers: no legend row
        self.plot.vb.sigRangeChanged.connect(self._declutter)
        self.plot.vb.sigResized.connect(self._declutter)
        self.plot.vb.sigResized.connect(lambda *_: self._fit_legend_columns())
        self.scatters: Dict[str, pg.ScatterPlotItem] = {}
        for key, (desc, marker, color, is_state) in EMBEDDING_SETS.items():
            size = 11 if is_state else 9
            if key == "z_start":
                size = 16
            sc = pg.ScatterPlotItem(symbol=marker, size=size, pen=pg.mkPen(fg, width=0.6),
                                    brush=pg.mkBrush(color), name=key, hoverable=True,
                                    tip=self._make_tip(key))
            self.plot.addItem(sc)
            self.scatters[key] = sc
        # the symbols outside the most frequent: small faint points in an item of their own, under
        # the frequent ones, one pen and brush for all (pyqtgraph then sets up a 5,000-word frame in
        # 7 ms, where per-point style lists in one item took 22 ms, issue 24.13), its style looked up once
        c = QtGui.QColor(EMBEDDING_SETS["V"][2])
        self.faint_symbols = UniformScatter(symbol=EMBEDDING_SETS["V"][1], size=4, pen=self._no_pen,
                                                brush=pg.mkBrush(c.red(), c.green(), c.blue(), 55),
                                                hoverable=True, tip=self._make_tip("V"))
        self.faint_symbols.setZValue(-1)
        self.plot.addItem(self.faint_symbols)
        if not controls:  # no check boxes to read the markers from: a legend row beneath the plot
            self.legend = self._add_legend(list(self.scatters))
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.graphics)
        lay.addWidget(self.stack)
        # two of them, in Overview, fit a 1366 x 768 screen; beside the matrices, a 1024 x 600 netbook's
        self.setMinimumSize(220, 180)

    def _add_legend(self, keys: Sequence[str]) -> pg.LegendItem:
        """A legend row beneath the plot naming the markers of the sets ``keys``."""
        _, fg = theme_colors(self)
        legend = pg.LegendItem(offset=None, labelTextColor=fg, colCount=3, horSpacing=8, frame=False)
        legend.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Fixed)
        # pyqtgraph's 9 px around the entries took 18 px of a short scatter's height, and kept the five
        # names off one line under Overview's plots on a 1366 x 768 laptop (320 px wide)
        legend.layout.setContentsMargins(2, 2, 2, 2)
        self.graphics.addItem(legend, row=1, col=0)
        for key in keys:
            legend.addItem(self.scatters[key], key)
        self._fit_legend_columns(legend)
        return legend

    def _fit_legend_columns(self, legend: Optional[pg.LegendItem] = None) -> None:
        """The legend row's entries on one line where the view is wide enough, else three per line:
        two lines under each of Overview's plots left the scatter itself a strip on a short screen."""
        legend = legend if legend is not None else self.legend
        if legend is None or not legend.items:
            return
        # one row: every marker and text (the text, not its cell), the layout's spacing between all of
        # them (marker | text | marker | ...), its margins and the graphics' (an estimate of 8 px per
        # entry cut the last name, "z_st", under Overview's plots on a 1280 x 720 laptop)
        lay = legend.layout
        left, _, right, _ = lay.getContentsMargins()
        outer_left, _, outer_right, _ = self.graphics.ci.layout.getContentsMargins()
        need = (sum(sample.boundingRect().width() + label.item.boundingRect().width() for sample, label in legend.items)
                + lay.horizontalSpacing() * (2 * len(legend.items) - 1) + left + right + outer_left + outer_right + 4.0)
        cols = len(legend.items) if need <= self.graphics.width() else min(3, len(legend.items))
        if cols != legend.columnCount:
            legend.setColumnCount(cols)

    @contextlib.contextmanager
    def figure_mode(self) -> Iterator[None]:
        """While the view is exported (:mod:`app.export`): its check boxes, the on-screen legend,
        are left out of the figure, so a legend row of the sets shown is drawn beneath the plot."""
        if self.legend is not None or self.stack.currentWidget() is not self.graphics:
            yield  # the legend row is there already, or there is no plot
            return
        self.legend = self._add_legend([k for k in EMBEDDING_SETS if self.boxes[k].isChecked() and k in self._coords])
        try:
            yield
        finally:
            self.graphics.removeItem(self.legend)
            self.legend = None

    def legend_names(self) -> List[str]:
        """The names in the legend row beneath the plot (none on screen while the check boxes show)."""
        return [] if self.legend is None else [label.text for _, label in self.legend.items]

    # ------------------------------------------------------------------ API
    def set_vocabulary(self, vocabulary: Optional[Sequence[str]]) -> None:
        self._vocab = symbol_names(vocabulary)
        if self._emb:
            self._rebuild_labels()
            self._place_labels()

    def set_title(self, title: str) -> None:
        self._title = title
        style_plot(self.plot, self, self._title)

    def set_symbol_frequencies(self, counts: Optional[Sequence[float]], top: int = TOP_LABELLED,
                               redraw: bool = True) -> None:
        """Symbol counts of the data (``None``: unknown).  With more than ``top`` symbols, only the
        ``top`` most frequent are drawn in full and labelled; the rest are faint points.
        ``redraw=False``: only kept for the next :meth:`set_embeddings` (which the caller is about
        to make: the points are then drawn once, not twice)."""
        self._freq = None if counts is None else np.asarray(counts, dtype=np.float64).reshape(-1)
        self._top_n = int(top)
        self._top_order = None
        self._labels_stale = True
        if self._emb and redraw:
            self.set_embeddings(dict(self._emb), force_labels=True)

    def _top_symbols(self, m: int) -> Optional[np.ndarray]:
        """Indices of the most frequent symbols (most frequent first), or ``None`` when all are shown."""
        if self._freq is None or self._freq.size != m or m <= self._top_n:
            return None
        if self._top_order is None:     # sorted once per set of counts (a snapshot asked 4 times: 9 ms
            self._top_order = np.argsort(-self._freq, kind="stable")[:self._top_n]   # at 30,000 words)
        return self._top_order

    def labelled_symbols(self) -> List[int]:
        """Indices of the symbols (V) that have a label item."""
        self.finish_labels()
        return list(self._label_idx.get("V", []))

    def set_embeddings(self, params: Optional[dict], force_labels: bool = False) -> None:
        """Show the embeddings in ``params`` (U, Z, W: n x l; V: m x l; z_start: l).

        Missing or ``None`` embeddings (a standard HMM) show a placeholder.
        """
        emb = {}
        for key in EMBEDDING_SETS:
            v = None if not params else params.get(key)
            if v is not None:
                a = np.asarray(v, dtype=np.float64)
                emb[key] = a.reshape(1, -1) if a.ndim == 1 else a
        if not emb:
            self.clear()
            return
        dims = {a.shape[1] for a in emb.values()}
        if len(dims) != 1:
            raise ValueError(f"embeddings disagree on the dimension l: { {k: a.shape for k, a in emb.items()} }")
        counts_changed = {k: a.shape[0] for k, a in emb.items()} != {k: a.shape[0] for k, a in self._emb.items()}
        self._emb = emb
        self._project()
        for key, sc in self.scatters.items():
            xy = self._coords.get(key)
            if xy is None:
                sc.setData([], [])
            elif key == "V" and self._top_symbols(xy.shape[0]) is not None:
                in_top = np.zeros(xy.shape[0], dtype=bool)
                in_top[self._top_symbols(xy.shape[0])] = True
                top, rest = np.flatnonzero(in_top), np.flatnonzero(~in_top)
                sc.setData(x=xy[top, 0], y=xy[top, 1], data=top)
                self.faint_symbols.set_points(xy[rest, 0], xy[rest, 1], rest)
                continue
            else:
                sc.setData(x=xy[:, 0], y=xy[:, 1], data=np.arange(xy.shape[0]))
            if key == "V":
                self.faint_symbols.setData([], [])
        if counts_changed or force_labels or self._labels_stale:
            self._labels_stale = False
            self._rebuild_labels()
        self._place_labels()
        self._updating = True  # one declutter pass below, not one per range signal
        try:
            self._fit_range()
        finally:
            self._updating = False
        self._refresh_visibility()
        self._show_page(self.graphics)

    def set_model_kind(self, kind: Optional[str], n: Optional[int] = None, l: Optional[int] = None) -> None:
        """What the placeholder says while there are no embeddings to draw: for a DenseHMM (``kind``
        "dense") that its embeddings come with the model's first parameters (a job in its start), for a
        standard HMM that it has none, for no model (None) the general note."""
        if kind == "dense":
            size = f" (n = {n} states, l = {l})" if n is not None and l is not None else ""
            text = (f"DenseHMM embeddings{size}: drawn with the model's first parameters, "
                    "once its start is ready.")
        elif kind is not None:
            text = "No embeddings: a standard HMM has no dense representation (this view shows DenseHMM models)."
        else:
            text = NO_EMBEDDINGS
        self.placeholder.setText(text)

    def coordinates(self, key: str) -> Optional[np.ndarray]:
        """The 2-D coordinates plotted for one set (a copy), or ``None``."""
        xy = self._coords.get(key)
        return None if xy is None else np.array(xy, copy=True)

    def mode(self) -> str:
        """``"direct"`` (l = 2), ``"pca"`` (l > 2), ``"1d"`` (l = 1) or ``"none"``."""
        return self._mode

    def axis_titles(self):
        """``(x title, y title)`` currently on the axes."""
        return (self.plot.getAxis("bottom").labelText, self.plot.getAxis("left").labelText)

    def label_texts(self, key: str) -> List[str]:
        self.finish_labels()
        return [t.textItem.toPlainText() for t in self._labels[key]]

    def clear(self) -> None:
        self._emb = {}
        self._coords = {}
        self._axes = None
        self._mode = "none"
        for sc in (*self.scatters.values(), self.faint_symbols):
            sc.setData([], [])
        self._rebuild_labels()
        self._fitted = None
        self._show_page(self.placeholder)

    # ------------------------------------------------------------- internals
    def _show_page(self, page: QtWidgets.QWidget) -> None:
        """The plot (with its check boxes) or the placeholder (alone)."""
        self.stack.setCurrentWidget(page)
        self.controls.setVisible(self._with_controls and page is self.graphics)

    def _project(self) -> None:
        l = next(iter(self._emb.values())).shape[1]
        keys = list(self._emb)
        if l == 2:
            self._mode = "direct"
            self._coords = {k: self._emb[k].copy() for k in keys}
            xt, yt = ["dimension 1"], ["dimension 2"]
            title = f"{self._title} (l = 2)"
            self._left.set_labels(None)
        elif l == 1:
            self._mode = "1d"
            rows = {k: i for i, k in enumerate(reversed(list(EMBEDDING_SETS)))}
            self._coords = {k: np.column_stack([self._emb[k][:, 0], np.full(self._emb[k].shape[0], rows[k])])
                            for k in keys}
            names = [""] * len(rows)
            for k, i in rows.items():
                names[i] = k
            self._left.set_labels(names)
            xt, yt = ["value (l = 1)"], ["embedding set"]
            title = f"{self._title} (l = 1)"
        else:
            self._mode = "pca"
            stacked = np.concatenate([self._emb[k] for k in keys], axis=0)
            Y, self._axes, self._explained = pca_2d(stacked, reference=self._axes)
            self._coords = {}
            start = 0
            for k in keys:
                cnt = self._emb[k].shape[0]
                self._coords[k] = Y[start:start + cnt]
                start += cnt
            e1, e2 = 100 * self._explained
            xt = [f"PC 1 ({e1:.0f}% of variance)", f"PC 1 ({e1:.0f}%)"]
            yt = [f"PC 2 ({e2:.0f}% of variance)", f"PC 2 ({e2:.0f}%)"]
            title = f"{self._title} (PCA, l = {l})"  # the axes name the components
            self._left.set_labels(None)
        style_plot(self.plot, self, title)
        label_axis_texts(self.plot, "bottom", xt, self)   # (shorter where the plot is short)
        label_axis_texts(self.plot, "left", yt, self)

    def _label_strings(self, key: str, count: int) -> List[str]:
        if key == "V":
            if self._vocab is not None and len(self._vocab) == count:
                return list(self._vocab)
            return [str(i) for i in range(count)]
        if key == "z_start":
            return ["start"]
        return [f"{key.lower()}{i}" for i in range(count)]

    def _rebuild_labels(self) -> None:
        """One text item per labelled point.  The items of a set are reused (text and colour set
        again) and only the surplus removed; missing ones are made :data:`LABEL_BATCH` at a time,
        the rest from the event loop (:meth:`finish_labels` makes them all at once): making 50
        label items at once took 50-400 ms of the GUI thread when a words model was shown
        (issue 24.13)."""
        _, fg = theme_colors(self)
        self._label_todo = []
        for key, items in self._labels.items():
            a = self._emb.get(key)
            idx: List[int] = []
            if a is not None:
                idx = list(range(a.shape[0]))
                if key == "V" and self._top_symbols(a.shape[0]) is not None:
                    idx = [int(i) for i in self._top_symbols(a.shape[0])]
                if len(idx) > MAX_LABELS or (EMBEDDING_SETS[key][3] and not self.state_labels_box.isChecked()):
                    idx = []  # too many to label; state points: names in the hover tooltip unless asked for
            for t in items[len(idx):]:   # the surplus kept hidden for the next labels (removing and
                t.setVisible(False)       # making 50 text items took ~8 ms per view at each job shown)
                self._spare.append(t)
            del items[len(idx):]
            self._label_idx[key] = idx
            if not idx:
                continue
            color = EMBEDDING_SETS[key][2] if key != "V" else fg
            names = self._label_strings(key, a.shape[0])
            for pos, i in enumerate(idx):
                s = names[i]
                if pos < len(items):
                    t = items[pos]
                    if t.textItem.toPlainText() != s or t.color != pg.mkColor(color):
                        t.setText(s, color=color)
                        t.__dict__.pop("_box_size", None)   # measured for the old text
                else:
                    self._label_todo.append((key, s, color))
        self._make_labels(LABEL_BATCH)
        if self._label_todo:
            self._label_timer.start(LABEL_GAP_MS)
        else:
            self._label_timer.stop()

    def _make_labels(self, budget: int) -> None:
        """Make up to ``budget`` of the label items still to make (in order: each set's list
        stays aligned with its ``_label_idx``)."""
        fonts: Dict[bool, QtGui.QFont] = {}
        while self._label_todo and budget > 0:
            key, s, color = self._label_todo.pop(0)
            bold = key == "V"
            f = fonts.get(bold)
            if f is None:
                f = fonts[bold] = QtGui.QFont()
                f.setPointSizeF(max(6.5, f.pointSizeF() - 1.5))
                f.setBold(bold)
            if self._spare:   # an item of an earlier model: its text, colour and font set again
                t = self._spare.pop()
                t.setText(s, color=color)
                t.__dict__.pop("_box_size", None)   # measured for the old text
                t.setAnchor(LABEL_ANCHORS[0])
                t.setFont(f)
                t.setVisible(True)
            else:
                # anchored beside its marker, not on it (_declutter may move it to another side)
                t = pg.TextItem(s, color=color, anchor=LABEL_ANCHORS[0])
                t.setFont(f)
                self.plot.addItem(t)
            self._labels[key].append(t)
            budget -= 1

    def _more_labels(self) -> None:
        """The next batch of label items (from the event loop), placed and decluttered."""
        self._make_labels(LABEL_BATCH)
        self._place_labels()
        self._refresh_visibility()
        if self._label_todo:
            self._label_timer.start(LABEL_GAP_MS)

    @property
    def labels_pending(self) -> bool:
        """Whether label items are still to be made from the event loop."""
        return bool(self._label_todo)

    def finish_labels(self) -> None:
        """Make every label item still to make now (before labels are read or exported)."""
        if self._label_todo:
            self._label_timer.stop()
            self._make_labels(len(self._label_todo))
            self._place_labels()
            self._refresh_visibility()

    #: :func:`app.export.export_widget` calls this before rendering the view
    prepare_export = finish_labels

    def _place_labels(self) -> None:
        for key, items in self._labels.items():
            xy = self._coords.get(key)
            if xy is None:
                continue
            for t, i in zip(items, self._label_idx[key]):
                t.setPos(float(xy[i, 0]), float(xy[i, 1]))

    def _state_labels_toggled(self) -> None:
        if self._emb:
            self._rebuild_labels()
            self._place_labels()
            self._refresh_visibility()

    def _fit_range(self) -> None:
        pts = [xy for xy in self._coords.values() if xy is not None and xy.size]
        if not pts:
            return
        xy = np.concatenate(pts, axis=0)
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        if xy.size == 0:
            return
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        span = np.maximum(hi - lo, 1e-9)
        if self._mode == "1d":
            want = (lo[0] - 0.08 * span[0], hi[0] + 0.2 * span[0], -0.6, len(EMBEDDING_SETS) - 0.4)
        else:  # room on the right for the labels
            want = (lo[0] - 0.08 * span[0], hi[0] + 0.18 * span[0], lo[1] - 0.08 * span[1], hi[1] + 0.08 * span[1])
        cur = self._fitted
        if cur is not None and cur[0] <= lo[0] and hi[0] <= cur[1] and cur[2] <= lo[1] and hi[1] <= cur[3] \
                and span[0] >= 0.5 * (cur[1] - cur[0]) and (self._mode == "1d" or span[1] >= 0.5 * (cur[3] - cur[2])):
            return  # the points still fill the view: leave it (no re-layout of axes and labels)
        self._fitted = want
        self.plot.setRange(xRange=want[:2], yRange=want[2:], padding=0)

    def _refresh_visibility(self) -> None:
        self._declutter()

    def visible_labels(self, key: str) -> List[str]:
        """Texts of the labels of one set that are drawn (not hidden by a box or by crowding)."""
        self.finish_labels()
        return [t.textItem.toPlainText() for t in self._labels[key] if t.isVisible()]

    def _declutter(self, *args) -> None:
        """Show the labels of the selected sets, each on the first side of its point (right, left,
        above, below) where it overlaps no label already shown and no other point's marker, and stays
        inside the plot's area; a label that fits nowhere is hidden.

        Symbol labels (V) come first (the most frequent symbols first), then z_start, then state
        labels; a hidden label's name is in its point's hover tooltip, and zooming in brings it back.
        """
        if getattr(self, "_updating", False):
            return
        show_labels = self.labels_box.isChecked()
        pw, ph = 0.0, 0.0
        try:
            px = self.plot.vb.viewPixelSize()
            pw, ph = float(px[0]), float(px[1])
        except Exception:  # noqa: BLE001 - not laid out yet (pyqtgraph raises various errors then)
            pass
        taken: List[tuple] = []
        crowded = set()
        # the plot's area in the same pixel coordinates: a label reaching past it would be cut (in a
        # figure: clipped at the frame) or written over the axis
        inside = None
        if pw > 0 and ph > 0:
            vr = self.plot.vb.viewRect()
            inside = (vr.left() / pw, -vr.bottom() / ph, vr.right() / pw, -vr.top() / ph)
        marks = self._marker_boxes(pw, ph) if show_labels and pw > 0 and ph > 0 else None
        for key in ("V", "z_start", "U", "Z", "W"):
            on = self.boxes[key].isChecked()
            self.scatters[key].setVisible(on)
            if key == "V":
                self.faint_symbols.setVisible(on)
            xy = self._coords.get(key)
            # a small set (an alphabet: DNA, amino acids) names every point, over another's marker
            # when no place beside it is free; a vocabulary's labels keep off the markers (hover names
            # the rest)
            passes = (True, False) if len(self._label_idx[key]) <= LABEL_ALL_UP_TO else (True,)
            places = [(ax, ay, keep_off) for keep_off in passes for ax, ay in LABEL_ANCHORS]
            for t, i in zip(self._labels[key], self._label_idx[key]):
                show = on and show_labels
                if show and pw > 0 and ph > 0 and xy is not None and i < len(xy):
                    # the text's box in pixels for each place beside the point (right, left, above,
                    # below), without the document margin: the first place that overlaps no label
                    # already placed is taken
                    size = getattr(t, "_box_size", None)
                    if size is None:  # measured once per text (dropped when the text is set again)
                        br = t.textItem.boundingRect()
                        size = t._box_size = (br.width(), br.height(), t.textItem.document().documentMargin())
                    bw, bh, dm = size
                    px0, py0 = xy[i, 0] / pw, -xy[i, 1] / ph
                    for ax, ay, keep_off in places:
                        x0 = px0 - ax * bw + dm
                        y0 = py0 - ay * bh + dm
                        box = (x0, y0, x0 + bw - 2 * dm, y0 + bh - 2 * dm)
                        if inside is not None and not (inside[0] <= box[0] and box[2] <= inside[2]
                                                       and inside[1] <= box[1] and box[3] <= inside[3]):
                            continue
                        if keep_off and marks is not None and _over_marker(marks, box, px0, py0):
                            continue   # over another point's marker (its own is beside it)
                        if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
                            taken.append(box)
                            if (t.anchor.x(), t.anchor.y()) != (ax, ay):
                                t.setAnchor((ax, ay))
                            break
                    else:
                        show = False
                        crowded.add(id(t))
                if t.isVisible() != show:
                    t.setVisible(show)
        self._crowded = crowded

    def _marker_boxes(self, pw: float, ph: float) -> Dict[tuple, list]:
        """The full-size markers of the sets shown (the faint symbols excepted), in
        :meth:`_declutter`'s pixel coordinates, by grid cell of :data:`MARK_CELL_PX`: each a tuple
        ``(x0, y0, x1, y1, x, y)``, its box and centre (a cell lookup per label place, not a pass
        over every marker: 1.5 -> 2 ms per declutter with 185 labels, where a numpy pass took 11)."""
        cells: Dict[tuple, list] = {}
        for key, sc in self.scatters.items():
            x, y = sc.getData()
            if not self.boxes[key].isChecked() or x is None or not len(x):
                continue
            r = 0.5 * float(sc.opts["size"])
            for px, py in zip((np.asarray(x, dtype=np.float64) / pw).tolist(),
                              (-np.asarray(y, dtype=np.float64) / ph).tolist()):
                mark = (px - r, py - r, px + r, py + r, px, py)
                for cx in range(math.floor(mark[0] / MARK_CELL_PX), math.floor(mark[2] / MARK_CELL_PX) + 1):
                    for cy in range(math.floor(mark[1] / MARK_CELL_PX), math.floor(mark[3] / MARK_CELL_PX) + 1):
                        cells.setdefault((cx, cy), []).append(mark)
        return cells

    def label_boxes(self, key: str) -> List[tuple]:
        """Scene rectangles ``(x0, y0, x1, y1)`` of the shown labels of one set (tests: no overlap)."""
        self.finish_labels()
        out = []
        for t in self._labels[key]:
            if t.isVisible():
                r = t.textItem.mapRectToScene(t.textItem.boundingRect())
                m = t.textItem.document().documentMargin()
                out.append((r.left() + m, r.top() + m, r.right() - m, r.bottom() - m))
        return out

    def _make_tip(self, key):
        def tip(x, y, data):
            i = int(data) if data is not None else 0
            name = self._label_strings(key, self._emb[key].shape[0])[i] if key in self._emb else str(i)
            vec = self._emb.get(key)
            vtxt = ""
            if vec is not None and i < vec.shape[0] and vec.shape[1] <= 8:
                vtxt = "\n(" + ", ".join(f"{v:.4g}" for v in vec[i]) + ")"
            return f"{key} {name}{vtxt}"
        return tip

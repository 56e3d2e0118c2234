"""Heatmaps of the HMM's matrices: start distribution, transition matrix A, emission matrix B.

:class:`MatrixHeatmap` shows one matrix (rows top to bottom, columns left to right) with a
colour bar (viridis; fixed 0..1 range or the data's range), state indices / symbol
labels on the axes and a hover tooltip with the exact value.  :class:`ParameterHeatmaps`
puts pi, A and B together for one model.

Updates are cheap: ``setImage`` with ``autoLevels=False``; ticks and ranges are only
rebuilt when the shape or the labels change.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from .theme import (label_axis_text, make_graphics_widget, sequential_cmap, state_labels, style_plot, symbol_labels,
                    symbol_names, theme_colors, tick_strings, use_precise_ticks)
from .topwords import TopWordsTable
from .axes import LabelAxis, space_vertical_labels
from .widgets import PageStack

__all__ = ["MatrixHeatmap", "ParameterHeatmaps"]

#: Matrices with at most this many cells get their values written into the cells...
ANNOTATE_MAX_CELLS = 64
#: ...when each cell is at least this wide and high on screen (pixels).
MIN_CELL_PX = (34, 16)
#: With more symbols than this, B is shown as each state's top words (a table), not a heatmap.
HEATMAP_MAX_SYMBOLS = 200
#: the row axis' ticks: this many pixels outwards (never over the cells' values)
TICK_OUT_PX = 4
#: Width of the colour bar lying beside a one-row strip (pi, delta pi)
FLAT_BAR_PX = 110


class MatrixHeatmap(QtWidgets.QWidget):
    """One matrix as a heatmap with a colour bar and labelled axes.

    Parameters
    ----------
    title : str
        Plot title (e.g. ``"Transition matrix A"``).
    row_title, col_title : str
        Axis titles (e.g. ``"from state"`` / ``"to state"``); also used in tooltips.
    symbol : str
        Short name used in tooltips, e.g. ``"A"`` gives ``A[2, 3] = 0.125``.
    fixed_range : bool
        Colour range fixed to 0..1 (probabilities) instead of the data's min..max.
    cmap : pyqtgraph.ColorMap, optional
        Defaults to viridis.
    symmetric : bool
        Colour range symmetric around 0 (for differences); ignores ``fixed_range``.
    annotate : bool or None
        Write values into the cells; ``None`` means "when the matrix is small".
    colorbar : bool or "horizontal"
        Show the colour bar (the levels apply either way); ``"horizontal"``: a short one lying beside the
        plot (a one-row strip such as pi, too low for a standing bar's labels).
    """

    sigHovered = QtCore.Signal(object)  # (row, col, value) or None

    def __init__(self, title: str = "", row_title: str = "row", col_title: str = "column",
                 symbol: str = "M", fixed_range: bool = True, cmap: Optional[pg.ColorMap] = None,
                 symmetric: bool = False, annotate: Optional[bool] = None, colorbar: Union[bool, str] = True,
                 parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self._title = title
        self._row_title = row_title
        self._col_title = col_title
        self._symbol = symbol
        self._fixed = bool(fixed_range)
        self._symmetric = bool(symmetric)
        self._annotate = annotate
        self._data: Optional[np.ndarray] = None
        self._row_labels: List[str] = []
        self._col_labels: List[str] = []
        self._labels_shape: Optional[tuple] = None   # the (rows, cols) the labels were made for
        self._texts: List[pg.TextItem] = []
        self._cmap = cmap if cmap is not None else sequential_cmap()

        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.graphics = make_graphics_widget(self)
        lay.addWidget(self.graphics)
        self._left = LabelAxis("left")
        self._bottom = LabelAxis("bottom")
        # the row ticks point outwards: pyqtgraph's reach 5 px into the plot, and beside a narrow cell's
        # value they made 0.50 read "-0.50" (the column ticks stay: outwards they cost a short A a row label)
        self._left.setStyle(tickLength=TICK_OUT_PX)
        self.plot: pg.PlotItem = self.graphics.addPlot(axisItems={"left": self._left, "bottom": self._bottom})
        style_plot(self.plot, self, title)
        label_axis_text(self.plot, "left", row_title, self)
        label_axis_text(self.plot, "bottom", col_title, self)
        self.plot.invertY(True)
        self.plot.hideButtons()
        self.plot.showGrid(False, False)
        self.plot.setMenuEnabled(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setAutoDownsample(False)
        self.plot.addItem(self.image)
        # a one-row strip (pi): a short bar beside it, lying down (standing, its labels overlapped)
        self._flat_bar = colorbar == "horizontal"
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=self._cmap, interactive=False,
                                        width=10 if self._flat_bar else 14, colorMapMenu=False,
                                        orientation="horizontal" if self._flat_bar else "vertical")
        self.colorbar.setImageItem(self.image, insert_in=self.plot if colorbar and not self._flat_bar else None)
        if self._flat_bar:
            self.image.setColorMap(self._cmap)
            self.colorbar.setFixedWidth(FLAT_BAR_PX)
            self.graphics.addItem(self.colorbar, row=0, col=1)
            self.graphics.ci.layout.setAlignment(self.colorbar, QtCore.Qt.AlignmentFlag.AlignVCenter)
        elif not colorbar:
            self.image.setColorMap(self._cmap)
        _, fg = theme_colors(self)
        self.colorbar.axis.setPen(pg.mkPen(fg))
        self.colorbar.axis.setTextPen(pg.mkPen(fg))
        # labels with enough digits for narrow ranges, and an axis wide enough to show them
        use_precise_ticks(self.colorbar.axis)
        if not self._flat_bar:
            space_vertical_labels(self.colorbar.axis)
        self._cbar_width = 45
        self._levels_shown = None
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.vb.sigResized.connect(self._on_resized)
        self.setMinimumSize(180, 150)   # pi and A beside B and the embeddings fit a 1024 x 600 netbook

    # ------------------------------------------------------------------ API
    def set_matrix(self, matrix, row_labels: Optional[Sequence[str]] = None,
                   col_labels: Optional[Sequence[str]] = None) -> None:
        """Show ``matrix`` (2-D; a 1-D vector is shown as one row)."""
        if matrix is None:
            self.clear()
            return
        data = np.array(matrix, dtype=np.float64, copy=True)
        if data.ndim == 1:
            data = data[None, :]
        if data.ndim != 2 or data.size == 0:
            raise ValueError(f"{self._symbol}: expected a non-empty 2-D matrix, got shape {data.shape}")
        shape_changed = self._data is None or self._data.shape != data.shape
        self._data = data
        # labels that set_shape gave this very shape (a job drawn from its start) stay when none come
        named = row_labels is None and col_labels is None and self._labels_shape == data.shape
        if (row_labels is not None or shape_changed) and not named:
            self._set_labels(row_labels, col_labels, data.shape)
        elif col_labels is not None:
            self._set_labels(self._row_labels, col_labels, data.shape)
        self.image.setImage(data, autoLevels=False)
        self.image.setRect(QtCore.QRectF(-0.5, -0.5, data.shape[1], data.shape[0]))
        self._apply_levels()
        if shape_changed:
            self._reset_range()
        self._update_annotations()

    def set_shape(self, rows: int, cols: int, row_labels: Optional[Sequence[str]] = None,
                  col_labels: Optional[Sequence[str]] = None) -> None:
        """Axes for a ``rows x cols`` matrix before it has values (a job in its start): labels and
        ranges as they will be, no image.  Ignored once a matrix is shown."""
        if self._data is not None or rows < 1 or cols < 1:
            return
        self._set_labels(row_labels, col_labels, (int(rows), int(cols)))
        self._reset_range((int(rows), int(cols)))

    def set_labels(self, row_labels: Optional[Sequence[str]], col_labels: Optional[Sequence[str]]) -> None:
        """Axis labels for rows and columns (``None``: indices)."""
        shape = self._data.shape if self._data is not None else (len(row_labels or []), len(col_labels or []))
        self._set_labels(row_labels, col_labels, shape)

    def set_fixed_range(self, fixed: bool) -> None:
        """Colour range 0..1 (True) or the data's min..max (False)."""
        self._fixed = bool(fixed)
        self._apply_levels()
        self._update_annotations()

    def fixed_range(self) -> bool:
        return self._fixed

    def levels(self):
        """The colour range currently applied ``(low, high)``."""
        return tuple(float(v) for v in self.colorbar.levels())

    def image_data(self) -> Optional[np.ndarray]:
        """A copy of the matrix the image displays (rows = first index)."""
        img = self.image.image
        return None if img is None else np.array(img, copy=True)

    def row_labels(self) -> List[str]:
        return list(self._row_labels)

    def col_labels(self) -> List[str]:
        return list(self._col_labels)

    def set_title(self, title: str) -> None:
        self._title = title
        style_plot(self.plot, self, title)

    def hover_text(self, row: int, col: int) -> str:
        """The tooltip for cell ``(row, col)``: exact value with state/symbol names."""
        if self._data is None:
            return ""
        v = float(self._data[row, col])
        rl = self._row_labels[row] if row < len(self._row_labels) else str(row)
        cl = self._col_labels[col] if col < len(self._col_labels) else str(col)
        if self._data.shape[0] == 1:
            return f"{self._symbol}[{cl}] = {v:.10g}\n{self._col_title} {cl}"
        return f"{self._symbol}[{row}, {col}] = {v:.10g}\n{self._row_title} {rl}, {self._col_title} {cl}"

    def cell_at_scene_pos(self, scene_pos: QtCore.QPointF):
        """``(row, col)`` under a scene position, or ``None`` outside the matrix."""
        if self._data is None:
            return None
        if not self.plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.plot.vb.mapSceneToView(scene_pos)
        col, row = int(round(p.x())), int(round(p.y()))
        if 0 <= row < self._data.shape[0] and 0 <= col < self._data.shape[1]:
            return row, col
        return None

    def clear(self) -> None:
        self._data = None
        self._levels_shown = None
        self.image.clear()
        for t in self._texts:
            self.plot.removeItem(t)
        self._texts = []
        self._left.set_labels(None)
        self._bottom.set_labels(None)
        self._row_labels, self._col_labels = [], []
        self._labels_shape = None

    # ------------------------------------------------------------- internals
    def _set_labels(self, row_labels, col_labels, shape) -> None:
        rows, cols = shape
        self._labels_shape = (int(rows), int(cols))
        self._row_labels = [str(s) for s in row_labels] if row_labels is not None and len(row_labels) == rows \
            else [str(i) for i in range(rows)]
        self._col_labels = [str(s) for s in col_labels] if col_labels is not None and len(col_labels) == cols \
            else [str(i) for i in range(cols)]
        # a single row (pi) is named by its symbol: the axis then has a width, and the first
        # column's label is not drawn on the plot's border
        self._left.set_labels(self._row_labels if rows > 1 else [self._symbol])
        self._bottom.set_labels(self._col_labels)

    def _apply_levels(self) -> None:
        if self._data is None:
            return
        finite = self._data[np.isfinite(self._data)]
        if self._symmetric:
            r = float(np.max(np.abs(finite))) if finite.size else 0.0
            r = r if r > 0 else 1e-12
            lo, hi = -r, r
        elif self._fixed or finite.size == 0:
            lo, hi = 0.0, 1.0
        else:
            lo, hi = float(finite.min()), float(finite.max())
            if hi <= lo:
                hi = lo + max(abs(lo) * 1e-6, 1e-12)
        if self._levels_shown == (lo, hi):
            return
        self._levels_shown = (lo, hi)
        self.colorbar.setLevels((lo, hi))
        self._fit_colorbar_axis(lo, hi)

    def _fit_colorbar_axis(self, lo: float, hi: float) -> None:
        """Widen the colour bar's axis (fixed at 45 px by pyqtgraph) so its labels are not dropped."""
        if self._flat_bar:
            return
        ax = self.colorbar.axis
        span = max(hi - lo, 1e-300)
        key = (int(np.floor(2 * np.log10(span))), int(np.floor(np.log10(max(abs(lo), abs(hi), 1e-300)))))
        if key == getattr(self, "_cbar_key", None):
            return  # same decade of range and of values: the labels have the same length
        self._cbar_key = key
        size = ax.height() if ax.height() > 0 else 200.0
        longest = 0.0
        fm = QtGui.QFontMetricsF(ax.style.get("tickFont") or QtGui.QFont())
        for spacing, vals in ax.tickValues(lo, hi, size)[:2]:
            for s in tick_strings(vals, spacing):
                longest = max(longest, fm.horizontalAdvance(s))
        width = int(max(45, longest + abs(ax.style.get("tickLength", 5)) + 12))
        if width != self._cbar_width:
            self._cbar_width = width
            ax.setWidth(width)

    def _reset_range(self, shape=None) -> None:
        rows, cols = shape if shape is not None else self._data.shape
        self.plot.vb.setLimits(xMin=-0.5, xMax=cols - 0.5, yMin=-0.5, yMax=rows - 0.5)
        self.plot.setRange(xRange=(-0.5, cols - 0.5), yRange=(-0.5, rows - 0.5), padding=0)

    def _want_annotations(self) -> bool:
        if self._data is None:
            return False
        if self._annotate is None:
            if self._data.size > ANNOTATE_MAX_CELLS:
                return False
            rows, cols = self._data.shape
            w, h = self.plot.vb.width(), self.plot.vb.height()
            if w > 0 and h > 0:  # laid out: only where the numbers fit their cells
                return w / cols >= MIN_CELL_PX[0] and h / rows >= MIN_CELL_PX[1]
            return True
        return bool(self._annotate)

    def _on_resized(self) -> None:
        if self._data is not None and self._annotate is None and \
                self._want_annotations() != bool(self._texts):
            self._update_annotations()

    def _update_annotations(self) -> None:
        if not self._want_annotations():
            for t in self._texts:
                self.plot.removeItem(t)
            self._texts = []
            return
        rows, cols = self._data.shape
        need = rows * cols
        while len(self._texts) > need:
            self.plot.removeItem(self._texts.pop())
        while len(self._texts) < need:
            t = pg.TextItem("", anchor=(0.5, 0.5))
            t.setZValue(10)
            self.plot.addItem(t)
            self._texts.append(t)
        lo, hi = self.levels()
        span = (hi - lo) or 1.0
        font = QtGui.QFont()
        font.setPointSizeF(8.0 if cols > 6 else 9.0)
        for k, t in enumerate(self._texts):
            i, j = divmod(k, cols)
            v = float(self._data[i, j])
            rel = (v - lo) / span
            if self._symmetric:  # diverging map: saturated ends (both signs) are dark
                color = (245, 245, 245) if abs(v) / max(hi, 1e-300) > 0.6 else (20, 20, 20)
            else:
                color = (20, 20, 20) if rel > 0.6 else (235, 235, 235)
            text = f"{v:.2f}"
            if text in ("-0.00", "+0.00"):
                text = "0.00"
            state = (text, color, font.pointSizeF(), i, j)
            if getattr(t, "_shown", None) == state:  # setText re-lays out the item: skip when unchanged
                continue
            if getattr(t, "_shown", (None,) * 5)[2] != state[2]:
                t.setFont(font)
            t.setColor(color)
            t.setText(text)
            t.setPos(j, i)
            t._shown = state

    def _on_mouse_moved(self, scene_pos) -> None:
        cell = self.cell_at_scene_pos(scene_pos)
        if cell is None:
            QtWidgets.QToolTip.hideText()
            self.sigHovered.emit(None)
            return
        text = self.hover_text(*cell)
        view = self.graphics
        QtWidgets.QToolTip.showText(view.mapToGlobal(view.mapFromScene(scene_pos)), text, view)
        self.sigHovered.emit((cell[0], cell[1], float(self._data[cell])))


class ParameterHeatmaps(QtWidgets.QWidget):
    """pi (a strip), A and B of one model side by side, with a "fixed 0..1" switch.

    ``set_params({"startprob", "transmat", "emissionprob"})`` updates all three.
    """

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None, fixed_range: bool = True) -> None:
        super().__init__(parent)
        self._vocab: Optional[Sequence[str]] = None
        self._params: Optional[dict] = None
        self.startprob = MatrixHeatmap("Start distribution π", "", "state", symbol="π",
                                       fixed_range=fixed_range, colorbar="horizontal")
        self.transmat = MatrixHeatmap("Transition matrix A", "from state", "to state", symbol="A",
                                      fixed_range=fixed_range)
        self.emission = MatrixHeatmap("Emission matrix B", "state", "symbol", symbol="B",
                                      fixed_range=fixed_range)
        # vocabulary-sized B (words): each state's top words instead of an unreadable n x m heatmap
        self.top_words = TopWordsTable()
        self.top_words.setObjectName("top_words")
        self.emission_stack = PageStack()
        self.emission_stack.addWidget(self.emission)
        self.emission_stack.addWidget(self.top_words)
        # exporting "the emissions" exports what shows them: the heatmap or the top-words table
        self.emission.export_target = self.emission_stack.currentWidget
        self._row_names: Optional[List[str]] = None
        self.startprob.setMinimumHeight(90)
        self.startprob.setMaximumHeight(130)
        self.transmat.setMinimumHeight(120)   # with pi above: the dashboard fits a 1366 x 768 screen
        self.fixed_box = QtWidgets.QCheckBox("Fixed colour range 0..1")
        self.fixed_box.setChecked(fixed_range)
        self.fixed_box.setToolTip("Colour π, A and B on one scale from 0 to 1, so that colours compare between the\n"
                                  "matrices and between jobs; off: each matrix's colours span its own smallest to\n"
                                  "largest value (small differences show; the colour bars give the values).")
        self.fixed_box.toggled.connect(self.set_fixed_range)
        self.info = QtWidgets.QLabel("")
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.fixed_box)
        top.addStretch(1)
        top.addWidget(self.info)
        grid = QtWidgets.QGridLayout(self)
        grid.setContentsMargins(2, 2, 2, 2)
        grid.addLayout(top, 0, 0, 1, 2)
        grid.addWidget(self.startprob, 1, 0)
        grid.addWidget(self.transmat, 2, 0)
        grid.addWidget(self.emission_stack, 1, 1, 2, 1)
        grid.setColumnStretch(0, 2)
        grid.setColumnStretch(1, 3)
        grid.setRowStretch(2, 1)
        self._grid = grid

    def heatmaps(self) -> Dict[str, MatrixHeatmap]:
        return {"startprob": self.startprob, "transmat": self.transmat, "emissionprob": self.emission}

    def set_vocabulary(self, vocabulary: Optional[Sequence[str]]) -> None:
        self._vocab = symbol_names(vocabulary)
        if self._params is not None:
            self.set_params(self._params, relabel=True)

    def set_fixed_range(self, fixed: bool) -> None:
        for h in self.heatmaps().values():
            h.set_fixed_range(fixed)
        if self.fixed_box.isChecked() != bool(fixed):
            self.fixed_box.setChecked(bool(fixed))

    def set_params(self, params: Optional[dict], relabel: bool = False) -> None:
        """Show ``params["startprob"]``, ``["transmat"]``, ``["emissionprob"]`` (any may be missing;
        the others keep what they show, and a relabelling redraws all three)."""
        if not params:
            return
        self._params = {**(self._params or {}), **{k: v for k, v in params.items() if v is not None}}
        A = params.get("transmat")
        B = params.get("emissionprob")
        pi = params.get("startprob")
        if A is not None:
            n = np.shape(A)[0]
            labels = state_labels(n)
            self.transmat.set_matrix(A, labels if relabel else None, labels if relabel else None)
        if pi is not None:
            self.startprob.set_matrix(pi, None, state_labels(np.shape(pi)[0]) if relabel else None)
        if B is not None and np.shape(B)[1] > HEATMAP_MAX_SYMBOLS:
            n, m = np.shape(B)
            self.top_words.set_emissions(B, self._vocab, self._row_names)
            self.emission_stack.setCurrentWidget(self.top_words)
            self._grid.setColumnStretch(0, 1)  # the table of words needs the width more than pi and A
            self._grid.setColumnStretch(1, 3)
            self.info.setText(f"n = {n} states, m = {m} symbols")
        elif B is not None:
            self.emission_stack.setCurrentWidget(self.emission)
            n, m = np.shape(B)
            self._share_columns(n, m)
            cur = self.emission.col_labels()
            want = symbol_labels(m, self._vocab)
            if relabel or cur != want:
                self.emission.set_matrix(B, state_labels(n), want)
            else:
                self.emission.set_matrix(B)
            self.info.setText(f"n = {n} states, m = {m} symbols")

    def column_shares(self) -> tuple:
        """The grid's width weights of (pi and A, B)."""
        return self._grid.columnStretch(0), self._grid.columnStretch(1)

    def _share_columns(self, n: int, m: int) -> None:
        """Width for A (n columns) and B (m columns) in proportion to their columns, within 1 : 2 and 2 : 1:
        21 residues get two thirds of the width and are named one by one (3 : 2 left every second name
        out); 4 nucleotides no longer squeeze a 6 x 6 A into a strip beside a B of wide cells."""
        ratio = min(2.0, max(0.5, n / max(m, 1)))
        self._grid.setColumnStretch(0, int(round(10 * ratio)))
        self._grid.setColumnStretch(1, 10)

    def set_shape(self, n: int, m: int) -> None:
        """Axes and layout for ``n`` states and ``m`` symbols before the first parameters arrive (a job in
        its start): pi, A and B get their final ranges and labels, a vocabulary-sized B its (empty) table
        of top words.  Ignored once parameters are shown."""
        if self._params is not None or n is None or m is None:
            return
        n, m = int(n), int(m)
        self.startprob.set_shape(1, n)
        self.transmat.set_shape(n, n, state_labels(n), state_labels(n))
        if m > HEATMAP_MAX_SYMBOLS:
            self.top_words.set_pending(n, m)
            self.emission_stack.setCurrentWidget(self.top_words)
            self._grid.setColumnStretch(0, 1)
            self._grid.setColumnStretch(1, 3)
        else:
            self.emission_stack.setCurrentWidget(self.emission)
            self._share_columns(n, m)
            self.emission.set_shape(n, m, state_labels(n), symbol_labels(m, self._vocab))
        self.info.setText(f"n = {n} states, m = {m} symbols")

    def set_state_names(self, names: Optional[Sequence[str]]) -> None:
        """Row names of the top-words table (e.g. ``"3 → NOUN"``); ``None``: "state i"."""
        self._row_names = None if names is None else [str(s) for s in names]
        B = (self._params or {}).get("emissionprob")
        if B is not None and np.shape(B)[1] > HEATMAP_MAX_SYMBOLS:
            self.top_words.set_emissions(B, self._vocab, self._row_names)

    def showing_top_words(self) -> bool:
        """Whether B is shown as a table of top words (m > :data:`HEATMAP_MAX_SYMBOLS`)."""
        return self.emission_stack.currentWidget() is self.top_words

    def image_data(self, name: str) -> Optional[np.ndarray]:
        """Displayed matrix: ``"startprob"`` (1 x n), ``"transmat"`` or ``"emissionprob"``."""
        return self.heatmaps()[name].image_data()

    def clear(self) -> None:
        self._params = None
        self._row_names = None
        self.top_words.clear()
        self.emission_stack.setCurrentWidget(self.emission)
        for h in self.heatmaps().values():
            h.clear()
        self.info.setText("")

"""How B is shown for a large vocabulary (words): each state's most probable symbols in a table,
readable where an n x 10,000 emission heatmap is not (:class:`app.views.heatmap.ParameterHeatmaps`
switches to it).  Nothing here is about tagging."""
from __future__ import annotations

import contextlib
from typing import Iterator, List, Optional, Sequence

import numpy as np
from PySide6 import QtCore, QtWidgets

from .theme import state_labels

__all__ = ["TopWordsTable", "TOP_WORDS", "top_symbols"]

#: words listed per state
TOP_WORDS = 10


def top_symbols(B: np.ndarray, top: int) -> np.ndarray:
    """Each row's ``top`` largest entries' columns, largest first, ties by column: the first ``top``
    columns of each row's stable sort by decreasing value (display only).

    Only candidates are sorted: the entries at least as large as the top-th largest of a sample of
    the row's columns (every ``step``-th).  That bound is never above the row's own top-th largest,
    so every entry of the answer is a candidate, ties included.  A full partition of a 45 x 30,499
    matrix (the Brown corpus's vocabulary) copied it and took 10-23 ms of the GUI thread per
    snapshot; a row whose candidates are too few (NaN) is sorted whole."""
    B = np.asarray(B)
    n, m = B.shape
    top = min(int(top), m)
    if m <= 4 * top:
        return np.argsort(-B, axis=1, kind="stable")[:, :top]
    step = max(1, int(np.sqrt(m / max(top, 1))))
    sample = B[:, ::step]
    bound = np.partition(sample, sample.shape[1] - top, axis=1)[:, sample.shape[1] - top]
    order = np.empty((n, top), dtype=np.int64)
    for i in range(n):
        cand = np.flatnonzero(B[i] >= bound[i])
        if cand.size < top:
            order[i] = np.argsort(-B[i], kind="stable")[:top]
        else:
            order[i] = cand[np.argsort(-B[i, cand], kind="stable")[:top]]
    return order


class TopWordsTable(QtWidgets.QWidget):
    """Each state's :data:`TOP_WORDS` most probable symbols, ``word (probability)`` per cell."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None, top: int = TOP_WORDS) -> None:
        super().__init__(parent)
        self._top = int(top)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.title = QtWidgets.QLabel("")
        f = self.title.font()
        f.setBold(True)
        self.title.setFont(f)
        self.title.setWordWrap(True)
        lay.addWidget(self.title)
        self.table = QtWidgets.QTableWidget(0, self._top)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setHorizontalHeaderLabels([str(i + 1) for i in range(self._top)])
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideNone)
        lay.addWidget(self.table, 1)
        self.setMinimumSize(200, 160)   # (a table: it scrolls) two rows of Overview fit a 1366 x 768 screen;
        # beside pi, A and the embeddings on a 1024 x 600 netbook with the Data column open

    def set_emissions(self, emissionprob, vocabulary: Optional[Sequence[str]],
                      row_labels: Optional[Sequence[str]] = None) -> None:
        """Fill from an emission matrix (n x m) and the symbol names (``None``: indices)."""
        B = np.asarray(emissionprob, dtype=np.float64)
        n, m = B.shape
        named = vocabulary is not None and len(vocabulary) == m

        def name(k: int) -> str:   # only the words shown are named (not 30,000 at every snapshot)
            return str(vocabulary[k]) if named else str(k)
        top = min(self._top, m)
        order = top_symbols(B, top)
        t = self.table
        rows = list(row_labels) if row_labels is not None and len(row_labels) == n \
            else [f"state {s}" for s in state_labels(n)]
        self._words = [[name(int(k)) for k in order[i]] for i in range(n)]
        with self._sizes_fixed():
            t.setRowCount(n)
            t.setColumnCount(top)
            t.setHorizontalHeaderLabels([str(i + 1) for i in range(top)])
            t.setVerticalHeaderLabels(rows)
            for i in range(n):
                for j in range(top):
                    k = int(order[i, j])
                    word = self._words[i][j]
                    tip = f"state {i}: P({word}) = {B[i, k]:.6g}"
                    item = t.item(i, j)
                    if item is None:
                        item = QtWidgets.QTableWidgetItem(word)  # the words; probabilities in tooltips
                        item.setToolTip(tip)
                        t.setItem(i, j, item)
                    else:
                        item.setText(word)
                        item.setToolTip(tip)
        # the title is part of exported figures: the hint to hover is in the tooltip only
        self.title.setText(f"Top {top} of {m} symbols per state, most probable first")
        self.table.setToolTip("Hover a word for its emission probability")

    @contextlib.contextmanager
    def _sizes_fixed(self) -> Iterator[None]:
        """The table filled in one pass: with "resize to contents" on, every cell or header label set
        measures the whole table again (a 20 x 10 table took 0.3-0.7 s of the GUI thread per snapshot,
        issue 24.13; the row names of a job being shown 14 ms); the sizes are fitted once at the end."""
        t = self.table
        h, v = t.horizontalHeader(), t.verticalHeader()
        h.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Fixed)
        v.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Fixed)
        t.setUpdatesEnabled(False)
        try:
            yield
        finally:
            fit = QtWidgets.QHeaderView.ResizeMode.ResizeToContents
            h.setSectionResizeMode(fit)
            v.setSectionResizeMode(fit)
            t.setUpdatesEnabled(True)

    @contextlib.contextmanager
    def figure_mode(self) -> Iterator[None]:
        """While the table is exported (:mod:`app.export`): every column inside the figure.  When the
        words are wider than the room, the columns share the width and long words end in "…" (a figure
        cannot scroll: without this, the PNG of a words dashboard stopped after column 7)."""
        t, header = self.table, self.table.horizontalHeader()
        cols = t.columnCount()
        room = t.viewport().width()
        needed = sum(t.columnWidth(c) for c in range(cols))
        if cols == 0 or needed <= room:
            yield
            return
        widths = [t.columnWidth(c) for c in range(cols)]
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Fixed)
        t.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        share = max(1, room // cols)
        for c in range(cols):
            t.setColumnWidth(c, share if c < cols - 1 else max(1, room - share * (cols - 1)))
        try:
            yield
        finally:
            t.setTextElideMode(QtCore.Qt.TextElideMode.ElideNone)
            for c, w in enumerate(widths):
                t.setColumnWidth(c, w)
            header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)

    def set_pending(self, n: int, m: int) -> None:
        """The table of ``n`` states before the model has parameters (a job in its start): rows named,
        cells empty, the title saying what will come."""
        top = min(self._top, int(m))
        with self._sizes_fixed():
            self.table.clearContents()
            self.table.setRowCount(int(n))
            self.table.setColumnCount(top)
            self.table.setHorizontalHeaderLabels([str(i + 1) for i in range(top)])
            self.table.setVerticalHeaderLabels([f"state {s}" for s in state_labels(int(n))])
        self._words = []
        self.title.setText(f"Top {top} of {int(m)} symbols per state: filled in with the model's first parameters")

    def words(self) -> List[List[str]]:
        """The words listed, one list per state."""
        return [list(w) for w in getattr(self, "_words", [])]

    def clear(self) -> None:
        self.table.setRowCount(0)
        self._words = []
        self.title.setText("")

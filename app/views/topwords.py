"""How B is shown for a large vocabulary (words): each state's most probable symbols in a table,
readable where an n x 10,000 emission heatmap is not (:class:`app.views.heatmap.ParameterHeatmaps`
switches to it).  Nothing here is about tagging."""
from __future__ import annotations

import contextlib
from typing import Iterator, List, Optional, Sequence

import numpy as np
from PySide6 import QtCore, QtWidgets

from .tablecopy import install_copy
from .theme import state_labels

__all__ = ["TopWordsTable", "TOP_WORDS", "top_symbols", "fit_widths"]

#: words listed per state
TOP_WORDS = 10
#: a column narrowed to fit the table's width keeps room for this much of a word (then "…")
LEAST_SHOWN = "000…"


def fit_widths(natural: Sequence[int], room: int, least: int) -> List[int]:
    """Column widths that fit ``room`` pixels: the ``natural`` widths where they fit; otherwise the
    widest columns are cut to one common width (the largest that fits; the pixels left over go one
    each to the first cut columns), so narrow columns keep theirs.  No column is cut below ``least``:
    when the columns do not fit even so, they keep their natural widths (the table scrolls: whole
    words rather than stubs)."""
    natural = [max(0, int(w)) for w in natural]
    room, least = int(room), max(1, int(least))
    if sum(natural) <= room or sum(min(w, least) for w in natural) > room:
        return natural
    left, cap = room, 0
    ranked = sorted(natural)
    for i, w in enumerate(ranked):
        share = left // (len(ranked) - i)
        if w > share:
            cap = share
            break
        left -= w
    widths = [min(w, cap) for w in natural]
    spare = room - sum(widths)
    for c, w in enumerate(natural):
        if spare <= 0:
            break
        if w > cap:
            widths[c] += 1
            spare -= 1
    return widths


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
        # the columns' widths are set by _fit_columns (their words' widths, cut to the table's width; a
        # column dragged wider stays so until the next snapshot or resize)
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Interactive)
        self.table.verticalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self._natural: List[int] = []
        self.table.viewport().installEventFilter(self)
        install_copy(self.table)          # Ctrl+C and the right-click menu: the words as text
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
        v = t.verticalHeader()
        v.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Fixed)
        t.setUpdatesEnabled(False)
        try:
            yield
        finally:
            v.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
            h = t.horizontalHeader()
            self._natural = [max(t.sizeHintForColumn(c), h.sectionSizeHint(c)) for c in range(t.columnCount())]
            self._fit_columns()
            t.setUpdatesEnabled(True)

    def least_width(self) -> int:
        """The narrowest a column is cut to on screen: :data:`LEAST_SHOWN` and the cell's margins."""
        return self.table.fontMetrics().horizontalAdvance(LEAST_SHOWN) + 8   # (a cell pads its text by 7 px)

    def _fit_columns(self, least: Optional[int] = None) -> None:
        """Every column on screen where the words allow: the widest columns share what the table's
        width leaves (:func:`fit_widths`, long words end in "…", the whole word in the tooltip); where
        that would cut a column below :meth:`least_width`, the columns keep their words' widths and
        the table scrolls sideways.  At the app's default window a words dashboard showed 7 of the 10
        columns before."""
        t = self.table
        widths = fit_widths(self._natural, t.viewport().width(), self.least_width() if least is None else least)
        for c, w in enumerate(widths[:t.columnCount()]):
            if t.columnWidth(c) != w:
                t.setColumnWidth(c, w)

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QtCore.QEvent.Type.Resize and watched is self.table.viewport() \
                and event.size().width() != event.oldSize().width():
            # a wider or narrower table (a dock or the splitter moved); not a height change (the sideways
            # scroll bar that a column dragged wider brings would undo the drag)
            self._fit_columns()
        return super().eventFilter(watched, event)

    def column_widths(self) -> List[int]:
        """The columns' widths on screen (pixels)."""
        return [self.table.columnWidth(c) for c in range(self.table.columnCount())]

    @contextlib.contextmanager
    def figure_mode(self) -> Iterator[None]:
        """While the table is exported (:mod:`app.export`): every column inside the figure.  On screen
        a column is not cut below :meth:`least_width` (the table scrolls instead); a figure cannot
        scroll, so here the columns are cut as far as the width needs (without this, the PNG of a
        words dashboard stopped after column 7)."""
        widths = self.column_widths()
        self._fit_columns(least=1)
        try:
            yield
        finally:
            for c, w in enumerate(widths):
                self.table.setColumnWidth(c, w)

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
        self._natural = []
        self.title.setText("")

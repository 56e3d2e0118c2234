"""Compare two finished models: comparable numbers in a table and the difference of their matrices.

States are aligned first: an HMM's states are identified only up to a permutation, so B's
states are matched to A's by their emission distributions (Hungarian assignment,
:func:`densehmm_core.metrics.align_states`) before ``model_b - model_a`` of pi, A and B is
drawn with a diverging colour map symmetric around 0.  Models with different numbers of
states or symbols cannot be subtracted entry-wise; the view says so instead.

Only comparable quantities are listed: the NLL per token of both models on the same data
(computed here through the core when the caller passes the data), the training and test
NLL per token and the co-occurrence MAD only when both jobs trained on the same data,
iterations and the elapsed time (the caller passes the Jobs panel's).  Training losses of
different trainers (−Q, co-occurrence loss, NLL) are never compared.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np
from PySide6 import QtCore, QtWidgets

from .theme import diverging_cmap, fmt_compact, state_labels, symbol_labels, symbol_names
from .heatmap import MatrixHeatmap
from .tablecopy import install_copy
from .widgets import PageStack, Placeholder

__all__ = ["CompareView", "score_both"]


def _model_facts(model) -> Dict[str, object]:
    facts: Dict[str, object] = {}
    facts["model"] = model.kind or type(model).__name__
    facts["states n"] = model.n_states
    B = model.emissionprob_
    facts["symbols m"] = model.n_symbols or (None if B is None else np.shape(B)[1])
    emb = getattr(model, "embeddings_", None)  # dense models only
    if emb:
        U = emb.get("U") if isinstance(emb, dict) else None
        if U is not None:
            facts["dimension l"] = int(np.shape(U)[1])
    try:
        facts["parameters"] = int(model.n_parameters)
    except RuntimeError:  # n_symbols unknown: nothing to count yet
        pass
    return facts


#: metric key -> row name; only these (comparable) numbers are listed, in this order
COMPARABLE = {"train_nll": "train NLL / token", "test_nll": "test NLL / token", "mad": "co-occurrence MAD",
              "step": "iterations", "elapsed": "time (s)"}
#: rows that need both jobs to have trained on the same data
SAME_DATA_ONLY = ("train_nll", "test_nll", "mad")

#: ΔB shows at most this many symbols (a vocabulary: those whose emissions changed most).
DELTA_B_MAX_SYMBOLS = 20


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def score_both(model_a, model_b, data) -> tuple:
    """Both models' NLL per token on ``data`` (:func:`densehmm_core.metrics.normalized_nll`), for
    :meth:`CompareView.set_models`'s ``scores``; ``(None, None, reason)`` when a model cannot score them
    (e.g. symbols it does not know).  Slow on large data: the window runs it off the GUI thread."""
    from densehmm_core.metrics import normalized_nll
    try:
        return normalized_nll(model_a, data), normalized_nll(model_b, data)
    except Exception as exc:  # noqa: BLE001 - said in the view's note; the rest of the comparison stays
        return None, None, str(exc)


#: What the Compare page says before two models are compared.
NOTHING_COMPARED = ("Compare: select two finished jobs or models in the Jobs list (Ctrl+click) and press Compare. "
                    "Their numbers appear side by side, with the differences B − A of π, A and B after B's states "
                    "are matched to A's.")


#: The comparison table's narrowest width (pixels): below its content's width it scrolls sideways itself,
#: and the page does not (a 1024 x 600 netbook).
TABLE_MIN_WIDTH = 240


class _FittedTable(QtWidgets.QTableWidget):
    """A table asking for its content's width (:attr:`content_width`, set by
    :meth:`CompareView._fit_table`), which the page gives it where there is room."""

    content_width = TABLE_MIN_WIDTH
    content_height = 0

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        return QtCore.QSize(max(self.content_width, self.minimumWidth()), super().sizeHint().height())

    def fit_height(self) -> None:
        """Every row shown: the content's height, and the scroll bar's where the table is squeezed."""
        if self.content_height <= 0:
            return
        bar = self.horizontalScrollBar().sizeHint().height() if self.width() < self.content_width else 0
        if (self.minimumHeight(), self.maximumHeight()) != (self.content_height + bar,) * 2:
            self.setFixedHeight(self.content_height + bar)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.fit_height()


class CompareView(QtWidgets.QWidget):
    """Metrics of two models in a table and heatmaps of ``model_b - model_a``."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self._vocab: Optional[Sequence[str]] = None
        self._diffs: Dict[str, Optional[np.ndarray]] = {}
        self._perm: Optional[np.ndarray] = None
        self._symbols: Optional[np.ndarray] = None
        self._table_notes: List[str] = []
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        # nothing compared yet: what the page does and how to start, instead of an empty table
        self.stack = PageStack()
        self.placeholder = Placeholder(NOTHING_COMPARED)
        page = QtWidgets.QWidget()
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(page)
        outer.addWidget(self.stack)
        lay = QtWidgets.QVBoxLayout(page)
        lay.setContentsMargins(2, 2, 2, 2)
        self.header = QtWidgets.QLabel("Compare: select two finished jobs or models.")
        self.header.setWordWrap(True)
        f = self.header.font()
        f.setBold(True)
        self.header.setFont(f)
        lay.addWidget(self.header)
        # what was compared and how (full width: it may be several sentences)
        self.note = QtWidgets.QLabel("")
        self.note.setWordWrap(True)
        lay.addWidget(self.note)
        split = QtWidgets.QHBoxLayout()
        self.table = _FittedTable(0, 3)
        self.table.setHorizontalHeaderLabels(["A", "B", "B − A"])
        self.table.verticalHeader().setVisible(True)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        # columns as wide as their contents (never "0.0116…"); the full value is in the tooltip
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideNone)
        self.table.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.table.setMinimumWidth(TABLE_MIN_WIDTH)
        install_copy(self.table)           # the metrics as text: Ctrl+C, or the right-click menu
        left = QtWidgets.QVBoxLayout()
        left.addWidget(self.table)
        left.addStretch(1)
        split.addLayout(left, 0)   # its content's width where there is room; the matrices take the rest
        right = QtWidgets.QVBoxLayout()
        self.maps: Dict[str, MatrixHeatmap] = {
            "startprob": MatrixHeatmap("Δπ", "", "state", symbol="Δπ", symmetric=True, cmap=diverging_cmap(),
                                       colorbar="horizontal"),
            "transmat": MatrixHeatmap("ΔA", "from state", "to state", symbol="ΔA", symmetric=True,
                                      cmap=diverging_cmap()),
            "emissionprob": MatrixHeatmap("ΔB", "state", "symbol", symbol="ΔB", symmetric=True,
                                          cmap=diverging_cmap()),
        }
        self.maps["startprob"].setMaximumHeight(130)
        self.maps["startprob"].setMinimumHeight(110)
        grid = QtWidgets.QGridLayout()
        grid.addWidget(self.maps["startprob"], 0, 0)
        grid.addWidget(self.maps["transmat"], 1, 0)
        grid.addWidget(self.maps["emissionprob"], 0, 1, 2, 1)
        grid.setColumnStretch(0, 2)
        grid.setColumnStretch(1, 3)
        self.maps_box = QtWidgets.QWidget()
        self.maps_box.setLayout(grid)
        grid.setContentsMargins(0, 0, 0, 0)
        right.addWidget(self.maps_box, 1)
        split.addLayout(right, 5)
        lay.addLayout(split, 1)
        self.maps_box.setVisible(False)

    # ------------------------------------------------------------------ API
    def set_vocabulary(self, vocabulary) -> None:
        self._vocab = symbol_names(vocabulary)

    def set_models(self, name_a: str, model_a, name_b: str, model_b,
                   metrics_a: Optional[dict] = None, metrics_b: Optional[dict] = None,
                   scores=None, data_name: str = "", same_data: Optional[bool] = None,
                   vocabulary: Optional[Sequence[str]] = None) -> None:
        """Compare ``model_a`` and ``model_b``; the matrices shown are ``B - A`` after aligning B's states.
        The comparison stays until the next one (or :meth:`clear`): the job shown elsewhere does not change it.

        Parameters
        ----------
        metrics_a, metrics_b : dict, optional
            Numbers of each job; only :data:`COMPARABLE` keys are shown (``elapsed``: pass the
            Jobs panel's time, ``step``: iterations).
        scores : tuple, optional
            :func:`score_both` of the two models on one data set (computed off the GUI thread by the
            caller): ``(nll_a, nll_b)`` per token, or ``(None, None, reason)`` when they could not be scored.
        data_name : str
            Names that data set in the table.
        same_data : bool, optional
            Whether both jobs trained on the same data; their own train / test NLL and MAD are
            listed only then (``None``: unknown, not listed).
        vocabulary : sequence of str, optional
            The symbols' names (ΔB's axis): model A's own vocabulary when it has one, else this, else
            numbers (never a previous comparison's names).
        """
        metrics_a, metrics_b = dict(metrics_a or {}), dict(metrics_b or {})
        own = getattr(model_a, "vocabulary", None)
        self.set_vocabulary(own if own is not None else vocabulary)      # None: numbers
        self.stack.setCurrentIndex(1)
        self.header.setText(f"Compare  A = {name_a}   with   B = {name_b}")
        self.table.setHorizontalHeaderLabels(["A", "B", "B − A"])
        self.table.horizontalHeaderItem(0).setToolTip(name_a)
        self.table.horizontalHeaderItem(1).setToolTip(name_b)
        fa, fb = _model_facts(model_a), _model_facts(model_b)
        rows: List[tuple] = []
        for k in list(dict.fromkeys(list(fa) + list(fb))):
            rows.append((k, fa.get(k), fb.get(k)))
        notes = []
        if scores is not None:
            label = "NLL / token, same data"
            if scores[0] is not None:
                rows.append((label, scores[0], scores[1]))
                notes.append(f"“{label}”: both models scored on {data_name or 'the same data'}.")
            else:
                notes.append(f"Could not score both models on {data_name or 'the data'}: {scores[2]}")
        for key, label in COMPARABLE.items():
            a, b = metrics_a.get(key), metrics_b.get(key)
            if a is None and b is None:
                continue
            if key in SAME_DATA_ONLY and not same_data:
                continue
            rows.append((label, a, b))
        if not same_data and any(k in metrics_a or k in metrics_b for k in SAME_DATA_ONLY):
            notes.append("The jobs did not train on the same data (or it is not known): their own train / "
                         "test NLL and MAD are not comparable and are not listed.")
        self._table_notes = notes
        self.table.setRowCount(len(rows))
        self.table.setVerticalHeaderLabels([r[0] for r in rows])
        for i, (_, a, b) in enumerate(rows):
            diff = None
            if _is_number(a) and _is_number(b):
                d = float(b) - float(a)
                diff = int(d) if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) else d
            for j, v in enumerate((a, b, diff)):
                item = QtWidgets.QTableWidgetItem(fmt_compact(v))
                item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                if v is not None and _is_number(v):
                    item.setToolTip(repr(int(v)) if isinstance(v, (int, np.integer)) else repr(float(v)))
                elif v is not None:
                    item.setToolTip(str(v))
                self.table.setItem(i, j, item)
        self._fit_table()
        self._show_differences(model_a, model_b)

    def permutation(self) -> Optional[np.ndarray]:
        """State ``perm[i]`` of model B is shown as state ``i`` (matched to A's state ``i``)."""
        return None if self._perm is None else self._perm.copy()

    def _fit_table(self) -> None:
        """Size the table to its contents: every value whole, no scroll bars (also while hidden)."""
        t = self.table
        t.resizeColumnsToContents()
        t.resizeRowsToContents()
        vh, hh = t.verticalHeader(), t.horizontalHeader()
        cols = sum(max(t.columnWidth(j), t.sizeHintForColumn(j), hh.sectionSizeHint(j)) for j in range(3))
        rows = sum(max(t.rowHeight(i), t.sizeHintForRow(i)) for i in range(t.rowCount()))
        frame = 2 * t.frameWidth()
        t.content_height = hh.sizeHint().height() + rows + frame + 2
        t.content_width = max(TABLE_MIN_WIDTH, vh.sizeHint().width() + cols + frame + 4)
        t.fit_height()
        t.updateGeometry()

    def showEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().showEvent(ev)
        if self.table.rowCount():
            self._fit_table()

    def table_rows(self) -> Dict[str, List[str]]:
        """Row name -> the three cell texts (for tests and export checks)."""
        out = {}
        for i in range(self.table.rowCount()):
            out[self.table.verticalHeaderItem(i).text()] = [
                self.table.item(i, j).text() if self.table.item(i, j) else "" for j in range(3)]
        return out

    def shown_symbols(self) -> Optional[np.ndarray]:
        """Indices of the symbols ΔB shows, in its column order (all of them up to
        ``DELTA_B_MAX_SYMBOLS``; beyond, those whose emissions changed most, by the sum of ``|ΔB|``)."""
        return None if self._symbols is None else self._symbols.copy()

    def difference(self, name: str) -> Optional[np.ndarray]:
        """The displayed difference ``B - A`` of ``"startprob"``, ``"transmat"`` or ``"emissionprob"``."""
        d = self._diffs.get(name)
        return None if d is None else d.copy()

    def clear(self) -> None:
        self.stack.setCurrentWidget(self.placeholder)
        self.table.setRowCount(0)
        self.header.setText("Compare: select two finished jobs or models.")
        self.note.setText("")
        self._diffs = {}
        self._perm = None
        self._symbols = None
        self._table_notes = []
        for h in self.maps.values():
            h.clear()
        self.maps_box.setVisible(False)

    # ------------------------------------------------------------- internals
    def _note(self, text: str) -> None:
        self.note.setText("\n".join(self._table_notes + [text]))

    def _show_differences(self, model_a, model_b) -> None:
        self._diffs = {}
        self._perm = None
        self._symbols = None
        mats = {}
        for key, attr in (("startprob", "startprob_"), ("transmat", "transmat_"), ("emissionprob", "emissionprob_")):
            a, b = getattr(model_a, attr, None), getattr(model_b, attr, None)
            mats[key] = (None if a is None else np.asarray(a, float), None if b is None else np.asarray(b, float))
        A_a, A_b = mats["transmat"]
        B_a, B_b = mats["emissionprob"]
        if A_a is None or A_b is None or B_a is None or B_b is None:
            self._note("One of the models has no parameters: nothing to subtract.")
            self.maps_box.setVisible(False)
            return
        if A_a.shape != A_b.shape:
            self._note(f"The models have different numbers of states (n = {A_a.shape[0]} and "
                              f"n = {A_b.shape[0]}): their matrices cannot be subtracted entry-wise. "
                              "Compare them through the metrics, or open each in the main views.")
            self.maps_box.setVisible(False)
            return
        if B_a.shape != B_b.shape:
            self._note(f"The models have different numbers of symbols (m = {B_a.shape[1]} and "
                              f"m = {B_b.shape[1]}): their emission matrices cannot be subtracted.")
            self.maps_box.setVisible(False)
            return
        n, m = B_a.shape
        from densehmm_core.metrics import align_states
        perm = align_states(B_a, B_b)
        self._perm = perm
        aligned = {"startprob": None if mats["startprob"][1] is None else mats["startprob"][1][perm],
                   "transmat": A_b[np.ix_(perm, perm)], "emissionprob": B_b[perm]}
        for key, (a, b) in mats.items():
            if a is None or aligned[key] is None:
                continue
            self._diffs[key] = aligned[key] - a
        if "startprob" in self._diffs:
            self.maps["startprob"].set_matrix(self._diffs["startprob"], None, state_labels(n))
        self.maps["transmat"].set_matrix(self._diffs["transmat"], state_labels(n), state_labels(n))
        dB = self._diffs["emissionprob"]
        labels = symbol_labels(m, self._vocab)
        cols = np.arange(m)
        if m > DELTA_B_MAX_SYMBOLS:
            # a 17 x 2,000 heatmap of words is faint hairlines under a fence of every 200th label: the
            # symbols whose emissions changed most, most changed first, each named
            cols = np.argsort(-np.abs(dB).sum(axis=0), kind="stable")[:DELTA_B_MAX_SYMBOLS]
            self.maps["emissionprob"].set_title(f"ΔB: {DELTA_B_MAX_SYMBOLS} of {m} symbols")
        else:
            self.maps["emissionprob"].set_title("ΔB")
        self._symbols = cols
        self.maps["emissionprob"].set_matrix(dB[:, cols], state_labels(n), [labels[c] for c in cols])
        big = max(float(np.max(np.abs(d))) for d in self._diffs.values())
        moved = [f"{int(perm[i])}→{i}" for i in range(n) if perm[i] != i]
        how = ("B's states were matched to A's by their emission distributions (Hungarian assignment, "
               "total-variation cost)" + (f"; B's state j is shown as state i: {', '.join(moved)}" if moved
                                          else "; the matching keeps B's order"))
        few = (f" ΔB shows the {len(self._symbols)} of {m} symbols whose emissions changed most (the largest sums "
               "of |Δ| over the states), most changed first." if len(self._symbols) < m else "")
        self._note(f"Differences B − A (blue: smaller in B, red: larger in B; largest |Δ| = {big:.3g}). {how}.{few}")
        self.maps_box.setVisible(True)

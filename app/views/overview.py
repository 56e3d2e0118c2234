"""Before / after overview in the spirit of the paper's Figure 1.

Two rows (before training, after training) of three panels: the embeddings (DenseHMM
only), the transition matrix A and the emission matrix B, all on the same 0..1 colour
scale so the two rows compare at a glance; a vocabulary-sized B (more than
:data:`~app.views.heatmap.HEATMAP_MAX_SYMBOLS` symbols) as each state's top words, as on the dashboard.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from PySide6 import QtWidgets

from ..live import DrawQueue
from .theme import state_labels, symbol_labels, symbol_names
from .widgets import PageStack, Placeholder
from .embeddings import EMBEDDING_SETS, EmbeddingScatter
from .heatmap import HEATMAP_MAX_SYMBOLS, MatrixHeatmap
from .topwords import TopWordsTable

__all__ = ["OverviewView"]


class _Row:
    def __init__(self, title: str) -> None:
        self.label = QtWidgets.QLabel(title)
        f = self.label.font()
        f.setBold(True)
        f.setPointSizeF(f.pointSizeF() * 1.1)
        self.label.setFont(f)
        self.embeddings = EmbeddingScatter(controls=False, title="Embeddings")
        self.transmat = MatrixHeatmap("Transition matrix A", "from state", "to state", symbol="A")
        self.emission = MatrixHeatmap("Emission matrix B", "state", "symbol", symbol="B")
        # a vocabulary-sized B (words): each state's top words, as on the dashboard (a 17 x 2,000 heatmap
        # is a dark strip under a fence of labels)
        self.top_words = TopWordsTable()
        self.emission_stack = PageStack()
        self.emission_stack.addWidget(self.emission)
        self.emission_stack.addWidget(self.top_words)
        self.params: Optional[dict] = None


#: the parts a row is drawn in, one per event-loop turn: its matrices (A, and B or the top words),
#: then its embeddings (each 40-50 ms of the GUI thread for a 30,000-word model)
ROW_PARTS = ("matrices", "embeddings")


class OverviewView(QtWidgets.QWidget):
    """Embeddings and matrices before and after training, side by side."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self._vocab: Optional[Sequence[str]] = None
        self.before = _Row("Before training")
        self.after = _Row("After training")
        # while hidden (another tab), updates are only stored (newest per row): the live stream
        # must stay cheap; while it shows, they are drawn from the event loop, one part of a row per turn
        # (ROW_PARTS: a 30,000-word model's two rows took 0.15 s at once when the tab was opened)
        # while the parts are drawn the page is not painted: it is painted once, whole, after the last
        # (each part repainted what the others had drawn: opening Overview at 30,000 words froze the
        # window for 66-76 ms, now 43-48 in 19 rounds of 20: docs/PERFORMANCE.md)
        self._draw = DrawQueue(self, visible=self.isVisible, on_drawn=lambda _cost: self._thaw())
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.stack = PageStack()
        self.placeholder = Placeholder("Overview: the initial model and the trained model side by side "
                                       "appear here once a job has started and produced parameters.")
        self.page = page = QtWidgets.QWidget()
        grid = QtWidgets.QGridLayout(page)
        grid.setContentsMargins(0, 0, 0, 0)
        for r, row in enumerate((self.before, self.after)):
            grid.addWidget(row.label, 2 * r, 0, 1, 3)
            grid.addWidget(row.embeddings, 2 * r + 1, 0)
            grid.addWidget(row.transmat, 2 * r + 1, 1)
            grid.addWidget(row.emission_stack, 2 * r + 1, 2)
            grid.setRowStretch(2 * r + 1, 1)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)
        grid.setColumnStretch(2, 3)
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(page)
        lay.addWidget(self.stack)
        self._set_has_embeddings(False)

    def set_vocabulary(self, vocabulary: Optional[Sequence[str]]) -> None:
        self._vocab = symbol_names(vocabulary)
        for row in (self.before, self.after):
            row.embeddings.set_vocabulary(self._vocab)
            if row.params is not None and not self._queued(row):
                self._queue(row, row.params, row.label.text())

    def set_initial(self, params: Optional[dict], title: str = "Before training") -> None:
        """The model before training (``params`` as in a ProgressEvent, step 0)."""
        self._queue(self.before, params, title)

    def set_final(self, params: Optional[dict], title: str = "After training") -> None:
        """The current / trained model."""
        self._queue(self.after, params, title)

    def flush(self) -> None:
        """Draw every pending row now (an export, a test); shown, the view draws them from the event loop."""
        self._draw.run_all()
        self._thaw()

    def _thaw(self) -> None:
        """Paint the page again (after its parts, an export, or a clear)."""
        if not self.page.updatesEnabled():
            self.page.setUpdatesEnabled(True)

    def _show_safe(self, row: _Row, params: Optional[dict], title: str, part: str) -> None:
        if self.page.updatesEnabled():
            self.page.setUpdatesEnabled(False)      # until the last part (_thaw)
        try:
            self._show(row, params, title, part)
        except Exception as exc:  # noqa: BLE001 - shown in the row's title; never raised from showEvent
            row.label.setText(f"{title}: cannot show these parameters ({type(exc).__name__}: {exc})")

    def prepare_export(self) -> None:
        """Called by :func:`app.export.export_widget`: draw pending updates before rendering."""
        self.flush()

    @property
    def draw_pending(self) -> bool:
        """Whether rows wait to be drawn (hidden: until the view shows; shown: the next event-loop turns)."""
        return self._draw.pending

    def has_content(self) -> bool:
        return self._draw.pending or self.before.params is not None or self.after.params is not None

    def showEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().showEvent(ev)
        self._draw.resume()

    def set_symbol_frequencies(self, counts) -> None:
        """Symbol counts of the data (None: unknown): with a large vocabulary both scatters draw the most
        frequent symbols in full and labelled, the rest faint, as the dashboard's does (2,000 full-size
        diamonds covered the states)."""
        for row in (self.before, self.after):
            row.embeddings.set_symbol_frequencies(counts, redraw=False)
            if row.params is not None and not self._queued(row):   # drawn again when the view shows
                self._queue(row, row.params, row.label.text())

    def clear(self) -> None:
        self._draw.clear()
        self._thaw()
        self._show_row(self.before, True)
        self.before.label.setText("Before training")
        for row in (self.before, self.after):
            row.params = None
            row.embeddings.clear()
            row.transmat.clear()
            row.emission.clear()
            row.top_words.clear()
            row.emission_stack.setCurrentWidget(row.emission)
        self._set_has_embeddings(False)
        self.stack.setCurrentWidget(self.placeholder)

    # ------------------------------------------------------------- internals
    def _queue(self, row: _Row, params: Optional[dict], title: str) -> None:
        if not params:
            return
        for part in ROW_PARTS:     # (drawn from the event loop, one part per turn, while the view shows)
            self._draw.put((id(row), part), self._show_safe, row, params, title, part)

    def _queued(self, row: _Row) -> bool:
        return any(self._draw.has((id(row), part)) for part in ROW_PARTS)

    def _set_has_embeddings(self, on: bool) -> None:
        for row in (self.before, self.after):
            row.embeddings.setVisible(on and row.transmat.isVisibleTo(self.page))

    def _show_row(self, row: _Row, on: bool) -> None:
        """Show or hide a row's plots (its title stays; a hidden row gives its height to the other)."""
        for w in (row.embeddings, row.transmat, row.emission_stack):
            w.setVisible(on)
        grid = self.page.layout()
        if isinstance(grid, QtWidgets.QGridLayout):
            grid.setRowStretch(1 if row is self.before else 3, 1 if on else 0)

    def set_initial_not_recorded(self) -> None:
        """The initial model of the job shown is not known (a model read from a file or a session keeps
        only its trained parameters; the caller knows, the view does not guess): the row says so instead
        of empty plots, until :meth:`set_initial` or :meth:`clear`."""
        self._show_row(self.before, False)
        self.before.label.setText("Before training: not recorded for this job (a model read from a file or "
                                  "a session keeps only its trained parameters)")

    def _show(self, row: _Row, params: Optional[dict], title: str, part: str) -> None:
        if not params:
            return
        if part == "embeddings":
            if any(params.get(k) is not None for k in EMBEDDING_SETS):
                row.embeddings.set_embeddings(params)
            return
        row.params = params
        row.label.setText(title)
        if row is self.before:
            self._show_row(row, True)
        A, B = params.get("transmat"), params.get("emissionprob")
        if A is not None:
            n = np.shape(A)[0]
            row.transmat.set_matrix(A, state_labels(n), state_labels(n))
        if B is not None:
            n, m = np.shape(B)
            if m > HEATMAP_MAX_SYMBOLS:
                row.top_words.set_emissions(B, self._vocab)
                row.emission_stack.setCurrentWidget(row.top_words)
            else:
                row.emission.set_matrix(B, state_labels(n), symbol_labels(m, self._vocab))
                row.emission_stack.setCurrentWidget(row.emission)
        any_emb = any(r.params is not None and any(r.params.get(k) is not None for k in EMBEDDING_SETS)
                      for r in (self.before, self.after))
        self._set_has_embeddings(any_emb)
        self.stack.setCurrentIndex(1)

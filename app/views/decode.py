"""Decode view: one sequence with its Viterbi state path and posterior state probabilities.

The sequence's symbols label the x axis of a coloured track (one colour per hidden
state, the Viterbi path of ``model.decode`` / ``model.predict``); beneath it, a heat
strip shows the posterior ``P(state | sequence)`` from ``model.predict_proba`` with the
Viterbi path drawn over it.  All inference is the core's; this view only draws.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from .theme import (as_single, label_axis_text, make_graphics_widget, sequential_cmap, state_colors, style_plot,
                    symbol_labels, symbol_names, theme_colors)
from .axes import GappedAxis, LabelAxis
from .tablecopy import install_copy
from .widgets import ColorKey, CompactComboBox, HeaderLabel, PageStack, Placeholder

__all__ = ["DecodeView"]

#: Initially visible window (positions) for long sequences; pan / zoom to see the rest.
INITIAL_WINDOW = 250
#: Positions listed in the words / gold / predicted tag table (a sentence fits; longer: the start).
TAG_TABLE_MAX = 400
#: Sequences sampled from the model when no data set is given.
N_SAMPLED = 10
SAMPLED_LENGTH = 120
#: Title of the state track; once a sequence is shown, :meth:`DecodeView.figure_title` names it.
TRACK_TITLE = "Viterbi state path"
#: Longest sequence id put into the title (longer ones end in "…"; the id box shows it whole).
TITLE_ID_CHARS = 40


class _Rows(Sequence[np.ndarray]):
    """The sequences (or gold tag rows) of a data set, each made a flat array when it is looked at:
    the view shows one at a time, and converting all 57,340 of a Brown corpus when a job was shown
    held the GUI thread for about 40 ms."""

    def __init__(self, rows: Sequence[Any]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i):  # type: ignore[override]  # (an index only; the view never slices)
        return np.asarray(self._rows[i]).reshape(-1)


def _sequences_of(data: Any) -> Sequence[np.ndarray]:
    if data is None:
        return []
    seqs = getattr(data, "sequences", data)
    if isinstance(seqs, np.ndarray) and seqs.ndim == 1 and seqs.dtype != object:
        seqs = [seqs]
    return _Rows(seqs)


def _names_of(data: Any, count: int) -> Optional[List[str]]:
    for attr in ("names", "ids", "headers", "record_ids"):
        v = getattr(data, attr, None)
        if v is not None:
            try:
                if len(v) == count:
                    return [str(s) for s in v]
            except TypeError:
                pass
    return None


class DecodeView(QtWidgets.QWidget):
    """Pick a data set and a sequence (by number or id); see its Viterbi path (coloured track)
    and posteriors (heat strip).

    ``dataset_chosen(index)`` asks the window for another data set (:meth:`set_datasets`
    lists them); the window then calls :meth:`set_model` with that data, read with the
    model's alphabet.
    """

    dataset_chosen = QtCore.Signal(int)

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self._model = None
        self._pending: Optional[int] = None   # a sequence to decode once the view is shown or read
        self._seqs: Sequence[np.ndarray] = []
        self._names: Optional[List[str]] = None
        self._vocab: Optional[Sequence[str]] = None
        self._source = ""
        self._path: Optional[np.ndarray] = None
        self._post: Optional[np.ndarray] = None
        self._current = 0   # index of the sequence drawn (the spin box may already show another)
        self._logprob: Optional[float] = None
        self._gold: Optional[Sequence[np.ndarray]] = None   # gold tags per sequence (tagged corpora)
        self._tag_names: Optional[List[str]] = None
        self._state_tags: Optional[np.ndarray] = None  # mapped tag of each state (M-1)

        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        # the choosers and their captions: on screen only; an exported figure names the sequence
        # in the track's title instead (app.export hides widgets marked "exportHidden")
        self.controls = QtWidgets.QWidget()
        self.controls.setProperty("exportHidden", True)
        row = QtWidgets.QHBoxLayout(self.controls)
        row.setContentsMargins(0, 0, 0, 0)
        self.data_label = QtWidgets.QLabel("Data:")
        row.addWidget(self.data_label)
        self.data_box = CompactComboBox(28)   # long file names must not widen the window
        self.data_box.setToolTip("The data set whose sequences are decoded (read with the model's alphabet)")
        self.data_box.activated.connect(self.dataset_chosen)
        row.addWidget(self.data_box)
        for w in (self.data_label, self.data_box):
            w.setVisible(False)
        row.addWidget(QtWidgets.QLabel("Sequence:"))
        self.spin = QtWidgets.QSpinBox()
        self.spin.setMinimum(0)
        self.spin.setMaximum(0)
        self.spin.setKeyboardTracking(False)
        self.spin.valueChanged.connect(self._on_index)
        row.addWidget(self.spin)
        # a long sequence id must not widen the view (and so the window): elided, whole in the tooltip
        self.seq_label = HeaderLabel("", max_lines=1, bold=False)
        row.addWidget(self.seq_label, 1)
        self.find_edit = QtWidgets.QLineEdit()
        self.find_edit.setPlaceholderText("Find sequence by id…")
        self.find_edit.setClearButtonEnabled(True)
        self.find_edit.setToolTip("Type a sequence's id (or part of it) and press Enter")
        self.find_edit.setMaximumWidth(260)
        self._completer_model = QtCore.QStringListModel(self)
        completer = QtWidgets.QCompleter(self._completer_model, self)
        completer.setCaseSensitivity(QtCore.Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(QtCore.Qt.MatchFlag.MatchContains)
        completer.activated.connect(self.find_sequence)
        self.find_edit.setCompleter(completer)
        self._completer_stale = False   # the ids of new data wait for the box's focus (_fill_completer)
        self.find_edit.returnPressed.connect(lambda: self.find_sequence(self.find_edit.text()))
        row.addWidget(self.find_edit)
        lay.addWidget(self.controls)
        # at most two lines: with many states the rest is read by hovering the path (hover_text)
        self.legend_label = ColorKey("State colours:", max_lines=2,
                                     more_tip="Hover the path or the posteriors to read a position's state.")
        lay.addWidget(self.legend_label)

        self.stack = PageStack()
        self.placeholder = Placeholder("Decode: finish or open a model to see the Viterbi path and the "
                                       "posterior state probabilities of a sequence.")
        self.graphics = make_graphics_widget(self)
        self._sym_axis = LabelAxis("bottom")
        self._state_axis = LabelAxis("left")
        self._track_axis = LabelAxis("left")
        self.track_plot: pg.PlotItem = self.graphics.addPlot(
            row=0, col=0, axisItems={"bottom": self._sym_axis, "left": self._track_axis})
        style_plot(self.track_plot, self, TRACK_TITLE)
        label_axis_text(self.track_plot, "bottom", "symbol", self)
        self.track_plot.setMouseEnabled(x=True, y=False)
        self.track_plot.hideButtons()
        self.track = pg.ImageItem(axisOrder="row-major")
        self.track_plot.addItem(self.track)
        self._track_axis.set_labels(["path"])
        self.graphics.ci.layout.setRowStretchFactor(0, 1)

        self.post_plot: pg.PlotItem = self.graphics.addPlot(row=1, col=0, axisItems={"left": self._state_axis,
                                                                                   "bottom": GappedAxis("bottom")})
        style_plot(self.post_plot, self, "Posterior state probabilities P(state | sequence)")
        label_axis_text(self.post_plot, "left", "state", self)
        label_axis_text(self.post_plot, "bottom", "position t", self)
        self.post_plot.invertY(True)
        self.post_plot.setMouseEnabled(x=True, y=False)
        self.post_plot.hideButtons()
        self.post_plot.setXLink(self.track_plot)
        self.post = pg.ImageItem(axisOrder="row-major")
        self.post_plot.addItem(self.post)
        self.path_curve = pg.PlotDataItem([], [], pen=None, symbol="s", symbolSize=4,
                                          symbolBrush=pg.mkBrush(255, 255, 255, 220), symbolPen=None)
        self.post_plot.addItem(self.path_curve)
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=sequential_cmap(), interactive=False,
                                        width=12, colorMapMenu=False)
        self.colorbar.setImageItem(self.post)
        # own layout column (not inside the plot) so both plots keep the same width and align
        self.graphics.addItem(self.colorbar, row=1, col=1)
        _, fg = theme_colors(self)
        self.colorbar.axis.setPen(pg.mkPen(fg))
        self.colorbar.axis.setTextPen(pg.mkPen(fg))
        self.graphics.ci.layout.setRowStretchFactor(1, 3)
        self.graphics.scene().sigMouseMoved.connect(self._hover)
        self.track_plot.getAxis("left").setWidth(50)
        self.post_plot.getAxis("left").setWidth(50)

        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.graphics)
        lay.addWidget(self.stack, 1)
        # tagged corpora: the words with their gold tag and the mapped tag of their Viterbi state
        self.tag_table = QtWidgets.QTableWidget(3, 0)
        self.tag_table.setVerticalHeaderLabels(["word", "gold tag", "predicted"])
        self.tag_table.horizontalHeader().setVisible(False)
        self.tag_table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tag_table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.tag_table.setTextElideMode(QtCore.Qt.TextElideMode.ElideNone)
        self.tag_table.setVisible(False)
        self.tag_table.installEventFilter(self)     # its height follows its width (_fit_tag_table_height)
        install_copy(self.tag_table)
        self.find_edit.installEventFilter(self)     # its completer filled on focus (_fill_completer)
        lay.addWidget(self.tag_table)
        self.status = QtWidgets.QLabel("")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.setMinimumSize(300, 260)

    # ------------------------------------------------------------------ API
    def set_datasets(self, names: Sequence[str], current: int) -> None:
        """The data sets offered in the "Data" box (shown when there are any); ``current`` is selected."""
        self.data_box.blockSignals(True)
        self.data_box.clear()
        self.data_box.addItems([str(n) for n in names])
        if 0 <= current < len(names):
            self.data_box.setCurrentIndex(current)
        self.data_box.blockSignals(False)
        for w in (self.data_label, self.data_box):
            w.setVisible(bool(names))

    def find_sequence(self, text: str) -> Optional[int]:
        """Show the sequence whose id is ``text`` (else the first whose id contains it, any case);
        returns its index, or None (said in the status line) when no id matches."""
        text = str(text).strip()
        if not text or not self._seqs:
            return None
        names = self._names or [str(i) for i in range(len(self._seqs))]
        low = text.lower()
        hits = [i for i, n in enumerate(names) if n == text] or [i for i, n in enumerate(names) if low in n.lower()]
        if not hits:
            self._show_error(f"No sequence id contains {text!r}.")
            return None
        self.select_sequence(hits[0])
        return hits[0]

    def set_vocabulary(self, vocabulary: Optional[Sequence[str]]) -> None:
        self._vocab = symbol_names(vocabulary)
        if self._path is not None:
            self._show_symbols()

    def set_model(self, model, data: Any = None) -> None:
        """Decode with ``model`` the sequences of ``data`` (a Corpus, a list of int arrays or None).

        Without data, a few sequences sampled from the model (seed 0) are offered.
        """
        self._model = model
        if model is None:
            self.clear()
            return
        vocab = getattr(data, "vocabulary", None) or getattr(model, "vocabulary", None)
        if vocab is not None:
            self._vocab = symbol_names(vocab)
        self._seqs = _sequences_of(data)
        self._names = _names_of(data, len(self._seqs)) if self._seqs else None
        # the ids reach the completer when the find box is first used: 57,340 of them took the GUI
        # thread 5 ms each time a job was shown
        self._completer_stale = True
        self._completer_model.setStringList([])
        if self.find_edit.hasFocus():    # (the box in use already: no focus event will come)
            self._fill_completer()
        self.find_edit.setEnabled(bool(self._names))
        tags = getattr(data, "tags", None)
        tag_names = getattr(data, "tag_vocabulary", None)
        if tags is not None and tag_names is not None and len(tags) == len(self._seqs):
            self._gold = _Rows(tags)
            self._tag_names = [str(t) for t in tag_names]
        else:
            self._gold, self._tag_names = None, None
        # what the observed row shows, as the reader recorded it (not guessed from the cells)
        self._observed_label = "word" if getattr(data, "observes_words", True) else "observed tag"
        self._source = "data set"
        if not self._seqs:
            try:
                obs, _ = model.sample(N_SAMPLED, SAMPLED_LENGTH, seed=0)
                self._seqs = [np.asarray(s).reshape(-1) for s in obs]
                self._source = f"sampled from the model (seed 0, length {SAMPLED_LENGTH})"
            except Exception as exc:  # noqa: BLE001 - the view must never take the app down
                self._seqs = []
                self._show_error(f"No data set and sampling failed: {exc}")
                return
        self.spin.blockSignals(True)
        self.spin.setMaximum(max(0, len(self._seqs) - 1))
        self.spin.setValue(0)
        self.spin.blockSignals(False)
        self.select_sequence(0)

    def select_sequence(self, index: int) -> None:
        """Decode and show sequence ``index`` of the current data -- at once when the view is shown,
        else when it is first shown or read (a hidden Decode tab costs the GUI thread nothing when a
        job finishes: Viterbi and the posteriors of a long sequence took 20-90 ms)."""
        if self._model is None or not self._seqs:
            return
        index = int(max(0, min(index, len(self._seqs) - 1)))
        if self.spin.value() != index:
            self.spin.blockSignals(True)
            self.spin.setValue(index)
            self.spin.blockSignals(False)
        self._pending = index
        if self.isVisible():
            self._decode_pending()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        self._decode_pending()

    def _decode_pending(self) -> None:
        """Decode and draw the sequence chosen while the view was hidden (nothing when there is none)."""
        index, self._pending = self._pending, None
        if index is None or self._model is None or not self._seqs or index >= len(self._seqs):
            return
        seq = self._seqs[index]
        try:
            paths, logprobs = self._model.decode([seq])
            path = as_single(paths)
            self._logprob = float(np.asarray(logprobs).reshape(-1)[0])
            post = as_single(self._model.predict_proba([seq]))
        except Exception as exc:  # noqa: BLE001 - shown in the view; the view must never take the app down
            self._show_error(f"Decoding sequence {index} failed: {exc}")
            return
        path = np.asarray(path).reshape(-1).astype(np.int64)
        post = np.asarray(post, dtype=np.float64)
        if post.ndim != 2 or post.shape[0] != seq.shape[0] or path.shape[0] != seq.shape[0]:
            self._show_error(f"Model returned shapes path {path.shape}, posteriors {post.shape} "
                             f"for a sequence of length {seq.shape[0]}")
            return
        self._current = index
        self._path, self._post = path, post
        self._draw(seq)

    def set_state_tags(self, mapping: Optional[Sequence[int]]) -> None:
        """The tag of each state (e.g. the M-1 ``mapping`` of
        :func:`densehmm_core.metrics.tagging_scores`): the predicted tag of a word is that of
        its Viterbi state."""
        self._state_tags = None if mapping is None else np.asarray(mapping, dtype=np.int64).reshape(-1)
        if self._path is not None and self.current_sequence() is not None:
            self._fill_tag_table(self.current_sequence())

    def tag_rows(self) -> Optional[List[List[str]]]:
        """The word / gold / predicted rows of the tag table (``None`` when hidden)."""
        self._decode_pending()
        if not self.tag_table.isVisibleTo(self):
            return None
        t = self.tag_table
        return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(3)]

    def _fill_tag_table(self, seq: np.ndarray) -> None:
        i = self.current_index()
        if self._gold is None or self._tag_names is None or i >= len(self._gold):
            self.tag_table.setVisible(False)
            return
        gold = self._gold[i]
        T = min(len(seq), TAG_TABLE_MAX)
        m = getattr(self._model, "n_symbols", None) or (int(seq.max()) + 1)
        words = symbol_labels(int(m), self._vocab)
        t = self.tag_table
        t.setColumnCount(T)
        wrong_bg = QtGui.QColor(231, 76, 60, 70)
        right = wrong = 0
        for j in range(T):
            g = int(gold[j]) if j < len(gold) else -1
            st = int(self._path[j])
            pred = -1 if self._state_tags is None or st >= len(self._state_tags) else int(self._state_tags[st])
            gname = self._tag_names[g] if 0 <= g < len(self._tag_names) else "—"
            pname = (self._tag_names[pred] if 0 <= pred < len(self._tag_names) else "—") + f" ({st})"
            w = words[int(seq[j])] if 0 <= int(seq[j]) < len(words) else str(int(seq[j]))
            cells = [w, gname, pname]
            for r, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
                if r == 2 and g >= 0 and pred >= 0 and pred != g:
                    item.setBackground(wrong_bg)
                    item.setToolTip(f"predicted {pname} (state {st}), gold {gname}")
                t.setItem(r, j, item)
            if g >= 0 and pred >= 0:
                right += int(pred == g)
                wrong += int(pred != g)
        t.setVerticalHeaderLabels([self._observed_label, "gold tag", "predicted"])
        t.resizeColumnsToContents()
        t.resizeRowsToContents()
        t.setVisible(True)
        self._fit_tag_table_height()
        if right + wrong:
            more = "" if T == len(seq) else f" (first {T} of {len(seq)} words)"
            t.setToolTip(f"predicted = the mapped tag of the word's Viterbi state (state in brackets); "
                         f"{right} of {right + wrong} words right{more}; wrong ones are shaded")

    def _fit_tag_table_height(self) -> None:
        """The table's three rows, and its horizontal scroll bar only where the words do not fit
        (always keeping room for it left an empty band beneath a short sentence)."""
        t = self.tag_table
        if not t.isVisibleTo(self):
            return
        need = t.verticalHeader().width() + sum(t.columnWidth(c) for c in range(t.columnCount())) + 2 * t.frameWidth()
        bar = t.horizontalScrollBar().sizeHint().height() if need > t.width() else 0
        height = sum(t.rowHeight(r) for r in range(3)) + 2 * t.frameWidth() + bar + 2
        if t.height() != height or t.minimumHeight() != height:
            t.setFixedHeight(height)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        if obj is self.tag_table and event.type() == QtCore.QEvent.Type.Resize:
            # from the event loop: the height is set outside the table's own resize
            QtCore.QTimer.singleShot(0, self, self._fit_tag_table_height)
        elif obj is self.find_edit and event.type() == QtCore.QEvent.Type.FocusIn:
            self._fill_completer()
        return super().eventFilter(obj, event)

    def _fill_completer(self) -> None:
        """The sequence ids offered while typing in the find box (set when the box gets the focus)."""
        if self._completer_stale:
            self._completer_stale = False
            self._completer_model.setStringList(self._names or [])

    def figure_title(self) -> str:
        """The state track's title, naming the sequence shown (the figure's title on export, where
        the sequence chooser above it is left out), e.g.
        ``"Sequence 12 of 40 (id sp|P69905|HBA_HUMAN, length 142): Viterbi state path"``."""
        self._decode_pending()
        if self._path is None or not self._seqs:
            return TRACK_TITLE
        i, count, T = self._current, len(self._seqs), len(self._path)
        if self._source == "data set":
            name = self._names[i] if self._names else ""
            if len(name) > TITLE_ID_CHARS:
                name = name[:TITLE_ID_CHARS - 1] + "…"
            about = f"id {name}, length {T}" if name else f"length {T}"
            return f"Sequence {i} of {count} ({about}): {TRACK_TITLE}"
        return f"Sequence {i} of {count} sampled from the model (seed 0, length {T}): {TRACK_TITLE}"

    @contextlib.contextmanager
    def figure_mode(self) -> Iterator[None]:
        """While the view is exported (:mod:`app.export`): the line under the plots says which positions
        are drawn, without the on-screen instruction (:meth:`figure_status`); the words / gold / predicted table
        without its scroll bar's strip when all its columns fit, else left out of the figure
        (a table cut at the edge would tell only part of the sequence; the track names the words)."""
        self._decode_pending()
        status = self.status.text()
        self.status.setText(self.figure_status())    # no on-screen instruction; the positions drawn
        try:
            with self._table_for_figure():
                yield
        finally:
            self.status.setText(status)

    def shown_positions(self) -> Optional[Tuple[int, int]]:
        """The first and last positions of the sequence the plots show (``None``: no sequence)."""
        if self._path is None:
            return None
        x0, x1 = self.track_plot.vb.viewRange()[0]
        T = len(self._path)
        first, last = max(0, int(np.ceil(x0 + 0.5 - 1e-6))), min(T - 1, int(np.floor(x1 - 0.5 + 1e-6)))
        return (first, max(first, last))

    def figure_status(self) -> str:
        """The line under the plots in a figure: the on-screen one without its instruction ("drag or zoom"),
        saying which positions the figure shows when not all of them."""
        text = self.status.text().split("  Showing positions")[0]
        shown = self.shown_positions()
        if shown is not None and shown != (0, len(self._path) - 1):
            text += f"  Positions {shown[0]}–{shown[1]} of {len(self._path)} shown."
        return text

    @contextlib.contextmanager
    def _table_for_figure(self) -> Iterator[None]:
        t = self.tag_table
        if not t.isVisibleTo(self):
            yield
            return
        height = t.height()
        needed = t.verticalHeader().width() + sum(t.columnWidth(c) for c in range(t.columnCount())) + 2 * t.frameWidth()
        fits = needed <= t.width()
        if fits:
            t.setFixedHeight(sum(t.rowHeight(r) for r in range(t.rowCount())) + 2 * t.frameWidth() + 2)
        else:
            t.setVisible(False)
        try:
            yield
        finally:
            if fits:
                t.setFixedHeight(height)
            else:
                t.setVisible(True)

    def hover_text(self, t: int) -> str:
        """What hovering position ``t`` of the path or the posteriors reads, e.g.
        ``"position 57 · symbol D · Viterbi state 12 (posterior 0.93) · most probable state 12"``
        ("" outside the sequence)."""
        self._decode_pending()
        seq = self.current_sequence()
        if self._path is None or self._post is None or seq is None or not 0 <= t < len(self._path):
            return ""
        m = int(getattr(self._model, "n_symbols", None) or (int(seq.max()) + 1))
        s = int(seq[t])
        # symbol_labels' rule for one symbol (a mouse move must not build a vocabulary-sized list)
        name = self._vocab[s] if self._vocab is not None and len(self._vocab) == m and 0 <= s < m else str(s)
        st, top = int(self._path[t]), int(np.argmax(self._post[t]))
        return (f"position {t} · symbol {name} · Viterbi state {st} "
                f"(posterior {self._post[t, st]:.2f}) · most probable state {top} ({self._post[t, top]:.2f})")

    def _hover(self, pos) -> None:
        for plot in (self.track_plot, self.post_plot):
            if plot.vb.sceneBoundingRect().contains(pos):
                text = self.hover_text(int(round(plot.vb.mapSceneToView(pos).x())))
                if text:
                    QtWidgets.QToolTip.showText(QtGui.QCursor.pos(), text, self.graphics)
                    return
        QtWidgets.QToolTip.hideText()

    def current_index(self) -> int:
        return int(self.spin.value())

    def sequence_count(self) -> int:
        return len(self._seqs)

    def current_sequence(self) -> Optional[np.ndarray]:
        return None if not self._seqs else np.array(self._seqs[self.current_index()])

    def current_path(self) -> Optional[np.ndarray]:
        """The Viterbi path shown (a copy)."""
        self._decode_pending()
        return None if self._path is None else self._path.copy()

    def current_posteriors(self) -> Optional[np.ndarray]:
        """The posterior matrix shown, shape (T, n) (a copy)."""
        self._decode_pending()
        return None if self._post is None else self._post.copy()

    def track_colors(self) -> Optional[np.ndarray]:
        """The RGBA track image, shape (1, T, 4)."""
        self._decode_pending()
        return None if self.track.image is None else np.array(self.track.image)

    def posterior_image(self) -> Optional[np.ndarray]:
        """The posterior heat strip as displayed: shape (n, T) (states are rows)."""
        self._decode_pending()
        return None if self.post.image is None else np.array(self.post.image)

    def clear(self) -> None:
        self._pending = None
        self._model = None
        self._seqs = []
        self._path = self._post = None
        self.track.clear()
        self.post.clear()
        self.path_curve.setData([], [])
        self.spin.setMaximum(0)
        self.seq_label.setText("")
        style_plot(self.track_plot, self, TRACK_TITLE)
        self.legend_label.set_colors([])
        self.status.setText("")
        self._gold = self._tag_names = self._state_tags = None
        self.tag_table.setVisible(False)
        self.stack.setCurrentWidget(self.placeholder)

    # ------------------------------------------------------------- internals
    def _on_index(self, i: int) -> None:
        self.select_sequence(i)

    def _show_error(self, text: str) -> None:
        self.status.setText(f"<span style='color:#c0392b'>{text}</span>")

    def _show_symbols(self) -> None:
        seq = self.current_sequence()
        if seq is None:
            return
        m = getattr(self._model, "n_symbols", None) or (int(seq.max()) + 1)
        names = symbol_labels(int(m), self._vocab)
        self._sym_axis.set_labels([names[s] if 0 <= s < len(names) else str(s) for s in seq])

    def _draw(self, seq: np.ndarray) -> None:
        T, n = self._post.shape
        colors = state_colors(n)
        rgba = np.array([[c.red(), c.green(), c.blue(), 255] for c in colors], dtype=np.ubyte)
        self.track.setImage(rgba[np.clip(self._path, 0, n - 1)][None, :, :], autoLevels=False, levels=(0, 255))
        self.track.setRect(QtCore.QRectF(-0.5, -0.5, T, 1))
        self.post.setImage(self._post.T, autoLevels=False)
        self.post.setRect(QtCore.QRectF(-0.5, -0.5, T, n))
        self.colorbar.setLevels((0.0, 1.0))
        self.path_curve.setData(np.arange(T, dtype=float), self._path.astype(float))
        self._state_axis.set_labels([str(i) for i in range(n)])
        self._show_symbols()
        self.track_plot.setYRange(-0.5, 0.5, padding=0)
        self.post_plot.setYRange(-0.5, n - 0.5, padding=0)
        for p in (self.track_plot, self.post_plot):
            p.vb.setLimits(xMin=-0.5, xMax=T - 0.5)
        self.track_plot.setXRange(-0.5, min(T, INITIAL_WINDOW) - 0.5, padding=0)
        name = self._names[self.current_index()] if self._names else ""
        # the length before the id: an elided line cuts the id (whole in the tooltip), never the length
        self.seq_label.setText(f"of {len(self._seqs)} ({self._source})   length {T}   {name}")
        style_plot(self.track_plot, self, self.figure_title())
        self.legend_label.set_colors(colors)
        used = np.unique(self._path)
        lp = "" if self._logprob is None else f"log P(sequence, Viterbi path) = {self._logprob:.6g};  "
        more = "" if T <= INITIAL_WINDOW else f"  Showing positions 0–{INITIAL_WINDOW - 1} of {T}: drag or zoom."
        self.status.setText(f"{lp}states used on the path: {', '.join(str(int(u)) for u in used)}.{more}")
        self._fill_tag_table(seq)
        self.stack.setCurrentWidget(self.graphics)

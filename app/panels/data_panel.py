"""The data panel: statistics of the current data set, charts, and the Corpus preprocessing options."""
from __future__ import annotations

import os
from typing import List, Optional

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import (QAbstractScrollArea, QApplication, QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout,
                               QGroupBox, QHBoxLayout,
                               QLabel, QPushButton, QSpinBox, QToolButton, QVBoxLayout, QWidget)

from densehmm_core.data import WORDS_MIN_COUNT

from ..datasets import DataSet, is_tagged, read_options
from ..views.axes import GappedAxis, LabelAxis
from ..views.widgets import CompactComboBox, HeaderLabel

__all__ = ["DataPanel", "PRESETS"]

#: A frequency chart of more than twice this many symbols first shows the most frequent this many.
FREQ_SHOWN = 60
PRESETS = ["(none)", "paper_protein", "paper_medpost", "reference_code_protein", "reference_code_penn"]


class PanelPlot(pg.PlotWidget):
    """A chart inside the scrolling data panel: the mouse wheel scrolls the panel; with a modifier
    held (Ctrl, Shift, Alt) it zooms the chart, and :meth:`reset_view` (the chart's Reset button,
    or a double click) shows its first view again (``full_range``; the whole chart when None) and,
    on a category axis, fits the room under it to that view's labels again."""

    def __init__(self, axis_items: Optional[dict] = None) -> None:
        super().__init__(axisItems=axis_items)
        self.full_range = None   # (x0, x1) of the whole chart, set with the data

    def wheelEvent(self, event) -> None:  # noqa: N802
        if event.modifiers() == Qt.KeyboardModifier.NoModifier:
            area = self.parentWidget()
            while area is not None and not isinstance(area, QAbstractScrollArea):
                area = area.parentWidget()
            if area is not None:    # the panel's scroll area scrolls
                QApplication.sendEvent(area.verticalScrollBar(), event)
            else:
                event.ignore()
            return
        super().wheelEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        self.reset_view()
        event.accept()

    def reset_view(self) -> None:
        if self.full_range is not None:
            self.setXRange(*self.full_range, padding=0)
        else:
            self.getPlotItem().enableAutoRange(x=True)
        self.getPlotItem().enableAutoRange(y=True)
        bottom = self.getPlotItem().getAxis("bottom")
        if isinstance(bottom, LabelAxis):   # upright labels: room for those of the first view again
            bottom.refit()


class FrequencyBars(pg.BarGraphItem):
    """The frequency chart's bars: one per symbol at x = 0, 1, ..., of width ``width``, one pen and one
    brush.  Paints only the bars inside the view; pyqtgraph's item draws every bar at each paint (5 ms
    for the 30,499 words of the Brown corpus, of which the chart shows :data:`FREQ_SHOWN` until the
    user zooms out).  Data, bounds and ``opts`` stay pyqtgraph's; the bars are read from ``opts``."""

    #: more bars than this in view: pyqtgraph's one call for all (cheaper than making their rectangles)
    MAX_CULLED = 1000

    def __init__(self, heights, width: float = 0.8, pen=None, brush=None) -> None:
        heights = np.asarray(heights, dtype=np.float64)
        pen = pg.getConfigOption("foreground") if pen is None else pen   # (pyqtgraph's default)
        super().__init__(x=np.arange(len(heights)), height=heights, width=width, pen=pen, brush=brush)

    def shown_range(self):
        """``(first, stop)``: the indices of the bars that reach into the view (all without one)."""
        n = len(self.opts["height"])
        half = 0.5 * float(self.opts["width"])
        view = self.viewRect()
        if view is None:
            return 0, n
        first = int(np.clip(np.floor(view.left() - half), 0, n))
        stop = int(np.clip(np.ceil(view.right() + half) + 1, first, n))
        return first, stop

    def paint(self, p, *args) -> None:
        heights = self.opts["height"]
        first, stop = self.shown_range()
        if stop - first > min(self.MAX_CULLED, len(heights) - 1):
            super().paint(p, *args)
            return
        p.setPen(pg.mkPen(self.opts["pen"]))
        p.setBrush(pg.mkBrush(self.opts["brush"]))
        w = float(self.opts["width"])
        p.drawRects([QRectF(i - 0.5 * w, 0.0, w, float(h))
                     for i, h in zip(range(first, stop), heights[first:stop].tolist())])


def _plot(title: str, xlabel: str, ylabel: str, axis_items: Optional[dict] = None) -> PanelPlot:
    w = PanelPlot(axis_items)
    w.setBackground(None)
    w.setTitle(title, size="9pt")
    w.setLabel("bottom", xlabel)
    w.setLabel("left", ylabel)
    w.setMouseEnabled(x=True, y=False)
    w.setMinimumHeight(150)
    w.setMaximumHeight(280)   # in the dock's scroll area a plot must not grow to the panel's full height
    w.getPlotItem().hideButtons()
    w.setToolTip("Ctrl + wheel zooms, dragging pans; double click or Reset shows the first view again")
    return w


def _with_reset(plot: PanelPlot, name: str) -> QWidget:
    """The chart with a small Reset button above its right corner."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(0)
    row = QHBoxLayout()
    row.addStretch(1)
    button = QToolButton()
    button.setText("Reset")
    button.setObjectName(f"{name}Reset")
    button.setToolTip("Show the whole chart again (after zooming with Ctrl + wheel or dragging)")
    button.setAutoRaise(True)
    button.clicked.connect(plot.reset_view)
    row.addWidget(button)
    lay.addLayout(row)
    lay.addWidget(plot)
    plot.reset_button = button
    return box


class DataPanel(QWidget):
    """Shows one :class:`~app.datasets.DataSet`; ``preprocess_requested(options)`` asks for a re-run,
    ``reread_requested(read)`` (the Observe group, tagged corpora) for the file read again with the
    reader options ``read`` of ``densehmm_core.data.load``."""

    dataset_selected = Signal(int)
    preprocess_requested = Signal(object)
    reread_requested = Signal(object)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.dataset: Optional[DataSet] = None
        self.summary: Optional[dict] = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.selector = CompactComboBox(12)
        self.selector.setToolTip("The data set new jobs train on")
        self.selector.currentIndexChanged.connect(self.dataset_selected)
        lay.addWidget(self.selector)
        # what the symbols are comes first: it decides everything below (issue 24.6)
        self.observe_box = self._observe_group()
        lay.addWidget(self.observe_box)
        self.info = QLabel("No data set yet: use the demo or open a file.")
        self.info.setWordWrap(True)
        lay.addWidget(self.info)
        self.fields = {}
        stats = QFormLayout()
        stats.setContentsMargins(0, 0, 0, 0)
        for key in ("Source", "Format", "Sequences", "Tokens", "Symbols", "Lengths", "Warnings"):
            if key == "Source":   # a long file name must not widen the panel: elided, whole in the tooltip
                value = HeaderLabel("", max_lines=1, bold=False)
            else:
                value = QLabel("")
                value.setWordWrap(True)
                value.setTextInteractionFlags(Qt.TextSelectableByMouse)
            value.setObjectName(f"stat{key}")
            stats.addRow(f"<b>{key}</b>", value)
            self.fields[key] = value
        self.stats_form = stats
        lay.addLayout(stats)
        # category axis: every symbol named when the names fit (upright if needed), else a regular
        # subset, with each full name in the axis tooltip (app.views.axes.LabelAxis)
        # a short title: the panel may be narrow (a pyqtgraph title is cut, not wrapped)
        self.freq_plot = _plot("Symbol frequencies", "symbol (most frequent first)", "count",
                               {"bottom": LabelAxis("bottom")})
        self.freq_plot.setObjectName("frequencyChart")
        self.freq_box = _with_reset(self.freq_plot, "frequencyChart")
        lay.addWidget(self.freq_box, 1)
        self.len_plot = _plot("Sequence lengths", "length", "sequences", {"bottom": GappedAxis("bottom")})
        self.len_plot.setObjectName("lengthHistogram")
        self.len_box = _with_reset(self.len_plot, "lengthHistogram")
        lay.addWidget(self.len_box, 1)
        self.freq_bars = None
        self.len_bars = None
        self.freq_order = np.zeros(0, dtype=np.int64)   # symbol index of each bar (by count)

        box = QGroupBox("Preprocessing")
        form = QFormLayout(box)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)   # a narrow panel: fields under labels
        self.preset = CompactComboBox(12); self.preset.addItems(PRESETS)
        self.preset.setToolTip("The paper's preprocessing presets (appendix); they set the options below")
        form.addRow("Preset", self.preset)
        self.preset.currentIndexChanged.connect(self._preset_chosen)
        self.subset = QSpinBox(); self.subset.setRange(0, 100_000_000); self.subset.setSpecialValueText("all")
        self.subset_random = QCheckBox("random")
        self.subset.setToolTip("Use only this many sequences of the file (all: every one)")
        self.subset_random.setToolTip("Draw the subset at random (with the seed below) instead of taking the "
                                      "first sequences of the file")
        row = QHBoxLayout(); row.addWidget(self.subset, 1); row.addWidget(self.subset_random)
        form.addRow("Subset (sequences)", row)
        self.chunk_len = QSpinBox(); self.chunk_len.setRange(0, 100_000_000)
        self.chunk_len.setSpecialValueText("none")
        self.chunk_len.setToolTip("Cut sequences longer than this into pieces of this many symbols, in order: "
                                  "a genome (one long sequence) becomes many, which the split can hold out")
        form.addRow("Chunk length", self.chunk_len)
        self.max_len = QSpinBox(); self.max_len.setRange(0, 100_000_000); self.max_len.setSpecialValueText("none")
        self.max_len.setToolTip("Truncate sequences to this many symbols (none: keep them whole)")
        form.addRow("Max length", self.max_len)
        self.min_len = QSpinBox(); self.min_len.setRange(0, 100_000_000); self.min_len.setSpecialValueText("none")
        self.min_len.setToolTip("Leave out sequences shorter than this many symbols (none: keep every one)")
        form.addRow("Min length", self.min_len)
        self.merge = QDoubleSpinBox(); self.merge.setDecimals(3); self.merge.setRange(0.0, 100.0)
        self.merge.setSuffix(" %"); self.merge.setSpecialValueText("off")
        self.merge.setToolTip("Merge the rarest symbols whose cumulative frequency stays below this share "
                              "into one residual symbol")
        form.addRow("Merge rare below", self.merge)
        self.split = QDoubleSpinBox(); self.split.setRange(0.0, 0.99); self.split.setSingleStep(0.05)
        self.split.setValue(0.5); self.split.setSpecialValueText("no split")
        self.split.setToolTip("Share of sequences used for training (the rest is the test set)")
        form.addRow("Train share", self.split)
        self.seed = QSpinBox(); self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("Seed of the train/test split and of a random subset: the same seed gives the "
                             "same sequences")
        form.addRow("Seed", self.seed)
        buttons = QHBoxLayout()
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("Re-read the statistics with these options")
        self.apply_button.clicked.connect(lambda: self.preprocess_requested.emit(self.options()))
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("Put every option above back to its default (Apply reads the data with them)")
        self.reset_button.clicked.connect(self.reset_options)
        buttons.addStretch(1); buttons.addWidget(self.reset_button); buttons.addWidget(self.apply_button)
        form.addRow(buttons)
        self.prep_box = box
        lay.addWidget(box)
        self.set_dataset(None)

    def _observe_group(self) -> QGroupBox:
        """Tagged corpora: what the symbols are (the tags, or the words with their vocabulary)."""
        box = QGroupBox("Observe")
        box.setObjectName("observeGroup")
        box.setToolTip("A tagged corpus can be read as its tags or as its words; the gold tags are kept "
                       "either way (Tags tab of the dashboard)")
        form = QFormLayout(box)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)   # a narrow panel: fields under labels
        self.observe = QComboBox()
        self.observe.addItem("tags", "tags")
        self.observe.addItem("words", "words")
        self.observe.setToolTip("tags: the symbols are the corpus's tags; words: its words (lower-cased, "
                                "rare ones grouped), with the tags as gold labels")
        self.observe.currentIndexChanged.connect(self._observe_changed)
        form.addRow("Symbols", self.observe)
        self.tagset = CompactComboBox(12)
        self.tagset.addItem("UPOS (universal)", "upos")
        self.tagset.addItem("XPOS (language-specific)", "xpos")
        self.tagset.setToolTip("CoNLL-U: the tag column read (column 4 UPOS or column 5 XPOS)")
        form.addRow("Tag column", self.tagset)
        self.lowercase = QCheckBox("lower-case words")
        self.lowercase.setChecked(True)
        self.lowercase.setToolTip("Read every word lower-cased (one symbol for 'The' and 'the'); off: as "
                                  "written, which the orthographic symbol features need")
        form.addRow("", self.lowercase)
        self.max_vocab = QSpinBox(); self.max_vocab.setRange(0, 10_000_000); self.max_vocab.setSingleStep(1000)
        self.max_vocab.setSpecialValueText("all words")
        self.max_vocab.setToolTip("Keep the most frequent words (rare words included); 0: every word")
        form.addRow("Vocabulary size", self.max_vocab)
        self.min_count = QSpinBox(); self.min_count.setRange(1, 1_000_000)
        self.min_count.setSpecialValueText("1 (every word)")
        self.min_count.setValue(WORDS_MIN_COUNT)
        self.min_count.setToolTip("Words seen fewer times than this are rare and read as the unknown symbol, "
                                  "which also reads the words a model never saw when it scores other data "
                                  f"(default {WORDS_MIN_COUNT}); 1: every word is kept and the model has no "
                                  "unknown symbol. A file a model scores or decodes is read with every word, "
                                  "whatever this says")
        form.addRow("Min. count", self.min_count)
        self.rare = CompactComboBox(12)
        self.rare.addItem("one unknown symbol", "unk")
        self.rare.addItem("word-shape classes", "shape")
        self.rare.setToolTip("Words outside the vocabulary become one unknown symbol, or their word-shape "
                             "class (capitalised, number, -ing, -ed…)")
        form.addRow("Rare words", self.rare)
        self.keep_traces = QCheckBox("keep traces (-NONE-)")
        self.keep_traces.setToolTip("Penn Treebank: keep the empty elements tagged -NONE- (traces) as tokens; "
                                    "off: they are dropped (drop_traces)")
        form.addRow("", self.keep_traces)
        self.reread_button = QPushButton("Apply (re-read)")
        self.reread_button.setToolTip("Read the file again with these options; split, seed and preprocessing stay")
        self.reread_button.clicked.connect(lambda: self.reread_requested.emit(self.read_options()))
        row = QHBoxLayout(); row.addStretch(1); row.addWidget(self.reread_button)
        form.addRow(row)
        self.observe_form = form
        return box

    def _observe_changed(self) -> None:
        words = self.observe.currentData() == "words"
        for w in (self.lowercase, self.max_vocab, self.min_count, self.rare):
            self.observe_form.setRowVisible(w, words)

    def read_options(self) -> dict:
        """The Observe group's reader options for ``densehmm_core.data.load`` (only those that
        apply: ``tagset`` for CoNLL-U, ``drop_traces`` for Penn Treebank, the vocabulary for words)."""
        read = {"observe": self.observe.currentData()}
        if self.observe_form.isRowVisible(self.tagset):
            read["tagset"] = self.tagset.currentData()
        if self.observe_form.isRowVisible(self.keep_traces):
            read["drop_traces"] = not self.keep_traces.isChecked()
        if read["observe"] == "words":
            read.update(lowercase=self.lowercase.isChecked(), max_vocab=self.max_vocab.value() or None,
                        min_count=self.min_count.value(),
                        rare=self.rare.currentData())
        return read

    def _show_read_options(self, ds: Optional[DataSet]) -> None:
        tagged = is_tagged(ds)
        self.observe_box.setVisible(tagged)
        if not tagged:
            return
        opts = read_options(ds)
        self.observe.setCurrentIndex(max(0, self.observe.findData(opts.get("observe", "tags"))))
        self.observe_form.setRowVisible(self.tagset, "tagset" in opts)
        if "tagset" in opts:
            self.tagset.setCurrentIndex(max(0, self.tagset.findData(opts["tagset"])))
        self.observe_form.setRowVisible(self.keep_traces, "drop_traces" in opts)
        self.keep_traces.setChecked(not opts.get("drop_traces", True))
        if opts.get("observe") == "words":   # as read; for tags: the words' defaults stay offered
            self.lowercase.setChecked(bool(opts.get("lowercase")))
            self.max_vocab.setValue(int(opts.get("max_vocab") or 0))
            self.min_count.setValue(int(opts.get("min_count") or WORDS_MIN_COUNT))
            self.rare.setCurrentIndex(max(0, self.rare.findData(opts.get("rare", "unk"))))
        self._observe_changed()

    # ------------------------------------------------------------ options
    def options(self) -> dict:
        preset = self.preset.currentText()
        return {
            "preset": None if preset == "(none)" else preset,
            "subset": self.subset.value() or None,
            "subset_random": self.subset_random.isChecked(),
            "chunk_length": self.chunk_len.value() or None,
            "max_length": self.max_len.value() or None,
            "min_length": self.min_len.value() or None,
            "merge_below": (self.merge.value() / 100.0) or None,
            "split": self.split.value(),
            "seed": self.seed.value(),
        }

    def _preset_chosen(self) -> None:
        """Show the preset's preprocessing in the fields (they can still be edited)."""
        name = self.preset.currentText()
        if name == "(none)":
            return
        from densehmm_core.data import get_preset
        p = get_preset(name)
        pre = p.get("preprocess", {})
        self.subset.setValue(int(pre.get("subset") or 0))
        self.subset_random.setChecked(pre.get("subset_seed") is not None)
        self.chunk_len.setValue(int(pre.get("chunk_len") or 0))
        self.max_len.setValue(int(pre.get("max_len") or 0))
        self.min_len.setValue(int(pre.get("min_len") or 0))
        self.merge.setValue(100.0 * float(pre.get("merge_below") or 0.0))
        tf = (p.get("split") or {}).get("test_fraction")
        if tf is not None:
            self.split.setValue(1.0 - float(tf))
        self.preset.setToolTip(p.get("description", ""))

    def _show_options(self, options: dict) -> None:
        """The preprocessing fields as the shown data set was made (``DataSet.options``; absent: none, the
        default split), so that Apply starts from the selected data set's settings, not another's."""
        self.preset.blockSignals(True)      # the preset's own values must not overwrite the data set's
        self.preset.setCurrentIndex(max(0, self.preset.findText(options.get("preset") or "(none)")))
        self.preset.blockSignals(False)
        self.subset.setValue(int(options.get("subset") or 0))
        self.subset_random.setChecked(bool(options.get("subset_random")))
        self.chunk_len.setValue(int(options.get("chunk_length") or 0))
        self.max_len.setValue(int(options.get("max_length") or 0))
        self.min_len.setValue(int(options.get("min_length") or 0))
        self.merge.setValue(100.0 * float(options.get("merge_below") or 0.0))
        self.split.setValue(float(options.get("split", 0.5)))
        self.seed.setValue(int(options.get("seed", 0)))

    def reset_options(self) -> None:
        self.preset.setCurrentIndex(0); self.subset.setValue(0); self.subset_random.setChecked(False)
        self.chunk_len.setValue(0); self.max_len.setValue(0); self.min_len.setValue(0); self.merge.setValue(0.0)
        self.split.setValue(0.5); self.seed.setValue(0)

    # -------------------------------------------------------------- data
    def set_datasets(self, names: List[str], current: int) -> None:
        self.selector.blockSignals(True)
        self.selector.clear()
        self.selector.addItems(names)
        self.selector.setCurrentIndex(current)
        self.selector.blockSignals(False)

    def set_dataset(self, ds: Optional[DataSet]) -> None:
        self.dataset = ds
        self.freq_plot.clear(); self.len_plot.clear()
        self.freq_bars = self.len_bars = None
        self.prep_box.setEnabled(ds is not None and ds.corpus is not None)
        self._show_read_options(ds)
        self.info.setVisible(ds is None)
        self.freq_box.setVisible(ds is not None)
        self.len_box.setVisible(ds is not None)
        for key, value in self.fields.items():
            value.setText("")
            self.stats_form.setRowVisible(value, ds is not None)
        if ds is None:
            self.summary = None
            return
        self._show_options(ds.options or {})
        s = self.summary = ds.summary
        corpus = ds.corpus
        prov = getattr(corpus, "provenance", None) or {}
        fmt = prov.get("format", "") if isinstance(prov, dict) else getattr(prov, "format", "")
        source = ds.path or "generated in the app (random Dirichlet(0.1) HMM, seed %s)" % ds.options.get("seed", 0)
        split = f"train {s['n_train']:,} / test {s['n_test']:,}"
        if s["n_sequences"] == 1:     # a genome: one sequence cannot be split
            split += ": Chunk length below cuts it to hold part out"
        rows = [("Source", source), ("Format", fmt or ("synthetic" if ds.is_demo else "?")),
                ("Sequences", f"{s['n_sequences']:,}  ({split})"),
                ("Tokens", f"{s['n_tokens']:,}"),
                ("Symbols", f"{s['n_symbols']}")]
        if len(s["lengths"]):
            rows.append(("Lengths", f"{int(s['lengths'].min())} – {int(s['lengths'].max())}, "
                                     f"median {int(np.median(s['lengths']))}"))
        if ds.warnings:
            rows.append(("Warnings", "; ".join(ds.warnings)))
        shown = dict(rows)
        for key, value in self.fields.items():
            text = str(shown.get(key, ""))
            if key == "Source":
                value.set_extra_tip(ds.path or "")
                if ds.path:
                    text = os.path.basename(ds.path)
            value.setText(text)
            self.stats_form.setRowVisible(value, key in shown)
        vocab = ds.vocabulary or [str(i) for i in range(s["n_symbols"])]
        freq = s["frequencies"]
        # most frequent first (ties in vocabulary order): a word list reads like a Zipf curve
        self.freq_order = np.lexsort((np.arange(len(freq)), -freq))
        self.freq_bars = FrequencyBars(freq[self.freq_order], width=0.8, brush=pg.mkBrush(60, 120, 200))
        self.freq_plot.addItem(self.freq_bars)
        self.freq_plot.getAxis("bottom").set_labels([str(vocab[i]) for i in self.freq_order])
        # a vocabulary of words: the FREQ_SHOWN most frequent at first (drag or Ctrl + wheel for the rest)
        shown_bars = len(freq) if len(freq) <= 2 * FREQ_SHOWN else FREQ_SHOWN
        self.freq_plot.full_range = (-0.6, shown_bars - 0.4)
        self.freq_plot.setLimits(xMin=-0.6, xMax=len(freq) - 0.4)   # before the range: the last data set's
        self.freq_plot.setXRange(-0.6, shown_bars - 0.4, padding=0)
        self.freq_plot.getAxis("bottom").refit()    # room under the axis for the first view's words
        lengths = s["lengths"]
        if len(lengths):
            lo, hi = int(lengths.min()), int(lengths.max())
            if hi - lo < 40:   # one bar per length
                edges = np.arange(lo - 0.5, hi + 1.5)
            else:
                edges = np.histogram_bin_edges(lengths, bins=40)
            counts, edges = np.histogram(lengths, bins=edges)
            self.len_bars = pg.BarGraphItem(x0=edges[:-1], x1=edges[1:], height=counts,
                                            brush=pg.mkBrush(90, 160, 90))
            self.len_plot.addItem(self.len_bars)

"""The data panel: statistics of the current data set, charts, and the Corpus preprocessing options."""
from __future__ import annotations

import os
from typing import List, Optional

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout,
                               QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget)

from ..datasets import DataSet, dataset_summary
from ..views.common import LabelAxis

__all__ = ["DataPanel", "PRESETS"]

PRESETS = ["(none)", "paper_protein", "paper_medpost", "reference_code_protein", "reference_code_penn"]


def _plot(title: str, xlabel: str, ylabel: str, axis_items: Optional[dict] = None) -> pg.PlotWidget:
    w = pg.PlotWidget(axisItems=axis_items)
    w.setBackground(None)
    w.setTitle(title, size="9pt")
    w.setLabel("bottom", xlabel)
    w.setLabel("left", ylabel)
    w.setMouseEnabled(x=True, y=False)
    w.setMinimumHeight(150)
    w.setMaximumHeight(280)   # in the dock's scroll area a plot must not grow to the panel's full height
    w.getPlotItem().hideButtons()
    return w


class DataPanel(QWidget):
    """Shows one :class:`~app.datasets.DataSet`; ``preprocess_requested(options)`` asks for a re-run."""

    dataset_selected = Signal(int)
    preprocess_requested = Signal(object)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.dataset: Optional[DataSet] = None
        self.summary: Optional[dict] = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.selector = QComboBox()
        self.selector.setToolTip("The data set new jobs train on")
        self.selector.currentIndexChanged.connect(self.dataset_selected)
        lay.addWidget(self.selector)
        self.info = QLabel("No data set yet: use the demo or open a file.")
        self.info.setWordWrap(True)
        lay.addWidget(self.info)
        self.fields = {}
        stats = QFormLayout()
        stats.setContentsMargins(0, 0, 0, 0)
        for key in ("Source", "Format", "Sequences", "Tokens", "Symbols", "Lengths", "Warnings"):
            value = QLabel("")
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextSelectableByMouse)
            value.setObjectName(f"stat{key}")
            stats.addRow(f"<b>{key}</b>", value)
            self.fields[key] = value
        self.stats_form = stats
        lay.addLayout(stats)
        # category axis: every symbol named when the names fit (upright if needed), else a regular
        # subset, with each full name in the axis tooltip (app.views.common.LabelAxis)
        self.freq_plot = _plot("Symbol frequencies", "symbol", "count", {"bottom": LabelAxis("bottom")})
        self.freq_plot.setObjectName("frequencyChart")
        lay.addWidget(self.freq_plot, 1)
        self.len_plot = _plot("Sequence lengths", "length", "sequences")
        self.len_plot.setObjectName("lengthHistogram")
        lay.addWidget(self.len_plot, 1)
        self.freq_bars = None
        self.len_bars = None

        box = QGroupBox("Preprocessing")
        form = QFormLayout(box)
        self.preset = QComboBox(); self.preset.addItems(PRESETS)
        self.preset.setToolTip("The paper's preprocessing presets (appendix); they set the options below")
        form.addRow("Preset", self.preset)
        self.preset.currentIndexChanged.connect(self._preset_chosen)
        self.subset = QSpinBox(); self.subset.setRange(0, 100_000_000); self.subset.setSpecialValueText("all")
        self.subset_random = QCheckBox("random")
        row = QHBoxLayout(); row.addWidget(self.subset, 1); row.addWidget(self.subset_random)
        form.addRow("Subset (sequences)", row)
        self.max_len = QSpinBox(); self.max_len.setRange(0, 100_000_000); self.max_len.setSpecialValueText("none")
        form.addRow("Max length", self.max_len)
        self.min_len = QSpinBox(); self.min_len.setRange(0, 100_000_000); self.min_len.setSpecialValueText("none")
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
        form.addRow("Seed", self.seed)
        buttons = QHBoxLayout()
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("Re-read the statistics with these options")
        self.apply_button.clicked.connect(lambda: self.preprocess_requested.emit(self.options()))
        self.reset_button = QPushButton("Reset")
        self.reset_button.clicked.connect(self.reset_options)
        buttons.addStretch(1); buttons.addWidget(self.reset_button); buttons.addWidget(self.apply_button)
        form.addRow(buttons)
        self.prep_box = box
        lay.addWidget(box)
        self.set_dataset(None)

    # ------------------------------------------------------------ options
    def options(self) -> dict:
        preset = self.preset.currentText()
        return {
            "preset": None if preset == "(none)" else preset,
            "subset": self.subset.value() or None,
            "subset_random": self.subset_random.isChecked(),
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
        self.max_len.setValue(int(pre.get("max_len") or 0))
        self.min_len.setValue(int(pre.get("min_len") or 0))
        self.merge.setValue(100.0 * float(pre.get("merge_below") or 0.0))
        tf = (p.get("split") or {}).get("test_fraction")
        if tf is not None:
            self.split.setValue(1.0 - float(tf))
        self.preset.setToolTip(p.get("description", ""))

    def reset_options(self) -> None:
        self.preset.setCurrentIndex(0); self.subset.setValue(0); self.subset_random.setChecked(False)
        self.max_len.setValue(0); self.min_len.setValue(0); self.merge.setValue(0.0)
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
        self.info.setVisible(ds is None)
        self.freq_plot.setVisible(ds is not None)
        self.len_plot.setVisible(ds is not None)
        for key, value in self.fields.items():
            value.setText("")
            self.stats_form.setRowVisible(value, ds is not None)
        if ds is None:
            self.summary = None
            return
        s = self.summary = dataset_summary(ds)
        corpus = ds.corpus
        prov = getattr(corpus, "provenance", None) or {}
        fmt = prov.get("format", "") if isinstance(prov, dict) else getattr(prov, "format", "")
        source = ds.path or "generated in the app (random Dirichlet(0.1) HMM, seed %s)" % ds.options.get("seed", 0)
        rows = [("Source", source), ("Format", fmt or ("synthetic" if ds.is_demo else "?")),
                ("Sequences", f"{s['n_sequences']:,}  (train {s['n_train']:,} / test {s['n_test']:,})"),
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
            if key == "Source" and ds.path:
                text = os.path.basename(ds.path)
                value.setToolTip(ds.path)
            value.setText(text)
            self.stats_form.setRowVisible(value, key in shown)
        vocab = ds.vocabulary or [str(i) for i in range(s["n_symbols"])]
        freq = s["frequencies"]
        x = np.arange(len(freq))
        self.freq_bars = pg.BarGraphItem(x=x, height=freq, width=0.8, brush=pg.mkBrush(60, 120, 200))
        self.freq_plot.addItem(self.freq_bars)
        self.freq_plot.getAxis("bottom").set_labels([str(v) for v in vocab])
        self.freq_plot.setXRange(-0.6, len(freq) - 0.4, padding=0)
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

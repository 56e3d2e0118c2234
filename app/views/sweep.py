"""Sweep summary: NLL and MAD against (n, l) per model kind, like the paper's Figures 4-6.

The main window feeds it one row per finished job with :meth:`SweepView.add_row`::

    view.add_row({"kind": "dense-cooc", "n": 10, "l": 3, "seed": 0,
                  "test_nll": 2.87, "train_nll": 2.85, "mad": 1.2e-4})

(``kind``: a model-kind string such as ``"dense-em"``, ``"dense-cooc"``, ``"standard"``;
``l`` is ``None`` for a standard HMM; ``seed`` tells repeats apart and is optional; any
metric may be missing.)  Rows with the same ``(kind, n, l)`` are repeats: each plot shows
their median as a marker joined along n, with a bar from the 25th to the 75th percentile,
one series per (kind, l).  The view fills as jobs finish; rows can be replaced by key
(``add_row`` with the same ``job`` id updates that row).

A row may name its ``sweep`` (``"sweep 2"``) and its data set (``data``): the view keeps the rows of
every sweep but summarises one at a time, never pooling sweeps (their medians would be no sweep's):
the one chosen with :meth:`SweepView.show_sweep` (the main window: the sweep of the job selected in
the Jobs panel), else the latest (the highest sweep number).  Its header names the sweep and data set.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from densehmm_core.maths import median_quartiles

from ..modelspec import ModelSpec
from ..sweeps import sweep_order
from .theme import label_axis_text, make_graphics_widget, state_colors, style_plot, theme_colors
from .axes import ThinLogAxis
from .widgets import PageStack, Placeholder

__all__ = ["SweepView", "summarize_rows", "row_from_spec", "sweep_row"]

#: metric key -> (plot title, axis label)
PLOTS = {"nll": ("NLL per token", "NLL / token"), "mad": ("Co-occurrence MAD", "MAD")}
#: marker per model kind (cycled for unknown kinds)
_MARKERS = ["o", "s", "t", "d", "star", "p", "h"]


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


def _is_inf(v) -> bool:
    try:
        return math.isinf(float(v))
    except (TypeError, ValueError):
        return False


def summarize_rows(rows: Sequence[dict], metric: str) -> Dict[tuple, Dict[int, tuple]]:
    """``{(kind, l): {n: (median, q25, q75, count)}}`` of one metric over repeats (NaN left out).

    Display aggregation only (what the plot draws), as in the core's experiment summaries.
    """
    groups: Dict[tuple, Dict[int, List[float]]] = {}
    for r in rows:
        v = _num(r.get(metric))
        if math.isnan(v) or r.get("n") is None:
            continue
        groups.setdefault((str(r.get("kind") or "model"), r.get("l")), {}).setdefault(int(r["n"]), []).append(v)
    out: Dict[tuple, Dict[int, tuple]] = {}
    for key, by_n in groups.items():
        out[key] = {}
        for n, vals in sorted(by_n.items()):
            out[key][n] = (*median_quartiles(vals), len(vals))
    return out


#: The page before any sweep job finished: what will appear, and how to start a sweep.
NO_SWEEP = ("Sweep summary: NLL and MAD against the number of states n and the embedding length l, per "
            "model kind, fill in here as the jobs of a sweep finish (median and quartiles over repeats). "
            "Run one with Train > Run sweep (Ctrl+Shift+T): the form's model over its sweep grid (by default "
            "the paper's n and l values), repeated.")


class SweepView(QtWidgets.QWidget):
    """NLL (test, else train) and MAD against n; one series per (model kind, l); median and quartiles."""

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self._rows: List[dict] = []             # every sweep's rows
        self._keys: Dict[object, int] = {}
        self._chosen: Optional[str] = None      # the sweep show_sweep chose; None: the latest
        self._shown: List[dict] = []            # the rows of the sweep summarised
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.header = QtWidgets.QLabel("")
        self.header.setWordWrap(True)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.header, 1)
        kind_label = QtWidgets.QLabel("Model kind:")
        kind_label.setProperty("exportHidden", True)  # a control's caption: not in exported figures
        top.addWidget(kind_label)
        self.kind_box = QtWidgets.QComboBox()  # one kind at a time, as in the paper's figures
        self.kind_box.addItem("all kinds", None)
        self.kind_box.currentIndexChanged.connect(lambda _i: self._redraw())
        top.addWidget(self.kind_box)
        lay.addLayout(top)
        self.stack = PageStack()
        self.placeholder = Placeholder(NO_SWEEP)
        self.graphics = make_graphics_widget(self)
        _, fg = theme_colors(self)
        self.plots: Dict[str, pg.PlotItem] = {}
        for col, (key, (title, ylab)) in enumerate(PLOTS.items()):
            p = self.graphics.addPlot(row=0, col=col, axisItems={"left": ThinLogAxis("left")})
            style_plot(p, self, title)
            label_axis_text(p, "left", ylab, self)
            label_axis_text(p, "bottom", "states n", self)
            p.getAxis("left").setWidth(64)
            p.getAxis("left").enableAutoSIPrefix(False)
            p.hideButtons()
            self.plots[key] = p
        # one legend for both plots, beneath them
        self.legend = pg.LegendItem(offset=None, labelTextColor=fg, colCount=4, horSpacing=12, frame=False)
        self.graphics.addItem(self.legend, row=1, col=0, colspan=2)
        self.stack.addWidget(self.placeholder)
        self.stack.addWidget(self.graphics)
        lay.addWidget(self.stack, 1)
        self.setMinimumSize(420, 300)
        self._items: List[pg.GraphicsObject] = []

    # ------------------------------------------------------------------ API
    def add_row(self, row: dict) -> None:
        """Add one finished job's numbers (see the module doc); a row with a known ``job`` replaces it."""
        self.add_rows([row])

    def add_rows(self, rows: Sequence[dict]) -> None:
        """Add many rows at once (a restored session's sweeps): drawn once."""
        for row in rows:
            row = dict(row)
            key = row.get("job")
            if key is not None and key in self._keys:
                self._rows[self._keys[key]] = row
            else:
                if key is not None:
                    self._keys[key] = len(self._rows)
                self._rows.append(row)
        self._redraw()

    def set_rows(self, rows: Sequence[dict]) -> None:
        """Replace every row."""
        self._rows, self._keys = [], {}
        self.add_rows(rows)

    def show_sweep(self, sweep: Optional[str]) -> None:
        """Summarise the rows of ``sweep`` (a row's ``sweep``), or of the latest sweep (``None``)."""
        if sweep != self._chosen:
            self._chosen = sweep
            self._redraw()

    def sweeps(self) -> List[Optional[str]]:
        """The sweeps the view has rows of, oldest first."""
        return sorted({r.get("sweep") for r in self._rows}, key=sweep_order)

    def shown_sweep(self) -> Optional[str]:
        """The sweep summarised: the one chosen, else the latest one with rows (None: rows naming none)."""
        if self._chosen is not None:
            return self._chosen
        names = self.sweeps()
        return names[-1] if names else None

    def set_kind(self, kind: Optional[str]) -> None:
        """Show one model kind (e.g. ``"dense-cooc"``), or every kind (``None``)."""
        i = self.kind_box.findData(kind)
        self.kind_box.setCurrentIndex(max(0, i))

    def rows(self) -> List[dict]:
        """The rows of the sweep summarised."""
        return [dict(r) for r in self._shown]

    def all_rows(self) -> List[dict]:
        """Every sweep's rows."""
        return [dict(r) for r in self._rows]

    def clear(self) -> None:
        self._chosen = None
        self.set_rows([])

    def series(self, plot: str) -> Dict[str, tuple]:
        """Legend name -> ``(n values, medians, q25, q75)`` drawn in ``"nll"`` or ``"mad"``."""
        drawn = getattr(self, "_drawn", {}).get(plot, {})
        return {name: tuple(np.array(v) for v in data) for name, data in drawn.items()}

    def nll_source(self) -> str:
        """``"test_nll"`` or ``"train_nll"``: which NLL the left plot shows."""
        return self._nll_key()

    # ------------------------------------------------------------- internals
    def _nll_key(self) -> str:
        return "test_nll" if any(not math.isnan(_num(r.get("test_nll"))) for r in self._shown) else "train_nll"

    def _which(self, sweep: str) -> str:
        """``"sweep 2 on demo (synthetic)"``: the sweep and its data set (from its rows)."""
        data = list(dict.fromkeys(str(r["data"]) for r in self._rows if r.get("sweep") == sweep and r.get("data")))
        return f"{sweep} on {', '.join(data)}" if data else sweep

    @staticmethod
    def _series_name(kind: str, l) -> str:
        return kind if l is None else f"{kind}, l = {l}"

    def _redraw(self) -> None:
        for item in self._items:
            for p in self.plots.values():
                if item.scene() is not None and item in p.items:
                    p.removeItem(item)
        self._items = []
        self.legend.clear()
        self._drawn: Dict[str, Dict[str, tuple]] = {"nll": {}, "mad": {}}
        sweep = self.shown_sweep()
        self._shown = [r for r in self._rows if r.get("sweep") == sweep]
        if not self._shown:
            self.header.setText("")
            self.placeholder.setText(NO_SWEEP if sweep is None else
                                     f"{self._which(sweep)}: no job of it has finished yet. Its summary, NLL and "
                                     "MAD against the number of states n, fills in here as its jobs finish.")
            self.stack.setCurrentWidget(self.placeholder)
            return
        kinds_all = sorted({str(r.get("kind") or "model") for r in self._shown})
        have = [self.kind_box.itemData(i) for i in range(1, self.kind_box.count())]
        if have != kinds_all:
            current = self.kind_box.currentData()
            self.kind_box.blockSignals(True)
            while self.kind_box.count() > 1:
                self.kind_box.removeItem(1)
            for k in kinds_all:
                self.kind_box.addItem(k, k)
            self.kind_box.setCurrentIndex(max(0, self.kind_box.findData(current)))
            self.kind_box.blockSignals(False)
        shown_kind = self.kind_box.currentData()
        rows = [r for r in self._shown if shown_kind is None or str(r.get("kind") or "model") == shown_kind]
        nll_key = self._nll_key()
        which = "test" if nll_key == "test_nll" else "training"
        style_plot(self.plots["nll"], self, f"NLL per token ({which} data)")
        summaries = {"nll": summarize_rows(rows, nll_key), "mad": summarize_rows(rows, "mad")}
        keys = sorted({k for s in summaries.values() for k in s},
                      key=lambda k: (k[0], -1 if k[1] is None else int(k[1])))
        kinds = sorted({k[0] for k in keys})
        colors = state_colors(max(1, len(keys)))
        all_n = sorted({int(r["n"]) for r in rows if r.get("n") is not None}) or [0]
        gap = min((b - a for a, b in zip(all_n, all_n[1:])), default=1.0)
        width = 0.5 * gap / max(1, len(keys))  # series side by side at each n, so bars never hide each other
        in_legend = set()
        for plot_key, summary in summaries.items():
            p = self.plots[plot_key]
            vals = [v for s in summary.values() for (m, a, b, _c) in s.values() for v in (m, a, b)]
            log = plot_key == "mad" and bool(vals) and min(vals) > 0
            p.setLogMode(False, log)
            for i, key in enumerate(keys):
                s = summary.get(key)
                if not s:
                    continue
                ns = np.array(sorted(s), dtype=float)
                med = np.array([s[int(n)][0] for n in ns])
                q25 = np.array([s[int(n)][1] for n in ns])
                q75 = np.array([s[int(n)][2] for n in ns])
                x = ns + (i - (len(keys) - 1) / 2.0) * width
                color = colors[i]
                marker = _MARKERS[kinds.index(key[0]) % len(_MARKERS)]
                name = self._series_name(*key)
                self._drawn[plot_key][name] = (ns, med, q25, q75)
                ty = (lambda v: np.log10(v)) if log else (lambda v: v)
                beam = min(0.3 * width, 0.15) if width > 0 else 0.1
                bars = pg.ErrorBarItem(x=x, y=ty(med), top=ty(q75) - ty(med), bottom=ty(med) - ty(q25),
                                       beam=beam, pen=pg.mkPen(color, width=1.5))
                line = pg.PlotDataItem(x, med, pen=pg.mkPen(color, width=2), symbol=marker, symbolSize=8,
                                       symbolBrush=pg.mkBrush(color), symbolPen=pg.mkPen(color), name=name)
                p.addItem(bars)
                p.addItem(line)
                self._items += [bars, line]
                if name not in in_legend:
                    in_legend.add(name)
                    self.legend.addItem(line, name)
            p.setXRange(min(all_n) - 0.6 * gap, max(all_n) + 0.6 * gap, padding=0)
            p.getAxis("bottom").setTicks([[(float(n), str(n)) for n in all_n], []])
            p.enableAutoRange(axis="y")
        runs = {}
        for r in rows:
            k = (str(r.get("kind")), r.get("n"), r.get("l"))
            runs[k] = runs.get(k, 0) + 1
        reps = sorted(set(runs.values())) or [0]
        rep_text = str(reps[0]) if len(reps) == 1 else f"{reps[0]}-{reps[-1]}"
        what = ("" if sweep is None else f"{self._which(sweep)} — ") + \
            ("" if shown_kind is None else f"{shown_kind}: ")
        infinite = sum(1 for r in rows if _is_inf(r.get(nll_key)))
        not_drawn = (f" Not drawn: {infinite} job(s) with an infinite {which} NLL (a {which} symbol the model "
                     "gives probability 0)." if infinite else "")
        self.header.setText(f"{what}{len(rows)} finished job(s), {len(runs)} (kind, n, l) cell(s), "
                            f"{rep_text} repeat(s) each: markers are medians, bars span the 25th-75th "
                            f"percentile.{not_drawn}")
        self.stack.setCurrentWidget(self.graphics)


def row_from_spec(spec: dict, metrics: Optional[dict] = None, job=None) -> dict:
    """A :meth:`SweepView.add_row` row from a job's model spec (``ModelSpec.to_dict()``: model type, n,
    l, seed) and its final metrics (train_nll, test_nll, mad).  A fair standard HMM is placed at
    the (n, l) of the DenseHMM it is matched with, as in the paper's figures."""
    form = ModelSpec.from_dict(spec)
    kind = form.model_type.replace("_", "-")
    metrics = dict(metrics or {})
    return {"job": job, "kind": kind, "n": form.n, "l": None if kind == "standard" else form.l,
            "seed": form.seed, "train_nll": metrics.get("train_nll"),
            "test_nll": metrics.get("test_nll"), "mad": metrics.get("mad")}


def sweep_row(job, metrics: Optional[dict] = None) -> dict:
    """The row of a finished sweep job (``job.spec``, ``job.id``, ``job.sweep``; its data set's name:
    ``job.dataset.name``, else ``job.dataset_name``, a restored job's) with its final ``metrics``."""
    row = row_from_spec(job.spec, metrics, job.id)
    ds = getattr(job, "dataset", None)
    row["sweep"] = job.sweep
    row["data"] = getattr(ds, "name", None) if ds is not None else (getattr(job, "dataset_name", "") or None)
    return row

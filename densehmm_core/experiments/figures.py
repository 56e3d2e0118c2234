"""Figures of the reproduction experiments (matplotlib, Agg canvas, no GUI).

Uses matplotlib's object-oriented API with an Agg canvas (no pyplot state), so
it is safe in worker threads and never needs a display.  Every figure is written
atomically (temp file + rename).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..maths import median_quartiles
from .names import MODEL_LABEL     # the models' labels (names.py owns the model names)

__all__ = ["factorization_figure", "comparison_figure", "left_out_note", "MODEL_STYLE", "MODEL_LABEL"]

MODEL_STYLE = {
    "dense-em": dict(color="tab:orange", marker="s"),
    "dense-direct": dict(color="tab:green", marker="o"),
    "dense-cooc": dict(color="tab:green", marker="o"),
    "standard-fair": dict(color="tab:purple", marker="^"),
    "standard": dict(color="tab:blue", marker="x"),
    "dense-direct-gt": dict(color="tab:olive", marker="o", linestyle="--"),
}
# colour and label of each factorisation method, in drawing order (the methods of
# densehmm_core.experiments.factorization.METHODS; rows of other methods are not drawn)
FACTORIZATION_STYLE = {
    "normabslin": ("tab:blue", "normAbsLin(U Z^T)"),
    "softmax": ("tab:green", "softmax(U Z^T)"),
}


def _new_figure(width: float = 8.0, height: float = 4.5):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = path.suffix.lstrip(".").lower() or "png"
    from .. import fileio
    with fileio.atomic_path(path, follow_links=False) as tmp:
        fig.savefig(tmp, format=fmt, bbox_inches="tight")
    return path


def _quantiles(values: Sequence[float]):
    return median_quartiles(values, finite_only=True)     # a figure cannot draw an infinity


def factorization_figure(rows: Sequence[dict], path, paper_table: Optional[dict] = None) -> Path:
    """Relative error against l/n: median and 25/75 band per method, all runs pooled
    by l/n (as in the paper's figure), a dashed line at l = n, and the paper's
    per-(n, l) medians as grey markers."""
    by: Dict[str, Dict[float, List[float]]] = {m: {} for m in FACTORIZATION_STYLE}
    for r in rows:
        ratio = round(int(r["l"]) / int(r["n"]), 6)
        by.setdefault(str(r["method"]), {}).setdefault(ratio, []).append(float(r["error"]))
    ratios = sorted({x for d in by.values() for x in d})
    pos = {x: i for i, x in enumerate(ratios)}
    fig = _new_figure()
    ax = fig.add_subplot(1, 1, 1)
    style = FACTORIZATION_STYLE
    for m in style:
        d = by.get(m) or {}
        xs = [pos[x] for x in ratios if x in d]
        q = np.array([_quantiles(d[x]) for x in ratios if x in d])
        if not len(xs):
            continue
        color, label = style[m]
        ax.plot(xs, q[:, 0], marker="o", color=color, label=f"{label}: median")
        ax.fill_between(xs, q[:, 1], q[:, 2], color=color, alpha=0.25, label=f"{label}: 25/75 %")
    if paper_table:
        first = True
        for (n, l), cells in paper_table.items():
            ratio = round(l / n, 6)
            if ratio not in pos:
                continue
            for m in style:
                if m in cells:
                    ax.plot([pos[ratio]], [cells[m][0]], linestyle="none", marker="_", markersize=12,
                            color=style[m][0], alpha=0.9,
                            label="paper's median per (n, l)" if first else None)
                    first = False
    if 1.0 in pos:
        ax.axvline(pos[1.0], linestyle="--", color="grey", linewidth=1)
    ax.set_xticks(range(len(ratios)))
    ax.set_xticklabels([f"{x:.2f}" for x in ratios], rotation=45)
    ax.set_xlabel("l / n")
    ax.set_ylabel("||A_hat - A||_F / ||A||_F")
    ax.set_ylim(bottom=-0.02)
    ax.set_title("Non-linear matrix factorisation (Dirichlet(0.1) rows)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def comparison_figure(rows: Sequence[dict], metric: str, path, *, title: str = "",
                      ylabel: Optional[str] = None, logy: bool = False) -> Path:
    """One series per model over the (n, l) pairs: median and 25/75 band of ``metric``."""
    pairs = sorted({(int(r["n"]), int(r["l"])) for r in rows})
    pos = {p: i for i, p in enumerate(pairs)}
    present = {str(r["model"]) for r in rows}     # every model of the rows is drawn (unknown ones by name)
    models = [m for m in MODEL_LABEL if m in present] + sorted(present - set(MODEL_LABEL))
    fig = _new_figure(max(6.0, 0.75 * len(pairs) + 3), 4.5)
    ax = fig.add_subplot(1, 1, 1)
    for m in models:
        vals: Dict[tuple, List[float]] = {}
        for r in rows:
            if r["model"] != m:
                continue
            try:
                v = float(r[metric])
            except (TypeError, ValueError, KeyError):
                continue
            vals.setdefault((int(r["n"]), int(r["l"])), []).append(v)
        ps = [p for p in pairs if p in vals]
        if not ps:
            continue
        q = np.array([_quantiles(vals[p]) for p in ps])
        xs = [pos[p] for p in ps]
        st = MODEL_STYLE.get(m, {})
        ax.plot(xs, q[:, 0], label=MODEL_LABEL.get(m, m), **st)
        ax.fill_between(xs, q[:, 1], q[:, 2], color=st.get("color"), alpha=0.2)
    ax.set_xticks(range(len(pairs)))
    ax.set_xticklabels([f"n={n}\nl={l}" for n, l in pairs], fontsize=8)
    ax.set_xlabel("(n, l)")
    ax.set_ylabel(ylabel or metric)
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    note = left_out_note(rows, metric)
    if note:
        fig.text(0.01, -0.04, note, fontsize=7, ha="left", va="top", wrap=True)
    return _save(fig, path)


def left_out_note(rows: Sequence[dict], metric: str, most: int = 4) -> str:
    """What a comparison figure of ``metric`` cannot draw: the runs whose value is infinite (a test
    NLL of ``inf``: a test symbol the model gives probability 0), per model and (n, l); empty when
    there are none.  The tables keep them (``inf``)."""
    count: Dict[tuple, List[int]] = {}
    for r in rows:
        try:
            v = float(r[metric])
        except (TypeError, ValueError, KeyError):
            continue
        if math.isnan(v):
            continue
        c = count.setdefault((r["model"], int(r["n"]), int(r["l"])), [0, 0])
        c[0] += math.isinf(v)
        c[1] += 1
    cells = [f"{MODEL_LABEL.get(m, m)} at n={n} l={l} ({k} of {t} runs)"
             for (m, n, l), (k, t) in sorted(count.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0]))
             if k]
    if not cells:
        return ""
    more = f", and {len(cells) - most} more" if len(cells) > most else ""
    return f"Not drawn, infinite {metric}: " + "; ".join(cells[:most]) + more

#!/usr/bin/env python
"""The window's own numerical work on a 30,000-word model — run on demand, not part of the tests.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_gui_numerics.py [--repeats 15]

Six calls the GUI thread makes when a DenseHMM of the Brown corpus's vocabulary (n = 45, l = 32,
30,499 words, 57,340 sentences) is shown, each against its baseline in the same run (ms, median):

* ``pca``: the embeddings' projection (:func:`app.views.projection.pca_2d` of 30,634 x 32) while
  another process keeps both cores busy with BLAS products (a training worker), with the BLAS's
  own thread count (the baseline) and with one thread (:mod:`app.blas`, what the app sets);
* ``top words``: each state's 10 most probable words
  (:func:`app.views.topwords.top_symbols`) against a full partition of the 45 x 30,499 matrix
  (what the table did before);
* ``decode``: :meth:`app.views.decode.DecodeView.set_model` on 57,340 sentences against the same
  call after converting every sentence (what the view did before); the view is hidden, as the
  Decode tab is while a job is shown (it decodes when it is first shown);
* ``decode data``: the job's data read with its model's vocabulary when a job starts
  (:func:`densehmm_core.data.encode_for_model`, the corpus's own names in another list) against the
  same call after the conversions it made before (the names made strings and indexed again);
* ``faint points``: a fresh scatter of the 30,499 words (:class:`app.views.embeddings.UniformScatter`,
  what Overview and a newly shown job draw) against pyqtgraph's ``setData``;
* ``frequency chart``: one paint of the data panel's chart of the 30,499 words' counts, its first
  view (:data:`app.panels.data_panel.FREQ_SHOWN` bars), with :class:`app.panels.data_panel.FrequencyBars`
  (the bars in view) against pyqtgraph's ``BarGraphItem`` (every bar).

Prints the medians and the ratios (new / baseline).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
BUSY = "import numpy as np\na = np.random.rand(1000, 1000)\nwhile True:\n    a @ a\n"


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def full_partition_top(B, top: int):
    """The table's former way: a full partition (a copy of B) for each row's top-th largest."""
    import numpy as np
    n, m = B.shape
    kth = np.partition(B, m - top, axis=1)[:, m - top]
    order = np.empty((n, top), dtype=np.int64)
    for i in range(n):
        cand = np.flatnonzero(B[i] >= kth[i])
        order[i] = cand[np.argsort(-B[i, cand], kind="stable")[:top]]
    return order


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits
    from app.views.projection import pca_2d
    from app.views.topwords import top_symbols
    rng = np.random.default_rng(0)
    m, n, l, top = 30499, 45, 32, 10
    rows = {}

    X = rng.normal(size=(m + 3 * n, l))
    threads = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        time.sleep(1.0)
        base = median_ms(lambda: pca_2d(X), args.repeats)
        with threadpool_limits(1, user_api="blas"):
            new = median_ms(lambda: pca_2d(X), args.repeats)
    finally:
        busy.kill()
        busy.wait()
    rows[f"pca beside a busy process ({threads} BLAS threads -> 1)"] = (base, new)

    logits = rng.normal(size=(n, m)) * 2
    B = np.exp(logits - logits.max(axis=1, keepdims=True))
    B /= B.sum(axis=1, keepdims=True)
    assert np.array_equal(top_symbols(B, top), full_partition_top(B, top))
    rows["top words (full partition -> sample bound)"] = (median_ms(lambda: full_partition_top(B, top), args.repeats),
                                                         median_ms(lambda: top_symbols(B, top), args.repeats))

    from types import SimpleNamespace
    from PySide6.QtWidgets import QApplication
    from densehmm_core.hmm_base import BaseHMM
    from app.views.decode import DecodeView
    _app = QApplication.instance() or QApplication(["bench"])   # (widgets need one)
    lengths = rng.integers(5, 36, size=57340)
    sentences = [rng.integers(0, m, size=int(k)) for k in lengths]
    tags = [rng.integers(0, 12, size=int(k)) for k in lengths]
    data = SimpleNamespace(sequences=sentences, vocabulary=[f"w{i}" for i in range(m)], tags=tags,
                           tag_vocabulary=[f"T{i}" for i in range(12)])
    model = BaseHMM(n, m, seed=0)
    model.startprob_ = rng.dirichlet(np.ones(n))
    model.transmat_ = rng.dirichlet(np.ones(n), size=n)
    model.emissionprob_ = B
    view = DecodeView()        # hidden, as it is while the dashboard shows a job: nothing is decoded

    def converted_first():
        [np.asarray(s).reshape(-1) for s in sentences]      # noqa: B018 - the former conversions
        [np.asarray(t).reshape(-1) for t in tags]           # noqa: B018
        view.set_model(model, data)
    rows["decode set_model, 57,340 sentences (all converted -> shown only)"] = (
        median_ms(converted_first, max(3, args.repeats // 3)), median_ms(lambda: view.set_model(model, data),
                                                                         max(3, args.repeats // 3)))
    from densehmm_core.data import Corpus, encode_for_model
    corpus = Corpus(sentences, data.vocabulary, tags=tags, tag_vocabulary=data.tag_vocabulary, validate=False)
    names = list(data.vocabulary)         # a model's vocabulary: the corpus's own names, another list

    def names_converted():
        """The former way: the names converted and indexed again (three lists, a dict, two sets)."""
        target = [str(v) for v in names]
        [str(v) for v in target]                                        # noqa: B018
        {v: i for i, v in enumerate(target)}                            # noqa: B018
        set(target), set(target)                                        # noqa: B018
        encode_for_model(corpus, names, m)
    rows["decode data at a job's start, 30,499 names (converted -> compared)"] = (
        median_ms(names_converted, args.repeats), median_ms(lambda: encode_for_model(corpus, names, m), args.repeats))
    import pyqtgraph as pg
    from app.views.embeddings import UniformScatter
    kw = dict(symbol="o", size=3, pen=pg.mkPen(None), brush=pg.mkBrush(100, 100, 200, 60))
    fx, fy, fids = rng.normal(size=m), rng.normal(size=m), np.arange(m)
    rows["faint points, a fresh scatter (pyqtgraph's setData -> one record copied)"] = (
        median_ms(lambda: UniformScatter(**kw).setData(x=fx, y=fy, data=fids), args.repeats),
        median_ms(lambda: UniformScatter(**kw).set_points(fx, fy, fids), args.repeats))
    from app.panels.data_panel import FREQ_SHOWN, FrequencyBars
    counts = np.sort(rng.zipf(1.3, m).astype(float))[::-1]
    charts = []
    for bars in (pg.BarGraphItem(x=np.arange(m), height=counts, width=0.8, brush=pg.mkBrush(60, 120, 200)),
                 FrequencyBars(counts, width=0.8, brush=pg.mkBrush(60, 120, 200))):
        chart = pg.PlotWidget()
        chart.resize(400, 260)
        chart.addItem(bars)
        chart.setXRange(-0.6, FREQ_SHOWN - 0.4, padding=0)
        chart.show()
        _app.processEvents()
        charts.append(chart)
    rows[f"frequency chart paint, {FREQ_SHOWN} of 30,499 bars in view (all drawn -> in view)"] = (
        median_ms(charts[0].grab, args.repeats), median_ms(charts[1].grab, args.repeats))
    print(f"{'':74s}{'before':>9s}{'after':>9s}{'ratio':>8s}")
    for name, (before, after) in rows.items():
        print(f"{name:74s}{before:9.1f}{after:9.1f}{after / before:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

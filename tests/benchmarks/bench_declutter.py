#!/usr/bin/env python
"""The embedding scatter's label placement (``EmbeddingScatter._declutter``) with and without keeping
the labels off other points' markers, in the same run:

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_declutter.py [--repeats 30]

An offscreen 400 x 320 scatter, n = 45 states, 2,000 words (Zipf counts, the 50 most frequent
labelled), l = 16, state labels on: 185 label items.  Prints the median milliseconds per pass of
each, their ratio, and how many labels each shows.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    import numpy as np
    from PySide6 import QtWidgets
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    from app.views.embeddings import EmbeddingScatter
    rng = np.random.default_rng(0)
    n, m, l = 45, 2000, 16
    w = EmbeddingScatter()
    w.resize(400, 320)
    w.show()
    app.processEvents()
    w.set_vocabulary([f"w{i}" for i in range(m)])
    w.set_symbol_frequencies(rng.zipf(1.5, m).astype(float))
    w.set_embeddings({"U": rng.normal(size=(n, l)), "Z": rng.normal(size=(n, l)), "W": rng.normal(size=(n, l)),
                      "V": rng.normal(size=(m, l)), "z_start": rng.normal(size=l)})
    w.state_labels_box.setChecked(True)
    w.finish_labels()
    app.processEvents()
    n_items = sum(len(v) for v in w._labels.values())
    out = {}
    real = w._marker_boxes
    for name, boxes in (("labels only", lambda pw, ph: {}), ("and markers", real)):
        w._marker_boxes = boxes
        ts = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            w._declutter()
            ts.append(time.perf_counter() - t)
        shown = sum(t.isVisible() for v in w._labels.values() for t in v)
        out[name] = float(np.median(ts))
        print(f"{name:12s}: {1000 * out[name]:.2f} ms per pass (median of {args.repeats}), "
              f"{shown} of {n_items} labels shown")
    print(f"ratio (kept off markers / labels only): {out['and markers'] / out['labels only']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

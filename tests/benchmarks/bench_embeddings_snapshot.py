#!/usr/bin/env python
"""One live snapshot of a 30,000-word model in the embeddings view — run on demand, not part of the tests.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_embeddings_snapshot.py [--snapshots 12]

An :class:`app.views.embeddings.EmbeddingScatter` (500 x 400) shows snapshots of a DenseHMM with
n = 45, l = 32 and the Brown corpus's 30,499 words (random embeddings, Zipf counts: the 50 most
frequent drawn in full, the rest faint); each snapshot's ``set_embeddings`` plus the event loop's
drawing is timed.  Baseline in the same run: the faint points set with pyqtgraph's ``setData`` at
every snapshot (what the view did before they were moved in place).  Prints the medians (the first
two snapshots left out) and the ratio.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def run(app, snapshots: int, in_place: bool) -> float:
    import numpy as np
    from app.views.embeddings import EmbeddingScatter, UniformScatter
    if not in_place:
        UniformScatter.set_points = lambda self, x, y, ids: self.setData(x=x, y=y, data=ids)
    rng = np.random.default_rng(0)
    m, n, l = 30499, 45, 32
    w = EmbeddingScatter()
    w.resize(500, 400)
    w.show()
    app.processEvents()
    w.set_vocabulary([f"w{i}" for i in range(m)])
    w.set_symbol_frequencies(rng.zipf(1.5, size=m).astype(float))
    times = []
    for _ in range(snapshots):
        p = {k: rng.normal(size=(n, l)) for k in ("U", "Z", "W")}
        p["V"], p["z_start"] = rng.normal(size=(m, l)), rng.normal(size=l)
        t0 = time.perf_counter()
        w.set_embeddings(p)
        app.processEvents()
        times.append(1000 * (time.perf_counter() - t0))
    w.close()
    return statistics.median(times[2:])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshots", type=int, default=12)
    args = ap.parse_args()
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    new = run(app, args.snapshots, in_place=True)
    base = run(app, args.snapshots, in_place=False)     # (patches the class: measured second)
    print(f"snapshot at 30,499 words, median ms: setData each time {base:.1f}, moved in place {new:.1f}; "
          f"ratio {new / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

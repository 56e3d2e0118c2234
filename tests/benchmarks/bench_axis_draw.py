#!/usr/bin/env python
"""Drawing a crowded numeric bottom axis: pyqtgraph's ``AxisItem`` against ``app.views.axes.GappedAxis``
(which drops a label level that would run together), in the same run:

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_axis_draw.py [--repeats 300]

An offscreen 300 x 150 plot, x from -5.5 to 10.25 (pyqtgraph labels every integer there: "-4-3-2-1").
Times ``generateDrawSpecs`` (what an axis does whenever its range or size changes: with every update
of a live curve).  Prints the median milliseconds of each, their ratio, and the labels each draws.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=300)
    args = ap.parse_args()
    import pyqtgraph as pg
    from PySide6 import QtGui, QtWidgets
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(["bench"])
    from app.views.axes import GappedAxis

    results = {}
    keep = []
    for cls in (pg.AxisItem, GappedAxis):
        w = pg.PlotWidget(axisItems={"bottom": cls("bottom")})
        keep.append(w)
        w.resize(300, 150)
        w.show()
        w.setXRange(-5.5, 10.25, padding=0)
        for _ in range(10):
            app.processEvents()
        ax = w.getPlotItem().getAxis("bottom")
        img = QtGui.QImage(300, 50, QtGui.QImage.Format.Format_ARGB32)
        times, texts = [], []
        for _ in range(args.repeats):
            painter = QtGui.QPainter(img)
            t0 = time.perf_counter()
            specs = ax.generateDrawSpecs(painter)
            times.append(time.perf_counter() - t0)
            painter.end()
            texts = [t for _r, _f, t in specs[2]]
        results[cls.__name__] = statistics.median(times) * 1e3
        print(f"{cls.__name__:10s} median {results[cls.__name__]:.3f} ms per drawing; labels {texts}")
    print(f"GappedAxis / AxisItem: {results['GappedAxis'] / results['AxisItem']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

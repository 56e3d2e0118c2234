#!/usr/bin/env python
"""Screenshot of the window on a 1366 x 768 laptop screen (or a 1024 x 600 netbook's) — run on demand under Xvfb:

    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python tests/benchmarks/screenshot_small_screen.py
    xvfb-run -a -s "-screen 0 1024x600x24" .venv/bin/python tests/benchmarks/screenshot_small_screen.py \
        --screen 1024x600
    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshot_small_screen.py \
        --screen 1400x900

The free area is the screen less a 40 px task bar (1366 x 728, as on such a laptop).  Opens the DNA
genes of ../shared/data (the demo data set when absent), trains a standard HMM and a DenseHMM-EM
for 15 iterations (about 20 s) and saves ``window_fits_1366x768.png``: the whole window on the
screen, the dashboard without scroll bars (``window_fits_1024x600.png`` on the netbook: no sideways
scrolling, the pages scroll down).  Prints the window's geometry and whether the central
area scrolls.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, screenshot_session, settle, wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
DNA = os.path.join(os.path.dirname(REPO), "shared", "data", "dna", "CP040672.1.genes_100.fna")


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--screen", default="1366x768", help="the screen, WIDTHxHEIGHT (a 40 px task bar is left)")
    width, height = (int(v) for v in ap.parse_known_args()[0].screen.split("x"))
    name = f"window_fits_{width}x{height}.png"
    out, app, tmp = screenshot_session(REPO)
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QGuiApplication
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    MainWindow.available_geometry = lambda self: QRect(0, 0, width, height - 40)   # a 40 px task bar below
    win = fresh_window(app, tmp)
    if os.path.exists(DNA):
        win.open_files([DNA])
        wait_until(app, lambda: len(win.datasets) == 1 and not win.data_ctl.loading, 120)
    else:
        win.data_ctl.load_demo()
    jobs = [win.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=6, n_iter=15, seed=1)),
            win.jobs_ctl.start_training(ModelSpec.make(model_type="dense_em", n=6, l=3, n_iter=15, seed=1))]
    wait_until(app, lambda: all(j.state.is_final for j in jobs), 400)
    win.jobs_panel.select(jobs[1])
    win.jobs_ctl.show_job(jobs[1])
    wait_until(app, lambda: not win.dashboard.live_update_pending, 60)
    settle(app, 1.0)
    area = win.central_area
    print("window", win.frameGeometry(), "central", area.viewport().size(), "pages' minimum",
          win.stack.minimumSizeHint(), "scroll bars", area.verticalScrollBar().isVisible(),
          area.horizontalScrollBar().isVisible())
    QGuiApplication.primaryScreen().grabWindow(0).save(os.path.join(out, name))
    print("saved", os.path.join(out, name))
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Screenshot of the Jobs panel with remote (Dask) runs for docs (issue 17) — run on demand.

    xvfb-run -a -s "-screen 0 2000x1100x24" .venv/bin/python tests/benchmarks/screenshot_dask.py

Starts the app on the demo data set with sweeps sent to a local Dask cluster of two workers:
a finished sweep of standard HMMs (their models come back through the cluster's temporary
folder), then a sweep of long-running fair standard HMMs with one run cancelled, two running
and the rest queued; saves docs/screenshots/jobs_dask.png (the Jobs panel, floating).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")



def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "screenshots"),
                    help="a folder (as the other screenshot scripts take: jobs_dask.png inside) or a .png file")
    args = ap.parse_args()
    if os.path.isdir(args.out):
        args.out = os.path.join(args.out, "jobs_dask.png")
    import numpy as np
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication(["densehmm-studio"])
    from app.jobs import JobState
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    from app.settings import Settings
    settings = Settings(QSettings(os.path.join(tempfile.mkdtemp(), "s.ini"), QSettings.IniFormat))
    win = MainWindow(settings)
    win.resize(1500, 950)
    win.show()
    win.data_ctl.load_demo()
    win.set_pool_size(2)
    win.jobs_ctl.set_sweep_target("local")
    done = win.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=30, tol=1e-6), 1)
    if not wait_until(app, lambda: all(j.state.is_final for j in done), 180):
        raise SystemExit("the first sweep did not finish")
    long = win.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard_fair", l=3, n_iter=10 ** 7, tol=-np.inf), 1)
    wait_until(app, lambda: sum(j.state == JobState.RUNNING and j.step > 0 for j in long) >= 2, 180)
    win.jobs_ctl.cancel_job(next(j for j in long if j.state == JobState.RUNNING))
    wait_until(app, lambda: sum(j.state == JobState.RUNNING and j.step > 0 for j in long) >= 2, 60)
    wait_until(app, lambda: False, 2.5)
    win.jobs_panel.select(done[1])
    win.jobs_dock.setFloating(True)
    win.jobs_dock.resize(1900, 330)
    win.jobs_panel.tree.setColumnWidth(0, 330)
    wait_until(app, lambda: False, 0.6)
    if not win.jobs_panel.grab().save(args.out):
        raise SystemExit(f"could not write {args.out}")
    print("saved", args.out)
    win.jobs.cancel_all()
    win.jobs_ctl.remote_sweeps.close_all()
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Screenshot of models opened from a plain .h5 model file (issue 24.11) — run on demand under Xvfb:

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshot_model_file.py

Trains a standard HMM and a co-occurrence DenseHMM on the demo data, exports both to one .h5 file
(Export .h5), opens that file in a fresh window (as models, not as a session), selects the
DenseHMM and takes ``docs/screenshots/model_file_opened.png``: the dashboard's header and the
Jobs panel's rows show the metrics the file records.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, saver, screenshot_session, settle, wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main() -> int:
    out, app, tmp = screenshot_session(REPO)
    from app.modelspec import ModelSpec, type_defaults
    path = os.path.join(tmp, "two_models.h5")
    first = fresh_window(app, tmp, "first.ini")
    first.data_ctl.load_demo()
    jobs = [first.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=5, n_iter=30, tol=0.0, seed=0)),
            first.jobs_ctl.start_training(ModelSpec.make(**dict(type_defaults("dense_cooc", "paper"),
                                                                  model_type="dense_cooc", n=5, l=3, seed=0)))]
    wait_until(app, lambda: all(j.state.is_final for j in jobs), 300)
    names = []
    first.results_ctl.export_models(jobs, path, on_done=names.extend)
    wait_until(app, lambda: len(names) == 2, 60)
    first.close()

    win = fresh_window(app, tmp, "second.ini")
    win.resize(1400, 900)
    win.data_ctl.load_demo()
    win.open_files([path])
    wait_until(app, lambda: len(win.jobs.jobs) == 2, 60)
    job = win.jobs.jobs[1]
    win.jobs_panel.select(job)
    win.jobs_ctl.show_job(job)
    wait_until(app, lambda: not win.dashboard.live_update_pending, 60)
    win.jobs_dock.raise_()
    settle(app, 0.5)
    print("header:", win.dashboard.title.text())
    saver(app, out, win)("model_file_opened.png")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Screenshots of DenseHMM Studio for docs/APP.md (issue 6) — run on demand.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/screenshots.py [--out docs/screenshots]
    xvfb-run -a .venv/bin/python tests/benchmarks/screenshots.py      # with a real X server

Starts the app, loads a shared protein FASTA (../shared/data; the demo data set when it is
absent), applies the paper's protein preprocessing (cut at 512, merge below 0.2 %), trains a
DenseHMM (direct co-occurrence) and a fair standard HMM for a few seconds each and saves
screenshots of the main views.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import settle, wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
FASTA = os.path.join(os.path.dirname(REPO), "shared", "data", "proteins",
                     "pdb_seqres_2022_09_28__subsampled_1000.fasta")




def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "screenshots"))
    ap.add_argument("--train-seconds", type=float, default=12.0)
    ap.add_argument("--theme", default="light", choices=["light", "dark", "system"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication(["densehmm-studio"])
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec, type_defaults
    from app.settings import Settings
    tmp = tempfile.mkdtemp()
    settings = Settings(QSettings(os.path.join(tmp, "s.ini"), QSettings.IniFormat))
    win = MainWindow(settings)
    win.set_theme(args.theme)
    win.resize(1600, 1000)
    win.show()
    settle(app, 1.0)

    def shot(name):
        settle(app, 0.6)
        path = os.path.join(args.out, name)
        win.grab().save(path)
        print("saved", path)

    if os.path.exists(FASTA):
        settings.add_recent_file(FASTA)
        win.refresh_recent()
    shot("start.png")

    if os.path.exists(FASTA):
        win.open_files([FASTA])
        if not wait_until(app, lambda: win.datasets and not win.data_ctl.loading, 120):
            raise SystemExit("the FASTA did not load")
        panel = win.data_panel
        panel.max_len.setValue(512)
        panel.merge.setValue(0.2)
        before = panel.summary["n_symbols"]
        panel.apply_button.click()
        wait_until(app, lambda: panel.summary["n_symbols"] != before, 60)
    else:
        print("shared data missing: using the demo data set")
        win.data_ctl.load_demo()

    win.start_background_init()
    wait_until(app, lambda: win.tf_status in ("ready", "failed"), 300)
    spec = ModelSpec.make(model_type="dense_cooc", n=10, l=5, **type_defaults("dense_cooc", "default"),
                          preset="default", seed=1)
    win.model_form.set_spec(spec)
    win.model_form.train_button.click()
    dense = win.jobs.jobs[-1]
    t0 = time.perf_counter()
    wait_until(app, lambda: dense.step > 0, 300)
    wait_until(app, lambda: dense.state.is_final, args.train_seconds)
    if not dense.state.is_final:
        win.jobs_ctl.cancel_job(dense)
        wait_until(app, lambda: dense.state.is_final, 60)
    print(f"dense job {dense.state.value} after {time.perf_counter() - t0:.1f} s at step {dense.step}")
    fair = win.jobs_ctl.start_training(
        ModelSpec.make(model_type="standard_fair", n=10, l=5, n_iter=30, tol=1e-6, seed=1))
    wait_until(app, lambda: fair.state.is_final, 120)
    win.model_form.set_spec(spec)
    win.jobs_panel.select(dense)
    d = win.dashboard
    d.tabs.setCurrentIndex(0)
    shot("dashboard.png")
    d.tabs.setCurrentWidget(d.decode)
    shot("decode.png")
    d.tabs.setCurrentWidget(d.overview)
    shot("overview.png")
    win.results_ctl.compare_jobs(dense, fair)
    shot("compare.png")
    d.tabs.setCurrentIndex(0)
    win.log_dock.raise_()
    shot("log.png")
    win.jobs.cancel_all()
    win.jobs.wait(5)
    win.set_theme("system")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

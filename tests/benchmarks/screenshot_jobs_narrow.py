#!/usr/bin/env python
"""Screenshots of the Jobs panel at its normal width and in a narrow (420 px) floating dock,
and of the header's column menu — run on demand under Xvfb:

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshot_jobs_narrow.py

Trains a few standard HMMs (seconds) on the demo data set and on a small generated FASTA
file with a long name; TensorFlow is not needed.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, saver, screenshot_session, settle, wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def write_fasta(path: str, n: int = 40, length: int = 80, seed: int = 0) -> None:
    import numpy as np
    rng = np.random.default_rng(seed)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(f">seq{i}\n{''.join(rng.choice(letters, size=length))}\n")


def main() -> int:
    out, app, tmp = screenshot_session(REPO)
    from PySide6.QtCore import QPoint
    from app.modelspec import ModelSpec
    from app.panels.jobs_panel import C_MAD
    fasta = os.path.join(tmp, "kinase_domains_uniprot_2024_subsampled_40.fasta")
    write_fasta(fasta)
    win = fresh_window(app, tmp)
    shot = saver(app, out, win)

    win.open_files([fasta])
    wait_until(app, lambda: len(win.datasets) == 1 and not win.data_ctl.loading, 60)
    jobs = [win.jobs_ctl.start_training(
        ModelSpec.make(model_type="standard", n=n, n_iter=20, tol=0.0, seed=1)) for n in (4, 6)]
    win.data_ctl.load_demo()
    jobs += [win.jobs_ctl.start_training(
        ModelSpec.make(model_type="standard_fair", n=5, l=3, n_iter=20, tol=0.0, seed=2)),
             win.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=5, n_iter=30, tol=0.0, seed=3))]
    wait_until(app, lambda: all(j.state.is_final for j in jobs), 300)
    running = win.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=8, n_iter=100000, tol=0.0, seed=4))
    wait_until(app, lambda: running.step >= 3, 60)
    win.jobs_dock.raise_()
    win.jobs_panel.select(jobs[0])
    panel = win.jobs_panel
    print("normal width: hidden", [panel.column_title(c) for c in panel.hidden_columns()])
    shot("jobs_normal_width.png", win.jobs_dock)

    win.jobs_dock.setFloating(True)
    win.jobs_dock.resize(420, 330)
    settle(app, 0.5)
    print("narrow: hidden", [panel.column_title(c) for c in panel.hidden_columns()],
          "horizontal scroll bar:", panel.tree.horizontalScrollBar().isVisible())
    shot("jobs_narrow.png", win.jobs_dock)

    panel.set_column_shown(C_MAD, False)      # what the header's menu does
    menu = panel.column_menu()
    menu.popup(win.jobs_dock.mapToGlobal(QPoint(40, 60)))
    shot("jobs_columns_menu.png", menu)
    menu.close()
    win.jobs.cancel_all()
    win.jobs.wait(5)
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

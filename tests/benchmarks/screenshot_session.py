#!/usr/bin/env python
"""Screenshot of a restored session (File > Open session) — run on demand under Xvfb:

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshot_session.py

Trains two standard HMMs (seconds, no TensorFlow) on a small generated FASTA file, saves
the session, opens it in a fresh window (its own settings: nothing carried over; "read the data
files again?" answered Yes), waits until the first job is drawn (nothing selected by hand) and
takes ``docs/screenshots/session_restored.png`` of that window.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, saver, screenshot_session, settle, wait_until  # noqa: E402 - this folder, not a package
from screenshot_jobs_narrow import write_fasta  # noqa: E402
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main() -> int:
    out, app, tmp = screenshot_session(REPO)
    from app.modelspec import ModelSpec
    fasta = os.path.join(tmp, "globins_generated.fasta")
    write_fasta(fasta, n=60, length=120, seed=1)
    session = os.path.join(tmp, "two_jobs_session.h5")

    def window(name):
        return fresh_window(app, tmp, name)

    first = window("first.ini")
    first.open_files([fasta])
    wait_until(app, lambda: len(first.datasets) == 1 and not first.data_ctl.loading, 60)
    jobs = [first.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=4, n_iter=30, tol=0.0, seed=0)),
            first.jobs_ctl.start_training(
                ModelSpec.make(model_type="standard_fair", n=6, l=3, n_iter=30, tol=0.0, seed=1))]
    wait_until(app, lambda: all(j.state.is_final for j in jobs), 300)
    saved = []
    first.sessions_ctl.save_session(session, on_done=saved.append)
    wait_until(app, lambda: bool(saved), 60)
    print("saved", session, saved)
    first.close()

    from PySide6.QtWidgets import QMessageBox
    QMessageBox.question = staticmethod(lambda *a, **k: QMessageBox.Yes)   # "Read the session's data files?"
    win = window("second.ini")
    restored = []
    win.sessions_ctl.open_session(session, on_done=restored.extend)
    wait_until(app, lambda: len(restored) == 2 and all(j.dataset is not None for j in restored)
               and win.current_job is restored[0] and not win.dashboard.live_update_pending, 60)
    win.jobs_dock.raise_()
    print("restored", [(j.name, j.state.value, j.dataset.name if j.dataset else None) for j in restored])
    settle(app, 0.2)
    saver(app, out, win)("session_restored.png")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Screenshot of a restored session (File > Open session) — run on demand under Xvfb:

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshot_session.py

Trains two standard HMMs (seconds, no TensorFlow) on a small generated FASTA file, saves
the session, opens it in a fresh window (its own settings: nothing carried over) and takes
``docs/screenshots/session_restored.png`` of that window.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import settle, wait_until  # noqa: E402 - this folder, not a package
from screenshot_jobs_narrow import write_fasta  # noqa: E402
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "screenshots"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication(["densehmm-studio"])
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    from app.settings import Settings
    tmp = tempfile.mkdtemp()
    fasta = os.path.join(tmp, "globins_generated.fasta")
    write_fasta(fasta, n=60, length=120, seed=1)
    session = os.path.join(tmp, "two_jobs_session.h5")

    def window(name):
        w = MainWindow(Settings(QSettings(os.path.join(tmp, name), QSettings.IniFormat)))
        w.set_theme("light")
        w.show()
        w.finish_startup()
        settle(app, 0.5)
        return w

    first = window("first.ini")
    first.open_files([fasta])
    wait_until(app, lambda: len(first.datasets) == 1 and not first.loading, 60)
    jobs = [first.start_training(ModelSpec(kind="standard", n=4, steps=30, tol=0.0, seed=0)),
            first.start_training(ModelSpec(kind="standard_fair", n=6, l=3, steps=30, tol=0.0, seed=1))]
    wait_until(app, lambda: all(j.state.is_final for j in jobs), 300)
    saved = []
    first.save_session(session, on_done=saved.append)
    wait_until(app, lambda: bool(saved), 60)
    print("saved", session, saved)
    first.close()

    win = window("second.ini")
    restored = []
    win.open_session(session, on_done=restored.extend)
    wait_until(app, lambda: len(restored) == 2 and all(j.dataset is not None for j in restored), 60)
    win.jobs_dock.raise_()
    win.jobs_panel.select(restored[0])
    print("restored", [(j.name, j.state.value, j.dataset.name if j.dataset else None) for j in restored])
    settle(app, 1.0)
    path = os.path.join(args.out, "session_restored.png")
    win.grab().save(path)
    print("saved", path, win.size())
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

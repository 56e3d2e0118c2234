#!/usr/bin/env python
"""Screenshots of the Jobs/results table, Decode on another data set, the open-errors dialog and
About (issue 16) — run on demand under Xvfb (the window on a 1400 x 900 screen, with a trained job:
``screenshot_small_screen.py --screen 1400x900``):

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshots_jobs.py

Uses two protein FASTA files of ../shared/data (the demo data set only when they are absent).
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, saver, screenshot_session, settle, wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
PROT = os.path.join(os.path.dirname(REPO), "shared", "data", "proteins")
FASTA_A = os.path.join(PROT, "pdb_seqres_2022_09_28__subsampled_1000.fasta")
FASTA_B = os.path.join(PROT, "uniprot_all__subsampled_1000.fasta")




def main() -> int:
    out, app, tmp = screenshot_session(REPO)
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QMessageBox
    from app.modelspec import ModelSpec
    from app.panels.about import about_text
    from app.panels.jobs_panel import C_TEST
    win = fresh_window(app, tmp, start=False)
    shown_dialogs = []

    def dialog(title, message):  # non-modal, so that it can be photographed
        box = QMessageBox(QMessageBox.Critical, title, message, QMessageBox.Ok, win)
        box.show()
        shown_dialogs.append(box)
    # the window's error dialogs (app.window.common.error_dialog), shown non-modal here
    QMessageBox.critical = staticmethod(lambda parent, title, message, *a, **k: dialog(title, message))
    win.show()
    settle(app, 1.0)
    screen = QGuiApplication.primaryScreen()
    shot = saver(app, out, win)

    print("screen", screen.availableGeometry(), "window", win.frameGeometry())
    win.start_background_init()
    have = os.path.exists(FASTA_A) and os.path.exists(FASTA_B)
    if have:
        win.open_files([FASTA_A, FASTA_B])
        wait_until(app, lambda: len(win.datasets) == 2 and not win.data_ctl.loading, 120)
        a = next(d for d in win.datasets if d.path == FASTA_A)
        b = next(d for d in win.datasets if d.path == FASTA_B)
        win.data_ctl.select_dataset(win.datasets.index(a))
    win.data_ctl.load_demo()
    wait_until(app, lambda: win.tf_status in ("ready", "failed"), 300)
    demo = win.current_dataset
    win.set_pool_size(2)
    sweep = win.jobs_ctl.start_sweep(ModelSpec.make(model_type="dense_cooc", lr=0.01, cooc_steps=400, tol=0.0), 1)
    std = win.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=25, tol=0.0), 2)
    wait_until(app, lambda: all(j.state.is_final for j in sweep + std), 600)
    win.jobs_panel.tree.sortByColumn(C_TEST, Qt.AscendingOrder)
    win.jobs_dock.raise_()
    win.jobs_panel.select(sweep[0])
    shot("jobs_results.png")
    win.dashboard.tabs.setCurrentWidget(win.dashboard.sweep)
    shot("jobs_sweep_tab.png")

    if have:
        win.data_ctl.select_dataset(win.datasets.index(a))
        job = win.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=6, n_iter=6, tol=0.0, seed=0))
        wait_until(app, lambda: job.state.is_final, 600)
        win.jobs_panel.select(job)
        d = win.dashboard
        d.tabs.setCurrentWidget(d.decode)
        ib = win.datasets.index(b)
        d.decode.data_box.setCurrentIndex(ib)
        d.decode.data_box.activated.emit(ib)
        names = d.decode._names or []
        if names:
            d.decode.find_edit.setText(names[min(7, len(names) - 1)][:12])
            d.decode.find_sequence(d.decode.find_edit.text())
        shot("decode_other_dataset.png")
        res = []
        win.results_ctl.score_job(job, b, on_done=res.append)
        wait_until(app, lambda: bool(res), 120)
        print("scored on", b.name, res)

    # several bad files at once: one dialog
    bad = []
    for name, data in (("table.dat", b"a,b,c\n1,2,3\n"), ("empty.fasta", b""), ("image.fasta", bytes(range(256)))):
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        bad.append(p)
    win.open_files(bad + [os.path.join(tmp, "missing.conllu")])
    wait_until(app, lambda: not win.data_ctl.loading and bool(shown_dialogs), 60)
    shot("open_errors.png", shown_dialogs[-1])
    shown_dialogs[-1].close()

    box = QMessageBox(QMessageBox.NoIcon, "About DenseHMM Studio", about_text(win.tf_version), QMessageBox.Ok, win)
    box.show()
    shot("about.png", box)
    box.close()
    del demo
    win.jobs.cancel_all()
    win.jobs.wait(5)
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Screenshot of File > Export figure's "Which view?" dialog for docs/APP.md -- run on demand.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/screenshot_export_chooser.py [OUT]

Trains a small standard HMM on the demo data in the main window, selects it and saves the dialog
(every view of the dashboard by its title) as ``docs/screenshots/export_which_view.png`` (or OUT).
"""
from __future__ import annotations

import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import settle, wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication(["densehmm-studio"])
    from app.export import ViewChooser
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    from app.settings import Settings
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "docs", "screenshots", "export_which_view.png")
    w = MainWindow(Settings(QSettings(os.path.join(tempfile.mkdtemp(), "s.ini"), QSettings.IniFormat)))
    w.resize(1400, 900)
    w.show()
    settle(app, 0.5)
    w.data_ctl.load_demo()
    wait_until(app, lambda: w.datasets and not w.data_ctl.loading, 60)
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=4, n_iter=3, tol=0.0, seed=0))
    wait_until(app, lambda: job.state.is_final, 60)
    w.jobs_panel.select(job)
    settle(app, 0.5)
    chooser = ViewChooser(w.dashboard.export_choices(), w)
    chooser.show()
    settle(app, 0.5)
    chooser.grab().save(out)
    print(out, chooser.titles())
    chooser.close()
    w.jobs.cancel_all()
    w.jobs.wait(5)
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

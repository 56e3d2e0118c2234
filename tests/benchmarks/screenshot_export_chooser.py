#!/usr/bin/env python
"""Screenshot of File > Export figure's "Which view?" dialog for docs/APP.md -- run on demand.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/screenshot_export_chooser.py [--out DIR]

Trains a small standard HMM on the demo data in the main window, selects it and saves the dialog
(every view of the dashboard by its title) as ``export_which_view.png`` in ``docs/screenshots``.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, saver, screenshot_session, wait_until  # noqa: E402 - this folder, not a package
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    out, app, tmp = screenshot_session(REPO)
    from app.export import ViewChooser
    from app.modelspec import ModelSpec
    win = fresh_window(app, tmp)
    win.data_ctl.load_demo()
    wait_until(app, lambda: win.datasets and not win.data_ctl.loading, 60)
    job = win.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=4, n_iter=3, tol=0.0, seed=0))
    wait_until(app, lambda: job.state.is_final, 60)
    win.jobs_panel.select(job)
    chooser = ViewChooser(win.dashboard.export_choices(), win)
    chooser.show()
    saver(app, out)("export_which_view.png", chooser)
    print(chooser.titles())
    chooser.close()
    win.jobs.cancel_all()
    win.jobs.wait(5)
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Screenshot of the data panel's Observe group (issue 14) for docs/APP.md — run on demand.

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshot_data_words.py

Opens the UD English EWT dev file of ../shared/data (the test fixture words.conllu when absent)
in the main window on a 1400 x 900 screen, reads it again as lower-cased words (2,000 words,
rare words as word-shape classes) with the group's Apply button, and saves the data panel (all
of it, at the width of the Data dock) as ``docs/screenshots/data_words.png`` (``--out``); it
fails when the dock shows a horizontal scroll bar.
"""
from __future__ import annotations

import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import settle, wait_until  # noqa: E402 - this folder, not a package
if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
CONLLU = os.path.join(os.path.dirname(REPO), "shared", "data", "pos", "en_ewt-ud-dev.conllu")
FIXTURE = os.path.join(REPO, "tests", "fixtures", "data", "words.conllu")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "screenshots"))
    args = ap.parse_args()
    from PySide6 import QtWidgets
    from PySide6.QtCore import QSettings
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(["densehmm-studio"])
    import tempfile
    from app.mainwindow import MainWindow
    from app.settings import Settings
    tmp = tempfile.mkdtemp()
    w = MainWindow(Settings(QSettings(os.path.join(tmp, "s.ini"), QSettings.IniFormat)))
    w.show()
    settle(app, 0.5)
    path = CONLLU if os.path.exists(CONLLU) else FIXTURE
    w.open_files([path])
    wait_until(app, lambda: len(w.datasets) == 1 and not w.data_ctl.loading, 60)
    p = w.data_panel
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.max_vocab.setValue(2000)
    p.rare.setCurrentIndex(p.rare.findData("shape"))
    old = w.datasets[0]
    p.reread_button.click()
    wait_until(app, lambda: old not in w.datasets and not w.data_ctl.loading, 60)
    w.data_dock.raise_()
    area = w.data_dock.widget()
    settle(app, 0.5)
    area.ensureWidgetVisible(p.observe_box, 0, 0)
    settle(app, 0.5)
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "data_words.png")
    p.grab().save(out)   # the whole panel (in the dock it scrolls), at the dock's width
    w.grab().save(os.path.join(tempfile.gettempdir(), "data_words_window.png"))
    hbar = area.horizontalScrollBar()
    print(f"{out}: {w.datasets[0].n_symbols} symbols; window {w.width()}x{w.height()}, dock "
          f"{w.data_dock.width()} px, horizontal scroll bar {'SHOWN' if hbar.isVisible() else 'none'}")
    return 1 if hbar.isVisible() else 0


if __name__ == "__main__":
    sys.exit(main())

"""Event-loop helpers shared by the benchmark and screenshot scripts of this folder."""
from __future__ import annotations

import time


def wait_until(app, cond, timeout: float, step: float = 0.02) -> bool:
    """Process Qt events until ``cond()`` is true or ``timeout`` seconds have passed.

    Objects scheduled with ``deleteLater`` are deleted too, as the app's event loop does
    (``processEvents`` alone never deletes them: a tab bar Qt retires when the docks are tabbed
    stayed on screen in the screenshots as a stray "Data" tab)."""
    from PySide6.QtCore import QEvent
    t0 = time.perf_counter()
    while not cond() and time.perf_counter() - t0 < timeout:
        app.processEvents()
        app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        time.sleep(step)
    return cond()


def settle(app, seconds: float = 0.5) -> None:
    """Process Qt events for ``seconds`` (layouts and repaints catch up)."""
    wait_until(app, lambda: False, seconds)


def screenshot_session(repo: str):
    """The common start of a screenshot script: ``--out`` (default ``docs/screenshots``; the script
    reads its other options itself), the QApplication and a temporary folder.  Returns ``(out, app, tmp)``."""
    import argparse
    import os
    import tempfile
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(repo, "docs", "screenshots"))
    out = ap.parse_known_args()[0].out
    os.makedirs(out, exist_ok=True)
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication(["densehmm-studio"])
    return out, app, tempfile.mkdtemp()


def fresh_window(app, folder: str, settings_name: str = "s.ini", start: bool = True):
    """A main window with its own settings file in ``folder`` (nothing carried over), light theme,
    shown and (``start``) through its start-up."""
    import os
    from PySide6.QtCore import QSettings
    from app.mainwindow import MainWindow
    from app.settings import Settings
    win = MainWindow(Settings(QSettings(os.path.join(folder, settings_name), QSettings.IniFormat)))
    win.set_theme("light")
    if start:
        win.show()
        win.finish_startup()
        settle(app, 1.0)
    return win


def saver(app, out: str, default=None):
    """``shot(name, widget=None)``: let layouts settle, then save ``widget.grab()`` as ``out/name``."""
    import os

    def shot(name, widget=None):
        settle(app, 0.8)
        path = os.path.join(out, name)
        if not (widget if widget is not None else default).grab().save(path):
            raise SystemExit(f"could not write {path}")
        print("saved", path, (widget if widget is not None else default).size(), flush=True)
    return shot

"""Entry point of DenseHMM Studio: ``python main.py [FILES...]`` or the ``densehmm-studio`` command.

The window is shown first; TensorFlow is imported afterwards on a worker thread (the
status bar says so), so the window is never blank or frozen.  Files given on the
command line (also what a file manager's "Open with" passes) are opened.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional

__all__ = ["main", "display_problem"]

_T0 = time.perf_counter()


def display_problem(env=None, platform: Optional[str] = None) -> Optional[str]:
    """A human-readable reason why no window can be shown, or None.

    Only checked on Linux/BSD without an explicit ``QT_QPA_PLATFORM``: a missing
    ``DISPLAY``/``WAYLAND_DISPLAY`` would otherwise make Qt abort the process.
    """
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if platform.startswith(("win", "darwin", "cygwin")):
        return None
    if env.get("QT_QPA_PLATFORM"):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    return ("DenseHMM Studio needs a graphical display, but neither DISPLAY nor WAYLAND_DISPLAY is set.\n"
            "Run it from a desktop session, over ssh -X, or under a virtual display: "
            "xvfb-run python main.py\n"
            "For headless work use the command line: densehmm --help")


def _parse_args(argv: List[str]):
    import argparse
    p = argparse.ArgumentParser(prog="densehmm-studio",
                                description="DenseHMM Studio: learn HMMs through dense representations.")
    p.add_argument("files", nargs="*", help="data files (FASTA, tagged corpora) or .h5 model files to open")
    p.add_argument("--demo", action="store_true", help="start with the demo data set loaded")
    p.add_argument("--no-tensorflow", action="store_true",
                   help="do not import TensorFlow in the background at start-up")
    p.add_argument("--quit-after", type=float, default=None, metavar="SECONDS", help=argparse.SUPPRESS)
    return p.parse_known_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    """Start the app; returns the exit status."""
    argv = list(sys.argv if argv is None else argv)
    args, qt_args = _parse_args(argv[1:])
    problem = display_problem()
    if problem:
        print(f"densehmm-studio: {problem}", file=sys.stderr)
        return 2
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([argv[0]] + qt_args)
    app.setApplicationName("DenseHMM Studio")
    app.setOrganizationName("DenseHMM")
    app.setDesktopFileName("densehmm-studio")
    from .mainwindow import MainWindow
    from .resources import app_icon
    app.setWindowIcon(app_icon())
    win = MainWindow()
    win.show()
    app.processEvents()
    shown = time.perf_counter() - _T0
    win.log_panel.log(f"Window shown {shown:.2f} s after start")
    if os.environ.get("DENSEHMM_STARTUP_REPORT"):
        print(f"startup_seconds={shown:.3f}", flush=True)
    QTimer.singleShot(0, win.finish_startup)
    if args.demo:
        QTimer.singleShot(0, win.load_demo)
    if args.files:
        QTimer.singleShot(0, lambda: win.open_files(args.files))
    if not args.no_tensorflow:
        QTimer.singleShot(50, win.start_background_init)
    if args.quit_after is not None:
        QTimer.singleShot(int(args.quit_after * 1000), win.close)
    code = app.exec()
    # Worker threads still stuck in a long TensorFlow call must not keep the process alive.
    if win.jobs.pool.activeThreadCount():
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

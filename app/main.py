"""Entry point of DenseHMM Studio: ``python main.py [FILES...]`` or the ``densehmm-studio`` command.

The window is shown first; TensorFlow is imported afterwards in a training worker process (the
status bar says so), so the window is never blank or frozen.  Files given on the
command line (also what a file manager's "Open with" passes) are opened.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional

from densehmm_core import config

from .display import display_problem, release_display_check

__all__ = ["main"]

_T0 = time.perf_counter()


def _parse_args(argv: List[str]):
    import argparse
    p = argparse.ArgumentParser(
        prog="densehmm-studio", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="DenseHMM Studio: learn HMMs through dense representations.",
        epilog="Needs a display (X11 or Wayland; QT_QPA_PLATFORM=offscreen is honoured). Without a\n"
               "reachable one it prints why and exits with status 2: run it under xvfb-run, or use\n"
               "the command line (densehmm --help).\n"
               "The log panel's lines are also written to densehmm-studio.log in the per-user state\n"
               "folder (Linux: ~/.local/state/DenseHMM/DenseHMM Studio/; rotated at 1 MB).")
    p.add_argument("files", nargs="*", help="data files (FASTA, tagged corpora) or .h5 model files to open")
    p.add_argument("--demo", action="store_true", help="start with the demo data set loaded")
    p.add_argument("--no-tensorflow", action="store_true",
                   help="do not load TensorFlow (in a worker process) in the background at start-up")
    p.add_argument("--quit-after", type=float, default=None, metavar="SECONDS", help=argparse.SUPPRESS)
    return p.parse_known_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    """Start the app; returns the exit status."""
    argv = list(sys.argv if argv is None else argv)
    args, qt_args = _parse_args(argv[1:])
    problem = display_problem(hold=True)
    if problem:
        print(f"densehmm-studio: {problem}", file=sys.stderr)
        return 2
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([argv[0]] + qt_args)
    app.setApplicationName("DenseHMM Studio")
    app.setOrganizationName("DenseHMM")
    app.setDesktopFileName("densehmm-studio")
    release_display_check()  # Qt holds its own connection now
    from . import blas, gcguard, gil
    gcguard.install()  # cyclic garbage collection on the GUI thread only (see app/gcguard.py)
    gil.install()      # background threads hand the GUI thread the GIL within 0.25 ms (see app/gil.py)
    blas.install()     # BLAS on one thread beside the training workers (see app/blas.py)
    from .panels.log_panel import install_log_file
    log_path = install_log_file()  # None (window-only log) when the folder is not writable
    from .mainwindow import MainWindow
    from .resources import app_icon
    app.setWindowIcon(app_icon())
    win = MainWindow()
    win.show()
    app.processEvents()
    shown = time.perf_counter() - _T0
    win.log_panel.log(f"Window shown {shown:.2f} s after start")
    if log_path:
        win.log_panel.log(f"Log file: {log_path}")
    if config.startup_report():
        print(f"startup_seconds={shown:.3f}", flush=True)
    QTimer.singleShot(0, win.finish_startup)
    if args.demo:
        QTimer.singleShot(0, win.data_ctl.load_demo)
    if args.files:
        QTimer.singleShot(0, lambda: win.open_files(args.files))
    # TensorFlow's version and devices from a worker process, and the app's own warm-up (only the
    # warm-up with --no-tensorflow)
    QTimer.singleShot(50, win.warm_up if args.no_tensorflow else win.start_background_init)
    if args.quit_after is not None:
        QTimer.singleShot(int(args.quit_after * 1000), win.close)
    code = app.exec()
    return _shutdown(win, code)


def _shutdown(win, code: int, wait_ms: int = 400) -> int:
    """End the process safely after the event loop returned.

    Threads still busy - a job runner stuck in a long TensorFlow call, or the
    background pool of ``app.tasks`` still importing TensorFlow or reading a file - must
    neither keep the process alive nor run Python code while the interpreter finalises
    (which can crash it).  Both pools get ``wait_ms`` to finish; if any thread is still
    busy, settings and the log are flushed and the process ends with ``os._exit(code)``.
    """
    import logging
    from . import tasks
    from .panels.log_panel import LOGGER_NAME, remove_log_file
    pools = [win.jobs.pool, tasks.background_pool()]
    try:  # training worker processes: stop them (their job runners then end at once)
        from densehmm_core.worker import close_shared_pool
        close_shared_pool(timeout=0.1)
    except Exception:  # noqa: BLE001 - never fail while quitting
        pass
    deadline = time.perf_counter() + wait_ms / 1000.0
    for pool in pools:
        pool.waitForDone(max(0, int((deadline - time.perf_counter()) * 1000)))
    busy = sum(pool.activeThreadCount() for pool in pools)
    try:
        win.settings.sync()
    except Exception:  # noqa: BLE001 - never fail while quitting
        pass
    if busy:
        log = logging.getLogger(LOGGER_NAME)
        log.info("Quit with %d thread(s) still busy (job runners, background tasks)", busy)
        log.info("DenseHMM Studio quit (status %d)", code)     # the log ends with its quit line either way
        remove_log_file()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    logging.getLogger(LOGGER_NAME).info("DenseHMM Studio quit (status %d)", code)
    remove_log_file()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

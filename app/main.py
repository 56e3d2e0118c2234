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

__all__ = ["main", "display_problem", "x_display_problem", "release_display_check"]

_T0 = time.perf_counter()


_HINT = ("run it from a desktop session, under a virtual display (xvfb-run python main.py), "
         "or use the command line (densehmm --help)")


def display_problem(env=None, platform: Optional[str] = None, connect: bool = True,
                    hold: bool = False) -> Optional[str]:
    """A one-line, human-readable reason why no window can be shown, or None.

    Only checked on Linux/BSD without an explicit ``QT_QPA_PLATFORM`` (``offscreen``,
    ``minimal``, ``xcb``... are the user's choice and are not second-guessed).  A missing
    or unreachable display would otherwise make Qt abort the process (exit 134).

    Parameters
    ----------
    env : mapping, optional
        The environment to look at (default ``os.environ``).
    platform : str, optional
        ``sys.platform`` by default.
    connect : bool, default True
        Also try to reach the display: the Wayland socket named by ``WAYLAND_DISPLAY``,
        else the X server named by ``DISPLAY`` (``xcb_connect`` through libxcb, or a
        socket connection when libxcb is absent).  False only checks that a variable is set.
    hold : bool, default False
        Keep the X connection of a successful check open until
        :func:`release_display_check` (``main`` does, until Qt has connected).
    """
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if platform.startswith(("win", "darwin", "cygwin")):
        return None
    if env.get("QT_QPA_PLATFORM"):
        return None
    display, wayland = env.get("DISPLAY"), env.get("WAYLAND_DISPLAY")
    if not display and not wayland:
        return ("DenseHMM Studio needs a graphical display, but neither DISPLAY nor WAYLAND_DISPLAY is set: "
                + _HINT)
    if not connect:
        return None
    if wayland and wayland_reachable(wayland, env):
        return None
    if display:
        why = x_display_problem(display, hold=hold)
        if why is None:
            return None
        return f"DenseHMM Studio cannot open the display {display!r} ({why}): " + _HINT
    return (f"DenseHMM Studio cannot reach the Wayland display {wayland!r} and DISPLAY is not set: " + _HINT)


def wayland_reachable(name: str, env=None) -> bool:
    """True when the Wayland compositor socket ``name`` (relative to XDG_RUNTIME_DIR) accepts a connection."""
    env = os.environ if env is None else env
    path = name if os.path.isabs(name) else os.path.join(env.get("XDG_RUNTIME_DIR") or "", name)
    return _unix_connect(path)


def _unix_connect(path: str, timeout: float = 2.0) -> bool:
    import socket
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
        return True
    except OSError:
        return False


def x_display_problem(display: str, timeout: float = 5.0, hold: bool = False,
                      attempts: int = 3) -> Optional[str]:
    """Why the X display ``display`` cannot be reached (short text), or None when it can.

    Uses libxcb (what Qt's xcb plugin uses) through ctypes: ``xcb_connect``,
    ``xcb_connection_has_error``, ``xcb_disconnect``.  Without libxcb, a local display
    (``:N``) is tried through its socket ``/tmp/.X11-unix/XN`` (and Linux's abstract
    socket of that name), a remote one (``host:N``) through TCP port 6000 + N.  A check
    that does not finish within ``timeout`` seconds counts as success (Qt then decides).

    An X server started without ``-noreset`` (e.g. by ``xvfb-run``) resets when its last
    client leaves and refuses connections for a moment: a refused connection is tried
    ``attempts`` times, 0.25 s apart, and with ``hold=True`` a successful libxcb
    connection stays open until :func:`release_display_check` (call it once Qt has
    connected), so that Qt never connects to a server that is resetting because of
    this check.
    """
    import threading
    result: List[Optional[str]] = ["timed out"]

    def probe() -> None:
        why: Optional[str] = None
        for attempt in range(max(1, attempts)):
            if attempt:
                time.sleep(0.25)
            try:
                why = _xcb_problem(display, hold)
            except Exception:  # noqa: BLE001 - libxcb absent or unusable: try the socket
                why = _socket_problem(display)
            if why is None or "parse" in why:
                break
        result[0] = why

    t = threading.Thread(target=probe, name="display-check", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        return None
    return result[0]


_HELD: List[tuple] = []  # (libxcb, connection) kept open by x_display_problem(hold=True)


def release_display_check() -> None:
    """Close the X connection a ``hold=True`` display check kept open (no-op otherwise)."""
    while _HELD:
        lib, conn = _HELD.pop()
        try:
            lib.xcb_disconnect(conn)
        except Exception:  # noqa: BLE001 - pragma: no cover
            pass


_XCB_ERRORS = {1: "connection refused or lost", 2: "extension not supported", 3: "out of memory",
               4: "request too long", 5: "cannot parse the display name", 6: "no such screen",
               7: "file descriptor passing failed"}


def _xcb_problem(display: str, hold: bool = False) -> Optional[str]:
    import ctypes
    import ctypes.util
    try:
        lib = ctypes.CDLL("libxcb.so.1")
    except OSError:
        name = ctypes.util.find_library("xcb")
        if not name:
            raise
        lib = ctypes.CDLL(name)
    lib.xcb_connect.restype = ctypes.c_void_p
    lib.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    lib.xcb_connection_has_error.restype = ctypes.c_int
    lib.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    lib.xcb_disconnect.restype = None
    lib.xcb_disconnect.argtypes = [ctypes.c_void_p]
    conn = lib.xcb_connect(display.encode(), None)
    if not conn:
        return "cannot connect"
    err = lib.xcb_connection_has_error(conn)
    if err or not hold:
        lib.xcb_disconnect(conn)
    else:
        _HELD.append((lib, conn))
    if err:
        return _XCB_ERRORS.get(err, f"xcb error {err}")
    return None


def _socket_problem(display: str) -> Optional[str]:
    """Socket-level reachability of an X display, for systems without libxcb."""
    import socket
    spec = display
    if spec.startswith("/"):                      # launchd style: /path/to/socket:0
        path = spec.rsplit(":", 1)[0]
        return None if _unix_connect(path) else "connection refused"
    host, sep, rest = spec.rpartition(":")
    number = rest.split(".", 1)[0]
    if not sep or not number.isdigit():
        return "cannot parse the display name"
    host = host[5:] if host.startswith("unix/") else host
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        if _unix_connect(path) or (sys.platform.startswith("linux") and _unix_connect("\0" + path)):
            return None
        return "no X server is listening on " + path
    try:
        socket.create_connection((host, 6000 + int(number)), timeout=3).close()
        return None
    except OSError as exc:
        return f"cannot connect to {host}:{6000 + int(number)}: {exc.strerror or exc}"


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
    from . import gcguard
    gcguard.install()  # cyclic garbage collection on the GUI thread only (see app/gcguard.py)
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
    return _shutdown(win, code)


def _shutdown(win, code: int, wait_ms: int = 400) -> int:
    """End the process safely after the event loop returned.

    Worker threads still busy - a training job stuck in a long TensorFlow call, or the
    background pool of ``app.tasks`` still importing TensorFlow or reading a file - must
    neither keep the process alive nor run Python code while the interpreter finalises
    (which can crash it).  Both pools get ``wait_ms`` to finish; if any thread is still
    busy, settings and the log are flushed and the process ends with ``os._exit(code)``.
    """
    import logging
    from . import tasks
    from .panels.log_panel import LOGGER_NAME, remove_log_file
    pools = [win.jobs.pool, tasks.background_pool()]
    try:  # training worker processes: stop them (their relay threads then end at once)
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
        logging.getLogger(LOGGER_NAME).info("Quit with %d worker thread(s) still busy", busy)
        remove_log_file()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    logging.getLogger(LOGGER_NAME).info("DenseHMM Studio quit (status %d)", code)
    remove_log_file()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Can a window be shown here?  Display probing for ``app.main``, before Qt is imported.

A missing or unreachable display would make Qt abort the process (exit 134); these
checks turn that into a one-line reason.  No Qt here.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional

__all__ = ["display_problem", "x_display_problem", "release_display_check", "wayland_reachable"]


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

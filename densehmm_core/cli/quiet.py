"""Keep TensorFlow's start-up notices off the command line's stderr (unless ``--verbose``).

TensorFlow's native libraries write a few notices straight to file descriptor 2 when they
load, whatever ``TF_CPP_MIN_LOG_LEVEL`` says (absl's "All log messages before
absl::InitializeLog() is called are written to STDERR", "oneDNN custom operations are
on", "This TensorFlow binary is optimized to use available CPU instructions"), once per
library.  They are not errors and oneDNN stays on; :func:`filter_native_notices` routes
fd 2 through a pipe and drops just those lines, so that ``densehmm train ... -q`` writes
nothing but errors to stderr.  Every other line (our own errors included) passes unchanged.
"""
from __future__ import annotations

import atexit
import os
import re
import select
import sys
import threading
from typing import Callable, List, Optional

__all__ = ["NOTICE_PATTERNS", "is_notice", "filter_native_notices"]

#: Lines that are TensorFlow / absl start-up notices (matched at the start of the line).
NOTICE_PATTERNS = (
    re.compile(r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"),
    re.compile(r"[IW]\d{4} [\d:. ]+\d+ [\w.]+:\d+\] (oneDNN custom operations are on"
               r"|This TensorFlow binary is optimized to use available CPU instructions)"),
    re.compile(r"To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags"),
)


def is_notice(line: str) -> bool:
    """Whether one stderr line is a TensorFlow start-up notice."""
    line = line.strip()
    return any(p.match(line) for p in NOTICE_PATTERNS)


def filter_native_notices() -> Optional[Callable[[], None]]:
    """Route file descriptor 2 through a filter that drops :data:`NOTICE_PATTERNS` lines.

    Returns a function that restores fd 2 (also registered with :mod:`atexit`), or None when
    fd 2 cannot be redirected (no stderr, or not a real file descriptor).
    """
    try:
        sys.stderr.flush()
        real = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
    except (OSError, ValueError, AttributeError):
        return None

    # A second pipe wakes the pump when fd 2 is restored: from then on it writes out what is
    # in the pipe and ends, instead of waiting for the pipe's end.  Child processes inherit fd 2
    # and some live as long as this process (multiprocessing's forkserver and resource tracker,
    # started by a local Dask cluster): waiting for them held every such command 2 s at its exit.
    wake = os.pipe() if hasattr(select, "poll") else None

    def pump() -> None:
        pending = b""

        def feed(chunk: bytes) -> None:
            nonlocal pending
            pending += chunk
            *lines, pending = pending.split(b"\n")
            out = b"".join(ln + b"\n" for ln in lines if not is_notice(ln.decode("utf-8", "replace")))
            if out:
                os.write(real, out)

        try:
            if wake is None:
                while True:
                    chunk = os.read(r, 65536)
                    if not chunk:
                        break
                    feed(chunk)
            else:
                poller = select.poll()
                poller.register(r, select.POLLIN)
                poller.register(wake[0], select.POLLIN)
                stopping = False
                while True:
                    events = dict(poller.poll())
                    if wake[0] in events and not stopping:
                        stopping = True
                        os.set_blocking(r, False)
                    if r not in events and not stopping:
                        continue
                    try:
                        chunk = os.read(r, 65536)
                    except BlockingIOError:   # restored, and nothing left in the pipe
                        break
                    if not chunk:
                        break
                    feed(chunk)
            if pending and not is_notice(pending.decode("utf-8", "replace")):
                os.write(real, pending)
        finally:
            os.close(r)

    thread = threading.Thread(target=pump, name="stderr-filter", daemon=True)
    thread.start()
    done: List[bool] = []

    def restore() -> None:
        if done:
            return
        done.append(True)
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(real, 2)       # this process no longer writes to the pipe
        if wake is not None:
            os.write(wake[1], b"x")   # the pump writes out what the pipe holds, then ends
        thread.join(timeout=2.0)
        if not thread.is_alive():   # else it may still use them: leave them open
            for fd in (real, *(wake or ())):
                os.close(fd)

    atexit.register(restore)
    return restore

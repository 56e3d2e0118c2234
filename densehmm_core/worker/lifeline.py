"""Worker processes end with their parent, whatever ends it (``kill -9`` included).

A worker left behind by a dead parent keeps computing, holds its memory and keeps the
parent's standard output open (``densehmm sweep ... | tee log`` would never end).  Two
mechanisms, both set up first thing in the worker by :func:`die_with_parent`:

* on Linux, the **parent-death signal** (``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through
  ctypes): the kernel kills the worker the moment its parent goes.  The kernel sends it
  when the *thread* that started the worker ends, so workers are started from a thread
  that lives as long as the process (:func:`start_process`);
* everywhere, a **watchdog** thread that checks every :data:`CHECK_S` seconds that the
  worker's parent is still the process that started it (a worker whose parent died is
  handed to another process) and ends the worker with :data:`ORPHAN_EXIT` otherwise.
"""
from __future__ import annotations

import ctypes
import os
import queue
import signal
import sys
import threading
import time
from typing import Any, List, Optional, Tuple

__all__ = ["die_with_parent", "set_parent_death_signal", "start_process", "CHECK_S", "ORPHAN_EXIT"]

#: seconds between the watchdog's checks of the parent
CHECK_S = 0.25
#: exit status of a worker that ended because its parent was gone
ORPHAN_EXIT = 3
_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Linux: have the kernel send ``sig`` to this process when its parent ends; False
    where this is not available (other systems)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):  # pragma: no cover - no usable libc
        return False


def die_with_parent(parent_pid: int, *, interval: float = CHECK_S) -> None:
    """Make this (worker) process end when ``parent_pid``, the process that started it, ends:
    the parent-death signal where there is one, and a watchdog thread everywhere.  A parent
    that is already gone ends this process at once."""
    set_parent_death_signal()
    if os.getppid() != parent_pid:   # the parent died before the signal was set up
        os._exit(ORPHAN_EXIT)

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent_pid:
                os._exit(ORPHAN_EXIT)

    threading.Thread(target=watch, name="densehmm-parent-watchdog", daemon=True).start()


class _Starter:
    """Starts processes from the main thread or from one long-lived thread (see the module
    docstring: the parent-death signal follows the thread that started the process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: "queue.Queue[Tuple[Any, threading.Event, List[BaseException]]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None

    def start(self, process) -> None:
        if threading.current_thread() is threading.main_thread():
            process.start()
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="densehmm-process-starter", daemon=True)
                self._thread.start()
        done, box = threading.Event(), []  # type: Tuple[threading.Event, List[BaseException]]
        self._requests.put((process, done, box))
        done.wait()
        if box:
            raise box[0]

    def _serve(self) -> None:
        while True:
            process, done, box = self._requests.get()
            try:
                process.start()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the thread that asked
                box.append(exc)
            finally:
                done.set()


_starter = _Starter()


def start_process(process) -> None:
    """``process.start()`` from a thread that lives as long as this process (the main thread,
    or a daemon thread kept for this), so that its parent-death signal means "the process
    ended", not "the thread that asked for a worker ended"."""
    _starter.start(process)

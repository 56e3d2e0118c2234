"""Worker processes end with their parent, whatever ends it (``kill -9`` included); and how they start
(:func:`main_script_reruns`: a main script that every spawned worker would run again).

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

import ast
import ctypes
import os
import queue
import signal
import sys
import threading
import time
import warnings
from typing import Any, List, Optional, Tuple

__all__ = ["die_with_parent", "set_parent_death_signal", "start_process", "main_script_reruns", "warn_if_main_reruns",
           "CHECK_S", "ORPHAN_EXIT"]

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


# ----------------------------------------------------------- the main script in a worker
def main_script_reruns(main=None) -> Optional[str]:
    """The path of the main script when a spawned worker would run its work again, else None.

    Every process started by ``spawn`` (or ``forkserver``) imports the parent's main module
    before it runs anything else, as multiprocessing always does.  A script whose top-level
    code calls something (trains a model, opens a window) and has no ``if __name__ ==
    "__main__":`` guard runs all of it again in each worker, and the worker answers only when
    that ends.  ``main``: the module to check (default ``sys.modules["__main__"]``).
    """
    main = sys.modules.get("__main__") if main is None else main
    path = getattr(main, "__file__", None)
    if not path or not str(path).endswith(".py"):
        return None     # an interactive session, a notebook, python -c: nothing is imported again
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None

    def mentions_name(node) -> bool:
        return any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node))

    if any(isinstance(node, ast.If) and mentions_name(node.test) for node in tree.body):
        return None
    quiet = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    calls = any(not isinstance(node, quiet) and any(isinstance(n, ast.Call) for n in ast.walk(node))
                for node in tree.body)
    return str(path) if calls else None


_warned: List[str] = []


def warn_if_main_reruns() -> None:
    """Warn once per process (:class:`RuntimeWarning`) when worker processes will run the main
    script's work again (:func:`main_script_reruns`)."""
    path = main_script_reruns()
    if path is None or path in _warned:
        return
    _warned.append(path)
    warnings.warn(f"{path}: each worker process runs this script's top-level code again before it starts "
                  f"(multiprocessing imports the main script in every worker); put the script's work under "
                  f"'if __name__ == \"__main__\":'", RuntimeWarning, stacklevel=3)

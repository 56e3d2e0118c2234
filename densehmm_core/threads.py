"""CPU threads: how many one fit may use, and the helper thread that runs half of a split computation.

The engine's E-step is single-threaded (BLAS limited to one thread: its products are small, and a
multi-threaded BLAS only adds synchronisation).  The DenseHMM M-step on the CPU splits its work in
two blocks of symbols and, when the thread budget allows, runs the second on a helper thread while
the caller runs the first: numpy releases the GIL inside its products and element-wise loops, so
the halves run at the same time.  The split does not depend on the number of threads, so the
numbers are the same with one thread or two.

The budget (:func:`cpu_threads`) is the one set around the fit (:func:`fit_budget`), else the
environment's ``DENSEHMM_THREADS``, else ``OMP_NUM_THREADS`` (which the experiment runner sets to
``cpus // jobs`` for its workers), else the CPUs this process may run on.  Whoever runs several fits
at once on one machine divides it (:func:`fit_threads`): the app gives each job ``cpus // CPU
slots`` (its fit message carries the number to the worker), the experiment runner gives its workers
``cpus // jobs``.
"""
from __future__ import annotations

import contextlib
import os
import queue
import threading
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple

import numpy as np

from . import config
from .config import THREADS_ENV

__all__ = ["THREADS_ENV", "available_cpus", "cpu_threads", "fit_threads", "fit_budget", "run_halves"]

#: the budget of the fits run inside :func:`fit_budget` (per thread of control; None: none set)
_BUDGET: ContextVar[Optional[int]] = ContextVar("densehmm_fit_budget", default=None)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def cpu_threads() -> int:
    """The number of CPU threads one fit may use: the :func:`fit_budget` around it, else
    ``DENSEHMM_THREADS``, else ``OMP_NUM_THREADS``, else :func:`available_cpus` (a value that cannot
    be read counts as unset, as every variable of :mod:`densehmm_core.config`)."""
    return _BUDGET.get() or config.threads_per_fit() or config.omp_threads() or available_cpus()


@contextlib.contextmanager
def fit_budget(threads: Optional[int]) -> Iterator[None]:
    """The fits started inside (on this thread) may use ``threads`` CPU threads (None: the usual
    budget).  A worker process sets its fit message's number this way, the app's thread executor its
    job's share."""
    token = _BUDGET.set(None if threads is None else max(1, int(threads)))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def fit_threads(concurrent: int) -> int:
    """The threads of one fit when ``concurrent`` fits share this process's CPUs:
    ``DENSEHMM_THREADS`` when it is set (the user's choice per fit), else ``OMP_NUM_THREADS`` or the
    CPUs divided by ``concurrent`` (at least 1)."""
    return config.threads_per_fit() or max(1, cpu_threads() // max(1, int(concurrent)))


class _Call:
    """One task handed to the helper: ``fn(arg)`` under the caller's numpy error state."""

    __slots__ = ("fn", "arg", "err", "result", "error", "done")

    def __init__(self, fn: Callable[[Any], Any], arg: Any) -> None:
        self.fn, self.arg = fn, arg
        self.err = np.geterr()          # numpy's error state is per thread: the helper takes the caller's
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.done = threading.Event()

    def run(self) -> None:
        """Call ``fn(arg)``, keeping its result or exception (``done`` is set by the helper)."""
        try:
            with np.errstate(**self.err):
                self.result = self.fn(self.arg)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
            self.error = exc


class _Helper:
    """A daemon thread serving one task at a time, started on first use; a forked child starts its
    own (it has no thread, and its locks may have been held by a parent's thread at the fork)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._busy = threading.Lock()     # held from a task's hand-over to its end
        self._queue: "queue.SimpleQueue[_Call]" = queue.SimpleQueue()
        self._pid: Optional[int] = None

    def after_fork(self) -> None:
        self.__init__()  # type: ignore[misc]

    def try_submit(self, call: _Call) -> bool:
        """Hand ``call`` over, unless a task is in flight (another fit's, in this process)."""
        with self._guard:
            if self._pid != os.getpid():          # first use, or a forked child: no thread yet
                self._busy = threading.Lock()
                self._queue = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(self._queue, self._busy), daemon=True,
                                 name="densehmm-helper").start()
                self._pid = os.getpid()
            if not self._busy.acquire(blocking=False):
                return False
            self._queue.put(call)
            return True

    @staticmethod
    def _serve(tasks: "queue.SimpleQueue[_Call]", busy: threading.Lock) -> None:
        while True:
            call = tasks.get()
            call.run()
            busy.release()      # free before the caller wakes: its next call finds the helper free
            call.done.set()


_helper = _Helper()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_helper.after_fork)


def run_halves(fn: Callable[[Any], Any], halves: Sequence[Any], threads: int) -> Tuple[Any, ...]:
    """``tuple(fn(h) for h in halves)``, the second of two halves on the helper thread when
    ``threads >= 2`` and the helper is free (else here, after the first).

    The halves must write to disjoint memory.  An exception of either half is raised here after
    both ended (the first half's first).
    """
    if threads < 2 or len(halves) != 2:
        return tuple(fn(h) for h in halves)
    call = _Call(fn, halves[1])
    if not _helper.try_submit(call):
        return tuple(fn(h) for h in halves)
    try:
        first = fn(halves[0])
    finally:
        call.done.wait()        # the helper's half ends before its buffers may be used again
    if call.error is not None:
        raise call.error
    return first, call.result

"""Printing the progress-event stream (bar, lines or nothing) and Ctrl-C as a cancel."""
from __future__ import annotations

import math
import shutil
import signal
import sys
import time
from typing import Optional

from .common import _err

START_PHASE = "start"   # densehmm_core.events.START_PHASE (not imported here: --help loads no numpy)


def _fmt_duration(s: Optional[float]) -> str:
    if s is None or not math.isfinite(s):
        return "--:--"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


class ProgressPrinter:
    """Prints a ProgressEvent stream: a bar on a terminal, lines with --verbose, nothing when quiet;
    its ``note:`` lines whenever ``notes`` (the command line: unless --quiet).

    The bar shows the step, the rate (steps per second), the ETA and the current loss (while the
    start is prepared: its stage, e.g. ``start 2/3: SVD``); it redraws at most ten times a second
    and at every change of phase or start stage.
    """

    def __init__(self, mode: str, stream=None, *, notes: Optional[bool] = None) -> None:
        self.mode = mode  # "bar" | "lines" | "none"
        #: ``note:`` lines (e.g. why training starts randomly): also without a bar (pipes, CI), not with --quiet
        self.notes = mode != "none" if notes is None else notes
        self.stream = stream or sys.stderr
        self._last_draw = 0.0
        self._drawn = False
        self._phase: object = None
        self._said_random = False

    def __call__(self, ev) -> None:
        try:
            start = ev.metrics.get("start")
            if self.notes and isinstance(start, str) and start.startswith("random (") and not self._said_random:
                self._said_random = True
                self.close()
                print(f"note: training starts randomly: no spectral start, {start[8:-1]}", file=self.stream)
            self._show(ev)
        except (OSError, ValueError):  # stderr closed (e.g. a pipe into `head`): keep training, quietly
            self.mode = "none"
            self.notes = False

    def _show(self, ev) -> None:
        if self.mode == "lines":
            print(ev.summary() + f"  ({ev.elapsed:.1f} s)", file=self.stream)
            self.stream.flush()
        elif self.mode == "bar":
            now = time.monotonic()
            phase = (ev.phase, ev.metrics.get("stage")) if ev.phase == START_PHASE else ev.phase
            if ev.done or now - self._last_draw >= 0.1 or phase != self._phase:
                self._phase = phase
                self._last_draw = now
                self._draw(ev)

    def _draw(self, ev) -> None:
        width = shutil.get_terminal_size((80, 20)).columns
        if ev.phase == START_PHASE:   # the start being prepared (pairs, SVD, k-means): its stage and share
            from ..events import start_text
            barw = 20 if width >= 90 else 10
            fill = int(round(float(ev.metrics.get("stage_done", 0.0) or 0.0) * barw))
            line = f"{start_text(ev.metrics)} [{'#' * fill}{'.' * (barw - fill)}]  {_fmt_duration(ev.elapsed)}"
            self.stream.write("\r" + line[: width - 1].ljust(width - 1))
            self.stream.flush()
            self._drawn = True
            return
        rate = ev.step / ev.elapsed if ev.elapsed > 0 and ev.step > 0 else None
        eta = None
        if rate and ev.total:
            eta = max(0.0, (ev.total - ev.step) / rate)
        frac = ev.fraction
        tail = f" {ev.step}/{ev.total}" if ev.total else f" {ev.step}"
        tail += f"  {rate:.3g} it/s" if rate else ""
        tail += f"  ETA {_fmt_duration(eta)}" if ev.total and not ev.done else f"  {_fmt_duration(ev.elapsed)}"
        if ev.loss is not None:
            tail += f"  loss {ev.loss:.5g}"
        head = f"{ev.phase or 'train'} "
        barw = 20 if width >= 90 else 10
        if frac is not None:
            fill = int(round(frac * barw))
            bar = f"[{'#' * fill}{'.' * (barw - fill)}] {100 * frac:3.0f}%"
        else:
            bar = ""
        line = (head + bar + tail)[: width - 1]
        self.stream.write("\r" + line.ljust(width - 1))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._drawn = False
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass


def _progress_mode(args) -> str:
    if getattr(args, "quiet", False):
        return "none"
    if getattr(args, "verbose", False):
        return "lines"
    try:
        return "bar" if sys.stderr.isatty() else "none"
    except (AttributeError, ValueError):
        return "none"


class SecondSignal(BaseException):
    """A second Ctrl-C or SIGTERM: abort without saving.  Not a KeyboardInterrupt: raised by a
    handler that interrupted the first one's message, a caught KeyboardInterrupt still ended
    ``python -m densehmm_core`` with SIGINT (exit status -2 instead of 130 / 143; CPython 3.11)."""


class _SigintCancel:
    """First Ctrl-C (SIGINT) or SIGTERM: cancel the token (training stops after its chunk and
    what was reached is saved); a second one: :class:`SecondSignal` (abort without saving).

    ``signal_received`` is the first signal (for the exit status: 130 or 143), ``aborted_by``
    the second; ``phase`` ("training", "saving", "saved") is set by the caller, so that a
    signal during the final save says that the save finishes first.
    """

    def __init__(self, token, quiet: bool) -> None:
        self.token = token
        self.quiet = quiet
        self._old: dict = {}
        self.signal_received = None
        self.aborted_by = None
        self.phase = "training"

    def __enter__(self):
        for sig in (signal.SIGINT, getattr(signal, "SIGTERM", None)):
            if sig is None:
                continue
            try:
                self._old[sig] = signal.signal(sig, self._handler)
            except (ValueError, OSError):  # not in the main thread
                pass
        return self

    @staticmethod
    def _name(signum) -> str:
        return "Ctrl-C" if signum in (None, signal.SIGINT) else "SIGTERM"

    @property
    def abort_name(self) -> str:
        """How the abort is named in messages: "second Ctrl-C" or "second SIGTERM"."""
        return f"second {self._name(self.aborted_by)}"

    def _handler(self, signum, frame):
        if self.signal_received is not None:
            self.aborted_by = signum
            raise SecondSignal
        self.signal_received = signum
        self.token.cancel()
        if not self.quiet:
            what = "interrupt" if signum == signal.SIGINT else "terminate signal"
            again = self._name(signum)
            if self.phase == "training":
                _err(f"\n{what}: stopping after the current chunk and saving what was reached "
                     f"({again} again to abort without saving)")
            elif self.phase == "saving":
                _err(f"\n{what}: finishing the save first ({again} again to abort it; the file is then "
                     f"left as it was)")

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError):
                pass
        return False

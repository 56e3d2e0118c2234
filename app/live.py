"""Live updates: the ONE owner of "which progress to show, and when to draw it".

A training job reports far more often than anything should be drawn.  The policy lives
here, in two classes:

:class:`LiveFeed` (one per :class:`~app.jobs.JobManager`)
    * **newest event, newest parameters**: a job's relay thread :meth:`~LiveFeed.post`\\ s
      every event; only the newest is kept (with the newest parameter snapshot, which an
      event without parameters inherits), and at most one notification per job is queued
      to the GUI thread, so a fast trainer never floods the event loop;
    * **when to forward**: at most ``1 / min_interval`` updates per second per job, spaced
      further apart when drawing the last one was costly (drawing never takes more than
      ``max_busy_share`` of the GUI thread);
    * **what is drawn**: only the selected job (:attr:`~LiveFeed.current`) reaches the view
      (:meth:`~LiveFeed.set_view`); the cost of the call and of the view's queued parts
      feeds the spacing above;
    * **every point**: the events passed over by "newest only" reach the view with the next
      update, without their parameters (``update_from_event(ev, skipped)``: the curves get
      every test NLL and MAD, which come every few iterations), and a job shown while it
      runs gets its past points (:meth:`~LiveFeed.past_events`, at most
      :data:`MAX_KEPT_EVENTS`, thinned but for diagnostics).

:class:`DrawQueue` (one per view that draws in parts)
    * **when to draw**: named parts of an update, the newest of each name replacing a
      queued one, run one per event-loop turn ``gap_ms`` apart (each painted on its own, no
      long stall), and held while the view is hidden; the view runs them all when it
      shows or before an export.

The views only draw (``app/views``); the job manager only runs jobs (``app/jobs.py``).
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Callable, Dict, Optional

from PySide6.QtCore import QObject, QTimer, Signal

__all__ = ["LiveFeed", "DrawQueue", "MAX_KEPT_EVENTS"]

#: A job keeps at most about this many past events (without parameters) for its curves; beyond,
#: every other one is dropped, but for those with diagnostics (test NLL, MAD) and the newest.
MAX_KEPT_EVENTS = 2000   # (replayed in 18 ms of the GUI thread when the job is selected)


def _thinned(events: list) -> list:
    """Every other event, and every event that carries diagnostics, and the newest."""
    last = len(events) - 1
    return [ev for i, ev in enumerate(events)
            if i % 2 == 0 or i == last or "test_nll" in (ev.metrics or {}) or "mad" in (ev.metrics or {})]


class _Mailbox:
    """One job's hand-over from its relay thread to the GUI thread (``event``, ``params``, ``posted``
    and ``notified`` guarded by ``lock``; the rest belongs to the GUI thread)."""

    __slots__ = ("lock", "event", "params", "notified", "last_forward", "flush_scheduled", "posted", "kept",
                 "unforwarded")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.event = None          # newest event not yet taken
        self.params = None         # newest parameter snapshot not yet taken
        self.notified = False      # a notification is queued to the GUI thread
        self.last_forward = 0.0    # perf_counter of the last update forwarded (GUI thread)
        self.flush_scheduled = False
        self.posted: list = []     # every event posted and not yet taken (parameters stripped)
        self.kept: list = []       # the job's events so far (thinned beyond MAX_KEPT_EVENTS)
        self.unforwarded: list = []  # taken since the last update forwarded


class LiveFeed(QObject):
    """Newest-event hand-over, throttle and drawing of the selected job (see the module docstring).

    Parameters
    ----------
    parent : QObject, optional
    max_rate : float
        Updates per second per job at most (``min_interval = 1 / max_rate``).
    max_busy_share : float
        Share of the GUI thread that drawing one job's updates may take; the spacing of the
        updates grows with their measured cost (capped at 2 s).

    Signals
    -------
    event(job, event)
        A throttled update: the newest event, its ``params`` the newest snapshot seen.
    changed(job)
        The job's progress fields (``step``, ``total``, ``last_event``) changed.
    """

    event = Signal(object, object)
    changed = Signal(object)
    _ready = Signal(object)  # queued from the relay threads: a job has an event waiting

    def __init__(self, parent: Optional[QObject] = None, max_rate: float = 10.0,
                 max_busy_share: float = 0.25) -> None:
        super().__init__(parent)
        self.min_interval = 1.0 / float(max_rate)
        self.max_busy_share = float(max_busy_share)
        #: job id -> GUI-thread seconds one update of that job took to draw (moving average)
        self.redraw_cost: Dict[int, float] = {}
        self._boxes: Dict[int, _Mailbox] = {}
        self._boxes_lock = threading.Lock()
        self._view: Any = None
        self._call_cost = 0.0
        #: the job whose updates reach the view (None: nothing is drawn live)
        self.current: Any = None
        self._ready.connect(self._on_ready)

    # ------------------------------------------------------------ relay threads
    def _box(self, job) -> _Mailbox:
        box = self._boxes.get(job.id)
        if box is None:
            with self._boxes_lock:
                box = self._boxes.setdefault(job.id, _Mailbox())
        return box

    def post(self, job, ev) -> None:
        """Hand over one progress event (any thread).  The newest is the next update (with the newest
        parameters); the others are kept without parameters, for the curves."""
        box = self._box(job)
        point = dataclasses.replace(ev, params=None) if ev.params else ev
        with box.lock:
            job.n_events += 1
            box.event = ev
            box.posted.append(point)
            if ev.params:
                box.params = ev.params
                if job.initial_params is None:
                    job.initial_params = ev.params
            notify = not box.notified
            box.notified = True
        if notify:
            self._ready.emit(job)

    # ------------------------------------------------------------ GUI thread
    def take(self, job):
        """Move the newest posted event into the job (``last_event``, ``step``...); returns it or None."""
        box = self._box(job)
        with box.lock:
            ev, params, posted = box.event, box.params, box.posted
            box.event = box.params = None
            box.posted = []
            box.notified = False
        if posted:
            box.kept.extend(posted)
            box.unforwarded.extend(posted)
            if len(box.kept) > MAX_KEPT_EVENTS:
                box.kept = _thinned(box.kept)
            if len(box.unforwarded) > MAX_KEPT_EVENTS:
                box.unforwarded = _thinned(box.unforwarded)
        if params is not None:
            job.last_params = params
        if ev is not None:
            job.step, job.total = ev.step, ev.total
            if not ev.params and job.last_params is not None:
                ev = dataclasses.replace(ev, params=job.last_params)
            job.last_event = ev
        return ev

    def interval(self, job) -> float:
        """Seconds between two forwarded updates of ``job`` (rate cap, stretched by the drawing cost)."""
        cost = self.redraw_cost.get(job.id, 0.0)
        return max(self.min_interval, min(2.0, cost / self.max_busy_share))

    def _on_ready(self, job) -> None:
        if self.take(job) is None:
            return
        box = self._box(job)
        if box.flush_scheduled:
            return  # the scheduled forward takes this event (never two forwards back to back)
        wait = box.last_forward + self.interval(job) - time.perf_counter()
        if wait <= 0:
            self.forward(job)
        else:
            box.flush_scheduled = True
            QTimer.singleShot(int(wait * 1000) + 1, self, lambda j=job: self._flush(j))

    def _flush(self, job) -> None:
        self._box(job).flush_scheduled = False
        self.take(job)
        self.forward(job)

    def forward(self, job) -> None:
        """Forward the job's newest update now (also used when a job ends: never throttled)."""
        box = self._box(job)
        box.last_forward = time.perf_counter()
        skipped, box.unforwarded = box.unforwarded[:-1], []   # (the last one taken is ``ev``)
        ev = job.last_event
        if ev is not None:
            job.n_dispatched += 1
            self.event.emit(job, ev)
            if job is self.current and self._view is not None:
                t0 = time.perf_counter()
                if job.initial_params is not None and not self._view.has_initial_params():
                    # the step-0 snapshot passed over (only the newest event is forwarded): the starting
                    # parameters recorded when it was posted go to the view before this update
                    self._view.set_initial_params(job.initial_params)
                self._view.update_from_event(ev, skipped)
                self._call_cost = time.perf_counter() - t0
        self.changed.emit(job)

    def past_events(self, job) -> list:
        """The events of ``job`` taken so far but the newest (``job.last_event``), without parameters and
        thinned beyond :data:`MAX_KEPT_EVENTS`: the points of a job shown while it runs.  Those not yet
        forwarded are then not passed on again as skipped."""
        box = self._box(job)
        box.unforwarded = box.unforwarded[-1:]
        return box.kept[:-1]

    def finish(self, job) -> None:
        """The job ended: take what is left and forward it at once.  Its past events are dropped (a
        finished job's curves come from its model's history; a sweep's hundred jobs kept them all)."""
        self.take(job)
        self.forward(job)
        self._box(job).kept = []

    def forget(self, job) -> None:
        """Drop a removed job's bookkeeping."""
        with self._boxes_lock:
            self._boxes.pop(job.id, None)
        self.redraw_cost.pop(job.id, None)

    # ------------------------------------------------------------ drawing
    def set_view(self, view) -> None:
        """The view that draws the current job: ``view.update_from_event(ev, skipped)`` (``skipped``: the
        events since the previous update, oldest first, without parameters); its optional
        ``sigLiveDrawn(seconds)`` reports the cost of the parts it drew later (a :class:`DrawQueue`)."""
        self._view = view
        drawn = getattr(view, "sigLiveDrawn", None)
        if drawn is not None:
            drawn.connect(self._drawn)

    def note_cost(self, job, seconds: float) -> None:
        """One update of ``job`` took ``seconds`` of the GUI thread: adapt its spacing (moving average)."""
        old = self.redraw_cost.get(job.id)
        self.redraw_cost[job.id] = seconds if old is None else 0.5 * old + 0.5 * seconds

    def _drawn(self, stage_cost: float) -> None:
        if self.current is not None:
            self.note_cost(self.current, float(stage_cost) + self._call_cost)


class DrawQueue(QObject):
    """Named drawing parts of one view (see the module docstring).

    Parameters
    ----------
    parent : QObject
        The view (the queue's timer lives with it).
    gap_ms : int
        Milliseconds between two parts (each part is painted in between).
    visible : callable, optional
        Whether the view is on screen; while it is not, parts are held (newest of each name)
        until :meth:`run_all` or :meth:`resume`.  Default: always visible.
    shows : callable, optional
        ``shows(name)``: whether part ``name``'s own view is on screen, for a queue whose parts
        draw into several views (the dashboard's pages): the parts that show run in order, the
        others are held.  Default: ``visible()`` for every part.
    auto : bool
        False: parts never run on their own, only through :meth:`run` / :meth:`run_all`.
    on_drawn : callable, optional
        Called with the seconds the parts took once the timer has run the last queued part.
    """

    def __init__(self, parent: QObject, gap_ms: int = 15, visible: Optional[Callable[[], bool]] = None,
                 auto: bool = True, on_drawn: Optional[Callable[[float], None]] = None,
                 shows: Optional[Callable[[Any], bool]] = None) -> None:
        super().__init__(parent)
        self.gap_ms = int(gap_ms)
        whole = visible or (lambda: True)
        self._shows = shows or (lambda _name: whole())
        self._auto = auto
        self._on_drawn = on_drawn
        self._parts: Dict[Any, tuple] = {}
        self._cost = 0.0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._run_next)

    @property
    def pending(self) -> bool:
        """Whether parts are queued."""
        return bool(self._parts)

    def has(self, name) -> bool:
        return name in self._parts

    def put(self, name, fn: Callable[..., Any], *args) -> None:
        """Queue ``fn(*args)`` as part ``name``; a queued part of that name is replaced (and moves last)."""
        self._parts.pop(name, None)
        self._parts[name] = (fn, args)
        if self._auto and not self._timer.isActive() and self._shows(name):
            self._timer.start(0)

    def discard(self, name) -> None:
        self._parts.pop(name, None)

    def run(self, name) -> None:
        """Run part ``name`` now, if it is queued."""
        item = self._parts.pop(name, None)
        if item is not None:
            item[0](*item[1])

    def run_all(self) -> None:
        """Run every queued part now, in order (when the view shows, before an export or a read)."""
        self._timer.stop()
        while self._parts:
            name = next(iter(self._parts))
            fn, args = self._parts.pop(name)
            fn(*args)

    def resume(self) -> None:
        """Start running held parts from the event loop (a view became visible)."""
        if self._auto and not self._timer.isActive() and self._next() is not None:
            self._timer.start(0)

    def clear(self) -> None:
        self._timer.stop()
        self._parts.clear()
        self._cost = 0.0

    def _next(self):
        """The first queued part whose view shows, or None."""
        return next((name for name in self._parts if self._shows(name)), None)

    def _run_next(self) -> None:
        name = self._next()
        if name is None:
            return  # held until its view shows (run_all / resume)
        fn, args = self._parts.pop(name)
        t0 = time.perf_counter()
        fn(*args)
        self._cost += time.perf_counter() - t0
        if self._next() is not None:
            self._timer.start(self.gap_ms)
        else:   # what shows is drawn (hidden parts wait for their view)
            cost, self._cost = self._cost, 0.0
            if self._on_drawn is not None:
                self._on_drawn(cost)

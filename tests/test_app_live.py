"""app.live: the one owner of live updates (newest event, newest parameters, throttle, drawing)."""
import threading
import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from densehmm_core.events import ProgressEvent  # noqa: E402

from app.jobs import Job  # noqa: E402
from app.live import DrawQueue, LiveFeed  # noqa: E402


class _View:
    """A view that records what reached it and takes ``cost`` seconds per call."""

    def __init__(self, cost=0.0):
        self.events, self.skipped, self.cost = [], [], cost
        self.initial = None
        self.calls = []

    def has_initial_params(self):
        return self.initial is not None

    def set_initial_params(self, params):
        self.initial = params
        self.calls.append("initial")

    def update_from_event(self, ev, skipped=()):
        self.calls.append(ev.step)
        self.events.append(ev)
        self.skipped.append(list(skipped))
        time.sleep(self.cost)


def _job():
    return Job("j", None, [])


def test_only_the_newest_event_is_kept_and_inherits_the_newest_parameters(qtbot):
    feed = LiveFeed(max_rate=1000)
    job = _job()
    forwarded = []
    feed.event.connect(lambda j, ev: forwarded.append(ev))
    p1 = {"transmat": np.eye(2)}
    # a relay thread posts 200 events without the GUI thread running: one notification queued
    def relay():
        for i in range(200):
            feed.post(job, ProgressEvent(step=i, total=200, params=p1 if i == 10 else None))
    t = threading.Thread(target=relay)
    t.start()
    t.join()
    assert job.n_events == 200 and job.initial_params is p1
    qtbot.waitUntil(lambda: bool(forwarded), timeout=2000)
    qtbot.wait(50)
    assert len(forwarded) == 1                 # coalesced: one update for 200 events
    ev = forwarded[0]
    assert ev.step == 199 and job.step == 199 and job.total == 200
    assert ev.params is p1                      # the newest snapshot, although event 199 had none
    assert job.last_event is ev and job.n_dispatched == 1


def test_updates_are_spaced_by_the_rate_cap_and_by_the_drawing_cost(qtbot):
    feed = LiveFeed(max_rate=20)               # 50 ms apart at most
    job = _job()
    times = []
    feed.event.connect(lambda j, ev: times.append(time.perf_counter()))
    assert feed.interval(job) == pytest.approx(0.05)
    feed.note_cost(job, 0.05)                  # drawing one update costs 50 ms of the GUI thread
    assert feed.interval(job) == pytest.approx(0.05 / feed.max_busy_share)   # 200 ms: <= 25 % busy
    feed.note_cost(job, 0.15)
    assert feed.redraw_cost[job.id] == pytest.approx(0.1)                    # moving average
    t_end = time.perf_counter() + 1.0
    step = 0
    while time.perf_counter() < t_end:
        step += 1
        feed.post(job, ProgressEvent(step=step, total=None))
        qtbot.wait(5)
    qtbot.wait(450)
    gaps = np.diff(times)
    assert len(times) >= 2 and gaps.min() >= 0.4 * 0.9   # interval 0.1 / 0.25 = 0.4 s
    assert job.last_event.step == step         # the last posted event was forwarded in the end


def test_only_the_current_job_is_drawn_and_its_cost_is_measured(qtbot):
    feed = LiveFeed(max_rate=1000)
    view = _View(cost=0.02)
    feed.set_view(view)
    a, b = _job(), _job()
    feed.current = b
    feed.post(a, ProgressEvent(step=1, total=3))
    feed.post(b, ProgressEvent(step=2, total=3))
    qtbot.waitUntil(lambda: a.n_dispatched == 1 and b.n_dispatched == 1, timeout=2000)
    assert [ev.step for ev in view.events] == [2]
    assert a.id not in feed.redraw_cost
    feed._drawn(0.01)                          # the view's queued parts took 10 ms more
    assert feed.redraw_cost[b.id] == pytest.approx(0.03, abs=0.01)


def test_the_view_gets_every_event_passed_over_without_parameters(qtbot):
    """Defect: "newest only" dropped the events in between, and with them most test NLL and MAD points
    (every fifth iteration): the live curves showed a few of them, at random.  Each update now brings
    the events passed over since the previous one, oldest first, without their parameters."""
    feed = LiveFeed(max_rate=20)                # 50 ms apart: most events are passed over
    view = _View()
    feed.set_view(view)
    job = _job()
    feed.current = job
    p = {"transmat": np.eye(2)}
    t0 = time.perf_counter()
    for i in range(1, 121):
        metrics = {"train_nll": 2.0 - i / 100}
        if i % 5 == 0:
            metrics.update(test_nll=2.1 - i / 100, mad=0.01 / i)
        feed.post(job, ProgressEvent(step=i, total=120, metrics=metrics, params=p if i % 7 == 0 else None))
        qtbot.wait(2)
    qtbot.waitUntil(lambda: view.events and view.events[-1].step == 120, timeout=5000)
    elapsed = time.perf_counter() - t0
    seen = [ev for ev, skipped in zip(view.events, view.skipped) for ev in skipped + [ev]]
    assert [ev.step for ev in seen] == list(range(1, 121))           # every event once, in order
    assert len(view.events) <= elapsed / feed.min_interval + 2         # and still at most 20 updates / s
    assert all(ev.params is None for sk in view.skipped for ev in sk)  # parameters only with the newest
    assert [ev.step for ev in seen if "test_nll" in ev.metrics] == list(range(5, 121, 5))


def test_a_job_shown_while_it_runs_gets_its_past_points(qtbot):
    """Selected mid-run, a job's curves started at that moment.  ``past_events`` gives its points so far
    but the newest (the view gets that one as the update); those are not passed on again as skipped;
    beyond MAX_KEPT_EVENTS every other point goes, but none with diagnostics."""
    from app.live import MAX_KEPT_EVENTS
    feed = LiveFeed(max_rate=1000)
    job = _job()
    n = MAX_KEPT_EVENTS + 500
    for i in range(1, n + 1):
        feed.post(job, ProgressEvent(step=i, metrics={"mad": 0.1} if i % 5 == 0 else {}))
    feed.take(job)
    past = feed.past_events(job)
    steps = [ev.step for ev in past]
    assert steps == sorted(set(steps)) and steps[-1] == n - 1 and job.last_event.step == n
    assert MAX_KEPT_EVENTS // 2 <= len(past) <= MAX_KEPT_EVENTS
    assert set(range(5, n, 5)) <= set(steps)                           # every diagnostics point kept
    view = _View()
    feed.set_view(view)
    feed.current = job
    feed.forward(job)
    assert view.skipped == [[]] and view.events[-1].step == n           # nothing twice
    feed.finish(job)
    assert feed.past_events(job) == []     # a finished job's curves come from its model's history


def test_draw_queue_runs_parts_apart_holds_them_while_hidden_and_newest_wins(qtbot):
    from PySide6.QtCore import QObject
    owner = QObject()
    visible = [True]
    drawn = []
    q = DrawQueue(owner, gap_ms=20, visible=lambda: visible[0], on_drawn=drawn.append)
    calls = []
    q.put("a", lambda x: calls.append((x, time.perf_counter())), 1)
    q.put("b", lambda x: calls.append((x, time.perf_counter())), 2)
    q.put("a", lambda x: calls.append((x, time.perf_counter())), 3)   # replaces the queued "a", runs last
    assert q.pending and not calls
    qtbot.waitUntil(lambda: bool(drawn), timeout=2000)
    assert [c[0] for c in calls] == [2, 3]
    assert calls[1][1] - calls[0][1] >= 0.018
    visible[0] = False
    q.put("c", calls.append, "c")
    qtbot.wait(60)
    assert q.has("c") and calls[-1] != "c"    # hidden: held
    q.run_all()
    assert calls[-1] == "c" and not q.pending


def test_draw_queue_holds_only_the_parts_whose_view_is_hidden(qtbot):
    """A queue drawing into several pages (the dashboard): a part runs while its own view shows."""
    from PySide6.QtCore import QObject
    owner = QObject()
    showing = {"decode"}
    drawn = []
    q = DrawQueue(owner, gap_ms=5, shows=lambda name: name in showing, on_drawn=drawn.append)
    calls = []
    for name in ("matrices", "decode", "overview"):
        q.put(name, calls.append, name)
    qtbot.waitUntil(lambda: bool(drawn), timeout=2000)
    assert calls == ["decode"] and q.has("matrices") and q.has("overview")
    showing.add("overview")
    q.resume()
    qtbot.waitUntil(lambda: calls == ["decode", "overview"], timeout=2000)
    assert q.has("matrices")
    q.run_all()
    assert calls[-1] == "matrices" and not q.pending


def test_the_dashboard_curves_of_a_running_job_have_every_diagnostics_point(make_window, qtbot):
    """A running job's events reach a real window through its LiveFeed: the curves of the job shown hold
    every test NLL and MAD posted, whether the job was shown from its start or selected mid-run (they
    held the few that happened to be the newest at a redraw, and started at the moment of selection)."""
    from app.jobs import JobState

    w = make_window()
    w.finish_startup()
    feed = w.jobs.live
    jobs = []
    from densehmm_core.standard import StandardHMM
    for name in ("shown from the start", "selected mid-run"):
        job = Job(name, StandardHMM(3), [])
        job.state = JobState.RUNNING
        w.jobs.jobs.append(job)
        w.jobs_panel.add_job(job)
        jobs.append(job)
    a, b = jobs
    w.jobs_ctl.show_job(a)

    def post(job, lo, hi):
        for i in range(lo, hi):
            metrics = {"train_nll": 2.0 - i / 1000}
            if i % 5 == 0:
                metrics.update(test_nll=2.1 - i / 1000, mad=0.01 / (i + 1))
            feed.post(job, ProgressEvent(step=i, total=200, phase="baum-welch", loss=1.0 / (i + 1), metrics=metrics))
            if i % 10 == 0:
                qtbot.wait(3)
        qtbot.waitUntil(lambda: job.last_event is not None and job.last_event.step == hi - 1, timeout=5000)

    try:
        post(a, 0, 100)
        post(b, 0, 100)                        # b runs unseen
        for job in (a, b):
            w.jobs_ctl.show_job(job)
            post(job, 100, 200)
            qtbot.waitUntil(lambda: "baum-welch 199/200" in w.dashboard.title.text(), timeout=5000)   # forwarded
            w.dashboard.flush()
            steps, test = w.dashboard.curves.series("test_nll")
            assert steps.tolist() == list(range(200)), job.name
            assert np.flatnonzero(np.isfinite(test)).tolist() == list(range(0, 200, 5)), job.name
            _, mad = w.dashboard.curves.series("mad")
            assert np.flatnonzero(np.isfinite(mad)).tolist() == list(range(0, 200, 5)), job.name
    finally:
        for job in jobs:
            job.state = JobState.CANCELLED


def test_the_starting_parameters_reach_the_view_when_the_step_0_snapshot_is_passed_over(qtbot):
    """Review rev24 item 3: only the newest event is forwarded, so a step-0 snapshot overtaken before the
    GUI thread took it never reached the view, which then took a live job for a model read from a file
    ("not recorded").  The starting parameters recorded when it was posted go to the view first."""
    feed = LiveFeed(max_rate=1000)
    view = _View()
    feed.set_view(view)
    job = _job()
    feed.current = job
    p0, p3 = {"transmat": np.eye(2)}, {"transmat": np.ones((2, 2)) / 2}
    relay = threading.Thread(target=lambda: [feed.post(job, ProgressEvent(step=s, total=9, params=p))
                                             for s, p in ((0, p0), (3, p3))])
    relay.start()                       # a relay thread posts both before the GUI thread takes anything
    relay.join()
    feed.take(job)
    feed.forward(job)
    assert view.calls == ["initial", 3] and view.initial is p0 and job.initial_params is p0
    feed.post(job, ProgressEvent(step=4, total=9, params=p3))
    qtbot.waitUntil(lambda: len(view.calls) == 3, timeout=2000)
    assert view.calls == ["initial", 3, 4]                         # given once

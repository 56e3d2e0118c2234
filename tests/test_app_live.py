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
        self.events, self.cost = [], cost

    def update_from_event(self, ev):
        self.events.append(ev)
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

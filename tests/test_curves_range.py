"""The training curves' x axis (user audit 24, item 6): a job cancelled at 18 of 5000 steps drew its curves as a
vertical line at x = 0, on screen and in the exported figure, because the axis kept the planned total."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from PySide6 import QtGui  # noqa: E402

from app.export import export_widget  # noqa: E402
from app.views import Dashboard, TrainingCurves  # noqa: E402
from densehmm_core.events import ProgressEvent  # noqa: E402
from qtshow import shown  # noqa: E402 - this folder


def x_range(w):
    return w.plots["loss"].vb.viewRange()[0]


def run(w, steps, total, **last):
    for s in steps:
        w.add_event(ProgressEvent(step=s, total=total, loss=2.0 / (s + 1), metrics={"train_nll": 3.0 - s / 1e4}))
    if last:
        w.add_event(ProgressEvent(step=steps[-1], total=total, loss=2.0 / (steps[-1] + 1),
                                  metrics={"train_nll": 2.0}, **last))


def test_a_cancelled_job_fits_its_points_not_the_planned_total(qtbot, tmp_path):
    w = shown(qtbot, TrainingCurves(orientation="horizontal"), (900, 260))
    w.set_total(5000)
    run(w, list(range(19)), 5000, done=True, reason="cancelled")
    lo, hi = x_range(w)
    assert lo <= 0 and 18 <= hi <= 18 * 1.1, (lo, hi)
    # the exported figure spreads the points over the plot (the loss curve is no vertical line)
    img = QtGui.QImage(str(export_widget(w, tmp_path / "c.png")))
    plot = w.plots["loss"]
    left = plot.vb.mapRectToScene(plot.vb.boundingRect()).toRect()
    blue = {x for x in range(left.left(), left.right()) for y in range(left.top(), left.bottom(), 2)
            if (lambda c: c.blue() > 150 and c.red() < 100)(QtGui.QColor(img.pixel(x, y)))}
    assert blue and max(blue) - min(blue) > 0.8 * left.width(), (min(blue), max(blue), left.width())


def test_a_long_running_job_shows_its_points_until_they_cover_a_fair_part_of_the_plan(qtbot):
    w = shown(qtbot, TrainingCurves(), (400, 600))
    w.set_total(5000)
    assert x_range(w)[1] >= 5000              # before its first point: the planned steps
    run(w, [0, 1, 2, 3, 4], 5000)
    lo, hi = x_range(w)
    assert lo <= 0 and 4 < hi <= 4 * 4 * 1.1, (lo, hi)     # at 4 of 5000: 0..16 (room ahead), not 0..5000
    before = x_range(w)
    run(w, [5, 6], 5000)
    assert x_range(w) == before               # inside the room left: no rescale on every step
    run(w, [700], 5000)
    assert 700 <= x_range(w)[1] <= 2800 * 1.05
    run(w, [1300], 5000)                      # more than a quarter: the whole plan
    assert x_range(w)[1] >= 5000
    # a short job spans its planned steps from the start (its points spread out within seconds)
    w.clear()
    w.set_total(50)
    run(w, [0, 1], 50)
    assert x_range(w)[1] >= 50


def test_a_job_ending_without_a_final_event_fits_its_points(qtbot):
    d = shown(qtbot, Dashboard(), (1100, 700))
    for s in range(0, 31):
        d.update_from_event(ProgressEvent(step=s, total=3000, loss=1.0 / (s + 1)))
    qtbot.waitUntil(lambda: x_range(d.curves)[1] > 31 * 1.1)      # running: room for more
    d.set_outcome("diverged", "the loss became NaN")
    qtbot.wait(20)
    lo, hi = x_range(d.curves)
    assert lo <= 0 and 30 <= hi <= 30 * 1.1, (lo, hi)

"""app.tasks: one-off work off the GUI thread.  Offscreen Qt."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
import shiboken6  # noqa: E402

from app import tasks  # noqa: E402


def test_results_reach_the_gui_thread(qtbot):
    got, failed = [], []
    tasks.run_background(lambda: 6 * 7, got.append)
    tasks.run_background(lambda: 1 / 0, got.append, on_error=lambda exc, tb: failed.append((exc, tb)))
    qtbot.waitUntil(lambda: bool(got and failed), timeout=5000)
    assert got == [42]
    assert isinstance(failed[0][0], ZeroDivisionError) and "1 / 0" in failed[0][1]


@pytest.mark.parametrize("fails", [False, True])
def test_a_task_whose_signals_are_gone_drops_its_result(qtbot, fails):
    """A task still running when a script's interpreter tore down found its signals' object deleted:
    Qt printed "Signal source has been deleted" with a traceback.  The result is dropped quietly."""
    def work():
        if fails:
            raise ValueError("no one listens")
        return 1
    task = tasks._Task(work)
    shiboken6.delete(task.signals)
    task.run()          # raised RuntimeError("Signal source has been deleted") before


def test_an_emit_that_fails_for_another_reason_still_raises(qtbot):
    from PySide6.QtCore import QObject

    class Broken:
        def emit(self, *args):
            raise RuntimeError("something else")

    class LiveSignals(QObject):     # alive, but its emit fails
        done = Broken()

    task = tasks._Task(lambda: 1)
    task.signals = LiveSignals()
    with pytest.raises(RuntimeError, match="something else"):
        task.run()

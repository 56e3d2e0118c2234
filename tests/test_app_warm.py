"""The app imports what its own inference needs while idle, not while a job trains (a background
thread importing scipy for the first tagging scores held the GIL and the import lock: 60-100 ms
stalls of the GUI thread while the user watched a words job train, docs/PERFORMANCE.md)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pytestqt")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_warm_scoring_imports_the_engine_and_the_tag_mapping_in_a_fresh_process():
    code = ("import sys\n"
            "from app.window.common import warm_scoring\n"
            "mods = ('scipy.sparse', 'scipy.optimize')\n"
            "before = [m in sys.modules for m in mods]\n"
            "warm_scoring()\n"
            "print(before, [m in sys.modules for m in mods], 'tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[False,", "False]", "[True,", "True]", "False"]


def test_the_background_start_runs_the_warm_up(make_window, monkeypatch):
    from app import tasks
    from app.window.common import warm_scoring
    started = []
    monkeypatch.setattr(tasks, "run_background", lambda fn, *a, **k: started.append(fn))
    w = make_window()
    w.start_background_init()
    assert warm_scoring in started and len(started) == 2   # the TensorFlow query and the warm-up

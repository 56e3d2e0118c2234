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


def test_warm_up_freezes_the_collector_after_the_imports(make_window, monkeypatch):
    """The warm-up alone (what ``--no-tensorflow`` starts): the imports on a background thread, then
    the collector frozen on the GUI thread, also when the imports fail."""
    from app import gcguard, tasks
    from app.window.common import warm_scoring
    calls = []
    monkeypatch.setattr(gcguard, "freeze", lambda: calls.append("freeze"))

    def run(fn, on_done, on_error=None, **_):
        calls.append(fn)
        on_done(None) if len(calls) == 1 else on_error(ImportError("no scipy"), "")
    monkeypatch.setattr(tasks, "run_background", run)
    w = make_window()
    w.warm_up()
    assert calls == [warm_scoring, "freeze"]
    w.warm_up()
    assert calls == [warm_scoring, "freeze", warm_scoring, "freeze"]


def test_the_app_started_without_tensorflow_still_warms_up(tmp_path):
    """``--no-tensorflow`` skips TensorFlow's start-up query, not the app's own warm-up: scipy's
    tag mapping is imported and the collector frozen within seconds of the start, not while the
    first words job trains."""
    code = """
import gc, sys
from app import main as m
print("BEFORE", "scipy.optimize" in sys.modules, gc.get_freeze_count() > 0, flush=True)
code = m.main(["main.py", "--no-tensorflow", "--quit-after", "4"])
print("AFTER", "scipy.optimize" in sys.modules, gc.get_freeze_count() > 0, "tensorflow" in sys.modules, flush=True)
sys.exit(code)
"""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line.split() for line in out.stdout.splitlines() if line.startswith(("BEFORE", "AFTER"))]
    assert lines == [["BEFORE", "False", "False"], ["AFTER", "True", "True", "False"]], out.stdout

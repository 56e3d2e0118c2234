"""The GUI process hands the GIL to the GUI thread within 0.25 ms (app/gil.py)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")


def test_the_app_sets_a_quarter_ms_switch_interval(tmp_path):
    """app.main sets it before the window exists (the Brown corpus read on a background thread froze
    the window for 0.55-0.85 s at Python's 5 ms, 0.19-0.25 s at 1 ms, then 90 ms at 1 ms and 44-49 ms at
    0.25 ms: docs/PERFORMANCE.md); this test process keeps Python's default."""
    from app import gil
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = """
import sys
from PySide6.QtCore import QTimer
from app import main as m
from app.mainwindow import MainWindow
print("BEFORE", sys.getswitchinterval(), flush=True)
orig = MainWindow.__init__
def init(self, *a, **k):
    print("WINDOW", sys.getswitchinterval(), flush=True)
    orig(self, *a, **k)
MainWindow.__init__ = init
sys.exit(m.main(["main.py", "--no-tensorflow", "--quit-after", "0.3"]))
"""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    seen = dict(line.split() for line in out.stdout.splitlines() if line.startswith(("BEFORE", "WINDOW")))
    assert float(seen["BEFORE"]) == pytest.approx(0.005)
    assert float(seen["WINDOW"]) == pytest.approx(gil.SWITCH_INTERVAL_S) == pytest.approx(0.00025)
    assert sys.getswitchinterval() == pytest.approx(0.005)     # importing app.gil changes nothing

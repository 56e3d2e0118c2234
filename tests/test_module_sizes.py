"""Issue 23: no module of the app or the core over 750 lines (a file that long has taken on a second
job; app/export.py reached 906 in one session before this guard)."""
from __future__ import annotations

import pathlib

MAX_LINES = 750
ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_no_module_over_750_lines():
    too_long = {}
    for package in ("app", "densehmm_core"):
        for path in sorted((ROOT / package).rglob("*.py")):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > MAX_LINES:
                too_long[str(path.relative_to(ROOT))] = n
    assert not too_long, f"modules over {MAX_LINES} lines (split them by job): {too_long}"
    assert (ROOT / "app" / "export.py").is_file()   # the walk found the packages

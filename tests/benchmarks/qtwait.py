"""Event-loop helpers shared by the benchmark and screenshot scripts of this folder."""
from __future__ import annotations

import time


def wait_until(app, cond, timeout: float, step: float = 0.02) -> bool:
    """Process Qt events until ``cond()`` is true or ``timeout`` seconds have passed."""
    t0 = time.perf_counter()
    while not cond() and time.perf_counter() - t0 < timeout:
        app.processEvents()
        time.sleep(step)
    return cond()


def settle(app, seconds: float = 0.5) -> None:
    """Process Qt events for ``seconds`` (layouts and repaints catch up)."""
    wait_until(app, lambda: False, seconds)

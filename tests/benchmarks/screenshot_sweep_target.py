#!/usr/bin/env python
"""Screenshots of the sweep target dialog for docs (issue 25) — run on demand.

    xvfb-run -a .venv/bin/python tests/benchmarks/screenshot_sweep_target.py [--out DIR]

Saves ``sweep_target.png`` (a scheduler address chosen, the trust note) and
``sweep_target_refused.png`` (OK pressed with a malformed address: the dialog stays open
and says why) to ``--out`` (default docs/screenshots).
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import saver, screenshot_session  # noqa: E402 - this folder, not a package


def main() -> int:
    out, app, _ = screenshot_session(REPO)
    from app.panels.sweep_target import SweepTargetDialog
    shot = saver(app, out)
    d = SweepTargetDialog("tls://head.cluster:8786", "/shared/densehmm-models")
    d.show()
    shot("sweep_target.png", d)
    d.address.setText("tcp://head.cluster")
    d.accept()
    shot("sweep_target_refused.png", d)
    return 0


if __name__ == "__main__":
    sys.exit(main())

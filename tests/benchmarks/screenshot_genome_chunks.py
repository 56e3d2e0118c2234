#!/usr/bin/env python
"""Screenshot of the data panel on a genome cut into pieces (Chunk length) for docs/APP.md — run on demand.

    xvfb-run -a -s "-screen 0 1366x768x24" .venv/bin/python tests/benchmarks/screenshot_genome_chunks.py

Opens the NCTC11397 genome of ../shared/data (one sequence of 2.46 M bases; skipped when absent) in
the main window on a 1366 x 768 screen, saves the top of the data panel as it first reads it
(``data_panel_genome_one_sequence.png``: "train 1 / test 0" and what to do), sets Chunk length
10,000, applies it and saves the whole panel (``data_panel_genome_chunks.png``: 247 sequences, half
held out) into ``docs/screenshots`` (``--out``).
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, saver, screenshot_session, settle, wait_until  # noqa: E402 - this folder
GENOME = os.path.join(os.path.dirname(REPO), "shared", "data", "dna", "GCF_001457455.1_NCTC11397_genomic.fna.gz")


def main() -> int:
    if not os.path.exists(GENOME):
        print("../shared/data is not present")
        return 0
    out, app, tmp = screenshot_session(REPO)
    win = fresh_window(app, tmp)
    win.resize(1366, 768)
    panel = win.data_panel
    shot = saver(app, out, panel)
    win.open_files([GENOME])
    if not wait_until(app, lambda: len(win.datasets) == 1 and bool(panel.summary), 120):
        raise SystemExit("the genome did not load")
    settle(app, 1.0)
    top = panel.grab()
    top = top.copy(0, 0, top.width(), min(top.height(), 230))
    path = os.path.join(out, "data_panel_genome_one_sequence.png")
    if not top.save(path):
        raise SystemExit(f"could not write {path}")
    print("saved", path)
    panel.chunk_len.setValue(10_000)
    panel.apply_button.click()
    if not wait_until(app, lambda: panel.summary.get("n_test", 0) > 0, 120):
        raise SystemExit("the pieces were not made")
    shot("data_panel_genome_chunks.png")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

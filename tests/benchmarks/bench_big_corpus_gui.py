#!/usr/bin/env python
"""The GUI thread while a large word corpus is read and trained on — run on demand, not part of the tests.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_big_corpus_gui.py [--rounds 3]

The Brown corpus of ../shared/data (1.16 M tokens, 57,340 sentences; read as words with the app's
defaults: 30,499 symbols) is opened in the main window, read again as words (the data panel's
Observe box), a DenseHMM-EM (n = 45, l = 32, 3 iterations) is started (``start``: the click's own
call), trains on it (``starting``: the window in the first second after the click, while the job
sends the data to its worker and the dashboard is first drawn; ``train``: the window after that, its
live snapshots) and is shown, and Overview is opened.
The window starts as ``app.main`` starts it: its background start-up (TensorFlow loaded in a
worker process, the imports of the app's own scoring, the frozen collector) is done first.
Every ``processEvents`` call of the GUI thread is timed, per phase, and so is each call the window
makes for a click (start a job, show it, open a tab); the longest is the longest the window
stayed frozen.  Each round runs two fresh processes in turn: ``switch 5 ms``
(Python's default GIL switch interval, the baseline) and the shipped one
(:data:`app.gil.SWITCH_INTERVAL_S` of the checkout, what ``app.main`` sets), so the ratio is
measured in the same run.  Prints the medians of the rounds and the ratio (``--shipped``: the
shipped interval's processes only, to compare two checkouts; ``--switch S``: another interval in
seconds instead of the shipped one).  Target: no ``processEvents`` call over 50 ms.  Skipped
(exit 0, a message) without the shared data.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BROWN = os.path.join(os.path.dirname(REPO), "shared", "data", "pos", "brown_all.txt")
PHASES = ("reread", "start", "starting", "train", "show", "overview")
#: the window's calls within this many seconds of the click that starts a job count as ``starting``
#: (the first paint of the dashboard while the job's thread sends the data to its worker), later
#: ones as ``train`` (the live snapshots)
STARTING_S = 1.0


def child(switch: float) -> dict:
    """One fresh window: the phases' longest processEvents (ms), the reread's seconds."""
    sys.path.insert(0, REPO)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tempfile

    from PySide6.QtCore import QEvent, QRect
    from PySide6.QtWidgets import QApplication
    from qtwait import fresh_window
    app = QApplication(["densehmm-studio"])
    from app import blas, gcguard
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    gcguard.install()
    blas.install()            # (as app.main does)
    sys.setswitchinterval(switch)
    MainWindow.available_geometry = lambda self: QRect(0, 0, 1366, 728)
    win = fresh_window(app, tempfile.mkdtemp())
    longest = dict.fromkeys(PHASES, 0.0)

    def timed(phase, fn):
        """A call the window makes for one user action (a click): it counts as one event."""
        t0 = time.perf_counter()
        out = fn()
        longest[phase] = max(longest[phase], 1000 * (time.perf_counter() - t0))
        return out

    clicked = [0.0]

    def pump(phase, cond, timeout):
        end = time.perf_counter() + timeout
        while not cond() and time.perf_counter() < end:
            t0 = time.perf_counter()
            app.processEvents()
            app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
            which = "starting" if phase == "train" and t0 - clicked[0] < STARTING_S else phase
            longest[which] = max(longest[which], 1000 * (time.perf_counter() - t0))
            time.sleep(0.01)

    ready = []
    win.background_ready.connect(lambda: ready.append(True))
    win.start_background_init()   # as app.main does: TensorFlow in a worker, warm imports, gc.freeze
    pump("reread", lambda: bool(ready), 300)
    win.open_files([BROWN])
    pump("reread", lambda: len(win.datasets) == 1 and not win.data_ctl.loading, 300)
    longest["reread"] = 0.0                 # (the first reading, as tags, is not measured)
    t0 = time.perf_counter()
    timed("reread", lambda: win.data_ctl.reread_dataset(win.datasets[0], {"observe": "words"}))
    pump("reread", lambda: not win.data_ctl.loading, 300)
    reread_s = time.perf_counter() - t0
    pump("reread", lambda: False, 1.0)
    clicked[0] = time.perf_counter()
    job = timed("start", lambda: win.jobs_ctl.start_training(
        ModelSpec.make(model_type="dense_em", n=45, l=32, n_iter=3, seed=1)))
    pump("train", lambda: job.state.is_final, 900)
    pump("train", lambda: False, 1.0)
    timed("show", lambda: win.jobs_ctl.show_job(job))
    pump("show", lambda: False, 2.0)
    timed("overview", lambda: win.dashboard.tabs.setCurrentWidget(win.dashboard.overview))
    pump("overview", lambda: False, 2.0)
    return {"longest_ms": longest, "reread_s": reread_s, "symbols": win.datasets[0].n_symbols}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shipped", action="store_true", help="only the shipped switch interval (what app.main sets)")
    ap.add_argument("--switch", type=float, default=None, help="an interval (s) instead of the shipped one")
    ap.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print("RESULT " + json.dumps(child(args.child)), flush=True)
        os._exit(0)      # (no teardown of the window and its worker pool: the numbers are out)
    if not os.path.exists(BROWN):
        print(f"skipped: {BROWN} is absent")
        return 0
    sys.path.insert(0, REPO)
    from app.gil import SWITCH_INTERVAL_S
    interval = SWITCH_INTERVAL_S if args.switch is None else args.switch
    name = f"switch {1000 * interval:g} ms"
    settings = {name: interval} if args.shipped else {"switch 5 ms": 0.005, name: interval}
    runs: dict = {k: [] for k in settings}
    for r in range(args.rounds):
        for name, switch in settings.items():
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(switch)],
                                 capture_output=True, text=True, timeout=1200)
            line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(out.stdout[-2000:], out.stderr[-2000:])
                return 1
            res = json.loads(line[len("RESULT "):])
            runs[name].append(res)
            print(f"round {r + 1} {name}: " + ", ".join(f"{p} {res['longest_ms'][p]:.0f}" for p in PHASES)
                  + f" ms; reread {res['reread_s']:.2f} s; {res['symbols']} symbols", flush=True)
    print("\nlongest processEvents call, median of rounds (ms):")
    print(f"{'':14s}" + "".join(f"{p:>10s}" for p in PHASES) + f"{'reread s':>10s}")
    med = {}
    for name, rs in runs.items():
        med[name] = {p: statistics.median(x["longest_ms"][p] for x in rs) for p in PHASES}
        med[name]["reread_s"] = statistics.median(x["reread_s"] for x in rs)
        print(f"{name:14s}" + "".join(f"{med[name][p]:10.0f}" for p in PHASES) + f"{med[name]['reread_s']:10.2f}")
    if args.shipped:
        return 0
    base, new = med["switch 5 ms"], med[name]
    print(f"ratio ({1000 * interval:g} / 5 ms)" + "".join(f"{new[p] / max(base[p], 1e-9):10.2f}" for p in PHASES)
          + f"{new['reread_s'] / base['reread_s']:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

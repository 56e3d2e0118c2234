#!/usr/bin/env python
"""Cost of one live Dashboard update on the GUI thread (views of issue 6) — run on demand.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_dashboard_redraw.py \
        [--baseline OTHER_CHECKOUT] [--rounds 3] [--profile]

Feeds 50 synthetic progress events (n = 10 states, m = 21 symbols, l = 5; every event with a
full parameter snapshot, embeddings included) to an offscreen Dashboard of 1100 x 650 px and
times ``update_from_event`` plus the paint that follows (``processEvents``).  Prints the median
and max over the last 45 events.  With ``--baseline DIR`` (a checkout of another version, e.g.
``git worktree add /tmp/base HEAD~1``) both versions run alternately in fresh processes on the
same machine, and the ratio of the medians is printed.  ``--profile`` prints a cProfile summary.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def softmax(x):
    import numpy as np
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def events(count=50, n=10, m=21, l=5, seed=0):
    import numpy as np
    from densehmm_core.events import ProgressEvent
    rng = np.random.default_rng(seed)
    out = []
    for s in range(count):
        U, Z, W, V, zs = (rng.normal(size=(n, l)), rng.normal(size=(n, l)), rng.normal(size=(n, l)),
                          rng.normal(size=(m, l)), rng.normal(size=l))
        p = {"startprob": softmax(zs @ U.T), "transmat": softmax(Z @ U.T), "emissionprob": softmax(W @ V.T),
             "U": U, "Z": Z, "W": W, "V": V, "z_start": zs}
        ll = -355625.0 + 3 * s + rng.random()
        out.append(ProgressEvent(step=s * 10, total=count * 10, phase="em", loss=-ll / 240771, train_ll=ll,
                                 test_ll=ll * 1.01, metrics={"train_nll": -ll / 240771, "mad": 1e-3 / (s + 1)},
                                 params=p))
    return out


def measure(profile: bool = False) -> float:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6 import QtWidgets
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    from app.views.dashboard import Dashboard
    dash = Dashboard()
    dash.set_vocabulary(list("ACDEFGHIKLMNPQRSTVWYX"))
    dash.set_title("benchmark")
    dash.resize(1100, 650)
    dash.show()
    for _ in range(3):
        app.processEvents()
    evs = events()
    for ev in evs[:5]:  # warm up: first layout, colour maps, fonts
        dash.update_from_event(ev)
        app.processEvents()
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
    total, upd = [], []
    for ev in evs[5:]:
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        dash.update_from_event(ev)
        t1 = time.perf_counter()
        app.processEvents()  # the paint
        if prof:
            prof.disable()
        total.append(time.perf_counter() - t0)
        upd.append(t1 - t0)
    med = statistics.median(total)
    print(f"RESULT median_ms={1000 * med:.1f} max_ms={1000 * max(total):.1f} "
          f"update_only_median_ms={1000 * statistics.median(upd):.1f} events={len(total)}", flush=True)
    if prof:
        import pstats
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    return med


def run_in(repo: str) -> dict:
    code = ("import sys; sys.path.insert(0, %r); sys.path.insert(1, %r)\n"
            "import runpy; mod = runpy.run_path(%r); mod['measure']()\n"
            % (repo, os.path.join(REPO, "tests", "benchmarks"), os.path.abspath(__file__)))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT"):
            return {k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
    raise SystemExit(f"benchmark failed in {repo}:\n{out.stderr[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="another checkout to compare with (same machine, same run)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.profile:
        sys.path.insert(0, REPO)
        measure(profile=True)
        return 0
    cur, base = [], []
    for _ in range(args.rounds):
        if args.baseline:
            base.append(run_in(os.path.abspath(args.baseline)))
        cur.append(run_in(REPO))
    def med(rs, k):
        return statistics.median(r[k] for r in rs)
    print(f"this tree:  update+paint median {med(cur, 'median_ms'):.1f} ms "
          f"(max {max(r['max_ms'] for r in cur):.1f} ms),"
          f" update_from_event alone {med(cur, 'update_only_median_ms'):.1f} ms; {args.rounds} rounds")
    if base:
        print(f"baseline:   update+paint median {med(base, 'median_ms'):.1f} ms "
              f"(max {max(r['max_ms'] for r in base):.1f} ms),"
              f" update_from_event alone {med(base, 'update_only_median_ms'):.1f} ms")
        print("ratio baseline / this tree (median update+paint): "
              f"{med(base, 'median_ms') / med(cur, 'median_ms'):.2f}x")
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the reproduction runner: process pool vs thread pool vs one process.

Runs small ``densehmm reproduce`` sweeps into fresh temporary folders and prints
wall-clock times and their ratios against ``--jobs 1`` measured in the same run.

    .venv/bin/python tests/benchmarks/bench_reproduce.py [--rounds 2]

Each variant is run ``--rounds`` times (alternating) and the median is reported.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SWEEPS = {
    # numpy only: 8 factorisation tasks (4 (n, l) pairs x 2 methods, 9 runs each)
    "factorization": ["factorization", "--quick"],
    # TensorFlow + numpy: 2 pairs x 2 repeats x 4 models = 16 fits, paper settings
    "synthetic": ["synthetic", "--grid", "3:2,5:3", "--repeats", "2",
                  "--models", "dense-em,dense-direct,standard-fair,standard"],
}
VARIANTS = {
    "jobs=1": ["--jobs", "1"],
    "process x2": ["--jobs", "2", "--executor", "process"],
    "thread x2": ["--jobs", "2", "--executor", "thread"],
}


def run_once(sweep, variant):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "densehmm_core", "reproduce", *SWEEPS[sweep], "--out", tmp,
               *VARIANTS[variant]]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sweeps", default=",".join(SWEEPS))
    a = ap.parse_args()
    print(f"cpu cores visible: {len(os.sched_getaffinity(0))}; load average at start: {os.getloadavg()}")
    for sweep in a.sweeps.split(","):
        times = {v: [] for v in VARIANTS}
        for _ in range(a.rounds):
            for v in VARIANTS:
                times[v].append(run_once(sweep, v))
        base = statistics.median(times["jobs=1"])
        print(f"\n{sweep}: command wall time incl. start-up (median of {a.rounds})")
        for v, ts in times.items():
            med = statistics.median(ts)
            print(f"  {v:<11} {med:7.1f} s   speed-up vs jobs=1: {base / med:4.2f}x   "
                  f"(runs: {', '.join(f'{t:.1f}' for t in ts)})")
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()

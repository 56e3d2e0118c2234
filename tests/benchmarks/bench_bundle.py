#!/usr/bin/env python3
"""Bundle size breakdown and start-up time of the PyInstaller bundle vs the source checkout.

Usage (after ``sh packaging/build.sh``)::

    .venv/bin/python tests/benchmarks/bench_bundle.py [--repeats 5]

Prints the size of dist/DenseHMM-Studio (total, file count, the largest components) and the
"window shown" time that the app reports with ``DENSEHMM_STARTUP_REPORT=1``, measured alternately
for the bundle and for ``python main.py`` (the baseline, same run, same machine), offscreen,
without the background TensorFlow import; medians and their ratio.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
BUNDLE = REPO / "dist" / "DenseHMM-Studio"


def du(path: pathlib.Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def startup(cmd, home) -> float:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", DENSEHMM_STARTUP_REPORT="1", HOME=home,
               XDG_CONFIG_HOME=os.path.join(home, "config"), XDG_DATA_HOME=os.path.join(home, "data"),
               XDG_CACHE_HOME=os.path.join(home, "cache"))
    out = subprocess.run(cmd + ["--no-tensorflow", "--quit-after", "0.2"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=300).stdout
    m = re.search(r"startup_seconds=([0-9.]+)", out)
    if not m:
        raise RuntimeError(f"no startup report from {cmd}: {out[-2000:]}")
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not (BUNDLE / "DenseHMM-Studio").exists():
        print(f"no bundle at {BUNDLE}: build it first with sh packaging/build.sh", file=sys.stderr)
        return 2
    total = du(BUNDLE)
    files = sum(1 for p in BUNDLE.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"bundle {BUNDLE.relative_to(REPO)}: {total / 2**20:.0f} MiB in {files} files")
    internal = BUNDLE / "_internal"
    parts = sorted(((du(p), p.name) for p in internal.iterdir()), reverse=True)
    for size, name in parts[:8]:
        print(f"  {size / 2**20:7.1f} MiB  {100 * size / total:5.1f} %  {name}")
    tf_cc = internal / "tensorflow" / "libtensorflow_cc.so.2"
    if tf_cc.exists():
        print(f"  of which tensorflow/libtensorflow_cc.so.2: {du(tf_cc) / 2**20:.0f} MiB")

    src, frozen = [], []
    with tempfile.TemporaryDirectory() as home:
        for _ in range(args.repeats):  # alternate, so both see the same machine load
            src.append(startup([sys.executable, str(REPO / "main.py")], home))
            frozen.append(startup([str(BUNDLE / "DenseHMM-Studio")], home))
    ms, mf = statistics.median(src), statistics.median(frozen)
    print(f"window shown (median of {args.repeats}): source {ms:.2f} s, bundle {mf:.2f} s, "
          f"ratio bundle/source {mf / ms:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

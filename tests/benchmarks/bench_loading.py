"""Benchmark of data loading (issue 4): a generated pdb_seqres-like FASTA of ~270 MB.

Targets: throughput >= 30 MB/s and peak memory <= 3x the encoded corpus (int32 sequences).

    .venv/bin/python tests/benchmarks/bench_loading.py [--size-mb 270] [--repeats 3]

Each load runs in a fresh child process so that its peak RSS (``ru_maxrss``) can be measured;
the peak above the child's RSS just before loading is compared with ``4 * n_tokens`` bytes.
Baselines measured in the same run: iterating the file's lines in binary mode, sha256 of the
file (the floor of any reader that reads every line / every byte), and allocating and filling
the int32 output array in a fresh process (on a VM the kernel's page zeroing makes this a large
share of the total). Wall and CPU (user + system) times are both reported: on a shared machine
the wall time mostly measures the other processes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

AA = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWYX", dtype=np.uint8)
AA_P = np.array([8.3, 1.4, 5.5, 6.8, 3.9, 7.1, 2.3, 5.9, 5.8, 9.7, 2.4, 4.1, 4.7, 3.9, 5.4, 6.6, 5.4, 6.9,
                 1.3, 2.9, 0.8])
AA_P = AA_P / AA_P.sum()
NA = np.frombuffer(b"ACGUT", dtype=np.uint8)

CHILD = r"""
import json, resource, sys, time
from densehmm_core.data import load
import numpy as np
path = sys.argv[1]
rss0 = int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize()
t = time.perf_counter()
cpu = time.process_time()
c = load(path)
dt = time.perf_counter() - t
cpu = time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": dt, "cpu_seconds": cpu, "n_tokens": c.n_tokens, "n_sequences": c.n_sequences,
                  "n_symbols": c.n_symbols, "rss_before": rss0, "peak": peak}))
"""


FLOOR = r"""
import json, sys, time
import numpy as np
n = int(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
a = np.empty(n, dtype=np.int32)
a[:] = 1
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c}))
"""


def generate(path: str, size_mb: float, seed: int = 0) -> None:
    """Write a pdb_seqres.txt-like file: mol:protein and (5 %) mol:na records, one-line sequences."""
    rng = np.random.default_rng(seed)
    target = int(size_mb * 1e6)
    written = 0
    n = 0
    with open(path, "wb") as f:
        while written < target:
            k = 20000
            lengths = np.clip(rng.lognormal(5.3, 0.8, size=k).astype(int), 3, 5000)
            is_na = rng.random(k) < 0.05
            total = int(lengths.sum())
            aa = AA[rng.choice(len(AA), size=total, p=AA_P)].tobytes()
            nuc = NA[rng.integers(0, 4, size=total)].tobytes()
            pos = 0
            out = []
            for L, na in zip(lengths.tolist(), is_na.tolist()):
                n += 1
                seq = (nuc if na else aa)[pos:pos + L]
                pos += L
                out.append(b">%04x_%s mol:%s length:%d  GENERATED CHAIN %d\n%s\n" % (
                    n, b"ABCD"[n % 4:n % 4 + 1], b"na" if na else b"protein", L, n, seq))
            blob = b"".join(out)
            f.write(blob)
            written += len(blob)


def baseline_lines(path: str) -> float:
    t = time.perf_counter()
    with open(path, "rb") as f:
        for _ in f:
            pass
    return time.perf_counter() - t


def baseline_sha(path: str) -> float:
    import hashlib
    t = time.perf_counter()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return time.perf_counter() - t


def bench_tagged(repeats: int) -> None:
    """Tagged corpora of ../shared/data (when present): load time vs iterating the file's lines."""
    from densehmm_core.data import load
    shared = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data", "pos")
    for name in ("brown_all.txt", "masc_tagged_written.txt", "ptb_wsj_sample_combined.mrg",
                 "conll2000_train.txt", "en_ewt-ud-dev.conllu"):
        path = os.path.join(shared, name)
        if not os.path.exists(path):
            continue
        size = os.path.getsize(path)
        loads, cpus, bases = [], [], []
        for _ in range(repeats):
            bases.append(baseline_lines(path))
            t, c0 = time.perf_counter(), time.process_time()
            c = load(path)
            loads.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c0)
        med, med_cpu, med_b = statistics.median(loads), statistics.median(cpus), statistics.median(bases)
        print(f"{name}: {size / 1e6:.1f} MB, {c.n_tokens} tokens: load median {med:.2f} s "
              f"({size / 1e6 / med:.1f} MB/s; CPU {med_cpu:.2f} s = {size / 1e6 / med_cpu:.1f} MB/s, "
              f"{c.n_tokens / med_cpu / 1e6:.2f} M tokens/CPU-s); line iteration {med_b:.3f} s; "
              f"ratio {med / med_b:.0f}x")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=270.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to write the generated file (default: a temp dir)")
    ap.add_argument("--skip-fasta", action="store_true", help="only the tagged corpora of ../shared/data")
    args = ap.parse_args(argv)
    bench_tagged(args.repeats)
    if args.skip_fasta:
        return
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tmp = tempfile.mkdtemp(dir=args.dir, prefix="bench-loading-")
    path = os.path.join(tmp, "pdb_seqres_generated.txt")
    t = time.perf_counter()
    generate(path, args.size_mb)
    size = os.path.getsize(path)
    print(f"generated {size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s: {path}")
    baseline_lines(path)  # warm the page cache
    runs = []
    env = dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    lines_t, sha_t = [], []
    for r in range(args.repeats):
        lines_t.append(baseline_lines(path))
        sha_t.append(baseline_sha(path))
        out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, env=env,
                             cwd=repo, check=True)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        runs.append(res)
        enc = 4 * res["n_tokens"]
        print(f"run {r + 1}: load {res['seconds']:.2f} s = {size / 1e6 / res['seconds']:.1f} MB/s "
              f"(CPU {res['cpu_seconds']:.2f} s = {size / 1e6 / res['cpu_seconds']:.1f} MB/s); "
              f"line iteration {lines_t[-1]:.2f} s; sha256 {sha_t[-1]:.2f} s; "
              f"peak {(res['peak'] - res['rss_before']) / 1e6:.0f} MB above start = "
              f"{(res['peak'] - res['rss_before']) / enc:.2f}x the encoded corpus ({enc / 1e6:.0f} MB)")
    floors = []
    for r in range(args.repeats):
        out = subprocess.run([sys.executable, "-c", FLOOR, str(runs[0]["n_tokens"])], capture_output=True,
                             text=True, check=True)
        floors.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("floor (allocate and fill the int32 output, a fresh process): "
          + ", ".join(f"{f['seconds']:.2f} s (CPU {f['cpu_seconds']:.2f} s)" for f in floors))
    med = statistics.median(r["seconds"] for r in runs)
    med_cpu = statistics.median(r["cpu_seconds"] for r in runs)
    med_lines = statistics.median(lines_t)
    med_sha = statistics.median(sha_t)
    ratios = [(r["peak"] - r["rss_before"]) / (4 * r["n_tokens"]) for r in runs]
    res = runs[0]
    print(json.dumps({
        "file_mb": round(size / 1e6, 1), "n_sequences": res["n_sequences"], "n_tokens": res["n_tokens"],
        "n_symbols": res["n_symbols"],
        "median_load_s": round(med, 2), "median_MB_per_s": round(size / 1e6 / med, 1),
        "median_load_cpu_s": round(med_cpu, 2), "median_MB_per_cpu_s": round(size / 1e6 / med_cpu, 1),
        "median_line_iteration_s": round(med_lines, 2), "median_sha256_s": round(med_sha, 2),
        "load_vs_line_iteration": round(med / med_lines, 2), "load_vs_sha256": round(med / med_sha, 2),
        "median_output_fill_s": round(statistics.median(f["seconds"] for f in floors), 2),
        "median_output_fill_cpu_s": round(statistics.median(f["cpu_seconds"] for f in floors), 2),
        "median_peak_over_encoded": round(statistics.median(ratios), 2),
        "target_MB_per_s": 30, "target_peak_ratio": 3.0,
    }, indent=1))
    os.remove(path)
    os.rmdir(tmp)


if __name__ == "__main__":
    main()

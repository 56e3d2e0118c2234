"""Benchmark: seconds per Baum-Welch (EM) iteration, numpy engine vs hmmlearn.

Run from the repository root::

    .venv/bin/python tests/benchmarks/bench_engine.py            # full run (several minutes)
    .venv/bin/python tests/benchmarks/bench_engine.py --quick    # fewer repetitions, no "log" on 4M tokens

Setup (issue 2): a Dirichlet(0.1) HMM with n = 10 states and m = 20 symbols
(``random_hmm(10, 20, 0.1, seed=0)``) generates three token sets: 5000 x 40,
1000 x 512 and 100000 x 40.  Every implementation starts each EM iteration from
the same parameters (``StandardHMM(10, seed=1).init_params(20)``):

* ours: ``NumpyEngine.statistics`` on the prepared (sorted, chunked) data + the
  closed-form M-step of ``StandardHMM`` (the one-off preparation is timed apart);
* hmmlearn ``CategoricalHMM(implementation="scaling")`` and ``"log"`` (its
  default), one ``fit`` with ``n_iter=1, init_params=""`` per iteration.

Both CPU time (``time.process_time``, the primary number: the development
machine is shared and its wall clock is noisy) and wall time are printed; the
statistic is the median over the repetitions.  Peak memory is measured in a
fresh subprocess that samples the 4M-token set and runs ``StandardHMM.fit`` for
two iterations: the peak resident set size (``VmHWM``) of that whole process and
the ``tracemalloc`` peak of the fit alone.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from densehmm_core.engine import get_engine  # noqa: E402
from densehmm_core.engine.sampling import sample_sequences  # noqa: E402
from densehmm_core.standard import StandardHMM  # noqa: E402
from densehmm_core.synthetic import random_hmm  # noqa: E402

N_STATES, N_SYMBOLS = 10, 20
SETS = [(5000, 40), (1000, 512), (100000, 40)]


def make_data(n_seq, length, seed=0):
    params = random_hmm(N_STATES, N_SYMBOLS, 0.1, seed=seed)
    obs, _ = sample_sequences(*params, n_seq, length, seed=seed + 1)
    return obs


def init_params():
    m = StandardHMM(N_STATES, seed=1).init_params(N_SYMBOLS)
    return m.startprob_, m.transmat_, m.emissionprob_


def timed(fn, reps):
    cpu, wall, out = [], [], None
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return float(np.median(cpu)), float(np.median(wall)), out


def bench_set(n_seq, length, reps, log_reps):
    from hmmlearn.hmm import CategoricalHMM
    obs = make_data(n_seq, length)
    pi, A, B = init_params()
    eng = get_engine("numpy")
    c0 = time.process_time()
    prep = eng.prepare(obs, N_STATES)
    prep_cpu = time.process_time() - c0

    def ours():
        st = eng.statistics(pi, A, B, prep)
        StandardHMM._mstep(st, A, B)
        return st.total_loglik

    X = np.concatenate(obs)[:, None]
    lengths = np.array([len(o) for o in obs])

    def hmmlearn(impl):
        def run():
            h = CategoricalHMM(N_STATES, n_features=N_SYMBOLS, n_iter=1, tol=-np.inf, init_params="",
                               implementation=impl)
            h.startprob_, h.transmat_, h.emissionprob_ = pi, A, B
            h.fit(X, lengths)
            return h.monitor_.history[-1]
        return run

    res = {"set": f"{n_seq} x {length}", "tokens": int(X.shape[0]), "prepare_cpu": prep_cpu}
    res["ours_cpu"], res["ours_wall"], ll_ours = timed(ours, reps)
    res["scaling_cpu"], res["scaling_wall"], ll_s = timed(hmmlearn("scaling"), max(1, reps // 2))
    if log_reps:
        res["log_cpu"], res["log_wall"], ll_l = timed(hmmlearn("log"), log_reps)
    else:
        res["log_cpu"] = res["log_wall"] = float("nan")
    res["ll_rel_diff"] = abs(ll_ours - ll_s) / abs(ll_s)
    return res


MEMORY_CHILD = r"""
import resource, sys, time, tracemalloc, json
sys.path.insert(0, sys.argv[1])


def peak_rss_kb():
    # VmHWM belongs to this process image; ru_maxrss can carry the parent's peak over fork+exec
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


import numpy as np
from densehmm_core.engine.sampling import sample_sequences
from densehmm_core.standard import StandardHMM
from densehmm_core.synthetic import random_hmm
params = random_hmm(10, 20, 0.1, seed=0)
obs, _ = sample_sequences(*params, 100000, 40, seed=1)
del _
rss_data = peak_rss_kb()
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
StandardHMM(10, n_symbols=20, n_iter=2, tol=-np.inf, seed=1).fit(obs)
peak = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
print(json.dumps({"rss_after_data_kb": rss_data,
                  "rss_peak_kb": peak_rss_kb(),
                  "fit_traced_peak_bytes": peak}))
"""


def measure_memory():
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(ROOT)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer repetitions; skip hmmlearn 'log' on the 4M-token set")
    ap.add_argument("--json", type=pathlib.Path, help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    logging.getLogger("hmmlearn").setLevel(logging.ERROR)
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    print(f"n={N_STATES}, m={N_SYMBOLS}; seconds per EM iteration, median (CPU time; wall in brackets)")
    header = (f"{'set':>14} {'tokens':>8} {'ours':>16} {'hmmlearn scaling':>18} {'hmmlearn log':>18} "
              f"{'x scaling':>9} {'x log':>7} {'LL rel diff':>11}")
    print(header)
    results = []
    for n_seq, length in SETS:
        big = n_seq * length > 1_000_000
        reps = 3 if (args.quick or big) else 7
        log_reps = 0 if (args.quick and big) else 1 if big else (1 if args.quick else 3)
        r = bench_set(n_seq, length, reps, log_reps)
        r["x_scaling"] = r["scaling_cpu"] / r["ours_cpu"]
        r["x_log"] = r["log_cpu"] / r["ours_cpu"]
        results.append(r)
        print(f"{r['set']:>14} {r['tokens']:>8} {r['ours_cpu']:7.3f} [{r['ours_wall']:6.3f}] "
              f"{r['scaling_cpu']:8.3f} [{r['scaling_wall']:7.3f}] {r['log_cpu']:8.3f} [{r['log_wall']:7.3f}] "
              f"{r['x_scaling']:9.1f} {r['x_log']:7.1f} {r['ll_rel_diff']:11.1e}", flush=True)
        print(f"{'':>14} one-off preparation (sort + chunk): {r['prepare_cpu']:.3f} s CPU", flush=True)
    mem = measure_memory()
    print(f"memory, 100000 x 40 (4M tokens): peak RSS of the whole process "
          f"(sampling + 2 EM iterations) {mem['rss_peak_kb'] / 1024:.0f} MB "
          f"(after sampling the data: {mem['rss_after_data_kb'] / 1024:.0f} MB); "
          f"tracemalloc peak of the fit alone {mem['fit_traced_peak_bytes'] / 2**20:.0f} MB")
    ok = all(r["x_scaling"] >= 3 for r in results) and all(
        not np.isfinite(r["x_log"]) or r["x_log"] >= 15 for r in results) and mem["rss_peak_kb"] / 1024 <= 600
    print("targets (>= 3x scaling, >= 15x log, peak <= 600 MB):", "MET" if ok else "NOT MET")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "memory": mem}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: DenseHMM-EM against Baum-Welch on the same words, on the CPU (issue 22's CPU targets).

Run from the repository root (needs ../shared/data, or --data FILE)::

    .venv/bin/python tests/benchmarks/bench_dense_em.py [--repeats 3] [--iters 6] [--json out.json]

Measured in one run, on the Penn Treebank sample read as words (``observe="words", min_count=1``, cased:
10,947 types), n = 45 states:

1. **Seconds per iteration**: ``StandardHMM(45)`` (Baum-Welch, numpy engine) and
   ``DenseHMM(45, 32, fit_method="em", symbol_features="orthographic")`` (E-step + 25 Adam steps of
   the array-module M-step in float32, the default ``mstep_dtype``, with this process's thread budget
   (``DENSEHMM_THREADS``, else the CPUs: two threads for the M-step on 2 cores); the same on one
   thread; and in float64), all with ``diagnostics_every`` at its default; the median of the
   differences of the progress events' elapsed times after the first iteration, median over
   ``--repeats`` fits; wall and CPU time.  Target: DenseHMM-EM <= 1.5x Baum-Welch.
2. **Start**: seconds from ``fit`` to the first progress event (the initial model, spectral start
   included) of a DenseHMM-EM fit in a fresh process, and whether TensorFlow was imported.
   Target: <= 2 s, no TensorFlow.
3. **Diagnostics**: one co-occurrence MAD and one test log-likelihood (the other half of the
   sentences) on the device against one DenseHMM-EM iteration; with ``diagnostics_every = k`` they
   cost ``(mad + test) / (k * iteration)``.  Target: <= 5% at the default k.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "pos" / "ptb_wsj_sample_combined.mrg"


def per_iteration(model, corpus, **kw):
    """Median (wall, CPU) seconds per iteration after the first (the engine is single-threaded and
    the M-step on one thread or two: CPU time is the steadier figure on a shared machine, wall time
    the one a user waits)."""
    from densehmm_core.events import START_PHASE
    wall, cpu = [], []
    for ev in model.iter_fit(corpus, **kw):
        if ev.phase == START_PHASE:     # the start's progress events (pairs, SVD, k-means): not iterations
            continue
        wall.append(time.perf_counter())
        cpu.append(time.process_time())
    return float(np.median(np.diff(wall)[1:])), float(np.median(np.diff(cpu)[1:]))


@contextlib.contextmanager
def one_thread():
    """DENSEHMM_THREADS=1 for the fits inside (each reads its budget when it starts)."""
    old = os.environ.get("DENSEHMM_THREADS")
    os.environ["DENSEHMM_THREADS"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DENSEHMM_THREADS")
        else:
            os.environ["DENSEHMM_THREADS"] = old


def start_in_fresh_process(data: str) -> dict:
    code = f"""
import sys, time
from densehmm_core import DenseHMM, load
corpus = load({data!r}, observe="words", min_count=1)
model = DenseHMM(45, 32, fit_method="em", seed=0, n_iter=1, symbol_features="orthographic")
t0 = time.perf_counter()
for ev in model.iter_fit(corpus):
    if ev.phase == "start":
        continue
    print(time.perf_counter() - t0, "tensorflow" in sys.modules, ev.metrics.get("start"), flush=True)
    break
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=True)
    first, tf, start = out.stdout.split()
    return {"first_event_s": float(first), "tensorflow_imported": tf == "True", "start": start}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    from densehmm_core import DenseHMM, StandardHMM, load
    from densehmm_core.em import DIAGNOSTICS_EVERY, _Diagnostics
    corpus = load(args.data, observe="words", min_count=1)
    print(f"data: {args.data}: {corpus.n_sequences} sentences, {corpus.n_tokens} tokens, {corpus.n_symbols} types")
    res: dict = {"data": args.data, "tokens": int(corpus.n_tokens), "types": int(corpus.n_symbols)}
    from densehmm_core.threads import cpu_threads
    budget = cpu_threads()
    print(f"thread budget: {budget} (the M-step uses {min(2, budget)})")
    res["threads"] = budget
    bw, de, de1, de64 = [], [], [], []
    for r in range(args.repeats):
        bw.append(per_iteration(StandardHMM(45, n_iter=args.iters, tol=0, seed=r), corpus))
        de.append(per_iteration(DenseHMM(45, 32, fit_method="em", n_iter=args.iters, tol=0, seed=r,
                                         symbol_features="orthographic"), corpus))
        with one_thread():
            de1.append(per_iteration(DenseHMM(45, 32, fit_method="em", n_iter=args.iters, tol=0, seed=r,
                                              symbol_features="orthographic"), corpus))
        de64.append(per_iteration(DenseHMM(45, 32, fit_method="em", n_iter=args.iters, tol=0, seed=r,
                                           symbol_features="orthographic", mstep_dtype="float64"), corpus))
        print(f"repeat {r}: Baum-Welch {bw[-1][0]:.3f} s/iter ({bw[-1][1]:.3f} CPU), DenseHMM-EM "
              f"{de[-1][0]:.3f} s/iter ({de[-1][1]:.3f} CPU), on one thread {de1[-1][0]:.3f} s/iter "
              f"({de1[-1][1]:.3f} CPU), float64 M-step {de64[-1][0]:.3f} s/iter ({de64[-1][1]:.3f} CPU)", flush=True)
    res["dense_em_one_thread_s_per_iter"] = float(np.median([v[0] for v in de1]))
    res["ratio_one_thread"] = res["dense_em_one_thread_s_per_iter"] / float(np.median([v[0] for v in bw]))
    res["dense_em_float64_cpu_s_per_iter"] = float(np.median([v[1] for v in de64]))
    res["ratio_cpu_float64"] = res["dense_em_float64_cpu_s_per_iter"] / float(np.median([v[1] for v in bw]))
    for key, vals in (("baum_welch", bw), ("dense_em", de)):
        res[f"{key}_s_per_iter"] = float(np.median([v[0] for v in vals]))
        res[f"{key}_cpu_s_per_iter"] = float(np.median([v[1] for v in vals]))
    res["ratio"] = res["dense_em_s_per_iter"] / res["baum_welch_s_per_iter"]
    res["ratio_cpu"] = res["dense_em_cpu_s_per_iter"] / res["baum_welch_cpu_s_per_iter"]
    print(f"median: Baum-Welch {res['baum_welch_s_per_iter']:.3f} s/iter ({res['baum_welch_cpu_s_per_iter']:.3f} CPU), "
          f"DenseHMM-EM {res['dense_em_s_per_iter']:.3f} s/iter ({res['dense_em_cpu_s_per_iter']:.3f} CPU), "
          f"ratio {res['ratio']:.2f} wall, {res['ratio_cpu']:.2f} CPU (target <= 1.5); float64 M-step "
          f"{res['dense_em_float64_cpu_s_per_iter']:.3f} CPU s/iter, ratio {res['ratio_cpu_float64']:.2f} CPU; "
          f"on one thread {res['dense_em_one_thread_s_per_iter']:.3f} s/iter, ratio {res['ratio_one_thread']:.2f}")
    # diagnostics against one iteration
    train, test = corpus.split(0.5, seed=0)
    model = DenseHMM(45, 32, fit_method="em", n_iter=1, tol=0, seed=0, symbol_features="orthographic")
    model.fit(train)
    eng = model._engine()
    diag = _Diagnostics(eng, list(train.sequences), model.n_symbols,
                        eng.prepare(list(test.sequences), n_states=45))
    pi, A, B = model.startprob_, model.transmat_, model.emissionprob_
    it_train = per_iteration(DenseHMM(45, 32, fit_method="em", n_iter=4, tol=0, seed=0,
                                      symbol_features="orthographic", diagnostics_every=1000), train)[1]
    times = []
    for _ in range(3):
        t0 = time.process_time()
        diag(pi, A, B)
        times.append(time.process_time() - t0)
    res["diagnostics_s"] = float(np.median(times))
    res["iteration_on_half_s"] = it_train
    res["diagnostics_share_at_default"] = res["diagnostics_s"] / (DIAGNOSTICS_EVERY * it_train)
    print(f"diagnostics (MAD + test NLL on half the sentences) {res['diagnostics_s']:.3f} s CPU vs an iteration on the "
          f"other half {it_train:.3f} s CPU: every {DIAGNOSTICS_EVERY} iterations they cost "
          f"{100 * res['diagnostics_share_at_default']:.1f}% (target <= 5%)")
    res["start"] = start_in_fresh_process(args.data)
    print(f"fresh process: first event {res['start']['first_event_s']:.2f} s after fit (target <= 2 s), "
          f"TensorFlow imported: {res['start']['tensorflow_imported']}, start: {res['start']['start']}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

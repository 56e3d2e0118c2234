"""DenseHMM training benchmark (issue 3).

Run:  .venv/bin/python tests/benchmarks/bench_dense.py [--repeats 3] [--skip-large] [--json out.json]

1. Co-occurrence fit, paper protocol: 10,000 Adam steps (preset "paper", no early stop),
   n=10, m=20, l=5, on the analytic Omega of a random DenseHMM.  Target <= 2 s.
   Also the default preset (Adam + Levenberg-Marquardt finish) on the same problem.
2. The same for n=100, m=1000, l=32 (Adam steps timed on a shorter run and extrapolated,
   plus a short default-preset run whose finish is L-BFGS).
3. Dense EM: one EM iteration (E-step + 25-step Adam M-step + bookkeeping) against the
   E-step alone (engine.statistics), n=10, m=20, l=5, 512k tokens.  Target ratio <= 1.2.

Load matters on a shared machine: the script prints the 1-minute load average.
Times are medians over ``--repeats`` warm runs (the first call of a shape traces the
tf.function; that cost is printed separately).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from densehmm_core.dense import DenseHMM, init_embeddings  # noqa: E402


def gt_model(n, m, l, seed=0):
    return DenseHMM(n, l, m).set_embeddings(init_embeddings(n, m, l, np.random.default_rng(seed)))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def bench_cooc(n, m, l, repeats, steps=10000, full=True):
    omega = gt_model(n, m, l).model_omega()
    res = {"n": n, "m": m, "l": l}

    def paper(k):
        return DenseHMM(n, l, seed=1, preset="paper", cooc_steps=k).fit_cooc(omega)
    first, _ = timed(lambda: paper(10))
    res["first_call_trace_s"] = first
    k = steps if full else 200
    times = []
    for _ in range(repeats):
        t, model = timed(lambda: paper(k))
        times.append(t)
    res["paper_steps_timed"] = k
    res["paper_median_s"] = statistics.median(times)
    res["paper_per_step_ms"] = 1e3 * res["paper_median_s"] / k
    res["paper_10k_s"] = res["paper_per_step_ms"] * 10.0
    res["paper_mad"] = model.history_[-1]["mad"]
    if full:
        first, _ = timed(lambda: DenseHMM(n, l, seed=1, preset="paper", cooc_steps=10, jit=True).fit_cooc(omega))
        res["paper_jit_first_call_compile_s"] = first
        tj = [timed(lambda: DenseHMM(n, l, seed=1, preset="paper", jit=True).fit_cooc(omega))[0]
              for _ in range(repeats)]
        res["paper_jit_median_s"] = statistics.median(tj)
        t, model = timed(lambda: DenseHMM(n, l, seed=1).fit_cooc(omega))
        res["default_s"] = t
        res["default_mad"] = model.history_[-1]["mad"]
        res["default_steps"] = model.history_[-1]["step"]
    else:
        t, model = timed(lambda: DenseHMM(n, l, seed=1, cooc_steps=200, finish_steps=50).fit_cooc(omega))
        res["default_short_s (200 Adam + 50 L-BFGS)"] = t
        res["default_short_mad"] = model.history_[-1]["mad"]
    return res


def bench_em(n, m, l, tokens, repeats, seq_len=500, jit=False):
    """EM iteration time vs. the E-step time INSIDE the same iterations (the engine's
    ``statistics`` is wrapped with a timer), so machine noise hits both alike; plus the
    E-step alone on the initial model."""
    from densehmm_core.engine import get_engine
    gt = gt_model(n, m, l, seed=3)
    seqs, _ = gt.sample(tokens // seq_len, seq_len, seed=0)
    eng = get_engine("numpy")
    init = DenseHMM(n, l, m, seed=5).init_embeddings()
    data = eng.prepare(seqs, n_states=n)
    estep = []
    for _ in range(repeats):
        t, _ = timed(lambda: eng.statistics(init.startprob_, init.transmat_, init.emissionprob_, data))
        estep.append(t)
    model = DenseHMM(n, l, fit_method="em", seed=5, n_iter=1, tol=0.0, jit=jit)
    model.fit(seqs[:4])  # trace the M-step graph for this shape
    iters = max(5, repeats)
    model = DenseHMM(n, l, fit_method="em", seed=5, n_iter=iters, tol=0.0, jit=jit)
    stat_times = []
    original = eng.statistics

    def timed_statistics(*a, **k):
        t0 = time.perf_counter()
        out = original(*a, **k)
        stat_times.append(time.perf_counter() - t0)
        return out
    eng.statistics = timed_statistics
    events = []
    try:
        t_total, _ = timed(lambda: model.fit(seqs, callback=events.append))
    finally:
        del eng.statistics
    # event k (k >= 1) closes iteration k: M-step k + E-step k (stat_times[k]) + bookkeeping
    it_ev = [e for e in events if not e.done]
    per_iter = [b.elapsed - a.elapsed for a, b in zip(it_ev[:-1], it_ev[1:])]
    ratios = [d / stat_times[k + 1] for k, d in enumerate(per_iter)]
    res = {"n": n, "m": m, "l": l, "jit": jit, "tokens": int(sum(len(s) for s in seqs)),
           "estep_alone_median_s": statistics.median(estep),
           "estep_in_fit_median_s": statistics.median(stat_times[1:]),
           "em_iteration_median_s": statistics.median(per_iter),
           "ratio_em_iteration_over_estep_median": statistics.median(ratios),
           "fit_total_s": t_total, "em_iterations": iters}
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-large", action="store_true", help="skip n=100, m=1000, l=32")
    ap.add_argument("--tokens", type=int, default=512_000)
    ap.add_argument("--em-only", action="store_true", help="only the EM benchmark")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    out = {"loadavg_start": os.getloadavg()[0], "cpus": os.cpu_count()}
    print(f"load average {out['loadavg_start']:.1f} on {out['cpus']} CPUs")
    if not args.em_only:
        out["cooc_small"] = r = bench_cooc(10, 20, 5, args.repeats)
        print(f"cooc paper protocol n=10 m=20 l=5: 10k Adam steps median {r['paper_median_s']:.3f} s "
              f"(target 2 s, ratio {r['paper_median_s'] / 2.0:.2f}); first call incl. tracing "
              f"{r['first_call_trace_s']:.2f} s; MAD {r['paper_mad']:.2e}")
        print(f"cooc paper protocol with jit=True (XLA): median {r['paper_jit_median_s']:.3f} s "
              f"(ratio to target {r['paper_jit_median_s'] / 2.0:.2f}, to non-jit "
              f"{r['paper_jit_median_s'] / r['paper_median_s']:.2f}); first call incl. XLA compile "
              f"{r['paper_jit_first_call_compile_s']:.2f} s")
        print(f"cooc default preset n=10 m=20 l=5: {r['default_s']:.3f} s, {r['default_steps']} steps, "
              f"MAD {r['default_mad']:.2e}")
        if not args.skip_large:
            out["cooc_large"] = r = bench_cooc(100, 1000, 32, max(1, args.repeats - 1), full=False)
            print(f"cooc n=100 m=1000 l=32: {r['paper_per_step_ms']:.2f} ms per Adam step "
                  f"(10k steps ~ {r['paper_10k_s']:.1f} s); short default run "
                  f"{r['default_short_s (200 Adam + 50 L-BFGS)']:.2f} s")
    for jit in (False, True):
        out["em_jit" if jit else "em"] = r = bench_em(10, 20, 5, args.tokens, args.repeats, jit=jit)
        print(f"dense EM n=10 m=20 l=5, {r['tokens']} tokens, jit={jit}: E-step alone "
              f"{r['estep_alone_median_s']:.3f} s, E-step inside the fit {r['estep_in_fit_median_s']:.3f} s, "
              f"EM iteration {r['em_iteration_median_s']:.3f} s, median ratio iteration/E-step "
              f"{r['ratio_em_iteration_over_estep_median']:.3f} (target <= 1.2)")
    out["loadavg_end"] = os.getloadavg()[0]
    print(f"load average at the end {out['loadavg_end']:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return out


if __name__ == "__main__":
    main()

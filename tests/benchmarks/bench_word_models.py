"""Word-level DenseHMM benchmark (issue 14).

Run:  nice -n 10 .venv/bin/python tests/benchmarks/bench_word_models.py [--iterations 100] [--skip-cooc]
          [--skip-em] [--dim 32] [--data FILE] [--json out.json] [--init spectral|random]

On the shared Penn Treebank sample (94,084 words without traces; 45 tags):

1. CPU time of a 45-state DenseHMM-EM fit with ``symbol_features="orthographic"`` (words as
   written, m = 11,968; spectral start and ``init_scale`` 0.2 as in ``reproduce pos-induction``;
   ``--init random`` for the random start) against Baum-Welch
   on the same words (same n, m and number of iterations), both
   measured in this run (target: ratio <= 5).  Both models are also scored (M-1 against the
   gold tags) -- one seed only; docs/RESULTS.md has the experiment over seeds.
2. The sparse co-occurrence fit (default preset: <= 1000 Adam steps + <= 500 L-BFGS
   iterations, early stopping) at m = 10,947 lower-cased words, n = 45: peak memory (the
   child process's maximum resident set size, TensorFlow included) and CPU time
   (targets: < 1.5 GB, < 5 minutes).

Each measurement runs in a fresh child process (so peak memory is its own); CPU time is
``time.process_time`` around ``fit`` (the TensorFlow import is outside).  The machine is
shared: the script prints the 1-minute load average; compare ratios, not seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PTB = ROOT.parent / "shared" / "data" / "pos" / "ptb_wsj_sample_combined.mrg"

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from densehmm_core.data import load
from densehmm_core.metrics import tagging_scores
what, data, iters, dim, init = {what!r}, {data!r}, {iters}, {dim}, {init!r}
# the EM comparison reads the words as written (same m for both models); the cooc fit lower-cases
corpus = load(data, observe="words", lowercase=(what == "dense-direct"))
n = corpus.n_tags
if what == "baum-welch":
    from densehmm_core.standard import StandardHMM
    model = StandardHMM(n, n_iter=iters, tol=0.0, seed=0, snapshot_every=10**9, init_method=init)
else:
    import densehmm_core.dense_tf  # import cost outside the timing
    from densehmm_core.dense import DenseHMM
    if what == "dense-em-feat":
        model = DenseHMM(n, dim, fit_method="em", n_iter=iters, tol=0.0, seed=0, init_scale=0.2,
                         symbol_features="orthographic", snapshot_every=10**9, init_method=init)
    else:
        model = DenseHMM(n, dim, fit_method="cooc", seed=0, sparse_cooc=True, snapshot_every=10**9)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, w0 = time.process_time(), time.perf_counter()
model.fit(corpus)
cpu, wall = time.process_time() - t0, time.perf_counter() - w0
s = tagging_scores(model.predict(corpus.sequences), corpus.tags, n_states=n, n_tags=corpus.n_tags)
print(json.dumps({{"what": what, "m": corpus.n_symbols, "n": n, "cpu_s": cpu, "wall_s": wall,
                  "m1": s["m1"], "steps": model.history_[-1]["step"],
                  "maxrss_mb_before_fit": rss0 / 1024.0,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}}))
"""


def child(what: str, data: str, iters: int, dim: int, init: str = "spectral") -> dict:
    code = CHILD.format(root=str(ROOT), what=what, data=data, iters=iters, dim=dim, init=init)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{what} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(PTB))
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--skip-em", action="store_true")
    ap.add_argument("--skip-cooc", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--init", choices=("spectral", "random"), default="spectral",
                    help="how both EM models start (default spectral, as reproduce pos-induction)")
    a = ap.parse_args()
    if not Path(a.data).is_file():
        print(f"data file not found: {a.data}")
        return 2
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}; 2-core machine shared with other jobs")
    res = {}
    if not a.skip_em:
        bw = child("baum-welch", a.data, a.iterations, a.dim, a.init)
        print(f"Baum-Welch        n={bw['n']} m={bw['m']} {a.iterations} it: CPU {bw['cpu_s']:.1f} s "
              f"(wall {bw['wall_s']:.1f} s), M-1 {bw['m1']:.3f}")
        de = child("dense-em-feat", a.data, a.iterations, a.dim, a.init)
        print(f"DenseHMM-EM+feat  n={de['n']} m={de['m']} l={a.dim} {a.iterations} it: CPU {de['cpu_s']:.1f} s "
              f"(wall {de['wall_s']:.1f} s), M-1 {de['m1']:.3f}")
        ratio = de["cpu_s"] / bw["cpu_s"]
        print(f"  CPU ratio DenseHMM-EM+features / Baum-Welch = {ratio:.2f}  (target <= 5: "
              f"{'met' if ratio <= 5 else 'NOT met'})")
        res.update(baum_welch=bw, dense_em_features=de, em_cpu_ratio=ratio)
    if not a.skip_cooc:
        co = child("dense-direct", a.data, a.iterations, a.dim)
        print(f"sparse cooc fit   n={co['n']} m={co['m']} l={a.dim} ({co['steps']} steps): CPU {co['cpu_s']:.1f} s "
              f"(wall {co['wall_s']:.1f} s), peak RSS {co['maxrss_mb']:.0f} MB "
              f"({co['maxrss_mb_before_fit']:.0f} MB before the fit), M-1 {co['m1']:.3f}")
        ok = co["maxrss_mb"] < 1536 and co["cpu_s"] < 300
        print(f"  target < 1.5 GB and < 5 min: {'met' if ok else 'NOT met'}")
        res.update(sparse_cooc=co)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

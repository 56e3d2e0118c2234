"""Benchmark: the numpy engine (CPU) vs the CuPy engine (GPU), measured in the same run.

Run from the repository root::

    .venv/bin/python tests/benchmarks/bench_gpu.py                 # full run (needs a GPU for the GPU side)
    .venv/bin/python tests/benchmarks/bench_gpu.py --quick         # tiny sizes (a check of the script)
    .venv/bin/python tests/benchmarks/bench_gpu.py --quick --fake-gpu   # no GPU: the GPU engine's
                                                                   # code path on numpy instead of CuPy
                                                                   # (strict device arrays, tests/strictdev.py)

On the GPU test machine use ``tests/benchmarks/gpu_check.sh`` (it also runs the
engine tests on CuPy).  Without a working CuPy the GPU columns say why and only
the numpy side is measured (or, with ``--fake-gpu``, the GPU engine's code path
runs on numpy: its timings say nothing about a GPU).

Part 1, E-step: one ``Engine.statistics`` call (forward-backward + expected counts)
for n in {10, 45, 256, 1024} states and m in {20, 10000} symbols on about 1M
tokens (sentences of 5..50 tokens, Zipf-distributed symbols, seed 0; random
Dirichlet parameters).  The GPU engine runs on all tokens; the numpy engine runs
on all of them where that takes a few seconds and on a prefix of the sequences
otherwise (n >= 256: its cost is linear in the tokens, so tokens per second is
the comparable figure, and seconds per 1M-token E-step are extrapolated and
marked ``*``).  Statistic: median wall time (for numpy also the process CPU time,
the steadier figure on a shared machine) of the repetitions after one
warm-up call (CuPy compiles its kernels on first use); preparation (sorting,
chunking, upload) is timed apart.  The GPU results are checked against numpy on
the numpy prefix (maximal relative difference of the counts and log-likelihoods).

Part 2, Baum-Welch fit: ``StandardHMM(45, n_symbols=11000)`` on about 100k tokens,
``engine="numpy"`` vs ``engine="cupy"``: median seconds per iteration (E-step
+ closed-form M-step; differences of the progress events' elapsed times after
the first iteration) and the final training log-likelihoods of both.

Part 3, DenseHMM-EM fit: ``DenseHMM(45, 32, fit_method="em", symbol_features="orthographic")`` on
words (m = 11,000 symbols with word-like strings, so the orthographic features are real: shared
suffixes, capitals, digits, hyphens), 100k and 1M tokens of the same Zipf corpus, ``engine="numpy"`` vs
``engine="cupy"``: median seconds per EM iteration (E-step + 25 Adam steps of the array-module
M-step, all on the device) and the final training log-likelihoods of both.  Target (issue 22):
the GPU >= 30x numpy at 1M tokens.  The numpy side's M-step runs on two threads when this process's
budget allows (``densehmm_core.threads.cpu_threads``, printed with the machine); its E-step on one.

``--json PATH`` writes every figure, with the machine, card and versions.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from densehmm_core.engine.numpy_engine import NumpyEngine  # noqa: E402

FULL = {"tokens": 1_000_000, "states": [10, 45, 256, 1024], "symbols": [20, 10_000],
        "fit": {"n": 45, "m": 11_000, "tokens": 100_000, "iters": 5},
        "dense": {"n": 45, "l": 32, "m": 11_000, "tokens": [100_000, 1_000_000], "iters": 4},
        # flop budget of one numpy E-step (about 6 n^2 flops per token): sets the numpy prefix
        "numpy_flops": 3e10, "reps": 3}
QUICK = {"tokens": 30_000, "states": [10, 45], "symbols": [20, 1000],
         "fit": {"n": 45, "m": 1100, "tokens": 10_000, "iters": 3},
         "dense": {"n": 45, "l": 8, "m": 1100, "tokens": [10_000], "iters": 3},
         "numpy_flops": 1e9, "reps": 2}


def make_corpus(n_tokens: int, m: int, seed: int = 0):
    """Sentences of 5..50 tokens with Zipf(1)-distributed symbols, about ``n_tokens`` in all."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 51, size=int(n_tokens / 27.5) + 1)
    lengths = lengths[np.cumsum(lengths) <= n_tokens] if lengths.sum() > n_tokens else lengths
    p = 1.0 / np.arange(1, m + 1)
    p /= p.sum()
    flat = rng.choice(m, size=int(lengths.sum()), p=p)
    return np.split(flat, np.cumsum(lengths)[:-1])


def random_params(n: int, m: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(n)), rng.dirichlet(np.full(n, 0.5), size=n), rng.dirichlet(np.full(m, 0.5), size=n)


def prefix(seqs, max_tokens: int):
    """The first sequences holding at most ``max_tokens`` tokens (at least one sequence)."""
    cum = np.cumsum([len(s) for s in seqs])
    return seqs[:max(1, int(np.searchsorted(cum, max_tokens, side="right")))]


def timed(fn, reps: int, warmup: int = 1):
    """Median wall and process CPU seconds of ``reps`` calls after ``warmup`` calls, and the last result."""
    for _ in range(warmup):
        out = fn()
    walls, cpus = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)), float(np.median(cpus)), out


def gpu_engine(fake: bool):
    """(engine or None, description): the CuPy engine, or its code path on numpy with --fake-gpu."""
    if fake:   # the tests' strict device arrays: the GPU branches under CuPy's rules (tests/strictdev.py)
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
        from strictdev import strict_backend

        from densehmm_core.engine.cupy_engine import CupyEngine
        return (CupyEngine(backend=strict_backend(free_bytes=lambda: 4 << 30)),
                "fake: the GPU engine's code path on numpy arrays that follow CuPy's rules")
    from densehmm_core.engine.backend import cupy_status
    ok, reason = cupy_status(0)
    if not ok:
        return None, reason
    from densehmm_core.engine import get_engine
    return get_engine("cupy", device=0), "cupy on GPU 0"


def machine_info(fake: bool) -> dict:
    info = {"python": platform.python_version(), "numpy": np.__version__, "cpu_count": os.cpu_count(),
            "platform": platform.platform(), "fake_gpu": fake}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    try:
        import scipy
        info["scipy"] = scipy.__version__
    except ImportError:
        pass
    if not fake:
        try:
            import cupy
            info["cupy"] = cupy.__version__
            props = cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            info["gpu_memory_gib"] = round(props["totalGlobalMem"] / 2 ** 30, 1)
            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        except Exception as e:  # noqa: BLE001 - no CuPy or no GPU: recorded, not fatal
            info["gpu"] = f"unavailable ({type(e).__name__})"
    return info


def max_rel_diff(a, b) -> float:
    """Largest |a - b| / max(|b|, 1e-300) over the entries where b is not negligible."""
    out = 0.0
    for x, y in ((a.start, b.start), (a.trans, b.trans), (a.emit, b.emit), (a.loglik, b.loglik)):
        x, y = np.asarray(x).ravel(), np.asarray(y).ravel()
        keep = np.abs(y) > 1e-12 * max(1.0, float(np.abs(y).max()))
        if keep.any():
            out = max(out, float(np.max(np.abs(x[keep] - y[keep]) / np.abs(y[keep]))))
    return out


def bench_estep(cfg, gpu, reps):
    rows = []
    for m in cfg["symbols"]:
        seqs = make_corpus(cfg["tokens"], m)
        n_tok = sum(len(s) for s in seqs)
        for n in cfg["states"]:
            pi, A, B = random_params(n, m)
            row = {"n": n, "m": m, "tokens": n_tok, "sequences": len(seqs)}
            # numpy on a prefix sized to the flop budget (all tokens for small n)
            sub = prefix(seqs, int(cfg["numpy_flops"] / (6 * n * n)))
            cpu = NumpyEngine()
            t0 = time.perf_counter()
            prep = cpu.prepare(sub, n)
            row["numpy_prepare_s"] = time.perf_counter() - t0
            row["numpy_tokens"] = prep.n_tokens
            np_reps = reps if prep.n_tokens * n * n * 6 < 1e10 else 1
            row["numpy_s"], row["numpy_cpu_s"], ref = timed(lambda: cpu.statistics(pi, A, B, prep), np_reps,
                                                            warmup=1 if np_reps > 1 else 0)
            row["numpy_cpu_s_per_1M"] = row["numpy_cpu_s"] * 1e6 / prep.n_tokens
            row["numpy_tok_per_s"] = prep.n_tokens / row["numpy_s"]
            row["numpy_s_per_1M"] = row["numpy_s"] * 1e6 / prep.n_tokens
            if gpu is not None:
                t0 = time.perf_counter()
                gprep = gpu.prepare(seqs, n)
                row["gpu_prepare_s"] = time.perf_counter() - t0
                row["gpu_chunks"] = len(gprep.chunks)
                row["gpu_s"], _, _ = timed(lambda: gpu.statistics(pi, A, B, gprep), reps)
                row["gpu_tok_per_s"] = n_tok / row["gpu_s"]
                row["gpu_s_per_1M"] = row["gpu_s"] * 1e6 / n_tok
                row["speedup"] = row["gpu_tok_per_s"] / row["numpy_tok_per_s"]
                row["max_rel_diff"] = max_rel_diff(gpu.statistics(pi, A, B, gpu.prepare(sub, n)), ref)
                del gprep
            rows.append(row)
            print_row(row, gpu is not None)
    return rows


def print_row(r, with_gpu):
    star = "*" if r["numpy_tokens"] < r["tokens"] else " "
    line = (f"n={r['n']:5d} m={r['m']:6d}  numpy {r['numpy_s_per_1M']:9.3f} s/1M{star} "
            f"(CPU time {r['numpy_cpu_s_per_1M']:9.3f}) {r['numpy_tok_per_s']:10.0f} tok/s "
            f"({r['numpy_tokens']} tokens)")
    if with_gpu:
        line += (f" | gpu {r['gpu_s_per_1M']:8.4f} s/1M {r['gpu_tok_per_s']:12.0f} tok/s "
                 f"({r['gpu_chunks']} chunk(s), prepare {r['gpu_prepare_s']:.2f} s) | "
                 f"x{r['speedup']:7.1f}  max rel diff {r['max_rel_diff']:.1e}")
    print(line, flush=True)


def bench_fit(cfg, gpu, fake):
    from densehmm_core.standard import StandardHMM
    f = cfg["fit"]
    seqs = make_corpus(f["tokens"], f["m"], seed=2)
    out = {"n": f["n"], "m": f["m"], "tokens": sum(len(s) for s in seqs), "iterations": f["iters"]}
    sides = [("numpy", "numpy", "cpu")] + ([("gpu", "cupy", "gpu")] if gpu is not None else [])
    for side, engine, device in sides:
        model = StandardHMM(f["n"], n_symbols=f["m"], n_iter=f["iters"], tol=-np.inf, seed=0,
                            engine=engine if not (fake and side == "gpu") else "numpy", device=device)
        if fake and side == "gpu":
            model._engine = lambda: gpu          # the GPU code path on numpy (benchmark check only)
        t0 = time.perf_counter()
        elapsed = [ev.elapsed for ev in model.iter_fit(seqs) if ev.phase != "start"]   # not the start's progress
        out[f"{side}_total_s"] = time.perf_counter() - t0
        steps = np.diff(elapsed)[1:] if len(elapsed) > 2 else np.diff(elapsed)
        out[f"{side}_s_per_iter"] = float(np.median(steps))
        out[f"{side}_final_ll"] = float(model.history_[-1]["train_ll"])
    if gpu is not None:
        out["speedup"] = out["numpy_s_per_iter"] / out["gpu_s_per_iter"]
        out["final_ll_rel_diff"] = abs(out["gpu_final_ll"] - out["numpy_final_ll"]) / abs(out["numpy_final_ll"])
    line = (f"Baum-Welch n={out['n']} m={out['m']} {out['tokens']} tokens: numpy {out['numpy_s_per_iter']:.3f} "
            f"s/iter")
    if gpu is not None:
        line += (f" | gpu {out['gpu_s_per_iter']:.4f} s/iter | x{out['speedup']:.1f} | final ll rel diff "
                 f"{out['final_ll_rel_diff']:.1e}")
    print(line, flush=True)
    return out


def word_strings(m: int, seed: int = 3):
    """``m`` distinct word-like strings: stems with shared suffixes, some capitalised, some with digits
    or hyphens (what the orthographic features look at)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    suffixes = ["", "s", "ed", "ing", "ly", "er", "tion", "al"]
    out, seen = [], set()
    while len(out) < m:
        w = "".join(rng.choice(letters, size=int(rng.integers(2, 7)))) + suffixes[int(rng.integers(len(suffixes)))]
        r = rng.random()
        w = w.capitalize() if r < 0.15 else (w + str(int(rng.integers(10))) if r < 0.18 else
                                             (w + "-" + w[:2] if r < 0.2 else w))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def bench_dense(cfg, gpu, fake):
    from densehmm_core.data.corpus import Corpus
    from densehmm_core.dense import DenseHMM
    d = cfg["dense"]
    vocab = word_strings(d["m"])
    rows = []
    for tokens in d["tokens"]:
        seqs = make_corpus(tokens, d["m"], seed=4)
        corpus = Corpus([s.astype(np.int32) for s in seqs], vocab)
        out = {"n": d["n"], "l": d["l"], "m": d["m"], "tokens": corpus.n_tokens, "iterations": d["iters"]}
        sides = [("numpy", "numpy", "cpu")] + ([("gpu", "cupy", "gpu")] if gpu is not None else [])
        for side, engine, device in sides:
            model = DenseHMM(d["n"], d["l"], fit_method="em", n_iter=d["iters"], tol=0, seed=0,
                             symbol_features="orthographic",
                             engine=engine if not (fake and side == "gpu") else "numpy", device=device)
            if fake and side == "gpu":
                model._engine = lambda: gpu          # the GPU code path on numpy (benchmark check only)
            t0 = time.perf_counter()
            elapsed = [ev.elapsed for ev in model.iter_fit(corpus) if ev.phase != "start"]
            out[f"{side}_total_s"] = time.perf_counter() - t0
            out[f"{side}_first_event_s"] = elapsed[0]
            out[f"{side}_s_per_iter"] = float(np.median(np.diff(elapsed)[1:]))
            out[f"{side}_final_ll"] = float(model.history_[-1]["train_ll"])
        line = (f"DenseHMM-EM n={out['n']} l={out['l']} m={out['m']} features {out['tokens']} tokens: numpy "
                f"{out['numpy_s_per_iter']:.3f} s/iter")
        if gpu is not None:
            out["speedup"] = out["numpy_s_per_iter"] / out["gpu_s_per_iter"]
            out["final_ll_rel_diff"] = abs(out["gpu_final_ll"] - out["numpy_final_ll"]) / abs(out["numpy_final_ll"])
            line += (f" | gpu {out['gpu_s_per_iter']:.4f} s/iter | x{out['speedup']:.1f} | final ll rel diff "
                     f"{out['final_ll_rel_diff']:.1e}")
        print(line, flush=True)
        rows.append(out)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (checks the script, not a measurement)")
    ap.add_argument("--fake-gpu", action="store_true",
                    help="run the GPU engine's code path on numpy (no GPU needed; timings mean nothing)")
    ap.add_argument("--json", metavar="PATH", help="write all figures as JSON")
    ap.add_argument("--skip-fit", action="store_true", help="E-step part only")
    ap.add_argument("--skip-dense", action="store_true", help="no DenseHMM-EM part")
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    gpu, gpu_desc = gpu_engine(args.fake_gpu)
    info = machine_info(args.fake_gpu)
    from densehmm_core.threads import cpu_threads
    info["cpu_threads"] = cpu_threads()      # the numpy M-step uses min(2, this)
    print(f"machine: {info}", flush=True)
    print(f"GPU side: {gpu_desc}", flush=True)
    print("E-step (Engine.statistics), median wall time; * = numpy extrapolated from the tokens shown", flush=True)
    res: dict = {"machine": info, "gpu_side": gpu_desc, "quick": args.quick}

    def part(name, run):
        # the JSON is written after every part: a run stopped by its time limit keeps what it measured
        res[name] = run()
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(res, indent=1))
    part("estep", lambda: bench_estep(cfg, gpu, cfg["reps"]))
    if not args.skip_fit:
        part("fit", lambda: bench_fit(cfg, gpu, args.fake_gpu))
    if not args.skip_dense:
        part("dense_em", lambda: bench_dense(cfg, gpu, args.fake_gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())

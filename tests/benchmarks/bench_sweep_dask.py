#!/usr/bin/env python
"""Sweep overhead of the Dask executor, and what its TLS costs (issue 25).

Runs the same small sweeps into fresh temporary folders with

* ``thread x2``: ``--executor thread --jobs 2`` (the baseline);
* ``dask x2 (TLS)``: ``--executor dask --jobs 2`` as shipped: a local cluster with temporary
  TLS credentials, every listener on 127.0.0.1;
* ``dask x2 (no TLS)``: the same cluster without TLS (this script replaces
  ``Security.temporary`` by a plain ``Security()`` in that child process only; the product has
  no such switch), to isolate the cost of TLS;
* ``dask 1 process x 2 threads`` (only with ``--variants``): the cluster patched to one worker
  process of two threads in that child process only (not the product; docs/PERFORMANCE.md says
  why);

and prints each command's wall time (median of ``--rounds``, variants alternating) and its
ratio to the thread executor's, measured in the same run.

    .venv/bin/python tests/benchmarks/bench_sweep_dask.py [--rounds 3] [--sweeps quick,pdb] [--micro]
        [--variants "dask x2 (TLS),dask x2 (no TLS)"] [--baseline DIR]

Each command runs as ``densehmm`` does (its stderr filter on).  ``--baseline DIR`` adds
``dask x2 (TLS)`` run with the code of another checkout (e.g. ``git archive COMMIT | tar -x -C DIR``)
to the same alternation, for a before/after comparison under the same load.

Sweeps: ``quick`` = ``reproduce synthetic --quick`` (the quick grid: (n, l) = (3, 1), (3, 2),
five models with dense-direct-gt, 10 fits); ``pdb`` = the ``densehmm sweep`` of docs/DISTRIBUTED.md's scaling
table (24 Baum-Welch fits on the 1,000-record PDB sample; skipped without the shared data).
``--micro`` first times TLS alone in this process (cluster start, tiny task round trips, a
scatter), the cost that a loaded machine's noise hides in whole sweeps.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PDB = os.path.join(os.path.dirname(REPO), "shared", "data", "proteins",
                   "pdb_seqres_2022_09_28__subsampled_1000.fasta")

SWEEPS = {
    "quick": ["reproduce", "synthetic", "--quick"],
    "pdb": ["sweep", PDB, "--preset", "paper_protein", "--grid", "n=3,5,10 l=2,3 model=standard,standard-fair",
            "--repeats", "2", "-q"],
}
VARIANTS = {
    "thread x2": (["--executor", "thread", "--jobs", "2"], "tls"),
    "dask x2 (TLS)": (["--executor", "dask", "--jobs", "2"], "tls"),
    "dask x2 (no TLS)": (["--executor", "dask", "--jobs", "2"], "plain"),
    # not the product: one worker process with two threads (docs/PERFORMANCE.md says why not)
    "dask 1 process x 2 threads": (["--executor", "dask", "--jobs", "2"], "1x2"),
}
# the command as `densehmm ...` runs it (main() reads sys.argv: the command's stderr filter is on)
CHILD = ("import sys\n"
         "if sys.argv[1] == 'plain':\n"
         "    from distributed.security import Security\n"
         "    Security.temporary = classmethod(lambda cls, **kw: cls())   # this benchmark only\n"
         "if sys.argv[1] == '1x2':\n"
         "    import distributed\n"
         "    _init = distributed.LocalCluster.__init__\n"
         "    def init(self, *a, **k):   # this benchmark only\n"
         "        k.update(n_workers=1, threads_per_worker=2)\n"
         "        _init(self, *a, **k)\n"
         "    distributed.LocalCluster.__init__ = init\n"
         "from densehmm_core.cli import main\n"
         "sys.argv[:] = ['densehmm', *sys.argv[2:]]\n"
         "sys.exit(main())\n")


def run_once(sweep: str, variant: str, baseline: str = "") -> float:
    """One command's wall time; ``baseline``: the variant runs the code of that checkout."""
    name, _, at = variant.partition(" @ ")
    extra, mode = VARIANTS[name]
    repo = baseline if at else REPO
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-c", CHILD, mode, *SWEEPS[sweep], "--out", tmp, *extra]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=repo, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": repo})
        return time.perf_counter() - t0


def micro(rounds: int, tasks: int = 200) -> None:
    """TLS alone, in this process: the local cluster's start (2 workers), ``tasks`` tiny task
    round trips and a scatter of a 1.9 MB corpus to both workers, with and without TLS."""
    import numpy as np
    from distributed.security import Security

    from densehmm_core.experiments.dask_executor import connect
    shipped = Security.temporary
    corpus = [np.arange(240_771, dtype=np.int64)]   # the PDB sample's size after paper_protein
    times: dict = {v: {"start": [], "tasks": [], "scatter": []} for v in ("TLS", "no TLS")}
    try:
        for _ in range(rounds):
            for v in times:
                Security.temporary = shipped if v == "TLS" else classmethod(lambda cls, **kw: cls())
                t0 = time.perf_counter()
                client, cluster = connect(2)
                t1 = time.perf_counter()
                client.gather([client.submit(abs, -i, pure=False) for i in range(tasks)])
                t2 = time.perf_counter()
                client.scatter(corpus, broadcast=True, hash=False)
                t3 = time.perf_counter()
                client.close()
                cluster.close()
                for k, dt in (("start", t1 - t0), ("tasks", t2 - t1), ("scatter", t3 - t2)):
                    times[v][k].append(dt)
    finally:
        Security.temporary = shipped
    print(f"\nmicro: local cluster of 2 workers, median of {rounds} (TLS and no TLS alternating)")
    for k, what in (("start", "cluster start (s)"), ("tasks", f"{tasks} tiny tasks (s)"),
                    ("scatter", "scatter 1.9 MB to 2 workers (s)")):
        tls, plain = statistics.median(times["TLS"][k]), statistics.median(times["no TLS"][k])
        print(f"  {what:<34} TLS {tls:6.3f}   no TLS {plain:6.3f}   difference {tls - plain:+6.3f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sweeps", default="quick,pdb")
    ap.add_argument("--micro", action="store_true", help="also time TLS alone (start, task round trips, scatter)")
    ap.add_argument("--variants", default="dask x2 (TLS),dask x2 (no TLS)",
                    help=f"comma-separated, of: {', '.join(VARIANTS)} (thread x2 is always run)")
    ap.add_argument("--baseline", default="", metavar="DIR",
                    help="also run 'dask x2 (TLS)' with the code of another checkout (e.g. of an older commit)")
    a = ap.parse_args()
    variants = ["thread x2"] + [v for v in a.variants.split(",") if v and v != "thread x2"]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s): {', '.join(unknown)}")
    if a.baseline:
        variants.append(f"dask x2 (TLS) @ {os.path.basename(os.path.abspath(a.baseline))}")
    print(f"cpu cores visible: {len(os.sched_getaffinity(0))}; load average at start: {os.getloadavg()}")
    if a.micro:
        sys.path.insert(0, REPO)
        micro(max(a.rounds, 5))
    for sweep in filter(None, a.sweeps.split(",")):
        if sweep == "pdb" and not os.path.isfile(PDB):
            print(f"\n{sweep}: skipped ({PDB} not found)")
            continue
        times: dict = {v: [] for v in variants}
        loads = []
        for _ in range(a.rounds):
            for v in variants:
                times[v].append(run_once(sweep, v, a.baseline))
            loads.append(os.getloadavg()[0])
        base = statistics.median(times["thread x2"])
        print(f"\n{sweep}: command wall time incl. start-up (median of {a.rounds}; 1-min load after each round: "
              f"{', '.join(f'{x:.1f}' for x in loads)})", flush=True)
        for v, ts in times.items():
            med = statistics.median(ts)
            print(f"  {v:<17} {med:7.1f} s   vs thread x2: {med / base:4.2f}x   "
                  f"(runs: {', '.join(f'{t:.1f}' for t in ts)})", flush=True)
        ratios = [d / t for d, t in zip(times.get("dask x2 (TLS)", []), times["thread x2"])]
        if ratios:
            print(f"  dask x2 (TLS) / thread x2, round by round: {', '.join(f'{r:.2f}' for r in ratios)} "
                  f"(median {statistics.median(ratios):.2f}x)", flush=True)
        if "dask x2 (TLS)" in times and "dask x2 (no TLS)" in times:
            tls, plain = statistics.median(times["dask x2 (TLS)"]), statistics.median(times["dask x2 (no TLS)"])
            print(f"  TLS / no TLS: {tls / plain:4.2f}x", flush=True)
    print(f"\nload average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

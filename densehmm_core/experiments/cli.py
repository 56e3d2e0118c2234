"""``densehmm reproduce ...``: the paper's experiments from the command line.

Sub-commands: ``factorization``, ``synthetic``, ``protein``, ``medpost``, ``penn``.
Importing this module is cheap (no numpy-heavy work, no TensorFlow).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["add_reproduce_parser", "DEFAULT_DATA"]

_SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"

#: Default data files (used when ``--data`` is not given and the file exists).
DEFAULT_DATA = {
    "protein": _SHARED / "proteins" / "pdb_seqres_2022_09_28__subsampled_1000.fasta",
    "penn": _SHARED / "pos" / "ptb_wsj_sample_combined.mrg",
    "medpost": None,  # tag_mb.ioc is not redistributable; pass --data
}

EXPERIMENTS = ("factorization", "synthetic", "protein", "medpost", "penn")


def add_reproduce_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``reproduce`` with its five sub-commands on an argparse sub-parser set."""
    p = subparsers.add_parser(
        "reproduce", help="reproduce the paper's experiments (CSV + figures)",
        description="Re-run the experiments of Sicking et al. (2020): the matrix-factorisation "
                    "table (Section 4) and the model comparison (Section 5) on synthetic, protein, "
                    "MedPost and Penn Treebank data.  Results go to --out as CSV plus PNG figures; "
                    "finished runs are skipped when the same command is run again.")
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    sub.required = True
    helps = {
        "factorization": "softmax vs normAbsLin factorisation of Dirichlet matrices (Section 4, appendix table)",
        "synthetic": "model comparison on sequences of random Dirichlet HMMs (Section 5)",
        "protein": "model comparison on amino-acid sequences (pdb_seqres FASTA, preset paper_protein)",
        "medpost": "model comparison on MedPost POS tags (tag_mb.ioc, preset paper_medpost)",
        "penn": "model comparison on the Penn Treebank sample (preset reference_code_penn)",
    }
    for name in EXPERIMENTS:
        sp = sub.add_parser(name, help=helps[name], description=helps[name])
        sp.add_argument("--out", metavar="DIR", default=None,
                        help=f"output folder (default: ./reproduce-results/{name})")
        sp.add_argument("--quick", action="store_true",
                        help="smoke-test mode: a small grid, few repeats and few steps")
        sp.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="parallel workers (default: the number of CPU cores)")
        sp.add_argument("--repeats", type=int, default=None, metavar="R",
                        help=("random restarts per ground-truth matrix (default 20; quick 3)"
                              if name == "factorization" else
                              "repetitions per (n, l) pair (default 10; quick 1)"))
        sp.add_argument("--seed", type=int, default=0, help="base seed of the sweep (default 0)")
        sp.add_argument("--report-only", action="store_true",
                        help="run nothing: rebuild the summary, tables and figures from the finished runs")
        sp.add_argument("--grid", default=None, metavar="N:L,...",
                        help="only these (n, l) pairs, e.g. 3:1,5:2 (default: the paper's grid)")
        sp.add_argument("--executor", choices=("process", "thread"), default="thread",
                        help="worker kind when --jobs > 1 (default: thread, measured faster here; "
                             "see docs/PERFORMANCE.md)")
        if name == "factorization":
            sp.add_argument("--matrices", type=int, default=None,
                            help="ground-truth matrices per (n, l) (default 10; quick 3)")
        else:
            if name != "synthetic":
                sp.add_argument("--data", metavar="PATH", default=None,
                                help="data file (default: the shared sample when present)"
                                + ("" if name != "medpost" else "; required: tag_mb.ioc"))
                sp.add_argument("--max-sequences", type=int, default=None, metavar="K",
                                help="use only the first K sequences after preprocessing")
            sp.add_argument("--dense-preset", choices=("paper", "default"), default="paper",
                            help="DenseHMM hyper-parameters: the paper's (default) or our tuned defaults")
            sp.add_argument("--models", default=None,
                            help="comma-separated subset of dense-em,dense-direct,standard,standard-fair")
        sp.set_defaults(func=_handler)
    return p


def _default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _handler(args) -> int:
    name = args.experiment
    out = Path(args.out) if args.out else Path("reproduce-results") / name
    jobs = args.jobs if args.jobs is not None else _default_jobs()
    if jobs < 1:
        print("error: --jobs must be >= 1")
        return 2
    if args.repeats is not None and args.repeats < 1:
        print("error: --repeats must be >= 1")
        return 2
    grid = None
    if args.grid:
        try:
            grid = tuple(tuple(int(x) for x in p.split(":")) for p in args.grid.split(",") if p.strip())
            if not grid or any(len(p) != 2 or min(p) < 1 for p in grid):
                raise ValueError
        except ValueError:
            print(f"error: --grid must look like 3:1,5:2 (n:l pairs of positive integers), got {args.grid!r}")
            return 2
    if name == "factorization":
        from .factorization import FactorizationSettings
        from .factorization import run_factorization
        kw = {"seed": args.seed}
        if grid:
            kw["grid"] = grid
        if args.repeats is not None:
            kw["n_restarts"] = args.repeats
        if getattr(args, "matrices", None) is not None:
            kw["n_matrices"] = args.matrices
        settings = FactorizationSettings.quick(**kw) if args.quick else FactorizationSettings(**kw)
        return run_factorization(settings, out, jobs=jobs, executor=args.executor,
                                 run=not args.report_only)

    from .comparison import ComparisonSettings
    from .comparison import run_comparison
    data = None
    if name != "synthetic":
        data = args.data or (DEFAULT_DATA.get(name) and str(DEFAULT_DATA[name]))
        if not data:
            print(f"error: reproduce {name} needs --data PATH (the MedPost file tag_mb.ioc is not "
                  "shipped with DenseHMM Studio)")
            return 2
        if not Path(data).is_file():
            print(f"error: data file not found: {data}")
            return 2
    kw = {"seed": args.seed, "dense_preset": args.dense_preset}
    if grid:
        kw["grid"] = grid
    if args.repeats is not None:
        kw["repeats"] = args.repeats
    if args.models:
        models = tuple(m.strip() for m in args.models.split(",") if m.strip())
        kw["models"] = models
    if name != "synthetic" and args.max_sequences is not None:
        kw["max_sequences"] = args.max_sequences
    try:
        settings = (ComparisonSettings.quick(name, data=data, **kw) if args.quick
                    else ComparisonSettings.full(name, data=data, **kw))
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    return run_comparison(settings, out, jobs=jobs, executor=args.executor, run=not args.report_only)

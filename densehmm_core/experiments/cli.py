"""``densehmm reproduce ...``: the paper's experiments from the command line.

Sub-commands: ``factorization``, ``synthetic``, ``protein``, ``medpost``, ``penn``,
``pos-induction`` (:mod:`densehmm_core.experiments.pos_induction`); and
``densehmm sweep DATA --grid ...``: the paper's kind of sweep on any data file.
Importing this module is cheap (no numpy-heavy work, no TensorFlow).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, Optional

from ..commandline import DATA_OPTION_DESTS, UserError
from ..config import shared_data

__all__ = ["add_reproduce_parser", "add_sweep_parser", "parse_grid", "DEFAULT_DATA"]

_SHARED = shared_data()

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
        _executor_options(sp)
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
    _add_pos_induction(sub)
    return p


def _add_pos_induction(sub) -> None:
    """``reproduce pos-induction`` (issue 14): unsupervised POS induction scored against gold tags."""
    from .pos_induction import MODELS as POS_MODELS
    text = ("unsupervised part-of-speech induction on words, scored against gold tags "
            "(M-1, 1-1, V-measure): Baum-Welch vs DenseHMM variants")
    sp = sub.add_parser("pos-induction", help=text, description=text + ".  See docs/RESULTS.md.")
    sp.add_argument("--data", metavar="FILE", default=None,
                    help="tagged corpus (default: the shared Penn Treebank sample when present)")
    sp.add_argument("--extra", metavar="FILE", action="append", default=[],
                    help="extra unlabelled text joining the training corpus (repeatable; not scored)")
    sp.add_argument("--out", metavar="DIR", default=None,
                    help="output folder (default: ./reproduce-results/pos-induction)")
    sp.add_argument("--quick", action="store_true",
                    help="smoke-test mode: 300 sentences, l=16, 1 seed, 5 iterations")
    sp.add_argument("--models", default=None,
                    help=f"comma-separated subset of {','.join(POS_MODELS)} (default: all)")
    sp.add_argument("--dims", default=None, metavar="L,...", help="embedding lengths (default 16,32,64)")
    sp.add_argument("--direct-dims", default=None, metavar="L,...",
                    help="embedding lengths of dense-direct and cooc-em (default: --dims)")
    sp.add_argument("--seeds", type=int, default=None, help="seeds per (model, l) (default 5)")
    sp.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    sp.add_argument("--iterations", type=int, default=None,
                    help="Baum-Welch / EM iterations, L-BFGS iterations of the direct fit (default 100)")
    sp.add_argument("--max-sequences", type=int, default=None, metavar="K",
                    help="use only the first K sentences")
    sp.add_argument("--init-scale", type=float, default=None, metavar="S",
                    help="DenseHMM: standard deviation of the initial embeddings (default 0.2)")
    sp.add_argument("--init", choices=("spectral", "random"), default="spectral",
                    help="how the DenseHMMs start: spectral (embeddings from the text's context counts, "
                         "docs/RESULTS.md section 4) or random (default: spectral)")
    sp.add_argument("--l2", type=float, default=None, metavar="LAMBDA",
                    help="L2 penalty of every DenseHMM's objective, EM and direct fit alike (default 0)")
    sp.add_argument("--sparsity", type=float, default=None, metavar="SIGMA",
                    help="sigma of the posterior-sparsity E-step of the -ps models (default 1)")
    sp.add_argument("--kappa", type=float, default=None, metavar="KAPPA",
                    help="L2 penalty of the full-logit models on the total log-likelihood "
                         "(l2 = KAPPA / tokens; default 1, Berg-Kirkpatrick et al.'s)")
    sp.add_argument("--jobs", type=int, default=1, metavar="N", help="parallel runs (default 1)")
    sp.add_argument("--executor", choices=("thread", "process"), default="thread",
                    help="with --jobs > 1: threads or worker processes (default: thread)")
    sp.add_argument("--report-only", action="store_true",
                    help="run nothing: rebuild the summary and table from the finished runs, with the "
                         "folder's own settings (its data file is not needed)")
    sp.set_defaults(func=_pos_handler)


def _pos_handler(args) -> int:
    from .pos_induction import MODELS, PosSettings, run_pos_induction
    data = args.data or (str(DEFAULT_DATA["penn"]) if DEFAULT_DATA["penn"].is_file() else None)
    if not data:
        raise UserError("reproduce pos-induction needs --data FILE (a tagged corpus)")
    for f in [data] + list(args.extra):
        if not Path(f).is_file():
            raise UserError(f"data file not found: {f}")
    kw: Dict[str, Any] = {"seed": args.seed, "extra": tuple(args.extra), "init_method": args.init}
    try:
        if args.models:
            kw["models"] = tuple(m.strip() for m in args.models.split(",") if m.strip())
            bad = [m for m in kw["models"] if m not in MODELS]
            if bad:
                raise ValueError(f"unknown model(s) {', '.join(bad)}; choose from {', '.join(MODELS)}")
        for opt, key in (("dims", "dims"), ("direct_dims", "direct_dims")):
            text = getattr(args, opt)
            if text:
                bad_dims = ValueError(f"--{opt.replace('_', '-')} must be positive integers, e.g. 16,32")
                try:
                    kw[key] = tuple(int(x) for x in text.split(",") if x.strip())
                except ValueError:
                    raise bad_dims from None
                if not kw[key] or min(kw[key]) < 1:
                    raise bad_dims
        for name, key in (("seeds", "seeds"), ("iterations", "n_iter"), ("max_sequences", "max_sequences")):
            v = getattr(args, name)
            if v is not None:
                if v < 1:
                    raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
                kw[key] = v
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.init_scale is not None:
        if not args.init_scale > 0:
            raise UserError("--init-scale must be > 0")
        kw["init_scale"] = args.init_scale
    if args.l2 is not None:
        if not (args.l2 >= 0 and args.l2 < float("inf")):
            raise UserError("--l2 must be a finite number >= 0")
        kw["l2"] = args.l2
    if args.kappa is not None:
        if not (args.kappa >= 0 and args.kappa < float("inf")):
            raise UserError("--kappa must be a finite number >= 0")
        kw["kappa"] = args.kappa
    if args.sparsity is not None:
        if not (args.sparsity > 0 and args.sparsity < float("inf")):
            raise UserError("--sparsity must be a finite number > 0")
        kw["sparsity"] = args.sparsity
    s = PosSettings.quick_settings(data, **kw) if args.quick else PosSettings(data=data, **kw)
    out = Path(args.out) if args.out else Path("reproduce-results") / "pos-induction"
    jobs = _cap_jobs(max(1, args.jobs), args.executor, None)
    return run_pos_induction(s, out, jobs=jobs, executor=args.executor, run=not args.report_only)


def _default_jobs() -> int:
    from ..threads import available_cpus
    return available_cpus()


#: ``--jobs`` above this many times the cores is lowered to it (with a note): more workers than
#: that only add memory (each worker process holds its own imports and data).
JOBS_PER_CORE = 4


def _cap_jobs(jobs: int, executor: str, scheduler: Optional[str]) -> int:
    """``jobs``, lowered to :data:`JOBS_PER_CORE` x the cores of this machine for work that runs
    here (not for a remote Dask scheduler), with a note on stderr."""
    if executor == "dask" and scheduler:
        return jobs
    cap = JOBS_PER_CORE * _default_jobs()
    if jobs > cap:
        print(f"note: --jobs {jobs} is more than {JOBS_PER_CORE} x the {_default_jobs()} cores here; "
              f"using {cap}", file=sys.stderr)
        return cap
    return jobs


#: A sweep and the comparison reproductions split the sequences into training and test sets.
MAX_SEQUENCES_ERROR = "--max-sequences must be >= 2 (the runs split the sequences into training and test sets)"


def _handler(args) -> int:
    name = args.experiment
    out = Path(args.out) if args.out else Path("reproduce-results") / name
    jobs = args.jobs if args.jobs is not None else _default_jobs()
    if jobs < 1:
        raise UserError("--jobs must be >= 1")
    jobs = _cap_jobs(jobs, args.executor, args.scheduler)
    if args.repeats is not None and args.repeats < 1:
        raise UserError("--repeats must be >= 1")
    grid = None
    if args.grid:
        try:
            grid = tuple(tuple(int(x) for x in p.split(":")) for p in args.grid.split(",") if p.strip())
            if not grid or any(len(p) != 2 or min(p) < 1 for p in grid):
                raise ValueError
        except ValueError:
            raise UserError(f"--grid must look like 3:1,5:2 (n:l pairs of positive integers), got {args.grid!r}")
    if name == "factorization":
        from .factorization import FactorizationSettings
        from .factorization import run_factorization
        kw: Dict[str, Any] = {"seed": args.seed}
        if grid:
            kw["grid"] = grid
        if args.repeats is not None:
            kw["n_restarts"] = args.repeats
        if getattr(args, "matrices", None) is not None:
            kw["n_matrices"] = args.matrices
        settings = FactorizationSettings.quick(**kw) if args.quick else FactorizationSettings(**kw)
        if args.executor == "dask":
            raise UserError("reproduce factorization runs on threads or processes only "
                            "(--executor thread|process)")
        return run_factorization(settings, out, jobs=jobs, executor=args.executor,
                                 run=not args.report_only)

    from .comparison import ComparisonSettings
    from .comparison import run_comparison
    data: Optional[str] = None
    if name != "synthetic":
        default = DEFAULT_DATA.get(name)
        data = args.data or (str(default) if default else None)
        if not data:
            raise UserError(f"reproduce {name} needs --data PATH (the MedPost file tag_mb.ioc is not "
                            "shipped with DenseHMM Studio)")
        if not Path(data).is_file():
            raise UserError(f"data file not found: {data}")
    kw = {"seed": args.seed, "dense_preset": args.dense_preset}
    if grid:
        kw["grid"] = grid
    if args.repeats is not None:
        kw["repeats"] = args.repeats
    if args.models:
        models = tuple(m.strip() for m in args.models.split(",") if m.strip())
        kw["models"] = models
    if name != "synthetic" and args.max_sequences is not None:
        if args.max_sequences < 2:
            raise UserError(MAX_SEQUENCES_ERROR)
        kw["max_sequences"] = args.max_sequences
    try:
        csettings = (ComparisonSettings.quick(name, data=data, **kw) if args.quick
                    else ComparisonSettings.full(name, data=data, **kw))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return _run_guarded(run_comparison, csettings, out, jobs=jobs, executor=args.executor,
                        run=not args.report_only, args=args,
                        save_models=getattr(args, "save_models", False))


def _executor_options(sp) -> None:
    sp.add_argument("--executor", choices=("process", "thread", "dask"), default="thread",
                    help="where the runs go: threads or processes of this machine (when --jobs > 1; "
                         "default: thread, measured faster here, see docs/PERFORMANCE.md) or a Dask "
                         "cluster (docs/DISTRIBUTED.md)")
    sp.add_argument("--scheduler", metavar="ADDRESS", default=None,
                    help="--executor dask: address of a running Dask scheduler, tcp://HOST:PORT or "
                         "tls://HOST:PORT; its results come back as pickles, so name only a cluster you "
                         "trust (default: a local cluster of --jobs worker processes, private to this "
                         "command: TLS with credentials made for the run, 127.0.0.1 only)")
    for opt, what in (("--tls-ca-file", "the CA certificate that signed the scheduler's certificate"),
                      ("--tls-cert", "this client's certificate, which may also hold its key"),
                      ("--tls-key", "this client's private key")):
        sp.add_argument(opt, metavar="PEM", default=None,
                        help=f"--scheduler tls://...: {what} (default: Dask's distributed.comm.tls settings)")
    sp.add_argument("--dashboard", action="store_true",
                    help="--executor dask, local cluster: also serve Dask's dashboard on 127.0.0.1 "
                         "(its address is printed; needs the bokeh package)")
    sp.add_argument("--save-models", action="store_true",
                    help="also save every run's model to DIR/models/RUN.h5 (with a remote cluster DIR "
                         "must be on storage the workers share)")


def _dask_target(args):
    """The :class:`~.dask_executor.DaskTarget` of the Dask options (which need ``--executor dask``)."""
    from .dask_executor import DaskTarget
    given = [opt for opt, v in (("--scheduler", args.scheduler), ("--tls-ca-file", args.tls_ca_file),
                                ("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key),
                                ("--dashboard", args.dashboard)) if v]
    if given and args.executor != "dask":
        raise ValueError(f"{given[0]} needs --executor dask")
    return DaskTarget(args.scheduler, args.tls_ca_file, args.tls_cert, args.tls_key, args.dashboard)


def _run_guarded(fn, *a, args, **kw) -> int:
    """Run a sweep; a Dask set-up problem (bad address or options, Dask missing) is a
    :class:`~densehmm_core.commandline.UserError` (one line, exit 2, printed by the command line)."""
    from .dask_executor import DaskMissingError, SchedulerError
    try:
        kw["scheduler"] = _dask_target(args).check()
    except (ValueError, SchedulerError) as exc:
        raise UserError(str(exc)) from None
    try:
        return fn(*a, **kw)
    except (SchedulerError, DaskMissingError) as exc:
        raise UserError(str(exc)) from None


# ------------------------------------------------------------------- sweep
GRID_HELP = ('the sweep, e.g. "n=3,5,10 l=1,2,3 model=dense-em,dense-cooc,standard,standard-fair": '
             "every combination of n (hidden states) and l (representation length) for each model")


def parse_grid(text: str):
    """``"n=3,5 l=1,2 model=dense-em,standard"`` -> ``((n, l) pairs, models)``
    (:func:`densehmm_core.grid.parse_grid`, with this command's model names).

    ``model`` defaults to all four sweep models; ``n`` and ``l`` are required.
    """
    from ..grid import parse_grid as parse
    from .comparison import SWEEP_MODELS
    try:
        grid, models = parse(text, SWEEP_MODELS)
    except ValueError as exc:
        raise ValueError(f"--grid: {exc}") from None
    return grid, models or tuple(SWEEP_MODELS)


def add_sweep_parser(subparsers, data_options, formatter_class=None) -> argparse.ArgumentParser:
    """Register ``densehmm sweep``; ``data_options(parser)`` adds the data options of ``train``."""
    kw = {} if formatter_class is None else {"formatter_class": formatter_class}
    p = subparsers.add_parser(
        "sweep", help="sweep n, l, models and seeds over one data file (CSV + figures)",
        description="The paper's kind of model comparison on any data file (FASTA or tagged corpus): "
                    "every (n, l) of --grid for each model, --repeats seeded repetitions, each on a "
                    "seeded 50:50 train/test split. Writes sweep_runs.csv (one row per run), "
                    "sweep_summary.csv, sweep_tables.md and PNG figures to --out; a rerun of the same "
                    "command runs only what is missing (a rerun with other result settings or other data, "
                    "or a second sweep on the same folder, is refused). Runs go to threads, processes or "
                    "a Dask cluster (docs/DISTRIBUTED.md).",
        epilog='example:\n  densehmm sweep seqs.fasta --preset paper_protein '
               '--grid "n=3,5,10 l=1,2,3 model=dense-em,standard" --repeats 5 --out sweep/ '
               '--executor dask --jobs 4', **kw)
    p.add_argument("data", metavar="DATA", help="data file (FASTA or tagged corpus)")
    p.add_argument("--grid", required=True, metavar="SPEC", help=GRID_HELP)
    p.add_argument("--repeats", type=int, default=3, metavar="R", help="seeded repetitions per run (default 3)")
    p.add_argument("--out", metavar="DIR", required=True, help="output folder")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="parallel workers (default: the number of CPU cores)")
    p.add_argument("--quick", action="store_true",
                   help="smoke-test mode: few iterations and steps, and only the first 60 sequences "
                        "(unless --max-sequences says)")
    p.add_argument("--dense-preset", choices=("paper", "default"), default="paper",
                   help="DenseHMM hyper-parameters: the paper's (default) or our tuned defaults")
    p.add_argument("--max-sequences", type=int, default=None, metavar="K",
                   help="use only the first K sequences after preprocessing")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: rebuild the summary, tables and figures from the finished runs")
    _executor_options(p)
    data_options(p)
    p.set_defaults(func=_sweep_handler)
    return p


#: The data options of ``sweep`` (those of ``train``) that change what a run sees: all of them.
#: every data flag (commandline.DATA_OPTION_DESTS, their one list): a sweep's settings record those given
SWEEP_DATA_OPTIONS = DATA_OPTION_DESTS


def sweep_data_options(args) -> dict:
    """The options the data were read with, for the sweep's settings (and so its resume key):
    every option given (a flag left off is left out, so folders made before it existed still
    resume) and the extra files by their content (size and SHA-256)."""
    from .runner import file_fingerprint
    options = {k: getattr(args, k, None) for k in SWEEP_DATA_OPTIONS}
    options = {k: v for k, v in options.items() if v is not None and v is not False}
    if options.get("format") == "auto":
        del options["format"]
    extra = getattr(args, "extra", None) or []
    if extra:
        options["extra"] = [file_fingerprint(f) for f in extra]
    return options


def _data_fingerprint(path: str, corpus) -> str:
    """The data's content as ``SIZE:SHA256`` of the file (of the sequences read, for standard input)."""
    from .runner import file_fingerprint
    if path != "-":
        return file_fingerprint(path)
    import hashlib
    h = hashlib.sha256()
    size = 0
    for x in corpus.sequences:
        b = x.astype("<i8").tobytes()
        size += len(b)
        h.update(len(b).to_bytes(8, "little") + b)
    h.update("\n".join(map(str, corpus.vocabulary)).encode("utf-8", "surrogatepass"))
    return f"stdin {size}:{h.hexdigest()}"


def _sweep_handler(args) -> int:
    import numpy as np

    from ..commandline import load_corpus as load_corpus_from_args
    from .comparison import ComparisonSettings, run_comparison
    try:
        grid, models = parse_grid(args.grid)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    jobs = args.jobs if args.jobs is not None else _default_jobs()
    if jobs < 1:
        raise UserError("--jobs must be >= 1")
    jobs = _cap_jobs(jobs, args.executor, args.scheduler)
    if args.repeats < 1:
        raise UserError("--repeats must be >= 1")
    if args.max_sequences is not None and args.max_sequences < 2:
        raise UserError(MAX_SEQUENCES_ERROR)
    fraction = 0.5 if args.split is None else float(args.split)
    if not 0.0 < fraction < 1.0:
        raise UserError(f"--split must lie in (0, 1) for a sweep, got {args.split}")
    corpus = load_corpus_from_args(args.data, args, preprocess=True)
    seqs = [np.asarray(x, dtype=np.int64) for x in corpus.sequences]
    if len(seqs) < 2:
        raise UserError(f"{args.data}: need at least 2 sequences for a train/test split, got {len(seqs)}")
    m = int(getattr(corpus, "n_symbols", None) or len(corpus.vocabulary))
    kw = dict(grid=grid, models=models, repeats=args.repeats, seed=args.seed, dense_preset=args.dense_preset,
              test_fraction=fraction, data_options=sweep_data_options(args),
              data_fingerprint=_data_fingerprint(args.data, corpus))
    if args.max_sequences is not None:
        kw["max_sequences"] = args.max_sequences
    settings = (ComparisonSettings.quick("sweep", data=args.data, **kw) if args.quick
                else ComparisonSettings.full("sweep", data=args.data, **kw))
    if not getattr(args, "quiet", False):
        used = settings.max_sequences
        print(f"sweep: {len(seqs)} sequences, {sum(len(x) for x in seqs)} tokens, m = {m} from {args.data}"
              + (f" (the runs use the first {used})" if used is not None and used < len(seqs) else ""), flush=True)
    return _run_guarded(run_comparison, settings, args.out, jobs=jobs, executor=args.executor,
                        run=not args.report_only, args=args,
                        shared={"sequences": seqs, "n_symbols": m}, save_models=args.save_models,
                        quiet=bool(getattr(args, "quiet", False)))

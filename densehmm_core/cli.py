"""The ``densehmm`` command line (also ``python -m densehmm_core``).

Commands: ``train``, ``evaluate``, ``info``, ``sample``, ``decode``, ``export``
(and ``reproduce`` when the experiments package provides it).  The command line
does no maths of its own: it loads data through :mod:`densehmm_core.data`, trains
through ``model.iter_fit`` and prints the :class:`~densehmm_core.events.ProgressEvent`
stream, computes metrics through :mod:`densehmm_core.metrics` and reads/writes
model files through :mod:`densehmm_core.modelfile`.

Exit status: 0 success, 1 failure (training diverged, internal error),
2 user error (bad option, missing or malformed file), 130 interrupted (Ctrl-C).

Importing this module is fast: numpy, h5py and TensorFlow are imported only by
the command that needs them.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import sys
import time
from typing import List, Optional, Sequence

__all__ = ["main", "build_parser", "UserError"]

PROG = "densehmm"
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UserError(Exception):
    """A problem the user can fix (printed as one line, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line instead of usage + error
        raise UserError(f"{message} (see '{self.prog} --help')")


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps one-paragraph descriptions; keeps multi-line texts (the examples) as written."""

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _formatter(prog):
    return _HelpFormatter(prog, max_help_position=32)


# ------------------------------------------------------------------ parser
TOP_EPILOG = """\
examples:
  densehmm train demo --model dense --method cooc --states 5 --dim 3 --out demo.h5
  densehmm train proteins.fasta --preset paper_protein --model dense --method em \\
           --states 10 --dim 4 --out protein.h5 --name em10
  densehmm info protein.h5
  densehmm evaluate protein.h5 proteins.fasta --name em10
  densehmm sample protein.h5 --name em10 -n 5 --length 60
  densehmm decode protein.h5 proteins.fasta --name em10 > states.tsv

Run 'densehmm COMMAND --help' for the options of a command.
exit status: 0 ok, 1 failure (diverged, internal error), 2 user error, 130 interrupted
"""


def _common(p):
    g = p.add_argument_group("output")
    g.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    g.add_argument("-v", "--verbose", action="store_true", help="print every progress event as a line")
    g.add_argument("--debug", action="store_true", help="show a traceback on errors")


def _data_options(p, *, preprocess=True, split=True):
    g = p.add_argument_group("data")
    g.add_argument("--format", default="auto", metavar="FMT",
                   help="input format (default: detected from the extension and the content): "
                        "fasta, word_tag, word_slash_tag, ptb, conll, conllu, medpost")
    g.add_argument("--preset", metavar="NAME",
                   help="paper preprocessing preset: paper_protein, paper_medpost, "
                        "reference_code_protein, reference_code_penn")
    g.add_argument("--observe", choices=["tags", "words"], help="tagged corpora: observe the tags (default) or the words")
    g.add_argument("--column", type=int, metavar="COL",
                   help="CoNLL: index of the column holding the observed symbols (default 1)")
    g.add_argument("--tagset", choices=["upos", "xpos"], help="CoNLL-U: the tag column (default upos)")
    g.add_argument("--subset", type=int, metavar="N", help="use the first N sequences")
    if preprocess:
        g.add_argument("--max-len", type=int, metavar="T", help="truncate sequences to T symbols")
        g.add_argument("--min-len", type=int, metavar="T", help="drop sequences shorter than T")
        g.add_argument("--merge-below", type=float, metavar="F",
                       help="merge the rarest symbols whose cumulative frequency stays below F "
                            "(e.g. 0.002) into one residual symbol")
    if split:
        g.add_argument("--split", type=float, default=None, metavar="F",
                       help="fraction held out as test data (default 0.5 for train; 0 = no test set)")
    g.add_argument("--seed", type=int, default=0, help="seed of the split, initialisation and demo data (default 0)")


def _model_and_data_args(p, verb: str) -> None:
    """MODEL.h5 and DATA positionals plus the options that choose what of DATA to use."""
    p.add_argument("model_file", metavar="MODEL.h5")
    p.add_argument("data", metavar="DATA", help="data file, or 'demo'")
    _name_option(p)
    _data_options(p, preprocess=False)
    p.add_argument("--max-len", type=int, metavar="T", help="truncate sequences to T symbols")
    p.add_argument("--part", choices=["all", "train", "test"], default="all",
                   help=f"with --split: which part to {verb} (default all)")


def _name_option(p, help="which model of the file (needed when it holds several)"):
    p.add_argument("--name", help=help)


def build_parser(with_reproduce: bool = False) -> argparse.ArgumentParser:
    """The argument parser.  ``with_reproduce`` imports the experiments' own sub-parser."""
    parser = _Parser(prog=PROG, formatter_class=_formatter,
                     description="DenseHMM Studio on the command line: train, inspect and use hidden "
                                 "Markov models learned through dense representations (Sicking et al., 2020).",
                     epilog=TOP_EPILOG)
    from . import __version__
    parser.add_argument("--version", action="version", version=f"densehmm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    # ---- train
    p = sub.add_parser("train", formatter_class=_formatter, help="train a dense or standard HMM and save it",
                       description="Train a DenseHMM or a standard HMM on a data file (or the built-in "
                                   "synthetic demo) and save it to an HDF5 model file.",
                       epilog="""\
examples:
  densehmm train demo --states 5 --dim 3 --out demo.h5
  densehmm train seqs.fasta --preset paper_protein --model dense --method em --states 10 --dim 4 \\
           --iter 40 --out protein.h5 --name em10 --checkpoint-every 60
  densehmm train seqs.fasta --preset paper_protein --model standard --states 10 --out protein.h5
  densehmm train seqs.fasta --preset paper_protein --model standard --fair --states 10 --dim 4 --out p.h5
  densehmm train tags.txt --model dense --method cooc --states 20 --dim 8 --steps 20000 --out tags.h5
  densehmm train seqs.fasta --preset paper_protein --out protein.h5 --name em10 --resume

Ctrl-C stops after the current chunk of work and saves what was trained so far (with --out).
DATA is a FASTA or tagged-corpus file, or 'demo' for the built-in synthetic data set.""")
    p.add_argument("data", metavar="DATA", nargs="?", help="data file, or 'demo'")
    p.add_argument("--demo", action="store_true", help="use the built-in synthetic data set (same as DATA=demo)")
    g = p.add_argument_group("model")
    g.add_argument("--model", choices=["dense", "standard"], default=None, help="model type (default dense)")
    g.add_argument("--method", choices=["cooc", "em"], default=None,
                   help="dense fit: direct co-occurrence fit (default) or EM with a gradient M-step; "
                        "standard HMMs always use Baum-Welch (em)")
    g.add_argument("--states", "-n", type=int, metavar="N", help="number of hidden states n")
    g.add_argument("--dim", "-l", type=int, metavar="L", help="representation length l (dense; --fair)")
    g.add_argument("--fair", action="store_true",
                   help="standard HMM with the number of states that gives about the parameter count of "
                        "a DenseHMM with --states and --dim (the paper's 'fair' standard HMM)")
    g.add_argument("--device", default=None, help="TensorFlow device for dense models: auto, cpu, gpu "
                                                      "or a device string such as /GPU:1 (default auto)")
    g = p.add_argument_group("training")
    g.add_argument("--steps", type=int, metavar="K", help="dense cooc: maximum Adam steps")
    g.add_argument("--iter", type=int, metavar="K",
                   help="maximum EM iterations (dense em) or Baum-Welch iterations (standard)")
    g.add_argument("--mstep-steps", type=int, metavar="K", help="dense em: Adam steps per M-step")
    g.add_argument("--lr", type=float, metavar="RATE", help="dense: Adam learning rate")
    g.add_argument("--tol", type=float, metavar="TOL",
                   help="convergence tolerance (standard: gain of the log-likelihood; dense: relative change)")
    g.add_argument("--restarts", type=int, metavar="R", help="dense: seeded restarts, the best one is kept")
    g.add_argument("--finish", choices=["auto", "lm", "lbfgs", "none"],
                   help="dense cooc: second-order finish after the Adam phase (Levenberg-Marquardt, "
                        "L-BFGS, auto = by problem size, none)")
    g.add_argument("--finish-steps", type=int, metavar="K",
                   help="dense cooc: maximum iterations of the finish (0 = none)")
    g.add_argument("--paper-settings", action="store_true",
                   help="dense: the paper's optimiser settings (cooc: plain Adam, lr 0.001, 10,000 steps, "
                        "raw Frobenius loss; em: 25 Adam steps at lr 0.01 per M-step, 40 iterations)")
    _data_options(p)
    g = p.add_argument_group("saving")
    g.add_argument("--out", "-o", metavar="FILE.h5", help="model file to write (other models in it are kept)")
    _name_option(g, help="name of the model in --out (default: dense_1, dense_2, ... / standard_1, ...)")
    g.add_argument("--overwrite", action="store_true", help="replace a model of the same name in --out")
    g.add_argument("--checkpoint-every", type=float, metavar="SECONDS",
                   help="also save the current model to --out every SECONDS during training")
    g.add_argument("--resume", nargs="?", const=True, default=None, metavar="FILE.h5",
                   help="continue training the model --name from a checkpoint (default: the --out file); "
                        "give the same DATA and data options")
    _common(p)
    p.set_defaults(func=cmd_train)

    # ---- evaluate
    p = sub.add_parser("evaluate", formatter_class=_formatter, help="score a model on data",
                       description="Normalised negative log-likelihood (both the product's and the paper's "
                                   "variant) and co-occurrence MAD of a saved model on a data file.",
                       epilog="""\
examples:
  densehmm evaluate protein.h5 seqs.fasta --name em10
  densehmm evaluate protein.h5 seqs.fasta --name em10 --split 0.5 --part test --json
  densehmm evaluate demo.h5 demo

Symbols are mapped to the model's vocabulary by their strings; symbols the model does not know
go to its residual (merged) symbol when it has one, else they are an error.""")
    _model_and_data_args(p, "evaluate")
    p.add_argument("--json", action="store_true", help="print JSON")
    _common(p)
    p.set_defaults(func=cmd_evaluate)

    # ---- info
    p = sub.add_parser("info", formatter_class=_formatter, help="show everything stored in a model file",
                       description="Show the models of a file: type, sizes, hyper-parameters, data provenance, "
                                   "training history, metrics, software versions.",
                       epilog="""\
examples:
  densehmm info protein.h5
  densehmm info protein.h5 --name em10 --arrays
  densehmm info protein.h5 --json > protein.json""")
    p.add_argument("model_file", metavar="MODEL.h5")
    _name_option(p)
    p.add_argument("--arrays", action="store_true", help="also print the matrices and embeddings")
    p.add_argument("--history", action="store_true", help="print the full training history")
    p.add_argument("--json", action="store_true", help="print JSON (arrays as nested lists with --arrays)")
    _common(p)
    p.set_defaults(func=cmd_info)

    # ---- sample
    p = sub.add_parser("sample", formatter_class=_formatter, help="sample sequences from a model",
                       description="Sample sequences from a saved model; symbols are printed as the strings of "
                                   "the model's vocabulary, one sequence per line.",
                       epilog="""\
examples:
  densehmm sample protein.h5 -n 10 --length 50
  densehmm sample protein.h5 -n 3 --length 80 --fasta > sampled.fasta
  densehmm sample tags.h5 -n 5 --length 20 --states --seed 7""")
    p.add_argument("model_file", metavar="MODEL.h5")
    _name_option(p)
    p.add_argument("-n", "--n-sequences", type=int, default=10, metavar="N", help="number of sequences (default 10)")
    p.add_argument("--length", type=int, default=50, metavar="T", help="length of each sequence (default 50)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--sep", default=None, help="separator between symbols (default: none when every symbol is "
                                               "one character, else a space)")
    p.add_argument("--states", action="store_true", help="also print the hidden states (a second line)")
    p.add_argument("--fasta", action="store_true", help="write FASTA records")
    _common(p)
    p.set_defaults(func=cmd_sample)

    # ---- decode
    p = sub.add_parser("decode", formatter_class=_formatter, help="Viterbi state paths of sequences (TSV)",
                       description="Most likely hidden state path of every sequence of DATA (Viterbi), as TSV: "
                                   "index, length, log-probability of the path, states (space-separated).",
                       epilog="""\
examples:
  densehmm decode protein.h5 seqs.fasta > states.tsv
  densehmm decode tags.h5 tags.txt --name em20 --symbols | head""")
    _model_and_data_args(p, "decode")
    p.add_argument("--symbols", action="store_true", help="add a column with the observed symbols")
    _common(p)
    p.set_defaults(func=cmd_decode)

    # ---- export
    p = sub.add_parser("export", formatter_class=_formatter, help="export matrices and embeddings to CSV",
                       description="Write one CSV file per array (startprob, transmat, emissionprob and, for "
                                   "dense models, U, Z, W, V, z_start) into a folder, or into a .zip.",
                       epilog="""\
examples:
  densehmm export protein.h5 protein_csv/
  densehmm export protein.h5 protein.zip --name em10""")
    p.add_argument("model_file", metavar="MODEL.h5")
    p.add_argument("target", metavar="OUT", help="a folder, or a file ending in .zip")
    _name_option(p)
    _common(p)
    p.set_defaults(func=cmd_export)

    # ---- reproduce (owned by densehmm_core.experiments.cli)
    if _experiments_cli_exists():
        if with_reproduce:
            from .experiments.cli import add_reproduce_parser
            add_reproduce_parser(sub)
        else:
            sub.add_parser("reproduce", help="reproduce the paper's experiments (CSV + figures)", add_help=False)
    return parser


def _experiments_cli_exists() -> bool:
    return os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments", "cli.py"))


# --------------------------------------------------------------- printing
def _out(*a, **kw):
    print(*a, **kw)
    sys.stdout.flush()


def _err(msg: str) -> None:
    """A message on stderr; a closed stderr never stops the work."""
    try:
        print(msg, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _fmt_duration(s: Optional[float]) -> str:
    if s is None or not math.isfinite(s):
        return "--:--"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


class ProgressPrinter:
    """Prints a ProgressEvent stream: a bar on a terminal, lines with --verbose, nothing when quiet.

    The bar shows the step, the rate (steps per second), the ETA and the current loss;
    it redraws at most ten times a second.
    """

    def __init__(self, mode: str, stream=None) -> None:
        self.mode = mode  # "bar" | "lines" | "none"
        self.stream = stream or sys.stderr
        self._last_draw = 0.0
        self._drawn = False
        self._phase = None

    def __call__(self, ev) -> None:
        try:
            self._show(ev)
        except (OSError, ValueError):  # stderr closed (e.g. a pipe into `head`): keep training, quietly
            self.mode = "none"

    def _show(self, ev) -> None:
        if self.mode == "lines":
            print(ev.summary() + f"  ({ev.elapsed:.1f} s)", file=self.stream)
            self.stream.flush()
        elif self.mode == "bar":
            now = time.monotonic()
            if ev.done or now - self._last_draw >= 0.1 or ev.phase != self._phase:
                self._phase = ev.phase
                self._last_draw = now
                self._draw(ev)

    def _draw(self, ev) -> None:
        width = shutil.get_terminal_size((80, 20)).columns
        rate = ev.step / ev.elapsed if ev.elapsed > 0 and ev.step > 0 else None
        eta = None
        if rate and ev.total:
            eta = max(0.0, (ev.total - ev.step) / rate)
        frac = ev.fraction
        tail = f" {ev.step}/{ev.total}" if ev.total else f" {ev.step}"
        tail += f"  {rate:.3g} it/s" if rate else ""
        tail += f"  ETA {_fmt_duration(eta)}" if ev.total and not ev.done else f"  {_fmt_duration(ev.elapsed)}"
        if ev.loss is not None:
            tail += f"  loss {ev.loss:.5g}"
        head = f"{ev.phase or 'train'} "
        barw = 20 if width >= 90 else 10
        if frac is not None:
            fill = int(round(frac * barw))
            bar = f"[{'#' * fill}{'.' * (barw - fill)}] {100 * frac:3.0f}%"
        else:
            bar = ""
        line = (head + bar + tail)[: width - 1]
        self.stream.write("\r" + line.ljust(width - 1))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._drawn = False
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass


def _progress_mode(args) -> str:
    if getattr(args, "quiet", False):
        return "none"
    if getattr(args, "verbose", False):
        return "lines"
    try:
        return "bar" if sys.stderr.isatty() else "none"
    except (AttributeError, ValueError):
        return "none"


# ------------------------------------------------------------------- data
class _Data:
    """Sequences with their vocabulary and provenance (a minimal Corpus stand-in)."""

    def __init__(self, sequences, vocabulary=None, provenance=None, names=None):
        self.sequences = list(sequences)
        self.vocabulary = None if vocabulary is None else list(vocabulary)
        self.provenance = dict(provenance or {})
        self.names = names


def _is_demo(spec) -> bool:
    return spec is not None and str(spec).lower() == "demo" and not os.path.exists(str(spec))


def _demo(seed: int):
    """The built-in synthetic data set: (train, test, true-parameters)."""
    from .synthetic import demo_dataset
    out = demo_dataset(seed)
    train, test = out[0], out[1]
    true = out[2] if len(out) > 2 else None

    def wrap(part, which):
        if part is None:
            return None
        if hasattr(part, "sequences"):
            return part
        seqs = list(part)
        m = None
        if true is not None:
            import numpy as np
            m = int(np.asarray(true[2]).shape[1])  # (startprob, transmat, emissionprob)
        if m is None:
            m = int(max(int(s.max()) for s in seqs)) + 1
        return _Data(seqs, [str(i) for i in range(m)],
                     {"source": "synthetic demo (densehmm_core.synthetic.demo_dataset)", "seed": seed,
                      "part": which})
    return wrap(train, "train"), wrap(test, "test"), true


def _load_corpus(path: str, args, *, preprocess: bool):
    """Read a data file through densehmm_core.data.load with the command's options.

    Preprocessing options given on the command line override those of ``--preset``.
    """
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{path}: is a folder, not a data file")
    from . import data as data_mod
    options = {}
    if getattr(args, "observe", None):
        options["observe"] = args.observe
    if getattr(args, "column", None) is not None:
        options["column"] = args.column
    if getattr(args, "tagset", None):
        options["tagset"] = args.tagset
    preset = getattr(args, "preset", None)
    if preset is not None and preset not in data_mod.PRESETS:
        raise UserError(f"unknown preset {preset!r} (choose one of: {', '.join(sorted(data_mod.PRESETS))})")
    if getattr(args, "subset", None) is not None:
        options["subset"] = int(args.subset)
    if getattr(args, "max_len", None) is not None:
        options["max_len"] = int(args.max_len)
    if preprocess:
        if getattr(args, "min_len", None) is not None:
            options["min_len"] = int(args.min_len)
        if getattr(args, "merge_below", None) is not None:
            options["merge_below"] = float(args.merge_below)
    try:
        return data_mod.load(path, format=args.format or "auto", preset=preset, **options)
    except (TypeError, ValueError) as e:
        if isinstance(e, _user_error_types()):
            raise
        raise UserError(f"{path}: {e}") from None


def _split(corpus, fraction: Optional[float], seed: int):
    if not fraction:
        return corpus, None
    if not 0.0 < fraction < 1.0:
        raise UserError(f"--split must lie in [0, 1), got {fraction}")
    if len(corpus.sequences) < 2:
        raise UserError("the data hold a single sequence: it cannot be split (use --split 0)")
    try:
        return corpus.split(fraction, seed=seed)
    except ValueError as e:
        raise UserError(f"cannot split the data: {e}") from None


def _residual_symbol(vocabulary, provenance=None) -> Optional[int]:
    """Index of the residual symbol (the merged rare symbols) of a model's vocabulary, if any."""
    names = []
    for step in (provenance or {}).get("preprocessing", []) or []:
        if isinstance(step, dict) and step.get("step") == "merge_below" and step.get("residual_symbol"):
            names.append(str(step["residual_symbol"]))
    try:
        from .data.corpus import DEFAULT_RESIDUAL
        names.append(DEFAULT_RESIDUAL)
    except ImportError:
        names.append("<other>")
    for c in names:
        if c in vocabulary:
            return vocabulary.index(c)
    return None


def _encode_for_model(corpus, model_vocab, m: int, source: str, provenance=None):
    """Map a corpus onto the model's symbol indices, by symbol string."""
    import numpy as np
    seqs = [np.asarray(s, dtype=np.int64) for s in corpus.sequences]
    cvocab = getattr(corpus, "vocabulary", None)
    if model_vocab is None or cvocab is None:
        top = max(int(s.max()) for s in seqs) if seqs else -1
        if top >= m:
            raise UserError(f"{source}: the data use {top + 1} symbols but the model knows only {m}")
        return seqs
    cvocab = [str(s) for s in cvocab]
    index = {s: i for i, s in enumerate(model_vocab)}
    residual = _residual_symbol(model_vocab, provenance)
    table = np.empty(len(cvocab), dtype=np.int64)
    unknown = []
    for i, s in enumerate(cvocab):
        j = index.get(s)
        if j is None:
            if residual is None:
                unknown.append(s)
                j = -1
            else:
                j = residual
        table[i] = j
    if unknown:
        used = set(np.unique(np.concatenate(seqs)).tolist()) if seqs else set()
        unknown = [s for s in unknown if cvocab.index(s) in used]
        if unknown:
            shown = ", ".join(repr(s) for s in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
            raise UserError(f"{source}: {len(unknown)} symbol(s) unknown to the model ({shown})")
    return [table[s] for s in seqs]


def _load_train_data(args):
    """(train, test) for the train command."""
    spec = "demo" if args.demo else args.data
    if spec is None:
        raise UserError("give a DATA file (or 'demo')")
    if _is_demo(spec):
        train, test, _ = _demo(args.seed)
        if args.split == 0:
            test = None
        return train, test
    corpus = _load_corpus(spec, args, preprocess=True)
    split = 0.5 if args.split is None else args.split
    return _split(corpus, split, args.seed)


def _load_eval_data(args, model):
    """(sequences, corpus) for evaluate/decode, encoded with the model's vocabulary."""
    if _is_demo(args.data):
        train, test, _ = _demo(args.seed)
        part = getattr(args, "part", "all")
        corpus = {"train": train, "test": test}.get(part) or _concat(train, test)
        return _encode_for_model(corpus, model.vocabulary, model.n_symbols, "demo"), corpus
    corpus = _load_corpus(args.data, args, preprocess=False)
    part = getattr(args, "part", "all")
    split = getattr(args, "split", None)
    if part != "all":
        if not split:
            raise UserError("--part train/test needs --split F (the split used for training)")
        train, test = _split(corpus, split, args.seed)
        corpus = train if part == "train" else test
    prov = getattr(model, "provenance_", None)
    return _encode_for_model(corpus, model.vocabulary, model.n_symbols, args.data, prov), corpus


def _concat(a, b):
    if b is None:
        return a
    return _Data(list(a.sequences) + list(b.sequences), a.vocabulary, a.provenance)


# ----------------------------------------------------------------- models
def _check_positive(args, names) -> None:
    for opt in names:
        v = getattr(args, opt, None)
        if v is not None and not v > 0:
            raise UserError(f"--{opt.replace('_', '-')} must be > 0, got {v}")


def _build_model(args, n_symbols: int):
    kind = args.model or "dense"
    if args.states is None:
        raise UserError("--states N is required")
    _check_positive(args, ("states", "dim", "lr", "steps", "iter", "mstep_steps", "restarts"))
    if args.tol is not None and math.isnan(args.tol):
        raise UserError("--tol must be a number")
    if args.finish_steps is not None and args.finish_steps < 0:
        raise UserError(f"--finish-steps must be >= 0, got {args.finish_steps}")
    if kind == "standard":
        if args.method == "cooc":
            raise UserError("--method cooc needs --model dense (standard HMMs are trained by Baum-Welch)")
        for opt in ("steps", "lr", "mstep_steps", "restarts", "finish", "finish_steps"):
            if getattr(args, opt) is not None:
                raise UserError(f"--{opt.replace('_', '-')} applies to dense models only")
        if args.paper_settings:
            raise UserError("--paper-settings applies to dense models only")
        from .standard import StandardHMM, n_fair
        n = args.states
        if args.fair:
            if args.dim is None:
                raise UserError("--fair needs --dim L (the DenseHMM whose parameter count to match)")
            n = int(n_fair(args.states, n_symbols, args.dim))
        kw = {"seed": args.seed}
        if args.iter is not None:
            kw["n_iter"] = args.iter
        if args.tol is not None:
            kw["tol"] = args.tol
        return StandardHMM(n, n_symbols, **kw)
    if args.fair:
        raise UserError("--fair needs --model standard")
    if args.dim is None:
        raise UserError("--dim L is required for dense models")
    method = args.method or "cooc"
    from .dense import DenseHMM
    kw = {"fit_method": method, "seed": args.seed, "device": args.device or "auto"}
    if args.paper_settings:
        kw["preset"] = "paper"
    for opt, key in (("lr", "lr"), ("tol", "tol"), ("restarts", "restarts")):
        if getattr(args, opt) is not None:
            kw[key] = getattr(args, opt)
    if method == "cooc":
        if args.iter is not None or args.mstep_steps is not None:
            raise UserError("--iter/--mstep-steps apply to --method em; use --steps for cooc")
        if args.steps is not None:
            kw["steps"] = args.steps
        if args.finish is not None:
            kw["finish"] = args.finish
        if args.finish_steps is not None:
            kw["finish_steps"] = args.finish_steps
    else:
        if args.steps is not None:
            raise UserError("--steps applies to --method cooc; use --iter (and --mstep-steps) for em")
        if args.finish is not None or args.finish_steps is not None:
            raise UserError("--finish/--finish-steps apply to --method cooc")
        if args.iter is not None:
            kw["em_iter"] = args.iter
        if args.mstep_steps is not None:
            kw["steps"] = args.mstep_steps
    return DenseHMM(args.states, args.dim, n_symbols, **kw)


def _load_model(path: str, name: Optional[str]):
    from .modelfile import load_model
    return load_model(path, name)


# ----------------------------------------------------------------- train
class _SigintCancel:
    """First Ctrl-C: cancel the token (training stops after its chunk); second: KeyboardInterrupt."""

    def __init__(self, token, quiet: bool) -> None:
        self.token = token
        self.quiet = quiet
        self._old = None

    def __enter__(self):
        try:
            self._old = signal.signal(signal.SIGINT, self._handler)
        except ValueError:  # not in the main thread
            self._old = None
        return self

    def _handler(self, signum, frame):
        if self.token.cancelled:
            raise KeyboardInterrupt
        self.token.cancel()
        if not self.quiet:
            _err("\ninterrupt: stopping after the current chunk (Ctrl-C again to abort without saving)")

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def _final_metrics(model, train, test) -> dict:
    """Normalised NLL (both variants) and co-occurrence MAD through densehmm_core.metrics."""
    from . import metrics as met
    out = {}
    for label, data in (("train", train), ("test", test)):
        if data is None:
            continue
        for key, value in _metric_values(met, model, data.sequences).items():
            out[f"{label}_{key}"] = value
    return out


def _metric_values(met, model, seqs) -> dict:
    import numpy as np
    m = model.n_symbols
    out = {}
    out["loglik"] = float(model.score(seqs))
    out["nll"] = float(met.normalized_nll(model, seqs))
    out["paper_nll"] = float(met.paper_nll(model, seqs))
    try:
        omega_data = met.empirical_cooc(seqs, m)
    except ValueError:  # every sequence has length 1: no adjacent pairs, no MAD
        omega_data = None
    if omega_data is not None:
        omega_model = met.analytic_cooc(None, model.transmat_, model.emissionprob_)  # stationary pi
        out["mad"] = float(met.cooc_mad(omega_data, omega_model))
    out["n_sequences"] = len(seqs)
    out["n_tokens"] = int(sum(len(s) for s in seqs))
    return {k: v for k, v in out.items() if not (isinstance(v, float) and np.isnan(v))}


def cmd_train(args) -> int:
    from .events import CancelToken, TrainingDiverged
    from .modelfile import ModelFileError, list_models, save_model

    out = args.out
    if args.checkpoint_every is not None:
        if not out:
            raise UserError("--checkpoint-every needs --out")
        if not args.checkpoint_every > 0:
            raise UserError("--checkpoint-every must be > 0 seconds")
    if out:
        folder = os.path.dirname(os.path.abspath(out)) or "."
        if not os.path.isdir(folder):
            raise UserError(f"{out}: the folder {folder} does not exist")
        if os.path.exists(out):
            names = list_models(out)  # refuses foreign/damaged files before any training
            same_file = bool(args.resume) and (args.resume is True or
                                               os.path.abspath(str(args.resume)) == os.path.abspath(out))
            if args.name and args.name in names and not (args.overwrite or same_file):
                raise UserError(f"{out} already holds a model named {args.name!r}: "
                                f"use --overwrite, --resume or another --name")
    if args.name is not None:
        from .modelfile import _check_name
        try:
            _check_name(args.name)
        except ValueError as e:
            raise UserError(str(e)) from None

    train, test = _load_train_data(args)
    vocab = getattr(train, "vocabulary", None)
    n_symbols = len(vocab) if vocab is not None else None
    if n_symbols is None:
        n_symbols = int(max(int(s.max()) for s in train.sequences)) + 1

    resume_from = None
    if args.resume:
        resume_from = out if args.resume is True else args.resume
        if not resume_from:
            raise UserError("--resume needs a checkpoint file (--resume FILE.h5 or --out FILE.h5)")
        model = _load_model(resume_from, args.name)
        if args.model and args.model != _kind(model):
            raise UserError(f"--model {args.model} does not match the {_kind(model)} model in {resume_from}")
        if model.vocabulary is not None and vocab is not None and list(model.vocabulary) != list(vocab):
            raise UserError(f"the data's vocabulary differs from that of the model in {resume_from}: "
                            f"give the same DATA and data options as for the first run")
        if model.n_symbols != n_symbols:
            raise UserError(f"the data have {n_symbols} symbols but the model in {resume_from} has {model.n_symbols}")
        _apply_overrides(model, args)
        name = args.name or getattr(model, "model_name_", None)
        if (out and os.path.exists(out) and os.path.abspath(resume_from) != os.path.abspath(out)
                and name in list_models(out) and not args.overwrite):
            raise UserError(f"{out} already holds a model named {name!r}: use --overwrite or another --name")
    else:
        try:
            model = _build_model(args, n_symbols)
        except (TypeError, ValueError) as e:
            if type(e).__name__ == "DeviceError":
                raise
            raise UserError(f"invalid model options: {e}") from None
        name = args.name
    if vocab is not None and getattr(model, "vocabulary", None) is None:
        model.vocabulary = list(vocab)

    token = CancelToken()
    printer = ProgressPrinter(_progress_mode(args))
    last_params = None
    last_ckpt = time.monotonic()
    stopped = "done"
    error = None
    saved_name = name
    kind = _kind(model)
    if not args.quiet:
        what = f"{kind} HMM, n={model.n_states}" + (f", l={getattr(model, 'dim', '')}" if kind == "dense" else "")
        ntok = sum(len(s) for s in train.sequences)
        _err(f"training {what} on {len(train.sequences)} sequences ({ntok} tokens)"
             + (f", testing on {len(test.sequences)}" if test is not None else "")
             + (" [resumed]" if resume_from else ""))
    try:
        with _SigintCancel(token, args.quiet):
            stream = model.iter_fit(train, eval_data=test, cancel=token, init=not bool(resume_from))
            for ev in stream:
                printer(ev)
                if ev.params:
                    last_params = ev.params
                if ev.done:
                    stopped = ev.reason or "done"
                if (args.checkpoint_every and not ev.done
                        and time.monotonic() - last_ckpt >= args.checkpoint_every):
                    try:
                        saved_name = save_model(out, model, saved_name, train, test_corpus=test,
                                                overwrite=True, params=_ckpt_params(model, last_params),
                                                metrics={"checkpoint": True})
                    except ModelFileError as e:  # e.g. a full disk: warn, keep training
                        _err(f"densehmm: warning: checkpoint failed: {e}")
                    except ValueError:
                        pass  # no complete parameters yet: the next interval will try again
                    last_ckpt = time.monotonic()
    except KeyboardInterrupt:
        printer.close()
        _err("aborted (second Ctrl-C): nothing saved" + (f"; {out} keeps its last checkpoint" if out else ""))
        return EXIT_INTERRUPTED
    except TrainingDiverged as e:
        printer.close()
        error = e
        stopped = "diverged"
    finally:
        printer.close()

    if token.cancelled:
        stopped = "cancelled"
    try:
        model._check_params()
    except Exception:
        _err(f"densehmm: error: training ended ({stopped}) before the model had parameters; nothing saved")
        return EXIT_FAIL if error else EXIT_INTERRUPTED

    metrics = {}
    if error is None:
        try:
            metrics = _final_metrics(model, train, test)
        except Exception as e:  # noqa: BLE001 - never lose a trained model over a metric
            _err(f"densehmm: warning: final metrics could not be computed ({type(e).__name__}: {e})")
    else:
        model.stop_reason_ = "diverged"
    metrics["stop_reason"] = stopped
    if out:
        saved_name = save_model(out, model, saved_name, train, test_corpus=test, metrics=metrics,
                                overwrite=bool(args.overwrite or resume_from or args.checkpoint_every))
    if not args.quiet:
        parts = [f"stopped: {stopped}"]
        for k in ("train_nll", "test_nll", "test_mad"):
            if k in metrics:
                parts.append(f"{k} {metrics[k]:.6g}")
        _out("; ".join(parts))
        if out:
            _out(f"saved {kind} model {saved_name!r} to {out}")
    if error is not None:
        _err(f"densehmm: error: training diverged ({error}); "
             + (f"the last finite model was saved to {out}" if out else "the last finite model was kept"))
        return EXIT_FAIL
    if stopped == "cancelled":
        return EXIT_INTERRUPTED
    return EXIT_OK


def _ckpt_params(model, last_params):
    """Arrays for a checkpoint: the latest event snapshot, else the model's own arrays."""
    if not last_params:
        return None
    keys = {"startprob", "transmat", "emissionprob"}
    if not keys <= set(last_params):
        return None
    if _kind(model) == "dense" and not {"U", "Z", "W", "V", "z_start"} <= set(last_params):
        return None
    return last_params


def _kind(model) -> str:
    return "dense" if hasattr(model, "embeddings_") else "standard"


def _apply_overrides(model, args) -> None:
    """--resume: apply the training options given on the command line to the loaded model.

    Without ``--iter``, an EM / Baum-Welch run continues for the iterations it had left
    (the configured maximum minus the iterations in the saved history).
    """
    kind = _kind(model)
    for opt in ("fair", "paper_settings"):
        if getattr(args, opt, False):
            raise UserError(f"--{opt.replace('_', '-')} cannot be changed on --resume")
    if args.states is not None and args.states != model.n_states and not args.fair:
        raise UserError(f"--states {args.states} does not match the model in the checkpoint "
                        f"({model.n_states} states)")
    if kind == "dense" and args.dim is not None and args.dim != model.dim:
        raise UserError(f"--dim {args.dim} does not match the model in the checkpoint (l={model.dim})")
    method = getattr(model, "fit_method", "em")
    if args.method and kind == "dense" and args.method != method:
        raise UserError(f"--method {args.method} does not match the checkpoint's fit method ({method})")
    done = _iterations_done(model)
    if kind == "standard":
        if args.iter is not None:
            model.n_iter = args.iter
        else:
            model.n_iter = max(0, model.n_iter - done)
        if args.tol is not None:
            model.tol = args.tol
        for opt in ("steps", "lr", "mstep_steps", "restarts", "finish", "finish_steps"):
            if getattr(args, opt) is not None:
                raise UserError(f"--{opt.replace('_', '-')} applies to dense models only")
        return
    if args.device:
        model.device = args.device
    for opt in ("lr", "tol"):
        if getattr(args, opt) is not None:
            setattr(model, opt, getattr(args, opt))
    if method == "em":
        if args.iter is not None:
            model.em_iter = args.iter
        else:
            model.em_iter = max(1, int(model.hyper()["em_iter"]) - done)
        if args.mstep_steps is not None:
            model.steps = args.mstep_steps
    else:
        if args.steps is not None:
            model.steps = args.steps
        if args.finish is not None:
            model.finish = args.finish
        if args.finish_steps is not None:
            model.finish_steps = args.finish_steps


def _iterations_done(model) -> int:
    """EM / Baum-Welch iterations recorded in the history (records with step > 0, over all resumes)."""
    return sum(1 for r in (getattr(model, "history_", None) or [])
               if isinstance(r.get("step"), int) and r["step"] > 0 and r.get("phase") in ("baum-welch", "em"))


# -------------------------------------------------------------- evaluate
def cmd_evaluate(args) -> int:
    from . import metrics as met
    model = _load_model(args.model_file, args.name)
    seqs, corpus = _load_eval_data(args, model)
    values = _metric_values(met, model, seqs)
    result = {"model_file": args.model_file, "model": getattr(model, "model_name_", args.name),
              "data": args.data, "part": args.part, **values}
    if args.json:
        _out(json.dumps(_jsonable(result), indent=2))  # inf (an impossible sequence) -> null
    elif not args.quiet:
        _out(f"model       {result['model']} ({args.model_file})")
        _out(f"data        {args.data}" + (f" ({args.part} part)" if args.part != "all" else "")
             + f": {values['n_sequences']} sequences, {values['n_tokens']} tokens")
        _out(f"log-likelihood          {values['loglik']:.6f}")
        _out(f"normalised NLL          {values['nll']:.6f}   (-log-likelihood / tokens)")
        if "paper_nll" in values:
            _out(f"normalised NLL (paper)  {values['paper_nll']:.6f}")
        if "mad" in values:
            _out(f"co-occurrence MAD       {values['mad']:.6g}")
    return EXIT_OK


# ------------------------------------------------------------------ info
def _jsonable(x):
    import numpy as np
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def cmd_info(args) -> int:
    from .modelfile import list_models, read_model_info
    names = [args.name] if args.name else list_models(args.model_file)
    infos = [read_model_info(args.model_file, nm, arrays=True) for nm in names]
    if args.json:
        out = {"file": args.model_file, "format": infos[0]["file"] if infos else {}, "models": []}
        for info in infos:
            d = {k: v for k, v in info.items() if k not in ("arrays", "file")}
            d["shapes"] = {k: list(v.shape) for k, v in info["arrays"].items()}
            if args.arrays:
                d["arrays"] = info["arrays"]
            out["models"].append(d)
        _out(json.dumps(_jsonable(out), indent=2, ensure_ascii=False))
        return EXIT_OK
    if not infos:
        _out(f"{args.model_file}: no models")
        return EXIT_OK
    f = infos[0]["file"]
    _out(f"{args.model_file}: {f.get('format')} schema {f.get('schema_version')}, "
         f"{len(list_models(args.model_file))} model(s), written by {f.get('writer', '?')} at {f.get('modified_utc', '?')}")
    for info in infos:
        _print_model_info(info, args)
    return EXIT_OK


def _kv(d: dict) -> str:
    """``key=value`` pairs, wrapped under the 15-column label of the info listing."""
    import textwrap
    width = max(60, min(120, shutil.get_terminal_size((100, 20)).columns))
    text = ", ".join(f"{k}={_short(v)}" for k, v in d.items())
    lines = textwrap.wrap(text, width=width - 15, break_long_words=False, break_on_hyphens=False)
    return ("\n" + " " * 15).join(lines)


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, dict)):
        s = json.dumps(v)
        return s if len(s) <= 60 else s[:57] + "..."
    return str(v)


def _print_model_info(info: dict, args) -> None:
    import numpy as np
    a = info["attrs"]
    _out("")
    head = f"model {info['name']!r}: {a['kind']} HMM, n={a['n_states']} states, m={a['n_symbols']} symbols"
    if a["kind"] == "dense":
        head += f", l={a.get('dim')}"
    _out(head)
    _out(f"  fit method   {a.get('fit_method') or '-'}    seed {a.get('seed', '-')}    "
         f"device {a.get('device_used') or '-'}    parameters {a.get('n_parameters', '-')}")
    hist = info["history"]
    _out(f"  trained      {a.get('created_utc', '?')}    stop reason {a.get('stop_reason') or '-'}    "
         f"{len(hist)} history records")
    if info["config"]:
        _out(f"  config       {_kv(info['config'])}")
    if info["metrics"]:
        _out(f"  metrics      {_kv(info['metrics'])}")
    for key, label in (("provenance", "data"), ("provenance_test", "test data")):
        if info.get(key):
            _out(f"  {label:<12} {_kv(info[key])}")
    if info["software"]:
        _out(f"  software     {_kv(info['software'])}")
    vocab = info["vocabulary"]
    if vocab is not None:
        shown = " ".join(vocab[:40]) + (" ..." if len(vocab) > 40 else "")
        _out(f"  vocabulary   ({len(vocab)}) {shown}")
    _out("  arrays       " + _kv({k: "x".join(map(str, v.shape)) or "scalar" for k, v in info["arrays"].items()}))
    if hist:
        cols = [c for c in ("step", "phase", "loss", "train_ll", "test_ll", "mad") if any(c in r for r in hist)]
        rows = hist if args.history else (hist[:3] + ([None] if len(hist) > 6 else []) + hist[-3:]
                                          if len(hist) > 6 else hist)
        _out("  history      " + "  ".join(f"{c:>12}" for c in cols))
        for r in rows:
            if r is None:
                _out("               " + "  ".join(f"{'...':>12}" for _ in cols))
                continue
            _out("               " + "  ".join(f"{_short(r.get(c)) if r.get(c) is not None else '-':>12}"
                                              for c in cols))
    if args.arrays:
        with np.printoptions(precision=6, suppress=True, linewidth=160, threshold=100000):
            for k, v in info["arrays"].items():
                _out(f"  {k}:")
                for line in str(v).splitlines():
                    _out("    " + line)


# ---------------------------------------------------------------- sample
def cmd_sample(args) -> int:
    if args.n_sequences < 1:
        raise UserError(f"-n must be >= 1, got {args.n_sequences}")
    if args.length < 1:
        raise UserError(f"--length must be >= 1, got {args.length}")
    model = _load_model(args.model_file, args.name)
    obs, states = model.sample(args.n_sequences, args.length, seed=args.seed)
    vocab = model.vocabulary or [str(i) for i in range(model.n_symbols)]
    sep = args.sep
    if sep is None:
        sep = "" if all(len(s) == 1 for s in vocab) else " "
    name = getattr(model, "model_name_", None) or "model"
    for i, (o, s) in enumerate(zip(obs, states)):
        text = sep.join(vocab[int(k)] for k in o)
        if args.fasta:
            _out(f">sample_{i + 1} model={name} seed={args.seed} length={len(o)}")
            for j in range(0, len(text), 60) if sep == "" else [0]:
                _out(text[j:j + 60] if sep == "" else text)
        else:
            _out(text)
        if args.states:
            _out(("; states " if args.fasta else "") + " ".join(str(int(k)) for k in s))
    return EXIT_OK


# ---------------------------------------------------------------- decode
def cmd_decode(args) -> int:
    model = _load_model(args.model_file, args.name)
    seqs, corpus = _load_eval_data(args, model)
    paths, logprobs = model.decode(seqs)
    vocab = model.vocabulary or [str(i) for i in range(model.n_symbols)]
    ids = getattr(corpus, "names", None)
    if ids is not None and len(ids) != len(seqs):
        ids = None
    header = ["index"] + (["id"] if ids is not None else []) + ["length", "log_prob", "states"]
    if args.symbols:
        header.append("symbols")
    _out("\t".join(header))
    for i, (s, p, lp) in enumerate(zip(seqs, paths, logprobs)):
        row = [str(i)] + ([str(ids[i])] if ids is not None else []) + [str(len(s)), repr(float(lp)),
                                                                        " ".join(str(int(k)) for k in p)]
        if args.symbols:
            row.append(" ".join(vocab[int(k)] for k in s))
        _out("\t".join(row))
    return EXIT_OK


# ---------------------------------------------------------------- export
def cmd_export(args) -> int:
    from .export import export_csv
    written = export_csv(args.model_file, args.target, name=args.name)
    if not args.quiet:
        _out(f"wrote {len(written)} CSV file(s) to {args.target}")
    return EXIT_OK


# ------------------------------------------------------------------ main
def _user_error_types():
    types: List[type] = [UserError]
    for mod, name in (("densehmm_core.modelfile", "ModelFileError"), ("densehmm_core.data.errors", "DataFormatError"),
                      ("densehmm_core.data", "DataFormatError"), ("densehmm_core.device", "DeviceError")):
        m = sys.modules.get(mod)
        cls = getattr(m, name, None) if m is not None else None
        if isinstance(cls, type):
            types.append(cls)
    return tuple(types)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = None
    try:
        with_reproduce = bool(argv) and argv[0] == "reproduce"
        parser = build_parser(with_reproduce=with_reproduce)
        args = parser.parse_args(argv)
        debug = debug or bool(getattr(args, "debug", False))
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return EXIT_USAGE
        rc = func(args)
        return EXIT_OK if rc is None else int(rc)
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `densehmm sample ... | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - the command line's last line of defence
        if isinstance(e, _user_error_types()):
            if debug:
                import traceback
                traceback.print_exc()
            msg = str(e)
            cmd = getattr(args, "command", None) if args is not None else None
            _err(f"{PROG}{(' ' + cmd) if cmd else ''}: error: {msg}")
            return EXIT_USAGE
        if isinstance(e, FileNotFoundError):
            _err(f"{PROG}: error: {e.filename or ''}: no such file" if e.filename else f"{PROG}: error: {e}")
            return EXIT_USAGE
        if debug:
            import traceback
            traceback.print_exc()
        _err(f"{PROG}: internal error: {type(e).__name__}: {e} (run again with --debug for a traceback)")
        return EXIT_FAIL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

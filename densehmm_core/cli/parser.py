"""The argument parser of the ``densehmm`` command line (``--help`` texts live here)."""
from __future__ import annotations

import argparse
import difflib
import sys

from ..hyperparams import add_cli_options
from ..registry import MODEL_KINDS, model_classes
from .common import PROG, UserError
from .inspection import cmd_decode, cmd_evaluate, cmd_export, cmd_info, cmd_sample
from .train import cmd_train


class _Parser(argparse.ArgumentParser):
    """One clear error line; options may be added on first use (:meth:`add_later`): ``densehmm train``'s
    hyper-parameter flags come from the estimators' metadata, and reading it imports the estimators
    (numpy); ``densehmm --help`` and the other commands do not pay for that."""

    def error(self, message):  # one clear line instead of usage + error
        hint = self._suggest(message)
        raise UserError(f"{message}{hint} (see '{self.prog} --help')")

    def _suggest(self, message: str) -> str:
        """``" (did you mean --iter?)"``: the options of the command used closest to the unrecognised
        ones (``--iters`` for ``--iter``); empty when none is close."""
        if not message.startswith("unrecognized arguments:"):
            return ""
        parser: argparse.ArgumentParser = self
        commands = {name: sub for a in self._actions if isinstance(a, argparse._SubParsersAction)
                    for name, sub in a.choices.items()}
        for token in self._argv:
            if token in commands:
                parser = commands[token]
                break
        options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
        pairs = []
        for token in message.split(":", 1)[1].split():
            if token.startswith("--"):
                close = difflib.get_close_matches(token.split("=", 1)[0], options, n=1, cutoff=0.75)
                if close:
                    pairs.append(close[0])
        return f" (did you mean {', '.join(pairs)}?)" if pairs else ""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._later: list = []
        self._argv: list = []   # the arguments parsed (error messages name the command's options)

    def add_later(self, fn) -> None:
        self._later.append(fn)

    def _populate(self) -> None:
        later, self._later = self._later, []
        for fn in later:
            fn(self)

    def parse_known_args(self, args=None, namespace=None):
        self._populate()
        self._argv = [str(a) for a in (sys.argv[1:] if args is None else args)]
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._populate()
        return super().format_help()

    def format_usage(self) -> str:
        self._populate()
        return super().format_usage()


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps one-paragraph descriptions; keeps multi-line texts (the examples) as written."""

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _seed(text: str) -> int:
    """A seed: a non-negative integer (numpy refuses negative seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: give a non-negative integer") from None
    if value < 0 or value >= 2 ** 63:
        raise argparse.ArgumentTypeError(f"invalid seed {text}: give an integer in [0, 2**63)")
    return value


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
  densehmm sweep proteins.fasta --preset paper_protein --grid "n=3,5 l=1,2" --out sweep/ --executor dask

Run 'densehmm COMMAND --help' for the options of a command.
exit status: 0 ok, 1 failure (diverged, internal error), 2 user error, 130 interrupted
"""


def _common(p):
    g = p.add_argument_group("output")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="print no notes and no progress (the command's result and errors are still printed)")
    g.add_argument("-v", "--verbose", action="store_true", help="print every progress event as a line")
    g.add_argument("--debug", action="store_true", help="show a traceback on errors")


def _data_options(p, *, preprocess=True, split=True):
    g = p.add_argument_group("data")
    g.add_argument("--format", default="auto", metavar="FMT",
                   help="input format (default: detected from the extension and the content): "
                        "fasta, word_tag, word_slash_tag, ptb, conll, conllu, medpost")
    g.add_argument("--preset", metavar="NAME",
                   help="paper preprocessing preset: paper_protein, paper_medpost, "
                        "reference_code_protein, reference_code_penn" + ("" if preprocess else
                        " (its reading options and choice of sequences; never its --merge-below: the model's "
                        "vocabulary reads the data)"))
    g.add_argument("--observe", choices=["tags", "words"],
                   help="tagged corpora: observe the tags (default) or the words")
    g.add_argument("--column", type=int, metavar="COL",
                   help="CoNLL: index of the column holding the observed symbols (default 1)")
    g.add_argument("--tagset", choices=["upos", "xpos"], help="CoNLL-U: the tag column (default upos)")
    g.add_argument("--keep-traces", action="store_true",
                   help="Penn Treebank: keep the -NONE- trace leaves (dropped by default)")
    g.add_argument("--mol", choices=["protein", "na", "all"],
                   help="FASTA with mol: fields (RCSB pdb_seqres): the records kept (default protein; 'all' keeps "
                        "every record, as the paper_protein preset does)")
    g.add_argument("--alphabet", metavar="NAME|SYMBOLS",
                   help="FASTA: the symbols (default observed: those seen); protein, protein20, dna, rna, dna_iupac, "
                        "rna_iupac give a fixed vocabulary (other symbols become its wildcard X or N, counted); any "
                        "other text is the alphabet itself (a symbol outside it is an error)")
    g.add_argument("--nucleotide", choices=["dna", "rna"], help="FASTA: dna rewrites U as T, rna T as U")
    g.add_argument("--collapse-tags", action="store_true",
                   help="word/TAG (Brown): collapse the tags' suffixes (fw-nn-tl -> nn; 472 Brown tags -> 104)")
    g.add_argument("--skip-bad-sentences", action="store_true",
                   help="CoNLL, CoNLL-U: read the complete sentences of a file with a broken line (e.g. cut "
                        "short) and count the broken ones (default: the first one is an error)")
    g.add_argument("--encoding", metavar="ENC",
                   help="text encoding of tagged corpora (default utf-8; e.g. latin-1; a UTF-16/32 byte-order "
                        "mark decides by itself)")
    g.add_argument("--subset", type=int, metavar="N",
                   help="use the first N sequences" + (" (with --extra: of DATA; the extra files stay whole)"
                                                       if preprocess else ""))
    if preprocess:
        g.add_argument("--chunk", type=int, metavar="T", dest="chunk_len",
                       help="cut sequences longer than T into pieces of T symbols, in order (a genome "
                            "becomes sequences that --split can hold out)")
        g.add_argument("--max-len", type=int, metavar="T", help="truncate sequences to T symbols")
        g.add_argument("--min-len", type=int, metavar="T", help="drop sequences shorter than T")
        g.add_argument("--merge-below", type=float, metavar="F",
                       help="merge the rarest symbols whose cumulative frequency stays below F "
                            "(e.g. 0.002) into one residual symbol")
    if split == "eval":
        g.add_argument("--split", type=float, default=None, metavar="F",
                       help="the test fraction the model was trained with, to choose --part train or test "
                            "(default: no split, all of DATA)")
    elif split:
        g.add_argument("--split", type=float, default=None, metavar="F",
                       help="fraction of the sequences held out as test data (default 0.5; 0 = no test set)")
    g.add_argument("--seed", type=_seed, default=0,
                   help="seed of the split, initialisation and demo data (default 0)" if preprocess else
                   "seed of the split (with --split: the one used for training) and of the demo data (default 0)")
    _word_options(p, vocabulary=preprocess)


def _word_options(p, *, vocabulary: bool) -> None:
    """Words mode of tagged corpora (docs/DATA.md, 'Words mode')."""
    g = p.add_argument_group("vocabulary (tagged corpora: of the words with --observe words, else of the tags)")
    g.add_argument("--lowercase", action="store_true",
                   help="lower-case the words (default: as written, as the library reads them; the app's Data "
                        "panel lower-cases by default; keep the case for --symbol-features orthographic)"
                   if vocabulary else "look the words up lower-cased (default: as the model's training data were read, "
                                      "recorded in its file)")
    if vocabulary:
        g.add_argument("--min-count", type=int, metavar="K",
                       help="words seen fewer than K times are rare (default 2: words seen once become <unk>, "
                            "which later also reads words the model never saw; 1 keeps every word)")
        g.add_argument("--max-vocab", type=int, metavar="M",
                       help="at most M symbols: the most frequent words plus the rare-word symbols")
        g.add_argument("--rare", choices=["unk", "shape"],
                       help="rare words become one <unk> symbol (default) or their word-shape class "
                            "(<unk-cap>, <unk-num>, <unk-ing>, ...)")
        g.add_argument("--extra", action="append", metavar="FILE", default=None,
                       help="more unlabelled text for the same training corpus (repeatable); one "
                            "vocabulary over all files; the gold tags are those of DATA only")


def _model_and_data_args(p, verb: str) -> None:
    """MODEL.h5 and DATA positionals plus the options that choose what of DATA to use."""
    p.add_argument("model_file", metavar="MODEL.h5")
    p.add_argument("data", metavar="DATA", help="data file, or 'demo'")
    _name_option(p)
    _data_options(p, preprocess=False, split="eval")
    p.add_argument("--skip-unknown", action="store_true",
                   help="leave out the sequences holding symbols the model does not know (instead of the "
                        "error given when the model has no unknown/residual symbol to read them as)")
    p.add_argument("--chunk", type=int, metavar="T", dest="chunk_len",
                   help="cut sequences longer than T into pieces of T symbols (default: as the model's "
                        "training data were cut, if they were)")
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
    from .. import __version__
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
  densehmm train wsj.mrg --observe words --lowercase --min-count 2 --rare shape --extra brown_all.txt \\
           --model standard --states 45 --split 0 --out words.h5
  densehmm train genome.fna.gz --chunk 10000 --model dense --method em --states 8 --dim 4 --out dna.h5

Ctrl-C stops after the current chunk of work and saves what was trained so far (with --out).
DATA is a FASTA or tagged-corpus file, or 'demo' for the built-in synthetic data set.""")
    p.add_argument("data", metavar="DATA", nargs="?", help="data file, or 'demo'")
    p.add_argument("--demo", action="store_true", help="use the built-in synthetic data set (same as DATA=demo)")
    model_group = p.add_argument_group("model")
    model_group.add_argument("--model", choices=list(MODEL_KINDS), default=None, help="model type (default dense)")
    model_group.add_argument("--fair", action="store_true",
                             help="standard HMM with the number of states that gives about the parameter count of "
                                  "a DenseHMM with --states and --dim (the paper's 'fair' standard HMM)")
    g = p.add_argument_group("training")
    # every hyper-parameter flag comes from the estimators' metadata (densehmm_core.hyperparams), added
    # when the train command is used (its --help too)
    p.add_later(lambda _p, groups={"model": model_group, "training": g}: add_cli_options(groups, model_classes()))
    g.add_argument("--paper-settings", action="store_true",
                   help="dense: the paper's settings (random start, init scale 1; cooc: plain Adam, lr 0.001, "
                        "10,000 steps, raw Frobenius loss; em: 25 Adam steps at lr 0.01 per M-step, 40 iterations)")
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
  densehmm evaluate words.h5 en_ewt-ud-test.conllu

Symbols are mapped to the model's vocabulary by their strings; symbols the model does not know
go to its residual (merged) symbol or <unk> when it has one (their number is printed), else they
are an error naming how many there are (--skip-unknown leaves out the sequences holding them).
Words the model does not know go to their word-shape class when the model has them. DATA is read the way the
model's training data were (--observe, --tagset, --lowercase) unless given. When DATA has gold
tags, the tagging scores are printed too: many-to-one (M-1) and one-to-one accuracy, V-measure.""")
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
                                   "the model's vocabulary (a space inside one as U+00A0), one sequence per line.",
                       epilog="""\
examples:
  densehmm sample protein.h5 -n 10 --length 50
  densehmm sample protein.h5 -n 3 --length 80 --fasta > sampled.fasta
  densehmm sample tags.h5 -n 5 --length 20 --states --seed 7""")
    p.add_argument("model_file", metavar="MODEL.h5")
    _name_option(p)
    p.add_argument("-n", "--n-sequences", type=int, default=10, metavar="N", help="number of sequences (default 10)")
    p.add_argument("--length", type=int, default=50, metavar="T", help="length of each sequence (default 50)")
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    p.add_argument("--sep", default=None, help="separator between symbols (default: none when every symbol is "
                                               "one character, else a space)")
    p.add_argument("--states", action="store_true", help="also print the hidden states (a second line)")
    p.add_argument("--fasta", action="store_true", help="write FASTA records")
    _common(p)
    p.set_defaults(func=cmd_sample)

    # ---- decode
    p = sub.add_parser("decode", formatter_class=_formatter, help="Viterbi state paths of sequences (TSV)",
                       description="Most likely hidden state path of every sequence of DATA (Viterbi), as TSV: "
                                   "index, id (when the data name their sequences), length, log-probability "
                                   "of the path, states (space-separated); with --symbols the observed "
                                   "symbols; for words the words as written; with gold tags the gold tags and "
                                   "each state's mapped tag (many-to-one mapping on DATA). Every per-token "
                                   "column has one space-separated entry per token: a space inside a word is "
                                   "written as U+00A0 (no-break space).",
                       epilog="""\
examples:
  densehmm decode protein.h5 seqs.fasta > states.tsv
  densehmm decode tags.h5 tags.txt --name em20 --symbols | head
  densehmm decode words.h5 en_ewt-ud-test.conllu | cut -f 2,6-8 | head""")
    _model_and_data_args(p, "decode")
    p.add_argument("--symbols", action="store_true", help="add a column with the observed symbols")
    _common(p)
    p.set_defaults(func=cmd_decode)

    # ---- export
    p = sub.add_parser("export", formatter_class=_formatter, help="export matrices and embeddings to CSV",
                       description="Write one CSV file per array (startprob, transmat, emissionprob and, for "
                                   "dense models, U, Z, W, V, z_start; with symbol features feature_V) "
                                   "and the vocabulary (vocabulary.csv) into a folder, or into a .zip. The "
                                   "folder then holds exactly this model's files: a previous export there is "
                                   "replaced (files this model lacks are removed); a folder holding other "
                                   "files is refused. An existing .zip is replaced.",
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
    if with_reproduce:
        from ..experiments.cli import add_reproduce_parser
        add_reproduce_parser(sub)
    else:
        sub.add_parser("reproduce", help="reproduce the paper's experiments (CSV + figures)", add_help=False)

    # ---- sweep (owned by densehmm_core.experiments.cli)
    from ..experiments.cli import add_sweep_parser
    add_sweep_parser(sub, lambda sp: (_data_options(sp, split=True), _common(sp)), _formatter)
    return parser

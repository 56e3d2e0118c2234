"""Loading the data a command works on (files or the synthetic demo) and encoding it for a model."""
from __future__ import annotations

import os
from typing import Optional

from .common import UserError, _user_error_types


def _is_demo(spec) -> bool:
    return spec is not None and str(spec).lower() == "demo" and not os.path.exists(str(spec))


def _demo(seed: int):
    """The built-in synthetic data set: (train, test, true-parameters), as Corpus objects."""
    from ..data import Corpus
    from ..synthetic import demo_dataset
    train, test, true = demo_dataset(seed)
    vocabulary = [str(i) for i in range(true[2].shape[1])]  # true = (startprob, transmat, emissionprob)

    def wrap(part, which):
        return Corpus(part, vocabulary, provenance={
            "source": "synthetic demo (densehmm_core.synthetic.demo_dataset)", "seed": seed, "part": which})
    return wrap(train, "train"), wrap(test, "test"), true


def _load_corpus(path: str, args, *, preprocess: bool):
    """Read a data file through densehmm_core.data.load with the command's options.

    Preprocessing options given on the command line override those of ``--preset``.
    """
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{path}: is a folder, not a data file")
    from .. import data as data_mod
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


def _residual_symbol(vocabulary, provenance=None) -> Optional[str]:
    """The residual symbol (the merged rare symbols) of a model's vocabulary, if it has one."""
    from ..data.corpus import DEFAULT_RESIDUAL
    names = []
    for step in (provenance or {}).get("preprocessing", []) or []:
        if isinstance(step, dict) and step.get("step") == "merge_below" and step.get("residual_symbol"):
            names.append(str(step["residual_symbol"]))
    names.append(DEFAULT_RESIDUAL)
    for c in names:
        if c in vocabulary:
            return c
    return None


def _encode_for_model(corpus, model, source: str):
    """The corpus encoded with the model's vocabulary (:meth:`Corpus.encode_with`); symbols the
    model does not know go to its residual symbol when it has one, else they are an error."""
    vocabulary = model.vocabulary
    if vocabulary is None:  # a model without symbol names: the indices must fit
        top = max(int(s.max()) for s in corpus.sequences)
        if top >= model.n_symbols:
            raise UserError(f"{source}: the data use {top + 1} symbols but the model knows only {model.n_symbols}")
        return corpus
    unknown = _residual_symbol(vocabulary, getattr(model, "provenance_", None))
    try:
        return corpus.encode_with(vocabulary, unknown=unknown)
    except ValueError as e:
        raise UserError(f"{source}: the model cannot read these data: {e}") from None


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
    part = getattr(args, "part", "all")
    if _is_demo(args.data):
        train, test, _ = _demo(args.seed)
        corpus = {"train": train, "test": test}.get(part) or _concat(train, test)
        source = "demo"
    else:
        corpus = _load_corpus(args.data, args, preprocess=False)
        split = getattr(args, "split", None)
        if part != "all":
            if not split:
                raise UserError("--part train/test needs --split F (the split used for training)")
            train, test = _split(corpus, split, args.seed)
            corpus = train if part == "train" else test
        source = args.data
    corpus = _encode_for_model(corpus, model, source)
    return corpus.sequences, corpus


def _concat(a, b):
    from ..data import Corpus
    return Corpus(list(a.sequences) + list(b.sequences), a.vocabulary, provenance=a.provenance, validate=False)

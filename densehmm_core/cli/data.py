"""Loading the data a command works on (files or the synthetic demo) and encoding it for a model."""
from __future__ import annotations

import os
from typing import Optional

from .common import UserError, _user_error_types


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
    from ..synthetic import demo_dataset
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


def _residual_symbol(vocabulary, provenance=None) -> Optional[int]:
    """Index of the residual symbol (the merged rare symbols) of a model's vocabulary, if any."""
    names = []
    for step in (provenance or {}).get("preprocessing", []) or []:
        if isinstance(step, dict) and step.get("step") == "merge_below" and step.get("residual_symbol"):
            names.append(str(step["residual_symbol"]))
    try:
        from ..data.corpus import DEFAULT_RESIDUAL
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

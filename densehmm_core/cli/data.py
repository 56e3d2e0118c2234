"""Loading the data a command works on (files or the synthetic demo) and encoding it for a model."""
from __future__ import annotations

import os
from typing import Optional

from ..commandline import load_corpus as _load_corpus
from .common import UserError, _check_inference_memory, _err


def _is_demo(spec) -> bool:
    return spec is not None and str(spec).lower() == "demo" and not os.path.exists(str(spec))


def _refuse_reading_options(args) -> None:
    """The demo data are generated, not read: a reading or preprocessing option given with them would change
    nothing (one line naming it, exit 2; ``--preset`` and ``--split`` have their own messages)."""
    from ..commandline import DATA_OPTION_DESTS, OPTION_FLAGS
    for dest in DATA_OPTION_DESTS + ("extra", "skip_unknown"):
        value = getattr(args, dest, None)
        if dest in ("preset", "split") or value is None or value is False or value == [] or \
                (dest == "format" and value == "auto"):
            continue
        flag = OPTION_FLAGS.get(dest) or "--" + dest.replace("_", "-")
        raise UserError(f"{flag} applies to data files; the demo data are generated, not read (give a DATA file, "
                        f"or leave {flag} out)")


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


def _check_split(fraction: Optional[float]) -> None:
    if fraction is not None and not 0.0 <= fraction < 1.0:  # NaN fails this too
        raise UserError(f"--split must lie in [0, 1), got {fraction}")


def _split(corpus, fraction: Optional[float], seed: int, training: bool = True):
    """(train, test) parts of ``corpus`` (test None without a split).  The sentences of ``--extra`` files
    (unlabelled, after DATA's) all go to the training part: DATA alone is split, as ``evaluate --split F
    --part test`` splits it, so the test part is DATA's sentences with their gold tags."""
    _check_split(fraction)
    if not fraction:
        return corpus, None
    n_extra = _n_extra_sentences(corpus)
    if len(corpus.sequences) - n_extra < 2:
        raise UserError("the data hold a single sequence: it cannot be split (--chunk T cuts it into pieces "
                        "of T symbols" + ("; --split 0 trains on all of it)" if training else ")"))
    try:
        if not n_extra:
            return corpus.split(fraction, seed=seed)
        from ..maths import split_indices
        n = corpus.n_sequences - n_extra
        data_train, test = corpus.select(range(n)).split(fraction, seed=seed)
        train_idx, _ = split_indices(n, fraction, seed)   # the sentences data_train holds (Corpus.split's)
        train = corpus.select(list(train_idx) + list(range(n, corpus.n_sequences)))
        train.provenance["split"] = dict(data_train.provenance["split"], extra_in_train=n_extra)
        return train, test
    except ValueError as e:
        raise UserError(f"cannot split the data: {e}") from None


def _n_extra_sentences(corpus) -> int:
    """How many sentences of ``corpus`` come from ``--extra`` files (they follow DATA's, without gold tags)."""
    if not (getattr(corpus, "provenance", None) or {}).get("extra") or corpus.tags is None:
        return 0
    return corpus.n_sequences - len(corpus.labelled_indices())


def _encode_for_model(corpus, model, source: str, *, lowercase: bool = False, skip_unknown: bool = False,
                      quiet: bool = False):
    """The corpus encoded with the model's vocabulary (:func:`densehmm_core.data.encode_for_model`,
    also used by the app); data the model cannot read are a one-line error that says how many
    symbols it lacks and what to do; symbols read as its unknown symbol (or sequences left
    out with ``skip_unknown``) are counted on stderr."""
    from ..data import encode_for_model, unknown_report
    prov = getattr(model, "provenance_", None)
    rep = unknown_report(corpus, model.vocabulary, provenance=prov, lowercase=lowercase)
    try:
        out = encode_for_model(corpus, model.vocabulary, model.n_symbols, provenance=prov, lowercase=lowercase,
                               on_unknown="skip" if skip_unknown else "map")
    except ValueError as e:
        if model.vocabulary is None:
            raise UserError(f"{source}: {e}") from None
        hint = ""
        if rep["types"] and not skip_unknown:
            read = prov.get("options") if isinstance(prov, dict) else None
            words = isinstance(read, dict) and read.get("observe") == "words"   # <unk> is a word model's
            hint = (f"; the model has no unknown symbol to read them as: --skip-unknown leaves out the "
                    f"{rep['sentences']} of {rep['total_sentences']} sequences holding them"
                    + (" (a word model trained with the default --min-count 2 has <unk>)" if words else ""))
        raise UserError(f"{source}: the model cannot read these data: {e}{hint}") from None
    if rep["types"] and not quiet:
        shown = ", ".join(repr(w) for w in rep["examples"][:5])
        what = (f"left out the {rep['sentences']} of {rep['total_sentences']} sequences holding them"
                if skip_unknown else f"read as {rep['unknown_symbol']!r}")
        _err(f"note: {source}: {rep['types']} symbol(s) the model does not know ({rep['tokens']} of "
                   f"{rep['total_tokens']} tokens; e.g. {shown}): {what}")
    return out


def _load_train_data(args):
    """(train, test) for the train command."""
    spec = "demo" if args.demo else args.data
    if spec is None:
        raise UserError("give a DATA file (or 'demo')")
    if _is_demo(spec):
        _check_split(args.split)
        if args.split not in (None, 0):
            raise UserError("--split applies to data files; the demo data come with their own test part "
                            "(--split 0 drops it)")
        preset = getattr(args, "preset", None)
        if preset is not None:
            from .. import data as data_mod
            if preset not in data_mod.PRESETS:
                raise UserError(f"unknown preset {preset!r} (choose one of: {', '.join(sorted(data_mod.PRESETS))})")
            raise UserError("--preset applies to data files, not to the demo data")
        _refuse_reading_options(args)
        train, test, _ = _demo(args.seed)
        if args.split == 0:
            test = None
        return train, test
    corpus = _load_corpus(spec, args, preprocess=True)
    split = 0.5 if args.split is None else args.split
    return _split(corpus, split, args.seed)


def _load_eval_data(args, model):
    """(sequences, corpus, data) for evaluate/decode: ``corpus`` is encoded with the model's
    vocabulary, ``data`` is the same sequences as read (words as written, for display)."""
    part = getattr(args, "part", "all")
    read_as: dict = {}
    if _is_demo(args.data):
        if getattr(args, "preset", None) is not None:
            raise UserError("--preset applies to data files, not to the demo data")
        _refuse_reading_options(args)
        train, test, _ = _demo(args.seed)
        corpus = {"train": train, "test": test}.get(part) or _concat(train, test)
        source = "demo"
    else:
        from ..data import training_read_options
        read_as = training_read_options(model)
        corpus = _load_corpus(args.data, args, preprocess=False, read_as=read_as)
        split = getattr(args, "split", None)
        if part != "all":
            if not split:
                raise UserError("--part train/test needs --split F (the split used for training)")
            train, test = _split(corpus, split, args.seed, training=False)
            corpus = train if part == "train" else test
        source = args.data
    data_corpus = corpus
    lowercase = bool(getattr(args, "lowercase", None) or read_as.get("lowercase"))
    corpus = _encode_for_model(corpus, model, source, lowercase=lowercase,
                               skip_unknown=bool(getattr(args, "skip_unknown", False)),
                               quiet=bool(getattr(args, "quiet", False)))
    _check_inference_memory(model, corpus.sequences, fitting=False)
    return corpus.sequences, corpus, data_corpus


def _concat(a, b):
    from ..data import Corpus
    return Corpus(list(a.sequences) + list(b.sequences), a.vocabulary, provenance=a.provenance, validate=False)

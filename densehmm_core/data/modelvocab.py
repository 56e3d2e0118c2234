"""Reading data with a trained model's alphabet: symbols matched by name, not by index.

Used by the command line (``evaluate``, ``decode``) and the app (Score, Decode, Compare)
alike, so both accept the same files and say the same thing about those they cannot read.
"""
from __future__ import annotations

from typing import Any, Collection, Dict, Optional, Sequence

import numpy as np

from .corpus import DEFAULT_RESIDUAL, Corpus
from .tokens import DEFAULT_UNKNOWN
from .wordshape import SHAPE_CLASSES

__all__ = ["residual_symbol", "encode_for_model", "unknown_report", "ON_UNKNOWN", "MODEL_READ_OPTIONS",
           "MOSTLY_UNKNOWN", "training_read_options", "reading_for_model", "read_as_for_model"]

#: What :func:`encode_for_model` does with symbols a model does not know.
ON_UNKNOWN = ("map", "skip")

#: The reading options of a model's training data that data read for the model take (where they apply to the
#: data's format and the caller does not set them): what the symbols are (words or tags, tag set, alphabet), never
#: what builds a vocabulary (the model's decides).  The command line's evaluate/decode and the app's Score/Decode.
MODEL_READ_OPTIONS = ("observe", "tagset", "drop_traces", "collapse_tags", "mol", "alphabet", "uppercase",
                      "strip_stop", "nucleotide")

#: The share of a data set's tokens unknown to a model from which :func:`unknown_report` says
#: ``mostly_unknown``: data of another kind than the model's (tags for a words model), not data to score.
MOSTLY_UNKNOWN = 0.9


def training_read_options(model, provenance: Optional[dict] = None) -> dict:
    """The reader options of the model's training data (from its provenance, as its file keeps them; or from
    ``provenance``, its training data's, where the model has none: a model trained in the app), or {}; with
    the length its sequences were cut to (``chunk_len``, a preprocessing option), when they were."""
    prov = getattr(model, "provenance_", None) or provenance or {}
    options = prov.get("options") if isinstance(prov, dict) else None
    out = dict(options) if isinstance(options, dict) else {}
    pre = prov.get("preprocess_options") if isinstance(prov, dict) else None
    chunk = pre.get("chunk_len") if isinstance(pre, dict) else None
    if isinstance(chunk, int) and not isinstance(chunk, bool) and chunk >= 1:
        out["chunk_len"] = chunk
    return out


def reading_for_model(read_as: Optional[dict]) -> Dict[str, Any]:
    """The reader defaults (``data.load(..., defaults=)``) of data read for a model whose training data were
    read with ``read_as`` (:func:`training_read_options`): its :data:`MODEL_READ_OPTIONS`, and every word as
    written (``min_count`` 1): the model's vocabulary decides which it knows (its ``lowercase`` acts when
    encoding, :func:`encode_for_model`)."""
    out = {k: v for k, v in (read_as or {}).items() if k in MODEL_READ_OPTIONS}
    out["min_count"] = 1
    return out


def read_as_for_model(options: Optional[dict], read_as: Optional[dict]) -> bool:
    """Whether data read with the reader ``options`` (a Corpus's ``provenance["options"]``, defaults included)
    were read as :func:`reading_for_model` reads data for a model whose training data were read with
    ``read_as`` (:func:`training_read_options`): the same :data:`MODEL_READ_OPTIONS` where both name one, every
    word kept (min. count 1, no vocabulary size) and not lower-cased unless the model's words were."""
    options, read_as = options or {}, read_as or {}
    want = reading_for_model(read_as)
    if any(key in options and options[key] != value for key, value in want.items() if key != "min_count"):
        return False
    if options.get("observe") != "words":      # (the word options act on words only)
        return True
    return (options.get("min_count") in (None, 0, 1) and not options.get("max_vocab")
            and not (options.get("lowercase") and not read_as.get("lowercase")))


def residual_symbol(vocabulary: Collection[str], provenance: Optional[dict] = None) -> Optional[str]:
    """The residual symbol of a model's vocabulary (the merged rare symbols, or the unknown
    word), if it has one: the symbols it does not know are read as this one.  ``vocabulary``:
    the symbols in index order, or a set of them."""
    names = []
    for step in (provenance or {}).get("preprocessing", []) or []:
        if isinstance(step, dict) and step.get("step") == "merge_below" and step.get("residual_symbol"):
            names.append(str(step["residual_symbol"]))
    names.append(DEFAULT_RESIDUAL)
    options = (provenance or {}).get("options")
    if isinstance(options, dict) and options.get("unknown_symbol"):
        names.append(str(options["unknown_symbol"]))
    names.append(DEFAULT_UNKNOWN)
    # (a 30,000-word list searched once per name took ms each; a caller with a set passes it)
    known = vocabulary if isinstance(vocabulary, (set, frozenset, dict)) else set(vocabulary)
    for c in names:
        if c in known:
            return c
    return None


def _shapes(names: Collection[str]) -> bool:
    """Whether the vocabulary (as a set: a 30,000-word list searched 24 times took 8 ms) has
    word-shape classes."""
    return any(c in names for c in SHAPE_CLASSES[:-1])


def unknown_report(corpus: Any, vocabulary: Optional[Sequence[str]], *, provenance: Optional[dict] = None,
                   lowercase: bool = False) -> Dict[str, Any]:
    """What a model with ``vocabulary`` would not know in ``corpus`` (before encoding it).

    Returns a dict: ``types`` (symbols the model lacks, after the look-ups of
    :func:`encode_for_model`: lower-cased with ``lowercase``, word-shape class when the
    model has them), ``tokens`` (their occurrences), ``total_tokens``, ``sentences``
    (sequences holding at least one of them), ``total_sentences``, ``examples`` (up to 8 of
    them, most frequent first) and ``unknown_symbol`` (the model's residual symbol that
    would read them, or None: then :func:`encode_for_model` refuses them unless told to
    ``skip`` the sentences).  Without symbol names (``vocabulary`` None or a list of arrays)
    every count is 0.  ``mostly_unknown``: at least :data:`MOSTLY_UNKNOWN` of the tokens are unknown (the
    data are not of the model's kind: a score or a decoding would mean nothing).
    """
    n_seq = len(corpus.sequences) if isinstance(corpus, Corpus) else len(corpus)
    out: Dict[str, Any] = {"types": 0, "tokens": 0, "total_tokens": 0, "sentences": 0, "total_sentences": n_seq,
                           "examples": [], "unknown_symbol": None, "mostly_unknown": False}
    if vocabulary is None or not isinstance(corpus, Corpus):
        return out
    vocabulary = [str(v) for v in vocabulary]
    known = set(vocabulary)
    unknown = residual_symbol(known, provenance)
    missing = corpus.unmatched(vocabulary, lowercase=lowercase, shapes=_shapes(known), unknown=unknown)
    counts = corpus.symbol_counts
    bad = np.zeros(corpus.n_symbols, dtype=bool)
    bad[missing] = True
    order = sorted(missing, key=lambda i: (-int(counts[i]), corpus.vocabulary[i]))
    out.update(types=len(missing), tokens=int(counts[missing].sum()) if missing else 0,
               total_tokens=int(corpus.n_tokens), unknown_symbol=unknown,
               sentences=int(sum(1 for s in corpus.sequences if len(s) and bad[s].any())) if missing else 0,
               examples=[corpus.vocabulary[i] for i in order[:8]])
    out["mostly_unknown"] = bool(out["total_tokens"] and out["tokens"] >= MOSTLY_UNKNOWN * out["total_tokens"])
    return out


def encode_for_model(corpus: Any, vocabulary: Optional[Sequence[str]], n_symbols: int, *,
                     provenance: Optional[dict] = None, lowercase: bool = False, on_unknown: str = "map") -> Any:
    """``corpus`` re-encoded with a model's vocabulary (:meth:`Corpus.encode_with`).

    Symbols are matched by name, so a model trained on 21 amino acids reads a file whose
    records use only 20 of them.  Symbols the model does not know go to its residual symbol
    (:func:`residual_symbol`) when it has one; words are also looked up lower-cased with
    ``lowercase``, and unknown words go to their word-shape class when the vocabulary has it.

    Parameters
    ----------
    corpus : Corpus or list of int arrays
        The data.  Without symbol names (a list of arrays, or a model without a vocabulary)
        the indices are used as they are, and must be below ``n_symbols``.
    vocabulary : sequence of str or None
        The model's symbols in index order (``model.vocabulary``).
    n_symbols : int
        The model's number of symbols.
    provenance : dict, optional
        The model's ``provenance_`` (names its residual symbol).
    on_unknown : {"map", "skip"}, default "map"
        Symbols the model does not know: ``"map"`` reads them as its residual symbol (an
        error when it has none); ``"skip"`` leaves out the sequences that hold them (the
        provenance records a ``skip_unknown`` step with their number).  See
        :func:`unknown_report` to count them first.

    Raises
    ------
    ValueError
        The data use symbols the model does not know (named, with their token count) and
        it has no residual symbol, or every sequence holds one with ``"skip"``, or, without
        names, indices the model does not have.
    """
    if on_unknown not in ON_UNKNOWN:
        raise ValueError(f"on_unknown must be one of {ON_UNKNOWN}, got {on_unknown!r}")
    if vocabulary is None or not isinstance(corpus, Corpus):
        seqs = corpus.sequences if isinstance(corpus, Corpus) else corpus
        top = max((int(max(s)) for s in seqs if len(s)), default=-1)
        if top >= int(n_symbols):
            raise ValueError(f"the data use {top + 1} symbols but the model knows only {n_symbols}")
        return corpus
    vocabulary = list(vocabulary)
    if vocabulary != corpus.vocabulary:   # (the corpus's own names, the usual case: 5 ms saved at 30,000)
        vocabulary = [str(v) for v in vocabulary]
    known = set(vocabulary)
    unknown = residual_symbol(known, provenance)
    shapes = _shapes(known)
    if on_unknown == "skip":
        missing = corpus.unmatched(vocabulary, lowercase=lowercase, shapes=shapes, unknown=unknown)
        if missing:
            bad = np.zeros(corpus.n_symbols, dtype=bool)
            bad[missing] = True
            keep = [i for i, s in enumerate(corpus.sequences) if not bad[s].any()]
            if not keep:
                raise ValueError(f"every one of the {corpus.n_sequences} sequences holds a symbol the model "
                                 f"does not know")
            corpus = corpus.select(keep, step={"step": "skip_unknown", "skipped_sequences":
                                               corpus.n_sequences - len(keep), "unknown_types": len(missing)})
    return corpus.encode_with(vocabulary, unknown=unknown, lowercase=lowercase, shapes=shapes)

"""Reading data with a trained model's alphabet: symbols matched by name, not by index.

Used by the command line (``evaluate``, ``decode``) and the app (Score, Decode, Compare)
alike, so both accept the same files and say the same thing about those they cannot read.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .corpus import DEFAULT_RESIDUAL, Corpus
from .tokens import DEFAULT_UNKNOWN
from .wordshape import SHAPE_CLASSES

__all__ = ["residual_symbol", "encode_for_model"]


def residual_symbol(vocabulary: Sequence[str], provenance: Optional[dict] = None) -> Optional[str]:
    """The residual symbol of a model's vocabulary (the merged rare symbols, or the unknown
    word), if it has one: the symbols it does not know are read as this one."""
    names = []
    for step in (provenance or {}).get("preprocessing", []) or []:
        if isinstance(step, dict) and step.get("step") == "merge_below" and step.get("residual_symbol"):
            names.append(str(step["residual_symbol"]))
    names.append(DEFAULT_RESIDUAL)
    options = (provenance or {}).get("options")
    if isinstance(options, dict) and options.get("unknown_symbol"):
        names.append(str(options["unknown_symbol"]))
    names.append(DEFAULT_UNKNOWN)
    for c in names:
        if c in vocabulary:
            return c
    return None


def encode_for_model(corpus: Any, vocabulary: Optional[Sequence[str]], n_symbols: int, *,
                     provenance: Optional[dict] = None, lowercase: bool = False) -> Any:
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

    Raises
    ------
    ValueError
        The data use symbols the model does not know (named, with their token count), or,
        without names, indices the model does not have.
    """
    if vocabulary is None or not isinstance(corpus, Corpus):
        seqs = corpus.sequences if isinstance(corpus, Corpus) else corpus
        top = max((int(max(s)) for s in seqs if len(s)), default=-1)
        if top >= int(n_symbols):
            raise ValueError(f"the data use {top + 1} symbols but the model knows only {n_symbols}")
        return corpus
    vocabulary = [str(v) for v in vocabulary]
    unknown = residual_symbol(vocabulary, provenance)
    shapes = any(c in vocabulary for c in SHAPE_CLASSES[:-1])
    return corpus.encode_with(vocabulary, unknown=unknown, lowercase=lowercase, shapes=shapes)

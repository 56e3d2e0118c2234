"""Normalisation of the data layouts the models accept."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

__all__ = ["as_sequences", "n_tokens", "infer_n_symbols", "data_vocabulary", "check_vocabulary"]


def data_vocabulary(data: Any) -> Optional[List[str]]:
    """The vocabulary that numbers ``data``'s symbols: a Corpus's ``vocabulary`` (None for plain sequences)."""
    return getattr(data, "vocabulary", None) if not isinstance(data, np.ndarray) else None


def check_vocabulary(data: Any, vocabulary: Optional[Sequence[str]]) -> None:
    """A ``ValueError`` when ``data`` (a Corpus) number their symbols by another vocabulary than
    ``vocabulary`` (a model's): its symbol k would be read as the model's symbol k, and every number
    would be wrong.  Plain sequences, and a model without a vocabulary, are not checked."""
    vocab = data_vocabulary(data)
    if vocab is None or vocabulary is None or vocab is vocabulary:
        return
    vocab, mine = list(vocab), list(vocabulary)
    if vocab == mine:
        return
    same = sum(1 for a, b in zip(vocab, mine) if a == b)
    raise ValueError(f"the data number their symbols by another vocabulary than the model's ({len(vocab)} "
                     f"symbols against {len(mine)}, {same} at the same index): re-encode them with "
                     f"data.encode_with(model.vocabulary)")


def is_one_sequence(data: Any) -> bool:
    """Whether ``data`` given without ``lengths`` is one sequence: hmmlearn's ``X`` of shape (N,) or
    (N, 1), or a flat list of integers (the rule of :func:`as_sequences`)."""
    if isinstance(data, np.ndarray):
        return data.dtype != object and (data.ndim == 1 or (data.ndim == 2 and data.shape[1] == 1))
    if hasattr(data, "sequences"):
        return False
    try:
        items = list(data)
    except TypeError:
        return False
    return bool(items) and all(np.ndim(s) == 0 for s in items)


def as_sequences(data: Any, lengths: Optional[Sequence[int]] = None,
                 n_symbols: Optional[int] = None, vocabulary: Optional[Sequence[str]] = None) -> List[np.ndarray]:
    """Return the data as a list of 1-D int64 arrays.

    Parameters
    ----------
    data : list of 1-D int arrays, array X with ``lengths`` (hmmlearn layout), or a Corpus
        Anything with a ``.sequences`` attribute is treated as a Corpus.  Without ``lengths``, an
        array of shape (N,) or (N, 1) (hmmlearn's ``X``) and a flat list of integers are one
        sequence; a 2-D array of shape (k, T) with T > 1 is k sequences of length T (its rows).
    lengths : sequence of int, optional
        hmmlearn's lengths; ``X`` may then have shape (N,) or (N, 1).
    n_symbols : int, optional
        If given, every symbol must lie in ``0 .. n_symbols - 1``.
    vocabulary : list of str, optional
        The model's vocabulary: a Corpus numbered by another one is refused (:func:`check_vocabulary`).

    Raises
    ------
    ValueError
        Empty input, a sequence of length 0, a non-integer symbol, a symbol out of range, or a
        Corpus numbered by another vocabulary.
    """
    check_vocabulary(data, vocabulary)
    if hasattr(data, "sequences") and not isinstance(data, np.ndarray):
        data = data.sequences
    if lengths is not None:
        X = np.asarray(data)
        if X.ndim == 2:
            if X.shape[1] != 1:
                raise ValueError(f"X must have shape (N,) or (N, 1), got {X.shape}")
            X = X[:, 0]
        lens = np.asarray(lengths, dtype=np.int64)
        if lens.ndim != 1 or np.any(lens < 1):
            raise ValueError("lengths must be a 1-D sequence of positive integers")
        if int(lens.sum()) != X.shape[0]:
            raise ValueError(f"sum(lengths) = {int(lens.sum())} does not match len(X) = {X.shape[0]}")
        bounds = np.concatenate([[0], np.cumsum(lens)])
        seqs = [X[bounds[i]:bounds[i + 1]] for i in range(len(lens))]
    elif isinstance(data, np.ndarray) and is_one_sequence(data):   # hmmlearn's X without lengths
        seqs = [data.reshape(-1)]
    else:
        seqs = list(data)      # once: data may be an iterator
        if is_one_sequence(seqs):                                   # a flat list of symbols
            seqs = [np.asarray(seqs)]
    if len(seqs) == 0:
        raise ValueError("no sequences given")
    out = []
    for i, s in enumerate(seqs):
        a = np.asarray(s)
        if a.ndim == 2 and a.shape[1] == 1:
            a = a[:, 0]
        if a.ndim != 1:
            raise ValueError(f"sequence {i} is not one-dimensional (shape {a.shape})")
        if a.shape[0] == 0:
            raise ValueError(f"sequence {i} is empty; every sequence needs length >= 1")
        if a.dtype.kind not in "iu":
            if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
                a = a.astype(np.int64)
            else:
                raise ValueError(f"sequence {i} holds non-integer symbols (dtype {a.dtype})")
        a = a.astype(np.int64, copy=False)
        if n_symbols is not None:
            lo, hi = int(a.min()), int(a.max())
            if lo < 0 or hi >= n_symbols:
                bad = lo if lo < 0 else hi
                raise ValueError(
                    f"sequence {i} holds symbol {bad}, outside 0..{n_symbols - 1} (the model has {n_symbols} symbols)")
        elif int(a.min()) < 0:
            raise ValueError(f"sequence {i} holds negative symbol {int(a.min())}")
        out.append(a)
    return out


def n_tokens(seqs: Sequence[np.ndarray]) -> int:
    return int(sum(len(s) for s in seqs))


def infer_n_symbols(data: Any) -> Optional[int]:
    """The vocabulary size of a Corpus, else None (callers fall back to max symbol + 1)."""
    vocab = data_vocabulary(data)
    return None if vocab is None else len(vocab)

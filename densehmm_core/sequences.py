"""Normalisation of the data layouts the models accept."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

__all__ = ["as_sequences", "n_tokens", "infer_n_symbols"]


def as_sequences(data: Any, lengths: Optional[Sequence[int]] = None,
                 n_symbols: Optional[int] = None) -> List[np.ndarray]:
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

    Raises
    ------
    ValueError
        Empty input, a sequence of length 0, a non-integer symbol, or a symbol out of range.
    """
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
    elif isinstance(data, np.ndarray) and data.dtype != object and (
            data.ndim == 1 or (data.ndim == 2 and data.shape[1] == 1)):
        seqs = [data.reshape(-1)]        # hmmlearn's X without lengths: one sequence
    else:
        seqs = list(data)
        if seqs and all(np.ndim(s) == 0 for s in seqs):     # a flat list of symbols: one sequence
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
    vocab = getattr(data, "vocabulary", None)
    if vocab is not None and not isinstance(data, np.ndarray):
        return len(vocab)
    return None

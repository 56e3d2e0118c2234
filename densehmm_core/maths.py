"""The numpy maths shared by the estimators, the model files, the metrics and the experiments.

One home for each formula (issue 12):

* :func:`softmax` -- numerically stable softmax along an axis.
* :func:`stationary_distribution` -- ``pi`` with ``pi A = pi``, ``sum(pi) = 1``.
* :func:`empirical_cooc` -- counted co-occurrence of adjacent symbols, normalised.
* :func:`analytic_cooc` -- a model's co-occurrence ``Omega = B^T diag(pi) A B``.
* :func:`check_stochastic` -- validate a probability vector / row-stochastic matrix.
* :data:`EMBEDDING_NAMES` -- the names of a DenseHMM's embeddings, in storage order.
* :func:`dirichlet_rows` -- rows drawn from a symmetric Dirichlet.
* :func:`split_indices` -- a seeded train/test split of ``n`` items.

Nothing here imports TensorFlow; the only module of the package it uses is ``sequences``.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["EMBEDDING_NAMES", "softmax", "softmax_inverse_lstsq", "stationary_distribution", "empirical_cooc",
           "analytic_cooc", "check_stochastic", "dirichlet_rows", "split_indices", "median_quartiles"]

#: The embeddings of a DenseHMM: ``U, Z, W`` (n x l), ``V`` (m x l), ``z_start`` (l).
EMBEDDING_NAMES: Tuple[str, ...] = ("U", "Z", "W", "V", "z_start")


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax (float64): ``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_inverse_lstsq(U: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The ``z`` whose ``softmax(U z)`` is closest to the distribution ``p``: least squares of ``U z + c``
    against ``log p`` (entries floored at 1e-300) over ``z`` and a free constant ``c`` (softmax ignores a
    shift, so ``c`` costs nothing; centring ``log p`` alone is the same only when ``U``'s columns are
    orthogonal to the ones vector).  A DenseHMM's ``z_start`` for a start distribution ``pi``."""
    U = np.asarray(U, dtype=np.float64)
    logp = np.log(np.maximum(np.asarray(p, dtype=np.float64), 1e-300))
    U1 = np.concatenate([U, np.ones((U.shape[0], 1))], axis=1)
    return np.linalg.lstsq(U1, logp, rcond=None)[0][:U.shape[1]]


def stationary_distribution(transmat) -> np.ndarray:
    """Stationary distribution ``pi`` of a row-stochastic matrix: ``pi A = pi``, ``sum(pi) = 1``.

    Computed in float64 by the Grassmann-Taksar-Heyman elimination (GTH): it uses only the off-diagonal
    entries and no subtraction, so it keeps full relative accuracy also for nearly decomposable chains
    (rows like ``1 - 1e-17, 1e-17``, where solving ``pi (A - I) = 0`` loses the small entries).  For a
    reducible chain (several stationary distributions; GTH meets a row with no way back) one of them
    is returned, from the eigen-decomposition, polished with a few power steps ``pi <- pi A``.

    Parameters
    ----------
    transmat : array_like, shape (n, n)

    Returns
    -------
    ndarray, shape (n,)
    """
    A = np.asarray(transmat, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"transmat must be square, got shape {A.shape}")
    pi = _gth(A)
    if pi is not None:
        return pi
    w, v = np.linalg.eig(A.T)
    k = int(np.argmin(np.abs(w - 1.0)))
    pi = np.clip(np.real(v[:, k]) * np.sign(np.real(v[:, k]).sum() or 1.0), 0.0, None)
    pi /= pi.sum()
    for _ in range(3):
        nxt = pi @ A
        nxt /= nxt.sum()
        if np.max(np.abs(nxt - pi)) == 0:
            break
        pi = nxt
    return pi


def _gth(A: np.ndarray) -> Optional[np.ndarray]:
    """GTH elimination (Grassmann, Taksar and Heyman, 1985): the stationary distribution of the
    irreducible row-stochastic ``A``; None when a state cannot be left towards the states before it
    in the elimination (a reducible chain)."""
    n = A.shape[0]
    P = A.copy()
    for k in range(n - 1, 0, -1):
        s = P[k, :k].sum()
        if not s > 0:
            return None
        P[:k, k] /= s
        P[:k, :k] += np.outer(P[:k, k], P[k, :k])
    pi = np.zeros(n)
    pi[0] = 1.0
    for j in range(1, n):
        pi[j] = pi[:j] @ P[:j, j]
    total = pi.sum()
    if not (np.isfinite(total) and total > 0):
        return None
    return pi / total


def empirical_cooc(seqs: Any, n_symbols: int, lengths=None) -> np.ndarray:
    """Empirical co-occurrence matrix of adjacent symbols.

    ``Omega[a, b]`` = fraction of adjacent pairs ``(x_t, x_{t+1}) = (a, b)`` over all
    pairs inside the sequences (no pair spans two sequences).

    Parameters
    ----------
    seqs : list of int arrays, (X, lengths) or Corpus
    n_symbols : int
        ``m``; every symbol must lie in ``0..m-1``.

    Returns
    -------
    ndarray, shape (m, m), sums to 1.

    Raises
    ------
    ValueError
        If no sequence has length >= 2 (there is no pair to count), or a symbol is out of range.
    """
    from .sequences import as_sequences
    m = int(n_symbols)
    seqs = as_sequences(seqs, lengths, n_symbols=m)
    counts = np.zeros(m * m, dtype=np.float64)
    for s in seqs:
        if len(s) >= 2:
            counts += np.bincount(s[:-1] * m + s[1:], minlength=m * m)
    total = counts.sum()
    if total == 0:
        raise ValueError("no adjacent symbol pairs: every sequence has length 1")
    return (counts / total).reshape(m, m)


def analytic_cooc(startprob: Optional[np.ndarray], transmat, emissionprob) -> np.ndarray:
    """Model co-occurrence matrix ``Omega = B^T diag(pi) A B`` (m x m, sums to 1).

    Parameters
    ----------
    startprob : array_like (n,) or None
        The state distribution ``pi`` to use; ``None`` uses the stationary
        distribution of ``transmat`` (the paper's definition).
    transmat : (n, n), emissionprob : (n, m)
    """
    A = np.asarray(transmat, dtype=np.float64)
    B = np.asarray(emissionprob, dtype=np.float64)
    pi = stationary_distribution(A) if startprob is None else np.asarray(startprob, dtype=np.float64)
    return B.T @ (pi[:, None] * A) @ B


#: How far from 1 a row of a model's matrices may sum (assigned, ``set_arrays``, model files): parameters
#: computed in float32, or converted from it, are off by about 1e-7 per entry.
STOCHASTIC_ATOL = 1e-6


def check_stochastic(name: str, a, shape: Optional[tuple] = None, atol: float = STOCHASTIC_ATOL) -> np.ndarray:
    """Validate a probability vector / row-stochastic matrix and return it as float64.

    Checks the shape (when given), finiteness, non-negativity and that every row sums
    to 1 within ``atol`` (for input of a lower precision than float64, e.g. float32, at least
    1e-5: its rounding alone moves a row's sum by about 1e-7 per entry); raises ``ValueError``
    naming ``name`` and the first bad row.
    """
    given = np.asarray(a)
    if given.dtype.kind == "f" and given.dtype.itemsize < 8:
        atol = max(atol, 1e-5)
    a = np.asarray(given, dtype=np.float64)
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds non-finite values")
    if np.any(a < 0):
        raise ValueError(f"{name} holds negative values")
    sums = np.atleast_1d(a.sum(axis=-1))
    bad = np.flatnonzero(np.abs(sums - 1.0) > atol)
    if bad.size:
        s = float(sums[0] if a.ndim == 1 else sums[bad[0]])
        what = (f"sums to {s:.6g}" if a.ndim == 1 else f"row {int(bad[0])} sums to {s:.6g}")
        raise ValueError(f"{name} is not stochastic ({what}, not 1: off by {s - 1.0:.2g}, more than "
                         f"the {atol:.0e} allowed)")
    return a


def dirichlet_rows(rng: np.random.Generator, alpha: float, n_rows: int, n_cols: int) -> np.ndarray:
    """``n_rows`` independent symmetric Dirichlet(alpha) rows of length ``n_cols`` (float64).

    Rows are drawn as normalised Gamma(alpha) variables; a row whose draws all
    underflow to zero (possible for tiny alpha) is drawn again.
    """
    if alpha <= 0:
        raise ValueError("alpha must be > 0")
    out = np.empty((n_rows, n_cols))
    for i in range(n_rows):
        for _ in range(1000):
            g = rng.gamma(alpha, 1.0, size=n_cols)
            s = g.sum()
            if s > 0 and np.isfinite(s):
                out[i] = g / s
                break
        else:  # pragma: no cover - practically impossible
            raise RuntimeError("could not draw a Dirichlet row")
    return out


def split_indices(n: int, test_fraction: float, seed: Optional[int] = 0,
                  shuffle: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """Seeded train/test split of ``n`` items: ``(train_indices, test_indices)``.

    ``order`` is ``numpy.random.default_rng(seed).permutation(n)`` (or ``arange(n)``
    without shuffling); the test part is its last ``round(n * test_fraction)`` items,
    at least one and at most ``n - 1``.
    """
    if not (0.0 < float(test_fraction) < 1.0):
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    if n < 2:
        raise ValueError("a split needs at least two sequences")
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    n_test = int(round(n * float(test_fraction)))
    n_test = min(max(n_test, 1), n - 1)
    return order[: n - n_test], order[n - n_test:]


def median_quartiles(values, finite_only: bool = False) -> Tuple[float, float, float]:
    """``(median, 25th percentile, 75th percentile)`` of ``values`` over repeats: what every summary
    of the package reports (sweep tables and figures, the factorization experiment, the app's Sweep
    view).

    NaN values are left out, and with ``finite_only`` infinities too (a plot cannot draw them); all
    three are NaN when nothing is left.  Otherwise an infinity counts as a value: a test NLL of
    ``inf`` (a test symbol the model gives probability 0) is a result.  The median is numpy's and the
    percentiles are numpy's linear interpolation (``q (k - 1)`` between the sorted values), except
    where numpy's interpolation meets an infinity and computes ``inf - inf`` or ``0 * inf`` (NaN and a
    warning): there the percentile is the value at its position when the position is a whole number,
    else the infinity it lies next to (NaN only between ``-inf`` and ``inf``).
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)] if finite_only else v[~np.isnan(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    with np.errstate(invalid="ignore"):
        med = float(np.median(v))
        q25, q75 = (float(x) for x in np.quantile(v, (0.25, 0.75)))
    if math.isnan(q25) or math.isnan(q75):    # only next to an infinity (no NaN is left in v)
        s = np.sort(v)
        q25, q75 = (_infinite_quantile(s, q) if math.isnan(x) else x for q, x in ((0.25, q25), (0.75, q75)))
    return med, q25, q75


def _infinite_quantile(s: np.ndarray, q: float) -> float:
    """The ``q`` quantile of the sorted ``s`` where linear interpolation involves an infinity."""
    pos = q * (len(s) - 1)
    i = int(math.floor(pos))
    a, b = float(s[i]), float(s[min(i + 1, len(s) - 1)])
    if pos == i or a == b:
        return a
    if math.isinf(a) and math.isinf(b):      # -inf and inf
        return float("nan")
    return a if math.isinf(a) else b

"""Synthetic HMMs and data: random Dirichlet HMMs, stationary distributions, the demo set.

The paper's synthetic setup (Sicking et al., 2020, section 4.1): rows of the
transition matrix ``A`` and of the emission matrix ``B`` are drawn from a
symmetric Dirichlet(alpha) (alpha = 0.1 gives sparse, peaked rows) and the start
distribution is the stationary distribution of ``A``.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional

import numpy as np

__all__ = ["HMMParams", "DemoData", "random_hmm", "stationary_distribution", "dirichlet_rows",
           "demo_dataset"]


class HMMParams(NamedTuple):
    """The three parameter arrays of a discrete HMM (unpacks as a 3-tuple).

    ``startprob`` (n,), ``transmat`` (n, n) with row = from-state, ``emissionprob`` (n, m).
    """

    startprob: np.ndarray
    transmat: np.ndarray
    emissionprob: np.ndarray


class DemoData(NamedTuple):
    """The demo data set: ``train`` and ``test`` (lists of int64 arrays) and the true ``params``."""

    train: List[np.ndarray]
    test: List[np.ndarray]
    params: HMMParams


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


def stationary_distribution(transmat) -> np.ndarray:
    """Stationary distribution ``pi`` of a row-stochastic matrix: ``pi A = pi``, ``sum(pi) = 1``.

    Computed in float64 by solving the linear system ``pi (A - I) = 0`` with one
    equation replaced by the normalisation ``sum(pi) = 1`` (the normalised left
    eigenvector for eigenvalue 1), then polished with a few power steps
    ``pi <- pi A`` so that ``max |pi A - pi|`` is at round-off level (< 1e-12 for
    well-conditioned chains).  For a reducible chain (several stationary
    distributions) one of them is returned (from the eigen-decomposition).

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
    n = A.shape[0]
    M = A.T - np.eye(n)
    M[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    pi = None
    try:
        cand = np.linalg.solve(M, rhs)
        if np.all(np.isfinite(cand)) and cand.min() > -1e-9:
            pi = cand
    except np.linalg.LinAlgError:
        pass
    if pi is None:
        w, v = np.linalg.eig(A.T)
        k = int(np.argmin(np.abs(w - 1.0)))
        pi = np.real(v[:, k])
        pi = pi / pi.sum()
    pi = np.clip(pi, 0.0, None)
    pi /= pi.sum()
    for _ in range(3):
        nxt = pi @ A
        nxt /= nxt.sum()
        if np.max(np.abs(nxt - pi)) == 0:
            break
        pi = nxt
    return pi


def random_hmm(n: int, m: int, alpha: float = 0.1, seed: Optional[int] = None) -> HMMParams:
    """A random HMM as in the paper: Dirichlet(alpha) rows, stationary start distribution.

    Parameters
    ----------
    n, m : int
        Number of hidden states and of observable symbols.
    alpha : float
        Concentration of the symmetric Dirichlet for every row of ``A`` (n x n) and
        ``B`` (n x m).  The paper uses 0.1.
    seed : int or Generator, optional
        Same seed, same model.  ``A`` is drawn first, then ``B``.

    Returns
    -------
    HMMParams
        ``(startprob, transmat, emissionprob)``; ``startprob`` is the stationary
        distribution of ``transmat``.
    """
    n, m = int(n), int(m)
    if n < 1 or m < 1:
        raise ValueError("n and m must be >= 1")
    rng = np.random.default_rng(seed)
    A = dirichlet_rows(rng, alpha, n, n)
    B = dirichlet_rows(rng, alpha, n, m)
    return HMMParams(stationary_distribution(A), A, B)


def demo_dataset(seed: int = 0, n: int = 5, m: int = 5, n_train: int = 10, n_test: int = 10,
                 length: int = 200, alpha: float = 0.1) -> DemoData:
    """The paper's small synthetic setup: a Dirichlet(0.1) HMM with n = m = 5, 10 train and
    10 test sequences of length 200 sampled from it.

    Returns
    -------
    DemoData
        ``(train, test, params)``; same seed, same data.
    """
    from .engine.sampling import sample_sequences
    rng = np.random.default_rng(seed)
    s_model, s_train, s_test = (int(x) for x in rng.integers(0, 2 ** 31 - 1, size=3))
    params = random_hmm(n, m, alpha, s_model)
    train, _ = sample_sequences(*params, n_train, length, s_train)
    test, _ = sample_sequences(*params, n_test, length, s_test)
    return DemoData(train, test, params)

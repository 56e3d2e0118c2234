"""Synthetic HMMs and data: random Dirichlet HMMs and the demo set.

The paper's synthetic setup (Sicking et al., 2020, section 4.1): rows of the
transition matrix ``A`` and of the emission matrix ``B`` are drawn from a
symmetric Dirichlet(alpha) (alpha = 0.1 gives sparse, peaked rows) and the start
distribution is the stationary distribution of ``A``.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional

import numpy as np

from .maths import dirichlet_rows, stationary_distribution

__all__ = ["HMMParams", "DemoData", "random_hmm", "demo_dataset"]


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

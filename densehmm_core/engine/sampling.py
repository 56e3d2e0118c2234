"""Sampling observation and state sequences from an HMM (vectorised over sequences)."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

__all__ = ["sample_sequences"]


def _draw(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw per row: ``cum`` (k, n) cumulative rows, ``u`` (k,) uniforms."""
    idx = (u[:, None] >= cum).sum(axis=1)
    return np.minimum(idx, cum.shape[1] - 1)


def sample_sequences(startprob, transmat, emissionprob, n_sequences: int = 1, length: Any = 100,
                     seed: Optional[int] = None) -> Tuple[List[np.ndarray], List[np.ndarray]]:
    """Sample ``n_sequences`` sequences from an HMM.

    Parameters
    ----------
    startprob, transmat, emissionprob : array_like
        (n,), (n, n) row-stochastic (row = from-state), (n, m) row-stochastic.
    n_sequences : int
        Number of sequences.
    length : int or sequence of int
        One length for all sequences, or one per sequence (each >= 1).
    seed : int or numpy Generator, optional
        Same seed, same output (``numpy.random.default_rng(seed)``).

    Returns
    -------
    observations, states : list of int64 arrays
        Symbols in ``0..m-1`` and hidden states in ``0..n-1``.
    """
    pi = np.asarray(startprob, dtype=np.float64)
    A = np.asarray(transmat, dtype=np.float64)
    B = np.asarray(emissionprob, dtype=np.float64)
    n_sequences = int(n_sequences)
    if n_sequences < 1:
        raise ValueError("n_sequences must be >= 1")
    lengths = np.broadcast_to(np.asarray(length, dtype=np.int64), (n_sequences,)).copy()
    if np.any(lengths < 1):
        raise ValueError("every length must be >= 1")
    rng = np.random.default_rng(seed)
    T = int(lengths.max())
    cpi = np.cumsum(pi)
    cpi /= cpi[-1]
    cA = np.cumsum(A, axis=1)
    cA /= cA[:, -1:]
    cB = np.cumsum(B, axis=1)
    cB /= cB[:, -1:]
    # time-major so that every step is one vectorised draw over all sequences;
    # per step: one uniform per sequence for the state, then one for the symbol
    states = np.empty((T, n_sequences), dtype=np.int64)
    obs = np.empty((T, n_sequences), dtype=np.int64)
    z = _draw(np.broadcast_to(cpi, (n_sequences, pi.shape[0])), rng.random(n_sequences))
    for t in range(T):
        if t > 0:
            z = _draw(cA[z], rng.random(n_sequences))
        states[t] = z
        obs[t] = _draw(cB[z], rng.random(n_sequences))
    obs = np.ascontiguousarray(obs.T)
    states = np.ascontiguousarray(states.T)
    obs_list = [obs[j, :lengths[j]].copy() for j in range(n_sequences)]
    st_list = [states[j, :lengths[j]].copy() for j in range(n_sequences)]
    return obs_list, st_list

"""Evaluation metrics: co-occurrence matrices, their distance, normalised NLLs.

* :func:`empirical_cooc` — the empirical co-occurrence matrix Omega of adjacent
  symbol pairs ``(x_t, x_{t+1})`` (pairs never cross a sequence boundary),
  normalised to sum 1.
* :func:`analytic_cooc` — the model's Omega = ``B^T diag(pi) A B`` with ``pi`` the
  stationary distribution (the expected pair distribution of a stationary HMM).
* :func:`cooc_mad` — mean absolute difference of two m x m matrices (the paper's MAD).
* :func:`normalized_nll` — total negative log-likelihood / number of tokens.
* :func:`paper_nll` — the paper's variant: total NLL / (n_sequences x longest length).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .sequences import as_sequences, n_tokens

__all__ = ["empirical_cooc", "analytic_cooc", "cooc_mad", "normalized_nll", "paper_nll",
           "total_loglik"]


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
        If no sequence has length >= 2 (there is no pair to count).
    """
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
    from .synthetic import stationary_distribution
    A = np.asarray(transmat, dtype=np.float64)
    B = np.asarray(emissionprob, dtype=np.float64)
    pi = stationary_distribution(A) if startprob is None else np.asarray(startprob, dtype=np.float64)
    return B.T @ (pi[:, None] * A) @ B


def cooc_mad(a, b) -> float:
    """Mean absolute difference ``mean |a - b|`` over all entries of two m x m matrices."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    return float(np.mean(np.abs(a - b)))


def total_loglik(model_or_loglik: Any, seqs) -> float:
    """Total log-likelihood: ``model.score(seqs)`` or the sum of a given (per-sequence) value."""
    if hasattr(model_or_loglik, "score"):
        return float(model_or_loglik.score(seqs))
    return float(np.sum(np.asarray(model_or_loglik, dtype=np.float64)))


def normalized_nll(model_or_loglik: Any, seqs: Any) -> float:
    """Negative log-likelihood per token: ``-log P(data) / number of tokens``.

    Parameters
    ----------
    model_or_loglik : model with ``score(seqs)``, or a total / per-sequence log-likelihood
    seqs : the sequences (list of int arrays or Corpus); only their lengths are used
        when a log-likelihood is passed.
    """
    seqs = as_sequences(seqs)
    return -total_loglik(model_or_loglik, seqs) / n_tokens(seqs)


def paper_nll(model_or_loglik: Any, seqs: Any) -> float:
    """The paper's normalised NLL: ``-log P(data) / (n_sequences x longest sequence length)``.

    Equal to :func:`normalized_nll` when all sequences have the same length.
    """
    seqs = as_sequences(seqs)
    return -total_loglik(model_or_loglik, seqs) / (len(seqs) * max(len(s) for s in seqs))

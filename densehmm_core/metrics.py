"""Evaluation metrics: co-occurrence distance, normalised NLLs.

The co-occurrence matrices themselves (empirical and analytic Omega) are maths, in
:mod:`densehmm_core.maths` (``empirical_cooc``, ``analytic_cooc``).

* :func:`cooc_mad` — mean absolute difference of two m x m matrices (the paper's MAD).
* :func:`normalized_nll` — total negative log-likelihood / number of tokens.
* :func:`paper_nll` — the paper's variant: total NLL / (n_sequences x longest length).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .sequences import as_sequences, n_tokens

__all__ = ["cooc_mad", "normalized_nll", "paper_nll", "total_loglik"]


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

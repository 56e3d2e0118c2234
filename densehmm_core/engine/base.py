"""The engine interface: what every HMM inference back end provides.

An engine is stateless: each method takes the three parameter arrays and the
sequences.  ``seqs`` is either a list of 1-D int64 arrays (already validated by
:func:`densehmm_core.sequences.as_sequences`) or the object returned by the
engine's :meth:`Engine.prepare` for those sequences (which saves re-batching
the same data on every EM iteration).

Conventions (the same as hmmlearn's): ``startprob`` (n,), ``transmat`` (n, n)
with row = from-state, ``emissionprob`` (n, m) with row = state.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, List, Tuple

import numpy as np

__all__ = ["Engine", "SufficientStats"]


@dataclass
class SufficientStats:
    """Expected sufficient statistics of a Baum-Welch E-step.

    Attributes
    ----------
    start : ndarray, shape (n,)
        Expected number of sequences starting in each state (sum of the
        posteriors of the first position).
    trans : ndarray, shape (n, n)
        Expected transition counts ``sum_t P(z_t = i, z_{t+1} = j | x)``.
    emit : ndarray, shape (n, m)
        Expected emission counts ``sum_t P(z_t = i | x) [x_t = k]``.
    loglik : ndarray, shape (n_sequences,)
        Log-likelihood of each sequence under the parameters used, in the
        order of the input sequences (``-inf`` for impossible sequences, which
        contribute nothing to the counts).
    """

    start: np.ndarray
    trans: np.ndarray
    emit: np.ndarray
    loglik: np.ndarray

    @property
    def total_loglik(self) -> float:
        return float(np.sum(self.loglik))


class Engine(ABC):
    """Abstract HMM inference engine (see the module docstring for conventions)."""

    name = "abstract"

    def prepare(self, seqs: List[np.ndarray], n_states: int = 16) -> Any:
        """Pre-batch ``seqs`` for repeated calls with a model of ``n_states`` states (default: the list itself)."""
        return seqs

    @abstractmethod
    def loglik(self, startprob, transmat, emissionprob, seqs) -> np.ndarray:
        """Log-likelihood of each sequence, float64 array of shape (n_sequences,)."""

    @abstractmethod
    def posteriors(self, startprob, transmat, emissionprob, seqs) -> List[np.ndarray]:
        """State marginals ``P(z_t = i | x)``: a list of (T_i, n) arrays."""

    @abstractmethod
    def statistics(self, startprob, transmat, emissionprob, seqs) -> SufficientStats:
        """Expected sufficient statistics (E-step) and per-sequence log-likelihoods."""

    @abstractmethod
    def viterbi(self, startprob, transmat, emissionprob, seqs) -> Tuple[List[np.ndarray], np.ndarray]:
        """Most likely state paths and their joint log-probabilities ``log P(x, z*)``."""

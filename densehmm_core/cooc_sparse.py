"""Sparse co-occurrence statistics: the DenseHMM co-occurrence maths without m x m arrays.

For word-level models (m = 10^4 - 5 x 10^4 symbols) a dense ``m x m`` co-occurrence
matrix costs gigabytes, while a corpus only ever observes a small fraction of the
adjacent pairs.  This module keeps the counted ``Omega_gt`` as its nonzero entries
(:class:`PairCounts`) and evaluates everything the DenseHMM needs from the model
``Omega = B^T diag(pi) A B`` through ``n x n`` and ``n x m`` products:

* ``Omega`` at the observed pairs: with ``M = diag(pi) A`` and ``C = M B`` (n x m),
  ``Omega[i, j] = sum_a B[a, i] C[a, j]`` -- ``O(nnz n)`` after ``O(n^2 m)``.
* ``||Omega||_F^2 = tr(B^T M B B^T M^T B) = tr(M G M^T G)`` with ``G = B B^T`` (n x n).
* The squared error
  ``||Omega_gt - Omega||_F^2 = ||Omega_gt||^2 - 2 <Omega_gt, Omega>_nnz + ||Omega||_F^2``.
* The mean absolute deviation over ALL ``m^2`` entries, exactly: where ``Omega_gt`` is zero,
  ``|Omega - 0| = Omega`` (Omega is non-negative) and ``sum Omega = 1``, so
  ``sum |Omega_gt - Omega| = sum_nnz |Omega_gt - Omega| + 1 - sum_nnz Omega``.

Cost ``O(nnz n + n^2 m)`` time and ``O(nnz + n m)`` memory instead of ``O(m^2 n)`` and
``O(m^2)``.  The TensorFlow loss used for training is in :mod:`densehmm_core.dense_words_tf`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from .maths import stationary_distribution

__all__ = ["PairCounts", "pair_counts", "omega_at", "omega_sq_norm", "sparse_mad", "sparse_sq_error"]


@dataclass(frozen=True)
class PairCounts:
    """The nonzero entries of a normalised co-occurrence matrix (sum of ``vals`` = 1).

    ``rows[k], cols[k]`` is a pair ``(first symbol, next symbol)``, sorted row-major, no
    duplicates; ``vals[k] > 0`` its share of all adjacent pairs.
    """

    rows: np.ndarray   # int64 (nnz,)
    cols: np.ndarray   # int64 (nnz,)
    vals: np.ndarray   # float64 (nnz,), sums to 1
    m: int
    n_pairs: float = 0.0  # how many adjacent pairs were counted (0: unknown, e.g. from a dense matrix)

    @property
    def nnz(self) -> int:
        return int(self.vals.shape[0])

    @property
    def sq_norm(self) -> float:
        """``||Omega_gt||_F^2``."""
        return float(self.vals @ self.vals)

    @classmethod
    def from_dense(cls, omega: np.ndarray) -> "PairCounts":
        """The nonzeros of a dense non-negative matrix, normalised to sum 1."""
        om = np.asarray(omega, dtype=np.float64)
        if om.ndim != 2 or om.shape[0] != om.shape[1]:
            raise ValueError(f"omega must be a square (m, m) matrix, got shape {om.shape}")
        if not np.all(np.isfinite(om)) or np.any(om < 0) or om.sum() <= 0:
            raise ValueError("omega must be finite, non-negative and not all zero")
        r, c = np.nonzero(om)
        v = om[r, c]
        return cls(r.astype(np.int64), c.astype(np.int64), v / v.sum(), int(om.shape[0]))

    def to_dense(self) -> np.ndarray:
        """The dense ``m x m`` matrix (for tests and small m only)."""
        out = np.zeros((self.m, self.m))
        out[self.rows, self.cols] = self.vals
        return out


def pair_counts(seqs: Iterable[np.ndarray], m: int) -> PairCounts:
    """Normalised counts of adjacent pairs ``(o_t, o_{t+1})`` inside each sequence, sparse.

    Same numbers as :func:`densehmm_core.maths.empirical_cooc` at its nonzeros; memory
    ``O(number of pairs)``.
    """
    m = int(m)
    codes = [np.asarray(s[:-1], np.int64) * m + np.asarray(s[1:], np.int64) for s in seqs if len(s) > 1]
    if not codes:
        raise ValueError("co-occurrence fit needs at least one sequence of length >= 2")
    uniq, cnt = np.unique(np.concatenate(codes), return_counts=True)
    vals = cnt.astype(np.float64)
    return PairCounts(uniq // m, uniq % m, vals / vals.sum(), m, float(vals.sum()))


def omega_at(pi: np.ndarray, A: np.ndarray, B: np.ndarray, rows: np.ndarray, cols: np.ndarray,
             block: int = 1 << 16) -> np.ndarray:
    """``Omega[rows[k], cols[k]]`` of ``Omega = B^T diag(pi) A B``, in blocks of ``block`` pairs."""
    C = (pi[:, None] * A) @ B                    # (n, m)
    Bt, Ct = np.ascontiguousarray(B.T), np.ascontiguousarray(C.T)
    out = np.empty(len(rows))
    for s in range(0, len(rows), block):
        r, c = rows[s:s + block], cols[s:s + block]
        out[s:s + block] = np.einsum("kn,kn->k", Bt[r], Ct[c])
    return out


def omega_sq_norm(pi: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    """``||B^T M B||_F^2 = tr(M G M^T G)`` with ``M = diag(pi) A``, ``G = B B^T``."""
    M = pi[:, None] * A
    G = B @ B.T
    return float(np.sum((M @ G) * (G @ M)))  # tr(X Y) = sum(X * Y^T), X = M G, Y^T = (M^T G)^T = G M


def sparse_sq_error(pi: np.ndarray, A: np.ndarray, B: np.ndarray, pc: PairCounts) -> float:
    """``||Omega_gt - Omega||_F^2`` without forming either matrix."""
    om = omega_at(pi, A, B, pc.rows, pc.cols)
    return pc.sq_norm - 2.0 * float(pc.vals @ om) + omega_sq_norm(pi, A, B)


def sparse_mad(pi: Optional[np.ndarray], A: np.ndarray, B: np.ndarray, pc: PairCounts) -> float:
    """Mean over all ``m^2`` entries of ``|Omega - Omega_gt|``, exactly, from the observed pairs.

    ``pi`` defaults to the stationary distribution of ``A`` (as in the co-occurrence model).
    """
    if pi is None:
        pi = stationary_distribution(A)
    om = omega_at(pi, A, B, pc.rows, pc.cols)
    total = float(np.sum(pi))  # sum of all entries of Omega (1 up to rounding)
    s = float(np.sum(np.abs(om - pc.vals))) + total - float(np.sum(om))
    return max(s, 0.0) / float(pc.m) ** 2


class DevicePairs:
    """:func:`sparse_mad` where the model lives: the pairs uploaded once to an array backend
    (numpy or CuPy, :class:`~densehmm_core.engine.backend.ArrayBackend`), the model's ``A`` and
    ``B`` given as arrays of that backend; only the MAD (a scalar) comes back.

    ``pi`` is the stationary distribution of ``A``, by one linear solve
    ``(I - A^T + 1 1^T) pi = 1`` on the device (non-singular for every irreducible chain).  A chain
    for which that fails (a reducible one, which Baum-Welch reaches on data of disjoint alphabets:
    the system is singular) takes :func:`~densehmm_core.maths.stationary_distribution` on the host
    instead: a diagnostic never stops a fit.
    """

    def __init__(self, pc: PairCounts, backend, block: int = 1 << 16) -> None:
        xp = backend.xp
        self.xp, self.backend, self.m, self.block = xp, backend, int(pc.m), int(block)
        self.rows = xp.asarray(pc.rows, dtype=xp.int64)
        self.cols = xp.asarray(pc.cols, dtype=xp.int64)
        self.vals = xp.asarray(pc.vals, dtype=xp.float64)

    def _solved(self, A):
        """``pi`` by the device solve, and a device flag that it is not a distribution (non-finite or
        negative entries: a reducible chain); ``(None, None)`` when the solve raised.  No transfer."""
        xp = self.xp
        n = A.shape[0]
        M = xp.eye(n) - A.T + 1.0
        try:
            pi = xp.linalg.solve(M, xp.ones(n))
        except (np.linalg.LinAlgError, ValueError):
            return None, None
        pi = pi / pi.sum()
        return pi, xp.any(~xp.isfinite(pi) | (pi < -1e-9))

    def _host_stationary(self, A):
        return self.xp.asarray(stationary_distribution(self.backend.to_host(A)))

    def stationary(self, A):
        """The stationary distribution of ``A`` on the device (the host's where the solve fails)."""
        pi, bad = self._solved(A)
        return self._host_stationary(A) if pi is None or bool(bad) else pi

    def _sum(self, pi, A, B):
        xp = self.xp
        C = (pi[:, None] * A) @ B
        Bt, Ct = xp.ascontiguousarray(B.T), xp.ascontiguousarray(C.T)
        s = pi.sum()
        for a in range(0, int(self.rows.shape[0]), self.block):
            r, c = self.rows[a:a + self.block], self.cols[a:a + self.block]
            om = (Bt[r] * Ct[c]).sum(axis=1)
            s = s + xp.abs(om - self.vals[a:a + self.block]).sum() - om.sum()
        return s

    def mad(self, A, B) -> float:
        """Mean over all ``m^2`` entries of ``|Omega - Omega_gt|`` (as :func:`sparse_mad`): one scalar comes
        back, NaN when the device solve gave no distribution; then (rarely) the host's ``pi`` is used."""
        xp = self.xp
        pi, bad = self._solved(A)
        if pi is not None:
            value = float(xp.where(bad, xp.nan, self._sum(pi, A, B)))
            if value == value:
                return max(value, 0.0) / float(self.m) ** 2
        return max(float(self._sum(self._host_stationary(A), A, B)), 0.0) / float(self.m) ** 2

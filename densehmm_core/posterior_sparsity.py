"""Posterior sparsity in the E-step: each symbol (word type) should prefer few states.

Graca, Ganchev, Taskar and Pereira (2011, "Controlling complexity in part-of-speech induction",
JAIR 41) regularise the posteriors of EM with the L1/Linf norm of the tags a word type receives.
With ``p_i = gamma_i`` the state posterior of token ``i`` (from forward-backward), the E-step's
posteriors are replaced by the solution ``q`` of

    min_q  sum_i KL(q_i || p_i) + sigma * sum_{w, t} max_{i : x_i = w} q_i(t),

each ``q_i`` a distribution over the ``n`` states.  The penalty is, for each word type ``w``, the
sum over states of the largest posterior any occurrence of ``w`` gives that state: about the
number of states the type uses.  It is 1 for a type that always gets the same state and up to
``n`` for one spread over all of them; a type that occurs once always pays 1 (its posteriors are
left alone).  The M-step then runs unchanged on the counts of ``q``.

What this module does, and how it differs from the paper
-------------------------------------------------------
The paper projects the posterior over whole state sequences (every dual evaluation is a
forward-backward with emission weights ``exp(-lambda)``).  Here ``q`` and ``p`` are the
token-wise posteriors, treated as independent (the KL of the product distributions): the problem
then splits into one small convex problem per word type, solved exactly up to a duality gap, and
the E-step costs one forward-backward plus the projection.  Only the counts the token
posteriors define change: the emission counts and the start counts (first tokens); the expected
transition counts are the unprojected ones.  With ``sigma = 0`` nothing changes (the plain
E-step, bit for bit).

The dual (per word type ``w``, occurrences ``i``, states ``t``): with ``lambda_it >= 0`` and
``sum_i lambda_it <= sigma`` for every ``t``,

    q_it(lambda) = p_it exp(-lambda_it) / Z_i(lambda),   Z_i = sum_t p_it exp(-lambda_it),
    D(lambda) = -sum_i log Z_i(lambda)   (to maximise; concave),

and the gap ``P(q(lambda)) - D(lambda) = sigma sum_t max_i q_it - sum_it lambda_it q_it >= 0``
bounds how far ``q(lambda)`` is from the optimum.  ``-D`` is smooth with a gradient ``-q`` whose
Lipschitz constant is at most 1 (the Hessian of each ``log Z_i`` is ``diag(q_i) - q_i q_i^T``), so
accelerated projected gradient (FISTA) with step 1 solves it; the projection onto
``{lambda >= 0, sum_i lambda_i <= sigma}`` of one (type, state) is a clip at 0 or, when the clipped
sum exceeds ``sigma``, the projection onto the scaled simplex (Michelot's algorithm: a threshold
``tau`` with ``sum_i max(v_i - tau, 0) = sigma``).  All types and states are solved together,
vectorised (tokens grouped by type, segment sums by ``numpy.add.reduceat``), on the host: on a GPU
engine the posteriors cross to the host and the changed counts go back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["TypeGroups", "Projection", "project", "primal_value", "penalty", "PosteriorSparsity", "check_sparsity",
           "sparsity_estep"]


class TypeGroups:
    """The tokens of prepared sequences grouped by symbol, for symbols that occur at least twice.

    ``perm`` holds token indices (prepared order, :class:`~densehmm_core.engine.array_engine.
    PreparedSequences`) grouped by symbol; group ``g`` is ``perm[starts[g]:starts[g+1]]``, its
    symbol ``types[g]``; ``seg[k]`` is the group of ``perm[k]``; ``first[k]`` says whether that
    token begins its sequence.
    """

    def __init__(self, symbols: np.ndarray, sequence_starts: Optional[np.ndarray] = None) -> None:
        sym = np.asarray(symbols, dtype=np.int64)
        counts = np.bincount(sym) if sym.size else np.zeros(0, dtype=np.int64)
        idx = np.flatnonzero(counts[sym] >= 2)
        self.perm = idx[np.argsort(sym[idx], kind="stable")]
        gsym = sym[self.perm]
        if gsym.size:
            self.starts = np.flatnonzero(np.r_[True, gsym[1:] != gsym[:-1]])
        else:
            self.starts = np.zeros(0, dtype=np.int64)
        self.types = gsym[self.starts]
        sizes = np.diff(np.r_[self.starts, gsym.size])
        self.seg = np.repeat(np.arange(len(self.starts)), sizes)
        first = np.zeros(sym.size, dtype=bool)
        if sequence_starts is not None:
            first[np.asarray(sequence_starts, dtype=np.int64)] = True
        self.first = first[self.perm]
        self.n_tokens = int(sym.size)
        #: types occurring once: each pays exactly 1 in the penalty whatever its posteriors
        self.n_single = int(np.sum(counts == 1))

    @classmethod
    def from_prepared(cls, data) -> "TypeGroups":
        """The groups of :class:`~densehmm_core.engine.array_engine.PreparedSequences` ``data``."""
        be = data.backend
        sym = np.empty(data.n_tokens, dtype=np.int64)
        for ch in data.chunks:
            t, j = ch.tokens(be)
            sym[ch.token_start:ch.token_start + len(t)] = np.asarray(be.to_host(ch.obs[t, j]))
        return cls(sym, data.starts)

    @property
    def n_groups(self) -> int:
        return len(self.starts)


def _segment_sum(a: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.add.reduceat(a, starts, axis=0)


class _Entries:
    """The (token, state) pairs the dual works on, sorted by (group, state): one segment per
    (type, state) column.  Pairs with ``p < prune`` keep ``lambda = 0`` (their posteriors are only
    renormalised); ``prune = 0`` keeps every pair with ``p > 0`` (the exact problem)."""

    def __init__(self, p: np.ndarray, g: TypeGroups, prune: float) -> None:
        K, n = p.shape
        keep = p >= prune if prune > 0 else p > 0
        rows, cols = np.nonzero(keep)
        key = g.seg[rows] * n + cols
        order = np.argsort(key, kind="stable")
        self.rows, self.cols, key = rows[order], cols[order], key[order]
        self.p = p[self.rows, self.cols]
        self.rest = p.sum(axis=1) - np.bincount(self.rows, weights=self.p, minlength=K)   # mass never scaled
        if key.size:
            self.starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        else:
            self.starts = np.zeros(0, dtype=np.int64)
        self.seg = np.repeat(np.arange(len(self.starts)), np.diff(np.r_[self.starts, key.size]))
        self.K = K

    def z(self, lam: np.ndarray) -> np.ndarray:
        """``Z_i(lambda)`` of every token (K,)."""
        return self.rest + np.bincount(self.rows, weights=self.p * np.exp(-lam), minlength=self.K)

    def q(self, lam: np.ndarray) -> np.ndarray:
        """``q`` of the entries at ``lambda``."""
        e = self.p * np.exp(-lam)
        z = self.rest + np.bincount(self.rows, weights=e, minlength=self.K)
        return e / np.where(z > 0, z, 1.0)[self.rows]

    def dense_q(self, p: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """The full ``q`` (K, n) at ``lambda``."""
        z = self.z(lam)
        q = p / np.where(z > 0, z, 1.0)[:, None]
        q[self.rows, self.cols] = self.p * np.exp(-lam) / np.where(z > 0, z, 1.0)[self.rows]
        return q

    def project(self, v: np.ndarray, sigma: float) -> np.ndarray:
        """Euclidean projection of ``v`` onto ``{lambda >= 0, sum over each column's entries <= sigma}``
        (Michelot's algorithm where the clipped sum exceeds ``sigma``)."""
        st, seg = self.starts, self.seg
        if st.size == 0:
            return v.copy()
        w = np.maximum(v, 0.0)
        s = np.add.reduceat(w, st)
        over = s > sigma
        if not over.any():
            return w
        cnt = np.add.reduceat((w > 0).astype(np.float64), st)
        tau = np.where(over, (s - sigma) / np.maximum(cnt, 1.0), 0.0)
        for _ in range(100_000):     # the active sets only shrink: at most a column's size passes
            active = v > tau[seg]
            c = np.add.reduceat(active.astype(np.float64), st)
            if np.array_equal(c, cnt):
                break
            s = np.add.reduceat(np.where(active, v, 0.0), st)
            tau = np.where(over, (s - sigma) / np.maximum(c, 1.0), 0.0)
            cnt = c
        return np.maximum(v - tau[seg], 0.0)


@dataclass
class Projection:
    """What :func:`project` returns: ``q`` (K, n) in the groups' order, the duality gap reached (an
    upper bound on the primal's excess over its minimum), the FISTA iterations, the dual entries
    (``lam`` on the (token, state) pairs ``rows``, ``cols``)."""

    q: np.ndarray
    gap: float
    iterations: int
    lam: np.ndarray
    rows: np.ndarray
    cols: np.ndarray


def project(p: np.ndarray, g: TypeGroups, sigma: float, *, tol: float = 1e-3, max_iter: int = 100,
            check_every: int = 5, prune: float = 1e-4) -> Projection:
    """Solve the per-type problem (module docstring) for the grouped posteriors ``p`` (K, n).

    Accelerated projected gradient (FISTA, step 1) on the dual, over the (token, state) pairs with
    ``p >= prune`` (the others keep ``lambda = 0``; ``prune = 0``: all, the exact problem).  Stops
    when the duality gap is at most ``tol`` times the number of tokens K (checked every
    ``check_every`` iterations) or after ``max_iter``; ``q`` belongs to the best dual point checked.
    """
    p = np.asarray(p, dtype=np.float64)
    if sigma <= 0 or p.shape[0] == 0:
        e0 = np.zeros(0, dtype=np.int64)
        return Projection(q=p.copy(), gap=0.0, iterations=0, lam=np.zeros(0), rows=e0, cols=e0)
    ent = _Entries(p, g, float(prune))
    lam = np.zeros_like(ent.p)
    y, tk = lam, 1.0
    goal = float(tol) * p.shape[0]
    best: Tuple[float, Any] = (np.inf, lam)
    it = 0
    for it in range(1, int(max_iter) + 1):
        new = ent.project(y + ent.q(y), sigma)     # gradient step (step 1) on -D, then the projection
        t1 = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * tk * tk))
        y = new + ((tk - 1.0) / t1) * (new - lam)
        lam, tk = new, t1
        if it % int(check_every) == 0 or it == int(max_iter):
            q = ent.dense_q(p, lam)
            gap = float(sigma * np.maximum.reduceat(q, g.starts, axis=0).sum() - np.sum(lam * ent.q(lam)))
            if gap < best[0]:
                best = (gap, lam)
            if gap <= goal:
                break
    gap, lam = best
    return Projection(q=ent.dense_q(p, lam), gap=gap, iterations=it, lam=lam, rows=ent.rows, cols=ent.cols)


def primal_value(q: np.ndarray, p: np.ndarray, g: TypeGroups, sigma: float) -> float:
    """``sum_i KL(q_i || p_i) + sigma sum_{groups, t} max_i q_it`` over the grouped tokens."""
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(q > 0, q * (np.log(q) - np.log(p)), 0.0).sum()
    return float(kl + sigma * np.maximum.reduceat(q, g.starts, axis=0).sum())


def penalty(posteriors: np.ndarray, symbols: np.ndarray) -> float:
    """The L1/Linf norm ``sum_{w, t} max_{i : x_i = w} q_i(t)`` of token posteriors (N, n) with their
    symbols (N,), every type included (a type seen once counts 1)."""
    g = TypeGroups(symbols)
    grouped = float(np.maximum.reduceat(np.asarray(posteriors)[g.perm], g.starts, axis=0).sum()) \
        if g.n_groups else 0.0
    return grouped + g.n_single


class PosteriorSparsity:
    """The E-step with projected posteriors, for :class:`~densehmm_core.em.EMHooks` (``sigma > 0``).

    ``estep(engine, pi, A, B, data)`` returns the engine's :class:`~densehmm_core.engine.base.
    SufficientStats` with the start and emission counts of the projected posteriors; ``last`` holds
    the last projection's diagnostics (penalty before and after, duality gap, iterations).
    """

    def __init__(self, sigma: float, *, tol: float = 1e-3, max_iter: int = 100, prune: float = 1e-4) -> None:
        if not (np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
        self.sigma = float(sigma)
        self.tol, self.max_iter, self.prune = float(tol), int(max_iter), float(prune)
        self._groups: Optional[Tuple[Any, TypeGroups]] = None
        self.last: dict = {}

    def groups(self, data) -> TypeGroups:
        if self._groups is None or self._groups[0] is not data:
            self._groups = (data, TypeGroups.from_prepared(data))
        return self._groups[1]

    def estep(self, engine, pi, A, B, data):
        data = engine.prepare(data, n_states=len(pi))
        g = self.groups(data)
        st, gamma = engine.statistics_posteriors_device(pi, A, B, data)
        if g.n_groups == 0:
            return st
        be = engine.backend
        p = np.asarray(be.to_host(gamma))[g.perm]
        res = project(p, g, self.sigma, tol=self.tol, max_iter=self.max_iter, prune=self.prune)
        before = float(np.maximum.reduceat(p, g.starts, axis=0).sum())
        after = float(np.maximum.reduceat(res.q, g.starts, axis=0).sum())
        self.last = {"penalty_before": before + g.n_single, "penalty_after": after + g.n_single,
                     "gap": res.gap, "iterations": res.iterations}
        with engine.compute():
            emit = _segment_sum(res.q, g.starts)                  # (groups, n): counts of q per type
            st.emit[:, be.to_device(g.types, dtype=np.int64)] = be.to_device(np.ascontiguousarray(emit.T))
            if g.first.any():
                d = (res.q[g.first] - p[g.first]).sum(axis=0)
                st.start[...] = be.xp.maximum(st.start + be.to_device(d), 0.0)
        return st


def check_sparsity(sigma) -> float:
    """An estimator's ``posterior_sparsity`` checked: a finite number >= 0 (0: off)."""
    value = float(sigma)
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"posterior_sparsity must be a finite number >= 0, got {sigma!r}")
    return value


def sparsity_estep(sigma: float) -> Optional[PosteriorSparsity]:
    """What an EM hook's ``sparsity`` holds for ``sigma``: None when 0 (the plain E-step)."""
    return PosteriorSparsity(sigma) if sigma > 0 else None

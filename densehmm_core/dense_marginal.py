"""The direct fit of a DenseHMM: L-BFGS on the marginal likelihood, on the array module.

``fit_method="marginal"`` minimises::

    f(theta) = -log p(X | theta) / N + (l2 / 2) ||theta||^2

over all embeddings (symbol features included), ``N`` the number of training tokens.  By the
Fisher identity the gradient of ``log p(X | theta)`` at ``theta`` is the gradient of EM's
auxiliary ``Q(theta' ; theta)`` with respect to ``theta'`` at ``theta' = theta``: for every
hidden path ``h``, ``grad log p(X) = E_{p(h | X, theta)}[grad log p(X, h | theta)]``, and
``Q(theta' ; theta) = E_{p(h | X, theta)}[log p(X, h | theta')]`` has exactly that gradient at
``theta' = theta``.  So one evaluation of ``f`` and its gradient is one E-step at ``theta`` (the
expected counts and ``log p(X)``, :meth:`Engine.statistics_device`) plus the closed-form
gradient of ``-Q / N`` of :class:`~densehmm_core.dense_mstep.MStep` at the same ``theta`` with
those counts (whose L2 term adds ``l2 theta``).

:class:`MarginalLBFGS` takes one L-BFGS iteration per call of :meth:`MarginalLBFGS.step` (two-loop
recursion over the last ``memory`` curvature pairs, Armijo backtracking by halving; every trial
point is an E-step, and the accepted one's counts are kept so that the EM loop's next E-step is
not recomputed).  Arrays stay on the engine's module (numpy or CuPy); per evaluation only scalars
cross to the host.  The tests compare the gradient with finite differences of ``-log p(X)/N`` and
with TensorFlow's autodiff of a forward algorithm (``tests/test_marginal.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np

__all__ = ["Point", "MarginalLBFGS", "ARMIJO_C", "MAX_BACKTRACKS"]

#: Sufficient decrease constant of the Armijo condition ``f(x + t d) <= f(x) + c t g.d``.
ARMIJO_C = 1e-4
#: Halvings of the step before an iteration gives up (it then retries once along ``-g``).
MAX_BACKTRACKS = 30


@dataclass
class Point:
    """One iterate: ``theta`` (device), and once evaluated ``f``, ``g`` (device), the E-step's
    counts ``stats`` and ``ll`` = ``log p(X)``; the L-BFGS memory that leads away from it; ``stuck``
    once no step along any direction decreased ``f`` (later steps return the point itself)."""

    theta: Any
    f: Optional[float] = None
    g: Any = None
    stats: Any = None
    ll: float = float("nan")
    S: List[Any] = field(default_factory=list)
    Y: List[Any] = field(default_factory=list)
    rho: List[float] = field(default_factory=list)
    stuck: bool = False


class MarginalLBFGS:
    """L-BFGS on ``f`` for one DenseHMM shape on one engine.

    Parameters
    ----------
    mstep : densehmm_core.dense_mstep.MStep
        The closed-form ``-Q / N`` gradient (its ``l2`` is the penalty's weight).
    engine : densehmm_core.engine.base.Engine
        The E-step (``statistics_device``) on the same array module.
    ntok : float
        ``N``, the number of training tokens.
    memory : int
        Curvature pairs kept.
    """

    def __init__(self, mstep, engine, ntok: float, memory: int = 10) -> None:
        self.mstep, self.engine, self.xp = mstep, engine, mstep.xp
        self.ntok = float(ntok)
        self.memory = int(memory)
        self.evaluations = 0

    def evaluate(self, p: Point, data) -> Point:
        """Fill ``p``'s ``f``, ``g``, ``stats`` and ``ll`` (one E-step on the prepared ``data``);
        ``f`` is ``inf`` where ``log p(X)`` or the gradient is not finite."""
        xp, ms = self.xp, self.mstep
        pi, A, B = ms.matrices(p.theta)
        st = self.engine.statistics_device(pi, A, B, data)
        self.evaluations += 1
        p.stats = st
        p.ll = float(st.loglik.sum())
        if not np.isfinite(p.ll):
            p.f, p.g = math.inf, None
            return p
        _, g = ms.loss_and_grad(p.theta, st.start, st.trans, st.emit, self.ntok)
        checks = ms.backend.to_host(xp.stack([ms.free_sq(p.theta), xp.max(xp.abs(g))]))
        f = -p.ll / self.ntok + 0.5 * ms.l2 * float(checks[0])
        p.f, p.g = (f, g) if np.isfinite(float(checks[1])) else (math.inf, None)
        return p

    def _direction(self, p: Point):
        """``-H g`` by the two-loop recursion (``H`` scaled by the newest pair; without pairs: ``-g``
        scaled to unit length)."""
        xp = self.xp
        q = p.g.copy()
        alphas = []
        for s, y, r in zip(reversed(p.S), reversed(p.Y), reversed(p.rho)):
            a = r * float(xp.vdot(s, q))
            alphas.append(a)
            q -= a * y
        if p.S:
            q *= 1.0 / (p.rho[-1] * float(xp.vdot(p.Y[-1], p.Y[-1])))
        else:
            q *= 1.0 / max(float(xp.sqrt(xp.vdot(q, q))), 1e-300)
        for s, y, r, a in zip(p.S, p.Y, p.rho, reversed(alphas)):
            b = r * float(xp.vdot(y, q))
            q += (a - b) * s
        return -q

    def step(self, p: Point, data) -> Point:
        """One L-BFGS iteration from the evaluated point ``p``: the accepted point (evaluated, with the
        updated memory), or ``p`` itself marked ``stuck`` when neither the L-BFGS direction nor the
        steepest descent gives a sufficient decrease within :data:`MAX_BACKTRACKS` halvings."""
        if p.stuck:
            return p
        xp = self.xp
        for memory in (True, False):
            if not memory and not p.S:
                break
            q = p if memory else Point(p.theta, p.f, p.g, p.stats, p.ll)
            d = self._direction(q)
            gd = float(xp.vdot(p.g, d))
            if not gd < 0:       # not a descent direction (lost curvature): steepest descent
                q = Point(p.theta, p.f, p.g, p.stats, p.ll)
                d = self._direction(q)
                gd = float(xp.vdot(p.g, d))
            t = 1.0
            for _ in range(MAX_BACKTRACKS):
                new = self.evaluate(Point(p.theta + t * d), data)
                if new.f is not None and np.isfinite(new.f) and new.f <= p.f + ARMIJO_C * t * gd:
                    self._remember(q, new)
                    return new
                t *= 0.5
        p.stuck = True
        return p

    def _remember(self, old: Point, new: Point) -> None:
        """The curvature pair ``(s, y)`` of ``old -> new`` joins ``old``'s memory (kept when
        ``s.y > 0``, the last ``memory`` pairs) as ``new``'s memory."""
        xp = self.xp
        s, y = new.theta - old.theta, new.g - old.g
        sy, ss, yy = (float(v) for v in self.mstep.backend.to_host(xp.stack([xp.vdot(s, y), xp.vdot(s, s),
                                                                              xp.vdot(y, y)])))
        S, Y, rho = list(old.S), list(old.Y), list(old.rho)
        if sy > 1e-10 * math.sqrt(ss * yy):
            S.append(s)
            Y.append(y)
            rho.append(1.0 / sy)
            if len(S) > self.memory:
                S, Y, rho = S[1:], Y[1:], rho[1:]
        new.S, new.Y, new.rho = S, Y, rho

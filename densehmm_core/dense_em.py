"""DenseHMM in the one EM loop (:func:`densehmm_core.em.run_em`): the hooks of ``fit_method="em"``
(the gradient M-step on the engine's array module) and of ``"marginal"`` (L-BFGS on the likelihood).

The loop owns the E-step, the convergence rule, cancel, snapshots, restarts and diagnostics; these
hooks own what differs: the start (spectral or random, with its progress), the packed parameters on
the engine's device, the M-step, and handing parameters back to the estimator.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

from .em import EMHooks
from .events import TrainingDiverged
from .posterior_sparsity import sparsity_estep
from .sequences import n_tokens

if TYPE_CHECKING:
    from .dense import DenseHMM

__all__ = ["DenseEMHooks", "DenseMarginalHooks"]


class DenseEMHooks(EMHooks):
    """DenseHMM-EM in the one EM loop: the state is the packed embeddings and Adam's moments on
    the engine's device, the M-step ``mstep_steps`` Adam steps on ``-Q`` per token
    (:class:`densehmm_core.dense_mstep.MStep`); Adam's state persists across EM iterations."""

    def __init__(self, model: "DenseHMM", layout, h: dict, seqs, init: bool, engine) -> None:
        from .dense_mstep import MStep
        self.model, self.layout, self.h, self.init = model, layout, h, init
        self.engine, self.backend = engine, engine.backend
        self.mstep_ = MStep(layout, engine.backend, l2=model.l2, dtype=self.mstep_dtype(),
                            fixed_kernels=model.logits == "full")
        self.sparsity = sparsity_estep(model.posterior_sparsity)
        self.ntok = float(n_tokens(seqs))
        self.seqs, self.pairs, self.bounds = seqs, None, None   # pairs: counted by the first start_steps
        self.note: Optional[str] = None
        # (theta, (pi, A, B)) of the last parameters evaluated: the loop asks for one state's matrices
        # up to three times (its E-step, the diagnostics, the snapshot); they are computed once
        self._matrices: Optional[tuple] = None

    def mstep_dtype(self) -> str:
        """The M-step's floating-point type: the resolved ``mstep_dtype``."""
        return str(self.h["mstep_dtype"])

    def start(self, restart: int):
        from .spectral import finish
        return finish(self.start_steps(restart))

    def start_steps(self, restart: int):
        """The start of run ``restart`` with its progress (the adjacent pairs counted by the first
        spectral start, the SVD, k-means: :meth:`DenseHMM._start_steps`)."""
        from .spectral import pairs_steps, within
        if self.h["init_method"] == "spectral" and self.init and self.bounds is None:
            self.pairs, self.bounds = yield from within(self.engine.compute,
                                                        pairs_steps(self.seqs, self.model.n_symbols))
        theta, self.note = yield from within(self.engine.compute, self.model._start_steps(
            self.layout, restart, self.init, self.h, self.pairs, self.bounds, seqs=self.seqs))
        with self.engine.compute():
            return self.initial_state(self.mstep_.to_device(theta))

    def initial_state(self, theta):
        """The loop's state at the packed start ``theta`` (on the device): Adam's moments at zero, or,
        continuing a fit (``init=False``), the moments the model kept (:attr:`DenseHMM.adam_state_`),
        so that a continued fit takes the steps one uninterrupted fit would."""
        from .dense_mstep import AdamMoments
        kept = None if self.init else self.model.adam_state_
        if kept is None:
            return theta, self.mstep_.zeros()
        if len(kept["m"]) != self.layout.size:
            raise ValueError(f"the model's adam_state has {len(kept['m'])} entries but the fit has "
                             f"{self.layout.size} parameters")
        return theta, AdamMoments(self.mstep_.to_device(kept["m"]), self.mstep_.to_device(kept["v"]),
                                  float(kept["t"]))

    def start_note(self) -> Optional[str]:
        return self.note

    def matrices(self, state):
        cached = self._cached(state)
        if cached is None:
            with self.engine.compute():
                cached = self.mstep_.matrices(state[0])
            self._matrices = (state[0], cached)
        return cached

    def _cached(self, state):
        """The matrices of ``state`` when they were the last evaluated, else None."""
        if self._matrices is not None and self._matrices[0] is state[0]:
            return self._matrices[1]
        return None

    def mstep(self, state, stats, it: int):
        from .dense_mstep import STATUS_NONFINITE, STATUS_OK
        h = self.h
        with self.engine.compute():
            th, moments, _, status, _, _ = self.mstep_.adam(
                state[0], state[1], int(h["mstep_steps"]), float(h["lr"]), self.model.param_limit,
                stats.start, stats.trans, stats.emit, self.ntok, final_loss=False)
            if status == STATUS_OK:
                # the event's loss and the next E-step's matrices from one float64 evaluation
                loss, mats = self.mstep_.evaluate(th, stats.start, stats.trans, stats.emit, self.ntok)
                if not np.isfinite(loss):
                    status = STATUS_NONFINITE
        if status != STATUS_OK:
            self.adopt(state)
            raise TrainingDiverged(self.model._diverged_msg(status, it, "EM M-step", self.divergence_advice))
        self._matrices = (th, mats)
        return (th, moments), loss

    def adopt(self, state) -> None:
        # under the engine's context: on the CPU one BLAS thread (the model's float64 matrices are
        # small products; a second BLAS thread spins after them and doubles the CPU time).
        # The matrices the E-step used are reused when they are this state's: on the CPU copied (the
        # model must not share them); on a GPU brought back in one transfer beside theta's (4 MB at
        # n = 45, m = 11,000, where computing them again on the host took 8-9 ms per snapshot on the
        # 2-core CPU; the gain on a GPU is still to be measured)
        cached = self._cached(state)
        with self.engine.compute():
            theta, *mats = self.backend.to_host_many([state[0], *(cached or ())])
            self.model._adopt(theta, self.layout, stationary=False, matrices=tuple(mats) or None)
        self.model._keep_adam(self.backend, state[1])    # crosses to the host only when read

    def snapshot(self, state) -> dict:
        self.adopt(state)
        return self.model._snapshot()


class DenseMarginalHooks(DenseEMHooks):
    """``fit_method="marginal"`` in the one EM loop: the state is an L-BFGS iterate
    (:class:`densehmm_core.dense_marginal.Point`), the "M-step" one L-BFGS iteration on
    ``-log p(X)/N + (l2/2)||theta||^2`` whose trial points are E-steps; the accepted point keeps its
    counts, so the loop's E-step after it costs nothing.  The event ``loss`` is that objective."""

    divergence_advice = "Add or raise the L2 penalty (l2), which keeps the embeddings bounded."

    def __init__(self, model: "DenseHMM", layout, h: dict, seqs, init: bool, engine) -> None:
        from .dense_marginal import MarginalLBFGS
        super().__init__(model, layout, h, seqs, init, engine)
        self.lbfgs = MarginalLBFGS(self.mstep_, engine, self.ntok)
        self.data = None
        model.evaluations_ = 0

    def mstep_dtype(self) -> str:
        """float64: L-BFGS's line search and curvature pairs need the exact gradient."""
        return "float64"

    def initial_state(self, theta):
        from .dense_marginal import Point
        return Point(theta)

    def matrices(self, state):
        with self.engine.compute():
            return self.mstep_.matrices(state.theta)

    def estep(self, engine, state, data, want_stats: bool):
        self.data = data
        if state.f is None:
            with engine.compute():
                self.lbfgs.evaluate(state, data)
            self.model.evaluations_ = self.lbfgs.evaluations
        return state.stats, state.ll

    def mstep(self, state, stats, it: int):
        from .dense_mstep import STATUS_LIMIT, STATUS_NONFINITE
        if state.g is None:
            self.adopt(state)
            raise TrainingDiverged(self.model._diverged_msg(STATUS_NONFINITE, it, "L-BFGS", self.divergence_advice))
        with self.engine.compute():
            new = self.lbfgs.step(state, self.data)
            self.model.evaluations_ = self.lbfgs.evaluations
            amax = float(self.backend.to_host(self.backend.xp.max(self.backend.xp.abs(new.theta))))
        if not amax <= self.model.param_limit:
            self.adopt(state)
            raise TrainingDiverged(self.model._diverged_msg(STATUS_LIMIT, it, "L-BFGS", self.divergence_advice))
        return new, new.f

    def adopt(self, state) -> None:
        with self.engine.compute():
            self.model._adopt(self.backend.to_host(state.theta), self.layout, stationary=False)

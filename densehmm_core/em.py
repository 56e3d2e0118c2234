"""The one EM loop: Baum-Welch, DenseHMM-EM and the EM phase of cooc-then-EM.

:func:`run_em` drives every EM fit of the package.  What differs between models is the
M-step and how parameters are represented; that lives in an :class:`EMHooks` object the
estimator provides (closed form for :class:`~densehmm_core.standard.StandardHMM`, Adam on
``-Q`` for :class:`~densehmm_core.dense.DenseHMM`).  Everything else is here, once:

* the E-step through the model's inference engine (numpy or CuPy), its expected counts kept
  on the engine's device for the M-step (``Engine.statistics_device``);
  with ``EMHooks.sparsity`` set (a model's ``posterior_sparsity > 0``), the E-step's start and
  emission counts are those of posteriors projected to use few states per symbol
  (:mod:`densehmm_core.posterior_sparsity`);
* **one convergence rule**: stop when the relative change of the training log-likelihood,
  ``|ll_k - ll_{k-1}| / |ll_{k-1}|``, falls below ``tol`` (``0`` or less disables it);
* the start of every run (:meth:`EMHooks.start_steps`): its stages reported as events of phase
  ``"start"`` (:data:`~densehmm_core.events.START_PHASE`) with the token polled after each, so a
  cancel during a spectral start ends the fit within a fraction of a second; a fit cancelled during
  its first start ends with a ``"cancelled"`` event without parameters and the model as it was;
* cancel (the token is polled once per iteration), seeded restarts (the run with the highest
  training log-likelihood is kept), divergence (the model keeps its last finite parameters and
  :class:`~densehmm_core.events.TrainingDiverged` is raised);
* diagnostics -- the co-occurrence MAD of the training data and the test NLL -- every
  ``diagnostics_every`` iterations, on the engine's device, and always on the first and the last
  event; parameter snapshots every ``snapshot_every`` iterations and on the last event.

Per iteration only scalars cross from the device to the host (the log-likelihoods, the
M-step loss, the checks), plus a snapshot when one is due.

Events: ``step = k`` describes the model after ``k`` M-steps.  ``train_ll`` is its training
log-likelihood (from the E-step that follows the M-step), ``loss`` the M-step objective of the
model (DenseHMM: ``-Q`` per token; Baum-Welch: the training NLL per token).  Metrics:
``train_nll``, ``delta_ll`` (from the second event on), ``restart``/``restarts``, and when due
``mad`` and ``test_nll``; the first event may carry ``start`` (how the fit started).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

from .events import LOWER_LR, START_PHASE, CancelToken, ProgressEvent, StartStep, Stopwatch, TrainingDiverged, run_start
from .sequences import n_tokens

__all__ = ["EMSettings", "EMHooks", "run_em", "relative_change", "DIAGNOSTICS_EVERY"]

#: Default cadence of the diagnostics (co-occurrence MAD, test NLL): measured so that they cost
#: at most 5% of an iteration at word scale (docs/PERFORMANCE.md, "EM diagnostics").
DIAGNOSTICS_EVERY = 5


def relative_change(ll_new: float, ll_old: float) -> float:
    """``|ll_new - ll_old| / |ll_old|``: the quantity the convergence rule compares with ``tol``."""
    return abs(ll_new - ll_old) / max(abs(ll_old), 1e-300)


@dataclass(frozen=True)
class EMSettings:
    """How :func:`run_em` runs: at most ``n_iter`` M-steps per run, ``restarts`` runs."""

    n_iter: int
    tol: float
    phase: str
    restarts: int = 1
    snapshot_every: int = 1
    diagnostics_every: int = DIAGNOSTICS_EVERY

    def __post_init__(self) -> None:
        if int(self.n_iter) < 0:
            raise ValueError("n_iter must be >= 0")
        if int(self.restarts) < 1:
            raise ValueError("restarts must be >= 1")
        if np.isnan(self.tol):
            raise ValueError("tol must be a number (0 or less: no early stopping)")
        if int(self.diagnostics_every) < 1:
            raise ValueError("diagnostics_every must be >= 1")


class EMHooks:
    """What a model plugs into :func:`run_em`.

    A *state* is whatever the model needs to describe its parameters on the engine's device
    (a DenseHMM: the packed embeddings and Adam's moments; a standard HMM: ``pi, A, B``).
    """

    #: True when the event ``loss`` is the training NLL per token (Baum-Welch), False when the
    #: M-step reports its own objective (None on the first event).
    loss_is_nll = False
    #: What to change when the training log-likelihood becomes non-finite (the end of
    #: :class:`~densehmm_core.events.TrainingDiverged`'s message): the model's own remedy.
    divergence_advice = LOWER_LR
    #: Posterior sparsity of the E-step (a :class:`~densehmm_core.posterior_sparsity.PosteriorSparsity`
    #: the model sets when its ``posterior_sparsity`` is > 0), or None: the plain E-step.
    sparsity: Any = None

    def start(self, restart: int) -> Any:
        """The initial state of run ``restart`` (0-based)."""
        raise NotImplementedError

    def start_steps(self, restart: int):
        """:meth:`start` reporting its progress: a generator of
        :class:`~densehmm_core.events.StartStep` that returns the initial state.  It must leave the
        model untouched until its last step (a cancel closes it after any step).  Default: no steps."""
        return self.start(restart)
        yield  # pragma: no cover - makes this a generator

    def start_note(self) -> Optional[str]:
        """How the last :meth:`start` began (e.g. ``"spectral"``), for the first event, or None."""
        return None

    def matrices(self, state) -> Tuple[Any, Any, Any]:
        """``(pi, A, B)`` of ``state`` as arrays of the engine's module."""
        raise NotImplementedError

    def mstep(self, state, stats, it: int) -> Tuple[Any, Optional[float]]:
        """The next state from the expected counts ``stats`` (arrays on the device) and the M-step
        loss (or None).  On failure: :meth:`adopt` ``state`` and raise ``TrainingDiverged``."""
        raise NotImplementedError

    def adopt(self, state) -> None:
        """Make ``state`` the model's parameters (host arrays)."""
        raise NotImplementedError

    def snapshot(self, state) -> dict:
        """:meth:`adopt` ``state`` and return the model's parameter snapshot."""
        raise NotImplementedError

    def estep(self, engine, state, data, want_stats: bool) -> Tuple[Any, float]:
        """``(stats or None, total log-likelihood)`` of ``state`` on the prepared training data."""
        pi, A, B = self.matrices(state)
        if want_stats:
            if self.sparsity is not None:
                st = self.sparsity.estep(engine, pi, A, B, data)
            else:
                st = engine.statistics_device(pi, A, B, data)
            return st, float(st.loglik.sum())
        return None, float(engine.loglik_device(pi, A, B, data).sum())


class _Diagnostics:
    """The co-occurrence MAD of the training data and the test log-likelihood, on the device."""

    def __init__(self, engine, seqs, m: int, edata) -> None:
        from .cooc_sparse import DevicePairs, pair_counts
        self.engine = engine
        self.pairs = None
        if any(len(s) > 1 for s in seqs):
            self.pairs = DevicePairs(pair_counts(seqs, m), engine.backend)
        self.edata = edata

    def __call__(self, pi, A, B) -> Tuple[dict, Optional[float]]:
        out: dict = {}
        with self.engine.compute():
            if self.pairs is not None:
                out["mad"] = self.pairs.mad(A, B)
        tll = None
        if self.edata is not None:
            tll = float(self.engine.loglik_device(pi, A, B, self.edata).sum())
        return out, tll


def run_em(model, hooks: EMHooks, seqs: List[np.ndarray], *, eval_seqs, cancel: Optional[CancelToken],
           settings: EMSettings) -> Iterator[ProgressEvent]:
    """Train ``model`` by EM (module docstring); the last event has ``done=True`` and the model
    holds the parameters of the best run."""
    eng = model._engine()
    n, m = model.n_states, model.n_symbols
    data = eng.prepare(seqs, n_states=n)
    edata = None if eval_seqs is None else eng.prepare(eval_seqs, n_states=n)
    ntok = float(n_tokens(seqs))
    etok = float(n_tokens(eval_seqs)) if eval_seqs is not None else 1.0
    diag = _Diagnostics(eng, seqs, m, edata)
    s = settings
    n_iter, nr, tol = int(s.n_iter), int(s.restarts), float(s.tol)
    total = nr * n_iter
    clock = Stopwatch()
    best: Optional[Tuple[float, Any, ProgressEvent, int, str]] = None
    model.restart_losses_ = []
    reason = "max_steps"
    gstep = 0
    for r in range(nr):
        def start_event(st: StartStep, r: int = r, g: int = gstep) -> ProgressEvent:
            return ProgressEvent(step=g, total=total, phase=START_PHASE, metrics=st.metrics(r, nr),
                                 elapsed=clock.elapsed)
        started, state = yield from run_start(hooks.start_steps(r), cancel, start_event)
        if not started:   # cancelled during this run's start
            reason = "cancelled"
            break
        note = hooks.start_note()
        stats, ll = hooks.estep(eng, state, data, want_stats=n_iter > 0)
        if not np.isfinite(ll):
            hooks.adopt(state)
            raise TrainingDiverged("the initial model gives the training data zero likelihood (log-likelihood "
                                   f"{ll}); the model keeps its initial parameters")
        it, prev, mloss = 0, None, None
        while True:
            cancelled = cancel is not None and cancel.cancelled
            converged = prev is not None and tol > 0 and relative_change(ll, prev) < tol
            last = it >= n_iter or converged or cancelled
            metrics: dict = {"restart": r, "restarts": nr, "train_nll": -ll / ntok}
            if prev is not None:
                metrics["delta_ll"] = ll - prev
            if it == 0 and note:
                metrics["start"] = note
            tll = None
            if it == 0 or last or it % int(s.diagnostics_every) == 0:
                extra, tll = diag(*hooks.matrices(state))
                metrics.update(extra)
                if tll is not None:
                    metrics["test_nll"] = -tll / etok
            params = hooks.snapshot(state) if (last or it % int(s.snapshot_every) == 0) else None
            loss = -ll / ntok if hooks.loss_is_nll else mloss
            ev = ProgressEvent(step=gstep, total=total, phase=s.phase, loss=loss, train_ll=ll, test_ll=tll,
                               metrics=metrics, params=params, elapsed=clock.elapsed)
            if last:
                run_reason = "cancelled" if cancelled else ("converged" if converged else "max_steps")
                break
            yield ev
            new_state, mloss = hooks.mstep(state, stats, it + 1)
            it += 1
            new_stats, new_ll = hooks.estep(eng, new_state, data, want_stats=it < n_iter)
            if not np.isfinite(new_ll):
                hooks.adopt(state)
                raise TrainingDiverged(
                    f"EM diverged at iteration {it}: the training log-likelihood became {new_ll}; the model "
                    f"keeps its last finite parameters. {hooks.divergence_advice}")
            gstep += 1
            state, stats, prev, ll = new_state, new_stats, ll, new_ll
        model.restart_losses_.append(-ll)
        if best is None or ll > best[0]:
            best = (ll, state, ev, r, run_reason)
        if nr > 1:
            yield ev
        if run_reason == "cancelled":
            reason = run_reason
            break
    if best is None:      # cancelled during the first start: no parameters, the model as it was
        yield ProgressEvent(step=0, total=total, phase=s.phase, done=True, reason="cancelled", elapsed=clock.elapsed)
        return
    _, state, src, r_best, best_reason = best
    reason = reason if reason == "cancelled" else best_reason   # why the kept run stopped
    # every run's last event has a snapshot; when the best run is the last one (a run counts once it
    # started), that snapshot adopted its parameters already: no second one (on a GPU a transfer)
    params = src.params if r_best == r else hooks.snapshot(state)
    yield dataclasses.replace(src, step=gstep, total=total, params=params, done=True, reason=reason,
                              metrics=dict(src.metrics, restart=r_best, restarts=nr), elapsed=clock.elapsed)

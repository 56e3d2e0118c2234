"""DenseHMM's co-occurrence fit (``fit_method="cooc"`` and the first phase of ``"cooc_em"``).

Fit ``B^T diag(pi) A B`` (``pi`` the stationary distribution of ``A``) to the counted co-occurrence
matrix: Adam steps in TensorFlow (:mod:`densehmm_core.dense_tf`, :mod:`densehmm_core.words_tf`),
chunked for progress and cancel, then a second-order finish (Levenberg-Marquardt on small problems,
else the L-BFGS below).  The estimator (:class:`densehmm_core.dense.DenseHMM`) keeps the settings and
the embeddings; this module is its training loop.
"""
from __future__ import annotations

import time
from typing import Iterator, List, Optional

import numpy as np

from .events import LOWER_LR, START_PHASE, ProgressEvent, StartStep, Stopwatch, TrainingDiverged, run_start
from .sequences import n_tokens

__all__ = ["iter_cooc", "lbfgs", "Pace", "CALL_SECONDS"]


def lbfgs(fg, x0: np.ndarray, max_iter: int, memory: int = 10, gtol: float = 1e-14,
           ftol: float = 1e-12):
    """Limited-memory BFGS with Armijo backtracking, as a generator.

    Yields ``(iterations_done, x, f, reason)`` after every iteration; ``reason`` is
    non-empty on the last one (``"max_steps"``, ``"converged"``, ``"line_search"``,
    ``"nonfinite"``).
    """
    x = np.array(x0, dtype=np.float64)
    f, g = fg(x)
    if not (np.isfinite(f) and np.all(np.isfinite(g))):
        yield 0, x, f, "nonfinite"
        return
    S: List[np.ndarray] = []
    Y: List[np.ndarray] = []
    stall = 0
    for it in range(1, max_iter + 1):
        q = g.copy()
        alphas = []
        for s, y in zip(reversed(S), reversed(Y)):
            a = s.dot(q) / y.dot(s)
            alphas.append(a)
            q -= a * y
        if S:
            q *= S[-1].dot(Y[-1]) / Y[-1].dot(Y[-1])
        else:
            q *= min(1.0, 1.0 / max(float(np.linalg.norm(g)), 1e-300))
        for (s, y), a in zip(zip(S, Y), reversed(alphas)):
            b = y.dot(q) / y.dot(s)
            q += (a - b) * s
        d = -q
        gd = g.dot(d)
        if not gd < 0:
            S, Y = [], []
            d = -g * min(1.0, 1.0 / max(float(np.linalg.norm(g)), 1e-300))
            gd = g.dot(d)
        t = 1.0
        accepted = False
        for _ in range(40):
            x1 = x + t * d
            f1, g1 = fg(x1)
            if np.isfinite(f1) and f1 <= f + 1e-4 * t * gd and np.all(np.isfinite(g1)):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            yield it - 1, x, f, "line_search"
            return
        s, y = x1 - x, g1 - g
        if s.dot(y) > 1e-12 * np.linalg.norm(s) * np.linalg.norm(y):
            S.append(s)
            Y.append(y)
            if len(S) > memory:
                S.pop(0)
                Y.pop(0)
        rel = (f - f1) / max(abs(f), abs(f1), 1e-300)
        x, f, g = x1, f1, g1
        stall = stall + 1 if rel <= ftol else 0
        if np.max(np.abs(g)) <= gtol or stall >= 5:
            yield it, x, f, "converged"
            return
        yield it, x, f, ("max_steps" if it == max_iter else "")


#: The target duration of one Adam call (seconds): the cancel token is polled between calls, so a
#: cancel ends the Adam phase within about this long (plus one call's overshoot).  0: one call per
#: chunk (a cancel then waits for the chunk).
CALL_SECONDS = 0.15


class Pace:
    """How many Adam steps the next call runs: the first call one step (it includes the graph's
    first run), then as many as fit in :data:`CALL_SECONDS` at the measured speed (growing at most
    fourfold per call).  Splitting a chunk into calls does not change the numbers: the Adam state and
    the global step index (the learning-rate schedule) carry over from call to call."""

    def __init__(self, seconds: Optional[float] = None) -> None:
        self.seconds = float(CALL_SECONDS if seconds is None else seconds)
        self.size = 1

    def next(self, left: int) -> int:
        if self.seconds <= 0:
            return max(1, int(left))
        return max(1, min(int(left), self.size))

    def took(self, steps: int, seconds: float) -> None:
        if steps <= 0:
            return
        fit = int(self.seconds * steps / max(seconds, 1e-9))
        self.size = max(1, min(fit, 4 * self.size))


def iter_cooc(model, omega, *, init, eval_seqs, cancel, restarts) -> Iterator[ProgressEvent]:
    """The co-occurrence fit of ``model`` (``fit_method="cooc"``, and the first phase of
    ``"cooc_em"``): Adam on the co-occurrence loss in TensorFlow, then a second-order finish
    (Levenberg-Marquardt or L-BFGS); restarts keep the lowest loss (docs/DENSEHMM.md)."""
    from . import dense_tf as tfm
    from .cooc_sparse import PairCounts, sparse_mad
    from .device import resolve_device
    h, nr, layout = model._prepare_fit(restarts, init, "cooc")
    model.device_used_ = resolve_device(model.device)
    sparse = isinstance(omega, PairCounts) or model.sparse_cooc or getattr(layout, "n_feat", 0) > 0
    if sparse:
        if not isinstance(omega, PairCounts):
            omega = PairCounts.from_dense(omega)
        sq_norm = omega.sq_norm
    else:
        if not np.all(np.isfinite(omega)) or np.any(omega < 0) or omega.sum() <= 0:
            raise ValueError("omega must be finite, non-negative and not all zero")
        omega = omega / omega.sum()
        sq_norm = float(np.sum(omega * omega))
    spairs = PairCounts.from_dense(omega) if (not sparse and h["init_method"] == "spectral") else None
    tf = tfm.tf
    n, m, l = model.n_states, model.n_symbols, model.dim
    graph = model._graph(layout, omega)
    scale = 1.0 / sq_norm if h["loss"] == "normalized" else 1.0
    steps, finish_steps, finish = int(h["cooc_steps"]), int(h["finish_steps"]), h["finish"]
    if steps < 0 or finish_steps < 0:
        raise ValueError("cooc_steps and finish_steps must be >= 0")
    fin_chunk = max(1, model.chunk // 10)
    tol, snap_every = float(h["tol"]), int(h["snapshot_every"])
    total = nr * (steps + finish_steps)
    clock = Stopwatch()
    best = None  # (loss, theta)
    model.restart_losses_ = []
    gstep = 0
    with tf.device(model.device_used_):
        for r in range(nr):
            def start_event(st: StartStep, r: int = r, g: int = gstep) -> ProgressEvent:
                return ProgressEvent(step=g, total=total, phase=START_PHASE, metrics=st.metrics(r, nr),
                                     elapsed=clock.elapsed)
            started, theta_note = yield from run_start(
                model._start_steps(layout, r, init, h, omega if sparse else spairs, report_pairs=True), cancel,
                start_event)
            if not started:     # cancelled during the start: this restart has no model
                reason = "cancelled"
                break
            theta0, note = theta_note
            theta = tf.constant(theta0, tfm.DT)
            state = tfm.AdamState.zeros(layout.size)
            loss, mad = graph.cooc_eval(theta, scale)
            if not np.isfinite(loss):
                raise TrainingDiverged("co-occurrence loss is not finite at the initial embeddings")
            last_snap = gstep
            base_metrics = {"restart": r, "restarts": nr}
            yield ProgressEvent(step=gstep, total=total, phase="cooc", loss=loss,
                                metrics=dict(base_metrics, mad=mad, optimizer="adam", start=note),
                                params=model._snapshot(theta, layout), elapsed=clock.elapsed)
            done_steps, reason, cancelled = 0, "", False
            pace = Pace()
            if steps > 0:   # the graph's trace (a fresh shape: ~0.2-0.5 s), then a cancel check
                graph.trace_adam(theta, state, model.param_limit, scale, h["stationary_grad"], model.jit)
                cancelled = cancel is not None and cancel.cancelled
            while done_steps < steps and not cancelled:
                # one chunk: one event, one convergence check; run as calls of a few tenths of a second
                k = min(model.chunk, steps - done_steps)
                prev = loss
                kd_chunk = 0
                while kd_chunk < k:
                    k_call = pace.next(k - kd_chunk)
                    t_call = time.perf_counter()
                    theta_new, state, kd, status, good, loss, mad = graph.adam_cooc(
                        theta, state, k_call, h["lr"], h["lr_final"], done_steps + kd_chunk, steps,
                        model.param_limit, scale, h["stationary_grad"], model.jit)
                    pace.took(kd, time.perf_counter() - t_call)
                    if status != tfm.STATUS_OK or not np.isfinite(loss):
                        keep = good if status == tfm.STATUS_NONFINITE else (
                            theta_new if np.isfinite(loss) else theta)
                        model._adopt(keep, layout, stationary=True)
                        raise TrainingDiverged(
                            model._diverged_msg(status, gstep + kd_chunk + kd, "cooc Adam", LOWER_LR))
                    theta = theta_new
                    kd_chunk += kd
                    if cancel is not None and cancel.cancelled:
                        cancelled = True
                        break
                done_steps += kd_chunk
                gstep += kd_chunk
                params = None
                if gstep - last_snap >= snap_every:
                    params, last_snap = model._snapshot(theta, layout), gstep
                if cancelled:
                    break
                converged = tol > 0 and (prev - loss) <= tol * abs(prev)
                yield ProgressEvent(step=gstep, total=total, phase="cooc", loss=loss,
                                    metrics=dict(base_metrics, mad=mad, optimizer="adam"),
                                    params=params, elapsed=clock.elapsed)
                if converged:
                    break
            if not cancelled and finish_steps > 0 and finish != "none":
                if not sparse and (finish == "lm" or (finish == "auto" and m * m * layout.size <= 4_000_000)):
                    from ._cooc_np import levenberg_marquardt
                    finisher, opt = levenberg_marquardt(theta.numpy(), omega, n, m, l, finish_steps), "lm"
                else:
                    def fg(x):
                        return graph.cooc_value_and_grad(x, scale)
                    finisher, opt = lbfgs(fg, theta.numpy(), finish_steps), "lbfgs"
                x_prev = theta.numpy()
                it_prev = 0
                for it, x, f, why in finisher:
                    if not np.all(np.isfinite(x)) or np.max(np.abs(x)) > model.param_limit:
                        model._adopt(x_prev, layout, stationary=True)
                        raise TrainingDiverged(model._diverged_msg(
                            tfm.STATUS_LIMIT, gstep, f"cooc {opt}",
                            "The finish has no learning rate: train without it (finish='none', --finish none) "
                            "to keep the Adam phase's result, or with fewer finish steps."))
                    x_prev = x
                    gstep += it - it_prev
                    it_prev = it
                    if why:
                        break
                    if cancel is not None and cancel.cancelled:     # polled every iteration
                        cancelled = True
                        break
                    if it % fin_chunk == 0:
                        loss, mad = graph.cooc_eval(x, scale)
                        params = None
                        if gstep - last_snap >= snap_every:
                            params, last_snap = model._snapshot(x, layout), gstep
                        yield ProgressEvent(step=gstep, total=total, phase="cooc", loss=loss,
                                            metrics=dict(base_metrics, mad=mad, optimizer=opt),
                                            params=params, elapsed=clock.elapsed)
                theta = tf.constant(x_prev, tfm.DT)
            loss, mad = graph.cooc_eval(theta, scale)
            model.restart_losses_.append(loss)
            if best is None or loss < best[0]:
                best = (loss, theta.numpy())
            if cancelled:
                reason = "cancelled"
                break
            if r < nr - 1:
                continue
            reason = "max_steps" if gstep >= total else "converged"
    if best is None:        # cancelled during the first start: the model stays as it was
        yield ProgressEvent(step=gstep, total=total, phase="cooc", done=True, reason="cancelled",
                            elapsed=clock.elapsed)
        return
    model._adopt(best[1], layout, stationary=True)
    loss = best[0]
    if sparse:
        mad = sparse_mad(None, model.transmat_, model.emissionprob_, omega)
    else:
        mad = float(np.mean(np.abs(model.model_omega() - omega)))
    test_ll = None
    if eval_seqs is not None:
        test_ll = float(np.sum(model._engine().loglik(model.startprob_, model.transmat_,
                                                     model.emissionprob_, eval_seqs)))
    final_metrics = {"restart": int(np.argmin(model.restart_losses_)), "restarts": nr, "mad": mad}
    if test_ll is not None:
        final_metrics["test_nll"] = -test_ll / n_tokens(eval_seqs)
    yield ProgressEvent(step=gstep, total=total, phase="cooc", loss=loss, test_ll=test_ll,
                        metrics=final_metrics,
                        params=model._snapshot(), done=True, reason=reason, elapsed=clock.elapsed)

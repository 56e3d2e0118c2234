"""Divergence in the middle of an EM fit (densehmm_core.em.run_em): the model keeps the last finite
parameters, i.e. exactly those of the same fit stopped one iteration earlier (the oracle: the same
seed and data with ``n_iter`` one less), and the stream showed every iteration before.

Three ways a fit can diverge after its start: the E-step after an M-step gives the training data zero
likelihood (the loop's check), Baum-Welch's M-step gives non-finite parameters, and the DenseHMM
M-step's final float64 evaluation is not finite.  Each is provoked at a chosen iteration by wrapping
the M-step, since finite data and parameters do not reach them."""
from __future__ import annotations

import numpy as np
import pytest

from densehmm_core.dense import DenseHMM
from densehmm_core.dense_mstep import MStep
from densehmm_core.events import START_PHASE, TrainingDiverged
from densehmm_core.standard import StandardHMM

BAD = 3     # the M-step that goes wrong (1-based)


def _data():
    rng = np.random.default_rng(5)
    return [rng.integers(0, 4, size=int(k)) for k in rng.integers(5, 30, 60)]


def _steps(events):
    return [e.step for e in events if e.phase != START_PHASE]


def _fails_at(bad, original, corrupt):
    """``original`` wrapped: its ``bad``-th call's result goes through ``corrupt``."""
    calls = []

    def wrapped(*args, **kw):
        calls.append(1)
        out = original(*args, **kw)
        return corrupt(out) if len(calls) == bad else out
    return wrapped


def _same_params(model, oracle, exact_keys):
    a, b = model.arrays()["params"], oracle.arrays()["params"]
    assert set(a) == set(b)
    for k in a:
        if k in exact_keys:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-300, err_msg=k)


@pytest.mark.parametrize("how", ["zero_likelihood", "nonfinite_mstep"])
def test_baum_welch_diverging_mid_fit_keeps_the_previous_iteration(monkeypatch, how):
    data = _data()
    oracle = StandardHMM(3, n_symbols=4, n_iter=BAD - 1, tol=0, seed=2).fit(data)

    def corrupt(out):
        pi, A, B = (np.array(x) for x in out)
        if how == "zero_likelihood":
            B[:, 1] = 0.0                       # symbol 1 occurs: the data becomes impossible
            B /= B.sum(axis=1, keepdims=True)
        else:
            A[0, 0] = np.nan
        return pi, A, B
    monkeypatch.setattr(StandardHMM, "_mstep", staticmethod(_fails_at(BAD, StandardHMM._mstep, corrupt)))
    model = StandardHMM(3, n_symbols=4, n_iter=10, tol=0, seed=2)
    events = []
    match = f"EM diverged at iteration {BAD}.*Add emission smoothing \\(emission_pseudocount" \
        if how == "zero_likelihood" else f"Baum-Welch iteration {BAD}: the M-step produced non-finite parameters"
    with pytest.raises(TrainingDiverged, match=match):
        model.fit(data, callback=events.append)
    assert _steps(events) == list(range(BAD))          # iterations 0 .. BAD-1 were shown
    _same_params(model, oracle, exact_keys=set(oracle.arrays()["params"]))
    assert np.isfinite(model.score(data))


@pytest.mark.parametrize("how", ["zero_likelihood", "nonfinite_loss"])
def test_dense_em_diverging_mid_fit_keeps_the_previous_iteration(monkeypatch, how):
    """DenseHMM-EM: the embeddings are those of the fit stopped one iteration earlier, bit for bit, and
    the matrices follow from them (not the corrupt ones the failed M-step evaluated)."""
    data = _data()
    kw = dict(fit_method="em", seed=1, tol=0, mstep_steps=4, init_method="random")
    oracle = DenseHMM(3, 2, n_iter=BAD - 1, **kw).fit(data)

    def corrupt(out):
        loss, (pi, A, B) = out
        if how == "nonfinite_loss":
            return float("nan"), (pi, A, B)
        B = B.copy()
        B[:, 1] = 0.0
        B /= B.sum(axis=1, keepdims=True)
        return loss, (pi, A, B)
    monkeypatch.setattr(MStep, "evaluate", _fails_at(BAD, MStep.evaluate, corrupt))
    model = DenseHMM(3, 2, n_iter=10, **kw)
    events = []
    match = f"EM diverged at iteration {BAD}" if how == "zero_likelihood" else f"EM M-step diverged at step {BAD}"
    match += r".*Lower the learning rate \(lr\)"
    with pytest.raises(TrainingDiverged, match=match):
        model.fit(data, callback=events.append)
    assert _steps(events) == list(range(BAD))
    emb = set(oracle.embeddings_)
    _same_params(model, oracle, exact_keys=emb)
    np.testing.assert_allclose(model.emissionprob_[:, 1], oracle.emissionprob_[:, 1], rtol=1e-12)
    assert np.all(model.emissionprob_[:, 1] > 0) and np.isfinite(model.score(data))

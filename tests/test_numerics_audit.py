"""Numerics audit (2026-12-08): a reducible chain in the per-iteration diagnostics, the least-squares
z_start, the stationary distribution of nearly decomposable chains and Viterbi's ties.  Oracles:
closed forms, the unique least-squares solution, and the same decode one sequence at a time."""
from __future__ import annotations

import numpy as np
import pytest

from densehmm_core import DenseHMM, StandardHMM
from densehmm_core.maths import softmax, softmax_inverse_lstsq, stationary_distribution


@pytest.mark.parametrize("data, kw", [
    ([np.zeros(20, int), np.ones(20, int)], {}),                                   # every default
    ([np.array([0, 1] * 10), np.array([2, 3] * 10)] * 5, {"init_method": "random"}),
])
def test_baum_welch_survives_a_reducible_chain(data, kw):
    """Baum-Welch keeps the zeros it reaches: on data of disjoint alphabets the best A is block-diagonal,
    whose stationary distribution is not unique.  The per-iteration MAD solved a singular system and the
    fit died with LinAlgError; now the diagnostic takes one stationary distribution and the fit ends."""
    n = 2 if len(data) == 2 else 4
    model = StandardHMM(n, seed=0, **kw).fit(data)
    assert model.stop_reason_ in ("converged", "max_steps")
    mads = [r["mad"] for r in model.history_ if r.get("mad") is not None]
    assert mads and all(np.isfinite(mads))


def test_device_pairs_falls_back_to_the_host_stationary_distribution():
    from densehmm_core.cooc_sparse import DevicePairs, pair_counts, sparse_mad
    from densehmm_core.engine.backend import numpy_backend
    seqs = [np.array([0, 1] * 10), np.array([2, 3] * 10)]
    A = np.array([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
    B = np.eye(4)
    pc = pair_counts(seqs, 4)
    dev = DevicePairs(pc, numpy_backend())
    assert dev.mad(A, B) == pytest.approx(sparse_mad(None, A, B, pc), rel=1e-12)
    pi = dev.stationary(A)
    np.testing.assert_allclose(pi @ A, pi, atol=1e-15)
    assert pi.sum() == pytest.approx(1.0, rel=1e-15)


def test_softmax_inverse_is_the_least_squares_fit_with_a_free_shift():
    """softmax ignores a shift of its logits, so z_start must be fitted with a free constant: for U whose
    column is not orthogonal to the ones vector, centring log p gave z = 0.1429 where z = 1 is exact."""
    U = np.array([[1.0], [2.0], [3.0]])
    pi = softmax(U @ np.array([1.0]))
    z = softmax_inverse_lstsq(U, pi)
    np.testing.assert_allclose(z, [1.0], rtol=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(20):      # the oracle: lstsq over (z, c), whose residual no other z can beat
        U = rng.normal(size=(5, 2)) + 1.0
        p = rng.dirichlet(np.ones(5))
        z = softmax_inverse_lstsq(U, p)
        logp = np.log(p)
        res = np.linalg.lstsq(np.c_[U, np.ones(5)], logp, rcond=None)
        np.testing.assert_allclose(z, res[0][:2], rtol=1e-10, atol=1e-12)
        centred = np.linalg.lstsq(U, logp - logp.mean(), rcond=None)[0]      # the old fit: never better
        def resid(zz):
            r = U @ zz - logp
            return float(np.sum((r - r.mean()) ** 2))
        assert resid(z) <= resid(centred) + 1e-12


def test_cooc_em_starts_em_from_the_closest_start_distribution():
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 6, 40) for _ in range(30)]
    m = DenseHMM(3, 2, fit_method="cooc_em", seed=0, cooc_steps=30, n_iter=1, mstep_steps=1)
    events = list(m.iter_fit(seqs))
    em = [e for e in events if e.phase == "em" and e.params]
    start = em[0].params
    U, z = start["U"], start["z_start"]
    A = softmax(start["Z"] @ U.T, axis=1)
    target = stationary_distribution(A)
    logp = np.log(target)
    best = np.linalg.lstsq(np.c_[U, np.ones(3)], logp, rcond=None)[0][:2]
    np.testing.assert_allclose(softmax(U @ z), softmax(U @ best), atol=1e-12)


@pytest.mark.parametrize("eps1, eps2", [(1e-17, 2e-17), (1e-12, 1e-9), (1e-10, 3e-10)])
def test_stationary_distribution_of_nearly_decomposable_chains(eps1, eps2):
    """Two states that rarely switch: pi = (eps2, eps1) / (eps1 + eps2) exactly.  Solving pi (A - I) = 0
    rounds the 1 - eps diagonal and gave [1, 3e-17] for eps 1e-17 (relative error 2e-5 at 1e-12)."""
    A = np.array([[1.0 - eps1, eps1], [eps2, 1.0 - eps2]])
    exact = np.array([eps2, eps1]) / (eps1 + eps2)
    np.testing.assert_allclose(stationary_distribution(A), exact, rtol=1e-13)


def test_stationary_distribution_of_random_and_reducible_chains():
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 30):
        A = rng.dirichlet(np.ones(n), size=n)
        pi = stationary_distribution(A)
        np.testing.assert_allclose(pi @ A, pi, atol=1e-15)
        assert pi.sum() == pytest.approx(1.0, rel=1e-14) and pi.min() >= 0
    for A in (np.eye(2), np.array([[0.5, 0.5], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.5, 0.5]])):
        pi = stationary_distribution(A)      # one of the stationary distributions
        np.testing.assert_allclose(pi @ A, pi, atol=1e-15)
        assert pi.sum() == pytest.approx(1.0) and pi.min() >= 0


def test_viterbi_ties_do_not_depend_on_how_many_sequences_are_decoded_together():
    """Exact ties (two identical emission rows, uniform pi and A): a few sequences go through hmmlearn's
    compiled Viterbi, 64 or more through the batched array code; both now break ties alike."""
    s = StandardHMM(3, n_symbols=2)
    s.startprob_, s.transmat_ = np.full(3, 1 / 3), np.full((3, 3), 1 / 3)
    s.emissionprob_ = np.array([[0.5, 0.5], [0.5, 0.5], [0.2, 0.8]])
    rng = np.random.default_rng(1)
    xs = [rng.integers(0, 2, size=int(rng.integers(1, 12))) for _ in range(70)]
    alone = [s.decode([x])[0][0] for x in xs]
    together = s.decode(xs)[0]
    assert all(np.array_equal(a, b) for a, b in zip(alone, together))

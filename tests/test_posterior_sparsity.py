"""Posterior sparsity (densehmm_core.posterior_sparsity): the per-type projection against a
brute-force solution of the same convex problem, sigma = 0 as the plain E-step, the penalty
falling with sigma, the projected counts, and the estimators' option."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from densehmm_core.dense import DenseHMM
from densehmm_core.engine import get_engine
from densehmm_core.engine.backend import numpy_backend
from densehmm_core.engine.cupy_engine import CupyEngine
from densehmm_core.engine.numpy_engine import NumpyEngine
from densehmm_core.posterior_sparsity import (PosteriorSparsity, TypeGroups, penalty, primal_value, project,
                                              sparsity_estep)
from densehmm_core.registry import model_from_config
from densehmm_core.standard import StandardHMM


def rand_model(rng, n, m):
    return (rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), size=n), rng.dirichlet(np.ones(m), size=n))


def rand_seqs(rng, m, n_seq, max_len):
    return [rng.integers(0, m, size=int(L)) for L in rng.integers(1, max_len + 1, size=n_seq)]


def brute_force(p: np.ndarray, sym: np.ndarray, sigma: float) -> float:
    """min over q of sum_i KL(q_i || p_i) + sigma sum_{w,t} max_i q_it, by SLSQP on the primal with
    one slack xi_wt per (type, state) (q_it <= xi_wt), every type included."""
    K, n = p.shape
    types = np.unique(sym)
    col = {w: k for k, w in enumerate(types)}
    nq = K * n

    def f(z):
        q = np.clip(z[:nq].reshape(K, n), 1e-300, None)
        return float(np.sum(q * (np.log(q) - np.log(p)))) + sigma * z[nq:].sum()

    def grad(z):
        q = np.clip(z[:nq].reshape(K, n), 1e-300, None)
        return np.r_[(np.log(q) - np.log(p) + 1.0).ravel(), np.full(len(types) * n, sigma)]

    cons = [{"type": "eq", "fun": lambda z: z[:nq].reshape(K, n).sum(axis=1) - 1.0}]
    rows = []
    for i in range(K):
        for t in range(n):
            r = np.zeros(nq + len(types) * n)
            r[i * n + t] = -1.0
            r[nq + col[sym[i]] * n + t] = 1.0
            rows.append(r)
    G = np.array(rows)
    cons.append({"type": "ineq", "fun": lambda z: G @ z, "jac": lambda z: G})
    z0 = np.r_[p.ravel(), np.ones(len(types) * n)]
    bounds = [(1e-12, 1.0)] * nq + [(0.0, 1.0)] * (len(types) * n)
    res = minimize(f, z0, jac=grad, bounds=bounds, constraints=cons, method="SLSQP",
                   options={"maxiter": 2000, "ftol": 1e-12})
    # success, or stopped at the limit of its line search (status 8) at a feasible point
    assert res.status in (0, 8), res.message
    q = res.x[:nq].reshape(K, n)
    assert np.allclose(q.sum(axis=1), 1.0, atol=1e-8) and (G @ res.x).min() >= -1e-8
    return float(res.fun)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_projection_matches_brute_force_on_the_primal(seed, sigma):
    rng = np.random.default_rng(seed)
    n = 3
    sym = np.array([0, 1, 0, 2, 1, 0, 3, 1])          # types 0 and 1 repeat; 2 and 3 occur once
    p = rng.dirichlet(np.ones(n) * 0.7, size=len(sym))
    g = TypeGroups(sym)
    res = project(p[g.perm], g, sigma, tol=1e-10, max_iter=20_000, check_every=1, prune=0.0)
    # the whole primal: the grouped part plus the single-occurrence types (q = p, penalty 1 each)
    ours = primal_value(res.q, p[g.perm], g, sigma) + sigma * g.n_single
    best = brute_force(p, sym, sigma)
    assert ours == pytest.approx(best, abs=1e-6)
    assert ours - best <= res.gap + 1e-7                 # the duality gap bounds the excess
    assert np.allclose(res.q.sum(axis=1), 1.0) and (res.q >= 0).all()
    # the dual point is feasible: lambda >= 0, sum over each (type, state) column <= sigma
    assert (res.lam >= 0).all()
    cols = g.seg[res.rows] * n + res.cols
    assert np.bincount(cols, weights=res.lam).max() <= sigma + 1e-9


def test_pruned_projection_is_close_to_the_exact_one():
    rng = np.random.default_rng(5)
    n, K = 6, 400
    sym = rng.zipf(1.5, size=K) % 40
    p = rng.dirichlet(np.ones(n) * 0.2, size=K)
    g = TypeGroups(sym)
    exact = project(p[g.perm], g, 1.0, tol=1e-9, max_iter=5000, prune=0.0)
    fast = project(p[g.perm], g, 1.0, prune=1e-4)                   # the E-step's defaults
    v_exact = primal_value(exact.q, p[g.perm], g, 1.0)
    v_fast = primal_value(fast.q, p[g.perm], g, 1.0)
    assert v_exact <= v_fast <= v_exact + 1e-3 * K + 1e-2


def test_sigma_zero_is_the_plain_posterior():
    rng = np.random.default_rng(0)
    sym = rng.integers(0, 5, size=50)
    p = rng.dirichlet(np.ones(4), size=50)
    g = TypeGroups(sym)
    res = project(p[g.perm], g, 0.0)
    assert np.array_equal(res.q, p[g.perm]) and res.iterations == 0
    assert sparsity_estep(0.0) is None
    with pytest.raises(ValueError):
        PosteriorSparsity(0.0)


def test_sigma_zero_fit_is_bit_identical_to_the_plain_fit():
    rng = np.random.default_rng(3)
    seqs = rand_seqs(rng, 12, 40, 15)
    a = StandardHMM(4, n_symbols=12, n_iter=5, tol=0, seed=1, init_method="random", engine="numpy").fit(seqs)
    b = StandardHMM(4, n_symbols=12, n_iter=5, tol=0, seed=1, init_method="random", engine="numpy",
                    posterior_sparsity=0.0).fit(seqs)
    c = StandardHMM(4, n_symbols=12, n_iter=5, tol=0, seed=1, init_method="random", engine="numpy",
                    posterior_sparsity=1.0).fit(seqs)
    assert np.array_equal(a.emissionprob_, b.emissionprob_) and np.array_equal(a.transmat_, b.transmat_)
    assert not np.allclose(a.emissionprob_, c.emissionprob_)


def test_penalty_falls_and_kl_rises_with_sigma():
    rng = np.random.default_rng(1)
    n, K = 5, 300
    sym = rng.integers(0, 20, size=K)
    p = rng.dirichlet(np.ones(n), size=K)
    g = TypeGroups(sym)
    pens, kls = [], []
    for sigma in (0.0, 0.1, 0.5, 1.0, 3.0, 10.0):
        q = np.empty_like(p)
        q[g.perm] = project(p[g.perm], g, sigma, tol=1e-8, max_iter=5000, prune=0.0).q
        pens.append(penalty(q, sym))
        kls.append(float(np.sum(q * np.log(q / p))))
    assert all(b < a for a, b in zip(pens, pens[1:])), pens
    assert all(b > a for a, b in zip(kls, kls[1:])), kls
    assert pens[0] == pytest.approx(penalty(p, sym))
    assert pens[-1] >= 20 - 1e-9            # at least one state per type


GPU_PATH = CupyEngine(backend=numpy_backend(free_bytes=lambda: 2560))   # the CuPy engine's code, numpy inside


@pytest.mark.parametrize("engine", [NumpyEngine(min_batch=0), NumpyEngine(), NumpyEngine(chunk_elements=40), GPU_PATH],
                         ids=["batched", "hmmlearn-chunks", "tiny-chunks", "gpu-path-on-numpy"])
def test_engine_posteriors_with_the_statistics(engine):
    rng = np.random.default_rng(2)
    pi, A, B = rand_model(rng, 3, 7)
    seqs = rand_seqs(rng, 7, 30, 12)
    data = engine.prepare(seqs, 3)
    st, gamma = engine.statistics_posteriors_device(pi, A, B, data)
    ref = get_engine("numpy").statistics(pi, A, B, seqs)
    for a, b in ((st.start, ref.start), (st.trans, ref.trans), (st.emit, ref.emit), (st.loglik, ref.loglik)):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-12)
    post = get_engine("numpy").posteriors(pi, A, B, seqs)
    for x, y in zip(data.split(gamma), post):
        assert np.allclose(x, y, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eng", [NumpyEngine(min_batch=0), GPU_PATH], ids=["numpy", "gpu-path-on-numpy"])
def test_projected_estep_counts_are_the_counts_of_q(eng):
    rng = np.random.default_rng(4)
    n, m = 3, 6
    pi, A, B = rand_model(rng, n, m)
    seqs = rand_seqs(rng, m, 25, 10)
    data = eng.prepare(seqs, n)
    ps = PosteriorSparsity(1.0, tol=1e-9, max_iter=5000, prune=0.0)
    st = ps.estep(eng, pi, A, B, data)
    # the oracle: the projection of each type's token posteriors, counted by hand
    post = np.concatenate(eng.posteriors(pi, A, B, seqs))
    sym = np.concatenate(seqs)
    g = TypeGroups(sym)
    q = post.copy()
    q[g.perm] = project(post[g.perm], g, 1.0, tol=1e-9, max_iter=5000, prune=0.0).q
    emit = np.zeros((n, m))
    np.add.at(emit.T, sym, q)
    firsts = np.cumsum([0] + [len(s) for s in seqs[:-1]])
    plain = eng.statistics(pi, A, B, seqs)
    assert np.allclose(st.emit, emit, atol=1e-6)
    assert np.allclose(st.start, q[firsts].sum(axis=0), atol=1e-6)
    assert np.array_equal(st.trans, plain.trans)           # transitions stay unprojected
    assert np.allclose(st.emit.sum(axis=0), np.bincount(sym, minlength=m))
    assert ps.last["penalty_after"] < ps.last["penalty_before"]


def test_estimators_take_the_option():
    s = StandardHMM(3, posterior_sparsity=0.5)
    assert s.get_config()["posterior_sparsity"] == 0.5
    assert model_from_config("standard", s.get_config()).posterior_sparsity == 0.5
    d = DenseHMM(3, 2, fit_method="em", posterior_sparsity=2.0)
    assert model_from_config("dense", d.get_config()).posterior_sparsity == 2.0
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="posterior_sparsity"):
            StandardHMM(3, posterior_sparsity=bad)
        with pytest.raises(ValueError, match="posterior_sparsity"):
            DenseHMM(3, 2, posterior_sparsity=bad)
    with pytest.raises(ValueError, match="hmmlearn"):
        StandardHMM(3, engine="hmmlearn", posterior_sparsity=1.0)


def test_dense_em_with_sparsity_makes_emissions_sparser_per_type():
    """On data from an HMM whose symbols are ambiguous, the projected E-step gives each word
    fewer states than the plain one (the penalty of the final posteriors is lower)."""
    from densehmm_core.synthetic import random_hmm
    from densehmm_core.engine.sampling import sample_sequences
    hmm = random_hmm(4, 10, alpha=1.0, seed=0)
    seqs = sample_sequences(*hmm, n_sequences=60, length=20, seed=0)[0]
    sym = np.concatenate(seqs)
    pens = []
    for sigma in (0.0, 3.0):
        m = DenseHMM(4, 3, n_symbols=10, fit_method="em", seed=0, n_iter=15, mstep_steps=10, lr=0.05, tol=0,
                     init_method="random", posterior_sparsity=sigma, engine="numpy", device="cpu").fit(seqs)
        pens.append(penalty(np.concatenate(m.predict_proba(seqs)), sym))
    assert pens[1] < pens[0]


def test_pos_induction_rows_take_sigma_and_old_folders_keep_their_ids():
    from densehmm_core.experiments.pos_induction import PosSettings, model_config
    s = PosSettings(data="x", models=("baum-welch-spectral-ps", "dense-em-ps"), sparsity=2.5)
    kind, cfg = model_config(s, "baum-welch-spectral-ps", 0, 45, 0)
    assert kind == "standard" and cfg["posterior_sparsity"] == 2.5 and cfg["init_method"] == "spectral"
    kind, cfg = model_config(s, "dense-em-ps", 32, 45, 0)
    assert kind == "dense" and cfg["posterior_sparsity"] == 2.5 and cfg["fit_method"] == "em"
    assert "posterior_sparsity" not in model_config(s, "dense-em", 32, 45, 0)[1]
    assert "posterior_sparsity" not in model_config(s, "baum-welch-spectral", 0, 45, 0)[1]
    assert s.result_settings()["sparsity"] == 2.5
    assert PosSettings(data="x", sparsity=3.0, models=("dense-em",)).settings_id == \
        PosSettings(data="x", models=("dense-em",)).settings_id       # folders without -ps rows keep their id
    assert PosSettings(data="x", sparsity=3.0, models=("dense-em-ps",)).settings_id != \
        PosSettings(data="x", models=("dense-em-ps",)).settings_id

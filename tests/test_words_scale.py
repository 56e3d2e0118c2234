"""Vocabulary-scale DenseHMM maths against the dense formulas (oracle).

* sparse pair counts == the dense ``empirical_cooc`` at its nonzeros;
* the exact MAD and squared error from the observed pairs == the dense ones (numpy);
* the sparse TensorFlow co-occurrence loss and its gradient == the dense loss / gradient
  of :mod:`densehmm_core.dense_tf` (relative 1e-10, float64), with and without the gradient
  through the stationary distribution;
* symbol features: packing round trips, zero feature vectors give today's model, the M-step
  loss equals the dense one at the effective ``V`` and its feature gradient is ``S^T dL/dV``.
"""
import numpy as np
import pytest

tfm = pytest.importorskip("densehmm_core.dense_tf")
from densehmm_core import cooc_sparse as cs  # noqa: E402
from densehmm_core.dense import init_embeddings  # noqa: E402
from densehmm_core.maths import empirical_cooc, softmax, stationary_distribution  # noqa: E402
from densehmm_core.features import build_features, orthographic, register_feature_function  # noqa: E402
from densehmm_core.words_tf import FeatureLayout, WordGraph  # noqa: E402

tf = tfm.tf


def _random_model(n, m, l, seed):
    rng = np.random.default_rng(seed)
    emb = init_embeddings(n, m, l, rng)
    A = softmax(emb["Z"] @ emb["U"].T, axis=1)
    B = softmax(emb["W"] @ emb["V"].T, axis=1)
    return emb, A, B


def _seqs(m, seed, count=30):
    rng = np.random.default_rng(seed)
    # skewed symbols so that many pairs stay unobserved (a sparse Omega)
    p = 1.0 / np.arange(1, m + 1)
    p /= p.sum()
    return [rng.choice(m, size=int(rng.integers(2, 12)), p=p) for _ in range(count)]


def test_pair_counts_equal_dense_empirical_cooc():
    m = 9
    seqs = _seqs(m, 0) + [np.array([3])]  # a length-1 sequence has no pair
    pc = cs.pair_counts(seqs, m)
    dense = empirical_cooc(seqs, m)
    assert pc.nnz == np.count_nonzero(dense) < m * m
    np.testing.assert_array_equal(pc.to_dense(), dense)
    assert np.all(np.diff(pc.rows * m + pc.cols) > 0)
    np.testing.assert_allclose(cs.PairCounts.from_dense(dense).to_dense(), dense, rtol=1e-15)
    with pytest.raises(ValueError):
        cs.pair_counts([np.array([1])], m)


def test_sparse_mad_and_error_equal_dense():
    n, m = 4, 11
    _, A, B = _random_model(n, m, 3, 1)
    pc = cs.pair_counts(_seqs(m, 2), m)
    pi = stationary_distribution(A)
    omega = B.T @ (pi[:, None] * A) @ B
    gt = pc.to_dense()
    assert cs.sparse_mad(None, A, B, pc) == pytest.approx(np.mean(np.abs(omega - gt)), rel=1e-12)
    assert cs.sparse_sq_error(pi, A, B, pc) == pytest.approx(np.sum((omega - gt) ** 2), rel=1e-12)
    assert cs.omega_sq_norm(pi, A, B) == pytest.approx(np.sum(omega ** 2), rel=1e-12)
    np.testing.assert_allclose(cs.omega_at(pi, A, B, pc.rows, pc.cols, block=5), omega[pc.rows, pc.cols],
                               rtol=1e-12)


@pytest.mark.parametrize("stationary_grad", [True, False])
def test_sparse_tf_loss_and_gradient_equal_dense(stationary_grad):
    n, m, l = 4, 10, 3
    emb, _, _ = _random_model(n, m, l, 3)
    pc = cs.pair_counts(_seqs(m, 4), m)
    layout = FeatureLayout(n, m, l)
    theta = tf.constant(layout.pack(emb), tfm.DT)
    scale = 1.0 / pc.sq_norm
    om_t = tf.constant(pc.to_dense(), tfm.DT)
    with tf.GradientTape() as tape:
        tape.watch(theta)
        dense = tfm.cooc_loss(theta, om_t, scale, n, m, l, stationary_grad)
    g_dense = tape.gradient(dense, theta).numpy()
    g = WordGraph(layout, pc)
    from densehmm_core import words_tf
    with tf.GradientTape() as tape:
        tape.watch(theta)
        sparse = words_tf._cooc_loss(theta, g._prow, g._pcol, g._pval, g._gt_sq, scale, n, m, l, 0,
                                     g._fidx, g._fval, stationary_grad)
    g_sparse = tape.gradient(sparse, theta).numpy()
    assert float(sparse) == pytest.approx(float(dense), rel=1e-10)
    np.testing.assert_allclose(g_sparse, g_dense, rtol=1e-10, atol=1e-10 * np.max(np.abs(g_dense)))
    loss, grad = g.cooc_value_and_grad(theta, scale)
    assert loss == pytest.approx(float(dense), rel=1e-10)
    if stationary_grad:
        np.testing.assert_allclose(grad, g_dense, rtol=1e-10, atol=1e-10 * np.max(np.abs(g_dense)))
    loss2, mad = g.cooc_eval(theta, scale)
    d_loss, d_mad, _, _ = tfm.cooc_eval(theta.numpy(), om_t, scale, n, m, l)
    assert loss2 == pytest.approx(d_loss, rel=1e-10)
    assert mad == pytest.approx(d_mad, rel=1e-10)


def test_orthographic_features():
    assert orthographic("Walked") == ["lower=walked", "suf1=d", "suf2=ed", "suf3=ked", "cap"]
    assert orthographic("1-2") == ["lower=1-2", "suf1=2", "suf2=-2", "digit", "hyphen"]
    assert orthographic("a") == ["lower=a"]
    f = build_features(["The", "the", "walked", "talked", "Zq"], "orthographic")
    # features carried by one symbol only are dropped (its own vector plays that role)
    assert f.vocabulary == ["cap", "lower=the", "suf1=d", "suf1=e", "suf2=ed", "suf2=he", "suf3=ked"]
    pairs = {(f.vocabulary[c], r) for r, c in zip(f.rows, f.cols)}
    assert ("cap", 0) in pairs and ("cap", 4) in pairs and ("lower=the", 1) in pairs
    assert ("suf3=ked", 2) in pairs and ("suf3=ked", 3) in pairs
    with pytest.raises(ValueError, match="unknown symbol_features"):
        build_features(["a"], "nope")


def test_feature_registry_accepts_other_functions():
    classes = {"D": "acidic", "E": "acidic", "K": "basic", "R": "basic", "H": "basic"}
    register_feature_function("aa_test", lambda s: [classes[s]] if s in classes else [])
    f = build_features(list("DEKRHG"), "aa_test")
    assert f.vocabulary == ["acidic", "basic"]
    assert sorted(zip(f.rows.tolist(), f.cols.tolist())) == [(0, 0), (1, 0), (2, 1), (3, 1), (4, 1)]


def test_feature_layout_round_trip_and_mstep_gradient():
    vocab = ["The", "the", "cats", "dogs", "Dogs", "ran", "run"]
    feats = build_features(vocab, "orthographic")
    n, m, l = 3, len(vocab), 2
    rng = np.random.default_rng(5)
    emb = init_embeddings(n, m, l, rng)
    lay = FeatureLayout(n, m, l, feats)
    assert lay.size == l * (3 * n + m + 1 + feats.n_features)
    # zero feature vectors: the effective V is the drawn V (today's model)
    th0 = lay.pack(emb)
    np.testing.assert_array_equal(lay.unpack(th0)["V"], emb["V"])
    emb["feature_V"] = rng.standard_normal((feats.n_features, l))
    th = lay.pack(emb)
    back = lay.unpack(th)
    for k in ("U", "Z", "W", "V", "z_start", "feature_V"):
        np.testing.assert_allclose(back[k], emb[k], rtol=0, atol=1e-12)
    # M-step loss at theta == dense M-step loss at the effective V; feature gradient == S^T dL/dV
    c_start = rng.random(n)
    c_trans = rng.random((n, n))
    c_emit = rng.random((n, m))
    g = WordGraph(lay)
    loss, grad = g.mstep_value_and_grad(th, c_start, c_trans, c_emit, 7.0)
    plain = tfm.Layout(n, m, l).pack(back)
    d_loss, d_grad = tfm.mstep_value_and_grad(plain, c_start, c_trans, c_emit, 7.0, n, m, l)
    assert loss == pytest.approx(d_loss, rel=1e-12)
    nv = 3 * n * l
    gV = d_grad[nv:nv + m * l].reshape(m, l)
    S = np.zeros((m, feats.n_features))
    S[feats.rows, feats.cols] = 1.0
    np.testing.assert_allclose(grad[:plain.size], d_grad, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grad[plain.size:].reshape(-1, l), S.T @ gV, rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ estimator level
from densehmm_core import DenseHMM  # noqa: E402


def test_sparse_cooc_fit_follows_the_dense_fit():
    m = 8
    seqs = _seqs(m, 6, count=60)
    kw = dict(n_states=3, dim=2, seed=1, cooc_steps=60, chunk=30, finish="lbfgs", finish_steps=20)
    dense = DenseHMM(sparse_cooc=False, **kw).fit(seqs)
    sparse = DenseHMM(sparse_cooc=True, **kw).fit(seqs)
    d_loss = [h["loss"] for h in dense.history_]
    s_loss = [h["loss"] for h in sparse.history_]
    assert len(d_loss) == len(s_loss)
    np.testing.assert_allclose(s_loss, d_loss, rtol=1e-7)
    np.testing.assert_allclose(sparse.transmat_, dense.transmat_, rtol=1e-6, atol=1e-9)
    assert sparse.history_[-1]["mad"] == pytest.approx(dense.history_[-1]["mad"], rel=1e-6)
    # the final MAD is the exact dense one
    gt = empirical_cooc(seqs, m)
    assert sparse.history_[-1]["mad"] == pytest.approx(np.mean(np.abs(sparse.model_omega() - gt)), rel=1e-10)


def test_em_mad_is_exact_without_dense_omega():
    m = 7
    seqs = _seqs(m, 7, count=40)
    model = DenseHMM(3, 2, fit_method="em", seed=0, n_iter=2, mstep_steps=5).fit(seqs)
    gt = empirical_cooc(seqs, m)
    assert model.history_[-1]["mad"] == pytest.approx(np.mean(np.abs(model.model_omega() - gt)), rel=1e-10)


def test_cooc_then_em_starts_em_from_the_cooc_solution():
    m = 6
    seqs = _seqs(m, 8, count=40)
    for dtype in ("float32", "float64"):
        model = DenseHMM(3, 2, fit_method="cooc_em", seed=2, n_iter=3, mstep_steps=5, snapshot_every=1,
                         mstep_dtype=dtype)
        # the start's progress events (phase "start", before the cooc phase) are not training steps
        events = [e for e in model.iter_fit(seqs) if e.phase != "start"]
        phases = [e.phase for e in events]
        first_em = phases.index("em")
        assert set(phases[:first_em]) == {"cooc"} and set(phases[first_em:]) == {"em"}
        assert [e.done for e in events].count(True) == 1 and events[-1].done
        last_cooc = [e for e in events[:first_em] if e.params is not None][-1].params
        for k in ("U", "Z", "W", "V"):
            if dtype == "float64":
                np.testing.assert_array_equal(events[first_em].params[k], last_cooc[k])
            else:   # the float32 M-step holds its parameters in float32: the cooc solution rounded
                np.testing.assert_allclose(events[first_em].params[k], last_cooc[k], rtol=1e-7, atol=1e-30)
        # the cooc phase used the cooc preset, not the EM step count
        assert events[first_em - 1].step > 5
        assert model.get_config()["fit_method"] == "cooc_em" and model.start_mode_ == "embedding"


def test_cooc_em_phases_take_their_own_settings():
    model = DenseHMM(3, 2, fit_method="cooc_em", mstep_steps=7, lr=0.2, finish_steps=11, restarts=2)
    em, cooc = model.hyper(), model.hyper("cooc")
    assert (em["mstep_steps"], em["lr"], em["restarts"]) == (7, 0.2, 2)
    # the cooc phase: cooc-only settings and restarts from the arguments, the rest from the preset
    assert (cooc["finish_steps"], cooc["restarts"]) == (11, 2)
    assert (cooc["cooc_steps"], cooc["lr"]) == (1000, 0.05)
    assert DenseHMM(3, 2, fit_method="cooc_em", cooc_steps=33).hyper("cooc")["cooc_steps"] == 33


def test_large_vocabulary_fits_form_no_m_by_m_numpy_array():
    """m = 4000: an m x m float64 array is 128 MB; the numpy peak of both fits stays far below."""
    import tracemalloc
    m = 4000
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, m, size=20) for _ in range(50)]
    seqs[0] = np.arange(m)  # every symbol occurs
    tracemalloc.start()
    try:
        # random starts: the spectral start adds a Gram matrix of its at most 2 x 1002 context
        # columns (32 MB at any m; tests/test_spectral.py bounds it)
        em = DenseHMM(3, 2, fit_method="em", seed=0, n_iter=1, mstep_steps=2, init_method="random").fit(seqs)
        cooc = DenseHMM(3, 2, fit_method="cooc", seed=0, cooc_steps=3, finish_steps=2,
                        init_method="random").fit(seqs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < m * m * 8 / 4
    assert np.isfinite(em.history_[-1]["mad"]) and np.isfinite(cooc.history_[-1]["mad"])
    assert cooc._use_sparse_cooc()

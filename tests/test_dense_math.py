"""DenseHMM graph maths against independent oracles.

* the M-step loss equals -Q computed by brute force over all state paths;
* its TensorFlow gradient equals a central finite-difference gradient;
* with l >= n one M-step reaches the closed-form Baum-Welch update;
* the in-graph stationary distribution solves pi A = pi to 1e-12 with finite gradients;
* the numpy Levenberg-Marquardt Jacobian equals TensorFlow's.

These make the two bugs of the paper's reference code (pi term broadcast to n x n,
A term transposed) impossible: both change -Q (and the Baum-Welch fixed point).
"""
import itertools

import numpy as np
import pytest

tfm = pytest.importorskip("densehmm_core.dense_tf")
from densehmm_core.dense import init_embeddings  # noqa: E402
from densehmm_core.maths import softmax, stationary_distribution  # noqa: E402
from densehmm_core import _cooc_np  # noqa: E402

tf = tfm.tf


# ----------------------------------------------------------------- oracles
def brute_joint(pi, A, B, obs):
    """log P(x, o) for every state path x (dict path -> log prob)."""
    n = len(pi)
    out = {}
    for path in itertools.product(range(n), repeat=len(obs)):
        lp = np.log(pi[path[0]]) + np.log(B[path[0], obs[0]])
        for t in range(1, len(obs)):
            lp += np.log(A[path[t - 1], path[t]]) + np.log(B[path[t], obs[t]])
        out[path] = lp
    return out


def brute_posterior_counts(pi, A, B, seqs):
    """Exact posteriors over all paths -> expected counts, plus the posteriors themselves."""
    n, m = B.shape
    c_start, c_trans, c_emit = np.zeros(n), np.zeros((n, n)), np.zeros((n, m))
    posts = []
    for obs in seqs:
        joint = brute_joint(pi, A, B, obs)
        lps = np.array(list(joint.values()))
        post = np.exp(lps - np.logaddexp.reduce(lps))
        posts.append(dict(zip(joint.keys(), post)))
        for path, p in zip(joint.keys(), post):
            c_start[path[0]] += p
            for t in range(len(obs)):
                c_emit[path[t], obs[t]] += p
                if t:
                    c_trans[path[t - 1], path[t]] += p
    return c_start, c_trans, c_emit, posts


def brute_minus_q(posts, pi, A, B, seqs):
    """-Q = -sum_x P(x | o; old) log P(x, o; new), summed over sequences."""
    total = 0.0
    for obs, post in zip(seqs, posts):
        joint = brute_joint(pi, A, B, obs)
        total -= sum(p * joint[path] for path, p in post.items())
    return total


def dense_matrices(emb):
    A = softmax(emb["Z"] @ emb["U"].T, axis=1)
    B = softmax(emb["W"] @ emb["V"].T, axis=1)
    pi = softmax(emb["U"] @ emb["z_start"])
    return pi, A, B


def tiny_problem(seed=0, n=3, m=3, l=2):
    rng = np.random.default_rng(seed)
    # "old" parameters of the E-step: an arbitrary HMM
    pi0 = rng.dirichlet(np.ones(n))
    A0 = rng.dirichlet(np.ones(n), size=n)
    B0 = rng.dirichlet(np.ones(m), size=n)
    seqs = [rng.integers(0, m, size=T) for T in (4, 3, 5)]
    layout = tfm.Layout(n, m, l)
    emb = init_embeddings(n, m, l, rng)
    return pi0, A0, B0, seqs, layout, emb


# ------------------------------------------------------------ M-step loss
def test_mstep_loss_equals_bruteforce_minus_q():
    n, m, l = 3, 3, 2
    pi0, A0, B0, seqs, layout, emb = tiny_problem(0, n, m, l)
    c_start, c_trans, c_emit, posts = brute_posterior_counts(pi0, A0, B0, seqs)
    ntok = sum(len(s) for s in seqs)
    theta = layout.pack(emb)
    loss, _ = tfm.mstep_value_and_grad(theta, c_start, c_trans, c_emit, ntok, n, m, l)
    pi, A, B = dense_matrices(emb)
    expected = brute_minus_q(posts, pi, A, B, seqs)
    assert loss * ntok == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # the two bugs of the reference code give a different value here
    logpi = np.log(pi)
    buggy_pi = -(np.sum(c_start[None, :] * np.tile(logpi, (n, 1))) + np.sum(c_trans * np.log(A))
                 + np.sum(c_emit * np.log(B)))
    buggy_transposed = -(np.sum(c_start * logpi) + np.sum(c_trans.T * np.log(A)) + np.sum(c_emit * np.log(B)))
    assert abs(buggy_pi - expected) > 1e-3
    assert abs(buggy_transposed - expected) > 1e-3


def test_mstep_loss_with_engine_statistics_equals_bruteforce():
    engine = pytest.importorskip("densehmm_core.engine").get_engine("numpy")
    n, m, l = 2, 3, 3
    pi0, A0, B0, seqs, layout, emb = tiny_problem(3, n, m, l)
    st = engine.statistics(pi0, A0, B0, seqs)
    c_start, c_trans, c_emit, posts = brute_posterior_counts(pi0, A0, B0, seqs)
    np.testing.assert_allclose(st.trans, c_trans, atol=1e-12)
    ntok = sum(len(s) for s in seqs)
    loss, _ = tfm.mstep_value_and_grad(layout.pack(emb), st.start, st.trans, st.emit, ntok, n, m, l)
    assert loss * ntok == pytest.approx(brute_minus_q(posts, *dense_matrices(emb), seqs), rel=1e-11)


def test_mstep_gradient_matches_central_differences():
    n, m, l = 3, 4, 2
    rng = np.random.default_rng(5)
    c_start = rng.random(n) * 3
    c_trans = rng.random((n, n)) * 10
    c_emit = rng.random((n, m)) * 10
    layout = tfm.Layout(n, m, l)
    theta = layout.pack(init_embeddings(n, m, l, rng))
    _, g = tfm.mstep_value_and_grad(theta, c_start, c_trans, c_emit, 7.0, n, m, l)
    fd = np.zeros_like(theta)
    h = 1e-6
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fp, _ = tfm.mstep_value_and_grad(theta + e, c_start, c_trans, c_emit, 7.0, n, m, l)
        fm, _ = tfm.mstep_value_and_grad(theta - e, c_start, c_trans, c_emit, 7.0, n, m, l)
        fd[i] = (fp - fm) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    assert np.max(np.abs(g)) > 1e-2  # not trivially zero


# ----------------------------------------------------- stationary distribution
def _n_unit_eigenvalues(A):
    """Multiplicity of eigenvalue 1 = number of closed classes of the chain."""
    return int(np.sum(np.abs(np.linalg.eigvals(A) - 1.0) < 1e-8))


@pytest.mark.parametrize("seed", range(6))
def test_stationary_distribution_near_reducible(seed):
    rng = np.random.default_rng(seed)
    n = 6
    A = rng.dirichlet(np.full(n, 0.01), size=n)
    if _n_unit_eigenvalues(A) > 1:
        # exactly reducible: make it irreducible but nearly reducible
        A = (1 - 1e-9) * A + 1e-9 / n
    A_t = tf.constant(A, tfm.DT)
    w = tf.constant(rng.standard_normal(n), tfm.DT)
    with tf.GradientTape() as tape:
        tape.watch(A_t)
        pi = tfm.stationary(A_t)
        obj = tf.reduce_sum(w * pi)
    g = tape.gradient(obj, A_t).numpy()
    pi = pi.numpy()
    assert np.max(np.abs(pi @ A - pi)) < 1e-12
    assert abs(pi.sum() - 1) < 1e-12
    assert np.all(np.isfinite(g))
    assert pi.min() > -1e-9  # a probability vector: with the residual, THE stationary distribution


def test_stationary_gradient_matches_finite_differences():
    n = 4
    rng = np.random.default_rng(1)
    S = rng.standard_normal((n, n))
    S_t = tf.constant(S, tfm.DT)
    w = rng.standard_normal(n)
    with tf.GradientTape() as tape:
        tape.watch(S_t)
        obj = tf.reduce_sum(w * tfm.stationary(tf.nn.softmax(S_t, axis=1)))
    g = tape.gradient(obj, S_t).numpy()
    fd = np.zeros_like(S)
    for i in range(n):
        for j in range(n):
            e = np.zeros_like(S)
            e[i, j] = 1e-6
            fd[i, j] = (w @ stationary_distribution(softmax(S + e, 1))
                        - w @ stationary_distribution(softmax(S - e, 1))) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------- cooc gradients
def test_cooc_gradient_and_jacobian():
    n, m, l = 4, 5, 2
    rng = np.random.default_rng(4)
    layout = tfm.Layout(n, m, l)
    theta = layout.pack(init_embeddings(n, m, l, rng))
    omega = rng.random((m, m))
    omega /= omega.sum()
    om_t = tf.constant(omega, tfm.DT)
    loss, g = tfm.cooc_value_and_grad(theta, om_t, 3.0, n, m, l)
    # model Omega by hand (numpy oracle)
    emb = layout.unpack(theta)
    _, A, B = dense_matrices(emb)
    pi = stationary_distribution(A)
    om_model = B.T @ np.diag(pi) @ A @ B
    assert loss == pytest.approx(3.0 * np.sum((om_model - omega) ** 2), rel=1e-12)
    fd = np.zeros_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = 1e-6
        fd[i] = (tfm.cooc_value_and_grad(theta + e, om_t, 3.0, n, m, l)[0]
                 - tfm.cooc_value_and_grad(theta - e, om_t, 3.0, n, m, l)[0]) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-10)
    # pi treated as a constant (paper) gives a different gradient
    with tf.GradientTape() as tape:
        th = tf.constant(theta, tfm.DT)
        tape.watch(th)
        lc = tfm.cooc_loss(th, om_t, 3.0, n, m, l, stationary_grad=False)
    assert np.max(np.abs(tape.gradient(lc, th).numpy() - g)) > 1e-6
    # the numpy Jacobian of the Levenberg-Marquardt finish against TensorFlow's
    r, J = _cooc_np.residual_jacobian(theta, omega, n, m, l)
    with tf.GradientTape() as tape:
        th = tf.constant(theta, tfm.DT)
        tape.watch(th)
        res = tf.reshape(tfm.cooc_model(th, n, m, l)[0] - om_t, (-1,))
    J_tf = tape.jacobian(res, th).numpy()
    np.testing.assert_allclose(r, res.numpy(), atol=1e-15)
    np.testing.assert_allclose(J, J_tf, atol=1e-13)



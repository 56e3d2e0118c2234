"""The direct fit of a DenseHMM (``fit_method="marginal"``: L-BFGS on the marginal likelihood,
densehmm_core.dense_marginal) and the L2 penalty of EM's M-step.

Oracles: central finite differences of ``-log p(X)/N + (l2/2)||theta||^2`` computed by the
engine's forward algorithm; TensorFlow's autodiff of a forward algorithm written here; EM's own
fixed point on data sampled from a DenseHMM; the penalty's gradient ``l2 theta`` by subtraction.
"""
import numpy as np
import pytest

from densehmm_core.dense import DenseHMM, init_embeddings
from densehmm_core.dense_layout import FeatureLayout, Layout
from densehmm_core.dense_marginal import MarginalLBFGS, Point
from densehmm_core.dense_mstep import MStep
from densehmm_core.engine import get_engine
from densehmm_core.events import START_PHASE, CancelToken, TrainingDiverged
from densehmm_core.features import build_features

WORDS = ["the", "The", "cats", "cat", "dogs", "runs", "ran", "running", "walked", "walks", "a", "A"]


def _problem(n, l, seed, features, l2=0.0, n_seq=6):
    rng = np.random.default_rng(seed)
    m = len(WORDS)
    layout = FeatureLayout(n, m, l, build_features(WORDS, "orthographic")) if features else Layout(n, m, l)
    emb = init_embeddings(n, m, l, rng)
    if features:
        emb["feature_V"] = rng.standard_normal((layout.n_feat, l))
    theta = layout.pack(emb)
    seqs = [rng.integers(0, m, size=int(rng.integers(1, 9))) for _ in range(n_seq)]
    eng = get_engine("numpy")
    ms = MStep(layout, eng.backend, l2=l2)
    ntok = float(sum(len(s) for s in seqs))
    return layout, theta, seqs, eng, ms, ntok


def _objective(ms, eng, seqs, ntok, theta):
    """The oracle: ``-log p(X)/N + (l2/2)||theta||^2`` by the engine's forward algorithm."""
    pi, A, B = ms.matrices(theta)
    return -float(np.sum(eng.loglik(pi, A, B, seqs))) / ntok + 0.5 * ms.l2 * float(theta @ theta)


@pytest.mark.parametrize("features", [False, True])
@pytest.mark.parametrize("l2", [0.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_equals_finite_differences_of_the_log_likelihood(features, l2, seed):
    layout, theta, seqs, eng, ms, ntok = _problem(3, 2, seed, features, l2)
    lb = MarginalLBFGS(ms, eng, ntok)
    p = lb.evaluate(Point(theta.copy()), eng.prepare(seqs, n_states=3))
    assert p.f == pytest.approx(_objective(ms, eng, seqs, ntok, theta), rel=1e-12)
    h = 1e-5
    fd = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fd[i] = (_objective(ms, eng, seqs, ntok, theta + e) - _objective(ms, eng, seqs, ntok, theta - e)) / (2 * h)
    assert np.linalg.norm(p.g - fd) <= 1e-6 * np.linalg.norm(fd)
    assert np.max(np.abs(p.g - fd)) <= 1e-6 * np.max(np.abs(fd))


def _tf_forward_nll(tf, layout, theta, seqs, ntok, l2):
    """``-log p(X)/N + (l2/2)||theta||^2`` by a forward algorithm in log space, in TensorFlow."""
    n, m, l = layout.n, layout.m, layout.l
    nl = n * l
    U = tf.reshape(theta[:nl], (n, l))
    Z = tf.reshape(theta[nl:2 * nl], (n, l))
    W = tf.reshape(theta[2 * nl:3 * nl], (n, l))
    V = tf.reshape(theta[3 * nl:3 * nl + m * l], (m, l))
    zs = theta[3 * nl + m * l:3 * nl + m * l + l]
    logA = tf.nn.log_softmax(tf.matmul(Z, U, transpose_b=True), axis=1)
    logB = tf.nn.log_softmax(tf.matmul(W, V, transpose_b=True), axis=1)
    logpi = tf.nn.log_softmax(tf.linalg.matvec(U, zs))
    total = tf.constant(0.0, tf.float64)
    for s in seqs:
        a = logpi + logB[:, int(s[0])]
        for x in s[1:]:
            a = tf.reduce_logsumexp(a[:, None] + logA, axis=0) + logB[:, int(x)]
        total += tf.reduce_logsumexp(a)
    return -total / ntok + 0.5 * l2 * tf.reduce_sum(theta * theta)


@pytest.mark.parametrize("l2", [0.0, 0.05])
def test_gradient_equals_tensorflow_autodiff_of_the_forward_algorithm(l2):
    tf = pytest.importorskip("tensorflow")
    layout, theta, seqs, eng, ms, ntok = _problem(4, 3, 7, False, l2, n_seq=5)
    p = MarginalLBFGS(ms, eng, ntok).evaluate(Point(theta.copy()), eng.prepare(seqs, n_states=4))
    x = tf.Variable(theta, dtype=tf.float64)
    with tf.GradientTape() as tape:
        f = _tf_forward_nll(tf, layout, x, seqs, ntok, l2)
    g = tape.gradient(f, x).numpy()
    assert p.f == pytest.approx(float(f.numpy()), rel=1e-12)
    np.testing.assert_allclose(p.g, g, rtol=1e-9, atol=1e-9 * np.max(np.abs(g)))


@pytest.mark.parametrize("features", [False, True])
def test_l2_changes_the_mstep_loss_and_gradient_by_exactly_its_term(features):
    layout, theta, seqs, eng, _, _ = _problem(4, 3, 3, features)
    rng = np.random.default_rng(3)
    n, m = layout.n, layout.m
    counts = (rng.random(n) * 3, rng.random((n, n)) * 10, rng.random((n, m)) * 10)
    l0, g0 = MStep(layout, eng.backend).loss_and_grad(theta, *counts, 7.0)
    ms = MStep(layout, eng.backend, l2=0.25)
    l1, g1 = ms.loss_and_grad(theta, *counts, 7.0)
    np.testing.assert_allclose(g1 - g0, 0.25 * theta, rtol=1e-12, atol=1e-13)
    assert float(l1 - l0) == pytest.approx(0.125 * float(theta @ theta), rel=1e-12)
    assert ms.loss(theta, *counts, 7.0) == pytest.approx(float(l1), rel=1e-12)
    with pytest.raises(ValueError, match="l2"):
        MStep(layout, eng.backend, l2=-1.0)
    with pytest.raises(ValueError, match="l2"):
        DenseHMM(3, 2, l2=float("nan"))


def test_em_with_l2_shrinks_the_embeddings():
    """The M-step minimises the penalised loss: a large l2 gives smaller embeddings than none."""
    seqs = _synthetic(4, n_seq=30)
    norms = []
    for l2 in (0.0, 0.5):
        m = DenseHMM(3, 2, n_symbols=6, fit_method="em", seed=2, n_iter=20, lr=0.05, l2=l2, engine="numpy",
                     device="cpu")
        m.fit(seqs)
        norms.append(sum(float(np.sum(v * v)) for v in m.embeddings_.values()))
    assert norms[1] < 0.5 * norms[0], norms


def _synthetic(seed=0, n=3, m=6, l=2, n_seq=100):
    truth = DenseHMM(n, l, n_symbols=m, seed=seed)
    truth.set_embeddings(init_embeddings(n, m, l, np.random.default_rng(seed), scale=1.5), start_mode="embedding")
    return truth.sample(n_seq, 30, seed=seed + 1)[0]


def _penalised(model, seqs, l2):
    emb = model.embeddings_
    sq = sum(float(np.sum(emb[k] ** 2)) for k in ("U", "Z", "W", "V", "z_start"))
    return -model.score(seqs) / sum(len(s) for s in seqs) + 0.5 * l2 * sq


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_direct_fit_reaches_ems_fixed_point_or_better(seed):
    """Data sampled from a DenseHMM; both methods from the same spectral start at the same l2 (which
    makes the optimum finite): L-BFGS ends at an objective no worse than EM's fixed point."""
    seqs = _synthetic(seed)
    l2 = 1e-3
    common = dict(n_symbols=6, seed=3, engine="numpy", device="cpu", tol=0.0, l2=l2)
    em = DenseHMM(3, 2, fit_method="em", n_iter=500, **common)
    em.fit(seqs)
    assert abs(em.history_[-1]["delta_ll"]) < 1e-5 * abs(em.history_[-1]["train_ll"])   # EM has stopped moving
    direct = DenseHMM(3, 2, fit_method="marginal", n_iter=300, **common)
    evs = [e for e in direct.iter_fit(seqs) if e.phase != START_PHASE]
    assert evs[0].metrics["start"] == "spectral" and evs[-1].done and evs[-1].phase == "marginal"
    f_em, f_direct = _penalised(em, seqs, l2), _penalised(direct, seqs, l2)
    assert f_direct <= f_em + 1e-7
    # the event loss is that objective, and it never increases
    assert evs[-1].loss == pytest.approx(f_direct, rel=1e-10)
    losses = [e.loss for e in evs if e.loss is not None]
    assert all(b <= a for a, b in zip(losses, losses[1:]))


def test_direct_fit_with_l2_and_features_decreases_the_objective():
    rng = np.random.default_rng(5)
    seqs = [rng.integers(0, len(WORDS), size=12) for _ in range(15)]
    m = DenseHMM(3, 2, n_symbols=len(WORDS), fit_method="marginal", n_iter=15, l2=0.01, seed=0,
                 symbol_features="orthographic", engine="numpy", device="cpu")
    m.vocabulary = list(WORDS)
    evs = list(m.iter_fit(seqs))
    losses = [e.loss for e in evs if e.loss is not None]
    assert losses and all(b <= a for a, b in zip(losses, losses[1:]))
    emb = m.embeddings_
    theta = np.concatenate([emb[k].ravel() for k in ("U", "Z", "W", "z_start", "feature_V")])
    assert np.max(np.abs(emb["feature_V"])) > 0   # the features are trained
    assert m.get_config()["l2"] == 0.01 and m.get_config()["fit_method"] == "marginal"
    assert np.all(np.isfinite(theta))


def test_cancel_keeps_the_reached_model():
    seqs = _synthetic(1)
    tok = CancelToken()
    m = DenseHMM(3, 2, n_symbols=6, fit_method="marginal", n_iter=50, tol=0.0, seed=0, engine="numpy",
                 device="cpu")
    evs = []
    for ev in m.iter_fit(seqs, cancel=tok):
        evs.append(ev)
        if ev.step == 2:
            tok.cancel()
    assert evs[-1].done and evs[-1].reason == "cancelled" and evs[-1].step == 3
    assert m.score(seqs) == pytest.approx(evs[-1].train_ll, rel=1e-12)


def test_divergence_keeps_the_last_finite_parameters():
    """Deterministic alternation: the likelihood's supremum is at infinite logits, so with l2 = 0 the
    embeddings grow until the divergence guard stops the fit."""
    seqs = [np.array([0, 1] * 10) for _ in range(5)]
    m = DenseHMM(2, 2, n_symbols=2, fit_method="marginal", n_iter=500, tol=0.0, seed=0, param_limit=6.0,
                 init_method="random", init_scale=0.5, engine="numpy", device="cpu")
    with pytest.raises(TrainingDiverged, match=r"L-BFGS diverged.*the L2 penalty \(l2\)"):
        list(m.iter_fit(seqs))
    emb = m.embeddings_
    assert all(np.all(np.isfinite(v)) and np.max(np.abs(v)) <= 6.0 for v in emb.values())
    # with a penalty the optimum is finite: the same fit converges inside the guard
    m2 = DenseHMM(2, 2, n_symbols=2, fit_method="marginal", n_iter=500, tol=1e-12, seed=0, param_limit=6.0,
                  init_method="random", init_scale=0.5, l2=0.01, engine="numpy", device="cpu")
    m2.fit(seqs)
    assert m2.stop_reason_ == "converged"


def test_restarts_keep_the_best_run():
    seqs = _synthetic(2)
    m = DenseHMM(3, 2, n_symbols=6, fit_method="marginal", n_iter=10, restarts=3, seed=0, engine="numpy",
                 device="cpu", init_method="random")
    evs = list(m.iter_fit(seqs))
    assert len(m.restart_losses_) == 3
    assert -m.score(seqs) == pytest.approx(min(m.restart_losses_), rel=1e-12)
    assert evs[-1].metrics["restart"] == int(np.argmin(m.restart_losses_))


def test_pos_induction_spectral_clusters_and_direct_fit_rows(tmp_path):
    """``reproduce pos-induction``: the spectral-clusters row tags each word by the argmax of the very
    start a spectral DenseHMM fit of the same seed begins from (its first event's emissions), and
    the dense-marginal row's scores and E-step count are those of the same model fitted directly."""
    from densehmm_core.data import load
    from posruns import WORDS, pos_rows, start_and_fitted_scores
    out = tmp_path / "pos"
    rows = pos_rows(out, "--models", "spectral-clusters,dense-marginal", "--dims", "3", "--seeds", "1",
                    "--iterations", "4", "--l2", "0.001")
    corpus = load(WORDS, observe="words", lowercase=True, min_count=1)
    n = corpus.n_tags
    m = DenseHMM(n, 3, n_symbols=corpus.n_symbols, fit_method="marginal", n_iter=4, tol=0.0, seed=0, l2=0.001,
                 init_scale=0.2, init_method="spectral")
    start, fitted = start_and_fitted_scores(m, corpus)
    assert float(rows["spectral-clusters"]["m1"]) == pytest.approx(start["m1"], abs=1e-15)
    assert int(rows["spectral-clusters"]["e_steps"]) == 0
    assert float(rows["dense-marginal"]["m1"]) == pytest.approx(fitted["m1"], abs=1e-15)
    assert int(rows["dense-marginal"]["e_steps"]) == m.evaluations_ >= 5
    assert "| dense-marginal | 3 | 1 |" in (out / "pos_induction_table.md").read_text()


def test_cli_trains_saves_and_resumes_the_direct_fit(tmp_path):
    """``train --method marginal --l2``: the options reach the saved configuration; ``--resume``
    continues from the saved embeddings for ``--iter`` more L-BFGS iterations."""
    from densehmm_core.cli import main
    from densehmm_core.modelfile import load_model
    out = str(tmp_path / "m.h5")
    assert main(["train", "demo", "--states", "3", "--dim", "2", "--method", "marginal", "--l2", "0.01",
                 "--iter", "3", "--device", "cpu", "--out", out, "--name", "mg", "--quiet"]) == 0
    first = load_model(out, "mg")
    cfg = first.get_config()
    assert cfg["fit_method"] == "marginal" and cfg["l2"] == 0.01 and cfg["n_iter"] == 3
    assert [r["step"] for r in first.history_] == [0, 1, 2, 3]
    assert main(["train", "demo", "--out", out, "--name", "mg", "--resume", "--iter", "2", "--quiet"]) == 0
    resumed = load_model(out, "mg")
    n0 = len(first.history_)
    assert resumed.history_[:n0] == first.history_
    assert resumed.history_[n0]["train_ll"] == pytest.approx(first.history_[-1]["train_ll"], rel=1e-10)
    assert len(resumed.history_) == n0 + 3 and resumed.history_[-1]["loss"] <= first.history_[-1]["loss"]
    assert main(["train", "demo", "--states", "3", "--dim", "2", "--method", "marginal", "--lr", "0.1",
                 "--out", out, "--quiet"]) == 2


def test_failed_line_search_leaves_the_iterate_and_stops_spending_e_steps():
    """When no trial point satisfies the Armijo condition (here: the point's recorded objective is
    lowered by hand, so nothing nearby can beat it), the step backtracks MAX_BACKTRACKS times along the
    L-BFGS direction, then as often along -g, and returns the iterate itself, marked stuck; a stuck
    iterate costs no further E-steps."""
    from densehmm_core.dense_marginal import MAX_BACKTRACKS
    layout, theta, seqs, eng, ms, ntok = _problem(3, 2, 4, False)
    lb = MarginalLBFGS(ms, eng, ntok)
    data = eng.prepare(seqs, n_states=3)
    p = lb.step(lb.evaluate(Point(theta.copy()), data), data)   # one good step: memory holds a pair
    assert not p.stuck and len(p.S) == 1
    p.f -= 1.0
    before = lb.evaluations
    q = lb.step(p, data)
    assert q is p and q.stuck and lb.evaluations - before == 2 * MAX_BACKTRACKS
    np.testing.assert_array_equal(q.theta, p.theta)
    assert lb.step(q, data) is q and lb.evaluations - before == 2 * MAX_BACKTRACKS

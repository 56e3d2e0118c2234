"""The DenseHMM M-step on the array module (densehmm_core.dense_mstep) and the one EM loop.

Oracles: TensorFlow's autodiff of the same loss and TensorFlow's former Adam M-step
(tests/tf_mstep_oracle.py), brute-force central differences, the closed-form Baum-Welch update,
and whole EM fits with the TensorFlow M-step on the Penn Treebank sample.  The GPU code path
(parameters handed to the engine as device arrays, counts returned as device arrays) runs here
with numpy as its array module.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from densehmm_core.dense import DenseHMM, init_embeddings
from densehmm_core.dense_em import DenseEMHooks
from densehmm_core.dense_layout import FeatureLayout, Layout
from densehmm_core.events import START_PHASE
from densehmm_core.dense_mstep import STATUS_LIMIT, STATUS_NONFINITE, STATUS_OK, MStep
from densehmm_core.engine import get_engine
from densehmm_core.engine.backend import numpy_backend
from densehmm_core.engine.cupy_engine import CupyEngine
from densehmm_core.features import build_features
from densehmm_core.maths import softmax

WORDS = ["the", "The", "cats", "cat", "dogs", "runs", "ran", "running", "walked", "walks", "a", "A",
         "big-dog", "2020", "in", "on", "quickly", "slowly", "of", "to"]


def _problem(n, l, seed, features):
    rng = np.random.default_rng(seed)
    m = len(WORDS)
    layout = FeatureLayout(n, m, l, build_features(WORDS, "orthographic")) if features else Layout(n, m, l)
    emb = init_embeddings(n, m, l, rng)
    if features:
        emb["feature_V"] = rng.standard_normal((layout.n_feat, l))
    theta = layout.pack(emb)
    counts = (rng.random(n) * 3, rng.random((n, n)) * 10, rng.random((n, m)) * 10 * (rng.random((n, m)) > 0.3))
    return layout, theta, counts


def _tf_oracle():
    pytest.importorskip("tensorflow")
    import tf_mstep_oracle
    return tf_mstep_oracle


# ------------------------------------------------------------------ loss and gradient
@pytest.mark.parametrize("features", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_and_gradient_equal_tensorflows_autodiff(features, seed):
    oracle = _tf_oracle()
    layout, theta, counts = _problem(4, 3, seed, features)
    ms = MStep(layout, numpy_backend())
    loss, g = ms.loss_and_grad(theta, *counts, 7.0)
    loss_tf, g_tf = oracle.TFMStep(layout).loss_and_grad(theta, *counts, 7.0)
    assert float(loss) == pytest.approx(loss_tf, rel=1e-12)
    assert ms.loss(theta, *counts, 7.0) == pytest.approx(loss_tf, rel=1e-12)
    np.testing.assert_allclose(g, g_tf, rtol=1e-10, atol=1e-10 * np.max(np.abs(g_tf)))
    if features:
        assert np.max(np.abs(g[-layout.n_feat * layout.l:])) > 1e-3  # the feature part is not trivially 0


def test_gradient_matches_central_differences_without_tensorflow():
    layout, theta, counts = _problem(3, 2, 5, True)
    ms = MStep(layout, numpy_backend())
    _, g = ms.loss_and_grad(theta, *counts, 7.0)
    h = 1e-6
    fd = np.array([(ms.loss(theta + h * e, *counts, 7.0) - ms.loss(theta - h * e, *counts, 7.0)) / (2 * h)
                   for e in np.eye(theta.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_matrices_are_the_softmax_kernels():
    layout, theta, _ = _problem(3, 2, 4, True)
    pi, A, B = MStep(layout, numpy_backend()).matrices(theta)
    emb = layout.unpack(theta)
    np.testing.assert_allclose(A, softmax(emb["Z"] @ emb["U"].T, axis=1), rtol=1e-14)
    np.testing.assert_allclose(B, softmax(emb["W"] @ emb["V"].T, axis=1), rtol=1e-13)
    np.testing.assert_allclose(pi, softmax(emb["U"] @ emb["z_start"]), rtol=1e-14)



@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_evaluate_is_the_loss_and_the_matrices_of_one_evaluation(l2):
    layout, theta, counts = _problem(3, 2, 5, True)
    ms = MStep(layout, numpy_backend(), l2=l2)
    loss, (pi, A, B) = ms.evaluate(theta, *counts, 7.0)
    assert loss == ms.loss(theta, *counts, 7.0)
    for a, b in zip((pi, A, B), ms.matrices(theta)):
        np.testing.assert_array_equal(a, b)
    # the oracle: -Q per token from the matrices, plus the penalty
    q = counts[0] @ np.log(pi) + np.sum(counts[1] * np.log(A)) + np.sum(counts[2] * np.log(B))
    assert loss == pytest.approx(-q / 7.0 + 0.5 * l2 * theta @ theta, rel=1e-12)

# ----------------------------------------------------------------------------- Adam
@pytest.mark.parametrize("features", [False, True])
def test_adam_steps_equal_tensorflows_m_step(features):
    """Two M-steps of 25 Adam steps (Adam's state carried over): the same iterates as TensorFlow's."""
    oracle = _tf_oracle()
    layout, theta, counts = _problem(4, 3, 7, features)
    ms, tfs = MStep(layout, numpy_backend()), oracle.TFMStep(layout)
    a_th, a_st = theta, ms.zeros()
    b_th, b_st = theta, tfs.zeros()
    for _ in range(2):
        a_th, a_st, ka, sa, _, la = ms.adam(a_th, a_st, 25, 0.05, 1e4, *counts, 7.0)
        b_th, b_st, kb, sb, _, lb = tfs.adam(b_th, b_st, 25, 0.05, 1e4, *counts, 7.0)
        assert (ka, sa) == (kb, sb) == (25, STATUS_OK)
        assert la == pytest.approx(lb, rel=1e-11)
        np.testing.assert_allclose(a_th, b_th, rtol=1e-10, atol=1e-12)
    assert a_st.t == 50.0
    assert np.max(np.abs(a_th - theta)) > 0.1  # it moved


def test_adam_stops_on_divergence_with_the_last_finite_parameters():
    layout, theta, counts = _problem(3, 2, 0, False)
    ms = MStep(layout, numpy_backend())
    th, _, k, status, good, loss = ms.adam(theta, ms.zeros(), 50, 1e6, 1e4, *counts, 10.0)
    assert status == STATUS_LIMIT and k == 0
    np.testing.assert_array_equal(th, theta)
    np.testing.assert_array_equal(good, theta)
    assert np.isfinite(loss)
    bad = theta.copy()
    bad[0] = np.nan
    th, _, k, status, good, loss = ms.adam(bad, ms.zeros(), 5, 0.01, 1e4, *counts, 10.0)
    assert status == STATUS_NONFINITE and k == 0 and not np.isfinite(loss)


def test_enough_adam_steps_reach_the_closed_form_baum_welch_update():
    """l >= n: Adam on -Q reaches the closed-form M-step of a strongly non-reversible chain."""
    n, m, l = 3, 4, 4
    rng = np.random.default_rng(11)
    c_trans = np.array([[1.0, 8.0, 1.0], [1.0, 1.0, 8.0], [8.0, 1.0, 1.0]]) * rng.uniform(0.5, 1.5, (3, 3))
    c_emit = np.array([[7.0, 1, 1, 1], [1, 7.0, 1, 1], [1, 1, 1, 7.0]]) * rng.uniform(0.5, 1.5, (3, 4))
    c_start = np.array([2.0, 1.0, 0.5])
    layout = Layout(n, m, l)
    ms = MStep(layout, numpy_backend())
    th, st = layout.pack(init_embeddings(n, m, l, np.random.default_rng(2))), ms.zeros()
    for lr, steps in ((0.05, 1500), (0.005, 1000)):
        th, st, k, status, _, _ = ms.adam(th, st, steps, lr, 1e4, c_start, c_trans, c_emit, 30.0)
        assert status == STATUS_OK and k == steps
    pi, A, B = ms.matrices(th)
    np.testing.assert_allclose(A, c_trans / c_trans.sum(1, keepdims=True), atol=1e-3)
    np.testing.assert_allclose(B, c_emit / c_emit.sum(1, keepdims=True), atol=1e-3)
    np.testing.assert_allclose(pi, c_start / c_start.sum(), atol=1e-3)


# ------------------------------------------------------------------------- EM fits
class _TFHooks(DenseEMHooks):
    """DenseHMM-EM with TensorFlow's former M-step (the oracle)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.tf = _tf_oracle().TFMStep(self.layout)

    def initial_state(self, theta):
        return theta, self.tf.zeros()

    def mstep(self, state, stats, it):
        th, st, _, status, _, loss = self.tf.adam(state[0], state[1], int(self.h["mstep_steps"]), float(self.h["lr"]),
                                                 self.model.param_limit, stats.start, stats.trans, stats.emit,
                                                 self.ntok)
        assert status == STATUS_OK
        return (th, st), loss


def _words(shared_data, limit=None):
    from densehmm_core import load
    corpus = load(shared_data / "pos/ptb_wsj_sample_combined.mrg", observe="words")
    return corpus if limit is None else corpus.select(range(limit))


def test_em_likelihood_path_equals_the_tensorflow_m_step_on_the_treebank(shared_data, monkeypatch):
    """Seeded DenseHMM-EM with orthographic features on the Penn Treebank sample words, 10 iterations:
    every training log-likelihood equals the fit with TensorFlow's M-step to 1e-8 (relative)."""
    import densehmm_core.dense_em as dense_em
    corpus = _words(shared_data)
    kw = dict(n_states=12, dim=8, fit_method="em", seed=3, n_iter=10, tol=0, symbol_features="orthographic",
              diagnostics_every=10, mstep_dtype="float64")
    ours = DenseHMM(**kw).fit(corpus)
    monkeypatch.setattr(dense_em, "DenseEMHooks", _TFHooks)
    theirs = DenseHMM(**kw).fit(corpus)
    a = np.array([r["train_ll"] for r in ours.history_])
    b = np.array([r["train_ll"] for r in theirs.history_])
    assert len(a) == len(b) == 11
    np.testing.assert_allclose(a, b, rtol=1e-8)
    assert a[-1] > a[0]


# --------------------------------------------------------------- float32 M-step
@pytest.mark.parametrize("features", [False, True])
def test_float32_loss_and_gradient_follow_float64(features):
    """The float32 M-step computes the same loss and gradient as the float64 one to float32 accuracy;
    its matrices and its reported loss are float64 of the float32 parameters."""
    layout, theta, counts = _problem(5, 4, 7, features)
    ms64, ms32 = MStep(layout, numpy_backend()), MStep(layout, numpy_backend(), dtype="float32")
    th32 = ms32.to_device(theta)
    assert th32.dtype == np.float32
    loss64, g64 = ms64.loss_and_grad(th32.astype(np.float64), *counts, 7.0)
    loss32, g32 = ms32.loss_and_grad(th32, *counts, 7.0)
    assert g32.dtype == np.float32
    assert float(loss32) == pytest.approx(float(loss64), rel=1e-5)
    np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5 * np.max(np.abs(g64)))
    # the matrices the E-step gets and the loss the M-step reports: float64 of the float32 parameters
    for a, b in zip(ms32.matrices(th32), ms64.matrices(th32.astype(np.float64))):
        assert a.dtype == np.float64
        np.testing.assert_array_equal(a, b)
    assert ms32.loss(th32, *counts, 7.0) == ms64.loss(th32.astype(np.float64), *counts, 7.0)
    th, st, k, status, _, final = ms32.adam(th32, ms32.zeros(), 30, 0.05, 1e4, *counts, 7.0)
    th64, st64, k64, _, _, final64 = ms64.adam(th32.astype(np.float64), ms64.zeros(), 30, 0.05, 1e4, *counts, 7.0)
    assert status == STATUS_OK and k == k64 == 30 and th.dtype == st.m.dtype == st.v.dtype == np.float32
    np.testing.assert_allclose(th, th64, atol=1e-4)
    assert final == pytest.approx(final64, rel=1e-5) and final < ms32.loss(th32, *counts, 7.0)
    with pytest.raises(ValueError, match="float32 or float64"):
        MStep(layout, numpy_backend(), dtype="float16")


def test_float32_em_fit_follows_the_float64_fit():
    """A seeded DenseHMM-EM fit with features in float32 (the default) follows the float64 fit's
    training log-likelihood to 1e-5 relative and gives the same tagging of the training words."""
    rng = np.random.default_rng(5)
    from densehmm_core.data.corpus import Corpus
    seqs = [rng.integers(0, len(WORDS), size=int(rng.integers(2, 40))).astype(np.int32) for _ in range(80)]
    corpus = Corpus(seqs, list(WORDS))
    kw = dict(fit_method="em", seed=2, n_iter=8, tol=0, symbol_features="orthographic")
    m32 = DenseHMM(4, 3, **kw).fit(corpus)
    m64 = DenseHMM(4, 3, mstep_dtype="float64", **kw).fit(corpus)
    assert m32.resolved_config()["mstep_dtype"] == "float32" and m64.get_config()["mstep_dtype"] == "float64"
    a = np.array([r["train_ll"] for r in m32.history_])
    b = np.array([r["train_ll"] for r in m64.history_])
    np.testing.assert_allclose(a, b, rtol=1e-5)
    assert a[-1] > a[0] + 1.0
    assert all(v.dtype == np.float64 for v in m32.embeddings_.values())
    assert [list(p) for p in m32.predict(seqs)] == [list(p) for p in m64.predict(seqs)]


def test_mstep_dtype_presets_and_old_files():
    """float32 by default, float64 with the paper preset; a config saved before the option existed
    reads as float64 (what it was trained with); the direct fit always uses float64; bad values refused."""
    from densehmm_core.registry import migrate_config
    assert DenseHMM(3, 2, fit_method="em").hyper()["mstep_dtype"] == "float32"
    assert DenseHMM(3, 2, fit_method="cooc_em").hyper("em")["mstep_dtype"] == "float32"
    assert DenseHMM(3, 2, fit_method="em", preset="paper").hyper()["mstep_dtype"] == "float64"
    old = DenseHMM(3, 2, fit_method="em").resolved_config()
    del old["mstep_dtype"]
    assert DenseHMM(**migrate_config("dense", old)).hyper()["mstep_dtype"] == "float64"
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 6, size=20) for _ in range(10)]
    model = DenseHMM(3, 2, fit_method="marginal", seed=0, n_iter=2, mstep_dtype="float32")
    hooks = []
    orig = model._iter_em

    def spy(*a, **k):
        import densehmm_core.dense_em as dense_mod
        cls = dense_mod.DenseMarginalHooks
        real_init = cls.__init__

        def init(self, *ia, **ik):
            real_init(self, *ia, **ik)
            hooks.append(self.mstep_.dtype)
        cls.__init__ = init
        try:
            yield from orig(*a, **k)
        finally:
            cls.__init__ = real_init
    model._iter_em = spy
    model.fit(seqs)
    assert hooks == [np.dtype(np.float64)]
    with pytest.raises(ValueError, match="mstep_dtype"):
        DenseHMM(3, 2, fit_method="em", mstep_dtype="half")


def test_em_fit_imports_no_tensorflow_and_starts_at_once():
    """A DenseHMM EM fit (with features) in a fresh process never imports TensorFlow, and its first
    event comes soon (the 2 s target is measured by tests/benchmarks/bench_dense_em.py on a quiet
    machine; here a generous bound, as the test machine may be loaded)."""
    code = textwrap.dedent("""
        import sys, time
        import numpy as np
        from densehmm_core import DenseHMM
        from densehmm_core.data.corpus import Corpus
        rng = np.random.default_rng(0)
        vocab = ["w%d" % i for i in range(300)]
        seqs = [rng.integers(0, 300, size=int(rng.integers(2, 30))).astype(np.int32) for _ in range(400)]
        corpus = Corpus(seqs, vocab)
        model = DenseHMM(8, 4, fit_method="em", seed=0, n_iter=2, symbol_features="orthographic")
        t0 = time.perf_counter()
        events = []
        for ev in model.iter_fit(corpus):
            events.append((time.perf_counter() - t0, ev))
        first = next((t, e) for t, e in events if e.phase != "start")  # the first iteration
        print("tensorflow" in sys.modules, first[0], first[1].metrics["start"])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    tf_loaded, first, start = out.stdout.split()
    assert tf_loaded == "False"
    assert float(first) < 10.0
    assert start == "spectral"


def _device_path_engine(recorded):
    """The GPU engine's code path on numpy, with the device branch of the engine taken (arrays
    handed in and out as device arrays) and every device-to-host transfer recorded (its size)."""
    be = numpy_backend(free_bytes=lambda: 1 << 22)
    be.is_numpy = False   # take the device branches (numpy arrays stand for CuPy's)
    orig = be.to_host

    def to_host(a):
        recorded.append(int(np.size(a)))
        return orig(a)
    be.to_host = to_host
    return CupyEngine(backend=be)


@pytest.mark.parametrize("features", [False, True])
def test_em_on_the_device_path_keeps_everything_on_the_device(features):
    """The same fit as the numpy engine; per iteration only scalars cross to the host, plus the
    snapshot every snapshot_every iterations.  (In float64: on the CPU the M-step splits the symbols
    in two blocks, on a GPU it does not, which changes float32 roundings.)"""
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, len(WORDS), size=int(rng.integers(2, 40))) for _ in range(60)]
    from densehmm_core.data.corpus import Corpus
    corpus = Corpus([s.astype(np.int32) for s in seqs], list(WORDS))
    kw = dict(fit_method="em", seed=1, n_iter=6, tol=0, mstep_steps=5, snapshot_every=3, diagnostics_every=2,
              mstep_dtype="float64",
              symbol_features="orthographic" if features else None)
    ref = DenseHMM(4, 3, **kw).fit(corpus, eval_data=seqs[:10])
    sizes = []
    model = DenseHMM(4, 3, **kw)
    eng = _device_path_engine(sizes)
    model._engine = lambda: eng
    events = [e for e in model.iter_fit(corpus, eval_data=seqs[:10]) if e.phase != START_PHASE]
    np.testing.assert_allclose([e.train_ll for e in events], [r["train_ll"] for r in ref.history_], rtol=1e-12)
    np.testing.assert_allclose(model.emissionprob_, ref.emissionprob_, rtol=1e-10, atol=1e-14)
    assert [e.params is not None for e in events] == [True, False, False, True, False, False, True]
    big = [s for s in sizes if s > 3]
    # the snapshots of events 0, 3 and 6 (the final event reuses the last: one run), each one transfer
    # of theta and the matrices the E-step used (pi, A, B); the rest are the M-step's per-step checks
    # (loss, max theta, -min theta): 6 iterations x 5 steps
    n, m = model.n_states, model.n_symbols
    assert big == [model.n_parameters + n + n * n + n * m] * 3
    assert sizes.count(3) == 6 * 5 and len(sizes) == 3 + 30


def test_em_restarts_keep_the_best_training_likelihood():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 6, size=30) for _ in range(20)]
    model = DenseHMM(3, 2, fit_method="em", seed=4, n_iter=3, restarts=3, init_method="random").fit(seqs)
    lls = [-x for x in model.restart_losses_]
    assert len(lls) == 3 and len(set(lls)) == 3
    assert model.history_[-1]["train_ll"] == pytest.approx(max(lls))
    assert model.history_[-1]["restart"] == int(np.argmax(lls))
    assert model.score(seqs) == pytest.approx(max(lls), rel=1e-12)


@pytest.mark.parametrize("seed,best", [(1, 2), (2, 1)])
def test_em_final_event_carries_the_kept_runs_parameters(seed, best):
    """The final event's snapshot is the model's parameters, whether the best run is the last (its
    last event's snapshot is reused, not taken again) or an earlier one (taken again)."""
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 6, size=30) for _ in range(20)]
    model = DenseHMM(3, 2, fit_method="em", seed=seed, n_iter=3, restarts=3, init_method="random")
    events = [e for e in model.iter_fit(seqs) if e.phase != START_PHASE]
    assert int(np.argmax([-x for x in model.restart_losses_])) == best
    final = events[-1].params
    fresh = model._snapshot()
    assert final.keys() == fresh.keys()
    for k in fresh:
        np.testing.assert_array_equal(final[k], fresh[k])
    np.testing.assert_array_equal(final["emissionprob"], model.emissionprob_)
    # the kept run's last event (yielded before the final one) has the same snapshot: the same
    # object when that run is the last; else the host computed the matrices again (roundings)
    last_of_best = [e for e in events[:-1] if e.metrics["restart"] == best][-1]
    assert (last_of_best.params is final) == (best == 2)
    for k in fresh:
        np.testing.assert_allclose(last_of_best.params[k], fresh[k], rtol=1e-14, atol=0)


def test_em_host_work_runs_with_one_blas_thread(monkeypatch):
    """The snapshot every EM iteration makes (``adopt``: the model's float64 matrices on the host) runs
    under the engine's one-BLAS-thread context, like the E- and M-step: a second OpenBLAS thread woken
    by its products spins after each call (about 0.1 s of CPU per iteration at word scale)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from densehmm_core.threads import available_cpus
    if available_cpus() < 2:
        pytest.skip("one CPU: BLAS runs one thread anyway")
    seen = []
    adopt = DenseHMM._adopt

    def spy(self, *a, **k):
        seen.append(max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"))
        return adopt(self, *a, **k)

    monkeypatch.setattr(DenseHMM, "_adopt", spy)
    rng = np.random.default_rng(0)
    # two BLAS threads around the fit, whatever an earlier test (the app's one-thread limit) left
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        DenseHMM(3, 2, fit_method="em", seed=0, n_iter=3, init_method="random").fit(
            [rng.integers(0, 6, size=30) for _ in range(5)])
        assert max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas") == 2
    assert len(seen) >= 4 and set(seen) == {1}



def test_the_one_blas_thread_limit_covers_libraries_loaded_after_its_first_use():
    """scipy's own OpenBLAS is loaded with scipy.linalg (the spectral start's SVD), possibly after the
    engine first limited BLAS: the limit finds it too (it once kept its two threads)."""
    code = textwrap.dedent("""
        import sys
        from threadpoolctl import threadpool_info
        from densehmm_core.engine.numpy_engine import _single_threaded_blas
        with _single_threaded_blas():
            pass
        before = {i["filepath"] for i in threadpool_info() if i["user_api"] == "blas"}
        import scipy.linalg  # noqa: F401
        new = [i for i in threadpool_info() if i["user_api"] == "blas" and i["filepath"] not in before]
        if not new or max(i["num_threads"] for i in new) < 2:
            print("skip")
            sys.exit(0)
        with _single_threaded_blas():
            print(sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}))
    """)
    # BLAS at its default thread count in the child, whatever an earlier test left in the environment
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    if out.stdout.strip() == "skip":
        pytest.skip("no BLAS library with more than one thread is loaded by scipy.linalg here")
    assert out.stdout.strip() == "[1]"


@pytest.mark.parametrize("features", [False, True])
def test_em_evaluates_each_iterations_parameters_once(features, monkeypatch):
    """The E-step, the diagnostics and the snapshot of an iteration share one float64 evaluation of
    the parameters (the M-step's, which also gives the event's loss); the model's matrices are those of
    its embeddings, and each event's likelihood is that of its snapshot."""
    calls = []
    evaluate = MStep._evaluate

    def spy(self, theta, counts):
        calls.append(counts is not None)
        return evaluate(self, theta, counts)

    rng = np.random.default_rng(2)
    seqs = [rng.integers(0, len(WORDS), size=int(rng.integers(2, 30))).astype(np.int32) for _ in range(40)]
    from densehmm_core.data.corpus import Corpus
    corpus = Corpus(seqs, list(WORDS))
    kw = dict(fit_method="em", seed=1, n_iter=4, tol=0, mstep_steps=3, snapshot_every=1, diagnostics_every=1,
              symbol_features="orthographic" if features else None)
    monkeypatch.setattr(MStep, "_evaluate", spy)
    model = DenseHMM(4, 3, **kw)
    events = [e for e in model.iter_fit(corpus, eval_data=seqs[:8]) if e.phase != START_PHASE]
    # one evaluation of the start (matrices alone), then one per M-step (loss and matrices)
    assert calls == [False] + [True] * 4
    pi, A, B = model.startprob_, model.transmat_, model.emissionprob_
    model._update_matrices()
    np.testing.assert_allclose(pi, model.startprob_, rtol=1e-13)
    np.testing.assert_allclose(A, model.transmat_, rtol=1e-13)
    np.testing.assert_allclose(B, model.emissionprob_, rtol=1e-12)
    # each event's likelihood is that of its snapshot's embeddings (no stale matrices reused)
    for ev in events[1:]:
        p = ev.params
        assert ev.train_ll == pytest.approx(
            DenseHMM(4, 3).set_embeddings({k: p[k] for k in ("U", "Z", "W", "V", "z_start")},
                                          start_mode="embedding").score(seqs), rel=1e-10)

def test_feature_incidence_products_equal_a_dense_oracle():
    """``SymbolFeatures.apply`` / ``own`` (one cached CSR product) against the dense incidence."""
    f = build_features(WORDS, "orthographic")
    S = np.zeros((f.n_symbols, f.n_features))
    S[f.rows, f.cols] = 1.0
    rng = np.random.default_rng(1)
    own, fv = rng.standard_normal((f.n_symbols, 4)), rng.standard_normal((f.n_features, 4))
    np.testing.assert_allclose(f.apply(own, fv), own + S @ fv, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(f.own(own + S @ fv, fv), own, rtol=1e-13, atol=1e-13)
    assert S.sum() > f.n_symbols     # words with several features: the sums are exercised


def test_numpy_engine_instance_is_the_default():
    assert DenseHMM(2, 2, device="cpu")._engine() is get_engine("numpy")


def test_em_on_a_real_gpu_equals_numpy():
    """Where CuPy works (the GPU test machine): DenseHMM-EM with features and Baum-Welch on CuPy give
    the numpy engine's fits (float64: to round-off; DenseHMM's default float32 M-step: to float32 accuracy)."""
    from densehmm_core.engine import available_engines
    if "cupy" not in available_engines():
        pytest.skip("CuPy cannot use a GPU here")
    from densehmm_core.data.corpus import Corpus
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(8)
    seqs = [rng.integers(0, len(WORDS), size=int(rng.integers(2, 40))).astype(np.int32) for _ in range(200)]
    corpus = Corpus(seqs, list(WORDS))
    for make, rtol in ((lambda e: DenseHMM(5, 3, fit_method="em", seed=0, n_iter=5, tol=0, engine=e,
                                           symbol_features="orthographic", mstep_dtype="float64"), 1e-10),
                       (lambda e: StandardHMM(5, n_iter=5, tol=0, seed=0, engine=e), 1e-10),
                       # float32 M-step (the default): CuPy's reductions round differently from numpy's
                       (lambda e: DenseHMM(5, 3, fit_method="em", seed=0, n_iter=5, tol=0, engine=e,
                                           symbol_features="orthographic"), 1e-5)):
        a, b = make("numpy").fit(corpus, eval_data=seqs[:20]), make("cupy").fit(corpus, eval_data=seqs[:20])
        np.testing.assert_allclose([r["train_ll"] for r in b.history_], [r["train_ll"] for r in a.history_],
                                   rtol=rtol)
        np.testing.assert_allclose(b.emissionprob_, a.emissionprob_, rtol=1e4 * rtol,
                                   atol=1e-13 if rtol < 1e-6 else 1e-8)
    assert DenseHMM(2, 2, engine="cupy", device="gpu")._engine().device_name == "/GPU:0"

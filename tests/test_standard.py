"""StandardHMM: Baum-Welch (numpy vs hmmlearn), the progress stream, the estimator surface."""
import json
import logging

import numpy as np
import pytest

from densehmm_core.events import START_PHASE, CancelToken, ProgressEvent, TrainingDiverged
from densehmm_core.standard import StandardHMM, n_fair, n_parameters_standard
from densehmm_core.synthetic import demo_dataset, random_hmm

hmm = pytest.importorskip("hmmlearn.hmm")
logging.getLogger("hmmlearn").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def demo():
    return demo_dataset(seed=3)


@pytest.fixture(params=["batched", "hybrid"])
def engine_mode(request, monkeypatch):
    """Run a test with the batched numpy code only, and with the default engine (which
    hands chunks of few sequences, like these small data sets, to hmmlearn's compiled
    single-sequence routines)."""
    from densehmm_core.engine import get_engine
    if request.param == "batched":
        monkeypatch.setattr(get_engine("numpy"), "min_batch", 0)
    return request.param


def lls(model):
    return np.array([h["train_ll"] for h in model.history_])


def test_loglik_non_decreasing_and_events(demo, engine_mode):
    train, test, _ = demo
    events = []
    model = StandardHMM(4, n_iter=25, tol=-np.inf, seed=0)
    model.fit(train, eval_data=test, callback=events.append)
    events = [e for e in events if e.phase != START_PHASE]   # the spectral start's progress: test_start_progress.py
    ll = lls(model)
    assert len(ll) == 26 and len(events) == 26
    assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll[1:]))
    assert ll[-1] > ll[0]
    assert all(isinstance(e, ProgressEvent) and e.phase == "baum-welch" for e in events)
    assert [e.step for e in events] == list(range(26))
    assert events[-1].done and events[-1].reason == "max_steps" and not events[0].done
    tokens = sum(len(s) for s in train)
    np.testing.assert_allclose(events[-1].loss, -events[-1].train_ll / tokens, rtol=1e-12)
    # the last event describes the final model
    np.testing.assert_allclose(events[-1].train_ll, model.score(train), rtol=1e-12)
    np.testing.assert_allclose(events[-1].test_ll, model.score(test), rtol=1e-12)
    np.testing.assert_array_equal(events[-1].params["transmat"], model.transmat_)
    assert events[-1].params["transmat"] is not model.transmat_


def test_numpy_and_hmmlearn_engines_same_trajectory(demo, engine_mode):
    train, _, _ = demo
    a = StandardHMM(5, n_iter=20, tol=-np.inf, seed=4).fit(train)
    b = StandardHMM(5, n_iter=20, tol=-np.inf, seed=4, engine="hmmlearn").fit(train)
    np.testing.assert_allclose(lls(a), lls(b), rtol=1e-6)
    np.testing.assert_allclose(a.transmat_, b.transmat_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(a.emissionprob_, b.emissionprob_, rtol=1e-6, atol=1e-9)


def test_trajectory_matches_plain_hmmlearn_fit(demo, engine_mode):
    """Our Baum-Welch vs hmmlearn's own loop started from the same parameters."""
    train, _, _ = demo
    ours = StandardHMM(3, n_iter=10, tol=-np.inf, seed=9).init_params(5)
    h = hmm.CategoricalHMM(3, n_features=5, n_iter=10, tol=-np.inf, init_params="",
                           implementation="scaling")
    h.startprob_, h.transmat_, h.emissionprob_ = ours.startprob_, ours.transmat_, ours.emissionprob_
    h.fit(np.concatenate(train)[:, None], [len(s) for s in train])
    ours.fit(train, init=False)
    # hmmlearn reports the LL of the parameters before each of its 10 M-steps
    np.testing.assert_allclose(lls(ours)[:10], np.array(h.monitor_.history), rtol=1e-9)
    # after 10 M-steps both hold the same parameters
    np.testing.assert_allclose(ours.transmat_, h.transmat_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.emissionprob_, h.emissionprob_, rtol=1e-8, atol=1e-12)


def test_seed_reproducible_and_different(demo):
    train, _, _ = demo
    a = StandardHMM(3, n_iter=5, seed=1, init_method="random").fit(train)
    b = StandardHMM(3, n_iter=5, seed=1, init_method="random").fit(train)
    c = StandardHMM(3, n_iter=5, seed=2, init_method="random").fit(train)
    np.testing.assert_array_equal(a.transmat_, b.transmat_)
    np.testing.assert_array_equal(lls(a), lls(b))
    assert not np.allclose(a.transmat_, c.transmat_)


def test_warm_start_continues(demo):
    train, _, _ = demo
    full = StandardHMM(3, n_iter=10, tol=-np.inf, seed=5).fit(train)
    part = StandardHMM(3, n_iter=4, tol=-np.inf, seed=5).fit(train)
    part.n_iter = 6
    part.fit(train, init=False)
    # history_ continues: 5 records of the first fit, then 7 of the second (from step 0 again)
    assert len(part.history_) == 5 + 7 and part.history_[5]["step"] == 0
    np.testing.assert_allclose(lls(part)[5:], lls(full)[4:], rtol=1e-12)
    np.testing.assert_allclose(part.transmat_, full.transmat_, rtol=1e-10)


def test_convergence_with_tol(demo):
    train, _, _ = demo
    """The one convergence rule: stop at the first relative change |ll_k - ll_k-1| / |ll_k-1| < tol."""
    model = StandardHMM(2, n_iter=500, tol=1e-5, seed=0).fit(train)
    assert model.stop_reason_ == "converged"
    ll = lls(model)
    assert len(ll) < 501
    rel = np.abs(np.diff(ll)) / np.abs(ll[:-1])
    assert rel[-1] < 1e-5 and np.all(rel[:-1] >= 1e-5)


def test_cancel_keeps_parameters(demo):
    train, _, _ = demo
    token = CancelToken()
    model = StandardHMM(3, n_iter=50, tol=-np.inf, seed=0)
    seen = []

    def cb(ev):
        seen.append(ev)
        if ev.step == 3:
            token.cancel()

    model.fit(train, callback=cb, cancel=token)
    assert seen[-1].done and seen[-1].reason == "cancelled" and model.stop_reason_ == "cancelled"
    assert seen[-1].step == 4
    np.testing.assert_array_equal(seen[-1].params["emissionprob"], model.emissionprob_)
    ref = StandardHMM(3, n_iter=4, tol=-np.inf, seed=0).fit(train)
    np.testing.assert_allclose(model.transmat_, ref.transmat_, rtol=1e-12)


def test_divergence_keeps_last_finite_parameters():
    # a training sequence the initial model cannot produce: log-likelihood -inf
    model = StandardHMM(2, n_symbols=2, n_iter=5)
    model.startprob_ = np.array([1.0, 0.0])
    model.transmat_ = np.eye(2)
    model.emissionprob_ = np.array([[1.0, 0.0], [0.0, 1.0]])
    before = model.arrays()["params"]
    with pytest.raises(TrainingDiverged):
        model.fit([np.array([0, 0, 1])], init=False)
    for k, v in before.items():
        np.testing.assert_array_equal(model.arrays()["params"][k], v)


def test_hmmlearn_engine_cancel_and_events(demo):
    train, test, _ = demo
    token = CancelToken()
    model = StandardHMM(3, n_iter=10, tol=-np.inf, seed=1, engine="hmmlearn")
    evs = list(model.iter_fit(train, eval_data=test, cancel=token))
    assert evs[-1].reason == "max_steps" and evs[-1].test_ll is not None
    np.testing.assert_allclose(evs[-1].train_ll, model.score(train), rtol=1e-9)


def test_set_parameters_then_score_decode_sample():
    p = random_hmm(3, 4, 0.5, seed=2)
    model = StandardHMM(3)
    model.startprob_, model.transmat_, model.emissionprob_ = p
    obs, states = model.sample(20, 30, seed=1)
    obs2, _ = model.sample(20, 30, seed=1)
    for a, b in zip(obs, obs2):
        np.testing.assert_array_equal(a, b)
    assert model.n_symbols == 4
    h = hmm.CategoricalHMM(3, n_features=4, implementation="scaling")
    h.startprob_, h.transmat_, h.emissionprob_ = p
    X = np.concatenate(obs)[:, None]
    lengths = [len(o) for o in obs]
    np.testing.assert_allclose(model.score(obs), h.score(X, lengths), rtol=1e-9)
    # hmmlearn's (X, lengths) layout gives the same answers, X as (N,) or (N, 1)
    np.testing.assert_allclose(model.score(X, lengths), model.score(obs), rtol=1e-12)
    np.testing.assert_allclose(model.score(X[:, 0], lengths), model.score(obs), rtol=1e-12)
    np.testing.assert_allclose(model.score_per_sequence(obs),
                               [h.score(o[:, None]) for o in obs], rtol=1e-9)
    for o, path in zip(obs, model.predict(obs)):
        np.testing.assert_array_equal(path, h.predict(o[:, None]))
    post = model.predict_proba(obs[0])
    assert isinstance(post, np.ndarray) and post.shape == (30, 3)
    np.testing.assert_allclose(post, h.predict_proba(obs[0][:, None]), rtol=1e-9, atol=1e-12)
    # model selection: n^2 + n(m-1) - 1 free parameters
    assert model.n_parameters == 9 + 3 * 3 - 1 == n_parameters_standard(3, 4)
    ll = model.score(obs)
    np.testing.assert_allclose(model.aic(obs), -2 * ll + 2 * 17, rtol=1e-12)
    np.testing.assert_allclose(model.bic(obs), -2 * ll + 17 * np.log(600), rtol=1e-12)


def test_bad_symbols_raise():
    model = StandardHMM(2, n_symbols=3, seed=0).init_params()
    with pytest.raises(ValueError, match="outside 0..2"):
        model.score([np.array([0, 1, 3])])
    with pytest.raises(ValueError):
        model.fit([np.array([0, 7])])
    with pytest.raises(ValueError):
        StandardHMM(2, engine="nope")


def test_get_config_json_and_n_symbols_inferred(demo):
    train, _, _ = demo
    model = StandardHMM(2, n_iter=2, seed=3).fit(train)
    assert model.n_symbols == 1 + max(int(s.max()) for s in train)
    cfg = json.loads(json.dumps(model.get_config()))
    assert cfg["n_states"] == 2 and cfg["engine"] == "auto" and "kind" not in cfg
    assert cfg["device"] == "auto" and StandardHMM.kind == "standard"
    clone = StandardHMM(**cfg)
    assert clone.get_config() == model.get_config()


@pytest.mark.parametrize("n,m,l", [(5, 5, 3), (10, 20, 4), (100, 1000, 10), (3, 2, 1)])
def test_n_fair_is_the_closest_parameter_count(n, m, l):
    target = l * (3 * n + m + 1)
    nf = n_fair(n, m, l)
    cands = np.arange(1, 5 * nf + 10)
    counts = cands ** 2 + cands * (m - 1) - 1
    best = cands[np.argmin(np.abs(counts - target))]
    # the positive real root rounded; equals the integer with the closest count up to rounding ties
    root = (-(m - 1) + np.sqrt((m - 1) ** 2 + 4 * (1 + target))) / 2
    assert nf == int(np.floor(root + 0.5))
    assert abs(nf - best) <= 1
    assert n_fair(5, 5, 3) == 6


@pytest.mark.parametrize("engine", ["numpy", "hmmlearn"])
def test_unreachable_state_keeps_its_rows(engine):
    """A state with no expected counts keeps its previous rows (no 0/0 in the M-step)."""
    model = StandardHMM(3, n_symbols=2, n_iter=3, tol=-np.inf, engine=engine)
    model.startprob_ = np.array([0.5, 0.5, 0.0])
    model.transmat_ = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    model.emissionprob_ = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    model.fit([np.array([0, 1, 1, 0]), np.array([1, 1])], init=False)
    np.testing.assert_array_equal(model.transmat_[2], [0.2, 0.3, 0.5])
    np.testing.assert_array_equal(model.emissionprob_[2], [0.5, 0.5])
    assert model.startprob_[2] == 0 and np.all(np.isfinite(lls(model)))


def test_fit_accepts_x_lengths_layout(demo):
    train, _, _ = demo
    X = np.concatenate(train)[:, None]
    lengths = [len(s) for s in train]
    a = StandardHMM(3, n_iter=3, seed=0).fit(X, lengths)
    b = StandardHMM(3, n_iter=3, seed=0).fit(train)
    np.testing.assert_array_equal(lls(a), lls(b))


def test_events_report_the_analytic_cooccurrence_mad():
    """Each Baum-Welch event carries the MAD between the data's adjacent-pair frequencies and
    B^T diag(pi) A B (pi stationary for A) of the parameters of that iteration, counted by hand."""
    rng = np.random.default_rng(5)
    seqs = [rng.integers(0, 4, size=int(rng.integers(2, 30))) for _ in range(12)]
    model = StandardHMM(3, n_symbols=4, n_iter=4, seed=1, diagnostics_every=1)
    events = [e for e in model.iter_fit(seqs) if e.phase != START_PHASE]
    counts = np.zeros((4, 4))
    for s in seqs:
        for a, b in zip(s[:-1], s[1:]):
            counts[a, b] += 1
    omega = counts / counts.sum()
    snaps = [e.params for e in events]
    assert all(p is not None for p in snaps)  # snapshot_every = 1: the parameters of each step
    for ev, p in zip(events, snaps):
        A, B = p["transmat"], p["emissionprob"]
        w, v = np.linalg.eig(A.T)
        pi = np.real(v[:, np.argmin(np.abs(w - 1))])
        pi = pi / pi.sum()
        expect = np.mean(np.abs(omega - B.T @ np.diag(pi) @ A @ B))
        assert ev.metrics["mad"] == pytest.approx(expect, rel=1e-9, abs=1e-15)


def test_diagnostics_follow_their_cadence_and_the_last_event_has_them():
    """diagnostics_every=3: MAD and test NLL on events 0, 3, 6 and the last one (7), not between;
    each equals the hand-counted value (MAD) / the engine's score (test NLL) of that event's model."""
    rng = np.random.default_rng(7)
    seqs = [rng.integers(0, 6, size=int(rng.integers(2, 25))) for _ in range(10)]
    test = [rng.integers(0, 6, size=int(rng.integers(2, 25))) for _ in range(4)]
    model = StandardHMM(2, n_symbols=6, n_iter=7, seed=2, tol=0, diagnostics_every=3, emission_pseudocount=0.1)
    events = list(model.iter_fit(seqs, eval_data=test))
    counts = np.zeros((6, 6))
    for s in seqs:
        for a, b in zip(s[:-1], s[1:]):
            counts[a, b] += 1
    omega = counts / counts.sum()
    assert [e.step for e in events if "mad" in e.metrics] == [0, 3, 6, 7]
    assert [e.step for e in events if "test_nll" in e.metrics] == [0, 3, 6, 7]
    ntest = sum(len(t) for t in test)
    for ev in events:
        if "mad" not in ev.metrics:
            assert ev.test_ll is None
            continue
        A, B = ev.params["transmat"], ev.params["emissionprob"]
        w, v = np.linalg.eig(A.T)
        pi = np.real(v[:, np.argmin(np.abs(w - 1))])
        pi = pi / pi.sum()
        assert ev.metrics["mad"] == pytest.approx(np.mean(np.abs(omega - B.T @ np.diag(pi) @ A @ B)),
                                                  rel=1e-9, abs=1e-15)
        check = StandardHMM(2, n_symbols=6)
        check.startprob_, check.transmat_, check.emissionprob_ = (ev.params[k] for k in
                                                                  ("startprob", "transmat", "emissionprob"))
        assert ev.metrics["test_nll"] == pytest.approx(-check.score(test) / ntest, rel=1e-12)


def test_emission_pseudocount_matches_hmmlearns_dirichlet_prior(demo):
    """Smoothed Baum-Welch = hmmlearn's loop with emissionprob_prior = 1 + a, from the same start."""
    train, _, _ = demo
    a = 0.3
    ours = StandardHMM(3, n_iter=8, tol=-np.inf, seed=2, emission_pseudocount=a).init_params(7)  # 2 unseen symbols
    h = hmm.CategoricalHMM(3, n_features=7, n_iter=8, tol=-np.inf, init_params="", implementation="scaling",
                           emissionprob_prior=1.0 + a)
    h.startprob_, h.transmat_, h.emissionprob_ = ours.startprob_, ours.transmat_, ours.emissionprob_
    h.fit(np.concatenate(train)[:, None], [len(s) for s in train])
    ours.fit(train, init=False)
    np.testing.assert_allclose(lls(ours)[:8], np.array(h.monitor_.history), rtol=1e-9)
    np.testing.assert_allclose(ours.emissionprob_, h.emissionprob_, rtol=1e-8, atol=1e-12)
    assert np.all(ours.emissionprob_[:, 5:] > 0)
    # the hand formula for the last M-step: B = (N + a) / (N_i + m a) with the engine's counts
    prev = StandardHMM(3, n_iter=7, tol=-np.inf, seed=2, emission_pseudocount=a).init_params(7).fit(train, init=False)
    from densehmm_core.engine import get_engine
    N = get_engine("numpy").statistics(prev.startprob_, prev.transmat_, prev.emissionprob_, train).emit
    np.testing.assert_allclose(ours.emissionprob_, (N + a) / (N.sum(axis=1, keepdims=True) + 7 * a), rtol=1e-10)


def test_emission_pseudocount_keeps_unseen_symbols_possible():
    """Plain Baum-Welch scores a held-out sequence with a symbol the training data lacks as -inf;
    with a pseudocount it is finite; the key is a config key (saved with the model)."""
    rng = np.random.default_rng(5)
    train = [rng.integers(0, 4, size=12) for _ in range(20)]
    test = [np.array([0, 1, 4, 2])]                      # symbol 4 never seen in training
    plain = StandardHMM(2, n_symbols=5, n_iter=5, seed=0).fit(train)
    smooth = StandardHMM(2, n_symbols=5, n_iter=5, seed=0, emission_pseudocount=0.01).fit(train)
    assert plain.score(test) == -np.inf
    assert np.isfinite(smooth.score(test))
    assert smooth.get_config()["emission_pseudocount"] == 0.01
    assert StandardHMM(2).get_config()["emission_pseudocount"] == 0.0
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="emission_pseudocount"):
            StandardHMM(2, emission_pseudocount=bad)

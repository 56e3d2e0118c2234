"""DenseHMM: estimator surface, both training schemes, events, cancel, divergence, devices."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from densehmm_core.dense import DenseHMM, PRESETS, init_embeddings
from densehmm_core.events import START_PHASE, CancelToken, TrainingDiverged
from densehmm_core.standard import StandardHMM


def ground_truth(seed, n=5, m=8, l=3, start_mode="embedding"):
    rng = np.random.default_rng(1000 + seed)
    return DenseHMM(n, l, m).set_embeddings(init_embeddings(n, m, l, rng), start_mode=start_mode)


@pytest.fixture(scope="module")
def em_data():
    """20k training and 20k held-out tokens sampled from a random DenseHMM (n=5, m=8, l=3)."""
    gt = ground_truth(7)
    train, _ = gt.sample(100, 200, seed=1)
    test, _ = gt.sample(100, 200, seed=2)
    return gt, train, test


# ---------------------------------------------------------------- surface
def test_matrices_follow_the_embedding_formulas_and_scores_match_brute_force():
    n, m, l = 3, 4, 2
    rng = np.random.default_rng(0)
    emb = init_embeddings(n, m, l, rng)
    model = DenseHMM(n, l)
    model.embeddings_ = emb
    U, Z, W, V, zs = (emb[k] for k in ("U", "Z", "W", "V", "z_start"))
    for i in range(n):
        den = sum(np.exp(Z[i] @ U[k]) for k in range(n))
        for j in range(n):
            assert model.transmat_[i, j] == pytest.approx(np.exp(Z[i] @ U[j]) / den, rel=1e-13)
        den = sum(np.exp(W[i] @ V[k]) for k in range(m))
        for k in range(m):
            assert model.emissionprob_[i, k] == pytest.approx(np.exp(W[i] @ V[k]) / den, rel=1e-13)
    den = sum(np.exp(zs @ U[k]) for k in range(n))
    np.testing.assert_allclose(model.startprob_, [np.exp(zs @ U[i]) / den for i in range(n)], rtol=1e-13)
    assert model.n_symbols == m
    assert model.n_parameters == l * (3 * n + m + 1)
    # scoring without fitting: total log-likelihood by brute force over state paths
    import itertools
    obs = np.array([0, 3, 1, 1])
    pi, A, B = model.startprob_, model.transmat_, model.emissionprob_
    p = 0.0
    for path in itertools.product(range(n), repeat=len(obs)):
        q = pi[path[0]] * B[path[0], obs[0]]
        for t in range(1, len(obs)):
            q *= A[path[t - 1], path[t]] * B[path[t], obs[t]]
        p += q
    assert model.score([obs]) == pytest.approx(np.log(p), rel=1e-12)
    # huge logits stay finite (stable softmax)
    big = {k: v * 300 for k, v in emb.items()}
    model.embeddings_ = big
    assert np.all(np.isfinite(model.transmat_)) and np.allclose(model.transmat_.sum(1), 1)
    # returned embeddings are copies
    e = model.embeddings_
    e["U"][:] = 0
    assert not np.all(model.embeddings_["U"] == 0)


def test_bad_embeddings_and_options_are_rejected():
    model = DenseHMM(3, 2, 4)
    emb = init_embeddings(3, 4, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        model.set_embeddings(dict(emb, U=np.zeros((3, 3))))
    with pytest.raises(ValueError, match="n_symbols"):
        model.set_embeddings(init_embeddings(3, 5, 2, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="non-finite"):
        model.set_embeddings(dict(emb, V=np.full((4, 2), np.nan)))
    with pytest.raises(ValueError, match="fit_method"):
        DenseHMM(3, 2, fit_method="sgd")
    with pytest.raises(ValueError, match="preset"):
        DenseHMM(3, 2, preset="nope")
    with pytest.raises(ValueError, match="square"):
        DenseHMM(3, 2).fit_cooc(np.ones((3, 4)))
    # held-out data under the internal name: said plainly (it was "got multiple values for eval_seqs");
    # an unknown option is named
    seqs = [np.array([0, 1, 2, 3, 0, 1])]
    for est in (DenseHMM(3, 2, fit_method="em", n_iter=1), StandardHMM(3, n_iter=1)):
        with pytest.raises(TypeError, match="eval_data=, not eval_seqs="):
            est.fit(seqs, eval_seqs=seqs)
        with pytest.raises(TypeError, match="unexpected fit options.*n_iterations"):
            est.fit(seqs, n_iterations=3)


def test_restoring_a_fitted_state_takes_the_matrices_as_given_without_recomputing_them(monkeypatch):
    """set_arrays with the matrices (a loaded file, a worker's result) checks the embeddings and stores
    the matrices bit for bit; the softmaxes are not recomputed first (50,000 words: a wasted softmax
    over n x 50,000 entries per load).  A state without the matrices is refused, as before."""
    src = DenseHMM(3, 2, 5, seed=0).init_embeddings()
    state = src.arrays()
    state["params"]["emissionprob"] = np.full((3, 5), 0.2)    # stored as given, not softmax(W V^T)
    monkeypatch.setattr(DenseHMM, "_update_matrices", lambda self: pytest.fail("matrices recomputed"))
    clone = DenseHMM(3, 2, 5).set_arrays(state)
    assert clone.emissionprob_.tobytes() == np.full((3, 5), 0.2).tobytes()
    assert clone.transmat_.tobytes() == src.transmat_.tobytes()
    assert clone.embeddings_["V"].tobytes() == src.embeddings_["V"].tobytes()
    bad = src.arrays()
    bad["params"]["V"] = np.full((5, 2), np.nan)
    with pytest.raises(ValueError, match="non-finite"):
        DenseHMM(3, 2, 5).set_arrays(bad)
    monkeypatch.undo()
    only_embeddings = src.arrays()
    for key in ("startprob", "transmat", "emissionprob"):
        del only_embeddings["params"][key]
    with pytest.raises(ValueError, match="lacks"):
        DenseHMM(3, 2, 5).set_arrays(only_embeddings)


def test_fit_options_are_checked_once_before_the_data_and_point_to_the_constructor():
    seqs = [np.array([0, 1, 2, 3, 0, 1])]
    for est in (DenseHMM(3, 2, fit_method="em", n_iter=1), StandardHMM(3, n_iter=1)):
        name = type(est).__name__
        # scikit-learn's / hmmlearn's names and near misses: the constructor argument meant
        for given, meant in (("max_iter", "n_iter"), ("n_iterations", "n_iter"), ("random_state", "seed"),
                             ("n_components", "n_states")):
            with pytest.raises(TypeError, match=re.escape(f"did you mean {name}({meant}=...) or "
                                                          f"model.set_params({meant}=...)")):
                est.fit(seqs, **{given: 3})
        with pytest.raises(TypeError, match=re.escape(f"({name}(tol=...) or model.set_params(tol=...))")):
            est.fit(seqs, tol=1e-3)
        # refused before the data are read: bad data with a bad option is about the option
        with pytest.raises(TypeError, match="unexpected fit options.*max_iter"):
            est.fit("not sequences", max_iter=3)
        with pytest.raises(TypeError, match="unexpected fit options.*max_iter"):
            next(est.iter_fit(seqs, max_iter=3))
    # restarts is a fit option of DenseHMM only (the override of its constructor argument)
    with pytest.raises(TypeError, match=r"unexpected fit options \['restarts'\]: fit takes data, lengths, "
                                        r"init, eval_data, callback, cancel; "):
        StandardHMM(3, n_iter=1).fit(seqs, restarts=2)
    with pytest.raises(TypeError, match=re.escape("did you mean fit(..., restarts=...)")):
        DenseHMM(3, 2, fit_method="em", n_iter=1).fit(seqs, restart=2)
    model = DenseHMM(3, 2, fit_method="em", n_iter=1, seed=0).fit(seqs, restarts=2)
    assert len(model.restart_losses_) == 2


def test_sklearn_clone_gives_an_equal_unfitted_model():
    from sklearn.base import clone
    seqs = [np.array([0, 1, 2, 3, 0, 1, 2])]
    for est in (StandardHMM(3, n_iter=2, seed=4, tol=1e-3), DenseHMM(3, 2, fit_method="em", n_iter=2, seed=1),
                DenseHMM(4, 3, preset="paper"), DenseHMM(3, 3, logits="full", fit_method="em", n_iter=1)):
        assert est.get_params() == est.get_config()
        est.fit(seqs)
        copy = clone(est)
        assert type(copy) is type(est) and copy.get_params() == est.get_params()
        assert copy.history_ == [] and copy.arrays()["params"] == {}

def test_get_config_is_json_and_rebuilds_the_estimator():
    model = DenseHMM(4, 3, 6, fit_method="em", seed=3, lr=0.02, restarts=2, device="cpu")
    cfg = model.get_config()
    cfg2 = json.loads(json.dumps(cfg))
    rebuilt = DenseHMM(**cfg2)
    assert rebuilt.get_config() == cfg
    # the arguments as given; the settings used (the preset's values filled in) from resolved_config
    assert cfg["lr"] == 0.02 and cfg["mstep_steps"] is None and cfg["n_iter"] is None
    used = model.resolved_config()
    assert used["lr"] == 0.02 and used["mstep_steps"] == PRESETS["default"]["em"]["mstep_steps"]
    assert used["n_iter"] == PRESETS["default"]["em"]["n_iter"] and used["cooc_steps"] is None
    assert DenseHMM(**json.loads(json.dumps(used))).resolved_config() == used
    paper = DenseHMM(4, 3, preset="paper").resolved_config()
    assert (paper["lr"], paper["cooc_steps"], paper["finish"], paper["stationary_grad"]) == \
        (0.001, 10000, "none", False)


def test_tensorflow_is_not_imported_by_import_or_scoring():
    code = ("import sys, numpy as np\n"
            "from densehmm_core.dense import DenseHMM, init_embeddings\n"
            "m = DenseHMM(3, 2).set_embeddings(init_embeddings(3, 4, 2, np.random.default_rng(0)))\n"
            "m.score([np.array([0, 1, 2, 3])]); m.predict([np.array([0, 1])])\n"
            "print('tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------ cooc fitting
def test_cooc_recovers_dense_ground_truths_with_default_settings():
    from densehmm_core.maths import analytic_cooc
    from densehmm_core.metrics import cooc_mad
    mads = []
    for g in range(5):
        gt = ground_truth(g)
        omega = analytic_cooc(None, gt.transmat_, gt.emissionprob_)  # pi = stationary
        model = DenseHMM(5, 3, seed=g).fit_cooc(omega)
        assert model.start_mode_ == "stationary"
        np.testing.assert_allclose(model.startprob_ @ model.transmat_, model.startprob_, atol=1e-12)
        mads.append(cooc_mad(analytic_cooc(None, model.transmat_, model.emissionprob_), omega))
        assert model.history_[-1]["mad"] == pytest.approx(mads[-1], rel=1e-6)
    assert np.median(mads) < 1e-4, mads


def test_cooc_depends_on_data_only_through_omega_and_streams_events(em_data):
    from densehmm_core.maths import empirical_cooc
    _, train, _ = em_data
    kw = dict(seed=5, cooc_steps=300, finish_steps=20, chunk=100, snapshot_every=200)
    events = []
    a = DenseHMM(5, 3, **kw).fit(train, eval_data=train[:5], callback=events.append)
    events = [e for e in events if e.phase != START_PHASE]   # the spectral start's progress: test_start_progress.py
    b = DenseHMM(5, 3, **kw).fit_cooc(empirical_cooc(train, 8))
    for k in a.embeddings_:
        np.testing.assert_array_equal(a.embeddings_[k], b.embeddings_[k])
    assert [e.phase for e in events] == ["cooc"] * len(events)
    assert events[0].step == 0 and events[0].params is not None
    assert events[-1].done and events[-1].params is not None and not any(e.done for e in events[:-1])
    assert set(events[-1].params) >= {"startprob", "transmat", "emissionprob", "U", "Z", "W", "V", "z_start"}
    steps = [e.step for e in events]
    assert steps == sorted(steps) and events[-1].total == 320
    # snapshots: first event, then at least every 200 steps, and the last event
    snap_steps = [e.step for e in events if e.params is not None]
    assert snap_steps[0] == 0 and np.all(np.diff(snap_steps) <= 200 + 100)
    assert all("mad" in e.metrics for e in events)
    for e in (events[0], events[-1]):  # cooc snapshots carry the stationary pi of their A
        np.testing.assert_allclose(e.params["startprob"] @ e.params["transmat"], e.params["startprob"],
                                   atol=1e-12)
    assert len(a.history_) == len(events) and a.history_[-1]["loss"] == events[-1].loss
    assert events[-1].test_ll == pytest.approx(a.score(train[:5]), rel=1e-12)
    assert all(e.test_ll is None and e.train_ll is None for e in events[:-1])
    # the losses go down
    assert events[-1].loss < 0.1 * events[0].loss


def test_restarts_keep_the_best_run():
    omega = ground_truth(2).model_omega()
    model = DenseHMM(5, 3, seed=1, cooc_steps=200, finish="none")
    model.fit_cooc(omega, restarts=3)
    assert len(model.restart_losses_) == 3
    assert model.history_[-1]["loss"] == min(model.restart_losses_)
    assert model.history_[-1]["restart"] == int(np.argmin(model.restart_losses_))


def test_same_seed_same_numbers_and_other_seed_differs(em_data):
    _, train, _ = em_data
    fits = [DenseHMM(5, 3, seed=s, cooc_steps=150, finish_steps=10).fit(train) for s in (4, 4, 5)]
    for k in fits[0].embeddings_:
        np.testing.assert_array_equal(fits[0].embeddings_[k], fits[1].embeddings_[k])
    assert not np.array_equal(fits[0].embeddings_["U"], fits[2].embeddings_["U"])
    ems = [DenseHMM(5, 3, fit_method="em", seed=4, n_iter=3).fit(train[:20]) for _ in range(2)]
    np.testing.assert_array_equal(ems[0].transmat_, ems[1].transmat_)
    assert [h["train_ll"] for h in ems[0].history_] == [h["train_ll"] for h in ems[1].history_]


# -------------------------------------------------------------- EM fitting
def test_em_reaches_ground_truth_heldout_likelihood(em_data):
    gt, train, test = em_data
    events = []
    model = DenseHMM(5, 3, fit_method="em", seed=0)
    model.fit(train, eval_data=test, callback=events.append, restarts=5)
    assert sorted({e.metrics["restart"] for e in events if e.phase == START_PHASE}) == list(range(5))
    events = [e for e in events if e.phase != START_PHASE]   # each restart's start: before its steps
    ll_gt = gt.score(test)
    ll = model.score(test)
    assert abs(ll - ll_gt) <= 0.02 * abs(ll_gt), (ll, ll_gt)
    assert events[-1].done and events[-1].test_ll == pytest.approx(ll, rel=1e-9)
    assert {e.metrics["restart"] for e in events[:-1]} == set(range(5))
    assert all(e.phase == "em" and e.train_ll is not None for e in events)
    assert model.start_mode_ == "embedding"


def test_dense_em_improves_and_ends_near_standard_hmm(em_data):
    from densehmm_core.standard import StandardHMM
    _, train, _ = em_data
    model = DenseHMM(5, 5, fit_method="em", seed=1).fit(train)
    lls = [h["train_ll"] for h in model.history_]
    assert lls[-1] > lls[0]
    assert model.history_[-1]["train_ll"] == pytest.approx(model.score(train), rel=1e-12)
    std = StandardHMM(5, n_iter=100, seed=1).fit(train)
    ll_std = std.score(train)
    assert abs(model.score(train) - ll_std) <= 0.02 * abs(ll_std)


# ----------------------------------------------------- cancel, divergence
def test_cancel_stops_within_one_chunk(em_data):
    _, train, _ = em_data
    token = CancelToken()
    events = []

    def cb(ev):
        events.append(ev)
        if ev.step >= 50:
            token.cancel()
    model = DenseHMM(5, 3, seed=0, cooc_steps=5000, chunk=50)
    model.fit(train, callback=cb, cancel=token)
    assert events[-1].done and events[-1].reason == "cancelled"
    assert events[-1].step <= 100
    assert model.stop_reason_ == "cancelled" and np.all(np.isfinite(model.transmat_))

    token, events = CancelToken(), []

    def cb_em(ev):
        events.append(ev)
        if ev.step >= 1:
            token.cancel()
    DenseHMM(5, 3, fit_method="em", seed=0, n_iter=40).fit(train, callback=cb_em, cancel=token)
    assert events[-1].reason == "cancelled" and events[-1].step == 2


@pytest.mark.parametrize("method", ["em", "cooc"])
def test_huge_learning_rate_raises_training_diverged_and_keeps_finite_parameters(em_data, method):
    _, train, _ = em_data
    model = DenseHMM(5, 3, fit_method=method, seed=0, lr=1e6)
    events = []
    with pytest.raises(TrainingDiverged, match=r"diverged.*Lower the learning rate \(lr\)"):
        model.fit(train[:20], callback=events.append)
    events = [e for e in events if e.phase != START_PHASE]
    for arr in list(model.embeddings_.values()) + [model.startprob_, model.transmat_, model.emissionprob_]:
        assert np.all(np.isfinite(arr))
    assert np.isfinite(model.score(train[:20]))
    # it kept the last parameters reached before the divergent step (here: the initial ones)
    np.testing.assert_array_equal(model.embeddings_["U"], events[0].params["U"])


def test_a_diverging_finish_keeps_its_last_finite_point_and_advises_no_finish(em_data, monkeypatch):
    """The Levenberg-Marquardt finish has no learning rate: its divergence message says how to avoid
    it (no finish, fewer finish steps), and the model keeps the finish's last finite point."""
    import densehmm_core._cooc_np as cooc_np
    _, train, _ = em_data
    seen = []

    def bursts(theta0, *args, **kw):      # one good step, then an iterate past the guard
        x = np.asarray(theta0, dtype=np.float64) * 0.5
        seen.append(x.copy())
        yield 1, x, 1.0, ""
        yield 2, x * 1e9, 1.0, ""
    monkeypatch.setattr(cooc_np, "levenberg_marquardt", bursts)
    model = DenseHMM(5, 3, fit_method="cooc", seed=0, cooc_steps=20, finish="lm", finish_steps=5)
    with pytest.raises(TrainingDiverged, match=r"cooc lm diverged.*left the range.*no learning rate: train "
                                               r"without it \(finish='none', --finish none\)"):
        model.fit(train[:20])
    assert len(seen) == 1
    from densehmm_core.dense_layout import Layout
    kept = Layout(5, model.n_symbols, 3).unpack(seen[0])      # the finish's last finite point
    for name, value in kept.items():
        np.testing.assert_array_equal(model.embeddings_[name], value)
    assert np.isfinite(model.score(train[:20]))


# ------------------------------------------------------------------ devices
def test_device_selection_on_this_machine():
    from densehmm_core.device import DeviceError, list_devices, resolve_device
    devs = list_devices()
    assert devs[0]["type"] == "CPU" and devs[0]["spec"] == "/CPU:0"
    assert resolve_device("cpu") == "/CPU:0"
    assert resolve_device("/device:CPU:0") == "/CPU:0"
    has_gpu = any(d["type"] == "GPU" and d["tensorflow"] for d in devs)   # GPUs TensorFlow itself sees
    assert resolve_device("auto") == ("/GPU:0" if has_gpu else "/CPU:0")
    if not has_gpu:
        with pytest.raises(DeviceError, match="GPU"):
            resolve_device("gpu")
    with pytest.raises(DeviceError, match="unknown device"):
        resolve_device("/TPU:7")
    model = DenseHMM(3, 2, seed=0, cooc_steps=10, finish="none", device="cpu")
    model.fit_cooc(np.full((4, 4), 1 / 16))
    assert model.device_used_ == "/CPU:0"


def test_xla_compiled_loops_give_the_same_fits(em_data):
    _, train, _ = em_data
    omega = ground_truth(1).model_omega()
    kw = dict(seed=2, cooc_steps=60, chunk=30, finish="none")
    a = DenseHMM(5, 3, **kw).fit_cooc(omega)
    b = DenseHMM(5, 3, jit=True, **kw).fit_cooc(omega)
    np.testing.assert_allclose(a.embeddings_["V"], b.embeddings_["V"], rtol=1e-8, atol=1e-10)
    kw = dict(fit_method="em", seed=2, n_iter=2)
    a = DenseHMM(5, 3, **kw).fit(train[:10])
    b = DenseHMM(5, 3, jit=True, **kw).fit(train[:10])
    np.testing.assert_allclose(a.transmat_, b.transmat_, rtol=1e-8, atol=1e-12)


def test_init_false_continues_from_current_embeddings(em_data):
    _, train, _ = em_data
    model = DenseHMM(5, 3, seed=3, cooc_steps=100, finish="none").fit(train[:10])
    U = model.embeddings_["U"]
    model.fit_method = "em"
    events = []
    model.fit(train[:10], init=False, callback=events.append, restarts=3)  # init=False: one run
    # the default float32 M-step holds its parameters in float32: the start rounded to float32
    np.testing.assert_allclose(events[0].params["U"], U, rtol=1e-7)
    assert model.start_mode_ == "embedding" and len(model.restart_losses_) == 1
    assert events[-1].train_ll >= events[0].train_ll
    # in float64 the continuation starts from exactly the current embeddings
    model.mstep_dtype, U = "float64", model.embeddings_["U"]
    events = []
    model.fit(train[:10], init=False, callback=events.append)
    np.testing.assert_array_equal(events[0].params["U"], U)


@pytest.mark.parametrize("method", ["cooc", "em"])
def test_events_carry_test_nll_per_token(method):
    """The GUI's NLL curve needs per-token test NLL: it must equal -score(test) / tokens."""
    from densehmm_core import DenseHMM
    from densehmm_core.synthetic import demo_dataset
    train, test, _ = demo_dataset(seed=3)
    model = DenseHMM(4, 2, fit_method=method, seed=0, cooc_steps=20, mstep_steps=3,
                     n_iter=2, finish="none")
    events = []
    model.fit(train, eval_data=test, callback=events.append)
    last = events[-1]
    ntest = sum(len(s) for s in test)
    assert last.done and "test_nll" in last.metrics
    assert last.metrics["test_nll"] == pytest.approx(-model.score(test) / ntest, rel=1e-10)

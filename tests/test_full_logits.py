"""``DenseHMM(logits="full")``: U = W = the identity (l = n), every transition and emission logit free
(with symbol features the log-linear feature HMM of Berg-Kirkpatrick et al. 2010).

Oracles: the matrices written out by hand from the free logits (softmax of ``Z``, of ``z_start``, of
``V^T + feature_V^T S^T``); central finite differences of ``-log p(X)/N + (l2/2)||free||^2`` by the
engine's forward algorithm, over the free parameters only; U and W bit for bit the identity after EM
and after the direct fit.
"""
import numpy as np
import pytest

from densehmm_core import DenseHMM, StandardHMM
from densehmm_core.dense_layout import FeatureLayout
from densehmm_core.dense_marginal import MarginalLBFGS, Point
from densehmm_core.dense_mstep import MStep
from densehmm_core.engine import get_engine
from densehmm_core.features import build_features
from densehmm_core.maths import softmax

WORDS = ["the", "The", "cats", "cat", "dogs", "runs", "ran", "running", "walked", "walks", "a", "A"]


def _seqs(seed, m=len(WORDS), n_seq=8):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, m, size=int(rng.integers(2, 9))) for _ in range(n_seq)]


def _model(n=3, **kw):
    m = DenseHMM(n, n, n_symbols=len(WORDS), fit_method=kw.pop("fit_method", "marginal"), logits="full", seed=0,
                 init_method="random", symbol_features=kw.pop("symbol_features", "orthographic"), **kw)
    m.vocabulary = list(WORDS)
    return m


def test_options_are_checked():
    with pytest.raises(ValueError, match="dim = n_states"):
        DenseHMM(4, 3, fit_method="em", logits="full")
    with pytest.raises(ValueError, match="'em' or 'marginal'"):
        DenseHMM(3, 3, fit_method="cooc", logits="full")
    with pytest.raises(ValueError, match="'em' or 'marginal'"):
        DenseHMM(3, 3, fit_method="cooc_em", logits="full")
    with pytest.raises(ValueError, match="starts randomly"):
        DenseHMM(3, 3, fit_method="em", logits="full", init_method="spectral")
    with pytest.raises(ValueError, match="logits must be one of"):
        DenseHMM(3, 3, fit_method="em", logits="low")
    model = DenseHMM(3, 3, fit_method="em", logits="full")
    assert model.hyper()["init_method"] == "random"            # the spectral default does not apply
    assert DenseHMM(3, 3, fit_method="em").hyper()["init_method"] == "spectral"
    with pytest.raises(ValueError, match="'em' or 'marginal'"):
        model.set_params(fit_method="cooc")


@pytest.mark.parametrize("fit_method", ["em", "marginal"])
def test_fit_keeps_u_and_w_the_identity_and_the_matrices_are_the_free_logits(fit_method):
    model = _model(fit_method=fit_method, n_iter=4, l2=0.01, init_scale=0.3)
    model.fit(_seqs(0))
    emb = model.embeddings_
    assert np.array_equal(emb["U"], np.eye(3)) and np.array_equal(emb["W"], np.eye(3))
    f = model.features_
    S = np.zeros((f.n_symbols, f.n_features))
    S[f.rows, f.cols] = 1.0
    own = emb["V"] - S @ emb["feature_V"]                        # embeddings_ holds the effective V
    logits_b = own.T + emb["feature_V"].T @ S.T                   # n x m: B-K's Theta Phi^T
    np.testing.assert_allclose(model.emissionprob_, softmax(logits_b, axis=1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.transmat_, softmax(emb["Z"], axis=1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.startprob_, softmax(emb["z_start"]), rtol=1e-12, atol=1e-15)
    assert model.n_parameters == 3 * (3 + len(WORDS) + 1 + f.n_features)
    assert model.history_[-1]["train_ll"] > model.history_[0]["train_ll"]


@pytest.mark.parametrize("l2", [0.0, 0.2])
@pytest.mark.parametrize("features", [False, True])
def test_gradient_equals_finite_differences_over_the_free_parameters(l2, features):
    n, m = 3, len(WORDS)
    rng = np.random.default_rng(5)
    layout = FeatureLayout(n, m, n, build_features(WORDS, "orthographic")) if features else None
    if layout is None:
        from densehmm_core.dense_layout import Layout
        layout = Layout(n, m, n)
    emb = {"U": np.eye(n), "Z": rng.standard_normal((n, n)), "W": np.eye(n), "V": rng.standard_normal((m, n)),
           "z_start": rng.standard_normal(n)}
    if features:
        emb["feature_V"] = rng.standard_normal((layout.n_feat, n))
    theta = layout.pack(emb)
    seqs = _seqs(1)
    eng = get_engine("numpy")
    ms = MStep(layout, eng.backend, l2=l2, fixed_kernels=True)
    ntok = float(sum(len(s) for s in seqs))
    c = ms._cuts
    free = np.ones(theta.size, bool)
    free[c[0]:c[1]] = free[c[2]:c[3]] = False

    def objective(th):
        pi, A, B = ms.matrices(th)
        return -float(np.sum(eng.loglik(pi, A, B, seqs))) / ntok + 0.5 * l2 * float(th[free] @ th[free])

    p = MarginalLBFGS(ms, eng, ntok).evaluate(Point(theta.copy()), eng.prepare(seqs, n_states=n))
    assert p.f == pytest.approx(objective(theta), rel=1e-12)
    assert not np.any(p.g[~free])
    h = 1e-5
    fd = np.zeros_like(theta)
    for i in np.flatnonzero(free):
        e = np.zeros_like(theta)
        e[i] = h
        fd[i] = (objective(theta + e) - objective(theta - e)) / (2 * h)
    assert np.linalg.norm(p.g - fd) <= 1e-6 * np.linalg.norm(fd)


def test_without_features_the_direct_fit_reaches_baum_welchs_fixed_point():
    """Full logits without features and without a penalty are a standard HMM: on data from an HMM with full
    support the direct fit ends at (about) an EM fixed point: Baum-Welch started there finds little more."""
    rng = np.random.default_rng(7)
    true = StandardHMM(3, n_symbols=6)
    true.startprob_ = rng.dirichlet(np.ones(3))
    true.transmat_ = rng.dirichlet(np.ones(3) * 2, size=3)
    true.emissionprob_ = rng.dirichlet(np.ones(6) * 2, size=3)
    seqs = true.sample(150, 20, seed=1)[0]
    model = DenseHMM(3, 3, n_symbols=6, fit_method="marginal", logits="full", seed=0, init_scale=0.5,
                     n_iter=300, tol=0.0).fit(seqs)
    ll = model.score(seqs)
    bw = StandardHMM(3, n_symbols=6, n_iter=300, tol=0.0)
    bw.startprob_, bw.transmat_, bw.emissionprob_ = model.startprob_, model.transmat_, model.emissionprob_
    bw.fit(seqs, init=False)
    assert bw.score(seqs) >= ll - 1e-9                    # EM cannot lower it ...
    assert bw.score(seqs) - ll <= 1e-4 * abs(ll)          # ... and finds next to nothing above it


def test_logits_travel_in_the_config_and_the_model_file(tmp_path):
    from densehmm_core.modelfile import load_model, save_model
    model = _model(fit_method="em", n_iter=2)
    model.fit(_seqs(3))
    assert model.get_config()["logits"] == "full"
    save_model(tmp_path / "full.h5", model)
    back = load_model(tmp_path / "full.h5")
    assert back.logits == "full" and back.get_config() == model.resolved_config()
    np.testing.assert_array_equal(back.emissionprob_, model.emissionprob_)


def test_pos_induction_full_logit_rows(tmp_path):
    """``reproduce pos-induction``: the full-start row tags each word by the argmax of the very start the
    direct fit of the same seed begins from (its first event's emissions); the dense-marginal-full-feat
    row's scores are those of the same model (l2 = kappa / tokens) fitted directly; kappa is part of a
    folder's settings only where it has full-logit rows."""
    from densehmm_core.data import load
    from densehmm_core.experiments.pos_induction import PosSettings
    from posruns import WORDS, pos_rows, start_and_fitted_scores
    out = tmp_path / "pos"
    rows = pos_rows(out, "--models", "full-start,dense-marginal-full-feat", "--seeds", "1", "--iterations", "4",
                    "--kappa", "2")
    corpus = load(WORDS, observe="words", lowercase=False, min_count=1)
    n = corpus.n_tags
    m = DenseHMM(n, n, n_symbols=corpus.n_symbols, fit_method="marginal", logits="full", n_iter=4, tol=0.0, seed=0,
                 l2=2.0 / corpus.n_tokens, init_scale=0.2, symbol_features="orthographic")
    start, fitted = start_and_fitted_scores(m, corpus)
    assert float(rows["full-start"]["m1"]) == pytest.approx(start["m1"], abs=1e-15)
    assert float(rows["dense-marginal-full-feat"]["m1"]) == pytest.approx(fitted["m1"], abs=1e-15)
    assert int(rows["dense-marginal-full-feat"]["e_steps"]) == m.evaluations_ >= 5
    assert int(rows["dense-marginal-full-feat"]["n_symbols"]) == corpus.n_symbols     # words as written
    assert "| dense-marginal-full-feat | - | 1 |" in (out / "pos_induction_table.md").read_text()
    assert PosSettings(data="x", kappa=3.0, models=("dense-em",)).settings_id == \
        PosSettings(data="x", models=("dense-em",)).settings_id        # folders without full rows keep their id
    assert PosSettings(data="x", kappa=3.0, models=("full-start",)).settings_id != \
        PosSettings(data="x", models=("full-start",)).settings_id


def test_cli_trains_full_logits_and_refuses_a_wrong_dim(tmp_path):
    import subprocess
    import sys

    from densehmm_core.modelfile import load_model
    base = [sys.executable, "-m", "densehmm_core", "train", "demo", "--model", "dense", "--method", "marginal",
            "--states", "3", "--iter", "3", "--logits", "full", "--l2", "0.001"]
    ok = subprocess.run(base + ["--dim", "3", "--out", "m.h5"], cwd=tmp_path, capture_output=True, text=True,
                        timeout=240)
    assert ok.returncode == 0, ok.stderr
    model = load_model(tmp_path / "m.h5")
    assert model.logits == "full" and np.array_equal(model.embeddings_["W"], np.eye(3))
    bad = subprocess.run(base + ["--dim", "2", "--out", "x.h5"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=240)
    lines = [ln for ln in bad.stderr.splitlines() if ln.strip()]
    assert bad.returncode == 2 and len(lines) == 1 and "dim = n_states (3)" in lines[0], bad.stderr


@pytest.mark.parametrize("folder", ["defaults", "scale0.01-iter200"])
def test_committed_full_logit_folders_rebuild_their_tables(tmp_path, folder):
    """The committed issue-26 folders (docs/RESULTS.md, "Full logits") rebuild the same table from their rows
    with their own settings (no data file needed), and their settings pass the settings_id check."""
    import shutil
    from pathlib import Path

    from densehmm_core.experiments.pos_induction import PosSettings, run_pos_induction
    src = Path(__file__).resolve().parents[1] / "docs" / "results" / "pos-induction-full" / folder
    out = tmp_path / folder
    shutil.copytree(src, out)
    (out / "pos_induction_table.md").unlink()
    assert run_pos_induction(PosSettings(data="/nonexistent.mrg"), out, run=False, quiet=True) == 0
    assert (out / "pos_induction_table.md").read_text() == (src / "pos_induction_table.md").read_text()
    assert "| dense-marginal-full-feat | - | 5 |" in (src / "pos_induction_table.md").read_text()


def test_app_form_shows_what_full_logits_fix_and_builds_that_model(qtbot):
    """The form's Logits field (from the core's metadata) is enabled for EM and the direct fit; with "full"
    the core's ``fixed_options`` fix l to n and Start to random: shown, disabled, kept in step with n, and
    the built model has them; back to "dense", l and Start are editable again."""
    import os
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.modelspec import build_model
    from app.panels.model_form import ModelForm
    form = ModelForm()
    qtbot.addWidget(form)
    logits, start = form.fields["logits"], form.fields["init_method"]
    form.kind.setCurrentIndex(form.kind.findData("dense_cooc"))
    assert not logits.isEnabled()
    form.kind.setCurrentIndex(form.kind.findData("dense_marginal"))
    assert logits.isEnabled() and logits.currentData() == "dense" and form.l.isEnabled()
    form.n.setValue(6)
    form.l.setValue(2)
    start.setCurrentIndex(start.findData("spectral"))
    logits.setCurrentIndex(logits.findData("full"))
    assert form.l.value() == 6 and not form.l.isEnabled() and "Fixed to n" in form.l.toolTip()
    assert start.currentData() == "random" and not start.isEnabled()
    form.n.setValue(7)
    assert form.l.value() == 7
    model, n_states, _ = build_model(form.spec(), 9)
    cfg = model.resolved_config()
    assert (cfg["logits"], cfg["dim"], cfg["init_method"], n_states) == ("full", 7, "random", 7)
    logits.setCurrentIndex(logits.findData("dense"))
    assert form.l.isEnabled() and start.isEnabled()
    form.kind.setCurrentIndex(form.kind.findData("dense_em"))
    logits.setCurrentIndex(logits.findData("full"))
    assert build_model(form.spec(), 9)[0].get_config()["fit_method"] == "em" and not form.l.isEnabled()


def test_a_sweep_with_full_logits_trains_each_n_once_per_seed():
    """Full logits fix l = n: a sweep over (n, l) pairs trains each n once per seed, with l = n."""
    from app.modelspec import ModelSpec, sweep_grid
    spec = ModelSpec(model_type="dense_marginal", n=3, l=2, seed=5, options={"logits": "full", "init_method": "random"})
    got = [(s.n, s.l, s.seed) for s in sweep_grid(spec, 2, ((3, 1), (3, 2), (5, 2)))]
    assert got == [(3, 3, 5), (3, 3, 6), (5, 5, 5), (5, 5, 6)]
    dense = ModelSpec(model_type="dense_marginal", n=3, l=2, seed=5, options={"logits": "dense"})
    assert [(s.n, s.l) for s in sweep_grid(dense, 1, ((3, 1), (3, 2)))] == [(3, 1), (3, 2)]


def test_app_form_sets_symbol_features_and_keeps_none(qtbot):
    """The Symbol features field (the core's registered feature functions, and none): none by default; the
    best part-of-speech model of docs/RESULTS.md (full logits, orthographic features, the direct fit) is built
    from the form; a spec with none sets the field back to none."""
    import os
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.modelspec import build_model
    from app.panels.model_form import ModelForm
    from densehmm_core.features import FEATURE_FUNCTIONS
    form = ModelForm()
    qtbot.addWidget(form)
    field = form.fields["symbol_features"]
    assert [field.itemText(i) for i in range(field.count())] == ["none", *FEATURE_FUNCTIONS]
    assert field.currentData() is None and build_model(form.spec(), 9)[0].symbol_features is None
    form.kind.setCurrentIndex(form.kind.findData("dense_marginal"))
    form.n.setValue(5)
    form.fields["logits"].setCurrentIndex(form.fields["logits"].findData("full"))
    field.setCurrentIndex(field.findData("orthographic"))
    cfg = build_model(form.spec(), 9)[0].get_config()
    assert (cfg["symbol_features"], cfg["logits"], cfg["dim"], cfg["fit_method"]) == ("orthographic", "full", 5,
                                                                                      "marginal")
    assert form.spec().label() == "Dense-marginal n=5 l=5 seed=0 random full logits +orthographic"
    spec = form.spec()
    form.set_spec(spec.__class__(**{**spec.__dict__, "options": {**spec.options, "symbol_features": None}}))
    assert field.currentData() is None


def test_parameter_count_includes_the_features_of_a_snapshot():
    """A model that got its parameters from a progress snapshot (as the app's job rows do) counts the feature
    vectors although it never built the incidence itself."""
    model = _model(fit_method="marginal", n_iter=2, l2=0.01)
    events = list(model.iter_fit(_seqs(4)))
    copy = DenseHMM(3, 3, n_symbols=len(WORDS), fit_method="marginal", logits="full",
                    symbol_features="orthographic")
    # before it has parameters the number of features is unknown: no count (the jobs table shows "—")
    # rather than one without them
    with pytest.raises(RuntimeError, match="symbol features is known once"):
        copy.n_parameters
    copy._set_param_arrays(events[-1].params)
    assert copy.features_ is None and copy.n_parameters == model.n_parameters == 3 * (
        3 + len(WORDS) + 1 + model.features_.n_features)

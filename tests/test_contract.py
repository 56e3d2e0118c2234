"""The model contract (issue 12): configs are constructor arguments, one registry, strict options,
one fitted-state pair, and schema-v1 files written before the refactor still load (and the same
seeded fits still give bit-identical matrices)."""
import inspect
import json
import pathlib

import h5py
import numpy as np
import pytest

import densehmm_core
from densehmm_core import model_from_config
from densehmm_core.dense import DenseHMM
from densehmm_core.modelfile import load_model, read_model_info, save_model
from densehmm_core.registry import MODEL_KINDS, migrate_config, model_class
from densehmm_core.standard import StandardHMM
from densehmm_core.synthetic import demo_dataset

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "models"

#: The fits of tests/fixtures/models/make_v1_fixtures.py, with today's option names.
V1_FITS = {
    "standard_numpy": ("standard", dict(n_states=3, n_iter=8, tol=0.0, seed=1)),
    "standard_hmmlearn": ("standard", dict(n_states=3, n_iter=8, tol=0.0, seed=1, engine="hmmlearn")),
    "dense_em": ("dense", dict(n_states=3, dim=2, fit_method="em", seed=2, n_iter=3, mstep_steps=5, tol=0.0)),
    "dense_cooc": ("dense", dict(n_states=3, dim=2, fit_method="cooc", seed=3, cooc_steps=60, chunk=20,
                                 finish="lm", finish_steps=4, tol=0.0)),
}


def _data():
    d = demo_dataset(seed=0, n=3, m=4, n_train=4, n_test=2, length=40)
    return d.train, d.test


def _models():
    return [StandardHMM(3, 5, n_iter=7, tol=1e-3, seed=4, engine="hmmlearn", snapshot_every=2),
            DenseHMM(4, 2, 6, fit_method="em", seed=1, lr=0.02, n_iter=3, mstep_steps=7, restarts=2),
            DenseHMM(4, 3, fit_method="cooc", preset="paper", cooc_steps=50, finish="lm", finish_steps=3,
                     chunk=10, init_scale=0.5, jit=True, device="cpu")]


@pytest.mark.parametrize("model", _models(), ids=lambda m: f"{m.kind}")
def test_get_config_is_the_constructor_arguments(model):
    cfg = model.get_config()
    # the declared keys are exactly the constructor's keyword arguments, in order
    signature = [p for p in inspect.signature(type(model).__init__).parameters if p != "self"]
    assert list(type(model).config_keys) == signature
    assert list(cfg) == signature
    assert "kind" not in cfg and model.kind in MODEL_KINDS
    rebuilt = type(model)(**cfg)
    assert rebuilt.get_config() == cfg
    assert json.loads(json.dumps(cfg)) == cfg  # JSON-able, so it survives files and pipes
    via_registry = model_from_config(model.kind, cfg)
    assert type(via_registry) is type(model) and via_registry.get_config() == cfg
    assert model_class(model.kind) is type(model)
    assert densehmm_core.model_from_config is model_from_config


@pytest.mark.parametrize("kind,cfg", [("standard", {"n_states": 2, "n_itr": 5}),
                                      ("dense", {"n_states": 2, "dim": 2, "steps": 5}),
                                      ("dense", {"n_states": 2, "dim": 2, "em_iter": 5})])
def test_an_unknown_or_old_option_is_a_type_error(kind, cfg):
    with pytest.raises(TypeError, match="unknown .*option.*(n_itr|steps|em_iter)"):
        model_from_config(kind, cfg)
    with pytest.raises(TypeError):
        model_class(kind)(**cfg)


def test_unknown_kind_is_a_value_error():
    with pytest.raises(ValueError, match="unknown model kind 'gaussian'"):
        model_from_config("gaussian", {"n_states": 2})


def test_v1_option_names_migrate():
    # (old files also lack init_method: they were random starts, dense ones with init_scale 1)
    rnd = {"init_method": "random"}
    assert migrate_config("standard", {"kind": "standard", "n_states": 2, "n_iter": 3}) == {"n_states": 2, "n_iter": 3,
                                                                                             **rnd}
    em = migrate_config("dense", {"fit_method": "em", "steps": 25, "em_iter": 40, "n_states": 2, "dim": 1})
    # (and dense ones ran EM's M-step in float64)
    f64 = {"mstep_dtype": "float64"}
    assert em == {"fit_method": "em", "mstep_steps": 25, "n_iter": 40, "n_states": 2, "dim": 1, **rnd,
                  "init_scale": 1.0, **f64}
    cooc = migrate_config("dense", {"fit_method": "cooc", "steps": 900, "em_iter": None})
    assert cooc == {"fit_method": "cooc", "cooc_steps": 900, "n_iter": None, **rnd, "init_scale": 1.0, **f64}
    # a config that names its start and precision keeps them
    assert migrate_config("dense", {"init_method": "spectral", "init_scale": 0.2, "mstep_dtype": "float32"}) == {
        "init_method": "spectral", "init_scale": 0.2, "mstep_dtype": "float32"}


def test_arrays_round_trip_bit_for_bit():
    train, test = _data()
    for model in (StandardHMM(3, n_iter=3, seed=0), DenseHMM(3, 2, fit_method="em", seed=0, n_iter=2,
                                                               mstep_steps=3)):
        assert model.arrays()["params"] == {}
        model.fit(train, eval_data=test)
        state = model.arrays()
        keys = {"startprob", "transmat", "emissionprob"} | ({"U", "Z", "W", "V", "z_start"}
                                                              if model.kind == "dense" else set())
        assert set(state["params"]) == keys
        assert state["history"] == model.history_ and state["stop_reason"] == model.stop_reason_
        clone = model_from_config(model.kind, model.get_config()).set_arrays(state)
        for k, v in clone.arrays()["params"].items():
            assert np.array_equal(v, state["params"][k]) and v.dtype == np.float64
        assert clone.history_ == model.history_
        assert clone.score(test) == model.score(test)
        with pytest.raises(ValueError, match="unknown keys"):
            clone.set_arrays({"parameters": {}})


@pytest.mark.parametrize("name", sorted(V1_FITS))
def test_v1_fixture_loads_with_migrated_config(name):
    kind, cfg = V1_FITS[name]
    path = FIXTURES / f"v1_{name}.h5"
    with h5py.File(path, "r") as f:
        assert int(f.attrs["schema_version"]) == 1
        raw = {k: v for k, v in f["models"][name]["config"].attrs.items()}
    assert ("em_iter" in raw) == (kind == "dense") and ("kind" in raw) == (kind == "standard")
    model = load_model(path)
    assert type(model) is model_class(kind)
    loaded_cfg = model.get_config()
    for key, value in cfg.items():
        assert loaded_cfg[key] == value, key
    # written before the spectral start existed: a random start (and a DenseHMM's init scale 1)
    assert loaded_cfg["init_method"] == "random"
    if kind == "dense":
        assert loaded_cfg["init_scale"] == 1.0 and loaded_cfg["mstep_dtype"] == "float64"
    info = read_model_info(path)
    assert "em_iter" not in info["config"] and "steps" not in info["config"]
    assert len(model.history_) > 1 and model.stop_reason_ == "max_steps"


@pytest.mark.parametrize("name", sorted(V1_FITS))
def test_seeded_fits_are_bit_identical_to_the_v1_fixtures(name, tmp_path):
    """The fixtures were written by the code before the refactor; the same seeded fits today
    give the same bits (the exceptions: a cooc fit's stationary start distribution, now computed by
    the one ``maths.stationary_distribution``, which polishes pi to round-off; EM's closed-form
    M-step; and the co-occurrence fit's TensorFlow kernels, whose vectorised sums round differently
    on a CPU with other vector units than the one that wrote the fixtures: 1e-12 relative between
    the Intel host of the fixtures and an AMD EPYC one, so they are compared to 1e-10 relative)."""
    kind, cfg = V1_FITS[name]
    train, test = _data()
    # the v1 files were trained from random starts (today's default is spectral; old files that
    # lack init_method read as random: test_v1_fixture_loads_with_migrated_config)
    # (and ran EM's M-step in float64: today's default is float32, old files read as float64)
    start = {"init_method": "random", **({"init_scale": 1.0, "mstep_dtype": "float64"} if kind == "dense" else {})}
    model = model_from_config(kind, dict(cfg, **start)).fit(train, eval_data=test)
    old = load_model(FIXTURES / f"v1_{name}.h5")
    new_params, old_params = model.arrays()["params"], old.arrays()["params"]
    assert set(new_params) == set(old_params)
    for key, value in new_params.items():
        if name == "dense_cooc":   # startprob: the stationary distribution of A, polished to round-off
            np.testing.assert_allclose(value, old_params[key], rtol=1e-10, atol=1e-15 if key == "startprob" else 0)
        elif name == "dense_em":
            # the M-step is now the closed-form gradient on numpy, not TensorFlow's autodiff: the
            # same steps up to round-off (tests/test_dense_mstep.py compares them step by step)
            np.testing.assert_allclose(value, old_params[key], rtol=1e-9, atol=1e-12)
        else:
            assert np.array_equal(value, old_params[key]), key
    # and the new writer/reader keep every bit
    save_model(tmp_path / "new.h5", model, name)
    again = load_model(tmp_path / "new.h5")
    for key, value in again.arrays()["params"].items():
        assert np.array_equal(value, new_params[key]), key
    # the file records the settings used: read back, they are the model's arguments
    assert again.get_config() == again.resolved_config() == model.resolved_config()


# ------------------------------------------------------------------ shared maths (maths.py)
def test_shared_maths_against_hand_computed_values():
    from densehmm_core.maths import check_stochastic, softmax, split_indices
    np.testing.assert_allclose(softmax([[0.0, np.log(3.0)], [1000.0, 1000.0]], axis=1),
                               [[0.25, 0.75], [0.5, 0.5]], rtol=1e-15)
    with pytest.raises(ValueError, match=r"transmat is not stochastic \(row 1 sums to 0.9, not 1: off by -0.1, "
                                         r"more than the 1e-0\d allowed\)"):
        check_stochastic("transmat", [[0.5, 0.5], [0.4, 0.5]])
    with pytest.raises(ValueError, match="must have shape"):
        check_stochastic("startprob", [1.0], (2,))
    train, test = split_indices(10, 0.3, seed=7)
    order = np.random.default_rng(7).permutation(10)
    assert list(train) == list(order[:7]) and list(test) == list(order[7:])
    assert sorted(np.concatenate([train, test])) == list(range(10))
    train, test = split_indices(3, 0.01, seed=0, shuffle=False)   # at least one test item
    assert list(train) == [0, 1] and list(test) == [2]


# ------------------------------------------------------------------ the app's form mapping
FORM_VALUES = {"lr": 0.0123, "cooc_steps": 77, "n_iter": 78, "mstep_steps": 9, "tol": 1e-5, "restarts": 3,
               "init_method": "spectral", "init_scale": 0.25, "emission_pseudocount": 0.125, "l2": 0.0625,
               "logits": "dense", "symbol_features": "orthographic"}


@pytest.mark.parametrize("kind", ["dense_cooc", "dense_em", "dense_cooc_em", "dense_marginal", "standard",
                                  "standard_fair"])
def test_every_form_field_sets_its_option_explicitly(kind):
    """Each form field is one constructor option (the core's metadata names it); the built model carries
    exactly the form's values for the options its estimator and fit method use, and no other."""
    from app.modelspec import ModelSpec, build_model, form_params, model_config
    from densehmm_core.hyperparams import uses
    assert {name for name, _ in form_params()} == set(FORM_VALUES)
    spec = ModelSpec.make(model_type=kind, n=4, l=2, seed=11, device="cpu", preset="default", **FORM_VALUES)
    model_kind, cfg = model_config(spec, n_symbols=6)
    method = spec.fit_method if model_kind == "dense" else None
    for name, value in FORM_VALUES.items():
        assert cfg.get(name) == (value if uses(model_class(model_kind), name, method) else None), name
    assert cfg["init_method"] == "spectral"
    assert cfg.get("init_scale") == (0.25 if kind.startswith("dense") else None)
    assert cfg.get("emission_pseudocount") == (None if kind.startswith("dense") else 0.125)
    assert cfg["device"] == "cpu"          # every model honours the form's Device (its E-step can use a GPU)
    assert model_config(spec, n_symbols=6, device="/GPU:1")[1]["device"] == "/GPU:1"   # the job's placement
    model, n_states, fit_kwargs = build_model(spec, 6)
    got = model.get_config()
    assert model.kind == model_kind == spec.kind          # the core's kind, not a form key
    for name in cfg:
        assert got[name] == cfg[name], name
    assert got["n_symbols"] == 6 and fit_kwargs == {}
    assert n_states == (4 if kind != "standard_fair" else got["n_states"])
    if kind.startswith("dense"):
        assert got["dim"] == 2 and got["fit_method"] == kind[len("dense_"):]
    assert model.init_method == "spectral"


def test_form_start_choices_are_the_core_init_methods():
    """The form's "Start" choices are exactly the init_method values both estimators accept."""
    from app.modelspec import ModelSpec, form_params
    from densehmm_core.dense import INIT_METHODS as CORE_INIT_METHODS
    per_class = dict(form_params())["init_method"]
    assert {cls: hp.choices for cls, hp in per_class.items()} == {DenseHMM: CORE_INIT_METHODS,
                                                                  StandardHMM: CORE_INIT_METHODS}
    for method in CORE_INIT_METHODS:
        assert StandardHMM(2, init_method=method).init_method == method
        assert DenseHMM(2, 2, init_method=method).init_method == method
    # saved form values round-trip; an unknown start (a hand-edited settings file) is dropped: the
    # estimator's own default applies, spectral (DenseHMM's default preset; StandardHMM)
    spec = ModelSpec.make(model_type="standard", init_method="random", init_scale=0.5)
    assert ModelSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert "init_method" not in ModelSpec.from_dict({"init_method": "nope"}).options
    assert DenseHMM(2, 2).resolved_config()["init_method"] == StandardHMM(2).init_method == "spectral"
    assert DenseHMM(2, 2).resolved_config()["init_scale"] == 0.2
    # job labels (and the file names made from them) always name the start, the default's too
    assert spec.label().endswith(" random") and ModelSpec().label().endswith(" spectral")


@pytest.mark.parametrize("preset", ["default", "paper"])
def test_form_defaults_are_the_core_presets(preset):
    """The form's defaults of a model type are what its estimator trains with when nothing is set
    (the oracle: the estimator's own resolved_config, which resolves the preset)."""
    from app.modelspec import type_defaults
    per_method = {"cooc": ("lr", "cooc_steps"), "em": ("lr", "n_iter", "mstep_steps"),
                  "cooc_em": ("lr", "n_iter", "mstep_steps"), "marginal": ("n_iter", "l2")}
    for kind, method in (("dense_cooc", "cooc"), ("dense_em", "em"), ("dense_cooc_em", "cooc_em"),
                         ("dense_marginal", "marginal")):
        d = type_defaults(kind, preset)
        cfg = DenseHMM(2, 2, fit_method=method, preset=preset).resolved_config()
        for name in ("tol", "restarts", "init_method", "init_scale") + per_method[method]:
            assert d[name] == cfg[name], (kind, name)
    cfg = StandardHMM(2).get_config()
    keys = ("n_iter", "tol", "init_method", "emission_pseudocount")
    for kind in ("standard", "standard_fair"):
        d = type_defaults(kind, preset)
        assert {k: d[k] for k in keys} == {k: cfg[k] for k in keys}

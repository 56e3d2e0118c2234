"""Symbol features through fitting (EM and cooc), the HDF5 model file and the CSV export.

Oracles: features off (``symbol_features=None``) is today's model bit for bit; a saved
model loads with identical arrays (effective V, feature vectors, feature vocabulary and
incidence) and scores identically; the export's ``feature_V.csv`` reads back to the same
float64 values.
"""
import csv
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("densehmm_core.dense_tf")
from densehmm_core import DenseHMM  # noqa: E402
from densehmm_core.data import load  # noqa: E402
from densehmm_core.export import model_tables  # noqa: E402
from densehmm_core.modelfile import load_model, save_model  # noqa: E402

WORDS = Path(__file__).parent / "fixtures" / "data" / "words.conllu"


@pytest.fixture(scope="module")
def corpus():
    return load(WORDS, observe="words", min_count=1)  # not lower-cased: "The" and "the" are two symbols


def test_features_need_symbol_strings():
    with pytest.raises(ValueError, match="unknown symbol_features"):
        DenseHMM(2, 2, symbol_features="nope")
    model = DenseHMM(2, 2, fit_method="em", symbol_features="orthographic", n_iter=1, mstep_steps=1)
    with pytest.raises(ValueError, match="needs the symbols' strings"):
        model.fit([np.array([0, 1, 2])])


@pytest.mark.parametrize("method", ["em", "cooc"])
def test_feature_fit_save_load_export(corpus, tmp_path, method):
    kw = dict(n_iter=3, mstep_steps=5) if method == "em" else dict(cooc_steps=20, finish_steps=5)
    model = DenseHMM(3, 2, fit_method=method, seed=0, symbol_features="orthographic", **kw).fit(corpus)
    feats = model.features_
    assert "lower=the" in feats.vocabulary and "cap" in feats.vocabulary
    fv = model.embeddings_["feature_V"]
    assert fv.shape == (feats.n_features, 2) and np.any(fv != 0)  # the features were trained
    assert model.n_parameters == 2 * (3 * 3 + corpus.n_symbols + 1 + feats.n_features)
    # "The" and "the" share the feature lower=the: their V differ by their own vectors only
    path = tmp_path / "m.h5"
    save_model(path, model, corpus=corpus)
    back = load_model(path)
    assert back.symbol_features == "orthographic"
    assert back.features_.vocabulary == feats.vocabulary
    np.testing.assert_array_equal(back.features_.rows, feats.rows)
    np.testing.assert_array_equal(back.features_.cols, feats.cols)
    for k in ("U", "Z", "W", "V", "z_start", "feature_V"):
        np.testing.assert_array_equal(back.embeddings_[k], model.embeddings_[k])
    np.testing.assert_array_equal(back.emissionprob_, model.emissionprob_)
    assert back.score(corpus) == model.score(corpus)
    for source in (model, path):
        tables = model_tables(source)
        rows = list(csv.reader(tables["feature_V.csv"].splitlines()))
        assert rows[0] == ["feature", "dim_0", "dim_1"]
        assert [r[0] for r in rows[1:]] == feats.vocabulary
        np.testing.assert_array_equal(np.array([[float(x) for x in r[1:]] for r in rows[1:]]), fv)
    # continuing the fit from the loaded model keeps the features
    back.n_iter, back.mstep_steps = 1, 1
    if method == "em":
        back.fit(corpus, init=False)
        assert back.embeddings_["feature_V"].shape == fv.shape


def test_features_off_is_todays_model(corpus, tmp_path):
    a = DenseHMM(3, 2, fit_method="em", seed=1, n_iter=2, mstep_steps=3).fit(corpus)
    assert a.features_ is None and "feature_V" not in a.embeddings_
    save_model(tmp_path / "plain.h5", a, corpus=corpus)
    b = load_model(tmp_path / "plain.h5")
    assert b.features_ is None and "feature_V" not in b.embeddings_
    assert "feature_V.csv" not in model_tables(a)


def test_cli_train_with_symbol_features_and_cooc_em(tmp_path, capsys):
    from densehmm_core.cli import main
    path = tmp_path / "f.h5"
    rc = main(["train", str(WORDS), "--observe", "words", "--model", "dense", "--method", "cooc_em",
               "--symbol-features", "orthographic", "--states", "3", "--dim", "2", "--iter", "2",
               "--mstep-steps", "3", "--finish-steps", "5", "--split", "0", "--seed", "0", "--out", str(path), "-q"])
    assert rc == 0, capsys.readouterr().err
    model = load_model(path)
    assert model.fit_method == "cooc_em" and model.symbol_features == "orthographic"
    assert "lower=the" in model.features_.vocabulary
    assert [h["phase"] for h in model.history_][-1] == "em" and "cooc" in [h["phase"] for h in model.history_]
    capsys.readouterr()
    rc = main(["train", str(WORDS), "--observe", "words", "--model", "dense", "--symbol-features", "nope",
               "--states", "3", "--dim", "2", "--out", str(tmp_path / "x.h5")])
    assert rc == 2
    assert "invalid choice: 'nope' (choose from 'orthographic')" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["em", "cooc"])
def test_features_with_xla_equal_without(corpus, method):
    """jit=True (XLA: no sparse matmul kernel, a gather + segment sum instead) gives the same fit."""
    kw = dict(n_iter=2, mstep_steps=3) if method == "em" else dict(cooc_steps=10, finish_steps=0)
    fits = [DenseHMM(3, 2, fit_method=method, seed=0, symbol_features="orthographic", jit=jit, **kw).fit(corpus)
            for jit in (False, True)]
    np.testing.assert_allclose(fits[1].embeddings_["feature_V"], fits[0].embeddings_["feature_V"], rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(fits[1].emissionprob_, fits[0].emissionprob_, rtol=1e-6, atol=1e-12)

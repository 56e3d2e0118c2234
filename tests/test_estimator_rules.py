"""scikit-learn's estimator rules and hmmlearn's input layout, as a library user relies on them.

Each test was a bug found by an audit of the library (2026-12-07): hmmlearn's ``X`` of shape (N, 1)
without ``lengths`` read as N sequences of length 1; a refit could not grow the alphabet and kept the
first data's vocabulary; ``get_config`` gave the preset's values, so copies did not follow a later
change of preset; ``set_params(logits="full")`` failed on a default model; float32 parameters were
always refused.  Oracles: hmmlearn's ``CategoricalHMM``, a fresh estimator, the constructor.
"""
from __future__ import annotations

import numpy as np
import pytest
from hmmlearn.hmm import CategoricalHMM
from sklearn.base import clone

from densehmm_core import DenseHMM, StandardHMM
from densehmm_core.data import Corpus

PI = np.array([0.6, 0.4])
A = np.array([[0.7, 0.3], [0.2, 0.8]])
B = np.array([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])


def _pair():
    ours = StandardHMM(2, n_symbols=3)
    ours.startprob_, ours.transmat_, ours.emissionprob_ = PI, A, B
    theirs = CategoricalHMM(2, n_features=3, init_params="", params="")
    theirs.startprob_, theirs.transmat_, theirs.emissionprob_ = PI, A, B
    return ours, theirs


def test_hmmlearn_x_without_lengths_is_one_sequence():
    ours, theirs = _pair()
    X = np.array([[0], [1], [2], [2], [1], [0], [0], [2]])
    assert ours.score(X) == pytest.approx(theirs.score(X), rel=1e-12)
    assert ours.score(X) == pytest.approx(ours.score(X, [8]), rel=1e-15)
    paths = ours.predict(X)
    assert len(paths) == 1 and list(paths[0]) == list(theirs.predict(X))
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-10)
    # a flat list of symbols is one sequence too; rows of a (k, T) array with T > 1 are k sequences
    assert ours.score(X[:, 0].tolist()) == pytest.approx(theirs.score(X), rel=1e-12)
    rows = X[:, 0].reshape(2, 4)
    assert ours.score(rows) == pytest.approx(theirs.score(X, [4, 4]), rel=1e-12)


def test_fit_on_x_learns_transitions():
    rng = np.random.default_rng(0)
    ours, _ = _pair()
    X = np.asarray(ours.sample(1, 400, seed=1)[0][0]).reshape(-1, 1)
    fitted = StandardHMM(2, seed=0, n_iter=20).fit(X)
    assert fitted.score(X) == pytest.approx(fitted.score(X, [len(X)]), rel=1e-15)
    assert np.max(np.abs(fitted.transmat_ - fitted.transmat_.mean(axis=0))) > 1e-3   # not flat rows
    del rng


@pytest.mark.parametrize("make", [lambda: StandardHMM(2, seed=0, n_iter=2),
                                  lambda: DenseHMM(2, 2, fit_method="em", seed=0, n_iter=2)])
def test_refit_infers_the_new_alphabet_and_get_params_stays_the_arguments(make):
    model = make()
    before = model.get_params()
    model.fit([np.array([0, 1, 2, 1])])
    assert model.n_symbols == 3 and model.get_params() == before and model.get_params()["n_symbols"] is None
    model.fit([np.array([0, 5, 3, 4])])                 # a fresh fit: its own alphabet
    assert model.n_symbols == 6
    assert clone(model).get_params() == before
    given = make().set_params(n_symbols=8).fit([np.array([0, 1, 2])])
    assert given.n_symbols == 8 and given.get_params()["n_symbols"] == 8
    assert given.resolved_config()["n_symbols"] == 8 and model.resolved_config()["n_symbols"] == 6


def test_a_refit_takes_the_new_corpus_vocabulary_and_scoring_checks_it():
    ca = Corpus.from_tokens([list("aab"), list("abcab")], vocabulary=["a", "b", "c"])
    cb = Corpus.from_tokens([list("xxyz"), list("zyx")], vocabulary=["x", "y", "z"])
    model = StandardHMM(2, seed=0, n_iter=2).fit(ca).fit(cb)
    assert model.vocabulary == ["x", "y", "z"]
    fresh = StandardHMM(2, seed=0, n_iter=2).fit(cb)
    np.testing.assert_array_equal(model.emissionprob_, fresh.emissionprob_)
    # the same text numbered by another vocabulary would be read as other symbols: refused, with the remedy
    reordered = Corpus.from_tokens([list("xxyz"), list("zyx")], vocabulary=["z", "y", "x"])
    with pytest.raises(ValueError, match=r"another vocabulary.*encode_with"):
        model.score(reordered)
    with pytest.raises(ValueError, match="another vocabulary"):
        model.fit(reordered, init=False)
    assert model.score(reordered.encode_with(model.vocabulary)) == pytest.approx(model.score(cb), rel=1e-15)


def test_the_vocabulary_check_has_no_way_around_it(tmp_path):
    """Scoring through the metrics and fitting with held-out data (in process and in a worker process)
    refuse a Corpus numbered by another vocabulary, as score does (the metrics turned the Corpus into
    plain sequences first, and the worker never checked eval_data: numbers of the wrong symbols)."""
    from densehmm_core.metrics import normalized_nll, paper_nll
    from densehmm_core.worker import TrainingWorker
    cb = Corpus.from_tokens([list("xxyz"), list("zyx")], vocabulary=["x", "y", "z"])
    reordered = Corpus.from_tokens([list("xxyz"), list("zyx")], vocabulary=["z", "y", "x"])
    model = StandardHMM(2, seed=0, n_iter=2).fit(cb)
    for metric in (normalized_nll, paper_nll):
        with pytest.raises(ValueError, match="another vocabulary"):
            metric(model, reordered)
        assert metric(model, reordered.encode_with(model.vocabulary)) == pytest.approx(metric(model, cb), rel=1e-15)
    with pytest.raises(ValueError, match="another vocabulary"):
        StandardHMM(2, seed=0, n_iter=2).fit(cb, eval_data=reordered)
    worker = TrainingWorker()
    try:
        fresh = StandardHMM(2, seed=0, n_iter=2)
        with pytest.raises(ValueError, match="another vocabulary"):
            list(worker.iter_fit(fresh, cb, eval_data=reordered))
        assert fresh.vocabulary is None and fresh.n_symbols is None      # refused before it took anything
    finally:
        worker.close()


def test_a_given_alphabet_size_must_match_the_corpus_and_a_refused_fit_changes_nothing(tmp_path):
    from densehmm_core.modelfile import load_model, save_model
    three = Corpus.from_tokens([list("abcab"), list("cab")], vocabulary=["a", "b", "c"])
    five = Corpus.from_tokens([list("abcde"), list("edcba")], vocabulary=list("abcde"))
    with pytest.raises(ValueError, match=r"vocabulary has 3 symbols but the model has n_symbols=5.*n_symbols=None"):
        StandardHMM(2, n_symbols=5, seed=0, n_iter=2).fit(three)
    path = tmp_path / "m.h5"
    save_model(path, StandardHMM(2, seed=0, n_iter=2).fit(five), "m")
    loaded = load_model(path, "m")                 # a model read from a file has its alphabet as given
    before = (loaded.n_symbols, list(loaded.vocabulary), loaded.emissionprob_.copy())
    with pytest.raises(ValueError, match="n_symbols=5"):
        loaded.fit(three)
    assert (loaded.n_symbols, loaded.vocabulary) == before[:2]
    np.testing.assert_array_equal(loaded.emissionprob_, before[2])
    loaded.set_params(n_symbols=None).fit(three)
    assert loaded.n_symbols == 3 and loaded.vocabulary == ["a", "b", "c"]
    save_model(path, loaded, "refit")              # its size and its vocabulary agree
    # a refused fresh fit (bad held-out data) leaves the alphabet as it was
    model = StandardHMM(2, seed=0, n_iter=2).fit(five)
    with pytest.raises(ValueError):
        model.fit(three, eval_data=[np.array([0, 9])])
    assert model.n_symbols == 5 and model.vocabulary == list("abcde")


def test_plain_sequences_after_a_corpus_fit():
    """A fresh fit on plain sequences keeps the model's vocabulary when its symbols fit in it (n_symbols
    = the vocabulary's size) and drops it when they do not (the strings belonged to other data)."""
    five = Corpus.from_tokens([list("abcde"), list("edcba")], vocabulary=list("abcde"))
    model = StandardHMM(2, seed=0, n_iter=2).fit(five)
    model.fit([np.array([0, 1, 0, 2])])
    assert model.n_symbols == 5 and model.vocabulary == list("abcde")
    model.fit([np.array([0, 7, 1])])
    assert model.n_symbols == 8 and model.vocabulary is None


def test_predict_proba_of_a_flat_list_is_one_array():
    ours, theirs = _pair()
    flat = [0, 1, 2, 2, 1]
    post = ours.predict_proba(flat)
    assert isinstance(post, np.ndarray) and post.shape == (5, 2)
    np.testing.assert_allclose(post, theirs.predict_proba(np.array(flat).reshape(-1, 1)), rtol=1e-10)
    assert isinstance(ours.predict_proba([np.array(flat)]), list)


def test_dense_features_are_rebuilt_for_a_new_vocabulary():
    words_a = Corpus.from_tokens([["the", "cat"], ["a", "Dog", "ran"]] * 5)
    words_b = Corpus.from_tokens([["1999", "was"], ["NASA", "ran", "x-ray"]] * 5)
    kw = dict(fit_method="em", seed=0, n_iter=2, mstep_steps=2, symbol_features="orthographic")
    model = DenseHMM(2, 2, **kw).fit(words_a).fit(words_b)
    fresh = DenseHMM(2, 2, **kw).fit(words_b)
    assert model.features_.vocabulary == fresh.features_.vocabulary
    np.testing.assert_array_equal(model.emissionprob_, fresh.emissionprob_)


def test_copies_follow_a_change_of_preset_or_method_as_the_original_does():
    model = DenseHMM(3, 2, fit_method="em")
    copy = clone(model)
    for m in (model, copy):
        m.set_params(preset="paper")
    assert copy.hyper() == model.hyper() and model.hyper()["init_method"] == "random"
    assert DenseHMM(3, 2, fit_method="em").set_params(fit_method="cooc").hyper() == \
        DenseHMM(3, 2, fit_method="cooc").hyper()
    # the settings used are still there to read (and are what model files record)
    assert DenseHMM(3, 2, fit_method="em").resolved_config()["lr"] == DenseHMM(3, 2, fit_method="em").hyper()["lr"]


def test_set_params_accepts_what_the_constructor_accepts():
    assert DenseHMM(3, 3, fit_method="em").set_params(logits="full").logits == "full"
    assert DenseHMM(3, 3, fit_method="em", logits="full").get_params() == \
        DenseHMM(3, 3, fit_method="em").set_params(logits="full").get_params()


def test_float32_parameters_are_accepted_and_score_as_float64():
    rng = np.random.default_rng(3)
    for _ in range(50):
        pi, a, b = (rng.dirichlet(np.ones(k), size=s).astype(np.float32) for k, s in ((2, None), (2, 2), (3, 2)))
        ours = StandardHMM(2, n_symbols=3)
        ours.startprob_, ours.transmat_, ours.emissionprob_ = pi, a, b
        ref = StandardHMM(2, n_symbols=3)
        ref.startprob_, ref.transmat_, ref.emissionprob_ = (x.astype(np.float64) for x in (pi, a, b))
        assert ours.score([np.array([0, 1, 2, 2])]) == ref.score([np.array([0, 1, 2, 2])])
    bad = StandardHMM(2, n_symbols=3)
    bad.startprob_, bad.transmat_ = PI, np.array([[0.5, 0.5], [0.5, 0.4999]], dtype=np.float32)
    bad.emissionprob_ = B
    with pytest.raises(ValueError, match=r"row 1 sums to 0\.9999, not 1: off by -0\.0001"):
        bad.score([np.array([0])])
    # set_arrays takes float32 rows as assignment does (their rounding: within 1e-5; was checked as float64
    # to 1e-6, so a row that assignment accepts was refused there); float64 rows keep the 1e-6
    off = np.array([[0.5, 0.5], [0.5, 0.499995]])
    ok = StandardHMM(2, n_symbols=3).set_arrays({"params": {"startprob": PI, "transmat": off.astype(np.float32),
                                                           "emissionprob": B}})
    assert ok.transmat_.dtype == np.float64 and ok.transmat_[1, 1] == np.float32(0.499995)
    with pytest.raises(ValueError, match="row 1 sums to"):
        StandardHMM(2, n_symbols=3).set_arrays({"params": {"startprob": PI, "transmat": off, "emissionprob": B}})

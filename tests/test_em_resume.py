"""A continued DenseHMM-EM fit takes the steps one uninterrupted fit would (Adam's state persists).

The oracle is the same seeded fit run in one go: stopping it after k iterations and continuing with
``fit(..., init=False)`` -- in memory, through a model file, and through ``densehmm train --resume``
-- must give the same training log-likelihoods (the CPU M-step is deterministic).  Before Adam's
moments were kept, a continued fit restarted them at zero and a resumed run stopped after one
iteration as "converged".  Also: what invalidates the kept state, and the file's checks of it.
"""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from densehmm_core.data import Corpus
from densehmm_core.dense import DenseHMM
from densehmm_core.modelfile import ModelFileError, load_model, save_model


def _data():
    rng = np.random.default_rng(11)
    A = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    B = rng.dirichlet(np.ones(7) * 0.3, size=3)
    seqs = []
    for _ in range(40):
        s, out = 0, []
        for _ in range(int(rng.integers(20, 60))):
            out.append(int(rng.choice(7, p=B[s])))
            s = int(rng.choice(3, p=A[s]))
        seqs.append(np.array(out))
    return seqs


def _model(n_iter, **kw):
    return DenseHMM(4, dim=3, fit_method="em", seed=3, n_iter=n_iter, tol=0.0, mstep_steps=5, **kw)


def _lls(model):
    return [r["train_ll"] for r in model.history_]


def test_continued_fit_equals_one_fit():
    seqs = _data()
    one = _model(8).fit(seqs)
    part = _model(5).fit(seqs)
    assert part.adam_state_ is not None and part.adam_state_["t"] == 5 * 5
    part.set_params(n_iter=3)
    part.fit(seqs, init=False)
    # the continued fit repeats its start (iteration 5) as its first record
    assert _lls(part)[:6] == _lls(one)[:6]
    assert _lls(part)[6:] == _lls(one)[5:]
    np.testing.assert_array_equal(part.embeddings_["V"], one.embeddings_["V"])


def test_continued_fit_through_a_model_file(tmp_path):
    seqs = _data()
    one = _model(8).fit(seqs)
    path = str(tmp_path / "m.h5")
    save_model(path, _model(5).fit(seqs), "a")
    with h5py.File(path, "r") as f:
        assert f["models/a/optimizer/m"].shape == (3 * (3 * 4 + 7 + 1),)
    back = load_model(path, "a")
    assert back.adam_state_["t"] == 25.0
    back.set_params(n_iter=3)
    back.fit(seqs, init=False)
    assert _lls(back)[-3:] == _lls(one)[-3:]


def test_without_the_state_adam_restarts_and_the_path_differs():
    """The check can fail: dropping the kept moments changes the continued iterates."""
    seqs = _data()
    one = _model(8).fit(seqs)
    part = _model(5).fit(seqs)
    part.adam_state_ = None
    part.set_params(n_iter=3)
    part.fit(seqs, init=False)
    assert _lls(part)[-1] != _lls(one)[-1]


def test_what_clears_the_state():
    seqs = _data()
    m = _model(2).fit(seqs)
    assert m.adam_state_ is not None
    m.set_embeddings(m.embeddings_)                  # other parameters: their moments are unknown
    assert m.adam_state_ is None
    assert _model(2, restarts=1).set_params(fit_method="marginal").fit(seqs).adam_state_ is None
    cooc = DenseHMM(4, dim=3, fit_method="cooc", seed=0, cooc_steps=20).fit(seqs)
    assert cooc.adam_state_ is None


def test_a_continued_cooc_em_fit_goes_on_with_its_em_phase(tmp_path):
    """A cooc_em fit whose EM phase began continues that phase (from Adam's kept state): 2 + 3 EM
    iterations give the iterates of one cooc_em fit with 5 (before, the co-occurrence phase ran again and
    cleared the state: t went from 8 to 4).  A fit stopped in its co-occurrence phase still runs it."""
    seqs = _data()
    kw = dict(fit_method="cooc_em", seed=0, cooc_steps=20, mstep_steps=4, tol=0.0)
    one = DenseHMM(4, dim=3, n_iter=5, **kw).fit(seqs)
    part = DenseHMM(4, dim=3, n_iter=2, **kw).fit(seqs)
    assert part.adam_state_["t"] == 8.0
    path = str(tmp_path / "m.h5")
    save_model(path, part, "a")
    back = load_model(path, "a").set_params(n_iter=3)
    back.fit(seqs, init=False)
    assert back.adam_state_["t"] == 20.0
    assert not any(r.get("phase") == "cooc" for r in back.history_[-4:])      # no new co-occurrence steps
    assert [r["train_ll"] for r in back.history_ if r["phase"] == "em"][-3:] == \
        [r["train_ll"] for r in one.history_ if r["phase"] == "em"][-3:]


def test_parameters_set_without_their_state_drop_it_and_a_wrong_length_is_refused():
    seqs = _data()
    a = _model(2).fit(seqs)
    b = DenseHMM(4, dim=3, fit_method="em", seed=9, n_iter=3, tol=0.0, mstep_steps=5).fit(seqs)
    a.set_arrays({"params": b.arrays()["params"]})
    assert a.adam_state_ is None                       # b's parameters with a's moments: dropped
    a.set_arrays(b.arrays())                           # parameters with their own state: kept
    assert a.adam_state_["t"] == b.adam_state_["t"]
    np.testing.assert_array_equal(a.adam_state_["m"], b.adam_state_["m"])
    size = len(b.adam_state_["m"])
    with pytest.raises(ValueError, match=f"has {size + 1} entries but the model has {size} parameters"):
        a.adam_state_ = {"m": np.zeros(size + 1), "v": np.zeros(size + 1), "t": 1.0}


def test_arrays_round_trip_and_bad_state():
    seqs = _data()
    m = _model(2).fit(seqs)
    state = m.arrays()
    other = _model(2).set_arrays(state)
    for k in ("m", "v"):
        np.testing.assert_array_equal(other.adam_state_[k], m.adam_state_[k])
        assert other.adam_state_[k] is not m.adam_state_[k]
    with pytest.raises(ValueError, match="adam_state"):
        other.adam_state_ = {"m": np.zeros(3), "v": -np.ones(3), "t": 1.0}
    with pytest.raises(ValueError, match="adam_state"):
        other.adam_state_ = {"m": np.zeros(3), "v": np.zeros(4), "t": 1.0}


@pytest.mark.parametrize("damage, message", [
    (lambda g: g["v"].__setitem__(0, -1.0), "negative"),
    (lambda g: g.attrs.__setitem__("t", -2.0), "step count"),
    (lambda g: g.attrs.__setitem__("method", "sgd"), "method 'adam'"),
    (lambda g: (g.__delitem__("m"), g.create_dataset("m", data=np.zeros(5))), "shape"),
    (lambda g: g["m"].__setitem__(1, np.nan), "non-finite"),
])
def test_hostile_optimizer_group(tmp_path, damage, message):
    path = str(tmp_path / "m.h5")
    save_model(path, _model(2).fit(_data()), "a")
    with h5py.File(path, "r+") as f:
        damage(f["models/a/optimizer"])
    with pytest.raises(ModelFileError, match=message):
        load_model(path, "a")


def test_features_model_keeps_its_state(tmp_path):
    words = [["the", "cat", "sat"], ["a", "dog", "ran", "far"], ["the", "dog", "sat"], ["cats", "ran"]] * 10
    corpus = Corpus.from_tokens(words)
    m = DenseHMM(3, dim=2, fit_method="em", seed=0, n_iter=2, mstep_steps=3, symbol_features="orthographic")
    m.fit(corpus)
    path = str(tmp_path / "w.h5")
    save_model(path, m, "w", corpus)
    back = load_model(path, "w")
    np.testing.assert_array_equal(back.adam_state_["v"], m.adam_state_["v"])


def test_the_stop_reason_is_the_kept_runs():
    """Two restarts: the first runs all its iterations and is kept, the second converges early (worse)."""
    m = DenseHMM(3, 2, fit_method="em", seed=11, n_iter=12, tol=3e-3, restarts=2, init_method="random",
                 mstep_steps=5)
    events = list(m.iter_fit(_data()))
    per_run = [[e for e in events if e.phase != "start" and not e.done and e.metrics.get("restart") == r]
               for r in (0, 1)]
    assert m.restart_losses_[0] < m.restart_losses_[1]            # run 0 is kept
    # every iteration of run 0 (its start and 12 more), few of run 1
    assert len(per_run[0]) == 13 and len(per_run[1]) < 10
    assert events[-1].reason == m.stop_reason_ == "max_steps"


def test_the_command_line_resumes_as_one_run(tmp_path):
    """``densehmm train --resume`` on a checkpoint of 3 EM iterations, for 2 more, ends where a run of 5
    does; ``info`` names the kept state."""
    import subprocess
    import sys
    fasta = tmp_path / "s.fa"
    rng = np.random.default_rng(0)
    fasta.write_text("".join(f">s{i}\n{''.join(rng.choice(list('ACGT'), size=60))}\n" for i in range(30)))

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "densehmm_core", *map(str, args)], capture_output=True,
                              text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    common = [fasta, "--states", 3, "--dim", 2, "--method", "em", "--split", 0, "--seed", 1, "--name", "a"]
    cli("train", *common, "--iter", 5, "--out", tmp_path / "one.h5")
    cli("train", *common, "--iter", 3, "--out", tmp_path / "two.h5")
    cli("train", *common, "--iter", 2, "--out", tmp_path / "two.h5", "--resume")
    one, two = load_model(str(tmp_path / "one.h5")), load_model(str(tmp_path / "two.h5"))
    assert _lls(two)[-1] == _lls(one)[-1] and two.stop_reason_ == one.stop_reason_
    np.testing.assert_array_equal(two.emissionprob_, one.emissionprob_)
    np.testing.assert_array_equal(two.adam_state_["m"], one.adam_state_["m"])
    t = one.adam_state_["t"]
    assert t % 25 == 0 and f"optimizer    Adam's state after {t:.0f} steps" in cli("info", tmp_path / "two.h5")

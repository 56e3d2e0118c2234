"""HDF5 model files: exact round trips, several models per file, validation, atomic writes, CSV export."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import zipfile

import h5py
import numpy as np
import pytest

from densehmm_core import modelfile
from densehmm_core.modelfile import ModelFileError, list_models, load_model, read_model_info, save_model
from densehmm_core.standard import StandardHMM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = pathlib.Path(REPO).parent / "shared" / "data"
PROTEIN = os.path.join("proteins", "pdb_seqres_2022_09_28__subsampled_1000.fasta")


# ------------------------------------------------------------------ data and models
class _Synthetic:
    """Synthetic stand-in for a Corpus when ../shared/data is absent."""

    def __init__(self, seed=0):
        from densehmm_core.synthetic import demo_dataset
        d = demo_dataset(seed, n=4, m=6, n_train=12, n_test=6, length=120)
        self.sequences = d.train
        self.test = d.test
        self.vocabulary = ["Ä", "b", "c", "δ", "e", "f"]  # non-ASCII on purpose
        self.provenance = {"source": "synthetic", "seed": seed, "options": {"n": 4, "m": 6}}


@pytest.fixture(scope="module")
def corpora():
    """(train, test) from the shared protein FASTA (a small real subset), else synthetic."""
    path = SHARED_DATA / PROTEIN
    if path.is_file():
        from densehmm_core import data
        corpus = data.load(str(path)).preprocess(subset=120, max_len=80)
        return corpus.split(0.5, seed=1)
    syn = _Synthetic()
    test = _Synthetic()
    test.sequences = syn.test
    return syn, test


@pytest.fixture(scope="module")
def standard(corpora):
    train, test = corpora
    return StandardHMM(4, len(train.vocabulary), n_iter=5, seed=3).fit(train, eval_data=test)


@pytest.fixture(scope="module")
def dense_em(corpora):
    from densehmm_core.dense import DenseHMM
    train, test = corpora
    return DenseHMM(4, 2, len(train.vocabulary), fit_method="em", seed=1, n_iter=2, mstep_steps=5,
                    device="cpu").fit(train, eval_data=test)


@pytest.fixture(scope="module")
def dense_cooc(corpora):
    from densehmm_core.dense import DenseHMM
    train, _ = corpora
    return DenseHMM(3, 2, len(train.vocabulary), fit_method="cooc", seed=2, cooc_steps=60, finish_steps=5,
                    device="cpu").fit(train)


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _assert_same_model(orig, loaded, data):
    for key in ("startprob_", "transmat_", "emissionprob_"):
        assert _bits_equal(getattr(orig, key), getattr(loaded, key)), key
    assert type(loaded) is type(orig)
    assert loaded.n_states == orig.n_states and loaded.n_symbols == orig.n_symbols
    assert loaded.vocabulary == orig.vocabulary
    assert loaded.history_ == orig.history_
    assert loaded.stop_reason_ == orig.stop_reason_
    assert loaded.get_config() == orig.resolved_config()     # the file records the settings used
    assert loaded.n_parameters == orig.n_parameters
    assert _bits_equal(loaded.score_per_sequence(data), orig.score_per_sequence(data))
    assert loaded.score(data) == orig.score(data)
    for p, q in zip(loaded.predict(data), orig.predict(data)):
        assert np.array_equal(p, q)
    for p, q in zip(loaded.predict_proba(data[:3]), orig.predict_proba(data[:3])):
        assert _bits_equal(p, q)
    so, ss = orig.sample(3, 20, seed=5)
    lo, ls = loaded.sample(3, 20, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(so, lo))
    assert all(np.array_equal(a, b) for a, b in zip(ss, ls))


# ------------------------------------------------------------------ round trips
def test_standard_round_trip_is_exact(tmp_path, corpora, standard):
    train, test = corpora
    path = tmp_path / "m.h5"
    name = save_model(path, standard, "std", train, test_corpus=test, metrics={"test_nll": 1.5})
    assert name == "std"
    loaded = load_model(path)
    _assert_same_model(standard, loaded, list(test.sequences))
    assert loaded.metrics_ == {"test_nll": 1.5}
    assert loaded.provenance_["n_sequences"] == len(train.sequences)
    assert loaded.provenance_["n_tokens"] == sum(len(s) for s in train.sequences)
    assert loaded.provenance_test_["n_sequences"] == len(test.sequences)
    for k, v in train.provenance.items():  # every provenance entry survives
        assert loaded.provenance_[k] == json.loads(json.dumps(v)), k
    assert loaded.model_name_ == "std"


@pytest.mark.parametrize("which", ["dense_em", "dense_cooc"])
def test_dense_round_trip_is_exact(tmp_path, corpora, which, request):
    model = request.getfixturevalue(which)
    train, test = corpora
    path = tmp_path / "d.h5"
    save_model(path, model, corpus=train)
    loaded = load_model(path)
    _assert_same_model(model, loaded, list(test.sequences))
    emb, lemb = model.embeddings_, loaded.embeddings_
    assert set(lemb) == {"U", "Z", "W", "V", "z_start"}
    for k in emb:
        assert _bits_equal(emb[k], lemb[k]), k
    assert loaded.fit_method == model.fit_method and loaded.dim == model.dim
    assert loaded.device_used_ == model.device_used_
    assert loaded.start_mode_ == model.start_mode_
    info = read_model_info(path)
    assert info["attrs"]["kind"] == "dense" and info["attrs"]["dim"] == model.dim
    assert info["attrs"]["device_used"] == model.device_used_
    assert info["attrs"]["n_parameters"] == model.dim * (3 * model.n_states + model.n_symbols + 1)


def test_resume_from_file_continues_training(tmp_path, corpora, standard):
    """A loaded model is a working estimator: warm-started training improves on it."""
    train, _ = corpora
    path = tmp_path / "m.h5"
    save_model(path, standard, "std")
    loaded = load_model(path)
    before = loaded.score(train)
    loaded.n_iter = 3
    loaded.fit(train, init=False)
    assert loaded.score(train) >= before - 1e-9
    assert len(loaded.history_) > len(standard.history_)
    assert loaded.history_[:len(standard.history_)] == standard.history_


def test_several_models_in_one_file(tmp_path, corpora, standard, dense_em, dense_cooc):
    path = tmp_path / "sweep.h5"
    assert save_model(path, standard) == "standard_1"
    assert save_model(path, standard) == "standard_2"  # saving again adds, never replaces
    assert save_model(path, dense_em, "em") == "em"
    assert save_model(path, dense_cooc) == "dense_1"
    assert list_models(path) == ["standard_1", "standard_2", "em", "dense_1"]
    assert [s["kind"] for s in modelfile.model_summaries(path)] == ["standard", "standard", "dense", "dense"]
    for name, model in (("standard_1", standard), ("em", dense_em), ("dense_1", dense_cooc)):
        assert _bits_equal(load_model(path, name).transmat_, model.transmat_)
    with pytest.raises(ModelFileError, match="holds 4 models"):
        load_model(path)
    with pytest.raises(ModelFileError, match="no model named 'nope'"):
        load_model(path, "nope")
    with pytest.raises(ModelFileError, match="already holds a model named 'em'"):
        save_model(path, standard, "em")
    # overwrite replaces in place and keeps the others (bit for bit)
    before = {n: read_model_info(path, n)["arrays"]["transmat"] for n in ("standard_1", "dense_1")}
    save_model(path, standard, "em", overwrite=True)
    assert list_models(path) == ["standard_1", "standard_2", "em", "dense_1"]
    assert isinstance(load_model(path, "em"), StandardHMM)
    for n, arr in before.items():
        assert _bits_equal(read_model_info(path, n)["arrays"]["transmat"], arr)
    modelfile.delete_model(path, "standard_2")
    assert list_models(path) == ["standard_1", "em", "dense_1"]


def _plain_attr(v):
    return isinstance(v, (str, bytes, np.integer, np.floating, np.bool_, int, float)) or (
        isinstance(v, np.ndarray) and v.dtype.kind in "iufb")


def test_file_is_readable_with_bare_h5py(tmp_path, corpora, dense_em):
    train, test = corpora
    path = tmp_path / "d.h5"
    save_model(path, dense_em, "em", train, test_corpus=test)
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == "densehmm-model"
        assert int(f.attrs["schema_version"]) == modelfile.SCHEMA_VERSION == 2
        g = f["models/em"]
        assert g.attrs["kind"] == "dense" and g.attrs["fit_method"] == "em"
        assert int(g.attrs["n_states"]) == 4 and int(g.attrs["dim"]) == 2
        assert np.array_equal(g["transmat"][()], dense_em.transmat_)
        assert np.array_equal(g["emissionprob"][()], dense_em.emissionprob_)
        assert np.array_equal(g["startprob"][()], dense_em.startprob_)
        for k in ("U", "Z", "W", "V", "z_start"):
            assert np.array_equal(g["embeddings"][k][()], dense_em.embeddings_[k])
        vocab = [v.decode("utf-8") for v in g["vocabulary"][()]]
        assert vocab == list(train.vocabulary)
        hist = g["history"]
        assert np.array_equal(hist["step"][()], [r["step"] for r in dense_em.history_])
        assert set(g["software"].attrs) >= {"densehmm", "numpy", "tensorflow", "hmmlearn", "h5py"}
        assert g["provenance"].attrs["n_sequences"] == len(train.sequences)
        # every attribute anywhere is a plain scalar, string or numeric array; JSON where listed
        def check(name, obj):
            for k, v in obj.attrs.items():
                assert _plain_attr(v), (name, k, type(v))
            keys = json.loads(obj.attrs.get("json_keys", "[]"))
            for k in keys:
                json.loads(obj.attrs[k])
        f.visititems(check)
        for k, v in g["config"].attrs.items():
            if k != "json_keys" and k not in json.loads(g["config"].attrs.get("json_keys", "[]")):
                assert dense_em.resolved_config()[k] == (v.item() if hasattr(v, "item") else v)


def test_history_round_trips_none_absent_and_types(tmp_path, standard):
    m = StandardHMM(standard.n_states, standard.n_symbols, seed=0)
    m.startprob_, m.transmat_, m.emissionprob_ = standard.startprob_, standard.transmat_, standard.emissionprob_
    m.vocabulary = None
    m.history_ = [{"step": 0, "loss": None, "phase": "x", "flag": True},
                  {"step": 1, "loss": 0.5, "phase": "", "mad": float("nan"), "flag": False},
                  {"step": 2, "loss": 1, "note": [1, 2]}]
    path = tmp_path / "h.h5"
    save_model(path, m)
    got = load_model(path).history_
    assert got[0] == m.history_[0] and got[2] == {"step": 2, "loss": 1.0, "note": [1, 2]}
    assert got[1]["phase"] == "" and np.isnan(got[1]["mad"]) and got[1]["flag"] is False
    assert set(got[1]) == set(m.history_[1])
    assert load_model(path).vocabulary is None


def test_save_requires_parameters(tmp_path):
    with pytest.raises(ValueError, match="no transmat|no startprob"):
        save_model(tmp_path / "x.h5", StandardHMM(3, 4))
    assert not (tmp_path / "x.h5").exists()
    with pytest.raises(ValueError, match="invalid model name"):
        m = StandardHMM(2, 2, seed=0).init_params()
        save_model(tmp_path / "x.h5", m, "a/b")


# ------------------------------------------------------------------ validation
@pytest.fixture()
def good_file(tmp_path, standard, dense_cooc):
    path = tmp_path / "good.h5"
    save_model(path, standard, "std")
    save_model(path, dense_cooc, "dense")
    return path


def _edit(path, fn):
    with h5py.File(path, "r+") as f:
        fn(f)


def _replace(f, key, data):
    del f[key]
    f[key] = data


CORRUPTIONS = {
    "newer schema": (lambda f: f.attrs.__setitem__("schema_version", 99), "std", "schema version 99"),
    "missing dataset": (lambda f: f.__delitem__("models/std/transmat"), "std", "'transmat' is missing"),
    "mis-shaped dataset": (lambda f: _replace(f, "models/std/emissionprob", np.full((4, 3), 1 / 3)), "std",
                           "'emissionprob' has shape (4, 3)"),
    "non-finite matrix": (lambda f: f["models/std/transmat"].__setitem__((0, 0), np.nan), "std", "non-finite"),
    "non-stochastic matrix": (lambda f: f["models/std/transmat"].__setitem__((1, 1), 5.0), "std",
                              "transmat is not stochastic"),
    "negative probability": (lambda f: _replace(f, "models/std/startprob", np.array([1.5, -0.5, 0, 0])), "std",
                             "negative"),
    "non-float dataset": (lambda f: _replace(f, "models/std/startprob", np.array([1, 0, 0, 0])), "std",
                          "expected floating point"),
    "unknown kind": (lambda f: f["models/std"].attrs.__setitem__("kind", "quantum"), "std", "'kind' must be"),
    "bad n_states": (lambda f: f["models/std"].attrs.__setitem__("n_states", -2), "std", "'n_states'"),
    "missing embedding": (lambda f: f.__delitem__("models/dense/embeddings/V"), "dense", "'embeddings/V' is missing"),
    "embedding inconsistent": (lambda f: f["models/dense/embeddings/U"].__setitem__((0, 0), 7.0), "dense",
                               "does not match softmax"),
    "non-finite embedding": (lambda f: f["models/dense/embeddings/z_start"].__setitem__(0, np.inf), "dense",
                             "non-finite"),
    "vocabulary wrong length": (lambda f: _replace(f, "models/std/vocabulary", np.array([b"a"], dtype=object)),
                                "std", "'vocabulary' has shape"),
    "history column missing": (lambda f: f.__delitem__("models/std/history/loss"), "std",
                               "history column 'loss' is missing"),
    "history column short": (lambda f: _replace(f, "models/std/history/step", np.arange(2)), "std",
                             "history column 'step' has 2 entries"),
    "duplicate vocabulary": (lambda f: f["models/std/vocabulary"].__setitem__(1, f["models/std/vocabulary"][0]),
                             "std", "duplicate symbols"),
    "config rejected": (lambda f: f["models/dense/config"].attrs.__setitem__("fit_method", "magic"), "dense",
                        "model 'dense': the stored configuration is not accepted by DenseHMM"),
    "bad json attribute": (lambda f: f["models/std/config"].attrs.__setitem__("json_keys", "{not json"), "std",
                           "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_validation_errors_name_file_and_problem(good_file, case):
    edit, name, phrase = CORRUPTIONS[case]
    _edit(good_file, edit)
    with pytest.raises(ModelFileError) as ei:
        load_model(good_file, name)
    msg = str(ei.value)
    assert str(good_file) in msg and phrase in msg, msg
    assert ei.value.path == str(good_file)


def test_unknown_config_keys_are_an_error_not_dropped(good_file, standard):
    _edit(good_file, lambda f: f["models/std/config"].attrs.__setitem__("from_the_future", 3))
    with pytest.raises(ModelFileError, match="from_the_future") as ei:
        load_model(good_file, "std")
    assert str(good_file) in str(ei.value) and "model 'std'" in str(ei.value)
    # the arrays can still be read without building a model
    assert "from_the_future" in modelfile.read_model_info(good_file, "std")["config"]


def test_not_hdf5_foreign_missing_and_folder(tmp_path):
    text = tmp_path / "notes.h5"
    text.write_text("hello, I am not HDF5\n")
    with pytest.raises(ModelFileError, match=r"notes\.h5: is not an HDF5 file"):
        load_model(text)
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["data"] = np.arange(3)
    with pytest.raises(ModelFileError, match=r"foreign\.h5: is an HDF5 file but not a densehmm model file"):
        list_models(foreign)
    with pytest.raises(ModelFileError, match=r"missing\.h5: no such file"):
        load_model(tmp_path / "missing.h5")
    with pytest.raises(ModelFileError, match="is a folder"):
        load_model(tmp_path)
    truncated = tmp_path / "trunc.h5"
    m = StandardHMM(2, 3, seed=0).init_params()
    save_model(truncated, m)
    raw = truncated.read_bytes()
    truncated.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFileError, match=r"trunc\.h5"):
        load_model(truncated)
    empty = tmp_path / "empty.h5"
    with h5py.File(empty, "w") as f:
        f.attrs["format"] = "densehmm-model"
        f.attrs["schema_version"] = 1
        f.create_group("models")
    with pytest.raises(ModelFileError, match="holds no models"):
        load_model(empty)


def test_never_overwrites_a_foreign_or_newer_file(tmp_path, standard):
    for kind in ("text", "foreign", "newer"):
        path = tmp_path / f"{kind}.h5"
        if kind == "text":
            path.write_text("precious notes")
        else:
            with h5py.File(path, "w") as f:
                f["x"] = np.arange(4)
                if kind == "newer":
                    f.attrs["format"] = "densehmm-model"
                    f.attrs["schema_version"] = 3
                    f.create_group("models")
        before = path.read_bytes()
        with pytest.raises(ModelFileError):
            save_model(path, standard)
        assert path.read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_nothing_is_unpickled(tmp_path, standard):
    """Object (pickle-like) payloads are never evaluated: an opaque dataset is rejected."""
    path = tmp_path / "m.h5"
    save_model(path, standard, "std")
    _edit(path, lambda f: _replace(f, "models/std/transmat",
                                   np.void(b"\x80\x04\x95cos\nsystem\n")))
    with pytest.raises(ModelFileError, match="transmat"):
        load_model(path)


# ------------------------------------------------------------------ atomic writes
def _snapshot_dir(folder):
    return {p: (folder / p).read_bytes() for p in sorted(os.listdir(folder))}


def test_interrupted_write_keeps_previous_file(tmp_path, monkeypatch, standard, dense_cooc):
    path = tmp_path / "m.h5"
    save_model(path, standard, "first")
    before = _snapshot_dir(tmp_path)

    def boom(group, history):
        group.create_dataset("partial", data=np.arange(10))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(modelfile.write, "_write_history", boom)
    with pytest.raises(ModelFileError, match="could not be written.*previous file is unchanged"):
        save_model(path, dense_cooc, "second")
    assert _snapshot_dir(tmp_path) == before  # same bytes, and no temporary file left behind
    monkeypatch.undo()

    def replace_fails(src, dst):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(modelfile.write.os, "replace", replace_fails)
    with pytest.raises(ModelFileError):
        save_model(path, dense_cooc, "second")
    assert _snapshot_dir(tmp_path) == before
    monkeypatch.undo()

    monkeypatch.setattr(modelfile.write, "_write_history", lambda g, h: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        save_model(path, dense_cooc, "second")
    assert _snapshot_dir(tmp_path) == before
    monkeypatch.undo()
    assert list_models(path) == ["first"]


def test_killed_writer_leaves_previous_file_intact(tmp_path, standard):
    """A process killed (SIGKILL) in the middle of a save leaves the old file readable."""
    path = tmp_path / "m.h5"
    save_model(path, standard, "first")
    before = path.read_bytes()
    code = f"""
import os, signal, sys
sys.path.insert(0, {REPO!r})
from densehmm_core import modelfile
from densehmm_core.standard import StandardHMM
def die(group, history):
    group.create_dataset("partial", data=list(range(1000)))
    group.file.flush()
    os.kill(os.getpid(), signal.SIGKILL)
modelfile.write._write_history = die
m = StandardHMM(3, 4, seed=1).init_params()
modelfile.save_model({str(path)!r}, m, "second")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert path.read_bytes() == before
    assert list_models(path) == ["first"]
    _assert_same_model(standard, load_model(path), [np.arange(5) % standard.n_symbols])
    # the stale temporary file does not stop the next save
    save_model(path, standard, "second")
    assert list_models(path) == ["first", "second"]


def test_file_mode_is_kept(tmp_path, standard):
    path = tmp_path / "m.h5"
    save_model(path, standard)
    os.chmod(path, 0o640)
    save_model(path, standard)
    assert (os.stat(path).st_mode & 0o777) == 0o640


# ------------------------------------------------------------------ CSV export
def test_csv_export_folder_and_zip_round_trip(tmp_path, dense_cooc, corpora):
    from densehmm_core.export import export_csv
    path = tmp_path / "d.h5"
    save_model(path, dense_cooc, "d", corpora[0])
    names = export_csv(path, tmp_path / "csv")
    assert set(names) == {"startprob.csv", "transmat.csv", "emissionprob.csv", "vocabulary.csv",
                          "U.csv", "Z.csv", "W.csv", "V.csv", "z_start.csv"}

    def read(text):
        rows = [r.split(",") for r in text.strip().splitlines()]
        return rows[0], [r[0] for r in rows[1:]], np.array([[float(x) for x in r[1:]] for r in rows[1:]])

    header, labels, A = read((tmp_path / "csv" / "transmat.csv").read_text(encoding="utf-8"))
    assert _bits_equal(A, dense_cooc.transmat_)
    assert labels == [f"state_{i}" for i in range(dense_cooc.n_states)]
    header, _, B = read((tmp_path / "csv" / "emissionprob.csv").read_text(encoding="utf-8"))
    assert header[1:] == list(corpora[0].vocabulary) and _bits_equal(B, dense_cooc.emissionprob_)
    _, vlabels, V = read((tmp_path / "csv" / "V.csv").read_text(encoding="utf-8"))
    assert _bits_equal(V, dense_cooc.embeddings_["V"])
    _, _, z = read((tmp_path / "csv" / "z_start.csv").read_text(encoding="utf-8"))
    assert _bits_equal(z[:, 0], dense_cooc.embeddings_["z_start"])
    export_csv(dense_cooc, tmp_path / "d.zip")  # from the model object
    with zipfile.ZipFile(tmp_path / "d.zip") as z:
        assert set(z.namelist()) == set(names)
        assert z.read("transmat.csv").decode("utf-8") == (tmp_path / "csv" / "transmat.csv").read_text("utf-8")


def test_a_run_replaces_its_own_model_and_never_another_runs(tmp_path):
    """Two training runs writing one name (started together, both checkpointing): ``run_id`` lets a run
    replace the model it wrote, never one another run wrote (ModelNameTaken); ``densehmm train`` then
    saves under the next free name, so both models are kept (before, the later checkpoint replaced the
    other run's model and both runs said they had saved it)."""
    from densehmm_core.cli.train import _RunSave
    from densehmm_core.modelfile import ModelNameTaken
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 3, 20) for _ in range(5)]
    a, b = (StandardHMM(2, n_iter=2, seed=s).fit(seqs) for s in (1, 2))
    path = str(tmp_path / "m.h5")
    assert save_model(path, a, "X", run_id="run-a") == "X"
    assert save_model(path, a, "X", run_id="run-a") == "X"            # its own checkpoint: replaced
    with pytest.raises(ModelNameTaken, match="already holds a model named 'X'"):
        save_model(path, b, "X", run_id="run-b")
    with pytest.raises(ModelNameTaken):
        save_model(path, b, "X")
    assert read_model_info(path, "X")["attrs"]["run_id"] == "run-a"
    run_b = _RunSave(path, "run-b", replace=False, name="X")
    assert run_b.save(b, None) == "X-2" and run_b.save(b, None) == "X-2"   # its later saves replace X-2
    assert list_models(path) == ["X", "X-2"]
    # a third run asking for X gets the first free X-k, chosen under the file's lock (not X-2-2)
    assert save_model(path, a, "X", run_id="run-c", if_taken="next") == "X-3"
    assert save_model(path, a, "X-2", run_id="run-c", if_taken="next") == "X-2-2"   # asked for X-2: its own -k
    with pytest.raises(ValueError, match="if_taken"):
        save_model(path, a, "X", if_taken="rename")
    assert list_models(path) == ["X", "X-2", "X-3", "X-2-2"]
    np.testing.assert_array_equal(load_model(path, "X-3").transmat_, a.transmat_)
    np.testing.assert_array_equal(load_model(path, "X").transmat_, a.transmat_)
    np.testing.assert_array_equal(load_model(path, "X-2").transmat_, b.transmat_)
    assert save_model(path, b, "X", overwrite=True) == "X"              # --overwrite replaces any
    np.testing.assert_array_equal(load_model(path, "X").transmat_, b.transmat_)

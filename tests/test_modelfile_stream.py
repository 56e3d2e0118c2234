"""One forked, streamed read of a whole model file (issue 24, item 11: restoring a session of 16
word-level jobs took 10-12 s; one fork per part and two for the names and summaries were part
of it): :class:`densehmm_core.modelfile.ModelStream` and :func:`safety.run_isolated_iter`.

Oracles: :func:`load_models` (the per-call reader) for the content, bit for bit; the child's
pid for "stopped" (reaped: no such process); the probe's own hang and crash messages."""
from __future__ import annotations

import os
import signal
import time

import h5py
import numpy as np
import pytest

from densehmm_core.modelfile import ModelFileError, ModelStream, load_models, save_models, safety
from test_modelfile_hostile import dense_model, standard_model


def _file(path, k=5):
    entries = []
    for i in range(k):
        model = dense_model(seed=i) if i % 2 else standard_model(seed=i)
        model.history_ = [{"step": s, "loss": 1.0 / (s + 1), "phase": "x", "elapsed": 0.1 * s} for s in range(30 + i)]
        entries.append({"name": f"m{i}", "model": model, "notes": {"i": i, "text": "é"}, "metrics": {"mad": 0.1 * i}})
    save_models(path, entries)
    return path


@pytest.fixture
def spawned(monkeypatch):
    """The pids of the children :func:`safety._spawn` forked during the test."""
    pids = []
    real = safety._spawn

    def spawn(spath, write):
        pid, r = real(spath, write)
        pids.append(pid)
        return pid, r
    monkeypatch.setattr(safety, "_spawn", spawn)
    return pids


def _reaped(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_stream_reads_what_load_models_reads_bit_for_bit_in_one_fork(tmp_path, spawned):
    path = _file(tmp_path / "m.h5", k=5)
    expected = load_models(path)
    spawned.clear()
    with ModelStream(path, batch=2) as stream:
        assert stream.names == [f"m{i}" for i in range(5)]
        assert [s["name"] for s in stream.summaries] == stream.names
        assert [s["kind"] for s in stream.summaries] == ["standard", "dense"] * 2 + ["standard"]
        parts = list(stream.parts())
    assert [len(p) for p in parts] == [2, 2, 1]
    assert len(spawned) == 1 and _reaped(spawned[0])          # names, summaries and all models: one child
    got = [pair for part in parts for pair in part]
    for (info, model), (info0, model0) in zip(got, expected):
        for key in ("name", "attrs", "config", "history", "history_length", "metrics", "notes", "vocabulary",
                    "provenance", "software", "file"):
            assert info[key] == info0[key], key
        assert info["arrays"].keys() == info0["arrays"].keys()
        for key, arr in info["arrays"].items():
            assert arr.dtype == info0["arrays"][key].dtype and np.array_equal(arr, info0["arrays"][key]), key
        assert type(model) is type(model0) and model.history_ == model0.history_
        for key, arr in model.arrays()["params"].items():
            assert np.array_equal(arr, model0.arrays()["params"][key]), key


def test_stopping_a_stream_early_stops_its_reading_process(tmp_path, spawned):
    path = _file(tmp_path / "m.h5", k=6)
    stream = ModelStream(path, batch=1)
    parts = stream.parts()
    assert [i["name"] for i, _m in next(parts)] == ["m0"]
    assert not _reaped(spawned[0])                            # still reading (blocked on the pipe)
    stream.close()
    assert _reaped(spawned[0])
    # a refusal after the summaries (the caller's own checks) stops it the same way
    with pytest.raises(RuntimeError):
        with ModelStream(path) as s:
            raise RuntimeError(len(s.names))
    assert _reaped(spawned[-1])


def test_a_hostile_model_in_the_middle_stops_the_stream_with_its_error(tmp_path, spawned):
    path = _file(tmp_path / "m.h5", k=5)
    with h5py.File(path, "a") as f:
        del f["models/m3/transmat"]
        f["models/m3/transmat"] = h5py.SoftLink("/models/m0/transmat")
    with ModelStream(path, batch=2) as stream:
        parts = stream.parts()
        assert len(next(parts)) == 2                          # m0, m1 are fine
        with pytest.raises(ModelFileError, match=r"model 'm3': 'transmat' is a soft link") as ei:
            next(parts)
    assert "\n" not in str(ei.value) and str(ei.value).startswith(str(path))
    assert _reaped(spawned[-1])


def test_a_reading_process_that_hangs_or_crashes_is_a_model_file_error(tmp_path, monkeypatch, spawned):
    path = _file(tmp_path / "m.h5", k=1)
    monkeypatch.setenv("DENSEHMM_PROBE_TIMEOUT", "1")

    def hangs():
        yield {"a": np.arange(3)}
        time.sleep(60)
        yield 2
    items = safety.run_isolated_iter(path, hangs)
    assert np.array_equal(next(items)["a"], np.arange(3))   # what came before the hang arrives
    t0 = time.monotonic()
    with pytest.raises(ModelFileError, match="made the HDF5 library hang"):
        next(items)
    assert time.monotonic() - t0 < 10 and _reaped(spawned[-1])

    def crashes():
        yield 1
        import faulthandler
        faulthandler.disable()                                # (no traceback printed by the child)
        os.kill(os.getpid(), signal.SIGSEGV)
        yield 2
    items = safety.run_isolated_iter(path, crashes)
    assert next(items) == 1
    with pytest.raises(ModelFileError, match=r"crashed the HDF5 library \(SIGSEGV\)"):
        next(items)


def test_a_stream_of_a_file_that_is_not_a_model_file_says_so(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 8)
    with pytest.raises(ModelFileError, match="HDF5|damaged"):
        ModelStream(junk)
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(ModelFileError, match="not a densehmm model file"):
        ModelStream(foreign)


def test_mutated_files_give_only_model_file_errors_through_a_stream(tmp_path):
    """A small fuzz of the streamed reader (the full fuzz of the reader: test_modelfile_hostile)."""
    original = _file(tmp_path / "m.h5", k=3).read_bytes()
    rng = np.random.default_rng(7)
    out = tmp_path / "fuzz.h5"
    kinds = {"ok": 0, "error": 0}
    for _ in range(60):
        data = bytearray(original)
        if rng.integers(0, 2):
            data = data[: rng.integers(0, len(data))]
        else:
            for _ in range(rng.integers(1, 9)):
                data[rng.integers(0, len(data))] = rng.integers(0, 256)
        out.write_bytes(bytes(data))
        try:
            with ModelStream(out, batch=2) as stream:
                got = [pair for part in stream.parts() for pair in part]
            assert len(got) == len(stream.names)
            kinds["ok"] += 1
        except ModelFileError as e:
            assert "\n" not in str(e)
            kinds["error"] += 1
    assert kinds["error"] > 10


def test_replacing_a_model_file_reads_only_its_root(tmp_path, monkeypatch):
    """Saving a session over the previous one probed (read in full) the old file first; now only
    its root is checked (format, schema version, /models) -- and a foreign file is still refused."""
    path = _file(tmp_path / "m.h5", k=2)
    safety._probe_results.clear()                  # as in a new process: the old file is not trusted
    probes = []
    real = safety._run_probe
    monkeypatch.setattr(safety, "_run_probe", lambda *a: probes.append(a[0]) or real(*a))
    save_models(path, [{"name": "n", "model": standard_model(seed=3)}])
    assert probes == [] and [i["name"] for i, _m in load_models(path)] == ["n"]
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    before = foreign.read_bytes()
    with pytest.raises(ModelFileError, match="not a densehmm model file"):
        save_models(foreign, [{"name": "n", "model": standard_model()}])
    assert foreign.read_bytes() == before


def test_plain_history_columns_are_written_as_the_general_writer_writes_them(tmp_path, monkeypatch):
    """Saving: columns that every record holds as floats, ints or strings are written in one go
    (issue 24.11); the datasets equal what the general, value-by-value writer makes."""
    from densehmm_core.modelfile import write
    model = standard_model()
    model.history_ = [{"step": s, "loss": 1.0 / (s + 1), "phase": "bw", "flag": s % 2 == 0, "big": 2 ** 62 + s,
                       "maybe": None if s == 3 else 0.5, "np": np.float64(s), **({"late": s} if s > 4 else {})}
                      for s in range(10)]
    save_models(tmp_path / "fast.h5", [{"name": "m", "model": model}])
    monkeypatch.setattr(write, "_write_plain_column", lambda *a: False)
    save_models(tmp_path / "general.h5", [{"name": "m", "model": model}])
    with h5py.File(tmp_path / "fast.h5") as a, h5py.File(tmp_path / "general.h5") as b:
        ha, hb = a["models/m/history"], b["models/m/history"]
        assert dict(ha.attrs) == dict(hb.attrs) and list(ha) == list(hb)
        for col in ha:
            assert ha[col].dtype == hb[col].dtype, col
            assert dict(ha[col].attrs).keys() == dict(hb[col].attrs).keys(), col
            va, vb = ha[col][()], hb[col][()]
            assert va.tolist() == vb.tolist() or np.array_equal(va, vb, equal_nan=True), col
    assert load_models(tmp_path / "fast.h5")[0][1].history_ == load_models(tmp_path / "general.h5")[0][1].history_


def test_a_large_file_comes_in_at_most_max_parts_parts(tmp_path):
    path = _file(tmp_path / "m.h5", k=7)
    with ModelStream(path, batch=1, max_parts=3) as stream:
        assert [len(p) for p in stream.parts()] == [3, 3, 1]

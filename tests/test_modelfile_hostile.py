"""Hostile model files (issue 13, items 2, 3, 7, 8): data outside the file is never followed,
declared sizes are checked before anything is read, NaN cannot slip through a consistency
check, odd attributes are one-line errors; plus a fuzz test of mutated real files."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import h5py
import numpy as np
import pytest

from densehmm_core.dense import DenseHMM
from densehmm_core.modelfile import ModelFileError, list_models, load_model, model_summaries, read_model_info, \
    save_model
from densehmm_core.standard import StandardHMM

REPO = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "models"
READERS = (lambda p: load_model(p), lambda p: read_model_info(p), lambda p: read_model_info(p, arrays=False),
           lambda p: model_summaries(p) and read_model_info(p, history=3))


def standard_model(n=3, m=4, seed=0):
    rng = np.random.default_rng(seed)
    model = StandardHMM(n, n_symbols=m, seed=seed)
    model.startprob_ = rng.dirichlet(np.ones(n))
    model.transmat_ = rng.dirichlet(np.ones(n), n)
    model.emissionprob_ = rng.dirichlet(np.ones(m), n)
    model.history_ = [{"step": i, "loss": 1.0 / (i + 1)} for i in range(20)]
    return model


def dense_model(n=3, l=2, m=4, seed=0):
    rng = np.random.default_rng(seed)
    model = DenseHMM(n, l, m, seed=seed)
    model.set_embeddings({"U": rng.normal(size=(n, l)), "Z": rng.normal(size=(n, l)), "W": rng.normal(size=(n, l)),
                          "V": rng.normal(size=(m, l)), "z_start": rng.normal(size=l)})
    return model


@pytest.fixture
def std_file(tmp_path):
    path = tmp_path / "m.h5"
    save_model(path, standard_model(), "std")
    return path


def replace(path, key, make):
    """Swap the object at ``key`` for what ``make(f, key)`` puts there."""
    with h5py.File(path, "a") as f:
        del f[key]
        make(f, key)


def refused(path, match, readers=READERS):
    for read in readers:
        with pytest.raises(ModelFileError, match=match) as ei:
            read(path)
        assert "\n" not in str(ei.value) and str(ei.value).startswith(str(path))


def with_timeout(seconds, fn):
    """Run fn in a thread; fail (instead of hanging the suite) if it does not return in time."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ------------------------------------------------------------------ item 3: data outside the file
def test_external_links_are_refused_even_to_a_fifo(tmp_path, std_file):
    other = tmp_path / "other.h5"
    save_model(other, standard_model(seed=5), "std")
    replace(std_file, "models/std/transmat", lambda f, k: f.__setitem__(k, h5py.ExternalLink(str(other),
                                                                                           "/models/std/transmat")))
    refused(std_file, r"model 'std': 'transmat' is an external link \(to '.*other.h5'\)")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    replace(std_file, "models/std/transmat", lambda f, k: f.__setitem__(k, h5py.ExternalLink(str(fifo), "/x")))
    with_timeout(20, lambda: refused(std_file, "external link"))
    # a whole model group, or /models itself, as a link
    path = tmp_path / "g.h5"
    save_model(path, standard_model(), "std")
    replace(path, "models", lambda f, k: f.__setitem__(k, h5py.ExternalLink(str(other), "/models")))
    with_timeout(20, lambda: refused(path, "'models' is an external link", READERS + (list_models,)))


def test_soft_links_are_refused(std_file):
    replace(std_file, "models/std/emissionprob", lambda f, k: f.__setitem__(k, h5py.SoftLink("/models/std/transmat")))
    refused(std_file, "'emissionprob' is a soft link")


def test_external_raw_storage_is_refused_and_never_read(tmp_path, std_file):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.full(9, 0.125).tobytes() + b"TOPSECRET")

    def external(f, k):
        f.create_dataset(k, shape=(3, 3), dtype="<f8", external=[(str(secret), 0, 72)])
    replace(std_file, "models/std/transmat", external)
    for read in READERS:
        with pytest.raises(ModelFileError,
                           match=r"model 'std': dataset 'transmat' keeps its data in external files") as ei:
            read(std_file)
        assert "0.125" not in str(ei.value) and "TOPSECRET" not in str(ei.value)


def test_virtual_datasets_are_refused(tmp_path, std_file):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["a"] = np.full((3, 3), 1 / 3)
    layout = h5py.VirtualLayout(shape=(3, 3), dtype="f8")
    layout[:] = h5py.VirtualSource(str(src), "a", shape=(3, 3))
    replace(std_file, "models/std/transmat", lambda f, k: f.create_virtual_dataset(k, layout))
    refused(std_file, "model 'std': dataset 'transmat' is a virtual dataset")


def test_a_model_file_that_is_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "m.h5"
    os.mkfifo(fifo)
    with_timeout(20, lambda: refused(fifo, "not a regular file", READERS + (list_models,)))


def test_a_hostile_model_is_not_copied_when_another_is_added(tmp_path, std_file):
    other = tmp_path / "other.h5"
    save_model(other, standard_model(seed=5), "std")
    replace(std_file, "models/std/transmat", lambda f, k: f.__setitem__(k, h5py.ExternalLink(str(other),
                                                                                           "/models/std/transmat")))
    before = std_file.read_bytes()
    with pytest.raises(ModelFileError, match="external link"):
        save_model(std_file, standard_model(seed=1), "new")
    assert std_file.read_bytes() == before


# ------------------------------------------------------------------ item 2: sizes before reading
def test_a_history_bomb_is_refused_before_reading(tmp_path, std_file):
    """27 KB declaring 30,000,000 gzip rows once took `info` 7.1 GB and 43 s."""
    def bomb(rows, n_records):
        def make(f, k):
            g = f.create_group(k)
            g.attrs["columns"] = json.dumps(["step", "loss"])
            g.attrs["n_records"] = np.int64(n_records)
            for c in ("step", "loss"):
                g.create_dataset(c, shape=(rows,), dtype="f8", chunks=(min(rows, 4096),), compression="gzip")
        return make
    replace(std_file, "models/std/history", bomb(30_000_000, 30_000_000))
    assert std_file.stat().st_size < 100_000
    t0 = time.monotonic()
    refused(std_file, r"history/(step|loss)' declares 0.24 GB \(shape \(30000000,\)\) but stores only 0 bytes")
    assert time.monotonic() - t0 < 5
    replace(std_file, "models/std/history", bomb(5_000_000, 5_000_000))  # under the row limit: the storage check
    refused(std_file, r"history/(step|loss)' declares 40 MB \(shape \(5000000,\)\) but stores only 0 bytes")
    replace(std_file, "models/std/history", bomb(100, 30))
    refused(std_file, "history column 'step' has 100 entries, expected 30")


def test_huge_declared_matrices_are_refused_with_their_size(tmp_path):
    path = tmp_path / "big.h5"
    save_model(path, standard_model(), "std")
    with h5py.File(path, "a") as f:
        g = f["models/std"]
        g.attrs["n_states"] = np.int64(1_000_000)
        g.attrs["n_symbols"] = np.int64(1_000_000)
        for k, shape in (("startprob", (10 ** 6,)), ("transmat", (10 ** 6, 10 ** 6)),
                         ("emissionprob", (10 ** 6, 10 ** 6))):
            del g[k]
            g.create_dataset(k, shape=shape, dtype="f8", chunks=True, compression="gzip")
    t0 = time.monotonic()
    refused(path, r"dataset '(startprob|transmat|emissionprob)' declares .* but stores only 0 bytes")
    assert time.monotonic() - t0 < 5


def test_the_memory_budget_names_the_size_needed(std_file, monkeypatch):
    monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", "100")
    refused(std_file, r"too large: its arrays \(n=3, m=4\) need .* MB of memory", READERS[:2])
    monkeypatch.delenv("DENSEHMM_MAX_MODEL_BYTES")
    assert read_model_info(std_file)["arrays"]["transmat"].shape == (3, 3)


def test_info_reads_histories_lazily(std_file):
    info = read_model_info(std_file, arrays=False, history=3)
    assert info["history_length"] == 20 and [r["step"] for r in info["history"]] == [0, 1, 2, 17, 18, 19]
    assert info["arrays"] == {"startprob": [3], "transmat": [3, 3], "emissionprob": [3, 4]}
    full = read_model_info(std_file)
    assert full["history_length"] == 20 and [r["step"] for r in full["history"]] == list(range(20))


# ------------------------------------------------------------------ item 7: NaN-safe consistency
def test_overflowing_embeddings_that_contradict_the_matrices_are_refused(tmp_path):
    path = tmp_path / "d.h5"
    save_model(path, dense_model(), "d")
    with h5py.File(path, "a") as f:
        for k in ("U", "Z"):
            f[f"models/d/embeddings/{k}"][...] = f[f"models/d/embeddings/{k}"][()] * 1e200
    refused(path, r"transmat does not match softmax\(Z U\^T\) of the stored embeddings \(the embeddings overflow\)",
            READERS[:2])
    save_model(tmp_path / "ok.h5", dense_model(), "d")
    with h5py.File(tmp_path / "ok.h5", "a") as f:
        f["models/d/embeddings/V"][0, 0] += 1.0
    refused(tmp_path / "ok.h5", r"emissionprob does not match softmax\(W V\^T\).*largest difference", READERS[:2])


# ------------------------------------------------------------------ item 8: odd root and attribute values
@pytest.mark.parametrize("value,match", [
    (np.float64(np.inf), r"invalid schema_version attribute \(inf\)"),
    (np.float64(1.5), r"invalid schema_version attribute \(1.5\)"),
    ("one", r"invalid schema_version attribute \(one\)"),
    (np.int64(0), r"invalid schema_version 0"),
])
def test_bad_schema_versions_are_one_line_errors(std_file, value, match):
    with h5py.File(std_file, "a") as f:
        f.attrs["schema_version"] = value
    refused(std_file, match, READERS + (list_models,))


def test_opaque_reference_and_non_utf8_attributes_are_named(std_file):
    cases = [("config", "opaque", np.void(b"\x80\x04pickle"), "has an unsupported type"),
             ("metrics", "ref", None, "has an unsupported type"),
             ("provenance", "bad", np.bytes_(b"\xff\xfe latin"), "is not valid UTF-8")]
    for group, key, value, match in cases:
        path = std_file.with_name(f"{key}.h5")
        save_model(path, standard_model(), "std", metrics={"x": 1.0})
        with h5py.File(path, "a") as f:
            g = f.require_group(f"models/std/{group}")
            g.attrs[key] = f["models/std/transmat"].ref if value is None else value
        refused(path, rf"{group}: attribute '{key}' {match}", READERS[:2])
    with h5py.File(std_file, "a") as f:
        f.attrs["format"] = np.bytes_(b"densehmm-\xff")
    refused(std_file, "format attribute cannot be read|not a densehmm model file", READERS + (list_models,))


def test_odd_files_are_model_file_errors_for_every_reader(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 8)
    refused(junk, "HDF5|damaged", READERS + (list_models,))
    loop = tmp_path / "loop.h5"
    loop.symlink_to(tmp_path / "loop2.h5")
    (tmp_path / "loop2.h5").symlink_to(loop)
    refused(loop, "symbolic link loop", READERS + (list_models,))


# ------------------------------------------------------------------ fuzz
FUZZ = r"""
import os, resource, sys, time
import numpy as np
from densehmm_core.modelfile import ModelFileError, read_model_info, read_model_infos
files, out, cases = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(1234)
originals = [open(p, "rb").read() for p in files]
read_model_info(files[0])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kinds = {"ok": 0, "ModelFileError": 0}
slowest = 0.0
for i in range(cases):
    data = bytearray(originals[i % len(originals)])
    how = rng.integers(0, 5)
    if how == 0:        # flip a few bytes anywhere
        for _ in range(rng.integers(1, 9)):
            data[rng.integers(0, len(data))] = rng.integers(0, 256)
    elif how == 1:      # flip bytes in the first 4 KB (superblock, root group, object headers)
        for _ in range(rng.integers(1, 5)):
            data[rng.integers(0, min(4096, len(data)))] = rng.integers(0, 256)
    elif how == 2:      # truncate
        data = data[: rng.integers(0, len(data))]
    elif how == 3:      # overwrite a run with random bytes
        a = rng.integers(0, len(data)); n = rng.integers(1, 64)
        data[a:a + n] = rng.integers(0, 256, size=len(data[a:a + n]), dtype=np.uint8).tobytes()
    else:               # set a run of bytes to 0xff (huge sizes and addresses)
        a = rng.integers(0, len(data)); n = rng.integers(1, 9)
        data[a:a + n] = b"\xff" * len(data[a:a + n])
    with open(out, "wb") as fh:
        fh.write(data)
    t0 = time.perf_counter()
    try:
        read_model_infos(out)  # lists the models and reads every one of them
        kinds["ok"] += 1
    except ModelFileError as e:
        assert "\n" not in str(e), repr(str(e))
        kinds["ModelFileError"] += 1
    slowest = max(slowest, time.perf_counter() - t0)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(kinds["ok"], kinds["ModelFileError"], round(slowest, 3), grown, children)
"""


def test_fuzzed_model_files_give_only_model_file_errors(tmp_path):
    files = sorted(str(p) for p in FIXTURES.glob("v1_*.h5"))
    if not files:
        pytest.skip("no model-file fixtures")
    cases = 500
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", FUZZ, ",".join(files), str(tmp_path / "fuzz.h5"), str(cases)],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO), DENSEHMM_PROBE_TIMEOUT="5"))
    assert proc.returncode == 0, proc.stderr[-3000:]  # no other exception, no crash
    ok, errors, slowest, grown_kb, probe_kb = proc.stdout.split()
    assert int(ok) + int(errors) == cases and int(errors) > cases // 10
    assert float(slowest) < 15.0          # no hang (a hanging probe is stopped after 5 s)
    assert int(grown_kb) < 300_000         # bounded memory (max RSS grew by < 300 MB) ...
    assert int(probe_kb) < 1_600_000       # ... also in the probe processes (capped at +1 GB)
    assert time.monotonic() - t0 < 100

"""Session files as the app opens them, headless (issues 25 and 27): every field of a job's notes
checked (the first bad field named, nothing returned), job counts and memory checked before
reading, what the core's reader refuses refused here too, stored paths never opened, and a
fuzz of 500 mutated session files through ``load_session`` + ``restored_jobs`` (what File >
Open session runs off the GUI thread): only clean errors."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

pytest.importorskip("PySide6")

from densehmm_core import modelfile  # noqa: E402
from densehmm_core.modelfile import ModelFileError  # noqa: E402
from app import session as sess  # noqa: E402
from app.modelspec import ModelSpec  # noqa: E402
from sessionfakes import finished_job, fitted_model  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent


class _DS:
    """What a job's data set contributes to its notes (name, path, options)."""

    def __init__(self, path, options=None, name="words.txt"):
        self.name, self.path, self.options = name, path, dict(options or {"split": 0.5, "seed": 0})


def jobs(k=3, path="/data/words.txt"):
    out = []
    for i in range(k):
        kind = "dense" if i % 3 == 2 else "standard"
        model = fitted_model(kind, n=3, m=4, l=2, steps=5, seed=i)
        out.append(finished_job(model, f"[sweep 1] job {i}", dataset=_DS(path), sweep="sweep 1" if i else None,
                                spec=ModelSpec.make(model_type="dense_cooc" if kind == "dense" else "standard",
                                                    n=3, l=2, seed=i).to_dict()))
    return out


def write(path, notes_list, models=None):
    """A session file whose jobs have exactly these notes (as the core writer stores any notes)."""
    models = models or [fitted_model("standard", n=3, m=4, steps=5, seed=i) for i in range(len(notes_list))]
    modelfile.save_models(path, [{"name": f"job{i}", "model": m, "notes": n}
                                 for i, (m, n) in enumerate(zip(models, notes_list))])
    return str(path)


def good_notes(k=3, path="/data/words.txt"):
    return [sess.session_notes(j) for j in jobs(k, path)]


# ------------------------------------------------------------------ round trip
def test_every_field_comes_back_as_written(tmp_path):
    js = jobs(3)
    js[0].scores = {"nll": 1.25, "loglik": -float("inf")}
    js[0].score_text = "NLL/token on other.txt: 1.25"
    js[1].state = type(js[1].state)("cancelled")
    js[1].reason = "cancelled"
    path = str(tmp_path / "s.h5")
    names = sess.save_session(path, [(f"job{i}", j, None, None, {"train_nll": 1.0}) for i, j in enumerate(js)])
    assert names == ["job0", "job1", "job2"]
    session = sess.load_session(path)
    assert [sj.group for sj in session.jobs] == names
    for old, new in zip(js, session.jobs):
        assert (new.name, new.sweep, new.state, new.reason, new.device) == \
               (old.name, old.sweep, old.state.value, old.reason, old.device)
        assert new.elapsed_s == old.elapsed and (new.step, new.total) == (old.step, old.total)
        assert new.spec == old.spec and new.scores == old.scores and new.score_text == old.score_text
        assert new.dataset == sess.DataRef("words.txt", "/data/words.txt", {"split": 0.5, "seed": 0})
        for key in ("startprob_", "transmat_", "emissionprob_"):
            np.testing.assert_array_equal(getattr(new.model, key), getattr(old.model, key))
        assert new.model.history_ == old.model.history_
    assert len(session.data_refs()) == 1


def _tagging(n=3, k=4, seed=0):
    """A tagging result of the core (random states and tags) and its session record."""
    from densehmm_core.metrics import tagging_scores
    rng = np.random.default_rng(seed)
    scores = tagging_scores([rng.integers(0, n, size=40)], [rng.integers(0, k, size=40)], n_states=n, n_tags=k)
    return scores, sess.tagging_record("ab12" * 8, scores)


def test_tagging_scores_come_back_as_the_core_computed_them(tmp_path):
    """Issue 24.7: a words job's tagging scores (contingency, mappings, M-1, 1-1, V-measure, tokens) are
    stored with the digest of the data scored, and come back equal (arrays as the core returns them)."""
    js = jobs(2)
    scores, js[0].tagging = _tagging()
    path = str(tmp_path / "s.h5")
    sess.save_session(path, [(f"job{i}", j, None, None, {}) for i, j in enumerate(js)])
    back = sess.load_session(path).jobs
    assert back[1].tagging is None
    key, got = sess.tagging_scores_of(back[0].tagging)
    assert key == "ab12" * 8 and set(got) == set(scores)
    for name, value in scores.items():
        np.testing.assert_array_equal(got[name], value)
        assert isinstance(got[name], np.ndarray) == isinstance(value, np.ndarray), name


def test_a_version_1_session_without_tagging_scores_still_opens(tmp_path):
    notes = good_notes(2)
    for n in notes:
        n[sess.SESSION_KEY] = 1
        assert "tagging" not in n
    got = sess.load_session(write(tmp_path / "v1.h5", notes)).jobs
    assert [j.name for j in got] == [n["job_name"] for n in notes] and all(j.tagging is None for j in got)


@pytest.mark.parametrize("change, match", [
    (lambda t: t.update(key="not hex!"), r"field 'tagging.key' must be a hex digest"),
    (lambda t: t.update(m1=1.5), r"field 'tagging.m1' must be a number between 0 and 1"),
    (lambda t: t["contingency"][1].append(3), r"field 'tagging.contingency\[1\]' must be 4 counts"),
    (lambda t: t["contingency"][0].__setitem__(0, -1), r"field 'tagging.contingency\[0\]' must be 4 counts"),
    (lambda t: t["mapping"].__setitem__(2, 9), r"field 'tagging.mapping\[2\]' must be an integer in -1..3"),
    (lambda t: t.pop("mapping"), r"field 'tagging.mapping' is missing"),
    (lambda t: t.update(evil=1), r"field .tagging.'evil'. is not a tagging field"),
    (lambda t: t.update(contingency=[[0] * 4000] * 1001), r"field 'tagging.contingency' has 1001 x 4000 cells"),
])
def test_bad_tagging_scores_are_named(tmp_path, change, match):
    notes = good_notes(2)
    record = _tagging()[1]
    change(record)
    notes[1]["tagging"] = record
    with pytest.raises(sess.SessionError, match=r"job 2 \('job1'\): " + match):
        sess.load_session(write(tmp_path / "bad.h5", notes))


# ------------------------------------------------------------------ issue 27 item 8: schema
@pytest.mark.parametrize("field, value, match", [
    ("scores", "abc", r"field 'scores' must be a mapping, got 'abc'"),
    ("spec", "dense", r"field 'spec' must be a mapping"),
    ("elapsed_s", "abc", r"field 'elapsed_s' must be a number, got 'abc'"),
    ("elapsed_s", -1.0, r"field 'elapsed_s' must be a number between 0 and 1e\+09"),
    ("sweep", {"a": 1}, r"field 'sweep' must be text"),
    ("dataset", {"name": "x", "path": "/x", "options": [1, 2]}, r"field 'dataset.options' must be a mapping"),
    ("dataset", {"name": "x", "path": "relative/x.txt", "options": {}},
     r"field 'dataset.path' must be an absolute path"),
    ("dataset", {"name": "x", "path": "/x", "options": {"read": {"evil": 1}}},
     r"field 'dataset.options.read.evil' is not a reader option"),
    ("dataset", {"name": "x", "path": "/x", "options": {"split": 7}},
     r"field 'dataset.options.split' must be a number"),
    ("state", "running", r"field 'state' must be one of finished, cancelled, diverged"),
    ("step", 2.5, r"field 'step' must be an integer"),
    ("total", 0, r"field 'total' must be between 1"),
    ("job_name", "", r"field 'job_name' is empty"),
    ("job_name", "x" * 4_000_000, r"field 'job_name' is 4,000,000 characters long \(at most 1,000\)"),
    ("reason", "a\x01b", r"field 'reason' holds control characters"),
    ("spec", {"model_type": "evil"}, r"field 'spec.model_type' must be one of "),
    ("spec", {"model_type": "standard", "tol": -1.0}, r"field 'spec.tol' must be >= 0"),
    ("spec", {"n": "5"}, r"field 'spec.n' must be an integer"),
    ("scores", {"nll": "low"}, r"field 'scores.nll' must be a number"),
    ("app_session", 99, r"field .app_session. is 99: the session was written by a newer DenseHMM Studio"),
    ("extra_field", 1, r"field 'extra_field' is not a session field"),
])
def test_a_bad_field_is_named_and_nothing_is_returned(tmp_path, field, value, match):
    notes = good_notes(3)
    notes[1][field] = value
    path = write(tmp_path / "bad.h5", notes)
    with pytest.raises(sess.SessionError, match=r"bad\.h5: job 2 \('job1'\): " + match) as ei:
        sess.load_session(path)
    assert "\n" not in str(ei.value) and len(str(ei.value)) < 400


def test_unknown_form_settings_are_dropped_and_missing_ones_defaulted(tmp_path):
    notes = good_notes(1)
    notes[0]["spec"] = {"kind": "standard", "n": 4, "from_a_newer_app": 3}
    session = sess.load_session(write(tmp_path / "s.h5", notes))
    from app.modelspec import ModelSpec
    assert session.jobs[0].spec == ModelSpec.make(model_type="standard", n=4).to_dict()


def test_a_plain_model_in_a_session_file_is_a_finished_job(tmp_path):
    path = write(tmp_path / "s.h5", good_notes(1) + [{}])
    plain = sess.load_session(path).jobs[1]
    assert (plain.name, plain.state, plain.elapsed_s, plain.dataset) == ("job1", "finished", None, None)


# ------------------------------------------------------------------ issue 25: hostile session files
def test_absurd_job_counts_are_refused_before_any_model_is_read(tmp_path, monkeypatch):
    path = write(tmp_path / "s.h5", good_notes(4))
    monkeypatch.setattr(sess, "MAX_JOBS", 3)
    monkeypatch.setattr(modelfile, "load_models", lambda *a, **k: pytest.fail("a model was read"))
    monkeypatch.setattr(modelfile, "read_model_infos", lambda *a, **k: pytest.fail("a model was read"))
    with pytest.raises(sess.SessionError, match=r"holds 4 jobs, more than a session may hold \(3\): refused"):
        sess.load_session(path)


def test_the_memory_all_jobs_need_together_is_checked_before_reading(tmp_path, monkeypatch):
    # each job alone fits the budget (the core checks one model at a time); the three together do not
    models = [fitted_model("standard", n=4, m=2000, steps=3, seed=i) for i in range(3)]
    path = write(tmp_path / "s.h5", good_notes(3), models)
    one = sess._needed_bytes({"n_states": 4, "n_symbols": 2000})
    assert one == 8 * (4 + 16 + 8000) + 2000 * modelfile.HISTORY_VALUE_BYTES   # the arrays and the vocabulary
    monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", str(2 * one))
    monkeypatch.setattr(modelfile, "load_models", lambda *a, **k: pytest.fail("a model was read"))
    with pytest.raises(sess.SessionError, match=r"too large: its 3 jobs need 0.\d+ MB|too large: its 3 jobs need"):
        sess.load_session(path)


def _swap(path, key, make):
    with h5py.File(path, "a") as f:
        del f[key]
        make(f, key)


def test_links_external_storage_and_virtual_datasets_are_refused(tmp_path):
    other = write(tmp_path / "other.h5", good_notes(1))
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"TOPSECRET" * 10)
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["a"] = np.full(4, 0.25)
    layout = h5py.VirtualLayout(shape=(3,), dtype="f8")
    layout[:] = h5py.VirtualSource(str(src), "a", shape=(4,))[:3]
    cases = [
        ("models/job1/notes", lambda f, k: f.__setitem__(k, h5py.ExternalLink(other, "/models/job0/notes")),
         "'notes' is an external link"),
        ("models/job1", lambda f, k: f.__setitem__(k, h5py.SoftLink("/models/job0")), "'job1' is a soft link"),
        ("models/job2/startprob", lambda f, k: f.create_dataset(k, shape=(3,), dtype="<f8",
                                                                external=[(str(secret), 0, 24)]),
         "keeps its data in external files"),
        ("models/job2/startprob", lambda f, k: f.create_virtual_dataset(k, layout), "is a virtual dataset"),
    ]
    for i, (key, make, match) in enumerate(cases):
        path = write(tmp_path / f"h{i}.h5", good_notes(3))
        _swap(path, key, make)
        with pytest.raises(ModelFileError, match=match) as ei:
            sess.load_session(path)
        assert "TOPSECRET" not in str(ei.value) and "\n" not in str(ei.value)


def test_a_fifo_in_place_of_the_session_or_of_its_data_is_never_opened(tmp_path):
    fifo = tmp_path / "s.h5"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(ModelFileError, match="not a regular file"):
        sess.load_session(str(fifo))
    # a stored data path is only checked and returned (the window asks before reading it)
    data_fifo = tmp_path / "data.txt"
    os.mkfifo(data_fifo)
    session = sess.load_session(write(tmp_path / "ok.h5", good_notes(2, str(data_fifo))))
    assert session.data_refs()[0].path == str(data_fifo)
    assert time.monotonic() - t0 < 30


def test_cancel_is_honoured_between_batches_and_progress_is_reported(tmp_path, monkeypatch):
    import threading
    monkeypatch.setattr(sess, "BATCH", 2)
    path = write(tmp_path / "s.h5", good_notes(6))
    seen = []
    sess.load_session(path, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 6) and seen[-1] == (6, 6) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    cancel = threading.Event()

    def report(done, total):
        if done >= 2:
            cancel.set()
    with pytest.raises(sess.SessionCancelled):
        sess.load_session(path, progress=report, cancel=cancel)


def test_a_session_is_read_by_one_process_in_parts_and_cancel_stops_it(tmp_path, monkeypatch):
    """Issue 24.11: one forked read for the whole session (it was one for the names, one for the
    summaries and one per batch); the reading process is stopped when the user cancels."""
    import threading

    from densehmm_core.modelfile import safety
    monkeypatch.setattr(sess, "BATCH", 2)
    path = write(tmp_path / "s.h5", good_notes(7))
    pids = []
    real = safety._spawn
    monkeypatch.setattr(safety, "_spawn", lambda *a: (lambda got: pids.append(got[0]) or got)(real(*a)))
    seen = []
    session = sess.load_session(path, progress=lambda done, total: seen.append((done, total)))
    assert len(pids) == 1 and seen == [(0, 7), (2, 7), (4, 7), (6, 7), (7, 7)]
    assert [j.name for j in session.jobs] == [n["job_name"] for n in good_notes(7)]
    cancel = threading.Event()
    with pytest.raises(sess.SessionCancelled):
        sess.load_session(path, progress=lambda done, total: done >= 2 and cancel.set(), cancel=cancel)
    with pytest.raises(ProcessLookupError):        # stopped and reaped, not left reading
        os.kill(pids[-1], 0)


def test_saving_shortens_what_reading_would_refuse(tmp_path):
    js = jobs(1)
    js[0].name = "n" * 5000 + "\x01"
    js[0].reason = "r" * 20_000
    path = str(tmp_path / "s.h5")
    sess.save_session(path, [("job0", js[0], None, None, {})])
    sj = sess.load_session(path).jobs[0]
    assert len(sj.name) == sess.MAX_NAME and len(sj.reason) == sess.MAX_TEXT and sj.name.startswith("nnn")


# ------------------------------------------------------------------ fuzz
FUZZ = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
import numpy as np
import h5py
from densehmm_core import modelfile
from app.session import SessionError, load_session
from app.window.sessions import restored_jobs
good, out, cases = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(2025)
original = open(good, "rb").read()
with h5py.File(good, "r") as f:
    groups = list(f["models"].keys())
    fields = sorted(set(k for g in groups for k in f["models"][g]["notes"].attrs.keys()) - {"json_keys"})
HOSTILE = [None, True, -1, 0, 2 ** 70, 1e308, float("nan"), float("inf"), "", "x" * 200_000, "\x00",
           "../../etc/passwd", [], [1, "a"], {}, {"a": {"b": [None]}}, {"path": "relative"},
           {"name": "d", "path": "/x", "options": {"read": {"observe": ["words"]}}},
           {"name": "d", "path": "/x", "options": {"split": "half"}}, "finished", "sweep 9999999999999999999"]
load_session(good)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kinds = {"ok": 0, "SessionError": 0, "ModelFileError": 0}
slowest = 0.0
for i in range(cases):
    if i % 2 == 0:      # the bytes of the file
        data = bytearray(original)
        how = rng.integers(0, 4)
        if how == 0:
            for _ in range(rng.integers(1, 9)):
                data[rng.integers(0, len(data))] = rng.integers(0, 256)
        elif how == 1:
            data = data[: rng.integers(0, len(data))]
        elif how == 2:
            a = rng.integers(0, len(data)); n = rng.integers(1, 64)
            data[a:a + n] = rng.integers(0, 256, size=len(data[a:a + n]), dtype=np.uint8).tobytes()
        else:
            a = rng.integers(0, len(data)); n = rng.integers(1, 9)
            data[a:a + n] = b"\xff" * len(data[a:a + n])
        with open(out, "wb") as fh:
            fh.write(data)
    else:               # the notes: fields replaced, deleted or added, as JSON or as native attributes
        with open(out, "wb") as fh:
            fh.write(original)
        with h5py.File(out, "a") as f:
            for _ in range(rng.integers(1, 4)):
                notes = f["models"][groups[rng.integers(0, len(groups))]]["notes"]
                key = fields[rng.integers(0, len(fields))] if rng.random() < 0.9 else "unknown_field"
                value = HOSTILE[rng.integers(0, len(HOSTILE))]
                keys = set(json.loads(notes.attrs.get("json_keys", "[]")))
                if rng.random() < 0.15 and key in notes.attrs:
                    del notes.attrs[key]
                elif isinstance(value, (str, int, float)) and not isinstance(value, bool) and rng.random() < 0.5 \
                        and not (isinstance(value, int) and abs(value) >= 2 ** 63) and "\x00" not in str(value):
                    notes.attrs[key] = value
                    keys.discard(key)
                else:
                    notes.attrs[key] = json.dumps(value)
                    keys.add(key)
                notes.attrs["json_keys"] = json.dumps(sorted(keys))
    t0 = time.perf_counter()
    try:
        jobs = restored_jobs(load_session(out))
        assert all(j.model is not None for j in jobs)
        kinds["ok"] += 1
    except (SessionError, modelfile.ModelFileError) as e:
        assert "\n" not in str(e) and len(str(e)) < 2000, repr(str(e))[:3000]
        kinds[type(e).__name__] += 1
    slowest = max(slowest, time.perf_counter() - t0)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
print(kinds["ok"], kinds["SessionError"], kinds["ModelFileError"], round(slowest, 3), grown)
"""


def test_fuzzed_session_files_give_only_clean_errors(tmp_path):
    good = write(tmp_path / "good.h5", good_notes(3), [fitted_model("dense" if i == 2 else "standard", n=3, m=4,
                                                                    l=2, steps=5, seed=i) for i in range(3)])
    cases = 500
    proc = subprocess.run([sys.executable, "-c", FUZZ, good, str(tmp_path / "fuzz.h5"), str(cases)],
                          capture_output=True, text=True, timeout=900, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO), DENSEHMM_PROBE_TIMEOUT="5",
                                   QT_QPA_PLATFORM="offscreen"))
    assert proc.returncode == 0, proc.stderr[-3000:]  # no other exception, no crash
    ok, session_errors, file_errors, slowest, grown_kb = proc.stdout.split()
    assert int(ok) + int(session_errors) + int(file_errors) == cases
    assert int(session_errors) > cases // 10 and int(file_errors) > cases // 10, proc.stdout
    assert float(slowest) < 30.0          # no hang (a hanging probe is stopped after 5 s)
    assert int(grown_kb) < 400_000         # bounded memory (max RSS grew by < 400 MB)


def test_a_data_path_the_reader_refuses_does_not_lose_the_session(tmp_path):
    """A data file whose name holds a carriage return (legal on Linux): the session used to store the path
    as it is, and opening it refused the whole session ("holds control characters"). Now the job is kept
    without its data path (its data are not read again); a plain path is kept."""
    js = jobs(2)
    js[0].dataset = _DS("/data/bad\rname.txt")
    path = str(tmp_path / "s.h5")
    sess.save_session(path, [(f"job{i}", j, None, None, {}) for i, j in enumerate(js)])
    session = sess.load_session(path)
    assert [sj.dataset.path for sj in session.jobs] == [None, "/data/words.txt"]
    assert session.jobs[0].dataset.name == "words.txt"


def test_the_demo_is_marked_and_a_path_less_data_set_that_is_not_it_is_not_available(tmp_path):
    """Review rev24 item 1: the demo's data set is written with ``demo: true``; a refused path is written
    without a path and ``demo: false`` (its data not available); a demo mark on a path is refused."""
    js = jobs(2)
    js[0].dataset = _DS(None, name="Demo: synthetic HMM (n = m = 5)")
    js[0].dataset.is_demo = True
    js[1].dataset = _DS("/data/bad\rname.txt")
    path = str(tmp_path / "s.h5")
    sess.save_session(path, [(f"job{i}", j, None, None, {}) for i, j in enumerate(js)])
    refs = [sj.dataset for sj in sess.load_session(path).jobs]
    assert [(r.path, r.demo, r.available) for r in refs] == [(None, True, True), (None, False, False)]
    assert refs[0].key != refs[1].key
    with pytest.raises(ValueError, match=r"dataset.demo' is true for a data set with a path"):
        sess.validate_notes({sess.SESSION_KEY: 3, "job_name": "j",
                             "dataset": {"name": "x", "path": "/x", "options": {}, "demo": True}})

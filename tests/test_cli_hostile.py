"""The command line against hostile conditions (issue 13, items 1, 4, 8, 9, 10, 11): a full disk,
concurrent writers, read-only outputs, absurd sizes, escape sequences in symbols, SIGTERM."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from densehmm_core.modelfile import list_models, read_model_info, save_model
from densehmm_core.standard import StandardHMM

REPO = pathlib.Path(__file__).resolve().parent.parent


def env():
    e = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    e.pop("COLUMNS", None)
    return e


def cli(args, cwd, **kw):
    return subprocess.Popen([sys.executable, "-m", "densehmm_core", *map(str, args)], cwd=cwd, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def run(args, cwd, timeout=180):
    p = cli(args, cwd)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def one_line_error(rc, err, phrase):
    lines = [ln for ln in err.splitlines() if ln.strip() and "warning:" not in ln and not ln.startswith("training ")]
    assert rc == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert phrase in lines[0], lines[0]


def small_model(vocab=None, seed=0):
    rng = np.random.default_rng(seed)
    m = StandardHMM(2, n_symbols=3, seed=seed)
    m.startprob_ = rng.dirichlet(np.ones(2))
    m.transmat_ = rng.dirichlet(np.ones(2), 2)
    m.emissionprob_ = rng.dirichlet(np.ones(3), 2)
    m.vocabulary = vocab
    return m


def in_process(argv, capsys, monkeypatch, cwd):
    from densehmm_core.cli import main
    monkeypatch.chdir(cwd)
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


# ------------------------------------------------------------------ item 1: full disk
def test_full_disk_checkpoints_warn_once_and_the_final_save_fails_cleanly(full_disk):
    mnt = full_disk(free_bytes=0, size_kb=256)
    os.unlink(mnt / ".filler")
    out = mnt / "D.h5"
    save_model(out, small_model(), "old")            # the previous file, to be kept
    before = out.read_bytes()
    st = os.statvfs(mnt)
    with open(mnt / ".filler", "wb") as fh:           # leave a few KB: not enough for a model
        fh.write(b"\0" * max(0, st.f_bavail * st.f_frsize - 6000))
    rc, stdout, err = run(["train", "demo", "--model", "standard", "--states", "3", "--iter", "150",
                           "--tol=-1e300", "--checkpoint-every", "0.05", "--out", out, "--name", "n3"], mnt)
    assert rc == 2, err                               # not a segfault (139), not an internal error (1)
    assert err.count("warning: checkpoint failed") == 1, err
    one_line_error(rc, err, "the disk is full")
    assert out.read_bytes() == before and list_models(out) == ["old"]
    assert sorted(os.listdir(mnt)) == [".filler", "D.h5"]  # no temporary or lock file left


# ------------------------------------------------------------------ item 4: concurrent writers
def test_concurrent_trainings_into_one_file_keep_every_model(tmp_path):
    names = ["A", "B", "C"]
    procs = [cli(["train", "demo", "--model", "standard", "--states", "2", "--iter", "3", "--quiet",
                  "--out", "cw.h5", "--name", nm], tmp_path) for nm in names]
    results = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], results
    assert sorted(list_models(tmp_path / "cw.h5")) == names
    assert sorted(os.listdir(tmp_path)) == ["cw.h5"]


# ------------------------------------------------------------------ item 9: read-only output
def test_a_read_only_output_is_refused_before_training(tmp_path):
    out = tmp_path / "ro.h5"
    save_model(out, small_model(), "old")
    os.chmod(out, 0o444)
    before = out.read_bytes()
    t0 = time.monotonic()
    rc, _, err = run(["train", "demo", "--model", "standard", "--states", "3", "--iter", "2000",
                      "--tol=-1e300", "--out", out, "--name", "new"], tmp_path)
    one_line_error(rc, err, "is read-only: not replaced")
    assert "training" not in err and time.monotonic() - t0 < 60
    assert out.read_bytes() == before


# ------------------------------------------------------------------ item 8: user errors, not internal ones
@pytest.mark.parametrize("argv, phrase", [
    (["train", "demo", "--model", "standard", "--states", "3", "--seed", "-1"], "invalid seed -1"),
    (["train", "demo", "--model", "standard", "--states", str(10 ** 30)], "too large"),
    (["train", "demo", "--model", "standard", "--states", "1000000"], "too large: a standard model with n=1000000"),
    (["train", "demo", "--states", "3", "--dim", str(10 ** 9)], "too large"),
    (["train", "demo", "--states", "3", "--dim", "2", "--lr", "inf"], "--lr must be > 0 and finite"),
    (["train", "demo", "--model", "standard", "--states", "3", "--preset", "nope"], "unknown preset 'nope'"),
    (["train", "demo", "--model", "standard", "--states", "3", "--split", "1.5"], "--split must lie in [0, 1)"),
    (["train", "demo", "--model", "standard", "--states", "3", "--split", "-0.1"], "--split must lie in [0, 1)"),
    (["train", "demo", "--model", "standard", "--states", "3", "--split", "nan"], "--split must lie in [0, 1)"),
    (["sample", "MODEL", "-n", str(10 ** 10)], "too large: sampling 10000000000 sequences"),
    (["export", "MODEL", "notes.txt"], "notes.txt: exists and is not a folder"),
    (["info", "BROKEN"], "BROKEN.h5: "),
    (["train", "demo", "--model", "standard", "--states", "2", "--out", "BROKEN"], "BROKEN.h5: "),
    (["info", "INF"], "invalid schema_version attribute (inf)"),
    (["info", "--json", "REF"], "attribute 'ref' has an unsupported type"),
    (["info", "LOOP"], "symbolic link loop"),
    (["train", "LOOP", "--model", "standard", "--states", "2"], "symbolic link loop"),
    # item 6: a FIFO as data is refused, not read forever
    (["train", "FIFO", "--model", "standard", "--states", "2"], "not a regular file"),
    (["evaluate", "MODEL", "FIFO"], "not a regular file"),
    # item 3: a model whose transmat is an external link to a FIFO once hung all these commands
    (["info", "FIFOLINK"], "'transmat' is an external link"),
    (["sample", "FIFOLINK"], "'transmat' is an external link"),
    (["evaluate", "FIFOLINK", "demo"], "'transmat' is an external link"),
    (["decode", "FIFOLINK", "demo"], "'transmat' is an external link"),
    (["export", "FIFOLINK", "csv"], "'transmat' is an external link"),
    (["train", "demo", "--model", "standard", "--states", "2", "--out", "FIFOLINK"], "'transmat' is an external link"),
    (["train", "demo", "--model", "standard", "--states", "2", "--resume", "FIFOLINK", "--out", "new.h5"],
     "'transmat' is an external link"),
])
def test_user_errors_are_one_line_exit_2(tmp_path, capsys, monkeypatch, argv, phrase):
    model = tmp_path / "m.h5"
    save_model(model, small_model(vocab=["a", "b", "c"]), "std")
    (tmp_path / "notes.txt").write_text("mine")
    broken = tmp_path / "BROKEN.h5"
    broken.write_bytes(model.read_bytes()[:3000] + b"\xff\xfe not utf-8 \x00" * 50)
    def add_ref(f):
        f["models/std/metrics"].attrs["ref"] = f["models/std/transmat"].ref
    for name, edit in (("INF", lambda f: f.attrs.__setitem__("schema_version", np.inf)), ("REF", add_ref)):
        p = tmp_path / f"{name}.h5"
        save_model(p, small_model(vocab=["a", "b", "c"]), "std", metrics={"x": 1.0})
        with h5py.File(p, "a") as f:
            edit(f)
    fifo_link = tmp_path / "FIFOLINK.h5"
    save_model(fifo_link, small_model(vocab=[str(i) for i in range(3)]), "std")
    os.mkfifo(tmp_path / "fifo")
    os.mkfifo(tmp_path / "FIFO")
    with h5py.File(fifo_link, "a") as f:
        del f["models/std/transmat"]
        f["models/std/transmat"] = h5py.ExternalLink(str(tmp_path / "fifo"), "/x")
    (tmp_path / "LOOP").symlink_to(tmp_path / "LOOP2")
    (tmp_path / "LOOP2").symlink_to(tmp_path / "LOOP")
    subst = {"MODEL": model, "BROKEN": broken, "INF": tmp_path / "INF.h5", "REF": tmp_path / "REF.h5",
             "FIFOLINK": fifo_link}
    argv = [subst.get(a, a) for a in argv]
    rc, _, err = in_process(argv, capsys, monkeypatch, tmp_path)
    one_line_error(rc, err, phrase)
    if argv[0] == "train":
        assert "training" not in err  # refused before training started
    assert (tmp_path / "notes.txt").read_text() == "mine"


# ------------------------------------------------------------------ item 10: escape sequences
def test_symbols_with_escape_sequences_are_printed_escaped(tmp_path, capsys, monkeypatch):
    path = tmp_path / "esc.h5"
    save_model(path, small_model(vocab=["\x1b[2J", "a\nforged line", "\u202eok"]), "e\x1bvil")
    rc, out, _ = in_process(["info", path], capsys, monkeypatch, tmp_path)
    assert rc == 0 and "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "a\\nforged line" in out and "\\u202eok" in out
    assert not any(line.startswith("forged line") for line in out.splitlines())
    rc, out, _ = in_process(["info", "--json", path], capsys, monkeypatch, tmp_path)
    assert rc == 0 and "\x1b" not in out and "\u202e" not in out
    import json
    assert json.loads(out)["models"][0]["vocabulary"][0] == "\x1b[2J"  # the JSON value itself is exact
    # sample: escaped on a terminal, exact when written to a file or pipe
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    rc, out, _ = in_process(["sample", path, "-n", "3", "--length", "20"], capsys, monkeypatch, tmp_path)
    assert rc == 0 and "\x1b" not in out and len(out.splitlines()) == 3
    rc, out, _ = run(["sample", path, "-n", "3", "--length", "20", "--seed", "1"], tmp_path)
    assert rc == 0 and any(c in out for c in ("\x1b", "\u202e", "forged"))


# ------------------------------------------------------------------ item 11: SIGTERM, info cost
def test_sigterm_saves_what_was_reached(tmp_path):
    p = cli(["train", "demo", "--model", "standard", "--states", "4", "--iter", "1000000", "--tol=-1e300",
             "--out", "t.h5", "--name", "t"], tmp_path)
    deadline = time.monotonic() + 120
    line = ""
    while "training" not in line and time.monotonic() < deadline:
        line = p.stderr.readline()
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    info = read_model_info(tmp_path / "t.h5", "t")
    assert info["metrics"]["stop_reason"] == "cancelled" and info["history_length"] > 2
    assert "saved standard model 't'" in out


def test_info_reads_only_what_it_prints(tmp_path, capsys, monkeypatch):
    path = tmp_path / "many.h5"
    m = small_model(vocab=["a", "b", "c"])
    m.history_ = [{"step": i, "loss": 1.0 / (i + 1)} for i in range(5000)]
    save_model(path, m, "long")
    monkeypatch.setenv("DENSEHMM_NO_PROBE", "1")  # read in this process, to watch what is read
    calls = []
    from densehmm_core.modelfile import read
    real = read._read_history
    monkeypatch.setattr(read, "_read_history", lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    rc, out, _ = in_process(["info", path], capsys, monkeypatch, tmp_path)
    assert rc == 0 and calls == [3] and "5000 history records" in out
    assert "4999" in out and "2500" not in out

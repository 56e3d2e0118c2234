"""Sweep folders under faults (issues 25 and 27): ``kill -9`` at seeded points inside each sweep
writer (the runs CSV, the model files), two sweeps on one folder, and what a resume does after.

Kill points: the child (tests/sweep_fault_child.py) counts the Python events (calls, returns, C
calls) inside the writer over a whole sweep, and each kill point is a seeded draw of one of them:
the process SIGKILLs itself exactly there -- before the temporary file, while it is written, between
the fsync and the rename, after the rename -- wherever the draw falls.  Oracles: the task log
written after each row was saved (rows finished before the kill), the task log written when a
task starts (what a resume computed), and the squares / the model files' SHA-256 in the rows.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from densehmm_core.experiments import runner
from densehmm_core.experiments.runner import FolderBusyError, FolderLock, ResultStore

REPO = Path(__file__).resolve().parents[1]
CHILD = REPO / "tests" / "sweep_fault_child.py"
KILL_POINTS = 50


def _child(kind: str, out: Path, kill_at: int):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, str(CHILD), kind, str(out), str(kill_at)], capture_output=True,
                          text=True, env=env, timeout=300, cwd=str(REPO))


def _log(path: Path) -> list:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _kill_points(kind: str, tmp_path: Path, seed: int) -> list:
    """KILL_POINTS distinct seeded event numbers among the writer's events in a whole sweep."""
    out = tmp_path / "count"
    out.mkdir()
    r = _child(kind, out, 0)
    assert r.returncode == 0, r.stderr
    total = int(r.stdout.split()[-1])
    assert total > 10 * KILL_POINTS
    rng = np.random.default_rng(seed)
    return sorted(int(k) for k in rng.choice(np.arange(1, total + 1), size=KILL_POINTS, replace=False))


def _rows_store(out: Path) -> ResultStore:
    return ResultStore(out / "runs.csv", ["x", "y", "pad"], key=("x",),
                       types={"x": runner.canonical_int, "y": runner.canonical_int})


@pytest.mark.slow
def test_kill_9_while_rows_are_written_loses_and_doubles_no_row(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(CHILD.parent))
    from sweep_fault_child import ROWS_TASKS
    every = set(range(ROWS_TASKS))
    hit_writes = set()
    for k in _kill_points("rows", tmp_path, seed=2527):
        out = tmp_path / f"k{k}"
        out.mkdir()
        r = _child("rows", out, k)
        assert r.returncode == -9, (k, r.stdout, r.stderr)
        finished = _log(out / "done.log")   # rows whose write had returned before the kill
        store = _rows_store(out)             # strict: a torn or doubled row would raise here
        xs = [int(row["x"]) for row in store.rows]
        assert set(finished) <= set(xs), k                    # no finished row lost
        assert len(set(xs) - set(finished)) <= 1, k           # at most the row being written
        assert all(int(row["y"]) == int(row["x"]) ** 2 for row in store.rows)
        hit_writes.add(len(finished))
        # resume (in this process; the killed holder's folder lock is gone with it)
        (out / "ran.log").unlink()
        tasks = [runner.Task(key={"x": i}, func="sweep_fault_child:square", kwargs={"x": i, "out": str(out)})
                 for i in range(ROWS_TASKS)]
        with FolderLock(out):
            rep = runner.run_tasks(tasks, _rows_store(out), ["x"], out=lambda line: None)
        assert sorted(_log(out / "ran.log")) == sorted(every - set(xs)), k   # exactly the missing runs
        assert rep.skipped == len(xs) and rep.done == ROWS_TASKS - len(xs)
        final = _rows_store(out)
        assert sorted(int(row["x"]) for row in final.rows) == sorted(every)
        assert not list(out.glob("*.tmp"))  # a killed writer's temporary file is gone
        # the rows there before the resume are unchanged
        before = {int(row["x"]): row for row in store.rows}
        assert all(before[int(row["x"])] == row for row in final.rows if int(row["x"]) in before)
    assert len(hit_writes) >= 5  # the kill points fell into many different writes of the sweep


@pytest.mark.slow
def test_kill_9_while_models_are_written_leaves_rows_and_models_that_agree(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(CHILD.parent))
    from sweep_fault_child import models_sweep_args, shared_corpus

    from densehmm_core.experiments.comparison import check_model_files, model_file_name, run_comparison
    from densehmm_core.modelfile import read_model_info
    n_runs = 12
    for i, k in enumerate(_kill_points("models", tmp_path, seed=2725)):
        out = tmp_path / f"k{k}"
        out.mkdir()
        r = _child("models", out, k)
        assert r.returncode == -9, (k, r.stdout, r.stderr)
        runs = out / "sweep_runs.csv"
        store = ResultStore(runs, key=("dataset", "settings_id", "n", "l", "rep", "model"))
        # every finished row's model is there and is the file the run wrote (its SHA-256)
        assert check_model_files(out / "models", store) == 0
        before = {tuple(row[c] for c in ("n", "l", "rep", "model")): row for row in store.rows}
        capsys.readouterr()
        assert run_comparison(*models_sweep_args(out), quiet=False, save_models=True, shared=shared_corpus()) == 0
        text = capsys.readouterr().out
        assert f"done: {n_runs - len(before)} run, {len(before)} skipped, 0 failed" in text, k
        final = ResultStore(runs, key=("dataset", "settings_id", "n", "l", "rep", "model"))
        assert len(final.rows) == n_runs and check_model_files(out / "models", final) == 0
        for row in final.rows:
            key = tuple(row[c] for c in ("n", "l", "rep", "model"))
            if key in before:
                assert row == before[key]
        assert len(list((out / "models").glob("*.h5"))) == n_runs
        assert not list(out.glob(".*.tmp")) and not list((out / "models").glob(".*.tmp"))
        if i % 10 == 0:  # the files are models of their rows (read through the model-file reader)
            for row in final.rows:
                info = read_model_info(out / "models" / (model_file_name("sweep", row["n"], row["l"], row["rep"],
                                                                          row["model"]) + ".h5"),
                                       arrays=False, history=False)
                assert int(info["attrs"]["n_states"]) == int(row["n_states"])
                assert info["notes"]["sweep"]["settings_id"] == row["settings_id"]


def test_second_sweep_on_a_folder_is_refused_naming_the_first(tmp_path):
    """Two sweeps started on one folder: the second is refused at once (exit 2, one line naming
    the first: its pid and command), and the first completes with every row once."""
    fasta = REPO / "tests" / "fixtures" / "data" / "pdb_seqres_like.fasta"
    out = tmp_path / "o"
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    first = subprocess.Popen([sys.executable, "-m", "densehmm_core", "sweep", str(fasta), "--grid",
                              "n=2,3,4 l=1 model=standard", "--repeats", "150", "--quick", "--jobs", "1",
                              "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=str(REPO))
    try:
        runs = out / "sweep_runs.csv"
        deadline = time.monotonic() + 120
        while not runs.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        assert first.poll() is None, "the first sweep ended before the second started"
        second = subprocess.run([sys.executable, "-m", "densehmm_core", "sweep", str(fasta), "--grid",
                                 "n=6,7 l=1 model=standard", "--quick", "--out", str(out)],
                                capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)
        assert second.returncode == 2
        err = [ln for ln in second.stderr.splitlines() if ln.strip() and not ln.startswith("note: ")]  # the data's
        assert len(err) == 1 and "is in use by another sweep" in err[0], second.stderr
        assert f"pid {first.pid} " in err[0] and "n=2,3,4" in err[0]
        stdout, stderr = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, stderr
    rows = ResultStore(out / "sweep_runs.csv", key=("dataset", "settings_id", "n", "l", "rep", "model")).rows
    assert sorted((int(r["n"]), int(r["rep"])) for r in rows) == sorted((n, k) for n in (2, 3, 4) for k in range(150))
    # the lock went with the first sweep: the second now runs (and adds its own rows)
    again = subprocess.run([sys.executable, "-m", "densehmm_core", "sweep", str(fasta), "--grid",
                            "n=6,7 l=1 model=standard", "--quick", "--out", str(out)],
                           capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)
    assert again.returncode == 0, again.stderr


def test_folder_lock_in_process_and_after_a_killed_holder(tmp_path):
    with FolderLock(tmp_path, what="first sweep"):
        with pytest.raises(FolderBusyError, match=rf"pid {os.getpid()} on .*: first sweep"):
            with FolderLock(tmp_path, what="second"):
                pass
    with FolderLock(tmp_path, what="third"):  # released: taken again at once
        pass
    # a holder killed with SIGKILL leaves the lock file, but never the lock
    code = ("import os,signal,sys; from densehmm_core.experiments.runner import FolderLock; "
            "l = FolderLock(sys.argv[1], what='doomed').__enter__(); print('held', flush=True); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60)
    assert r.returncode == -9 and "held" in r.stdout
    assert "doomed" in (tmp_path / runner.FOLDER_LOCK).read_text()
    with FolderLock(tmp_path, what="after"):
        pass
    # a link planted in place of the lock file is refused, not followed
    os.unlink(tmp_path / runner.FOLDER_LOCK)
    victim = tmp_path.parent / f"{tmp_path.name}-victim.txt"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / runner.FOLDER_LOCK)
    with pytest.raises(runner.ResultFileError, match="symbolic link"):
        with FolderLock(tmp_path):
            pass
    assert victim.read_text() == "keep"

"""Sweeps on a Dask cluster (issue 17): the same rows as the thread executor, a killed
worker loses no run, a rerun submits only missing runs, a bad scheduler is one line."""
from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from densehmm_core.experiments.cli import parse_grid  # noqa: E402
from densehmm_core.experiments.comparison import ComparisonSettings, run_comparison  # noqa: E402
from densehmm_core.experiments.runner import ResultStore, Task, progress_bar, run_tasks  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FASTA = REPO / "tests" / "fixtures" / "data" / "pdb_seqres_like.fasta"
# the metric columns a run writes (times and host-dependent columns excluded)
METRICS = ("status", "n_states", "n_symbols", "n_parameters", "data_seed", "model_seed", "sample_seed",
           "mad", "mad_sampled", "mad_paper", "test_nll", "test_paper_nll", "train_nll",
           "test_ll", "train_ll", "iterations", "stop_reason")


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _by_key(rows):
    return {(r["n"], r["l"], r["rep"], r["model"]): r for r in rows}


# ------------------------------------------------------------------ tasks run by the workers
def _slow_square(x, marker_dir, kill_once=None, shared=None):
    """Sleeps a little, records that it ran, and (once) kills its own worker process."""
    marker_dir = Path(marker_dir)
    (marker_dir / f"ran-{x}-{os.getpid()}-{time.monotonic_ns()}").touch()
    if kill_once is not None and x == kill_once:
        flag = marker_dir / "killed"
        if not flag.exists():
            flag.touch()
            os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.3)
    offset = 0 if shared is None else int(shared["offset"])
    return [{"x": x, "y": x * x + offset}]


def _tasks(n, marker_dir, kill_once=None):
    return [Task(key={"x": i}, func=f"{__name__}:_slow_square",
                 kwargs={"x": i, "marker_dir": str(marker_dir), "kill_once": kill_once},
                 label=f"x={i}") for i in range(n)]


# ------------------------------------------------------------------ grid parsing
def test_parse_grid():
    grid, models = parse_grid("n=3,5 l=1,2 model=dense-em,standard")
    assert grid == ((3, 1), (3, 2), (5, 1), (5, 2))
    assert models == ("dense-em", "standard")
    grid, models = parse_grid("n=10 l=4")
    assert grid == ((10, 4),) and models == ("dense-em", "dense-cooc", "standard", "standard-fair")
    for bad, why in [("n=3", "l=... is missing"), ("n=3 l=x", "positive integers"),
                     ("n=3 l=1 model=hmm", "unknown model"), ("n=3 l=1 q=2", "unknown name"),
                     ("n=0 l=1", ">= 1"), ("n=3 n=4 l=1", "twice"), ("n3 l=1", "NAME=VALUES")]:
        with pytest.raises(ValueError, match=why):
            parse_grid(bad)
    # a model without an l of its own: a grid without l takes the given one, and l= (or dim=) still wins
    from densehmm_core.grid import parse_grid as core_parse
    assert core_parse("n=3,5", default_l=7) == (((3, 7), (5, 7)), None)
    assert core_parse("n=3 dim=2", default_l=7)[0] == ((3, 2),) == core_parse("n=3;l=2", default_l=7)[0]


def test_progress_bar():
    assert progress_bar(0, 4, width=8) == "[--------]"
    assert progress_bar(2, 4, width=8) == "[####----]"
    assert progress_bar(4, 4, width=8) == "[########]"


# ------------------------------------------------------------------ runner on Dask
def test_dask_worker_killed_mid_sweep_loses_no_run_and_resume_submits_only_missing(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    store_path = tmp_path / "runs.csv"
    lines = []
    # a first, "interrupted" sweep finished tasks 0 and 1 only
    ResultStore(store_path, ["x", "y"]).add([{"x": 0, "y": 0}, {"x": 1, "y": 1}])
    rep = run_tasks(_tasks(6, markers, kill_once=3), ResultStore(store_path), ["x"], jobs=2,
                    executor="dask", out=lines.append)
    assert rep.skipped == 2 and rep.done == 4 and not rep.failed, lines
    assert sorted((int(r["x"]), int(r["y"])) for r in _rows(store_path)) == [(i, i * i) for i in range(6)]
    assert (markers / "killed").exists()  # the worker running task 3 really died
    ran = sorted(int(p.name.split("-")[1]) for p in markers.glob("ran-*"))
    assert 0 not in ran and 1 not in ran  # finished runs were not submitted again
    assert ran.count(3) == 2  # the killed task ran again, on another worker
    assert any(line.startswith("[#") and " 4/4 " in line for line in lines)  # the sweep's progress bar
    # a rerun has nothing to do
    rep2 = run_tasks(_tasks(6, markers), ResultStore(store_path), ["x"], jobs=2, executor="dask",
                     out=lines.append)
    assert rep2.skipped == 6 and rep2.done == 0


def test_dask_shared_object_reaches_every_task(tmp_path):
    markers = tmp_path / "m"
    markers.mkdir()
    store = ResultStore(tmp_path / "runs.csv", ["x", "y"])
    rep = run_tasks(_tasks(4, markers), store, ["x"], jobs=2, executor="dask",
                    shared={"offset": 100}, out=lambda s: None)
    assert rep.done == 4
    assert sorted(int(r["y"]) for r in store.rows) == [100 + i * i for i in range(4)]


# ------------------------------------------------------------------ comparison on Dask vs threads
def test_quick_sweep_on_dask_gives_the_thread_executors_numbers(tmp_path):
    kw = dict(grid=((3, 1), (3, 2)), models=("standard", "standard-fair"), repeats=1)
    s = ComparisonSettings.quick("synthetic", **kw)
    assert run_comparison(s, tmp_path / "thread", jobs=2, executor="thread", quiet=True) == 0
    assert run_comparison(s, tmp_path / "dask", jobs=2, executor="dask", quiet=True) == 0
    a = _by_key(_rows(tmp_path / "thread" / "synthetic_runs.csv"))
    b = _by_key(_rows(tmp_path / "dask" / "synthetic_runs.csv"))
    assert set(a) == set(b) and len(a) == 4
    for key in a:
        assert {c: a[key][c] for c in METRICS} == {c: b[key][c] for c in METRICS}, key


def _cli(*args, env_extra=None, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "densehmm_core", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=str(REPO))


def test_cli_sweep_on_a_data_file_thread_and_dask_agree_and_resume(tmp_path):
    grid = "n=2,3 l=1 model=standard,standard-fair"
    common = ["sweep", str(FASTA), "--grid", grid, "--repeats", "2", "--quick", "--jobs", "2"]
    r1 = _cli(*common, "--out", str(tmp_path / "t"), "--executor", "thread")
    assert r1.returncode == 0, r1.stderr
    r2 = _cli(*common, "--out", str(tmp_path / "d"), "--executor", "dask", "--save-models")
    assert r2.returncode == 0, r2.stderr
    a = _by_key(_rows(tmp_path / "t" / "sweep_runs.csv"))
    b = _by_key(_rows(tmp_path / "d" / "sweep_runs.csv"))
    assert len(a) == 2 * 2 * 2 and set(a) == set(b)
    for key in a:
        assert {c: a[key][c] for c in METRICS} == {c: b[key][c] for c in METRICS}, key
    for name in ("sweep_summary.csv", "sweep_tables.md", "sweep_nll.png"):
        assert (tmp_path / "d" / name).is_file()
    assert len(list((tmp_path / "d" / "models").glob("*.h5"))) == 8
    # a rerun of the same command submits nothing
    r3 = _cli(*common, "--out", str(tmp_path / "d"), "--executor", "dask")
    assert r3.returncode == 0 and "nothing to do: all 8 tasks are finished" in r3.stdout


def test_cli_bad_scheduler_address_is_one_line_exit_2(tmp_path):
    r = _cli("sweep", str(FASTA), "--grid", "n=2 l=1 model=standard", "--out", str(tmp_path / "o"),
             "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9", env_extra={"DENSEHMM_DASK_TIMEOUT": "2"})
    assert r.returncode == 2
    err = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("note: ")]   # the data's notes
    assert len(err) == 1 and "cannot connect to the Dask scheduler at tcp://127.0.0.1:9" in err[0], r.stderr
    r = _cli("sweep", str(FASTA), "--grid", "n=2 l=x", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "positive integers" in r.stderr


def test_cli_ctrl_c_cancels_the_dask_sweep_and_a_rerun_resumes(tmp_path):
    out = tmp_path / "o"
    args = [sys.executable, "-m", "densehmm_core", "sweep", str(FASTA), "--grid", "n=2,3 l=1 model=standard",
            "--repeats", "40", "--quick", "--jobs", "2", "--executor", "dask", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    # the child must get Python's Ctrl-C handler even when the tests run in a background job, where
    # SIGINT is inherited as "ignored" (then Python installs no handler and the sweep ends normally)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    runs = out / "sweep_runs.csv"
    deadline = time.monotonic() + 120
    while not runs.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert "interrupted" in stdout
    done = len(_rows(runs))
    assert 1 <= done < 80
    r = _cli(*args[3:])
    assert r.returncode == 0, r.stderr
    assert f"resuming: {done} of 80 tasks already in" in r.stdout
    assert len(_rows(runs)) == 80


# ------------------------------------------------------------------ TensorFlow preloaded in the forkserver
def test_quick_grid_with_tensorflow_fits_on_dask_gives_the_thread_executors_numbers(tmp_path):
    """The quick grid (dense-em, DenseHMM-direct, dense-direct-gt, standard, standard-fair): the
    local cluster's workers are forked from a forkserver that imported TensorFlow; every metric of
    every run is the thread executor's, to the last digit."""
    common = ["reproduce", "synthetic", "--quick", "--jobs", "2"]
    r1 = _cli(*common, "--out", str(tmp_path / "t"), "--executor", "thread")
    assert r1.returncode == 0, r1.stderr
    r2 = _cli(*common, "--out", str(tmp_path / "d"), "--executor", "dask")
    assert r2.returncode == 0, r2.stderr
    a = _by_key(_rows(tmp_path / "t" / "synthetic_runs.csv"))
    b = _by_key(_rows(tmp_path / "d" / "synthetic_runs.csv"))
    assert len(a) == 10 and set(a) == set(b)
    assert {k[3] for k in a} == {"dense-em", "dense-direct", "dense-direct-gt", "standard", "standard-fair"}
    for key in a:
        assert {c: a[key][c] for c in METRICS} == {c: b[key][c] for c in METRICS}, key


_FORKSERVER_CHECK = r"""
import json, os, sys
from multiprocessing import forkserver, get_context
from densehmm_core.experiments.dask_executor import PRELOAD_TF, start_forkserver
from densehmm_core.experiments.runner import _worker_env

def child(q):
    import tensorflow as tf   # already there: no import
    q.put({"preloaded": PRELOAD_TF in sys.modules, "threads_at_start": len(os.listdir("/proc/self/task")),
           "op": float(tf.reduce_sum(tf.constant([1.0, 2.0]))), "blas": os.environ.get("OPENBLAS_NUM_THREADS")})

if __name__ == "__main__":
    assert start_forkserver(_worker_env(2, True), preload_tf=True)
    ctx = get_context("forkserver")
    q = ctx.Queue()
    results = []
    for _ in range(2):
        p = ctx.Process(target=child, args=(q,))
        p.start()                      # returns once the forkserver has forked it (after its imports)
        results.append(q.get(timeout=120))
        p.join(60)
        results[-1]["exitcode"] = p.exitcode
    pid = forkserver._forkserver._forkserver_pid   # private: this test only
    with open(f"/proc/{pid}/maps") as fh:
        tf_mapped = "libtensorflow" in fh.read()
    print(json.dumps({"children": results, "server_threads": len(os.listdir(f"/proc/{pid}/task")),
                      "server_has_tf": tf_mapped, "parent_has_tf": "tensorflow" in sys.modules}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_forkserver_holds_tensorflow_and_forks_from_one_thread(tmp_path):
    """start_forkserver(preload_tf=True): the forkserver imports TensorFlow (this process does not),
    is a single thread when it forks (one BLAS/OpenMP thread, Dask's pre-spawn environment, as the
    nannies gave it before), and its children have TensorFlow without importing it and run an
    operation."""
    import json
    script = tmp_path / "check.py"
    script.write_text(_FORKSERVER_CHECK)
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(k, None)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["server_has_tf"] and not got["parent_has_tf"]
    assert got["server_threads"] == 1
    for c in got["children"]:
        assert c == {"preloaded": True, "threads_at_start": 1, "op": 3.0, "blas": "1", "exitcode": 0}


def test_a_sweep_without_cooccurrence_fits_does_not_preload_tensorflow(tmp_path, monkeypatch):
    """dense-em (EM, numpy) and standard models: the local cluster's forkserver is not asked to
    import TensorFlow, which the workers would wait seconds for (recorded around the real
    start_forkserver, which runs; the quick grid's co-occurrence fits preload it:
    test_the_forkserver_holds_tensorflow_and_forks_from_one_thread)."""
    from densehmm_core.experiments import dask_executor
    asked = []
    real = dask_executor.start_forkserver

    def spy(env=None, preload_tf=False):
        asked.append(preload_tf)
        return real(env, preload_tf)

    monkeypatch.setattr(dask_executor, "start_forkserver", spy)
    s = ComparisonSettings.quick("synthetic", grid=((3, 1),), models=("standard", "dense-em"), repeats=1)
    assert run_comparison(s, tmp_path / "em", jobs=2, executor="dask", quiet=True) == 0
    assert len(_rows(tmp_path / "em" / "synthetic_runs.csv")) == 2
    assert asked and not any(asked)


def _raising(x, marker_dir, shared=None):
    (Path(marker_dir) / f"ran-{x}-{time.monotonic_ns()}").touch()
    raise RuntimeError("a flaky node")


def test_dask_task_that_raises_runs_once_and_is_recorded_failed(tmp_path):
    """DISTRIBUTED.md, "Faults": a task that raises is not retried within the sweep (the worker catches
    its exception); it is recorded in the failed store, and the sweep goes on."""
    markers = tmp_path / "m"
    markers.mkdir()
    tasks = _tasks(2, markers) + [Task(key={"x": 9}, func=f"{__name__}:_raising",
                                       kwargs={"x": 9, "marker_dir": str(markers)}, label="x=9")]
    failed = ResultStore(tmp_path / "failed.csv", ["x", "status", "error"])
    rep = run_tasks(tasks, ResultStore(tmp_path / "runs.csv", ["x", "y"]), ["x"], jobs=1, executor="dask",
                    failed_store=failed, out=lambda s: None)
    assert rep.done == 2 and len(rep.failed) == 1
    assert len(list(markers.glob("ran-9-*"))) == 1
    assert [(r["x"], r["status"]) for r in _rows(tmp_path / "failed.csv")] == [("9", "failed")]
    assert "a flaky node" in _rows(tmp_path / "failed.csv")[0]["error"]

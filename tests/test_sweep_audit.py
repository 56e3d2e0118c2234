"""Fixes after the sweep/reproduce audit (auditD): each test failed before its fix."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from posruns import WORDS, read_rows, reproduce  # noqa: E402


def _pos(out, *options):
    return ["reproduce", "pos-induction", "--data", str(WORDS), "--out", str(out), "--quick", "--seeds", "1",
            "--iterations", "2", *options]


def test_pos_resume_never_reuses_runs_of_another_sparsity(tmp_path, capsys):
    """sigma=3 "-ps" runs, then a run without "-ps" rows, then "-ps" with the default sigma: the third
    must not take the sigma=3 row as its own (it used to print "nothing to do")."""
    pytest.importorskip("densehmm_core.dense_tf")
    out = tmp_path / "pos"
    assert reproduce(_pos(out, "--models", "baum-welch-spectral-ps", "--sparsity", "3")) == 0
    assert reproduce(_pos(out, "--models", "baum-welch")) == 0
    capsys.readouterr()
    assert reproduce(_pos(out, "--models", "baum-welch-spectral-ps")) == 2
    captured = capsys.readouterr()
    assert "nothing to do" not in captured.out
    assert "holds runs made with other settings: sparsity (3.0 recorded, 1.0 now)" in captured.err
    # the same sigma resumes (nothing to do), and both rows are kept
    assert reproduce(_pos(out, "--models", "baum-welch-spectral-ps,baum-welch", "--sparsity", "3")) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert sorted(r["model"] for r in read_rows(out / "pos_induction_runs.csv")) == [
        "baum-welch", "baum-welch-spectral-ps"]


def test_sweep_figure_draws_every_model(tmp_path, monkeypatch):
    """A sweep's dense-cooc rows are drawn (they used to be left out: no label), as is a model no list
    knows (by its name); every model the sweep and the reproductions accept has a label."""
    from densehmm_core.experiments import comparison, figures
    for m in comparison.MODELS + comparison.EXTRA_MODELS + comparison.SWEEP_MODELS:
        assert m in comparison.MODEL_LABEL
    drawn = {}

    def fake_save(fig, path):
        drawn["labels"] = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        return path
    monkeypatch.setattr(figures, "_save", fake_save)
    rows = [{"n": "3", "l": "1", "model": m, "mad": str(0.01 * (rep + 1))}
            for m in ("dense-cooc", "standard", "mystery") for rep in range(3)]
    figures.comparison_figure(rows, "mad", tmp_path / "x.png", title="t")
    assert drawn["labels"] == [comparison.MODEL_LABEL["dense-cooc"], "standard HMM", "mystery"]


@pytest.mark.parametrize("k", ["-3", "0", "1"])
def test_max_sequences_below_two_is_one_line_exit_2(tmp_path, capsys, k):
    """sweep and reproduce refuse --max-sequences < 2 up front (-3 used to read as len - 3 sequences,
    0 and 1 failed every run with a traceback in errors.log)."""
    from densehmm_core.cli import main
    from densehmm_core.experiments.cli import MAX_SEQUENCES_ERROR
    fasta = WORDS.parent / "pdb_seqres_like.fasta"
    out = tmp_path / "sw"
    assert main(["sweep", str(fasta), "--grid", "n=2 l=1 model=standard", "--repeats", "1", "--quick",
                 "--jobs", "1", "--out", str(out), "--max-sequences", k]) == 2
    cap = capsys.readouterr()
    assert [ln for ln in cap.err.splitlines() if ln.strip()] == [
        "densehmm sweep: error: --max-sequences must be >= 2 (the runs split the sequences into training and test "
        "sets)"]
    assert not out.exists()
    out2 = tmp_path / "rp"
    assert reproduce(["reproduce", "protein", "--data", str(fasta), "--quick", "--jobs", "1", "--out", str(out2),
                      "--max-sequences", k]) == 2
    cap = capsys.readouterr()
    assert cap.err.strip() == "densehmm reproduce: error: " + MAX_SEQUENCES_ERROR and not cap.out.strip()
    assert not out2.exists()


def test_reproduce_user_errors_go_to_stderr(tmp_path, capsys):
    """``reproduce``'s user errors are one line on stderr, exit 2 (they were printed on stdout)."""
    cases = [["reproduce", "pos-induction", "--data", str(WORDS), "--out", str(tmp_path / "p"), "--l2", "-1"],
             ["reproduce", "pos-induction", "--data", str(tmp_path / "nope.conllu"), "--out", str(tmp_path / "p")],
             ["reproduce", "protein", "--quick", "--out", str(tmp_path / "r"), "--jobs", "0"],
             ["reproduce", "factorization", "--quick", "--out", str(tmp_path / "f"), "--grid", "3-1"]]
    for argv in cases:
        assert reproduce(argv) == 2
        cap = capsys.readouterr()
        assert cap.out == "" and len(cap.err.splitlines()) == 1, argv
        assert cap.err.startswith("densehmm reproduce: error: "), argv


def test_sweep_and_reproduce_user_errors_have_one_format(tmp_path, capsys):
    """The experiments' user errors are raised and printed by the command line's main, in its one format
    (``densehmm COMMAND: error: ...``): the same mistake reads the same in sweep and reproduce (reproduce
    printed a bare ``error:``), and the library raises instead of printing."""
    from densehmm_core.cli import main
    from densehmm_core.commandline import UserError
    from densehmm_core.experiments.comparison import ComparisonSettings, run_comparison
    fasta = WORDS.parent / "pdb_seqres_like.fasta"
    common = ["--quick", "--jobs", "1", "--scheduler", "tcp://127.0.0.1:1"]
    assert main(["sweep", str(fasta), "--grid", "n=2 l=1", "--out", str(tmp_path / "s"), *common]) == 2
    sweep_err = [ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("note: ")]  # the data's
    assert main(["reproduce", "protein", "--data", str(fasta), "--out", str(tmp_path / "r"), *common]) == 2
    reproduce_err = capsys.readouterr().err.strip().splitlines()
    assert sweep_err == ["densehmm sweep: error: --scheduler needs --executor dask"]
    assert reproduce_err == ["densehmm reproduce: error: --scheduler needs --executor dask"]
    (tmp_path / "file").write_text("x")
    s = ComparisonSettings.quick("synthetic", grid=((2, 1),), models=("standard",), repeats=1)
    with pytest.raises(UserError, match="cannot create the output folder"):
        run_comparison(s, tmp_path / "file" / "out", quiet=True)
    assert capsys.readouterr().err == ""


def _sweep_data(m, n_seq=40, length=200):
    import numpy as np
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, m, length) for _ in range(n_seq)]
    for i in range(m):                                  # every symbol occurs
        seqs[i % n_seq][i % length] = i
    return {"sequences": seqs, "n_symbols": m}


def test_sweep_memory_estimate_bounds_what_a_run_holds():
    """The estimate covers a run's measured peak (it counted 2 m x m matrices; run_one holds 5)."""
    import tracemalloc

    from densehmm_core.experiments.comparison import ComparisonSettings, run_memory, run_one
    m = 1200
    shared = _sweep_data(m)
    s = ComparisonSettings.quick("sweep", data="x", grid=((2, 1),), models=("standard",), repeats=1)
    run_one("sweep", 2, 1, 0, "standard", s.to_dict(), _sweep_data(30))     # imports first
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        run_one("sweep", 2, 1, 0, "standard", s.to_dict(), shared)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak > 4.5 * 8 * m * m                       # five m x m arrays at once
    assert run_memory(2, 1, "standard", m, [len(x) for x in shared["sequences"]]) >= peak


def test_sweep_memory_check_uses_trains_chunk_rule(monkeypatch):
    """A sequence longer than one chunk is a chunk of its own (densehmm_core.memory, as ``train``
    counts): the sweep's estimate no longer caps the E-step buffers at 2^23 floats."""
    from densehmm_core import memory
    from densehmm_core.experiments.comparison import ComparisonSettings, check_size, run_memory
    lengths = [6_000_000]
    need = memory.inference_bytes(lengths, 4, 5) - memory.BASE_BYTES
    assert run_memory(4, 1, "standard", 5, lengths) >= need > 6_000_000 * 4 * 32
    s = ComparisonSettings.quick("sweep", data="x", grid=((4, 1),), models=("standard",), repeats=2)
    monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", str(int(need * 0.9)))
    with pytest.raises(ValueError, match="too large: a run of standard with n=4"):
        check_size(s, 5, lengths, 1)
    monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", str(int(need * 1.1)))
    check_size(s, 5, lengths, 1)
    with pytest.raises(ValueError, match="x 2 parallel jobs"):
        check_size(s, 5, lengths, 2)


# ---------------------------------------------------------------- Ctrl-C on the thread executor
# The child is this file run as a script (python tests/test_sweep_audit.py MODE OUT): a thread sweep of
# 2 jobs whose task 0 ends at once; the test sends SIGINT when its progress line appears.

def quick_task(x: int) -> list:
    return [{"x": x, "what": "quick"}]


def short_task(x: int) -> list:
    """Not cancellable, ends 2 s after it started: a run that finishes while the sweep stops."""
    time.sleep(2.0)
    return [{"x": x, "what": "short"}]


def slow_fit(x: int) -> list:
    """A Baum-Welch fit of ten million iterations (hours), through the sweep's cancel token."""
    import numpy as np

    from densehmm_core.experiments.cancel import fit_cancellable
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(x)
    fit_cancellable(StandardHMM(3, n_iter=10 ** 7, tol=0.0, seed=x), [rng.integers(0, 5, 200) for _ in range(20)])
    return [{"x": x, "what": "slow"}]


def stuck_task(x: int) -> list:
    """Ignores the token (a step no fit check covers) for a minute."""
    for _ in range(600):
        time.sleep(0.1)
    return [{"x": x, "what": "stuck"}]


def _child(mode: str, out: str) -> int:
    from densehmm_core.experiments.runner import ResultStore, Task, run_tasks
    second = {"keep": "short_task", "twice": "stuck_task", "save": "short_task"}[mode]
    third = "stuck_task" if mode == "save" else "slow_fit"
    funcs = ["quick_task", second, third, "slow_fit"]
    tasks = [Task(key={"x": i}, func=f"test_sweep_audit:{f}", kwargs={"x": i}, label=f"{f}-{i}")
             for i, f in enumerate(funcs)]
    store = ResultStore(Path(out) / "runs.csv", ("x", "what"), key=("x",))
    failed = ResultStore(Path(out) / "failed.csv", ("x", "status", "error"), key=("x",))
    report = run_tasks(tasks, store, ("x",), jobs=2, executor="thread", failed_store=failed)
    return 130 if report.interrupted else 0


def _interrupt(tmp_path, mode: str, second_on=None):
    """Run the child, send SIGINT once task 0's progress line is out and, with ``second_on``, a second
    SIGINT once a line holding that text is out.  A child still running after 50 s is killed (a minute is
    what the stuck task takes: the waits below are events, the bound only ends a test that failed)."""
    import threading
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent),
                                                       str(Path(__file__).resolve().parents[1])]))
    p = subprocess.Popen([sys.executable, __file__, mode, str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(50.0, p.kill)
    watchdog.start()
    lines = []
    try:
        wanted = ["quick_task-0"] + ([second_on] if second_on else [])
        for line in p.stdout:
            lines.append(line)
            if wanted and wanted[0] in line:
                wanted.pop(0)
                p.send_signal(signal.SIGINT)
                if not wanted:
                    break
        out, err = p.communicate()
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, "".join(lines) + out, err


def test_ctrl_c_on_a_thread_sweep_stops_the_fits_and_keeps_finished_runs(tmp_path):
    """The first Ctrl-C stops the running fits (their threads used to run on to the end: ten million
    Baum-Welch iterations, hours), keeps a run that finished meanwhile and records no cancelled run as
    failed."""
    rc, out, err = _interrupt(tmp_path, "keep")
    assert rc == 130, (rc, err)
    assert "interrupted: finished tasks are saved" in out
    assert "Traceback" not in err
    rows = read_rows(tmp_path / "runs.csv")
    assert sorted((r["x"], r["what"]) for r in rows) == [("0", "quick"), ("1", "short")]
    assert not (tmp_path / "failed.csv").exists() or not read_rows(tmp_path / "failed.csv")


def test_second_ctrl_c_exits_at_once_without_traceback(tmp_path):
    """A run that does not check the token holds the first Ctrl-C; a second one ends the command at once
    (before the stuck run's minute is over: its row is missing): exit 130, one line, no traceback (it used
    to abort in threading._shutdown, rc -6)."""
    rc, out, err = _interrupt(tmp_path, "twice", second_on="waiting for")
    assert rc == 130, (rc, err)
    assert "Traceback" not in err and "terminate called" not in err
    assert "interrupted again" in err
    assert [r["x"] for r in read_rows(tmp_path / "runs.csv")] == ["0"]


def test_second_ctrl_c_keeps_a_run_that_ended_during_the_wait(tmp_path):
    """A run that ends while the sweep waits for another is saved as it ends (its progress line is out):
    a second Ctrl-C after that keeps it, as its line says (all of them used to be saved only once every
    run in flight had ended, so it was lost)."""
    rc, out, err = _interrupt(tmp_path, "save", second_on="short_task-1")
    assert rc == 130, (rc, out, err)
    assert "finished runs are saved" in err
    assert sorted((r["x"], r["what"]) for r in read_rows(tmp_path / "runs.csv")) == [("0", "quick"),
                                                                                     ("1", "short")]


def test_a_second_ctrl_c_during_a_save_exits_after_it(monkeypatch):
    """A second Ctrl-C that comes while a run is being saved ends the process only when the save is over
    (no half-saved run); one outside a save ends it at once."""
    from densehmm_core.experiments import cancel

    class Exited(BaseException):
        pass
    steps = []

    def fake_exit(code):
        steps.append(("exit", code))
        raise Exited
    monkeypatch.setattr(cancel.os, "_exit", fake_exit)
    monkeypatch.setattr(cancel.os, "write", lambda fd, data: len(data))
    with pytest.raises(Exited):
        with cancel.second_interrupt_exits() as saving:
            with saving():
                steps.append("save starts")
                signal.raise_signal(signal.SIGINT)
                steps.append("save ends")
            steps.append("after the save")
    assert steps == ["save starts", "save ends", ("exit", 130)]
    steps.clear()
    with pytest.raises(Exited):
        with cancel.second_interrupt_exits():
            signal.raise_signal(signal.SIGINT)
            steps.append("went on")
    assert steps == [("exit", 130)]


def test_a_cancelled_task_keeps_its_type_and_a_failure_naming_it_is_a_failure():
    """call_task lets TaskCancelled through as itself (the sweep drops that task); a task that failed with
    a message that merely names TaskCancelled is a failure like any other (the old check parsed the
    traceback's last line for the word)."""
    from densehmm_core.experiments.cancel import TaskCancelled
    from densehmm_core.experiments.runner import call_task
    with pytest.raises(TaskCancelled):
        call_task("test_sweep_audit:cancelled_task", {})
    rows, _, err = call_task("test_sweep_audit:failing_task", {})
    assert rows == [] and err.strip().splitlines()[-1] == "ValueError: not a TaskCancelled"


def cancelled_task() -> list:
    from densehmm_core.experiments.cancel import TaskCancelled
    raise TaskCancelled("the sweep was interrupted")


def failing_task() -> list:
    raise ValueError("not a TaskCancelled")


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))


@pytest.mark.parametrize("seed,tol,steps", [(3, 1e-2, 12), (4, 1e-2, 33), (2, 1e-1, 3), (3, 1e-3, 18), (1, 1e-2, 40)])
def test_standard_rows_stop_where_hmmlearn_stops(seed, tol, steps):
    """The standard-HMM rows' reference rule returns what hmmlearn's CategoricalHMM returns from the same
    start: as many M-steps (it stopped one M-step earlier) and the same parameters."""
    hmm = pytest.importorskip("hmmlearn.hmm")
    import numpy as np

    from densehmm_core.experiments.comparison import ComparisonSettings, _fit_reference_rule, model_config
    from densehmm_core.registry import model_from_config
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(0, 4, size=60) for _ in range(20)]
    s = ComparisonSettings.full("synthetic", bw_iter=40, bw_tol=tol)
    kind, cfg = model_config(s, "standard", 2, 1, 4, seed)
    start = next(iter(model_from_config(kind, dict(cfg, tol=0.0)).iter_fit(seqs))).params   # step 0
    ours = _fit_reference_rule(s, "standard", 2, 1, 4, seed, seqs)
    h = hmm.CategoricalHMM(n_components=2, n_iter=40, tol=tol, init_params="", params="ste", random_state=0)
    h.n_features = 4
    h.startprob_, h.transmat_, h.emissionprob_ = start["startprob"], start["transmat"], start["emissionprob"]
    X, lengths = np.concatenate(seqs)[:, None], [len(x) for x in seqs]
    h.fit(X, lengths)
    assert h.monitor_.iter == steps                  # early stopping triggered (40: it did not)
    assert int(ours.history_[-1]["step"]) == h.monitor_.iter
    np.testing.assert_allclose(ours.transmat_, h.transmat_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.emissionprob_, h.emissionprob_, rtol=1e-8, atol=1e-10)
    assert ours.score(seqs) == pytest.approx(h.score(X, lengths), rel=1e-10)
    assert ours.stop_reason_ == ("converged" if steps < 40 else "max_steps")


def test_results_md_repeats_claims(tmp_path, capsys):
    """RESULTS.md: a larger --repeats adds repetitions to a comparison folder; reproduce factorization's
    --repeats (its restarts) is a result setting, refused in the same folder with one line."""
    f = ["reproduce", "factorization", "--quick", "--grid", "3:1", "--matrices", "1", "--jobs", "1",
         "--out", str(tmp_path / "f")]
    assert reproduce(f + ["--repeats", "1"]) == 0
    capsys.readouterr()
    assert reproduce(f + ["--repeats", "2"]) == 2
    err = capsys.readouterr().err
    assert "other settings" in err and "n_restarts (1 recorded, 2 now)" in err
    fasta = WORDS.parent / "pdb_seqres_like.fasta"
    c = ["reproduce", "protein", "--quick", "--grid", "3:1", "--models", "standard", "--jobs", "1",
         "--data", str(fasta), "--out", str(tmp_path / "c")]
    assert reproduce(c + ["--repeats", "1"]) == 0
    capsys.readouterr()
    assert reproduce(c + ["--repeats", "2"]) == 0
    assert "resuming: 1 of 2 tasks" in capsys.readouterr().out
    assert sorted(r["rep"] for r in read_rows(tmp_path / "c" / "protein_runs.csv")) == ["0", "1"]

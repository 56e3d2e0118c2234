"""Tests of densehmm_core.experiments: factorisation maths, the resumable runner and every
``densehmm reproduce`` command in --quick mode on tiny settings."""
import csv
import os
import pathlib

import numpy as np
import pytest

from densehmm_core.experiments import factorization as fz
from densehmm_core.experiments.runner import ResultFileError, ResultStore, Task, run_tasks

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(argv):
    from densehmm_core.cli import main
    return main(argv)


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _check_png(path):
    path = pathlib.Path(path)
    assert path.read_bytes()[:8] == PNG_MAGIC, path
    from PIL import Image
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        w, h = im.size
        assert w > 200 and h > 150
        # not a blank canvas: several distinct colours
        pixels = np.asarray(im.convert("RGB")).reshape(-1, 3)
        assert len(np.unique(pixels, axis=0)) > 20


# ---------------------------------------------------------------- maths
@pytest.mark.parametrize("method", ["softmax", "normabslin"])
def test_factorization_gradients_match_finite_differences(method):
    rng = np.random.default_rng(1)
    U = rng.standard_normal((2, 4, 3))
    Z = rng.standard_normal((2, 4, 3))
    G = np.stack([fz.dirichlet_matrix(4, 0.1, rng) for _ in range(2)])
    loss, dU, dZ = fz.loss_and_grads(U, Z, G, method)
    # the loss is the relative Frobenius error of the transform
    A = fz.transform(U @ Z.transpose(0, 2, 1), method)
    np.testing.assert_allclose(loss, np.linalg.norm(A - G, axis=(1, 2)) / np.linalg.norm(G, axis=(1, 2)))
    h = 1e-6
    for P, dP, which in ((U, dU, 0), (Z, dZ, 1)):
        num = np.zeros_like(P)
        for idx in np.ndindex(P.shape):
            Pp, Pm = P.copy(), P.copy()
            Pp[idx] += h
            Pm[idx] -= h
            args_p = (Pp, Z) if which == 0 else (U, Pp)
            args_m = (Pm, Z) if which == 0 else (U, Pm)
            num[idx] = (fz.loss_and_grads(*args_p, G, method)[0].sum()
                        - fz.loss_and_grads(*args_m, G, method)[0].sum()) / (2 * h)
        np.testing.assert_allclose(dP, num, atol=1e-7)


def test_transforms_are_row_stochastic_and_softmax_beats_rank_limit():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 5))
    for m in ("softmax", "normabslin"):
        A = fz.transform(X, m)
        assert np.all(A >= 0)
        np.testing.assert_allclose(A.sum(axis=1), 1.0)
    # normAbsLin of a rank-1 product has rank 1; softmax of it is full rank (paper, Section 4)
    u, z = rng.standard_normal((5, 1)), rng.standard_normal((5, 1))
    assert np.linalg.matrix_rank(fz.transform(u @ z.T, "normabslin")) == 1
    assert np.linalg.matrix_rank(fz.transform(u @ z.T, "softmax")) == 5


def test_factorization_figure_draws_every_method(tmp_path):
    """figures.py knows the factorisation methods without importing factorization.py (no cycle)."""
    from densehmm_core.experiments import figures
    assert tuple(figures.FACTORIZATION_STYLE) == fz.METHODS
    rows = [{"n": n, "l": l, "method": m, "error": 0.1 * l / n} for n in (4, 8) for l in (2, 4) for m in fz.METHODS]
    path = figures.factorization_figure(rows, tmp_path / "f.png", fz.PAPER_TABLE)
    assert path.stat().st_size > 1000


def test_batched_fit_equals_independent_fits():
    """Batching is exact: each problem of a batch follows its own Adam trajectory."""
    rng = np.random.default_rng(3)
    G = np.stack([fz.dirichlet_matrix(3, 0.1, rng) for _ in range(3)])
    U0, Z0 = rng.standard_normal((3, 3, 2)), rng.standard_normal((3, 3, 2))
    kw = dict(min_steps=100, max_steps=400, window=50)
    batch = fz.fit_batch(G, U0, Z0, "softmax", **kw)
    for i in range(3):
        one = fz.fit_batch(G[i:i + 1], U0[i:i + 1], Z0[i:i + 1], "softmax", **kw)
        np.testing.assert_allclose(batch["error"][i], one["error"][0], rtol=1e-12)
        assert batch["steps"][i] == one["steps"][0]
    # optimisation helps: error well below the initial error
    assert np.all(batch["error"] < batch["initial_error"])


def test_softmax_fits_full_rank_matrix_with_small_l():
    rng = np.random.default_rng(5)
    G = fz.dirichlet_matrix(3, 0.1, rng)[None]
    res = fz.fit_batch(G, rng.standard_normal((1, 3, 2)), rng.standard_normal((1, 3, 2)), "softmax",
                       min_steps=500, max_steps=5000)
    lin = fz.fit_batch(G, rng.standard_normal((1, 3, 1)), rng.standard_normal((1, 3, 1)), "normabslin",
                       min_steps=500, max_steps=5000)
    assert res["error"][0] < 0.05
    assert lin["error"][0] > res["error"][0]


# ---------------------------------------------------------------- runner
def _echo_task(x, fail=False):
    if fail:
        raise ValueError("boom")
    return [{"x": x, "y": x * x}]


def test_runner_resumes_and_retries_failures(tmp_path):
    store_path = tmp_path / "r.csv"
    tasks = [Task(key={"x": i}, func=f"{__name__}:_echo_task",
                  kwargs={"x": i, "fail": i == 2}, label=f"x={i}") for i in range(4)]
    lines = []
    rep = run_tasks(tasks, ResultStore(store_path, ["x", "y"]), ["x"], out=lines.append)
    assert rep.done == 3 and len(rep.failed) == 1 and "boom" in rep.failed[0][1]
    assert sorted(int(r["x"]) for r in _rows(store_path)) == [0, 1, 3]
    # second run: only the failed task runs again
    tasks[2].kwargs["fail"] = False
    rep2 = run_tasks(tasks, ResultStore(store_path), ["x"], out=lines.append)
    assert rep2.skipped == 3 and rep2.done == 1 and not rep2.failed
    assert sorted((int(r["x"]), int(r["y"])) for r in _rows(store_path)) == [(i, i * i) for i in range(4)]
    # a truncated trailing line (the file was cut: writes are atomic) is refused, naming the line
    with open(store_path, "a") as fh:
        fh.write("7")
    with pytest.raises(ResultFileError, match=r"r.csv line 6: the last line is cut short"):
        ResultStore(store_path)


def _die_task(x):
    if x == 1:
        os._exit(3)  # a worker killed mid-task (out of memory, kill -9)
    return [{"x": x}]


def test_runner_survives_a_dying_worker(tmp_path):
    tasks = [Task(key={"x": i}, func=f"{__name__}:_die_task", kwargs={"x": i}, label=f"x={i}")
             for i in range(4)]
    lines = []
    rep = run_tasks(tasks, ResultStore(tmp_path / "r.csv", ["x"]), ["x"], jobs=2, out=lines.append)
    assert any("worker process died" in line for line in lines)
    failed = {int(label.split("=")[1]) for label, _ in rep.failed}
    # Tasks in flight beside the dying one may fail with it (the pool breaks); when all of them
    # did, no row was written and the CSV does not exist.
    csv_path = tmp_path / "r.csv"
    done = {int(r["x"]) for r in _rows(csv_path)} if csv_path.exists() else set()
    assert 1 in failed and 1 not in done
    assert done | failed == {0, 1, 2, 3} and not done & failed


# ------------------------------------------------------- reproduce --quick
def test_reproduce_factorization_quick_parallel_and_resume(tmp_path, capsys):
    out = tmp_path / "fz"
    argv = ["reproduce", "factorization", "--quick", "--out", str(out), "--jobs", "2",
            "--repeats", "2", "--matrices", "2"]
    assert _run(argv) == 0
    rows = _rows(out / "factorization_runs.csv")
    assert set(fz.COLUMNS) <= set(rows[0])
    s = fz.FactorizationSettings.quick(n_restarts=2, n_matrices=2)
    assert len(rows) == len(s.grid) * 2 * 2 * 2
    for r in rows:
        assert 0 <= float(r["error"]) <= float(r["initial_error"]) + 1e-12
    summ = _rows(out / "factorization_summary.csv")
    assert {(int(r["n"]), int(r["l"]), r["method"]) for r in summ} == \
        {(n, l, m) for n, l in s.grid for m in fz.METHODS}
    # the paper's qualitative finding on the quick grid: softmax <= normAbsLin for l < n
    med = {(int(r["n"]), int(r["l"]), r["method"]): float(r["median"]) for r in summ}
    for n, l in s.grid:
        if l < n:
            assert med[(n, l, "softmax")] < med[(n, l, "normabslin")]
    # best restart per matrix: its median is the median over matrices of the per-matrix minimum
    for n, l in s.grid:
        for m in fz.METHODS:
            errs = {}
            for r in rows:
                if (int(r["n"]), int(r["l"]), r["method"]) == (n, l, m):
                    errs.setdefault(int(r["matrix"]), []).append(float(r["error"]))
            best = np.median([min(v) for v in errs.values()])
            got = [float(x["best_median"]) for x in summ
                   if (int(x["n"]), int(x["l"]), x["method"]) == (n, l, m)]
            assert got == [pytest.approx(best, rel=1e-12)]
    _check_png(out / "factorization.png")
    assert "| n | l |" in (out / "factorization_table.md").read_text()
    before = (out / "factorization_runs.csv").read_bytes()
    capsys.readouterr()
    assert _run(argv) == 0
    text = capsys.readouterr().out
    assert "nothing to do" in text and "done: 0 run" in text
    assert (out / "factorization_runs.csv").read_bytes() == before


COMPARISON_COLUMNS = {"dataset", "settings_id", "n", "l", "rep", "model", "status", "n_states",
                      "data_seed", "model_seed", "mad", "mad_sampled", "mad_paper", "test_nll",
                      "test_paper_nll", "train_nll", "fit_seconds"}


def _check_comparison(out, name, models, n_pairs, capsys, argv):
    rows = _rows(out / f"{name}_runs.csv")
    assert COMPARISON_COLUMNS <= set(rows[0])
    assert len(rows) == n_pairs * len(models)
    assert {r["model"] for r in rows} == set(models)
    for r in rows:
        assert r["status"] == "ok"
        assert 0 <= float(r["mad"]) < 1 and 0 <= float(r["mad_sampled"]) < 1
        assert float(r["test_nll"]) > 0 and np.isfinite(float(r["test_paper_nll"]))
        assert not {"nll_per_token", "nll_paper", "train_nll_per_token"} & set(r)
        want = float(r["mad"]) if r["model"].startswith("dense-direct") else float(r["mad_sampled"])
        assert float(r["mad_paper"]) == want
    for suffix in ("mad", "mad_paper", "nll"):
        _check_png(out / f"{name}_{suffix}.png")
    assert (out / f"{name}_summary.csv").exists()
    before = (out / f"{name}_runs.csv").read_bytes()
    capsys.readouterr()
    assert _run(argv) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert (out / f"{name}_runs.csv").read_bytes() == before
    return rows


def test_reproduce_synthetic_quick(tmp_path, capsys):
    out = tmp_path / "syn"
    models = ["dense-em", "dense-direct", "standard-fair", "standard", "dense-direct-gt"]
    argv = ["reproduce", "synthetic", "--quick", "--out", str(out), "--jobs", "1", "--grid", "3:2"]
    assert _run(argv) == 0
    rows = _check_comparison(out, "synthetic", models, 1, capsys, argv)
    # fair HMM: n_fair(3, 3, l) states; the standard HMM has n
    from densehmm_core.standard import n_fair
    for r in rows:
        if r["model"] == "standard-fair":
            assert int(r["n_states"]) == n_fair(3, 3, int(r["l"]))
        if r["model"] == "standard":
            assert int(r["n_states"]) == 3
    # the same repetition gives every model the same data
    assert len({r["data_seed"] for r in rows}) == 1
    assert len({r["model_seed"] for r in rows}) == len(models)


def _need_data_module():
    mod = pytest.importorskip("densehmm_core.data")
    if not hasattr(mod, "load"):
        pytest.skip("densehmm_core.data.load is not available")


def _data_or_skip(path):
    _need_data_module()
    if not pathlib.Path(path).is_file():
        pytest.skip(f"{path} not present")
    return path


@pytest.mark.parametrize("name,rel", [("protein", "proteins/pdb_seqres_2022_09_28__subsampled_1000.fasta"),
                                      ("penn", "pos/ptb_wsj_sample_combined.mrg")])
def test_reproduce_real_data_quick(tmp_path, capsys, shared_data, name, rel):
    data = _data_or_skip(shared_data / rel)
    out = tmp_path / name
    models = ["dense-direct", "standard"]
    argv = ["reproduce", name, "--quick", "--out", str(out), "--jobs", "1", "--data", str(data),
            "--models", ",".join(models), "--grid", "3:2"]
    assert _run(argv) == 0
    rows = _check_comparison(out, name, models, 1, capsys, argv)
    assert all(int(r["n_train_seqs"]) == 30 and int(r["n_test_seqs"]) == 30 for r in rows)


MEDPOST_SAMPLE = """P01234567A01
The_DD patient_NN was_VBD treated_VVN with_II aspirin_NN ._.
P01234567A02
Blood_NN pressure_NN was_VBD measured_VVN daily_RR ._.
P01234567A03
We_PN report_VVB a_DD case_NN of_II acute_JJ renal_JJ failure_NN ._.
P01234567A04
The_DD drug_NN was_VBD stopped_VVN and_CC the_DD symptoms_NNS resolved_VVD ._.
"""


def test_reproduce_medpost_quick(tmp_path, capsys):
    _need_data_module()
    f = tmp_path / "tag_mb.ioc"
    f.write_text(MEDPOST_SAMPLE * 4)
    out = tmp_path / "medpost"
    models = ["standard", "dense-direct"]
    argv = ["reproduce", "medpost", "--quick", "--out", str(out), "--jobs", "1", "--data", str(f),
            "--models", ",".join(models), "--grid", "3:2"]
    assert _run(argv) == 0
    _check_comparison(out, "medpost", models, 1, capsys, argv)


def _one_error_line(capsys) -> str:
    """A user error of ``reproduce``: one line on stderr, nothing on stdout."""
    cap = capsys.readouterr()
    assert not cap.out.strip() and len(cap.err.strip().splitlines()) == 1
    assert cap.err.startswith("densehmm reproduce: error: ")
    return cap.err


def test_reproduce_medpost_without_data_is_a_clear_error(tmp_path, capsys):
    assert _run(["reproduce", "medpost", "--quick", "--out", str(tmp_path)]) == 2
    assert "--data" in _one_error_line(capsys)
    assert _run(["reproduce", "penn", "--quick", "--out", str(tmp_path),
                 "--data", str(tmp_path / "missing.mrg")]) == 2
    assert "not found" in _one_error_line(capsys)


def test_reproduce_rejects_bad_grid(tmp_path, capsys):
    assert _run(["reproduce", "factorization", "--quick", "--out", str(tmp_path), "--grid", "3-1"]) == 2
    assert "--grid" in _one_error_line(capsys)


def test_cli_import_is_cheap():
    import subprocess
    import sys
    code = ("import sys; import densehmm_core.experiments.cli as c; "
            "import argparse; p = argparse.ArgumentParser(); c.add_reproduce_parser(p.add_subparsers()); "
            "print('tensorflow' in sys.modules, 'matplotlib' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(pathlib.Path(__file__).resolve().parent.parent))
    assert res.stdout.strip() == "False False"


def test_runs_csv_with_old_nll_columns_is_read_with_todays_names(tmp_path):
    """Runs CSVs written before the normalised NLL had one name keep working (issue 12)."""
    from densehmm_core.experiments.comparison import COLUMNS, OLD_COLUMNS
    path = tmp_path / "old_runs.csv"
    path.write_text("n,l,rep,model,nll_per_token,nll_paper,train_nll_per_token\n"
                    "3,1,0,standard,1.25,1.5,1.125\n", encoding="utf-8")
    store = ResultStore(path, COLUMNS, renames=OLD_COLUMNS)
    row = store.rows[0]
    assert (row["test_nll"], row["test_paper_nll"], row["train_nll"]) == ("1.25", "1.5", "1.125")
    assert not set(OLD_COLUMNS) & set(row) and not set(OLD_COLUMNS) & set(store.columns)
    store.write()
    with open(path, newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert {"test_nll", "test_paper_nll", "train_nll"} <= set(header) and "nll_per_token" not in header

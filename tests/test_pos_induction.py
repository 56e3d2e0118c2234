"""``densehmm reproduce pos-induction`` on the small gold-tagged fixture.

Oracles: a Baum-Welch row's scores equal those of the same seeded model trained and scored
directly; M-1 is at least the majority-tag baseline; a rerun skips finished runs (resume);
bad arguments exit 2 with one line.
"""
from pathlib import Path

import numpy as np
import pytest

from posruns import WORDS, read_rows as _rows, reproduce as _run

pytest.importorskip("densehmm_core.dense_tf")


def test_pos_induction_runs_scores_and_resumes(tmp_path, capsys):
    out = tmp_path / "pos"
    argv = ["reproduce", "pos-induction", "--data", str(WORDS), "--out", str(out), "--quick",
            "--models", "baum-welch,dense-em,dense-em-feat", "--dims", "2", "--seeds", "2", "--iterations", "3"]
    assert _run(argv) == 0
    rows = _rows(out / "pos_induction_runs.csv")
    assert sorted((r["model"], r["seed"]) for r in rows) == [
        ("baum-welch", "0"), ("baum-welch", "1"), ("dense-em", "0"), ("dense-em", "1"),
        ("dense-em-feat", "0"), ("dense-em-feat", "1")]
    from densehmm_core.data import load
    from densehmm_core.metrics import tagging_scores
    from densehmm_core.standard import StandardHMM
    corpus = load(WORDS, observe="words", lowercase=True, min_count=1)   # the experiment keeps every word
    majority = np.bincount(np.concatenate(corpus.tags)).max() / corpus.n_tokens
    for r in rows:
        assert majority - 1e-12 <= float(r["m1"]) <= 1.0
        assert int(r["n_states"]) == corpus.n_tags
    bw = StandardHMM(corpus.n_tags, n_iter=3, tol=0.0, seed=1, init_method="random").fit(corpus)
    direct = tagging_scores(bw.predict(corpus.sequences), corpus.tags, n_states=corpus.n_tags,
                            n_tags=corpus.n_tags)
    row = next(r for r in rows if r["model"] == "baum-welch" and r["seed"] == "1")
    assert float(row["m1"]) == pytest.approx(direct["m1"], abs=1e-15)
    assert float(row["v_measure"]) == pytest.approx(direct["v_measure"], abs=1e-12)
    # the feature model saw the words as written (more types than the lower-cased ones)
    feat = next(r for r in rows if r["model"] == "dense-em-feat")
    assert int(feat["n_symbols"]) > int(row["n_symbols"])
    table = (out / "pos_induction_table.md").read_text()
    assert "| baum-welch | - | 2 |" in table and "| dense-em-feat | 2 | 2 |" in table
    capsys.readouterr()
    assert _run(argv) == 0
    assert "nothing to do: all 6 tasks are finished" in capsys.readouterr().out
    assert len(_rows(out / "pos_induction_runs.csv")) == 6


def test_pos_induction_bad_arguments(tmp_path, capsys):
    base = ["reproduce", "pos-induction", "--out", str(tmp_path / "x")]
    assert _run(base + ["--data", str(tmp_path / "missing.mrg")]) == 2
    assert "data file not found" in capsys.readouterr().err
    assert _run(base + ["--data", str(WORDS), "--models", "nope"]) == 2
    assert "unknown model(s) nope" in capsys.readouterr().err
    assert _run(base + ["--data", str(WORDS), "--dims", "0"]) == 2
    assert _run(base + ["--data", str(WORDS), "--direct-dims", "x"]) == 2
    assert "--direct-dims must be positive integers" in capsys.readouterr().err


def test_spectral_control_row_and_resume_guard(tmp_path, capsys):
    """``baum-welch-spectral`` is the standard HMM with the spectral start (same scores as that
    model trained directly); a folder of spectral runs refuses a resume with ``--init random``."""
    out = tmp_path / "pos"
    argv = ["reproduce", "pos-induction", "--data", str(WORDS), "--out", str(out), "--quick",
            "--models", "baum-welch-spectral", "--seeds", "1", "--iterations", "2"]
    assert _run(argv) == 0
    row = _rows(out / "pos_induction_runs.csv")[0]
    from densehmm_core.data import load
    from densehmm_core.metrics import tagging_scores
    from densehmm_core.standard import StandardHMM
    corpus = load(WORDS, observe="words", lowercase=True, min_count=1)
    bw = StandardHMM(corpus.n_tags, n_iter=2, tol=0.0, seed=0, init_method="spectral").fit(corpus)
    direct = tagging_scores(bw.predict(corpus.sequences), corpus.tags, n_states=corpus.n_tags,
                            n_tags=corpus.n_tags)
    assert float(row["m1"]) == pytest.approx(direct["m1"], abs=1e-15)
    capsys.readouterr()
    assert _run(argv + ["--init", "random"]) == 2
    assert "other settings: init_method (spectral recorded, random now)" in capsys.readouterr().err
    assert len(_rows(out / "pos_induction_runs.csv")) == 1


def test_committed_result_folders_rebuild_their_reports(tmp_path):
    """--report-only rebuilds a folder's table from its rows with the folder's own settings, without
    its data file (the random-start folder records a path that no longer exists) and without the
    memory check; folders written before ``l2`` existed still pass the settings_id check (their id
    is the one of l2 = 0 without the key); the numbers are those of the committed table."""
    import shutil

    from densehmm_core.experiments.pos_induction import PosSettings, check_resume, run_pos_induction
    from densehmm_core.experiments.runner import ResultFileError, ResultStore
    repo = Path(__file__).resolve().parents[1]
    for name in ("pos-induction", "pos-induction-random"):
        out = tmp_path / name
        shutil.copytree(repo / "docs" / "results" / name, out)
        before = (out / "pos_induction_settings.json").read_bytes()
        assert b'"l2"' not in before   # written before the option existed
        code = run_pos_induction(PosSettings(data="/nonexistent.mrg", l2=0.5), out, run=False, quiet=True)
        assert code == 0
        assert (out / "pos_induction_settings.json").read_bytes() == before   # kept as it is
        old = (repo / "docs" / "results" / name / "pos_induction_table.md").read_text().splitlines()[2:]
        new = (out / "pos_induction_table.md").read_text().splitlines()[2:]
        assert len(old) == len(new) > 0
        for a, b in zip(old, new):     # the same rows; E-steps unknown for these old rows
            assert b.startswith(a.rstrip("|").rstrip()) and b.endswith("| - | - |"), (a, b)
    # resuming the pre-l2 folder: the same settings pass, another l2 is refused by name
    out = tmp_path / "pos-induction"
    rec = PosSettings.from_dict({k: v for k, v in __import__("json").loads(
        (out / "pos_induction_settings.json").read_text()).items() if k != "settings_id"})
    store = ResultStore(out / "pos_induction_runs.csv", ["model", "dim", "seed"])
    assert check_resume(out, rec, store) == rec
    with pytest.raises(ResultFileError, match=r"l2 \(0.0 recorded, 1e-05 now\)"):
        check_resume(out, PosSettings.from_dict({**rec.to_dict(), "l2": 1e-5}), store)

"""Fixes after the sweep/reproduce audit (auditD): each test failed before its fix."""
from __future__ import annotations

import pytest

from posruns import WORDS, read_rows, reproduce


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

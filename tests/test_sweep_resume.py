"""Resuming a sweep folder (issues 25 and 27): the resume key covers every option that changes a
result and the data's content; tampered folders are refused with one line naming file and line,
exit 2, nothing computed; writers never follow a link out of the folder; absurd sizes are refused
up front within a small memory budget.

Oracles: the runs CSV's bytes (unchanged by a refused resume), the rows' values (a resume after a
refusal would have kept the old numbers: issue 27 item 1 measured train NLL 1.787 kept where a
correct run gives 3.63), the stderr lines, and the peak RSS of the refused commands.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from densehmm_core import fileio
from densehmm_core.cli import main
from densehmm_core.experiments.runner import ResultFileError, ResultStore

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "fixtures" / "data"
WORDS = DATA / "words.conllu"
FASTA = DATA / "pdb_seqres_like.fasta"
KEY = ("dataset", "settings_id", "n", "l", "rep", "model")


def _sweep(data, out, *extra):
    return main(["sweep", str(data), "--grid", "n=2,3 l=1 model=standard", "--repeats", "2", "--quick",
                 "--jobs", "1", "--out", str(out), *extra])


def _err_lines(capsys):
    cap = capsys.readouterr()
    return [ln for ln in cap.err.splitlines() if ln.strip() and not ln.startswith("note: ")], cap.out


@pytest.fixture(scope="module")
def words_folder(tmp_path_factory):
    """A finished sweep on the words of the tagged fixture (4 runs)."""
    out = tmp_path_factory.mktemp("words") / "sweep"
    assert _sweep(WORDS, out, "--observe", "words") == 0
    return out


@pytest.fixture(scope="module")
def fasta_folder(tmp_path_factory):
    """A finished sweep on the FASTA fixture with --save-models (4 runs, 4 model files)."""
    out = tmp_path_factory.mktemp("fasta") / "sweep"
    assert _sweep(FASTA, out, "--save-models") == 0
    return out


def _copy(folder, tmp_path):
    dst = tmp_path / "sweep"
    shutil.copytree(folder, dst, symlinks=True)
    return dst


# ------------------------------------------------------------------ the resume key (issue 27 item 1)
@pytest.mark.parametrize("options,named", [
    (["--max-vocab", "5"], "max_vocab (none recorded, 5 now)"),
    (["--lowercase"], "lowercase (none recorded, true now)"),
    (["--min-count", "2"], "min_count (none recorded, 2 now)"),
    (["--rare", "shape"], "rare (none recorded, shape now)"),
    (["--extra", str(DATA / "words_extra.txt")], "extra (none recorded, "),
    (["--max-len", "3"], "max_len (none recorded, 3 now)"),
    (["--split", "0.3"], "test_fraction (0.5 recorded, 0.3 now)"),
    (["--seed", "1"], "seed (0 recorded, 1 now)"),
])
def test_a_resume_with_another_result_option_is_refused_naming_it(words_folder, tmp_path, capsys, options, named):
    out = _copy(words_folder, tmp_path)
    before = (out / "sweep_runs.csv").read_bytes()
    capsys.readouterr()
    assert _sweep(WORDS, out, "--observe", "words", *options) == 2
    err, stdout = _err_lines(capsys)
    assert len(err) == 1 and "holds runs made with other settings" in err[0] and named in err[0], err
    assert (out / "sweep_runs.csv").read_bytes() == before and "done:" not in stdout
    # the same command as the folder's runs resumes: nothing to do
    assert _sweep(WORDS, out, "--observe", "words") == 0
    assert "nothing to do: all 4 tasks are finished" in capsys.readouterr().out


def test_keep_traces_is_part_of_the_resume_key(tmp_path, capsys):
    out = tmp_path / "ptb"
    assert _sweep(DATA / "trees.mrg", out) == 0
    capsys.readouterr()
    assert _sweep(DATA / "trees.mrg", out, "--keep-traces") == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and "keep_traces (none recorded, true now)" in err[0]


def test_the_data_is_known_by_its_content_not_its_name(words_folder, tmp_path, capsys):
    out = _copy(words_folder, tmp_path)
    rows = (out / "sweep_runs.csv").read_bytes()
    other = tmp_path / "elsewhere" / WORDS.name            # same name, one word changed
    other.parent.mkdir()
    other.write_text(WORDS.read_text().replace("\tdog\t", "\tcat\t", 1))
    capsys.readouterr()
    assert _sweep(other, out, "--observe", "words") == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and "data (the file's content differs" in err[0], err
    assert (out / "sweep_runs.csv").read_bytes() == rows
    same = tmp_path / "renamed.conllu"                     # same content, another name and place
    shutil.copy(WORDS, same)
    assert _sweep(same, out, "--observe", "words") == 0
    assert "nothing to do: all 4 tasks are finished" in capsys.readouterr().out


def test_reproduce_checks_the_data_content_too(tmp_path, capsys):
    data = tmp_path / "seqs.fasta"
    shutil.copy(FASTA, data)
    argv = ["reproduce", "protein", "--quick", "--out", str(tmp_path / "o"), "--jobs", "1", "--data", str(data),
            "--models", "standard", "--grid", "2:1"]
    assert main(argv) == 0
    with open(data, "a") as fh:
        fh.write(">extra\nMKVLA\n")
    capsys.readouterr()
    assert main(argv) == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and "data (the file's content differs" in err[0]


def test_resume_computes_the_new_runs_of_a_grown_grid(words_folder, tmp_path, capsys):
    """More repeats or grid values are not other settings: only the missing runs are computed."""
    out = _copy(words_folder, tmp_path)
    before = ResultStore(out / "sweep_runs.csv", key=KEY).rows
    capsys.readouterr()
    assert main(["sweep", str(WORDS), "--observe", "words", "--grid", "n=2,3 l=1 model=standard", "--repeats", "3",
                 "--quick", "--jobs", "1", "--out", str(out)]) == 0
    assert "done: 2 run, 4 skipped, 0 failed" in capsys.readouterr().out
    after = ResultStore(out / "sweep_runs.csv", key=KEY).rows
    assert after[:4] == before and len(after) == 6


# ------------------------------------------------------------------ tampered folders (issue 25, issue 27 item 9)
def _lines(path):
    return path.read_bytes().split(b"\r\n")


def _tamper_cell(path, line, column, value):
    lines = _lines(path)
    header = lines[0].split(b",")
    cells = lines[line - 1].split(b",")
    cells[header.index(column.encode())] = value
    lines[line - 1] = b",".join(cells)
    path.write_bytes(b"\r\n".join(lines))


def _tamper(kind, out):
    runs = out / "sweep_runs.csv"
    if kind == "non-utf8":
        _tamper_cell(runs, 3, "stop_reason", b"max\xffsteps")
        return "sweep_runs.csv line 3: is not UTF-8 text"
    if kind == "huge-field":
        _tamper_cell(runs, 2, "stop_reason", b"x" * (129 * 1024))
        return "sweep_runs.csv line 2: not a valid CSV line (field larger than field limit"
    if kind == "directory":
        runs.unlink()
        runs.mkdir()
        return "sweep_runs.csv: is a folder, not a file"
    if kind == "fifo":
        runs.unlink()
        os.mkfifo(runs)
        return "sweep_runs.csv: is not a regular file"
    if kind == "bad-cell":
        _tamper_cell(runs, 4, "rep", b"abc")
        return "sweep_runs.csv line 4: column rep: 'abc' is not an integer"
    if kind == "not-canonical-int":
        _tamper_cell(runs, 4, "rep", b"01")
        return "sweep_runs.csv line 4: column rep: '01' is not an integer"
    if kind == "bad-number":
        _tamper_cell(runs, 2, "test_nll", b"low")
        return "sweep_runs.csv line 2: column test_nll: 'low' is not a number"
    if kind == "duplicated-row":
        lines = _lines(runs)
        lines.insert(3, lines[1])
        runs.write_bytes(b"\r\n".join(lines))
        return "sweep_runs.csv line 4: the same run as line 2"
    if kind == "truncated":
        data = runs.read_bytes()
        runs.write_bytes(data[:len(data) - 40])
        return "sweep_runs.csv line 5: the last line is cut short"
    if kind == "wrong-columns":
        lines = _lines(runs)
        lines[2] = lines[2] + b",surplus"
        runs.write_bytes(b"\r\n".join(lines))
        return "sweep_runs.csv line 3: 34 cells, the header (line 1) has 33"
    if kind == "other-settings-row":
        _tamper_cell(runs, 3, "settings_id", b"0123456789")
        return "sweep_runs.csv line 3: a run of other settings"
    settings = out / "sweep_settings.json"
    if kind == "settings-edited":
        settings.write_text(settings.read_text().replace('"bw_iter": 5', '"bw_iter": 50'))
        return "sweep_settings.json: was edited by hand"
    if kind == "settings-not-json":
        settings.write_text(settings.read_text()[:-3])
        return "sweep_settings.json line"
    if kind == "settings-missing":
        settings.unlink()
        return "sweep_runs.csv: holds 4 runs but sweep_settings.json is missing"
    if kind == "settings-unknown-key":
        settings.write_text(settings.read_text().replace('"bw_iter"', '"bw_iterations"'))
        return "sweep_settings.json: holds settings this version cannot use"
    raise AssertionError(kind)


TAMPERINGS = ("non-utf8", "huge-field", "directory", "fifo", "bad-cell", "not-canonical-int", "bad-number",
              "duplicated-row", "truncated", "wrong-columns", "other-settings-row", "settings-edited",
              "settings-not-json", "settings-missing", "settings-unknown-key")


@pytest.mark.parametrize("kind", TAMPERINGS)
def test_a_tampered_folder_is_one_line_exit_2_and_nothing_computed(fasta_folder, tmp_path, capsys, kind):
    out = _copy(fasta_folder, tmp_path)
    want = _tamper(kind, out)
    runs = out / "sweep_runs.csv"
    before = runs.read_bytes() if runs.is_file() else None
    models = sorted((p.name, p.read_bytes()) for p in (out / "models").iterdir())
    capsys.readouterr()
    for extra in ((), ("--report-only",)):
        assert _sweep(FASTA, out, "--save-models", *extra) == 2
        err, stdout = _err_lines(capsys)
        assert len(err) == 1 and err[0].startswith("densehmm sweep: error: ") and want in err[0], (kind, err)
        assert "done:" not in stdout and "[#" not in stdout        # nothing computed, nothing summarised
    if before is not None:
        assert runs.read_bytes() == before
    assert sorted((p.name, p.read_bytes()) for p in (out / "models").iterdir()) == models


def test_a_model_file_that_does_not_match_its_row_is_refused(fasta_folder, tmp_path, capsys):
    out = _copy(fasta_folder, tmp_path)
    a, b = sorted((out / "models").glob("*.h5"))[:2]
    a.write_bytes(b.read_bytes())
    rows = ResultStore(out / "sweep_runs.csv", key=KEY)
    line = next(ln for r, ln in zip(rows.rows, rows.lines) if a.name.startswith(
        f"sweep_n{r['n']}_l{r['l']}_rep{r['rep']}_{r['model']}."))
    capsys.readouterr()
    assert _sweep(FASTA, out, "--save-models") == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and f"{a.name}: does not match line {line} of sweep_runs.csv" in err[0], err
    a.unlink()
    assert _sweep(FASTA, out, "--save-models") == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and f"{a.name}: is missing: line {line} of sweep_runs.csv" in err[0], err
    # without --save-models the models are not the sweep's business: the resume goes on
    assert _sweep(FASTA, out) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_a_folder_written_before_content_fingerprints_is_refused(words_folder, tmp_path, capsys):
    import json
    out = _copy(words_folder, tmp_path)
    path = out / "sweep_settings.json"
    d = json.loads(path.read_text())
    del d["data_fingerprint"]
    path.write_text(json.dumps(d))
    capsys.readouterr()
    assert _sweep(WORDS, out, "--observe", "words") == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and "was written before result folders recorded their data's content" in err[0]


def test_result_store_oracles(tmp_path):
    """The strict reader on hand-written files (line numbers count physical lines)."""
    p = tmp_path / "r.csv"
    p.write_bytes(b"x,y\r\n1,1\r\n\r\n3,9\r\n")
    st = ResultStore(p, key=("x",), types={"x": int})
    assert [r["x"] for r in st.rows] == ["1", "3"] and st.lines == [2, 4]
    p.write_bytes(b"x,y\r\n1,1\r\n\"2,4\r\n")
    with pytest.raises(ResultFileError, match="line 3"):
        ResultStore(p)
    p.write_bytes(b"x,x\r\n1,1\r\n")
    with pytest.raises(ResultFileError, match="line 1: the header has an empty or repeated column"):
        ResultStore(p)
    p.write_bytes(b"x,y\r\n1,1\r\n")
    with pytest.raises(ResultFileError, match="line 1: the header has no column rep"):
        ResultStore(p, key=("x", "rep"))
    p.write_bytes(b"")
    with pytest.raises(ResultFileError, match="is empty"):
        ResultStore(p)


# ------------------------------------------------------------------ links (issue 27 item 7)
@pytest.mark.parametrize("name", ["sweep_settings.json", "sweep_runs.csv", "sweep_summary.csv", "sweep_tables.md",
                                  "sweep_nll.png", "models"])
def test_a_link_planted_in_the_folder_never_writes_outside(tmp_path, capsys, name):
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim"
    if name == "models":
        target.mkdir()
    else:
        target.write_bytes(b"keep me")
    os.symlink(target, out / name)
    code = _sweep(FASTA, out, "--save-models")
    err, _ = _err_lines(capsys)
    if name in ("sweep_summary.csv",):
        assert code == 0  # rewritten from scratch: the link is removed, never followed
        assert not (out / name).is_symlink()
    else:
        assert code == 2 and len([e for e in err if e.startswith("densehmm sweep: error:")]) == 1, err
        assert "link" in err[-1]
    if name == "models":
        assert os.listdir(target) == []
    else:
        assert target.read_bytes() == b"keep me"
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]


def test_fileio_no_follow_writers(tmp_path):
    target = tmp_path / "outside.txt"
    target.write_text("keep")
    link = tmp_path / "link.txt"
    os.symlink(target, link)
    for call in (lambda: fileio.write_text(link, "x", follow_links=False),
                 lambda: fileio.write_bytes(link, b"x", follow_links=False),
                 lambda: fileio.append_text(link, "x")):
        with pytest.raises(fileio.FileWriteError, match="symbolic link"):
            call()
    assert target.read_text() == "keep"
    fileio.write_text(link, "followed")  # the default (user-chosen targets) still writes through the link
    assert target.read_text() == "followed" and link.is_symlink()
    # a planted lock file link is refused, its target untouched
    os.symlink(target, tmp_path / ".new.txt.lock")
    with pytest.raises(fileio.FileWriteError, match="lock file .* is a symbolic link"):
        fileio.write_text(tmp_path / "new.txt", "x")
    assert target.read_text() == "followed" and not (tmp_path / "new.txt").exists()
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    with pytest.raises(fileio.FileWriteError):
        fileio.append_text(fifo, "x")  # never blocks on a FIFO
    fileio.append_text(tmp_path / "errors.log", "a\n")
    fileio.append_text(tmp_path / "errors.log", "b\n")
    assert (tmp_path / "errors.log").read_text() == "a\nb\n"


# ------------------------------------------------------------------ sizes (issue 27 item 3, sweep / reproduce)
MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
           "print(r.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
           "print(r.stderr, end='')")


@pytest.mark.parametrize("args,want", [
    (["sweep", str(FASTA), "--grid", "n=3 l=1000000000"], "too large: a run of "),
    (["sweep", str(FASTA), "--grid", "n=2 l=1", "--repeats", "1000000000"], "= 4000000000 runs, more than"),
    (["reproduce", "synthetic", "--repeats", "1000000000"], "runs, more than the 100000"),
    (["reproduce", "synthetic", "--grid", "3:1000000000"], "too large: a run of "),
    (["reproduce", "factorization", "--repeats", "1000000000"], "runs, more than the 1000000"),
    (["reproduce", "pos-induction", "--data", str(WORDS), "--seeds", "1000000000"], "runs (models x dims x seeds)"),
])
def test_absurd_sweep_sizes_end_up_front_within_a_small_memory_budget(tmp_path, args, want):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    r = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "densehmm_core", *args,
                        "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=120)
    code, peak_kb, *err = r.stdout.splitlines()
    err = [ln for ln in err if ln.strip() and not ln.startswith("note: ")]   # the data's notes (records skipped)
    assert int(code) == 2 and len(err) == 1 and want in err[0], r.stdout
    assert int(peak_kb) < 400_000  # KiB: the refusal allocates nothing big (the runs would need GB to TB)
    assert not (tmp_path / "o" / "sweep_runs.csv").exists()


def test_jobs_far_above_the_cores_are_lowered_with_a_note(capsys):
    from densehmm_core.experiments.cli import JOBS_PER_CORE, _cap_jobs, _default_jobs
    cap = JOBS_PER_CORE * _default_jobs()
    assert _cap_jobs(cap, "process", None) == cap and capsys.readouterr().err == ""
    assert _cap_jobs(cap + 20, "process", None) == cap
    assert f"note: --jobs {cap + 20} is more than" in capsys.readouterr().err
    assert _cap_jobs(cap + 20, "dask", "tcp://cluster:8786") == cap + 20  # a remote cluster's own cores


def test_pos_induction_resume_knows_its_data_and_extra_files_by_content(tmp_path, capsys):

    def run(*argv):
        return main(["reproduce", "pos-induction", *argv])
    data, extra = tmp_path / "words.conllu", tmp_path / "extra.txt"
    shutil.copy(WORDS, data)
    shutil.copy(DATA / "words_extra.txt", extra)
    argv = ["--data", str(data), "--extra", str(extra), "--out", str(tmp_path / "o"), "--quick",
            "--models", "baum-welch", "--seeds", "1", "--iterations", "2"]
    assert run(*argv) == 0
    rows = (tmp_path / "o" / "pos_induction_runs.csv").read_bytes()
    extra.write_text(extra.read_text() + "one more line\n")
    capsys.readouterr()
    assert run(*argv) == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and "extra (the extra files' content differs: 1 files recorded, 1 now)" in err[0]
    shutil.copy(DATA / "words_extra.txt", extra)
    data.write_text(data.read_text().replace("\tdog\t", "\tcat\t", 1))
    assert run(*argv) == 2
    err, _ = _err_lines(capsys)
    assert len(err) == 1 and "data (the file's content differs: " in err[0]
    assert (tmp_path / "o" / "pos_induction_runs.csv").read_bytes() == rows
    shutil.copy(WORDS, data)
    assert run(*argv) == 0
    assert "nothing to do: all 1 tasks are finished" in capsys.readouterr().out

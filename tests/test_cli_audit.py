"""Command-line audit A (B1-B9, D1-D6): flags a model does not use, the reader's warnings, --subset with
--extra, data without adjacent pairs, words holding spaces, a full stdout, the random-start note in
pipes, --encoding, and the error lines the docs quote."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from densehmm_core.modelfile import load_model, read_model_info
from clirun import cli, one_error  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
WORDS = REPO / "tests" / "fixtures" / "data" / "words.conllu"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "bad_wt.txt").write_text("The_DT dog_NN barks_VBZ\nA_DT cat NN_\n\nfoo_ bar_NN\n", encoding="utf-8")
    (tmp_path / "good_wt.txt").write_text("The_DT dog_NN barks_VBZ\nA_DT cat_NN sleeps_VBZ\n", encoding="utf-8")
    (tmp_path / "empty_rec.fasta").write_text(">a\nACGT\n>b\n>c\nGGTA\n", encoding="ascii")
    (tmp_path / "single.fa").write_text(">a\nA\n>b\nC\n>c\nA\n", encoding="ascii")
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9_NN est_VBZ bon_JJ\n".encode("latin-1"))
    (tmp_path / "space.conllu").write_text(
        "# sent_id = s1\n1\tI\tI\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n2\tpaid\tpay\tVERB\tVBD\t_\t0\troot\t_\t_\n"
        "3\t10 000\t10 000\tNUM\tCD\t_\t2\tobj\t_\t_\n4\teuros\teuro\tNOUN\tNNS\t_\t2\tobj\t_\t_\n\n"
        "# sent_id = s2\n1\tI\tI\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n2\tpaid\tpay\tVERB\tVBD\t_\t0\troot\t_\t_\n\n",
        encoding="utf-8")
    return tmp_path


# ------------------------------------------------------------------ B1: flags a standard HMM does not use
@pytest.mark.parametrize("flags, phrase", [
    (["--dim", "3"], "--dim needs --model dense"),
    (["--method", "em"], "--method em needs --model dense"),
    (["--method", "marginal"], "--method marginal needs --model dense"),
    (["--method", "cooc"], "--method cooc needs --model dense"),
])
def test_standard_refuses_dense_structure_flags(tmp_path, capsys, flags, phrase):
    rc, _, err = cli(capsys, "train", "demo", "--model", "standard", "--states", "3", "--iter", "1", *flags,
                     "--out", tmp_path / "z.h5")
    assert rc == 2
    one_error(err, phrase)
    assert not (tmp_path / "z.h5").exists()


def test_fair_standard_still_takes_dim(tmp_path, capsys):
    rc, _, err = cli(capsys, "train", "demo", "--model", "standard", "--fair", "--states", "3", "--dim", "2",
                     "--iter", "1", "--split", "0", "--out", tmp_path / "f.h5", "-q")
    assert rc == 0, err


def test_resume_refuses_flags_the_checkpoint_does_not_use_or_cannot_change(tmp_path, capsys):
    std, dense = tmp_path / "s.h5", tmp_path / "d.h5"
    assert cli(capsys, "train", "demo", "--model", "standard", "--states", "3", "--iter", "1", "--out", std,
               "--name", "s", "-q")[0] == 0
    assert cli(capsys, "train", "demo", "--states", "3", "--dim", "2", "--method", "em", "--iter", "1",
               "--out", dense, "--name", "d", "-q")[0] == 0
    may_em = "--resume may change --device, --iter, --tol, --lr, --mstep-steps)"   # not cooc's --steps, --finish
    for out, name, flags, phrase in ((std, "s", ["--dim", "2"], "--dim does not apply to the standard HMM"),
                                     (std, "s", ["--method", "em"], "--method does not apply to the standard HMM"),
                                     (dense, "d", ["--steps", "5"], "--steps applies to --method"),
                                     (dense, "d", ["--l2", "0.5"], "--l2 0.5 cannot be changed on --resume"),
                                     (dense, "d", ["--l2", "0.5"], may_em)):
        before = read_model_info(out, name)["history"]
        rc, _, err = cli(capsys, "train", "demo", "--out", out, "--name", name, "--resume", *flags, "-q")
        assert rc == 2, (flags, err)
        one_error(err, phrase)
        assert read_model_info(out, name)["history"] == before
    # the same value as the checkpoint's, and the options a resume may change, are fine
    rc, _, err = cli(capsys, "train", "demo", "--out", dense, "--name", "d", "--resume", "--l2", "0", "--iter", "1",
                     "--mstep-steps", "3", "-q")
    assert rc == 0, err
    assert load_model(dense, "d").get_config()["mstep_steps"] == 3


# ------------------------------------------------------------------ B2: the reader's warnings
def test_reader_warnings_are_notes_for_every_command_that_reads_data(files, capsys):
    bad = files / "bad_wt.txt"
    note = f"note: {bad}: 3 malformed tokens skipped"
    rc, _, err = cli(capsys, "train", bad, "--states", "2", "--dim", "2", "--method", "em", "--iter", "1",
                     "--split", "0", "--out", files / "m.h5")
    assert rc == 0 and any(ln.startswith(note) for ln in err), err
    for command in (["evaluate", files / "m.h5", bad], ["decode", files / "m.h5", bad]):
        rc, _, err = cli(capsys, *command)
        assert rc == 0 and sum(ln.startswith(note) for ln in err) == 1, err
        rc, _, err = cli(capsys, *command, "-q")
        assert rc == 0 and not any(ln.startswith("note:") for ln in err), err
    rc, _, err = cli(capsys, "train", files / "empty_rec.fasta", "--model", "standard", "--states", "2",
                     "--iter", "1", "--split", "0")
    assert rc == 0 and f"note: {files / 'empty_rec.fasta'}: 1 empty record skipped (first at line 3)" in err, err


def test_sweep_prints_the_reader_warnings_and_its_folder_errors_name_the_command(files, capsys):
    bad, out = files / "bad_wt.txt", files / "sw"
    base = ["sweep", bad, "--grid", "n=2 l=1 model=standard", "--repeats", "1", "--out", out, "--report-only",
            "--executor", "thread", "--jobs", "1"]
    rc, _, err = cli(capsys, *base)
    assert rc == 0 and any(ln.startswith(f"note: {bad}: 3 malformed tokens skipped") for ln in err), err
    rc, _, err = cli(capsys, *base, "--seed", "5")   # D6: another setting on the same folder
    assert rc == 2
    line = one_error(err, "holds runs made with other settings")
    assert line.startswith("densehmm sweep: error: ")


# ------------------------------------------------------------------ B4: --subset with --extra
def test_subset_counts_data_only_and_extra_sentences_stay_in_training(files, capsys):
    extra = files / "good_wt.txt"
    n_data = load_data(WORDS, observe="words").n_sequences
    n_extra = 2
    rc, _, err = cli(capsys, "train", WORDS, "--observe", "words", "--extra", extra, "--subset", "4", "--split", "0",
                     "--states", "2", "--dim", "2", "--method", "em", "--iter", "1", "--out", files / "x.h5", "-q")
    assert rc == 0, err
    info = read_model_info(files / "x.h5")
    assert info["metrics"]["train_n_sequences"] == 4 + n_extra
    # with a split the extra (unlabelled) sentences all train; the test part is DATA's, as evaluate splits it
    rc, _, err = cli(capsys, "train", WORDS, "--observe", "words", "--extra", extra, "--split", "0.5",
                     "--states", "2", "--dim", "2", "--method", "em", "--iter", "1", "--out", files / "y.h5", "-q")
    assert rc == 0, err
    metrics = read_model_info(files / "y.h5")["metrics"]
    assert metrics["test_n_sequences"] == round(n_data * 0.5)
    assert metrics["train_n_sequences"] == n_data - round(n_data * 0.5) + n_extra
    rc, out, err = cli(capsys, "evaluate", files / "y.h5", WORDS, "--split", "0.5", "--part", "test", "--json")
    import json
    assert rc == 0 and json.loads(out)["nll"] == pytest.approx(metrics["test_nll"], rel=1e-9)


def load_data(path, **kw):
    from densehmm_core import data
    return data.load(path, **kw)


def test_library_subset_with_extra_keeps_the_extra_files(files):
    full = load_data(WORDS, observe="words", extra=[files / "good_wt.txt"])
    sub = load_data(WORDS, observe="words", extra=[files / "good_wt.txt"], subset=3, subset_seed=1)
    assert sub.vocabulary == full.vocabulary
    assert sub.labelled().n_sequences == 3 and sub.n_sequences == 3 + 2
    assert sub.names[-2:] == full.names[-2:]
    assert sub.provenance["preprocessing"][0]["extra_kept"] == 2


# ------------------------------------------------------------------ B5: no adjacent pairs
@pytest.mark.parametrize("method", [None, "cooc_em"])
def test_cooc_without_adjacent_pairs_is_a_user_error(files, capsys, method):
    rc, _, err = cli(capsys, "train", files / "single.fa", "--states", "2", "--dim", "2", "--steps", "5",
                     "--split", "0", *(["--method", method] if method else []), "--out", files / "o.h5")
    assert rc == 2
    one_error(err, "use --method em")
    assert not (files / "o.h5").exists()


# ------------------------------------------------------------------ B6: words that hold a space
def test_decode_and_sample_keep_one_entry_per_token_for_words_with_spaces(files, capsys):
    model = files / "sp.h5"
    rc, _, err = cli(capsys, "train", files / "space.conllu", "--observe", "words", "--min-count", "1",
                     "--states", "2", "--dim", "2", "--method", "em", "--iter", "1", "--split", "0", "--out", model)
    assert rc == 0, err
    rc, out, err = cli(capsys, "decode", model, files / "space.conllu", "--symbols")
    assert rc == 0, err
    rows = [ln.split("\t") for ln in out.splitlines()]
    head = rows[0]
    for row in rows[1:]:
        d = dict(zip(head, row))
        n = int(d["length"])
        for col in ("states", "symbols", "words", "gold_tags", "mapped_tags"):
            assert len(d[col].split(" ")) == n, (col, d[col])
    first = dict(zip(head, rows[1]))
    assert first["words"] == "I paid 10\u00a0000 euros"
    rc, out, err = cli(capsys, "sample", model, "-n", "20", "--length", "5", "--seed", "3")
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 20 and all(len(ln.split(" ")) == 5 for ln in lines)
    assert any("10\u00a0000" in ln for ln in lines)


# ------------------------------------------------------------------ B7: a full standard output
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["sample", "info", "decode", "evaluate"])
def test_a_full_stdout_is_one_line_exit_2(tmp_path, capsys, command):
    model = tmp_path / "m.h5"
    assert cli(capsys, "train", "demo", "--model", "standard", "--states", "2", "--iter", "1", "--out", model,
               "-q")[0] == 0
    argv = {"sample": ["sample", model, "-n", "3"], "info": ["info", model],
            "decode": ["decode", model, "demo"], "evaluate": ["evaluate", model, "demo"]}[command]
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "densehmm_core", *map(str, argv)], cwd=tmp_path, env=env,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert lines == [f"densehmm {command}: error: cannot write the output: the disk is full "
                     f"(no space left on device)"], lines


# ------------------------------------------------------------------ B8: the random-start note in pipes
def test_random_start_note_without_a_progress_bar(files, capsys):
    argv = ["train", files / "single.fa", "--states", "2", "--dim", "2", "--method", "em", "--iter", "1",
            "--split", "0"]
    rc, _, err = cli(capsys, *argv)   # stderr is not a terminal here: no bar
    assert rc == 0 and "note: training starts randomly: no spectral start, no adjacent pairs" in err, err
    rc, _, err = cli(capsys, *argv, "-q")
    assert rc == 0 and err == [], err


# ------------------------------------------------------------------ B9: --encoding
def test_undecodable_text_names_the_encoding_option(files, capsys):
    rc, _, err = cli(capsys, "train", files / "latin1.txt", "--states", "2", "--dim", "2", "--out", files / "e.h5")
    assert rc == 2
    line = one_error(err, "undecodable text: not valid utf-8 (byte 0xe9 at column 4); pass --encoding latin-1")
    assert "encoding='" not in line
    rc, _, err = cli(capsys, "train", files / "latin1.txt", "--encoding", "latin-1", "--states", "2", "--dim", "2",
                     "--method", "em", "--iter", "1", "--split", "0", "--out", files / "e.h5", "-q")
    assert rc == 0, err
    assert load_model(files / "e.h5").provenance_["options"]["encoding"] == "latin-1"
    rc, out, err = cli(capsys, "evaluate", files / "e.h5", files / "latin1.txt", "--encoding", "latin-1", "--json")
    assert rc == 0, err
    from densehmm_core.data import DataFormatError
    with pytest.raises(DataFormatError, match="pass encoding='latin-1'"):   # the library keeps its own hint
        load_data(files / "latin1.txt")


# ------------------------------------------------------------------ D1, D5: error lines
def test_missing_data_file_names_the_command(tmp_path, capsys):
    rc, _, err = cli(capsys, "train", tmp_path / "seqs.fast", "--states", "2")
    assert rc == 2 and err == [f"densehmm train: error: cannot open {tmp_path / 'seqs.fast'}: no such file"], err


def test_unk_hint_only_for_word_models(files, capsys):
    (files / "tags_a.txt").write_text("a_X b_Y a_X\nb_Y a_X\n", encoding="utf-8")
    (files / "tags_b.txt").write_text("a_X c_Z\n", encoding="utf-8")
    model = files / "t.h5"
    assert cli(capsys, "train", files / "tags_a.txt", "--model", "standard", "--states", "2", "--iter", "1",
               "--split", "0", "--out", model, "-q")[0] == 0
    rc, _, err = cli(capsys, "evaluate", model, files / "tags_b.txt")
    assert rc == 2
    line = one_error(err, "--skip-unknown leaves out the 1 of 1 sequences holding them")
    assert "<unk>" not in line and "word model" not in line

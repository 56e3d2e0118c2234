"""Command-line audit 24: --preset on data read for a model (evaluate, decode), the reader flags the notes
name (--mol, --skip-bad-sentences, --collapse-tags, --alphabet, --nucleotide), export into a folder that
holds an export already, --quiet keeping the result, info showing the preprocessing whole, standard input
given twice, and error lines in the command line's words."""
from __future__ import annotations

import io
import json
import random
import sys

import pytest

from densehmm_core.modelfile import load_model
from clirun import cli, one_error  # noqa: E402

REPO_FIXTURES = __import__("pathlib").Path(__file__).resolve().parent / "fixtures" / "data"


def _fasta(path, records):
    path.write_text("".join(f">r{i}\n{s}\n" for i, s in enumerate(records)), encoding="ascii")
    return path


# ------------------------------------------------------------------ 1: --preset on evaluation data
@pytest.fixture
def preset_model(tmp_path, capsys):
    """A standard HMM trained with --preset reference_code_protein (merge below 5 %): M and H are frequent in
    its training data (known symbols), W and Y are rare (merged into '<other>'); rare.fa holds M and H rarely."""
    rng = random.Random(0)
    train = [''.join(rng.choice("ACDEMH") for _ in range(120)) + ("WY" if i == 0 else "") for i in range(30)]
    _fasta(tmp_path / "train.fa", train)
    _fasta(tmp_path / "rare.fa", [''.join(rng.choice("ACDE") for _ in range(200)) + "MH" for _ in range(20)])
    rc, _, err = cli(capsys, "train", tmp_path / "train.fa", "--preset", "reference_code_protein", "--model",
                     "standard", "--states", "2", "--iter", "2", "--split", "0", "--out", tmp_path / "p.h5", "-q")
    assert rc == 0, err
    vocab = load_model(tmp_path / "p.h5").vocabulary
    assert "M" in vocab and "H" in vocab and "<other>" in vocab and "W" not in vocab
    return tmp_path


def test_preset_does_not_merge_evaluation_data_again(preset_model, capsys):
    d = preset_model
    rc, out, err = cli(capsys, "decode", d / "p.h5", d / "rare.fa", "--preset", "reference_code_protein",
                       "--symbols", "--subset", "1")
    assert rc == 0, err
    row = out.splitlines()[1].split("\t")
    assert row[-1].split()[-2:] == ["M", "H"]      # before: '<other> <other>' (merged by rare.fa's own counts)
    notes = [ln for ln in err if "--preset reference_code_protein" in ln]
    assert len(notes) == 1 and "--merge-below 0.05 not applied" in notes[0], err

    rc, with_preset, _ = cli(capsys, "evaluate", d / "p.h5", d / "rare.fa", "--preset", "reference_code_protein",
                             "--json")
    rc2, without, _ = cli(capsys, "evaluate", d / "p.h5", d / "rare.fa", "--json")
    assert rc == rc2 == 0
    assert json.loads(with_preset)["loglik"] == json.loads(without)["loglik"]


def test_preset_keeps_its_choice_of_sequences_on_evaluation_data(preset_model, capsys):
    """The preset's max_len (500) still cuts the sequences: --split/--part find the training split."""
    d = preset_model
    _fasta(d / "long.fa", ["ACDEMH" * 100, "ACDE" * 10])
    rc, out, err = cli(capsys, "evaluate", d / "p.h5", d / "long.fa", "--preset", "reference_code_protein", "--json")
    assert rc == 0, err
    assert json.loads(out)["n_tokens"] == 500 + 40


def test_a_preset_that_builds_a_vocabulary_is_refused_for_a_model(tmp_path, capsys, monkeypatch):
    from densehmm_core.data import PRESETS
    monkeypatch.setitem(PRESETS, "vocab_test", {"format": "conllu", "load": {"observe": "words", "min_count": 3},
                                                "preprocess": {}})
    rc, _, err = cli(capsys, "train", REPO_FIXTURES / "words.conllu", "--observe", "words", "--min-count", "1",
                     "--model", "standard", "--states", "2", "--iter", "1", "--split", "0", "--out",
                     tmp_path / "w.h5", "-q")
    assert rc == 0, err
    rc, _, err = cli(capsys, "evaluate", tmp_path / "w.h5", REPO_FIXTURES / "words.conllu", "--preset", "vocab_test")
    assert rc == 2
    one_error(err, "--preset vocab_test builds a vocabulary (--min-count 3)")


# ------------------------------------------------------------------ 2: the reader flags the notes name
PDBMIX = ">1_A mol:protein length:4  P\nACDE\n>2_A mol:na length:4  D\nACGT\n>3_A mol:protein length:4  P\nMHCA\n"


def test_mol_flag_and_the_note_naming_it(tmp_path, capsys):
    (tmp_path / "mix.fasta").write_text(PDBMIX, encoding="ascii")
    args = ["--model", "standard", "--states", "2", "--iter", "1", "--split", "0"]
    rc, _, err = cli(capsys, "train", tmp_path / "mix.fasta", *args, "--out", tmp_path / "p.h5")
    assert rc == 0, err
    note = [ln for ln in err if "molecule type" in ln]
    assert len(note) == 1 and "pass --mol all to keep every record" in note[0] and "mol='all'" not in note[0]
    rc, _, err = cli(capsys, "train", tmp_path / "mix.fasta", *args, "--mol", "all", "--out", tmp_path / "a.h5")
    assert rc == 0 and not [ln for ln in err if "molecule type" in ln], err
    assert load_model(tmp_path / "a.h5").provenance_["n_sequences"] == 3
    # evaluate reads DATA as the model's training data were read (mol all), without a flag
    rc, out, err = cli(capsys, "evaluate", tmp_path / "a.h5", tmp_path / "mix.fasta", "--json")
    assert rc == 0 and json.loads(out)["n_sequences"] == 3, err
    rc, _, err = cli(capsys, "train", REPO_FIXTURES / "words.conllu", *args, "--mol", "all")
    assert rc == 2
    one_error(err, "--mol does not apply to format 'conllu'")


def test_skip_bad_sentences_flag_and_the_error_naming_it(tmp_path, capsys):
    good = REPO_FIXTURES / "words.conllu"
    text = good.read_text(encoding="utf-8")
    (tmp_path / "cut.conllu").write_text(text + "# sent_id = cut\n1\tHe\n", encoding="utf-8")
    args = ["--model", "standard", "--states", "2", "--iter", "1", "--split", "0"]
    rc, _, err = cli(capsys, "train", tmp_path / "cut.conllu", *args)
    assert rc == 2
    one_error(err, "wrong column count").endswith("(--skip-bad-sentences reads the complete sentences and counts "
                                                  "the broken ones)")
    rc, _, err = cli(capsys, "train", tmp_path / "cut.conllu", *args, "--skip-bad-sentences",
                     "--out", tmp_path / "c.h5")
    assert rc == 0, err
    assert any("1 incomplete or broken sentence skipped" in ln for ln in err), err


def test_collapse_tags_alphabet_and_nucleotide_flags(tmp_path, capsys):
    args = ["--model", "standard", "--states", "2", "--iter", "1", "--split", "0"]
    brown = REPO_FIXTURES / "brown.txt"
    rc, _, err = cli(capsys, "train", brown, *args, "--out", tmp_path / "b.h5", "-q")
    assert rc == 0, err
    rc, _, err = cli(capsys, "train", brown, *args, "--collapse-tags", "--out", tmp_path / "bc.h5", "-q")
    assert rc == 0, err
    plain, collapsed = load_model(tmp_path / "b.h5").vocabulary, load_model(tmp_path / "bc.h5").vocabulary
    assert "nn-tl" in plain and "nn-tl" not in collapsed and len(collapsed) < len(plain)

    _fasta(tmp_path / "p.fa", ["ACDEB", "MHCAZ"])
    rc, _, err = cli(capsys, "train", tmp_path / "p.fa", *args, "--alphabet", "protein20", "--out", tmp_path / "a.h5")
    assert rc == 0, err
    assert load_model(tmp_path / "a.h5").vocabulary == list("ACDEFGHIKLMNPQRSTVWYX")
    _fasta(tmp_path / "rna.fa", ["ACGU", "UUGA"])
    rc, _, err = cli(capsys, "train", tmp_path / "rna.fa", *args, "--nucleotide", "dna", "--out", tmp_path / "n.h5")
    assert rc == 0, err
    assert load_model(tmp_path / "n.h5").vocabulary == ["A", "C", "G", "T"]


# ------------------------------------------------------------------ 3: export into a folder
@pytest.fixture
def two_models(tmp_path, capsys):
    for name, extra in (("feat", ["--symbol-features", "orthographic"]), ("plain", [])):
        rc, _, err = cli(capsys, "train", REPO_FIXTURES / "words.conllu", "--observe", "words", "--min-count", "1",
                         "--model", "dense", "--method", "em", "--states", "2", "--dim", "2", "--iter", "1",
                         "--split", "0", "--device", "cpu", *extra, "--out", tmp_path / "m.h5", "--name", name, "-q")
        assert rc == 0, err
    return tmp_path


def test_export_replaces_a_previous_export_and_refuses_other_folders(two_models, capsys):
    d = two_models
    rc, _, err = cli(capsys, "export", d / "m.h5", d / "out", "--name", "feat")
    assert rc == 0, err
    assert (d / "out" / "feature_V.csv").exists()
    rc, out, err = cli(capsys, "export", d / "m.h5", d / "out", "--name", "plain")
    assert rc == 0, err
    from densehmm_core.export import model_tables
    assert sorted(p.name for p in (d / "out").iterdir()) == sorted(model_tables(d / "m.h5", "plain"))
    assert not (d / "out" / "feature_V.csv").exists()     # before: the feat model's file stayed

    (d / "mine").mkdir()
    (d / "mine" / "notes.txt").write_text("keep me")
    rc, _, err = cli(capsys, "export", d / "m.h5", d / "mine", "--name", "plain")
    assert rc == 2
    one_error(err, "holds files that are not a CSV export ('notes.txt'): nothing written")
    assert [p.name for p in (d / "mine").iterdir()] == ["notes.txt"]


def test_export_errors_name_the_real_problem(two_models, capsys):
    d = two_models
    rc, _, err = cli(capsys, "export", d / "m.h5", "", "--name", "plain")
    assert rc == 2
    one_error(err, "OUT is empty: give a folder, or a file name ending in .zip")
    import os
    if os.path.isdir("/proc") and not os.path.exists("/proc/densehmm_x.zip"):
        for target in ("/proc/densehmm_x.zip", "/proc/densehmm_x"):
            rc, _, err = cli(capsys, "export", d / "m.h5", target, "--name", "plain")
            assert rc == 2
            line = one_error(err, "cannot write in the folder /proc")
            assert "does not exist" not in line


# ------------------------------------------------------------------ 4: --quiet keeps the result
def test_quiet_hides_notes_and_progress_never_the_result(preset_model, capsys):
    d = preset_model
    rc, out, err = cli(capsys, "evaluate", d / "p.h5", d / "rare.fa", "--preset", "reference_code_protein", "-q")
    assert rc == 0 and err == []
    assert "normalised NLL" in out                        # before: nothing at all
    rc, out, err = cli(capsys, "export", d / "p.h5", d / "csv", "-q")
    assert rc == 0 and err == [] and out.startswith("wrote ")
    rc, out, err = cli(capsys, "train", d / "train.fa", "--model", "standard", "--states", "2", "--iter", "1",
                       "--split", "0", "--out", d / "q.h5", "-q")
    assert rc == 0 and err == []
    assert out.startswith("stopped: ") and "saved standard model" in out


# ------------------------------------------------------------------ 5: info shows the preprocessing whole
def test_info_shows_the_preprocessing_whole(preset_model, capsys):
    rc, out, _ = cli(capsys, "info", preset_model / "p.h5")
    assert rc == 0
    text = " ".join(ln.strip() for ln in out.splitlines())
    steps = load_model(preset_model / "p.h5").provenance_["preprocessing"]
    assert len(json.dumps(steps)) > 60
    for step in steps:
        for key, value in step.items():
            assert f'"{key}": {json.dumps(value)}' in text, (key, text)


# ------------------------------------------------------------------ 6: standard input given twice
def test_standard_input_twice_is_one_clear_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((REPO_FIXTURES / "word_tag.txt").read_bytes())))
    rc, _, err = cli(capsys, "train", "-", "--extra", "-", "--observe", "words", "--model", "standard",
                     "--states", "2")
    assert rc == 2
    one_error(err, "standard input can be read only once")


# ------------------------------------------------------------------ 7: the command line's words
@pytest.mark.parametrize("flag, phrase", [
    (["--subset", "0"], "--subset must be >= 1"),
    (["--max-len", "0"], "--max-len must be >= 1"),
    (["--min-len", "0"], "--min-len must be >= 1"),
    (["--chunk", "0"], "--chunk must be >= 1"),
    (["--merge-below", "2"], "--merge-below is a fraction"),
    (["--keep-traces"], "--keep-traces does not apply to format 'fasta'"),
])
def test_limit_errors_name_the_flags(tmp_path, capsys, flag, phrase):
    _fasta(tmp_path / "a.fa", ["ACDE", "CDEA"])
    rc, _, err = cli(capsys, "train", tmp_path / "a.fa", "--model", "standard", "--states", "2", *flag)
    assert rc == 2
    line = one_error(err, phrase)
    assert f"a.fa: {phrase}" in line          # before: 'subset must be >= 1', "option 'drop_traces' ..."


def test_evaluate_help_names_only_its_own_options(capsys):
    from densehmm_core.cli import main
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--extra" not in text and "initialisation" not in text
    assert "seed of the split (with --split: the one used for training)" in text


def test_a_zero_nll_is_printed_as_0(tmp_path, capsys):
    from densehmm_core.cli.train import _number
    assert _number(-0.0) == "0" and _number(0.0) == "0" and _number(-1.5) == "-1.5"
    _fasta(tmp_path / "one.fa", ["AAAA", "AAA"])
    rc, out, err = cli(capsys, "train", tmp_path / "one.fa", "--model", "standard", "--states", "1", "--iter", "1",
                       "--split", "0")
    assert rc == 0, err
    assert "train_nll 0" in out and "-0" not in out


def test_the_message_flag_table_names_real_flags():
    """commandline.OPTION_FLAGS (what messages say) and DATA_OPTION_DESTS (what a sweep records) must name
    flags the parser has: a renamed flag would otherwise leave messages pointing at a flag that is gone."""
    from densehmm_core.cli.parser import build_parser
    from densehmm_core.commandline import DATA_OPTION_DESTS, OPTION_FLAGS
    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    train.parse_known_args(["demo"])            # the train command adds its metadata flags on use
    flags = {s for a in train._actions for s in a.option_strings}
    dests = {a.dest for a in train._actions}
    assert set(OPTION_FLAGS.values()) <= flags, set(OPTION_FLAGS.values()) - flags
    assert set(DATA_OPTION_DESTS) <= dests, set(DATA_OPTION_DESTS) - dests


@pytest.mark.parametrize("flags", [["--subset", "3"], ["--max-len", "5"], ["--chunk", "50"], ["--format", "fasta"],
                                   ["--mol", "all"], ["--lowercase"], ["--min-count", "5"], ["--keep-traces"],
                                   ["--encoding", "latin-1"], ["--extra", "x.txt"], ["--merge-below", "0.5"]])
def test_reading_options_with_the_demo_are_one_line(tmp_path, capsys, flags):
    """The demo data are generated, not read: a reading option given with them changed nothing and was
    accepted silently (docs/CLI.md says an option that does not apply is an error)."""
    rc, _, err = cli(capsys, "train", "demo", "--states", "2", "--dim", "1", "--method", "em", "--iter", "1",
                     "--out", tmp_path / "m.h5", "-q", *flags)
    assert rc == 2
    one_error(err, f"{flags[0]} applies to data files; the demo data are generated")
    assert not (tmp_path / "m.h5").exists()
    if flags[0] in ("--subset", "--max-len", "--chunk", "--format", "--encoding"):   # evaluate/decode take these
        assert cli(capsys, "train", "demo", "--states", "2", "--dim", "1", "--method", "em", "--iter", "1",
                   "--out", tmp_path / "m.h5", "-q")[0] == 0
        for command in ("evaluate", "decode"):
            rc, _, err = cli(capsys, command, tmp_path / "m.h5", "demo", *flags)
            assert rc == 2
            one_error(err, f"{flags[0]} applies to data files")

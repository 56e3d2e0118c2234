"""The command line on words (issue 14): word options of train, tagging scores in evaluate, word / gold /
mapped-tag columns in decode, errors (issue 16: a preset for another format exits 2).

Runs ``densehmm_core.cli.main`` in-process (fast); the subprocess behaviour is covered by test_cli.py.
"""
import json
import pathlib

import numpy as np
import pytest

from densehmm_core.cli import main
from densehmm_core.data import load
from densehmm_core.metrics import tagging_scores
from densehmm_core.modelfile import load_model, read_model_info

FIX = pathlib.Path(__file__).parent / "fixtures" / "data"
WORDS = FIX / "words.conllu"
EXTRA = FIX / "words_extra.txt"
WORD_OPTS = ["--observe", "words", "--lowercase", "--min-count", "2", "--rare", "shape"]


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def model_file(tmp_path, capsys):
    path = tmp_path / "w.h5"
    rc, out, err = _run(capsys, ["train", WORDS, *WORD_OPTS, "--extra", EXTRA, "--model", "standard",
                                 "--states", "4", "--iter", "5", "--split", "0", "--seed", "3", "--out", path, "-q"])
    assert rc == 0, err
    return path


def test_train_builds_one_vocabulary_over_both_files_and_stores_tags(model_file):
    model = load_model(model_file)
    # union counts (hand-counted in test_data_words): the 5, . 5, dog 4, runs 3, vinken 2
    assert model.vocabulary[:5] == [".", "dog", "runs", "the", "vinken"]
    assert "<unk-caps>" in model.vocabulary and "<unk-ed>" in model.vocabulary
    assert model.tag_vocabulary == ["ADJ", "ADP", "ADV", "AUX", "DET", "NOUN", "NUM", "PROPN", "PUNCT", "VERB"]
    info = read_model_info(model_file)
    assert [e["file"] for e in info["provenance"]["extra"]] == ["words_extra.txt"]
    # the final metrics score the sentences with gold tags (those of words.conllu only)
    corpus = load(WORDS, observe="words", lowercase=True, min_count=2, rare="shape", extra=[EXTRA])
    gold = corpus.labelled()
    paths, _ = model.decode(gold.sequences)
    expect = tagging_scores(paths, gold.tags, n_states=4, n_tags=10)
    assert model.metrics_["train_m1"] == pytest.approx(expect["m1"])
    assert model.metrics_["train_v_measure"] == pytest.approx(expect["v_measure"])


def test_evaluate_prints_tagging_scores_read_like_the_training_data(model_file, capsys):
    # no --observe / --lowercase: taken from the model's training provenance
    rc, out, err = _run(capsys, ["evaluate", model_file, WORDS, "--json"])
    assert rc == 0, err
    res = json.loads(out)
    model = load_model(model_file)
    # oracle: the data as written, each word lower-cased or sent to its shape class by hand
    data = load(WORDS, observe="words", min_count=1)
    from densehmm_core.data import word_shape
    idx = {w: i for i, w in enumerate(model.vocabulary)}
    seqs = [np.array([idx.get(w.lower(), idx.get(word_shape(w))) for w in data.decode(s)]) for s in data.sequences]
    paths, _ = model.decode(seqs)
    expect = tagging_scores(paths, data.tags, n_states=4, n_tags=data.n_tags)
    t = res["tagging"]
    assert t["m1"] == pytest.approx(expect["m1"]) and t["one_to_one"] == pytest.approx(expect["one_to_one"])
    assert t["v_measure"] == pytest.approx(expect["v_measure"]) and t["n_tokens"] == 26 and t["n_tags"] == 10
    assert t["mapping"] == {str(i): (data.tag_vocabulary[k] if k >= 0 else None)
                            for i, k in enumerate(expect["mapping"].tolist())}
    assert res["nll"] == pytest.approx(-model.score(seqs) / 26)
    rc, text, _ = _run(capsys, ["evaluate", model_file, WORDS])
    assert "many-to-one (M-1)" in text and f"{expect['m1']:.4f}" in text and "V-measure" in text


def test_evaluate_on_untagged_data_prints_no_tagging(tmp_path, capsys):
    fasta = FIX / "pdb_seqres_like.fasta"
    path = tmp_path / "p.h5"
    assert _run(capsys, ["train", fasta, "--model", "standard", "--states", "2", "--iter", "2", "--split", "0",
                         "--out", path, "-q"])[0] == 0
    rc, out, _ = _run(capsys, ["evaluate", path, fasta, "--json"])
    assert rc == 0 and "tagging" not in json.loads(out)


def test_decode_columns_words_gold_and_mapped_tags(model_file, capsys):
    rc, out, err = _run(capsys, ["decode", model_file, WORDS, "--symbols"])
    assert rc == 0, err
    lines = out.splitlines()
    header = lines[0].split("\t")
    assert header == ["index", "id", "length", "log_prob", "states", "symbols", "words", "gold_tags", "mapped_tags"]
    rows = [dict(zip(header, ln.split("\t"))) for ln in lines[1:]]
    data = load(WORDS, observe="words", min_count=1)
    assert [r["id"] for r in rows] == data.names
    assert [r["words"].split(" ") for r in rows] == [data.decode(s) for s in data.sequences]
    assert [r["gold_tags"].split(" ") for r in rows] == [[data.tag_vocabulary[t] for t in ts] for ts in data.tags]
    # mapped tag = the M-1 tag of each token's state on these data
    states = [np.array(r["states"].split(" "), dtype=int) for r in rows]
    mapping = tagging_scores(states, data.tags, n_states=4)["mapping"]
    for r, s in zip(rows, states):
        assert r["mapped_tags"].split(" ") == [data.tag_vocabulary[mapping[k]] for k in s]
    assert rows[2]["symbols"].split(" ")[:3] == ["<unk-caps>", "<unk-ed>", "<unk-num>"]   # NASA launched 3


def test_decode_without_gold_tags_or_words_keeps_the_old_columns(tmp_path, capsys):
    fasta = FIX / "pdb_seqres_like.fasta"
    path = tmp_path / "p.h5"
    assert _run(capsys, ["train", fasta, "--model", "standard", "--states", "2", "--iter", "2", "--split", "0",
                         "--out", path, "-q"])[0] == 0
    rc, out, _ = _run(capsys, ["decode", path, fasta])
    assert out.splitlines()[0].split("\t") == ["index", "id", "length", "log_prob", "states"]


@pytest.mark.parametrize("argv,phrase", [
    (["train", WORDS, "--lowercase", "--model", "standard", "--states", "2"], "--lowercase needs --observe words"),
    (["train", WORDS, "--preset", "paper_protein", "--model", "standard", "--states", "2"],
     "preset 'paper_protein' is meant for fasta files, not conllu"),
    (["train", WORDS, "--observe", "words", "--extra", FIX / "missing.txt", "--model", "standard", "--states", "2"],
     "missing.txt: no such file"),
    (["train", WORDS, "--observe", "words", "--rare", "shape", "--max-vocab", "3", "--model", "standard",
      "--states", "2"], "too small"),
    (["train", WORDS, "--rare", "shape", "--model", "standard", "--states", "2"], "needs --observe words"),
])
def test_word_option_errors_exit_2_with_one_line(tmp_path, capsys, argv, phrase):
    rc, out, err = _run(capsys, [*argv, "--out", tmp_path / "x.h5"])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and phrase in lines[0], err


def test_decode_another_format_with_an_unk_model(tmp_path, capsys):
    """A model trained on CoNLL-U words (rare words -> <unk>) decodes a word/TAG file: the training
    options that apply (observe, lowercase) are used, tagset (CoNLL-U only) is not; unknown words
    go to <unk>."""
    path = tmp_path / "u.h5"
    rc, _, err = _run(capsys, ["train", WORDS, "--observe", "words", "--lowercase", "--min-count", "2",
                               "--tagset", "xpos", "--model", "standard", "--states", "3", "--iter", "3",
                               "--split", "0", "--out", path, "-q"])
    assert rc == 0, err
    assert load_model(path).vocabulary == [".", "dog", "runs", "the", "<unk>"]
    rc, out, err = _run(capsys, ["decode", path, EXTRA, "--symbols"])
    assert rc == 0, err
    rows = [ln.split("\t") for ln in out.splitlines()]
    assert rows[0] == ["index", "id", "length", "log_prob", "states", "symbols", "words", "gold_tags",
                       "mapped_tags"]
    assert rows[1][5] == "the dog <unk> ." and rows[1][6] == "The dog ran ."
    assert rows[2][5] == "<unk> runs ." and rows[2][7] == "np-tl vbz ."   # the file's own tags (as read)


def test_pseudocount_makes_held_out_words_possible_and_evaluate_says_why(tmp_path, capsys):
    """Plain Baum-Welch on a word split: held-out sentences with words the training part lacks are
    impossible (-inf); train and evaluate say how many and name --pseudocount; with it they are finite."""
    common = ["train", WORDS, "--observe", "words", "--min-count", "1", "--model", "standard", "--states", "3",
              "--iter", "4",
              "--split", "0.5", "--seed", "1", "-q"]
    data = load(WORDS, observe="words", min_count=1)
    plain, smooth = tmp_path / "plain.h5", tmp_path / "smooth.h5"
    rc, _, err = _run(capsys, [*common, "--out", plain])
    assert rc == 0, err
    rc, _, err = _run(capsys, [*common, "--pseudocount", "0.01", "--out", smooth])
    assert rc == 0, err
    assert load_model(smooth).get_config()["emission_pseudocount"] == 0.01
    for path, impossible in ((plain, True), (smooth, False)):
        model = load_model(path)
        rc, out, err = _run(capsys, ["evaluate", path, WORDS, "--split", "0.5", "--seed", "1", "--part", "test",
                                     "--json"])
        assert rc == 0, err
        res = json.loads(out)
        # the oracle: the model's own per-sentence scores of the same test part (Corpus.split, seed 1)
        per = model.score_per_sequence(data.split(0.5, seed=1)[1].sequences)
        assert res["n_impossible"] == int(np.sum(per == -np.inf))
        assert (res["n_impossible"] > 0) is impossible
        assert (res["loglik"] is None) is impossible        # -inf is written as null
        rc, out, err = _run(capsys, ["evaluate", path, WORDS, "--split", "0.5", "--seed", "1", "--part", "test"])
        assert ("--pseudocount" in out) is impossible
        assert (f"of {res['n_sequences']} sequences are impossible" in out) is impossible


def test_default_word_model_reads_unseen_words_and_says_how_many(tmp_path, capsys):
    """Issue 24.1: a word model trained with the default options has <unk>; evaluating another file
    reads the words it never saw as <unk> and says how many; a model without <unk> (--min-count 1)
    fails with the count and the way out, and --skip-unknown leaves those sentences out."""
    default, every = tmp_path / "d.h5", tmp_path / "e.h5"
    base = ["train", WORDS, "--observe", "words", "--model", "standard", "--states", "2", "--iter", "2",
            "--split", "0", "-q"]
    assert _run(capsys, [*base, "--out", default])[0] == 0
    assert _run(capsys, [*base, "--min-count", "1", "--out", every])[0] == 0
    assert load_model(default).vocabulary == [".", "The", "dog", "runs", "the", "<unk>"]
    rc, out, err = _run(capsys, ["evaluate", default, EXTRA, "--json"])
    assert rc == 0 and json.loads(out)["n_tokens"] == 7
    assert "2 symbol(s) the model does not know (2 of 7 tokens; e.g. 'Vinken', 'ran'): read as '<unk>'" in err
    rc, out, err = _run(capsys, ["evaluate", every, EXTRA])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "1 symbol(s) not in the vocabulary: 'ran' (1 of 7 tokens)" in lines[0]
    assert "--skip-unknown leaves out the 1 of 2 sequences" in lines[0]
    rc, out, err = _run(capsys, ["evaluate", every, EXTRA, "--skip-unknown", "--json"])
    model = load_model(every)
    seq = np.array([model.vocabulary.index(w) for w in ["Vinken", "runs", "."]])
    assert rc == 0 and json.loads(out)["loglik"] == pytest.approx(model.score([seq]))
    assert "left out the 1 of 2 sequences holding them" in err


def test_split_help_says_what_split_means_for_each_command(capsys):
    """Issue 24.12: train's --split is the held-out fraction (default 0.5); evaluate's and decode's
    choose the part of a split used for training (no default), without train's default."""
    import re
    texts = {}
    for cmd in ("train", "evaluate", "decode"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        out = re.sub(r"\s+", " ", capsys.readouterr().out)
        texts[cmd] = out[out.rindex("--split F") + 9:].split(" --seed")[0]   # the option, not the usage line
    assert "held out as test data (default 0.5; 0 = no test set)" in texts["train"]
    for cmd in ("evaluate", "decode"):
        assert "the test fraction the model was trained with" in texts[cmd] and "0.5" not in texts[cmd]
        assert "default: no split, all of DATA" in texts[cmd]

"""The ``densehmm`` command line, end to end in subprocesses (``python -m densehmm_core``)."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from densehmm_core.modelfile import list_models, load_model, read_model_info

REPO = pathlib.Path(__file__).resolve().parent.parent


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env.pop("COLUMNS", None)
    return env


def run(args, cwd, timeout=240):
    proc = subprocess.run([sys.executable, "-m", "densehmm_core", *map(str, args)], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=timeout)
    return proc


def ok(args, cwd, timeout=240):
    proc = run(args, cwd, timeout)
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def user_error(args, cwd, phrase):
    proc = run(args, cwd)
    assert proc.returncode == 2, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("densehmm") and "error:" in lines[0]
    assert phrase in lines[0], lines[0]
    return lines[0]


def _demo_parts(seed=0):
    from densehmm_core.synthetic import demo_dataset
    d = demo_dataset(seed)
    return d.train, d.test


# ------------------------------------------------------------------ startup and help
def test_help_is_fast_and_does_not_import_tensorflow(tmp_path):
    code = ("import sys, time; t = time.perf_counter(); from densehmm_core.cli import build_parser; "
            "build_parser().format_help(); print('tensorflow' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False", "False"]
    proc = ok(["--help"], tmp_path)
    assert "examples:" in proc.stdout and "train" in proc.stdout


@pytest.mark.parametrize("command", ["train", "evaluate", "info", "sample", "decode", "export"])
def test_every_command_has_help_with_examples(tmp_path, command):
    proc = ok([command, "--help"], tmp_path)
    assert proc.stdout.startswith(f"usage: densehmm {command}")
    assert "examples:" in proc.stdout and f"densehmm {command}" in proc.stdout.split("examples:")[1]


def test_in_process_main_returns_exit_codes(tmp_path, capsys):
    from densehmm_core.cli import main
    assert main(["info", str(tmp_path / "nope.h5")]) == 2
    err = capsys.readouterr().err
    assert "nope.h5: no such file" in err and "Traceback" not in err


# ------------------------------------------------------------------ synthetic data (always)
@pytest.fixture(scope="module")
def demo_model_file(tmp_path_factory):
    """A standard HMM trained on the built-in demo by the CLI."""
    d = tmp_path_factory.mktemp("demo")
    proc = ok(["train", "demo", "--model", "standard", "--states", "4", "--iter", "15", "--out", "m.h5",
               "--name", "std"], d)
    assert "saved standard model 'std' to m.h5" in proc.stdout
    return d, d / "m.h5"


def test_train_standard_on_demo_writes_a_complete_file(demo_model_file):
    d, path = demo_model_file
    info = read_model_info(path, "std")
    assert info["attrs"]["kind"] == "standard" and info["attrs"]["n_states"] == 4
    assert info["attrs"]["stop_reason"] in ("max_steps", "converged")
    assert info["config"]["n_iter"] == 15 and info["config"]["seed"] == 0
    assert info["provenance"]["n_sequences"] == 10 and info["provenance_test"]["n_sequences"] == 10
    train, test = _demo_parts()
    model = load_model(path, "std")
    from densehmm_core import metrics
    assert info["metrics"]["test_nll"] == pytest.approx(metrics.normalized_nll(model, test), rel=1e-12)
    assert info["metrics"]["train_nll"] == pytest.approx(metrics.normalized_nll(model, train), rel=1e-12)
    assert len(info["history"]) >= 2


def test_info_text_and_json(demo_model_file):
    d, path = demo_model_file
    text = ok(["info", "m.h5"], d).stdout
    assert "model 'std': standard HMM, n=4 states, m=5 symbols" in text
    assert "software" in text and "history" in text
    data = json.loads(ok(["info", "m.h5", "--json", "--arrays"], d).stdout)
    (m,) = data["models"]
    model = load_model(path)
    assert np.array_equal(np.array(m["arrays"]["transmat"]), model.transmat_)
    assert m["shapes"]["emissionprob"] == [4, 5]
    assert data["format"]["format"] == "densehmm-model"


def test_evaluate_matches_the_core_metrics(demo_model_file):
    d, path = demo_model_file
    from densehmm_core import metrics
    model = load_model(path)
    train, test = _demo_parts()
    out = json.loads(ok(["evaluate", "m.h5", "demo", "--part", "test", "--json"], d).stdout)
    assert out["nll"] == metrics.normalized_nll(model, test)
    assert out["paper_nll"] == metrics.paper_nll(model, test)
    from densehmm_core.maths import analytic_cooc, empirical_cooc
    omega = analytic_cooc(None, model.transmat_, model.emissionprob_)
    assert out["mad"] == metrics.cooc_mad(empirical_cooc(test, 5), omega)
    assert out["n_tokens"] == 2000
    text = ok(["evaluate", "m.h5", "demo"], d).stdout
    assert "normalised NLL" in text and "co-occurrence MAD" in text and "4000 tokens" in text


def test_sample_uses_the_vocabulary_and_the_seed(demo_model_file):
    d, path = demo_model_file
    model = load_model(path)
    out = ok(["sample", "m.h5", "-n", "4", "--length", "30", "--seed", "9"], d).stdout.splitlines()
    obs, _ = model.sample(4, 30, seed=9)
    assert out == ["".join(model.vocabulary[k] for k in o) for o in obs]
    again = ok(["sample", "m.h5", "-n", "4", "--length", "30", "--seed", "9"], d).stdout.splitlines()
    assert again == out
    fasta = ok(["sample", "m.h5", "-n", "2", "--length", "70", "--fasta", "--states"], d).stdout.splitlines()
    assert fasta[0].startswith(">sample_1") and len(fasta[1]) == 60


def test_decode_prints_viterbi_paths_as_tsv(demo_model_file):
    d, path = demo_model_file
    model = load_model(path)
    train, test = _demo_parts()
    lines = ok(["decode", "m.h5", "demo", "--part", "test", "--symbols"], d).stdout.splitlines()
    assert lines[0].split("\t") == ["index", "length", "log_prob", "states", "symbols"]
    paths, logprobs = model.decode(test)
    assert len(lines) == 1 + len(test)
    for line, seq, p, lp in zip(lines[1:], test, paths, logprobs):
        idx, length, logp, states, symbols = line.split("\t")
        assert int(length) == len(seq) and float(logp) == float(lp)
        assert np.array_equal(np.array(states.split(), dtype=int), p)
        assert symbols.split() == [model.vocabulary[k] for k in seq]


def test_export_command(demo_model_file):
    d, _ = demo_model_file
    ok(["export", "m.h5", "out.zip"], d)
    import zipfile
    with zipfile.ZipFile(d / "out.zip") as z:
        assert "transmat.csv" in z.namelist()


def test_dense_cooc_and_fair_standard_on_demo(tmp_path):
    ok(["train", "--demo", "--model", "dense", "--method", "cooc", "--states", "3", "--dim", "2",
        "--steps", "40", "--finish-steps", "3", "--device", "cpu", "--out", "d.h5", "--quiet"], tmp_path)
    ok(["train", "demo", "--model", "standard", "--fair", "--states", "3", "--dim", "2", "--iter", "3",
        "--out", "d.h5", "--quiet"], tmp_path)
    assert list_models(tmp_path / "d.h5") == ["dense_1", "standard_1"]
    dense = load_model(tmp_path / "d.h5", "dense_1")
    assert dense.fit_method == "cooc" and dense.dim == 2 and dense.get_config()["cooc_steps"] == 40
    from densehmm_core.standard import n_fair
    assert load_model(tmp_path / "d.h5", "standard_1").n_states == n_fair(3, 5, 2)
    lines = ok(["sample", "d.h5", "--name", "dense_1", "-n", "3", "--length", "12"], tmp_path).stdout.splitlines()
    assert len(lines) == 3 and all(len(x) == 12 for x in lines)


def test_user_errors_exit_2_with_one_line(tmp_path, demo_model_file):
    """A few user errors end to end in a subprocess (exit status, one line, no traceback)."""
    d, path = demo_model_file
    (tmp_path / "notes.txt").write_text("just text")
    user_error(["train", "missing.fasta", "--states", "3", "--out", "x.h5"], tmp_path, "missing.fasta: no such file")
    user_error(["train", "demo", "--states", "3", "--dim", "2", "--bogus"], tmp_path, "unrecognized arguments")
    # a near miss names the command's option (and only options of that command)
    user_error(["train", "demo", "--states", "3", "--iters", "5"], tmp_path, "(did you mean --iter?)")
    user_error(["info", str(path), "--histroy"], tmp_path, "(did you mean --history?)")
    # train has no --history: no suggestion from another command's options
    assert "did you mean" not in user_error(["train", "demo", "--histroy"], tmp_path, "unrecognized arguments")
    user_error(["info", str(path), "--nme", "a"], tmp_path, "(did you mean --name?)")
    assert "did you mean" not in user_error(["train", "demo", "--bogus"], tmp_path, "unrecognized arguments")
    user_error(["info", "notes.txt"], tmp_path, "not an HDF5 file")
    user_error(["decode", str(path), "notes.txt"], tmp_path, "notes.txt")  # unreadable data: DataFormatError
    # --debug shows the traceback
    proc = run(["info", "notes.txt", "--debug"], tmp_path)
    assert proc.returncode == 2 and "Traceback" in proc.stderr


@pytest.mark.parametrize("argv, phrase", [
    (["train", "demo", "--states", "0", "--dim", "2"], "--states must be > 0"),
    (["train", "demo", "--states", "3"], "--dim L is required"),
    (["train", "demo", "--model", "standard", "--method", "cooc", "--states", "3"],
     "--method cooc needs --model dense"),
    (["train", "demo", "--model", "standard", "--states", "3", "--lr", "0.1"], "--lr applies to dense models only"),
    (["train", "demo", "--states", "3", "--dim", "2", "--method", "em", "--steps", "5"], "use --iter"),
    (["train", "demo", "--states", "x"], "invalid int value"),
    (["train", "demo", "--model", "standard", "--states", "3", "--out", "nofolder/x.h5"], "does not exist"),
    (["train", "demo", "--model", "standard", "--states", "3", "--checkpoint-every", "5"], "needs --out"),
    (["train", "demo", "--model", "standard", "--states", "3", "--overwrite"], "--overwrite needs --out"),
    (["train", "demo", "--model", "standard", "--states", "3", "--name", "m"], "--name names the model in --out"),
    (["train", "demo", "--model", "standard", "--states", "3", "--preset", "nope"], "unknown preset 'nope'"),
    (["info", "nope.h5"], "nope.h5: no such file"),
    (["evaluate", "MODEL", "nothere.txt"], "nothere.txt: no such file"),
    (["sample", "MODEL", "-n", "0"], "-n must be >= 1"),
    (["sample", "MODEL", "--name", "other"], "no model named 'other'"),
    (["frobnicate"], "invalid choice"),
    ([], "required"),
])
def test_user_errors_in_process(tmp_path, demo_model_file, capsys, monkeypatch, argv, phrase):
    from densehmm_core.cli import main
    d, path = demo_model_file
    monkeypatch.chdir(tmp_path)
    argv = [str(path) if a == "MODEL" else a for a in argv]
    if "--preset" in argv:
        argv[1] = str(path)  # an existing file, so that the preset is what fails
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert phrase in lines[0], lines[0]


def test_info_shows_every_reading_option_of_the_data(tmp_path, capsys):
    """What reproduces the data (lower-casing, min. count, rare words, tag set, the split) is printed
    whole, not cut after 60 characters as it was (lowercase was never visible)."""
    from densehmm_core.cli import main
    words = str(pathlib.Path(__file__).parent / "fixtures" / "data" / "words.conllu")
    out = str(tmp_path / "w.h5")
    assert main(["train", words, "--observe", "words", "--lowercase", "--min-count", "1", "--model", "standard",
                 "--states", "3", "--iter", "2", "--out", out]) == 0
    capsys.readouterr()
    assert main(["info", out]) == 0
    text = " ".join(capsys.readouterr().out.split())       # (the listing wraps lines)
    data = text[text.index(" data ") + 6:text.index(" test data ")]
    for key in ('"observe": "words"', '"lowercase": true', '"min_count": 1', '"rare": "unk"',
                '"tagset": "upos"', '"encoding": "utf-8"', '"test_fraction": 0.5'):
        assert key in data.replace(" ,", ","), key
    assert "..." not in data.split("split=")[1].split("}")[0]


def test_missing_states_on_words_names_the_gold_tags(tmp_path, capsys):
    """Words with gold tags and no --states: the one-line error offers one state per tag; tags as
    the symbols, or the demo, get the plain error."""
    from densehmm_core.cli import main
    words = str(pathlib.Path(__file__).parent / "fixtures" / "data" / "words.conllu")
    for argv, tail in ((["--observe", "words"], " (the words carry 10 gold tags: --states 10 gives one state per tag)"),
                       ([], ""), (["--observe", "tags"], "")):
        assert main(["train", words, *argv, "--out", str(tmp_path / "m.h5")]) == 2
        lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and not ln.startswith("note: ")]
        assert lines == [f"densehmm train: error: --states N is required{tail}"], lines
    assert main(["train", "demo", "--dim", "2"]) == 2
    assert capsys.readouterr().err.strip() == "densehmm train: error: --states N is required"
    assert not (tmp_path / "m.h5").exists()


def test_a_genome_is_cut_by_chunk_and_evaluate_cuts_it_as_the_model_was_trained(tmp_path, capsys):
    """One long sequence cannot be split: the one-line error names --chunk; with --chunk 100 the 1,030
    bases become 11 sequences, half held out; evaluate --split 0.5 --part test reads the file cut as
    the model's training data were (no --chunk given) and scores the very test part training scored."""
    from densehmm_core.cli import main
    rng = np.random.default_rng(2)
    genome = tmp_path / "genome.fna"
    genome.write_text(">chr1\n" + "".join(rng.choice(list("ACGT"), size=1030)) + "\n")
    out = str(tmp_path / "g.h5")
    assert main(["train", str(genome), "--model", "standard", "--states", "3", "--iter", "2", "--out", out]) == 2
    assert capsys.readouterr().err.strip() == (
        "densehmm train: error: the data hold a single sequence: it cannot be split (--chunk T cuts it into "
        "pieces of T symbols; --split 0 trains on all of it)")
    assert main(["train", str(genome), "--chunk", "100", "--model", "standard", "--states", "3", "--iter", "2",
                 "--out", out, "--quiet"]) == 0
    info = read_model_info(out)
    assert info["provenance"]["preprocess_options"] == {"chunk_len": 100}
    assert info["provenance"]["n_sequences"] + info["provenance_test"]["n_sequences"] == 11
    capsys.readouterr()
    assert main(["evaluate", out, str(genome), "--split", "0.5", "--part", "test", "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["n_sequences"] == info["provenance_test"]["n_sequences"]
    assert scored["n_tokens"] == info["provenance_test"]["n_tokens"]
    assert main(["evaluate", out, str(genome), "--chunk", "5000", "--split", "0.5", "--part", "test"]) == 2
    assert capsys.readouterr().err.strip().endswith("it cannot be split (--chunk T cuts it into pieces of T symbols)")


def test_name_taken_is_refused_before_training(tmp_path, demo_model_file, capsys):
    from densehmm_core.cli import main
    d, path = demo_model_file
    before = path.read_bytes()
    assert main(["train", "demo", "--model", "standard", "--states", "3", "--out", str(path), "--name", "std"]) == 2
    assert "already holds a model named 'std'" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_evaluate_maps_data_to_the_model_vocabulary(tmp_path):
    """Symbols are matched by string (Corpus.encode_with); unknown ones are an error naming them,
    or go to the model's residual symbol when it has one."""
    from densehmm_core import metrics
    # R and Y are rare
    train = ["ACGTACGGTCAAGT" * 3, "TTGACCAGTACGAT" * 3, "GATTACAGATTACA" * 3, "CCGGTTAACCGGTA" * 3 + "RY"]
    (tmp_path / "train.fasta").write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(train)))
    (tmp_path / "new.fasta").write_text(">a\nTTGNCA\n>b\nGACNNT\n")
    ok(["train", "train.fasta", "--format", "fasta", "--model", "standard", "--states", "2", "--iter", "3",
        "--split", "0", "--out", "m.h5", "--name", "plain", "-q"], tmp_path)
    user_error(["evaluate", "m.h5", "new.fasta", "--format", "fasta", "--name", "plain"], tmp_path,
               "1 symbol(s) not in the vocabulary: 'N' (3 of 12 tokens)")
    # a model whose data had their rarest symbols merged into "<other>" reads N as "<other>"
    ok(["train", "train.fasta", "--format", "fasta", "--model", "standard", "--states", "2", "--iter", "3",
        "--split", "0", "--merge-below", "0.05", "--out", "m.h5", "--name", "merged", "-q"], tmp_path)
    model = load_model(tmp_path / "m.h5", "merged")
    assert model.vocabulary == ["A", "C", "G", "T", "<other>"]
    out = json.loads(ok(["evaluate", "m.h5", "new.fasta", "--format", "fasta", "--name", "merged", "--json"],
                        tmp_path).stdout)
    index = {s: i for i, s in enumerate(model.vocabulary)}
    seqs = [np.array([index.get(ch, index["<other>"]) for ch in s]) for s in ("TTGNCA", "GACNNT")]
    assert out["nll"] == pytest.approx(metrics.normalized_nll(model, seqs), rel=1e-12)


def test_train_writes_nothing_on_user_error_before_training(tmp_path):
    (tmp_path / "foreign.h5").write_text("not ours")
    user_error(["train", "demo", "--model", "standard", "--states", "3", "--out", "foreign.h5"], tmp_path,
               "not an HDF5 file")
    assert (tmp_path / "foreign.h5").read_text() == "not ours"


# ------------------------------------------------------------------ interruption, checkpoints, resume
def _long_standard(out, *extra):
    return [sys.executable, "-m", "densehmm_core", "train", "demo", "--model", "standard", "--states", "4",
            "--iter", "1000000", "--tol=-1e300", "--out", out, *extra]


def test_ctrl_c_stops_cleanly_and_saves(tmp_path):
    proc = subprocess.Popen(_long_standard("m.h5", "--verbose"), cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = 0
        for line in proc.stderr:
            if line.startswith("baum-welch"):
                seen += 1
                if seen == 3:
                    proc.send_signal(signal.SIGINT)
                    break
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "stopping after the current chunk" in err
    assert "stopped: cancelled" in out and "saved standard model" in out
    model = load_model(tmp_path / "m.h5")
    assert model.stop_reason_ == "cancelled" and len(model.history_) >= 3
    assert read_model_info(tmp_path / "m.h5")["metrics"]["stop_reason"] == "cancelled"


def test_checkpoint_survives_kill_and_resume_continues(tmp_path):
    proc = subprocess.Popen(_long_standard("ck.h5", "--quiet", "--checkpoint-every", "0.2"), cwd=tmp_path,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    path = tmp_path / "ck.h5"
    try:
        deadline = time.monotonic() + 120
        n_hist = 0
        while time.monotonic() < deadline and n_hist < 3:
            time.sleep(0.2)
            if path.exists():
                try:
                    n_hist = len(read_model_info(path)["history"])
                except Exception:  # noqa: BLE001 - written atomically, so this should not happen
                    raise
        proc.kill()  # SIGKILL: no chance to clean up
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert n_hist >= 3, "no checkpoint was written"
    ck = load_model(path)  # the checkpoint is a complete, valid model
    assert read_model_info(path)["metrics"]["checkpoint"] is True
    steps_before = len(ck.history_)
    proc = ok(["train", "demo", "--model", "standard", "--out", "ck.h5", "--resume", "--iter", "3", "--quiet"],
              tmp_path)
    resumed = load_model(path)
    assert list_models(path) == ["standard_1"]
    assert len(resumed.history_) == steps_before + 4
    assert resumed.history_[:steps_before] == ck.history_
    assert resumed.stop_reason_ == "max_steps"
    assert resumed.score(_demo_parts()[0]) >= ck.score(_demo_parts()[0]) - 1e-6


# ------------------------------------------------------------------ data files
def _write_fasta(path, seqs, alphabet):
    with open(path, "w") as fh:
        for i, s in enumerate(seqs):
            fh.write(f">seq{i} synthetic\n")
            text = "".join(alphabet[k] for k in s)
            for j in range(0, len(text), 60):
                fh.write(text[j:j + 60] + "\n")


def test_generated_fasta_end_to_end(tmp_path):
    from densehmm_core.engine.sampling import sample_sequences
    from densehmm_core.synthetic import random_hmm
    params = random_hmm(4, 6, seed=3)
    seqs, _ = sample_sequences(*params, 30, 80, 4)
    _write_fasta(tmp_path / "syn.fasta", seqs, "ACDEFG")
    ok(["train", "syn.fasta", "--model", "standard", "--states", "4", "--iter", "5", "--out", "s.h5",
        "--quiet"], tmp_path)
    model = load_model(tmp_path / "s.h5")
    assert sorted(model.vocabulary) == sorted(set("ACDEFG"))
    out = json.loads(ok(["evaluate", "s.h5", "syn.fasta", "--json"], tmp_path).stdout)
    assert out["n_sequences"] == 30 and out["n_tokens"] == 30 * 80
    lines = ok(["decode", "s.h5", "syn.fasta"], tmp_path).stdout.splitlines()
    assert len(lines) == 31
    sample = ok(["sample", "s.h5", "-n", "2", "--length", "15"], tmp_path).stdout.split()
    assert all(set(s) <= set("ACDEFG") and len(s) == 15 for s in sample)


def test_shared_fasta_end_to_end(tmp_path, shared_data):
    fasta = shared_data / "proteins" / "pdb_seqres_2022_09_28__subsampled_1000.fasta"
    if not fasta.is_file():
        pytest.skip("protein FASTA absent")
    ok(["train", fasta, "--model", "standard", "--states", "3", "--iter", "3", "--subset", "150",
        "--max-len", "100", "--merge-below", "0.05", "--out", "p.h5", "--name", "std"], tmp_path)
    ok(["train", fasta, "--model", "dense", "--method", "em", "--states", "3", "--dim", "2", "--iter", "2",
        "--mstep-steps", "3", "--subset", "150", "--max-len", "100", "--merge-below", "0.05", "--device", "cpu",
        "--out", "p.h5", "--name", "em"], tmp_path)
    info = read_model_info(tmp_path / "p.h5", "em")
    assert info["provenance"]["n_sequences"] == 75 and info["attrs"]["fit_method"] == "em"
    assert info["provenance"].get("sha256")
    vocab = info["vocabulary"]
    assert "L" in vocab and "<other>" in vocab and len(vocab) < 20  # rare residues merged
    out = json.loads(ok(["evaluate", "p.h5", fasta, "--name", "em", "--subset", "40", "--json"], tmp_path).stdout)
    assert out["n_sequences"] == 40 and np.isfinite(out["nll"]) and out["nll"] > 0
    tsv = ok(["decode", "p.h5", fasta, "--name", "std", "--subset", "5"], tmp_path).stdout.splitlines()
    assert len(tsv) == 6
    seqs = ok(["sample", "p.h5", "--name", "em", "-n", "3", "--length", "40"], tmp_path).stdout.splitlines()
    assert len(seqs) == 3 and all(len(s) >= 40 for s in seqs)
    assert "model 'em': dense HMM" in ok(["info", "p.h5"], tmp_path).stdout


def test_shared_tagged_corpus_end_to_end(tmp_path, shared_data):
    corpus = shared_data / "pos" / "ptb_wsj_sample_combined.mrg"
    if not corpus.is_file():
        pytest.skip("PTB sample absent")
    ok(["train", corpus, "--model", "standard", "--states", "4", "--iter", "3", "--subset", "200",
        "--max-len", "45", "--out", "t.h5"], tmp_path)
    model = load_model(tmp_path / "t.h5")
    assert "NN" in model.vocabulary
    out = json.loads(ok(["evaluate", "t.h5", corpus, "--subset", "50", "--json"], tmp_path).stdout)
    assert out["n_sequences"] == 50 and np.isfinite(out["mad"])
    lines = ok(["sample", "t.h5", "-n", "2", "--length", "10"], tmp_path).stdout.splitlines()
    assert all(len(ln.split(" ")) == 10 and set(ln.split(" ")) <= set(model.vocabulary) for ln in lines)
    tsv = ok(["decode", "t.h5", corpus, "--subset", "3", "--symbols"], tmp_path).stdout.splitlines()
    assert len(tsv) == 4


# ------------------------------------------------------------------ dense: divergence and warm start (in process)
def test_dense_divergence_exits_1_and_keeps_the_last_finite_model(tmp_path, capsys):
    from densehmm_core.cli import main
    out = tmp_path / "dv.h5"
    rc = main(["train", "demo", "--states", "3", "--dim", "2", "--lr", "1e6", "--steps", "200",
               "--finish-steps", "0", "--device", "cpu", "--out", str(out), "--quiet"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "training diverged" in err and "last finite model was saved" in err and "Traceback" not in err
    model = load_model(out)  # validated on load: finite and stochastic
    assert model.stop_reason_ == "diverged"
    assert all(np.all(np.isfinite(v)) for v in model.embeddings_.values())


@pytest.mark.parametrize("argv, option", [
    (["--model", "standard", "--iter", "3", "--tol", "0"], "--iter"),
    (["--dim", "2", "--method", "em", "--iter", "2", "--tol", "0"], "--iter"),
    (["--dim", "2", "--method", "cooc", "--steps", "3", "--finish-steps", "0"], "--steps"),
])
def test_last_line_says_what_the_stop_reason_means(tmp_path, capsys, argv, option):
    """A run that used all its iterations says so and names the option that gives it more (for EM
    that is --iter, not the stream's machine value 'max_steps' alone); the file keeps the value."""
    from densehmm_core.cli import main
    out = tmp_path / "s.h5"
    assert main(["train", "demo", "--states", "3", "--device", "cpu", "--out", str(out), *argv]) == 0
    last = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("stopped:")]
    unit = "step" if option == "--steps" else "iteration"
    assert last and last[0].startswith(f"stopped: max_steps (every {unit} was run; a larger {option} trains longer);")
    assert load_model(out).stop_reason_ == "max_steps"


def test_stop_meanings_cover_every_reason_the_core_emits():
    """Every reason the fits put on their last event has words (found by reading the core's source)."""
    import re
    from pathlib import Path
    import densehmm_core
    from densehmm_core.events import STOP_REASONS, stop_meaning
    emitted = set()
    for path in Path(densehmm_core.__file__).parent.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        emitted |= set(re.findall(r'reason="(\w+)"', text))
        emitted |= set(re.findall(r'(?:reason|stop_reason_) = "(\w+)"', text))
        emitted |= set(re.findall(r'yield it(?: - 1)?, x, f, \(?"(\w+)"', text))
    emitted -= {""}
    assert {"converged", "max_steps", "cancelled", "stalled", "line_search", "diverged"} <= emitted
    assert emitted <= set(STOP_REASONS), emitted - set(STOP_REASONS)
    assert stop_meaning("loaded from m.h5") == ""


def test_dense_resume_warm_starts_from_the_saved_embeddings(tmp_path, capsys):
    from densehmm_core.cli import main
    out = str(tmp_path / "r.h5")
    assert main(["train", "demo", "--states", "3", "--dim", "2", "--method", "em", "--iter", "2",
                 "--mstep-steps", "5", "--device", "cpu", "--out", out, "--name", "em", "--quiet"]) == 0
    first = load_model(out, "em")
    assert main(["train", "demo", "--out", out, "--name", "em", "--resume", "--iter", "2", "--quiet"]) == 0
    resumed = load_model(out, "em")
    n0 = len(first.history_)
    assert resumed.history_[:n0] == first.history_
    # the resumed run starts from the saved model: its initial log-likelihood is the saved one
    assert resumed.history_[n0]["train_ll"] == pytest.approx(first.score(_demo_parts()[0]), rel=1e-10)
    assert resumed.score(_demo_parts()[0]) >= first.score(_demo_parts()[0]) - 1e-6
    assert resumed.get_config()["mstep_steps"] == 5
    assert main(["train", "demo", "--out", out, "--name", "em", "--resume", "--dim", "7", "--quiet"]) == 2
    assert "--dim 7 does not match" in capsys.readouterr().err

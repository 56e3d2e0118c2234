"""Score and Decode read a file as the model reads data (audit app24 items 1-3): a words model scored on a
corpus file opened as tags (the default) reads it as words, every word as written (min. count 1), as the
command line's evaluate does; data of another kind (nearly every token unknown) are refused, not read as
'<unk>'; the result, the log and the Result cell say what was scored (test split, N of M sequences)."""
import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from densehmm_core import data as core_data  # noqa: E402

from test_app_scoring import _answer, _button, _fasta, _finished_job, _open  # noqa: E402 (the tests' folder)


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    """A main window whose error dialogs are counted in ``window.errors`` (as test_app_scoring's)."""
    from PySide6.QtCore import QSettings

    from app.mainwindow import MainWindow
    from app.settings import Settings
    errors = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: errors.append(a[2]) or QMessageBox.Ok)
    w = MainWindow(Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)))
    w.errors = errors
    qtbot.addWidget(w)
    yield w
    w.jobs.cancel_all()
    w.jobs.wait(10)

TAGS = {"the": "DET", "a": "DET", "dog": "NOUN", "cat": "NOUN", "bird": "NOUN", "runs": "VERB", "sleeps": "VERB",
        "sings": "VERB", "zebra": "NOUN", "yak": "NOUN", "purrs": "VERB", "emu": "NOUN"}


def _conllu(path, sentences):
    with open(path, "w") as f:
        for i, words in enumerate(sentences):
            f.write(f"# sent_id = {i}\n")
            for j, w in enumerate(words, 1):
                f.write(f"{j}\t{w}\t{w}\t{TAGS[w]}\t_\t_\t0\t_\t_\t_\n")
            f.write("\n")
    return str(path)


def _words_model(train_path):
    """A words model as the app trains one (its data read as words, min. count 2: 'zebra' seen once is '<unk>')."""
    from app.datasets import load_path
    from densehmm_core.standard import StandardHMM
    ds = load_path(train_path, split=0.0, read={"observe": "words", "min_count": 2})
    assert "<unk>" in ds.vocabulary and "zebra" not in ds.vocabulary and "yak" in ds.vocabulary
    model = StandardHMM(2, n_iter=3, seed=0).fit(ds.train)
    model.vocabulary = list(ds.vocabulary)
    return model, ds


def _by_name_or_unk(corpus, vocabulary):
    """The oracle: each word's index in the model's vocabulary, '<unk>' for words it lacks (no core code)."""
    index = {v: i for i, v in enumerate(vocabulary)}
    return [np.array([index.get(corpus.vocabulary[s], index["<unk>"]) for s in seq]) for seq in corpus.sequences]


@pytest.fixture
def corpora(tmp_path):
    rng = np.random.default_rng(0)
    common = ["the", "a", "dog", "cat", "bird", "runs", "sleeps", "sings"]
    train = [list(rng.choice(common, 5)) for _ in range(20)] + [["the", "zebra", "runs"], ["a", "yak", "sleeps"],
                                                               ["the", "yak", "sings"]]
    # the file scored: 'yak' (known to the model) once; 'purrs', 'emu' (unknown) once each
    test = [list(rng.choice(common, 4)) for _ in range(9)] + [["a", "yak", "purrs"], ["the", "emu", "sings"],
                                                              ["the", "zebra", "sleeps"]]
    return _conllu(tmp_path / "train.conllu", train), _conllu(tmp_path / "test.conllu", test)


def test_a_words_model_scores_a_file_opened_as_tags_read_as_its_words(window, qtbot, corpora, monkeypatch):
    train_path, test_path = corpora
    model, own = _words_model(train_path)
    job = _finished_job(window, model, own)
    (ds,) = _open(qtbot, window, [test_path])
    assert not ds.observes_words and ds.test is not None          # opened as tags, the default, with a split
    shown = _answer(monkeypatch, _button("Read them as '<unk>'"))
    res = []
    window.results_ctl.score_job(job, ds=ds, on_done=res.append)
    qtbot.waitUntil(lambda: bool(res), timeout=30000)
    assert not window.errors
    # the oracle: the file read as words with every word (min. count 1), the same split, matched by name
    words = core_data.load(test_path, observe="words", min_count=1)
    assert "yak" in words.vocabulary                               # (min. count 2 would make it '<unk>')
    _, test = words.split(test_fraction=0.5, seed=0)
    want = _by_name_or_unk(test, model.vocabulary)
    ll = model.score(want)
    assert res[0]["loglik"] == pytest.approx(ll, rel=1e-12)
    # the dialog counted the words as read for the model (never 100% of tags unknown)
    assert len(shown) == 1 and "of 12 sequences" not in shown[0][0] and "100%" not in shown[0][0]
    # what was scored, in the Result cell, the log and the result box
    what = f"test.conllu (test split, {len(test.sequences):,} of 12 sequences)"
    assert f"NLL/token on {what}" in job.score_text
    lines = [t for _, t in window.log_panel.lines]
    assert any(f"on {what}: loglik" in t for t in lines)
    assert any("read again as the model reads data (observe=words" in t and "min_count=1" in t for t in lines)
    assert "test split, " in window.results_ctl.score_box.text()
    assert "test split" in window.jobs_panel.score_btn.toolTip()


def test_a_file_read_with_min_count_2_is_read_again_with_every_word(window, qtbot, corpora, monkeypatch):
    """Item 2: the file opened as words with min. count 2 (its own once-seen 'yak' read as '<unk>') is read
    again with every word; without a split, all its sequences are scored and the result says so."""
    train_path, test_path = corpora
    model, own = _words_model(train_path)
    job = _finished_job(window, model, own)
    from app.datasets import load_path
    ds = load_path(test_path, split=0.0, read={"observe": "words", "min_count": 2})
    assert "yak" not in ds.vocabulary
    _answer(monkeypatch, _button("Read them as '<unk>'"))
    res = []
    window.results_ctl.score_job(job, ds=ds, on_done=res.append)
    qtbot.waitUntil(lambda: bool(res), timeout=30000)
    want = _by_name_or_unk(core_data.load(test_path, observe="words", min_count=1), model.vocabulary)
    assert res[0]["loglik"] == pytest.approx(model.score(want), rel=1e-12)
    assert "NLL/token on test.conllu (all 12 sequences)" in job.score_text


def test_data_of_another_kind_are_refused_not_read_as_unk(window, qtbot, corpora, tmp_path, monkeypatch):
    """Item 1: every token unknown (a FASTA for a words model): no "Read them as '<unk>'", a refusal saying
    what the model reads; nothing is scored or decoded."""
    train_path, _ = corpora
    model, own = _words_model(train_path)
    job = _finished_job(window, model, own)
    (fa,) = _open(qtbot, window, [_fasta(tmp_path / "p.fasta", [(f"p{i}", "ACDEFGHIK") for i in range(4)])])
    shown = _answer(monkeypatch, lambda box: box.button(QMessageBox.StandardButton.Ok))
    window.results_ctl.score_job(job, ds=fa)
    qtbot.wait(200)
    assert len(shown) == 1 and not getattr(job, "scores", None) and not job.score_text
    text, buttons = shown[0]
    assert not any("Read them as" in b for b in buttons)
    assert "18 of 18 tokens of 'p.fasta' (100%)" in text and "The model reads the words of a tagged corpus" in text


def test_decode_reads_a_file_opened_as_tags_as_the_models_words(window, qtbot, corpora, monkeypatch):
    train_path, test_path = corpora
    model, own = _words_model(train_path)
    job = _finished_job(window, model, own)
    (ds,) = _open(qtbot, window, [test_path])
    _answer(monkeypatch, _button("Read them as '<unk>'"))
    window.jobs_panel.select(job)
    dec = window.dashboard.decode
    i = window.datasets.index(ds)
    dec.data_box.setCurrentIndex(i)
    dec.data_box.activated.emit(i)
    qtbot.waitUntil(lambda: dec.sequence_count() == 12, timeout=30000)
    want = _by_name_or_unk(core_data.load(test_path, observe="words", min_count=1), model.vocabulary)
    dec.find_sequence("9")          # ['a', 'yak', 'purrs']: 'yak' known to the model, 'purrs' not
    np.testing.assert_array_equal(dec.current_sequence(), want[dec.current_index()])
    assert model.vocabulary[int(dec.current_sequence()[1])] == "yak" and not window.errors


def test_core_rule_of_data_read_for_a_model():
    from densehmm_core.data import read_as_for_model, reading_for_model
    words = {"observe": "words", "tagset": "upos", "min_count": 2, "lowercase": False}
    assert reading_for_model(words) == {"observe": "words", "tagset": "upos", "min_count": 1}
    assert not read_as_for_model({"observe": "tags", "tagset": "upos", "min_count": None}, words)
    assert not read_as_for_model({"observe": "words", "tagset": "upos", "min_count": 2}, words)
    assert read_as_for_model({"observe": "words", "tagset": "upos", "min_count": 1}, words)
    assert not read_as_for_model({"observe": "words", "min_count": 1, "lowercase": True}, words)
    assert read_as_for_model({"observe": "tags", "min_count": None}, {"observe": "tags"})
    assert read_as_for_model({"mol": "protein"}, {})                 # a model without reading options

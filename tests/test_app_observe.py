"""Data panel, Observe group (issue 14): a tagged corpus read as its tags or its words (pytest-qt, offscreen)."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
from PySide6.QtCore import Qt  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "fixtures", "data")
WORDS_CONLLU = os.path.join(DATA, "words.conllu")


def _open(qtbot, w, path, n):
    w.open_files([path])
    qtbot.waitUntil(lambda: len(w.datasets) == n and not w.data_ctl.loading, timeout=30000)
    return w.datasets[-1]


def _reread(qtbot, w, old):
    qtbot.mouseClick(w.data_panel.reread_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: old not in w.datasets and not w.data_ctl.loading, timeout=30000)
    return w.current_dataset


def _shown(panel, widget):
    return panel.observe_box.isVisibleTo(panel) and panel.observe_form.isRowVisible(widget)


def test_observe_words_rereads_the_corpus_as_words(make_window, qtbot):
    from densehmm_core.data import load
    w = make_window()
    p = w.data_panel
    ds = _open(qtbot, w, WORDS_CONLLU, 1)
    assert not ds.observes_words and p.observe_box.isVisibleTo(p)
    assert p.observe.currentData() == "tags" and _shown(p, p.tagset) and not _shown(p, p.max_vocab)
    assert not w.model_form.hints["start"].isVisibleTo(w.model_form)
    # tags: UPOS then XPOS changes the tag set
    upos = len(ds.corpus.tag_vocabulary)
    p.tagset.setCurrentIndex(p.tagset.findData("xpos"))
    ds = _reread(qtbot, w, ds)
    assert len(ds.corpus.tag_vocabulary) == len(load(WORDS_CONLLU, tagset="xpos").tag_vocabulary) != upos
    assert ds.n_symbols == len(ds.corpus.tag_vocabulary) and ds.options["read"] == {"observe": "tags",
                                                                                     "tagset": "xpos"}
    p.tagset.setCurrentIndex(p.tagset.findData("upos"))
    # words: lower-case (default on), words seen once -> one unknown symbol; split and seed stay
    p.split.setValue(0.8)                              # the panel's, not the data set's (0.5, 0)
    p.seed.setValue(9)
    p.observe.setCurrentIndex(p.observe.findData("words"))
    assert _shown(p, p.max_vocab) and _shown(p, p.rare) and p.lowercase.isChecked()
    before = w.datasets.index(ds)
    ds = _reread(qtbot, w, ds)
    assert w.datasets.index(ds) == before and len(w.datasets) == 1 and ds.name == "words.conllu"
    want = load(WORDS_CONLLU, observe="words", lowercase=True)
    assert ds.observes_words and ds.n_symbols == len(want.vocabulary) and ds.vocabulary == list(want.vocabulary)
    assert "dog" in ds.vocabulary and len(ds.corpus.tag_vocabulary) == upos and ds.corpus.tags is not None
    assert (ds.options["split"], ds.options["seed"]) == (0.5, 0)
    assert p.fields["Symbols"].text() == str(len(want.vocabulary))
    # the default start is spectral: no words hint; a random start on words shows it
    form = w.model_form
    start = form.fields["init_method"]
    assert start.currentData() == "spectral" and not form.hints["start"].isVisibleTo(form)
    start.setCurrentIndex(start.findData("random"))
    assert form.hints["start"].isVisibleTo(form)
    # the panel shows how the data set was read
    w.data_ctl.select_dataset(0)
    assert p.observe.currentData() == "words" and p.tagset.currentData() == "upos"
    # a too-small vocabulary: one error dialog, the data set stays
    p.max_vocab.setValue(5)
    p.rare.setCurrentIndex(p.rare.findData("shape"))
    qtbot.mouseClick(p.reread_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(w.errors) and not w.data_ctl.loading, timeout=30000)
    assert len(w.errors) == 1 and "max_vocab=5" in w.errors[0][1] and w.datasets == [ds]
    # back to tags
    p.observe.setCurrentIndex(p.observe.findData("tags"))
    ds = _reread(qtbot, w, ds)
    assert not ds.observes_words and ds.n_symbols == upos and not w.model_form.hints["start"].isVisibleTo(w.model_form)


@pytest.mark.parametrize("name", ["trees.mrg", "word_tag.txt"])
def test_observe_words_for_other_tagged_formats(make_window, qtbot, name):
    from densehmm_core.data import load
    w = make_window()
    p = w.data_panel
    ds = _open(qtbot, w, os.path.join(DATA, name), 1)
    assert p.observe_box.isVisibleTo(p) and not p.observe_form.isRowVisible(p.tagset)   # no tag column choice
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.max_vocab.setValue(20)
    ds = _reread(qtbot, w, ds)
    want = load(os.path.join(DATA, name), observe="words", lowercase=True, max_vocab=20)
    assert ds.observes_words and ds.vocabulary == list(want.vocabulary) and not w.errors


def test_min_count_makes_rare_words(make_window, qtbot):
    from densehmm_core.data import load
    w = make_window()
    p = w.data_panel
    ds = _open(qtbot, w, WORDS_CONLLU, 1)
    assert not _shown(p, p.min_count) and not _shown(p, p.keep_traces)     # CoNLL-U: no traces row
    p.observe.setCurrentIndex(p.observe.findData("words"))
    # issue 24.1: words default to min. count 2, so the model gets an unknown-word symbol
    assert _shown(p, p.min_count) and p.min_count.value() == 2 and not _shown(p, p.keep_traces)
    ds = _reread(qtbot, w, ds)
    want = load(WORDS_CONLLU, observe="words", lowercase=True, min_count=2)
    every = load(WORDS_CONLLU, observe="words", lowercase=True, min_count=1)
    assert ds.vocabulary == list(want.vocabulary) and "<unk>" in ds.vocabulary and "<unk>" not in every.vocabulary
    assert ds.n_symbols < len(every.vocabulary)
    assert ds.options["read"]["min_count"] == 2 and "drop_traces" not in ds.options["read"] and not w.errors
    p.min_count.setValue(1)                              # 1: every word
    ds = _reread(qtbot, w, ds)
    assert ds.vocabulary == list(every.vocabulary) and ds.options["read"]["min_count"] == 1
    p.min_count.setValue(3)
    w.data_ctl.select_dataset(0)                                  # the group shows how it was read
    assert p.min_count.value() == 1


@pytest.mark.parametrize("observe", ["tags", "words"])
def test_keep_traces_for_penn_treebank(make_window, qtbot, observe):
    from densehmm_core.data import load
    path = os.path.join(DATA, "trees.mrg")
    w = make_window()
    p = w.data_panel
    ds = _open(qtbot, w, path, 1)
    assert _shown(p, p.keep_traces) and not p.keep_traces.isChecked()     # the library default: dropped
    p.observe.setCurrentIndex(p.observe.findData(observe))
    assert _shown(p, p.keep_traces)
    p.keep_traces.setChecked(True)
    ds = _reread(qtbot, w, ds)
    kept = load(path, observe=observe, lowercase=True, drop_traces=False)
    dropped = load(path, observe=observe, lowercase=True)
    n_tokens = sum(len(x) for x in ds.corpus.sequences)
    assert n_tokens == sum(len(x) for x in kept.sequences) != sum(len(x) for x in dropped.sequences)
    assert ds.options["read"]["drop_traces"] is False and not w.errors
    p.keep_traces.setChecked(False)
    w.data_ctl.select_dataset(0)
    assert p.keep_traces.isChecked() and _shown(p, p.keep_traces)
    p.keep_traces.setChecked(False)                      # back to the default: traces dropped
    ds = _reread(qtbot, w, ds)
    assert sum(len(x) for x in ds.corpus.sequences) == sum(len(x) for x in dropped.sequences)


def test_fasta_and_demo_hide_the_observe_group(make_window, qtbot):
    w = make_window()
    p = w.data_panel
    _open(qtbot, w, os.path.join(DATA, "nucleotides.fasta"), 1)
    assert not p.observe_box.isVisibleTo(p)
    w.data_ctl.load_demo()
    assert not p.observe_box.isVisibleTo(p)
    _open(qtbot, w, WORDS_CONLLU, 3)
    assert p.observe_box.isVisibleTo(p)
    w.data_ctl.select_dataset(0)
    assert not p.observe_box.isVisibleTo(p)


def test_a_session_with_a_words_data_set_reopens_as_words(make_window, session_files, qtbot, tmp_path):
    from app.modelspec import ModelSpec
    w = make_window("a")
    p = w.data_panel
    ds = _open(qtbot, w, WORDS_CONLLU, 1)
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.rare.setCurrentIndex(p.rare.findData("shape"))
    p.max_vocab.setValue(15)
    ds = _reread(qtbot, w, ds)
    assert ds.observes_words
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=3, n_iter=2, tol=0.0))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    path = tmp_path / "words.h5"
    assert session_files.save(w, path)
    w2 = make_window("b")
    restored = session_files.open(w2, path, ready=lambda jobs: bool(jobs) and jobs[0].dataset is not None)
    ds2 = restored[0].dataset
    assert ds2.observes_words and ds2.vocabulary == ds.vocabulary and ds2.options == ds.options
    assert ds2.options["read"] == {"observe": "words", "tagset": "upos", "lowercase": True, "max_vocab": 15,
                                   "min_count": 2, "rare": "shape"}
    for x, y in zip(ds2.train.sequences, ds.train.sequences):
        np.testing.assert_array_equal(x, y)
    assert w2.data_panel.observe.currentData() == "words" and w2.data_panel.max_vocab.value() == 15
    assert not w.errors

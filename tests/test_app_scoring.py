"""Scoring and decoding any compatible file: symbols matched by name (issue 16), in the core and the app."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from densehmm_core.data import Corpus, encode_for_model  # noqa: E402
from densehmm_core.metrics import normalized_nll  # noqa: E402


def _by_name(corpus, vocabulary):
    """The oracle: re-encode symbol by symbol through a dict of names (no core code)."""
    index = {v: i for i, v in enumerate(vocabulary)}
    return [np.array([index[corpus.vocabulary[s]] for s in seq]) for seq in corpus.sequences]


def test_core_encodes_a_subset_alphabet_by_name_and_names_unknown_symbols():
    model_vocab = ["A", "C", "G", "T", "X"]
    data = Corpus([np.array([0, 1, 1, 0]), np.array([1, 0])], ["T", "A"], names=["r1", "r2"])  # T=0, A=1
    enc = encode_for_model(data, model_vocab, 5)
    assert enc.vocabulary == model_vocab and enc.names == ["r1", "r2"]
    for a, b in zip(enc.sequences, _by_name(data, model_vocab)):
        np.testing.assert_array_equal(a, b)
    # a symbol the model does not know: named, with its token count
    bad = Corpus([np.array([0, 1, 2, 2])], ["A", "C", "N"])
    with pytest.raises(ValueError, match=r"1 symbol\(s\) not in the vocabulary: 'N' \(2 of 4 tokens\)"):
        encode_for_model(bad, model_vocab, 5)
    # ... unless the model has a residual symbol: then it is read as that one
    enc = encode_for_model(bad, ["A", "C", "<other>"], 3)
    np.testing.assert_array_equal(enc.sequences[0], [0, 1, 2, 2])
    # data without names: the indices must fit
    with pytest.raises(ValueError, match="the data use 6 symbols but the model knows only 5"):
        encode_for_model([np.array([0, 5])], None, 5)


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
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


def _fasta(path, records):
    with open(path, "w") as f:
        for name, seq in records:
            f.write(f">{name}\n{seq}\n")
    return str(path)


def _open(qtbot, window, paths):
    n = len(window.datasets)
    window.open_files(paths)
    qtbot.waitUntil(lambda: len(window.datasets) == n + len(paths) and not window.data_ctl.loading, timeout=30000)
    by_path = {d.path: d for d in window.datasets[n:]}      # loads finish in any order
    return [by_path[os.path.abspath(p)] for p in paths]


def _finished_job(window, model, ds):
    from app.jobs import Job, JobState
    job = Job("trained", model, ds.train, ds.test, dataset=ds)
    job.state, job.reason = JobState.FINISHED, "converged"
    window.jobs.jobs.append(job)
    window.jobs_panel.add_job(job)
    return job


def test_a_model_scores_and_decodes_a_file_with_fewer_symbols(window, qtbot, tmp_path):
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(0)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    with_x = [(f"p{i}", "".join(rng.choice(list(letters + "X"), 40))) for i in range(12)]
    without_x = [(f"q{i}", "".join(rng.choice(list(letters[5:]), 30))) for i in range(8)]
    a, b = _open(qtbot, window, [_fasta(tmp_path / "a.fasta", with_x), _fasta(tmp_path / "b.fasta", without_x)])
    assert a.n_symbols == 21 and b.n_symbols == 15        # the counts differ: matched by name
    model = StandardHMM(3, n_iter=3, seed=0).fit(a.train)
    model.vocabulary = list(a.vocabulary)
    job = _finished_job(window, model, a)
    window.data_ctl.select_dataset(window.datasets.index(b))
    res = []
    window.results_ctl.score_job(job, on_done=res.append)
    qtbot.waitUntil(lambda: bool(res), timeout=30000)
    assert not window.errors
    expected = _by_name(b.test, model.vocabulary)
    ll = model.score(expected)
    assert res[0]["loglik"] == pytest.approx(ll, rel=1e-12)
    assert res[0]["nll"] == pytest.approx(normalized_nll(ll, expected), rel=1e-12)
    assert "NLL/token on b.fasta" in job.score_text
    # Decode: pick the other data set, find a sequence by its id
    window.jobs_panel.select(job)
    dec = window.dashboard.decode
    assert dec.data_box.isVisibleTo(dec) and dec.data_box.count() == 2
    ib = window.datasets.index(b)
    dec.data_box.setCurrentIndex(ib)
    dec.data_box.activated.emit(ib)
    assert dec.sequence_count() == len(without_x)
    idx = dec.find_sequence("q5")
    assert idx is not None and dec._names[idx] == "q5" and dec.current_index() == idx
    want = _by_name(b.processed, model.vocabulary)[idx]
    np.testing.assert_array_equal(dec.current_sequence(), want)
    path, _ = model.decode([want])
    np.testing.assert_array_equal(dec.current_path(), np.asarray(path).reshape(-1))
    assert dec.find_sequence("no-such-id") is None and "No sequence id" in dec.status.text()


def test_decodes_data_set_choice_stays_named_when_another_file_opens(window, qtbot, tmp_path):
    """Decode's Data box was reset to the job's own data set whenever the list of data sets changed
    (another file opened), while the view still showed the chosen set's sequences."""
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(1)
    recs = [[(f"{tag}{i}", "".join(rng.choice(list("ACGT"), 20 + 5 * k))) for i in range(6 + k)]
            for k, tag in enumerate("abc")]
    a, b = _open(qtbot, window, [_fasta(tmp_path / "a.fasta", recs[0]), _fasta(tmp_path / "b.fasta", recs[1])])
    model = StandardHMM(2, n_iter=2, seed=0).fit(a.train)
    model.vocabulary = list(a.vocabulary)
    job = _finished_job(window, model, a)
    window.jobs_panel.select(job)
    dec = window.dashboard.decode
    ib = window.datasets.index(b)
    dec.data_box.setCurrentIndex(ib)
    dec.data_box.activated.emit(ib)
    assert dec.sequence_count() == len(recs[1])
    (c,) = _open(qtbot, window, [_fasta(tmp_path / "c.fasta", recs[2])])   # the list of data sets changes
    qtbot.wait(50)
    assert dec.data_box.count() == 3
    assert dec.data_box.currentText() == b.name and dec.sequence_count() == len(recs[1])
    # the chosen set read again (replaced by a new data set): Decode shows the job's own data again,
    # and its box says so
    import dataclasses
    assert window.state.replace_dataset(b, dataclasses.replace(b, name="b2.fasta"))
    own = a.processed if a.processed is not None else (a.test if a.test is not None else a.train)
    assert dec.data_box.currentText() == a.name and dec.sequence_count() == len(own)


def _answer(monkeypatch, pick):
    """Answer the unknown-symbols dialog: ``pick(box)`` returns the button to click (None: Cancel);
    the boxes shown are returned."""
    from app.panels import unknown
    shown = []

    def ask(box):
        shown.append((box.text(), [b.text() for b in box.buttons()]))
        button = pick(box)
        (button or box.button(QMessageBox.StandardButton.Cancel)).click()
    monkeypatch.setattr(unknown, "_ask", ask)
    return shown


def _button(prefix):
    return lambda box: next(b for b in box.buttons() if b.text().startswith(prefix))


def test_symbols_the_model_does_not_know_are_counted_and_sentences_can_be_left_out(window, qtbot, tmp_path,
                                                                                    monkeypatch):
    """Issue 24.1: a model without an unknown symbol and a file with a symbol it lacks: the dialog says
    how many (hand count: 'W' in 3 of 6 records, 12 of 48 tokens) and offers to leave those records
    out; Cancel scores nothing; leaving them out scores exactly the other records."""
    from densehmm_core.standard import StandardHMM
    small = [(f"s{i}", "ACDEACDE" * 3) for i in range(6)]
    other = [(f"t{i}", "ACDW" * 4 if i % 2 else "ACDA" * 2) for i in range(6)]
    window.data_panel.split.setValue(0.0)          # no test part: every record of b is scored
    a, b = _open(qtbot, window, [_fasta(tmp_path / "small.fasta", small), _fasta(tmp_path / "other.fasta", other)])
    assert b.test is None
    model = StandardHMM(2, n_iter=2, seed=0).fit(a.train)
    model.vocabulary = list(a.vocabulary)
    job = _finished_job(window, model, a)
    shown = _answer(monkeypatch, lambda box: None)
    window.results_ctl.score_job(job, ds=b)
    assert len(shown) == 1 and not window.errors and not getattr(job, "scores", None)
    text, buttons = shown[0]
    assert "'other.fasta' holds 1 symbol(s) the model does not know (12 of 72 tokens, in 3 of 6 sequences)" in text
    assert "'W'" in text and "no unknown symbol" in text
    assert buttons.count("Leave out 3 sequences (3 left)") == 1 and not any("Read them as" in t for t in buttons)
    shown = _answer(monkeypatch, _button("Leave out"))
    res = []
    window.results_ctl.score_job(job, ds=b, on_done=res.append)
    qtbot.waitUntil(lambda: bool(res), timeout=30000)
    kept = [np.array([model.vocabulary.index(c) for c in "ACDA" * 2]) for _ in range(3)]
    assert res[0]["loglik"] == pytest.approx(model.score(kept), rel=1e-12) and not window.errors


def test_a_model_with_an_unknown_symbol_offers_to_read_them_as_it(window, qtbot, tmp_path, monkeypatch):
    from densehmm_core.standard import StandardHMM
    window.data_panel.split.setValue(0.0)
    a, b = _open(qtbot, window, [_fasta(tmp_path / "a.fasta", [(f"s{i}", "ACDE" * 3) for i in range(4)]),
                                 _fasta(tmp_path / "b.fasta", [(f"t{i}", "ACWY") for i in range(4)])])
    model = StandardHMM(2, n_iter=2, seed=0).fit([np.array([0, 1, 2, 3, 4] * 3)])
    model.vocabulary = ["A", "C", "D", "E", "<unk>"]
    job = _finished_job(window, model, a)
    shown = _answer(monkeypatch, _button("Read them as '<unk>'"))
    res = []
    window.results_ctl.score_job(job, ds=b, on_done=res.append)
    qtbot.waitUntil(lambda: bool(res), timeout=30000)
    assert "2 symbol(s) the model does not know (8 of 16 tokens, in 4 of 4 sequences), e.g. 'W', 'Y'" in shown[0][0]
    want = [np.array([0, 1, 4, 4])] * 4
    assert res[0]["loglik"] == pytest.approx(model.score(want), rel=1e-12)

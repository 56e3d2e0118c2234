"""Desktop app: start-up, opening files (drop, dialog, argv), bad files, settings (pytest-qt, offscreen)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def settings(tmp_path):
    from app.settings import Settings
    return Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))


@pytest.fixture
def dialogs(monkeypatch):
    """Record (instead of showing) modal message boxes."""
    calls = []

    def critical(parent, title, text, *a, **k):
        calls.append(("critical", title, text))
        return QMessageBox.Ok

    def information(parent, title, text, *a, **k):
        calls.append(("information", title, text))
        return QMessageBox.Ok

    monkeypatch.setattr(QMessageBox, "critical", staticmethod(critical))
    monkeypatch.setattr(QMessageBox, "information", staticmethod(information))
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.Yes))
    return calls


@pytest.fixture
def window(qtbot, settings, dialogs):
    from app.mainwindow import MainWindow
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.jobs.cancel_all()
    w.jobs.wait(10)


def write_fasta(path, records):
    with open(path, "w") as fh:
        for name, seq in records:
            fh.write(f">{name} test record\n")
            for i in range(0, len(seq), 60):      # wrapped at 60 columns
                fh.write(seq[i:i + 60] + "\n")
    return str(path)


def random_protein_records(seed, n=25):
    rng = np.random.default_rng(seed)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    return [(f"p{i}", "".join(rng.choice(letters, size=int(rng.integers(5, 150))))) for i in range(n)]


def drop(widget, paths=None, mime=None):
    """Synthesise the drop of local files on a widget (as a file manager does): the events go where
    the platform sends them, to the window's native window, at the widget's centre."""
    if mime is None:
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    top = widget.window()
    center = widget.mapTo(top, widget.rect().center())
    handle = top.windowHandle()
    assert handle is not None, "the window is not shown"
    enter = QDragEnterEvent(center, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(handle, enter)
    entered = enter.isAccepted()
    move = QDragMoveEvent(center, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(handle, move)
    entered = entered and move.isAccepted()
    ev = QDropEvent(QPointF(center), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(handle, ev)
    return entered and ev.isAccepted()


def wait_loaded(qtbot, window, n_datasets, timeout=20000):
    qtbot.waitUntil(lambda: len(window.datasets) >= n_datasets and not window.data_ctl.loading, timeout=timeout)


# ----------------------------------------------------------------------------- start
def test_start_view_and_demo(window, qtbot):
    assert window.stack.currentWidget() is window.start_view
    assert window.isVisible()
    qtbot.mouseClick(window.start_view.demo_button, Qt.LeftButton)
    assert len(window.datasets) == 1
    ds = window.current_dataset
    assert ds.is_demo
    # the paper's synthetic setup (m = 5) with 50 train + 50 test sequences of length 200
    assert len(ds.train) == 50 and len(ds.test) == 50
    assert all(len(s) == 200 for s in ds.train + ds.test)
    assert ds.n_symbols == 5
    s = window.data_panel.summary
    assert s["n_tokens"] == 20000 and s["n_sequences"] == 100
    # the frequency chart shows the counts of the symbols, most frequent first (issue 24.7)
    counts = np.bincount(np.concatenate(ds.train + ds.test), minlength=5)
    heights = window.data_panel.freq_bars.opts["height"]
    order = window.data_panel.freq_order
    np.testing.assert_array_equal(np.asarray(heights), counts[order])
    np.testing.assert_array_equal(np.asarray(heights), np.sort(counts)[::-1])
    assert window.data_panel.freq_plot.getAxis("bottom").labels == [str(i) for i in order]
    # the form knows m for n_fair
    assert "m = 5" in window.model_form.n_fair.text()
    # loading the demo twice selects it instead of adding a copy
    window.data_ctl.load_demo()
    assert len(window.datasets) == 1


# ----------------------------------------------------------------------------- drops
def test_drop_generated_fasta_loads(window, qtbot, tmp_path):
    recs = random_protein_records(1)
    path = write_fasta(tmp_path / "small.fasta", recs)
    assert drop(window, [path]) is True
    wait_loaded(qtbot, window, 1)
    ds = window.current_dataset
    assert ds.path == os.path.abspath(path)
    seqs = ds.all_sequences
    assert len(seqs) == len(recs)
    assert sum(len(s) for s in seqs) == sum(len(r) for _, r in recs)
    assert sorted(ds.vocabulary) == sorted(set("".join(r for _, r in recs)))
    # the decoded symbols of every sequence are the letters of some record (split may shuffle)
    decoded = sorted("".join(ds.vocabulary[i] for i in s) for s in seqs)
    assert decoded == sorted(r for _, r in recs)
    assert window.data_panel.summary["n_tokens"] == sum(len(r) for _, r in recs)
    assert window.settings.recent_files()[0] == os.path.abspath(path)
    assert window.start_view.recent.count() == 1


def test_drop_several_files_on_a_child_widget(window, qtbot, tmp_path):
    a = write_fasta(tmp_path / "a.fa", random_protein_records(2, 8))
    b = write_fasta(tmp_path / "b.fa", random_protein_records(3, 12))
    drop(window.jobs_panel.tree.viewport(), [a, b])      # "anywhere on the window"
    wait_loaded(qtbot, window, 2)
    assert sorted(len(d.all_sequences) for d in window.datasets) == [8, 12]
    assert window.data_panel.selector.count() == 2


def test_drops_filter_the_native_window_only(window, qtbot, tmp_path):
    """The drop filter sees the drags the platform delivers to the window's native window, and not
    the rest of the application's events (an application-wide Python filter made every paint and
    timer event of every widget wait for the GIL while a file was read)."""
    from PySide6.QtCore import QEvent
    drops = window.drops
    assert drops.handle is window.windowHandle() is not None
    seen = []
    real = drops.eventFilter

    def spy(obj, event):
        if obj is not window:        # (the window's own events: the filter notices its native window)
            seen.append(event.type())
        return real(obj, event)
    drops.eventFilter = spy
    try:
        child = window.jobs_panel.tree.viewport()
        for widget in (child, window.model_form, window.dashboard):
            for kind in (QEvent.UpdateRequest, QEvent.LayoutRequest, QEvent.FontChange):
                QApplication.sendEvent(widget, QEvent(kind))
        window.repaint()             # the whole window painted, every child included
        assert seen == []            # a child's events never reach it
        a = write_fasta(tmp_path / "a.fa", random_protein_records(4, 5))
        assert drop(child, [a])
        assert seen == [QEvent.DragEnter, QEvent.DragMove, QEvent.Drop]
    finally:
        del drops.eventFilter
    wait_loaded(qtbot, window, 1)


def test_a_text_drag_goes_on_to_the_widget_under_it(window, qtbot):
    """Only local files are taken: dragged text reaches the text field it is dropped on."""
    from PySide6.QtWidgets import QLineEdit
    field = QLineEdit()                         # a text field in the window (the status bar's)
    window.statusBar().addPermanentWidget(field, 1)
    qtbot.waitUntil(lambda: field.isVisible() and not field.visibleRegion().isEmpty())
    mime = QMimeData()
    mime.setText("hello")
    drop(field, mime=mime)
    assert not window.data_ctl.loading and window.datasets == []
    assert "hello" in field.text()


def test_drop_real_fasta(window, qtbot, shared_data):
    path = shared_data / "proteins" / "pdb_seqres_2022_09_28__subsampled_1000.fasta"
    if not path.exists():
        pytest.skip("shared FASTA missing")
    drop(window.data_panel, [path])
    wait_loaded(qtbot, window, 1, timeout=60000)
    ds = window.current_dataset
    s = window.data_panel.summary
    assert s["n_sequences"] == 1000 and s["n_tokens"] == 268623   # README of the shared data
    assert s["n_symbols"] == 21
    assert len(ds.train) + len(ds.test) == 1000


def test_bad_file_error_dialog_and_no_state_change(window, qtbot, dialogs, tmp_path):
    window.data_ctl.load_demo()
    before = (list(window.datasets), window.current_dataset, window.data_panel.selector.count(),
              window.settings.recent_files())
    bad = tmp_path / "broken.fasta"
    bad.write_bytes(b"\x00\x01\x02\xff\xfe binary junk \x00" * 50)
    window.open_files([str(bad)])
    qtbot.waitUntil(lambda: any(c[0] == "critical" for c in dialogs), timeout=20000)
    kind, title, text = [c for c in dialogs if c[0] == "critical"][0]
    assert "broken.fasta" in text
    after = (list(window.datasets), window.current_dataset, window.data_panel.selector.count(),
             window.settings.recent_files())
    assert after == before
    assert not window.data_ctl.loading
    # a missing file too, and the app stays usable
    window.open_files([str(tmp_path / "missing.fasta")])
    qtbot.waitUntil(lambda: sum(c[0] == "critical" for c in dialogs) == 2, timeout=20000)
    assert "missing.fasta" in dialogs[-1][2]
    good = write_fasta(tmp_path / "ok.fasta", random_protein_records(4, 5))
    window.open_files([good])
    wait_loaded(qtbot, window, 2)


def test_preprocessing_changes_statistics(window, qtbot, tmp_path):
    recs = random_protein_records(5, 40)
    window.open_files([write_fasta(tmp_path / "p.fasta", recs)])
    wait_loaded(qtbot, window, 1)
    panel = window.data_panel
    before = panel.summary["n_tokens"]
    panel.max_len.setValue(20)
    panel.split.setValue(0.5)
    qtbot.mouseClick(panel.apply_button, Qt.LeftButton)
    expected = sum(min(20, len(r)) for _, r in recs)
    qtbot.waitUntil(lambda: panel.summary["n_tokens"] == expected, timeout=20000)
    assert expected < before
    assert max(len(s) for s in window.current_dataset.all_sequences) == 20
    assert len(window.datasets) == 1


def test_chunk_length_cuts_one_long_sequence_into_pieces_the_split_holds_out(window, qtbot, tmp_path):
    """A genome is one sequence: nothing can be held out (all of it trains).  Chunk length 100 cuts
    1,050 symbols into 11 pieces (10 of 100, one of 50), which the split divides."""
    rng = np.random.default_rng(5)
    recs = [("chromosome", "".join(rng.choice(list("ACGT"), size=1050)))]
    window.open_files([write_fasta(tmp_path / "genome.fasta", recs)])
    wait_loaded(qtbot, window, 1)
    panel = window.data_panel
    assert (panel.summary["n_train"], panel.summary["n_test"]) == (1, 0)
    said = panel.fields["Sequences"].text()
    assert said == "1  (train 1 / test 0: Chunk length below cuts it to hold part out)", said
    panel.chunk_len.setValue(100)
    panel.split.setValue(0.5)
    qtbot.mouseClick(panel.apply_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: panel.summary["n_train"] + panel.summary["n_test"] == 11, timeout=20000)
    ds = window.current_dataset
    assert sorted(len(s) for s in ds.all_sequences) == [50] + [100] * 10
    assert panel.summary["n_test"] >= 5 and panel.options()["chunk_length"] == 100


def test_the_preprocessing_fields_follow_the_selected_data_set(window, qtbot, tmp_path):
    """Chunk one file, select another: the fields show the other's settings (none), so Apply cannot
    chunk it with the first one's; selecting the first again shows its chunk length and split."""
    rng = np.random.default_rng(6)
    window.open_files([write_fasta(tmp_path / "genome.fasta", [("chr", "".join(rng.choice(list("ACGT"), size=600)))])])
    wait_loaded(qtbot, window, 1)
    panel = window.data_panel
    panel.chunk_len.setValue(100)
    panel.split.setValue(0.8)
    qtbot.mouseClick(panel.apply_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: panel.summary["n_train"] + panel.summary["n_test"] == 6, timeout=20000)
    window.open_files([write_fasta(tmp_path / "prot.fasta", [(f"p{i}", "ACDEFGHIK" * 3) for i in range(4)])])
    wait_loaded(qtbot, window, 2)
    window.data_ctl.select_dataset(1)
    assert window.current_dataset.name.startswith("prot")
    opts = panel.options()
    assert opts["chunk_length"] is None and opts["split"] == 0.8 == window.current_dataset.options["split"]
    window.data_ctl.select_dataset(0)
    assert panel.options()["chunk_length"] == 100 and panel.options()["split"] == 0.8


# ----------------------------------------------------------------------------- settings
def test_settings_persist(qtbot, settings, dialogs, tmp_path):
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.model_form.set_spec(ModelSpec.make(model_type="dense_em", n=7, l=4, lr=0.02, n_iter=12, seed=9,
                                    init_method="spectral", init_scale=0.3))
    w.set_pool_size(3)
    w.set_theme("dark")
    settings.add_recent_file(str(tmp_path / "x.fasta"))
    w.close()
    w2 = MainWindow(settings)
    qtbot.addWidget(w2)
    spec = w2.model_form.spec()
    assert (spec.model_type, spec.n, spec.l, spec.options["n_iter"], spec.seed) == ("dense_em", 7, 4, 12, 9)
    assert abs(spec.options["lr"] - 0.02) < 1e-12
    assert (spec.options["init_method"], spec.options["init_scale"]) == ("spectral", 0.3)
    assert w2.model_form.fields["init_method"].currentText().startswith("spectral")
    assert w2.jobs.pool_size == 3 and w2.jobs_panel.pool.value() == 3
    assert settings.theme == "dark" and w2.menus.theme_actions["dark"].isChecked()
    assert [a.text() for a in w2.menus.recent_menu.actions()][0] == str(tmp_path / "x.fasta")
    w2.set_theme("system")


def test_model_form_start_choice_reaches_the_model(qtbot):
    """The form's "Start" (init_method, every model type) and "Init scale" (dense only) are in the
    spec the form emits and in the configuration of the model built from it."""
    from app.modelspec import build_model
    from app.panels.model_form import ModelForm
    form = ModelForm()
    qtbot.addWidget(form)
    # the defaults: the core's tuned settings, spectral start, init scale 0.2
    opts = form.spec().options
    assert (form.spec().preset, opts["init_method"], opts["init_scale"]) == ("default", "spectral", 0.2)
    assert form.fields["init_method"].toolTip() and form.fields["init_scale"].toolTip()
    form.fields["init_method"].setCurrentIndex(form.fields["init_method"].findData("random"))
    form.fields["init_scale"].setValue(0.5)
    with qtbot.waitSignal(form.train_requested):     # (no values: the window reads the form, spec())
        qtbot.mouseClick(form.train_button, Qt.LeftButton)
    spec = form.spec()
    assert (spec.model_type, spec.options["init_method"], spec.options["init_scale"]) == ("dense_cooc", "random", 0.5)
    model, _, _ = build_model(spec, 5, device="cpu")
    assert model.get_config()["init_method"] == "random" and model.get_config()["init_scale"] == 0.5
    form.fields["init_method"].setCurrentIndex(form.fields["init_method"].findData("spectral"))
    # a standard HMM keeps the start; init scale is a dense option (disabled, not in its config)
    form.kind.setCurrentIndex(form.kind.findData("standard_fair"))
    assert form.fields["init_method"].isEnabled() and not form.fields["init_scale"].isEnabled()
    spec = form.spec()
    assert spec.options["init_method"] == "spectral"
    model, _, _ = build_model(spec, 5)
    assert model.get_config()["init_method"] == "spectral" and "init_scale" not in model.get_config()
    # set_spec shows a saved spec's choice; Reset to defaults restores the settings' start
    form.set_spec(type(spec).make(model_type="dense_em", init_method="random", init_scale=2.0))
    assert form.fields["init_method"].currentData() == "random" and form.fields["init_scale"].value() == 2.0
    form.defaults_button.click()
    assert (form.spec().options["init_method"], form.spec().options["init_scale"]) == ("spectral", 0.2)
    # the paper's settings start randomly with init scale 1, as the core's "paper" preset
    form.preset.setCurrentIndex(form.preset.findData("paper"))
    assert (form.spec().options["init_method"], form.spec().options["init_scale"]) == ("random", 1.0)


def test_model_form_smoothing_and_device_reach_standard_models(qtbot):
    """"Smoothing" (emission_pseudocount) is a standard-HMM field; Device is enabled for every model
    type and reaches a standard HMM's configuration (its E-step can run on a GPU with CuPy)."""
    from app.modelspec import build_model
    from app.panels.model_form import ModelForm
    form = ModelForm()
    qtbot.addWidget(form)
    smoothing = form.fields["emission_pseudocount"]
    form.set_devices(["/CPU:0", "/GPU:0"])
    assert form.spec().options["emission_pseudocount"] == 0.0 and not smoothing.isEnabled()   # dense by default
    form.kind.setCurrentIndex(form.kind.findData("standard"))
    assert smoothing.isEnabled() and form.device.isEnabled() and smoothing.toolTip()
    smoothing.setValue(0.05)
    form.device.setCurrentIndex(form.device.findData("/CPU:0"))
    with qtbot.waitSignal(form.train_requested):     # (no values: the window reads the form, spec())
        qtbot.mouseClick(form.train_button, Qt.LeftButton)
    spec = form.spec()
    assert (spec.model_type, spec.options["emission_pseudocount"], spec.device) == ("standard", 0.05, "/CPU:0")
    model, _, _ = build_model(spec, 5)
    assert model.get_config()["emission_pseudocount"] == 0.05 and model.get_config()["device"] == "/CPU:0"
    form.kind.setCurrentIndex(form.kind.findData("dense_em"))
    assert not smoothing.isEnabled() and form.device.isEnabled()
    assert "emission_pseudocount" not in build_model(form.spec(), 5)[0].get_config()
    form.set_spec(type(spec).make(model_type="standard_fair", emission_pseudocount=0.5))
    assert smoothing.value() == 0.5 and form.spec().options["emission_pseudocount"] == 0.5


WORDS_CONLLU = os.path.join(REPO, "tests", "fixtures", "data", "words.conllu")


def words_dataset():
    """The fixture's CoNLL-U read with observe="words" (the words, not the tags, are the symbols)."""
    from app.datasets import dataset_from_corpus
    from densehmm_core.data import load
    return dataset_from_corpus(WORDS_CONLLU, load(WORDS_CONLLU, observe="words"))


def test_words_data_with_a_random_start_shows_the_spectral_hint(window, qtbot, tmp_path):
    """On the words of a tagged corpus a random start tags badly (docs/RESULTS.md, section 4): the
    form shows a hint under Start while Start is random; its button switches to spectral (dense:
    Init scale 0.2) and the hint goes; FASTA and tag data never show it; nothing changes by itself."""
    form = window.model_form

    def hint_shown():
        return form.hints["start"].isVisibleTo(form)
    assert not hint_shown()                                    # no data set yet
    window.open_files([write_fasta(tmp_path / "p.fasta", random_protein_records(4, 6))])
    wait_loaded(qtbot, window, 1)
    assert form.spec().options["init_method"] == "spectral" and not hint_shown()   # the default: no hint
    form.fields["init_method"].setCurrentIndex(form.fields["init_method"].findData("random"))
    form.fields["init_scale"].setValue(1.0)
    assert not hint_shown()                                    # FASTA: never
    window.open_files([WORDS_CONLLU])                          # a tagged corpus: its tags are the symbols
    wait_loaded(qtbot, window, 2)
    assert not window.current_dataset.observes_words and not hint_shown()
    window.data_ctl.add_dataset(words_dataset())                        # the same file's words
    assert window.current_dataset.observes_words and hint_shown()
    assert "spectral" in form.hints["start"].label.text() and "0.46" in form.hints["start"].label.toolTip()
    # only shown: the user's choice is untouched until the button is pressed
    assert (form.spec().options["init_method"], form.spec().options["init_scale"]) == ("random", 1.0)
    assert form.minimumSizeHint().width() <= 420               # wraps instead of widening the 420 px panel
    # another data set hides it, coming back shows it again
    window.data_ctl.select_dataset(0)
    assert not hint_shown()
    window.data_ctl.select_dataset(2)
    assert hint_shown()
    # the button: spectral, and Init scale 0.2 for a dense model; the hint then goes
    assert form.spec().model_type == "dense_cooc"
    qtbot.mouseClick(form.hints["start"].button, Qt.LeftButton)
    spec = form.spec()
    assert (spec.options["init_method"], spec.options["init_scale"]) == ("spectral", 0.2) and not hint_shown()
    # back to random by hand: the hint again; a standard HMM keeps its (unused) Init scale
    form.fields["init_method"].setCurrentIndex(form.fields["init_method"].findData("random"))
    assert hint_shown()
    form.kind.setCurrentIndex(form.kind.findData("standard"))
    form.fields["init_scale"].setValue(1.5)
    qtbot.mouseClick(form.hints["start"].button, Qt.LeftButton)
    opts = form.spec().options
    assert (opts["init_method"], opts["init_scale"]) == ("spectral", 1.5) and not hint_shown()
    # a saved spec with a random start (settings, sessions) brings it back
    form.set_spec(type(spec).make(model_type="dense_em", init_method="random"))
    assert hint_shown()


def test_words_data_with_a_standard_hmm_unsmoothed_shows_the_smoothing_hint(window, qtbot, tmp_path):
    """Plain Baum-Welch scores test sentences with a word its training part lacks as impossible (test
    NLL inf): on words data a standard HMM with Smoothing 0 shows a hint below Smoothing whose button
    sets 0.01; dense models (no Smoothing) and FASTA never show it; a hint whose field another option
    fixes is hidden (full logits fix a random start)."""
    from app.panels.form_hints import WORDS_PSEUDOCOUNT
    form = window.model_form

    def shown(name):
        return form.hints[name].isVisibleTo(form)
    standard = form.kind.findData("standard")
    window.open_files([write_fasta(tmp_path / "p.fasta", random_protein_records(4, 6))])
    wait_loaded(qtbot, window, 1)
    form.kind.setCurrentIndex(standard)
    assert form.spec().options["emission_pseudocount"] == 0 and not shown("smoothing")     # FASTA: never
    window.data_ctl.add_dataset(words_dataset())
    assert window.current_dataset.observes_words and shown("smoothing") and not shown("start")
    assert "inf" in form.hints["smoothing"].label.text() and "972" in form.hints["smoothing"].label.toolTip()
    # wraps instead of widening the panel (a sideways scroll bar in a 1920 px screen's Model panel)
    form.fields["init_method"].setCurrentIndex(form.fields["init_method"].findData("random"))
    assert shown("start") and shown("smoothing")
    both = form.minimumSizeHint().width()
    form.set_words_data(False)
    assert not shown("start") and not shown("smoothing") and both <= form.minimumSizeHint().width()
    form.set_words_data(True)
    form.fields["init_method"].setCurrentIndex(form.fields["init_method"].findData("spectral"))
    # a dense model has no Smoothing: no hint; back to standard: the hint again
    form.kind.setCurrentIndex(form.kind.findData("dense_em"))
    assert not form.fields["emission_pseudocount"].isEnabled() and not shown("smoothing")
    form.kind.setCurrentIndex(standard)
    assert shown("smoothing") and form.spec().options["emission_pseudocount"] == 0   # shown, nothing set
    qtbot.mouseClick(form.hints["smoothing"].button, Qt.LeftButton)
    assert form.spec().options["emission_pseudocount"] == WORDS_PSEUDOCOUNT == 0.01 and not shown("smoothing")
    form.fields["emission_pseudocount"].setValue(0.0)
    assert shown("smoothing")
    form.fields["emission_pseudocount"].setValue(0.5)          # any smoothing of the user's own: no hint
    assert not shown("smoothing")
    # full logits fix Start to random: the start hint's button could not apply, so it stays hidden
    form.kind.setCurrentIndex(form.kind.findData("dense_em"))
    form.fields["init_method"].setCurrentIndex(form.fields["init_method"].findData("random"))
    assert shown("start")
    form.fields["logits"].setCurrentIndex(form.fields["logits"].findData("full"))
    assert not form.fields["init_method"].isEnabled() and not shown("start")


def test_words_data_with_fewer_states_than_gold_tags_shows_the_states_hint(window, qtbot, tmp_path):
    """Words with k gold tags and fewer states than k: a hint below States n names both numbers, its
    button sets n = k and the hint goes; never for FASTA, for tags as symbols, for words without gold
    tags or for the fair standard HMM (its n is the DenseHMM's it matches); nothing changes by itself."""
    from densehmm_core.data.corpus import Corpus
    from app.datasets import dataset_from_corpus
    form = window.model_form

    def shown():
        return form.hints["states"].isVisibleTo(form)
    window.open_files([write_fasta(tmp_path / "p.fasta", random_protein_records(4, 6))])
    wait_loaded(qtbot, window, 1)
    form.n.setValue(3)
    assert not shown()                                               # FASTA: never
    window.open_files([WORDS_CONLLU])                                 # its tags as the symbols
    wait_loaded(qtbot, window, 2)
    assert window.current_dataset.gold_tags is None and not shown()
    words = words_dataset()
    k = len(words.corpus.tag_vocabulary)
    assert words.gold_tags == k == 10
    window.data_ctl.add_dataset(words)
    assert shown() and form.n.value() == 3                            # shown, nothing set
    row = form.hints["states"]
    assert row.label.text() == "Words with 10 gold tags: 3 states cannot tell them apart."
    assert row.button.text() == "Use 10" and "0.34" in row.label.toolTip()
    form.n.setValue(7)                                                # the text follows n
    assert shown() and "7 states" in row.label.text()
    form.kind.setCurrentIndex(form.kind.findData("standard_fair"))
    assert not shown()
    form.kind.setCurrentIndex(form.kind.findData("dense_em"))
    assert shown()
    qtbot.mouseClick(row.button, Qt.LeftButton)
    assert form.spec().n == 10 and form.spec().model_type == "dense_em" and not shown()
    form.n.setValue(12)                                               # more states than tags: no hint
    assert not shown()
    form.n.setValue(4)
    assert shown()
    window.data_ctl.select_dataset(0)                                  # another data set hides it
    assert not shown()
    # words without gold tags (plain text read as words): no number to offer
    plain = Corpus([s.copy() for s in words.corpus.sequences], list(words.corpus.vocabulary),
                   provenance=dict(words.corpus.provenance))
    window.data_ctl.add_dataset(dataset_from_corpus(WORDS_CONLLU, plain))
    assert window.current_dataset.observes_words and window.current_dataset.gold_tags is None and not shown()


def test_resources_found_from_source_and_bundle(tmp_path, monkeypatch):
    from app import resources
    assert resources.resource_root() == __import__("pathlib").Path(REPO) / "resources"
    (tmp_path / "resources" / "icons").mkdir(parents=True)
    (tmp_path / "resources" / "icons" / "densehmm-studio.svg").write_text("<svg/>")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resources.resource_path(resources.APP_ICON) == tmp_path / "resources" / "icons" / "densehmm-studio.svg"


# ----------------------------------------------------------------------------- main
def _no_display_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(extra)
    return env


def _free_display_number(start=99):
    """An X display number nobody serves here (no socket, no lock file): 99 unless taken (xvfb-run uses 99)."""
    for n in range(start, start + 200):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return n
    pytest.skip("no free X display number")


def _check_no_display_message(r):
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and "Aborted" not in r.stderr, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("densehmm-studio:")]
    assert len(lines) == 1, r.stderr
    msg = lines[0].lower()
    assert "display" in msg and "xvfb-run" in msg and "densehmm --help" in msg


def test_no_display_gives_clear_message_and_exit_code():
    from app.display import display_problem
    assert display_problem({}, "linux") is not None
    assert display_problem({"DISPLAY": ":0"}, "linux", connect=False) is None
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "minimal", "DISPLAY": ":12345"}, "linux") is None
    assert display_problem({"DISPLAY": ":12345"}, "win32") is None
    r = subprocess.run([sys.executable, "main.py"], cwd=REPO, env=_no_display_env(), capture_output=True,
                       text=True, timeout=60)
    _check_no_display_message(r)


def test_unreachable_display_gives_clear_message_not_a_qt_abort():
    """A stale DISPLAY (X session ended, ssh without -X): exit 2 with one line on stderr, not Qt's abort (134)."""
    n = _free_display_number()
    from app.display import _socket_problem, display_problem, x_display_problem
    assert x_display_problem(f":{n}") is not None          # libxcb (or the socket fallback)
    assert "X11-unix" in _socket_problem(f":{n}")           # the fallback alone
    assert _socket_problem("no-colon") is not None
    assert f":{n}" in display_problem({"DISPLAY": f":{n}"}, "linux")
    r = subprocess.run([sys.executable, "main.py", "--no-tensorflow"], cwd=REPO,
                       env=_no_display_env(DISPLAY=f":{n}"), capture_output=True, text=True, timeout=60)
    _check_no_display_message(r)
    assert f":{n}" in r.stderr


@pytest.fixture
def xvfb():
    """A private Xvfb display number (skips when Xvfb is not installed). Started like xvfb-run does,
    i.e. without -noreset: the server resets when its last client leaves and refuses connections
    for a moment, which the display check must survive (and not cause for Qt)."""
    import shutil
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb not installed")
    rfd, wfd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(wfd), "-nolisten", "tcp", "-screen", "0", "800x600x24"],
                            pass_fds=(wfd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(wfd)
    try:
        with os.fdopen(rfd) as fh:
            number = fh.readline().strip()
        if not number.isdigit():
            pytest.skip("Xvfb did not start")
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_reachable_x_display_passes_the_check(xvfb):
    from app.display import _socket_problem, display_problem, release_display_check, x_display_problem
    for _ in range(10):  # back to back: each check's disconnect makes the server reset
        assert x_display_problem(xvfb) is None
        assert display_problem({"DISPLAY": xvfb}, "linux") is None
    assert _socket_problem(xvfb) is None
    release_display_check()


def test_app_starts_on_a_real_x_display(xvfb, tmp_path):
    """Check, then Qt connects: the held check connection keeps the server from resetting in between."""
    env = _no_display_env(DISPLAY=xvfb, XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "st"))
    r = subprocess.run([sys.executable, "main.py", "--no-tensorflow", "--quit-after", "0.3"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "densehmm-studio:" not in r.stderr


def test_wayland_socket_is_checked(tmp_path):
    import socket
    from app.display import display_problem
    env = {"WAYLAND_DISPLAY": "wayland-test", "XDG_RUNTIME_DIR": str(tmp_path)}
    problem = display_problem(env, "linux")
    assert problem is not None and "wayland-test" in problem
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(str(tmp_path / "wayland-test"))
        srv.listen(1)
        assert display_problem(env, "linux") is None
        # an unreachable Wayland socket falls back to DISPLAY, which is checked in turn
        n = _free_display_number()
    assert display_problem(dict(env, DISPLAY=f":{n}"), "linux") is not None


# ----------------------------------------------------------------------------- log file
@pytest.fixture
def log_file(tmp_path, monkeypatch):
    from app.panels import log_panel
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = log_panel.install_log_file()
    yield path
    log_panel.remove_log_file()


def test_log_panel_warning_lands_in_the_log_file(window, log_file, tmp_path):
    from app.panels.log_panel import LOG_FILE_NAME
    assert log_file is not None and log_file.startswith(str(tmp_path / "state"))
    assert os.path.basename(log_file) == LOG_FILE_NAME
    window.log_panel.log("reads.fasta: 2 empty records skipped", "warning")
    window.log_panel.log("Could not open x.fa: line 3: bad", "error")
    text = open(log_file, encoding="utf-8").read()
    assert re.search(r"WARNING +reads\.fasta: 2 empty records skipped$", text, re.M), text
    # every line names its process (two instances of the app may share the log file)
    assert re.search(rf"^\S+ \S+ \[{os.getpid()}\] WARNING +reads\.fasta", text, re.M), text
    assert re.search(r"ERROR +Could not open x\.fa: line 3: bad$", text, re.M), text


def test_reader_warnings_of_a_dropped_file_reach_the_log_file(window, qtbot, log_file, tmp_path):
    path = tmp_path / "with_empty.fasta"
    path.write_text(">a\nMKV\n>empty\n>b\nMST\n")
    assert drop(window, [path])
    wait_loaded(qtbot, window, 1)
    shown = [m for lvl, m in window.log_panel.lines if lvl == "warning"]
    assert shown, window.log_panel.lines
    text = open(log_file, encoding="utf-8").read()
    assert f"Loading {path}" in text
    for m in shown:
        assert m in text


def test_log_file_rotates_and_never_fails(tmp_path, monkeypatch):
    import logging
    from app.panels import log_panel
    folder = tmp_path / "logs"
    path = log_panel.install_log_file(str(folder))
    try:
        assert log_panel.install_log_file(str(folder)) == path  # idempotent: one handler per file
        assert sum(isinstance(h, logging.FileHandler) for h in log_panel.logger.handlers) == 1
        line = "x" * 200
        for _ in range(int(1.5 * log_panel.MAX_BYTES / 200)):
            log_panel.logger.info(line)
        assert os.path.getsize(path) <= log_panel.MAX_BYTES
        assert os.path.exists(path + ".1")
    finally:
        log_panel.remove_log_file()
    # a folder that cannot be created: no log file, no exception
    blocker = tmp_path / "a file"
    blocker.write_text("")
    assert log_panel.install_log_file(str(blocker / "sub")) is None
    # a file that becomes unwritable while the app runs: logging goes quiet, the panel keeps working
    path = log_panel.install_log_file(str(tmp_path / "ok"))
    try:
        handler = [h for h in log_panel.logger.handlers if isinstance(h, logging.FileHandler)][0]
        monkeypatch.setattr(handler, "emit", lambda rec: handler.handleError(rec))
        log_panel.logger.warning("lost")
        assert handler.disabled
    finally:
        log_panel.remove_log_file()


# ----------------------------------------------------------------------------- loading progress
def test_loading_shows_real_progress_from_the_reader(window, qtbot, tmp_path):
    """The reader's progress(bytes_read, total) reaches the status bar's bar (determinate, 100 % at the end)."""
    path = write_fasta(tmp_path / "progress.fasta", random_protein_records(3, 40))
    seen = []
    window.data_ctl.load_progress.connect(
        lambda p, d, t: seen.append((p, d, t, window.busy.maximum(), window.busy.value())))
    window.open_files([path])
    assert window.busy.isVisible() or window.data_ctl.loading
    wait_loaded(qtbot, window, 1)
    size = os.path.getsize(path)
    assert seen and all(p == os.path.abspath(path) for p, *_ in seen)
    assert seen[-1][1:3] == (size, size)
    assert seen[-1][3:] == (1000, 1000)           # determinate, complete
    assert [d for _, d, *_ in seen] == sorted(d for _, d, *_ in seen)
    assert not window.busy.isVisible()


def test_loading_progress_is_throttled_and_unknown_sizes_stay_busy(window, qtbot, tmp_path, monkeypatch):
    import threading
    import time as _time
    from densehmm_core import data as core_data
    real_load = core_data.load
    gate = threading.Event()
    elapsed = []

    def slow_load(path, progress=None, **kw):
        gate.wait(10)
        total = 1_000_000
        t0 = _time.monotonic()
        for i in range(1, 101):                      # 100 reports over ~0.5 s
            progress(i * total // 100, total)
            _time.sleep(0.005)
        elapsed.append(_time.monotonic() - t0)
        return real_load(path, **kw)

    monkeypatch.setattr(core_data, "load", slow_load)
    path = write_fasta(tmp_path / "slow.fasta", random_protein_records(4, 5))
    seen = []
    window.data_ctl.load_progress.connect(
        lambda p, d, t: seen.append((d, t, window.busy.maximum(), window.busy.value())))
    window.open_files([path])
    # nothing reported yet: an indeterminate busy indicator
    assert window.busy.isVisible() and window.busy.maximum() == 0
    gate.set()
    wait_loaded(qtbot, window, 1)
    assert seen[-1] == (1_000_000, 1_000_000, 1000, 1000)
    assert 2 <= len(seen) <= elapsed[0] / 0.1 + 2, (len(seen), elapsed)  # throttled (<= 10/s) + the final one
    assert len(seen) < 50                                                 # not 100 redraws
    for d, t, mx, val in seen:
        assert mx == 1000 and val == round(1000 * d / t)


def test_model_file_loads_show_a_busy_indicator(window, qtbot, tmp_path):
    from densehmm_core.modelfile import save_model
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 4, size=30) for _ in range(5)]
    model = StandardHMM(n_states=2, n_iter=2, seed=0)
    model.fit(seqs)
    h5 = tmp_path / "m.h5"
    save_model(str(h5), model, name="m")
    loaded = []
    window.results_ctl.models_loaded.connect(loaded.append)
    window.open_files([str(h5)])
    assert window.busy.isVisible() and window.busy.maximum() == 0
    qtbot.waitUntil(lambda: bool(loaded) and not window.data_ctl.loading, timeout=20000)
    assert not window.busy.isVisible()


def test_main_opens_files_from_argv(tmp_path):
    path = write_fasta(tmp_path / "argv.fasta", random_protein_records(6, 7))
    code = ("import sys; from app import main as m; from app.window.data import DataController\n"
            "orig = DataController._loaded\n"
            "def loaded(self, p, r):\n"
            "    orig(self, p, r); print('LOADED', len(r.all_sequences), flush=True); self.window.close()\n"
            "DataController._loaded = loaded\n"
            f"sys.exit(m.main(['main.py', '--no-tensorflow', '--quit-after', '30', {path!r}]))\n")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert "LOADED 7" in r.stdout
    # main() keeps a per-user log file (StateLocation: $XDG_STATE_HOME/<organisation>/<application>)
    log = tmp_path / "state" / "DenseHMM" / "DenseHMM Studio" / "densehmm-studio.log"
    text = log.read_text()
    assert f"Loading {path}" in text and "Data set added: argv.fasta" in text
    assert "DenseHMM Studio quit (status 0)" in text


def test_preset_fills_preprocessing_fields(window):
    from densehmm_core.data.presets import get_preset
    panel = window.data_panel
    panel.preset.setCurrentText("paper_protein")
    pre = get_preset("paper_protein")["preprocess"]
    assert panel.subset.value() == pre["subset"]
    assert panel.max_len.value() == pre["max_len"]
    assert panel.merge.value() == pytest.approx(100 * pre["merge_below"])
    opts = panel.options()
    assert opts["preset"] == "paper_protein" and opts["max_length"] == pre["max_len"]


def test_about_lists_versions():
    import numpy
    import PySide6
    from app.panels.about import about_text, versions
    v = versions()
    assert v["numpy"] == numpy.__version__ and v["PySide6"] == PySide6.__version__
    for key in ("TensorFlow", "hmmlearn", "h5py", "pyqtgraph", "Qt", "Python"):
        assert key in v and v[key]
    assert "DenseHMM Studio" in about_text()


def test_export_folder_is_remembered_across_restarts(window, settings, qtbot, tmp_path, monkeypatch):
    """A figure exported from a view's menu: the next export dialog, also after a restart (new
    window, same settings), starts in that folder, with a name made of the job and the view."""
    from PySide6.QtWidgets import QFileDialog
    import app.export as export
    figs = tmp_path / "figs"
    figs.mkdir()
    asked = []

    def fake(parent, caption, start, filters):
        asked.append(start)
        return str(figs / "a.pdf"), export.FORMATS["pdf"]
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake))
    window.dashboard.curves._export_actions[0].trigger()
    assert (figs / "a.pdf").exists()
    assert settings.export_folder == str(figs)
    from app.mainwindow import MainWindow
    w2 = MainWindow(settings)
    qtbot.addWidget(w2)
    w2.dashboard.transmat._export_actions[0].trigger()
    assert os.path.dirname(asked[-1]) == str(figs) and asked[-1].endswith("transitions.png")


@pytest.mark.parametrize("screen_width", [1920, 1280, 1024])
def test_side_panels_fit_their_default_width(qtbot, settings, monkeypatch, tmp_path, screen_width):
    """The first layout shows the Data and Model panels without a horizontal scroll bar: a long file name
    is elided (whole in the tooltip), long choices are elided in their closed boxes, and a side dock
    starts as wide as its panel needs (at most 30% of the window). Before, both panels were cut off.
    On a netbook (1024 px) the one right column takes no more than 34% of the window or what its panels
    need (it took 438 of 972 px under Xvfb: the requested 420 went to the hidden tab)."""
    from PySide6.QtCore import QRect

    from app.mainwindow import NARROW_SCREEN, SIDE_COLUMN, MainWindow
    monkeypatch.setattr(MainWindow, "available_geometry", lambda self: QRect(0, 0, screen_width, 1000))
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    name = "a_very_long_file_name_without_any_spaces_" * 2 + ".fasta"
    w.open_files([write_fasta(tmp_path / name, random_protein_records(5, 10))])
    wait_loaded(qtbot, w, 1)
    QApplication.processEvents()
    source = w.data_panel.fields["Source"]
    assert source.text() == name and source.is_elided() and str(tmp_path / name) in source.toolTip()
    for dock in (w.data_dock, w.model_dock):
        dock.raise_()
        QApplication.processEvents()
        area = dock.widget()
        assert area.widget().minimumSizeHint().width() <= area.viewport().width(), dock.objectName()
        assert not area.horizontalScrollBar().isVisible(), dock.objectName()
        if screen_width < NARROW_SCREEN:
            need = area.widget().minimumSizeHint().width() + area.verticalScrollBar().sizeHint().width() + 4
            assert dock.width() <= max(SIDE_COLUMN if screen_width >= 1280 else 0, need, 0.34 * w.width()) + 8
    # the model type and the settings' source span the Model panel: shown whole at its first width
    for box in (w.model_form.kind, w.model_form.preset):
        for i in range(box.count()):
            box.setCurrentIndex(i)
            box.grab()   # a paint decides the elision
            assert not box.is_elided(), box.currentText()
    w.close()


def test_empty_sweep_and_compare_pages_say_how_to_fill_them(window):
    """The placeholders name the menu action, its shortcut and the button that exist."""
    from app.views.compare import NOTHING_COMPARED
    from app.views.sweep import NO_SWEEP
    d = window.dashboard
    assert d.sweep.placeholder.text() == NO_SWEEP and d.compare.placeholder.text() == NOTHING_COMPARED
    act = window.menus.act_sweep
    assert f"Train > {act.text().replace('&', '')} ({act.shortcut().toString()})" in NO_SWEEP
    assert f"press {window.jobs_panel.compare_btn.text().replace('&', '')}" in NOTHING_COMPARED


def test_a_data_set_is_joined_on_the_loading_thread():
    """A job's thread sends its worker the split's joined tokens (the GIL: joining 57,340 sentences
    beside the window froze it); ``dataset_from_corpus``, which runs on the loading thread, joins them,
    so that the job reads no sequence again."""
    from app.datasets import dataset_from_corpus
    from densehmm_core.data import load
    from densehmm_core.worker.wire import as_plain_sequences
    ds = dataset_from_corpus(WORDS_CONLLU, load(WORDS_CONLLU, observe="words"))
    for part in (ds.train, ds.test):
        expected = np.concatenate(part.sequences)

        class Unreadable(list):
            def __iter__(self):
                raise AssertionError("the job's thread read the sequences again")
        part.sequences = Unreadable(part.sequences)
        plain = as_plain_sequences(part, ds.n_symbols)
        np.testing.assert_array_equal(plain["tokens"], expected)

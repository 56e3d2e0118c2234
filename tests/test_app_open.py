"""Opening files (issue 16): one dialog for several bad files; the Open dialog's file type chooses the format."""
import os
import pathlib
import shutil

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QFileDialog, QMessageBox  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "data"


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    from app.mainwindow import MainWindow
    from app.settings import Settings
    dialogs = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: dialogs.append((a[1], a[2])) or QMessageBox.Ok)
    w = MainWindow(Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)))
    w.dialogs = dialogs
    qtbot.addWidget(w)
    return w


def test_several_bad_files_give_one_dialog_naming_each_file_and_reason(window, qtbot, tmp_path):
    good = tmp_path / "good.fasta"
    good.write_text(">a\nACDEFG\n>b\nGFEDCA\n")
    binary = tmp_path / "mystery.dat"
    binary.write_bytes(bytes(range(256)) * 4)
    csv = tmp_path / "table.dat"                 # text, but no format the reader knows
    csv.write_text("a,b,c\n1,2,3\n4,5,6\n")
    empty = tmp_path / "empty.fasta"
    empty.write_text("")
    missing = tmp_path / "missing.conllu"
    failed = []
    window.data_ctl.load_failed.connect(lambda p, m: failed.append(p))
    window.open_files([str(binary), str(good), str(csv), str(empty), str(missing)])
    qtbot.waitUntil(lambda: not window.data_ctl.loading, timeout=30000)
    assert len(window.datasets) == 1 and window.datasets[0].name == "good.fasta"
    assert len(failed) == 4
    assert len(window.dialogs) == 1                       # one dialog, not one per file
    title, text = window.dialogs[0]
    assert title == "Cannot open files" and "4 files could not be opened" in text
    for f in (binary, csv, empty, missing):
        assert f"• {f.name}: " in text
    assert "format=" not in text
    assert "file-type list of File > Open" in text        # what to do about the unknown format


def test_one_bad_file_gives_one_plain_dialog(window, qtbot, tmp_path):
    bad = tmp_path / "x.dat"
    bad.write_bytes(b"\x00\x01\x02" * 100)
    window.open_files([str(bad)])
    qtbot.waitUntil(lambda: not window.data_ctl.loading, timeout=30000)
    assert len(window.dialogs) == 1 and window.dialogs[0][0] == "Cannot open file"
    assert "x.dat" in window.dialogs[0][1] and "format=" not in window.dialogs[0][1]


def test_the_open_dialogs_file_type_chooses_the_format(window, qtbot, tmp_path, monkeypatch):
    from densehmm_core.data import FORMATS, load
    from app.datasets import format_of_filter
    src = FIXTURES / "sentences.conllu"
    renamed = tmp_path / "sentences.txt"       # a name that says nothing about the format
    shutil.copy(src, renamed)
    label = FORMATS["conllu"]["label"]
    assert format_of_filter(f"{label} (*.conllu *.conllu.gz)") == "conllu"
    assert format_of_filter("All supported files (*.fasta)") is None and format_of_filter("") is None
    monkeypatch.setattr(QFileDialog, "getOpenFileNames",
                        lambda *a, **k: ([str(renamed)], f"{label} (*.conllu *.conllu.gz)"))
    window.data_ctl.open_dialog()
    qtbot.waitUntil(lambda: not window.data_ctl.loading, timeout=30000)
    assert not window.dialogs and len(window.datasets) == 1
    ds = window.datasets[0]
    expected = load(str(src), format="conllu")
    assert ds.vocabulary == list(expected.vocabulary)
    assert ds.corpus.provenance["format"] == "conllu" and os.path.basename(ds.path) == "sentences.txt"


def test_a_data_sets_statistics_are_counted_on_the_loading_thread(window, qtbot, monkeypatch):
    """The data panel's statistics (sequences, tokens, lengths, each symbol's count) are counted once,
    by the thread that reads the file: the Brown corpus's took 0.25 s of the GUI thread each time the
    data set was shown.  They equal counting the sequences by hand; preprocessing counts its own."""
    import threading

    import numpy as np

    from app import datasets
    counted_on = []
    real = datasets.dataset_summary

    def spy(ds):
        counted_on.append(threading.current_thread() is threading.main_thread())
        return real(ds)
    monkeypatch.setattr(datasets, "dataset_summary", spy)
    window.open_files([str(FIXTURES / "words.conllu")])
    qtbot.waitUntil(lambda: len(window.datasets) == 1 and not window.data_ctl.loading, timeout=20000)
    ds = window.current_dataset
    assert counted_on == [False]                       # once, not on the GUI thread
    s = window.data_panel.summary
    assert s is ds.summary and counted_on == [False]   # the panel showed it without counting again
    seqs = ds.all_sequences
    assert (s["n_sequences"], s["n_tokens"], s["n_symbols"]) == (len(seqs), sum(map(len, seqs)), ds.n_symbols)
    np.testing.assert_array_equal(s["lengths"], [len(x) for x in ds.processed.sequences])
    np.testing.assert_array_equal(s["frequencies"], np.bincount(np.concatenate(seqs), minlength=ds.n_symbols))
    assert (s["n_train"], s["n_test"]) == (len(ds.train), len(ds.test))
    window.data_ctl.preprocess_current({"subset": 5, "split": 0.5, "seed": 0})
    qtbot.waitUntil(lambda: window.current_dataset is not ds, timeout=20000)
    sub = window.current_dataset
    assert counted_on == [False, False] and sub.summary["n_sequences"] == 5 == len(sub.all_sequences)

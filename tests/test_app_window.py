"""Desktop app: start-up, opening files (drop, dialog, argv), bad files, settings (pytest-qt, offscreen)."""
import os
import warnings
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
from PySide6.QtCore import QMimeData, QPoint, QPointF, QSettings, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDragEnterEvent, QDropEvent  # noqa: E402
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


def drop(widget, paths):
    """Synthesise the drop of local files on a widget (as a file manager does)."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    center = widget.rect().center()
    enter = QDragEnterEvent(center, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(widget, enter)
    entered = enter.isAccepted()
    ev = QDropEvent(QPointF(center), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(widget, ev)
    return entered and ev.isAccepted()


def wait_loaded(qtbot, window, n_datasets, timeout=20000):
    qtbot.waitUntil(lambda: len(window.datasets) >= n_datasets and not window.loading, timeout=timeout)


# ----------------------------------------------------------------------------- start
def test_start_view_and_demo(window, qtbot):
    assert window.stack.currentWidget() is window.start_view
    assert window.isVisible()
    qtbot.mouseClick(window.start_view.demo_button, Qt.LeftButton)
    assert len(window.datasets) == 1
    ds = window.current_dataset
    assert ds.is_demo
    # the paper's synthetic setup: 10 train + 10 test sequences of length 200, m = 5
    assert len(ds.train) == 10 and len(ds.test) == 10
    assert all(len(s) == 200 for s in ds.train + ds.test)
    assert ds.n_symbols == 5
    s = window.data_panel.summary
    assert s["n_tokens"] == 4000 and s["n_sequences"] == 20
    # the frequency chart shows the counts of the symbols
    counts = np.bincount(np.concatenate(ds.train + ds.test), minlength=5)
    heights = window.data_panel.freq_bars.opts["height"]
    np.testing.assert_array_equal(np.asarray(heights), counts)
    # the form knows m for n_fair
    assert "m = 5" in window.model_form.n_fair.text()
    # loading the demo twice selects it instead of adding a copy
    window.load_demo()
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
    window.load_demo()
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
    assert not window.loading
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


# ----------------------------------------------------------------------------- settings
def test_settings_persist(qtbot, settings, dialogs, tmp_path):
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.model_form.set_spec(ModelSpec(kind="dense_em", n=7, l=4, lr=0.02, steps=12, seed=9))
    w.set_pool_size(3)
    w.set_theme("dark")
    settings.add_recent_file(str(tmp_path / "x.fasta"))
    w.close()
    w2 = MainWindow(settings)
    qtbot.addWidget(w2)
    spec = w2.model_form.spec()
    assert (spec.kind, spec.n, spec.l, spec.steps, spec.seed) == ("dense_em", 7, 4, 12, 9)
    assert abs(spec.lr - 0.02) < 1e-12
    assert w2.jobs.pool_size == 3 and w2.jobs_panel.pool.value() == 3
    assert settings.theme == "dark" and w2.theme_actions["dark"].isChecked()
    assert [a.text() for a in w2.recent_menu.actions()][0] == str(tmp_path / "x.fasta")
    w2.set_theme("system")


def test_resources_found_from_source_and_bundle(tmp_path, monkeypatch):
    from app import resources
    assert resources.resource_root() == __import__("pathlib").Path(REPO) / "resources"
    (tmp_path / "resources" / "icons").mkdir(parents=True)
    (tmp_path / "resources" / "icons" / "densehmm-studio.svg").write_text("<svg/>")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resources.resource_path(resources.APP_ICON) == tmp_path / "resources" / "icons" / "densehmm-studio.svg"


# ----------------------------------------------------------------------------- main
def test_no_display_gives_clear_message_and_exit_code():
    from app.main import display_problem
    assert display_problem({}, "linux") is not None
    assert display_problem({"DISPLAY": ":0"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    r = subprocess.run([sys.executable, "main.py"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "display" in r.stderr.lower() and "Traceback" not in r.stderr


def test_main_opens_files_from_argv(tmp_path):
    path = write_fasta(tmp_path / "argv.fasta", random_protein_records(6, 7))
    code = ("import sys; from app import main as m; from app.mainwindow import MainWindow\n"
            "orig = MainWindow._loaded\n"
            "def loaded(self, p, r):\n"
            "    orig(self, p, r); print('LOADED', len(r.all_sequences), flush=True); self.close()\n"
            "MainWindow._loaded = loaded\n"
            f"sys.exit(m.main(['main.py', '--no-tensorflow', '--quit-after', '30', {path!r}]))\n")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert "LOADED 7" in r.stdout


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

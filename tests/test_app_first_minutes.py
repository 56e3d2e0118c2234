"""The first minutes (issue 16): the demo, About's TensorFlow version, a window that fits its screen."""
import sys

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QRect, QSettings  # noqa: E402


def _window(qtbot, tmp_path, name="s.ini"):
    from app.mainwindow import MainWindow
    from app.settings import Settings
    w = MainWindow(Settings(QSettings(str(tmp_path / name), QSettings.IniFormat)))
    qtbot.addWidget(w)
    return w


def test_demo_has_more_data_and_sets_a_longer_fit(qtbot, tmp_path):
    from densehmm_core.synthetic import demo_dataset
    from app.datasets import DEMO_FORM, DEMO_SIZE
    w = _window(qtbot, tmp_path)
    ds = w.load_demo()
    assert len(ds.train) == DEMO_SIZE["n_train"] == 50 and len(ds.test) == 50
    assert {len(s) for s in ds.train} == {DEMO_SIZE["length"]}
    core_train, _, _ = demo_dataset(0, **DEMO_SIZE)           # the core's generator, same seed
    assert all((a == b).all() for a, b in zip(ds.train, core_train))
    spec = w.model_form.spec()
    assert (spec.kind, spec.n, spec.l, spec.steps, spec.lr) == ("dense_cooc", 5, 3, DEMO_FORM["steps"], DEMO_FORM["lr"])


def test_about_shows_the_version_the_worker_reported(qtbot, tmp_path, monkeypatch):
    from app.panels.about import about_text
    # as in the app's own process: TensorFlow not imported (other tests of this run may have)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    w = _window(qtbot, tmp_path)
    assert "not loaded yet" in about_text(w.tf_version)
    w._tf_ready(("2.99.1", [{"name": "/device:CPU:0", "spec": "cpu"}], 0.5))   # the worker's report
    text = about_text(w.tf_version)
    assert "2.99.1 (loaded in a training worker process)" in text and "not loaded yet" not in text


def test_window_fits_the_screen_and_ignores_a_saved_geometry_that_does_not(qtbot, tmp_path):
    w = _window(qtbot, tmp_path)
    avail = w.available_geometry()
    assert avail.contains(w.geometry()), (avail, w.geometry())
    # saved on a larger screen: 3000 x 2000 at (100, 100)
    w.setGeometry(QRect(100, 100, 3000, 2000))
    w.save_settings()
    w2 = _window(qtbot, tmp_path)
    assert avail.contains(w2.geometry()) and w2.width() <= avail.width()
    # a geometry that fits is restored as saved
    w2.setGeometry(QRect(avail.x() + 10, avail.y() + 20, avail.width() // 2, avail.height() // 2))
    g = w2.geometry()
    w2.save_settings()
    w3 = _window(qtbot, tmp_path)
    assert w3.geometry().size() == g.size()


def test_the_window_can_shrink_to_a_1400_x_900_screen(qtbot, tmp_path):
    """Started on a 1400 x 900 display the Model panel was cut off: no panel may make the
    window's minimum size larger than such a screen, not even with data loaded."""
    w = _window(qtbot, tmp_path)
    w.show()
    w.finish_startup()
    w.load_demo()
    long_name = "a_protein_file_with_a_really_long_name_from_some_database_dump_2024.fasta"
    w.dashboard.decode.set_datasets([long_name, "other.fasta"], 0)
    qtbot.wait(50)
    ms = w.minimumSizeHint()
    assert ms.width() <= 1400 - 40 and ms.height() <= 900 - 60, (ms.width(), ms.height())

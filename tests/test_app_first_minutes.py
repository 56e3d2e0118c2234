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
    ds = w.data_ctl.load_demo()
    assert len(ds.train) == DEMO_SIZE["n_train"] == 50 and len(ds.test) == 50
    assert {len(s) for s in ds.train} == {DEMO_SIZE["length"]}
    core_train, _, _ = demo_dataset(0, **DEMO_SIZE)           # the core's generator, same seed
    assert all((a == b).all() for a, b in zip(ds.train, core_train))
    spec = w.model_form.spec()
    assert (spec.model_type, spec.n, spec.l, spec.options["cooc_steps"], spec.options["lr"]) == (
        "dense_cooc", 5, 3, DEMO_FORM["cooc_steps"], DEMO_FORM["lr"])


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
    w.data_ctl.load_demo()
    long_name = "a_protein_file_with_a_really_long_name_from_some_database_dump_2024.fasta"
    w.dashboard.decode.set_datasets([long_name, "other.fasta"], 0)
    qtbot.wait(50)
    ms = w.minimumSizeHint()
    assert ms.width() <= 1400 - 40 and ms.height() <= 900 - 60, (ms.width(), ms.height())


# ------------------------------------------- TensorFlow learnt from a job (--no-tensorflow)
def _dense_spec():
    from app.modelspec import ModelSpec, type_defaults
    d = dict(type_defaults("dense_cooc", "paper"), model_type="dense_cooc", n=3, l=2, seed=0, cooc_steps=20)
    return ModelSpec.make(**d)


@pytest.mark.parametrize("executor", ["process", "thread"])
def test_a_job_that_loads_tensorflow_tells_about_its_version(qtbot, tmp_path, monkeypatch, executor):
    """Started with --no-tensorflow (no background query): the first dense job's process
    imports TensorFlow and the window learns its version, devices and where it runs."""
    pytest.importorskip("tensorflow")
    import tensorflow
    from app.jobs import JobState
    from app.panels.about import about_text
    monkeypatch.setenv("DENSEHMM_JOB_EXECUTOR", executor)
    w = _window(qtbot, tmp_path)
    w.data_ctl.load_demo()
    assert w.tf_version is None and w.devices == []
    job = w.jobs_ctl.start_training(_dense_spec())
    qtbot.waitUntil(lambda: job.state.is_final, timeout=90000)
    assert job.state == JobState.FINISHED, job.reason + job.error
    qtbot.waitUntil(lambda: w.tf_version is not None, timeout=5000)
    where = "a training worker process" if executor == "process" else "the app's process"
    assert (w.tf_version, w.tf_where, w.tf_status) == (tensorflow.__version__, where, "ready")
    assert "/CPU:0" in w.devices and w.model_form.device.findData("/CPU:0") >= 0
    assert w.tf_label.text().startswith(f"TensorFlow {tensorflow.__version__} · ")
    text = about_text(w.tf_version, w.tf_where)
    assert f"{tensorflow.__version__} (loaded in {where})" in text and "not loaded yet" not in text
    assert any(f"TensorFlow {tensorflow.__version__} loaded by a job" in line for _, line in w.log_panel.lines)


def test_a_job_report_keeps_what_start_up_already_learnt(qtbot, tmp_path):
    """The window's handler of a job's report: it never overrides the start-up query's answer,
    and keeps devices already known (a GPU listed at start-up stays in the Device field)."""
    w = _window(qtbot, tmp_path)
    report = {"tf_version": "2.98.0", "devices": [{"name": "/device:CPU:0", "type": "CPU", "spec": "/CPU:0"}],
              "where": "worker"}
    w._tf_ready(("2.99.1", [{"name": "/device:CPU:0", "spec": "/CPU:0"},
                            {"name": "/device:GPU:0", "spec": "/GPU:0"}], 0.5))
    w.jobs.tensorflow_loaded.emit(report)
    assert w.tf_version == "2.99.1" and w.devices == ["/CPU:0", "/GPU:0"]
    w2 = _window(qtbot, tmp_path, "s2.ini")
    w2.devices = ["/CPU:0", "/GPU:0"]    # known, e.g. from an earlier report
    w2.jobs.tensorflow_loaded.emit(report)
    assert (w2.tf_version, w2.tf_where, w2.devices) == ("2.98.0", "a training worker process", ["/CPU:0", "/GPU:0"])


def _short_screen_window(make_window, qtbot, monkeypatch, width, height, name="a"):
    """A window started on a screen whose free area is ``width`` x ``height`` (its settings: ``name``),
    showing a trained job."""
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    monkeypatch.setattr(MainWindow, "available_geometry", lambda self: QRect(0, 0, width, height))
    w = make_window(name)
    w.fit_to_screen()            # as it opened (make_window gives the tests a 1400 x 900 window)
    w.finish_startup()
    w.data_ctl.load_demo()
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=5, n_iter=5, tol=0.0, seed=0))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    w.jobs_panel.select(job)
    w.jobs_ctl.show_job(job)
    qtbot.waitUntil(lambda: not w.dashboard.live_update_pending, timeout=20000)
    qtbot.wait(50)
    return w


@pytest.mark.parametrize("screen", [(1920, 1040), (1400, 860)])
def test_on_a_large_screen_the_jobs_panel_starts_a_quarter_of_the_window(make_window, qtbot, monkeypatch, screen):
    """At a third of a 950 px window the Jobs panel kept 300 px for one job while a word model's top-words
    table scrolled (15 of 17 states shown): it starts at a quarter, and the pages keep more than their
    minimum height."""
    from app.mainwindow import JOBS_SHARE
    w = _short_screen_window(make_window, qtbot, monkeypatch, *screen)
    assert JOBS_SHARE == 0.25
    want = max(190, int(JOBS_SHARE * w.height()))
    # (the dock area's height counts the Jobs / Log tab bar below the dock)
    assert want - 32 <= w.jobs_dock.height() <= want, (w.jobs_dock.height(), want, w.height())
    assert w.central_area.viewport().height() >= w.stack.minimumSizeHint().height() + 80
    assert not w.central_area.verticalScrollBar().isVisible()


@pytest.mark.parametrize("screen", [(1366, 728), (1280, 680)])
@pytest.mark.parametrize("saved_on_a_larger_screen", [False, True])
def test_a_1366_x_768_laptop_shows_the_whole_window_without_scroll_bars(make_window, qtbot, monkeypatch,
                                                                     saved_on_a_larger_screen, screen):
    """Defect: on a 1280 x 720 or 1366 x 768 screen the window was 787 px tall (the dashboard's minimum
    plus the Jobs panel's), so its bottom, the Jobs panel and the status bar, lay below the screen.  The
    window fits the free area (a 768 px screen less a 40 px task bar), and the first layout leaves every
    page of the dashboard its minimum height: no page needs a scroll bar.  Also when the window was last
    closed on a larger screen (its layout then gives way to the default one: the Jobs panel kept its
    third of the window there, and the pages scrolled).  A 1280 x 720 laptop too: at 92 % of its free
    height the window left the dashboard 22 px short, and its pages scrolled."""
    if saved_on_a_larger_screen:
        big = _short_screen_window(make_window, qtbot, monkeypatch, 1920, 1040, name="moved")
        big.save_settings()
        big.jobs.cancel_all()
    w = _short_screen_window(make_window, qtbot, monkeypatch, *screen,
                             name="moved" if saved_on_a_larger_screen else "a")
    avail = w.available_geometry()
    assert avail.contains(w.geometry()), (avail, w.geometry())
    assert w.minimumSizeHint().height() <= avail.height() - 60    # room for the window's title bar
    area, tabs = w.central_area, w.dashboard.tabs
    assert w.jobs_dock.height() >= w.jobs_dock.minimumSizeHint().height()
    # the Jobs panel no taller than three jobs need: the rest goes to the plots (a third of the window
    # left them only their minimum height on a 1366 x 768 laptop: A's heatmap 45 px tall)
    from app.mainwindow import SHORT_SCREEN_JOBS
    assert w.jobs_dock.height() <= max(SHORT_SCREEN_JOBS, w.jobs_dock.minimumSizeHint().height()) + 2
    if screen[1] >= 728:
        assert area.viewport().height() >= w.stack.minimumSizeHint().height() + 30
    for i in range(tabs.count()):
        tabs.setCurrentIndex(i)
        qtbot.wait(20)
        assert area.viewport().height() >= w.stack.minimumSizeHint().height(), tabs.tabText(i)
        assert not area.verticalScrollBar().isVisible() and not area.horizontalScrollBar().isVisible(), \
            tabs.tabText(i)


def test_on_a_smaller_screen_the_pages_scroll_instead_of_growing_the_window(make_window, qtbot, monkeypatch):
    """Below the pages' minimum (a 1024 x 600 netbook) the window still fits its screen: the dashboard
    keeps readable sizes and scrolls, shrunk to its minimum height before it does (not to its
    preferred height, which a word-wrapped header made it ask for)."""
    w = _short_screen_window(make_window, qtbot, monkeypatch, 1024, 560)
    avail = w.available_geometry()
    assert avail.contains(w.geometry()), (avail, w.geometry())
    area = w.central_area
    assert area.verticalScrollBar().isVisible()
    assert area.widget().height() == w.stack.minimumSizeHint().height() == w.stack.height()


def test_on_a_netbook_the_dashboard_needs_no_sideways_scrolling(make_window, qtbot, monkeypatch):
    """Defect: on a 1024 x 600 screen (free 1024 x 560) with the Data / Model column open, the dashboard's
    pages were 782 px wide in a 622 px viewport and scrolled sideways: stacked widgets asked for their
    largest page (B's hidden top-words table), a standard HMM's "no embeddings" panel took 260 px.  Now a
    standard HMM's matrices take the panel's place, and a DenseHMM on a 2,000-word vocabulary shows its
    top words, matrices and embeddings side by side, all within the viewport; so do their plot titles."""
    import numpy as np
    from densehmm_core.dense import DenseHMM
    w = _short_screen_window(make_window, qtbot, monkeypatch, 1024, 560)
    d, area = w.dashboard, w.central_area
    assert w.data_dock.isVisible() and d.heatmaps.isVisible()
    assert not d.embeddings.isVisible()              # the demo job: a standard HMM
    assert w.stack.minimumSizeHint().width() <= area.viewport().width()
    assert not area.horizontalScrollBar().isVisible()

    rng = np.random.default_rng(0)
    dense = DenseHMM(5, 3, n_symbols=2000, seed=0)
    dense.set_embeddings({"U": rng.normal(size=(5, 3)), "Z": rng.normal(size=(5, 3)), "W": rng.normal(size=(5, 3)),
                          "V": rng.normal(size=(2000, 3)), "z_start": rng.normal(size=3)})
    d.clear()
    d.set_vocabulary([f"w{i}" for i in range(2000)])
    d.set_job_model(dense)
    d.set_model(dense, None)
    qtbot.wait(50)
    assert d.embeddings.isVisible() and d.embeddings.controls.isVisible()
    assert d.heatmaps.emission_stack.currentWidget() is d.heatmaps.top_words
    assert w.stack.minimumSizeHint().width() <= area.viewport().width()
    qtbot.waitUntil(lambda: not area.horizontalScrollBar().isVisible(), timeout=2000)
    view = area.viewport().rect()
    for plot in (*d.curves.plots.values(), d.embeddings.plot, d.heatmaps.transmat.plot):
        item = plot.titleLabel.item
        rect = item.mapRectToScene(item.boundingRect())
        top_left = item.scene().views()[0].mapFromScene(rect.topLeft())
        left = item.scene().views()[0].mapTo(area.viewport(), top_left).x()
        assert 0 <= left and left + rect.width() <= view.width() + 1, plot.titleLabel.text


def test_on_a_large_screen_the_curves_get_more_than_their_short_screen_minimum(make_window, qtbot, monkeypatch):
    """The curves' minimum height went down to 130 px for short screens; the splitter then gave them only
    that on every screen.  They start with about 0.3 of the live page where there is room."""
    w = _short_screen_window(make_window, qtbot, monkeypatch, 1920, 1040)
    d = w.dashboard
    assert d.curves.height() >= 145 > d.curves.minimumHeight() + 10
    assert d.curves.height() >= 0.28 * (d.curves.height() + d.h_split.height())

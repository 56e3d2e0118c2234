"""The main window: menus, docks, drag and drop, data sets, jobs and the views.

Layout: the central area holds the start view and, once a job exists, the dashboard
(the views of ``app/views``); docks hold the data panel, the model form, the jobs
panel, the log and the comparison view.  Everything slow (reading files, TensorFlow,
training, scoring, writing HDF5) runs off the GUI thread.
"""
from __future__ import annotations

import functools
import os
import re
import time
from typing import List, Optional

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QApplication, QDockWidget, QFileDialog, QInputDialog, QLabel, QMainWindow,
                               QMessageBox, QProgressBar, QStackedWidget, QWidget)

try:  # PySide6 6.12 on Python 3.11 leaks references to None/True/False (see app/views/_pyside_fix.py)
    from .views._pyside_fix import ensure_none_survives as _ensure_none_survives
    _ensure_none_survives()
except ImportError:  # pragma: no cover - views not installed
    pass

from . import tasks
from .datasets import (DataSet, data_filters, ModelSet, dataset_from_corpus, demo_dataset, is_model_file,
                       load_path)
from .jobs import Job, JobManager, JobState
from .modelspec import ModelSpec, build_model, sweep_grid
from .panels.about import show_about
from .panels.data_panel import DataPanel
from .panels.jobs_panel import JobsPanel
from .panels.log_panel import LogPanel
from .panels.model_form import ModelForm
from .panels.start import StartView
from .resources import app_icon
from .settings import Settings

__all__ = ["MainWindow", "local_paths"]

#: seconds the window waits for cancelled jobs when it closes; a job still inside a long
#: TensorFlow chunk after that is abandoned (``app.main`` then ends the process at once)
CLOSE_WAIT_S = 1.4


def local_paths(mime) -> List[str]:
    """Local file paths carried by a drag's mime data."""
    if mime is None or not mime.hasUrls():
        return []
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]


class _Placeholder(QLabel):
    """Stands in for a view of ``app/views`` that is not available."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.setAlignment(Qt.AlignCenter)
        self.setWordWrap(True)

    def __getattr__(self, name):  # every view method becomes a no-op
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: {} if name == "views" else None


def _make_dashboard(window: "MainWindow"):
    try:
        from .views.dashboard import Dashboard
    except ImportError as exc:
        return _Placeholder(f"The plotting views are not available ({exc}).")
    return Dashboard(get_default_dir=lambda: window.settings.last_folder,
                     on_exported=lambda path: window.log_panel.log(f"Saved: {path}"))


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "model"


class _DropFilter(QObject):
    """Application-wide filter: files dropped on ANY widget of the window are opened."""

    def __init__(self, window: "MainWindow") -> None:
        super().__init__(window)
        self.window = window

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt API)
        et = event.type()
        if et not in (QEvent.DragEnter, QEvent.DragMove, QEvent.Drop):
            return False
        if not isinstance(obj, QWidget) or obj.window() is not self.window:
            return False
        paths = local_paths(event.mimeData())
        if not paths:
            return False
        if et == QEvent.Drop:
            event.acceptProposedAction()
            self.window.open_files(paths)
        else:
            event.acceptProposedAction()
        return True


class MainWindow(QMainWindow):
    """DenseHMM Studio's main window.

    Parameters
    ----------
    settings : Settings, optional
        Persistent settings (tests pass one backed by a temporary INI file).
    """

    dataset_added = Signal(object)
    models_loaded = Signal(object)
    load_failed = Signal(str, str)      # path, message
    load_progress = Signal(str, object, object)  # path, bytes read, total bytes (None: unknown)
    background_ready = Signal()

    def __init__(self, settings: Optional[Settings] = None) -> None:
        super().__init__()
        self.settings = settings if settings is not None else Settings()
        self.setWindowTitle("DenseHMM Studio")
        self.setWindowIcon(app_icon())
        self.datasets: List[DataSet] = []
        self.current_dataset: Optional[DataSet] = None
        self.current_job: Optional[Job] = None
        self._update_cost = 0.0  # GUI-thread seconds of the newest live update call (for the throttle)
        self.tf_status = "not loaded"
        self.devices: List[str] = []
        self._pending_loads = 0
        self._load_serial = 0
        self._load_progress = {}            # load serial -> (bytes read, total or None)
        self._sweeps = 0
        self._closing = False
        self.jobs = JobManager(self, pool_size=self.settings.pool_size)
        self.jobs.job_added.connect(self._job_added)
        self.jobs.job_changed.connect(self._job_changed)
        self.jobs.job_event.connect(self._job_event)
        self.jobs.job_finished.connect(self._job_finished)

        # central area
        self.stack = QStackedWidget()
        self.start_view = StartView()
        self.start_view.demo_requested.connect(self.load_demo)
        self.start_view.open_requested.connect(self.open_dialog)
        self.start_view.recent_requested.connect(lambda p: self.open_files([p]))
        self.log_panel = LogPanel()
        self._dashboard = None     # built on first use or right after the window shows (faster start)
        self.stack.addWidget(self.start_view)
        self.setCentralWidget(self.stack)

        # docks
        self.data_panel = DataPanel()
        self.data_panel.dataset_selected.connect(self._dataset_selected)
        self.data_panel.preprocess_requested.connect(self.preprocess_current)
        self.model_form = ModelForm()
        self.model_form.train_requested.connect(self.start_training)
        self.model_form.sweep_requested.connect(self.start_sweep)
        self.jobs_panel = JobsPanel()
        self.jobs_panel.set_pool_size(self.jobs.pool_size)
        self.jobs_panel.pool_size_changed.connect(self.set_pool_size)
        self.jobs_panel.current_changed.connect(self.show_job)
        self.jobs_panel.cancel_requested.connect(self.cancel_job)
        self.jobs_panel.export_requested.connect(self.export_models_dialog)
        self.jobs_panel.compare_requested.connect(self.compare_jobs)
        self.jobs_panel.score_requested.connect(self.score_job)
        self.data_dock = self._dock("Data", "dataDock", self.data_panel, Qt.LeftDockWidgetArea)
        self.model_dock = self._dock("Model", "modelDock", self.model_form, Qt.RightDockWidgetArea)
        self.jobs_dock = self._dock("Jobs", "jobsDock", self.jobs_panel, Qt.BottomDockWidgetArea)
        self.log_dock = self._dock("Log", "logDock", self.log_panel, Qt.BottomDockWidgetArea)
        self.tabifyDockWidget(self.jobs_dock, self.log_dock)
        self.jobs_dock.raise_()

        # status bar
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)
        self.busy.setMaximumWidth(140)
        self.busy.setMaximumHeight(16)
        self.busy.hide()
        self.tf_label = QLabel("TensorFlow: not loaded")
        self.statusBar().addPermanentWidget(self.busy)
        self.statusBar().addPermanentWidget(self.tf_label)

        self._build_actions()
        self.setAcceptDrops(True)
        self._drop_filter = _DropFilter(self)
        QApplication.instance().installEventFilter(self._drop_filter)
        self._restore_settings()
        self._refresh_recent()
        self.statusBar().showMessage("Ready — use the demo data set, open a file or drop files on the window.")

    # ================================================================ setup
    @property
    def dashboard(self):
        """The views of ``app/views`` (created on first use)."""
        if self._dashboard is None:
            self._dashboard = _make_dashboard(self)
            self.stack.addWidget(self._dashboard)
            drawn = getattr(self._dashboard, "sigLiveDrawn", None)
            if drawn is not None:
                drawn.connect(self._live_drawn)
        return self._dashboard

    @property
    def compare_view(self):
        return getattr(self.dashboard, "compare", self.dashboard)

    def finish_startup(self) -> None:
        """Build the remaining views after the window is on screen."""
        self.dashboard
        self._freeze_gc()

    def _dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _action(self, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        if tip:
            a.setStatusTip(tip)
            a.setToolTip(tip)
        a.triggered.connect(lambda _=False: slot())
        return a

    def _build_actions(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self.act_open = self._action("&Open…", self.open_dialog, QKeySequence.Open, "Open data or model files")
        self.act_demo = self._action("Open &demo data set", self.load_demo, "Ctrl+D",
                                     "The paper's synthetic setup, generated in the app")
        f.addAction(self.act_open)
        f.addAction(self.act_demo)
        self.recent_menu = f.addMenu("Open &recent")
        f.addSeparator()
        self.act_export_fig = self._action("&Export figure…", self.export_figure_dialog, "Ctrl+E",
                                           "Save the dashboard or one view as PNG, SVG or PDF")
        self.act_export_model = self._action("Export &model (.h5)…",
                                             lambda: self.export_models_dialog(self.jobs_panel.selected_jobs()),
                                             QKeySequence.Save, "Save the selected jobs' models to HDF5")
        self.act_export_sweep = self._action("Export &sweep (.h5)…", self.export_sweep_dialog, "Ctrl+Shift+S",
                                             "Save every model of the current job's sweep to one HDF5 file")
        f.addActions([self.act_export_fig, self.act_export_model, self.act_export_sweep])
        f.addSeparator()
        self.act_quit = self._action("&Quit", self.close, QKeySequence.Quit)
        f.addAction(self.act_quit)

        t = mb.addMenu("&Train")
        self.act_train = self._action("&Start job", lambda: self.start_training(self.model_form.spec()),
                                      "Ctrl+T", "Train a model with the form's settings")
        self.act_sweep = self._action("Run paper &sweep",
                                      lambda: self.start_sweep(self.model_form.spec(),
                                                               self.model_form.repeats.value()),
                                      "Ctrl+Shift+T", "n in {3, 5, 10} with their l values, repeated")
        self.act_cancel = self._action("&Cancel selected job",
                                       lambda: [self.cancel_job(j) for j in self.jobs_panel.selected_jobs()],
                                       "Ctrl+.")
        self.act_cancel_all = self._action("Cancel &all jobs", self.jobs.cancel_all, "Ctrl+Shift+.")
        self.act_score = self._action("Sc&ore model on current data",
                                      lambda: [self.score_job(j) for j in self.jobs_panel.selected_jobs()],
                                      "Ctrl+R")
        self.act_compare = self._action("Com&pare two jobs", self.jobs_panel._compare, "Ctrl+M")
        t.addActions([self.act_train, self.act_sweep, self.act_cancel, self.act_cancel_all])
        t.addSeparator()
        t.addActions([self.act_score, self.act_compare])

        v = mb.addMenu("&View")
        self.act_start = self._action("Start page", lambda: self.stack.setCurrentWidget(self.start_view), "Ctrl+1")
        self.act_dash = self._action("Dashboard", lambda: self.stack.setCurrentWidget(self.dashboard), "Ctrl+2")
        v.addActions([self.act_start, self.act_dash])
        v.addSeparator()
        for d in (self.data_dock, self.model_dock, self.jobs_dock, self.log_dock):
            v.addAction(d.toggleViewAction())
        v.addSeparator()
        theme = v.addMenu("Theme")
        self.theme_actions = {}
        for key, label in (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")):
            a = QAction(label, self, checkable=True)
            a.triggered.connect(functools.partial(self.set_theme, key))
            theme.addAction(a)
            self.theme_actions[key] = a

        h = mb.addMenu("&Help")
        h.addAction(self._action("&About DenseHMM Studio", lambda: show_about(self), QKeySequence.HelpContents))

    # ============================================================ settings
    def _restore_settings(self) -> None:
        g = self.settings.window_geometry()
        if g is not None:
            self.restoreGeometry(g)
        else:
            self.resize(1500, 950)
        s = self.settings.window_state()
        if s is None or not self.restoreState(s):
            self.resizeDocks([self.data_dock, self.model_dock], [290, 310], Qt.Horizontal)
            self.resizeDocks([self.jobs_dock], [190], Qt.Vertical)
        d = self.settings.form_defaults()
        if d:
            self.model_form.set_spec(ModelSpec.from_dict(d))
        self.set_theme(self.settings.theme, save=False)

    def save_settings(self) -> None:
        self.settings.save_window(self.saveGeometry(), self.saveState())
        self.settings.set_form_defaults(self.model_form.spec().to_dict())
        self.settings.pool_size = self.jobs.pool_size
        self.settings.sync()

    def set_theme(self, theme: str, save: bool = True) -> None:
        """"system" follows the desktop's light/dark setting; "light"/"dark" force it."""
        for k, a in self.theme_actions.items():
            a.setChecked(k == theme)
        hints = QApplication.styleHints()
        if hasattr(hints, "setColorScheme"):
            scheme = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}.get(theme, Qt.ColorScheme.Unknown)
            hints.setColorScheme(scheme)
        if save:
            self.settings.theme = theme

    def set_pool_size(self, n: int) -> None:
        self.jobs.set_pool_size(n)
        self.settings.pool_size = n
        self.jobs_panel.set_pool_size(n)

    def _refresh_recent(self) -> None:
        files = self.settings.recent_files()
        self.recent_menu.clear()
        for p in files:
            a = self.recent_menu.addAction(p)
            a.triggered.connect(functools.partial(lambda path, _=False: self.open_files([path]), p))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list", self._clear_recent)
        self.recent_menu.setEnabled(bool(files))
        self.start_view.set_recent_files(files)

    def _clear_recent(self) -> None:
        self.settings.clear_recent_files()
        self._refresh_recent()

    # ===================================================== background init
    def start_background_init(self) -> None:
        """Import TensorFlow and list its devices off the GUI thread (after the window shows)."""
        self.tf_status = "loading"
        self.tf_label.setText("TensorFlow: loading in the background…")
        self.statusBar().showMessage("Loading TensorFlow in the background — you can already open data.", 8000)
        t0 = time.perf_counter()

        if self.jobs.executor == "process":
            def work():
                # TensorFlow is imported in a training worker process (which then stays warm
                # for the first job), never in the GUI process: no GIL held for seconds here.
                from densehmm_core.worker import shared_pool
                info = shared_pool().query_tensorflow()
                return info["tf_version"], info["devices"], time.perf_counter() - t0
        else:
            def work():
                from densehmm_core.device import import_tf, list_devices
                tf = import_tf()
                return tf.__version__, list_devices(), time.perf_counter() - t0

        tasks.run_background(work, self._tf_ready, self._tf_failed)

    def _tf_ready(self, result) -> None:
        version, devices, secs = result
        specs = []
        for d in devices:
            specs.append(d.get("spec", d.get("name")) if isinstance(d, dict) else str(d))
        self.devices = specs
        self.jobs.set_devices(specs)
        self.model_form.set_devices(specs)
        self.tf_status = "ready"
        kinds = ", ".join(specs) or "CPU"
        self.tf_label.setText(f"TensorFlow {version} · {kinds}")
        self.statusBar().showMessage(f"TensorFlow {version} ready in {secs:.1f} s (devices: {kinds}).", 6000)
        where = "a training worker process" if self.jobs.executor == "process" else "the app"
        self.log_panel.log(f"TensorFlow {version} loaded in {secs:.1f} s in {where}; devices: {kinds}")
        self._freeze_gc()
        self.background_ready.emit()

    def _freeze_gc(self) -> None:
        """After start-up: move the long-lived objects (Qt wrappers, modules, TensorFlow when it
        was imported here) out of the cyclic collector's reach, so that a full collection on the
        GUI thread takes milliseconds instead of a visible stall."""
        from . import gcguard
        gcguard.freeze()

    def _tf_failed(self, exc, tb) -> None:
        self.tf_status = "failed"
        self.tf_label.setText("TensorFlow: unavailable")
        self.log_panel.log(f"TensorFlow could not be loaded: {exc}. Standard HMMs still work.", "error")
        self.background_ready.emit()

    # ============================================================ data sets
    def load_demo(self, seed: int = 0) -> Optional[DataSet]:
        """Add (or select) the built-in demo data set."""
        for i, ds in enumerate(self.datasets):
            if ds.is_demo:
                self.select_dataset(i)
                return ds
        try:
            ds = demo_dataset(seed)
        except Exception as exc:  # the core is missing or broken: say so, stay usable
            self._error_dialog("Demo data set", f"The demo data set could not be generated: {exc}")
            return None
        self.add_dataset(ds)
        return ds

    def add_dataset(self, ds: DataSet) -> None:
        self.datasets.append(ds)
        self._sync_dataset_list(len(self.datasets) - 1)
        for w in ds.warnings:
            self.log_panel.log(f"{ds.name}: {w}", "warning")
        self.log_panel.log(f"Data set added: {ds.name}")
        self.dataset_added.emit(ds)

    def _sync_dataset_list(self, current: int) -> None:
        self.data_panel.set_datasets([d.name for d in self.datasets], current)
        self.select_dataset(current)

    def select_dataset(self, index: int) -> None:
        if not (0 <= index < len(self.datasets)):
            return
        ds = self.datasets[index]
        self.current_dataset = ds
        if self.data_panel.selector.currentIndex() != index:
            self.data_panel.selector.blockSignals(True)
            self.data_panel.selector.setCurrentIndex(index)
            self.data_panel.selector.blockSignals(False)
        self.data_panel.set_dataset(ds)
        self.model_form.set_n_symbols(ds.n_symbols)
        self.data_dock.raise_()

    def _dataset_selected(self, index: int) -> None:
        self.select_dataset(index)

    def open_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Open data or model files", self.settings.last_folder,
                                                data_filters())
        if paths:
            self.open_files(paths)

    def open_files(self, paths: List[str]) -> None:
        """Open data files and .h5 model files, each read on a worker thread.

        The status bar's progress bar shows the bytes read of the data files being loaded
        (the reader's throttled ``progress(bytes_read, total)`` reports); while any pending
        file has no known size yet (model files, a load not started) it is a busy indicator.
        """
        for path in paths:
            path = os.path.abspath(path)
            self._pending_loads += 1
            self._load_serial += 1
            key = self._load_serial
            self._load_progress[key] = (0, None)
            self._update_busy()
            self.statusBar().showMessage(f"Loading {os.path.basename(path)}…")
            self.log_panel.log(f"Loading {path}")
            options = self.data_panel.options()
            on_progress = None
            fn = functools.partial(load_path, path, split=options["split"], seed=options["seed"])
            if not is_model_file(path):
                on_progress = functools.partial(self._load_step, key, path)
                fn = functools.partial(_load_with_progress, fn)
            tasks.run_background(fn, functools.partial(self._loaded_key, key, path),
                                 functools.partial(self._load_error_key, key, path), on_progress=on_progress)

    @property
    def loading(self) -> bool:
        return self._pending_loads > 0

    def _load_step(self, key: int, path: str, done, total) -> None:
        if key in self._load_progress:
            self._load_progress[key] = (int(done), int(total) if total else None)
            self._update_busy()
            self.load_progress.emit(path, int(done), int(total) if total else None)

    def load_fraction(self) -> Optional[float]:
        """Share of the pending loads' bytes read (0..1), or None when a pending total is unknown."""
        if not self._load_progress:
            return None
        parts = list(self._load_progress.values())
        if any(not total for _, total in parts):
            return None
        return min(1.0, sum(d for d, _ in parts) / float(sum(t for _, t in parts)))

    def _update_busy(self) -> None:
        self.busy.setVisible(self._pending_loads > 0)
        fraction = self.load_fraction()
        if fraction is None:
            self.busy.setRange(0, 0)          # busy indicator: size unknown
            self.busy.setFormat("")
        else:
            self.busy.setRange(0, 1000)
            self.busy.setValue(int(round(1000 * fraction)))
            self.busy.setFormat(f"{100 * fraction:.0f} %")
        self.busy.setTextVisible(fraction is not None)

    def _loaded_key(self, key: int, path: str, result) -> None:
        self._load_progress.pop(key, None)
        self._loaded(path, result)

    def _load_error_key(self, key: int, path: str, exc, tb: str) -> None:
        self._load_progress.pop(key, None)
        self._load_error(path, exc, tb)

    def _loaded(self, path: str, result) -> None:
        self._pending_loads -= 1
        self._update_busy()
        self.settings.last_folder = os.path.dirname(path)
        self.settings.add_recent_file(path)
        self._refresh_recent()
        if isinstance(result, ModelSet):
            self._add_model_set(result)
        else:
            self.add_dataset(result)
        self.statusBar().showMessage(f"Opened {os.path.basename(path)}", 5000)

    def _load_error(self, path: str, exc, tb: str) -> None:
        self._pending_loads -= 1
        self._update_busy()
        message = str(exc) or type(exc).__name__
        if os.path.basename(path) not in message:
            message = f"{path}: {message}"
        self.log_panel.log(f"Could not open {path}: {message}", "error")
        self.statusBar().showMessage(f"Could not open {os.path.basename(path)}", 5000)
        self.load_failed.emit(path, message)
        self._error_dialog("Cannot open file", message)

    def _error_dialog(self, title: str, message: str) -> None:
        QMessageBox.critical(self, title, message)

    def preprocess_current(self, options: dict) -> None:
        """Re-run the core's preprocessing and split on the current data set (off the GUI thread)."""
        ds = self.current_dataset
        if ds is None or ds.corpus is None:
            return
        from .datasets import preprocess_corpus

        def work():
            processed = preprocess_corpus(ds, options)
            return dataset_from_corpus(ds.path, ds.corpus, options["split"], options["seed"], processed=processed)

        def done(new_ds: DataSet) -> None:
            new_ds.name = ds.name
            new_ds.options = dict(options)
            idx = self.datasets.index(ds) if ds in self.datasets else -1
            if idx < 0:
                return
            self.datasets[idx] = new_ds
            self._sync_dataset_list(idx)
            s = self.data_panel.summary
            self.log_panel.log(f"{ds.name}: preprocessing applied ({_describe_options(options)}): "
                               f"{s['n_sequences']:,} sequences, {s['n_tokens']:,} tokens, "
                               f"{s['n_symbols']} symbols")

        def failed(exc, tb):
            self._error_dialog("Preprocessing failed", str(exc))

        tasks.run_background(work, done, failed)

    # ================================================================ jobs
    def _training_dataset(self) -> Optional[DataSet]:
        if self.current_dataset is None:
            self.load_demo()
        return self.current_dataset

    def make_job(self, spec: ModelSpec, ds: DataSet, sweep: Optional[str] = None) -> Job:
        device = self.jobs.place(spec.device) if spec.is_dense else "cpu"
        model, n_states, fit_kwargs = build_model(spec, ds.n_symbols, device=device)
        if getattr(model, "vocabulary", None) is None and ds.vocabulary is not None:
            model.vocabulary = list(ds.vocabulary)
        return Job(spec.label(n_states), model, ds.train, ds.test, dataset=ds, device=device, sweep=sweep,
                   spec=spec.to_dict(), fit_kwargs=fit_kwargs)

    def start_training(self, spec: ModelSpec) -> Optional[Job]:
        ds = self._training_dataset()
        if ds is None:
            return None
        try:
            job = self.make_job(spec, ds)
        except Exception as exc:
            self._error_dialog("Cannot start the job", f"{type(exc).__name__}: {exc}")
            return None
        self.settings.set_form_defaults(spec.to_dict())
        self.jobs.submit(job)
        self.jobs_panel.select(job)
        return job

    def start_sweep(self, spec: ModelSpec, repeats: int) -> List[Job]:
        ds = self._training_dataset()
        if ds is None:
            return []
        self._sweeps += 1
        sweep = f"sweep {self._sweeps}"
        jobs = []
        try:
            for s in sweep_grid(spec, repeats):
                job = self.make_job(s, ds, sweep=sweep)
                job.name = f"[{sweep}] {job.name}"
                jobs.append(job)
        except Exception as exc:
            self._error_dialog("Cannot start the sweep", f"{type(exc).__name__}: {exc}")
            return []
        for job in jobs:
            self.jobs.submit(job)
        self.log_panel.log(f"{sweep}: {len(jobs)} jobs ({spec.kind}, {repeats} repeats) on {ds.name}")
        return jobs

    def cancel_job(self, job: Job) -> None:
        self.jobs.cancel(job)

    def _job_added(self, job: Job) -> None:
        self.jobs_panel.add_job(job)
        self.jobs_dock.raise_()
        if self.stack.currentWidget() is self.start_view:
            self.stack.setCurrentWidget(self.dashboard)

    def _job_changed(self, job: Job) -> None:
        if not self._closing:
            self.jobs_panel.update_job(job)

    def _job_event(self, job: Job, ev) -> None:
        if job is self.current_job and not self._closing:
            t0 = time.perf_counter()
            self.dashboard.update_from_event(ev)
            # The dashboard draws the update in parts, one per event-loop turn; their cost (plus
            # this call's) lets the throttle space the next updates so that drawing never takes
            # more than ~25 % of the GUI thread.
            self._update_cost = time.perf_counter() - t0

    def _live_drawn(self, stage_cost: float) -> None:
        job = self.current_job
        if job is None:
            return
        cost = stage_cost + self._update_cost
        old = self.jobs.redraw_cost.get(job.id)
        self.jobs.redraw_cost[job.id] = cost if old is None else 0.5 * old + 0.5 * cost

    def _job_finished(self, job: Job) -> None:
        self.jobs_panel.update_job(job)
        level = "info" if job.state in (JobState.FINISHED, JobState.CANCELLED) else "error"
        self.log_panel.log(f"Job {job.id} '{job.name}' {job.state.value}: {job.reason} "
                           f"after {job.elapsed:.1f} s", level)
        if job.state == JobState.FAILED and job.error:
            self.log_panel.log(job.error, "error")
        for note in getattr(job, "notes", ()):
            self.log_panel.log(f"Job {job.id}: {note}", "warning")
        if job is self.current_job and not self._closing:
            d = self.dashboard
            live = hasattr(d, "set_model") and d.model() is None
            if not live:
                self.show_job(job)
            elif job.state.has_model:
                # shown live until now: draw the final model in parts (no full rebuild, no stall)
                d.set_model(job.model, self._decode_data(job), staged=True)

    def show_job(self, job: Optional[Job]) -> None:
        """Show a job (running, finished or loaded from a file) in the dashboard."""
        self.current_job = job
        d = self.dashboard
        d.clear()
        if job is None:
            return
        if hasattr(d, "set_title"):
            d.set_title(f"Job {job.id}: {job.name}")
        if hasattr(d, "set_file_stem"):  # default export names: dense-em_n10_l3_seed0_transitions.png
            from .export import file_stem
            d.set_file_stem(file_stem(job.model) if job.model is not None else None)
        vocab = getattr(job.model, "vocabulary", None)
        if vocab is None and job.dataset is not None and not isinstance(job.dataset, ModelSet):
            vocab = job.dataset.vocabulary
        d.set_vocabulary(list(vocab) if vocab is not None else None)
        if job.initial_params is not None:
            d.set_initial_params(job.initial_params)
        ds = job.dataset
        if isinstance(ds, DataSet) and hasattr(d, "set_token_counts"):
            d.set_token_counts(_token_count(ds.train), _token_count(ds.test) if ds.test is not None else None)
        staged = hasattr(d, "live_update_pending")  # the real dashboard: draw in parts, no stall
        if staged:
            d.set_history(job.history, staged=True)
        else:
            d.set_history(job.history)
        if job.last_event is not None:
            d.update_from_event(job.last_event)
        if job.state.has_model:
            if staged:
                d.set_model(job.model, self._decode_data(job), staged=True)
            else:
                d.set_model(job.model, self._decode_data(job))
        if self.stack.currentWidget() is self.start_view:
            self.stack.setCurrentWidget(self.dashboard)

    def _decode_data(self, job: Job):
        ds = job.dataset if isinstance(job.dataset, DataSet) else self.current_dataset
        if ds is None:
            return None
        m = getattr(job.model, "n_symbols", None)
        if m is not None and ds.n_symbols != m:
            return None
        if ds.processed is not None:
            return ds.processed
        return ds.test if ds.test is not None else ds.train

    # ======================================================= model files
    def _add_model_set(self, ms: ModelSet) -> None:
        """Each model of an .h5 file becomes a (finished) job, shown in the same views."""
        first = None
        for name, model in ms.models:
            job = Job(f"{ms.name}: {name}", model, None, None, dataset=ms, device="file", sweep=ms.path)
            job.state = JobState.FINISHED
            job.reason = f"loaded from {ms.name}"
            job.last_params = model.arrays()["params"]
            hist = job.history
            if hist:
                job.step = int(hist[-1].get("step") or 0)
            self.jobs.jobs.append(job)
            self.jobs_panel.add_job(job)
            first = first or job
        self.log_panel.log(f"{ms.name}: {len(ms.models)} model(s) loaded: "
                           + ", ".join(n for n, _ in ms.models))
        self.models_loaded.emit(ms)
        if first is not None:
            self.jobs_panel.select(first)
            self.show_job(first)

    def export_models(self, jobs: List[Job], path: str, on_done=None) -> None:
        """Write the jobs' models to one HDF5 file (core writer; whole file replaced atomically)."""
        from .datasets import save_models
        items = []
        for job in jobs:
            corpus = job.dataset.processed if isinstance(job.dataset, DataSet) else None
            items.append((_safe_name(f"job{job.id}_{job.name}"), job.model, corpus, _job_metrics(job)))

        def done(names):
            self.log_panel.log(f"Saved {len(names)} model(s) to {path}: {', '.join(names)}")
            self.statusBar().showMessage(f"Saved {path}", 5000)
            if on_done is not None:
                on_done(names)

        def failed(exc, tb):
            self._error_dialog("Export failed", str(exc))

        tasks.run_background(functools.partial(save_models, path, items), done, failed)

    def export_models_dialog(self, jobs: List[Job]) -> None:
        jobs = [j for j in jobs if j.state.has_model]
        if not jobs:
            QMessageBox.information(self, "Export model", "Select a finished (or cancelled) job first.")
            return
        start = os.path.join(self.settings.last_folder, _safe_name(jobs[0].name) + ".h5")
        path, _ = QFileDialog.getSaveFileName(self, "Export model(s) to HDF5", start, "HDF5 model files (*.h5)")
        if path:
            if not path.lower().endswith(".h5"):
                path += ".h5"
            self.export_models(jobs, path)

    def export_sweep_dialog(self) -> None:
        job = self.current_job
        if job is None or not job.sweep:
            QMessageBox.information(self, "Export sweep", "Select a job of a sweep first.")
            return
        jobs = [j for j in self.jobs.sweep_jobs(job.sweep) if j.state.has_model]
        unfinished = len(self.jobs.sweep_jobs(job.sweep)) - len(jobs)
        if unfinished:
            self.log_panel.log(f"{job.sweep}: {unfinished} job(s) without a model are not exported", "warning")
        self.export_models_dialog(jobs)

    # ============================================================ scoring
    def score_job(self, job: Job, ds: Optional[DataSet] = None, on_done=None) -> None:
        """Score a model on a data set's test part (or all of it): normalised NLL, off the GUI thread."""
        ds = ds or self.current_dataset
        if ds is None or not job.state.has_model:
            QMessageBox.information(self, "Score", "Select a model and load a data set first.")
            return
        m = getattr(job.model, "n_symbols", None)
        if m is not None and m != ds.n_symbols:
            self._error_dialog("Cannot score", f"The model has {m} symbols but '{ds.name}' has {ds.n_symbols}.")
            return
        data = ds.test if ds.test is not None else ds.train
        from .datasets import score_model

        def done(res):
            job.score_text = f"NLL/token on {ds.name}: {res['normalized_nll']:.5g}"
            job.scores = dict(res)
            self.jobs_panel.update_job(job)
            self.log_panel.log(f"Job {job.id} '{job.name}' on {ds.name}: " +
                               ", ".join(f"{k} = {v:.6g}" for k, v in res.items()))
            if on_done is not None:
                on_done(res)

        tasks.run_background(functools.partial(score_model, job.model, data), done,
                             lambda exc, tb: self._error_dialog("Scoring failed", str(exc)))

    def compare_jobs(self, a: Optional[Job], b: Optional[Job]) -> None:
        if a is None or b is None:
            QMessageBox.information(self, "Compare", "Select two jobs with models (Ctrl+click) to compare them.")
            return
        try:
            ma, mb = _job_metrics(a), _job_metrics(b)
            ma["elapsed"], mb["elapsed"] = a.elapsed, b.elapsed  # the Jobs panel's time
            same = isinstance(a.dataset, DataSet) and a.dataset is b.dataset
            ds = a.dataset if isinstance(a.dataset, DataSet) else self.current_dataset
            data, data_name = None, ""
            if isinstance(ds, DataSet):  # both models scored on one split (NLL per token)
                data = ds.test if ds.test is not None else ds.train
                data_name = f"{ds.name} ({'test' if ds.test is not None else 'training'} split)"
            self.compare_view.set_models(a.name, a.model, b.name, b.model, ma, mb,
                                         data=data, data_name=data_name, same_data=same)
        except Exception as exc:
            self._error_dialog("Cannot compare", f"{type(exc).__name__}: {exc}")
            return
        tabs = getattr(self.dashboard, "tabs", None)
        if tabs is not None:
            tabs.setCurrentWidget(self.compare_view)
        self.stack.setCurrentWidget(self.dashboard)

    # ============================================================ figures
    def export_figure(self, widget: QWidget, path: str, scale: float = 1.0) -> None:
        from .export import export_widget
        export_widget(widget, path, scale=scale)
        if hasattr(self.dashboard, "remember_export"):
            self.dashboard.remember_export(path)
        self.log_panel.log(f"Figure saved: {path}")

    def export_figure_dialog(self) -> None:
        target = getattr(self.dashboard, "export_target", None)
        views = {"Whole dashboard (current tab)": target() if callable(target) else self.dashboard}
        try:
            views.update({k: v for k, v in (self.dashboard.views() or {}).items() if k != "dashboard"})
        except Exception:
            pass
        names = list(views)
        name, ok = QInputDialog.getItem(self, "Export figure", "Which view?", names, 0, False)
        if not ok:
            return
        fname = _safe_name(name.lower()) + ".png"
        if hasattr(self.dashboard, "file_name"):  # the job's stem and the view, e.g. ..._transitions.png
            fname = self.dashboard.file_name("dashboard" if name not in views or name.startswith("Whole")
                                             else name, "png")
        folder = self.dashboard.export_dir() if hasattr(self.dashboard, "export_dir") else None
        start = os.path.join(folder or self.settings.last_folder, fname)
        path, flt = QFileDialog.getSaveFileName(self, "Export figure", start,
                                                "PNG image (*.png);;SVG vector graphics (*.svg);;PDF (*.pdf)")
        if not path:
            return
        if not os.path.splitext(path)[1]:
            path += {"SVG": ".svg", "PDF": ".pdf"}.get(flt[:3], ".png")
        scale = 1.0
        if path.lower().endswith(".png"):
            choice, ok = QInputDialog.getItem(self, "PNG resolution", "Scale", ["1×", "2×", "3×", "4×"], 1, False)
            if not ok:
                return
            scale = float(choice[0])
        try:
            self.export_figure(views[name], path, scale)
        except Exception as exc:
            self._error_dialog("Export failed", f"{type(exc).__name__}: {exc}")

    # ============================================================ drag/drop
    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if local_paths(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        paths = local_paths(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.open_files(paths)

    # ============================================================ closing
    def closeEvent(self, event) -> None:  # noqa: N802
        active = self.jobs.active_jobs()
        if active and not self._closing:
            answer = QMessageBox.question(
                self, "Quit DenseHMM Studio",
                f"{len(active)} job(s) are still running or queued. Cancel them and quit?",
                QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
            if answer != QMessageBox.Yes:
                event.ignore()
                return
        self._closing = True
        self.hide()
        self.jobs.cancel_all()
        self.jobs.wait(CLOSE_WAIT_S)
        self.save_settings()
        QApplication.instance().removeEventFilter(self._drop_filter)
        event.accept()


def _load_with_progress(load, report):
    """Run ``load(progress=report)`` (``app.tasks`` passes the throttled ``report``)."""
    return load(progress=report)


def _job_metrics(job: Job) -> dict:
    """Numbers describing a job's result (last history record, sizes, scores)."""
    out = {}
    hist = job.history
    if hist:
        for k, v in hist[-1].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None:
                out[k] = float(v)
    model = job.model
    for k, v in (getattr(model, "metrics_", None) or {}).items():
        if isinstance(v, (int, float)):
            out.setdefault(k, float(v))
    out.update(getattr(job, "scores", {}) or {})
    return out


def _describe_options(o: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in o.items() if v not in (None, False, 0, 0.0) or k == "split")


def _token_count(data) -> int:
    """Number of tokens of a Corpus or a list of sequences (for per-token NLL curves)."""
    seqs = getattr(data, "sequences", data)
    return int(sum(len(x) for x in seqs))

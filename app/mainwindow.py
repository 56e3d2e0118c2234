"""The main window: the shell (docks, centre, status bar, settings, start-up, closing) composing
the controllers of ``app.window``.

Layout: the central area holds the start view and, once a job exists, the dashboard
(the views of ``app/views``); docks hold the data panel, the model form, the jobs
panel, the log and the comparison view.  Everything slow (reading files, TensorFlow,
training, scoring, writing HDF5) runs off the GUI thread.

Controllers, one object each, made here with what each uses (the state, the JobManager, the
panels, the settings) and wired here (they never call each other):

* ``self.data_ctl`` (``app.window.data.DataController``): data sets and opening files;
* ``self.jobs_ctl`` (``app.window.jobs.JobsController``): starting, following and showing jobs;
* ``self.results_ctl`` (``app.window.results.ResultsController``): model files, scoring, comparing,
  exporting models and figures;
* ``self.sessions_ctl`` (``app.window.sessions.SessionsController``): File > Save / Open session;
* ``self.menus`` (``app.window.menus.Menus``): menus and actions;
* ``self.drops`` (``app.window.dragdrop.DropFilter``): drag and drop.

The state (open data sets, jobs, the job shown, the selection, the form's values) is one
:class:`app.state.AppState` (``self.state``); the controllers change it through its methods
and the panels and views follow its signals (:meth:`MainWindow._subscribe`).  Live updates of the
selected job are :class:`app.live.LiveFeed`'s (``self.jobs.live``).
"""
from __future__ import annotations

import functools
import os
import time
from typing import List, Optional

from PySide6.QtCore import QEvent, QRect, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (QDockWidget, QFrame, QMainWindow, QMessageBox, QProgressBar,
                               QScrollArea, QStackedWidget, QWidget)

from . import tasks
from .datasets import DataSet
from .jobs import Job, JobManager
from .modelspec import ModelSpec
from .panels.about import TF_WHERE
from .panels.data_panel import DataPanel
from .panels.jobs_panel import JobsPanel
from .panels.log_panel import LogPanel
from .panels.model_form import ModelForm
from .panels.start import StartView
from .panels.status import StatusLabel
from .resources import app_icon
from .settings import Settings
from .state import AppState
from .pyside_fix import ensure_none_survives
from .views.dashboard import Dashboard
from .window.common import warm_scoring
from .window.data import DataController
from .window.dragdrop import DropFilter, local_paths
from .window.jobs import JobsController
from .window.menus import Menus
from .window.results import ResultsController
from .window.sessions import SessionsController

ensure_none_survives()  # PySide6 6.12 on Python 3.11 leaks references to None/True/False (see app.pyside_fix)

__all__ = ["MainWindow", "local_paths"]

#: seconds the window waits for cancelled jobs when it closes; a job still inside a long
#: TensorFlow chunk after that is abandoned (``app.main`` then ends the process at once)
CLOSE_WAIT_S = 1.4
#: screens narrower than this (free width, pixels) get Data and Model as tabs of one column
NARROW_SCREEN = 1600
#: that column's first width where the screen allows (pixels; :meth:`MainWindow._column_width`)
SIDE_COLUMN = 420
#: a screen's free height below which the window takes all of it but its title bar (pixels;
#: :meth:`MainWindow.fit_to_screen`)
SHORT_SCREEN = 800
#: the room left for the window's title bar on such a screen (pixels)
TITLE_BAR = 32
#: the Jobs panel's first height on such a screen (pixels: its buttons, a header and three jobs); the
#: dashboard takes the rest (at a third of the window its plots had only their minimum height)
SHORT_SCREEN_JOBS = 160
#: its share of the window's height on a taller screen: a quarter (237 px of a 950 px window: buttons,
#: a header and seven jobs; at a third a word model's top-words table showed 15 of 17 states and the
#: plots below it were 130 px tall)
JOBS_SHARE = 1 / 4


class _MinimumHost(QWidget):
    """Holds one widget that fills it, for a resizable scroll area: the area then shrinks the widget down
    to its minimum size before it scrolls.  Given the widget itself, an area asks a layout with
    height-for-width (a word-wrapped label anywhere inside) for its *preferred* height at the viewport's
    width, and scrolled as soon as the pages were shorter than that, far above their minimum."""

    def __init__(self, child: QWidget) -> None:
        super().__init__()
        self._child = child
        child.setParent(self)

    def minimumSizeHint(self):  # noqa: N802 (Qt API)
        return self._child.minimumSizeHint()

    def sizeHint(self):  # noqa: N802 (Qt API)
        return self._child.sizeHint()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self._child.setGeometry(self.rect())

    def event(self, event) -> bool:
        if event.type() == QEvent.LayoutRequest:   # the child's minimum changed: tell the scroll area
            self.updateGeometry()
        return super().event(event)


class MainWindow(QMainWindow):
    """DenseHMM Studio's main window.

    Parameters
    ----------
    settings : Settings, optional
        Persistent settings (tests pass one backed by a temporary INI file).
    """

    background_ready = Signal()

    def __init__(self, settings: Optional[Settings] = None) -> None:
        super().__init__()
        self.settings = settings if settings is not None else Settings()
        self.setWindowTitle("DenseHMM Studio")
        self.setWindowIcon(app_icon())
        self.tf_status = "not loaded"
        self.tf_version: Optional[str] = None   # reported by the process that loaded TensorFlow
        self.tf_where = TF_WHERE            # that process, for About
        self.devices: List[str] = []
        self._closing = False
        self.jobs = JobManager(self, pool_size=self.settings.pool_size, gpu_slots=self.settings.gpu_slots)
        self.jobs.tensorflow_loaded.connect(self._tf_loaded_by_job)
        # THE application state (app/state.py): changes go through it; what shows them subscribes below
        self.state = AppState(self.jobs, self)

        # central area
        self.stack = QStackedWidget()
        self.start_view = StartView()
        self.log_panel = LogPanel()
        self._dashboard = None     # built on first use or right after the window shows (faster start)
        self.stack.addWidget(self.start_view)
        # in a scroll area: on a short screen (a 1366 x 768 laptop) the pages keep readable sizes and
        # scroll instead of making the window taller than the screen
        self.central_area = QScrollArea()
        self.central_area.setWidgetResizable(True)
        self.central_area.setFrameShape(QFrame.NoFrame)
        self.central_area.setWidget(_MinimumHost(self.stack))
        self.setCentralWidget(self.central_area)

        # docks
        self.data_panel = DataPanel()
        self.model_form = ModelForm()
        self.jobs_panel = JobsPanel()
        self.jobs_panel.set_pool_size(self.jobs.pool_size)
        self.jobs_panel.pool_size_changed.connect(self.set_pool_size)
        self.jobs_panel.set_select_new(self.settings.select_new_jobs)
        self.jobs_panel.select_new_changed.connect(
            lambda on: setattr(self.settings, "select_new_jobs", on))
        self.jobs_panel.set_hidden_columns(self.settings.jobs_hidden_columns)
        self.jobs_panel.hidden_columns_changed.connect(
            lambda ids: setattr(self.settings, "jobs_hidden_columns", ids))
        self.data_dock = self._dock("Data", "dataDock", self.data_panel, Qt.LeftDockWidgetArea, scroll=True)
        self.model_dock = self._dock("Model", "modelDock", self.model_form, Qt.RightDockWidgetArea, scroll=True)
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
        self.tf_label = StatusLabel()      # never cut ("TensorFlow: loading in t", issue 24.12)
        self.tf_label.setText("TensorFlow: not loaded")
        self.statusBar().addPermanentWidget(self.busy)
        self.statusBar().addPermanentWidget(self.tf_label)

        # the controllers: each told what it uses; they act on the state and the panels' public API
        self.data_ctl = DataController(self, self.state, self.settings, self.data_panel, self.model_form,
                                       self.log_panel, self.data_dock, self.busy)
        self.jobs_ctl = JobsController(self, self.state, self.jobs, self.settings, self.model_form, self.jobs_panel,
                                       self.log_panel, self.jobs_dock, self.data_ctl.training_dataset)
        self.results_ctl = ResultsController(self, self.state, self.jobs, self.settings, self.jobs_panel,
                                             self.log_panel)
        self.sessions_ctl = SessionsController(self, self.state, self.jobs, self.settings, self.jobs_panel,
                                               self.log_panel, self.jobs_dock)
        self._connect_panels()
        self._subscribe()
        self.menus = Menus(self, data=self.data_ctl, jobs=self.jobs_ctl, results=self.results_ctl,
                           sessions=self.sessions_ctl, job_manager=self.jobs, model_form=self.model_form,
                           jobs_panel=self.jobs_panel,
                           docks=[self.data_dock, self.model_dock, self.jobs_dock, self.log_dock])
        self.drops = DropFilter(self, self.data_ctl.open_files)   # files dropped anywhere on the window are opened
        self.drops.install()
        self._restore_settings()
        self.refresh_recent()
        self.statusBar().showMessage("Ready — use the demo data set, open a file or drop files on the window.")

    def _connect_panels(self) -> None:
        """The panels' requests, each to the controller that does it; the controllers' notices to
        each other (they never call one another)."""
        data, jobs, results, sessions = self.data_ctl, self.jobs_ctl, self.results_ctl, self.sessions_ctl
        self.start_view.demo_requested.connect(data.load_demo)
        self.start_view.open_requested.connect(data.open_dialog)
        self.start_view.recent_requested.connect(lambda p: data.open_files([p]))
        self.data_panel.dataset_selected.connect(data.select_dataset)
        self.data_panel.preprocess_requested.connect(data.preprocess_current)
        self.data_panel.reread_requested.connect(lambda read: data.reread_dataset(self.state.current_dataset, read))
        self.model_form.train_requested.connect(jobs.train_from_form)    # the form read once the data are there
        self.model_form.sweep_requested.connect(jobs.sweep_from_form)
        self.model_form.sweep_target_requested.connect(jobs.sweep_target_dialog)
        self.jobs_panel.current_changed.connect(jobs.show_job)
        self.jobs_panel.selection_changed.connect(self.state.set_selection)
        self.jobs_panel.cancel_requested.connect(jobs.cancel_job)
        self.jobs_panel.export_requested.connect(results.export_models_dialog)
        self.jobs_panel.compare_requested.connect(results.compare_jobs)
        self.jobs_panel.compare_refused.connect(results.compare_refused)
        self.jobs_panel.cancel_selected_requested.connect(jobs.cancel_jobs)
        self.jobs_panel.score_requested.connect(results.score_job)
        data.recent_changed.connect(self.refresh_recent)
        data.models_read.connect(results.add_model_set)        # an .h5 file's models become jobs
        data.session_read.connect(sessions.open_session)       # a session file opened with File > Open
        sessions.dataset_reopened.connect(data.add_dataset)    # a session's data file read again

    def _subscribe(self) -> None:
        """Who listens to the application state (docs/ARCHITECTURE.md, "The app's map")."""
        st = self.state
        st.datasets_changed.connect(self.data_ctl.datasets_listed)       # data panel's list
        st.datasets_changed.connect(self.jobs_ctl.datasets_listed)       # Decode's data box
        st.current_dataset_changed.connect(self.data_ctl.dataset_shown)  # data panel, model form (m, words hint)
        st.job_added.connect(self.jobs_ctl.job_added)                    # Jobs panel, centre shows the dashboard
        st.job_changed.connect(self.jobs_ctl.job_changed)                # Jobs panel row
        st.job_finished.connect(self.jobs_ctl.job_finished)              # Jobs panel, log, sweep summary, final model
        st.current_job_changed.connect(self.jobs_ctl.draw_job)           # dashboard, live feed
        st.current_job_changed.connect(self.jobs_ctl.sweep_shown)        # Sweep tab: the focused sweep's summary
        st.selection_changed.connect(self.jobs_ctl.sweep_shown)          # (AppState.focused_sweep)
        self.model_form.changed.connect(lambda: st.set_spec(self.model_form.spec()))

    # the state's values (read-only views of ``self.state``)
    @property
    def datasets(self) -> List[DataSet]:
        return self.state.datasets

    @property
    def current_dataset(self) -> Optional[DataSet]:
        return self.state.current_dataset

    @property
    def current_job(self) -> Optional[Job]:
        return self.state.current_job

    @property
    def dashboard(self) -> Dashboard:
        """The views of ``app/views`` (created on first use); the selected job's live updates
        reach it through ``self.jobs.live``."""
        if self._dashboard is None:
            self._dashboard = Dashboard(get_default_dir=lambda: self.settings.export_folder,
                                        on_exported=self._exported)
            self.stack.addWidget(self._dashboard)
            self.jobs.live.set_view(self._dashboard)
            self._dashboard.decode_dataset_chosen.connect(self.jobs_ctl.decode_on)
        return self._dashboard

    @property
    def dashboard_built(self) -> bool:
        """Whether the dashboard exists yet (it is built on first use)."""
        return self._dashboard is not None

    @property
    def compare_view(self):
        return self.dashboard.compare

    @property
    def closing(self) -> bool:
        """The window is closing: nothing is drawn any more."""
        return self._closing

    # the centre: the start page or the dashboard
    def show_start_page(self) -> None:
        self.stack.setCurrentWidget(self.start_view)

    def show_dashboard(self) -> None:
        self.stack.setCurrentWidget(self.dashboard)

    def leave_start_page(self) -> bool:
        """The dashboard takes the centre if the start page shows it (data or a job came in);
        returns whether it did."""
        if self.stack.currentWidget() is self.start_view:
            self.show_dashboard()
            return True
        return False

    def open_files(self, paths: List[str], format: Optional[str] = None) -> None:
        """Open data, model and session files (``self.data_ctl.open_files``)."""
        self.data_ctl.open_files(paths, format=format)

    def finish_startup(self) -> None:
        """Build the remaining views after the window is on screen."""
        self.dashboard
        if self._default_layout:   # first start, or saved on another screen: a Jobs panel a quarter as tall
            self._size_jobs_dock()  # as the window, or less on a short screen (now that the pages exist)
        self._freeze_gc()

    def _dock(self, title: str, name: str, widget: QWidget, area, scroll: bool = False) -> QDockWidget:
        """A dock holding ``widget``; ``scroll=True`` puts it in a scroll area, so that a tall or
        wide panel never sets the window's minimum size (the window must fit small screens)."""
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        if scroll:
            area_w = QScrollArea()
            area_w.setWidgetResizable(True)
            area_w.setFrameShape(QFrame.NoFrame)
            area_w.setWidget(widget)
            area_w.setMinimumSize(180, 120)
            dock.setWidget(area_w)
        else:
            dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _size_jobs_dock(self, share: float = JOBS_SHARE) -> None:
        """The Jobs panel's first height: ``share`` of the window, at least 190 px; on a short screen (a
        1366 x 768 laptop) :data:`SHORT_SCREEN_JOBS`, the rest for the plots, and never so tall that the
        central pages lack their minimum height (no scroll bar); never below the panel's own minimum."""
        if self.available_geometry().height() < SHORT_SCREEN:
            want = max(SHORT_SCREEN_JOBS, self.jobs_dock.minimumSizeHint().height())
        else:
            want = max(190, int(share * self.height()))
        self.resizeDocks([self.jobs_dock], [want], Qt.Vertical)
        self.layout().activate()
        short = self.stack.minimumSizeHint().height() - self.central_area.height()
        if short > 0:   # (a dock area's size counts its tab bar: correct by what the centre lacks)
            self.resizeDocks([self.jobs_dock], [max(want - short, self.jobs_dock.minimumSizeHint().height())],
                             Qt.Vertical)

    @staticmethod
    def _panel_need(dock: QDockWidget) -> int:
        """The width a side dock's panel needs without a horizontal scroll bar (its minimum width, its
        vertical scroll bar, the frame); 0 when it is not a scrolled panel."""
        area = dock.widget()
        if isinstance(area, QScrollArea) and area.widget() is not None:
            return area.widget().minimumSizeHint().width() + area.verticalScrollBar().sizeHint().width() + 4
        return 0

    def _side_width(self, dock: QDockWidget, default: int) -> int:
        """A side dock's first width: ``default``, or what its panel needs (:meth:`_panel_need`), at
        most 30% of the window."""
        need = max(default, self._panel_need(dock))
        return int(min(need, max(default, 0.3 * self.width())))

    def _column_width(self) -> int:
        """The first width of the one right column of a narrow screen (Data and Model as tabs):
        :data:`SIDE_COLUMN` px, less on a netbook, where that would be over 34% of the window, but
        never less than either panel needs (at 1024 px the dashboard gains about 100 px)."""
        need = max(self._panel_need(self.model_dock), self._panel_need(self.data_dock))
        return int(min(SIDE_COLUMN, max(need, 0.34 * self.width())))

    def _restore_settings(self) -> None:
        avail = self.available_geometry()
        g = self.settings.window_geometry()
        restored = g is not None and self.restoreGeometry(g)
        if not restored or not avail.contains(self.geometry()):
            self.fit_to_screen()   # saved on a larger screen (or never saved): the default layout
            restored = False
        s = self.settings.window_state()
        self._default_layout = not restored or s is None or not self.restoreState(s)
        if self._default_layout:
            if avail.width() < NARROW_SCREEN:
                # a narrow screen: Data and Model share the right column as tabs, so that the
                # dashboard keeps its width and no panel is cut off
                self.tabifyDockWidget(self.model_dock, self.data_dock)
                self.data_dock.raise_()
                self.resizeDocks([self.data_dock], [self._column_width()], Qt.Horizontal)  # (the tab shown)
            else:
                self.resizeDocks([self.data_dock, self.model_dock],
                                 [self._side_width(self.data_dock, 290), self._side_width(self.model_dock, 310)],
                                 Qt.Horizontal)
            self._size_jobs_dock(0.3)
        d = self.settings.form_defaults()
        if d:
            self.model_form.set_spec(ModelSpec.from_dict(d))
        from .remote_jobs import describe_target
        self.model_form.set_sweep_target(describe_target(self.settings.sweep_target))
        self.set_theme(self.settings.theme, save=False)

    def available_geometry(self) -> QRect:
        """The free area (without panels and docks of the desktop) of the screen the window opens on."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else QRect(0, 0, 1500, 950)

    def fit_to_screen(self) -> None:
        """1500 x 950, or 95 % x 92 % of the screen's free area where that is smaller; centred.  On a short
        screen (free height below :data:`SHORT_SCREEN`: a 1366 x 768 or 1280 x 720 laptop) the window takes
        the free height less its title bar (:data:`TITLE_BAR`) and starts at its top: at 92 % a 1280 x 720
        laptop left the dashboard 22 px short of its minimum, and its pages scrolled."""
        avail = self.available_geometry()
        w = min(1500, int(avail.width() * 0.95))
        h = min(950, int(avail.height() * 0.92))
        y = avail.y() + (avail.height() - h) // 2
        if avail.height() < SHORT_SCREEN:
            h = max(h, avail.height() - TITLE_BAR)
            y = avail.y()          # (the frame's top: the title bar sits above the window's area)
        self.resize(w, h)
        self.move(avail.x() + (avail.width() - w) // 2, y)

    def save_settings(self) -> None:
        self.settings.save_window(self.saveGeometry(), self.saveState())
        self.settings.set_form_defaults(self.model_form.spec().to_dict())
        self.settings.pool_size = self.jobs.pool_size
        self.settings.sync()

    def set_theme(self, theme: str, save: bool = True) -> None:
        """"system" follows the desktop's light/dark setting; "light"/"dark" force it."""
        for k, a in self.menus.theme_actions.items():
            a.setChecked(k == theme)
        from .window.appearance import apply_theme
        apply_theme(theme)   # widgets and plots (app/window/appearance.py)
        if save:
            self.settings.theme = theme

    def set_pool_size(self, n: int) -> None:
        self.jobs.set_pool_size(n)
        self.settings.pool_size = n
        self.jobs_panel.set_pool_size(n)

    def refresh_recent(self) -> None:
        """File > Open recent and the start page's list, from the settings' recent files."""
        files = self.settings.recent_files()
        menu = self.menus.recent_menu
        menu.clear()
        for p in files:
            a = menu.addAction(p)
            a.triggered.connect(functools.partial(lambda path, _=False: self.data_ctl.open_files([path]), p))
        if files:
            menu.addSeparator()
            menu.addAction("Clear list", self._clear_recent)
        menu.setEnabled(bool(files))
        self.start_view.set_recent_files(files)

    def _clear_recent(self) -> None:
        self.settings.clear_recent_files()
        self.refresh_recent()

    def start_background_init(self) -> None:
        """Import TensorFlow and list its devices off the GUI thread (after the window shows)."""
        self.tf_status = "loading"
        self.tf_label.setText("TensorFlow: loading…", "TensorFlow is loading in the background; "
                                                      "you can already open data and train standard HMMs")
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
        self.warm_up()

    def warm_up(self) -> None:
        """Off the GUI thread, after the window shows (with or without TensorFlow's start-up query,
        ``--no-tensorflow``): import what this process's own decoding and tagging scores need
        (:func:`~app.window.common.warm_scoring`), then freeze the collector on the GUI thread.
        Otherwise the first snapshot of a words job imported scipy beside the window (60-100 ms
        stalls) and each young collection scanned the thousands of objects that import made."""
        def frozen(_result=None, _tb=None) -> None:
            self._freeze_gc()
        tasks.run_background(warm_scoring, frozen, frozen)

    def _tf_ready(self, result) -> None:
        version, devices, secs = result
        where = TF_WHERE if self.jobs.executor == "process" else "the app's process"
        kinds = self._record_tensorflow(version, devices, where)
        self.statusBar().showMessage(f"TensorFlow {version} ready in {secs:.1f} s (devices: {kinds}).", 6000)
        self.log_panel.log(f"TensorFlow {version} loaded in {secs:.1f} s in {where}; devices: {kinds}")
        self._freeze_gc()
        self.background_ready.emit()

    def _tf_loaded_by_job(self, info: dict) -> None:
        """A job's fit imported TensorFlow (``--no-tensorflow``, or before the background query
        answered): record its version, and its devices where none were known."""
        if self.tf_version is not None:
            return
        version = info["tf_version"]
        where = TF_WHERE if info.get("where") == "worker" else "the app's process"
        kinds = self._record_tensorflow(version, info["devices"], where, keep_devices=bool(self.devices))
        self.statusBar().showMessage(f"TensorFlow {version} loaded by a job (devices: {kinds}).", 6000)
        self.log_panel.log(f"TensorFlow {version} loaded by a job in {where}; devices: {kinds}")

    def _record_tensorflow(self, version, devices, where: str, keep_devices: bool = False) -> str:
        """Remember TensorFlow's version and where it runs (About, the status bar) and, unless
        ``keep_devices``, its devices (the Model form's Device field, job placement);
        returns the devices as shown."""
        if not keep_devices:
            specs = [d.get("spec", d.get("name")) if isinstance(d, dict) else str(d) for d in devices]
            self.devices = specs
            self.jobs.set_devices(specs)
            self.model_form.set_devices(specs)
        self.tf_status = "ready"
        self.tf_version = str(version)
        self.tf_where = where
        kinds = ", ".join(self.devices) or "CPU"
        self.tf_label.setText(f"TensorFlow {version} · {kinds}")
        return kinds

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

    def _exported(self, path) -> None:
        """A figure or CSV was written: log it and remember its folder (kept across restarts)."""
        self.settings.export_folder = os.path.dirname(os.path.abspath(os.fspath(path)))
        self.log_panel.log(f"Saved: {path}")

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
        self.jobs.live.current = None   # nothing is drawn any more
        self.hide()
        self.jobs.cancel_all()
        self.jobs_ctl.close()   # disconnect from Dask; a local cluster shuts down
        self.jobs.wait(CLOSE_WAIT_S)
        self.save_settings()
        self.drops.remove()
        event.accept()

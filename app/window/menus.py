"""Menus and actions of the main window (what each one does lives in the other ``app.window`` modules)."""
from __future__ import annotations

import functools

from PySide6.QtGui import QAction, QKeySequence

from ..panels.about import show_about
from .navigate import add_navigation

__all__ = ["MenusMixin"]


class MenusMixin:
    """The menu bar: File, Train, View, Help."""

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
        self.act_save_session = self._action("Save sess&ion…", self.save_session_dialog, "Ctrl+Alt+S",
                                             "Save every finished job (models, histories, data-set references) "
                                             "to one .h5 file")
        self.act_open_session = self._action("Open sessio&n…", self.open_session_dialog, "Ctrl+Alt+O",
                                             "Restore the jobs of a saved session and reopen their data sets")
        f.addActions([self.act_save_session, self.act_open_session])
        f.addSeparator()
        self.act_quit = self._action("&Quit", self.close, QKeySequence.Quit)
        f.addAction(self.act_quit)

        t = mb.addMenu("&Train")
        self.act_train = self._action("&Start job", lambda: self.start_training(self.model_form.spec()),
                                      "Ctrl+T", "Train a model with the form's settings")
        self.act_sweep = self._action("Run &sweep", self.model_form.request_sweep,
                                      "Ctrl+Shift+T", "The form's model over the sweep grid (default: the "
                                      "paper's n and l values), repeated")
        self.act_cancel = self._action("&Cancel selected job",
                                       lambda: self.cancel_jobs(self.jobs_panel.selected_jobs()),
                                       "Ctrl+.", "Cancel the selected jobs (asks first when there are several)")
        self.act_cancel_all = self._action("Cancel &all jobs", self.jobs.cancel_all, "Ctrl+Shift+.")
        self.act_score = self._action("Sc&ore model on current data",
                                      lambda: [self.score_job(j) for j in self.jobs_panel.selected_jobs()],
                                      "Ctrl+R")
        self.act_compare = self._action("Com&pare two jobs", self.jobs_panel._compare, "Ctrl+M")
        self.act_sweep_target = self._action("Sweep &target…", self.sweep_target_dialog, None,
                                             "Run sweeps with this app's workers or on a Dask cluster")
        t.addActions([self.act_train, self.act_sweep, self.act_sweep_target, self.act_cancel, self.act_cancel_all])
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
        h.addAction(self._action("&About DenseHMM Studio", lambda: show_about(self, self.tf_version, self.tf_where)))
        add_navigation(self, v, h)   # F1 help, Ctrl+Tab and Alt+1..6 for the centre's tabs

"""Menus and actions of the main window: :class:`Menus` wires each action to what does it (the
controllers' and the shell's public methods)."""
from __future__ import annotations

import functools

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from ..panels.about import show_about
from .navigate import add_navigation

__all__ = ["Menus"]


class Menus(QObject):
    """The menu bar: File, Train, View, Help (``window.menus``; its actions are ``act_*``).

    Parameters
    ----------
    window : QWidget
        The shell: its menu bar, the actions' parent; ``close``, ``show_start_page``,
        ``show_dashboard``, ``set_theme``, and ``tf_version`` / ``tf_where`` for About.
    data, jobs, results, sessions :
        The window's controllers (:class:`~app.window.data.DataController`, ...): the actions call
        their public methods.
    job_manager : JobManager
        Cancel all jobs.
    model_form, jobs_panel :
        The form's spec and Run sweep; the Jobs panel's selection and Compare.
    docks : list of QDockWidget
        Their show/hide actions in View.
    """

    def __init__(self, window: QWidget, *, data, jobs, results, sessions, job_manager, model_form, jobs_panel,
                 docks) -> None:
        super().__init__(window)
        self.window = window
        self._build(data, jobs, results, sessions, job_manager, model_form, jobs_panel, docks)

    def _action(self, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        a = QAction(text, self.window)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        if tip:
            a.setStatusTip(tip)
            a.setToolTip(tip)
        a.triggered.connect(lambda _=False: slot())
        return a

    def _build(self, data, jobs, results, sessions, job_manager, model_form, jobs_panel, docks) -> None:
        w = self.window
        mb = w.menuBar()
        f = mb.addMenu("&File")
        self.act_open = self._action("&Open…", data.open_dialog, QKeySequence.Open, "Open data or model files")
        self.act_demo = self._action("Open &demo data set", data.load_demo, "Ctrl+D",
                                     "The paper's synthetic setup, generated in the app")
        f.addAction(self.act_open)
        f.addAction(self.act_demo)
        self.recent_menu = f.addMenu("Open &recent")
        f.addSeparator()
        self.act_export_fig = self._action("&Export figure…", results.export_figure_dialog, "Ctrl+E",
                                           "Save the dashboard or one view as PNG, SVG or PDF")
        self.act_export_model = self._action("Export &model (.h5)…",
                                             lambda: results.export_models_dialog(jobs_panel.selected_jobs()),
                                             QKeySequence.Save, "Save the selected jobs' models to HDF5")
        self.act_export_sweep = self._action("Export &sweep (.h5)…", results.export_sweep_dialog, "Ctrl+Shift+S",
                                             "Save every model of the current job's sweep to one HDF5 file")
        f.addActions([self.act_export_fig, self.act_export_model, self.act_export_sweep])
        f.addSeparator()
        self.act_save_session = self._action("Save sess&ion…", sessions.save_session_dialog, "Ctrl+Alt+S",
                                             "Save every finished job (models, histories, data-set references) "
                                             "to one .h5 file")
        self.act_open_session = self._action("Open sessio&n…", sessions.open_session_dialog, "Ctrl+Alt+O",
                                             "Restore the jobs of a saved session and reopen their data sets")
        f.addActions([self.act_save_session, self.act_open_session])
        f.addSeparator()
        self.act_quit = self._action("&Quit", w.close, QKeySequence.Quit)
        f.addAction(self.act_quit)

        t = mb.addMenu("&Train")
        self.act_train = self._action("&Start job", jobs.train_from_form,
                                      "Ctrl+T", "Train a model with the form's settings")
        self.act_sweep = self._action("Run &sweep", model_form.request_sweep,
                                      "Ctrl+Shift+T", "The form's model over the sweep grid (default: the "
                                      "paper's n and l values), repeated")
        self.act_cancel = self._action("&Cancel selected job",
                                       lambda: jobs.cancel_jobs(jobs_panel.selected_jobs()),
                                       "Ctrl+.", "Cancel the selected jobs (asks first when there are several)")
        self.act_cancel_all = self._action("Cancel &all jobs", job_manager.cancel_all, "Ctrl+Shift+.")
        self.act_score = self._action("Sc&ore model on current data",
                                      lambda: [results.score_job(j) for j in jobs_panel.selected_jobs()],
                                      "Ctrl+R")
        self.act_compare = self._action("Com&pare two jobs", jobs_panel.request_compare, "Ctrl+M")
        self.act_sweep_target = self._action("Sweep &target…", jobs.sweep_target_dialog, None,
                                             "Run sweeps with this app's workers or on a Dask cluster")
        t.addActions([self.act_train, self.act_sweep, self.act_sweep_target, self.act_cancel, self.act_cancel_all])
        t.addSeparator()
        t.addActions([self.act_score, self.act_compare])

        v = mb.addMenu("&View")
        self.act_start = self._action("Start page", w.show_start_page, "Ctrl+1")
        self.act_dash = self._action("Dashboard", w.show_dashboard, "Ctrl+2")
        v.addActions([self.act_start, self.act_dash])
        v.addSeparator()
        for d in docks:
            v.addAction(d.toggleViewAction())
        v.addSeparator()
        theme = v.addMenu("Theme")
        self.theme_actions = {}
        for key, label in (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")):
            a = QAction(label, w, checkable=True)
            a.triggered.connect(functools.partial(w.set_theme, key))
            theme.addAction(a)
            self.theme_actions[key] = a

        h = mb.addMenu("&Help")
        h.addAction(self._action("&About DenseHMM Studio", lambda: show_about(w, w.tf_version, w.tf_where)))
        # F1 help, Ctrl+Tab and Alt+1..6 for the centre's tabs
        nav = add_navigation(w, v, h)
        self.act_next_tab, self.act_prev_tab = nav["next_tab"], nav["prev_tab"]
        self.tab_actions = nav["tabs"]
        self.act_help = nav["help"]

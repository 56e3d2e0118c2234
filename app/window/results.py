"""Results of the main window: model files as jobs, scoring, comparing, exporting models and figures."""
from __future__ import annotations

import functools
import os
from typing import List, Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from .. import tasks
from ..datasets import DataSet, ModelSet, encode_for
from ..jobs import Job, JobManager, JobState
from ..session import recorded_training_time
from ..jobrows import as_number
from .common import error_dialog, final_event, job_metrics, safe_name

__all__ = ["ResultsController"]


class ResultsController(QObject):
    """Finished jobs and loaded models: score, compare, export.

    Parameters
    ----------
    window : QWidget
        The shell: dialogs' parent, its status bar, ``window.dashboard`` and ``window.show_dashboard()``.
    state : AppState
        The current data set and job; models read from files join it as finished jobs.
    jobs : JobManager
        The jobs of a sweep (Export sweep).
    settings : Settings
        Last folder, export folder.
    jobs_panel, log_panel :
        The panels it talks to (their public API).

    Signals
    -------
    models_loaded(ModelSet)
        The models of an .h5 file were added as jobs.
    """

    models_loaded = Signal(object)

    def __init__(self, window: QWidget, state, jobs: JobManager, settings, jobs_panel, log_panel) -> None:
        super().__init__(window)
        self.window = window
        self.state = state
        self.jobs = jobs
        self.settings = settings
        self.jobs_panel = jobs_panel
        self.log_panel = log_panel
        self.score_box: Optional[QMessageBox] = None   # the last Score on data result

    def _error_dialog(self, title: str, message: str) -> None:
        error_dialog(self.window, title, message)

    def _status(self, text: str, ms: int = 0) -> None:
        self.window.statusBar().showMessage(text, ms)

    def add_model_set(self, ms: ModelSet) -> None:
        """Each model of an .h5 file becomes a (finished) job, shown in the same views."""
        first = None
        for name, model in ms.models:
            job = Job(f"{ms.name}: {name}", model, None, None, dataset=ms, device="file", sweep=ms.path)
            stop = getattr(model, "stop_reason_", "") or ""
            # a cancelled or diverged run stays one (the file records why it stopped)
            job.state = {"cancelled": JobState.CANCELLED, "diverged": JobState.DIVERGED}.get(stop, JobState.FINISHED)
            # why its training stopped, as the file records it (the Data column names the file)
            job.reason = stop or f"loaded from {ms.name}"
            job.last_params = model.arrays()["params"]
            facts = getattr(model, "metrics_", None) or {}
            hist = job.history
            if hist:
                job.step = int(hist[-1].get("step") or 0)
                planned = as_number(facts.get("planned_steps"))     # written by this app's export
                if planned is not None and planned >= job.step:
                    job.total = int(planned)       # "4/100000" for a run cancelled at step 4, as it read
                elif stop == "max_steps" and job.step > 0:
                    job.total = job.step           # it ran all its steps: the bar reads "30/30", as it did
            # the Jobs panel's Time: the job's own run time when this app exported it, else the training
            # time the history recorded (without the worker's start)
            elapsed = as_number(facts.get("run_time_s"))
            if elapsed is None or elapsed < 0:
                elapsed = recorded_training_time(model)
            if elapsed is not None:
                job.started_at, job.finished_at = 0.0, elapsed
            # the dashboard's header: the final step and metrics the file records, why training stopped
            job.last_event = final_event(job, getattr(model, "metrics_", None))
            self.state.add_finished_job(job)
            first = first or job
        self.log_panel.log(f"{ms.name}: {len(ms.models)} model(s) loaded: "
                           + ", ".join(n for n, _ in ms.models))
        self.models_loaded.emit(ms)
        if first is not None:
            self.jobs_panel.select(first)
            self.state.set_current_job(first)

    def export_models(self, jobs: List[Job], path: str, on_done=None) -> None:
        """Write the jobs' models to one HDF5 file (core writer; whole file replaced atomically)."""
        from ..datasets import save_models
        items = []
        for job in jobs:
            corpus = job.dataset.processed if isinstance(job.dataset, DataSet) else None
            metrics = job_metrics(job)
            # the Jobs panel's Time and progress, read back by add_model_set (the file's metrics group)
            if job.elapsed is not None:
                metrics["run_time_s"] = float(job.elapsed)
            if job.total:
                metrics["planned_steps"] = int(job.total)
            items.append((safe_name(f"job{job.id}_{job.name}"), job.model, corpus, metrics,
                          {"trained_utc": job.finished_utc}))

        def done(names):
            self.log_panel.log(f"Saved {len(names)} model(s) to {path}: {', '.join(names)}")
            self._status(f"Saved {path}", 5000)
            if on_done is not None:
                on_done(names)

        def failed(exc, tb):
            self._error_dialog("Export failed", str(exc))

        tasks.run_background(functools.partial(save_models, path, items), done, failed)

    def export_models_dialog(self, jobs: List[Job]) -> None:
        jobs = [j for j in jobs if j.has_model]
        if not jobs:
            QMessageBox.information(self.window, "Export model", "Select a finished (or cancelled) job first.")
            return
        start = os.path.join(self.settings.last_folder, safe_name(jobs[0].name) + ".h5")
        path, _ = QFileDialog.getSaveFileName(self.window, "Export model(s) to HDF5", start, "HDF5 model files (*.h5)")
        if path:
            if not path.lower().endswith(".h5"):
                path += ".h5"
            self.export_models(jobs, path)

    def export_sweep_dialog(self) -> None:
        job = self.state.current_job
        if job is None or not job.sweep:
            QMessageBox.information(self.window, "Export sweep", "Select a job of a sweep first.")
            return
        jobs = [j for j in self.jobs.sweep_jobs(job.sweep) if j.has_model]
        unfinished = len(self.jobs.sweep_jobs(job.sweep)) - len(jobs)
        if unfinished:
            self.log_panel.log(f"{job.sweep}: {unfinished} job(s) without a model are not exported", "warning")
        self.export_models_dialog(jobs)

    def score_job(self, job: Job, ds: Optional[DataSet] = None, on_done=None) -> None:
        """Score a model on a data set's test part (or all of it): normalised NLL, off the GUI thread.
        A data set not read as the model reads data (tags for a words model, min. count 2) is read again
        first (``datasets.read_for_model_again``, off the GUI thread too)."""
        ds = ds or self.state.current_dataset
        if ds is None or not job.has_model:
            QMessageBox.information(self.window, "Score", "Select a model and load a data set first.")
            return
        from densehmm_core.data import reading_for_model

        from ..datasets import job_read_options, read_for_model_again, reads_for_model
        read_as = job_read_options(job)
        if ds is job.dataset or reads_for_model(ds, read_as):   # (its own data: read as the model's were)
            self._score_on(job, ds, ds, "", on_done)
            return
        how = ", ".join(f"{k}={v}" for k, v in reading_for_model(read_as).items())
        note = f"'{ds.name}' read again as the model reads data ({how})"
        self._status(f"Reading {ds.name} as the model of job {job.id} reads data…", 5000)
        tasks.run_background(functools.partial(read_for_model_again, ds, read_as),
                             lambda again: self._score_on(job, ds, again, note, on_done),
                             lambda exc, tb: self._error_dialog("Cannot score", f"'{ds.name}': {exc}"))

    def _score_on(self, job: Job, ds: DataSet, src: DataSet, read_note: str, on_done=None) -> None:
        """Score on data with ``src``: ``ds`` itself or its file read again for the model (``read_note``)."""
        data = src.test if src.test is not None else src.train
        from ..datasets import job_read_options, score_model, scored_part, unknown_note
        from ..panels.unknown import read_for_model
        try:  # symbols matched by name; symbols the model does not know: counted, the user chooses
            data = read_for_model(self.window, job.model, data, ds.name, "Score", job_read_options(job))
        except ValueError as exc:
            self._error_dialog("Cannot score", f"'{ds.name}': the model cannot read these data: {exc}")
            return
        if data is None:
            self._status(f"Score on {ds.name} cancelled", 5000)
            return
        if read_note:
            self.log_panel.log(f"Job {job.id}: {read_note}")
        note = "; ".join(n for n in (read_note, unknown_note(data)) if n)
        if unknown_note(data):
            self.log_panel.log(f"Job {job.id} on {ds.name}: {unknown_note(data)}", "warning")
        part = scored_part(src, len(data.sequences) if hasattr(data, "sequences") else len(data))
        where = f"{ds.name} ({part})"

        def done(res):
            job.score_text = f"NLL/token on {where}: {res['nll']:.5g}"
            job.scores = dict(res)
            self.jobs_panel.update_job(job)
            text = ", ".join(f"{k} = {v:.6g}" for k, v in res.items())
            self.log_panel.log(f"Job {job.id} '{job.name}' on {where}: {text}")
            self.show_score(job, where, res, note)
            if on_done is not None:
                on_done(res)

        tasks.run_background(functools.partial(score_model, job.model, data), done,
                             lambda exc, tb: self._error_dialog("Scoring failed", str(exc)))

    def show_score(self, job: Job, data_name: str, res: dict, note: str = "") -> None:
        """Score on data's result where the user looks: a (non-blocking) box with every value in full."""
        rows = "".join(f"<tr><td>{k}</td><td align='right'>{v!r}</td></tr>" for k, v in res.items())
        box = QMessageBox(QMessageBox.Icon.Information, "Score on data",
                          f"<b>Job {job.id}: {job.name}</b><br>on {data_name}<table cellspacing='6'>{rows}</table>"
                          + (f"<p>{note}</p>" if note else ""), QMessageBox.StandardButton.Ok, self.window)
        box.setObjectName("scoreResult")
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setModal(False)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()
        self.score_box = box

    def compare_refused(self, n_models: int) -> None:
        """Compare with other than two selected jobs with models: say how many are selected."""
        QMessageBox.information(self.window, "Compare", "Select exactly two jobs with models (Ctrl+click) to compare "
                                                 f"them; {n_models} selected job(s) have a model.")

    def compare_jobs(self, a: Optional[Job], b: Optional[Job], on_done=None) -> None:
        """Compare two jobs' models in the Compare tab; both are scored on one split (NLL per token) off
        the GUI thread first, then the view is filled (``on_done()`` after that)."""
        if a is None or b is None:
            QMessageBox.information(self.window, "Compare", "Select two jobs with models (Ctrl+click) to compare them.")
            return
        ma, mb = job_metrics(a), job_metrics(b)
        ma["elapsed"], mb["elapsed"] = a.elapsed, b.elapsed  # the Jobs panel's time
        same = isinstance(a.dataset, DataSet) and a.dataset is b.dataset
        ds = a.dataset if isinstance(a.dataset, DataSet) else self.state.current_dataset
        data, data_name = None, ""
        if isinstance(ds, DataSet):  # both models scored on one split (NLL per token)
            data = ds.test if ds.test is not None else ds.train
            data_name = f"{ds.name} ({'test' if ds.test is not None else 'training'} split)"
            va, vb = a.model.vocabulary, b.model.vocabulary
            try:  # read with the models' alphabet (by symbol name); only when they share it
                data = encode_for(a.model, data) if va == vb else None
            except ValueError:
                data = None

        def show(scores) -> None:
            try:
                self.window.dashboard.compare_models(a.name, a.model, b.name, b.model, ma, mb, scores=scores,
                                                     data_name=data_name, same_data=same,
                                                     vocabulary=ds.vocabulary if isinstance(ds, DataSet) else None)
            except Exception as exc:  # noqa: BLE001 - reported in a dialog; the window stays usable
                self._error_dialog("Cannot compare", f"{type(exc).__name__}: {exc}")
                return
            self.window.dashboard.show_compare()
            self.window.show_dashboard()
            if on_done is not None:
                on_done()

        if data is None:
            show(None)
            return
        from ..views.compare import score_both
        tasks.run_background(functools.partial(score_both, a.model, b.model, data), show,
                             lambda exc, tb: self._error_dialog("Cannot compare", f"{type(exc).__name__}: {exc}"))

    def export_figure(self, widget: QWidget, path: str, scale: float = 1.0) -> None:
        from ..export import export_widget
        export_widget(widget, path, scale=scale)
        self.window.dashboard.remember_export(path)
        self.settings.export_folder = os.path.dirname(os.path.abspath(path))
        self.log_panel.log(f"Figure saved: {path}")

    def export_figure_dialog(self) -> None:
        from ..export import ViewChooser, ask_png_scale
        d = self.window.dashboard
        # the registry's titles (app.view_registry) in a tree, the whole current page first
        shown = d.views()
        chooser = ViewChooser(d.export_choices(), self.window)
        if chooser.exec() != ViewChooser.DialogCode.Accepted or chooser.chosen() is None:
            return
        name = chooser.chosen()
        target = d.export_target() if name == "dashboard" else shown[name]
        # the job's stem and the view, e.g. dense-em_n10_l3_seed0_spectral_transitions.png
        fname = d.file_name(name, "png")
        start = os.path.join(d.export_dir() or self.settings.last_folder, fname)
        path, flt = QFileDialog.getSaveFileName(self.window, "Export figure", start,
                                                "PNG image (*.png);;SVG vector graphics (*.svg);;PDF (*.pdf)")
        if not path:
            return
        if not os.path.splitext(path)[1]:
            path += {"SVG": ".svg", "PDF": ".pdf"}.get(flt[:3], ".png")
        scale = 1.0
        if path.lower().endswith(".png"):
            chosen = ask_png_scale(target, self.window)   # 1x-4x with the pixel sizes; its title not cut
            if chosen is None:
                return
            scale = chosen
        try:
            self.export_figure(target, path, scale)
        except Exception as exc:  # noqa: BLE001 - reported in a dialog; the window stays usable
            self._error_dialog("Export failed", f"{type(exc).__name__}: {exc}")


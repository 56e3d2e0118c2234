"""Jobs of the main window: starting jobs and sweeps, following them, showing one in the dashboard."""
from __future__ import annotations

import functools
import weakref
from typing import Callable, List, Optional

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMessageBox, QWidget

from .. import tasks
from ..datasets import DataSet, encode_for
from ..export import file_stem
from ..jobs import Job, JobManager, JobState
from ..modelspec import ModelSpec, build_model, sweep_grid
from ..views.sweep import sweep_row
from .common import error_dialog, job_metrics

__all__ = ["JobsController"]

#: job -> (key, data, data read with its model's alphabet): see JobsController._decode_data
_DECODED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class JobsController(QObject):
    """Training jobs: starting them (and sweeps), following them, the job the dashboard shows.

    Parameters
    ----------
    window : QWidget
        The shell: dialogs' parent, ``window.dashboard``, ``window.dashboard_built``,
        ``window.leave_start_page()`` and ``window.closing`` (nothing is drawn once it closes).
    state : AppState
        The open data sets, the jobs and the job shown (``set_current_job``).
    jobs : JobManager
        Runs the jobs (placement on devices, submit, cancel, the live feed).
    settings : Settings
        Form defaults, "show new jobs", the sweep target.
    model_form, jobs_panel, log_panel :
        The panels it talks to (their public API).
    jobs_dock : QDockWidget
        Raised when a job is added.
    training_dataset : callable
        ``() -> DataSet or None``: the data set new jobs train on (the demo's when none is open).
    """

    def __init__(self, window: QWidget, state, jobs: JobManager, settings, model_form, jobs_panel, log_panel,
                 jobs_dock, training_dataset: Callable[[], Optional[DataSet]]) -> None:
        super().__init__(window)
        self.window = window
        self.state = state
        self.jobs = jobs
        self.settings = settings
        self.model_form = model_form
        self.jobs_panel = jobs_panel
        self.log_panel = log_panel
        self.jobs_dock = jobs_dock
        self.training_dataset = training_dataset
        self._remote_sweeps = None          # app.remote_jobs.RemoteSweeps, made by the first Dask sweep
        #: (job, data set) Decode shows for the job on view, when chosen in its Data box (else its own)
        self._decoded_on: Optional[tuple] = None

    def _error_dialog(self, title: str, message: str) -> None:
        error_dialog(self.window, title, message)

    def close(self) -> None:
        """The window closes: disconnect from Dask (a local cluster shuts down)."""
        if self._remote_sweeps is not None:
            self._remote_sweeps.close_all()

    def make_job(self, spec: ModelSpec, ds: DataSet, sweep: Optional[str] = None, job_class=Job) -> Job:
        """A job of ``job_class`` (a :class:`~app.remote_jobs.RemoteJob` runs on Dask: its device
        is the worker's, chosen there)."""
        if job_class.remote:
            device = spec.device if spec.is_dense else "cpu"
        else:
            device = self.jobs.place(spec.device)     # every model's E-step can use a GPU (CuPy)
        model, n_states, fit_kwargs = build_model(spec, ds.n_symbols, device=device)
        if model.vocabulary is None and ds.vocabulary is not None:
            model.vocabulary = list(ds.vocabulary)
        return job_class(spec.label(n_states), model, ds.train, ds.test, dataset=ds,
                         device="dask" if job_class.remote else device, sweep=sweep,
                         spec=spec.to_dict(), fit_kwargs=fit_kwargs)

    def train_from_form(self) -> Optional[Job]:
        """Train, Ctrl+T: a job of the form's values, read once the data are there (with none open the
        demo is loaded first, and that sets the form to the demo's settings: the job is what it shows)."""
        if self.training_dataset() is None:
            return None
        return self.start_training(self.model_form.spec())

    def sweep_from_form(self) -> List[Job]:
        """Run sweep, Ctrl+Shift+T: the form's model, repeats and grid, read once the data are there (as
        :meth:`train_from_form`); nothing when the grid the form now holds is not valid (it says why)."""
        if self.training_dataset() is None:
            return []
        values = self.model_form.sweep_values()
        if values is None:
            self.log_panel.log("Run sweep: the sweep grid is not valid for the form's model (the form says why)",
                               "warning")
            return []
        repeats, pairs = values
        return self.start_sweep(self.model_form.spec(), repeats, pairs)

    def start_training(self, spec: ModelSpec) -> Optional[Job]:
        """A job of ``spec`` (kept as given) on the current data set (none open: the demo's)."""
        ds = self.training_dataset()
        if ds is None:
            return None
        try:
            job = self.make_job(spec, ds)
        except Exception as exc:  # noqa: BLE001 - reported in a dialog; the window stays usable
            self._error_dialog("Cannot start the job", f"{type(exc).__name__}: {exc}")
            return None
        self.settings.set_form_defaults(spec.to_dict())
        self.jobs.submit(job)
        if self.settings.select_new_jobs:
            self.jobs_panel.select(job)
        return job

    def start_sweep(self, spec: ModelSpec, repeats: int, grid=None) -> List[Job]:
        """Jobs for ``spec`` (kept as given) over ``grid`` ((n, l) pairs; None: the paper's grid), ``repeats``
        seeds each, on the current data set (none open: the demo's)."""
        ds = self.training_dataset()
        if ds is None:
            return []
        sweep = self.state.sweep_names.new()
        target = self.settings.sweep_target  # "": this app's pool; "local" or an address: Dask
        job_class = Job
        if target:
            from ..remote_jobs import RemoteJob
            job_class = RemoteJob
        jobs = []
        try:
            for s in sweep_grid(spec, repeats, grid):
                job = self.make_job(s, ds, sweep=sweep, job_class=job_class)
                job.name = f"[{sweep}] {job.name}"
                jobs.append(job)
        except Exception as exc:  # noqa: BLE001 - reported in a dialog; the window stays usable
            self._error_dialog("Cannot start the sweep", f"{type(exc).__name__}: {exc}")
            return []
        if target:
            self.remote_sweeps.start(jobs, target, workers=self.jobs.pool_size,
                                     shared_dir=self.settings.sweep_shared_dir,
                                     on_failed=lambda reason: self._error_dialog("Cannot start the sweep", reason))
        else:
            for job in jobs:
                self.jobs.submit(job)
        if jobs and self.settings.select_new_jobs:
            self.jobs_panel.select(jobs[0])
        from ..remote_jobs import describe_target
        self.log_panel.log(f"{sweep}: {len(jobs)} jobs ({spec.model_type}, {repeats} repeats) on {ds.name}, "
                           f"run by {describe_target(target)}")
        return jobs

    def sweep_target_dialog(self) -> None:
        """Choose where Run sweep trains (this app, a local Dask cluster, a scheduler) and the
        shared folder of remote runs' models; saved in the settings."""
        from ..panels.sweep_target import SweepTargetDialog
        dlg = SweepTargetDialog(self.settings.sweep_target, self.settings.sweep_shared_dir, self.window)
        if dlg.exec():
            self.set_sweep_target(*dlg.values())

    def set_sweep_target(self, target: str, shared_dir: str = "") -> None:
        self.settings.sweep_target = target
        self.settings.sweep_shared_dir = shared_dir
        from ..remote_jobs import describe_target
        self.model_form.set_sweep_target(describe_target(self.settings.sweep_target))

    @property
    def remote_sweeps(self):
        """The Dask sweeps (:class:`app.remote_jobs.RemoteSweeps`), created by the first one."""
        if self._remote_sweeps is None:
            from ..remote_jobs import RemoteSweeps
            self._remote_sweeps = RemoteSweeps(self.jobs, self.log_panel.log, self.window)
        return self._remote_sweeps

    def cancel_job(self, job: Job) -> None:
        self.jobs.cancel(job)

    def cancel_jobs(self, jobs: List[Job]) -> bool:
        """Cancel selected jobs (Cancel selected, Ctrl+.): one at once; several only after the user
        confirms (the list names them), so that a job not on screen is never cancelled by surprise.
        Returns whether they were cancelled."""
        jobs = [j for j in jobs if not j.state.is_final]
        if not jobs:
            return False
        if len(jobs) > 1:
            names = "\n".join(f"• Job {j.id}: {j.name}" for j in jobs[:12])
            more = f"\n… and {len(jobs) - 12} more" if len(jobs) > 12 else ""
            answer = QMessageBox.question(self.window, "Cancel jobs",
                                          f"Cancel these {len(jobs)} jobs?\n\n{names}{more}",
                                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                          QMessageBox.StandardButton.No)
            if answer != QMessageBox.StandardButton.Yes:
                return False
        for j in jobs:
            self.jobs.cancel(j)
        return True

    # listeners of the state (MainWindow._subscribe)
    def job_added(self, job: Job) -> None:
        """``job_added``: the Jobs panel lists it; the centre leaves the start page."""
        self.jobs_panel.add_job(job)
        self.jobs_dock.raise_()
        self.window.leave_start_page()

    def job_changed(self, job: Job) -> None:
        """``job_changed``: its row in the Jobs panel."""
        if not self.window.closing:
            self.jobs_panel.update_job(job)

    def job_finished(self, job: Job) -> None:
        """``job_finished``: its row, the log, the sweep summary, the final model when it is shown."""
        self.jobs_panel.update_job(job)
        if job.sweep and job.state == JobState.FINISHED and job.spec:
            # the sweep summary (NLL and MAD against n, l per kind) fills as the sweep's jobs finish; it
            # summarises one sweep (the latest, or the shown job's: draw_job), each row names its own
            self.window.dashboard.add_sweep_row(sweep_row(job, job_metrics(job)))
        level = "info" if job.state in (JobState.FINISHED, JobState.CANCELLED) else "error"
        self.log_panel.log(f"Job {job.id} '{job.name}' {job.state.value}: {job.reason} "
                           f"after {job.elapsed:.1f} s", level)
        if job.state == JobState.FAILED and job.error:
            self.log_panel.log(job.error, "error")
        for note in getattr(job, "notes", ()):
            self.log_panel.log(f"Job {job.id}: {note}", "warning")
        if job is not self.state.current_job and job.has_model and not self.window.closing and \
                isinstance(job.dataset, DataSet) and getattr(job.dataset.train, "tags", None) is not None:
            # a tagged (words) job that finished while another is shown: its tagging scores (the
            # states' mapped tags) computed now in the background, so showing it draws them at once
            self.window.dashboard.prepare_tagging(job.model, self._decode_data(job))
        if job is self.state.current_job and not self.window.closing:
            d = self.window.dashboard
            if d.model() is not None:
                self.show_job(job)
            elif job.has_model:
                # shown live until now: draw the final model in parts (no full rebuild, no stall)
                d.set_model(job.model, self._decode_data(job), staged=True)
            elif job.state.has_model:  # a remote run whose model stayed on the cluster: its curves
                self.show_job(job)
            self._say_outcome(job)

    def _say_outcome(self, job: Job) -> None:
        """A diverged or failed job's end in the dashboard's header (its last event does not say it)."""
        if job.state in (JobState.DIVERGED, JobState.FAILED):
            self.window.dashboard.set_outcome(job.state.value, job.reason or "")

    def show_job(self, job: Optional[Job]) -> None:
        """Show a job (running, finished or loaded from a file) in the dashboard: it becomes the state's
        current job, which the dashboard and the live feed follow (:meth:`draw_job`)."""
        self.state.set_current_job(job)

    def sweep_shown(self, *_args) -> None:
        """``current_job_changed`` and ``selection_changed``: the Sweep tab summarises the state's focused
        sweep (``AppState.focused_sweep``: the selection's, else the shown job's; None: the latest), whichever
        signal came last."""
        sweep = self.state.focused_sweep()
        if not self.window.closing and (sweep is not None or self.window.dashboard_built):   # (built on first use)
            self.window.dashboard.show_sweep(sweep)

    def draw_job(self, job: Optional[Job]) -> None:
        """``current_job_changed``: the dashboard shows the job, its live updates reach the
        dashboard (``self.jobs.live``)."""
        self.jobs.live.current = None if self.window.closing else job
        self._decoded_on = None             # a job shown (again) decodes its own data first
        d = self.window.dashboard
        d.clear()
        if job is None:
            return
        title = f"Job {job.id}: {job.name}"
        if job.state.has_model and not job.has_model and job.remote:
            title += "  (remote run: its model stayed on the cluster; metrics in the Jobs panel)"
        d.set_title(title)
        # default export names: dense-em_n10_l3_seed0_spectral_transitions.png
        d.set_file_stem(file_stem(job.model) if job.model is not None else None)
        vocab = getattr(job.model, "vocabulary", None)
        if vocab is None and isinstance(job.dataset, DataSet):
            vocab = job.dataset.vocabulary
        d.set_vocabulary(list(vocab) if vocab is not None else None)
        d.set_job_model(job.model)   # axes and placeholders right before the first parameters
        if job.initial_params is not None:
            d.set_initial_params(job.initial_params)
        elif job.state.is_final and job.state.has_model:
            d.set_initial_not_recorded()       # a model read from a file or a session: said, not guessed
        ds = job.dataset
        if isinstance(ds, DataSet):
            d.set_token_counts(_token_count(ds.train), _token_count(ds.test) if ds.test is not None else None)
        d.set_history(job.history, staged=True)  # drawn in parts from the event loop: no stall
        if not job.state.is_final:
            d.add_points(self.jobs.live.past_events(job))   # its curves so far: every point, not the newest
            data = self._decode_data(job)
            d.set_tagged_data(data)               # gold tags: live snapshots scored (M-1, 1-1, V-measure)
            if data is not None:
                d.set_symbol_data(job.model, data)  # a large vocabulary drawn faint but its frequent words
        else:
            d.set_tagged_data(None)
        if job.last_event is not None:
            d.update_from_event(job.last_event)
        if job.has_model:
            d.set_model(job.model, self._decode_data(job), staged=True)
        self._say_outcome(job)
        self._offer_decode_datasets(job)
        self.window.leave_start_page()

    def _decode_data(self, job: Job, ds: Optional[DataSet] = None):
        """The sequences Decode offers for ``job``: a data set (by default the job's own, else the
        current one) read with the model's alphabet, or None (Decode then samples from the model)."""
        if ds is None:
            ds = job.dataset if isinstance(job.dataset, DataSet) else self.state.current_dataset
        if ds is None or job.model is None:
            return None
        data = ds.processed if ds.processed is not None else (ds.test if ds.test is not None else ds.train)
        # the same data read with the same alphabet again (the job shown while it trains, then its
        # final model): the copy made then (re-encoding a treebank took 20-30 ms of the GUI thread
        # in the finish handler, issue 24.13)
        from densehmm_core.data import residual_symbol
        model = job.model
        vocab = getattr(model, "vocabulary", None)
        key = (id(data), getattr(model, "n_symbols", None), None if vocab is None else tuple(vocab),
               residual_symbol(vocab, getattr(model, "provenance_", None)) if vocab is not None else None)
        cached = _DECODED.get(job)
        if cached is not None and cached[0] == key and cached[1] is data:
            return cached[2]
        try:
            out = encode_for(model, data)
        except ValueError as exc:
            self.log_panel.log(f"Decode: '{ds.name}' cannot be read by job {job.id}'s model: {exc}", "warning")
            return None
        _DECODED[job] = (key, data, out)
        return out

    def datasets_listed(self) -> None:
        """``datasets_changed``: Decode's "Data" box of the job shown (once the views exist)."""
        if self.state.current_job is not None and self.window.dashboard_built:
            self._offer_decode_datasets(self.state.current_job)

    def _offer_decode_datasets(self, job: Job) -> None:
        """List the open data sets in Decode's "Data" box (the one decoded selected: the one chosen
        there for this job while it is open, else the job's own)."""
        datasets = self.state.datasets
        own = job.dataset if isinstance(job.dataset, DataSet) else self.state.current_dataset
        chosen = self._decoded_on[1] if self._decoded_on is not None and self._decoded_on[0] is job else None
        if chosen is not None and not any(d is chosen for d in datasets):   # replaced (read again)
            self._decoded_on, chosen = None, None
            if job.has_model:                        # its own data again, as the box will say
                self.window.dashboard.decode_on(job.model, self._decode_data(job))
        shown = chosen if chosen is not None else own
        current = next((i for i, d in enumerate(datasets) if d is shown), -1)
        self.window.dashboard.set_decode_datasets([d.name for d in datasets], current)

    def decode_on(self, index: int) -> None:
        """Decode the current job's model on data set ``index`` (Decode's "Data" box); a data set not read
        as the model reads data (tags for a words model, min. count 2) is read again first, off the GUI thread."""
        job = self.state.current_job
        if job is None or not job.state.has_model or not (0 <= index < len(self.state.datasets)):
            return
        ds = self.state.datasets[index]
        from ..datasets import job_read_options, read_for_model_again, reads_for_model
        read_as = job_read_options(job)
        if ds is job.dataset or reads_for_model(ds, read_as):   # (its own data: read as the model's were)
            self._decode_with(job, ds, ds)
            return
        self.window.statusBar().showMessage(f"Reading {ds.name} as the model of job {job.id} reads data…", 5000)
        tasks.run_background(functools.partial(read_for_model_again, ds, read_as),
                             lambda again: self._decode_with(job, ds, again),
                             lambda exc, tb: self._error_dialog("Cannot decode", f"'{ds.name}': {exc}"))

    def _decode_with(self, job: Job, ds: DataSet, src: DataSet) -> None:
        """Decode's data: ``src`` (``ds`` itself or its file read again for the model) with the model's alphabet."""
        if self.state.current_job is not job:      # another job shown meanwhile
            return
        from ..datasets import job_read_options
        from ..panels.unknown import read_for_model
        raw = src.processed if src.processed is not None else (src.test if src.test is not None else src.train)
        try:  # symbols the model does not know: counted, the user chooses
            data = read_for_model(self.window, job.model, raw, ds.name, "Decode", job_read_options(job))
        except ValueError as exc:
            self._error_dialog("Cannot decode", f"'{ds.name}': the model of job {job.id} cannot read these "
                                                f"data: {exc}")
            return
        if data is None:
            return
        self._decoded_on = (job, ds)
        self.window.dashboard.decode_on(job.model, data)


def _token_count(data) -> int:
    """Number of tokens of a Corpus (counted once, with its lengths) or a list of sequences (for
    per-token NLL curves)."""
    n = getattr(data, "n_tokens", None)
    return int(n) if n is not None else int(sum(map(len, data)))

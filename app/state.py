"""THE application state: what is open, what runs, what is shown and selected (napari's ViewerModel idea).

:class:`AppState` owns the open data sets, the current data set, the jobs (through the
:class:`~app.jobs.JobManager` that runs them), the job shown in the dashboard, the jobs selected in the
Jobs panel and the model form's current values (and, in ``AppState.sweep_names``, who names the sweeps).
Changes go through its methods, which emit one signal each; panels, views and the window's controllers
subscribe to the signals and never reach into each other (docs/ARCHITECTURE.md, "The app's map", lists
who listens to what).  No maths and no widgets here.
"""
from __future__ import annotations

from typing import Any, List, Optional

from PySide6.QtCore import QObject, Signal

from .datasets import DataSet
from .jobs import Job, JobManager
from .sweeps import SweepNames

__all__ = ["AppState"]


class AppState(QObject):
    """The state of one main window (see the module doc).

    Signals
    -------
    datasets_changed()
        A data set was added or replaced (read again, preprocessed); ``datasets`` holds the new list.
    current_dataset_changed(DataSet)
        The data set that new jobs train on.
    job_added(Job), job_changed(Job), job_finished(Job)
        A job was submitted or loaded from a file; made progress or changed state; ended.
    current_job_changed(Job or None)
        The job the dashboard shows (emitted again when the same job is shown anew).
    selection_changed(list of Job)
        The jobs selected in the Jobs panel (what Cancel / Export / Score / Compare act on).
    spec_changed(ModelSpec)
        The model form's values.
    """

    datasets_changed = Signal()
    current_dataset_changed = Signal(object)
    job_added = Signal(object)
    job_changed = Signal(object)
    job_finished = Signal(object)
    current_job_changed = Signal(object)
    selection_changed = Signal(list)
    spec_changed = Signal(object)

    def __init__(self, jobs: JobManager, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.job_manager = jobs
        self.datasets: List[DataSet] = []
        self.current_dataset: Optional[DataSet] = None
        self.current_job: Optional[Job] = None
        self.selection: List[Job] = []
        self.spec: Any = None
        #: the names of this window's sweeps: the one owner (new ones, restored ones; app.sweeps)
        self.sweep_names = SweepNames()
        jobs.job_added.connect(self.job_added)
        jobs.job_changed.connect(self.job_changed)
        jobs.job_finished.connect(self.job_finished)

    # ------------------------------------------------------------------ data sets
    def add_dataset(self, ds: DataSet) -> None:
        """Open ``ds`` and make it the current data set."""
        self.datasets.append(ds)
        self.datasets_changed.emit()
        self.set_current_dataset(ds)

    def replace_dataset(self, old: DataSet, new: DataSet) -> bool:
        """``new`` (``old`` read again or preprocessed) takes ``old``'s place and becomes current;
        ``False`` when ``old`` is no longer open."""
        if old not in self.datasets:
            return False
        self.datasets[self.datasets.index(old)] = new
        self.datasets_changed.emit()
        self.set_current_dataset(new)
        return True

    def set_current_dataset(self, ds: DataSet) -> None:
        if ds not in self.datasets:
            raise ValueError(f"{ds.name} is not an open data set")
        self.current_dataset = ds
        self.current_dataset_changed.emit(ds)

    # ------------------------------------------------------------------ jobs
    @property
    def jobs(self) -> List[Job]:
        """Every job: submitted ones and models loaded from files, in order."""
        return self.job_manager.jobs

    def add_finished_job(self, job: Job) -> None:
        """A job that does not run (a model read from a file): listed like the others."""
        self.job_manager.jobs.append(job)
        self.job_added.emit(job)

    def set_current_job(self, job: Optional[Job]) -> None:
        """Show ``job`` in the dashboard (``None``: nothing)."""
        self.current_job = job
        self.current_job_changed.emit(job)

    def set_selection(self, jobs: List[Job]) -> None:
        self.selection = list(jobs)
        self.selection_changed.emit(list(self.selection))

    def focused_sweep(self) -> Optional[str]:
        """The sweep the Sweep tab summarises, derived (never stored: it would go stale): the selection's
        when the selected jobs are of one sweep (e.g. its group row in the Jobs panel), else the shown
        job's, else None (the view's latest)."""
        def sweep_of(job) -> Optional[str]:
            return job.sweep if job.sweep and job.spec else None
        sweeps = {sweep_of(j) for j in self.selection} - {None}
        if len(sweeps) == 1:
            return sweeps.pop()
        return sweep_of(self.current_job) if self.current_job is not None else None

    # ------------------------------------------------------------------ the model form
    def set_spec(self, spec: Any) -> None:
        """The model form's values (an :class:`~app.modelspec.ModelSpec`)."""
        self.spec = spec
        self.spec_changed.emit(spec)

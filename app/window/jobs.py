"""Jobs of the main window: starting jobs and sweeps, following them, showing one in the dashboard."""
from __future__ import annotations

from typing import List, Optional

from ..datasets import DataSet, encode_for
from ..export import file_stem
from ..jobs import Job, JobState
from ..modelspec import ModelSpec, build_model, sweep_grid

__all__ = ["JobsMixin"]


class JobsMixin:
    """Training jobs: ``self.jobs`` (a :class:`~app.jobs.JobManager`) and ``self.current_job``."""

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
        if self.settings.select_new_jobs:
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
        if jobs and self.settings.select_new_jobs:
            self.jobs_panel.select(jobs[0])
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

    def _job_finished(self, job: Job) -> None:
        self.jobs_panel.update_job(job)
        if job.sweep and job.state == JobState.FINISHED and job.spec and hasattr(self.dashboard, "sweep"):
            # the sweep summary (NLL and MAD against n, l per kind) fills as the sweep's jobs finish
            from ..views.sweep import row_from_spec
            from .results import job_metrics
            self.dashboard.sweep.add_row(row_from_spec(job.spec, job_metrics(job), job.id))
        level = "info" if job.state in (JobState.FINISHED, JobState.CANCELLED) else "error"
        self.log_panel.log(f"Job {job.id} '{job.name}' {job.state.value}: {job.reason} "
                           f"after {job.elapsed:.1f} s", level)
        if job.state == JobState.FAILED and job.error:
            self.log_panel.log(job.error, "error")
        for note in getattr(job, "notes", ()):
            self.log_panel.log(f"Job {job.id}: {note}", "warning")
        if job is self.current_job and not self._closing:
            d = self.dashboard
            if d.model() is not None:
                self.show_job(job)
            elif job.state.has_model:
                # shown live until now: draw the final model in parts (no full rebuild, no stall)
                d.set_model(job.model, self._decode_data(job), staged=True)

    def show_job(self, job: Optional[Job]) -> None:
        """Show a job (running, finished or loaded from a file) in the dashboard; its live
        updates then reach the dashboard (``self.jobs.live``)."""
        self.current_job = job
        self.jobs.live.current = None if self._closing else job
        d = self.dashboard
        d.clear()
        if job is None:
            return
        d.set_title(f"Job {job.id}: {job.name}")
        # default export names: dense-em_n10_l3_seed0_transitions.png
        d.set_file_stem(file_stem(job.model) if job.model is not None else None)
        vocab = getattr(job.model, "vocabulary", None)
        if vocab is None and isinstance(job.dataset, DataSet):
            vocab = job.dataset.vocabulary
        d.set_vocabulary(list(vocab) if vocab is not None else None)
        if job.initial_params is not None:
            d.set_initial_params(job.initial_params)
        ds = job.dataset
        if isinstance(ds, DataSet):
            d.set_token_counts(_token_count(ds.train), _token_count(ds.test) if ds.test is not None else None)
        d.set_history(job.history, staged=True)  # drawn in parts from the event loop: no stall
        if job.last_event is not None:
            d.update_from_event(job.last_event)
        if job.state.has_model:
            d.set_model(job.model, self._decode_data(job), staged=True)
        self._offer_decode_datasets(job)
        if self.stack.currentWidget() is self.start_view:
            self.stack.setCurrentWidget(self.dashboard)

    def _decode_data(self, job: Job, ds: Optional[DataSet] = None):
        """The sequences Decode offers for ``job``: a data set (by default the job's own, else the
        current one) read with the model's alphabet, or None (Decode then samples from the model)."""
        if ds is None:
            ds = job.dataset if isinstance(job.dataset, DataSet) else self.current_dataset
        if ds is None or job.model is None:
            return None
        data = ds.processed if ds.processed is not None else (ds.test if ds.test is not None else ds.train)
        try:
            return encode_for(job.model, data)
        except ValueError as exc:
            self.log_panel.log(f"Decode: '{ds.name}' cannot be read by job {job.id}'s model: {exc}", "warning")
            return None

    def _offer_decode_datasets(self, job: Job) -> None:
        """List the open data sets in Decode's "Data" box (the one decoded selected)."""
        own = job.dataset if isinstance(job.dataset, DataSet) else self.current_dataset
        current = self.datasets.index(own) if own in self.datasets else -1
        self.dashboard.decode.set_datasets([d.name for d in self.datasets], current)

    def decode_on(self, index: int) -> None:
        """Decode the current job's model on data set ``index`` (Decode's "Data" box)."""
        job = self.current_job
        if job is None or not job.state.has_model or not (0 <= index < len(self.datasets)):
            return
        ds = self.datasets[index]
        data = self._decode_data(job, ds)
        if data is None:
            self._error_dialog("Cannot decode", f"'{ds.name}' uses symbols the model of job {job.id} does "
                                                f"not know (see the log).")
            return
        self.dashboard.decode.set_model(job.model, data)


def _token_count(data) -> int:
    """Number of tokens of a Corpus or a list of sequences (for per-token NLL curves)."""
    seqs = getattr(data, "sequences", data)
    return int(sum(len(x) for x in seqs))

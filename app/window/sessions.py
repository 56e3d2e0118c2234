"""Sessions of the main window: File > Save session / Open session (see ``app.session``).

Saving and reading run off the GUI thread with a progress dialog (reading can be cancelled);
a session is restored all at once or not at all: the file is read and every field checked
first (``app.session.load_session``), then the jobs are added in one go.  The data files a
session refers to are listed and read again only when the user says so.
"""
from __future__ import annotations

import functools
import os
import threading
from typing import Callable, Dict, List, Optional

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog, QWidget

from .. import tasks
from ..datasets import DataSet, reopen_dataset
from ..jobs import Job, JobManager, JobState
from ..session import (DataRef, Session, SessionCancelled, SessionJob, load_session, recorded_training_time,
                       save_session, tagging_record, tagging_scores_of)
from ..sweeps import renamed_job_name
from ..views.sweep import sweep_row
from .common import error_dialog, final_event, job_metrics, safe_name, warm_scoring

__all__ = ["SessionsController", "restored_event", "restored_job", "restored_jobs", "restored_sweep_rows",
           "ADD_CHUNK"]


def restored_event(job: Job):
    """The final progress event of a restored job, rebuilt from its history's last record and the
    saved step/total and stop reason: the dashboard's header then shows the final metrics, as
    it did for the job before saving (None without a history; :func:`.common.final_event`)."""
    return final_event(job) if job.history else None


#: jobs added to the Jobs panel per turn of the event loop while a session is restored
ADD_CHUNK = 25
#: the first restored job waits this long for its data set before it is drawn without it
SHOW_WITHOUT_DATA_MS = 1500


def restored_job(path: str, sj: SessionJob) -> Job:
    """The app's job of one session entry (a plain object: built off the GUI thread)."""
    job = Job(sj.name, sj.model, None, None, device=sj.device, sweep=sj.sweep, spec=sj.spec or None)
    job.state = JobState(sj.state)
    job.reason = sj.reason or f"restored from {os.path.basename(path)}"
    hist = job.history
    elapsed = sj.elapsed_s
    if elapsed is None:
        elapsed = recorded_training_time(sj.model)  # a plain model: its training time as recorded
    if elapsed is not None:
        job.started_at, job.finished_at = 0.0, float(elapsed)
    job.scores = dict(sj.scores)
    job.score_text = sj.score_text
    job.tagging = sj.tagging
    if hist:
        job.step = int(hist[-1].get("step") or 0)
    if sj.step is not None:                        # sessions written before had no step/total
        job.step = sj.step
    if sj.total is not None:
        job.total = sj.total                       # the progress bar shows "30/30", as before saving
    job.last_params = sj.model.arrays()["params"]
    job.last_event = restored_event(job)
    if sj.dataset is not None:
        job.dataset_name = sj.dataset.name
    return job


def restored_jobs(session: Session) -> List[Job]:
    return [restored_job(session.path, sj) for sj in session.jobs]


def restored_sweep_rows(jobs: List[Job]) -> List[dict]:
    """The Sweep tab's rows of the restored sweeps' finished jobs (plain dicts: built off the GUI
    thread, where 2,000 jobs took 45 ms)."""
    return [sweep_row(j, job_metrics(j)) for j in jobs if j.sweep and j.state == JobState.FINISHED and j.spec]


def _finish(dialog: QProgressDialog) -> None:
    """Close a progress dialog.  Not deleted here: a window-modal dialog's ``setValue`` runs the
    event loop, so this may run inside its own ``setValue`` (deleting it there crashed); it goes
    with the window."""
    dialog.close()


class SessionsController(QObject):
    """Save every finished job to one .h5 file; open it again: Jobs panel and data sets restored.

    Parameters
    ----------
    window : QWidget
        The shell: dialogs' parent (and the timers' context: nothing runs once it is gone), its
        status bar and ``window.dashboard`` (built while a session is read).
    state : AppState
        The open data sets, the job shown (``set_current_job``).
    jobs : JobManager
        The jobs saved; restored jobs join its list.
    settings : Settings
        Last folder, recent files.
    jobs_panel, log_panel :
        The panels it talks to (their public API).
    jobs_dock : QDockWidget
        Raised once a session is restored.

    Signals
    -------
    dataset_reopened(DataSet)
        A data file the session names was read again: the window adds it (the data sets' controller).
    """

    dataset_reopened = Signal(object)

    def __init__(self, window: QWidget, state, jobs: JobManager, settings, jobs_panel, log_panel, jobs_dock) -> None:
        super().__init__(window)
        self.window = window
        self.state = state
        self.jobs = jobs
        self.settings = settings
        self.jobs_panel = jobs_panel
        self.log_panel = log_panel
        self.jobs_dock = jobs_dock

    def _error_dialog(self, title: str, message: str) -> None:
        error_dialog(self.window, title, message)

    def _status(self):
        return self.window.statusBar()

    # ------------------------------------------------------------ saving
    def save_session_dialog(self) -> None:
        jobs = [j for j in self.jobs.jobs if j.state.has_model]
        if not jobs:
            QMessageBox.information(self.window, "Save session", "No finished job yet: a session keeps finished jobs.")
            return
        start = os.path.join(self.settings.last_folder, "session.h5")
        path, _ = QFileDialog.getSaveFileName(self.window, "Save session", start, "DenseHMM session (*.h5)")
        if path:
            if not path.lower().endswith(".h5"):
                path += ".h5"
            self.save_session(path)

    def _session_progress(self, title: str, text: str, cancel: Optional[threading.Event]) -> QProgressDialog:
        """A progress dialog that shows itself after 0.3 s (quick work never flashes one)."""
        dlg = QProgressDialog(text, "Cancel" if cancel is not None else None, 0, 0, self.window)
        dlg.setWindowTitle(title)
        dlg.setWindowModality(Qt.WindowModal)
        dlg.setMinimumDuration(300)
        dlg.setAutoClose(False)
        dlg.setAutoReset(False)
        if cancel is not None:
            dlg.canceled.connect(cancel.set)
        dlg.setValue(0)
        return dlg

    def save_session(self, path: str, on_done: Optional[Callable[[List[str]], None]] = None) -> None:
        """Write every finished (or cancelled, or diverged) job to ``path`` (background thread,
        one atomic write; a progress dialog after 0.3 s)."""
        items, used = [], set()
        for job in self.jobs.jobs:
            if not job.state.has_model:
                continue
            name = safe_name(f"job{job.id}_{job.name}")[:200]
            while name in used:
                name += "_"
            used.add(name)
            ds = job.dataset if isinstance(job.dataset, DataSet) else None
            scored = self.window.dashboard.tagging_of(job.model)   # its mapped tags: shown at once when restored
            if scored is not None:
                job.tagging = tagging_record(*scored)
            corpus = ds.processed if ds is not None else None
            test = ds.test if ds is not None and hasattr(ds.test, "provenance") else None
            items.append((name, job, corpus, test, job_metrics(job)))
        dlg = self._session_progress("Save session", f"Saving {len(items)} job(s) to {os.path.basename(path)}…",
                                     None)
        self._status().showMessage(f"Saving the session to {path}…")

        def progress(done, total):
            dlg.setRange(0, total)
            dlg.setValue(done)

        def done(names):
            _finish(dlg)
            self.settings.last_folder = os.path.dirname(os.path.abspath(path))
            self.log_panel.log(f"Session saved: {len(names)} job(s) in {path}")
            self._status().showMessage(f"Session saved to {path}", 5000)
            if on_done is not None:
                on_done(names)

        def failed(exc, tb):
            _finish(dlg)
            self._status().clearMessage()
            self._error_dialog("Cannot save the session", str(exc))

        tasks.run_background(lambda report: save_session(path, items, progress=report), done, failed,
                             on_progress=progress)

    # ------------------------------------------------------------ opening
    def open_session_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open session", self.settings.last_folder,
                                              "DenseHMM session (*.h5);;All files (*)")
        if path:
            self.open_session(path)

    def open_session(self, path: str, on_done: Optional[Callable[[List[Job]], None]] = None) -> None:
        """Restore a session: read and check it off the GUI thread (progress, Cancel), then add
        its jobs (all or none: a bad file is one dialog naming the first bad field); the data
        files it names are read again if the user confirms.  ``on_done(jobs)`` once restored."""
        path = os.path.abspath(path)
        cancel = threading.Event()
        name = os.path.basename(path)
        dlg = self._session_progress("Open session", f"Reading {name}…", cancel)
        self._status().showMessage(f"Reading the session {name}…")

        def progress(done, total):
            dlg.setRange(0, total)
            dlg.setValue(done)
            dlg.setLabelText(f"Reading {name}: {done} of {total} job(s)")

        def done(result) -> None:
            self._status().clearMessage()
            session, jobs, rows = result
            self.restore_session(session, jobs, on_done=on_done, dialog=dlg, cancel=cancel, sweep_rows=rows)

        def failed(exc, tb) -> None:
            _finish(dlg)
            self._status().clearMessage()
            if isinstance(exc, SessionCancelled):
                self.log_panel.log(f"Opening the session {path} was cancelled: nothing restored", "warning")
                return
            self.log_panel.log(f"Could not open the session {path}: {exc}", "error")
            self._error_dialog("Cannot open the session", str(exc))

        def read(report):
            session = load_session(path, progress=report, cancel=cancel)
            jobs = restored_jobs(session)                # plain objects: built here, off the GUI thread
            warm_scoring()
            return session, jobs, restored_sweep_rows(jobs)

        tasks.run_background(read, done, failed, on_progress=progress)
        # The GUI thread is idle while the file is read: build the views now (the first job is
        # drawn in them once restored), not after the read.
        QTimer.singleShot(0, self.window, self._prepare_views)

    def _prepare_views(self) -> None:
        self.window.dashboard  # noqa: B018 - built on first use

    def restore_session(self, session: Session, jobs: Optional[List[Job]] = None,
                        on_done: Optional[Callable[[List[Job]], None]] = None,
                        dialog: Optional[QProgressDialog] = None, cancel: Optional[threading.Event] = None,
                        sweep_rows: Optional[List[dict]] = None) -> None:
        """Add the jobs of a checked session (``jobs``: :func:`restored_jobs` of it, built if not
        given) to the Jobs panel, :data:`ADD_CHUNK` per turn of the event loop (the window keeps
        drawing; ``dialog`` shows the count); ``cancel`` set meanwhile removes those added
        (all or none).  Then the first job is shown and reading the data files again is
        offered; ``on_done(jobs)`` (not called when cancelled).  ``sweep_rows``: the Sweep tab's rows of
        the jobs (:func:`restored_sweep_rows`, built if not given)."""
        jobs = restored_jobs(session) if jobs is None else jobs
        sweep_rows = self._name_sweeps(session, jobs, sweep_rows)
        panel = self.jobs_panel
        added: List[Job] = []

        def undo() -> None:
            for job in added:
                if job in self.jobs.jobs:
                    self.jobs.jobs.remove(job)
            panel.remove_jobs(added)
            if dialog is not None:
                _finish(dialog)

        def step() -> None:
            if cancel is not None and cancel.is_set():
                undo()
                self.log_panel.log(f"Opening the session {session.path} was cancelled: nothing restored", "warning")
                return
            part = jobs[len(added):len(added) + ADD_CHUNK]
            blocked = panel.blockSignals(True)      # one job shown at the end, not each one the table selects
            try:
                self.jobs.jobs.extend(part)
                added.extend(part)
                panel.add_jobs(part)
            except Exception as exc:  # noqa: BLE001 - reported; nothing half-restored
                undo()
                self._error_dialog("Cannot open the session", f"{session.path}: {type(exc).__name__}: {exc}")
                return
            finally:
                panel.blockSignals(blocked)
            if len(added) < len(jobs):
                if dialog is not None:
                    dialog.setRange(0, len(jobs))
                    dialog.setValue(len(added))
                    dialog.setLabelText(f"Adding the jobs: {len(added)} of {len(jobs)}")
                QTimer.singleShot(0, self.window, step)
                return
            if dialog is not None:
                _finish(dialog)
            self._session_restored(session, jobs, restored_sweep_rows(jobs) if sweep_rows is None else sweep_rows)
            if on_done is not None:
                on_done(jobs)

        step()

    def _name_sweeps(self, session: Session, jobs: List[Job], rows: Optional[List[dict]]) -> Optional[List[dict]]:
        """The restored sweeps' names in this window (``state.sweep_names``, the one owner): a name a sweep
        of the window has already (its own, or the same session opened before) becomes the next free
        number, jobs and Sweep-tab rows alike, and the log says so.  Returns the rows, renamed."""
        names = self.state.sweep_names.restored([j.sweep for j in jobs], [j.sweep for j in self.jobs.jobs])
        moved = {old: new for old, new in names.items() if old != new}
        if not moved:
            return rows
        for job in jobs:
            if job.sweep in moved:
                job.name = renamed_job_name(job.name, job.sweep, moved[job.sweep])
                job.sweep = moved[job.sweep]
        for old, new in moved.items():
            self.log_panel.log(f"{old} of {os.path.basename(session.path)} restored as {new} (this window has a "
                               f"{old})")
        return None if rows is None else [dict(r, sweep=moved.get(r.get("sweep"), r.get("sweep"))) for r in rows]

    def _session_restored(self, session: Session, jobs: List[Job], sweep_rows: List[dict]) -> None:
        self.settings.add_recent_file(session.path)
        self.log_panel.log(f"Session {os.path.basename(session.path)}: {len(jobs)} job(s) restored")
        if not jobs:
            return
        for job in jobs:   # stored tagging scores: a words job shows its mapped tags at once (same data)
            if job.tagging is not None:
                self.window.dashboard.set_tagging(job.model, *tagging_scores_of(job.tagging))
        if sweep_rows:   # the restored sweeps' summaries in the Sweep tab, as when their jobs finished (drawn once)
            self.window.dashboard.add_sweep_rows(sweep_rows)
        self.jobs_dock.raise_()
        first = jobs[0]
        panel = self.jobs_panel
        blocked = panel.blockSignals(True)
        panel.select(first)
        panel.blockSignals(blocked)
        self.state.set_selection(panel.selected_jobs())   # (the panel's signals were blocked: the state told here)
        waiting = self._reattach_datasets(session, jobs, first)
        if not waiting:
            self.state.set_current_job(first)
            return
        # drawn once its data set is attached (Decode, tags and token counts need it); a slow
        # read does not leave it blank: shown after SHOW_WITHOUT_DATA_MS anyway (not once the
        # window is gone: the timer's context)
        QTimer.singleShot(SHOW_WITHOUT_DATA_MS, self.window, lambda: self._show_restored(first))

    def _show_restored(self, job: Job) -> None:
        """Show ``job`` unless it is shown already or the user has moved on to another job."""
        if self.state.current_job is not job and self.jobs_panel.current_job() is job:
            self.state.set_current_job(job)

    # ------------------------------------------------------------ data sets
    def _reattach_datasets(self, session: Session, jobs: List[Job], first: Job) -> bool:
        """Give the jobs their data sets again: open ones (same file and options) at once; files
        are read again only after the user confirms the list (a session's paths come from a
        file).  True when ``first``'s data set is being read (it is shown once attached)."""
        groups: Dict[tuple, List[Job]] = {}
        for sj, job in zip(session.jobs, jobs):
            if sj.dataset is not None:
                groups.setdefault(sj.dataset.key, []).append(job)
        to_read: List[DataRef] = []
        reading: List[DataRef] = []
        for ref in session.data_refs():
            members = groups[ref.key]
            if not ref.available:   # a file name the session could not store: never the demo, nothing read
                self.log_panel.log(f"Session: the data set {ref.name!r} has no stored path (its file name could not "
                                   f"be stored); {len(members)} job(s) kept without it", "warning")
                continue
            open_ds = next((ds for ds in self.state.datasets if ds.is_demo == ref.demo and ds.path == ref.path
                            and ds.options == ref.options), None)
            if open_ds is not None:
                self._attach(open_ds, members)
            elif ref.demo:                             # the demo: generated again, no file read
                reading.append(ref)
            else:
                to_read.append(ref)
        missing = [r for r in to_read if not os.path.isfile(r.path)]
        for r in missing:
            self.log_panel.log(f"Session: the data set {r.path} is missing; {len(groups[r.key])} job(s) kept "
                               f"without it", "warning")
        present = [r for r in to_read if r not in missing]
        if present and self._confirm_reading(session.path, present):
            reading += present
        elif present:
            self.log_panel.log("Session: data files not read again: " + ", ".join(r.path for r in present))
        for ref in reading:
            self._reopen(ref, groups[ref.key], first)
        return any(first in groups[ref.key] for ref in reading)

    def _confirm_reading(self, path: str, refs: List[DataRef]) -> bool:
        """Ask before reading the data files a session names (shown in full)."""
        lines = "\n".join(f"• {r.path}" for r in refs[:20]) + (f"\n… and {len(refs) - 20} more" if len(refs) > 20
                                                                 else "")
        answer = QMessageBox.question(
            self.window, "Read the session's data files?",
            f"The jobs of {os.path.basename(path)} trained on {len(refs)} data file(s):\n\n{lines}\n\n"
            f"Read them again (for Decode, scores and new jobs on the same data)? The jobs are restored "
            f"either way.", QMessageBox.Yes | QMessageBox.No, QMessageBox.Yes)
        return answer == QMessageBox.Yes

    def _reopen(self, ref: DataRef, jobs: List[Job], first: Optional[Job] = None) -> None:
        def done(ds: DataSet) -> None:
            if ref.name:
                ds.name = ref.name
            self.dataset_reopened.emit(ds)
            self._attach(ds, jobs)
            if first is not None and first in jobs:
                self._show_restored(first)

        def failed(exc, tb) -> None:
            self.log_panel.log(f"Session: cannot reopen {ref.path}: {exc}", "error")
            if first is not None and first in jobs:
                self._show_restored(first)

        # (only the demo, path None, or a file: a ref without either is never read, _reattach_datasets)
        tasks.run_background(functools.partial(reopen_dataset, ref.path, dict(ref.options)), done, failed)

    def _attach(self, ds: DataSet, jobs: List[Job]) -> None:
        for job in jobs:
            job.dataset, job.train, job.test = ds, ds.train, ds.test
            self.jobs_panel.update_job(job)
        if self.state.current_job in jobs:
            self.state.set_current_job(self.state.current_job)

"""Sessions of the main window: File > Save session / Open session (see ``app.session``)."""
from __future__ import annotations

import functools
import os
import re
from typing import Callable, Dict, List, Optional

from PySide6.QtWidgets import QFileDialog, QMessageBox

from .. import tasks
from ..datasets import DataSet, reopen_dataset
from ..jobs import Job, JobState
from ..session import SessionEntry, read_session, save_session, session_state
from .results import _safe_name, job_metrics

__all__ = ["SessionsMixin"]


class SessionsMixin:
    """Save every finished job to one .h5 file; open it again: Jobs panel and data sets restored."""

    # ------------------------------------------------------------ saving
    def save_session_dialog(self) -> None:
        jobs = [j for j in self.jobs.jobs if j.state.has_model]
        if not jobs:
            QMessageBox.information(self, "Save session", "No finished job yet: a session keeps finished jobs.")
            return
        start = os.path.join(self.settings.last_folder, "session.h5")
        path, _ = QFileDialog.getSaveFileName(self, "Save session", start, "DenseHMM session (*.h5)")
        if path:
            if not path.lower().endswith(".h5"):
                path += ".h5"
            self.save_session(path)

    def save_session(self, path: str, on_done: Optional[Callable[[List[str]], None]] = None) -> None:
        """Write every finished (or cancelled, or diverged) job to ``path`` (background thread)."""
        items, used = [], set()
        for job in self.jobs.jobs:
            if not job.state.has_model:
                continue
            name = _safe_name(f"job{job.id}_{job.name}")
            while name in used:
                name += "_"
            used.add(name)
            ds = job.dataset if isinstance(job.dataset, DataSet) else None
            corpus = ds.processed if ds is not None else None
            test = ds.test if ds is not None and hasattr(ds.test, "provenance") else None
            items.append((name, job, corpus, test, job_metrics(job)))

        def done(names):
            self.settings.last_folder = os.path.dirname(os.path.abspath(path))
            self.log_panel.log(f"Session saved: {len(names)} job(s) in {path}")
            self.statusBar().showMessage(f"Session saved to {path}", 5000)
            if on_done is not None:
                on_done(names)

        tasks.run_background(functools.partial(save_session, path, items), done,
                             lambda exc, tb: self._error_dialog("Cannot save the session", str(exc)))

    # ------------------------------------------------------------ opening
    def open_session_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", self.settings.last_folder,
                                              "DenseHMM session (*.h5);;All files (*)")
        if path:
            self.open_session(path)

    def open_session(self, path: str, on_done: Optional[Callable[[List[Job]], None]] = None) -> None:
        """Restore a session: its jobs go to the Jobs panel at once; their data sets are opened
        again (background threads) and attached to the jobs as they arrive."""
        path = os.path.abspath(path)

        def done(entries: List[SessionEntry]) -> None:
            jobs = self._restore_jobs(path, entries)
            self.settings.add_recent_file(path)
            self.log_panel.log(f"Session {os.path.basename(path)}: {len(jobs)} job(s) restored")
            if on_done is not None:
                on_done(jobs)

        tasks.run_background(functools.partial(read_session, path), done,
                             lambda exc, tb: self._error_dialog("Cannot open the session", str(exc)))

    def _restore_jobs(self, path: str, entries: List[SessionEntry]) -> List[Job]:
        jobs: List[Job] = []
        groups: Dict[tuple, List[Job]] = {}
        refs: Dict[tuple, dict] = {}
        for e in entries:
            n = e.notes
            job = Job(str(n.get("job_name") or e.name), e.model, None, None, device=str(n.get("device") or "file"),
                      sweep=n.get("sweep") or None, spec=n.get("spec") or None)
            job.state = JobState(session_state(n))
            job.reason = str(n.get("reason") or "") or f"restored from {os.path.basename(path)}"
            job.started_at, job.finished_at = 0.0, float(n.get("elapsed_s") or 0.0)
            job.scores = dict(n.get("scores") or {})
            job.score_text = str(n.get("score_text") or "")
            hist = job.history
            if hist:
                job.step = int(hist[-1].get("step") or 0)
            if isinstance(n.get("step"), int):            # sessions written before had no step/total
                job.step = n["step"]
            if isinstance(n.get("total"), int) and n["total"] > 0:
                job.total = n["total"]                    # the progress bar shows "30/30", as before saving
            ref = n.get("dataset")
            if isinstance(ref, dict):
                job.dataset_name = str(ref.get("name") or "")
                groups.setdefault(e.dataset_key, []).append(job)
                refs[e.dataset_key] = ref
            self.jobs.jobs.append(job)
            self.jobs_panel.add_job(job)
            jobs.append(job)
        # new sweeps of this session must not reuse a restored sweep's name
        for j in jobs:
            m = re.fullmatch(r"sweep (\d+)", j.sweep or "")
            if m:
                self._sweeps = max(self._sweeps, int(m.group(1)))
        for key, members in groups.items():
            self._reattach_dataset(refs[key], members)
        if jobs:
            self.jobs_panel.select(jobs[0])
            self.show_job(jobs[0])
        return jobs

    def _reattach_dataset(self, ref: dict, jobs: List[Job]) -> None:
        """Give ``jobs`` their data set again: an open one with the same file and options, else
        the file read again (a missing file is logged; the jobs keep their models)."""
        path, options = ref.get("path"), dict(ref.get("options") or {})
        for ds in self.datasets:
            if ds.path == path and ds.options == options:
                self._attach(ds, jobs)
                return
        if path is not None and not os.path.exists(path):
            self.log_panel.log(f"Session: the data set {path} is missing; {len(jobs)} job(s) kept without it",
                               "warning")
            return

        def done(ds: DataSet) -> None:
            if ref.get("name"):
                ds.name = str(ref["name"])
            self.add_dataset(ds)
            self._attach(ds, jobs)

        tasks.run_background(functools.partial(reopen_dataset, path, options), done,
                             lambda exc, tb: self.log_panel.log(f"Session: cannot reopen {path}: {exc}", "error"))

    def _attach(self, ds: DataSet, jobs: List[Job]) -> None:
        for job in jobs:
            job.dataset, job.train, job.test = ds, ds.train, ds.test
            self.jobs_panel.update_job(job)
        if self.current_job in jobs:
            self.show_job(self.current_job)

"""Sessions: every finished job in one ``.h5`` file, so that a day's work survives a restart.

A session file is an ordinary model file (``densehmm info`` and File > Open read it): one
model group per job, written by the core's :func:`densehmm_core.modelfile.save_model`
(locked and atomic through ``densehmm_core.fileio``) with the model's history, its
training data's provenance, its final metrics, ``trained_utc`` = when the job ended, and
``notes`` holding the job itself: name, form settings, sweep, state, stop reason, run
time, device, scores, and the data set it trained on (file, split, seed, preprocessing).
No Qt here; the window restores the Jobs panel and reopens the data sets.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional

__all__ = ["SESSION_KEY", "SessionEntry", "session_notes", "save_session", "read_session", "is_session"]

#: ``notes`` key that marks a model group as a session entry (value: format version)
SESSION_KEY = "app_session"
VERSION = 1


@dataclasses.dataclass
class SessionEntry:
    """One job read back from a session file."""
    name: str             # the model group's name in the file
    model: Any
    notes: Dict[str, Any]

    @property
    def dataset_key(self) -> tuple:
        """(file path or None for the demo, options as sorted JSON-able items): jobs that share it
        trained on the same data set."""
        ds = self.notes.get("dataset") or {}
        return ds.get("path"), tuple(sorted((k, repr(v)) for k, v in (ds.get("options") or {}).items()))


def session_notes(job, dataset: Any = None) -> dict:
    """The ``notes`` of a job's session entry (plain JSON-able values)."""
    ds = dataset if dataset is not None else job.dataset
    ref = None
    if ds is not None and hasattr(ds, "options"):
        ref = {"name": ds.name, "path": getattr(ds, "path", None), "options": dict(ds.options or {})}
    return {
        SESSION_KEY: VERSION,
        "job_name": job.name,
        "spec": dict(job.spec or {}),
        "sweep": job.sweep,
        "state": job.state.value,
        "reason": job.reason,
        "elapsed_s": float(job.elapsed),
        "step": int(job.step),
        "total": int(job.total) if job.total else None,
        "device": job.device,
        "scores": {k: float(v) for k, v in (getattr(job, "scores", None) or {}).items()
                   if isinstance(v, (int, float))},
        "score_text": getattr(job, "score_text", ""),
        "dataset": ref,
    }


def save_session(path: str, items: List[tuple]) -> List[str]:
    """Write ``(name, job, corpus, test_corpus, metrics)`` items (finished jobs) as one session file.

    Runs on a background thread; the whole file is replaced atomically (``app.datasets.save_models``).
    """
    from .datasets import save_models
    rows = []
    for name, job, corpus, test_corpus, metrics in items:
        rows.append((name, job.model, corpus, metrics,
                     {"test_corpus": test_corpus, "trained_utc": job.finished_utc,
                      "notes": session_notes(job)}))
    return save_models(path, rows)


def is_session(path: str) -> bool:
    """Whether an .h5 file holds at least one session entry."""
    from densehmm_core import modelfile
    for name in modelfile.list_models(path):
        if SESSION_KEY in (modelfile.read_model_info(path, name, arrays=False).get("notes") or {}):
            return True
    return False


def read_session(path: str) -> List[SessionEntry]:
    """Every model of a session file with its notes (models without session notes too: they
    become plain finished jobs).  Runs on a background thread; raises ModelFileError."""
    from densehmm_core import modelfile
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    out = []
    for name in modelfile.list_models(path):
        notes = modelfile.read_model_info(path, name, arrays=False).get("notes") or {}
        out.append(SessionEntry(name, modelfile.load_model(path, name), dict(notes)))
    return out


def session_state(notes: dict, default: str = "finished") -> str:
    state = str(notes.get("state") or default)
    return state if state in ("finished", "cancelled", "diverged") else default


def entry_dataset_options(entry: SessionEntry) -> Optional[dict]:
    ds = entry.notes.get("dataset")
    return dict(ds.get("options") or {}) if isinstance(ds, dict) else None

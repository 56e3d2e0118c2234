"""What the window's controllers share, none of them a controller: a job's numbers, safe file names,
the error dialog."""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from PySide6.QtWidgets import QMessageBox, QWidget

from ..jobrows import as_number
from ..jobs import Job

__all__ = ["job_metrics", "final_event", "safe_name", "error_dialog", "warm_scoring"]


def warm_scoring() -> None:
    """Import what the app's own inference needs (the numpy engine's scipy.sparse, 0.13 s; the
    one-to-one tag mapping's scipy.optimize, 0.16 s), to be called off the GUI thread while the app
    is idle: imported the first time a job's tagging scores or a decode ran on a background thread,
    while the user watched the job train, they stalled the GUI thread for 60-100 ms (the import holds
    the GIL and the import lock).  Only a head start: failures are left to the real call."""
    try:
        from densehmm_core.engine import get_engine
        get_engine("numpy")
        from scipy.optimize import linear_sum_assignment  # noqa: F401
    except Exception:  # noqa: BLE001
        pass


#: the metrics a final event carries for the dashboard's header (as a trained job's last event)
HEADER_METRICS = ("train_nll", "test_nll", "mad")


def job_metrics(job: Job) -> dict:
    """Numbers describing a job's result (last history record, sizes, scores)."""
    out = {}
    hist = job.history
    if hist:
        for k, v in hist[-1].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None:
                out[k] = float(v)
    model = job.model
    for k, v in (getattr(model, "metrics_", None) or {}).items():
        if isinstance(v, (int, float)):
            out.setdefault(k, float(v))
    out.update(getattr(job, "scores", {}) or {})
    return out


def final_event(job: Job, metrics: Optional[Mapping[str, Any]] = None, reason: Optional[str] = None):
    """The final progress event of a job that did not train here (restored from a session, or a
    model read from a file), rebuilt from its history's last record (step, phase, loss, log-likelihoods,
    ``train_nll``, ``test_nll``, ``mad``), the job's step/total and ``reason`` (default: the job's):
    the dashboard's header then shows the final metrics as it did for the job that trained.
    ``metrics`` (a model file's metrics group) fills what the history lacks; None when neither
    says anything."""
    from densehmm_core.events import ProgressEvent
    hist = job.history
    last = hist[-1] if hist else {}

    def num(source, key):
        return as_number((source or {}).get(key))
    values = {}
    for k in HEADER_METRICS:   # the history's value, else the file's
        v = num(last, k)
        v = num(metrics, k) if v is None else v
        if v is not None:
            values[k] = v
    if not hist and not values:
        return None
    return ProgressEvent(step=job.step, total=job.total, phase=str(last.get("phase") or ""),
                         loss=num(last, "loss"), train_ll=num(last, "train_ll"), test_ll=num(last, "test_ll"),
                         metrics=values, done=True, reason=job.reason if reason is None else reason,
                         elapsed=job.elapsed)


def safe_name(text: str) -> str:
    """``text`` as a file or HDF5 group name (letters, digits, ``_.=-``)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "model"


def error_dialog(parent: QWidget, title: str, message: str) -> None:
    """The one way the window reports an error: a critical message box over ``parent``."""
    QMessageBox.critical(parent, title, message)

"""What the window's controllers share, none of them a controller: a job's numbers, safe file names,
the error dialog."""
from __future__ import annotations

import re

from PySide6.QtWidgets import QMessageBox, QWidget

from ..jobs import Job

__all__ = ["job_metrics", "safe_name", "error_dialog"]


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


def safe_name(text: str) -> str:
    """``text`` as a file or HDF5 group name (letters, digits, ``_.=-``)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "model"


def error_dialog(parent: QWidget, title: str, message: str) -> None:
    """The one way the window reports an error: a critical message box over ``parent``."""
    QMessageBox.critical(parent, title, message)

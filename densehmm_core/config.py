"""THE configuration read from outside the code: every environment variable of the project and the data
paths, in one module (read at call time, so that a changed environment counts).

=============================  =========================================================================
``DENSEHMM_MAX_MODEL_BYTES``   the memory budget of a command (model files, data text, inference; default:
                               half the physical memory; densehmm_core.memory)
``DENSEHMM_NO_PROBE``          ``1``: read model files without the forked, memory-capped probe
``DENSEHMM_PROBE_TIMEOUT``     seconds the probe may take, plus 1 s per 50 MB (default 30)
``DENSEHMM_LOCK_TIMEOUT``      seconds a writer waits for another's lock on a file (default 60)
``DENSEHMM_DASK_TIMEOUT``      seconds to wait for a Dask scheduler (default 10)
``DENSEHMM_SHARED_DATA``       the folder of the shared data sets (default ``../shared/data`` beside the
                               repository)
``DENSEHMM_THREADS``           CPU threads of one fit (default: ``OMP_NUM_THREADS``, else the CPUs; the app
                               gives each job ``cpus // CPU slots``; densehmm_core.threads)
``DENSEHMM_JOB_EXECUTOR``      the app: ``process`` (default) or ``thread`` (training jobs in threads)
``DENSEHMM_STARTUP_REPORT``    the app: print the start-up time (benchmarks)
=============================  =========================================================================

A value that cannot be read (``DENSEHMM_LOCK_TIMEOUT=abc``) counts as unset.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

__all__ = ["max_model_bytes", "probe_disabled", "probe_timeout", "lock_timeout", "dask_timeout", "shared_data",
           "job_executor", "startup_report", "dist_version", "THREADS_ENV", "threads_per_fit", "omp_threads"]

#: the variable of :func:`threads_per_fit`
THREADS_ENV = "DENSEHMM_THREADS"


def _number(name: str) -> Optional[float]:
    text = os.environ.get(name)
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def max_model_bytes() -> Optional[int]:
    """``$DENSEHMM_MAX_MODEL_BYTES`` (at least 1), or ``None`` when unset."""
    v = _number("DENSEHMM_MAX_MODEL_BYTES")
    return None if v is None else max(1, int(v))


def probe_disabled() -> bool:
    return os.environ.get("DENSEHMM_NO_PROBE", "") not in ("", "0")


def probe_timeout(default: float) -> float:
    v = _number("DENSEHMM_PROBE_TIMEOUT")
    return default if v is None else v


def lock_timeout(default: float) -> float:
    v = _number("DENSEHMM_LOCK_TIMEOUT")
    return default if v is None else max(0.0, v)


def dask_timeout(default: float = 10.0) -> float:
    v = _number("DENSEHMM_DASK_TIMEOUT")
    return default if v is None else v


def shared_data() -> Path:
    """The shared data sets' folder: ``$DENSEHMM_SHARED_DATA`` or ``../shared/data`` beside the repository."""
    env = os.environ.get("DENSEHMM_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _whole(name: str) -> Optional[int]:
    """``$name`` as a whole number >= 1 (for ``OMP_NUM_THREADS``, its first), or None."""
    text = os.environ.get(name, "").split(",")[0].strip()
    return int(text) if text.isdigit() and int(text) >= 1 else None


def threads_per_fit() -> Optional[int]:
    """``$DENSEHMM_THREADS``: the CPU threads of one fit, or None when unset."""
    return _whole(THREADS_ENV)


def omp_threads() -> Optional[int]:
    """``$OMP_NUM_THREADS`` (its first number), or None: the thread budget a job system gave this process."""
    return _whole("OMP_NUM_THREADS")


def job_executor() -> str:
    """How the app runs training jobs (lower-cased; validated by the app)."""
    return os.environ.get("DENSEHMM_JOB_EXECUTOR", "process").strip().lower() or "process"


def startup_report() -> bool:
    return bool(os.environ.get("DENSEHMM_STARTUP_REPORT"))


def dist_version(*names: str, missing: str = "") -> str:
    """The installed version of the first of the distributions ``names`` that is installed (package
    metadata; nothing is imported), else ``missing``."""
    from importlib import metadata
    for n in names:
        try:
            return metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return missing

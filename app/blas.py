"""The GUI process's BLAS runs on one thread.

The window's own numerical work is small (a 32 x 32 eigenproblem for the embeddings' PCA, a
30,000 x 32 product, the top words of each state) and runs while a training worker process keeps
a core busy.  OpenBLAS starts one thread per core: a call then waits for its second thread, which
waits for the core the worker holds, and spins after each call on that core.  The embeddings'
projection of a 30,000-word model took 32 ms (median; 48 ms at worst) with two threads beside a
busy process and 8 ms with one (4 ms on an idle machine either way); a frozen window, and CPU time
taken from the job.  Training never runs here by default (workers are separate processes, started
with *spawn*, so the limit does not reach them; the core limits its own calls as it needs).
:func:`install` sets the limit once, from :func:`app.main.main`.
"""
from __future__ import annotations

from typing import Any, Optional

__all__ = ["install", "BLAS_THREADS"]

#: BLAS threads of the GUI process
BLAS_THREADS = 1

_limit: Optional[Any] = None   # threadpoolctl's limit object, kept for the life of the process


def install() -> None:
    """Limit the BLAS libraries loaded in this process to :data:`BLAS_THREADS` threads (call after
    numpy is imported; a no-op where threadpoolctl cannot inspect the BLAS)."""
    global _limit
    import numpy  # noqa: F401 - threadpoolctl limits the libraries loaded: numpy's BLAS first
    from threadpoolctl import threadpool_limits
    try:
        _limit = threadpool_limits(limits=BLAS_THREADS, user_api="blas")
    except Exception:  # noqa: BLE001 - an unknown BLAS build: it keeps its threads  # pragma: no cover
        _limit = None

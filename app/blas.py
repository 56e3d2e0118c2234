"""The GUI process's BLAS runs on one thread.

The window's own numerical work is small (a 32 x 32 eigenproblem for the embeddings' PCA, a
30,000 x 32 product, the top words of each state) and runs while a training worker process keeps
a core busy.  OpenBLAS starts one thread per core: a call then waits for its second thread, which
waits for the core the worker holds, and spins after each call on that core.  The embeddings'
projection of a 30,000-word model took 8-32 ms with two threads beside a busy process (bimodal: it
depends on where the other process's threads run) and 8 ms with one (4 ms on an idle machine either
way; docs/PERFORMANCE.md): a frozen window, and CPU time taken from the job.  Training never runs
here by default (workers are separate processes, started with *spawn*, so the limit does not reach
them; the core limits its own calls as it needs).  :func:`install` sets the limit once, from
:func:`app.main.main`.
"""
from __future__ import annotations

__all__ = ["install", "BLAS_THREADS"]

#: BLAS threads of the GUI process
BLAS_THREADS = 1


def install() -> None:
    """Limit the BLAS libraries loaded in this process to :data:`BLAS_THREADS` threads for the rest
    of its life (threadpoolctl sets the libraries' own thread count; a library it does not know keeps
    its threads)."""
    import numpy  # noqa: F401 - threadpoolctl limits the libraries loaded: numpy's BLAS first
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")

"""Sweep tasks on a Dask distributed cluster (``run_tasks(..., executor="dask")``).

Without a scheduler address a :class:`distributed.LocalCluster` is started with
``jobs`` worker processes of one thread each (and shut down at the end); with an
address such as ``tcp://host:8786`` the tasks go to that cluster, whose workers
must have DenseHMM Studio installed (the same version).

What crosses the network: the shared object of the sweep (its corpus, as integer
arrays) once per worker (``scatter(..., broadcast=True)``), and per task the
name of its function, its keyword arguments (a few numbers and the settings
dict) and back its result rows (plain numbers and strings).  No model crosses
the network: a task that saves models writes them to the output folder itself.

A worker that dies takes its running task with it; the scheduler runs that task
again on another worker (Dask's own bookkeeping, up to
``distributed.scheduler.allowed-failures`` times), and a task that raises is
retried ``retries`` times before it is reported as failed.  Every task is
seeded from its key, so a rerun gives the same numbers.

Importing this module does not import Dask; :func:`run_on_dask` does.
"""
from __future__ import annotations

import logging
import traceback
import uuid
from typing import Callable, Dict, Optional, Sequence

from .. import config

__all__ = ["SchedulerError", "DaskMissingError", "connect", "run_on_dask"]


class SchedulerError(RuntimeError):
    """The Dask scheduler could not be reached (one-line message)."""


class DaskMissingError(RuntimeError):
    """Dask distributed is not installed (one-line message)."""


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:  # an optional dependency
        raise DaskMissingError("the Dask executor needs 'dask[distributed]': "
                               "pip install 'densehmm-studio[dask]'") from exc
    return distributed


def connect(jobs: int, scheduler: Optional[str] = None, env: Optional[Dict[str, str]] = None,
            timeout: Optional[float] = None):
    """``(client, cluster)``: a client of ``scheduler``, or of a new local cluster
    (``cluster`` is then not None and must be closed by the caller).

    ``timeout``: seconds to wait for the scheduler (default: ``$DENSEHMM_DASK_TIMEOUT`` or 10).
    """
    distributed = _import_distributed()
    if timeout is None:
        timeout = config.dask_timeout(10.0)
    if scheduler:
        try:
            return distributed.Client(scheduler, timeout=f"{timeout}s", set_as_default=False), None
        except Exception as exc:  # noqa: BLE001 - any failure to connect is one user-facing line
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise SchedulerError(f"cannot connect to the Dask scheduler at {scheduler}: {reason}") from None
    cluster = distributed.LocalCluster(n_workers=max(1, int(jobs)), threads_per_worker=1,
                                       processes=True, dashboard_address=":0",  # any free port, never a clash
                                       silence_logs=logging.ERROR, env=dict(env or {}))
    try:
        client = distributed.Client(cluster, set_as_default=False)
    except BaseException:
        cluster.close()
        raise
    return client, cluster


def run_on_dask(todo: Sequence, finish: Callable, *, call: Callable, jobs: int, scheduler: Optional[str] = None,
                shared=None, out: Callable[[str], None] = print,
                env: Optional[Dict[str, str]] = None, retries: int = 2) -> None:
    """Run ``todo`` (runner ``Task`` objects) on a Dask cluster, calling
    ``finish(task, rows, seconds, error_or_None)`` in this process as each one ends.
    ``call(func, kwargs, shared)`` runs one task on a worker (the runner's ``call_task``,
    passed in so that this module does not import the runner back).

    Ctrl-C cancels the futures still pending (``KeyboardInterrupt`` is re-raised
    after the cluster is closed); the rows of finished tasks are already saved.
    """
    distributed = _import_distributed()
    client, cluster = connect(jobs, scheduler, env)
    futures: Dict = {}
    try:
        where = scheduler or f"a local cluster of {max(1, int(jobs))} worker processes"
        out(f"dask: {len(todo)} tasks on {where}")
        shared_future = None
        if shared is not None:
            # one object, sent once to every worker; tasks get it by reference
            shared_future = client.scatter([shared], broadcast=True, hash=False)[0]
        run_id = uuid.uuid4().hex[:8]
        for i, t in enumerate(todo):
            fut = client.submit(call, t.func, t.kwargs, shared_future,
                                key=f"densehmm-{run_id}-{i}", retries=retries, pure=False)
            futures[fut] = t
        for fut in distributed.as_completed(list(futures), loop=client.loop):
            t = futures.pop(fut)
            try:
                rows, secs, err = fut.result()
            except Exception:  # noqa: BLE001 - e.g. KilledWorker after repeated worker deaths
                rows, secs, err = [], 0.0, traceback.format_exc()
            finish(t, rows, secs, err)
    except KeyboardInterrupt:
        if futures:
            client.cancel(list(futures))
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

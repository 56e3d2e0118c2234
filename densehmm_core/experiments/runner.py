"""A small parallel, resumable experiment runner.

A sweep is a list of :class:`Task` objects.  Each task names a function
(``"module:function"``, so that it can run in a spawned worker process) that
returns a list of result rows (dicts).  Every row carries the task's ``key``
columns; the rows of a finished task are written to one CSV file at once
(temp file + rename), and on a rerun every task whose key is already in that
file is skipped.  Interrupting a sweep (Ctrl-C, a crash) loses only the tasks
in flight.

Parallelism: ``jobs=1`` runs the tasks in this process (no start-up cost).
With ``jobs > 1``, ``executor="thread"`` uses a thread pool (TensorFlow and
large numpy operations release the GIL; the workers share one TensorFlow import
and its traced functions) and ``executor="process"`` a
:class:`~concurrent.futures.ProcessPoolExecutor` with the *spawn* start method,
whose workers limit their BLAS / TensorFlow thread pools to
``cpu_count // jobs`` threads and, if the sweep needs it, import TensorFlow once
at start-up.  Threads were measured faster on the 2-core development machine and
are the CLI's default (docs/PERFORMANCE.md).  A worker process that dies (killed,
out of memory) fails only its task(s); the sweep goes on with fresh workers.
``executor="dask"`` sends the tasks to a Dask distributed cluster (a ``LocalCluster``
of ``jobs`` single-threaded worker processes, or an existing scheduler given by
``scheduler``); see :mod:`densehmm_core.experiments.dask_executor` and
docs/DISTRIBUTED.md.

``shared`` objects (e.g. the corpus of a sweep) are given to every task function as
the keyword argument ``shared``; the Dask executor sends them to the cluster once
(``scatter``) and the tasks refer to them.
"""
from __future__ import annotations

import csv
import importlib
import io
import math
import os
import time
import traceback
from concurrent.futures.process import BrokenProcessPool
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from .dask_executor import DaskTarget

__all__ = ["Task", "ResultStore", "RunReport", "run_tasks", "call_task", "format_seconds",
           "EXECUTORS", "progress_bar"]

#: The executors :func:`run_tasks` knows.
EXECUTORS = ("thread", "process", "dask")

_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass
class Task:
    """One unit of work.

    Attributes
    ----------
    key : dict
        Parameters identifying the task; every row it returns must hold these
        columns with these values.  Used to skip finished tasks on a rerun.
    func : str
        ``"package.module:function"``, called as ``function(**kwargs)`` and
        returning a list of row dicts.
    kwargs : dict
        Picklable keyword arguments.
    label : str
        Shown in the progress lines.
    cost : float
        Relative cost estimate (only used for ordering / the ETA).
    """

    key: dict
    func: str
    kwargs: dict
    label: str = ""
    cost: float = 1.0


def _key_of(d: dict, names: Sequence[str]) -> Tuple[str, ...]:
    return tuple(_cell(d.get(k)) for k in names)


def _cell(v) -> str:
    """How a value is written to (and compared in) the CSV."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return repr(v)
    import numpy as np  # here: importing the runner stays numpy-free
    if isinstance(v, np.generic):
        return _cell(v.item())
    return str(v)


class ResultStore:
    """Rows of a sweep in one CSV file, rewritten atomically after every task.

    Parameters
    ----------
    path : path of the CSV file (created on the first write).
    columns : the preferred column order; other columns are appended sorted.
    renames : old column name -> today's, applied when an existing file is read (files written
        before a column was renamed keep working; the next write uses the new names).
    """

    def __init__(self, path, columns: Sequence[str] = (), renames: Optional[Dict[str, str]] = None) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self.renames = dict(renames or {})
        self.rows: List[Dict[str, str]] = []
        self.dropped_lines = 0
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        text = self.path.read_text(encoding="utf-8")
        reader = csv.DictReader(io.StringIO(text))
        header = reader.fieldnames or []
        for row in reader:
            # a truncated last line (crash during a non-atomic copy) has missing cells
            if None in row.values() or None in row:
                self.dropped_lines += 1
                continue
            self.rows.append({self.renames.get(k, k): v for k, v in row.items()})
        for c in header:
            c = self.renames.get(c, c)
            if c not in self.columns:
                self.columns.append(c)

    def keys(self, names: Sequence[str]) -> set:
        """The set of key tuples present (values as written in the CSV)."""
        return {_key_of(r, names) for r in self.rows}

    def add(self, rows: Iterable[dict]) -> None:
        """Append rows and rewrite the file atomically."""
        new = [{k: _cell(v) for k, v in r.items()} for r in rows]
        for r in new:
            for k in r:
                if k not in self.columns:
                    self.columns.append(k)
        self.rows.extend(new)
        self.write()

    def write(self) -> None:
        from .. import fileio
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with fileio.atomic_open(self.path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=self.columns, restval="", extrasaction="raise")
            w.writeheader()
            for r in self.rows:
                w.writerow(r)


@dataclass
class RunReport:
    """What :func:`run_tasks` did."""

    total: int = 0
    skipped: int = 0
    done: int = 0
    failed: List[Tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    task_seconds: float = 0.0
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed and not self.interrupted


def format_seconds(s: float) -> str:
    s = max(0.0, float(s))
    if s < 60:
        return f"{s:.1f}s"
    m, s = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def progress_bar(done: int, total: int, width: int = 20) -> str:
    """``[########------------]``: the sweep as a whole, ``done`` of ``total`` tasks."""
    total = max(1, int(total))
    filled = int(round(width * min(max(done, 0), total) / total))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def call_task(func: str, kwargs: dict, shared=None):
    """Run one task function; returns ``(rows, seconds, error_text_or_None)``.

    ``shared`` (when not None) is passed to the function as the keyword ``shared``.
    """
    t0 = time.perf_counter()
    try:
        mod_name, fn_name = func.split(":")
        fn = getattr(importlib.import_module(mod_name), fn_name)
        rows = fn(**kwargs) if shared is None else fn(**kwargs, shared=shared)
        return list(rows), time.perf_counter() - t0, None
    except Exception:  # noqa: BLE001 - reported to the parent, the sweep goes on
        return [], time.perf_counter() - t0, traceback.format_exc()


def _init_worker(threads: int, import_tf: bool) -> None:
    """Worker start-up: quiet TensorFlow, small thread pools, TF imported once."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if import_tf:
        import tensorflow as tf  # noqa: F401 - imported once per worker on purpose
        try:
            tf.config.threading.set_intra_op_parallelism_threads(max(1, threads))
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # already initialised
            pass


def _worker_env(jobs: int) -> Dict[str, str]:
    """Environment of worker processes: BLAS/OpenMP pools of ``cpu_count // jobs`` threads."""
    threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    env = {k: str(threads) for k in _THREAD_ENV}
    env["TF_CPP_MIN_LOG_LEVEL"] = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


class _EnvPatch:
    """Temporarily set environment variables (inherited by spawned workers)."""

    def __init__(self, values: Dict[str, str]) -> None:
        self.values = values
        self.old: Dict[str, Optional[str]] = {}

    def __enter__(self):
        for k, v in self.values.items():
            self.old[k] = os.environ.get(k)
            os.environ[k] = v
        return self

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return False


def run_tasks(tasks: Sequence[Task], store: ResultStore, key_names: Sequence[str], *,
              jobs: int = 1, executor: str = "process", import_tf: bool = False,
              describe: Optional[Callable[[List[dict]], str]] = None,
              out: Callable[[str], None] = None, error_log: Optional[Path] = None,
              scheduler: Union[None, str, "DaskTarget"] = None, shared=None,
              failed_store: Optional["ResultStore"] = None) -> RunReport:
    """Run the unfinished tasks, ``jobs`` at a time, saving rows as tasks finish.

    Parameters
    ----------
    tasks : the whole sweep (finished ones are skipped).
    store : where rows go (and which keys are already finished).
    key_names : the key columns (the keys of every ``Task.key``).
    jobs : parallel workers (``1``: in this process, unless ``executor="dask"``).
    executor : ``"process"`` (spawned processes), ``"thread"`` or ``"dask"``.
    import_tf : import TensorFlow once in each worker process at start-up.
    describe : turns a task's rows into a short summary for its progress line.
    out : where progress lines go (default: print to stdout, flushed).
    error_log : file that receives the traceback of every failed task.
    scheduler : ``executor="dask"`` only: a :class:`~.dask_executor.DaskTarget` or the address of
        an existing scheduler (``tls://host:8786``); ``None`` starts a local cluster of ``jobs`` workers.
    shared : an object passed to every task function as ``shared=`` (sent once).
    failed_store : where failed tasks are recorded as rows (their key columns,
        ``status="failed"`` and ``error``); a rerun retries them.

    Returns
    -------
    RunReport
    """
    if out is None:
        def out(line: str) -> None:
            print(line, flush=True)
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}")
    jobs = max(1, int(jobs))
    t_start = time.perf_counter()
    report = RunReport(total=len(tasks))
    finished = store.keys(key_names)
    todo = [t for t in tasks if _key_of(t.key, key_names) not in finished]
    report.skipped = len(tasks) - len(todo)
    if report.skipped:
        out(f"resuming: {report.skipped} of {len(tasks)} tasks already in {store.path}")
    if not todo:
        out(f"nothing to do: all {len(tasks)} tasks are finished")
        report.seconds = time.perf_counter() - t_start
        return report
    total_cost = sum(t.cost for t in todo) or 1.0
    done_cost = 0.0
    width = len(str(len(todo)))

    def finish(task: Task, rows, secs, err) -> None:
        nonlocal done_cost
        done_cost += task.cost
        report.task_seconds += secs
        elapsed = time.perf_counter() - t_start
        eta = elapsed * (total_cost - done_cost) / max(done_cost, 1e-12)
        n = report.done + len(report.failed) + 1
        head = f"{progress_bar(n, len(todo))} {n:>{width}}/{len(todo)} {task.label or task.key}"
        if err is not None:
            report.failed.append((task.label or str(task.key), err.strip().splitlines()[-1]))
            if failed_store is not None:
                failed_store.add([{**{k: task.key[k] for k in key_names}, "status": "failed",
                                   "error": err.strip().splitlines()[-1]}])
            out(f"{head}  FAILED after {format_seconds(secs)}: {err.strip().splitlines()[-1]}")
            if error_log is not None:
                error_log.parent.mkdir(parents=True, exist_ok=True)
                with open(error_log, "a", encoding="utf-8") as fh:
                    fh.write(f"== {task.label} {task.key}\n{err}\n")
            return
        for r in rows:
            for k in key_names:
                if _cell(r.get(k)) != _cell(task.key[k]):
                    raise RuntimeError(f"task {task.label}: row has {k}={r.get(k)!r}, key says {task.key[k]!r}")
        store.add(rows)
        report.done += 1
        summary = describe(rows) if describe is not None else f"{len(rows)} rows"
        out(f"{head}  {summary}  {format_seconds(secs)}  "
            f"(elapsed {format_seconds(elapsed)}, eta {format_seconds(eta)})")

    if executor == "dask":
        from .dask_executor import run_on_dask
        try:
            run_on_dask(todo, finish, call=call_task, jobs=jobs, scheduler=scheduler, shared=shared, out=out,
                        env=_worker_env(jobs))
        except KeyboardInterrupt:
            report.interrupted = True
            out("interrupted: finished tasks are saved; rerun the same command to resume")
        report.seconds = time.perf_counter() - t_start
        return report

    if jobs == 1:
        try:
            for t in todo:
                rows, secs, err = call_task(t.func, t.kwargs, shared)
                finish(t, rows, secs, err)
        except KeyboardInterrupt:
            report.interrupted = True
            out("interrupted: finished tasks are saved; rerun the same command to resume")
        report.seconds = time.perf_counter() - t_start
        return report

    threads = max(1, (os.cpu_count() or 1) // jobs)
    env = _worker_env(jobs)

    def new_pool():
        if executor == "process":
            return ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"),
                                       initializer=_init_worker, initargs=(threads, import_tf))
        return ThreadPoolExecutor(max_workers=jobs)

    with _EnvPatch(env):
        pool = new_pool()
        try:
            pending: Dict[Any, Any] = {}
            queue = list(todo)
            # keep at most 2 * jobs tasks submitted so that Ctrl-C stops quickly
            while queue or pending:
                while queue and len(pending) < 2 * jobs:
                    t = queue.pop(0)
                    pending[pool.submit(call_task, t.func, t.kwargs, shared)] = t
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                broken = False
                for fut in done:
                    t = pending.pop(fut)
                    try:
                        rows, secs, err = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        rows, secs, err = [], 0.0, traceback.format_exc()
                    except Exception:  # noqa: BLE001 - reported, the sweep goes on
                        rows, secs, err = [], 0.0, traceback.format_exc()
                    finish(t, rows, secs, err)
                if broken:
                    # a worker died (killed, out of memory): the tasks in flight are lost and
                    # reported as failed; go on with a fresh pool (a rerun retries the failures)
                    out("a worker process died; starting new workers")
                    for fut, t in list(pending.items()):
                        finish(t, [], 0.0, "BrokenProcessPool: a worker process died")
                    pending.clear()
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = new_pool()
        except KeyboardInterrupt:
            report.interrupted = True
            out("interrupted: finished tasks are saved; rerun the same command to resume")
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:  # do not wait for the tasks in flight
                proc.terminate()
        else:
            pool.shutdown(wait=True)
    report.seconds = time.perf_counter() - t_start
    return report

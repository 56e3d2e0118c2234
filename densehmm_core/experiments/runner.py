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
``cpu_count // jobs`` threads (TensorFlow is imported only by the tasks whose models
need it, never at start-up) and end with the parent process, ``kill -9`` included
(:mod:`densehmm_core.worker.lifeline`).  Threads were
measured faster on the 2-core development machine and are the CLI's default
(docs/PERFORMANCE.md).  A worker process that dies (killed, out of memory) fails only
its task(s); the sweep goes on with fresh workers.
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
import errno
import hashlib
import importlib
import io
import json
import math
import os
import re
import stat
import sys
import time
import traceback
from concurrent.futures.process import BrokenProcessPool
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple
from typing import TYPE_CHECKING, Union

from ..threads import THREADS_ENV, fit_threads
from ._env import EnvPatch
from .cancel import TaskCancelled, call_with_token, save_as_they_end

if TYPE_CHECKING:
    from .dask_executor import DaskTarget

__all__ = ["Task", "ResultStore", "ResultFileError", "FolderLock", "FolderBusyError", "RunReport", "run_tasks",
           "call_task", "format_seconds", "EXECUTORS", "progress_bar", "file_fingerprint", "read_folder_file",
           "canonical_int", "column_types", "remove_result_file", "read_settings_file", "settings_differences"]

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


class ResultFileError(ValueError):
    """A file of a result folder cannot be used as it is: one line naming the file, the line
    (when there is one) and the reason.  The CLI prints it and exits 2; nothing is run."""

    def __init__(self, path, reason: str, line: Optional[int] = None) -> None:
        self.path = str(path)
        self.line = line
        self.reason = " ".join(str(reason).split())
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path} line {self.line}"
        return f"{where}: {self.reason}"


#: Largest results CSV read (bytes): far above any sweep's (the paper's largest: 1 MB).
MAX_CSV_BYTES = 256 << 20
#: Largest cell of a results CSV (the csv module's default field limit, 128 KiB).
MAX_FIELD_CHARS = 128 * 1024
#: Largest settings file of a result folder.
MAX_SETTINGS_BYTES = 1 << 20


def read_folder_file(path, max_bytes: int) -> Optional[bytes]:
    """The bytes of a file in a result folder, or None when it does not exist.

    Refused with :class:`ResultFileError` (never opened in a way that could block or follow
    a link): a symbolic link, a folder, a FIFO / device / socket, or more than ``max_bytes``.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.fspath(path), flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ResultFileError(path, "is a symbolic link: refused (a result folder holds plain files)") from None
        raise ResultFileError(path, f"cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ResultFileError(path, "is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise ResultFileError(path, "is not a regular file (a FIFO, device or socket): refused")
        if st.st_size > max_bytes:
            raise ResultFileError(path, f"is {st.st_size} bytes, more than the {max_bytes} a result file may have")
        chunks = []
        size = 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            size += len(b)
            if size > max_bytes:
                raise ResultFileError(path, f"is more than the {max_bytes} bytes a result file may have")
            chunks.append(b)
        return b"".join(chunks)
    except OSError as e:
        raise ResultFileError(path, f"cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)


def canonical_int(text: str) -> int:
    """A CSV cell holding an integer as the runner writes it (``3``, not ``03``, ``3.0`` or `` 3``)."""
    value = int(text)
    if str(value) != text:
        raise ValueError(text)
    return value


def column_types(ints: Sequence[str] = (), floats: Sequence[str] = ()) -> Dict[str, Callable[[str], Any]]:
    """``types`` for a :class:`ResultStore`: these columns hold integers, those numbers."""
    types: Dict[str, Callable[[str], Any]] = {c: canonical_int for c in ints}
    types.update({c: float for c in floats})
    return types


def _decode(path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ResultFileError(path, f"is not UTF-8 text (byte 0x{data[e.start]:02x})", line) from None


class ResultStore:
    """Rows of a sweep in one CSV file, rewritten atomically after every task.

    Loading is strict: every problem is a :class:`ResultFileError` naming the file and line
    (not UTF-8, a cell over 128 KiB, a line with another number of cells than the header, a
    last line cut short, a cell that does not parse as its column's type, the same key twice,
    a link / folder / FIFO in place of the file), so that a tampered or damaged file never
    makes a sweep compute or count a run twice.

    Parameters
    ----------
    path : path of the CSV file (created on the first write).
    columns : the preferred column order; other columns are appended sorted.
    renames : old column name -> today's, applied when an existing file is read (files written
        before a column was renamed keep working; the next write uses the new names).
    key : the key columns: every row must have them, and no two rows the same values.
    types : column -> converter (e.g. ``int``, ``float``) that every non-empty cell of that
        column must pass (``int`` cells must be written as integers).
    """

    def __init__(self, path, columns: Sequence[str] = (), renames: Optional[Dict[str, str]] = None, *,
                 key: Sequence[str] = (), types: Optional[Dict[str, Callable[[str], Any]]] = None) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self.renames = dict(renames or {})
        self.key = tuple(key)
        self.types = dict(types or {})
        self.rows: List[Dict[str, str]] = []
        #: line number in the file of each row read (for messages about a row)
        self.lines: List[int] = []
        data = read_folder_file(self.path, MAX_CSV_BYTES)
        if data is not None:
            self._load(_decode(self.path, data))

    def _fail(self, reason: str, line: Optional[int] = None):
        raise ResultFileError(self.path, reason, line)

    def _load(self, text: str) -> None:
        if not text:
            self._fail("is empty (not even a header line)")
        if not text.endswith("\n"):
            self._fail("the last line is cut short (no line end): the file was truncated",
                       text.count("\n") + 1)
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        old_limit = csv.field_size_limit()
        rows = []
        try:
            csv.field_size_limit(MAX_FIELD_CHARS)
            for cells in reader:
                rows.append((reader.line_num, cells))
        except csv.Error as e:
            self._fail(f"not a valid CSV line ({e})", max(1, reader.line_num))
        finally:
            csv.field_size_limit(old_limit)
        if not rows:
            self._fail("is empty (not even a header line)")
        header = [self.renames.get(c, c) for c in rows[0][1]]
        if len(set(header)) != len(header) or any(not c for c in header):
            self._fail("the header has an empty or repeated column name", 1)
        missing = [k for k in self.key if k not in header]
        if missing:
            self._fail(f"the header has no column {', '.join(missing)}", 1)
        seen: Dict[Tuple[str, ...], int] = {}
        for line, cells in rows[1:]:
            if not cells:
                continue  # a blank line holds no row
            if len(cells) != len(header):
                self._fail(f"{len(cells)} cells, the header (line 1) has {len(header)}", line)
            row = dict(zip(header, cells))
            for col, conv in self.types.items():
                v = row.get(col)
                if v:
                    try:
                        conv(v)
                    except (TypeError, ValueError):
                        kind = {canonical_int: "an integer", float: "a number"}.get(conv, "valid")
                        self._fail(f"column {col}: {v[:40]!r} is not {kind}", line)
            if self.key:
                k = _key_of(row, self.key)
                if k in seen:
                    shown = ", ".join(f"{n}={v}" for n, v in zip(self.key, k))
                    self._fail(f"the same run as line {seen[k]} ({shown}): a row is there twice", line)
                seen[k] = line
            self.rows.append(row)
            self.lines.append(line)
        for c in header:
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
        self.lines.extend([0] * len(new))
        self.write()

    def write(self) -> None:
        """Write every row (atomically; never through a symbolic link)."""
        from .. import fileio
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with fileio.atomic_open(self.path, "w", newline="", encoding="utf-8", follow_links=False) as fh:
            w = csv.DictWriter(fh, fieldnames=self.columns, restval="", extrasaction="raise")
            w.writeheader()
            for r in self.rows:
                w.writerow(r)


def _shown(v) -> str:
    if v is None:
        return "none"
    return json.dumps(v, sort_keys=True) if not isinstance(v, str) else v


def settings_differences(old: dict, new: dict) -> List[str]:
    """``"name (X recorded, Y now)"`` for every result setting that differs (data options one by one)."""
    def flat(d: dict) -> dict:
        d = dict(d)
        options = d.pop("data_options", None) or {}
        d.update({k: v for k, v in options.items()})
        return d
    a, b = flat(old), flat(new)
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            if k in ("data", "data_fingerprint"):
                out.append("data (the file's content differs: "
                           f"{str(a.get(k)).split(':')[0]} bytes recorded, {str(b.get(k)).split(':')[0]} now)")
            elif k in ("extra", "extra_fingerprints") and a.get(k) and b.get(k):
                out.append(f"extra (the extra files' content differs: {len(a[k])} files recorded, "
                           f"{len(b[k])} now)")
            else:
                out.append(f"{k} ({_shown(a.get(k))} recorded, {_shown(b.get(k))} now)")
    return out


def read_settings_file(path, build, accepted=None):
    """``(settings, recorded_id)`` from a result folder's settings file, or None when there is none.

    ``build(dict)`` makes the settings object; every problem is a :class:`ResultFileError`
    (not a plain JSON object, a setting this version does not know, a ``settings_id`` that does
    not match the content: the file was edited by hand).  ``accepted(settings)``: the ids that match
    the content (default: its ``settings_id``; an experiment whose id gained settings since lists
    the ids older versions wrote for the same content).
    """
    data = read_folder_file(path, MAX_SETTINGS_BYTES)
    if data is None:
        return None
    try:
        d = json.loads(_decode(path, data))
    except json.JSONDecodeError as e:
        raise ResultFileError(path, f"is not valid JSON ({e.msg})", e.lineno) from None
    except RecursionError:
        raise ResultFileError(path, "is not a settings file (nested too deeply)") from None
    if not isinstance(d, dict) or not isinstance(d.get("settings_id"), str):
        raise ResultFileError(path, "is not a settings file (a JSON object with a settings_id)")
    recorded = d.pop("settings_id")
    try:
        settings = build(d)
    except ResultFileError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise ResultFileError(path, f"holds settings this version cannot use ({type(e).__name__}: {e})") from None
    if recorded not in (accepted(settings) if accepted is not None else {settings.settings_id}):
        raise ResultFileError(path, f"was edited by hand: its settings_id {recorded} does not match its "
                                    f"content ({settings.settings_id}); restore it or use another --out folder")
    return settings, d


class FolderBusyError(RuntimeError):
    """Another sweep holds the result folder's lock (the message names it)."""


#: The lock file of a result folder (kept; its content names the last holder).
FOLDER_LOCK = ".densehmm-sweep.lock"


class FolderLock:
    """The exclusive lock of a result folder, held for a whole sweep (``with FolderLock(dir):``).

    An ``fcntl`` lock on ``DIR/.densehmm-sweep.lock``: the kernel releases it when the holder
    ends in any way (also ``kill -9``), so a lock file left behind never blocks a later sweep.
    The holder writes its process id, host, start time and command line into the file; a second
    sweep on the same folder is refused at once with :class:`FolderBusyError` naming that holder
    (it never waits and never writes a row).
    """

    def __init__(self, folder, what: str = "") -> None:
        self.folder = Path(folder)
        self.path = self.folder / FOLDER_LOCK
        self.what = what or " ".join(sys.argv)
        self.fd = -1
        self.removed = 0

    def __enter__(self) -> "FolderLock":
        import fcntl
        import socket
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags, 0o666)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ResultFileError(self.path, "is a symbolic link: refused (remove it)") from None
            raise ResultFileError(self.path, f"cannot create the folder's lock file ({e.strerror or e})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ResultFileError(self.path, "is not a regular file: refused (remove it)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip().replace("\n", " ")
            os.close(fd)
            raise FolderBusyError(f"{self.folder} is in use by another sweep ({holder or 'starting'}); "
                                  "wait for it to finish or choose another --out folder") from None
        self.fd = fd
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        text = f"pid {os.getpid()} on {socket.gethostname()}, started {started}: {self.what}"[:4000]
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode("utf-8", "replace") + b"\n", 0)
        self.removed = remove_stale_temporaries(self.folder) + remove_stale_temporaries(self.folder / "models")
        return self

    def __exit__(self, *exc) -> None:
        if self.fd >= 0:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            os.close(self.fd)  # releases the lock
            self.fd = -1


#: The temporary files of densehmm_core.fileio's writers (``.NAME.XXXXXXXX.tmp``, a probe file).
_TEMPORARY = re.compile(r"^\.(.+\.|densehmm-probe\.)[a-z0-9_]{8}\.tmp$")


def remove_stale_temporaries(folder) -> int:
    """Remove the temporary files a writer killed before its rename left in ``folder`` (only
    called under the folder's lock, when no writer of this folder runs); returns how many."""
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        path = os.path.join(folder, name)
        if _TEMPORARY.match(name) and stat.S_ISREG(os.lstat(path).st_mode):
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
    return removed


def remove_result_file(path) -> None:
    """Remove a file of a result folder that is rebuilt from scratch (a summary, this call's
    failures): a link is removed, never followed; a folder in its place is a :class:`ResultFileError`."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise ResultFileError(path, "is a folder, not a file: remove it")
    os.unlink(path)


def file_fingerprint(path) -> str:
    """``"SIZE:SHA256"`` of a file's content (what a resume checks, not the file's name)."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while True:
            b = fh.read(1 << 20)
            if not b:
                break
            size += len(b)
            h.update(b)
    return f"{size}:{h.hexdigest()}"


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
    except TaskCancelled:   # a fit the sweep's token stopped (threads only: no token in processes or on Dask)
        raise
    except Exception:  # noqa: BLE001 - reported to the parent, the sweep goes on
        return [], time.perf_counter() - t0, traceback.format_exc()


def _init_worker(parent_pid: int) -> None:
    """Worker start-up: end with the parent (``kill -9`` included); quiet TensorFlow.
    TensorFlow itself is imported by the first task whose model needs it."""
    from ..worker.lifeline import die_with_parent
    die_with_parent(parent_pid)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _worker_env(jobs: int, import_tf: bool = False) -> Dict[str, str]:
    """Environment of worker processes: BLAS/OpenMP pools of ``cpu_count // jobs`` threads
    (and TensorFlow's, read when a task imports it, with ``import_tf``)."""
    threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    env = {k: str(threads) for k in _THREAD_ENV}
    env[THREADS_ENV] = str(fit_threads(jobs))      # the DenseHMM M-step's threads (densehmm_core.threads)
    env["TF_CPP_MIN_LOG_LEVEL"] = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")
    if import_tf:
        env.update(TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS="1")
    return env


def run_tasks(tasks: Sequence[Task], store: ResultStore, key_names: Sequence[str], *,
              jobs: int = 1, executor: str = "process", import_tf: bool = False,
              describe: Optional[Callable[[List[dict]], str]] = None,
              out: Callable[[str], None] = None, error_log: Optional[Path] = None,
              scheduler: Union[None, str, "DaskTarget"] = None, shared=None,
              failed_store: Optional["ResultStore"] = None, preload_tf: Optional[bool] = None) -> RunReport:
    """Run the unfinished tasks, ``jobs`` at a time, saving rows as tasks finish.

    Parameters
    ----------
    tasks : the whole sweep (finished ones are skipped).
    store : where rows go (and which keys are already finished).
    key_names : the key columns (the keys of every ``Task.key``).
    jobs : parallel workers (``1``: in this process, unless ``executor="dask"``).
    executor : ``"process"`` (spawned processes), ``"thread"`` or ``"dask"``.
    import_tf : the tasks may use TensorFlow: its thread pools in worker processes are
        sized like BLAS's (the tasks whose models need it import it; workers never do at start-up).
    describe : turns a task's rows into a short summary for its progress line.
    out : where progress lines go (default: print to stdout, flushed).
    error_log : file that receives the traceback of every failed task.
    scheduler : ``executor="dask"`` only: a :class:`~.dask_executor.DaskTarget` or the address of
        an existing scheduler (``tls://host:8786``); ``None`` starts a local cluster of ``jobs`` workers.
    shared : an object passed to every task function as ``shared=`` (sent once).
    failed_store : where failed tasks are recorded as rows (their key columns,
        ``status="failed"`` and ``error``); a rerun retries them.
    preload_tf : ``executor="dask"`` with a local cluster: its workers are forked with TensorFlow
        imported (once, in the forkserver, docs/DISTRIBUTED.md); default ``import_tf``.  Pass
        False when no task fits with TensorFlow (e.g. only EM fits), so that nobody waits for it.

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
                from .. import fileio
                error_log.parent.mkdir(parents=True, exist_ok=True)
                fileio.append_text(error_log, f"== {task.label} {task.key}\n{err}\n")
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
                        env=_worker_env(jobs, import_tf),
                        preload_tf=import_tf if preload_tf is None else preload_tf)
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

    env = _worker_env(jobs, import_tf)

    def new_pool():
        if executor == "process":
            from ..worker.lifeline import warn_if_main_reruns
            warn_if_main_reruns()
            return ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"),
                                       initializer=_init_worker, initargs=(os.getpid(),))
        return ThreadPoolExecutor(max_workers=jobs)

    from ..events import CancelToken
    cancel = CancelToken()      # the thread executor's fits poll it (fit_cancellable): Ctrl-C stops them

    def submit(pool, t: Task):
        if executor == "thread":
            return pool.submit(call_with_token, cancel, call_task, t.func, t.kwargs, shared)
        return pool.submit(call_task, t.func, t.kwargs, shared)

    with EnvPatch(env):
        pool = new_pool()
        pending: Dict[Any, Any] = {}
        try:
            queue = list(todo)
            # keep at most 2 * jobs tasks submitted so that Ctrl-C stops quickly
            while queue or pending:
                while queue and len(pending) < 2 * jobs:
                    t = queue.pop(0)
                    pending[submit(pool, t)] = t
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
            cancel.cancel()
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:  # do not wait for the tasks in flight
                proc.terminate()
            if executor == "thread":
                # threads cannot be stopped from outside: their fits stop at their next check of the
                # token (within a second or two); a run that finishes meanwhile is saved as it ends
                save_as_they_end({f: t for f, t in pending.items() if not f.cancelled()}, finish, out)
        except BaseException:
            cancel.cancel()      # an error of the sweep itself: no thread runs on after it
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        else:
            pool.shutdown(wait=True)
    report.seconds = time.perf_counter() - t_start
    return report

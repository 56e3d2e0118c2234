"""What a model-file reader refuses before it reads a byte of data (docs/FILE_FORMAT.md, "Refused").

A model file comes from anywhere (a colleague, a download), so nothing in it may make
the reader touch data outside the file, hang, or allocate more than the file can
justify.  Before a model group is read (or copied into a rewritten file) every object
below it is checked:

* **links**: only hard links.  An external link (``h5py.ExternalLink``) would read
  another file, or hang on a FIFO; a soft link can alias or loop.
* **storage**: no external raw storage (``create_dataset(..., external=...)`` reads an
  arbitrary file), no virtual datasets (data mapped from other files), only the
  filters HDF5 and h5py ship (gzip, shuffle, fletcher32, lzf; no plugin is loaded).
* **sizes**: a dataset may not declare more than :data:`MAX_EXPANSION` times the bytes
  it stores (deflate cannot exceed ~1,032:1; more means unallocated chunks that
  would be conjured from the fill value), and the arrays one read needs together
  must fit the memory budget (half the machine's memory, or
  ``$DENSEHMM_MAX_MODEL_BYTES``): "too large: needs N GB".
* **nesting**: groups at most :data:`MAX_DEPTH` deep below a model (the schema has 1).

And because the HDF5 library itself can hang or crash on damaged metadata (a fuzz of
mutated model files found both), a file is first read completely in a **forked probe
process** (:func:`probe`): only a file the probe read without a problem is opened in
this process; a probe that hangs is killed after a timeout and one that crashes is
reported, both as :class:`ModelFileError`.  Results are remembered per file version
(device, inode, size, modification time), so a file is probed once.
"""
from __future__ import annotations

import collections
import os
import select
import signal
import struct
import threading
import time
from typing import Any, Callable, Generator, Iterator, Optional, Sequence

from .. import config
from ..memory import budget_hint, gb, memory_budget
from .schema import ModelFileError, _h5py

#: HDF5 filter ids a model file may use (HDF5's built-ins and h5py's lzf; no plugins).
ALLOWED_FILTERS = {1: "gzip", 2: "shuffle", 3: "fletcher32", 32000: "lzf"}
#: Largest ratio of a dataset's declared bytes to its stored bytes (plus :data:`SLACK`).
MAX_EXPANSION = 1100
#: Bytes any dataset may declare regardless of what it stores (small arrays, fill values).
SLACK = 1 << 16
#: Deepest group nesting below a model group (the schema uses one level: embeddings/, config/...).
MAX_DEPTH = 2
#: Most history rows a model may declare (one row per training step).
MAX_HISTORY_ROWS = 10_000_000
#: Bytes of Python objects per history value (a float in a dict of a list), for the budget.
HISTORY_VALUE_BYTES = 64


def check_budget(path, where: str, nbytes: int, what: str = "its arrays") -> None:
    budget = memory_budget()
    if nbytes > budget:
        raise ModelFileError(path, f"{where}: too large: {what} need {gb(nbytes)} of memory, more than the "
                                   f"{gb(budget)} allowed ({budget_hint()})")


def child(group, key: str, path, where: str, shown: Optional[str] = None):
    """``group[key]`` after checking that the link is a hard link (never followed otherwise)."""
    h5py = _h5py()
    name = key if shown is None else shown
    try:
        link = group.get(key, getlink=True)
    except (KeyError, OSError, RuntimeError, ValueError) as e:
        raise ModelFileError(path, f"{where}: {name!r} cannot be read ({e})") from None
    if link is None:
        raise ModelFileError(path, f"{where}: {name!r} is missing")
    if isinstance(link, h5py.ExternalLink):
        raise ModelFileError(path, f"{where}: {name!r} is an external link (to {link.filename!r}); "
                                   f"model files must not refer to data outside the file")
    if isinstance(link, h5py.SoftLink):
        raise ModelFileError(path, f"{where}: {name!r} is a soft link (to {link.path!r}); "
                                   f"model files hold plain groups and datasets only")
    if not isinstance(link, h5py.HardLink):
        raise ModelFileError(path, f"{where}: {name!r} is a link of an unknown kind")
    try:
        return group[key]
    except (KeyError, OSError, RuntimeError, ValueError) as e:
        raise ModelFileError(path, f"{where}: {name!r} cannot be opened ({e})") from None


def declared_bytes(ds) -> int:
    n = 1
    for d in ds.shape or ():
        n *= int(d)
    return n * int(ds.dtype.itemsize)


def check_dataset(ds, path, where: str) -> None:
    """Refuse virtual datasets, external raw storage, unknown filters and size bombs."""
    h5py = _h5py()
    try:
        dcpl = ds.id.get_create_plist()
        layout = dcpl.get_layout()
        n_external = dcpl.get_external_count()
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())] \
            if layout == h5py.h5d.CHUNKED else []
    except (OSError, RuntimeError, ValueError) as e:
        raise ModelFileError(path, f"{where}: its storage cannot be examined ({e})") from None
    if layout == h5py.h5d.VIRTUAL:
        raise ModelFileError(path, f"{where} is a virtual dataset (data mapped from other files): refused")
    if n_external:
        raise ModelFileError(path, f"{where} keeps its data in external files (external raw storage): refused")
    for code in filters:
        if code not in ALLOWED_FILTERS:
            raise ModelFileError(path, f"{where} uses HDF5 filter {code}, not one of "
                                       f"{', '.join(ALLOWED_FILTERS.values())}: refused")
    if ds.dtype.hasobject and h5py.check_string_dtype(ds.dtype) is None:
        raise ModelFileError(path, f"{where} has an unsupported data type ({ds.dtype})")
    declared = declared_bytes(ds)
    if declared > SLACK:
        try:
            stored = int(ds.id.get_storage_size())
        except (OSError, RuntimeError, ValueError):
            stored = 0
        if declared > MAX_EXPANSION * stored + SLACK:
            raise ModelFileError(path, f"{where} declares {gb(declared)} (shape {ds.shape}) but stores only "
                                       f"{stored} bytes: refused (unallocated or implausibly compressed data)")


def check_tree(group, path, where: str, depth: int = 0, prefix: str = "", found: Optional[dict] = None) -> dict:
    """Check every object below ``group`` (links, storage, nesting) without reading data.

    Returns ``{relative path: object}`` of everything below (so readers reuse the
    checked objects instead of following links again).
    """
    h5py = _h5py()
    found = {} if found is None else found
    if depth > MAX_DEPTH:
        raise ModelFileError(path, f"{where}: groups nested deeper than the schema allows")
    try:
        keys = list(group.keys())
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        raise ModelFileError(path, f"{where}: cannot be listed ({e})") from None
    for key in keys:
        rel = prefix + key
        obj = child(group, key, path, where, rel)
        found[rel] = obj
        if isinstance(obj, h5py.Group):
            check_tree(obj, path, where, depth + 1, rel + "/", found)
        elif isinstance(obj, h5py.Dataset):
            check_dataset(obj, path, f"{where}: dataset {rel!r}")
        else:
            raise ModelFileError(path, f"{where}: {rel!r} is an unexpected object ({type(obj).__name__}); "
                                       f"model files hold groups and datasets only")
    return found


def model_group(f, path, name: str, *, check: bool = True):
    """The group of model ``name``; with ``check``: ``(group, objects)``, its subtree checked
    (see the module docstring) and ``objects`` mapping relative paths to the checked objects."""
    h5py = _h5py()
    where = f"model {name!r}"
    models = child(f, "models", path, "the file")
    mg = child(models, name, path, "/models")
    if not isinstance(mg, h5py.Group):
        raise ModelFileError(path, f"{where} is not a group")
    if check:
        return mg, check_tree(mg, path, where)
    return mg


def history_rows(value, path, where: str) -> Optional[int]:
    """The ``n_records`` attribute of a history group, validated (None when absent)."""
    if value is None:
        return None
    try:
        import numpy as np
        if isinstance(value, (bool, np.bool_)) or not float(value).is_integer():
            raise ValueError
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        raise ModelFileError(path, f"{where}: history attribute n_records must be an integer, got {value!r}") \
            from None
    if not 0 <= n <= MAX_HISTORY_ROWS:
        raise ModelFileError(path, f"{where}: history declares {n} records (at most {MAX_HISTORY_ROWS} allowed)")
    return n


# ------------------------------------------------------------------------- the probe
#: Seconds a probe may take (plus one per 50 MB of file), then the file counts as hanging HDF5.
PROBE_TIMEOUT = 30.0
#: Bytes of address space a probe may add to what it inherits (plus 40 per byte of the file).
PROBE_MEMORY = 1 << 30
_probe_results: "collections.OrderedDict" = collections.OrderedDict()
_probe_lock = threading.Lock()
_in_probe = False


def _file_key(st: os.stat_result, path=None, data=None) -> tuple:
    """Identifies one version of a file: its stat, and for a file changed in the last two seconds
    (up to 64 MB) a hash of the content too (a rewrite within one timestamp tick keeps the stat);
    ``data``: the file's content, already in memory (hashed instead of reading the file)."""
    key: tuple = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    fresh = time.time() - max(st.st_mtime, st.st_ctime) < 2.0  # may change again within one timestamp tick
    if path is not None and fresh and st.st_size <= 64 << 20:
        import hashlib
        if data is not None and len(data) == st.st_size:
            return key + (hashlib.blake2b(data, digest_size=16).digest(),)
        try:
            with open(path, "rb") as fh:
                key += (hashlib.blake2b(fh.read(), digest_size=16).digest(),)
        except OSError:
            pass
    return key


def _remember(key: tuple, problem: Optional[str]) -> None:
    with _probe_lock:
        _probe_results[key] = problem
        _probe_results.move_to_end(key)
        while len(_probe_results) > 512:
            _probe_results.popitem(last=False)


def trust(path, data=None) -> None:
    """Record that ``path`` (as it is now) was just written by this package's writer (``data``:
    the bytes written, so that the file is not read back to identify it)."""
    try:
        _remember(_file_key(os.stat(path), path, data), None)
    except OSError:
        pass


def probe_enabled() -> bool:
    return hasattr(os, "fork") and not _in_probe and not config.probe_disabled()


def probe(path, st: Optional[os.stat_result], read: Callable[[str], None]) -> None:
    """Read ``path`` completely with ``read`` (the reader's ``probe_read``, passed in so that
    this module does not import the reader) in a forked process first; raise ModelFileError
    if that fails, hangs (killed after :data:`PROBE_TIMEOUT` s) or crashes.  No-op where fork
    is missing, inside a probe, or with ``DENSEHMM_NO_PROBE=1``."""
    if not probe_enabled():
        return
    spath = os.fspath(path)
    st = st or os.stat(spath)
    key = _file_key(st, spath)
    with _probe_lock:
        known = key in _probe_results
        problem = _probe_results.get(key)
    if not known:
        problem = _run_probe(spath, _timeout(st.st_size), read)
        _remember(key, problem)
    if problem:
        raise ModelFileError(spath, problem)


def _limit_memory(extra: int) -> None:  # pragma: no cover - runs in the probe process
    """Cap this process's address space at its current size plus ``extra`` bytes."""
    try:
        import resource
        with open("/proc/self/status", encoding="ascii") as fh:
            vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
        limit = vm + int(extra)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError, StopIteration, ImportError):
        pass


def _timeout(size: int) -> float:
    return config.probe_timeout(PROBE_TIMEOUT) + size / 50e6


def _spawn(spath: str, write: Callable[[int], None]) -> tuple:
    """Fork a memory-capped child that runs ``write(fd)`` (the write end of a pipe) and exits;
    ``(pid, read fd)``."""
    h5py = _h5py()
    try:
        size = os.stat(spath).st_size
    except OSError:
        size = 0
    r, w = os.pipe()
    # Hold h5py's global lock across fork: no other thread of this process is then inside
    # HDF5, so the child never inherits a lock held by a thread that does not exist there.
    with h5py._objects.phil:
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process
        try:
            os.close(r)
            global _in_probe
            _in_probe = True
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _limit_memory(PROBE_MEMORY + 40 * size)
            write(w)
        finally:
            os._exit(0)
    os.close(w)
    return pid, r


def _write_all(fd: int, data) -> None:  # pragma: no cover - runs in the child
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _ended(pid: int, kill: bool) -> Optional[str]:
    """Reap the child (killed first with ``kill``); the problem if it crashed."""
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and not kill:
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"is damaged: reading it crashed the HDF5 library ({name})"
    return None


def _hang(timeout: float) -> str:
    return f"is damaged: reading it made the HDF5 library hang (stopped after {timeout:.0f} s)"


def _answer_file() -> int:
    """A file descriptor for the child's answer: an anonymous in-memory file (``memfd``) where
    the platform has one, else an unlinked temporary file."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create("densehmm-read", os.MFD_CLOEXEC)
        except OSError:
            pass
    import tempfile
    fh = tempfile.TemporaryFile()
    fd = os.dup(fh.fileno())
    fh.close()
    return fd


def _read_answer(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks, done = [], 0
    while done < size:
        chunk = os.pread(fd, size - done, done)
        if not chunk:
            break
        chunks.append(chunk)
        done += len(chunk)
    return b"".join(chunks)


def _fork_call(spath: str, timeout: float, work: Callable[[], Sequence[Any]]):
    """Run ``work()`` (a list of buffers) in a forked, memory-capped child; ``(problem, answer
    bytes)``, the answer being the buffers' concatenation.

    ``problem`` is None when the child answered; otherwise it says that reading the file
    made HDF5 hang (the child is killed after ``timeout`` s) or crash.  The child writes its
    parts (an array's own memory, not joined first) into an in-memory file and then one byte
    into the pipe; the answer is read from the file in one piece once the pipe closes (a
    50,000-word model's 20 MB were copied about ten times on their way through the pipe).
    """
    out = _answer_file()

    def answer(w: int) -> None:  # pragma: no cover - runs in the child
        for part in work():
            _write_all(out, part)
        _write_all(w, b"1")

    try:
        pid, r = _spawn(spath, answer)
        done = False
        deadline = time.monotonic() + timeout
        timed_out = False
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                ready, _, _ = select.select([r], [], [], min(left, 1.0))
                if ready:
                    chunk = os.read(r, 64)
                    if not chunk:
                        break
                    done = True
        finally:
            os.close(r)
            crashed = _ended(pid, timed_out)
        if timed_out:
            return _hang(timeout), b""
        if crashed:
            return crashed, b""
        return None, _read_answer(out) if done else b""
    finally:
        os.close(out)


def _problem_of(exc: BaseException) -> str:
    if isinstance(exc, ModelFileError):
        return exc.problem
    if isinstance(exc, MemoryError):
        return "too large: reading it ran out of memory"
    return f"is damaged or unreadable ({type(exc).__name__}: {' '.join(str(exc).split())})"


def _run_probe(spath: str, timeout: float, read: Callable[[str], None]) -> Optional[str]:
    def work() -> list:  # pragma: no cover - runs in the child
        try:
            read(spath)
            return [b"0\n"]
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            return [("1\n" + _problem_of(e)).encode("utf-8", "replace")[:60000]]
    problem, answer = _fork_call(spath, timeout, work)
    if problem:
        return problem
    text = answer.decode("utf-8", "replace")
    code, _, message = text.partition("\n")
    if code == "0":
        return None
    if code == "1" and message:
        return message
    return "is damaged: the reading process ended without an answer"


def run_isolated(path, fn: Callable[[], object]):
    """``fn()`` (a read of ``path``) run in a forked, memory-capped, time-limited child; its result
    (plain data and numeric arrays) comes back as a worker message (JSON + .npy, never pickled).

    This process never opens the file with HDF5, so a damaged file that makes the library hang
    or crash costs only the child.  Errors come back as :class:`ModelFileError`.
    """
    from ..worker.wire import decode_message, encode_parts
    spath = os.fspath(path)
    try:
        size = os.stat(spath).st_size
    except OSError:
        size = 0

    def work() -> list:  # pragma: no cover - runs in the child
        try:
            return [b"R"] + encode_parts({"result": fn()})
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            return [b"E" + _problem_of(e).encode("utf-8", "replace")[:60000]]
    problem, answer = _fork_call(spath, _timeout(size), work)
    if problem is None:
        if answer[:1] == b"R":
            try:
                return decode_message(memoryview(answer)[1:])["result"]
            except (ValueError, KeyError, TypeError) as e:
                problem = f"is damaged: its contents could not be passed back ({e})"
        elif answer[:1] == b"E":
            problem = answer[1:].decode("utf-8", "replace")
        else:
            problem = "is damaged: the reading process ended without an answer"
    raise ModelFileError(spath, problem)


def run_isolated_iter(path, gen_fn: Callable[[], Iterator]) -> Generator:
    """Like :func:`run_isolated` for a generator: ``gen_fn()`` runs in ONE forked, memory-capped
    child and each item it yields comes back (a worker message) as soon as it is produced, so
    the caller works on one part while the child reads the next.

    The child is killed when it makes no progress for the probe's timeout (a hang), and when the
    caller stops iterating early (``close()``, an exception, or simply dropping the
    iterator: the read ends there).  Errors come back as :class:`ModelFileError`.  Where the
    probe is off (no fork, inside a probe, ``DENSEHMM_NO_PROBE=1``) ``gen_fn()`` runs here.
    """
    from ..worker import decode_message, encode_message
    spath = os.fspath(path)
    if not probe_enabled():
        yield from gen_fn()
        return
    try:
        size = os.stat(spath).st_size
    except OSError:
        size = 0

    def write(w: int) -> None:  # pragma: no cover - runs in the child
        def put(kind: bytes, payload: bytes) -> None:
            _write_all(w, struct.pack("<Q", len(payload) + 1) + kind)
            _write_all(w, payload)
        try:
            for item in gen_fn():
                put(b"R", encode_message({"result": item}))
            put(b"D", b"")
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            put(b"E", _problem_of(e).encode("utf-8", "replace")[:60000])

    timeout = _timeout(size)
    pid, r = _spawn(spath, write)
    buf = bytearray()
    finished = eof = False
    problem: Optional[str] = None
    try:
        deadline = time.monotonic() + timeout
        while True:
            while len(buf) >= 9:
                n = struct.unpack_from("<Q", buf)[0]
                if len(buf) < 8 + n:
                    break
                kind, payload = bytes(buf[8:9]), bytes(buf[9:8 + n])
                del buf[:8 + n]
                if kind == b"R":
                    try:
                        item = decode_message(payload)["result"]
                    except (ValueError, KeyError, TypeError) as e:
                        raise ModelFileError(spath, f"is damaged: its contents could not be passed back ({e})") \
                            from None
                    del payload
                    yield item
                    deadline = time.monotonic() + timeout
                elif kind == b"D":
                    finished = True
                    return
                elif kind == b"E":
                    finished = True
                    raise ModelFileError(spath, payload.decode("utf-8", "replace"))
                else:
                    raise ModelFileError(spath, "is damaged: the reading process sent a malformed answer")
            left = deadline - time.monotonic()
            if left <= 0:
                problem = _hang(timeout)
                break
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(r, 1 << 20)
                if not chunk:
                    eof = True
                    break
                buf += chunk
                deadline = time.monotonic() + timeout
    finally:
        os.close(r)
        crashed = _ended(pid, kill=not (finished or eof))  # killed: a hang, or the caller stopped
    if problem is None:
        problem = crashed or "is damaged: the reading process ended without an answer"
    raise ModelFileError(spath, problem)

"""The one way files are written: atomically, under a lock, with one-line errors.

Every writer of the project (model files, CSV/zip exports, experiment tables and
figures, the app's exports and sessions) goes through this module, so that

* a reader never sees a half-written file: the content goes to a temporary file in
  the target's folder, which is flushed, ``fsync``-ed and then renamed over the
  target (:func:`os.replace`, atomic on POSIX); the folder is ``fsync``-ed too;
* a failure (full disk, killed process, an exception in the writer) leaves the
  previous file unchanged and no temporary file behind;
* a new file gets the usual permissions (``0666`` minus the umask, not
  :func:`tempfile.mkstemp`'s ``0600``); a replaced file keeps its mode;
* a read-only file (no write permission bit, or not writable by this user) is never
  replaced: :func:`check_writable` says so before any work is done;
* writers of files in an output folder (sweeps, reproductions) pass ``follow_links=False``:
  a target that is a symbolic link is then refused (one line), never written through, so
  nothing outside the folder is touched; lock files are never opened through a link;
* concurrent writers of the same file serialise on an advisory ``fcntl`` lock file
  beside the target (``.NAME.lock``, removed again when released): a writer that
  must wait logs a message once and gives up with :class:`FileLockTimeout` after
  ``timeout`` seconds.  A read-modify-write (adding a model to a model file) holds
  :func:`file_lock` around both the read and the write, so no update is lost.

Errors are :class:`FileWriteError` (an :class:`OSError`) with a one-line message
naming the file and the reason (for a full disk: "the disk is full").
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import tempfile
import threading
import time
from typing import Any, Callable, Iterator, Optional, Union

from . import config

__all__ = ["FileWriteError", "FileLockTimeout", "DEFAULT_LOCK_TIMEOUT", "file_lock", "check_writable",
           "atomic_path", "atomic_open", "write_bytes", "write_text", "append_text", "default_file_mode",
           "is_disk_full"]

log = logging.getLogger("densehmm_core.fileio")

#: Seconds a writer waits for another writer of the same file before giving up
#: (the environment variable ``DENSEHMM_LOCK_TIMEOUT`` overrides it).
DEFAULT_LOCK_TIMEOUT = 60.0

PathLike = Union[str, "os.PathLike[str]"]


class FileWriteError(OSError):
    """A file could not be written; the message is one line naming the file and the reason.

    Attributes
    ----------
    path : str
        The target file.
    reason : str
        What went wrong, in words.
    disk_full : bool
        True when the file system ran out of space (or quota).
    """

    def __init__(self, path: PathLike, reason: str, *, disk_full: bool = False,
                 err: Optional[int] = None) -> None:
        self.path = os.fspath(path)
        self.reason = " ".join(str(reason).split())  # one line, whatever the OS or HDF5 said
        self.disk_full = bool(disk_full)
        super().__init__(f"{self.path}: {self.reason}")
        if err is not None:
            self.errno = err
        self.filename = self.path

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def __reduce__(self):
        return (type(self), (self.path, self.reason), {"disk_full": self.disk_full})

    def __setstate__(self, state):
        self.disk_full = state.get("disk_full", False)


class FileLockTimeout(FileWriteError):
    """Another process held the file's lock for longer than the timeout."""


# ------------------------------------------------------------------ helpers
def _lock_timeout(timeout: Optional[float]) -> float:
    if timeout is not None:
        return float(timeout)
    return config.lock_timeout(DEFAULT_LOCK_TIMEOUT)


def _umask() -> int:
    """The process umask, read without changing it where /proc allows (no race with threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - systems without /proc
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


def default_file_mode() -> int:
    """Mode of a newly created file: ``0666`` minus the umask."""
    return 0o666 & ~_umask()


def is_disk_full(exc: BaseException) -> bool:
    """True for an error caused by a full file system or quota (also HDF5's and Qt's texts)."""
    e: Optional[BaseException] = exc
    seen = 0
    while e is not None and seen < 5:
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(e)
        if "No space left" in text or "errno = 28" in text or "Disk quota exceeded" in text:
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


def _resolve(path: PathLike, follow_links: bool = True) -> str:
    """Absolute path of the file to write.

    ``follow_links``: through symbolic links (the link keeps pointing at the new file);
    else only the folder is resolved and a target that is a link is refused.
    """
    p = os.path.abspath(os.fspath(path))
    try:
        if follow_links:
            return os.path.realpath(p, strict=False)
        target = os.path.join(os.path.realpath(os.path.dirname(p), strict=False), os.path.basename(p))
    except (OSError, RuntimeError):  # symlink loop
        raise FileWriteError(p, "is a symbolic link loop") from None
    if os.path.islink(target):
        raise FileWriteError(path, "is a symbolic link: not written (files in an output folder are never "
                                   "written through links; remove the link)")
    return target


def _is_read_only(st: os.stat_result, path: str) -> bool:
    if not (st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)):
        return True  # chmod a-w: read-only even for root
    return not os.access(path, os.W_OK)


def check_writable(path: PathLike, *, what: str = "file") -> str:
    """Check that ``path`` can be (re)written: raise :class:`FileWriteError` if not.

    Done before long work (training) so that it is not thrown away at the end: the
    folder must exist and accept a new file (a temporary file is created and removed),
    and an existing ``path`` must be a regular file that is not read-only.  Returns
    the resolved absolute path.
    """
    target = _resolve(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise FileWriteError(path, f"{folder} is not a folder")
        raise FileWriteError(path, f"the folder {folder} does not exist")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise FileWriteError(path, f"cannot be examined ({e.strerror or e})", err=e.errno) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise FileWriteError(path, "is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise FileWriteError(path, f"is not a regular {what} (a device, FIFO or socket): not replaced")
        if _is_read_only(st, target):
            raise FileWriteError(path, f"is read-only: not replaced (make it writable or choose another {what})",
                                 err=errno.EACCES)
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".densehmm-probe.", suffix=".tmp")
    except OSError as e:
        if is_disk_full(e):
            raise FileWriteError(path, f"the disk is full (no space left in {folder})", disk_full=True,
                                 err=e.errno) from None
        raise FileWriteError(path, f"cannot write in {folder} ({e.strerror or e})", err=e.errno) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return target


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -------------------------------------------------------------------- locking
_held = threading.local()


def _held_locks() -> dict:
    d = getattr(_held, "locks", None)
    if d is None:
        d = _held.locks = {}
    return d


def lock_path_of(path: PathLike) -> str:
    """The lock file used for ``path``: ``.NAME.lock`` in the same folder."""
    target = _resolve(path)
    return os.path.join(os.path.dirname(target), "." + os.path.basename(target) + ".lock")


@contextlib.contextmanager
def file_lock(path: PathLike, timeout: Optional[float] = None,
              on_wait: Optional[Callable[[str], object]] = None) -> Iterator[str]:
    """Hold the advisory write lock of ``path`` (re-entrant within a thread).

    Parameters
    ----------
    path : path-like
        The file about to be written (the lock is ``.NAME.lock`` beside it).
    timeout : float, optional
        Seconds to wait for another holder (default :data:`DEFAULT_LOCK_TIMEOUT`,
        or ``$DENSEHMM_LOCK_TIMEOUT``); then :class:`FileLockTimeout`.
    on_wait : callable, optional
        Called once with a message when the lock is busy (default: logged as a warning).

    Yields the resolved target path.  The lock file is removed on release.
    """
    import fcntl

    target = _resolve(path)
    held = _held_locks()
    if target in held:  # this thread already holds it (e.g. save_model inside a session save)
        held[target] += 1
        try:
            yield target
        finally:
            held[target] -= 1
        return
    lock = lock_path_of(target)
    wait = _lock_timeout(timeout)
    deadline = time.monotonic() + wait
    told = False
    fd = -1
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileNotFoundError:
            raise FileWriteError(path, f"the folder {os.path.dirname(target)} does not exist") from None
        except OSError as e:
            if is_disk_full(e):
                raise FileWriteError(path, "the disk is full (cannot even create its lock file)", disk_full=True,
                                     err=e.errno) from None
            if e.errno == errno.ELOOP:
                raise FileWriteError(path, f"its lock file {lock} is a symbolic link: refused (remove it)",
                                     err=e.errno) from None
            raise FileWriteError(path, f"cannot create the lock file {lock} ({e.strerror or e})",
                                 err=e.errno) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            fd = -1
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise FileWriteError(path, f"cannot lock {lock} ({e.strerror or e})", err=e.errno) from None
            if time.monotonic() >= deadline:
                raise FileLockTimeout(path, f"another process is writing it (lock {os.path.basename(lock)} "
                                            f"held for more than {wait:g} s); try again later") from None
            if not told:
                told = True
                msg = f"{target}: waiting for another process writing it (up to {wait:g} s)"
                if on_wait is not None:
                    on_wait(msg)
                else:
                    log.warning(msg)
            time.sleep(0.02)
            continue
        # The previous holder may have removed the file between our open and flock: then
        # this lock guards nothing; start again on the current file.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
        fd = -1
    held[target] = 1
    try:
        yield target
    finally:
        del held[target]
        with contextlib.suppress(OSError):
            os.unlink(lock)  # while still locked: a waiter then retries on a fresh file
        os.close(fd)


# -------------------------------------------------------------------- writing
@contextlib.contextmanager
def atomic_path(path: PathLike, *, lock: bool = True, timeout: Optional[float] = None,
                replace_read_only: bool = False, suffix: str = ".tmp", follow_links: bool = True) -> Iterator[str]:
    """Yield a temporary path in ``path``'s folder; on success it replaces ``path`` atomically.

    For writers that need a file name (HDF5, matplotlib, Qt's image writers).  The
    temporary file exists (empty) when the block starts.  On an exception in the
    block or in the final steps the temporary file is removed, ``path`` is left as it
    was, and the error is re-raised (an :class:`OSError` becomes :class:`FileWriteError`).
    ``suffix`` lets writers that choose their format by extension keep it.
    ``follow_links=False`` (writers in output folders): a ``path`` that is a symbolic link is
    refused with :class:`FileWriteError`, before and again just before the rename.
    """
    target = _resolve(path, follow_links)
    with contextlib.ExitStack() as stack:
        if lock:
            stack.enter_context(file_lock(target, timeout))
        folder = os.path.dirname(target)
        mode = _prepare(path, target, replace_read_only)
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(target) + ".", suffix=suffix)
        except OSError as e:
            raise _as_write_error(path, e, folder) from None
        os.close(fd)
        try:
            yield tmp
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            if not follow_links:
                _resolve(target, False)  # a link planted while writing is refused too
            os.replace(tmp, target)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(e, FileWriteError):
                raise
            if isinstance(e, OSError) or is_disk_full(e):
                raise _as_write_error(path, e, folder) from e
            raise
        _fsync_dir(folder)


def _prepare(path: PathLike, target: str, replace_read_only: bool) -> int:
    """Checks before writing; returns the mode the new file gets."""
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileWriteError(path, f"the folder {folder} does not exist")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return default_file_mode()
    except OSError as e:
        raise FileWriteError(path, f"cannot be examined ({e.strerror or e})", err=e.errno) from None
    if stat.S_ISDIR(st.st_mode):
        raise FileWriteError(path, "is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise FileWriteError(path, "is not a regular file (a device, FIFO or socket): not replaced")
    if not replace_read_only and _is_read_only(st, target):
        raise FileWriteError(path, "is read-only: not replaced", err=errno.EACCES)
    return stat.S_IMODE(st.st_mode)


def _as_write_error(path: PathLike, e: BaseException, folder: str) -> FileWriteError:
    if is_disk_full(e):
        return FileWriteError(path, f"the disk is full (no space left in {folder}); nothing was changed",
                              disk_full=True, err=errno.ENOSPC)
    if isinstance(e, OSError):
        reason = e.strerror or str(e) or type(e).__name__
        return FileWriteError(path, f"could not be written ({reason}); nothing was changed", err=e.errno)
    return FileWriteError(path, f"could not be written ({type(e).__name__}: {e}); nothing was changed")


@contextlib.contextmanager
def atomic_open(path: PathLike, mode: str = "wb", *, encoding: str = "utf-8", newline: Optional[str] = None,
                lock: bool = True, timeout: Optional[float] = None, follow_links: bool = True) -> Iterator:
    """``open()`` for writing, atomically: the file appears (or is replaced) only when the block ends."""
    if mode not in ("w", "wb", "wt"):
        raise ValueError(f"atomic_open writes whole files: mode must be 'w' or 'wb', not {mode!r}")
    with atomic_path(path, lock=lock, timeout=timeout, follow_links=follow_links) as tmp:
        fh: Any
        if "b" in mode:
            fh = open(tmp, "wb")
        else:
            fh = open(tmp, "w", encoding=encoding, newline=newline)
        with fh:
            yield fh
            fh.flush()


def write_bytes(path: PathLike, data, *, lock: bool = True, timeout: Optional[float] = None,
                follow_links: bool = True) -> str:
    """Write ``data`` (bytes-like) to ``path`` atomically; returns the resolved path."""
    with atomic_open(path, "wb", lock=lock, timeout=timeout, follow_links=follow_links) as fh:
        fh.write(data)
    return _resolve(path, follow_links)


def write_text(path: PathLike, text: str, *, encoding: str = "utf-8", lock: bool = True,
               timeout: Optional[float] = None, follow_links: bool = True) -> str:
    """Write ``text`` to ``path`` atomically (no newline translation); returns the resolved path."""
    with atomic_open(path, "w", encoding=encoding, newline="", lock=lock, timeout=timeout,
                     follow_links=follow_links) as fh:
        fh.write(text)
    return _resolve(path, follow_links)


def append_text(path: PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """Append ``text`` to a log file in an output folder (created if missing).

    Not atomic (a log grows); never through a symbolic link and never into a FIFO, device or
    folder: those are refused with :class:`FileWriteError`.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.fspath(path), flags, default_file_mode())
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FileWriteError(path, "is a symbolic link: not written (remove the link)", err=e.errno) from None
        raise _as_write_error(path, e, os.path.dirname(os.path.abspath(os.fspath(path)))) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileWriteError(path, "is not a regular file (a device, FIFO or socket): not written")
        data = text.encode(encoding)
        while data:
            data = data[os.write(fd, data):]
    except FileWriteError:
        raise
    except OSError as e:
        raise _as_write_error(path, e, os.path.dirname(os.path.abspath(os.fspath(path)))) from None
    finally:
        os.close(fd)

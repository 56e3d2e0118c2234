"""The one atomic-write + lock helper (densehmm_core.fileio): atomic replace, permissions,
read-only and non-regular targets refused, failures leave the old file and no temp file,
a full disk is one clear error, and concurrent writers (real processes) lose nothing."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from densehmm_core import fileio
from densehmm_core.fileio import FileLockTimeout, FileWriteError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def umask():
    m = os.umask(0o022)
    os.umask(m)
    return m


def test_new_file_gets_umask_mode_and_replace_keeps_the_old_mode(tmp_path):
    p = tmp_path / "a.txt"
    fileio.write_text(p, "one\n")
    assert p.read_text() == "one\n"
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~umask()
    os.chmod(p, 0o640)
    fileio.write_bytes(p, b"two")
    assert p.read_bytes() == b"two" and stat.S_IMODE(os.stat(p).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]  # no temp, probe or lock file left
    old = os.umask(0o077)
    try:
        fileio.write_text(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "private.txt").st_mode) == 0o600


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "m.bin"
    p.write_bytes(b"old")
    with pytest.raises(ZeroDivisionError):
        with fileio.atomic_open(p, "wb") as fh:
            fh.write(b"half of the new cont")
            1 / 0
    assert p.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["m.bin"]
    with pytest.raises(ValueError):
        with fileio.atomic_path(tmp_path / "new.bin") as tmp:
            open(tmp, "wb").write(b"x")
            raise ValueError("no")
    assert sorted(os.listdir(tmp_path)) == ["m.bin"]


def test_read_only_folders_and_non_regular_targets_are_refused(tmp_path):
    ro = tmp_path / "ro.txt"
    ro.write_text("keep")
    os.chmod(ro, 0o444)
    for call in (lambda: fileio.write_text(ro, "new"), lambda: fileio.check_writable(ro)):
        with pytest.raises(FileWriteError, match="read-only: not replaced"):
            call()
    assert ro.read_text() == "keep"
    (tmp_path / "d").mkdir()
    with pytest.raises(FileWriteError, match="is a folder"):
        fileio.write_text(tmp_path / "d", "x")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(FileWriteError, match="not a regular"):
        fileio.check_writable(fifo)
    with pytest.raises(FileWriteError, match="not a regular"):
        fileio.write_text(fifo, "x")  # would block forever if it were opened
    with pytest.raises(FileWriteError, match="does not exist"):
        fileio.check_writable(tmp_path / "missing" / "f.h5")
    assert fileio.check_writable(tmp_path / "fresh.h5") == str(tmp_path / "fresh.h5")
    assert not (tmp_path / "fresh.h5").exists()
    err = pytest.raises(FileWriteError, fileio.write_text, ro, "x").value
    assert "\n" not in str(err) and str(err).startswith(str(ro))


def test_writing_through_a_symlink_keeps_the_link(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("a")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    fileio.write_text(link, "b")
    assert link.is_symlink() and real.read_text() == "b"
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    with pytest.raises(FileWriteError):
        fileio.write_text(loop, "x")


def test_disk_full_is_one_line_and_keeps_the_old_file(full_disk):
    mnt = full_disk(free_bytes=8192)
    p = mnt / "table.csv"
    fileio.write_text(p, "small")
    with pytest.raises(FileWriteError) as ei:
        fileio.write_bytes(p, b"x" * (1 << 20))
    assert ei.value.disk_full and "the disk is full" in str(ei.value) and "\n" not in str(ei.value)
    assert p.read_text() == "small"
    assert sorted(os.listdir(mnt)) == [".filler", "table.csv"]


def test_the_lock_is_reentrant_in_a_thread_and_times_out_for_others(tmp_path):
    p = tmp_path / "f.h5"
    with fileio.file_lock(p):
        with fileio.file_lock(p):  # nested: no self-deadlock
            fileio.write_text(p, "x")
        holder = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(f"""
                import sys, time
                from densehmm_core import fileio
                msgs = []
                t = time.monotonic()
                try:
                    with fileio.file_lock({str(p)!r}, timeout=0.3, on_wait=msgs.append):
                        pass
                except fileio.FileLockTimeout as e:
                    print("timeout", round(time.monotonic() - t, 1), len(msgs), str(e))
                    sys.exit(0)
                print("got it")
            """)], cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), stdout=subprocess.PIPE, text=True)
        out = holder.communicate(timeout=30)[0]
    assert out.startswith("timeout") and " 1 " in out and "another process is writing it" in out, out
    assert sorted(os.listdir(tmp_path)) == ["f.h5"]  # the lock file is removed on release
    with pytest.raises(FileLockTimeout):
        import threading
        box = []

        def other_thread():
            try:
                with fileio.file_lock(p, timeout=0.2):
                    pass
            except FileLockTimeout as e:
                box.append(e)
        with fileio.file_lock(p):
            t = threading.Thread(target=other_thread)
            t.start()
            t.join()
        raise box[0]


WORKER = textwrap.dedent("""
    import sys
    from densehmm_core import fileio
    path, me, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(rounds):
        with fileio.file_lock(path, timeout=60):
            try:
                old = open(path).read()
            except FileNotFoundError:
                old = ""
            fileio.write_text(path, old + f"{me}:{i}\\n")
""")


def test_concurrent_read_modify_write_processes_lose_nothing(tmp_path):
    p = tmp_path / "log.txt"
    n, rounds = 4, 15
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(p), f"w{k}", str(rounds)], cwd=REPO,
                              env=dict(os.environ, PYTHONPATH=REPO)) for k in range(n)]
    assert [q.wait(timeout=60) for q in procs] == [0] * n
    lines = p.read_text().splitlines()
    assert sorted(lines) == sorted(f"w{k}:{i}" for k in range(n) for i in range(rounds))
    for k in range(n):  # each writer's own lines in its order
        mine = [x for x in lines if x.startswith(f"w{k}:")]
        assert mine == [f"w{k}:{i}" for i in range(rounds)]
    assert sorted(os.listdir(tmp_path)) == ["log.txt"]
    assert time.monotonic() - t0 < 30


def _tiny_model():
    import numpy as np

    from densehmm_core.standard import StandardHMM
    m = StandardHMM(2, n_symbols=3)
    m.startprob_ = np.array([0.5, 0.5])
    m.transmat_ = np.array([[0.9, 0.1], [0.2, 0.8]])
    m.emissionprob_ = np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    return m


def test_csv_export_uses_the_umask_and_refuses_to_overwrite_other_files(tmp_path):
    from densehmm_core.export import export_csv
    names = export_csv(_tiny_model(), tmp_path / "out")
    for n in names:
        assert stat.S_IMODE(os.stat(tmp_path / "out" / n).st_mode) == 0o666 & ~umask(), n
    assert sorted(os.listdir(tmp_path / "out")) == sorted(names)
    export_csv(_tiny_model(), tmp_path / "t.zip")
    assert stat.S_IMODE(os.stat(tmp_path / "t.zip").st_mode) == 0o666 & ~umask()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileWriteError, match="not a folder"):
        export_csv(_tiny_model(), tmp_path / "notes.txt")
    (tmp_path / "notes.zip").write_text("mine too")
    with pytest.raises(FileWriteError, match="not a zip file"):
        export_csv(_tiny_model(), tmp_path / "notes.zip")
    assert (tmp_path / "notes.txt").read_text() == "mine" and (tmp_path / "notes.zip").read_text() == "mine too"

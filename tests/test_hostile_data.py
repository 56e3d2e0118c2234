"""Hostile data paths (issue 13, items 6, 8, 11): FIFOs and devices, unreadable files and
folders, symbolic link loops, CR-only line endings, standard input.  Each gives one clear
DataFormatError (or reads correctly) and never hangs."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from densehmm_core.data import DataFormatError, load

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FASTA = ">s1\nACDEFG\n>s2\nKLMNAC\n"
TAGGED = "The_DT dog_NN barks_VBZ\nA_DT cat_NN sleeps_VBZ\n"


def load_unprivileged(path: str) -> str:
    """``load(path)`` as an ordinary user (as root, who reads everything: in a forked child that
    drops to ``nobody``); returns what happened, in one line."""
    def attempt() -> str:
        try:
            load(path)
        except DataFormatError as e:
            return f"DataFormatError: {e}"
        except Exception as e:  # noqa: BLE001 - reported to the test
            return f"OTHER {type(e).__name__}: {e}"
        return "loaded"
    if os.geteuid() != 0:
        return attempt()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, attempt().encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        out = fh.read().decode()
    os.waitpid(pid, 0)
    return out


def test_a_fifo_is_refused_at_once_and_never_blocks(tmp_path):
    fifo = tmp_path / "data.fasta"
    os.mkfifo(fifo)
    # if the reader ever opened the FIFO, this writer end releases it after 5 s (EOF)
    guard = threading.Timer(5.0, lambda: os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK)))
    guard.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(DataFormatError, match="not a regular file.*'-' to read standard input"):
            load(fifo)
    finally:
        guard.cancel()
    assert time.monotonic() - t0 < 2.0
    with pytest.raises(DataFormatError, match="not a regular file"):
        load("/dev/zero")  # a device that never ends


def test_standard_input_is_read_with_a_dash():
    code = ("from densehmm_core.data import load; c = load('-'); "
            "print(c.format, len(c), c.provenance['path'], c.provenance['size'])")
    r = subprocess.run([sys.executable, "-c", code], input=FASTA, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=REPO))
    assert r.stdout.split() == ["fasta", "2", "-", str(len(FASTA))], r.stderr


def test_unreadable_file_and_folder_are_data_format_errors_not_permission_errors(tmp_path):
    import tempfile
    base = tempfile.mkdtemp(prefix="densehmm-perm-")
    try:
        os.chmod(base, 0o755)
        secret = os.path.join(base, "secret.fasta")
        with open(secret, "w") as fh:
            fh.write(FASTA)
        os.chmod(secret, 0o000)
        locked = os.path.join(base, "locked")
        os.mkdir(locked)
        inner = os.path.join(locked, "x.fasta")
        with open(inner, "w") as fh:
            fh.write(FASTA)
        os.chmod(locked, 0o000)
        assert load_unprivileged(secret) == ("DataFormatError: secret.fasta: permission denied: the file (or a "
                                             "folder on its path) is not readable")
        assert load_unprivileged(inner).startswith("DataFormatError: x.fasta: permission denied")
    finally:
        os.chmod(os.path.join(base, "locked"), 0o755)
        import shutil
        shutil.rmtree(base)


def test_symbolic_link_loops_and_dangling_links_say_so(tmp_path):
    a, b = tmp_path / "a.fasta", tmp_path / "b.fasta"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(DataFormatError, match="a.fasta: cannot be opened: a symbolic link loop"):
        load(a)
    dangling = tmp_path / "d.fasta"
    dangling.symlink_to(tmp_path / "gone.fasta")
    with pytest.raises(FileNotFoundError, match="symbolic link to a missing file"):
        load(dangling)


@pytest.mark.parametrize("text,suffix", [(FASTA, ".fasta"), (TAGGED, ".txt")])
def test_cr_only_line_endings_read_like_lf(tmp_path, text, suffix):
    lf = tmp_path / ("lf" + suffix)
    lf.write_bytes(text.encode())
    cr = tmp_path / ("cr" + suffix)
    cr.write_bytes(text.replace("\n", "\r").encode())
    crlf = tmp_path / ("crlf" + suffix)
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    ref = load(lf)
    for p in (cr, crlf):
        c = load(p)
        assert c.format == ref.format and c.vocabulary == ref.vocabulary
        assert [s.tolist() for s in c.sequences] == [s.tolist() for s in ref.sequences]
    assert any("CR only" in w for w in load(cr).warnings)
    import gzip
    gz = tmp_path / ("cr" + suffix + ".gz")
    gz.write_bytes(gzip.compress(text.replace("\n", "\r").encode()))
    assert [s.tolist() for s in load(gz).sequences] == [s.tolist() for s in ref.sequences]

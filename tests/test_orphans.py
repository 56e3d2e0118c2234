"""Worker processes end with their parent (issue 27, item 5).

``kill -9`` (or SIGTERM) of a ``sweep --executor process --jobs 2`` or of a process that
holds a :class:`~densehmm_core.worker.WorkerPool` must leave no worker alive for more than
a few seconds, and nothing may keep the parent's standard output open (``| tee`` ends).
Real processes, real signals."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from densehmm_core.worker import WorkerPool
from densehmm_core.worker.lifeline import CHECK_S, ORPHAN_EXIT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

ROOT = Path(__file__).resolve().parents[1]
GONE_WITHIN_S = 5.0


def _children(pid: int) -> list:
    """Pids whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                text = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def _wait_gone(pids, limit: float = GONE_WITHIN_S) -> float:
    """Seconds until every pid is gone (fails past ``limit``)."""
    t0 = time.monotonic()
    while any(_alive(p) for p in pids):
        if time.monotonic() - t0 > limit:
            left = [p for p in pids if _alive(p)]
            for p in left:
                os.kill(p, signal.SIGKILL)
            pytest.fail(f"workers {left} still alive {limit} s after their parent died")
        time.sleep(0.05)
    return time.monotonic() - t0


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("DENSEHMM_MAX_MODEL_BYTES", None)
    return env


def _read_until(proc, marker: str, limit: float = 120.0) -> str:
    """Stdout of ``proc`` up to the line containing ``marker``."""
    seen = ""
    t0 = time.monotonic()
    while marker not in seen:
        if time.monotonic() - t0 > limit or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"no {marker!r} in the output: {seen!r} {proc.stderr.read() if proc.stderr else ''}")
        r, _, _ = select.select([proc.stdout], [], [], 0.5)
        if r:
            line = proc.stdout.readline()
            seen += line
    return seen


# ----------------------------------------------------------------- the worker pool
POOL_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from densehmm_core.worker import WorkerPool
    pool = WorkerPool(max_idle=2)
    main = pool.acquire()                       # started on the main thread
    box = []
    t = threading.Thread(target=lambda: box.append(pool.acquire()))   # and on a short-lived thread
    t.start(); t.join()
    print(main.process.pid, box[0].process.pid, flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_the_pools_workers_end_with_their_parent(sig):
    proc = subprocess.Popen([sys.executable, "-c", POOL_SCRIPT], stdout=subprocess.PIPE, text=True, env=_env(),
                            cwd=str(ROOT))
    try:
        line = proc.stdout.readline()
        pids = [int(x) for x in line.split()]
        assert len(pids) == 2 and set(pids) <= set(_children(proc.pid))
        # the thread that started the second worker has ended: the worker lives on with its parent
        time.sleep(4 * CHECK_S + 0.5)
        assert all(_alive(p) for p in pids)
        proc.send_signal(sig)
        proc.wait(10)
        took = _wait_gone(pids)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert took < GONE_WITHIN_S


WATCHDOG_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from densehmm_core.worker.lifeline import die_with_parent
    import densehmm_core.worker.lifeline as lifeline
    lifeline.set_parent_death_signal = lambda sig=None: False     # the watchdog alone
    die_with_parent(os.getppid())
    print(os.getpid(), flush=True)
    time.sleep(600)
""")


def test_the_watchdog_alone_ends_an_orphan_within_a_second(tmp_path):
    """Without the parent-death signal (other systems), the watchdog thread notices the new
    parent and exits with ORPHAN_EXIT."""
    # a middle process starts the orphan-to-be and is then killed
    middle = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", {WATCHDOG_SCRIPT!r}], stdout=sys.stdout)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True, env=_env(), cwd=str(ROOT))
    try:
        pid = int(middle.stdout.readline())
        assert _alive(pid)
        middle.kill()
        middle.wait(10)
        took = _wait_gone([pid], limit=2.0)
    finally:
        if middle.poll() is None:
            middle.kill()
    assert took < 4 * CHECK_S + 1.0


def test_orphan_exit_status_is_distinct():
    assert ORPHAN_EXIT not in (0, 1, 2, 130, 143)


def test_a_worker_started_from_a_finished_thread_still_trains():
    """The parent-death signal follows the thread that started a process: workers are
    started from a long-lived thread, so one asked for by a thread that has ended is fine."""
    from densehmm_core.standard import StandardHMM
    from densehmm_core.synthetic import demo_dataset
    train = demo_dataset(seed=1)[0]
    pool = WorkerPool(max_idle=1)
    try:
        box = []
        t = threading.Thread(target=lambda: box.append(pool.acquire()))
        t.start()
        t.join()
        time.sleep(4 * CHECK_S)
        w = box[0]
        assert w.alive
        m = StandardHMM(3, n_iter=3, seed=0)
        events = list(pool.iter_fit_on(w, m, train))
        assert events[-1].done and m.transmat_ is not None
    finally:
        pool.close()


# ----------------------------------------------------------- sweep --executor process
@pytest.fixture(scope="module")
def fasta(tmp_path_factory):
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("orphans") / "p.fa"
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    with open(path, "w") as fh:
        for i in range(400):
            fh.write(f">s{i}\n{''.join(rng.choice(letters, size=200))}\n")
    return path


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_sweep_process_workers_end_with_the_sweep_and_release_stdout(fasta, tmp_path, sig):
    cmd = [sys.executable, "-m", "densehmm_core", "sweep", str(fasta),
           "--grid", "n=30,31,32,33,34,35,36,37,38,39 l=2 model=standard", "--repeats", "3",
           "--out", str(tmp_path / "out"), "--jobs", "2", "--executor", "process"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(),
                            cwd=str(ROOT))
    try:
        _read_until(proc, "sweep:")
        t0 = time.monotonic()
        workers: list = []
        while len(workers) < 2 and time.monotonic() - t0 < 60:   # the two spawned workers
            workers = [p for p in _children(proc.pid) if b"spawn_main" in _cmdline(p)]
            time.sleep(0.1)
        assert len(workers) == 2, _children(proc.pid)
        time.sleep(1.0)          # the workers are training
        everyone = _children(proc.pid)
        proc.send_signal(sig)
        took = _wait_gone(everyone)
        # nothing holds the pipe: reading the sweep's stdout ends (`| tee` would end)
        t1 = time.monotonic()
        while True:
            r, _, _ = select.select([proc.stdout], [], [], GONE_WITHIN_S)
            assert r, "the sweep's stdout is still held open"
            if not proc.stdout.readline():
                break
        assert time.monotonic() - t1 < GONE_WITHIN_S
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
    assert took < GONE_WITHIN_S


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""

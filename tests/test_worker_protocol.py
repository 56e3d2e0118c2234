"""Worker protocol faults (issue 13, item 5): malformed messages in both directions, a silent
worker and a SIGSTOPped one.  Each ends that worker with a WorkerError naming the reason (or,
after a cancel, ends the fit as cancelled) within seconds; the model keeps the last parameters
received; the pool replaces the worker and closes promptly."""
from __future__ import annotations

import os
import signal
import struct
import time

import numpy as np
import pytest

from densehmm_core.events import START_PHASE, CancelToken
from densehmm_core.standard import StandardHMM
from densehmm_core.synthetic import demo_dataset
from densehmm_core.worker import (TrainingWorker, WorkerError, WorkerPool, WorkerUnreachable, decode_message,
                                  encode_message)


@pytest.fixture(scope="module")
def train():
    return demo_dataset(seed=3)[0]


def long_model():
    return StandardHMM(5, n_iter=10 ** 6, tol=-np.inf, seed=1)


# -------------------------------------------- fake workers (module level: spawn imports them)
def _child_unknown_reply(ctrl, data, nice):  # pragma: no cover - runs in a child process
    ctrl.recv_bytes()
    data.send_bytes(encode_message({"op": "dance", "with": "me"}))
    time.sleep(60)


def _child_garbage_reply(ctrl, data, nice):  # pragma: no cover
    ctrl.recv_bytes()
    data.send_bytes(b"\x00\x01 not a message")
    time.sleep(60)


def _child_bad_event(ctrl, data, nice):  # pragma: no cover
    ctrl.recv_bytes()
    data.send_bytes(encode_message({"op": "event", "event": {"step": 1, "bogus": True}}))
    time.sleep(60)


_CPU = {"name": "/device:CPU:0", "type": "CPU", "spec": "/CPU:0", "tensorflow": True, "cupy": False}


def _child_bad_tensorflow(ctrl, data, nice):  # pragma: no cover
    ctrl.recv_bytes()
    data.send_bytes(encode_message({"op": "tensorflow", "tf_version": 2.21, "devices": [_CPU]}))
    time.sleep(60)


def _child_bad_devices(ctrl, data, nice):  # pragma: no cover
    ctrl.recv_bytes()
    data.send_bytes(encode_message({"op": "tensorflow", "tf_version": "2.21.0", "devices": [{"name": 0}]}))
    time.sleep(60)


def _child_reports_tensorflow(ctrl, data, nice):  # pragma: no cover
    """Says it imported TensorFlow, then sends one event and fails the fit (a fit's order)."""
    ctrl.recv_bytes()
    data.send_bytes(encode_message({"op": "tensorflow", "tf_version": "9.8.7", "devices": [_CPU]}))
    data.send_bytes(encode_message({"op": "event", "event": {"step": 0, "phase": "cooc", "metrics": {}}}))
    data.send_bytes(encode_message({"op": "end", "outcome": "failed", "message": "stop here"}))
    time.sleep(60)


def _child_silent(ctrl, data, nice):  # pragma: no cover
    ctrl.recv_bytes()
    time.sleep(60)


def _child_slow_start(ctrl, data, nice):  # pragma: no cover
    time.sleep(3.0)   # a process still importing on a loaded machine: reads nothing, says nothing
    ctrl.recv_bytes()
    data.send_bytes(encode_message({"op": "event", "event": {"step": 0, "phase": "em", "metrics": {}}}))
    data.send_bytes(encode_message({"op": "end", "outcome": "failed", "message": "slow but alive"}))
    time.sleep(60)


def _child_alive_every_tenth(ctrl, data, nice):  # pragma: no cover
    while True:                                         # never reads its pipe; says "alive" ten times a second
        data.send_bytes(encode_message({"op": "alive"}))
        time.sleep(0.1)


def _child_alive_then_deaf(ctrl, data, nice):  # pragma: no cover
    data.send_bytes(encode_message({"op": "alive"}))   # it runs, and then never reads its pipe
    time.sleep(60)


@pytest.mark.parametrize("target,reason", [
    (_child_unknown_reply, "unknown reply 'dance'"),
    (_child_garbage_reply, "not a worker message"),
    (_child_bad_event, "bad event"),
    (_child_bad_tensorflow, "tensorflow reply without TensorFlow's version"),
    (_child_bad_devices, "tensorflow reply with a bad device list"),
])
def test_a_malformed_reply_ends_the_worker_with_a_named_protocol_error(train, target, reason):
    w = TrainingWorker(nice=0, _target=target)
    t0 = time.monotonic()
    try:
        with pytest.raises(WorkerError, match=f"protocol error: malformed reply.*{reason}"):
            list(w.iter_fit(long_model(), train))
        assert not w.process.is_alive()  # killed at once, not left behind
    finally:
        w.close()
    assert time.monotonic() - t0 < 20


def test_a_tensorflow_report_is_recorded_before_the_next_event(train):
    """The worker's "tensorflow" reply (sent when a fit first imports TensorFlow) is not an
    event: it sets ``tf_info``, which the caller sees by the time the next event arrives."""
    w = TrainingWorker(nice=0, _target=_child_reports_tensorflow)
    seen = []
    try:
        assert w.tf_info is None
        with pytest.raises(WorkerError, match="stop here"):
            for ev in w.iter_fit(long_model(), train):
                seen.append((ev.step, w.tf_info))
    finally:
        w.close()
    assert seen == [(0, {"tf_version": "9.8.7", "devices": [_CPU]})]


def test_a_silent_worker_is_noticed_and_killed(train):
    w = TrainingWorker(nice=0, silence_timeout=1.0, _target=_child_silent)
    t0 = time.monotonic()
    try:
        with pytest.raises(WorkerError, match="stopped answering: no message for"):
            list(w.iter_fit(long_model(), train))
        assert not w.process.is_alive()
    finally:
        w.close()
    assert time.monotonic() - t0 < 20


def test_a_worker_that_starts_slowly_is_not_killed_by_the_write_limit():
    """A worker process that takes longer than send_timeout to start (imports on a loaded machine)
    gets the silence limit for its first message, not the write limit: its fit runs."""
    rng = np.random.default_rng(0)
    train = [rng.integers(0, 5, size=400) for _ in range(600)]   # a fit message well over a pipe's 64 KB
    w = TrainingWorker(nice=0, silence_timeout=20.0, send_timeout=1.0, _target=_child_slow_start)
    try:
        with pytest.raises(WorkerError, match="slow but alive"):
            list(w.iter_fit(long_model(), train))
    finally:
        w.close()


def test_a_started_worker_that_does_not_read_is_killed_after_the_write_limit():
    rng = np.random.default_rng(0)
    train = [rng.integers(0, 5, size=400) for _ in range(600)]
    w = TrainingWorker(nice=0, silence_timeout=30.0, send_timeout=1.0, _target=_child_alive_then_deaf)
    try:
        deadline = time.monotonic() + 20
        while not w._heard.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        t0 = time.monotonic()
        with pytest.raises(WorkerError, match="did not read its messages for 1 s"):
            list(w.iter_fit(long_model(), train))
        assert time.monotonic() - t0 < 1.0 + 5.0
    finally:
        w.close()


@pytest.mark.parametrize("bad", [b"garbage", encode_message({"op": "dance"}), encode_message({"op": "cancel"}),
                                 encode_message([1, 2]), encode_message({"op": "fit", "job": 9, "kind": "x"})],
                         ids=["garbage", "unknown-op", "cancel-without-job", "not-an-object", "bad-fit"])
def test_a_malformed_control_message_ends_the_worker_and_close_returns(train, bad):
    """Once, a bad control message killed the worker's reader thread: cancels were never read,
    both pipes filled up after ~2,400 events and pool.close() never returned."""
    pool = WorkerPool(max_idle=1)
    model = long_model()
    seen = []
    try:
        w = pool.acquire()
        with pytest.raises(WorkerError, match="protocol error: the training process refused a message: "
                                              "bad control message"):
            for ev in pool.iter_fit_on(w, model, train, params_interval=0.0):
                seen.append(ev)
                if ev.step == 3:
                    with w._send_lock:
                        w._ctrl.send_bytes(bad)
        assert seen and not w.process.is_alive()
        # the model holds the last parameters the worker sent
        np.testing.assert_array_equal(model.transmat_, seen[-1].params["transmat"])
        np.testing.assert_array_equal(model.emissionprob_, seen[-1].params["emissionprob"])
        # a new worker takes its place
        again = StandardHMM(3, n_iter=2, tol=-np.inf, seed=0)
        assert len([e for e in pool.iter_fit(again, train) if e.phase != START_PHASE]) == 3
    finally:
        t0 = time.monotonic()
        pool.close()
        assert time.monotonic() - t0 < 5


def test_a_stopped_worker_is_killed_after_cancel_and_the_model_keeps_what_it_received(train):
    pool = WorkerPool(max_idle=1, cancel_timeout=1.0)
    model = long_model()
    token = CancelToken()
    events = []
    try:
        w = pool.acquire()
        sent = []
        real_send = w._send
        w._send = lambda msg, timeout=None: (sent.append(msg["op"]), real_send(msg, timeout))[1]
        t0 = None
        for ev in pool.iter_fit_on(w, model, train, cancel=token, params_interval=0.0):
            events.append(ev)
            if ev.step == 3 and t0 is None:
                os.kill(w.process.pid, signal.SIGSTOP)
                time.sleep(0.3)  # the events already in the pipe still arrive
                token.cancel()
                t0 = time.monotonic()
        assert time.monotonic() - t0 < 4.0
        assert events[-1].done and events[-1].reason == "cancelled" and model.stop_reason_ == "cancelled"
        assert sent.count("cancel") == 1  # sent once, never repeated into a pipe nobody reads
        assert not w.process.is_alive()
        last = [e for e in events[:-1] if e.params][-1]
        np.testing.assert_array_equal(model.transmat_, last.params["transmat"])
        np.testing.assert_array_equal(model.startprob_, last.params["startprob"])
        assert pool.n_processes == 0
        again = StandardHMM(3, n_iter=2, tol=-np.inf, seed=0)
        assert len([e for e in pool.iter_fit(again, train) if e.phase != START_PHASE]) == 3  # replaced
    finally:
        t0 = time.monotonic()
        pool.close()
        assert time.monotonic() - t0 < 5


def test_a_stopped_worker_without_cancel_ends_with_a_worker_error(train):
    pool = WorkerPool(max_idle=1, silence_timeout=1.5)
    model = long_model()
    t0 = time.monotonic()
    try:
        with pytest.raises(WorkerError, match=r"is stopped \(SIGSTOP\)"):
            for ev in pool.iter_fit(model, train):
                if ev.step == 2:
                    os.kill(pool._busy[0].process.pid, signal.SIGSTOP)
        assert model.transmat_ is not None  # the last parameters received
        np.testing.assert_allclose(model.transmat_.sum(axis=1), 1.0)
    finally:
        pool.close()
    assert time.monotonic() - t0 < 20


def test_decoding_refuses_malformed_and_oversized_messages_quickly():
    good = encode_message({"op": "event", "a": np.arange(6.0).reshape(2, 3)})
    rng = np.random.default_rng(0)
    for _ in range(300):
        b = bytearray(good)
        for _ in range(rng.integers(1, 4)):
            b[rng.integers(0, len(b))] = rng.integers(0, 256)
        try:
            decode_message(bytes(b))
        except ValueError:
            pass
    # an array header declaring 10^12 float64 values in a 200-byte message: refused, not allocated
    i = good.index(b"(2, 3)")
    bomb = good[:i] + b"(1000000, 1000000)" + good[i + 6:]
    hlen = struct.unpack("<Q", good[4:12])[0]
    assert decode_message(good)["a"].shape == (2, 3) and hlen > 0
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="declares"):
        decode_message(bomb)
    assert time.monotonic() - t0 < 1.0
    for bad in (b"", b"DHW1", good[:20], good[:4] + struct.pack("<QI", 10 ** 12, 0) + good[16:],
                b"DHW1" + struct.pack("<QI", 20, 0) + b'{"x": {"__nd__": 5}}'):
        with pytest.raises(ValueError):
            decode_message(bad)


def test_messages_round_trip_from_parts_and_from_a_view_into_a_larger_buffer():
    """encode_parts is encode_message in pieces (the arrays' own memory); decoding reads from any
    buffer, e.g. a view past a one-byte tag, and gives arrays that own their data (writable, untouched
    when the buffer changes); a 0-d array keeps its shape (it came back 1-d before)."""
    from densehmm_core.worker.wire import encode_parts
    rng = np.random.default_rng(3)
    msg = {"a": rng.normal(size=(4, 5)), "f": np.asfortranarray(rng.normal(size=(3, 2))),
           "i": np.arange(7, dtype=np.int32)[::2], "s": np.array(2.5), "e": np.zeros((0, 3)),
           "words": ["ç", "x"], "n": 3}
    whole = encode_message(msg)
    assert b"".join(bytes(p) for p in encode_parts(msg)) == whole
    buf = bytearray(b"R" + whole)
    out = decode_message(memoryview(buf)[1:])
    buf[1:] = bytes(len(buf) - 1)            # the buffer changes: the decoded arrays do not
    for key in ("a", "f", "i", "s", "e"):
        assert out[key].shape == np.asarray(msg[key]).shape and out[key].dtype == np.asarray(msg[key]).dtype
        assert np.array_equal(out[key], msg[key]) and out[key].flags.writeable
    assert out["words"] == ["ç", "x"] and out["n"] == 3
    out["a"][0, 0] = 1.0


# ------------------------------------------------ closing never races a pipe's user
class _HeldPipe:
    """Stands in for one end of a worker's pipe: a call on it stays under way until ``go`` is set,
    and a close during that call is recorded (the descriptor's number would be free for a new pipe
    while the call still used it)."""

    def __init__(self):
        import threading
        self.inside, self.go = threading.Event(), threading.Event()
        self.busy = self.closed = self.closed_while_busy = False

    def _hold(self):
        self.busy = True
        self.inside.set()
        self.go.wait(30)
        self.busy = False

    def send_bytes(self, payload):
        self._hold()

    def recv_bytes(self):
        self._hold()
        raise EOFError

    def close(self):
        self.closed_while_busy |= self.busy
        self.closed = True


def test_close_leaves_the_control_pipe_to_a_write_under_way():
    """Once, a worker closed while a large fit message was still being written had its control pipe
    closed under the write; the write went on with the freed descriptor number, which the next
    worker's pipe had taken, and that worker read the rest of the old message as a 32 MB header and
    waited forever.  close() now closes the pipe only when no write is under way; the write closes
    it when it ends."""
    w = TrainingWorker(nice=0, _target=_child_alive_then_deaf)
    real, held = w._ctrl, _HeldPipe()
    try:
        w._ctrl = held
        w._send_later({"op": "cancel", "job": 1})        # a write under way (it holds the send lock)
        assert held.inside.wait(10)
        t0 = time.monotonic()
        w.close(timeout=0.1)
        assert time.monotonic() - t0 < 0.1 + 0.5 + 0.5 + 2 + 1.5   # (its documented bound, and some slack;
        #                                                             before, a worker not heard from yet: 60 s)
        assert not w.process.is_alive() and not held.closed          # not closed under the write
        held.go.set()
        deadline = time.monotonic() + 10
        while not held.closed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert held.closed and not held.closed_while_busy            # closed by the write, after it
    finally:
        held.go.set()
        real.close()


def test_close_leaves_the_reply_pipe_to_a_read_under_way():
    """The same for the reader thread's pipe: closed by close() only once the reader has ended, else
    by the reader when it ends (here its read is held past the process's end)."""
    w = TrainingWorker(nice=0, _target=_child_alive_every_tenth)
    real, held = w._data, _HeldPipe()
    try:
        w._data = held                  # the reader's next call, after the next "alive", is held
        assert held.inside.wait(30)
        w.close(timeout=0.1)
        assert w._reader.is_alive() and not held.closed               # not closed under the read
        held.go.set()
        w._reader.join(10)
        assert not w._reader.is_alive() and held.closed and not held.closed_while_busy
    finally:
        held.go.set()
        real.close()


# --------------------------------------- a worker that ended while idle (killed, crashed)
def _child_refuses_at_once(ctrl, data, nice):  # pragma: no cover - runs in a child process
    """Says a message was bad and ends, before it reads anything (its pipe's end closes)."""
    data.send_bytes(encode_message({"op": "protocol_error", "message": "bad control message: test"}))
    data.close()
    ctrl.close()


def _wait_dead(w: TrainingWorker, timeout: float = 20.0) -> None:
    t0 = time.monotonic()
    while w.process.is_alive():
        assert time.monotonic() - t0 < timeout
        time.sleep(0.02)


def test_a_worker_killed_while_idle_names_the_signal_and_the_pool_trains_on_a_new_one(train):
    """Once (1 run of 11 in the app) a fit failed with 'the training process cannot be reached
    (BrokenPipeError)': its process had ended before the fit's message was written.  The fit never
    started there, so the pool sends it to a new process; the result is the in-process fit's."""
    pool = WorkerPool(max_idle=1)
    model = StandardHMM(4, n_iter=3, tol=-np.inf, seed=2)
    replaced = []
    try:
        w = pool.acquire()
        while not w._heard.is_set():        # running: its first "alive" came
            time.sleep(0.02)
        os.kill(w.process.pid, signal.SIGKILL)
        _wait_dead(w)
        events = list(pool.iter_fit_on(w, model, train, on_worker=replaced.append))
        assert len(replaced) == 1 and replaced[0] is not w and not w.process.is_alive()
        assert events[-1].done and model.stop_reason_ == "max_steps"
        oracle = StandardHMM(4, n_iter=3, tol=-np.inf, seed=2)
        list(oracle.iter_fit(train))
        np.testing.assert_allclose(model.transmat_, oracle.transmat_, rtol=1e-12)
        np.testing.assert_allclose(model.emissionprob_, oracle.emissionprob_, rtol=1e-12)
        assert pool.n_processes == 1          # the new worker is kept, the dead one is not
        # one worker alone says how its process ended
        lone = TrainingWorker(nice=0)
        try:
            while not lone._heard.is_set():
                time.sleep(0.02)
            os.kill(lone.process.pid, signal.SIGKILL)
            _wait_dead(lone)
            with pytest.raises(WorkerUnreachable, match=r"cannot be reached \(BrokenPipeError.*it had ended: "
                                                        r"killed by signal SIGKILL") as info:
                list(lone.iter_fit(StandardHMM(4, n_iter=3, seed=2), train))
            assert info.value.retry and lone.broken
        finally:
            lone.close()
    finally:
        pool.close()


def test_a_worker_that_refused_a_message_is_not_tried_again(train):
    pool = WorkerPool(max_idle=1, _target=_child_refuses_at_once)
    replaced = []
    try:
        w = pool.acquire()
        _wait_dead(w)
        with pytest.raises(WorkerError, match="it had ended: protocol error: the training process refused a "
                                              "message: bad control message: test"):
            list(pool.iter_fit_on(w, StandardHMM(4, n_iter=3, seed=2), train, on_worker=replaced.append))
        assert replaced == [] and pool.n_processes == 0
    finally:
        pool.close()


# ------------------------------------------------- a main script that workers run again
_GUARDED = "import sys\n\ndef main():\n    print(1)\n\nif __name__ == '__main__':\n    main()\n"
_ONLY_DEFS = "import os\nfrom sys import argv\n\ndef f():\n    return os.getpid()\n\nclass C:\n    pass\n"
_UNGUARDED = "import time\nX = 3\ntime.sleep(0)\n"


@pytest.mark.parametrize("text,reruns", [(_GUARDED, False), (_ONLY_DEFS, False), (_UNGUARDED, True),
                                         ("x = [len(s) for s in 'ab']\n", True), ("def broken(:\n", False)],
                         ids=["guarded", "only-definitions", "top-level-call", "call-in-assignment", "syntax-error"])
def test_main_script_reruns_finds_top_level_work_without_a_guard(tmp_path, text, reruns):
    import types

    from densehmm_core.worker.lifeline import main_script_reruns
    path = tmp_path / "script.py"
    path.write_text(text)
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    assert main_script_reruns(module) == (str(path) if reruns else None)
    assert main_script_reruns(types.ModuleType("__main__")) is None   # python -c, a notebook: no file


def test_an_unguarded_script_is_warned_and_its_worker_error_says_why(tmp_path):
    """A script that starts a worker at top level, without 'if __name__ == "__main__":'.  Each worker
    imports the main script first: there it tries to start a worker of its own during its start-up,
    which multiprocessing refuses, and ends.  The script gets a RuntimeWarning when it starts the
    worker, and an error that names the script and the guard (not a bare BrokenPipeError or exit
    code); the pool does not try a second process."""
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {repo!r})\n"
        "from densehmm_core.standard import StandardHMM\n"
        "from densehmm_core.synthetic import demo_dataset\n"
        "from densehmm_core.worker import WorkerError, WorkerPool\n"
        "pool = WorkerPool(max_idle=1)\n"
        "replaced = []\n"
        "w = pool.acquire()\n"
        "try:\n"
        "    list(pool.iter_fit_on(w, StandardHMM(3, n_iter=2, seed=0), demo_dataset(seed=0)[0],\n"
        "                          on_worker=replaced.append))\n"
        "except WorkerError as exc:\n"
        "    print('ERROR', exc)\n"
        "print('REPLACED', len(replaced))\n"
        "pool.close()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONWARNINGS="default"))
    assert f"{script}:" in done.stderr and "RuntimeWarning" in done.stderr and "__name__" in done.stderr
    error = [line for line in done.stdout.splitlines() if line.startswith("ERROR")]
    assert len(error) == 1, done.stdout + done.stderr
    assert ("cannot be reached" in error[0] or "ended unexpectedly" in error[0]) and "exit code 1" in error[0]
    assert f"it runs {script} again first" in error[0] and "if __name__ ==" in error[0]
    assert "REPLACED 0" in done.stdout

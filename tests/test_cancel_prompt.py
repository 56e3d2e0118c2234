"""A cancel takes effect within 0.5 s (issue 24.3, "silent start"): inside the co-occurrence fit's
Adam phase (its first chunk included: the graph's trace and first call), and in a worker process
while it starts or imports TensorFlow (the app's default executor); running a chunk as short calls
changes no number of a fit that is not cancelled."""
import threading
import time

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from densehmm_core import dense_cooc  # noqa: E402
from densehmm_core.dense import DenseHMM  # noqa: E402
from densehmm_core.events import START_PHASE, CancelToken  # noqa: E402
from densehmm_core.worker import WorkerPool  # noqa: E402

BOUND = 0.5
#: a cancel that lands in the graph's first trace in a process waits for it (TensorFlow cannot stop a
#: trace): 0.17 s on the Intel development hosts, 0.36 s on a quiet 2-core AMD EPYC host and 0.52 s
#: there under the whole suite's load (docs/PERFORMANCE.md, "Cancel")
TRACE_BOUND = 1.0


@pytest.fixture(scope="module")
def words():
    """A word-scale corpus: 4,000 sentences of 25 tokens drawn from a Zipf law over 3,000 symbols
    (one Adam step of a 40-state model takes ~20 ms on 2 cores, a chunk of 250 steps ~5 s)."""
    rng = np.random.default_rng(0)
    m = 3000
    p = 1.0 / np.arange(1, m + 1)
    p /= p.sum()
    return [rng.choice(m, size=25, p=p) for _ in range(4000)]


def _cancel_after_step_0(seqs, model, delay):
    """Fit ``model``; cancel from another thread ``delay`` s after the event of step 0 (the initial
    model: the first chunk comes next).  Returns (seconds from the cancel to the final event, events)."""
    token, at, events = CancelToken(), [], []

    def cancel():
        at.append(time.perf_counter())
        token.cancel()

    for ev in model.iter_fit(seqs, cancel=token):
        events.append(ev)
        if ev.phase == "cooc" and ev.step == 0 and not ev.done and not at:
            threading.Timer(delay, cancel).start()
    end = time.perf_counter()
    assert at, "the fit ended before the cancel"
    return end - at[0], events


@pytest.mark.parametrize("delay", [0.0, 0.15, 0.4, 1.5])
def test_a_cancel_inside_the_first_chunk_ends_the_fit_within_half_a_second(words, delay):
    """0 s: during the graph's trace (bounded by the trace: ``TRACE_BOUND``); later: inside the first
    chunk of 250 steps (~5 s long).  The fit ends with a "cancelled" event holding the parameters
    reached, before step 250."""
    model = DenseHMM(40, 16, fit_method="cooc", seed=0, init_method="random")
    took, events = _cancel_after_step_0(words, model, delay)
    bound = TRACE_BOUND if delay == 0.0 else BOUND
    assert took < bound, f"a cancel {delay} s into the first chunk took {took:.3f} s"
    last = events[-1]
    assert last.done and last.reason == "cancelled" and model.stop_reason_ == "cancelled"
    steps = [e for e in events if e.phase != START_PHASE]
    assert [e.step for e in steps[:-1]] == [0]          # no chunk ended: the cancel came inside the first
    assert last.step < 250
    if delay >= 0.4:
        assert last.step > 0                            # steps were done, and are kept
    assert last.params is not None and np.all(np.isfinite(model.emissionprob_))
    np.testing.assert_array_equal(model.emissionprob_, last.params["emissionprob"])


def test_short_calls_give_the_numbers_of_whole_chunks(words, monkeypatch):
    """The same seeded fit with one Adam step per call and with one call per chunk (the schedule
    before calls were split): the same parameters, losses and stop reason, bit for bit (the Adam
    state and the learning rate's step index carry over; events and convergence checks stay at the
    chunks' ends)."""
    seqs = words[:600]
    sizes = []
    took = dense_cooc.Pace.took
    monkeypatch.setattr(dense_cooc.Pace, "took", lambda self, k, s: (sizes.append(k), took(self, k, s)))

    def fit(seconds):
        monkeypatch.setattr(dense_cooc, "CALL_SECONDS", seconds)
        sizes.clear()
        model = DenseHMM(6, 4, fit_method="cooc", seed=3, cooc_steps=400, finish_steps=40, chunk=150,
                         restarts=2, tol=1e-6)
        model.fit(seqs)
        return model, list(sizes)

    whole, whole_sizes = fit(0.0)
    short, short_sizes = fit(1e-9)
    assert set(short_sizes) == {1} and len(short_sizes) == sum(whole_sizes)
    assert max(whole_sizes) == 150
    for k in ("startprob_", "transmat_", "emissionprob_", "restart_losses_"):
        np.testing.assert_array_equal(np.asarray(getattr(short, k)), np.asarray(getattr(whole, k)))
    for k in ("U", "Z", "W", "V", "z_start"):
        np.testing.assert_array_equal(short._embeddings[k], whole._embeddings[k])
    assert [(r["step"], r["loss"]) for r in short.history_] == [(r["step"], r["loss"]) for r in whole.history_]
    assert short.stop_reason_ == whole.stop_reason_


# ------------------------------------------------------------- in a worker process
def _small():
    from densehmm_core.synthetic import demo_dataset
    return demo_dataset(seed=3)[0]


def _fit_in_new_worker(pool, model, train, when):
    """Fit ``model`` on a new worker of ``pool``; ``when(worker)`` (polled every 10 ms from another
    thread) says when to cancel.  Returns (seconds from the cancel to the end, events, worker, what
    the worker had done at the cancel)."""
    w = pool.acquire(True)
    token, at, seen = CancelToken(), [], {}

    def watch():
        while not when(w):
            time.sleep(0.01)
        seen.update(heard=w._heard.is_set(), tensorflow=w.tf_info is not None)
        at.append(time.perf_counter())
        token.cancel()

    threading.Thread(target=watch, daemon=True).start()
    events = list(pool.iter_fit_on(w, model, train, cancel=token))
    end = time.perf_counter()
    return end - at[0], events, w, seen


def test_a_cancel_while_the_worker_imports_tensorflow_ends_the_job_within_half_a_second():
    """A fresh worker process: the cancel comes 0.3 s after the process first answered (it is then
    importing TensorFlow for the fit, seconds long); the fit ends "cancelled" at once, the model as
    it was.  The process finishes the import meanwhile and serves the next fit, whose numbers are
    those of the same fit in this process."""
    train = _small()
    pool = WorkerPool(max_idle=1)
    try:
        heard_at = []

        def importing(w):
            if w._heard.is_set() and not heard_at:
                heard_at.append(time.monotonic())
            return bool(heard_at) and time.monotonic() - heard_at[0] >= 0.3

        model = DenseHMM(4, 3, fit_method="cooc", seed=0)
        took, events, w, seen = _fit_in_new_worker(pool, model, train, importing)
        assert seen == {"heard": True, "tensorflow": False}
        assert took < BOUND, f"a cancel during the TensorFlow import took {took:.3f} s"
        assert [(e.done, e.reason) for e in events] == [(True, "cancelled")]
        assert model.stop_reason_ == "cancelled" and model.transmat_ is None
        assert w.busy                      # still ending the cancelled fit (importing TensorFlow)
        again = DenseHMM(4, 3, fit_method="cooc", seed=0)
        list(pool.iter_fit(again, train))
        assert not w.busy and w.tf_info is not None and pool.n_processes == 1   # the same process
        here = DenseHMM(4, 3, fit_method="cooc", seed=0).fit(train)
        np.testing.assert_array_equal(again.transmat_, here.transmat_)
        np.testing.assert_array_equal(again.emissionprob_, here.emissionprob_)
        assert again.stop_reason_ == here.stop_reason_
    finally:
        pool.close()


def test_a_cancel_while_the_worker_process_starts_ends_the_job_within_half_a_second(words):
    """The cancel comes before the new process has answered at all (the fit's message, 100,000
    tokens, is still waiting to be read)."""
    pool = WorkerPool(max_idle=1)
    try:
        model = DenseHMM(40, 16, fit_method="cooc", seed=0)
        took, events, w, seen = _fit_in_new_worker(pool, model, words, lambda w: True)
        assert seen["heard"] is False
        assert took < BOUND, f"a cancel while the process started took {took:.3f} s"
        assert [(e.done, e.reason) for e in events] == [(True, "cancelled")] and model.transmat_ is None
        # the process still takes the fit and its cancel, skips the fit, and is free again
        deadline = time.monotonic() + 60
        while w.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not w.busy and w.alive
    finally:
        pool.close()


def test_the_job_manager_reports_a_job_cancelled_during_the_import_as_cancelled(qtbot):
    """The app's path: a DenseHMM co-occurrence job in a fresh worker process, cancelled while
    the worker imports TensorFlow, is CANCELLED (without a model) within 0.5 s."""
    pytest.importorskip("pytestqt")
    from app.jobs import Job, JobManager, JobState
    from densehmm_core.worker import close_shared_pool, shared_pool
    close_shared_pool()
    manager = JobManager(executor="process")
    try:
        job = manager.submit(Job("cooc", DenseHMM(4, 3, fit_method="cooc", seed=0), _small()))
        qtbot.waitUntil(lambda: (manager._runners[job.id].worker is not None
                                 and manager._runners[job.id].worker._heard.is_set()), timeout=60000)
        time.sleep(0.3)
        assert manager._runners[job.id].worker.tf_info is None and job.state == JobState.RUNNING
        t0 = time.perf_counter()
        manager.cancel(job)
        qtbot.waitUntil(lambda: job.state.is_final, timeout=5000)
        took = time.perf_counter() - t0
        assert took < BOUND, f"the job ended {took:.3f} s after the cancel"
        assert job.state == JobState.CANCELLED and not job.has_model
    finally:
        manager.cancel_all()
        manager.wait(20)
        close_shared_pool()
        shared_pool()

"""Training in worker processes (densehmm_core.worker): same results as in-process, cancel,
divergence, failures, a dying process, the pipe's format (no pickles) and the pool."""
import os
import time

import numpy as np
import pytest

from densehmm_core.events import START_PHASE, CancelToken, TrainingDiverged
from densehmm_core.standard import StandardHMM
from densehmm_core.synthetic import demo_dataset
from densehmm_core.worker import (WorkerError, WorkerPool, decode_message, encode_message, supports)

def steps_only(events):
    """The stream's steps: its events without the start's progress (phase "start")."""
    return [e for e in events if e.phase != START_PHASE]


@pytest.fixture(scope="module")
def demo():
    return demo_dataset(seed=3)


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool(max_idle=1)
    yield p
    p.close()


def without_elapsed(history):
    return [{k: v for k, v in r.items() if k != "elapsed"} for r in history]


# ---------------------------------------------------------------- wire format
def test_messages_round_trip_exactly_and_never_pickle():
    rng = np.random.default_rng(0)
    msg = {"op": "event", "a": rng.normal(size=(3, 4)), "i": np.arange(5, dtype=np.int32),
           "empty": np.zeros((0, 2)), "nested": {"x": [1, 2.5, None, "s", True], "f": np.float32(1.5)},
           "nan": float("nan"), "inf": -float("inf"), "t": (1, 2)}
    back = decode_message(encode_message(msg))
    np.testing.assert_array_equal(back["a"], msg["a"])
    assert back["a"].dtype == np.float64 and back["i"].dtype == np.int32 and back["empty"].shape == (0, 2)
    assert back["nested"] == {"x": [1, 2.5, None, "s", True], "f": 1.5}
    assert np.isnan(back["nan"]) and back["inf"] == -np.inf and back["t"] == [1, 2]
    data = encode_message(msg)
    assert data[:4] == b"DHW1"
    for bad in ({"o": np.array([object()], dtype=object)}, {1: 2}, {"x": object()}, {"__nd__": 0}):
        with pytest.raises(TypeError):
            encode_message(bad)
    with pytest.raises(ValueError):
        decode_message(b"\x80\x04garbage")


def _one_by_one(data, n_symbols):
    """The oracle: every sequence checked on its own (as_sequences), then joined."""
    from densehmm_core.sequences import as_sequences
    seqs = as_sequences(data, n_symbols=n_symbols)
    return np.concatenate(seqs).astype(np.int32), np.array([len(x) for x in seqs], dtype=np.int64)


@pytest.mark.parametrize("layout", ["int32 arrays", "int64 arrays", "uint8 arrays", "lists", "corpus",
                                    "2-d column arrays", "mixed"])
def test_plain_sequences_are_what_checking_one_by_one_gives(layout):
    """What crosses to a worker: the same tokens and lengths whether the sequences are joined and checked
    at once (1-D integer arrays) or one by one (anything else)."""
    from densehmm_core.data import Corpus
    from densehmm_core.worker.wire import as_plain_sequences
    rng = np.random.default_rng(11)
    raw = [rng.integers(0, 7, size=int(rng.integers(1, 30))) for _ in range(200)]
    data = {"int32 arrays": [x.astype(np.int32) for x in raw], "int64 arrays": raw,
            "uint8 arrays": [x.astype(np.uint8) for x in raw], "lists": [x.tolist() for x in raw],
            "corpus": Corpus.from_sequences([x.astype(np.int32) for x in raw], vocabulary=list("abcdefg")),
            "2-d column arrays": [x[:, None] for x in raw],
            "mixed": [x if i % 2 else x[:, None] for i, x in enumerate(raw)]}[layout]
    plain = as_plain_sequences(data, 7)
    tokens, lengths = _one_by_one(data, 7)
    assert plain["tokens"].dtype == np.int32 and plain["lengths"].dtype == np.int64
    np.testing.assert_array_equal(plain["tokens"], tokens)
    np.testing.assert_array_equal(plain["lengths"], lengths)
    assert as_plain_sequences(None, 7) is None


@pytest.mark.parametrize("bad, phrase", [
    ([np.array([0, 1]), np.array([2, 7]), np.array([1])], "sequence 1 holds symbol 7, outside 0..6"),
    ([np.array([0, 1]), np.array([-1, 2])], "sequence 1 holds symbol -1"),
    ([np.array([0, 1]), np.array([], dtype=np.int64)], "sequence 1 is empty"),
    ([np.array([0, 1]), np.array([0.5, 1.0])], "sequence 1 holds non-integer symbols"),
    ([], "no sequences given"),
])
def test_plain_sequences_name_the_sequence_at_fault(bad, phrase):
    """Joined and checked at once, a problem is still reported as the one-by-one check words it."""
    from densehmm_core.worker.wire import as_plain_sequences
    with pytest.raises(ValueError, match=phrase):
        as_plain_sequences(bad, 7)


def test_only_the_core_models_are_supported():
    class Custom(StandardHMM):
        pass
    assert supports(StandardHMM(3)) and not supports(Custom(3)) and not supports(object())


# ------------------------------------------------------------------ training
def test_standard_fit_in_a_worker_equals_the_in_process_fit(demo, pool):
    train, test, _ = demo
    here = StandardHMM(4, n_iter=12, tol=-np.inf, seed=2)
    here_events = []
    here.fit(train, eval_data=test, callback=here_events.append)
    there = StandardHMM(4, n_iter=12, tol=-np.inf, seed=2)
    events = steps_only(pool.iter_fit(there, train, eval_data=test))
    here_events = steps_only(here_events)
    for k in ("startprob_", "transmat_", "emissionprob_"):
        np.testing.assert_array_equal(getattr(there, k), getattr(here, k))
    assert without_elapsed(there.history_) == without_elapsed(here.history_)
    assert there.stop_reason_ == here.stop_reason_ == "max_steps"
    assert [e.step for e in events] == [e.step for e in here_events]
    assert [e.train_ll for e in events] == [e.train_ll for e in here_events]
    assert events[-1].done and events[-1].params is not None and events[0].params is not None
    np.testing.assert_array_equal(events[-1].params["transmat"], here.transmat_)


def test_parameter_snapshots_are_thinned_but_first_and_last_kept(demo, pool):
    train, _, _ = demo
    model = StandardHMM(3, n_iter=30, tol=-np.inf, seed=0)
    events = steps_only(pool.iter_fit(model, train, params_interval=3600.0))
    with_params = [e.step for e in events if e.params]
    assert with_params == [events[0].step, events[-1].step]
    assert len(events) == 31 and len(model.history_) == 31


def test_cancel_keeps_the_model_reached_so_far(demo, pool):
    train, _, _ = demo
    model = StandardHMM(6, n_iter=10 ** 6, tol=-np.inf, seed=1)
    token = CancelToken()
    steps = []
    for ev in pool.iter_fit(model, train, cancel=token):
        steps.append(ev.step)
        if ev.step == 3:
            token.cancel()
    assert 3 <= steps[-1] < 10 ** 6
    assert model.stop_reason_ == "cancelled"
    np.testing.assert_allclose(model.transmat_.sum(axis=1), 1.0, atol=1e-12)
    # the worker is reusable afterwards
    again = StandardHMM(3, n_iter=2, tol=-np.inf, seed=0)
    assert len(steps_only(pool.iter_fit(again, train))) == 3


def test_a_cancel_sent_before_the_fit_starts_is_not_lost(demo):
    """A cancel can reach the worker before its fit begins (the worker is still busy with earlier
    work, here importing TensorFlow); the fit must then stop at once, not run to the end."""
    pytest.importorskip("tensorflow")
    train, _, _ = demo
    p = WorkerPool(max_idle=1)
    try:
        w = p.acquire()
        w._send({"op": "warm"})   # busy for seconds; its answer is simply skipped by the fit below
        token = CancelToken()
        token.cancel()
        model = StandardHMM(6, n_iter=10 ** 6, tol=-np.inf, seed=1)
        events = list(p.iter_fit_on(w, model, train, cancel=token))
        assert model.stop_reason_ == "cancelled" and events[-1].reason == "cancelled"
        assert len(events) <= 3
        # a cancel of an earlier fit never stops the next one
        model = StandardHMM(3, n_iter=4, tol=-np.inf, seed=0)
        assert len(steps_only(p.iter_fit(model, train))) == 5 and model.stop_reason_ == "max_steps"
    finally:
        p.close()


def test_stopping_iteration_early_ends_the_fit_and_keeps_the_worker(demo):
    train, _, _ = demo
    p = WorkerPool(max_idle=1)
    try:
        model = StandardHMM(6, n_iter=10 ** 6, tol=-np.inf, seed=1)
        gen = p.iter_fit(model, train)
        for ev in gen:
            if ev.step == 2:
                break
        gen.close()
        assert p.n_processes == 1
        w = p.acquire()
        assert w.alive
        p.release(w)
    finally:
        p.close()
    assert p.n_processes == 0


def test_a_failing_fit_raises_worker_error_with_the_remote_traceback(demo, pool):
    train, _, _ = demo
    model = StandardHMM(3, n_iter=2, seed=0)
    with pytest.raises(WorkerError) as info:
        list(pool.iter_fit(model, train, no_such_option=1))
    assert "TypeError" in str(info.value) and "Traceback" in info.value.remote_traceback
    assert len(steps_only(pool.iter_fit(StandardHMM(3, n_iter=1, seed=0), train))) == 2


def test_a_killed_worker_fails_the_fit_clearly_and_is_replaced(demo):
    train, _, _ = demo
    p = WorkerPool(max_idle=1)
    try:
        model = StandardHMM(6, n_iter=10 ** 6, tol=-np.inf, seed=1)
        w = p.acquire()
        with pytest.raises(WorkerError, match="ended unexpectedly"):
            for ev in w.iter_fit(model, train):
                if ev.step == 2:
                    w.process.kill()
        p.release(w)
        assert not w.alive and p.n_processes == 0
        assert len(steps_only(p.iter_fit(StandardHMM(3, n_iter=1, seed=0), train))) == 2
    finally:
        p.close()


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no process priorities here")
def test_workers_run_at_a_lower_cpu_priority():
    p = WorkerPool(max_idle=1, nice=7)
    try:
        w = p.acquire()
        deadline = time.time() + 30
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        while os.getpriority(os.PRIO_PROCESS, w.process.pid) == mine and time.time() < deadline:
            time.sleep(0.05)
        assert os.getpriority(os.PRIO_PROCESS, w.process.pid) == min(19, mine + 7)
        p.release(w)
    finally:
        p.close()


def test_dense_fits_and_divergence_in_a_worker(demo, pool):
    pytest.importorskip("tensorflow")
    from densehmm_core.dense import DenseHMM
    train, test, _ = demo
    here = DenseHMM(4, 3, fit_method="cooc", seed=5, preset="paper", cooc_steps=200)
    here.fit(train, eval_data=test)
    there = DenseHMM(4, 3, fit_method="cooc", seed=5, preset="paper", cooc_steps=200)
    w = pool.acquire()
    events, reported = [], []
    for ev in pool.iter_fit_on(w, there, train, eval_data=test):
        events.append(ev)
        reported.append(w.tf_info)
    # the worker said which TensorFlow the fit imported (a "tensorflow" reply; or its answer to
    # an earlier "warm"), before the first event reached this process
    import tensorflow
    assert reported[0] is not None and reported[0]["tf_version"] == tensorflow.__version__
    assert any(d["spec"] == "/CPU:0" for d in reported[0]["devices"])
    for k in ("startprob_", "transmat_", "emissionprob_"):
        np.testing.assert_array_equal(getattr(there, k), getattr(here, k))
    for k, v in here.embeddings_.items():
        np.testing.assert_array_equal(there.embeddings_[k], v)
    assert there.device_used_ == here.device_used_ and there.seed_used_ == here.seed_used_ == 5
    assert without_elapsed(there.history_) == without_elapsed(here.history_)
    assert set(events[-1].params) >= {"U", "Z", "W", "V", "z_start", "transmat"}
    # a diverging fit raises here too, and the model keeps its last finite parameters
    bad = DenseHMM(4, 3, fit_method="cooc", seed=5, preset="paper", cooc_steps=300, lr=1e6)
    with pytest.raises(TrainingDiverged):
        list(pool.iter_fit(bad, train))
    for a in (bad.startprob_, bad.transmat_, bad.emissionprob_):
        assert np.all(np.isfinite(a))
    np.testing.assert_allclose(bad.transmat_.sum(axis=1), 1.0, atol=1e-9)


def test_query_tensorflow_reports_the_devices_of_a_worker(pool):
    pytest.importorskip("tensorflow")
    info = pool.query_tensorflow()
    assert info["tf_version"].count(".") >= 2
    assert any(d["type"] == "CPU" for d in info["devices"])


class _Unreadable(list):
    """A sequence list that refuses to be read: proof that nobody joins the sequences again."""

    def __iter__(self):
        raise AssertionError("the sequences were read again")

    def __getitem__(self, item):
        raise AssertionError("the sequences were read again")


def test_a_corpus_crosses_to_a_worker_as_its_own_joined_tokens():
    """A Corpus is joined once (``Corpus.tokens``, read-only, int32, kept): what crosses to a worker is
    that array and the cached lengths, without reading the sequences again; symbols outside the model's
    range are still refused with the one-by-one check's message."""
    from densehmm_core.data import Corpus
    from densehmm_core.worker.wire import as_plain_sequences
    rng = np.random.default_rng(5)
    raw = [rng.integers(0, 7, size=int(rng.integers(1, 20))).astype(np.int64) for _ in range(300)]
    corpus = Corpus.from_sequences(raw, vocabulary=list("abcdefg"))
    expected = np.concatenate(raw)
    tokens = corpus.tokens
    assert tokens is corpus.tokens and tokens.dtype == np.int32 and not tokens.flags.writeable
    np.testing.assert_array_equal(tokens, expected)
    corpus.lengths  # noqa: B018 - cached
    kept = corpus.sequences
    corpus.sequences = _Unreadable(kept)
    plain = as_plain_sequences(corpus, 7)
    assert plain["tokens"] is tokens and plain["lengths"] is corpus.lengths
    back = decode_message(encode_message({"train": plain}))["train"]
    np.testing.assert_array_equal(back["tokens"], expected)
    np.testing.assert_array_equal(back["lengths"], [len(x) for x in raw])
    corpus.sequences = kept
    with pytest.raises(ValueError, match="holds symbol 6, outside 0..5"):
        as_plain_sequences(corpus, 6)
    train, test = corpus.split(0.5, seed=1)      # derived corpora join their own sequences
    np.testing.assert_array_equal(train.tokens, np.concatenate(train.sequences))
    np.testing.assert_array_equal(test.tokens, np.concatenate(test.sequences))


def test_lists_of_strings_cross_as_they_are_and_anything_else_is_still_checked():
    """A vocabulary (a list of str) is written as JSON without visiting each name; lists that hold
    anything else still go through every check."""
    names = ["the", "", "naïve", 'quo"te', "tab\there", "\u2603", "a\\b", "line\nbreak"]
    back = decode_message(encode_message({"vocabulary": names, "t": tuple(names), "empty": []}))
    assert back == {"vocabulary": names, "t": names, "empty": []}
    mixed = decode_message(encode_message({"v": ["a", np.int64(3), np.float32(0.5), ["b", None]]}))
    assert mixed == {"v": ["a", 3, 0.5, ["b", None]]}
    for bad in (["a", object()], ["a", np.array([object()], dtype=object)], ("a", {1: "x"})):
        with pytest.raises(TypeError):
            encode_message({"v": bad})


def test_an_unchecked_corpus_of_columns_is_still_checked_one_by_one():
    """``Corpus(validate=False)`` of 2-D column arrays: its joined tokens are not the wire's layout, so
    the sequences go through the one-by-one check (the same tokens as the list of columns gives)."""
    from densehmm_core.data import Corpus
    from densehmm_core.worker.wire import as_plain_sequences
    raw = [np.array([[0], [1], [2]]), np.array([[3], [1]])]
    corpus = Corpus(raw, list("abcd"), validate=False)
    plain = as_plain_sequences(corpus, 4)
    np.testing.assert_array_equal(plain["tokens"], [0, 1, 2, 3, 1])
    np.testing.assert_array_equal(plain["lengths"], [3, 2])


def test_the_fit_message_carries_the_thread_budget(demo, monkeypatch):
    """The app gives each job's worker ``cpus // CPU slots`` threads (densehmm_core.threads): the
    fit message carries the number (checked like the rest of the message); the worker runs the fit
    inside ``fit_budget`` of it (tests/test_threads.py)."""
    from densehmm_core.standard import StandardHMM
    train, _, _ = demo
    own = WorkerPool(max_idle=0)       # its worker is closed after this test
    w = own.acquire()
    sent = []

    def capture(msg, cancel=None):
        sent.append(msg)
        return False            # as if cancelled while sending: nothing reaches the process
    monkeypatch.setattr(w, "_write", capture)
    try:
        for threads, expected in ((3, 3), (None, None), (0, 1)):
            list(w.iter_fit(StandardHMM(2, seed=0, n_iter=1), train, threads=threads))
            assert sent[-1]["op"] == "fit" and sent[-1]["threads"] == expected
    finally:
        monkeypatch.undo()
        own.close()
    from densehmm_core.worker.wire import check_control
    msg = dict(sent[0], train={"tokens": np.zeros(1, np.int32), "lengths": np.ones(1, np.int64)})
    for bad in (0, -1, 2.0, "2", True):
        with pytest.raises(ValueError, match="thread budget"):
            check_control(dict(msg, threads=bad))
    assert check_control(dict(msg, threads=2))["threads"] == 2


def test_a_dense_em_fit_in_a_worker_on_two_threads_equals_one_here(demo, pool, monkeypatch):
    """The budget reaches the worker's fit (the message is accepted) and changes no number: the
    M-step's split does not depend on the thread count."""
    from densehmm_core.dense import DenseHMM
    train, test, _ = demo
    monkeypatch.setenv("DENSEHMM_THREADS", "1")
    kw = dict(fit_method="em", seed=4, n_iter=4, tol=0, mstep_steps=5)
    here = DenseHMM(3, 2, **kw).fit(train, eval_data=test)
    there = DenseHMM(3, 2, **kw)
    list(pool.iter_fit(there, train, eval_data=test, threads=2))
    assert without_elapsed(there.history_) == without_elapsed(here.history_)
    np.testing.assert_array_equal(there.emissionprob_, here.emissionprob_)
    for k in ("m", "v"):     # Adam's state comes back too: a continued fit here takes the same steps
        np.testing.assert_array_equal(there.adam_state_[k], here.adam_state_[k])
    assert there.adam_state_["t"] == here.adam_state_["t"] == 20


def test_an_em_fit_never_waits_for_a_tensorflow_import_under_way(demo):
    """``WorkerPool.warm`` starts idle workers that import TensorFlow (for the co-occurrence fits). An
    EM fit that arrived meanwhile was given such a worker, the one without TensorFlow *yet*, and waited
    the whole import (seconds) before it began. A fit that does not need TensorFlow now gets another
    worker; one that needs it still takes the importing one (it has TensorFlow soonest)."""
    import importlib.util
    if importlib.util.find_spec("tensorflow") is None:     # (not imported here: only the worker does)
        pytest.skip("TensorFlow is not installed")
    from densehmm_core.dense import DenseHMM
    train, _, _ = demo
    p = WorkerPool(max_idle=2)
    try:
        p.warm(1)
        (warming,) = p._idle
        assert warming.importing                    # the import takes seconds; this is microseconds later
        em = DenseHMM(3, 2, fit_method="em", n_iter=1, mstep_steps=2, seed=0)
        assert not em.needs_tensorflow
        w = p.acquire(em.needs_tensorflow)
        assert w is not warming and not w.importing
        t0 = time.monotonic()
        events = steps_only(p.iter_fit_on(w, em, train))
        assert events[-1].done
        assert time.monotonic() - t0 < 30
        cooc = DenseHMM(3, 2, fit_method="cooc", seed=0)
        assert p.acquire(cooc.needs_tensorflow) is warming     # (released by iter_fit_on's end: w is idle)
        p.release(warming)
        deadline = time.time() + 120
        while warming.importing and time.time() < deadline:
            time.sleep(0.05)
        assert not warming.importing and warming.tf_info is not None
    finally:
        p.close()

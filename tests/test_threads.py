"""CPU threads of one fit (densehmm_core.threads) and the DenseHMM M-step on two threads.

Oracles: the same computation on one thread (bit for bit: the M-step's split into blocks of
symbols does not depend on the number of threads), the thread that ran each half, numpy's error
state, and a forked child.
"""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import densehmm_core.dense_mstep as dense_mstep
from densehmm_core import threads as th
from densehmm_core.dense import DenseHMM
from densehmm_core.dense_mstep import MStep
from densehmm_core.engine.backend import numpy_backend
from test_dense_mstep import WORDS, _problem as _dense_problem   # the tests' folder is on the path


# ------------------------------------------------------------------ the budget
def _env(monkeypatch, **values):
    for k in ("DENSEHMM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in values.items():
        monkeypatch.setenv(k, v)


@pytest.mark.parametrize("env, expected", [
    ({"DENSEHMM_THREADS": "3", "OMP_NUM_THREADS": "1"}, 3),
    ({"DENSEHMM_THREADS": " 1 "}, 1),
    ({"OMP_NUM_THREADS": "4,2"}, 4),
    ({"OMP_NUM_THREADS": "4"}, 4),
    ({"OMP_NUM_THREADS": "x"}, None),     # unreadable: the CPUs
    ({"DENSEHMM_THREADS": ""}, None),
    ({"DENSEHMM_THREADS": "0", "OMP_NUM_THREADS": "2"}, 2),   # unreadable counts as unset
    ({"DENSEHMM_THREADS": "two"}, None),
    ({"DENSEHMM_THREADS": "1.5"}, None),
    ({}, None),
])
def test_cpu_threads_reads_the_environment(env, expected, monkeypatch):
    _env(monkeypatch, **env)
    assert th.cpu_threads() == (th.available_cpus() if expected is None else expected)


def test_fit_threads_divides_the_budget_unless_the_user_set_it(monkeypatch):
    _env(monkeypatch, OMP_NUM_THREADS="8")
    assert [th.fit_threads(k) for k in (1, 2, 3, 16)] == [8, 4, 2, 1]
    _env(monkeypatch, OMP_NUM_THREADS="8", DENSEHMM_THREADS="2")
    assert th.fit_threads(4) == 2 and th.fit_threads(1) == 2


def test_a_fit_budget_holds_for_the_fits_inside_on_this_thread_only(monkeypatch):
    _env(monkeypatch, OMP_NUM_THREADS="8", DENSEHMM_THREADS="6")
    seen = {}
    with th.fit_budget(3):
        assert th.cpu_threads() == 3
        with th.fit_budget(None):          # None: the usual budget
            assert th.cpu_threads() == 6
        with th.fit_budget(0):             # at least one
            assert th.cpu_threads() == 1
        other = threading.Thread(target=lambda: seen.setdefault("other", th.cpu_threads()))
        other.start()
        other.join()
        assert th.cpu_threads() == 3
    assert th.cpu_threads() == 6 and seen["other"] == 6
    with th.fit_budget(1):
        assert MStep(_problem(False)[0], numpy_backend()).threads == 1
    with th.fit_budget(4):
        assert MStep(_problem(False)[0], numpy_backend()).threads == 2      # at most two are used


# ------------------------------------------------------------------ the helper
def test_run_halves_runs_the_second_half_on_another_thread():
    seen = []
    out = th.run_halves(lambda h: (seen.append((h, threading.get_ident())), h * 10)[1], (1, 2), 2)
    assert out == (10, 20)
    where = dict(seen)
    assert where[1] == threading.get_ident() and where[2] != threading.get_ident()
    seen.clear()
    assert th.run_halves(lambda h: (seen.append((h, threading.get_ident())), h)[1], (1, 2), 1) == (1, 2)
    assert {t for _, t in seen} == {threading.get_ident()}


@pytest.mark.parametrize("failing", [0, 1])
def test_an_exception_of_either_half_reaches_the_caller_after_both_ended(failing):
    ended = []

    def fn(h):
        if h == failing:
            raise KeyError(f"half {h}")
        threading.Event().wait(0.05)
        ended.append(h)
        return h

    with pytest.raises(KeyError, match=f"half {failing}"):
        th.run_halves(fn, (0, 1), 2)
    assert ended == [1 - failing]                  # the other half had ended
    assert th.run_halves(lambda h: h + 1, (0, 1), 2) == (1, 2)   # and the helper serves again


def test_the_helper_runs_under_the_callers_numpy_error_state():
    big = np.full(4, 1e300)

    def square(h):
        return big * big

    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            th.run_halves(square, (0, 1), 2)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="ignore"):
            assert np.isinf(th.run_halves(square, (0, 1), 2)[1]).all()


def test_concurrent_callers_share_the_helper_or_run_alone():
    """Fits on several threads of one process: a caller that finds the helper busy runs both
    halves itself; every result is right."""
    errors = []

    def caller(k):
        for i in range(200):
            got = th.run_halves(lambda h: (k, i, h), (0, 1), 2)
            if got != ((k, i, 0), (k, i, 1)):
                errors.append(got)

    ts = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in ts)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_gets_its_own_helper():
    code = textwrap.dedent("""
        import os, threading
        from densehmm_core.threads import run_halves
        assert run_halves(lambda h: h, (0, 1), 2) == (0, 1)    # the parent's helper is started
        pid = os.fork()
        if pid == 0:
            ids = run_halves(lambda h: threading.get_ident(), (0, 1), 2)
            os._exit(0 if ids[0] != ids[1] else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "0"


# ------------------------------------------------------------------ the M-step on two threads
def _problem(features, n=5, l=3, seed=0):
    """A random model and random counts over test_dense_mstep's words (its problem generator)."""
    return _dense_problem(n, l, seed, features)


def _spy(monkeypatch):
    """Record the thread of every half the M-step runs."""
    where = []
    real = th.run_halves

    def spy(fn, halves, threads):
        def wrapped(h):
            where.append(threading.get_ident())
            return fn(h)
        return real(wrapped, halves, threads)
    monkeypatch.setattr(dense_mstep, "run_halves", spy)
    return where


@pytest.mark.parametrize("features", [False, True])
@pytest.mark.parametrize("options", [{}, {"l2": 0.3}, {"fixed_kernels": True}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_mstep_gives_the_same_numbers_on_one_and_two_threads(features, options, dtype, monkeypatch):
    layout, theta, counts = _problem(features)
    where = _spy(monkeypatch)
    results = {}
    for k in (1, 2):
        where.clear()
        ms = MStep(layout, numpy_backend(), dtype=dtype, threads=k, **options)
        t0 = ms.to_device(theta)
        loss, g = ms.loss_and_grad(t0, *counts, 7.0)
        out = ms.adam(t0, ms.zeros(), 12, 0.05, 100.0, *counts, 7.0)
        ev_loss, mats = ms.evaluate(out[0], *counts, 7.0)
        results[k] = (float(loss), g.copy(), out[0], out[1].m, out[1].v, out[5], ev_loss, mats)
        assert (len(set(where)) == 2) == (k == 2)      # two threads ran the halves only with k = 2
    a, b = results[1], results[2]
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("features", [False, True])
def test_the_blocked_mstep_equals_one_softmax_over_all_symbols(features):
    """The two blocks' softmax, combined, is the softmax of the whole row: the float64 loss,
    gradient and matrices equal a plain numpy evaluation on the whole arrays."""
    layout, theta, counts = _problem(features, seed=4)
    ms = MStep(layout, numpy_backend(), threads=2)
    assert len(ms._blocks) == 2
    emb = layout.unpack(theta)
    V = emb["V"]
    X = emb["W"] @ V.T
    B = np.exp(X - X.max(axis=1, keepdims=True))
    B /= B.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ms.matrices(theta)[2], B, rtol=1e-13)
    E = counts[2] / 7.0
    G = E.sum(axis=1, keepdims=True) * B - E
    _, g = ms.loss_and_grad(theta, *counts, 7.0)
    n, m, l = layout.n, layout.m, layout.l
    nl = n * l
    np.testing.assert_allclose(g[2 * nl:3 * nl].reshape(n, l), G @ V, rtol=1e-11, atol=1e-13)
    dV = G.T @ emb["W"]
    np.testing.assert_allclose(g[3 * nl:3 * nl + m * l].reshape(m, l), dV, rtol=1e-11, atol=1e-13)
    if features:
        indptr, cols = layout.features.csr_index
        S = np.zeros((m, layout.n_feat))
        for k in range(m):
            S[k, cols[indptr[k]:indptr[k + 1]]] = 1.0
        np.testing.assert_allclose(g[3 * nl + m * l + l:].reshape(-1, l), S.T @ dV, rtol=1e-11, atol=1e-13)


def test_an_em_fit_gives_the_same_history_with_one_and_two_threads(monkeypatch):
    rng = np.random.default_rng(5)
    from densehmm_core.data.corpus import Corpus
    corpus = Corpus([rng.integers(0, len(WORDS), size=int(rng.integers(2, 30))).astype(np.int32)
                     for _ in range(80)], list(WORDS))
    hist = {}
    for k in ("1", "2"):
        monkeypatch.setenv("DENSEHMM_THREADS", k)
        model = DenseHMM(4, 3, fit_method="em", seed=2, n_iter=5, tol=0, symbol_features="orthographic")
        model.fit(corpus)
        hist[k] = ([h["train_ll"] for h in model.history_], model.emissionprob_.copy())
    assert hist["1"][0] == hist["2"][0]
    np.testing.assert_array_equal(hist["1"][1], hist["2"][1])

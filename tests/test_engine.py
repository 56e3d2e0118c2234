"""The inference engines against hmmlearn, brute-force enumeration and each other.

Every engine that works here is tested (``available_engines()``): on the CPU the
shared array code runs on numpy, both through the numpy engine and through the
GPU engine's own code path (memory-sized chunks, sparse emission counts, one
transfer per call) with numpy injected as its array module; on a machine where
CuPy works the same tests also run the CuPy engine on the GPU.  No TensorFlow here
(the GPU test machine has none).
"""
import itertools
import logging
import subprocess
import sys
import types

import numpy as np
import pytest

from densehmm_core.device import DeviceError, GpuUnavailableError
from densehmm_core.engine import SufficientStats, available_engines, engine_for, get_engine
from densehmm_core.engine import backend as backend_mod
from densehmm_core.engine.backend import numpy_backend
from densehmm_core.engine.cupy_engine import CupyEngine
from densehmm_core.engine.numpy_engine import NumpyEngine
from densehmm_core.engine.sampling import sample_sequences

from strictdev import strict_backend

hmm = pytest.importorskip("hmmlearn.hmm")
logging.getLogger("hmmlearn").setLevel(logging.ERROR)

RTOL = 1e-9
AVAILABLE = available_engines()


def gpu_path_on_numpy(free_bytes):
    """The CuPy engine's code path with numpy as its array module and a fake free-memory figure."""
    return CupyEngine(backend=numpy_backend(free_bytes=lambda: free_bytes))


def gpu_path_strict(free_bytes):
    """The CuPy engine's code path on :mod:`strictdev`'s device arrays: numpy inside, CuPy's refusal
    of host arrays and of implicit conversions outside."""
    return CupyEngine(backend=strict_backend(free_bytes=lambda: free_bytes))


def engine_variants():
    """(id, engine) for every available engine: default chunks and tiny chunks (many chunks)."""
    out = []
    for name in AVAILABLE:
        if name == "numpy":
            # min_batch=0: always the batched code (the default engine hands chunks of fewer
            # than 64 sequences to hmmlearn's compiled single-sequence routines; tested below)
            out += [("numpy", NumpyEngine(min_batch=0)),
                    ("numpy-tiny-chunks", NumpyEngine(chunk_elements=40, min_batch=0)),
                    ("numpy-sparse-counts", NumpyEngine(min_batch=0, emit_method="sparse")),
                    ("gpu-path-on-numpy", gpu_path_on_numpy(1 << 30)),
                    # 0.5 * 2560 bytes / 32 bytes per element = chunks of 40 floats
                    ("gpu-path-on-numpy-tiny-memory", gpu_path_on_numpy(2560)),
                    ("gpu-path-strict", gpu_path_strict(1 << 30)),
                    ("gpu-path-strict-tiny-memory", gpu_path_strict(2560))]
        elif name == "cupy":
            out += [("cupy", get_engine("cupy")), ("cupy-tiny-chunks", CupyEngine(chunk_elements=40))]
    return out


VARIANTS = engine_variants()
ENGINES = [e for _, e in VARIANTS]
IDS = [i for i, _ in VARIANTS]


def rand_model(rng, n, m, conc=1.0):
    pi = rng.dirichlet(np.full(n, conc))
    A = rng.dirichlet(np.full(n, conc), size=n)
    B = rng.dirichlet(np.full(m, conc), size=n)
    return pi, A, B


def rand_seqs(rng, m, n_seq, max_len):
    lens = rng.integers(1, max_len + 1, size=n_seq)
    lens[0] = 1                      # always include length-1 sequences
    lens[-1] = 1
    return [rng.integers(0, m, size=L) for L in lens]


def oracle(pi, A, B, impl="scaling"):
    h = hmm.CategoricalHMM(n_components=len(pi), n_features=B.shape[1], implementation=impl)
    h.startprob_, h.transmat_, h.emissionprob_ = pi, A, B
    return h


def hmmlearn_stats(h, seqs):
    X = np.concatenate(seqs)[:, None]
    stats, ll = h._do_estep(X, [len(s) for s in seqs])
    return stats, ll


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
@pytest.mark.parametrize("n,m,seed", [(1, 3, 0), (2, 2, 1), (4, 7, 2), (6, 3, 3)])
def test_engine_matches_hmmlearn(engine, n, m, seed):
    rng = np.random.default_rng(seed)
    pi, A, B = rand_model(rng, n, m, conc=0.5)
    seqs = rand_seqs(rng, m, 23, 30)
    lengths = [len(s) for s in seqs]
    X = np.concatenate(seqs)[:, None]
    for impl in ("scaling", "log"):
        h = oracle(pi, A, B, impl)
        ll = engine.loglik(pi, A, B, seqs)
        assert ll.shape == (len(seqs),)
        per_seq = np.array([h.score(s[:, None]) for s in seqs])
        np.testing.assert_allclose(ll, per_seq, rtol=RTOL)
        np.testing.assert_allclose(ll.sum(), h.score(X, lengths), rtol=RTOL)

    h = oracle(pi, A, B)
    st = engine.statistics(pi, A, B, seqs)
    assert isinstance(st, SufficientStats)
    ref, ref_ll = hmmlearn_stats(h, seqs)
    np.testing.assert_allclose(st.start, ref["start"], rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(st.trans, ref["trans"], rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(st.emit, ref["obs"], rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(st.loglik, ll, rtol=RTOL)
    np.testing.assert_allclose(st.total_loglik, ref_ll, rtol=RTOL)
    # counts add up: start = number of sequences, emissions = tokens, transitions = tokens - sequences
    np.testing.assert_allclose(st.start.sum(), len(seqs), rtol=1e-12)
    np.testing.assert_allclose(st.emit.sum(), X.shape[0], rtol=1e-12)
    np.testing.assert_allclose(st.trans.sum(), X.shape[0] - len(seqs), rtol=1e-12)

    post = engine.posteriors(pi, A, B, seqs)
    assert [p.shape for p in post] == [(L, n) for L in lengths]
    np.testing.assert_allclose(np.concatenate(post), h.predict_proba(X, lengths), rtol=RTOL, atol=1e-12)

    paths, lp = engine.viterbi(pi, A, B, seqs)
    for s, p, l in zip(seqs, paths, lp):
        ref_lp, ref_path = h.decode(s[:, None], algorithm="viterbi")
        np.testing.assert_array_equal(p, ref_path)
        np.testing.assert_allclose(l, ref_lp, rtol=RTOL)


# long sequences in chunks of one sequence each would cost a GPU ~30 kernel launches per token:
# the tiny-chunk variant of the GPU engine is left out here (chunking is covered by the other tests)
LONG = [(i, e) for i, e in VARIANTS if i != "cupy-tiny-chunks"]


@pytest.mark.parametrize("eng", [e for _, e in LONG], ids=[i for i, _ in LONG])
def test_long_and_short_sequences_with_dirichlet_model(eng):
    """Peaked Dirichlet(0.1) model, long sequences (scaling must avoid underflow)."""
    rng = np.random.default_rng(7)
    pi, A, B = rand_model(rng, 5, 8, conc=0.1)
    obs, _ = sample_sequences(pi, A, B, 12, rng.integers(1, 2000, size=12), seed=3)
    obs.append(obs[0][:1])
    h = oracle(pi, A, B)
    ll = eng.loglik(pi, A, B, obs)
    np.testing.assert_allclose(ll, [h.score(o[:, None]) for o in obs], rtol=RTOL)
    st = eng.statistics(pi, A, B, obs)
    ref, _ = hmmlearn_stats(h, obs)
    np.testing.assert_allclose(st.trans, ref["trans"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(st.emit, ref["obs"], rtol=1e-8, atol=1e-10)
    paths, lp = eng.viterbi(pi, A, B, obs)
    for o, p, l in zip(obs, paths, lp):
        # the optimum is not unique here (repeated symbols allow exact swaps), so compare
        # the joint log-probability of our path with hmmlearn's optimum
        ref_lp, ref_path = h.decode(o[:, None], algorithm="viterbi")
        np.testing.assert_allclose(l, ref_lp, rtol=RTOL)
        np.testing.assert_allclose(joint_logprob(pi, A, B, p, o), ref_lp, rtol=RTOL)


def joint_logprob(pi, A, B, z, x):
    with np.errstate(divide="ignore"):
        return np.log(pi[z[0]]) + np.log(B[z, x]).sum() + np.log(A[z[:-1], z[1:]]).sum()


def brute_force(pi, A, B, x):
    """Enumerate all state paths: likelihood, posteriors, xi sums, best path."""
    n, T = len(pi), len(x)
    total = 0.0
    gamma = np.zeros((T, n))
    xi = np.zeros((n, n))
    best, best_p = None, -1.0
    probs = []
    for z in itertools.product(range(n), repeat=T):
        p = pi[z[0]] * B[z[0], x[0]]
        for t in range(1, T):
            p *= A[z[t - 1], z[t]] * B[z[t], x[t]]
        total += p
        for t in range(T):
            gamma[t, z[t]] += p
        for t in range(1, T):
            xi[z[t - 1], z[t]] += p
        probs.append(p)
        if p > best_p:
            best, best_p = z, p
    unique = sum(q >= best_p * (1 - 1e-9) for q in probs) == 1
    return total, gamma / total, xi / total, (np.array(best) if unique else None), best_p


@pytest.mark.parametrize("eng", ENGINES, ids=IDS)
def test_brute_force_tiny_model(eng):
    rng = np.random.default_rng(11)
    pi, A, B = rand_model(rng, 3, 4)
    seqs = [np.array([2]), np.array([0, 3]), np.array([1, 1, 0, 2, 3]), np.array([3, 0, 0, 1]),
            np.array([3, 1, 0, 2])]
    ll = eng.loglik(pi, A, B, seqs)
    post = eng.posteriors(pi, A, B, seqs)
    st = eng.statistics(pi, A, B, seqs)
    paths, lp = eng.viterbi(pi, A, B, seqs)
    trans = np.zeros((3, 3))
    emit = np.zeros((3, 4))
    start = np.zeros(3)
    n_unique = 0
    for i, x in enumerate(seqs):
        total, gamma, xi, best, best_p = brute_force(pi, A, B, x)
        np.testing.assert_allclose(ll[i], np.log(total), rtol=1e-12)
        np.testing.assert_allclose(post[i], gamma, rtol=1e-10, atol=1e-14)
        if best is not None:         # the optimum is unique
            np.testing.assert_array_equal(paths[i], best)
            n_unique += 1
        np.testing.assert_allclose(joint_logprob(pi, A, B, paths[i], x), np.log(best_p), rtol=1e-12)
        np.testing.assert_allclose(lp[i], np.log(best_p), rtol=1e-12)
        trans += xi
        start += gamma[0]
        for t, s in enumerate(x):
            emit[:, s] += gamma[t]
    assert n_unique >= 3
    np.testing.assert_allclose(st.trans, trans, rtol=1e-10)
    np.testing.assert_allclose(st.emit, emit, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(st.start, start, rtol=1e-10)


@pytest.mark.parametrize("engine", [NumpyEngine(chunk_elements=12, min_batch=0), get_engine()] + ENGINES,
                         ids=["numpy-chunks-of-12", "numpy-default"] + IDS)
def test_zero_probabilities_give_minus_inf_not_nan(engine):
    pi = np.array([1.0, 0.0, 0.0])
    A = np.array([[0.0, 1.0, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])   # left-to-right
    B = np.array([[1.0, 0.0, 0.0], [0.0, 0.7, 0.3], [0.0, 0.0, 1.0]])
    possible = np.array([0, 1, 1, 2, 2])
    impossible = np.array([0, 2, 0])          # symbol 0 only from state 0, never revisited
    starts_badly = np.array([1, 1])           # state 0 emits only symbol 0
    seqs = [possible, impossible, starts_badly, np.array([0])]
    eng = engine
    with np.errstate(all="raise"):           # no warnings either (log 0 handled explicitly)
        ll = eng.loglik(pi, A, B, seqs)
        st = eng.statistics(pi, A, B, seqs)
        post = eng.posteriors(pi, A, B, seqs)
    assert np.isneginf(ll[1]) and np.isneginf(ll[2])
    total, gamma, xi, best, best_p = brute_force(pi, A, B, possible)
    np.testing.assert_allclose(ll[0], np.log(total), rtol=1e-12)
    np.testing.assert_allclose(ll[3], 0.0, atol=1e-15)
    for arr in (st.start, st.trans, st.emit, *post):
        assert not np.any(np.isnan(arr))
    # impossible sequences contribute nothing: counts equal those of the two possible ones
    ref = eng.statistics(pi, A, B, [possible, np.array([0])])
    np.testing.assert_allclose(st.trans, ref.trans, rtol=1e-12)
    np.testing.assert_allclose(st.emit, ref.emit, rtol=1e-12)
    np.testing.assert_allclose(post[0], gamma, rtol=1e-10, atol=1e-14)
    paths, lp = eng.viterbi(pi, A, B, seqs)
    np.testing.assert_allclose(joint_logprob(pi, A, B, paths[0], possible), np.log(best_p), rtol=1e-12)
    assert np.isneginf(lp[1]) and np.isneginf(lp[2]) and not np.any(np.isnan(lp))


@pytest.mark.parametrize("eng", [get_engine()] + ENGINES, ids=["numpy-default"] + IDS)
def test_bad_symbols_raise_value_error(eng):
    rng = np.random.default_rng(0)
    pi, A, B = rand_model(rng, 2, 3)
    with pytest.raises(ValueError, match="outside 0..2"):
        eng.loglik(pi, A, B, [np.array([0, 1, 3])])
    with pytest.raises(ValueError, match="negative"):
        eng.statistics(pi, A, B, [np.array([0, -1])])
    with pytest.raises(ValueError, match="outside"):
        eng.viterbi(pi, A, B, eng.prepare([np.array([5])]))


@pytest.mark.parametrize("eng", [NumpyEngine(chunk_elements=200), gpu_path_on_numpy(32 * 400)]
                         + ([CupyEngine(chunk_elements=200)] if "cupy" in AVAILABLE else []))
def test_prepared_sequences_give_the_same_results(eng):
    rng = np.random.default_rng(5)
    pi, A, B = rand_model(rng, 3, 5)
    seqs = rand_seqs(rng, 5, 40, 25)
    prep = eng.prepare(seqs, 3)
    assert len(prep.chunks) > 1
    np.testing.assert_array_equal(eng.loglik(pi, A, B, prep), eng.loglik(pi, A, B, seqs))
    a, b = eng.statistics(pi, A, B, prep), get_engine().statistics(pi, A, B, seqs)
    np.testing.assert_allclose(a.emit, b.emit, rtol=RTOL)
    np.testing.assert_allclose(a.trans, b.trans, rtol=RTOL)


def test_get_engine_unknown_name():
    with pytest.raises(ValueError, match="unknown engine"):
        get_engine("cuda-magic")


def test_default_engine_small_chunks_agree_with_batched():
    """Chunks of few sequences go through hmmlearn's compiled routines: same results."""
    rng = np.random.default_rng(21)
    pi, A, B = rand_model(rng, 4, 6, conc=0.3)
    B[2, 5] = 0.0
    B[2] /= B[2].sum()
    seqs = rand_seqs(rng, 6, 200, 12)
    seqs += [rng.integers(0, 6, size=400) for _ in range(3)]       # a few long ones
    hybrid = NumpyEngine(chunk_elements=4 * 1000)
    batched = NumpyEngine(chunk_elements=4 * 1000, min_batch=0)
    prep = hybrid.prepare(seqs, 4)
    sizes = [len(ch.index) for ch in prep.chunks]
    assert min(sizes) < hybrid.min_batch <= max(sizes)            # both paths are exercised
    np.testing.assert_allclose(hybrid.loglik(pi, A, B, prep), batched.loglik(pi, A, B, seqs), rtol=RTOL)
    a, b = hybrid.statistics(pi, A, B, prep), batched.statistics(pi, A, B, seqs)
    for x, y in ((a.start, b.start), (a.trans, b.trans), (a.emit, b.emit), (a.loglik, b.loglik)):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=1e-10)
    for x, y in zip(hybrid.posteriors(pi, A, B, prep), batched.posteriors(pi, A, B, seqs)):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=1e-12)
    (pa, la), (pb, lb) = hybrid.viterbi(pi, A, B, prep), batched.viterbi(pi, A, B, seqs)
    np.testing.assert_allclose(la, lb, rtol=RTOL)
    for x, y, s, l in zip(pa, pb, seqs, la):   # ties possible: compare the paths' log-probabilities
        np.testing.assert_allclose(joint_logprob(pi, A, B, x, s), l, rtol=RTOL)
        np.testing.assert_allclose(joint_logprob(pi, A, B, y, s), l, rtol=RTOL)


# ------------------------------------------------------------ every engine vs numpy
@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_float64_agreement_with_the_numpy_engine(engine):
    """A word-model-like shape (45 states, 300 symbols, Dirichlet(0.3)): 1e-9 relative to numpy."""
    rng = np.random.default_rng(3)
    pi, A, B = rand_model(rng, 45, 300, conc=0.3)
    seqs = rand_seqs(rng, 300, 150, 40)
    ref = NumpyEngine(min_batch=0)
    a, b = engine.statistics(pi, A, B, seqs), ref.statistics(pi, A, B, seqs)
    for x, y in ((a.start, b.start), (a.trans, b.trans), (a.emit, b.emit), (a.loglik, b.loglik)):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(engine.loglik(pi, A, B, seqs), b.loglik, rtol=RTOL)
    for x, y in zip(engine.posteriors(pi, A, B, seqs), ref.posteriors(pi, A, B, seqs)):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=1e-12)
    (pa, la), (_pb, lb) = engine.viterbi(pi, A, B, seqs), ref.viterbi(pi, A, B, seqs)
    np.testing.assert_allclose(la, lb, rtol=RTOL)
    for x, s, lp in zip(pa, seqs, la):
        np.testing.assert_allclose(joint_logprob(pi, A, B, x, s), lp, rtol=RTOL)


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_one_host_transfer_per_call(engine):
    """Results stay on the device until the end of a call: one device-to-host copy per call."""
    rng = np.random.default_rng(4)
    pi, A, B = rand_model(rng, 4, 6)
    prep = engine.prepare(rand_seqs(rng, 6, 60, 20), 4)
    assert len(prep.chunks) >= 1
    for method in (engine.loglik, engine.statistics, engine.posteriors, engine.viterbi):
        before = engine.backend.transfers
        method(pi, A, B, prep)
        assert engine.backend.transfers == before + 1, method.__name__


def test_gpu_path_sizes_chunks_by_free_memory():
    """The GPU engine sizes chunks from the free memory the backend reports, at prepare time."""
    rng = np.random.default_rng(8)
    seqs = rand_seqs(rng, 5, 300, 30)
    n = 4
    budgets = {}
    for free in (32 * 1000, 32 * 8000, 32 * 10 ** 7):
        eng = gpu_path_on_numpy(free)
        prep = eng.prepare(seqs, n)
        budgets[free] = (prep.chunk_elements, len(prep.chunks))
        assert prep.chunk_elements == int(eng.memory_fraction * free / eng.BYTES_PER_ELEMENT)
        for ch in prep.chunks:       # padded size within the budget (or one sequence alone)
            T, nb = ch.obs.shape
            assert T * nb * n <= prep.chunk_elements or nb == 1
    chunks = [budgets[f][1] for f in sorted(budgets)]
    assert chunks[0] > chunks[1] > chunks[2] == 1       # more memory: fewer, larger chunks
    capped = CupyEngine(chunk_elements=100, backend=numpy_backend(lambda: 10 ** 9))
    assert capped.prepare(seqs, n).chunk_elements == 100
    numpy_eng = NumpyEngine(chunk_elements=777)          # the CPU: a fixed bound, no memory query
    assert numpy_eng.prepare(seqs, n).chunk_elements == 777


def test_sparse_counts_keep_chunk_positions_within_int32(monkeypatch):
    """A memory budget larger than int32 positions (a big GPU, one state) still gives chunks whose
    padded positions fit the sparse matrix's int32 indices; results are unchanged."""
    from densehmm_core.engine.array_engine import PreparedSequences
    rng = np.random.default_rng(9)
    seqs = rand_seqs(rng, 7, 80, 25)
    pi, A, B = rand_model(rng, 1, 25)
    huge = gpu_path_on_numpy(32 * 10 ** 12)              # budget of 5e11 elements for n = 1
    whole = huge.prepare(seqs, 1)
    assert len(whole.chunks) == 1 and whole.chunk_elements > 2 ** 31
    monkeypatch.setattr(PreparedSequences, "MAX_SPARSE_POSITIONS", 120)   # stands in for 2 ** 31 - 1
    prep = huge.prepare(seqs, 1)
    assert len(prep.chunks) > 1
    for ch in prep.chunks:
        T, nb = ch.obs.shape
        assert T * nb <= 120 or nb == 1
    ref = NumpyEngine(min_batch=0).statistics(pi, A, B, seqs)
    got = huge.statistics(pi, A, B, prep)
    np.testing.assert_allclose(got.emit, ref.emit, rtol=1e-12)
    np.testing.assert_allclose(got.loglik, ref.loglik, rtol=1e-12)


def test_prepared_sequences_belong_to_their_engine():
    seqs = [np.array([0, 1, 1]), np.array([1])]
    prep = NumpyEngine().prepare(seqs, 2)
    with pytest.raises(ValueError, match="prepared by another engine"):
        gpu_path_on_numpy(10 ** 6).loglik(np.full(2, 0.5), np.full((2, 2), 0.5), np.full((2, 2), 0.5), prep)


# --------------------------------------------------------------- choosing engines
@pytest.fixture
def fresh_cupy_status(monkeypatch):
    """An empty CuPy probe cache, no cached engines (on a GPU machine get_engine("cupy") would
    otherwise hand out the engine made before CuPy was hidden) and no fallback warned about yet,
    restored afterwards."""
    import densehmm_core.engine as engine_pkg
    monkeypatch.setattr(backend_mod, "_CUPY_STATUS", {})
    monkeypatch.setattr(engine_pkg, "_WARNED", set())
    monkeypatch.setattr(engine_pkg, "_CACHE", {})


def test_missing_cupy_is_a_clear_error(monkeypatch, fresh_cupy_status, caplog):
    monkeypatch.setitem(sys.modules, "cupy", None)          # import cupy -> ImportError
    with pytest.raises(GpuUnavailableError, match=r"CuPy is not installed.*pip install cupy-cuda12x.*cupy-cuda13x"):
        CupyEngine()
    with pytest.raises(GpuUnavailableError, match="not installed"):
        engine_for("cupy", "gpu")
    assert available_engines() == ["numpy"]
    # engine="auto" falls back to numpy whatever the device; a named GPU gets one warning
    with caplog.at_level("WARNING", logger="densehmm_core.engine"):
        for device in ("auto", "gpu", "/GPU:1", "gpu"):
            assert engine_for("auto", device).name == "numpy"
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and all("runs on the CPU (numpy): CuPy is not installed" in w for w in warned)
    assert warned[0].startswith("device 'gpu'") and warned[1].startswith("device '/GPU:1'")


def fake_cupy_without_gpu():
    """A module shaped like CuPy whose CUDA runtime finds no driver (as on a machine without a GPU)."""
    class CUDARuntimeError(RuntimeError):
        pass

    def no_driver():
        raise CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    mod = types.ModuleType("cupy")
    mod.__version__ = "13.6.0"
    mod.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_driver))
    return mod


def test_cupy_without_gpu_is_a_clear_error(monkeypatch, fresh_cupy_status):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy_without_gpu())
    with pytest.raises(GpuUnavailableError, match=r"CuPy 13.6.0 is installed but cannot use an NVIDIA GPU "
                                                  r"\(CUDARuntimeError: cudaErrorInsufficientDriver"):
        CupyEngine()
    assert "cupy" not in available_engines()
    assert engine_for("auto", "auto").name == "numpy"


def test_real_cupy_installed_without_a_gpu():
    """Where CuPy is installed but no GPU works (a CPU machine with cupy-cuda12x): the real error."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        pytest.skip("CuPy is not installed here")
    if "cupy" in AVAILABLE:
        pytest.skip("CuPy works here (a GPU machine)")
    with pytest.raises(GpuUnavailableError, match="is installed but cannot use an NVIDIA GPU"):
        get_engine("cupy")


def test_gpu_that_does_not_exist(monkeypatch, fresh_cupy_status):
    mod = types.ModuleType("cupy")
    mod.__version__ = "13.6.0"
    mod.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    monkeypatch.setitem(sys.modules, "cupy", mod)
    with pytest.raises(GpuUnavailableError, match="sees 1 GPU.*GPU 3 does not exist"):
        engine_for("cupy", "/GPU:3")


def test_engine_for_cpu_and_explicit_choices():
    assert engine_for("auto", "cpu") is get_engine("numpy")
    assert engine_for("numpy", "/GPU:0") is get_engine("numpy")
    with pytest.raises(DeviceError, match="engine 'cupy' runs on a GPU"):
        engine_for("cupy", "cpu")
    with pytest.raises(DeviceError, match="unknown device"):
        engine_for("auto", "tpu")
    with pytest.raises(ValueError, match="unknown engine"):
        engine_for("torch", "cpu")
    if "cupy" in AVAILABLE:
        assert engine_for("auto", "gpu").name == "cupy"
        assert engine_for("auto", "auto").name == "cupy"


def test_device_cpu_never_touches_cupy():
    """engine="auto", device="cpu": CuPy is not even imported (nor TensorFlow)."""
    code = ("import sys; from densehmm_core.engine import engine_for; e = engine_for('auto', 'cpu'); "
            "import numpy as np; e.loglik(np.ones(1), np.ones((1, 1)), np.ones((1, 2)) / 2, [np.array([0, 1])]); "
            "print(e.name, 'cupy' in sys.modules, 'tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["numpy", "False", "False"]


@pytest.mark.parametrize("spec,expected", [
    ("auto", ("auto", None)), (None, ("auto", None)), ("cpu", ("cpu", None)), ("/CPU:0", ("cpu", None)),
    ("gpu", ("gpu", 0)), ("/GPU:1", ("gpu", 1)), ("GPU:2", ("gpu", 2)), ("gpu:3", ("gpu", 3)),
    ("/device:GPU:1", ("gpu", 1)), (" /gpu:0 ", ("gpu", 0))])
def test_parse_device(spec, expected):
    from densehmm_core.device import parse_device
    assert parse_device(spec) == expected


@pytest.mark.parametrize("spec", ["tpu", "/GPU:x", "/XLA_GPU:0", ""])
def test_parse_device_rejects(spec):
    from densehmm_core.device import parse_device
    with pytest.raises(DeviceError, match="unknown device"):
        parse_device(spec)


# ------------------------------------------------------------------ models
def test_models_choose_their_engine_from_engine_and_device(monkeypatch, fresh_cupy_status):
    from densehmm_core.dense import DenseHMM
    from densehmm_core.standard import StandardHMM
    seqs = [np.array([0, 1, 1, 0]), np.array([1, 0])]
    for model in (StandardHMM(2, seed=0, device="cpu"), DenseHMM(2, 2, device="cpu")):
        assert model.engine == "auto" and model._engine() is get_engine("numpy")
    with pytest.raises(DeviceError, match="engine 'cupy' runs on a GPU"):
        StandardHMM(2, n_iter=1, seed=0, engine="cupy", device="cpu").fit(seqs)
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(GpuUnavailableError, match="pip install cupy-cuda12x"):
        StandardHMM(2, n_iter=1, seed=0, engine="cupy", device="gpu").fit(seqs)
    # auto on a GPU device without CuPy: numpy, and the same fit as engine="numpy"
    a = StandardHMM(2, n_iter=3, tol=-np.inf, seed=0, device="/GPU:0").fit(seqs)
    b = StandardHMM(2, n_iter=3, tol=-np.inf, seed=0, engine="numpy").fit(seqs)
    np.testing.assert_array_equal(a.transmat_, b.transmat_)
    assert StandardHMM(2, engine="hmmlearn", device="gpu")._engine() is get_engine("numpy")


def test_every_call_runs_inside_the_backends_device_context():
    """The GPU engine enters its device (a fresh context each time) around every call and prepare."""
    import contextlib

    from densehmm_core.engine.backend import ArrayBackend
    import scipy.sparse
    depth, entered = [0], []

    @contextlib.contextmanager
    def device():
        depth[0] += 1
        entered.append(depth[0])
        try:
            yield
        finally:
            depth[0] -= 1

    eng = CupyEngine(backend=ArrayBackend(np, scipy.sparse, "numpy-in-a-context", free_bytes=lambda: 10 ** 6,
                                          device=device))
    rng = np.random.default_rng(9)
    pi, A, B = rand_model(rng, 3, 4)
    seqs = rand_seqs(rng, 4, 10, 8)
    for method in (eng.loglik, eng.statistics, eng.posteriors, eng.viterbi):
        n_before = len(entered)
        method(pi, A, B, seqs)
        assert len(entered) > n_before and depth[0] == 0, method.__name__
    np.testing.assert_allclose(eng.loglik(pi, A, B, seqs), get_engine().loglik(pi, A, B, seqs), rtol=RTOL)

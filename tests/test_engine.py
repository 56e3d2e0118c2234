"""The numpy inference engine against hmmlearn and against brute-force enumeration."""
import itertools
import logging

import numpy as np
import pytest

from densehmm_core.engine import SufficientStats, get_engine
from densehmm_core.engine.numpy_engine import NumpyEngine
from densehmm_core.engine.sampling import sample_sequences

hmm = pytest.importorskip("hmmlearn.hmm")
logging.getLogger("hmmlearn").setLevel(logging.ERROR)

RTOL = 1e-9


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


# min_batch=0: always the batched numpy code (the default engine hands chunks of fewer
# than 64 sequences to hmmlearn's compiled single-sequence routines; tested below)
ENGINES = [NumpyEngine(min_batch=0), NumpyEngine(chunk_elements=40, min_batch=0)]


@pytest.mark.parametrize("engine", ENGINES, ids=["batched", "tiny-chunks"])
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


def test_long_and_short_sequences_with_dirichlet_model():
    """Peaked Dirichlet(0.1) model, long sequences (scaling must avoid underflow)."""
    rng = np.random.default_rng(7)
    pi, A, B = rand_model(rng, 5, 8, conc=0.1)
    obs, _ = sample_sequences(pi, A, B, 12, rng.integers(1, 2000, size=12), seed=3)
    obs.append(obs[0][:1])
    h = oracle(pi, A, B)
    eng = NumpyEngine(min_batch=0)
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


def test_brute_force_tiny_model():
    rng = np.random.default_rng(11)
    pi, A, B = rand_model(rng, 3, 4)
    seqs = [np.array([2]), np.array([0, 3]), np.array([1, 1, 0, 2, 3]), np.array([3, 0, 0, 1]),
            np.array([3, 1, 0, 2])]
    eng = NumpyEngine(min_batch=0)
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


@pytest.mark.parametrize("engine", [NumpyEngine(chunk_elements=12, min_batch=0), get_engine()],
                         ids=["batched", "default"])
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


def test_bad_symbols_raise_value_error():
    rng = np.random.default_rng(0)
    pi, A, B = rand_model(rng, 2, 3)
    eng = get_engine()
    with pytest.raises(ValueError, match="outside 0..2"):
        eng.loglik(pi, A, B, [np.array([0, 1, 3])])
    with pytest.raises(ValueError, match="negative"):
        eng.statistics(pi, A, B, [np.array([0, -1])])
    with pytest.raises(ValueError, match="outside"):
        eng.viterbi(pi, A, B, eng.prepare([np.array([5])]))


def test_prepared_sequences_give_the_same_results():
    rng = np.random.default_rng(5)
    pi, A, B = rand_model(rng, 3, 5)
    seqs = rand_seqs(rng, 5, 40, 25)
    eng = NumpyEngine(chunk_elements=200)
    prep = eng.prepare(seqs, 3)
    assert len(prep.chunks) > 1
    np.testing.assert_array_equal(eng.loglik(pi, A, B, prep), eng.loglik(pi, A, B, seqs))
    a, b = eng.statistics(pi, A, B, prep), get_engine().statistics(pi, A, B, seqs)
    np.testing.assert_allclose(a.emit, b.emit, rtol=1e-12)
    np.testing.assert_allclose(a.trans, b.trans, rtol=1e-12)


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

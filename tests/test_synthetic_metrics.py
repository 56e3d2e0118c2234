"""random_hmm, stationary distributions, sampling statistics, co-occurrence and NLL metrics."""
import numpy as np
import pytest
from scipy import stats as sps

from densehmm_core.engine.sampling import sample_sequences
from densehmm_core.maths import analytic_cooc, empirical_cooc, stationary_distribution
from densehmm_core.metrics import cooc_mad, normalized_nll, paper_nll
from densehmm_core.standard import StandardHMM
from densehmm_core.synthetic import HMMParams, demo_dataset, random_hmm


@pytest.mark.parametrize("n,m,alpha,seed", [(5, 5, 0.1, 0), (10, 20, 0.1, 1), (50, 7, 0.1, 2),
                                            (3, 4, 1.0, 3), (1, 3, 0.1, 4)])
def test_random_hmm(n, m, alpha, seed):
    p = random_hmm(n, m, alpha, seed)
    assert isinstance(p, HMMParams)
    pi, A, B = p                                # unpacks as a 3-tuple
    assert pi.shape == (n,) and A.shape == (n, n) and B.shape == (n, m)
    assert pi.dtype == A.dtype == B.dtype == np.float64
    np.testing.assert_allclose(A.sum(1), 1, atol=1e-12)
    np.testing.assert_allclose(B.sum(1), 1, atol=1e-12)
    assert abs(pi.sum() - 1) < 1e-12 and pi.min() >= 0
    assert np.max(np.abs(pi @ A - pi)) < 1e-12
    q = random_hmm(n, m, alpha, seed)
    np.testing.assert_array_equal(q.transmat, A)
    np.testing.assert_array_equal(q.emissionprob, B)
    if n > 1:
        assert not np.array_equal(random_hmm(n, m, alpha, seed + 100).transmat, A)


def test_small_alpha_gives_sparse_rows():
    A = random_hmm(20, 20, 0.1, seed=0).transmat
    B = random_hmm(20, 20, 5.0, seed=0).transmat
    # Dirichlet(0.1) rows concentrate their mass on few entries
    assert np.mean(A.max(1)) > 0.4 > np.mean(B.max(1))


def test_stationary_distribution_known_chain():
    a, b = 0.3, 0.05
    A = np.array([[1 - a, a], [b, 1 - b]])
    np.testing.assert_allclose(stationary_distribution(A), [b / (a + b), a / (a + b)], rtol=1e-13)
    # a periodic chain (power iteration alone would not converge)
    P = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(stationary_distribution(P), np.full(3, 1 / 3), rtol=1e-13)
    # nearly decoupled blocks (ill-conditioned)
    rng = np.random.default_rng(0)
    M = np.zeros((6, 6))
    M[:3, :3] = rng.dirichlet(np.ones(3), 3)
    M[3:, 3:] = rng.dirichlet(np.ones(3), 3)
    M = 0.999999 * M + 1e-6 * rng.dirichlet(np.ones(6), 6)
    pi = stationary_distribution(M)
    assert np.max(np.abs(pi @ M - pi)) < 1e-12 and abs(pi.sum() - 1) < 1e-12 and pi.min() >= 0
    with pytest.raises(ValueError):
        stationary_distribution(np.ones((2, 3)))


def test_sampling_reproducible_and_lengths():
    p = random_hmm(4, 6, 0.5, seed=1)
    a, sa = sample_sequences(*p, 5, [1, 2, 3, 10, 1], seed=9)
    b, sb = sample_sequences(*p, 5, [1, 2, 3, 10, 1], seed=9)
    assert [len(x) for x in a] == [1, 2, 3, 10, 1]
    for x, y, u, v in zip(a, b, sa, sb):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(u, v)
        assert x.dtype == np.int64 and x.max() < 6 and u.max() < 4
    c, _ = sample_sequences(*p, 5, [1, 2, 3, 10, 1], seed=10)
    assert any(not np.array_equal(x, y) for x, y in zip(a, c))
    with pytest.raises(ValueError):
        sample_sequences(*p, 2, 0, seed=1)


def chi2_pvalue(counts, probs):
    counts = np.asarray(counts, float)
    probs = np.asarray(probs, float)
    keep = probs > 0
    assert counts[~keep].sum() == 0           # zero-probability events never happen
    exp = probs[keep] * counts.sum()
    stat = np.sum((counts[keep] - exp) ** 2 / exp)
    return sps.chi2.sf(stat, keep.sum() - 1)


def test_sampling_statistics_match_the_model():
    """Chi-square goodness of fit of start states, transitions and emissions (fixed seed)."""
    pi = np.array([0.5, 0.3, 0.2, 0.0])
    A = np.array([[0.1, 0.6, 0.3, 0.0], [0.2, 0.2, 0.2, 0.4], [0.0, 0.5, 0.5, 0.0],
                  [0.25, 0.25, 0.25, 0.25]])
    B = np.array([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5], [0.3, 0.3, 0.4], [1.0, 0.0, 0.0]])
    obs, states = sample_sequences(pi, A, B, 4000, 25, seed=123)
    S = np.array(states)
    O = np.array(obs)
    pvals = [chi2_pvalue(np.bincount(S[:, 0], minlength=4), pi)]
    trans = np.zeros((4, 4))
    np.add.at(trans, (S[:, :-1].ravel(), S[:, 1:].ravel()), 1)
    emit = np.zeros((4, 3))
    np.add.at(emit, (S.ravel(), O.ravel()), 1)
    for i in range(4):
        pvals.append(chi2_pvalue(trans[i], A[i]))
        pvals.append(chi2_pvalue(emit[i], B[i]))
    assert min(pvals) > 1e-3, pvals
    # and a deliberately wrong model is rejected by the same test
    assert chi2_pvalue(trans[0], [0.2, 0.5, 0.3, 0.0]) < 1e-6


def test_empirical_cooc_no_pairs_across_boundaries():
    seqs = [np.array([0, 1, 1]), np.array([2]), np.array([2, 0])]
    om = empirical_cooc(seqs, 3)
    expected = np.zeros((3, 3))
    expected[0, 1] = expected[1, 1] = expected[2, 0] = 1 / 3   # (1,2) and (2,2) would cross boundaries
    np.testing.assert_array_equal(om, expected)
    # (X, lengths) layout
    np.testing.assert_array_equal(empirical_cooc(np.array([0, 1, 1, 2, 2, 0]), 3, lengths=[3, 1, 2]),
                                  expected)
    with pytest.raises(ValueError, match="no adjacent"):
        empirical_cooc([np.array([1]), np.array([0])], 3)
    with pytest.raises(ValueError, match="outside"):
        empirical_cooc([np.array([1, 3])], 3)


def test_empirical_cooc_approaches_analytic():
    p = random_hmm(5, 6, 0.1, seed=4)
    om = analytic_cooc(None, p.transmat, p.emissionprob)
    assert om.shape == (6, 6)
    np.testing.assert_allclose(om.sum(), 1, atol=1e-12)
    np.testing.assert_allclose(om, analytic_cooc(p.startprob, p.transmat, p.emissionprob), atol=1e-15)
    # marginals of Omega are the stationary symbol distribution
    np.testing.assert_allclose(om.sum(1), p.startprob @ p.emissionprob, atol=1e-12)
    mads = []
    for n_seq in (20, 2000):
        obs, _ = sample_sequences(*p, n_seq, 100, seed=7)
        mads.append(cooc_mad(empirical_cooc(obs, 6), om))
    assert mads[1] < 1e-3 and mads[1] < mads[0] / 4, mads


def test_cooc_mad():
    a = np.array([[0.5, 0.0], [0.25, 0.25]])
    b = np.array([[0.25, 0.25], [0.25, 0.25]])
    assert cooc_mad(a, b) == pytest.approx(0.125)
    assert cooc_mad(a, a) == 0.0
    with pytest.raises(ValueError):
        cooc_mad(a, np.zeros((3, 3)))


def test_normalized_nll_and_paper_variant():
    p = random_hmm(3, 4, 0.5, seed=0)
    model = StandardHMM(3)
    model.startprob_, model.transmat_, model.emissionprob_ = p
    seqs, _ = sample_sequences(*p, 3, [10, 30, 20], seed=1)
    ll = model.score(seqs)
    assert normalized_nll(model, seqs) == pytest.approx(-ll / 60, rel=1e-12)
    assert normalized_nll(ll, seqs) == pytest.approx(-ll / 60, rel=1e-12)
    assert normalized_nll(model.score_per_sequence(seqs), seqs) == pytest.approx(-ll / 60, rel=1e-12)
    assert paper_nll(model, seqs) == pytest.approx(-ll / (3 * 30), rel=1e-12)
    same, _ = sample_sequences(*p, 4, 15, seed=2)
    assert paper_nll(model, same) == pytest.approx(normalized_nll(model, same), rel=1e-12)


def test_demo_dataset():
    train, test, params = demo_dataset(seed=0)
    assert len(train) == 10 and len(test) == 10
    assert all(len(s) == 200 for s in train + test)
    assert params.transmat.shape == (5, 5) and params.emissionprob.shape == (5, 5)
    assert max(int(s.max()) for s in train + test) < 5
    again = demo_dataset(seed=0)
    np.testing.assert_array_equal(again.train[3], train[3])
    np.testing.assert_array_equal(again.params.transmat, params.transmat)
    assert not np.array_equal(demo_dataset(seed=1).train[0], train[0])
    assert not np.array_equal(train[0], test[0])


def test_align_states_recovers_a_permutation_and_is_optimal_by_brute_force():
    import itertools
    from densehmm_core.metrics import align_states
    rng = np.random.default_rng(7)
    n, m = 5, 7
    B = rng.dirichlet(np.full(m, 0.4), size=n)
    perm_true = rng.permutation(n)
    other = B[perm_true] + rng.normal(scale=1e-3, size=(n, m))
    perm = align_states(B, other)
    assert np.allclose(other[perm], B, atol=1e-2)
    # optimal: no permutation has a smaller total-variation cost (brute force over all 120)
    noisy = rng.dirichlet(np.ones(m), size=n)
    perm = align_states(B, noisy)

    def cost(p):
        return sum(0.5 * np.abs(B[i] - noisy[p[i]]).sum() for i in range(n))
    best = min(cost(p) for p in itertools.permutations(range(n)))
    assert cost(perm) == pytest.approx(best, abs=1e-12)
    assert sorted(perm) == list(range(n))
    with pytest.raises(ValueError, match="same shape"):
        align_states(B, B[:, :3])

"""metrics.tagging_scores against hand-computed contingency tables (issue 14, Evaluation)."""
import numpy as np
import pytest

from densehmm_core.metrics import tagging_scores

# 13 tokens; the gold tag of token 8 is missing (-1, text without gold tags) and is left out.
STATES = [0, 0, 0, 1, 1, 2, 2, 2, 2, 0, 3, 3, 3]
TAGS = [0, 0, 1, 1, 1, 2, 2, 0, -1, 2, 0, 0, 0]
# Contingency of the 12 scored tokens (rows: states, columns: tags), counted by hand:
#   state 0: tokens 0 1 2 9   -> tags 0 0 1 2 -> [2, 1, 1]
#   state 1: tokens 3 4       -> tags 1 1     -> [0, 2, 0]
#   state 2: tokens 5 6 7     -> tags 2 2 0   -> [1, 0, 2]
#   state 3: tokens 10 11 12  -> tags 0 0 0   -> [3, 0, 0]
TABLE = [[2, 1, 1], [0, 2, 0], [1, 0, 2], [3, 0, 0]]


def _entropy(counts):
    p = np.asarray(counts, dtype=float)
    p = p[p > 0] / p.sum()
    return float(-(p * np.log(p)).sum())


def _v_measure_by_hand(table):
    """Rosenberg & Hirschberg (2007): h = 1 - H(C|K)/H(C), c = 1 - H(K|C)/H(K), V = 2hc/(h+c)
    with C the gold classes (columns) and K the clusters (rows)."""
    t = np.asarray(table, dtype=float)
    n = t.sum()
    h_c, h_k = _entropy(t.sum(axis=0)), _entropy(t.sum(axis=1))
    h_c_given_k = sum(t[k].sum() / n * _entropy(t[k]) for k in range(t.shape[0]))
    h_k_given_c = sum(t[:, c].sum() / n * _entropy(t[:, c]) for c in range(t.shape[1]))
    h = 1.0 - h_c_given_k / h_c
    c = 1.0 - h_k_given_c / h_k
    return 2 * h * c / (h + c)


def test_scores_match_the_hand_computed_table():
    r = tagging_scores(np.array(STATES), np.array(TAGS))
    assert r["contingency"].tolist() == TABLE and r["n_tokens"] == 12
    # M-1: each state takes its most frequent tag: 2 + 2 + 2 + 3 = 9 of 12
    assert r["m1"] == pytest.approx(9 / 12)
    assert r["mapping"].tolist() == [0, 1, 2, 0]
    # 1-1: state 3 -> tag 0 (3), state 1 -> tag 1 (2), state 2 -> tag 2 (2) = 7; state 0 unassigned.
    # Every other assignment gives at most 6 (e.g. 0->0, 1->1, 2->2).
    assert r["one_to_one"] == pytest.approx(7 / 12)
    assert r["one_to_one_mapping"].tolist() == [-1, 1, 2, 0]
    assert r["v_measure"] == pytest.approx(_v_measure_by_hand(TABLE), rel=1e-12)


def test_lists_of_sequences_equal_flat_arrays_and_sizes():
    split = [STATES[:5], STATES[5:9], STATES[9:]]
    gsplit = [TAGS[:5], TAGS[5:9], TAGS[9:]]
    a = tagging_scores([np.array(s) for s in split], [np.array(g, dtype=np.int32) for g in gsplit])
    b = tagging_scores(np.array(STATES), np.array(TAGS))
    assert a["m1"] == b["m1"] and a["one_to_one"] == b["one_to_one"] and a["v_measure"] == b["v_measure"]
    # a state that labels no token maps to -1 and changes nothing; an unused tag adds a zero column
    c = tagging_scores(np.array(STATES), np.array(TAGS), n_states=6, n_tags=4)
    assert c["contingency"].shape == (6, 4) and c["mapping"].tolist() == [0, 1, 2, 0, -1, -1]
    assert c["m1"] == b["m1"] and c["one_to_one"] == b["one_to_one"]
    # 1-1 with 4 tags: the assignment pairs state 0 with tag 3, which it never labels: shown as none
    assert c["one_to_one_mapping"].tolist() == [-1, 1, 2, 0, -1, -1]


def test_ties_perfect_and_worst_cases():
    # state 0 sees tags 0 and 1 once each: the tie goes to the lower tag index
    r = tagging_scores(np.array([0, 0, 1]), np.array([1, 0, 1]))
    assert r["mapping"].tolist() == [0, 1] and r["m1"] == pytest.approx(2 / 3)
    # a relabelled perfect tagging scores 1 everywhere
    g = np.array([0, 1, 2, 2, 1, 0, 3])
    perm = np.array([2, 0, 3, 1])
    p = tagging_scores(perm[g], g)
    assert p["m1"] == p["one_to_one"] == pytest.approx(1.0) and p["v_measure"] == pytest.approx(1.0)
    assert p["mapping"].tolist() == np.argsort(perm).tolist()
    # one state for everything: M-1 = share of the most frequent tag, V-measure 0
    one = tagging_scores(np.zeros(7, dtype=int), g)
    assert one["m1"] == pytest.approx(2 / 7) and one["v_measure"] == pytest.approx(0.0)


def test_bad_input():
    with pytest.raises(ValueError, match="tokens"):
        tagging_scores(np.array([0, 1]), np.array([0]))
    with pytest.raises(ValueError, match="no token has a gold tag"):
        tagging_scores(np.array([0, 1]), np.array([-1, -1]))
    with pytest.raises(ValueError, match="integers"):
        tagging_scores(np.array([0.5, 1.0]), np.array([0, 1]))
    with pytest.raises(ValueError, match="outside"):
        tagging_scores(np.array([0, 3]), np.array([0, 1]), n_states=2)


# --------------------------------------------------------------- MAD without m x m arrays
@pytest.mark.parametrize("seed,n,m,stationary", [(0, 3, 7, True), (1, 5, 40, False), (2, 4, 200, True)])
def test_cooc_mad_large_equals_the_dense_mad(seed, n, m, stationary):
    from densehmm_core.maths import analytic_cooc, empirical_cooc
    from densehmm_core.metrics import cooc_mad, cooc_mad_large
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.ones(n), size=n)
    B = rng.dirichlet(np.full(m, 0.3), size=n)
    pi = None if stationary else rng.dirichlet(np.ones(n))
    seqs = [rng.integers(0, m, size=int(k)) for k in rng.integers(1, 30, size=25)]
    dense = cooc_mad(empirical_cooc(seqs, m), analytic_cooc(pi, A, B))
    assert cooc_mad_large(seqs, m, pi, A, B) == pytest.approx(dense, rel=1e-10, abs=1e-15)
    with pytest.raises(ValueError, match="no adjacent"):
        cooc_mad_large([np.array([1]), np.array([2])], m, pi, A, B)


@pytest.mark.parametrize("seed", range(6))
def test_v_measure_equals_scikit_learn(seed):
    from sklearn.metrics import v_measure_score
    rng = np.random.default_rng(seed)
    n_tok = int(rng.integers(1, 400))
    pred = rng.integers(0, int(rng.integers(1, 9)), size=n_tok)
    gold = rng.integers(0, int(rng.integers(1, 7)), size=n_tok)
    if seed == 5:   # a perfectly homogeneous but incomplete clustering
        pred = np.arange(n_tok) % 11
        gold = pred // 4
    r = tagging_scores(pred, gold)
    assert r["v_measure"] == pytest.approx(v_measure_score(gold, pred), rel=1e-12, abs=1e-15)

"""Spectral initialisation (densehmm_core.spectral; ``init_method="spectral"``): the context
matrix against a brute-force count, the SVD against numpy's, recovery of a synthetic HMM's
states from context alone, determinism, and the estimators' use of it."""
import numpy as np
import pytest

from densehmm_core import model_from_config
from densehmm_core.cooc_sparse import pair_counts
from densehmm_core.dense import DenseHMM
from densehmm_core.events import START_PHASE
from densehmm_core.maths import softmax
from densehmm_core.metrics import tagging_scores
from densehmm_core.spectral import (LOGIT_SCALE, boundary_counts, context_embeddings, context_matrix,
                                    spectral_embeddings, spectral_matrices)
from densehmm_core.standard import StandardHMM


def _brute_context(seqs, m, K):
    """Count left/right neighbours token by token (the definition, no pair counts)."""
    freq = np.zeros(m)
    for s in seqs:
        for a, b in zip(s[:-1], s[1:]):
            freq[a] += 1
            freq[b] += 1
    order = np.argsort(-freq, kind="stable")
    ctx = {int(w): K for w in range(m)}
    for i, w in enumerate(order[:K]):
        ctx[int(w)] = i
    X = np.zeros((m, 2 * (K + 2)))
    for s in seqs:
        X[s[0], K + 1] += 1                 # opens a sequence
        X[s[-1], 2 * K + 3] += 1            # closes one
        for t in range(len(s) - 1):
            X[s[t + 1], ctx[int(s[t])]] += 1            # left neighbour of s[t+1]
            X[s[t], K + 2 + ctx[int(s[t + 1])]] += 1    # right neighbour of s[t]
    return np.log1p(X), freq


def _cyclic_hmm(seed=0, n=3, per_state=4, n_seq=300, length=20):
    """State i emits only symbols i*per_state .. i*per_state+per_state-1; states mostly cycle."""
    rng = np.random.default_rng(seed)
    A = np.full((n, n), 0.1 / (n - 1))
    for i in range(n):
        A[i, (i + 1) % n] = 0.9
    seqs, states = [], []
    for _ in range(n_seq):
        z = [int(rng.integers(n))]
        for _t in range(length - 1):
            z.append(int(rng.choice(n, p=A[z[-1]])))
        z = np.array(z)
        seqs.append((z * per_state + rng.integers(per_state, size=length)).astype(np.int64))
        states.append(z.astype(np.int32))
    return seqs, states, n * per_state


def test_context_matrix_equals_a_brute_force_count():
    rng = np.random.default_rng(3)
    m = 9
    seqs = [rng.integers(m, size=int(rng.integers(2, 12))) for _ in range(40)]
    pc = pair_counts(seqs, m)
    assert pc.n_pairs == sum(len(s) - 1 for s in seqs)
    for K in (1, 4, 9, 50):
        X, freq = context_matrix(pc, K, *boundary_counts(seqs, m))
        ref, ref_freq = _brute_context(seqs, m, min(K, m))
        np.testing.assert_allclose(freq, ref_freq, rtol=1e-12)
        np.testing.assert_allclose(X.toarray(), ref, rtol=1e-12, atol=1e-12)


def test_counts_are_recovered_from_a_dense_matrix_without_the_total():
    seqs = [np.array([0, 1, 2, 1, 2]), np.array([2, 2, 0])]
    pc = pair_counts(seqs, 3)
    dense = pc.to_dense() * 7.0  # any scale; the rarest pair counts 1 again
    from densehmm_core.cooc_sparse import PairCounts
    X1, _ = context_matrix(pc, 3)
    X2, _ = context_matrix(PairCounts.from_dense(dense), 3)
    np.testing.assert_allclose(X1.toarray(), X2.toarray(), rtol=1e-12)


def test_context_embeddings_are_the_truncated_svd():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(30, size=25) for _ in range(60)]
    pc = pair_counts(seqs, 30)
    X, _ = context_matrix(pc, 10)
    E = context_embeddings(pc, 5, 10)
    u, s, _ = np.linalg.svd(X.toarray(), full_matrices=False)
    ref = u[:, :5] * s[:5]
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, rtol=1e-12)
    # equal up to the sign of each column: compare the sign-free Gram matrices
    np.testing.assert_allclose(E @ E.T, ref @ ref.T, atol=1e-9)


def test_the_clusters_recover_the_states_of_a_synthetic_hmm():
    seqs, states, m = _cyclic_hmm()
    emb = spectral_embeddings(pair_counts(seqs, m), 3, 4, np.random.default_rng(0),
                              bounds=boundary_counts(seqs, m))
    cluster = np.argmax(emb["V"] @ emb["W"].T, axis=1)        # each symbol's most likely state
    truth = np.arange(m) // 4
    # one cluster per true state: a bijection
    assert len(set(zip(cluster.tolist(), truth.tolist()))) == 3 == len(set(cluster.tolist()))
    # logits are s cos(c_i, e_k): bounded by the documented scale
    logits = emb["W"] @ emb["V"].T
    assert np.max(np.abs(logits)) <= LOGIT_SCALE * (1 + 1e-12)
    # a standard HMM started there and not trained decodes the states perfectly (up to names)
    model = StandardHMM(3, m, n_iter=0, seed=0, init_method="spectral").fit(seqs)
    scores = tagging_scores(model.predict(seqs), states, n_states=3, n_tags=3)
    assert scores["m1"] == 1.0 and scores["one_to_one"] == 1.0


def test_standard_start_is_the_documented_matrices():
    seqs, _, m = _cyclic_hmm(seed=1, n_seq=50)
    model = StandardHMM(3, m, n_iter=0, seed=5, init_method="spectral").fit(seqs)
    pi, A, B = spectral_matrices(seqs, m, 3, np.random.default_rng(5))
    np.testing.assert_array_equal(model.emissionprob_, B)
    np.testing.assert_allclose(pi, 1 / 3)
    np.testing.assert_allclose(A, 1 / 3)
    emb = spectral_embeddings(pair_counts(seqs, m), 3, 32, np.random.default_rng(5), 0.0,
                              bounds=boundary_counts(seqs, m))
    np.testing.assert_allclose(B, softmax(emb["W"] @ emb["V"].T, axis=1), rtol=1e-12)


def test_dense_spectral_start_is_seeded_and_restarts_differ():
    seqs, states, m = _cyclic_hmm(seed=2, n_seq=80)
    cfg = dict(n_states=3, dim=4, fit_method="em", seed=7, n_iter=2, mstep_steps=3, tol=0.0,
               init_method="spectral", init_scale=0.2)
    a = model_from_config("dense", cfg).fit(seqs)
    b = model_from_config("dense", cfg).fit(seqs)
    np.testing.assert_array_equal(a.emissionprob_, b.emissionprob_)
    assert a.get_config()["init_method"] == "spectral"
    # restarts 0 and 1 start from different k-means runs (different generators)
    pc, bounds = pair_counts(seqs, m), boundary_counts(seqs, m)
    e0 = spectral_embeddings(pc, 3, 4, a._rng(0), 0.2, bounds=bounds)
    e1 = spectral_embeddings(pc, 3, 4, a._rng(1), 0.2, bounds=bounds)
    assert not np.array_equal(e0["U"], e1["U"])
    # and the trained model still tags the synthetic states perfectly
    scores = tagging_scores(a.predict(seqs), states, n_states=3, n_tags=3)
    assert scores["m1"] == 1.0


def test_dense_cooc_fit_starts_spectral_from_the_pair_counts():
    seqs, states, m = _cyclic_hmm(seed=4, n_seq=100)
    model = DenseHMM(3, 4, fit_method="cooc", seed=0, cooc_steps=1, finish="none", init_method="spectral",
                     init_scale=0.2).fit(seqs)
    assert tagging_scores(model.predict(seqs), states, n_states=3, n_tags=3)["m1"] == 1.0


@pytest.mark.parametrize("cls,args", [(DenseHMM, (2, 2)), (StandardHMM, (2,))])
def test_unknown_init_method_is_an_error(cls, args):
    with pytest.raises(ValueError, match="init_method"):
        cls(*args, init_method="kmeans")


@pytest.mark.parametrize("kind", ["dense", "standard"])
def test_a_small_alphabet_starts_from_contexts_and_beats_the_random_start(kind):
    """More states than symbols seen in pairs (the demo: 5 symbols, 10 states): the states come from the
    tokens' contexts (a symbol and the one before it; 10 states need no longer contexts here), and the
    fit beats its random-start twin (DenseHMM-EM with l = 3 after 40 iterations: its M-step sharpens
    the half-mixed emissions in about 20; Baum-Welch after 5)."""
    from densehmm_core.synthetic import demo_dataset
    train, _, _ = demo_dataset(0, n_train=50, n_test=50, length=200)
    n = 10
    make = ((lambda init: DenseHMM(n, 3, fit_method="em", seed=0, n_iter=40, init_method=init)) if kind == "dense"
            else (lambda init: StandardHMM(n, seed=0, n_iter=5, init_method=init)))
    model = make("spectral")
    events = list(model.iter_fit(train))
    steps = [e for e in events if e.phase != START_PHASE]
    assert steps[0].metrics["start"] == "spectral"
    assert "contexts" in {e.metrics["stage"] for e in events if e.phase == START_PHASE}
    B0 = steps[0].params["emissionprob"]
    assert np.unique(B0.round(6), axis=0).shape[0] == n        # no two states start alike
    twin = make("random")
    twin_steps = [e for e in twin.iter_fit(train) if e.phase != START_PHASE]
    gain = twin_steps[-1].metrics["train_nll"] - steps[-1].metrics["train_nll"]
    assert gain > (0.1 if kind == "dense" else 0.005), gain     # measured: 0.21 (dense), 0.015 (standard)


def _brute_context_states(seqs, m, order):
    """pi, A, B of the labelling 'one state per distinct (symbols before, symbol)' counted token by
    token, states in the order of their contexts (earliest symbol first, boundary = m last)."""
    ctx = []
    for x in seqs:
        ctx.append([tuple(int(x[t - j]) if t - j >= 0 else m for j in range(order, 0, -1)) + (int(x[t]),)
                    for t in range(len(x))])
    keys = sorted({c for cs in ctx for c in cs})
    state = {c: i for i, c in enumerate(keys)}
    n = len(keys)
    pi, A, B = np.full(n, 0.01), np.full((n, n), 0.01), np.full((n, m), 0.01)
    for x, cs in zip(seqs, ctx):
        pi[state[cs[0]]] += 1
        for t, c in enumerate(cs):
            B[state[c], x[t]] += 1
            if t + 1 < len(cs):
                A[state[c], state[cs[t + 1]]] += 1
    freq = np.bincount(np.concatenate(seqs), minlength=m) / sum(len(x) for x in seqs)
    return pi / pi.sum(), A / A.sum(axis=1, keepdims=True), 0.5 * B / B.sum(axis=1, keepdims=True) + 0.5 * freq, n


@pytest.mark.parametrize("n,order", [(6, 1), (11, 2)])
def test_context_states_count_the_labelling_of_the_tokens_by_their_contexts(n, order):
    """As many states as distinct contexts: every context is its own state and pi, A, B are the
    counts of that labelling plus 0.01 each, B's rows half and half with the symbols' frequencies (the
    brute-force count above); with fewer distinct
    (symbol before, symbol) contexts than states the contexts grow a symbol."""
    from densehmm_core.spectral import context_states
    seqs = [np.array([0, 1, 1, 0, 1]), np.array([1, 0, 0]), np.array([0, 0, 1, 1, 1, 0])]
    pi_b, A_b, B_b, k = _brute_context_states(seqs, 2, order)
    if k != n:   # the fixture's count of contexts (6 of order 1, 11 of order 2)
        pytest.fail(f"{k} contexts of order {order}, not {n}")
    pi, A, B = context_states(seqs, 2, n, np.random.default_rng(0))
    np.testing.assert_allclose(pi, pi_b, rtol=1e-13)
    np.testing.assert_allclose(A, A_b, rtol=1e-13)
    np.testing.assert_allclose(B, B_b, rtol=1e-13)


def test_fewer_contexts_than_states_even_at_the_longest_context_copy_the_most_frequent():
    """Two tokens have at most two contexts at any order: the 5 states left over copy the more frequent
    context's state (its emissions) and differ by random transitions; every row is a distribution."""
    from densehmm_core.spectral import context_states
    pi, A, B = context_states([np.array([0, 1]), np.array([0, 1])], 2, 7, np.random.default_rng(0))
    assert pi.shape == (7,) and A.shape == (7, 7) and B.shape == (7, 2)
    for P in (pi[None, :], A, B):
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(P > 0)
    assert sorted(B[:2].argmax(axis=1)) == [0, 1]    # the contexts (b b b b 0) and (b b b 0 1)
    for j in range(2, 7):
        assert np.allclose(B[j], B[0]) or np.allclose(B[j], B[1])
    assert np.abs(A[2:] - A[[0]]).max() > 1e-3       # the copies' transitions differ


def test_context_states_find_a_second_order_chain_the_symbol_start_cannot():
    """0 0 1 1 0 0 1 1 ...: every symbol follows from the two before it, so its first-order Markov
    chain is a coin flip (0.69 nats per token) while 4 states recover it exactly.  From the context
    start Baum-Welch finds that model in 20 iterations (NLL per token < 0.1; the phase of a sequence's
    first token is a draw of 4, so even the true model pays 0.023); from the start by symbols (the
    co-occurrence fit's: one state per symbol, copies) it stays at the coin flip."""
    from densehmm_core.spectral import context_states
    seqs = [np.tile([0, 0, 1, 1], 25)[s:s + 60] for s in (0, 1, 2, 3) * 5]
    ntok = sum(len(x) for x in seqs)
    n = 4
    ctx = StandardHMM(n, n_iter=20, tol=0, seed=0)
    ctx.startprob_, ctx.transmat_, ctx.emissionprob_ = context_states(seqs, 2, n, np.random.default_rng(0))
    start = ctx.transmat_.copy()
    ctx.fit(seqs, init=False)
    assert -ctx.score(seqs) / ntok < 0.1
    emb = spectral_embeddings(pair_counts(seqs, 2), n, 8, np.random.default_rng(0), 0.0,
                              bounds=boundary_counts(seqs, 2))
    sym = StandardHMM(n, n_iter=20, tol=0, seed=0)
    sym.startprob_, sym.transmat_ = np.random.default_rng(1).dirichlet(np.ones(n)), \
        np.random.default_rng(2).dirichlet(np.ones(n), size=n)
    sym.emissionprob_ = softmax(emb["W"] @ emb["V"].T, axis=1)
    assert -sym.score(seqs) / ntok > 0.6
    sym.fit(seqs, init=False)
    assert -sym.score(seqs) / ntok > 0.6
    spectral = StandardHMM(n, n_iter=0, seed=0).fit(seqs)       # the default start of a fit is the context one
    np.testing.assert_allclose(spectral.transmat_, start, rtol=1e-12)


def test_embeddings_from_matrices_give_back_the_matrices_when_the_length_reaches_their_rank():
    """softmax(Z U^T), softmax(W V^T), softmax(U z_start) of the embeddings are A, B, pi (dim = n: the
    row-centred logarithms have rank < n); a shorter length gives the best rank-l logits."""
    from densehmm_core.spectral import embeddings_from_matrices
    rng = np.random.default_rng(7)
    n, m = 5, 3
    pi, A, B = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), size=n), rng.dirichlet(np.ones(m), size=n)
    emb = embeddings_from_matrices(pi, A, B, n)
    model = DenseHMM(n, n, n_symbols=m).set_embeddings(emb, start_mode="embedding")
    np.testing.assert_allclose(model.transmat_, A, rtol=1e-10)
    np.testing.assert_allclose(model.emissionprob_, B, rtol=1e-10)
    np.testing.assert_allclose(model.startprob_, pi, rtol=1e-10)
    short = embeddings_from_matrices(pi, A, B, 2)
    logA = np.log(A) - np.log(A).mean(axis=1, keepdims=True)
    sv = np.linalg.svd(logA, compute_uv=False)
    err = np.linalg.norm(short["Z"] @ short["U"].T - logA)
    np.testing.assert_allclose(err, np.sqrt(np.sum(sv[2:] ** 2)), rtol=1e-10)   # Eckart-Young


def test_the_cooc_fits_small_alphabet_start_copies_the_most_frequent_symbols():
    """A co-occurrence fit has pairs, not sequences: with more states than symbols every symbol is one
    state's cluster and the states left over copy the most frequent symbols' rows."""
    from densehmm_core.synthetic import demo_dataset
    train, _, _ = demo_dataset(0, n_train=50, n_test=50, length=200)
    m, n = 5, 10
    emb = spectral_embeddings(pair_counts(train, m), n, 3, np.random.default_rng(0), 0.2)
    B0 = softmax(emb["W"] @ emb["V"].T, axis=1)
    counts = np.bincount(np.concatenate(train), minlength=m)
    by_freq = np.argsort(-counts, kind="stable")
    np.testing.assert_array_equal(B0.argmax(axis=1), by_freq[np.arange(n) % m])   # one state per symbol, then copies
    np.testing.assert_allclose(B0[:m], B0[m:], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seqs,why", [([np.array([0]), np.array([1]), np.array([2])], "no adjacent pairs")])
@pytest.mark.parametrize("make", [lambda: StandardHMM(3, 3, n_iter=1, seed=0),
                                  lambda: DenseHMM(3, 2, 3, fit_method="em", n_iter=1, mstep_steps=1, seed=0),
                                  lambda: DenseHMM(3, 2, 3, fit_method="cooc", cooc_steps=2, finish_steps=0,
                                                   seed=0)])
def test_a_spectral_start_the_data_cannot_give_starts_randomly_and_says_why(seqs, why, make):
    """The default start is spectral; where the data cannot give one, the fit starts from the random
    start (the same parameters as init_method="random"); the stream says why in a start event before
    the first step (issue 22), and again on its first step's event.  A random start has no start events."""
    model = make()
    if why == "no adjacent pairs" and model.kind == "dense" and model.fit_method == "cooc":
        return  # a co-occurrence fit needs pairs at all (its own clear error, tested in test_dense.py)
    events = list(model.iter_fit(seqs))
    starts = [e for e in events if e.phase == START_PHASE]
    steps = [e for e in events if e.phase != START_PHASE]
    assert events == starts + steps            # the start's events come first (reading the pairs, maybe)
    said = starts[-1]
    assert said.params is None and said.loss is None
    assert said.metrics["stage"] == "random" and said.metrics["start"] == f"random ({why})"
    assert said.summary() == f"start: random ({why})"
    assert {e.metrics["stage"] for e in starts[:-1]} <= {"pairs"}
    assert steps[0].metrics["start"] == f"random ({why})"
    cfg = dict(model.get_config(), init_method="random")
    twin = type(model)(**cfg)
    twin_events = list(twin.iter_fit(seqs))
    assert not any(e.phase == START_PHASE for e in twin_events)
    first = twin_events[0]
    assert first.metrics["start"] == "random"
    np.testing.assert_array_equal(first.params["emissionprob"], steps[0].params["emissionprob"])


def test_the_spectral_start_memory_does_not_grow_with_the_vocabulary():
    """The spectral start's peak (its Gram matrix of at most 2 x 1002 context columns) is the same at
    m = 3000 and m = 6000, and below an m x m float64 array at m = 6000 (288 MB)."""
    import tracemalloc
    peaks = []
    for m in (3000, 6000):
        rng = np.random.default_rng(0)
        seqs = [rng.integers(0, m, size=20) for _ in range(50)] + [np.arange(m)]
        tracemalloc.start()
        try:
            DenseHMM(3, 2, fit_method="em", seed=0, n_iter=1, mstep_steps=1).fit(seqs)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] < 1.3 * peaks[0]
    assert peaks[1] < 6000 * 6000 * 8 / 2


@pytest.mark.parametrize("argv,kind", [(["--model", "standard", "--iter", "1"], "standard"),
                                       (["--method", "em", "--dim", "2", "--iter", "1", "--mstep-steps", "2",
                                         "--init-scale", "0.3"], "dense")])
def test_cli_train_init_options_reach_the_saved_model(tmp_path, argv, kind):
    from densehmm_core.cli import main
    from densehmm_core.modelfile import load_model
    out = tmp_path / "m.h5"
    assert main(["train", "demo", "--states", "3", "--init", "spectral", "--out", str(out), "--quiet"] + argv) == 0
    model = load_model(out)
    assert model.kind == kind and model.get_config()["init_method"] == "spectral"
    if kind == "dense":
        assert model.get_config()["init_scale"] == 0.3


def test_cli_init_scale_on_a_standard_model_is_one_line_exit_2(tmp_path, capsys):
    from densehmm_core.cli import main
    assert main(["train", "demo", "--model", "standard", "--states", "2", "--init-scale", "0.3"]) == 2
    assert "--init-scale applies to dense models only" in capsys.readouterr().err

"""Spectral initialisation of DenseHMM embeddings from the co-occurrence of adjacent symbols.

``DenseHMM(init_method="spectral")`` starts from embeddings that already separate the
symbols by the company they keep, instead of random ones:

1. **Context vectors.**  For every symbol ``k``: how often each of the ``n_context`` most
   frequent symbols occurs immediately before it and immediately after it (all other
   symbols share one "other" column on each side), read from the adjacent-pair counts
   (the same :class:`~densehmm_core.cooc_sparse.PairCounts` the co-occurrence fit uses).
   The counts are damped with ``log(1 + count)``.
2. **Truncated SVD** of that ``m x 2 (n_context + 1)`` matrix to ``dim`` columns (the top
   eigenvectors of its small Gram matrix, by Lanczos from a fixed start vector: deterministic),
   each row scaled to unit length: ``E`` (``m x dim``).
3. **Clusters.**  Weighted k-means (weights ``sqrt(count)``, k-means++ starts from the
   model's seeded generator, best of ``n_init``) of the rows of ``E`` of the
   ``n_cluster_symbols`` most frequent symbols into ``n`` clusters; ``c_i`` the unit-length
   centroids.
4. **Embeddings.**  ``V = sqrt(s) E`` and ``W = sqrt(s) C``, so the initial emission logits
   are ``w_i . v_k = s cos(c_i, e_k)`` with ``s = LOGIT_SCALE``: state ``i`` starts by
   emitting the symbols of cluster ``i``.  ``U``, ``Z`` and ``z_start`` are random
   (standard deviation ``init_scale``), i.e. nearly uniform transitions that the first
   M-step estimates from the emission posteriors.  A standard HMM
   (:func:`spectral_matrices`) starts from uniform ``pi`` and ``A``, or, where two states' emission
   rows coincide (copies, or coinciding centroids), from random ones (Dirichlet(1) rows): under
   Baum-Welch states with equal emissions and uniform transitions would stay equal for ever.

**A small alphabet** (fewer symbols seen in adjacent pairs than states: DNA's 4 bases with 8
states, 21 residues with 40) cannot give every state a cluster of symbols.  Fitting sequences
(EM, the likelihood fit, Baum-Welch), the states come from the tokens' **contexts** instead
(:func:`context_states`): each token's context is the token with the ``k`` symbols before it
(``k`` = 1, or more up to :data:`MAX_CONTEXT_ORDER` until there are at least ``n`` distinct
contexts); weighted k-means (weights ``sqrt(count)``) groups the contexts by what follows them
(the square roots of the next symbol's frequencies) and by their own symbol (weight
:data:`CONTEXT_SYMBOL_WEIGHT`) into ``n`` states; every token takes its context's state, and
``pi``, ``A``, ``B`` are the counts of that labelling (plus :data:`CONTEXT_PSEUDOCOUNT` each),
the emission rows then mixed half and half (:data:`CONTEXT_EMISSION_MIX`) with the symbols'
frequencies: rows of one symbol each leave Baum-Welch where it starts.  A DenseHMM takes the
embeddings closest to them (:func:`embeddings_from_matrices`).  The earlier start, one state per
symbol and the states left over copies of the most frequent, emitted one symbol each and left EM at
the first-order Markov chain (measured, held-out NLL per token and the table:
docs/RESULTS.md, "A small alphabet's start"; tests/benchmarks/small_alphabet_start.py).  A co-occurrence fit knows
only the pairs, not the sequences: there, every symbol is its own cluster and the states left
over copy the most frequent symbols' rows, told apart by their random transitions.

This is the distributional idea behind Brown clustering and spectral word embeddings
(context counts, low-rank factorisation), here used only to start EM.  Everything comes from
the training data itself; no outside text or vectors.  Measured effect on part-of-speech
induction: docs/RESULTS.md, section 4.

**Progress and cancel.**  The ``*_steps`` generators do the same work and yield a
:class:`~densehmm_core.events.StartStep` when each stage (pairs, SVD, k-means) begins and ends and
at most every :data:`TICK_S` seconds while it works; the fits turn them into start events and poll
their cancel token after each (:func:`densehmm_core.events.run_start`).  ARPACK's Lanczos iterations
(``eigsh``: 0.15-0.3 s for the Penn Treebank sample's words on the 2-core development machine, more
than 0.5 s when it is loaded) poll the token at every matrix-vector product
(:func:`densehmm_core.events.check_cancel`) and stop there; k-means reports between its Lloyd
iterations.  Counting the pairs, the context matrix and the Gram matrix are single calls between two
checks (about 0.1 s each on those words).  Everything runs in the fit's own thread: an earlier
version ran the long calls on a helper thread that a cancel abandoned, and a thread left inside
multi-threaded BLAS deadlocked the process's next ``fork`` (the model-file probe).  A cancel takes
effect within about :data:`TICK_S` seconds at any stage (docs/PERFORMANCE.md, "The start in the
progress stream").
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, Generator, Optional, TypeVar

import numpy as np

from .events import StartStep, check_cancel

__all__ = ["LOGIT_SCALE", "STANDARD_RANK", "TICK_S", "MAX_CONTEXT_ORDER", "CONTEXT_SYMBOL_WEIGHT",
           "CONTEXT_PSEUDOCOUNT", "CONTEXT_EMISSION_MIX", "context_matrix", "context_embeddings", "weighted_kmeans",
           "context_states", "context_states_steps", "embeddings_from_matrices", "needs_contexts", "symbols_in_pairs",
           "boundary_counts", "spectral_embeddings", "spectral_matrices", "spectral_unavailable",
           "spectral_embeddings_steps", "spectral_matrices_steps", "pairs_steps", "within", "finish"]

LOGIT_SCALE = 36.0   # initial emission logits s * cos(c_i, e_k); 9 and 36 measured, 36 better (RESULTS.md)
STANDARD_RANK = 32   # SVD rank of a StandardHMM's spectral start (it has no embedding length)
MAX_CONTEXT_ORDER = 4          # a small alphabet's contexts: at most the token and 4 symbols before it
CONTEXT_SYMBOL_WEIGHT = 2.0    # k-means of contexts: weight of the token's own symbol (0.5: alike; 0: worse)
CONTEXT_PSEUDOCOUNT = 0.01     # added to every count of a small alphabet's start (no probability 0)
CONTEXT_EMISSION_MIX = 0.5     # its emission rows: this share the symbols' frequencies (0-0.7 measured)
TICK_S = 0.1         # inside k-means, a progress step (and a cancel check) at least this often

T = TypeVar("T")


def within(context, steps: Generator[StartStep, None, T]) -> Generator[StartStep, None, T]:
    """``steps`` with each piece of its work inside ``context()`` (e.g. an engine's ``compute``: one BLAS
    thread, no floating-point warnings), left at every step (such a context must not span a yield)."""
    while True:
        with context():
            try:
                step = next(steps)
            except StopIteration as stop:
                return stop.value
        yield step


def finish(steps: Generator[StartStep, None, T]) -> T:
    """Run a ``*_steps`` generator to its end, without progress; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def _counts(pairs) -> np.ndarray:
    """Pair counts from the normalised ``vals`` (exact when ``pairs.n_pairs`` is known,
    otherwise scaled so that the rarest pair counts 1)."""
    vals = np.asarray(pairs.vals, np.float64)
    total = float(pairs.n_pairs)
    if total <= 0:
        total = 1.0 / float(vals.min())
    return vals * total


def context_matrix(pairs, n_context: int = 1000, starts=None, ends=None):
    """The ``m x 2 (K + 2)`` sparse matrix of ``log(1 + count)`` of left and right
    neighbours (``K = min(n_context, m)`` most frequent symbols, one "other" column per side,
    and one "sequence boundary" column per side: ``starts[k]`` / ``ends[k]``, how often
    symbol k opens / closes a sequence, when given), and the symbols' occurrence counts (as
    first or second member of a pair)."""
    import scipy.sparse as sp
    m = int(pairs.m)
    rows, cols = np.asarray(pairs.rows, np.int64), np.asarray(pairs.cols, np.int64)
    cnt = _counts(pairs)
    freq = np.bincount(rows, cnt, minlength=m) + np.bincount(cols, cnt, minlength=m)
    K = int(min(max(n_context, 1), m))
    order = np.argsort(-freq, kind="stable")
    ctx = np.full(m, K, np.int64)
    ctx[order[:K]] = np.arange(K)
    # pair (a, b): b has a on its left, a has b on its right
    r = [cols, rows]
    c = [ctx[rows], ctx[cols] + (K + 2)]
    v = [cnt, cnt]
    for counts, col in ((starts, K + 1), (ends, 2 * K + 3)):
        if counts is not None:
            counts = np.asarray(counts, np.float64)
            nz = np.flatnonzero(counts)
            r.append(nz)
            c.append(np.full(nz.size, col))
            v.append(counts[nz])
    X = sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))), shape=(m, 2 * (K + 2)))
    X.sum_duplicates()
    X.data = np.log1p(X.data)
    return X, freq


def context_embeddings(pairs, dim: int, n_context: int = 1000) -> np.ndarray:
    """Unit-length rows ``E`` (``m x dim``): the context matrix's rank-``dim`` SVD ``U S``.

    Columns beyond the matrix's rank are zero; symbols never seen in a pair get zero rows.
    """
    return finish(_svd_rows(context_matrix(pairs, n_context)[0], dim))


def _top_vectors(X, k: int) -> np.ndarray:
    """The top ``k`` eigenvectors of the Gram matrix ``X^T X`` (columns, largest eigenvalue first).
    A cancel of the fit interrupts the Lanczos iterations at their next matrix-vector product
    (:func:`densehmm_core.events.check_cancel`)."""
    gram = (X.T @ X).toarray()
    N = gram.shape[0]
    if k < N - 1 and N > 64:
        # only the top k eigenpairs, by Lanczos (ARPACK) from a fixed start vector (deterministic):
        # about 0.1 s where the full decomposition of the 2,004 x 2,004 Gram matrix took seconds
        from scipy.sparse.linalg import LinearOperator, eigsh

        def matvec(v):
            check_cancel()
            return gram.dot(v)
        op = LinearOperator(gram.shape, matvec=matvec, dtype=gram.dtype)
        w, vecs = eigsh(op, k=k, which="LA", v0=np.ones(N) / np.sqrt(N), tol=0.0)
        return vecs[:, np.argsort(-w, kind="stable")]
    check_cancel()
    w, vecs = np.linalg.eigh(gram)
    return vecs[:, ::-1][:, :k]


def _in_step(step: StartStep, fn: Callable[..., T], *args: Any) -> Generator[StartStep, None, T]:
    """``fn(*args)`` as one step of a start: ``step`` is reported (and the cancel token polled) first,
    then ``fn`` runs in this thread; its long loops poll the token themselves
    (:func:`densehmm_core.events.check_cancel`).  No helper thread: a thread left running after a
    cancel, inside multi-threaded BLAS, deadlocked the process's next ``fork``."""
    yield step
    return fn(*args)


def _svd_rows(X, dim: int) -> Generator[StartStep, None, np.ndarray]:
    N = X.shape[1]
    k = int(min(dim, N))
    what = f"rank {k} of {X.shape[0]} x {N}"
    top = yield from _in_step(StartStep("svd", 0.3, what), _top_vectors, X, k)
    top = top * np.where(top[np.argmax(np.abs(top), axis=0), np.arange(k)] < 0, -1.0, 1.0)  # fixed signs
    E = np.zeros((X.shape[0], int(dim)))
    E[:, :k] = X @ top
    norms = np.linalg.norm(E, axis=1, keepdims=True)
    return np.divide(E, norms, out=np.zeros_like(E), where=norms > 0)


def _sq_dist(X: np.ndarray, C: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances of the rows of ``X`` to the rows of ``C`` (``x2`` = row norms of X)."""
    return np.maximum(x2[:, None] - 2.0 * (X @ C.T) + np.einsum("kd,kd->k", C, C)[None, :], 0.0)


def _kmeans_pp(X: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator, x2: np.ndarray) -> np.ndarray:
    """Greedy weighted k-means++ starts (Arthur and Vassilvitskii, 2007, with local trials): the first
    centre drawn by weight; for each next one ``2 + log k`` candidates are drawn by weight x squared
    distance to the nearest centre so far, and the one that lowers the total weighted squared
    distance most is kept (plain one-draw k-means++ clustered words measurably worse:
    docs/RESULTS.md, section 4)."""
    n_local = 2 + int(np.log(k))
    C = np.empty((k, X.shape[1]))
    C[0] = X[rng.choice(len(X), p=w / w.sum())]
    closest = _sq_dist(X, C[:1], x2)[:, 0]
    for j in range(1, k):
        cum = np.cumsum(w * closest)
        if cum[-1] <= 0:
            C[j] = X[int(rng.integers(len(X)))]
            continue
        cand = np.minimum(np.searchsorted(cum, rng.random(n_local) * cum[-1]), len(X) - 1)
        d = np.minimum(closest[None, :], _sq_dist(X, X[cand], x2).T)      # (n_local, N)
        best = int(np.argmin(d @ w))
        C[j] = X[cand[best]]
        closest = d[best]
    return C


def weighted_kmeans(points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator,
                    n_init: int = 3, max_iter: int = 300) -> np.ndarray:
    """Centroids (``k x d``) of weighted k-means: greedy weighted k-means++ starts from ``rng``, Lloyd
    iterations until the assignment stops changing (at most ``max_iter``), the best of ``n_init``
    runs by weighted inertia.  A cluster left empty takes the point farthest from its centre.
    With fewer distinct points than ``k`` some centroids coincide (those states start alike and
    are told apart by their random transition embeddings).  numpy only (no scikit-learn: its
    import alone costs seconds at the start of every fit)."""
    return finish(_kmeans_steps(points, weights, k, rng, n_init, max_iter))


def _kmeans_steps(points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator,
                  n_init: int = 3, max_iter: int = 300,
                  noun: str = "symbols") -> Generator[StartStep, None, np.ndarray]:
    """:func:`weighted_kmeans` reporting progress: a step when each run begins and at most every
    :data:`TICK_S` seconds between its Lloyd iterations (``noun``: what the points are, in its texts)."""
    X = np.asarray(points, np.float64)
    w = np.asarray(weights, np.float64)
    k = int(k)
    if X.shape[0] < k:
        raise ValueError(f"k-means needs at least {k} points, got {X.shape[0]}")
    x2 = np.einsum("nd,nd->n", X, X)
    best = None
    runs = int(n_init)
    for run in range(runs):
        what = f"{k} clusters of {X.shape[0]} {noun}, run {run + 1} of {runs}"
        yield StartStep("kmeans", run / runs, what)
        tick = time.perf_counter()
        C = _kmeans_pp(X, w, k, rng, x2)
        labels = None
        for it in range(int(max_iter)):
            if time.perf_counter() - tick >= TICK_S:
                yield StartStep("kmeans", (run + min(0.9, it / 50.0)) / runs, f"{what}, iteration {it + 1}")
                tick = time.perf_counter()
            D = _sq_dist(X, C, x2)
            new = np.argmin(D, axis=1)
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            mass = np.bincount(labels, weights=w, minlength=k)
            sums = np.zeros_like(C)
            np.add.at(sums, labels, w[:, None] * X)
            empty = mass <= 0
            C = np.divide(sums, mass[:, None], out=C.copy(), where=~empty[:, None])
            if empty.any():
                far = np.argsort(-D[np.arange(len(X)), labels], kind="stable")[:int(empty.sum())]
                C[empty] = X[far]
        inertia = float(np.sum(w * _sq_dist(X, C, x2)[np.arange(len(X)), np.argmin(_sq_dist(X, C, x2), axis=1)]))
        if best is None or inertia < best[0]:
            best = (inertia, C)
    assert best is not None
    yield StartStep("kmeans", 1.0, f"{k} clusters of {X.shape[0]} {noun}, best of {runs} runs")
    return best[1]


def boundary_counts(seqs, m: int):
    """``(starts, ends)``: how often each of the ``m`` symbols opens / closes a sequence."""
    firsts = np.array([s[0] for s in seqs if len(s)], np.int64)
    lasts = np.array([s[-1] for s in seqs if len(s)], np.int64)
    return (np.bincount(firsts, minlength=m).astype(np.float64),
            np.bincount(lasts, minlength=m).astype(np.float64))


def spectral_unavailable(seqs) -> Optional[str]:
    """Why the training sequences cannot give a spectral start (None when they can): no adjacent pairs."""
    return None if any(len(s) > 1 for s in seqs) else "no adjacent pairs"


def spectral_embeddings(pairs, n: int, dim: int, rng: np.random.Generator, init_scale: float = 0.2,
                        bounds=None, n_context: int = 1000, n_cluster_symbols: int = 1000, n_init: int = 3,
                        logit_scale: float = LOGIT_SCALE) -> Dict[str, np.ndarray]:
    """``U, Z, W, V, z_start`` for ``n`` states from the adjacent-pair counts (see the module
    docstring); ``bounds`` = :func:`boundary_counts` adds the sequence-boundary context
    columns (known when fitting sequences, not when fitting a co-occurrence matrix).  The
    random parts are drawn from ``rng`` first (same order as
    :func:`densehmm_core.dense.init_embeddings`), then the k-means starts."""
    return finish(spectral_embeddings_steps(pairs, n, dim, rng, init_scale, bounds, n_context, n_cluster_symbols,
                                            n_init, logit_scale))


def spectral_embeddings_steps(pairs, n: int, dim: int, rng: np.random.Generator, init_scale: float = 0.2,
                              bounds=None, n_context: int = 1000, n_cluster_symbols: int = 1000, n_init: int = 3,
                              logit_scale: float = LOGIT_SCALE) -> Generator[StartStep, None, Dict[str, np.ndarray]]:
    """:func:`spectral_embeddings` reporting its stages (SVD, k-means; the pairs are counted by the caller)."""
    U = init_scale * rng.standard_normal((n, dim))
    Z = init_scale * rng.standard_normal((n, dim))
    zs = init_scale * rng.standard_normal(dim)
    starts, ends = bounds if bounds is not None else (None, None)
    step = StartStep("svd", 0.0, f"context of {int(pairs.m)} symbols")
    X, freq = yield from _in_step(step, context_matrix, pairs, n_context, starts, ends)
    E = yield from _svd_rows(X, dim)
    yield StartStep("svd", 1.0, f"rank {min(int(dim), X.shape[1])} of {X.shape[0]} x {X.shape[1]}")
    seen = np.flatnonzero(np.linalg.norm(E, axis=1) > 0)
    top = seen[np.argsort(-freq[seen], kind="stable")][:max(int(n_cluster_symbols), n)]
    if top.size == 0:
        raise ValueError("a spectral start needs symbols seen in adjacent pairs")
    if top.size < n:
        # a small alphabet: every symbol its own cluster, the states left over copies of the most frequent
        C = E[top[np.arange(n) % top.size]]
        yield StartStep("kmeans", 1.0, f"{top.size} symbols for {n} states: one each, {n - top.size} "
                                       "copies of the most frequent")
    else:
        C = yield from _kmeans_steps(E[top], np.sqrt(freq[top]), n, rng, n_init=n_init)
    norms = np.linalg.norm(C, axis=1, keepdims=True)
    C = np.divide(C, norms, out=np.zeros_like(C), where=norms > 0)
    root = float(np.sqrt(logit_scale))
    return {"U": U, "Z": Z, "W": root * C, "V": root * E, "z_start": zs}


def pairs_steps(seqs, m: int) -> Generator[StartStep, None, tuple]:
    """``(PairCounts, boundary counts)`` of the training sequences (the pairs stage); the
    pair counts are None when no sequence has two symbols."""
    from .cooc_sparse import pair_counts
    ntok = sum(len(x) for x in seqs)
    step = StartStep("pairs", 0.0, f"{ntok} tokens in {len(seqs)} sequences")

    def count() -> tuple:
        return (pair_counts(seqs, m) if any(len(x) > 1 for x in seqs) else None), boundary_counts(seqs, m)
    pairs, bounds = yield from _in_step(step, count)     # (reports the step before it counts)
    yield StartStep("pairs", 1.0, "no adjacent pairs" if pairs is None else
                    f"{len(pairs.vals)} distinct pairs of {int(pairs.n_pairs)}")
    return pairs, bounds


def spectral_matrices(seqs, m: int, n: int, rng: np.random.Generator, rank: int = STANDARD_RANK):
    """``(pi, A, B)`` of a standard HMM started like a spectral DenseHMM: ``B`` the same
    emission rows ``softmax_k(s cos(c_i, e_k))``, ``pi`` and ``A`` uniform, or drawn from
    Dirichlet(1) (``rng``) where two rows of ``B`` coincide; with fewer symbols seen in pairs than
    states, the tokens' context states (:func:`context_states`)."""
    return finish(spectral_matrices_steps(seqs, m, n, rng, rank))


def spectral_matrices_steps(seqs, m: int, n: int, rng: np.random.Generator, rank: int = STANDARD_RANK):
    """:func:`spectral_matrices` reporting its stages (pairs, SVD, k-means)."""
    from .maths import softmax
    pairs, bounds = yield from pairs_steps(seqs, m)
    if pairs is None:
        raise ValueError("a spectral start needs adjacent pairs")
    if needs_contexts(pairs, n):
        return (yield from context_states_steps(seqs, m, n, rng))
    emb = yield from spectral_embeddings_steps(pairs, n, rank, rng, 0.0, bounds=bounds)
    B = softmax(emb["W"] @ emb["V"].T, axis=1)
    if np.unique(B, axis=0).shape[0] < n:
        # states with equal emissions and uniform transitions would stay equal under Baum-Welch
        return rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), size=n), B
    return np.full(n, 1.0 / n), np.full((n, n), 1.0 / n), B


# ------------------------------------------------------------------ a small alphabet: contexts
def symbols_in_pairs(pairs) -> int:
    """How many symbols occur in the adjacent pairs (as first or second member)."""
    return int(np.unique(np.concatenate([np.asarray(pairs.rows), np.asarray(pairs.cols)])).size)


def needs_contexts(pairs, n: int) -> bool:
    """Whether a start of ``n`` states from these pairs is a small alphabet's (fewer symbols seen in
    pairs than states): the states then come from the tokens' contexts (:func:`context_states`)."""
    return pairs is not None and symbols_in_pairs(pairs) < int(n)


def _token_contexts(seqs, m: int, n: int):
    """Each token's context key (the token and the ``order`` symbols before it, the sequence boundary
    standing in before a sequence's start) for the shortest ``order`` (1 to :data:`MAX_CONTEXT_ORDER`)
    with at least ``n`` distinct keys; ``(order, keys, key index per token, tokens, last-of-sequence
    mask, first-of-sequence mask)``."""
    parts = [np.asarray(x, np.int64) for x in seqs if len(x)]
    x = np.concatenate(parts)
    lens = np.array([len(p) for p in parts], np.int64)
    pos = np.arange(x.size, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    base = int(m) + 1                     # symbol m: the sequence boundary
    code = x.copy()
    order = 0
    while True:
        order += 1
        check_cancel()                    # between the orders (np.unique of every token: 0.1-0.5 s)
        prev = np.full(x.size, m, np.int64)
        inside = np.flatnonzero(pos >= order)
        prev[inside] = x[inside - order]
        code = code + prev * base ** order
        keys, inv = np.unique(code, return_inverse=True)
        if keys.size >= n or order >= MAX_CONTEXT_ORDER or float(base) ** (order + 2) > 2.0 ** 62:
            break
    last = pos == np.repeat(lens - 1, lens)
    return order, keys, inv.ravel(), x, last, pos == 0


def context_states(seqs, m: int, n: int, rng: np.random.Generator, n_init: int = 3):
    """``(pi, A, B)`` of ``n`` states from the tokens' contexts, for a small alphabet (fewer symbols
    than states; see the module docstring)."""
    return finish(context_states_steps(seqs, m, n, rng, n_init))


def context_states_steps(seqs, m: int, n: int, rng: np.random.Generator, n_init: int = 3):
    """:func:`context_states` reporting its stages (counting the contexts, k-means)."""
    m, n = int(m), int(n)
    ntok = sum(len(x) for x in seqs)
    step = StartStep("contexts", 0.0, f"{ntok} tokens, {m} symbols for {n} states")
    order, keys, inv, x, last, first = yield from _in_step(step, _token_contexts, seqs, m, n)
    K = int(keys.size)
    base = m + 1
    nxt = np.full(x.size, m, np.int64)    # the next token (m: the sequence ends)
    inner = np.flatnonzero(~last)
    nxt[inner] = x[inner + 1]
    weight = np.bincount(inv, minlength=K).astype(np.float64)
    follow = np.bincount(inv * base + nxt, minlength=K * base).reshape(K, base) / weight[:, None]
    current = (keys % base).astype(np.int64)
    before = "symbol" if order == 1 else f"{order} symbols"
    yield StartStep("contexts", 1.0, f"{K} contexts (the token and the {before} before it)")
    if K <= n:
        label = np.arange(K)
        yield StartStep("kmeans", 1.0, f"{K} contexts for {n} states: one each"
                        + (f", {n - K} copies of the most frequent" if K < n else ""))
    else:
        # what follows a context (Hellinger coordinates) and, weighted CONTEXT_SYMBOL_WEIGHT, its
        # own symbol: a cluster holds contexts of one symbol where it can
        F = np.concatenate([np.sqrt(follow), CONTEXT_SYMBOL_WEIGHT * np.eye(m)[current]], axis=1)
        C = yield from _kmeans_steps(F, np.sqrt(weight), n, rng, n_init=n_init, noun="contexts")
        label = np.argmin(_sq_dist(F, C, np.einsum("nd,nd->n", F, F)), axis=1)
    state = label[inv]
    k_states = int(min(K, n))
    B = np.bincount(state * m + x, minlength=k_states * m).reshape(k_states, m).astype(np.float64)
    A = np.bincount(state[inner] * k_states + state[inner + 1],
                    minlength=k_states * k_states).reshape(k_states, k_states).astype(np.float64)
    pi = np.bincount(state[first], minlength=k_states).astype(np.float64)
    if k_states < n:
        # more states than contexts: the states left over copy the most frequent ones (rows, and
        # columns sharing their incoming counts) and are told apart by random transitions
        src = np.concatenate([np.arange(k_states), np.argsort(-B.sum(axis=1), kind="stable")[
            np.arange(n - k_states) % k_states]])
        share = np.bincount(src, minlength=k_states).astype(np.float64)[src]
        B, pi = B[src], pi[src] / share
        A = A[src][:, src] / share[None, :]
    A, B, pi = A + CONTEXT_PSEUDOCOUNT, B + CONTEXT_PSEUDOCOUNT, pi + CONTEXT_PSEUDOCOUNT
    A, B, pi = A / A.sum(axis=1, keepdims=True), B / B.sum(axis=1, keepdims=True), pi / pi.sum()
    # half the state's own symbols, half the symbols' frequencies: Baum-Welch moves on from there
    B = (1.0 - CONTEXT_EMISSION_MIX) * B + CONTEXT_EMISSION_MIX * (np.bincount(x, minlength=m) / x.size)
    if k_states < n:
        A = 0.5 * A + 0.5 * rng.dirichlet(np.ones(n), size=n)
    return pi, A, B


def embeddings_from_matrices(pi: np.ndarray, A: np.ndarray, B: np.ndarray, dim: int) -> Dict[str, np.ndarray]:
    """``U, Z, W, V, z_start`` of length ``dim`` whose ``softmax(Z U^T)``, ``softmax(W V^T)`` and
    ``softmax(U z_start)`` are closest to ``A``, ``B`` and ``pi``: the rank-``dim`` SVD of the
    row-centred log-probabilities (exact where ``dim`` reaches their rank), the singular values
    shared by both factors; ``z_start`` by least squares."""
    dim = int(dim)

    def factors(P: np.ndarray):
        L = np.log(P)
        L = L - L.mean(axis=1, keepdims=True)
        left, sv, right = np.linalg.svd(L, full_matrices=False)
        r = int(min(dim, sv.size))
        X, Y = np.zeros((L.shape[0], dim)), np.zeros((L.shape[1], dim))
        X[:, :r] = left[:, :r] * np.sqrt(sv[:r])
        Y[:, :r] = right[:r].T * np.sqrt(sv[:r])
        return X, Y
    Z, U = factors(np.asarray(A, np.float64))
    W, V = factors(np.asarray(B, np.float64))
    from .maths import softmax_inverse_lstsq
    return {"U": U, "Z": Z, "W": W, "V": V, "z_start": softmax_inverse_lstsq(U, pi)}

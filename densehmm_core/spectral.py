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
   centroids.  With fewer symbols seen in adjacent pairs than states (a small alphabet: 5
   symbols and 10 states, 21 residues and 45 states) every symbol is its own cluster and the
   states left over copy the most frequent symbols' rows, in order of frequency: copies start
   with the same emissions and are told apart by their random transitions (measured: the demo
   data, 10 states, 5 iterations: NLL per token 0.527 against 0.728 from the random start the
   fit fell back to before; docs/DENSEHMM.md).
4. **Embeddings.**  ``V = sqrt(s) E`` and ``W = sqrt(s) C``, so the initial emission logits
   are ``w_i . v_k = s cos(c_i, e_k)`` with ``s = LOGIT_SCALE``: state ``i`` starts by
   emitting the symbols of cluster ``i``.  ``U``, ``Z`` and ``z_start`` are random
   (standard deviation ``init_scale``), i.e. nearly uniform transitions that the first
   M-step estimates from the emission posteriors.  A standard HMM
   (:func:`spectral_matrices`) starts from uniform ``pi`` and ``A``, or, where two states' emission
   rows coincide (copies, or coinciding centroids), from random ones (Dirichlet(1) rows): under
   Baum-Welch states with equal emissions and uniform transitions would stay equal for ever.

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

__all__ = ["LOGIT_SCALE", "STANDARD_RANK", "TICK_S", "context_matrix", "context_embeddings", "weighted_kmeans",
           "boundary_counts", "spectral_embeddings", "spectral_matrices", "spectral_unavailable",
           "spectral_embeddings_steps", "spectral_matrices_steps", "pairs_steps", "within", "finish"]

LOGIT_SCALE = 36.0   # initial emission logits s * cos(c_i, e_k); 9 and 36 measured, 36 better (RESULTS.md)
STANDARD_RANK = 32   # SVD rank of a StandardHMM's spectral start (it has no embedding length)
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
                  n_init: int = 3, max_iter: int = 300) -> Generator[StartStep, None, np.ndarray]:
    """:func:`weighted_kmeans` reporting progress: a step when each run begins and at most every
    :data:`TICK_S` seconds between its Lloyd iterations."""
    X = np.asarray(points, np.float64)
    w = np.asarray(weights, np.float64)
    k = int(k)
    if X.shape[0] < k:
        raise ValueError(f"k-means needs at least {k} points, got {X.shape[0]}")
    x2 = np.einsum("nd,nd->n", X, X)
    best = None
    runs = int(n_init)
    for run in range(runs):
        what = f"{k} clusters of {X.shape[0]} symbols, run {run + 1} of {runs}"
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
    yield StartStep("kmeans", 1.0, f"{k} clusters of {X.shape[0]} symbols, best of {runs} runs")
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
    Dirichlet(1) (``rng``) where two rows of ``B`` coincide."""
    return finish(spectral_matrices_steps(seqs, m, n, rng, rank))


def spectral_matrices_steps(seqs, m: int, n: int, rng: np.random.Generator, rank: int = STANDARD_RANK):
    """:func:`spectral_matrices` reporting its stages (pairs, SVD, k-means)."""
    from .maths import softmax
    pairs, bounds = yield from pairs_steps(seqs, m)
    if pairs is None:
        raise ValueError("a spectral start needs adjacent pairs")
    emb = yield from spectral_embeddings_steps(pairs, n, rank, rng, 0.0, bounds=bounds)
    B = softmax(emb["W"] @ emb["V"].T, axis=1)
    if np.unique(B, axis=0).shape[0] < n:
        # states with equal emissions and uniform transitions would stay equal under Baum-Welch
        return rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), size=n), B
    return np.full(n, 1.0 / n), np.full((n, n), 1.0 / n), B

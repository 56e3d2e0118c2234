"""Evaluation metrics: co-occurrence distance, normalised NLLs.

The co-occurrence matrices themselves (empirical and analytic Omega) are maths, in
:mod:`densehmm_core.maths` (``empirical_cooc``, ``analytic_cooc``).

* :func:`cooc_mad` — mean absolute difference of two m x m matrices (the paper's MAD);
  :func:`cooc_mad_large` — the same MAD of data and model without any m x m array.
* :func:`normalized_nll` — total negative log-likelihood / number of tokens.
* :func:`paper_nll` — the paper's variant: total NLL / (n_sequences x longest length).
* :func:`tagging_scores` — hidden states against gold tags: many-to-one (M-1) and
  one-to-one (1-1) accuracy, V-measure, the state-to-tag mapping.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .sequences import as_sequences, n_tokens

__all__ = ["cooc_mad", "normalized_nll", "paper_nll", "total_loglik", "tagging_scores", "cooc_mad_large",
           "align_states"]


def cooc_mad(a, b) -> float:
    """Mean absolute difference ``mean |a - b|`` over all entries of two m x m matrices."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    return float(np.mean(np.abs(a - b)))


def cooc_mad_large(seqs: Any, n_symbols: int, startprob: Optional[np.ndarray], transmat,
                   emissionprob, lengths=None) -> float:
    """The same value as ``cooc_mad(empirical_cooc(seqs, m), analytic_cooc(startprob, A, B))``
    without any m x m array: for vocabularies of words.

    Only the observed adjacent pairs are non-zero in the empirical matrix and the model's
    matrix is non-negative, so the MAD over all ``m^2`` entries follows from the observed pairs
    (:func:`densehmm_core.cooc_sparse.sparse_mad`).  Cost O(nnz n + m n^2) time, O(nnz + m n)
    memory.  ``startprob=None`` uses the stationary distribution.

    Raises ``ValueError`` when there is no adjacent pair.
    """
    from .cooc_sparse import pair_counts, sparse_mad
    m = int(n_symbols)
    seqs = as_sequences(seqs, lengths, n_symbols=m)
    pi = None if startprob is None else np.asarray(startprob, dtype=np.float64)
    try:
        pc = pair_counts(seqs, m)
    except ValueError:
        raise ValueError("no adjacent symbol pairs: every sequence has length 1") from None
    return float(sparse_mad(pi, np.asarray(transmat, dtype=np.float64), np.asarray(emissionprob, dtype=np.float64),
                            pc))


def total_loglik(model_or_loglik: Any, seqs) -> float:
    """Total log-likelihood: ``model.score(seqs)`` or the sum of a given (per-sequence) value."""
    if hasattr(model_or_loglik, "score"):
        return float(model_or_loglik.score(seqs))
    return float(np.sum(np.asarray(model_or_loglik, dtype=np.float64)))


def normalized_nll(model_or_loglik: Any, seqs: Any) -> float:
    """Negative log-likelihood per token: ``-log P(data) / number of tokens``.

    Parameters
    ----------
    model_or_loglik : model with ``score(seqs)``, or a total / per-sequence log-likelihood
    seqs : the sequences (list of int arrays or Corpus); only their lengths are used
        when a log-likelihood is passed.
    """
    # the model scores the data as given: a Corpus's vocabulary is checked against the model's
    return -total_loglik(model_or_loglik, seqs) / n_tokens(as_sequences(seqs))


def paper_nll(model_or_loglik: Any, seqs: Any) -> float:
    """The paper's normalised NLL: ``-log P(data) / (n_sequences x longest sequence length)``.

    Equal to :func:`normalized_nll` when all sequences have the same length.
    """
    ll = total_loglik(model_or_loglik, seqs)     # the data as given (see normalized_nll)
    seqs = as_sequences(seqs)
    return -ll / (len(seqs) * max(len(s) for s in seqs))


def _flat_labels(x, what: str) -> np.ndarray:
    if isinstance(x, np.ndarray) and x.ndim == 1:
        a = x
    else:
        parts = [np.asarray(p).ravel() for p in x]
        a = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if a.size and a.dtype.kind not in "iu":
        raise ValueError(f"{what} must be integers (dtype {a.dtype})")
    return a.astype(np.int64, copy=False)


def _entropy(counts: np.ndarray) -> float:
    c = counts[counts > 0].astype(np.float64)
    p = c / c.sum()
    return float(-(p * np.log(p)).sum())


def _v_measure(C: np.ndarray) -> float:
    """V-measure (beta = 1) of a (clusters x classes) contingency table, as scikit-learn defines it:
    homogeneity = I(C; K) / H(C) (1 when H(C) = 0), completeness = I(C; K) / H(K) (1 when
    H(K) = 0), V = 2 h c / (h + c) (0 when h + c = 0)."""
    C = np.asarray(C, dtype=np.float64)
    n = C.sum()
    pk, pc = C.sum(axis=1), C.sum(axis=0)
    h_c, h_k = _entropy(pc), _entropy(pk)
    i, j = np.nonzero(C)
    c = C[i, j]
    mi = float(np.sum(c / n * (np.log(c) + np.log(n) - np.log(pk[i]) - np.log(pc[j]))))
    mi = max(mi, 0.0)
    h = mi / h_c if h_c else 1.0
    comp = mi / h_k if h_k else 1.0
    return 0.0 if h + comp == 0 else 2.0 * h * comp / (h + comp)


def tagging_scores(pred_states, gold_tags, n_states: Optional[int] = None,
                   n_tags: Optional[int] = None) -> dict:
    """Score hidden-state sequences against gold tags (unsupervised part-of-speech induction).

    Tokens whose gold tag is negative (``NO_TAG`` = -1: text without gold tags) are left out.

    Parameters
    ----------
    pred_states : list of int arrays, or one flat int array
        The state of each token (e.g. Viterbi paths), aligned with ``gold_tags``.
    gold_tags : list of int arrays, or one flat int array
        Gold tag indices, same lengths.
    n_states, n_tags : int, optional
        Sizes of the state and tag sets (default: largest value seen + 1).

    Returns
    -------
    dict
        ``m1``: many-to-one accuracy, each state mapped to its most frequent gold tag;
        ``one_to_one``: accuracy under the best one-to-one state-to-tag assignment
        (Hungarian algorithm, :func:`scipy.optimize.linear_sum_assignment`; with more
        states than tags the extra states count as wrong);
        ``v_measure``: the V-measure of Rosenberg & Hirschberg (2007), the harmonic mean of
        homogeneity and completeness, computed from the contingency table; equal to
        :func:`sklearn.metrics.v_measure_score` (gold, predicted) (tested against it; not
        called, because importing ``sklearn.metrics`` costs seconds);
        ``mapping``: int array (n_states,), the M-1 tag of each state (ties: the lowest
        tag index; -1 for a state that labels no token);
        ``one_to_one_mapping``: int array (n_states,), the 1-1 tag of each state (-1: none, also
        where the assignment pairs a state with a tag it never labels, which scores nothing);
        ``contingency``: int array (n_states, n_tags), tokens per (state, tag);
        ``n_tokens``: number of tokens scored.

    Raises
    ------
    ValueError
        Lengths differ, or no token has a gold tag.
    """
    from scipy.optimize import linear_sum_assignment

    p = _flat_labels(pred_states, "pred_states")
    g = _flat_labels(gold_tags, "gold_tags")
    if p.shape != g.shape:
        raise ValueError(f"pred_states has {p.size} tokens but gold_tags has {g.size}")
    keep = g >= 0
    p, g = p[keep], g[keep]
    if p.size == 0:
        raise ValueError("no token has a gold tag")
    if int(p.min()) < 0:
        raise ValueError("pred_states hold a negative state")
    n = int(p.max()) + 1 if n_states is None else int(n_states)
    k = int(g.max()) + 1 if n_tags is None else int(n_tags)
    if int(p.max()) >= n or int(g.max()) >= k:
        raise ValueError(f"a state or tag lies outside n_states={n}, n_tags={k}")
    C = np.bincount(p * k + g, minlength=n * k).reshape(n, k)
    total = int(p.size)
    used = C.sum(axis=1) > 0
    mapping = np.where(used, C.argmax(axis=1), -1).astype(np.int64)
    m1 = float(C.max(axis=1).sum()) / total
    rows, cols = linear_sum_assignment(C, maximize=True)
    one = np.full(n, -1, dtype=np.int64)
    # a pair of the assignment that shares no token scores nothing: the state shows no tag (the
    # assignment gives every state a tag while there are tags left, also to states that label none)
    one[rows] = np.where(C[rows, cols] > 0, cols, -1)
    o2o = float(C[rows, cols].sum()) / total
    return {"m1": m1, "one_to_one": o2o, "v_measure": _v_measure(C), "mapping": mapping,
            "one_to_one_mapping": one, "contingency": C, "n_tokens": total}


def align_states(emission_ref, emission_other) -> np.ndarray:
    """Match the states of one HMM to those of another by their emission distributions.

    An HMM's states are identified only up to a permutation; before two models' matrices are
    compared entry by entry, the states of ``other`` are put in the order of ``ref``.  The
    permutation minimises the summed total-variation distance
    ``0.5 * sum_k |B_ref[i, k] - B_other[perm[i], k]|`` over the states (Hungarian algorithm,
    :func:`scipy.optimize.linear_sum_assignment`).

    Parameters
    ----------
    emission_ref, emission_other : array_like (n, m)
        Emission matrices of the two models (same n and m).

    Returns
    -------
    ndarray of int, shape (n,)
        ``perm`` such that state ``perm[i]`` of ``other`` is matched to state ``i`` of ``ref``:
        ``startprob_other[perm]``, ``transmat_other[np.ix_(perm, perm)]`` and
        ``emission_other[perm]`` are ``other`` in ``ref``'s state order.
    """
    from scipy.optimize import linear_sum_assignment

    a = np.asarray(emission_ref, dtype=np.float64)
    b = np.asarray(emission_other, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"emission matrices must have the same shape (n, m); got {a.shape} and {b.shape}")
    cost = 0.5 * np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2) if a.shape[1] <= 4096 else \
        np.stack([0.5 * np.abs(a[i][None, :] - b).sum(axis=1) for i in range(a.shape[0])])
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(a.shape[0], dtype=np.int64)
    perm[rows] = cols
    return perm

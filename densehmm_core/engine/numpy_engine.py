"""Batched, scaled forward-backward and Viterbi in float64 numpy.

How it works
------------
:meth:`NumpyEngine.prepare` sorts the sequences by length (longest first) and cuts
them into *chunks* whose padded size ``T_max x n_seq x n_states`` stays below
``chunk_elements`` floats.  A chunk stores its symbols time-major, ``obs[t, j]`` =
symbol of sequence ``j`` at time ``t`` (``-1`` past its end).  Because the
sequences are sorted, the sequences still running at time ``t`` are exactly the
first ``active[t]`` columns, so a time step is a handful of vectorised numpy
operations on an ``(n, active[t])`` block (layout time x state x sequence): one
small matrix product with ``A`` (BLAS, limited to one thread: the products are
tiny and a multi-threaded BLAS only adds synchronisation), one product with the
gathered emission probabilities, one normalisation.

The forward pass is the scaled (Rabiner) recursion
``alpha_hat[t] = (alpha_hat[t-1] A) * B[:, x_t] / c_t`` with
``c_t = P(x_t | x_<t)`` and ``log P(x) = sum_t log c_t``; the backward pass uses
the same ``c_t``.  Posteriors are ``alpha_hat * beta_hat``; the expected
transition counts are accumulated during the backward pass as one small matrix
product per step (``alpha_hat[t] @ (B[:, x_{t+1}] * beta_hat[t+1] / c_{t+1})^T``,
times ``A``), and the emission counts are one ``bincount`` per state and chunk.
Per-time posteriors exist only for one chunk at a time, so memory is bounded by
``chunk_elements`` (default 2**23 floats = 64 MB per working array; two of them).

Chunks holding fewer than ``min_batch`` sequences (default 64: a few very long
sequences, or a tiny data set) would pay the fixed per-step numpy overhead for
little work; they are processed one sequence at a time by hmmlearn's compiled
scaled routines when hmmlearn is importable (``min_batch=0`` disables this).
Both paths give the same numbers (tests compare them).

Zero probabilities: a time step with ``c_t = 0`` makes the sequence impossible;
its log-likelihood is ``-inf`` (never NaN) and it contributes nothing to the
sufficient statistics (its posteriors are returned as zeros).  Viterbi works in
log space with ``log 0 = -inf``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

from .base import Engine, SufficientStats

__all__ = ["NumpyEngine", "PreparedSequences"]


@dataclass
class _Chunk:
    index: np.ndarray      # (B,) original indices of the sequences, longest first
    lengths: np.ndarray    # (B,) their lengths (non-increasing)
    obs: np.ndarray        # (T, B) int32 time-major symbols, -1 = padding
    active: List[int]      # active[t] = number of sequences with length > t
    count_obs: np.ndarray  # (T*B,) int64 symbols with padding mapped to 0 (for bincount)

    def sequence(self, j: int) -> np.ndarray:
        """Symbols of the ``j``-th sequence of the chunk (int64, contiguous)."""
        return np.ascontiguousarray(self.obs[:int(self.lengths[j]), j], dtype=np.int64)


class PreparedSequences:
    """Sequences sorted by length and cut into padded time-major chunks.

    Build it once with :meth:`NumpyEngine.prepare` and pass it instead of the list
    of sequences to avoid re-batching the same data on every EM iteration.
    """

    def __init__(self, seqs: Sequence[np.ndarray], chunk_elements: int, n_states_hint: int = 16):
        seqs = [np.asarray(s) for s in seqs]
        if len(seqs) == 0:
            raise ValueError("no sequences given")
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        if np.any(lengths < 1):
            raise ValueError("every sequence needs length >= 1")
        self.n_sequences = len(seqs)
        self.lengths = lengths
        self.n_tokens = int(lengths.sum())
        self.max_symbol = max(int(s.max()) for s in seqs)
        min_symbol = min(int(s.min()) for s in seqs)
        if min_symbol < 0:
            raise ValueError(f"negative symbol {min_symbol} in the sequences")
        self.chunk_elements = int(chunk_elements)
        self._n_hint = int(n_states_hint)
        order = np.argsort(-lengths, kind="stable")
        self.chunks: List[_Chunk] = []
        budget_tokens = max(1, self.chunk_elements // max(1, self._n_hint))
        i, N = 0, len(order)
        while i < N:
            tmax = int(lengths[order[i]])
            nb = max(1, budget_tokens // tmax)
            idx = order[i:i + nb]
            self.chunks.append(self._make_chunk([seqs[j] for j in idx], idx, lengths[idx]))
            i += nb

    @staticmethod
    def _make_chunk(chunk_seqs, idx, lens) -> _Chunk:
        """Chunk of ``chunk_seqs`` (sorted by non-increasing length; original indices ``idx``)."""
        T = int(lens[0])
        flat = np.concatenate(chunk_seqs).astype(np.int32, copy=False)
        offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
        t = np.arange(T)[:, None]
        mask = t < lens[None, :]
        pos = np.where(mask, offs[None, :] + t, 0)
        obs = np.where(mask, flat[pos], -1).astype(np.int32)
        counts = np.bincount(lens, minlength=T + 1)
        active = (len(lens) - np.cumsum(counts)[:T]).tolist()
        count_obs = np.where(mask, obs, 0).astype(np.intp).ravel()
        return _Chunk(index=np.asarray(idx), lengths=np.asarray(lens), obs=obs, active=active,
                      count_obs=count_obs)


_CONTROLLER = None
_HMMC = False


def _hmmc():
    """hmmlearn's compiled module (``forward_scaling``, ``backward_scaling``,
    ``compute_scaling_xi_sum``, ``viterbi``) or None if unavailable."""
    global _HMMC
    if _HMMC is False:
        try:
            from hmmlearn import _hmmc as mod
            for name in ("forward_scaling", "backward_scaling", "compute_scaling_xi_sum", "viterbi"):
                getattr(mod, name)
            _HMMC = mod
        except Exception:  # pragma: no cover - hmmlearn missing or changed
            _HMMC = None
    return _HMMC


def _single_threaded_blas():
    """Context limiting BLAS to one thread.

    The matrix products here are tiny (k x n times n x n); a multi-threaded
    OpenBLAS only adds synchronisation, which is catastrophic (100x) on a loaded
    machine.  Falls back to a no-op without threadpoolctl.
    """
    global _CONTROLLER
    try:
        if _CONTROLLER is None:
            from threadpoolctl import ThreadpoolController
            _CONTROLLER = ThreadpoolController()
        return _CONTROLLER.limit(limits=1, user_api="blas")
    except Exception:  # pragma: no cover - threadpoolctl missing or broken
        import contextlib
        return contextlib.nullcontext()


def _seq_posteriors(hm, pi, A, B, x):
    """One sequence through hmmlearn's compiled scaled forward-backward.

    Returns ``(loglik, posteriors, fwd, bwd, frameprob)`` or None when a scale
    factor is zero (the caller then uses the exact batched numpy path).
    """
    fp = np.ascontiguousarray(B.T[x])
    try:
        ll, fwd, scale = hm.forward_scaling(pi, A, fp)
    except ValueError:
        return None
    bwd = hm.backward_scaling(pi, A, fp, scale)
    post = fwd * bwd
    post /= post.sum(axis=1, keepdims=True)
    return ll, post, fwd, bwd, fp


def _params(startprob, transmat, emissionprob):
    pi = np.asarray(startprob, dtype=np.float64)
    A = np.ascontiguousarray(transmat, dtype=np.float64)
    B = np.asarray(emissionprob, dtype=np.float64)
    n = pi.shape[0]
    if A.shape != (n, n) or B.ndim != 2 or B.shape[0] != n:
        raise ValueError(f"inconsistent parameter shapes: startprob {pi.shape}, transmat {A.shape}, "
                         f"emissionprob {B.shape}")
    # B with an extra zero column: symbol -1 (padding) gathers zeros
    BtT = np.zeros((n, B.shape[1] + 1))
    BtT[:, :-1] = B
    return pi, A, B, BtT


class NumpyEngine(Engine):
    """Batched scaled forward-backward and Viterbi in float64 numpy (see the module docstring).

    Parameters
    ----------
    chunk_elements : int
        Bound on ``T_max x n_seq x n_states`` of one chunk (floats per working
        array).  Peak memory is about ``2 x 8 x chunk_elements`` bytes on top of
        the data (a single sequence longer than the bound forms its own chunk).
    min_batch : int
        Chunks with fewer sequences go one sequence at a time through hmmlearn's
        compiled routines (if available); 0 = always batched numpy.
    """

    name = "numpy"

    def __init__(self, chunk_elements: int = 2 ** 23, min_batch: int = 64):
        self.chunk_elements = int(chunk_elements)
        self.min_batch = int(min_batch)

    def _sequential(self, ch: _Chunk):
        """hmmlearn's compiled single-sequence routines for a chunk with few sequences, else None.

        A batched time step costs a fixed ~0.1 ms of numpy overhead, so a chunk of
        fewer than ``min_batch`` sequences (a few long sequences, or a tiny data
        set) is faster one sequence at a time in compiled code.
        """
        if len(ch.index) >= self.min_batch:
            return None
        return _hmmc()

    @staticmethod
    def _single(ch: _Chunk, j: int) -> _Chunk:
        """A one-sequence chunk (the batched numpy path for one sequence)."""
        L = int(ch.lengths[j])
        return PreparedSequences._make_chunk([ch.sequence(j)], np.array([ch.index[j]]), np.array([L]))

    # ------------------------------------------------------------ batching
    def prepare(self, seqs, n_states: int = 16) -> PreparedSequences:
        """Sort and chunk ``seqs`` once (see :class:`PreparedSequences`)."""
        if isinstance(seqs, PreparedSequences):
            return seqs
        return PreparedSequences(seqs, self.chunk_elements, n_states)

    def _prep(self, seqs, n: int, m: int) -> PreparedSequences:
        if isinstance(seqs, PreparedSequences):
            p = seqs
        else:
            p = PreparedSequences(seqs, self.chunk_elements, n)
        if p.max_symbol >= m:
            raise ValueError(f"symbol {p.max_symbol} is outside 0..{m - 1} (the model has {m} symbols)")
        return p

    # ------------------------------------------------------------- forward
    @staticmethod
    def _forward(pi, A, BtT, ch: _Chunk, store: bool):
        """Scaled forward pass over one chunk (layout time, state, sequence).

        Returns ``(alpha, c)``: ``alpha[t, :, j]`` = scaled forward variable of
        sequence ``j`` at time ``t`` (T, n, B; zeros at padding) if ``store``, else
        None; the raw scale factors ``c`` (T, B) (1 at padding; 0 or NaN from the
        step where a sequence becomes impossible).  Columns of impossible sequences
        hold NaN and are cleaned by the caller (sequences never mix, so the
        others are exact).  ``BtT`` is ``B`` with an extra zero column (padding).
        """
        obs, act = ch.obs, ch.active
        T, nb = obs.shape
        n = pi.shape[0]
        c = np.ones((T, nb))
        ones = np.ones(n)
        AT = np.ascontiguousarray(A.T)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            a = np.take(BtT, obs[0], axis=1)
            a *= pi[:, None]
            if store:
                alpha = np.zeros((T, n, nb))
                alpha[0] = a
                a = alpha[0]
            else:
                alpha = None
            np.matmul(ones, a, out=c[0])
            a *= 1.0 / c[0]
            for t in range(1, T):
                k = act[t]
                ct = c[t, :k]
                if store:
                    at = alpha[t, :, :k]
                    np.matmul(AT, alpha[t - 1, :, :k], out=at)
                else:
                    at = AT @ a[:, :k]
                    a = at
                at *= np.take(BtT, obs[t, :k], axis=1)
                np.matmul(ones, at, out=ct)
                at *= 1.0 / ct
        return alpha, c

    @staticmethod
    def _seq_loglik(c: np.ndarray) -> np.ndarray:
        """Per-sequence log-likelihood from the scale factors (-inf if any is 0 or NaN)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = np.log(c).sum(axis=0)
        ll[np.isnan(ll)] = -np.inf
        return ll

    def loglik(self, startprob, transmat, emissionprob, seqs) -> np.ndarray:
        pi, A, B, BtT = _params(startprob, transmat, emissionprob)
        p = self._prep(seqs, pi.shape[0], B.shape[1])
        out = np.empty(p.n_sequences)
        with _single_threaded_blas():
            for ch in p.chunks:
                hm = self._sequential(ch)
                if hm is None:
                    _, c = self._forward(pi, A, BtT, ch, store=False)
                    out[ch.index] = self._seq_loglik(c)
                    continue
                for j in range(len(ch.index)):
                    try:
                        out[ch.index[j]] = hm.forward_scaling(pi, A, np.ascontiguousarray(B.T[ch.sequence(j)]))[0]
                    except ValueError:   # a zero scale factor: exact numpy path (gives -inf)
                        _, c = self._forward(pi, A, BtT, self._single(ch, j), store=False)
                        out[ch.index[j]] = self._seq_loglik(c)[0]
        return out

    # ------------------------------------------------------------ backward
    @staticmethod
    def _backward_gamma(A, BtT, ch: _Chunk, alpha, c, want_xi: bool = True):
        """Backward pass; returns (gamma (T, n, B), xi_sum (n, n), per-sequence loglik).

        ``xi_sum[i, j] = sum_t alpha_hat[t, i] A[i, j] B[j, x_{t+1}] beta_hat[t+1, j] / c_{t+1}``
        is accumulated step by step (one small matrix product per step).
        """
        obs, act = ch.obs, ch.active
        T, n, nb = alpha.shape
        ll = NumpyEngine._seq_loglik(c)
        bad = ~np.isfinite(ll)
        if np.any(bad):              # impossible sequences: no contribution, no NaN
            alpha[:, :, bad] = 0.0
            c[:, bad] = 1.0
        rc = 1.0 / c
        beta = np.zeros((T, n, nb))
        beta[T - 1, :, :act[T - 1]] = 1.0
        xi = np.zeros((n, n))
        for t in range(T - 2, -1, -1):
            k, k1 = act[t], act[t + 1]
            if k > k1:
                beta[t, :, k1:k] = 1.0
            if k1:
                tmp = np.take(BtT, obs[t + 1, :k1], axis=1)
                tmp *= beta[t + 1, :, :k1]
                tmp *= rc[t + 1, :k1]
                if want_xi:
                    xi += alpha[t, :, :k1] @ tmp.T
                np.matmul(A, tmp, out=beta[t, :, :k1])
        xi *= A
        beta *= alpha                  # beta now holds the posteriors gamma
        return beta, xi, ll

    def statistics(self, startprob, transmat, emissionprob, seqs) -> SufficientStats:
        pi, A, B, BtT = _params(startprob, transmat, emissionprob)
        n, m = B.shape
        p = self._prep(seqs, n, m)
        start = np.zeros(n)
        trans = np.zeros((n, n))
        emit = np.zeros((n, m))
        lls = np.empty(p.n_sequences)
        with _single_threaded_blas():
            for ch in p.chunks:
                hm = self._sequential(ch)
                if hm is not None:
                    for j in range(len(ch.index)):
                        x = ch.sequence(j)
                        res = _seq_posteriors(hm, pi, A, B, x)
                        if res is None:      # zero scale factor: exact batched path for this one
                            self._stats_chunk(pi, A, BtT, self._single(ch, j), start, trans, emit, lls)
                            continue
                        ll, post, fwd, bwd, fp = res
                        lls[ch.index[j]] = ll
                        start += post[0]
                        if len(x) > 1:
                            trans += hm.compute_scaling_xi_sum(fwd, A, bwd, fp)
                        for i in range(n):
                            emit[i] += np.bincount(x, weights=post[:, i], minlength=m)
                    continue
                self._stats_chunk(pi, A, BtT, ch, start, trans, emit, lls)
        return SufficientStats(start=start, trans=trans, emit=emit, loglik=lls)

    def _stats_chunk(self, pi, A, BtT, ch, start, trans, emit, lls):
        """Batched E-step of one chunk, accumulated into ``start``, ``trans``, ``emit``, ``lls``."""
        n, m = A.shape[0], BtT.shape[1] - 1
        alpha, c = self._forward(pi, A, BtT, ch, store=True)
        gamma, xi, ll = self._backward_gamma(A, BtT, ch, alpha, c)
        del alpha
        lls[ch.index] = ll
        trans += xi
        start += gamma[0].sum(axis=1)
        for i in range(n):
            emit[i] += np.bincount(ch.count_obs, weights=gamma[:, i, :].ravel(), minlength=m)[:m]

    def posteriors(self, startprob, transmat, emissionprob, seqs) -> List[np.ndarray]:
        pi, A, B, BtT = _params(startprob, transmat, emissionprob)
        p = self._prep(seqs, pi.shape[0], B.shape[1])
        out: List[np.ndarray] = [None] * p.n_sequences  # type: ignore[list-item]
        with _single_threaded_blas():
            for ch in p.chunks:
                hm = self._sequential(ch)
                if hm is not None:
                    for j in range(len(ch.index)):
                        res = _seq_posteriors(hm, pi, A, B, ch.sequence(j))
                        if res is None:
                            self._post_chunk(pi, A, BtT, self._single(ch, j), out)
                        else:
                            out[ch.index[j]] = res[1]
                    continue
                self._post_chunk(pi, A, BtT, ch, out)
        return out

    def _post_chunk(self, pi, A, BtT, ch, out):
        alpha, c = self._forward(pi, A, BtT, ch, store=True)
        gamma, _, _ = self._backward_gamma(A, BtT, ch, alpha, c, want_xi=False)
        del alpha
        for j, (i, L) in enumerate(zip(ch.index.tolist(), ch.lengths.tolist())):
            out[i] = np.ascontiguousarray(gamma[:L, :, j])

    # -------------------------------------------------------------- viterbi
    def viterbi(self, startprob, transmat, emissionprob, seqs) -> Tuple[List[np.ndarray], np.ndarray]:
        pi, A, B, BtT = _params(startprob, transmat, emissionprob)
        n, m = B.shape
        p = self._prep(seqs, n, m)
        with np.errstate(divide="ignore"):
            logpi, logA, logBt = np.log(pi), np.log(A), np.log(BtT.T)
        bp_dtype = np.int8 if n <= 127 else (np.int16 if n <= 32767 else np.int32)
        paths: List[np.ndarray] = [None] * p.n_sequences  # type: ignore[list-item]
        logprob = np.empty(p.n_sequences)
        rows_per_block = max(1, self.chunk_elements // (n * n))
        with _single_threaded_blas():
            for ch in p.chunks:
                hm = self._sequential(ch)
                if hm is None:
                    self._viterbi_chunk(ch, logpi, logA, logBt, bp_dtype, rows_per_block, paths, logprob)
                    continue
                for j in range(len(ch.index)):
                    x = ch.sequence(j)
                    lp, path = hm.viterbi(pi, A, np.ascontiguousarray(logBt[x]))
                    paths[ch.index[j]] = np.asarray(path, dtype=np.int64)
                    logprob[ch.index[j]] = lp
        return paths, logprob

    @staticmethod
    def _viterbi_chunk(ch, logpi, logA, logBt, bp_dtype, rows_per_block, paths, logprob):
        """Batched log-space Viterbi over one chunk; fills ``paths`` and ``logprob``."""
        n = logpi.shape[0]
        obs, act = ch.obs, ch.active
        T, nb = obs.shape
        delta = logpi + logBt[obs[0]]
        bp = np.empty((T, nb, n), dtype=bp_dtype)
        for t in range(1, T):
            k = act[t]
            for r0 in range(0, k, rows_per_block):
                r1 = min(k, r0 + rows_per_block)
                sc = delta[r0:r1, :, None] + logA          # (rows, i, j)
                arg = sc.argmax(axis=1)
                bp[t, r0:r1] = arg
                best = np.take_along_axis(sc, arg[:, None, :], axis=1)[:, 0, :]
                delta[r0:r1] = best + logBt[obs[t, r0:r1]]
        state = delta.argmax(axis=1)
        logprob[ch.index] = delta[np.arange(nb), state]
        path = np.empty((T, nb), dtype=np.int64)
        rows = np.arange(nb)
        for t in range(T - 1, -1, -1):
            k = act[t]
            path[t, :k] = state[:k]
            if t > 0:
                state[:k] = bp[t, rows[:k], state[:k]]
        for j, (i, L) in enumerate(zip(ch.index.tolist(), ch.lengths.tolist())):
            paths[i] = np.ascontiguousarray(path[:L, j])

"""Batched, scaled forward-backward and Viterbi, written once against an array module.

This is the one implementation of the inference algorithm.  It runs on numpy
(:class:`~densehmm_core.engine.numpy_engine.NumpyEngine`) and on CuPy
(:class:`~densehmm_core.engine.cupy_engine.CupyEngine`); what differs between the
two is confined to :class:`~densehmm_core.engine.backend.ArrayBackend` and to a
few hooks the subclasses override (the numpy engine hands small chunks to
hmmlearn's compiled routines; the CuPy engine sizes chunks by free GPU memory).

How it works
------------
:meth:`ArrayEngine.prepare` sorts the sequences by length (longest first) and cuts
them into *chunks* whose padded size ``T_max x n_seq x n_states`` stays below a
budget of floats (``chunk_elements``, or a share of the free GPU memory).  A
chunk stores its symbols time-major, ``obs[t, j]`` = symbol of sequence ``j`` at
time ``t`` (``-1`` past its end), on the backend's device.  Because the
sequences are sorted, the sequences still running at time ``t`` are exactly the
first ``active[t]`` columns, so a time step is a handful of vectorised array
operations on an ``(n, active[t])`` block (layout time x state x sequence): one
matrix product with ``A``, one product with the gathered emission probabilities,
one normalisation.  ``active`` is kept on the host, so a time step never waits
for the device.

The forward pass is the scaled (Rabiner) recursion
``alpha_hat[t] = (alpha_hat[t-1] A) * B[:, x_t] / c_t`` with
``c_t = P(x_t | x_<t)`` and ``log P(x) = sum_t log c_t``; the backward pass uses
the same ``c_t``.  Posteriors are ``alpha_hat * beta_hat``; the expected
transition counts are accumulated during the backward pass as one small matrix
product per step (``alpha_hat[t] @ (B[:, x_{t+1}] * beta_hat[t+1] / c_{t+1})^T``,
times ``A``).  Emission counts are either one ``bincount`` per state and chunk
(``emit_method="bincount"``, the numpy default) or one sparse-times-dense
product per chunk with a prepared symbol-by-position indicator matrix
(``"sparse"``, the GPU default: no atomics, one library call).

Results stay on the device until the end of a call: every method fills one
preallocated result buffer and copies it to the host once
(:meth:`ArrayBackend.to_host`).

Zero probabilities: a time step with ``c_t = 0`` makes the sequence impossible;
its log-likelihood is ``-inf`` (never NaN) and it contributes nothing to the
sufficient statistics (its posteriors are zeros).  Viterbi works in log space
with ``log 0 = -inf``.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .backend import ArrayBackend
from .base import Engine, SufficientStats

__all__ = ["ArrayEngine", "PreparedSequences", "EMIT_METHODS"]

EMIT_METHODS = ("bincount", "sparse")


@dataclass
class _Chunk:
    index: np.ndarray          # (B,) host: original indices of the sequences, longest first
    lengths: np.ndarray        # (B,) host: their lengths (non-increasing)
    active: List[int]          # host: active[t] = number of sequences with length > t
    obs: Any                   # (T, B) int32 on the device, time-major symbols, -1 = padding
    index_dev: Any             # (B,) int64 on the device (= index)
    count_obs: Any = None      # (T*B,) intp on the device, padding mapped to 0 ("bincount")
    emit_csr: Any = None       # (symbols, T*B) indicator matrix on the device ("sparse")
    token_start: int = 0       # first row of this chunk's tokens in prepared order
    _tokens: Any = field(default=None, repr=False)

    def sequence(self, j: int) -> np.ndarray:
        """Symbols of the ``j``-th sequence of the chunk (host int64; numpy chunks only)."""
        return np.ascontiguousarray(self.obs[:int(self.lengths[j]), j], dtype=np.int64)

    def tokens(self, backend: ArrayBackend):
        """``(t, j)`` device index arrays of every token of the chunk, sequence by sequence.

        ``obs[t[r], j[r]]`` is token ``r`` of the chunk in *prepared order* (the
        chunk's sequences one after the other), which is how per-token results
        are laid out (:meth:`PreparedSequences.split`).
        """
        if self._tokens is None:
            lens = self.lengths
            j = np.repeat(np.arange(len(lens)), lens)
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
            t = np.arange(int(lens.sum())) - np.repeat(starts, lens)
            self._tokens = (backend.to_device(t, dtype=np.int64), backend.to_device(j, dtype=np.int64))
        return self._tokens


def _make_chunk(backend: ArrayBackend, emit_method: str, chunk_seqs, idx, lens) -> _Chunk:
    """Chunk of ``chunk_seqs`` (sorted by non-increasing length; original indices ``idx``)."""
    idx = np.asarray(idx)
    lens = np.asarray(lens)
    T = int(lens[0])
    nb = len(lens)
    flat = np.concatenate(chunk_seqs).astype(np.int32, copy=False)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    t = np.arange(T)[:, None]
    mask = t < lens[None, :]
    pos = np.where(mask, offs[None, :] + t, 0)
    obs = np.where(mask, flat[pos], -1).astype(np.int32)
    counts = np.bincount(lens, minlength=T + 1)
    active = (nb - np.cumsum(counts)[:T]).tolist()
    ch = _Chunk(index=idx, lengths=lens, active=active, obs=backend.to_device(obs),
                index_dev=backend.to_device(idx, dtype=np.int64))
    if emit_method == "bincount":
        ch.count_obs = backend.to_device(np.where(mask, obs, 0).astype(np.intp).ravel())
    else:
        # row = symbol, column = position t * B + j of each real token (padding has no entry)
        where = np.flatnonzero(mask.ravel())
        sym = obs.ravel()[where]
        order = np.argsort(sym, kind="stable")
        rows = int(sym.max()) + 1
        indptr = np.concatenate([[0], np.cumsum(np.bincount(sym, minlength=rows))]).astype(np.int32)
        ch.emit_csr = backend.csr_matrix(np.ones(len(where)), where[order].astype(np.int32), indptr,
                                         (rows, T * nb))
    return ch


class PreparedSequences:
    """Sequences sorted by length and cut into padded time-major chunks on a backend's device.

    Build it once with :meth:`ArrayEngine.prepare` and pass it instead of the list
    of sequences to avoid re-batching (and, on a GPU, re-uploading) the same data
    on every EM iteration.  It belongs to the engine that made it.
    """

    #: padded positions ``T_max x n_seq`` of one chunk at most when emission counts are
    #: sparse products (cuSPARSE's int32 column indices); a budget from a large GPU memory
    #: and a one- or two-state model could exceed it
    MAX_SPARSE_POSITIONS = 2 ** 31 - 1

    def __init__(self, seqs: Sequence[np.ndarray], backend: ArrayBackend, chunk_elements: int,
                 n_states_hint: int = 16, emit_method: str = "bincount"):
        seqs = [np.asarray(s) for s in seqs]
        if len(seqs) == 0:
            raise ValueError("no sequences given")
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        if np.any(lengths < 1):
            raise ValueError("every sequence needs length >= 1")
        self.backend = backend
        self.emit_method = emit_method
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
        if emit_method == "sparse":
            # the symbol-by-position matrix indexes the padded positions t * B + j with int32
            budget_tokens = min(budget_tokens, self.MAX_SPARSE_POSITIONS)
        # where each sequence's tokens start in prepared order (sorted by length, chunk by chunk)
        self.starts = np.empty(len(seqs), dtype=np.int64)
        self.starts[order] = np.concatenate([[0], np.cumsum(lengths[order])[:-1]])
        i, N = 0, len(order)
        with backend.context():
            while i < N:
                tmax = int(lengths[order[i]])
                nb = max(1, budget_tokens // tmax)
                idx = order[i:i + nb]
                ch = _make_chunk(backend, emit_method, [seqs[j] for j in idx], idx, lengths[idx])
                ch.token_start = int(self.starts[idx[0]])
                self.chunks.append(ch)
                i += nb

    def split(self, flat: np.ndarray) -> List[np.ndarray]:
        """Host array with one row per token in prepared order -> one array per sequence
        (original order; views of ``flat``)."""
        return [flat[s:s + L] for s, L in zip(self.starts.tolist(), self.lengths.tolist())]


def _check_shapes(pi, A, B) -> int:
    """``n`` of consistent ``(pi, A, B)``, else a ``ValueError`` naming the shapes."""
    n = pi.shape[0]
    if A.shape != (n, n) or B.ndim != 2 or B.shape[0] != n:
        raise ValueError(f"inconsistent parameter shapes: startprob {pi.shape}, transmat {A.shape}, "
                         f"emissionprob {B.shape}")
    return n


@dataclass
class _Params:
    """Parameters of one call: host float64 originals and their device copies."""
    pi: Any
    A: Any
    AT: Any
    BtT: Any            # B with an extra zero column: symbol -1 (padding) gathers zeros
    host: Any   # (pi, A, B) float64 host arrays; None when the parameters were given on the device

    @property
    def n(self) -> int:
        return int(self.pi.shape[0])

    @property
    def m(self) -> int:
        return int(self.BtT.shape[1]) - 1


class ArrayEngine(Engine):
    """Batched scaled forward-backward and Viterbi on an :class:`ArrayBackend` (module docstring).

    Parameters
    ----------
    backend : ArrayBackend
        The array module and device.
    chunk_elements : int or None
        Bound on ``T_max x n_seq x n_states`` of one chunk (floats per working
        array); None = only the backend's free memory bounds it.
    emit_method : {"bincount", "sparse"}
        How emission counts are accumulated (module docstring).
    memory_fraction : float
        Share of the backend's free memory (when it reports one) one chunk may use.
    """

    name = "array"
    #: bytes of device memory per chunk element: alpha, beta/gamma, and one more
    #: array-sized temporary (the transposed posteriors of the sparse emission
    #: counts), float64 each, plus a margin for the per-step temporaries
    BYTES_PER_ELEMENT = 4 * 8
    #: Where the arrays of this engine live, as a device string (a DenseHMM's ``device_used_``).
    device_name = "/CPU:0"

    def __init__(self, backend: ArrayBackend, chunk_elements: Optional[int] = 2 ** 23,
                 emit_method: str = "bincount", memory_fraction: float = 0.5) -> None:
        if emit_method not in EMIT_METHODS:
            raise ValueError(f"emit_method must be one of {EMIT_METHODS}, got {emit_method!r}")
        if not 0.0 < float(memory_fraction) <= 1.0:
            raise ValueError(f"memory_fraction must be in (0, 1], got {memory_fraction!r}")
        self.backend = backend
        self.xp = backend.xp
        self.chunk_elements = None if chunk_elements is None else int(chunk_elements)
        self.emit_method = emit_method
        self.memory_fraction = float(memory_fraction)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.backend.name})"

    # ------------------------------------------------------------ batching
    def chunk_budget(self, n_states: int) -> int:
        """Floats one chunk may hold (``T_max x n_seq x n_states``) for a model of ``n_states``.

        ``chunk_elements`` where the backend reports no free memory (the CPU);
        else ``memory_fraction`` of the free device memory over
        :attr:`BYTES_PER_ELEMENT`, capped by ``chunk_elements`` when it is set.
        """
        free = self.backend.free_bytes()
        if free is None:
            return int(self.chunk_elements or 2 ** 23)
        by_memory = max(int(n_states), int(self.memory_fraction * free / self.BYTES_PER_ELEMENT))
        return by_memory if self.chunk_elements is None else min(by_memory, self.chunk_elements)

    def prepare(self, seqs, n_states: int = 16) -> PreparedSequences:
        """Sort and chunk ``seqs`` once for a model of ``n_states`` states (:class:`PreparedSequences`)."""
        if isinstance(seqs, PreparedSequences):
            self._check_prepared(seqs)
            return seqs
        return PreparedSequences(seqs, self.backend, self.chunk_budget(n_states), n_states, self.emit_method)

    def _check_prepared(self, p: PreparedSequences) -> None:
        if p.backend is not self.backend or p.emit_method != self.emit_method:
            raise ValueError(f"these sequences were prepared by another engine ({p.backend.name}, "
                             f"{p.emit_method}); prepare them with {self!r}")

    def _prep(self, seqs, n: int, m: int) -> PreparedSequences:
        p = self.prepare(seqs, n)
        if p.max_symbol >= m:
            raise ValueError(f"symbol {p.max_symbol} is outside 0..{m - 1} (the model has {m} symbols)")
        return p

    def _params(self, startprob, transmat, emissionprob) -> _Params:
        xp = self.xp
        if not self.backend.is_numpy and all(isinstance(a, xp.ndarray) for a in (startprob, transmat,
                                                                                 emissionprob)):
            return self._device_params(startprob, transmat, emissionprob)
        pi = np.asarray(startprob, dtype=np.float64)
        A = np.ascontiguousarray(transmat, dtype=np.float64)
        B = np.asarray(emissionprob, dtype=np.float64)
        n = _check_shapes(pi, A, B)
        BtT = np.zeros((n, B.shape[1] + 1))
        BtT[:, :-1] = B
        be = self.backend
        dA = be.to_device(A)
        return _Params(pi=be.to_device(pi), A=dA, AT=self.xp.ascontiguousarray(dA.T), BtT=be.to_device(BtT),
                       host=(pi, A, B))

    def _device_params(self, pi, A, B) -> _Params:
        """Parameters that already live on this engine's device (an in-device caller: the EM loop)."""
        xp = self.xp
        n = _check_shapes(pi, A, B)
        BtT = xp.zeros((n, B.shape[1] + 1))
        BtT[:, :-1] = B
        A = xp.ascontiguousarray(A, dtype=xp.float64)
        return _Params(pi=xp.asarray(pi, dtype=xp.float64), A=A, AT=xp.ascontiguousarray(A.T), BtT=BtT,
                       host=None)

    def compute(self):
        """Context for an in-device caller's own array work between engine calls (the EM loop's
        M-step): the same as around every engine call -- the backend's device current, no
        floating-point warnings, and on the CPU BLAS limited to one thread (the products are
        small; a multi-threaded BLAS only adds synchronisation, catastrophic on a loaded machine).
        Hold it only around work that does not yield to other code (the limit is process-wide)."""
        return self._calling()

    def _calling(self):
        """Context of one engine call: the backend's device, no floating-point warnings."""
        stack = contextlib.ExitStack()
        stack.enter_context(self.backend.context())
        stack.enter_context(self.backend.errstate())
        return stack

    # ------------------------------------------------------------- forward
    def _forward(self, P: _Params, ch: _Chunk, store: bool):
        """Scaled forward pass over one chunk (layout time, state, sequence).

        Returns ``(alpha, c)``: ``alpha[t, :, j]`` = scaled forward variable of
        sequence ``j`` at time ``t`` (T, n, B; zeros at padding) if ``store``, else
        None; the raw scale factors ``c`` (T, B) (1 at padding; 0 or NaN from the
        step where a sequence becomes impossible).  Columns of impossible sequences
        hold NaN and are cleaned by the caller (sequences never mix, so the
        others are exact).
        """
        xp, be = self.xp, self.backend
        obs, act = ch.obs, ch.active
        T, nb = obs.shape
        n = P.n
        c = xp.ones((T, nb))
        ones = xp.ones(n)
        a = xp.take(P.BtT, obs[0], axis=1)
        a *= P.pi[:, None]
        if store:
            alpha = xp.zeros((T, n, nb))
            alpha[0] = a
            a = alpha[0]
        else:
            alpha = None
        be.matmul_into(ones, a, c[0])
        a *= 1.0 / c[0]
        for t in range(1, T):
            k = act[t]
            ct = c[t, :k]
            if store:
                at = alpha[t, :, :k]
                be.matmul_into(P.AT, alpha[t - 1, :, :k], at)
            else:
                at = P.AT @ a[:, :k]
                a = at
            at *= xp.take(P.BtT, obs[t, :k], axis=1)
            be.matmul_into(ones, at, ct)
            at *= 1.0 / ct
        return alpha, c

    def _seq_loglik(self, c):
        """Per-sequence log-likelihood from the scale factors (-inf if any is 0 or NaN)."""
        xp = self.xp
        ll = xp.log(c).sum(axis=0)
        return xp.where(xp.isnan(ll), -xp.inf, ll)

    def loglik(self, startprob, transmat, emissionprob, seqs) -> np.ndarray:
        with self._calling():
            return self.backend.to_host(self._loglik(startprob, transmat, emissionprob, seqs))

    def loglik_device(self, startprob, transmat, emissionprob, seqs):
        """:meth:`loglik` for an in-device caller: parameters may be arrays of this engine's module
        (numpy or CuPy) and the result stays there (no transfer)."""
        with self._calling():
            return self._loglik(startprob, transmat, emissionprob, seqs)

    def _loglik(self, startprob, transmat, emissionprob, seqs):
        P = self._params(startprob, transmat, emissionprob)
        p = self._prep(seqs, P.n, P.m)
        out = self.xp.empty(p.n_sequences)
        for ch in p.chunks:
            self._loglik_chunk(P, ch, out)
        return out

    def _loglik_chunk(self, P: _Params, ch: _Chunk, out) -> None:
        _, c = self._forward(P, ch, store=False)
        out[ch.index_dev] = self._seq_loglik(c)

    # ------------------------------------------------------------ backward
    def _backward_gamma(self, P: _Params, ch: _Chunk, alpha, c, want_xi: bool = True):
        """Backward pass; returns (gamma (T, n, B), xi_sum (n, n), per-sequence loglik).

        ``xi_sum[i, j] = sum_t alpha_hat[t, i] A[i, j] B[j, x_{t+1}] beta_hat[t+1, j] / c_{t+1}``
        is accumulated step by step (one small matrix product per step).
        """
        xp, be = self.xp, self.backend
        obs, act = ch.obs, ch.active
        T, n, nb = alpha.shape
        ll = self._seq_loglik(c)
        bad = xp.nonzero(~xp.isfinite(ll))[0]
        if bad.size:                 # impossible sequences: no contribution, no NaN
            alpha[:, :, bad] = 0.0
            c[:, bad] = 1.0
        rc = 1.0 / c
        beta = xp.zeros((T, n, nb))
        beta[T - 1, :, :act[T - 1]] = 1.0
        xi = xp.zeros((n, n))
        for t in range(T - 2, -1, -1):
            k, k1 = act[t], act[t + 1]
            if k > k1:
                beta[t, :, k1:k] = 1.0
            if k1:
                tmp = xp.take(P.BtT, obs[t + 1, :k1], axis=1)
                tmp *= beta[t + 1, :, :k1]
                tmp *= rc[t + 1, :k1]
                if want_xi:
                    xi += alpha[t, :, :k1] @ tmp.T
                be.matmul_into(P.A, tmp, beta[t, :, :k1])
        xi *= P.A
        beta *= alpha                  # beta now holds the posteriors gamma
        return beta, xi, ll

    def statistics(self, startprob, transmat, emissionprob, seqs) -> SufficientStats:
        with self._calling():
            # one buffer for all results: one transfer at the end
            buf, n, m = self._statistics(startprob, transmat, emissionprob, seqs)
            return self._split_stats(self.backend.to_host(buf), n, m)

    def statistics_device(self, startprob, transmat, emissionprob, seqs) -> SufficientStats:
        """:meth:`statistics` for an in-device caller (the EM loop): parameters may be arrays of this
        engine's module (numpy or CuPy), and the expected counts and log-likelihoods stay on the
        device (arrays of that module; nothing is transferred)."""
        with self._calling():
            buf, n, m = self._statistics(startprob, transmat, emissionprob, seqs)
            return self._split_stats(buf, n, m)

    def statistics_posteriors_device(self, startprob, transmat, emissionprob, seqs):
        """:meth:`statistics_device` plus the state posteriors of every token from the same
        forward-backward: ``(stats, gamma)``, ``gamma`` of shape ``(n_tokens, n)`` on the device
        with one row per token in *prepared order* (:meth:`PreparedSequences.split` gives one array
        per sequence).  For E-steps that change the posteriors before counting them
        (:mod:`densehmm_core.posterior_sparsity`)."""
        with self._calling():
            n = len(startprob)
            p = self.prepare(seqs, n)
            post = self.xp.zeros((p.n_tokens, n))
            buf, n, m = self._statistics(startprob, transmat, emissionprob, p, post=post)
            return self._split_stats(buf, n, m), post

    def _statistics(self, startprob, transmat, emissionprob, seqs, post=None):
        P = self._params(startprob, transmat, emissionprob)
        n, m = P.n, P.m
        p = self._prep(seqs, n, m)
        buf = self.xp.zeros(n + n * n + n * m + p.n_sequences)
        start, trans = buf[:n], buf[n:n + n * n].reshape(n, n)
        emit = buf[n + n * n:n + n * n + n * m].reshape(n, m)
        lls = buf[n + n * n + n * m:]
        for ch in p.chunks:
            self._stats_chunk(P, ch, start, trans, emit, lls, post)
        return buf, n, m

    @staticmethod
    def _split_stats(buf, n: int, m: int) -> SufficientStats:
        return SufficientStats(start=buf[:n], trans=buf[n:n + n * n].reshape(n, n),
                               emit=buf[n + n * n:n + n * n + n * m].reshape(n, m),
                               loglik=buf[n + n * n + n * m:])

    def _stats_chunk(self, P: _Params, ch: _Chunk, start, trans, emit, lls, post=None) -> None:
        """Batched E-step of one chunk, accumulated into ``start``, ``trans``, ``emit``, ``lls``
        (and the chunk's token posteriors written into ``post`` in prepared order, when given)."""
        alpha, c = self._forward(P, ch, store=True)
        gamma, xi, ll = self._backward_gamma(P, ch, alpha, c)
        del alpha
        lls[ch.index_dev] = ll
        trans += xi
        start += gamma[0].sum(axis=1)
        self._add_emissions(ch, gamma, emit)
        if post is not None:
            t, j = ch.tokens(self.backend)
            post[ch.token_start:ch.token_start + len(t)] = gamma[t, :, j]

    def _add_emissions(self, ch: _Chunk, gamma, emit) -> None:
        """``emit[i, k] += sum of gamma[t, i, j] over the tokens (t, j) with symbol k``."""
        xp = self.xp
        if self.emit_method == "bincount":
            m = emit.shape[1]
            for i in range(gamma.shape[1]):
                emit[i] += xp.bincount(ch.count_obs, weights=gamma[:, i, :].ravel(), minlength=m)[:m]
        else:
            counts = ch.emit_csr @ self._by_token(gamma)   # (symbols in the chunk, n)
            emit[:, :counts.shape[0]] += counts.T

    def _by_token(self, gamma):
        """(T, n, B) -> (T * B, n) with row ``t * B + j`` = state vector of token (t, j).

        Returned Fortran-ordered (a transposed C-contiguous (n, T * B) copy): the layout a
        sparse-times-dense product (cuSPARSE SpMM) takes without another copy.
        """
        T, n, nb = gamma.shape
        return self.xp.ascontiguousarray(gamma.transpose(1, 0, 2)).reshape(n, T * nb).T

    # ----------------------------------------------------------- posteriors
    def posteriors(self, startprob, transmat, emissionprob, seqs) -> List[np.ndarray]:
        with self._calling():
            P = self._params(startprob, transmat, emissionprob)
            p = self._prep(seqs, P.n, P.m)
            out = self.xp.empty((p.n_tokens, P.n))
            for ch in p.chunks:
                self._post_chunk(P, p, ch, out)
            return p.split(self.backend.to_host(out))

    def _post_chunk(self, P: _Params, p: PreparedSequences, ch: _Chunk, out) -> None:
        alpha, c = self._forward(P, ch, store=True)
        gamma, _, _ = self._backward_gamma(P, ch, alpha, c, want_xi=False)
        del alpha
        t, j = ch.tokens(self.backend)
        out[ch.token_start:ch.token_start + len(t)] = gamma[t, :, j]

    # -------------------------------------------------------------- viterbi
    def viterbi(self, startprob, transmat, emissionprob, seqs) -> Tuple[List[np.ndarray], np.ndarray]:
        xp = self.xp
        with self._calling():
            P = self._params(startprob, transmat, emissionprob)
            n = P.n
            p = self._prep(seqs, n, P.m)
            logs = (xp.log(P.pi), xp.log(P.A), xp.ascontiguousarray(xp.log(P.BtT.T)))
            # paths and log-probabilities share one int64 buffer (the latter viewed as float64):
            # one transfer at the end
            buf = xp.zeros(p.n_tokens + p.n_sequences, dtype=xp.int64)
            paths, logprob = buf[:p.n_tokens], buf[p.n_tokens:].view(xp.float64)
            rows_per_block = max(1, p.chunk_elements // (n * n))
            for ch in p.chunks:
                self._viterbi_chunk(P, p, ch, logs, rows_per_block, paths, logprob)
            host = self.backend.to_host(buf)
        return p.split(host[:p.n_tokens]), host[p.n_tokens:].view(np.float64)

    def _viterbi_chunk(self, P: _Params, p: PreparedSequences, ch: _Chunk, logs, rows_per_block,
                       paths, logprob) -> None:
        """Batched log-space Viterbi over one chunk; fills ``paths`` and ``logprob``."""
        xp = self.xp
        logpi, logA, logBt = logs
        n = P.n
        bp_dtype = xp.int8 if n <= 127 else (xp.int16 if n <= 32767 else xp.int32)
        obs, act = ch.obs, ch.active
        T, nb = obs.shape
        delta = logpi + logBt[obs[0]]                     # (B, n)
        bp = xp.empty((T, nb, n), dtype=bp_dtype)
        for t in range(1, T):
            k = act[t]
            for r0 in range(0, k, rows_per_block):
                r1 = min(k, r0 + rows_per_block)
                sc = delta[r0:r1, :, None] + logA          # (rows, i, j)
                # ties as hmmlearn's compiled Viterbi breaks them (the one-sequence path of the numpy
                # engine): the last of equal predecessors; the final state below is the first of equals
                arg = (n - 1) - sc[:, ::-1, :].argmax(axis=1)
                bp[t, r0:r1] = arg
                best = xp.take_along_axis(sc, arg[:, None, :], axis=1)[:, 0, :]
                delta[r0:r1] = best + logBt[obs[t, r0:r1]]
        state = delta.argmax(axis=1)
        rows = xp.arange(nb)
        logprob[ch.index_dev] = delta[rows, state]
        path = xp.empty((T, nb), dtype=xp.int64)
        for t in range(T - 1, -1, -1):
            k = act[t]
            path[t, :k] = state[:k]
            if t > 0:
                state[:k] = bp[t, rows[:k], state[:k]]
        t, j = ch.tokens(self.backend)
        paths[ch.token_start:ch.token_start + len(t)] = path[t, j]

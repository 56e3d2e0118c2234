"""The numpy engine: the shared array algorithm on numpy, plus hmmlearn's compiled
single-sequence routines for chunks of few sequences.

The batched algorithm itself (sorting, chunking, the scaled forward-backward,
Viterbi) is :mod:`densehmm_core.engine.array_engine`; this module adds what only
the CPU needs:

* BLAS limited to one thread during a call: the matrix products are tiny
  (``n x n`` times ``n x active``) and a multi-threaded BLAS only adds
  synchronisation, which is catastrophic (100x) on a loaded machine;
* chunks holding fewer than ``min_batch`` sequences (default 64: a few very long
  sequences, or a tiny data set) would pay the fixed per-step numpy overhead
  (~0.1 ms) for little work; they are processed one sequence at a time by
  hmmlearn's compiled scaled routines when hmmlearn is importable
  (``min_batch=0`` disables this).  Both paths give the same numbers (tests
  compare them).  A sequence whose scale factor becomes zero (impossible) is
  redone on the exact batched path, which gives ``-inf``.

Memory is bounded by ``chunk_elements`` (default 2**23 floats = 64 MB per
working array; two of them).
"""
from __future__ import annotations

import sys
from typing import Any, Optional, Tuple

import numpy as np

from .array_engine import ArrayEngine, PreparedSequences, _make_chunk
from .backend import numpy_backend

__all__ = ["NumpyEngine", "PreparedSequences"]

#: (len(sys.modules) when made, threadpoolctl's controller of the libraries then loaded)
_CONTROLLER: Optional[Tuple[int, Any]] = None
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
        except Exception:  # noqa: BLE001 - hmmlearn's private _hmmc changed: numpy fallback  # pragma: no cover
            _HMMC = None
    return _HMMC


def _single_threaded_blas():
    """Context limiting BLAS to one thread (a no-op without threadpoolctl).

    The controller (the BLAS libraries loaded) is found again after any import: a library loaded
    later (scipy's own OpenBLAS, loaded with ``scipy.linalg``, runs the spectral start's SVD) would
    otherwise keep its threads."""
    global _CONTROLLER
    try:
        if _CONTROLLER is None or _CONTROLLER[0] != len(sys.modules):
            from threadpoolctl import ThreadpoolController
            _CONTROLLER = (len(sys.modules), ThreadpoolController())
        return _CONTROLLER[1].limit(limits=1, user_api="blas")
    except Exception:  # noqa: BLE001 - threadpoolctl cannot inspect this BLAS: run unlimited  # pragma: no cover
        import contextlib
        return contextlib.nullcontext()


def _seq_posteriors(hm, pi, A, B, x):
    """One sequence through hmmlearn's compiled scaled forward-backward.

    Returns ``(loglik, posteriors, fwd, bwd, frameprob)`` or None when a scale
    factor is zero (the caller then uses the exact batched path).
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


class NumpyEngine(ArrayEngine):
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
    emit_method : {"bincount", "sparse"}
        How emission counts are accumulated (``"sparse"`` is the GPU engine's
        way; numpy's ``bincount`` per state is faster on the CPU).
    """

    name = "numpy"

    def __init__(self, chunk_elements: int = 2 ** 23, min_batch: int = 64, emit_method: str = "bincount"):
        super().__init__(numpy_backend(), chunk_elements=chunk_elements, emit_method=emit_method)
        self.min_batch = int(min_batch)

    def _calling(self):
        stack = super()._calling()
        stack.enter_context(_single_threaded_blas())
        return stack

    def _sequential(self, ch):
        """hmmlearn's compiled single-sequence routines for a chunk with few sequences, else None."""
        if len(ch.index) >= self.min_batch:
            return None
        return _hmmc()

    def _single(self, ch, j):
        """A one-sequence chunk (the batched path for one sequence)."""
        L = int(ch.lengths[j])
        one = _make_chunk(self.backend, self.emit_method, [ch.sequence(j)], np.array([ch.index[j]]),
                          np.array([L]))
        one.token_start = ch.token_start + int(ch.lengths[:j].sum())
        return one

    # ------------------------------------------------ small chunks: hmmlearn
    def _loglik_chunk(self, P, ch, out) -> None:
        hm = self._sequential(ch)
        if hm is None:
            return super()._loglik_chunk(P, ch, out)
        pi, A, B = P.host
        for j in range(len(ch.index)):
            try:
                out[ch.index[j]] = hm.forward_scaling(pi, A, np.ascontiguousarray(B.T[ch.sequence(j)]))[0]
            except ValueError:   # a zero scale factor: exact batched path (gives -inf)
                super()._loglik_chunk(P, self._single(ch, j), out)

    def _stats_chunk(self, P, ch, start, trans, emit, lls, post=None) -> None:
        hm = self._sequential(ch)
        if hm is None:
            return super()._stats_chunk(P, ch, start, trans, emit, lls, post)
        pi, A, B = P.host
        n, m = B.shape
        offs = ch.token_start + np.concatenate([[0], np.cumsum(ch.lengths)[:-1]])
        for j in range(len(ch.index)):
            x = ch.sequence(j)
            res = _seq_posteriors(hm, pi, A, B, x)
            if res is None:      # zero scale factor: exact batched path for this one
                super()._stats_chunk(P, self._single(ch, j), start, trans, emit, lls, post)
                continue
            ll, gamma, fwd, bwd, fp = res
            if post is not None:
                post[offs[j]:offs[j] + len(x)] = gamma
            lls[ch.index[j]] = ll
            start += gamma[0]
            if len(x) > 1:
                trans += hm.compute_scaling_xi_sum(fwd, A, bwd, fp)
            for i in range(n):
                emit[i] += np.bincount(x, weights=gamma[:, i], minlength=m)

    def _post_chunk(self, P, p, ch, out) -> None:
        hm = self._sequential(ch)
        if hm is None:
            return super()._post_chunk(P, p, ch, out)
        pi, A, B = P.host
        for j in range(len(ch.index)):
            res = _seq_posteriors(hm, pi, A, B, ch.sequence(j))
            if res is None:
                super()._post_chunk(P, p, self._single(ch, j), out)
            else:
                off = p.starts[ch.index[j]]
                out[off:off + len(res[1])] = res[1]

    def _viterbi_chunk(self, P, p, ch, logs, rows_per_block, paths, logprob) -> None:
        hm = self._sequential(ch)
        if hm is None:
            return super()._viterbi_chunk(P, p, ch, logs, rows_per_block, paths, logprob)
        pi, A, _ = P.host
        logBt = logs[2]
        for j in range(len(ch.index)):
            x = ch.sequence(j)
            lp, path = hm.viterbi(pi, A, np.ascontiguousarray(logBt[x]))
            off = p.starts[ch.index[j]]
            paths[off:off + len(x)] = path
            logprob[ch.index[j]] = lp

"""TensorFlow graph code for vocabulary-scale DenseHMMs: symbol features and the sparse
co-occurrence loss (imported lazily by :mod:`densehmm_core.dense`).

Parameters are one flat float64 vector, packed as in :mod:`densehmm_core.dense_tf`
followed by the feature embeddings: ``U, Z, W, V_own (m*l), z_start, feature_V (F*l)``.
The effective symbol embeddings are ``V = V_own + S feature_V`` (``S`` the 0/1 symbol x
feature incidence of :class:`densehmm_core.features.SymbolFeatures`, applied as a sparse
matrix product, never as a dense m x F matrix).

The co-occurrence loss is the sparse form (see :mod:`densehmm_core.cooc_sparse`)::

    scale (||Omega_gt||^2 - 2 sum_nnz Omega_gt[i,j] Omega[i,j] + tr(M G M^T G)),
    M = diag(pi) A,  G = B B^T,  Omega[i,j] = sum_a B[a,i] (M B)[a,j]

costing ``O(nnz n + n^2 m)`` per step; no ``m x m`` tensor exists.  :class:`WordGraph`
exposes the same operations as :mod:`densehmm_core.dense_tf` (Adam chunks for the cooc fit,
evaluation, value-and-gradient for L-BFGS, and the EM M-step's loss as a test oracle) for one
model shape and one data set.
"""
from __future__ import annotations

import numpy as np

from .dense_layout import FeatureLayout, Layout
from .dense_tf import DT, AdamState, _adam_loop, stationary, tf

__all__ = ["FeatureLayout", "WordGraph", "DenseGraph"]


# ----------------------------------------------------------------- graph functions
def _parts(theta, n, m, l, nf, fidx, fval, xla=False):
    nl = n * l
    U, Z, W, V, zs, F = tf.split(theta, [nl, nl, nl, m * l, l, nf * l])
    V = tf.reshape(V, (m, l))
    if nf:
        # S feature_V with S the sparse m x F incidence (4x faster than gather + segment sum here)
        F = tf.reshape(F, (nf, l))
        if xla:  # XLA has no sparse-dense matmul kernel
            V = V + tf.math.unsorted_segment_sum(tf.gather(F, fidx[:, 1]), fidx[:, 0], m)
        else:
            V = V + tf.sparse.sparse_dense_matmul(tf.sparse.SparseTensor(fidx, fval, (m, nf)), F)
    return tf.reshape(U, (n, l)), tf.reshape(Z, (n, l)), tf.reshape(W, (n, l)), V, zs


def _mstep_loss(theta, c_start, c_trans, c_emit, norm, n, m, l, nf, fidx, fval, xla=False):
    U, Z, W, V, zs = _parts(theta, n, m, l, nf, fidx, fval, xla)
    logA = tf.nn.log_softmax(tf.matmul(Z, U, transpose_b=True), axis=1)
    logB = tf.nn.log_softmax(tf.matmul(W, V, transpose_b=True), axis=1)
    logpi = tf.nn.log_softmax(tf.linalg.matvec(U, zs))
    q = tf.reduce_sum(c_start * logpi) + tf.reduce_sum(c_trans * logA) + tf.reduce_sum(c_emit * logB)
    return -q / norm


def _cooc_terms(theta, prow, pcol, pval, gt_sq, n, m, l, nf, fidx, fval, stationary_grad, xla=False):
    """``(squared error, sum_nnz |Omega - Omega_gt| + sum Omega off the pairs)``."""
    U, Z, W, V, _ = _parts(theta, n, m, l, nf, fidx, fval, xla)
    A = tf.nn.softmax(tf.matmul(Z, U, transpose_b=True), axis=1)
    B = tf.nn.softmax(tf.matmul(W, V, transpose_b=True), axis=1)
    pi = stationary(A)
    if not stationary_grad:
        pi = tf.stop_gradient(pi)
    M = pi[:, None] * A
    Bt = tf.transpose(B)                                   # (m, n)
    Ct = tf.matmul(Bt, M, transpose_b=True)                # (M B)^T, (m, n)
    om = tf.reduce_sum(tf.gather(Bt, prow) * tf.gather(Ct, pcol), axis=1)   # Omega at the pairs
    G = tf.matmul(B, B, transpose_b=True)                  # (n, n)
    fro = tf.reduce_sum(tf.matmul(M, G) * tf.matmul(G, M))  # tr(M G M^T G)
    err = gt_sq - 2.0 * tf.reduce_sum(pval * om) + fro
    abs_sum = tf.reduce_sum(tf.abs(om - pval)) + tf.reduce_sum(pi) - tf.reduce_sum(om)
    return err, abs_sum


def _cooc_loss(theta, prow, pcol, pval, gt_sq, scale, n, m, l, nf, fidx, fval, stationary_grad, xla=False):
    return scale * _cooc_terms(theta, prow, pcol, pval, gt_sq, n, m, l, nf, fidx, fval, stationary_grad, xla)[0]


def _adam_cooc_py(theta, m_, v_, t_, n_steps, lr0, lr1, k0, k_total, limit, prow, pcol, pval, gt_sq, scale,
                  n, m, l, nf, fidx, fval, stationary_grad, xla=False):
    def loss_fn(th):
        return _cooc_loss(th, prow, pcol, pval, gt_sq, scale, n, m, l, nf, fidx, fval, stationary_grad, xla)
    th, mm, vv, tt, k, status, good = _adam_loop(loss_fn, theta, m_, v_, t_, n_steps, lr0, lr1, k0, k_total, limit)
    err, abs_sum = _cooc_terms(th, prow, pcol, pval, gt_sq, n, m, l, nf, fidx, fval, True, xla)
    return th, mm, vv, tt, k, status, good, scale * err, abs_sum / float(m) ** 2


_adam_cooc = tf.function(_adam_cooc_py, autograph=False)
_adam_cooc_xla = tf.function(_adam_cooc_py, jit_compile=True, autograph=False)


@tf.function(autograph=False)
def _cooc_value_and_grad(theta, prow, pcol, pval, gt_sq, scale, n, m, l, nf, fidx, fval):
    with tf.GradientTape() as tape:
        tape.watch(theta)
        loss = _cooc_loss(theta, prow, pcol, pval, gt_sq, scale, n, m, l, nf, fidx, fval, True)
    return loss, tape.gradient(loss, theta)


@tf.function(autograph=False)
def _cooc_eval(theta, prow, pcol, pval, gt_sq, scale, n, m, l, nf, fidx, fval):
    err, abs_sum = _cooc_terms(theta, prow, pcol, pval, gt_sq, n, m, l, nf, fidx, fval, True)
    return scale * err, abs_sum / float(m) ** 2


@tf.function(autograph=False)
def _mstep_value_and_grad(theta, c_start, c_trans, c_emit, norm, n, m, l, nf, fidx, fval):
    with tf.GradientTape() as tape:
        tape.watch(theta)
        loss = _mstep_loss(theta, c_start, c_trans, c_emit, norm, n, m, l, nf, fidx, fval)
    return loss, tape.gradient(loss, theta)


class WordGraph:
    """The training operations of one DenseHMM shape with optional symbol features and a
    sparse co-occurrence target (the same calls as :mod:`densehmm_core.dense_tf`, with the
    model shape, features and target bound once).

    Parameters
    ----------
    layout : FeatureLayout
    pairs : PairCounts, optional
        The co-occurrence target (needed by the cooc operations only).
    """

    def __init__(self, layout: FeatureLayout, pairs=None) -> None:
        self.layout = layout
        self.n, self.m, self.l = layout.n, layout.m, layout.l
        self.nf = getattr(layout, "n_feat", 0)
        f = getattr(layout, "features", None)
        idx = np.zeros((0, 2), np.int64) if f is None else np.stack([f.rows, f.cols], axis=1)
        order = np.lexsort((idx[:, 1], idx[:, 0]))  # canonical (row-major) order for the SparseTensor
        self._fidx = tf.constant(idx[order], tf.int64)
        self._fval = tf.constant(np.ones(len(idx)), DT)
        self.pairs = pairs
        if pairs is not None:
            if pairs.m != self.m:
                raise ValueError(f"co-occurrence target has m={pairs.m}, the model m={self.m}")
            self._prow = tf.constant(pairs.rows, tf.int64)
            self._pcol = tf.constant(pairs.cols, tf.int64)
            self._pval = tf.constant(pairs.vals, DT)
            self._gt_sq = tf.constant(pairs.sq_norm, DT)

    def _shape(self):
        return int(self.n), int(self.m), int(self.l), int(self.nf), self._fidx, self._fval

    def _target(self):
        if self.pairs is None:
            raise RuntimeError("this graph has no co-occurrence target")
        return self._prow, self._pcol, self._pval, self._gt_sq

    def adam_cooc(self, theta, state: AdamState, n_steps: int, lr0: float, lr1: float, k0: int, k_total: int,
                  limit: float, scale: float, stationary_grad: bool, jit: bool = False):
        """As :func:`densehmm_core.dense_tf.adam_cooc` on the sparse loss."""
        fn = _adam_cooc_xla if jit else _adam_cooc
        out = fn(*self._adam_args(theta, state, n_steps, lr0, lr1, k0, k_total, limit, scale, stationary_grad, jit))
        th, mm, vv, tt, k, status, good, loss, mad = out
        return th, AdamState(mm, vv, tt), int(k), int(status), good, float(loss), float(mad)

    def _adam_args(self, theta, state, n_steps, lr0, lr1, k0, k_total, limit, scale, stationary_grad, jit) -> tuple:
        n, m, l, nf, fr, fc = self._shape()
        return (tf.convert_to_tensor(theta, DT), state.m, state.v, state.t, tf.constant(int(n_steps)),
                tf.constant(float(lr0), DT), tf.constant(float(lr1), DT), tf.constant(int(k0)),
                tf.constant(float(k_total), DT), tf.constant(float(limit), DT), *self._target(),
                tf.constant(float(scale), DT), n, m, l, nf, fr, fc, bool(stationary_grad), bool(jit))

    def trace_adam(self, theta, state: AdamState, limit: float, scale: float, stationary_grad: bool,
                   jit: bool = False) -> None:
        """Trace :meth:`adam_cooc`'s graph now, without running a step (see
        :func:`densehmm_core.dense_tf.trace_adam_cooc`)."""
        fn = _adam_cooc_xla if jit else _adam_cooc
        fn.get_concrete_function(*self._adam_args(theta, state, 1, 0.0, 0.0, 0, 1, limit, scale, stationary_grad,
                                                  jit))

    def cooc_eval(self, theta, scale: float):
        """``(loss, mad)`` -- ``mad`` the exact mean |Omega - Omega_gt| over all m^2 entries."""
        loss, mad = _cooc_eval(tf.convert_to_tensor(theta, DT), *self._target(), tf.constant(float(scale), DT),
                               *self._shape())
        return float(loss), float(mad)

    def cooc_value_and_grad(self, theta, scale: float):
        """Loss and exact gradient (through the stationary distribution), numpy."""
        loss, g = _cooc_value_and_grad(tf.convert_to_tensor(theta, DT), *self._target(),
                                       tf.constant(float(scale), DT), *self._shape())
        return float(loss), g.numpy()

    def mstep_value_and_grad(self, theta, c_start, c_trans, c_emit, norm: float):
        """M-step loss and its TensorFlow gradient, numpy: the test oracle of
        :class:`densehmm_core.dense_mstep.MStep` (EM itself runs no TensorFlow)."""
        loss, g = _mstep_value_and_grad(tf.convert_to_tensor(theta, DT), tf.constant(c_start, DT),
                                        tf.constant(c_trans, DT), tf.constant(c_emit, DT),
                                        tf.constant(float(norm), DT), *self._shape())
        return float(loss), g.numpy()


class DenseGraph:
    """The same operations as :class:`WordGraph` on today's dense graph
    (:mod:`densehmm_core.dense_tf`: no features, a dense ``m x m`` target)."""

    def __init__(self, layout: Layout, omega=None) -> None:
        from . import dense_tf
        self._tfm = dense_tf
        self.layout = layout
        self.n, self.m, self.l = layout.n, layout.m, layout.l
        self._om = None if omega is None else tf.constant(omega, DT)

    def adam_cooc(self, theta, state, n_steps, lr0, lr1, k0, k_total, limit, scale, stationary_grad, jit=False):
        return self._tfm.adam_cooc(theta, state, n_steps, lr0, lr1, k0, k_total, limit, self._om, scale,
                                   self.n, self.m, self.l, stationary_grad, jit)

    def trace_adam(self, theta, state, limit, scale, stationary_grad, jit=False):
        self._tfm.trace_adam_cooc(theta, state, limit, self._om, scale, self.n, self.m, self.l, stationary_grad, jit)

    def cooc_eval(self, theta, scale):
        return self._tfm.cooc_eval(theta, self._om, scale, self.n, self.m, self.l)[:2]

    def cooc_value_and_grad(self, theta, scale):
        return self._tfm.cooc_value_and_grad(theta, self._om, scale, self.n, self.m, self.l)

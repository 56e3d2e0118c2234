"""TensorFlow graph code of the DenseHMM (imported lazily by :mod:`densehmm_core.dense`).

All parameters of one model live in ONE flat float64 vector ``theta``, packed as
``U (n*l), Z (n*l), W (n*l), V (m*l), z_start (l)`` (row-major), so that one
optimiser step is a handful of ops whatever the model size.

* ``A = softmax(Z U^T)`` (row i = from-state), ``B = softmax(W V^T)``,
  ``pi = softmax(U z_start)`` -- numerically stable softmax / log-softmax.
* :func:`mstep_loss`: the exact negative expected complete-data log-likelihood
  (-Q) written with the aggregated E-step counts, divided by a normaliser (the
  token count).
* :func:`stationary`: the stationary distribution of ``A`` by one linear solve
  in float64 inside the graph, so gradients flow through it.
* :func:`cooc_loss`: ``||Omega_gt - B^T diag(pi) A B||_F^2`` times a scale.
* :func:`adam_cooc`: whole Adam loops (``tf.while_loop``
  inside one ``tf.function``) that run a chunk of steps and return the Adam
  state, so the caller can stream progress events between chunks.  They stop early -- keeping the last
  parameters whose loss was finite -- when a loss or gradient turns
  non-finite or a parameter leaves ``[-limit, limit]``.
"""
from __future__ import annotations

from typing import NamedTuple, Tuple

import numpy as np

from .dense_layout import Layout
from .device import import_tf

tf = import_tf()
DT = tf.float64

__all__ = ["Layout", "matrices", "log_matrices", "stationary", "mstep_loss", "cooc_model",
           "cooc_loss", "adam_cooc", "trace_adam_cooc", "cooc_value_and_grad", "cooc_eval",
           "mstep_value_and_grad", "AdamState", "STATUS_OK", "STATUS_NONFINITE", "STATUS_LIMIT"]

STATUS_OK, STATUS_NONFINITE, STATUS_LIMIT = 0, 1, 2
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


def _unpack(theta, n: int, m: int, l: int):
    nl = n * l
    U, Z, W, V, zs = tf.split(theta, [nl, nl, nl, m * l, l])  # one op (its gradient: one concat)
    return (tf.reshape(U, (n, l)), tf.reshape(Z, (n, l)), tf.reshape(W, (n, l)),
            tf.reshape(V, (m, l)), zs)


def matrices(theta, n: int, m: int, l: int):
    """``(pi, A, B)`` of the packed embeddings (``pi`` = softmax(U z_start))."""
    U, Z, W, V, zs = _unpack(theta, n, m, l)
    A = tf.nn.softmax(tf.matmul(Z, U, transpose_b=True), axis=1)
    B = tf.nn.softmax(tf.matmul(W, V, transpose_b=True), axis=1)
    pi = tf.nn.softmax(tf.linalg.matvec(U, zs))
    return pi, A, B


def log_matrices(theta, n: int, m: int, l: int):
    """``(log pi, log A, log B)`` by log-softmax (finite even where the softmax underflows)."""
    U, Z, W, V, zs = _unpack(theta, n, m, l)
    logA = tf.nn.log_softmax(tf.matmul(Z, U, transpose_b=True), axis=1)
    logB = tf.nn.log_softmax(tf.matmul(W, V, transpose_b=True), axis=1)
    logpi = tf.nn.log_softmax(tf.linalg.matvec(U, zs))
    return logpi, logA, logB


def stationary(A):
    """Stationary distribution ``pi`` of the row-stochastic ``A`` (``pi A = pi``, ``sum pi = 1``).

    Solves ``(I - A^T + 1 1^T) pi = 1`` -- non-singular for every irreducible
    chain (in particular every softmax-parametrised ``A``) -- with one LU solve,
    so the gradient flows through ``pi``.
    """
    n = tf.shape(A)[0]
    M = tf.eye(n, dtype=A.dtype) - tf.transpose(A) + tf.constant(1.0, A.dtype)
    return tf.linalg.solve(M, tf.ones((n, 1), dtype=A.dtype))[:, 0]


def mstep_loss(theta, c_start, c_trans, c_emit, norm, n: int, m: int, l: int):
    """The EM M-step objective: ``-Q / norm``.

    ``-(sum_i c_start[i] log pi[i] + sum_ij C_trans[i,j] log A[i,j] + sum_ik C_emit[i,k] log B[i,k]) / norm``
    with ``C_trans[i, j]`` the expected number of transitions FROM i TO j.
    """
    logpi, logA, logB = log_matrices(theta, n, m, l)
    q = (tf.reduce_sum(c_start * logpi) + tf.reduce_sum(c_trans * logA)
         + tf.reduce_sum(c_emit * logB))
    return -q / norm


def cooc_model(theta, n: int, m: int, l: int, stationary_grad: bool = True):
    """``(Omega, pi, A, B)`` with ``Omega = B^T diag(pi) A B`` and ``pi`` stationary for ``A``.

    With ``stationary_grad=False`` ``pi`` is treated as a constant (the paper's code).
    """
    U, Z, W, V, _ = _unpack(theta, n, m, l)
    A = tf.nn.softmax(tf.matmul(Z, U, transpose_b=True), axis=1)
    B = tf.nn.softmax(tf.matmul(W, V, transpose_b=True), axis=1)
    pi = stationary(A)
    if not stationary_grad:
        pi = tf.stop_gradient(pi)
    omega = tf.matmul(B, tf.matmul(pi[:, None] * A, B), transpose_a=True)
    return omega, pi, A, B


def cooc_loss(theta, omega_gt, scale, n: int, m: int, l: int, stationary_grad: bool = True):
    """``scale * ||Omega_gt - Omega||_F^2``."""
    omega = cooc_model(theta, n, m, l, stationary_grad)[0]
    d = omega - omega_gt
    return scale * tf.reduce_sum(d * d)


class AdamState(NamedTuple):
    """First/second moment estimates and the number of steps taken."""

    m: object
    v: object
    t: object  # float64 scalar tensor

    @staticmethod
    def zeros(size: int) -> "AdamState":
        z = tf.zeros((size,), DT)
        return AdamState(z, z, tf.constant(0.0, DT))


def _adam_loop(loss_fn, theta, m_, v_, t_, n_steps, lr0, lr1, k0, k_total, limit):
    """Run up to ``n_steps`` Adam steps of ``loss_fn``; lr follows a cosine from lr0 (global
    step 0) to lr1 (global step ``k_total``), ``k0`` being the global index of the first step.

    Adam in Kingma & Ba's efficient form (as Keras): ``theta -= lr sqrt(1-b2^t)/(1-b1^t) m/(sqrt(v)+eps)``.
    The body is kept to few ops: one op costs microseconds in a CPU graph loop.

    Returns ``(theta, m, v, t, steps_done, status, last_good_theta)``; on a failed step the loop
    stops, ``theta`` is the last accepted iterate and ``last_good_theta`` the last one whose loss
    was finite (the Adam moments are then meaningless).
    """
    # lr(k) = a + b cos(c (k0 + k))
    lr_a = 0.5 * (lr0 + lr1)
    lr_b = 0.5 * (lr0 - lr1)
    lr_c = tf.constant(np.pi, DT) / tf.maximum(k_total, 1.0)
    k0f = tf.cast(k0, DT)
    one = tf.constant(1.0, DT)

    def cond(k, th, good, mm, vv, tt, status):
        return tf.logical_and(k < n_steps, tf.equal(status, STATUS_OK))

    def body(k, th, good, mm, vv, tt, status):
        with tf.GradientTape() as tape:
            tape.watch(th)
            loss = loss_fn(th)
        g = tape.gradient(loss, th)
        good = tf.where(tf.math.is_finite(loss), th, good)
        lr = lr_a + lr_b * tf.cos(lr_c * (k0f + tf.cast(k, DT)))
        t1 = tt + one
        mm1 = BETA1 * mm + (1.0 - BETA1) * g
        vv1 = BETA2 * vv + (1.0 - BETA2) * tf.square(g)
        alpha = lr * tf.sqrt(one - tf.pow(tf.constant(BETA2, DT), t1)) / (one - tf.pow(tf.constant(BETA1, DT), t1))
        th1 = th - alpha * mm1 / (tf.sqrt(vv1) + EPS)
        a = tf.abs(th1)
        finite = tf.math.is_finite(loss + tf.reduce_sum(a))  # NaN/inf in loss, g or th1
        in_range = tf.reduce_max(a) <= limit
        ok = tf.logical_and(finite, in_range)
        new_status = tf.where(finite, tf.where(in_range, STATUS_OK, STATUS_LIMIT), STATUS_NONFINITE)
        return (tf.where(ok, k + 1, k), tf.where(ok, th1, th), good, mm1, vv1, t1, new_status)

    k, th, good, mm, vv, tt, status = tf.while_loop(
        cond, body, (tf.constant(0), theta, theta, m_, v_, t_, tf.constant(STATUS_OK)))
    return th, mm, vv, tt, k, status, good


def _adam_cooc_py(theta, m_, v_, t_, n_steps, lr0, lr1, k0, k_total, limit, omega_gt, scale,
                  n, m, l, stationary_grad):
    def loss_fn(th):
        return cooc_loss(th, omega_gt, scale, n, m, l, stationary_grad)
    th, mm, vv, tt, k, status, good = _adam_loop(loss_fn, theta, m_, v_, t_, n_steps, lr0, lr1,
                                                 k0, k_total, limit)
    om = cooc_model(th, n, m, l, True)[0]
    d = om - omega_gt
    loss = scale * tf.reduce_sum(d * d)
    mad = tf.reduce_mean(tf.abs(d))
    return th, mm, vv, tt, k, status, good, loss, mad


_adam_cooc = tf.function(_adam_cooc_py, autograph=False)
_adam_cooc_xla = tf.function(_adam_cooc_py, jit_compile=True, autograph=False)


def adam_cooc(theta, state: AdamState, n_steps: int, lr0: float, lr1: float, k0: int, k_total: int,
              limit: float, omega_gt, scale: float, n: int, m: int, l: int, stationary_grad: bool,
              jit: bool = False):
    """A chunk of Adam steps on the co-occurrence loss (``jit``: XLA-compiled loop).

    Returns ``(theta, state, steps_done, status, last_good_theta, loss, mad)`` -- ``loss`` and
    ``mad`` (mean absolute deviation of Omega) evaluated at the returned ``theta``.
    """
    fn = _adam_cooc_xla if jit else _adam_cooc
    out = fn(*_adam_cooc_args(theta, state, n_steps, lr0, lr1, k0, k_total, limit, omega_gt, scale,
                              n, m, l, stationary_grad))
    th, mm, vv, tt, k, status, good, loss, mad = out
    return th, AdamState(mm, vv, tt), int(k), int(status), good, float(loss), float(mad)


def _adam_cooc_args(theta, state: AdamState, n_steps, lr0, lr1, k0, k_total, limit, omega_gt, scale,
                    n, m, l, stationary_grad) -> tuple:
    return (theta, state.m, state.v, state.t, tf.constant(int(n_steps)),
            tf.constant(float(lr0), DT), tf.constant(float(lr1), DT),
            tf.constant(int(k0)), tf.constant(float(k_total), DT),
            tf.constant(float(limit), DT), omega_gt, tf.constant(float(scale), DT),
            int(n), int(m), int(l), bool(stationary_grad))


def trace_adam_cooc(theta, state: AdamState, limit: float, omega_gt, scale: float, n: int, m: int, l: int,
                    stationary_grad: bool, jit: bool = False) -> None:
    """Trace :func:`adam_cooc`'s graph for these shapes now, without running a step (the first call
    then reuses it): the caller can poll its cancel token between the trace and the first steps."""
    fn = _adam_cooc_xla if jit else _adam_cooc
    fn.get_concrete_function(*_adam_cooc_args(theta, state, 1, 0.0, 0.0, 0, 1, limit, omega_gt, scale,
                                              n, m, l, stationary_grad))


@tf.function(autograph=False)
def _cooc_value_and_grad(theta, omega_gt, scale, n, m, l):
    with tf.GradientTape() as tape:
        tape.watch(theta)
        loss = cooc_loss(theta, omega_gt, scale, n, m, l, True)
    return loss, tape.gradient(loss, theta)


def cooc_value_and_grad(theta, omega_gt, scale: float, n: int, m: int, l: int) -> Tuple[float, np.ndarray]:
    """Loss and exact gradient (through the stationary distribution) as numpy values."""
    loss, g = _cooc_value_and_grad(tf.constant(theta, DT), omega_gt, tf.constant(float(scale), DT),
                                   int(n), int(m), int(l))
    return float(loss), g.numpy()


@tf.function(autograph=False)
def _cooc_eval(theta, omega_gt, scale, n, m, l):
    om, pi, A, B = cooc_model(theta, n, m, l, True)
    d = om - omega_gt
    return scale * tf.reduce_sum(d * d), tf.reduce_mean(tf.abs(d)), om, pi


def cooc_eval(theta, omega_gt, scale: float, n: int, m: int, l: int):
    """``(loss, mad, Omega, stationary pi)`` as numpy values."""
    loss, mad, om, pi = _cooc_eval(tf.constant(theta, DT), omega_gt, tf.constant(float(scale), DT),
                                   int(n), int(m), int(l))
    return float(loss), float(mad), om.numpy(), pi.numpy()


@tf.function(autograph=False)
def _mstep_value_and_grad(theta, c_start, c_trans, c_emit, norm, n, m, l):
    with tf.GradientTape() as tape:
        tape.watch(theta)
        loss = mstep_loss(theta, c_start, c_trans, c_emit, norm, n, m, l)
    return loss, tape.gradient(loss, theta)


def mstep_value_and_grad(theta, c_start, c_trans, c_emit, norm: float, n: int, m: int, l: int):
    """M-step loss and its TensorFlow gradient as numpy values: the test oracle of the M-step EM
    runs (:mod:`densehmm_core.dense_mstep`, no TensorFlow)."""
    loss, g = _mstep_value_and_grad(tf.constant(theta, DT), tf.constant(c_start, DT),
                                    tf.constant(c_trans, DT), tf.constant(c_emit, DT),
                                    tf.constant(float(norm), DT), int(n), int(m), int(l))
    return float(loss), g.numpy()


@tf.function(autograph=False)
def _cooc_residual_jac(theta, omega_gt, root_scale, n, m, l):
    with tf.GradientTape() as tape:
        tape.watch(theta)
        omega = cooc_model(theta, n, m, l, True)[0]
        r = tf.reshape(omega - omega_gt, (-1,)) * root_scale
    return r, tape.jacobian(r, theta, experimental_use_pfor=True)


def cooc_residual_jac(theta, omega_gt, scale: float, n: int, m: int, l: int):
    """Residuals ``sqrt(scale) (Omega - Omega_gt)`` (m*m,) and their Jacobian (m*m, P), numpy."""
    r, J = _cooc_residual_jac(tf.constant(theta, DT), omega_gt, tf.constant(float(scale) ** 0.5, DT),
                              int(n), int(m), int(l))
    return r.numpy(), J.numpy()

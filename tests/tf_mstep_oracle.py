"""TensorFlow's M-step, kept as the test oracle of the array-module M-step.

Until issue 22 the DenseHMM's EM M-step was this: ``mstep_steps`` Adam steps on ``-Q`` per token
inside one ``tf.function`` (the Adam loop of :func:`densehmm_core.dense_tf._adam_loop`, the loss of
:func:`densehmm_core.words_tf._mstep_loss`, gradients by TensorFlow's autodiff).  The product now
runs :class:`densehmm_core.dense_mstep.MStep` (closed-form gradient on numpy / CuPy); the tests
compare the two step for step and over whole EM fits.
"""
import numpy as np

from densehmm_core.dense_tf import DT, AdamState, _adam_loop, tf
from densehmm_core.words_tf import WordGraph, _mstep_loss


def _adam_mstep_py(theta, m_, v_, t_, n_steps, lr, limit, c_start, c_trans, c_emit, norm, n, m, l, nf,
                   fidx, fval):
    def loss_fn(th):
        return _mstep_loss(th, c_start, c_trans, c_emit, norm, n, m, l, nf, fidx, fval)
    th, mm, vv, tt, k, status, good = _adam_loop(loss_fn, theta, m_, v_, t_, n_steps, lr, lr,
                                                 tf.constant(0), tf.constant(1.0, DT), limit)
    return th, mm, vv, tt, k, status, good, loss_fn(th)


_adam_mstep = tf.function(_adam_mstep_py)


class TFMStep:
    """``adam`` and ``loss_and_grad`` of one layout, on numpy arrays, by TensorFlow."""

    def __init__(self, layout) -> None:
        self.graph = WordGraph(layout)
        self.size = layout.size

    def zeros(self) -> AdamState:
        return AdamState.zeros(self.size)

    def adam(self, theta, state, n_steps, lr, limit, c_start, c_trans, c_emit, norm):
        out = _adam_mstep(tf.constant(np.asarray(theta), DT), state.m, state.v, state.t, tf.constant(int(n_steps)),
                          tf.constant(float(lr), DT), tf.constant(float(limit), DT),
                          tf.constant(np.asarray(c_start), DT), tf.constant(np.asarray(c_trans), DT),
                          tf.constant(np.asarray(c_emit), DT), tf.constant(float(norm), DT), *self.graph._shape())
        th, mm, vv, tt, k, status, good, loss = out
        return th.numpy(), AdamState(mm, vv, tt), int(k), int(status), good.numpy(), float(loss)

    def loss_and_grad(self, theta, c_start, c_trans, c_emit, norm):
        return self.graph.mstep_value_and_grad(theta, c_start, c_trans, c_emit, norm)

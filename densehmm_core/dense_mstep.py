"""The DenseHMM M-step on the array module: ``-Q`` per token, its closed-form gradient, Adam.

Written once against an array module ``xp`` (numpy or CuPy: the inference engine's
:class:`~densehmm_core.engine.backend.ArrayBackend`), so that an EM fit runs where its E-step
runs and nothing but scalars crosses to the host per iteration.  No TensorFlow: TensorFlow's
autodiff of the same loss is the test oracle (``tests/test_dense_mstep.py``).

The objective, with the E-step's expected counts ``c`` (start), ``C`` (transitions, from i to
j), ``E`` (emissions) and a normaliser ``N`` (the token count)::

    L(theta) = -( sum_i c_i log pi_i + sum_ij C_ij log A_ij + sum_ik E_ik log B_ik ) / N
    A = softmax_rows(Z U^T),  B = softmax_rows(W V^T),  pi = softmax(U z_start),
    V = V_own + S feature_V   (S: the 0/1 symbol x feature incidence; no features: V = V_own)

For one softmax row with logits ``x`` and counts ``c``, ``d(-sum_k c_k log softmax(x)_k)/dx =
(sum_k c_k) softmax(x) - c``.  With ``G_A = (C 1) * A - C``, ``g_pi = (sum c) pi - c`` and
``G_B = (E 1) * B - E`` (each divided by ``N``), the chain rule through the kernels gives::

    dZ = G_A U,   dU = G_A^T Z + g_pi z_start^T,   dz_start = U^T g_pi,
    dW = G_B V,   dV_own = G_B^T W,                dfeature_V = S^T dV_own.

Adam is Kingma & Ba's efficient form, step for step the loop the TensorFlow M-step ran
(:func:`densehmm_core.dense_tf._adam_loop`): ``theta -= lr sqrt(1-b2^t)/(1-b1^t) m/(sqrt(v)+eps)``;
a step whose loss, gradient or new parameters are not finite, or that moves an entry beyond
``limit``, is not taken and ends the loop (the status says which).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Tuple

import numpy as np

__all__ = ["MStep", "AdamMoments", "STATUS_OK", "STATUS_NONFINITE", "STATUS_LIMIT", "BETA1", "BETA2", "EPS"]

STATUS_OK, STATUS_NONFINITE, STATUS_LIMIT = 0, 1, 2
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


@dataclass
class AdamMoments:
    """First and second moment estimates (arrays of the M-step's module) and the steps taken."""

    m: Any
    v: Any
    t: float = 0.0


class MStep:
    """The M-step of one DenseHMM shape on one array backend.

    Parameters
    ----------
    layout : densehmm_core.dense_layout.Layout or FeatureLayout
        Packing of ``theta`` (with symbol features: their incidence ``layout.features``).
    backend : densehmm_core.engine.backend.ArrayBackend
        Where the arrays live (the E-step engine's backend).
    """

    def __init__(self, layout, backend) -> None:
        self.layout = layout
        self.backend = backend
        self.xp = xp = backend.xp
        n, m, l = layout.n, layout.m, layout.l
        self.n, self.m, self.l = n, m, l
        self.nf = int(layout.n_feat)
        nl = n * l
        self._cuts = (0, nl, 2 * nl, 3 * nl, 3 * nl + m * l, 3 * nl + m * l + l, layout.size)
        self.S = self.ST = None
        if self.nf:
            f = layout.features
            order = np.lexsort((f.cols, f.rows))
            rows, cols = f.rows[order], f.cols[order]
            indptr = np.zeros(m + 1, np.int64)
            np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
            self.S = backend.csr_matrix(np.ones(len(rows)), cols.astype(np.int32), indptr, (m, self.nf))
            self.ST = self.S.T.tocsr()
        del xp

    # ----------------------------------------------------------------- parts
    def to_device(self, theta: np.ndarray):
        """Host ``theta`` -> a float64 array of this backend (a copy)."""
        return self.xp.array(np.asarray(theta, dtype=np.float64), dtype=self.xp.float64)

    def parts(self, theta):
        """Views ``U, Z, W, V_own, z_start, feature_V`` of ``theta`` and the effective ``V``."""
        c = self._cuts
        n, m, l = self.n, self.m, self.l
        U = theta[c[0]:c[1]].reshape(n, l)
        Z = theta[c[1]:c[2]].reshape(n, l)
        W = theta[c[2]:c[3]].reshape(n, l)
        Vown = theta[c[3]:c[4]].reshape(m, l)
        zs = theta[c[4]:c[5]]
        F = theta[c[5]:c[6]].reshape(self.nf, l)
        V = Vown + self.S @ F if self.nf else Vown
        return U, Z, W, Vown, zs, F, V

    def _softmax_rows(self, X):
        """Row softmax of ``X`` in place; returns ``(softmax, logsumexp per row)``."""
        xp = self.xp
        mx = X.max(axis=1, keepdims=True)
        X -= mx
        xp.exp(X, out=X)
        s = X.sum(axis=1, keepdims=True)
        X /= s
        return X, (mx + xp.log(s))[:, 0]

    def matrices(self, theta):
        """``(pi, A, B)`` of ``theta`` as arrays of the backend (``pi = softmax(U z_start)``)."""
        U, Z, W, _, zs, _, V = self.parts(theta)
        A, _ = self._softmax_rows(Z @ U.T)
        B, _ = self._softmax_rows(W @ V.T)
        pi, _ = self._softmax_rows((U @ zs)[None, :])
        return pi[0], A, B

    # ------------------------------------------------------ loss and gradient
    def loss_and_grad(self, theta, c_start, c_trans, c_emit, norm: float, grad=None):
        """``(L, dL/dtheta)``: the loss as a 0-d array of the backend and the gradient (written into
        ``grad`` when given).  Counts are arrays of the backend (or numpy, for numpy)."""
        xp = self.xp
        U, Z, W, _, zs, _, V = self.parts(theta)
        inv = 1.0 / float(norm)
        c = self._cuts
        g = xp.empty(self.layout.size) if grad is None else grad
        # transitions: logits Z U^T
        XA = Z @ U.T
        q = xp.vdot(c_trans, XA)
        rs_a = c_trans.sum(axis=1)
        A, lse_a = self._softmax_rows(XA)
        q -= rs_a @ lse_a
        A *= rs_a[:, None]
        A -= c_trans                                  # G_A * N
        # start: logits U z_start
        xs = U @ zs
        q += c_start @ xs
        tot = c_start.sum()
        ps, lse_s = self._softmax_rows(xs[None, :].copy())
        q -= tot * lse_s[0]
        gs = tot * ps[0] - c_start                    # g_pi * N
        # emissions: logits W V^T
        XB = W @ V.T
        q += xp.vdot(c_emit, XB)
        rs_b = c_emit.sum(axis=1)
        B, lse_b = self._softmax_rows(XB)
        q -= rs_b @ lse_b
        B *= rs_b[:, None]
        B -= c_emit                                   # G_B * N
        gU = g[c[0]:c[1]].reshape(self.n, self.l)
        gU[...] = A.T @ Z
        gU += gs[:, None] * zs[None, :]
        g[c[1]:c[2]].reshape(self.n, self.l)[...] = A @ U
        g[c[2]:c[3]].reshape(self.n, self.l)[...] = B @ V
        gV = g[c[3]:c[4]].reshape(self.m, self.l)
        gV[...] = B.T @ W
        g[c[4]:c[5]] = U.T @ gs
        if self.nf:
            g[c[5]:c[6]].reshape(self.nf, self.l)[...] = self.ST @ gV
        g *= inv
        return -q * inv, g

    def loss(self, theta, c_start, c_trans, c_emit, norm: float) -> float:
        """The loss alone, as a host float."""
        xp = self.xp
        U, Z, W, _, zs, _, V = self.parts(theta)

        def term(X, C):
            mx = X.max(axis=1, keepdims=True)
            lse = (mx + xp.log(xp.exp(X - mx).sum(axis=1, keepdims=True)))[:, 0]
            return xp.vdot(C, X) - C.sum(axis=1) @ lse

        q = term(Z @ U.T, c_trans) + term((U @ zs)[None, :], c_start[None, :]) + term(W @ V.T, c_emit)
        return float(-q / float(norm))

    # ------------------------------------------------------------------ Adam
    def zeros(self) -> AdamMoments:
        xp = self.xp
        return AdamMoments(xp.zeros(self.layout.size), xp.zeros(self.layout.size), 0.0)

    def adam(self, theta, state: AdamMoments, n_steps: int, lr: float, limit: float,
             c_start, c_trans, c_emit, norm: float) -> Tuple[Any, AdamMoments, int, int, Any, float]:
        """``n_steps`` Adam steps (constant ``lr``) on the loss.

        Returns ``(theta, state, steps_done, status, last_good_theta, loss)``: ``theta`` the last
        accepted iterate, ``last_good_theta`` the last one whose loss was finite, ``loss`` (host
        float) the loss at ``theta``.  One scalar pair crosses to the host per step (the checks).
        ``theta`` is not modified in place.
        """
        xp = self.xp
        th = theta
        good = theta
        mm, vv, t = state.m, state.v, float(state.t)
        status = STATUS_OK
        k = 0
        grad = xp.empty(self.layout.size)
        while k < int(n_steps):
            loss, grad = self.loss_and_grad(th, c_start, c_trans, c_emit, norm, grad)
            t1 = t + 1.0
            mm = BETA1 * mm + (1.0 - BETA1) * grad
            vv = BETA2 * vv + (1.0 - BETA2) * (grad * grad)
            alpha = lr * math.sqrt(1.0 - BETA2 ** t1) / (1.0 - BETA1 ** t1)
            th1 = th - alpha * mm / (xp.sqrt(vv) + EPS)
            checks = self.backend.to_host(xp.stack([loss, xp.abs(th1).max()]))
            f_loss, amax = float(checks[0]), float(checks[1])
            if np.isfinite(f_loss):
                good = th
            t = t1
            if not (np.isfinite(f_loss) and np.isfinite(amax)):
                status = STATUS_NONFINITE
                break
            if amax > limit:
                status = STATUS_LIMIT
                break
            th = th1
            k += 1
        final = self.loss(th, c_start, c_trans, c_emit, norm)
        return th, AdamMoments(mm, vv, t), k, status, good, final


"""Numpy co-occurrence model with an analytic Jacobian, for the Levenberg-Marquardt finish.

Used by :class:`densehmm_core.dense.DenseHMM` on small problems (the Jacobian is
``m^2 x l(3n+m+1)``); the tests check it against TensorFlow's Jacobian.
"""
from __future__ import annotations

import numpy as np

# one BLAS thread for the small LM solves (shared with the inference engine)
from .engine.numpy_engine import _single_threaded_blas as _single_thread_blas
from .maths import softmax

__all__ = ["unpack", "forward", "residual_jacobian", "levenberg_marquardt"]


def unpack(theta: np.ndarray, n: int, m: int, l: int):
    nl = n * l
    U = theta[0:nl].reshape(n, l)
    Z = theta[nl:2 * nl].reshape(n, l)
    W = theta[2 * nl:3 * nl].reshape(n, l)
    V = theta[3 * nl:3 * nl + m * l].reshape(m, l)
    return U, Z, W, V


def forward(theta: np.ndarray, n: int, m: int, l: int):
    """``(Omega, pi, A, B, G)`` with ``G = (I - A + 1 1^T)^{-1}`` (``pi^T = 1^T G``)."""
    U, Z, W, V = unpack(theta, n, m, l)
    A = softmax(Z @ U.T, axis=1)
    B = softmax(W @ V.T, axis=1)
    G = np.linalg.inv(np.eye(n) - A + 1.0)
    pi = G.sum(axis=0)
    P = pi[:, None] * A
    return B.T @ P @ B, pi, A, B, G


def residual_jacobian(theta: np.ndarray, omega_gt: np.ndarray, n: int, m: int, l: int):
    """Residuals ``vec(Omega - Omega_gt)`` and their Jacobian w.r.t. ``theta`` (analytic)."""
    U, Z, W, V = unpack(theta, n, m, l)
    omega, pi, A, B, G = forward(theta, n, m, l)
    P = pi[:, None] * A
    C = A @ B                                  # (n, m)
    # d Omega_ij / d A_ab = pi_a (sum_k G_bk B_ki C_kj + B_ai B_bj)   (pi^T = 1^T G  =>  dpi^T = pi^T dA G)
    T1 = np.einsum("bk,ki,kj->ijb", G, B, C, optimize=True)   # (m, m, n)
    JA = pi[None, None, :, None] * (T1[:, :, None, :] + np.einsum("ai,bj->ijab", B, B, optimize=True))
    # softmax rows of A: dA_ab/dS_ac = A_ab (delta_bc - A_ac)
    JS = JA * A - A * np.einsum("ijab,ab->ija", JA, A, optimize=True)[..., None]
    JZ = np.einsum("ijec,cd->ijed", JS, U, optimize=True)
    JU = np.einsum("ijae,ad->ijed", JS, Z, optimize=True)
    # d Omega_ij / d B_ab = delta_ib (P B)_aj + (B^T P)_ia delta_jb, then softmax rows of B
    PB = P @ B                                  # (n, m)
    BP = B.T @ P                                # (m, n)
    eye = np.eye(m)
    JT = B[None, None] * (eye[:, None, None, :] * PB.T[None, :, :, None]
                          + BP[:, None, :, None] * eye[None, :, None, :]
                          - (B.T[:, None, :] * PB.T[None, :, :] + BP[:, None, :] * B.T[None, :, :])[..., None])
    JW = np.einsum("ijec,cd->ijed", JT, V, optimize=True)
    JV = np.einsum("ijac,ad->ijcd", JT, W, optimize=True)
    mm = m * m
    J = np.concatenate([JU.reshape(mm, -1), JZ.reshape(mm, -1), JW.reshape(mm, -1),
                        JV.reshape(mm, -1), np.zeros((mm, l))], axis=1)
    return (omega - omega_gt).ravel(), J


def levenberg_marquardt(theta0: np.ndarray, omega_gt: np.ndarray, n: int, m: int, l: int,
                        max_iter: int, ftol: float = 1e-12):
    """Levenberg-Marquardt on ``||Omega - Omega_gt||^2`` as a generator.

    Yields ``(iterations_done, theta, sum of squared residuals, reason)``; ``reason`` is
    non-empty on the last item (``"converged"``, ``"max_steps"``, ``"stalled"``).
    """
    x = np.array(theta0, dtype=np.float64)
    r, J = residual_jacobian(x, omega_gt, n, m, l)
    f = float(r @ r)
    lam, nu = 1e-3, 2.0
    stall = 0
    for it in range(1, max_iter + 1):
        with _single_thread_blas():
            step = _lm_iteration(x, r, J, f, lam, nu, omega_gt, n, m, l)
        if step is None:
            yield it - 1, x, f, "stalled"
            return
        x, r, J, f1, f, lam, nu = step
        rel = (f1 - f) / max(f1, 1e-300)
        stall = stall + 1 if rel < ftol else 0
        if f == 0.0 or stall >= 5:
            yield it, x, f, "converged"
            return
        yield it, x, f, ("max_steps" if it == max_iter else "")


def _lm_iteration(x, r, J, f, lam, nu, omega_gt, n, m, l):
    """One accepted LM step: ``(x, r, J, f_old, f_new, lam, nu)``, or None when no step helps."""
    g = J.T @ r
    H = J.T @ J
    dH = np.diag(H).copy()
    damp = dH + 1e-9 * (dH.max() + 1e-300)
    accepted = False
    while lam < 1e16:
        try:
            d = np.linalg.solve(H + lam * np.diag(damp), -g)
            om1 = forward(x + d, n, m, l)[0]
            r1 = (om1 - omega_gt).ravel()
            f1 = float(r1 @ r1)
        except np.linalg.LinAlgError:  # a step into a reducible chain: reject it
            f1 = np.inf
        if np.isfinite(f1) and f1 < f:
            pred = float(d @ (lam * damp * d - g))  # predicted reduction of the GN model
            rho = (f - f1) / pred if pred > 0 else 1.0
            lam *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
            nu = 2.0
            accepted = True
            break
        lam *= nu
        nu *= 2.0
    if not accepted:
        return None
    x = x + d
    r, J = residual_jacobian(x, omega_gt, n, m, l)
    return x, r, J, f, float(r @ r), max(lam, 1e-15), nu

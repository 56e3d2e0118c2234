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

plus the L2 penalty ``(l2/2) ||theta||^2`` over all embeddings (features included; ``l2 = 0``: none),
whose gradient ``l2 theta`` is added to the one below.

For one softmax row with logits ``x`` and counts ``c``, ``d(-sum_k c_k log softmax(x)_k)/dx =
(sum_k c_k) softmax(x) - c``.  With ``G_A = (C 1) * A - C``, ``g_pi = (sum c) pi - c`` and
``G_B = (E 1) * B - E`` (each divided by ``N``), the chain rule through the kernels gives::

    dZ = G_A U,   dU = G_A^T Z + g_pi z_start^T,   dz_start = U^T g_pi,
    dW = G_B V,   dV_own = G_B^T W,                dfeature_V = S^T dV_own.

Adam is Kingma & Ba's efficient form, step for step the loop the TensorFlow M-step ran
(:func:`densehmm_core.dense_tf._adam_loop`): ``theta -= lr sqrt(1-b2^t)/(1-b1^t) m/(sqrt(v)+eps)``;
a step whose loss, gradient or new parameters are not finite, or that moves an entry beyond
``limit``, is not taken and ends the loop (the status says which).

On the CPU the emission terms go in two blocks of symbols ``b``: each block's exponentials
``exp(W V_b^T - max_b)`` and row sums ``s_b``, combined into one softmax over all symbols
(``max = max over b of max_b``, ``s = sum_b s_b exp(max_b - max)``), then each block's ``G_B`` columns, its
share of ``dW`` and ``dfeature_V``, its rows of ``dV``, and Adam's update of its rows of ``V_own``;
the second block on a helper thread (:mod:`densehmm_core.threads`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .threads import cpu_threads, run_halves

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
    l2 : float
        Weight of the L2 penalty ``(l2/2) ||theta||^2`` added to the loss (0: none).
    fixed_kernels : bool
        ``logits="full"``: ``U`` and ``W`` are fixed (the identity): their gradient is zero (so Adam and
        L-BFGS leave them exactly as they are) and the penalty leaves them out.
    threads : int, optional
        CPU threads of one step (more than 2 are not used; default: the fit's budget,
        :func:`densehmm_core.threads.cpu_threads`).  On the CPU the symbols are split in two blocks
        whatever the number: the second block runs on a helper thread when ``threads >= 2``, and the
        numbers are the same either way.  On a GPU: one block, one thread.
    """

    def __init__(self, layout, backend, l2: float = 0.0, dtype: Any = np.float64,
                 fixed_kernels: bool = False, threads: Optional[int] = None) -> None:
        if not (np.isfinite(l2) and l2 >= 0):
            raise ValueError(f"l2 must be a finite number >= 0, got {l2}")
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"the M-step's dtype must be float32 or float64, got {self.dtype}")
        self.l2 = float(l2)
        self.fixed_kernels = bool(fixed_kernels)
        self.layout = layout
        self.backend = backend
        self.xp = backend.xp
        n, m, l = layout.n, layout.m, layout.l
        self.n, self.m, self.l = n, m, l
        self.nf = int(layout.n_feat)
        nl = n * l
        self._cuts = (0, nl, 2 * nl, 3 * nl, 3 * nl + m * l, 3 * nl + m * l + l, layout.size)
        #: threads of one step on the CPU (1 or 2; the budget of :func:`densehmm_core.threads.cpu_threads`)
        self.threads = min(2, cpu_threads() if threads is None else int(threads)) if backend.is_numpy else 1
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        # On the CPU the symbols are split in two blocks whatever the number of threads (so the numbers
        # do not depend on it); on a GPU one block.
        split = backend.is_numpy and m >= 2
        self._blocks = ((0, m // 2), (m // 2, m)) if split else ((0, m),)
        #: the parts of theta besides V_own (U, Z, W; z_start, feature_V): Adam updates them once the
        #: gradient of every block is in (on the calling thread: split in two, the hand-over to the helper
        #: cost as much as it saved)
        self._shared = ((0, 3 * nl), (3 * nl + m * l, layout.size))
        # each block's rows of the symbol x feature incidence S (V = V_own + S feature_V) and their transpose
        self._S_blocks: tuple = ()
        self._ST_blocks: tuple = ()
        self._work: Optional[list] = None
        if self.nf:
            indptr, cols = layout.features.csr_index
            S = backend.csr_matrix(np.ones(len(cols), self.dtype), cols, indptr, (m, self.nf))
            self._S_blocks = tuple(S[a:e].tocsr() for a, e in self._blocks) if split else (S,)
            self._ST_blocks = tuple(Sb.T.tocsr() for Sb in self._S_blocks)

    # ----------------------------------------------------------------- parts
    def to_device(self, theta: np.ndarray):
        """Host ``theta`` -> an array of this backend in the M-step's dtype (a copy)."""
        return self.xp.array(np.asarray(theta, dtype=self.dtype), dtype=self.dtype)

    def _f64(self, theta):
        """``theta`` as float64 (itself when it is already)."""
        return theta if theta.dtype == np.float64 else theta.astype(np.float64)

    def parts(self, theta):
        """Views ``U, Z, W, V_own, z_start, feature_V`` of ``theta`` (the effective ``V`` is formed
        block by block: :meth:`_emission_exp`)."""
        c = self._cuts
        n, m, l = self.n, self.m, self.l
        U = theta[c[0]:c[1]].reshape(n, l)
        Z = theta[c[1]:c[2]].reshape(n, l)
        W = theta[c[2]:c[3]].reshape(n, l)
        Vown = theta[c[3]:c[4]].reshape(m, l)
        zs = theta[c[4]:c[5]]
        F = theta[c[5]:c[6]].reshape(self.nf, l)
        return U, Z, W, Vown, zs, F

    def _softmax_rows(self, X, scale=None):
        """Row softmax of ``X`` in place, each row times ``scale`` (a vector or scalar, default 1);
        returns ``(scaled softmax, logsumexp per row)``."""
        xp = self.xp
        mx = X.max(axis=1, keepdims=True)
        X -= mx
        xp.exp(X, out=X)
        s = X.sum(axis=1, keepdims=True)
        X *= (1.0 if scale is None else xp.reshape(scale, (-1, 1))) / s
        return X, (mx + xp.log(s))[:, 0]

    def matrices(self, theta):
        """``(pi, A, B)`` of ``theta`` as float64 arrays of the backend (``pi = softmax(U z_start)``)."""
        return self._evaluate(theta, None)[1]

    def evaluate(self, theta, c_start, c_trans, c_emit, norm: float):
        """``(loss, (pi, A, B))`` of ``theta`` from one float64 evaluation: the loss of :meth:`loss`
        and the matrices of :meth:`matrices` (what the EM loop needs after an M-step: the event's
        loss and the next E-step's matrices, without computing the logits twice)."""
        return self._evaluate(theta, (c_start, c_trans, c_emit, norm))

    def _evaluate(self, theta, counts):
        """``(loss or None, (pi, A, B))`` in float64; ``counts``: ``(c_start, c_trans, c_emit, norm)``
        or None (the matrices alone)."""
        xp = self.xp
        theta = self._f64(theta)
        U, Z, W, Vown, zs, F = self.parts(theta)
        logits = (Z @ U.T, (U @ zs)[None, :])
        B = xp.empty((self.n, self.m), np.float64)
        outs = [B[:, a:e] for a, e in self._blocks]
        c_emit = None if counts is None else [xp.asarray(counts[2])[:, a:e] for a, e in self._blocks]
        _, q_e, lse, scales = self._emission_exp(W, Vown, F, outs, c_emit, None)

        def scale(b):
            outs[b] *= scales[b]
        run_halves(scale, range(len(outs)), self.threads)
        if counts is None:
            A, pi = (self._softmax_rows(X)[0] for X in logits)
            return None, (pi[0], A, B)
        c_start, c_trans, _, norm = counts
        q = q_e - xp.asarray(counts[2]).sum(axis=1) @ lse
        probs = []
        for X, C in zip(logits, (c_trans, c_start[None, :])):
            q += xp.vdot(C, X)          # before the softmax overwrites the logits
            P, lse_x = self._softmax_rows(X)
            q -= C.sum(axis=1) @ lse_x
            probs.append(P)
        loss = float(-q / float(norm) + 0.5 * self.l2 * self.free_sq(theta))
        return loss, (probs[1][0], probs[0], B)

    def _emission_exp(self, W, Vown, F, outs, counts, rows):
        """The emission softmax's exponentials, block by block of symbols (on the CPU the second
        block on the helper thread): ``outs[b]`` (n x m_b) receives ``exp(W V_b^T - max)``.

        Returns ``(V_blocks, q, lse, scales)``: the blocks' rows of the effective ``V``; ``q =
        sum_b <counts[b], W V_b^T>`` (0 when ``counts`` is None); the rows' log-sum-exp; and per
        block the column that turns ``outs[b]`` into its columns of ``rows * softmax`` (``rows``: a
        vector of row weights, or None for 1).
        """
        xp, be = self.xp, self.backend
        V_blocks = [None] * len(self._blocks)

        def block(b):
            a, e = self._blocks[b]
            if self.nf:
                V = self._S_blocks[b] @ F
                V += Vown[a:e]
            else:
                V = Vown[a:e]
            V_blocks[b] = V
            X = outs[b]
            be.matmul_into(W, V.T, X)
            if counts is None:
                q = 0.0
            elif counts[b].flags.c_contiguous and X.flags.c_contiguous:
                q = xp.vdot(counts[b], X)
            else:   # column blocks of full arrays: a copy for vdot would cost more than the product
                q = xp.einsum("ij,ij->", counts[b], X)
            mx = X.max(axis=1, keepdims=True)
            X -= mx
            xp.exp(X, out=X)
            return q, mx, X.sum(axis=1, keepdims=True)

        firsts = run_halves(block, range(len(self._blocks)), self.threads)
        weight = 1.0 if rows is None else xp.reshape(rows, (-1, 1))
        if len(firsts) == 1:
            q, mx, s = firsts[0]
            scales: tuple = (weight / s,)
        else:   # one softmax over both blocks: each block's exponentials rescaled to the common maximum
            q = firsts[0][0] + firsts[1][0]
            mx = xp.maximum(firsts[0][1], firsts[1][1])
            shifts = [xp.exp(f[1] - mx) for f in firsts]
            s = firsts[0][2] * shifts[0] + firsts[1][2] * shifts[1]
            scales = tuple(weight * e / s for e in shifts)
        return V_blocks, q, (mx + xp.log(s))[:, 0], scales

    # ------------------------------------------------------ loss and gradient
    def loss_and_grad(self, theta, c_start, c_trans, c_emit, norm: float, grad=None):
        """``(L, dL/dtheta)``: the loss as a 0-d array of the backend and the gradient (written into
        ``grad`` when given).  Counts are arrays of the backend (or numpy, for numpy)."""
        return self._loss_and_grad(theta, self._scaled(c_start, c_trans, c_emit, norm), grad)[:2]

    def _scaled(self, c_start, c_trans, c_emit, norm: float) -> tuple:
        """The counts divided by ``norm``, their row totals and the emission counts of each block of
        symbols (once per M-step)."""
        inv = 1.0 / float(norm)
        xp, dt = self.xp, self.dtype
        cs, ct = (xp.asarray(c * inv, dtype=dt) for c in (c_start, c_trans))

        def block(b):      # each block's emission counts (contiguous) and row totals
            a, e = self._blocks[b]
            ce = xp.asarray(c_emit[:, a:e] * inv, dtype=dt)
            return ce, ce.sum(axis=1)

        blocks = run_halves(block, range(len(self._blocks)), self.threads)
        rs_b = blocks[0][1] if len(blocks) == 1 else blocks[0][1] + blocks[1][1]
        return cs, ct, tuple(ce for ce, _ in blocks), cs.sum(), ct.sum(axis=1), rs_b

    def _transitions(self, U, Z, zs, cs, ct, tot_s, rs_a, g):
        """The start and transition terms: their part of ``q`` (returned) and of the gradient
        (``dU``, ``dZ``, ``dz_start``, written into ``g``)."""
        xp, c = self.xp, self._cuts
        n, l = self.n, self.l
        # transitions: logits Z U^T, G_A = rs * A - C (in place)
        X = Z @ U.T
        q = xp.vdot(ct, X)
        X, lse = self._softmax_rows(X, rs_a)
        q -= rs_a @ lse
        X -= ct
        g[c[0]:c[1]].reshape(n, l)[...] = X.T @ Z
        g[c[1]:c[2]].reshape(n, l)[...] = X @ U
        # start: logits U z_start
        xs = U @ zs
        q += cs @ xs
        ps, lse_s = self._softmax_rows(xs[None, :].copy(), tot_s)
        q -= tot_s * lse_s[0]
        gs = ps[0] - cs
        g[c[0]:c[1]].reshape(n, l)[...] += gs[:, None] * zs[None, :]
        g[c[4]:c[5]] = U.T @ gs
        return q

    def _loss_and_grad(self, theta, scaled, grad=None, rows_done=None):
        """``(loss, gradient, [rows_done results])``.  The emissions (almost all of the work) go block
        by block of symbols: each block's logits ``W V_b^T`` and the shifted exponentials, then (the
        row maxima and sums of all blocks combined) each block's ``G_B``, its part of ``dW`` and
        ``dfeature_V`` and its rows of ``dV``; on the CPU the second block on the helper thread.
        ``rows_done(lo, hi)``: called by each block as soon as its rows ``theta[lo:hi]`` of ``V_own``
        have their final gradient (Adam updates them there, without waiting for the other block)."""
        xp, be, c = self.xp, self.backend, self._cuts
        n, m, l = self.n, self.m, self.l
        cs, ct, ce_blocks, tot_s, rs_a, rs_b = scaled
        U, Z, W, Vown, zs, F = self.parts(theta)
        g = xp.empty(self.layout.size, self.dtype) if grad is None else grad
        if self._work is None:   # the n x m logits live in buffers kept across steps (no page faults)
            self._work = [xp.empty((n, e - a), self.dtype) for a, e in self._blocks]
        V_blocks, q_e, lse, scales = self._emission_exp(W, Vown, F, self._work, ce_blocks, rs_b)
        gV = g[c[3]:c[4]].reshape(m, l)

        def gradient(b):
            a, e = self._blocks[b]
            X = self._work[b]
            X *= scales[b]
            X -= ce_blocks[b]
            dW = X @ V_blocks[b]
            be.matmul_into(X.T, W, gV[a:e])
            dF = self._ST_blocks[b] @ gV[a:e] if self.nf else None
            if self.l2:
                gV[a:e] += self.l2 * Vown[a:e]
            done = None if rows_done is None else rows_done(c[3] + a * l, c[3] + e * l)
            q_t = self._transitions(U, Z, zs, cs, ct, tot_s, rs_a, g) if b == 0 else None
            return dW, dF, q_t, done

        parts = run_halves(gradient, range(len(self._blocks)), self.threads)
        gW = g[c[2]:c[3]].reshape(n, l)
        gF = g[c[5]:c[6]].reshape(self.nf, l)
        if len(parts) == 1:
            gW[...] = parts[0][0]
            if self.nf:
                gF[...] = parts[0][1]
        else:
            xp.add(parts[0][0], parts[1][0], out=gW)
            if self.nf:
                xp.add(parts[0][1], parts[1][1], out=gF)
        q = parts[0][2] + q_e - rs_b @ lse
        if self.l2:
            q -= 0.5 * self.l2 * self.free_sq(theta)
            for lo, hi in self._shared:    # V_own's rows have theirs (above)
                g[lo:hi] += self.l2 * theta[lo:hi]
        if self.fixed_kernels:
            g[c[0]:c[1]] = 0.0
            g[c[2]:c[3]] = 0.0
        return -q, g, [p[3] for p in parts]

    def free_sq(self, theta):
        """``||theta||^2`` over the trained parameters (without ``U`` and ``W`` when they are fixed), a
        0-d array of the backend: what the L2 penalty weighs."""
        xp, c = self.xp, self._cuts
        if not self.fixed_kernels:
            return xp.vdot(theta, theta)
        return xp.vdot(theta, theta) - xp.vdot(theta[c[0]:c[1]], theta[c[0]:c[1]]) \
            - xp.vdot(theta[c[2]:c[3]], theta[c[2]:c[3]])

    def loss(self, theta, c_start, c_trans, c_emit, norm: float) -> float:
        """The loss alone, as a host float (computed in float64)."""
        return self._evaluate(theta, (c_start, c_trans, c_emit, norm))[0]

    # ------------------------------------------------------------------ Adam
    def zeros(self) -> AdamMoments:
        xp = self.xp
        return AdamMoments(xp.zeros(self.layout.size, self.dtype), xp.zeros(self.layout.size, self.dtype), 0.0)

    def adam(self, theta, state: AdamMoments, n_steps: int, lr: float, limit: float,
             c_start, c_trans, c_emit, norm: float, final_loss: bool = True
             ) -> Tuple[Any, AdamMoments, int, int, Any, Optional[float]]:
        """``n_steps`` Adam steps (constant ``lr``) on the loss.

        Returns ``(theta, state, steps_done, status, last_good_theta, loss)``: ``theta`` the last
        accepted iterate, ``last_good_theta`` the last one whose loss was finite, ``loss`` (host
        float) the loss at ``theta`` (None with ``final_loss=False``: the caller evaluates ``theta``
        itself, e.g. with :meth:`evaluate`).  One scalar pair crosses to the host per step (the checks).
        ``theta`` is not modified in place.
        """
        xp = self.xp
        th = theta
        good = theta
        mm, vv, t = state.m, state.v, float(state.t)
        status = STATUS_OK
        k = 0
        size = self.layout.size
        grad, tmp, den = (xp.empty(size, self.dtype) for _ in range(3))
        # the iterates rotate through three buffers: the new one is written where neither the current
        # nor the last good one lives (fresh multi-MB arrays cost page faults every step)
        ring = [xp.empty(size, self.dtype) for _ in range(3)]
        mm, vv = mm.copy(), vv.copy()   # updated in place below (the caller's state is not modified)
        scaled = self._scaled(c_start, c_trans, c_emit, norm)
        while k < int(n_steps):
            t1 = t + 1.0
            alpha = lr * math.sqrt(1.0 - BETA2 ** t1) / (1.0 - BETA1 ** t1)
            th1 = ring[k % 3]

            def update(lo, hi, th=th, th1=th1, alpha=alpha):
                # in place, with the same roundings as m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
                # theta - alpha m / (sqrt(v) + eps); element-wise, so updating in parts changes no number
                m_, v_, g_, tm, de = mm[lo:hi], vv[lo:hi], grad[lo:hi], tmp[lo:hi], den[lo:hi]
                m_ *= BETA1
                xp.multiply(g_, 1.0 - BETA1, out=tm)
                m_ += tm
                v_ *= BETA2
                xp.multiply(g_, g_, out=tm)
                tm *= 1.0 - BETA2
                v_ += tm
                xp.sqrt(v_, out=de)
                de += EPS
                xp.multiply(m_, alpha, out=tm)
                tm /= de
                new = xp.subtract(th[lo:hi], tm, out=th1[lo:hi])
                return [new.max(), -new.min()]

            if len(self._blocks) == 1:     # one pass over theta (on a GPU: fewer kernel launches)
                loss, grad, _ = self._loss_and_grad(th, scaled, grad)
                extremes = update(0, size)
            else:   # each block updates its rows of V_own at once, the rest after the gradient is in
                loss, grad, done = self._loss_and_grad(th, scaled, grad, rows_done=update)
                extremes = [x for part in done for x in part]
                for lo, hi in self._shared:
                    extremes += update(lo, hi)
            checks = self.backend.to_host(xp.stack([loss] + extremes))
            f_loss, amax = float(checks[0]), float(np.max(checks[1:]))  # NaN propagates
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
        final = self.loss(th, c_start, c_trans, c_emit, norm) if final_loss else None
        return th, AdamMoments(mm, vv, t), k, status, good, final


"""Packing of a DenseHMM's embeddings into one flat float64 vector (no TensorFlow).

``theta`` holds ``U (n*l), Z (n*l), W (n*l), V (m*l), z_start (l)`` in that order
(row-major), followed by the feature embeddings ``feature_V (F*l)`` when the model has
symbol features (:class:`FeatureLayout`).  The array-module M-step
(:mod:`densehmm_core.dense_mstep`), the TensorFlow co-occurrence fits
(:mod:`densehmm_core.dense_tf`, :mod:`densehmm_core.words_tf`) and the estimator all use
this one layout.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from .maths import EMBEDDING_NAMES

__all__ = ["Layout", "FeatureLayout"]


class Layout:
    """Packing of the embeddings into one flat vector."""

    NAMES = EMBEDDING_NAMES
    n_feat = 0
    features: Any = None

    def __init__(self, n: int, m: int, l: int) -> None:
        self.n, self.m, self.l = int(n), int(m), int(l)
        self.shapes = {"U": (n, l), "Z": (n, l), "W": (n, l), "V": (m, l), "z_start": (l,)}
        self.size = l * (3 * n + m + 1)

    def pack(self, emb: Dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(emb[k], dtype=np.float64).ravel() for k in self.NAMES])

    def unpack(self, theta: np.ndarray) -> Dict[str, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        out, i = {}, 0
        for k in self.NAMES:
            size = int(np.prod(self.shapes[k]))
            out[k] = theta[i:i + size].reshape(self.shapes[k]).copy()
            i += size
        return out


class FeatureLayout(Layout):
    """:class:`Layout` plus ``feature_V`` (F x l) at the end.

    The effective symbol embeddings are ``V = V_own + S feature_V`` (``S`` the 0/1 symbol x
    feature incidence of :class:`densehmm_core.features.SymbolFeatures`).  ``pack`` takes the
    effective ``V`` (and ``feature_V``, zeros when absent) and stores ``V_own = V - S feature_V``;
    ``unpack`` returns the effective ``V`` and ``feature_V``.
    """

    def __init__(self, n: int, m: int, l: int, features=None) -> None:
        super().__init__(n, m, l)
        self.features = features
        self.n_feat = 0 if features is None else int(features.n_features)
        self.size += self.n_feat * self.l

    def pack(self, emb: Dict[str, np.ndarray]) -> np.ndarray:
        base = dict(emb)
        if self.n_feat:
            fv = np.asarray(emb.get("feature_V", np.zeros((self.n_feat, self.l))), dtype=np.float64)
            if fv.shape != (self.n_feat, self.l):
                raise ValueError(f"feature_V must have shape {(self.n_feat, self.l)}, got {fv.shape}")
            base["V"] = self.features.own(emb["V"], fv)
            return np.concatenate([super().pack(base), fv.ravel()])
        return super().pack(base)

    def unpack(self, theta: np.ndarray) -> Dict[str, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        out = super().unpack(theta[:theta.size - self.n_feat * self.l])
        if self.n_feat:
            fv = theta[theta.size - self.n_feat * self.l:].reshape(self.n_feat, self.l).copy()
            out["V"] = self.features.apply(out["V"], fv)
            out["feature_V"] = fv
        return out

"""2-D projection of embedding vectors for display (a tiny PCA by SVD).

This is display code, not model maths: it only decides where points go on screen.
(If the core gains a projection helper, the view should call it instead.)
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

__all__ = ["pca_2d"]


def pca_2d(X: np.ndarray, k: int = 2, reference: Optional[np.ndarray] = None
           ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Project the rows of ``X`` (N x l, l > k) on their first ``k`` principal axes.

    Parameters
    ----------
    X : ndarray, shape (N, l)
    k : int
    reference : ndarray, shape (k, l), optional
        The axes of the previous frame of a live plot: each axis is then turned to point the
        same way as its reference axis (positive dot product), so the picture never flips
        between frames, also where the rule below would (two entries of nearly equal size).

    Returns
    -------
    Y : ndarray, shape (N, k)
        Centred coordinates along the principal axes.
    components : ndarray, shape (k, l)
        The principal axes (unit rows).  Without ``reference``, signs are fixed so that the
        entry of largest magnitude in each axis is positive.
    explained : ndarray, shape (k,)
        Fraction of the total variance along each axis (0 where the data has none).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"pca_2d needs a non-empty 2-D array, got shape {X.shape}")
    mean = X.mean(axis=0)
    Xc = X - mean
    # the axes are the eigenvectors of the l x l scatter matrix: O(N l^2), where an SVD of the
    # N x l matrix took 30-150 ms for a 5,000-word vocabulary (on the GUI thread, issue 24.13)
    evals, evecs = np.linalg.eigh(Xc.T @ Xc)
    top = np.argsort(-evals, kind="stable")
    comps = np.zeros((k, X.shape[1]))
    r = min(k, X.shape[1], X.shape[0])
    comps[:r] = evecs[:, top[:r]].T
    s = np.sqrt(np.clip(evals[top[:min(X.shape)]], 0.0, None))
    ref = None if reference is None else np.asarray(reference, dtype=np.float64)
    if ref is not None and ref.shape != comps.shape:
        ref = None   # another dimension l: a new picture
    for i in range(r):
        if ref is not None and float(comps[i] @ ref[i]) != 0.0:
            flip = float(comps[i] @ ref[i]) < 0
        else:
            j = int(np.argmax(np.abs(comps[i])))
            flip = comps[i, j] < 0
        if flip:
            comps[i] = -comps[i]
    var = s ** 2
    total = float(var.sum())
    explained = np.zeros(k)
    if total > 0:
        explained[:r] = var[:r] / total
    return Xc @ comps.T, comps, explained

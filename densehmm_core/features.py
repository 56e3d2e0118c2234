"""Symbol features: embeddings that share strength between related symbols.

With ``DenseHMM(..., symbol_features=NAME)`` the emission embedding of symbol ``k`` is

    v_k = own_k + sum_{f in features(k)} phi_f

where ``own_k`` is the symbol's own vector and ``phi_f`` (``feature_V``, F x l) the vector of
feature ``f``.  A rare word thus gets most of its embedding from features it shares with
frequent words (its suffix, its capitalisation, ...).  Berg-Kirkpatrick et al. (2010),
"Painless unsupervised learning with features", use the same idea with a log-linear
emission model.

A *feature function* maps a symbol's string to the names of its features.  They live in a
registry (:data:`FEATURE_FUNCTIONS`); :func:`register_feature_function` adds new ones (e.g.
amino-acid property classes for proteins).  Built in:

``"orthographic"``
    The feature set of Berg-Kirkpatrick et al. (2010) for words: the lower-cased form
    (``lower=the``), suffixes of length 1-3 (``suf1=e``, ``suf2=he``, ``suf3=the``; only
    suffixes shorter than the word), ``cap`` (first character upper-case), ``digit``
    (contains a digit), ``hyphen`` (contains ``-``).  Meant for corpora read without
    lower-casing: the lower-cased form then ties ``The`` to ``the``.

:func:`build_features` turns a vocabulary into the sparse symbol x feature incidence
(pairs ``(symbol, feature)``); features carried by fewer than ``min_symbols`` (default 2)
symbols are dropped, since the symbol's own vector already plays their role.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Dict, Iterable, List, Sequence, Tuple

import numpy as np

__all__ = ["FEATURE_FUNCTIONS", "register_feature_function", "orthographic", "SymbolFeatures",
           "build_features"]

FeatureFunction = Callable[[str], Iterable[str]]


def orthographic(word: str) -> List[str]:
    """Orthographic features of one word (Berg-Kirkpatrick et al., 2010)."""
    feats = [f"lower={word.lower()}"]
    low = word.lower()
    for k in (1, 2, 3):
        if len(low) > k:
            feats.append(f"suf{k}={low[-k:]}")
    if word[:1].isupper():
        feats.append("cap")
    if any(ch.isdigit() for ch in word):
        feats.append("digit")
    if "-" in word:
        feats.append("hyphen")
    return feats


#: Registered feature functions, by name.
FEATURE_FUNCTIONS: Dict[str, FeatureFunction] = {"orthographic": orthographic}


def register_feature_function(name: str, fn: FeatureFunction) -> None:
    """Make ``fn`` (symbol string -> feature names) available as ``symbol_features=name``."""
    if not isinstance(name, str) or not name:
        raise ValueError("a feature function needs a non-empty name")
    if not callable(fn):
        raise TypeError("fn must be callable: symbol string -> iterable of feature names")
    FEATURE_FUNCTIONS[name] = fn


@dataclass(frozen=True)
class SymbolFeatures:
    """Symbol x feature incidence: symbol ``rows[k]`` has feature ``cols[k]``."""

    name: str
    vocabulary: List[str]    # feature names (index = feature id)
    rows: np.ndarray         # int64 (nnz,) symbol ids
    cols: np.ndarray         # int64 (nnz,) feature ids
    n_symbols: int

    @property
    def n_features(self) -> int:
        return len(self.vocabulary)

    @cached_property
    def csr_index(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` of the incidence as a CSR matrix (m x F, rows in symbol order,
        each row's features ascending): the one ordering every product with it uses, so the host
        (:meth:`apply`) and the M-step (:class:`densehmm_core.dense_mstep.MStep`) sum in the same order."""
        order = np.lexsort((self.cols, self.rows))
        indptr = np.zeros(self.n_symbols + 1, np.int64)
        np.cumsum(np.bincount(self.rows, minlength=self.n_symbols), out=indptr[1:])
        return indptr, self.cols[order].astype(np.int32)

    @cached_property
    def _incidence(self) -> Any:
        import scipy.sparse
        indptr, indices = self.csr_index
        return scipy.sparse.csr_matrix((np.ones(len(indices)), indices, indptr),
                                       shape=(self.n_symbols, self.n_features))

    def apply(self, own: np.ndarray, feature_V: np.ndarray) -> np.ndarray:
        """``own + S feature_V`` (m x l): the effective symbol embeddings."""
        out = self._incidence @ np.asarray(feature_V, dtype=np.float64)
        out += own
        return out

    def own(self, V: np.ndarray, feature_V: np.ndarray) -> np.ndarray:
        """The symbols' own vectors given effective ``V``: ``V - S feature_V``."""
        return np.asarray(V, dtype=np.float64) - self._incidence @ np.asarray(feature_V, dtype=np.float64)


def build_features(symbols: Sequence[str], name: str, min_symbols: int = 2) -> SymbolFeatures:
    """Feature incidence of ``symbols`` under the registered feature function ``name``."""
    if name not in FEATURE_FUNCTIONS:
        raise ValueError(f"unknown symbol_features {name!r}; registered: {sorted(FEATURE_FUNCTIONS)}")
    fn = FEATURE_FUNCTIONS[name]
    per_symbol = [sorted(set(fn(str(s)))) for s in symbols]
    counts: Dict[str, int] = {}
    for feats in per_symbol:
        for f in feats:
            counts[f] = counts.get(f, 0) + 1
    vocab = sorted(f for f, c in counts.items() if c >= min_symbols)
    index = {f: i for i, f in enumerate(vocab)}
    rows, cols = [], []
    for k, feats in enumerate(per_symbol):
        for f in feats:
            j = index.get(f)
            if j is not None:
                rows.append(k)
                cols.append(j)
    return SymbolFeatures(name, vocab, np.asarray(rows, np.int64), np.asarray(cols, np.int64), len(symbols))

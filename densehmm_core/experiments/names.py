"""The model names of the comparison reproductions and ``densehmm sweep`` and their labels: the one owner
(:mod:`.comparison` runs them, :mod:`.figures` draws them; no imports, so neither imports the other)."""
from __future__ import annotations

__all__ = ["MODELS", "EXTRA_MODELS", "SWEEP_MODELS", "MODEL_LABEL"]

MODELS = ("dense-em", "dense-direct", "standard-fair", "standard")
EXTRA_MODELS = ("dense-direct-gt",)
#: The model names of ``densehmm sweep`` (``dense-cooc`` = DenseHMM-direct, the same fit and seeds).
SWEEP_MODELS = ("dense-em", "dense-cooc", "standard", "standard-fair")
#: The legend label of every model above (figures and notes; the one list of the labels).
MODEL_LABEL = {
    "dense-em": "DenseHMM-EM",
    "dense-direct": "DenseHMM-direct",
    "dense-cooc": "DenseHMM-direct (dense-cooc)",
    "standard-fair": "standard HMM (n_fair)",
    "standard": "standard HMM",
    "dense-direct-gt": "DenseHMM-direct on the true Omega (reference code)",
}

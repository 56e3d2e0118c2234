"""DenseHMM Studio's science core: dense and standard HMMs, data readers, model files.

Importing this package is cheap: TensorFlow is imported only when a DenseHMM is
trained or evaluated.  Names are resolved lazily (PEP 562).
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "ProgressEvent": "events", "CancelToken": "events", "TrainingDiverged": "events",
    "as_sequences": "sequences",
    "StandardHMM": "standard", "n_fair": "standard",
    "DenseHMM": "dense", "list_devices": "device", "resolve_device": "device",
    "model_from_config": "registry",
    "random_hmm": "synthetic", "stationary_distribution": "maths",
    "empirical_cooc": "maths", "analytic_cooc": "maths", "cooc_mad": "metrics",
    "normalized_nll": "metrics", "paper_nll": "metrics",
    "save_model": "modelfile", "load_model": "modelfile", "list_models": "modelfile",
    "ModelFileError": "modelfile", "export_csv": "export",
    "load": "data", "Corpus": "data", "DataFormatError": "data",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'densehmm_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__

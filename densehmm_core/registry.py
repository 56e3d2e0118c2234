"""The one way to build a model from its configuration: :func:`model_from_config`.

Every estimator's ``get_config()`` returns exactly its constructor's keyword
arguments and its class attribute ``kind`` names it here, so::

    model_from_config(m.kind, m.get_config())

rebuilds an equal, unfitted model.  The HDF5 reader, the worker process, the CLI,
the app's model form and the experiments all build their models through this
function; an unknown or misspelt option is a ``TypeError``, never dropped.

:func:`migrate_config` turns a configuration stored by an older schema into the
current option names (schema-v1 files: ``em_iter`` -> ``n_iter``; DenseHMM's
``steps`` -> ``cooc_steps`` or ``mstep_steps`` by ``fit_method``).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Tuple, Type

if TYPE_CHECKING:
    from .hmm_base import BaseHMM

__all__ = ["MODEL_KINDS", "model_class", "model_from_config", "migrate_config", "model_classes", "model_types",
           "model_type"]

#: kind -> (module, class name); the classes are imported on first use.
MODEL_KINDS: Dict[str, Tuple[str, str]] = {
    "standard": ("standard", "StandardHMM"),
    "dense": ("dense", "DenseHMM"),
}


def model_class(kind: str) -> "Type[BaseHMM]":
    """The estimator class of a model kind (``"standard"``, ``"dense"``)."""
    try:
        module, name = MODEL_KINDS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"unknown model kind {kind!r}; available: {', '.join(MODEL_KINDS)}") from None
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def model_classes() -> "List[Type[BaseHMM]]":
    """Every estimator class, in the order users are offered them (dense first)."""
    return [model_class(k) for k in sorted(MODEL_KINDS, key=lambda k: k != "dense")]


def model_types() -> List[Any]:
    """Every model type users pick from (:class:`densehmm_core.hyperparams.ModelType`: DenseHMM by
    co-occurrence, EM or both, standard and fair standard HMM), from the estimators' metadata."""
    return [t for cls in model_classes() for t in cls.model_types]


def model_type(key: str) -> Any:
    """The model type ``key`` (e.g. ``"dense_cooc_em"``); ``ValueError`` naming the known ones."""
    types = model_types()
    for t in types:
        if t.key == key:
            return t
    raise ValueError(f"unknown model type {key!r}; available: {', '.join(t.key for t in types)}")


def model_from_config(kind: str, config: Mapping[str, Any]) -> Any:
    """Build an unfitted model of ``kind`` from its configuration (``model.get_config()``).

    Raises
    ------
    ValueError
        Unknown kind, or a value the estimator rejects.
    TypeError
        An option the estimator does not have (the message lists the valid ones), or a
        required one (``n_states``, ``dim``) is missing.
    """
    cls = model_class(kind)
    keys = cls.config_keys
    unknown = sorted(k for k in config if k not in keys)
    if unknown:
        raise TypeError(f"unknown {cls.__name__} option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(repr(k) for k in unknown)}; valid options: {', '.join(keys)}")
    return cls(**dict(config))


def migrate_config(kind: str, config: Mapping[str, Any]) -> Dict[str, Any]:
    """A stored configuration with the option names of today's estimators.

    Schema-v1 files (written before the model contract) store ``kind`` inside the
    standard model's config, DenseHMM's EM iterations as ``em_iter`` and both its
    co-occurrence Adam steps and its Adam steps per M-step as ``steps``.  None of these
    old keys is an option today, so they are renamed wherever they appear (a v1 model
    group copied into a newer file keeps its old keys).  A config without ``init_method`` was
    written before the spectral start became the default: it reads as ``"random"`` (a DenseHMM's
    missing ``init_scale`` as 1.0, its missing ``mstep_dtype`` as ``"float64"``), what those fits used.
    """
    cfg = dict(config)
    cfg.pop("kind", None)
    # written before init_method existed (or before it was recorded): those fits started randomly,
    # and a DenseHMM's random embeddings had standard deviation 1 (today's defaults: spectral, 0.2)
    cfg.setdefault("init_method", "random")
    if kind == "dense":
        cfg.setdefault("init_scale", 1.0)
        # written before EM's M-step had a float32 mode: those fits ran it in float64
        cfg.setdefault("mstep_dtype", "float64")
    if kind == "dense":
        if "em_iter" in cfg:
            em_iter = cfg.pop("em_iter")
            cfg.setdefault("n_iter", em_iter)
        if "steps" in cfg:
            steps = cfg.pop("steps")
            key = "mstep_steps" if cfg.get("fit_method") == "em" else "cooc_steps"
            cfg.setdefault(key, steps)
    return cfg

"""HMM inference engines behind one interface (:class:`Engine`).

``get_engine("numpy")`` returns the batched, scaled float64 numpy engine.
"""
from __future__ import annotations

from .base import Engine, SufficientStats

__all__ = ["Engine", "SufficientStats", "get_engine", "available_engines"]

_CACHE: dict = {}


def available_engines() -> list:
    return ["numpy"]


def get_engine(name: str = "numpy", **options) -> Engine:
    """Return an engine by name.

    Parameters
    ----------
    name : {"numpy"}
        The engine.  (``"hmmlearn"`` is not an engine: ``StandardHMM(engine="hmmlearn")``
        delegates whole Baum-Welch iterations to hmmlearn and scores with numpy.)
    **options
        Passed to the engine's constructor (e.g. ``chunk_elements`` for numpy);
        without options a shared instance is returned.
    """
    if isinstance(name, Engine):
        return name
    key = str(name).lower()
    if key not in ("numpy", "np"):
        raise ValueError(f"unknown engine {name!r}; available: {available_engines()}")
    if options:
        from .numpy_engine import NumpyEngine
        return NumpyEngine(**options)
    if "numpy" not in _CACHE:
        from .numpy_engine import NumpyEngine
        _CACHE["numpy"] = NumpyEngine()
    return _CACHE["numpy"]

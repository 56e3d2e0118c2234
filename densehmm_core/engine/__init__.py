"""HMM inference engines behind one interface (:class:`Engine`).

``get_engine("numpy")`` returns the batched, scaled float64 numpy engine;
``get_engine("cupy", device=0)`` the same algorithm on an NVIDIA GPU with CuPy
(both are :class:`~densehmm_core.engine.array_engine.ArrayEngine` on different
array modules).  :func:`engine_for` turns a model's ``engine`` and ``device``
settings into an engine (``engine="auto"``: CuPy when the device is a GPU and CuPy
works there, numpy otherwise).
"""
from __future__ import annotations

import logging
from typing import List, Optional

from .base import Engine, SufficientStats

__all__ = ["Engine", "SufficientStats", "get_engine", "available_engines", "engine_for", "ENGINE_NAMES"]

#: the values a model's ``engine`` setting takes (``"hmmlearn"`` is StandardHMM's own extra)
ENGINE_NAMES = ("auto", "numpy", "cupy")

_CACHE: dict = {}
_WARNED: set = set()
_LOG = logging.getLogger(__name__)


def available_engines() -> List[str]:
    """Engines that work in this process: ``"numpy"``, and ``"cupy"`` when CuPy runs on GPU 0."""
    from .backend import cupy_status
    return ["numpy"] + (["cupy"] if cupy_status(0)[0] else [])


def get_engine(name: str = "numpy", device: Optional[int] = None, **options) -> Engine:
    """Return an engine by name.

    Parameters
    ----------
    name : {"numpy", "cupy"}
        The engine.  (``"hmmlearn"`` is not an engine: ``StandardHMM(engine="hmmlearn")``
        delegates whole Baum-Welch iterations to hmmlearn and scores with numpy.)
    device : int or None
        The GPU of the ``"cupy"`` engine (default 0); not used by ``"numpy"``.
    **options
        Passed to the engine's constructor (e.g. ``chunk_elements``); without
        options a shared instance (per GPU) is returned.

    Raises
    ------
    ValueError
        Unknown name.
    densehmm_core.device.GpuUnavailableError
        ``"cupy"`` without CuPy or without a usable GPU (the message says how to install it).
    """
    if isinstance(name, Engine):
        return name
    key = str(name).lower()
    if key in ("numpy", "np"):
        from .numpy_engine import NumpyEngine
        if options:
            return NumpyEngine(**options)
        if "numpy" not in _CACHE:
            _CACHE["numpy"] = NumpyEngine()
        return _CACHE["numpy"]
    if key in ("cupy", "cp"):
        from .cupy_engine import CupyEngine
        dev = 0 if device is None else int(device)
        if options:
            return CupyEngine(device=dev, **options)
        if ("cupy", dev) not in _CACHE:
            _CACHE[("cupy", dev)] = CupyEngine(device=dev)
        return _CACHE[("cupy", dev)]
    raise ValueError(f"unknown engine {name!r}; available: {available_engines()}")


def engine_for(engine="auto", device: Optional[str] = "auto") -> Engine:
    """The engine a model with these ``engine`` and ``device`` settings runs its E-step on.

    Parameters
    ----------
    engine : {"auto", "numpy", "cupy"} or Engine
        ``"auto"``: CuPy when ``device`` is a GPU (or ``"auto"``) and CuPy works
        on it, numpy otherwise.
    device : str
        A device spec (:func:`densehmm_core.device.parse_device`): ``"auto"``
        (GPU 0 if CuPy works there), ``"cpu"``, ``"gpu"``, ``"/GPU:1"`` ...
        ``"cpu"`` never touches a GPU (CuPy is not even imported).

    Raises
    ------
    densehmm_core.device.DeviceError
        ``engine="cupy"`` with ``device="cpu"``, or an unreadable device spec.
    densehmm_core.device.GpuUnavailableError
        ``engine="cupy"`` without CuPy or a usable GPU.
    """
    from ..device import DeviceError, parse_device
    if isinstance(engine, Engine):
        return engine
    kind, index = parse_device(device)
    key = str(engine).lower()
    if key == "auto":
        if kind == "cpu":
            return get_engine("numpy")
        from .backend import cupy_status
        gpu = 0 if index is None else index
        ok, reason = cupy_status(gpu)
        if ok:
            return get_engine("cupy", device=gpu)
        if kind == "gpu" and gpu not in _WARNED:     # a GPU was named: say once why the CPU is used
            _WARNED.add(gpu)
            _LOG.warning("device %r: the engine's work (E-steps, EM's M-steps and diagnostics, scoring) runs on "
                         "the CPU (numpy): %s", device, reason)
        return get_engine("numpy")
    if key == "cupy" and kind == "cpu":
        raise DeviceError("engine 'cupy' runs on a GPU, but the device is 'cpu' "
                          "(use device='gpu' or engine='numpy')")
    return get_engine(key, device=index)

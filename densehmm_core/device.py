"""TensorFlow device selection for DenseHMM training.

TensorFlow is imported lazily (the first call of :func:`import_tf`), never at
``import densehmm_core``.  Before the import the TensorFlow C++ log level is set
to ``1`` unless the user chose one (``TF_CPP_MIN_LOG_LEVEL``), so CPU-only
machines do not print start-up notices (oneDNN itself stays enabled).

A device *spec* is one of

``"auto"``
    the first GPU TensorFlow sees, else the CPU;
``"cpu"`` / ``"gpu"``
    the first device of that type (``"gpu"`` raises :class:`DeviceError` when
    TensorFlow sees none);
a TensorFlow device string
    e.g. ``"/GPU:1"``, ``"/device:CPU:0"``, ``"GPU:0"`` -- it must name a device
    TensorFlow lists.

The same spec also places the E-step: :func:`parse_device` reads it without
TensorFlow, and :func:`densehmm_core.engine.engine_for` picks the CuPy engine on
that GPU (or numpy for the CPU).  ``"cpu"`` never touches a GPU.
"""
from __future__ import annotations

import os
from typing import List, Optional, Tuple

__all__ = ["DeviceError", "GpuUnavailableError", "import_tf", "list_devices", "resolve_device",
           "gpu_available", "parse_device"]

_TF = None


class DeviceError(ValueError):
    """The requested device does not exist or is not visible to TensorFlow."""


class GpuUnavailableError(DeviceError):
    """The CuPy engine was asked for but CuPy or a usable NVIDIA GPU is missing.

    The message names what is missing and how to install it.
    """


def parse_device(spec: Optional[str] = "auto") -> Tuple[str, Optional[int]]:
    """Read a device spec without TensorFlow: ``("auto", None)``, ``("cpu", None)`` or ``("gpu", index)``.

    ``"gpu"`` is GPU 0; ``"/GPU:1"``, ``"GPU:1"``, ``"gpu:1"`` and ``"/device:GPU:1"`` are GPU 1.

    Raises
    ------
    DeviceError
        Not a device spec (e.g. ``"tpu"`` or ``"/GPU:x"``).
    """
    key = "auto" if spec is None else str(spec).strip()
    low = key.lower()
    if low == "auto":
        return "auto", None
    if low in ("cpu", "gpu"):
        return low, (0 if low == "gpu" else None)
    norm = _normalise(key)
    kind, _, index = norm[1:].partition(":")
    if kind in ("CPU", "GPU") and index.isdigit():
        return kind.lower(), (int(index) if kind == "GPU" else None)
    raise DeviceError(f"unknown device {spec!r}: use auto, cpu, gpu or a device string such as /GPU:1")


def import_tf():
    """Import TensorFlow once, quietly, and return the module."""
    global _TF
    if _TF is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        import tensorflow as tf  # noqa: WPS433 (lazy by design)
        # Allocate GPU memory as needed instead of reserving it all at start-up, so that
        # several processes (the app's worker processes, parallel experiments) share a GPU.
        try:
            for gpu in tf.config.list_physical_devices("GPU"):
                tf.config.experimental.set_memory_growth(gpu, True)
        except (RuntimeError, ValueError):  # pragma: no cover - devices already initialised
            pass
        _TF = tf
    return _TF


def list_devices() -> List[dict]:
    """The devices TensorFlow sees, for a device chooser.

    Returns
    -------
    list of dict
        One dict per logical device, ``{"name": "/device:CPU:0", "type": "CPU",
        "spec": "/CPU:0"}``; CPUs first, then GPUs in TensorFlow's order.
        ``spec`` is what :func:`resolve_device` (and ``DenseHMM(device=...)``) accepts.
    """
    tf = import_tf()
    out = []
    for dev in tf.config.list_logical_devices():
        if dev.device_type not in ("CPU", "GPU"):
            continue
        index = dev.name.rsplit(":", 1)[-1]
        out.append({"name": dev.name, "type": dev.device_type, "spec": f"/{dev.device_type}:{index}"})
    out.sort(key=lambda d: (d["type"] != "CPU", d["name"]))
    return out


def gpu_available() -> bool:
    """True when TensorFlow sees at least one GPU."""
    return any(d["type"] == "GPU" for d in list_devices())


def _normalise(spec: str) -> str:
    s = spec.strip()
    if s.lower().startswith("/device:"):
        s = "/" + s[len("/device:"):]
    if not s.startswith("/"):
        s = "/" + s
    kind, _, index = s[1:].partition(":")
    kind = kind.upper()
    if not index:
        index = "0"
    return f"/{kind}:{index}"


def resolve_device(spec: Optional[str] = "auto") -> str:
    """Turn a device spec into a TensorFlow device string such as ``"/CPU:0"``.

    Parameters
    ----------
    spec : str or None
        ``"auto"`` (also ``None``), ``"cpu"``, ``"gpu"`` or a TensorFlow device string.

    Raises
    ------
    DeviceError
        The spec names a device TensorFlow does not see (e.g. ``"gpu"`` on a CPU-only machine).
    """
    devices = list_devices()
    specs = [d["spec"] for d in devices]
    key = "auto" if spec is None else str(spec).strip()
    low = key.lower()
    if low == "auto":
        gpus = [d["spec"] for d in devices if d["type"] == "GPU"]
        return gpus[0] if gpus else "/CPU:0"
    if low in ("cpu", "gpu"):
        found = [d["spec"] for d in devices if d["type"] == low.upper()]
        if not found:
            raise DeviceError(f"device {spec!r} requested but TensorFlow sees no {low.upper()} "
                              f"(available: {', '.join(specs) or 'none'})")
        return found[0]
    norm = _normalise(key)
    if norm not in specs:
        raise DeviceError(f"unknown device {spec!r}; TensorFlow sees: {', '.join(specs) or 'none'}")
    return norm

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

__all__ = ["DeviceError", "GpuUnavailableError", "import_tf", "imported_tf", "list_devices", "resolve_device",
           "gpu_available", "parse_device", "cupy_gpus"]

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


def imported_tf():
    """TensorFlow's module once :func:`import_tf` has imported it in this process, else None.

    Never imports it (and never returns a module another thread is still importing): for
    telling a front end which TensorFlow a fit has loaded.
    """
    return _TF


def cupy_gpus() -> List[str]:
    """Names of the NVIDIA GPUs CuPy sees, in CUDA's order (``[]`` without CuPy or a driver).

    Asks the CUDA runtime only (no computation on the GPU); whether the CuPy engine
    really runs there is :func:`densehmm_core.engine.backend.cupy_status`.
    """
    try:
        import cupy
        rt = cupy.cuda.runtime
        names = []
        for i in range(rt.getDeviceCount()):
            name = rt.getDeviceProperties(i)["name"]
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    except Exception:  # noqa: BLE001 - not installed, broken, no driver, no GPU: no CuPy GPUs
        return []


def _tf_devices() -> List[dict]:
    tf = import_tf()
    out = []
    for dev in tf.config.list_logical_devices():
        if dev.device_type not in ("CPU", "GPU"):
            continue
        index = dev.name.rsplit(":", 1)[-1]
        out.append({"name": dev.name, "type": dev.device_type, "spec": f"/{dev.device_type}:{index}",
                    "tensorflow": True, "cupy": False})
    return out


def list_devices() -> List[dict]:
    """The devices TensorFlow or CuPy sees, for a device chooser.

    Returns
    -------
    list of dict
        One dict per device, ``{"name": "/device:CPU:0", "type": "CPU", "spec": "/CPU:0",
        "tensorflow": True, "cupy": False}``; CPUs first, then GPUs.  ``tensorflow`` /
        ``cupy`` say which of the two can use it: a GPU that only CuPy sees (TensorFlow
        installed as ``tensorflow-cpu``) runs the E-step there while the TensorFlow steps
        run on the CPU (:func:`resolve_device`).  ``spec`` is what :func:`resolve_device`
        (and the models' ``device=``) accepts.
    """
    out = _tf_devices()
    by_spec = {d["spec"]: d for d in out}
    for i, _name in enumerate(cupy_gpus()):
        spec = f"/GPU:{i}"
        if spec in by_spec:
            by_spec[spec]["cupy"] = True
        else:
            out.append({"name": f"/device:GPU:{i}", "type": "GPU", "spec": spec, "tensorflow": False,
                        "cupy": True})
    out.sort(key=lambda d: (d["type"] != "CPU", d["name"]))
    return out


def gpu_available() -> bool:
    """True when TensorFlow or CuPy sees at least one GPU."""
    return any(d["type"] == "GPU" for d in list_devices())


_WARNED: set = set()


def _tf_on_cpu(spec, gpu: str) -> str:
    """The TensorFlow device for a GPU that only CuPy sees: the CPU, said once per GPU."""
    if gpu not in _WARNED:
        _WARNED.add(gpu)
        import logging
        logging.getLogger(__name__).warning(
            "device %r: TensorFlow sees no GPU (tensorflow-cpu?), so its steps run on the CPU; "
            "the engine's work (E-steps, EM's M-steps and diagnostics) runs on %s with CuPy", spec, gpu)
    return "/CPU:0"


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

    A GPU that TensorFlow does not see but CuPy does (TensorFlow installed as
    ``tensorflow-cpu``) gives ``"/CPU:0"`` with one logged warning: the E-step still runs
    on that GPU (:func:`densehmm_core.engine.engine_for`).  ``"cpu"`` never asks CuPy.

    Raises
    ------
    DeviceError
        The spec names a device neither TensorFlow nor CuPy sees (e.g. ``"gpu"`` on a CPU-only machine).
    """
    tf_specs = [d["spec"] for d in _tf_devices()]

    def cupy_only() -> List[str]:     # asked only when a GPU TensorFlow lacks is named ("cpu" never asks)
        return [f"/GPU:{i}" for i in range(len(cupy_gpus())) if f"/GPU:{i}" not in tf_specs]

    key = "auto" if spec is None else str(spec).strip()
    low = key.lower()
    if low == "auto":
        gpus = [s for s in tf_specs if s.startswith("/GPU")]
        return gpus[0] if gpus else "/CPU:0"
    if low in ("cpu", "gpu"):
        found = [s for s in tf_specs if s.startswith(f"/{low.upper()}")]
        if found:
            return found[0]
        extra = cupy_only() if low == "gpu" else []
        if extra:
            return _tf_on_cpu(spec, extra[0])
        raise DeviceError(f"device {spec!r} requested but TensorFlow sees no {low.upper()} "
                          f"(available: {', '.join(tf_specs) or 'none'})")
    norm = _normalise(key)
    if norm in tf_specs:
        return norm
    extra = cupy_only() if norm.startswith("/GPU:") else []
    if norm in extra:
        return _tf_on_cpu(spec, norm)
    raise DeviceError(f"unknown device {spec!r}; TensorFlow sees: {', '.join(tf_specs) or 'none'}"
                      + (f"; CuPy sees: {', '.join(extra)}" if extra else ""))

"""Array back ends: the few primitives the shared engine needs from numpy or CuPy.

The inference algorithm (:mod:`densehmm_core.engine.array_engine`) is written once
against an *array module* ``xp`` (``numpy`` or ``cupy``).  What differs between
the two lives here, and only here:

* where arrays live (``to_device`` / ``to_host``; for numpy both are no-ops),
* how a matrix product writes into a view (numpy: ``matmul(out=...)``; CuPy:
  assignment, which works for any view),
* floating-point warnings (numpy: ``errstate``; CuPy never warns),
* the sparse module (``scipy.sparse`` / ``cupyx.scipy.sparse``),
* how much memory a chunk may use (the CPU: a fixed bound; the GPU: the free
  device memory, asked at :meth:`Engine.prepare` time).

:class:`ArrayBackend` is also the seam through which the tests run the GPU
engine's own code path (memory-sized chunks, one device-to-host transfer per
call, sparse emission counts) on the CPU: ``CupyEngine(backend=ArrayBackend(numpy,
...))`` (see ``tests/test_engine.py``).
"""
from __future__ import annotations

import contextlib
from typing import Callable, Optional

import numpy as np

from ..device import GpuUnavailableError

__all__ = ["ArrayBackend", "numpy_backend", "cupy_backend", "GpuUnavailableError",
           "cupy_status", "CUPY_INSTALL_HINT"]

CUPY_INSTALL_HINT = ("pip install cupy-cuda12x (CUDA 12 driver) or cupy-cuda13x (CUDA 13 driver), matching "
                     "the CUDA version nvidia-smi shows (extras: densehmm-studio[gpu] or [gpu-cuda13])")


class ArrayBackend:
    """The array primitives of one array module on one device.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    sparse : module
        ``scipy.sparse`` or ``cupyx.scipy.sparse`` (only ``csr_matrix`` is used).
    name : str
        For messages and ``repr``.
    free_bytes : callable or None
        Returns the memory (bytes) a new chunk may draw on; None = no memory-based
        chunking (the engine's ``chunk_elements`` applies).
    device : callable or None
        Returns a fresh context manager entered around every engine call
        (``lambda: cupy.cuda.Device(i)``; a new one each time, so nested and concurrent
        calls from several threads never share one).
    to_host : callable or None
        Device array -> numpy array (default: ``numpy.asarray``).
    """

    def __init__(self, xp, sparse, name: str, free_bytes: Optional[Callable[[], int]] = None,
                 device: Optional[Callable] = None, to_host: Optional[Callable] = None) -> None:
        self.xp = xp
        self.sparse = sparse
        self.name = name
        self._free_bytes = free_bytes
        self._device = device
        self._to_host = to_host or np.asarray
        self.is_numpy = xp is np
        self.transfers = 0       # device-to-host transfers of results (the tests count them)

    def __repr__(self) -> str:
        return f"ArrayBackend({self.name})"

    # --------------------------------------------------------------- placement
    def context(self):
        """Context manager that makes this backend's device current."""
        return self._device() if self._device is not None else contextlib.nullcontext()

    def to_device(self, a, dtype=None):
        """Host (or device) array -> array of this backend."""
        return self.xp.asarray(a, dtype=dtype)

    def to_host(self, a) -> np.ndarray:
        """One device-to-host transfer (counted in :attr:`transfers`)."""
        self.transfers += 1
        return self._to_host(a)

    def to_host_many(self, arrays, dtype=np.float64) -> tuple:
        """Several device arrays -> host arrays of ``dtype`` with their shapes, in one transfer
        (on numpy: copies the caller may own).  A parameter snapshot crosses this way: on a GPU
        each transfer is a synchronisation and a launch, whatever its size."""
        arrays = list(arrays)
        if self.is_numpy:
            self.transfers += 1
            return tuple(np.array(a, dtype=dtype) for a in arrays)
        xp = self.xp
        flat = self.to_host(xp.concatenate([xp.ravel(a).astype(dtype, copy=False) for a in arrays]))
        out, at = [], 0
        for a in arrays:
            out.append(flat[at:at + a.size].reshape(a.shape))
            at += a.size
        return tuple(out)

    def free_bytes(self) -> Optional[int]:
        """Memory a chunk may draw on now, or None when chunks are sized by element count."""
        return None if self._free_bytes is None else int(self._free_bytes())

    # ------------------------------------------------------------- arithmetic
    def errstate(self):
        """Silence divide/invalid/overflow warnings (zero scale factors are handled explicitly)."""
        if self.is_numpy:
            return np.errstate(divide="ignore", invalid="ignore", over="ignore")
        return contextlib.nullcontext()

    def matmul_into(self, a, b, out) -> None:
        """``out[...] = a @ b`` (numpy writes in place; CuPy assigns, which works for any view)."""
        if self.is_numpy:
            np.matmul(a, b, out=out)
        else:
            out[...] = self.xp.matmul(a, b)

    def csr_matrix(self, data, indices, indptr, shape):
        """A CSR matrix of this backend from host arrays (int32 indices)."""
        xp = self.xp
        return self.sparse.csr_matrix((xp.asarray(data), xp.asarray(indices), xp.asarray(indptr)),
                                      shape=shape)


def numpy_backend(free_bytes: Optional[Callable[[], int]] = None) -> ArrayBackend:
    """The numpy backend (``free_bytes`` given: memory-sized chunks, as on a GPU; for tests)."""
    import scipy.sparse
    return ArrayBackend(np, scipy.sparse, "numpy", free_bytes=free_bytes)


_CUPY_STATUS: dict = {}


def cupy_status(device: int = 0):
    """``(ok, reason)``: whether CuPy can run on GPU ``device`` (cached per process).

    ``reason`` names what is missing: CuPy itself, the CUDA driver or runtime, or
    the GPU.  A tiny computation is run on the device, so a broken install (for
    example a CuPy wheel for another CUDA major version than the driver's) is
    caught here rather than in the middle of a fit.
    """
    device = int(device)
    if device in _CUPY_STATUS:
        return _CUPY_STATUS[device]
    try:
        import cupy
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install raising anything else
        res = (False, f"CuPy is not installed ({type(e).__name__}: {e}); {CUPY_INSTALL_HINT}")
        _CUPY_STATUS[device] = res
        return res
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        if count <= device:
            res = (False, f"CuPy {cupy.__version__} is installed but sees {count} GPU(s), "
                          f"so GPU {device} does not exist")
        else:
            with cupy.cuda.Device(device):
                x = cupy.arange(4, dtype=cupy.float64)
                ok = float((x @ x).get()) == 14.0
            res = (True, "") if ok else (False, f"CuPy {cupy.__version__} computed a wrong result on GPU {device}")
    except Exception as e:  # noqa: BLE001 - cupy raises CUDARuntimeError, CUDADriverError, CompileException...
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        res = (False, f"CuPy {cupy.__version__} is installed but cannot use an NVIDIA GPU "
                      f"({type(e).__name__}: {msg}); it needs an NVIDIA GPU with its driver and the CuPy "
                      f"wheel for the driver's CUDA version: cupy-cuda12x or cupy-cuda13x "
                      f"(nvidia-smi shows the CUDA version)")
    _CUPY_STATUS[device] = res
    return res


def cupy_backend(device: int = 0) -> ArrayBackend:
    """The CuPy backend on GPU ``device``.

    Raises
    ------
    GpuUnavailableError
        CuPy is missing or cannot use that GPU (the message says which and how to fix it).
    """
    ok, reason = cupy_status(device)
    if not ok:
        raise GpuUnavailableError(f"the cupy engine is unavailable: {reason}")
    import cupy
    import cupyx.scipy.sparse
    index = int(device)

    def free_bytes() -> int:
        with cupy.cuda.Device(index):
            free, _total = cupy.cuda.runtime.memGetInfo()
            # blocks CuPy's pool holds but no array uses are free for the next chunk too
            return int(free) + int(cupy.get_default_memory_pool().free_bytes())

    return ArrayBackend(cupy, cupyx.scipy.sparse, f"cupy:{index}", free_bytes=free_bytes,
                        device=lambda: cupy.cuda.Device(index), to_host=cupy.asnumpy)

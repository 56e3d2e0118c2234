"""A strict stand-in for CuPy on the CPU: numpy does the arithmetic, CuPy's boundaries are enforced.

The engine's GPU code path has always been tested "with numpy as its array module"
(``CupyEngine(backend=numpy_backend(...))``).  That runs the device branches, but numpy arrays mix
freely with host arrays, so three kinds of GPU bug pass unseen there and would surface only on the
GPU machine, where device time is scarce:

* a host (numpy) array handed to a device operation: CuPy raises ``TypeError`` (it never converts a
  host array implicitly, in kernels, element-wise assignments or sparse constructors);
* a device array turned into a host array implicitly (``numpy.asarray(x)``, a numpy function that
  CuPy's ``__array_function__`` would not take): CuPy raises ``TypeError``;
* hidden host-device traffic: every ``float(x)``, ``bool(x)``, ``int(x)`` of a device scalar is a
  transfer and a synchronisation.

:class:`DeviceArray` wraps an ``ndarray`` and behaves like ``cupy.ndarray`` at those boundaries:
mixing raises :class:`HostDeviceMixError`, implicit conversion raises, and every crossing is
recorded in :class:`Traffic` (``h2d``: host arrays uploaded; ``d2h``: sizes of the arrays and
scalars brought back).  :func:`strict_backend` builds an
:class:`~densehmm_core.engine.backend.ArrayBackend` on it (``is_numpy`` False: the device branches),
so ``CupyEngine(backend=strict_backend())`` runs the GPU engine's whole code path this way.

What it does not model: CuPy's coverage of numpy's API (checked separately against CuPy's names),
kernels, streams and float32 rounding on the device.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np
import scipy.sparse
from numpy.lib.mixins import NDArrayOperatorsMixin

__all__ = ["HostDeviceMixError", "Traffic", "DeviceArray", "StrictModule", "StrictSparse", "strict_backend"]


#: (kind, name) of every numpy function, ufunc method and array method the device code used: what
#: CuPy must provide (``kind``: "module", "ufunc", "function", "method"); checked against CuPy's
#: names where CuPy is importable (``tests/test_strict_device.py``)
USED: set = set()


class HostDeviceMixError(TypeError):
    """What CuPy raises (as ``TypeError``) when host and device arrays meet."""


@dataclass
class Traffic:
    """Host-device crossings: sizes of host arrays uploaded and of results brought back."""

    h2d: List[int] = field(default_factory=list)
    d2h: List[int] = field(default_factory=list)

    def clear(self) -> None:
        self.h2d.clear()
        self.d2h.clear()


def _is_host_array(x) -> bool:
    return isinstance(x, np.ndarray)


class DeviceArray(NDArrayOperatorsMixin):
    """An ``ndarray`` on the pretend device (see the module docstring)."""

    __slots__ = ("_a", "_traffic")
    __array_priority__ = 1000

    def __init__(self, a: np.ndarray, traffic: Traffic) -> None:
        self._a = a
        self._traffic = traffic

    # ------------------------------------------------------------ boundaries
    def __array__(self, dtype=None, copy=None):
        raise HostDeviceMixError("Implicit conversion to a NumPy array is not allowed. "
                                 "Please use `.get()` to construct a NumPy array explicitly.")

    def get(self) -> np.ndarray:
        """The explicit device-to-host copy (``cupy.ndarray.get``)."""
        self._traffic.d2h.append(int(self._a.size))
        return np.array(self._a, copy=True)

    def _scalar(self):
        self._traffic.d2h.append(1)
        if self._a.size != 1:
            raise TypeError(f"only size-1 arrays convert to Python scalars (shape {self._a.shape})")
        return self._a

    def __float__(self) -> float:
        return float(self._scalar().reshape(()))

    def __int__(self) -> int:
        return int(self._scalar().reshape(()))

    def __index__(self) -> int:
        if not np.issubdtype(self._a.dtype, np.integer):
            raise TypeError("only integer arrays are indices")
        return int(self)

    def __bool__(self) -> bool:
        return bool(self._scalar().reshape(()))

    def __complex__(self) -> complex:
        return complex(self._scalar().reshape(()))

    def item(self):
        return self._scalar().reshape(()).item()

    def tolist(self):
        self._traffic.d2h.append(int(self._a.size))
        return self._a.tolist()

    # ----------------------------------------------------------- arithmetic
    def _wrap(self, r):
        return _wrap(r, self._traffic)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        USED.add(("ufunc", ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"))
        args = [_unwrap(x) for x in inputs]
        kw = {k: _unwrap(v) for k, v in kwargs.items()}
        if out is not None:
            kw["out"] = tuple(_unwrap_out(o) for o in out)
        r = getattr(ufunc, method)(*args, **kw)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return self._wrap(r)

    def __array_function__(self, func, types, args, kwargs):
        USED.add(("function", func.__name__))
        r = func(*_unwrap(list(args)), **{k: _unwrap(v) for k, v in kwargs.items()})
        return self._wrap(r)

    # ------------------------------------------------------------- indexing
    def __getitem__(self, key):
        return self._wrap(self._a[_index(key, self._traffic)])

    def __setitem__(self, key, value) -> None:
        self._a[_index(key, self._traffic)] = _unwrap(value)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        for i in range(len(self._a)):
            yield self[i]

    # ----------------------------------------------------------- attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: self._wrap(self._a.T))

    def __getattr__(self, name: str):
        if name.startswith("__"):       # __array_interface__, __array_struct__, buffers: CuPy has none
            raise AttributeError(name)
        attr = getattr(self._a, name)   # AttributeError for names ndarray lacks
        USED.add(("method", name))
        if not callable(attr):
            return self._wrap(attr)

        def method(*args, **kwargs):
            kw = {k: (_unwrap_out(v) if k == "out" else _unwrap(v)) for k, v in kwargs.items()}
            r = attr(*_unwrap(list(args)), **kw)
            if "out" in kwargs and kwargs["out"] is not None:
                return kwargs["out"]
            return self._wrap(r)
        return method

    def __repr__(self) -> str:
        return f"DeviceArray({self._a!r})"

    def __format__(self, spec: str) -> str:
        return format(float(self), spec) if spec else repr(self)


def _wrap(r, traffic: Traffic):
    """numpy results -> device arrays (numpy scalars too: CuPy's reductions give 0-d arrays)."""
    if isinstance(r, (np.ndarray, np.generic)):
        return DeviceArray(np.asarray(r), traffic)
    if isinstance(r, tuple):
        return tuple(_wrap(x, traffic) for x in r)
    if isinstance(r, list):
        return [_wrap(x, traffic) for x in r]
    return r


def _unwrap(x):
    """Device arrays -> their ndarray; a host array is refused (CuPy's TypeError)."""
    if isinstance(x, DeviceArray):
        return x._a
    if _is_host_array(x):
        raise HostDeviceMixError(f"Unsupported type {type(x)}: a host (numpy) array of shape {x.shape} "
                                 f"met a device array; move it with xp.asarray first")
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, StrictCsr):
        raise HostDeviceMixError("a sparse matrix cannot be an operand of a dense device function")
    return x


def _unwrap_out(x):
    if isinstance(x, DeviceArray):
        return x._a
    if x is None:
        return None
    raise HostDeviceMixError(f"out= must be a device array, got {type(x)}")


def _index(key, traffic: Traffic):
    """Indices: device arrays unwrapped; host integer or boolean arrays are uploaded (CuPy converts
    them), which is recorded."""
    if isinstance(key, tuple):
        return tuple(_index(k, traffic) for k in key)
    if isinstance(key, DeviceArray):
        return key._a
    if isinstance(key, np.ndarray):
        traffic.h2d.append(int(key.size))
        return key
    return key


#: numpy functions that create arrays from shapes and scalars (their results live on the device)
_CREATE = {"zeros", "ones", "empty", "full", "arange", "eye", "identity", "linspace", "tri"}
#: functions that upload host data (CuPy's explicit host-to-device copies)
_UPLOAD = {"asarray", "array", "ascontiguousarray", "asfortranarray"}


class StrictModule:
    """``xp`` for :class:`DeviceArray`: numpy's names; results on the device; host arrays refused
    except by the explicit uploads (``asarray``, ``array``, ...)."""

    def __init__(self, traffic: Traffic, np_module=np, prefix: str = "numpy") -> None:
        self._traffic = traffic
        self._np = np_module
        self._prefix = prefix

    @property
    def ndarray(self):
        return DeviceArray

    def __getattr__(self, name: str):
        if name == "errstate":      # CuPy has none (ArrayBackend.errstate knows)
            raise AttributeError("cupy has no errstate")
        attr = getattr(self._np, name)
        traffic = self._traffic
        USED.add(("module", f"{self._prefix}.{name}"))
        if name in ("linalg", "random", "fft"):
            return StrictModule(traffic, attr, f"{self._prefix}.{name}")
        if isinstance(attr, type) or not callable(attr):
            return attr                      # dtypes, constants
        if name in _CREATE or name.endswith("_like"):
            def create(*args, **kwargs):
                return _wrap(attr(*_unwrap(list(args)), **{k: _unwrap(v) for k, v in kwargs.items()}), traffic)
            return create
        if name in _UPLOAD:
            def upload(a, *args, **kwargs):
                host = not isinstance(a, DeviceArray) and not (
                    isinstance(a, (list, tuple)) and any(isinstance(v, DeviceArray) for v in a))
                if host:
                    traffic.h2d.append(int(np.size(a)))
                r = attr(_unwrap(a) if not host else a, *args, **kwargs)
                # an upload is a copy on the device (never the host array itself), and array() copies
                return _wrap(np.array(r, copy=True) if host or name == "array" else r, traffic)
            return upload

        def function(*args, **kwargs):
            out = kwargs.get("out")
            kw = {k: (_unwrap_out(v) if k == "out" else _unwrap(v)) for k, v in kwargs.items()}
            r = attr(*_unwrap(list(args)), **kw)
            if out is not None:
                return out
            return _wrap(r, traffic)
        function.__name__ = name
        return function

    def __repr__(self) -> str:
        return f"<strict device module {self._prefix}>"


class StrictCsr:
    """``cupyx.scipy.sparse.csr_matrix`` (and the CSC of its ``.T``) on :class:`DeviceArray`."""

    def __init__(self, m, traffic: Traffic) -> None:
        self._m = m
        self._traffic = traffic

    shape = property(lambda self: self._m.shape)
    nnz = property(lambda self: self._m.nnz)
    dtype = property(lambda self: self._m.dtype)
    format = property(lambda self: self._m.format)
    T = property(lambda self: StrictCsr(self._m.T, self._traffic))

    def tocsr(self) -> "StrictCsr":
        return StrictCsr(self._m.tocsr(), self._traffic)

    def __getitem__(self, key) -> "StrictCsr":
        r = self._m[key]
        return StrictCsr(r, self._traffic) if scipy.sparse.issparse(r) else _wrap(r, self._traffic)

    def __matmul__(self, other):
        if isinstance(other, StrictCsr):
            return StrictCsr(self._m @ other._m, self._traffic)
        r = self._m @ _unwrap(other)
        return _wrap(np.asarray(r), self._traffic)

    def __rmatmul__(self, other):
        return _wrap(np.asarray(_unwrap(other) @ self._m), self._traffic)

    def sum(self, axis=None):
        return _wrap(np.asarray(self._m.sum(axis=axis)), self._traffic)


class StrictSparse:
    """``cupyx.scipy.sparse`` for :class:`DeviceArray`: ``csr_matrix((data, indices, indptr))`` takes
    device arrays only (cupyx raises ``ValueError`` for host ones) or a scipy matrix (an upload)."""

    def __init__(self, traffic: Traffic) -> None:
        self._traffic = traffic

    def csr_matrix(self, arg, shape=None, dtype=None):
        if scipy.sparse.issparse(arg):
            self._traffic.h2d.append(int(arg.nnz))
            return StrictCsr(scipy.sparse.csr_matrix(arg, shape=shape, dtype=dtype), self._traffic)
        if isinstance(arg, tuple) and len(arg) == 3:
            if not all(isinstance(a, DeviceArray) for a in arg):
                raise ValueError("data, indices, and indptr should be 1-D")   # cupyx's message for host arrays
            return StrictCsr(scipy.sparse.csr_matrix(tuple(a._a for a in arg), shape=shape, dtype=dtype),
                             self._traffic)
        raise TypeError(f"unsupported input for the strict csr_matrix: {type(arg)}")

    def issparse(self, x) -> bool:
        return isinstance(x, StrictCsr)


def strict_backend(traffic: Traffic = None, free_bytes=lambda: 1 << 22):
    """An :class:`~densehmm_core.engine.backend.ArrayBackend` on :class:`DeviceArray`: the device
    branches of the engine and the EM loop, CuPy's boundaries enforced, the crossings recorded in
    ``backend.traffic`` (``to_host`` is the explicit ``.get()``)."""
    from densehmm_core.engine.backend import ArrayBackend
    traffic = traffic if traffic is not None else Traffic()
    be = ArrayBackend(StrictModule(traffic), StrictSparse(traffic), "strict-device", free_bytes=free_bytes,
                      to_host=lambda a: a.get() if isinstance(a, DeviceArray) else np.asarray(a))
    be.traffic = traffic
    be.errstate = lambda: np.errstate(all="ignore")    # CuPy never warns; numpy inside would
    return be

"""Reading model files: validation, :func:`read_model_info`, :func:`load_model`, :func:`list_models`."""
from __future__ import annotations

import inspect
import json
import os
import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from .schema import (_ABSENT, _EMBEDDING_ATOL, _NONE, _PRESENT, _STOCHASTIC_ATOL, EMBEDDINGS, KINDS, MATRICES,
                     ModelFileError, _as_str, _attr_value, _h5py, _open_existing, _read_attrs, _resolve_name)


def list_models(path) -> List[str]:
    """Names of the models stored in a file, in the order they were added.

    Raises
    ------
    ModelFileError
        The file is missing, not HDF5, not a densehmm model file, or too new.
    """
    f = _open_existing(path)
    try:
        return list(f["models"].keys())
    finally:
        f.close()


# -------------------------------------------------------------- loading
def _read_dataset(mg, path, where, key, shape, *, floating=True):
    h5py = _h5py()
    if key not in mg:
        raise ModelFileError(path, f"{where}: dataset {key!r} is missing")
    ds = mg[key]
    if not isinstance(ds, h5py.Dataset):
        raise ModelFileError(path, f"{where}: {key!r} is not a dataset")
    if ds.shape != tuple(shape):
        raise ModelFileError(path, f"{where}: dataset {key!r} has shape {ds.shape}, expected {tuple(shape)}")
    if floating and ds.dtype.kind != "f":
        raise ModelFileError(path, f"{where}: dataset {key!r} has type {ds.dtype}, expected floating point")
    try:
        arr = ds[()]
    except (OSError, ValueError) as e:
        raise ModelFileError(path, f"{where}: dataset {key!r} cannot be read ({e})") from None
    arr = np.asarray(arr)
    if floating:
        if not np.all(np.isfinite(arr)):
            raise ModelFileError(path, f"{where}: dataset {key!r} holds non-finite values (NaN or inf)")
        if arr.dtype != np.float64:
            arr = arr.astype(np.float64)
    return arr


def _check_stochastic(arr, path, where, key):
    if np.any(arr < 0):
        raise ModelFileError(path, f"{where}: {key} holds negative probabilities")
    sums = arr.sum(axis=-1)
    bad = np.flatnonzero(np.abs(np.atleast_1d(sums) - 1.0) > _STOCHASTIC_ATOL)
    if bad.size:
        what = "does not sum to 1" if arr.ndim == 1 else f"row {int(bad[0])} sums to {float(np.atleast_1d(sums)[bad[0]]):.6g}, not 1"
        raise ModelFileError(path, f"{where}: {key} is not stochastic ({what})")


def _softmax_rows(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def _positive_int(attrs, key, path, where):
    v = attrs.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
        raise ModelFileError(path, f"{where}: attribute {key!r} must be a positive integer, got {v!r}")
    return int(v)


def _read_history(hg, path, where) -> List[dict]:
    h5py = _h5py()
    try:
        columns = json.loads(_as_str(hg.attrs.get("columns", "[]")))
    except (ValueError, TypeError):
        raise ModelFileError(path, f"{where}: history/columns is not valid JSON") from None
    n = hg.attrs.get("n_records")
    n = int(n) if n is not None else None
    cols = {}
    for col in columns:
        if col not in hg or not isinstance(hg[col], h5py.Dataset):
            raise ModelFileError(path, f"{where}: history column {col!r} is missing")
        ds = hg[col]
        if ds.ndim != 1:
            raise ModelFileError(path, f"{where}: history column {col!r} is not one-dimensional")
        if n is None:
            n = ds.shape[0]
        if ds.shape[0] != n:
            raise ModelFileError(path, f"{where}: history column {col!r} has {ds.shape[0]} entries, expected {n}")
        mask = np.asarray(ds.attrs.get("missing", np.zeros(n, dtype=np.int8)))
        if mask.shape != (n,):
            raise ModelFileError(path, f"{where}: history column {col!r} has a mis-shaped 'missing' mask")
        if ds.dtype.kind == "O" or h5py.check_string_dtype(ds.dtype) is not None:
            vals = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in ds[()].tolist()]
            if _as_str(ds.attrs.get("encoding", "")) == "json":
                vals = [json.loads(v) if mask[i] == _PRESENT else None for i, v in enumerate(vals)]
        else:
            vals = ds[()].tolist()
        cols[col] = (vals, mask)
    out = []
    for i in range(n or 0):
        rec = {}
        for col, (vals, mask) in cols.items():
            if mask[i] == _ABSENT:
                continue
            rec[col] = None if mask[i] == _NONE else vals[i]
        out.append(rec)
    return out


def _read_group_attrs(mg, key, path, where) -> Optional[dict]:
    h5py = _h5py()
    if key not in mg:
        return None
    if not isinstance(mg[key], h5py.Group):
        raise ModelFileError(path, f"{where}: {key!r} is not a group")
    return _read_attrs(mg[key], path, f"{where}/{key}")


def _read_model_group(f, path, name, *, with_arrays=True) -> dict:
    """Read and validate one model group into a plain dict."""
    h5py = _h5py()
    where = f"model {name!r}"
    mg = f["models"][name]
    if not isinstance(mg, h5py.Group):
        raise ModelFileError(path, f"{where} is not a group")
    attrs = _read_attrs(mg, path, where)
    kind = attrs.get("kind")
    if kind not in KINDS:
        raise ModelFileError(path, f"{where}: attribute 'kind' must be one of {KINDS}, got {kind!r}")
    n = _positive_int(attrs, "n_states", path, where)
    m = _positive_int(attrs, "n_symbols", path, where)
    info: Dict[str, Any] = {"name": name, "attrs": attrs}
    arrays: Dict[str, np.ndarray] = {}
    shapes = {"startprob": (n,), "transmat": (n, n), "emissionprob": (n, m)}
    if kind == "dense":
        l = _positive_int(attrs, "dim", path, where)
        shapes.update({"embeddings/U": (n, l), "embeddings/Z": (n, l), "embeddings/W": (n, l),
                       "embeddings/V": (m, l), "embeddings/z_start": (l,)})
    for key, shape in shapes.items():
        arrays[key] = _read_dataset(mg, path, where, key, shape)
    for key in MATRICES:
        _check_stochastic(arrays[key], path, where, key)
    if kind == "dense":
        U, Z, W, V = (arrays["embeddings/" + k] for k in "UZWV")
        if np.max(np.abs(_softmax_rows(Z @ U.T) - arrays["transmat"])) > _EMBEDDING_ATOL:
            raise ModelFileError(path, f"{where}: transmat does not match softmax(Z U^T) of the stored embeddings")
        if np.max(np.abs(_softmax_rows(W @ V.T) - arrays["emissionprob"])) > _EMBEDDING_ATOL:
            raise ModelFileError(path, f"{where}: emissionprob does not match softmax(W V^T) of the stored embeddings")
    vocab = None
    if "vocabulary" in mg:
        ds = mg["vocabulary"]
        if not isinstance(ds, h5py.Dataset) or ds.shape != (m,):
            raise ModelFileError(path, f"{where}: dataset 'vocabulary' has shape "
                                       f"{getattr(ds, 'shape', None)}, expected ({m},)")
        if h5py.check_string_dtype(ds.dtype) is None:
            raise ModelFileError(path, f"{where}: dataset 'vocabulary' does not hold strings")
        vocab = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in ds[()].tolist()]
        if len(set(vocab)) != len(vocab):
            raise ModelFileError(path, f"{where}: dataset 'vocabulary' holds duplicate symbols")
    info["vocabulary"] = vocab
    info["config"] = _read_group_attrs(mg, "config", path, where) or {}
    info["metrics"] = _read_group_attrs(mg, "metrics", path, where) or {}
    info["provenance"] = _read_group_attrs(mg, "provenance", path, where)
    info["provenance_test"] = _read_group_attrs(mg, "provenance_test", path, where)
    info["software"] = _read_group_attrs(mg, "software", path, where) or {}
    if "history" in mg:
        if not isinstance(mg["history"], h5py.Group):
            raise ModelFileError(path, f"{where}: 'history' is not a group")
        info["history"] = _read_history(mg["history"], path, where)
    else:
        info["history"] = []
    info["arrays"] = arrays if with_arrays else {k: v.shape for k, v in arrays.items()}
    return info


def _guard(path, fn):
    """Turn low-level h5py/OS errors while reading into ModelFileError."""
    try:
        return fn()
    except ModelFileError:
        raise
    except (OSError, KeyError, RuntimeError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ModelFileError(os.fspath(path), f"is damaged or unreadable ({type(e).__name__}: {e})") from None


def read_model_info(path, name: Optional[str] = None, *, arrays: bool = True) -> dict:
    """Everything stored for one model, validated, as plain Python values and numpy arrays.

    Returns a dict with ``name``, ``attrs`` (kind, n_states, n_symbols, dim, fit_method, seed,
    device_used, created_utc, ...), ``arrays`` (``startprob``, ``transmat``, ``emissionprob``,
    ``embeddings/U`` ...; only shapes when ``arrays=False``), ``vocabulary``, ``config``,
    ``history``, ``metrics``, ``provenance``, ``provenance_test``, ``software`` and ``file``
    (the root attributes).  No model object is built (so TensorFlow is never imported).
    """
    def run():
        f = _open_existing(path)
        try:
            nm = _resolve_name(f, os.fspath(path), name)
            info = _read_model_group(f, os.fspath(path), nm, with_arrays=arrays)
            info["file"] = {k: _attr_value(v) for k, v in f.attrs.items()}
            return info
        finally:
            f.close()
    return _guard(path, run)


def model_summaries(path) -> List[dict]:
    """One small dict per model (name, kind, n_states, n_symbols, dim, fit_method, created_utc)."""
    def run():
        f = _open_existing(path)
        try:
            out = []
            for nm in f["models"].keys():
                a = _read_attrs(f["models"][nm], os.fspath(path), f"model {nm!r}")
                out.append({"name": nm, **{k: a.get(k) for k in
                                           ("kind", "n_states", "n_symbols", "dim", "fit_method", "created_utc")}})
            return out
        finally:
            f.close()
    return _guard(path, run)


_POSITIONAL = ("n_states", "n_symbols", "dim", "n_components", "kind")


def _construct(cls, args: tuple, config: dict, path, where: str = "model"):
    """Call ``cls(*args, **config)`` with only the keywords its constructor accepts."""
    config = {k: v for k, v in config.items() if k not in _POSITIONAL}
    try:
        sig = inspect.signature(cls)
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
            unknown = [k for k in config if k not in sig.parameters]
            if unknown:
                warnings.warn(f"{path}: {where}: ignoring configuration keys {unknown} that {cls.__name__} "
                              f"does not accept",
                              RuntimeWarning, stacklevel=3)
            config = {k: v for k, v in config.items() if k in sig.parameters}
    except (TypeError, ValueError):
        pass
    try:
        return cls(*args, **config)
    except (TypeError, ValueError) as e:
        raise ModelFileError(path, f"{where}: the stored configuration is not accepted by {cls.__name__} "
                                   f"({e})") from None


def load_model(path, name: Optional[str] = None):
    """Load one model from a file, validated; arrays are bit-identical to those saved.

    Parameters
    ----------
    path : str or path-like
    name : str, optional
        Which model; may be omitted when the file holds exactly one.

    Returns
    -------
    StandardHMM or DenseHMM
        With ``startprob_``, ``transmat_``, ``emissionprob_`` (and ``embeddings_``),
        ``vocabulary``, ``history_``, ``stop_reason_`` as saved, plus ``metrics_``,
        ``provenance_``, ``provenance_test_`` and ``model_name_`` from the file.

    Raises
    ------
    ModelFileError
        Missing file, not HDF5, foreign HDF5, newer schema, unknown name, missing or
        mis-shaped datasets, non-finite or non-stochastic matrices.
    """
    spath = os.fspath(path)
    info = read_model_info(spath, name)
    try:
        return _build_model(spath, info)
    except ModelFileError:
        raise
    except (TypeError, ValueError) as e:
        raise ModelFileError(spath, f"model {info['name']!r} cannot be rebuilt ({e})") from None


def _build_model(spath: str, info: dict):
    a = info["attrs"]
    cfg = dict(info["config"])
    n, m = int(a["n_states"]), int(a["n_symbols"])
    if "seed" in a and "seed" not in cfg:
        cfg["seed"] = a["seed"]
    if a["kind"] == "dense":
        from ..dense import DenseHMM
        if a.get("fit_method") and "fit_method" not in cfg:
            cfg["fit_method"] = a["fit_method"]
        model = _construct(DenseHMM, (n, int(a["dim"]), m), cfg, spath, f"model {info['name']!r}")
        if isinstance(a.get("start_mode"), str):
            model.start_mode_ = a["start_mode"]
        emb = {k: info["arrays"]["embeddings/" + k] for k in EMBEDDINGS}
        setter = getattr(model, "set_embeddings", None)
        if callable(setter):
            setter(emb)
        else:
            model.embeddings_ = emb
    else:
        from ..standard import StandardHMM
        model = _construct(StandardHMM, (n, m), cfg, spath, f"model {info['name']!r}")
    model.n_symbols = m
    model.startprob_ = info["arrays"]["startprob"]
    model.transmat_ = info["arrays"]["transmat"]
    model.emissionprob_ = info["arrays"]["emissionprob"]
    model.vocabulary = info["vocabulary"]
    model.history_ = info["history"]
    model.stop_reason_ = a.get("stop_reason", "")
    if a.get("device_used"):
        try:
            model.device_used_ = a["device_used"]
        except AttributeError:  # a read-only property
            pass
    if "seed_used" in a and hasattr(model, "seed_used_"):
        model.seed_used_ = a["seed_used"]
    model.metrics_ = info["metrics"]
    model.provenance_ = info["provenance"]
    model.provenance_test_ = info["provenance_test"]
    model.model_name_ = info["name"]
    return model

"""Reading model files: validation, :func:`read_model_info`, :func:`load_model`, :func:`list_models`."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

import numpy as np

from ..maths import check_stochastic, softmax
from ..registry import migrate_config, model_class, model_from_config
from .schema import (_ABSENT, _EMBEDDING_ATOL, _NONE, _PRESENT, _STOCHASTIC_ATOL, KINDS, MATRICES,
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
    try:
        check_stochastic(key, arr, atol=_STOCHASTIC_ATOL)
    except ValueError as e:
        raise ModelFileError(path, f"{where}: {e}") from None


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


def _read_strings(mg, path, where: str, key: str) -> list:
    """A 1-D dataset of distinct UTF-8 strings (e.g. the tag vocabulary)."""
    h5py = _h5py()
    ds = mg[key]
    if not isinstance(ds, h5py.Dataset) or len(ds.shape) != 1:
        raise ModelFileError(path, f"{where}: dataset {key!r} has shape {getattr(ds, 'shape', None)}, expected (k,)")
    if h5py.check_string_dtype(ds.dtype) is None:
        raise ModelFileError(path, f"{where}: dataset {key!r} does not hold strings")
    out = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in ds[()].tolist()]
    if len(set(out)) != len(out):
        raise ModelFileError(path, f"{where}: dataset {key!r} holds duplicate strings")
    return out


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
    if kind == "dense" and "feature_vocabulary" in mg:  # symbol features (issue 14)
        fvocab = _read_strings(mg, path, where, "feature_vocabulary")
        arrays["embeddings/feature_V"] = _read_dataset(mg, path, where, "embeddings/feature_V", (len(fvocab), l))
        ds = mg.get("feature_index")
        if ds is None or not isinstance(ds, h5py.Dataset) or len(ds.shape) != 2 or ds.shape[1] != 2 \
                or ds.dtype.kind not in "iu":
            raise ModelFileError(path, f"{where}: dataset 'feature_index' must be an integer (k, 2) array")
        fidx = np.asarray(ds[()], dtype=np.int64)
        if fidx.size and (fidx.min() < 0 or fidx[:, 0].max() >= m or fidx[:, 1].max() >= len(fvocab)):
            raise ModelFileError(path, f"{where}: dataset 'feature_index' points outside the symbols or features")
        info["features"] = {"vocabulary": fvocab, "index": fidx}
    for key in MATRICES:
        _check_stochastic(arrays[key], path, where, key)
    if kind == "dense":
        U, Z, W, V = (arrays["embeddings/" + k] for k in "UZWV")
        if np.max(np.abs(softmax(Z @ U.T, axis=1) - arrays["transmat"])) > _EMBEDDING_ATOL:
            raise ModelFileError(path, f"{where}: transmat does not match softmax(Z U^T) of the stored embeddings")
        if np.max(np.abs(softmax(W @ V.T, axis=1) - arrays["emissionprob"])) > _EMBEDDING_ATOL:
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
    info["tag_vocabulary"] = _read_strings(mg, path, where, "tag_vocabulary") if "tag_vocabulary" in mg else None
    info["config"] = migrate_config(kind, _read_group_attrs(mg, "config", path, where) or {})
    info["metrics"] = _read_group_attrs(mg, "metrics", path, where) or {}
    info["provenance"] = _read_group_attrs(mg, "provenance", path, where)
    info["provenance_test"] = _read_group_attrs(mg, "provenance_test", path, where)
    info["software"] = _read_group_attrs(mg, "software", path, where) or {}
    info["notes"] = _read_group_attrs(mg, "notes", path, where) or {}
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
    ``history``, ``metrics``, ``provenance``, ``provenance_test``, ``software``, ``notes`` and ``file``
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


#: Model-group attributes that hold the fitted attributes of ``model.arrays()`` (same names).
_FITTED_KEYS = ("stop_reason", "start_mode", "seed_used", "device_used", "restart_losses")


def _build_model(spath: str, info: dict):
    """The model of a read group: the registry builds it from the (migrated) configuration,
    ``set_arrays`` restores the fitted state bit for bit."""
    a = info["attrs"]
    where = f"model {info['name']!r}"
    cfg = dict(info["config"])
    # the group's validated attributes are authoritative for the shapes
    cfg["n_states"], cfg["n_symbols"] = int(a["n_states"]), int(a["n_symbols"])
    if a["kind"] == "dense":
        cfg["dim"] = int(a["dim"])
    try:
        model = model_from_config(a["kind"], cfg)
    except (TypeError, ValueError) as e:
        raise ModelFileError(spath, f"{where}: the stored configuration is not accepted by "
                                   f"{model_class(a['kind']).__name__} ({e})") from None
    arrays = info["arrays"]
    if info.get("features") is not None and cfg.get("symbol_features"):  # symbol features (issue 14)
        from ..features import SymbolFeatures
        fi = info["features"]
        model.features_ = SymbolFeatures(str(cfg["symbol_features"]), fi["vocabulary"], fi["index"][:, 0].copy(),
                                         fi["index"][:, 1].copy(), int(a["n_symbols"]))
    state: Dict[str, Any] = {"params": {k.split("/")[-1]: v for k, v in arrays.items()},
                             "history": info["history"]}
    fitted = {attr.rstrip("_") for attr in model.fitted_attrs}
    for key in _FITTED_KEYS:
        if key in fitted and key in a and a[key] != "":
            state[key] = a[key]
    model.set_arrays(state)
    model.vocabulary = info["vocabulary"]
    model.tag_vocabulary = info.get("tag_vocabulary")
    model.metrics_ = info["metrics"]
    model.provenance_ = info["provenance"]
    model.provenance_test_ = info["provenance_test"]
    model.model_name_ = info["name"]
    return model

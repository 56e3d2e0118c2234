"""HDF5 model files: :func:`save_model`, :func:`load_model`, :func:`list_models`.

One file holds one or several models (one group each under ``/models``).  The
schema is documented in ``docs/FILE_FORMAT.md``; in short::

    /                       attrs: format="densehmm-model", schema_version=1, writer, modified_utc
    /models/<name>/         attrs: kind, class, n_states, n_symbols, dim, fit_method, seed,
                                   device_used, created_utc, stop_reason, n_parameters
        startprob           (n,)   float64
        transmat            (n, n) float64, row = from-state
        emissionprob        (n, m) float64
        embeddings/U Z W    (n, l) float64          (dense models only)
        embeddings/V        (m, l) float64
        embeddings/z_start  (l,)   float64
        vocabulary          (m,)   UTF-8 strings    (when the model knows its symbols)
        config/             attrs: every hyper-parameter of ``get_config()``
        history/<column>    one 1-D dataset per column (step, loss, train_ll, test_ll, ...)
        metrics/            attrs: final metrics (floats)
        provenance/         attrs: training-data provenance (file, sha256, format, options, ...)
        provenance_test/    attrs: provenance of the evaluation data (when given)
        software/           attrs: versions (densehmm, numpy, tensorflow, hmmlearn, h5py, python)

Attributes are plain scalars or strings; a value that needs structure (a list, a
dict, ``None``) is stored as a JSON string and its key is listed in the
group's ``json_keys`` attribute.  Nothing is ever pickled or evaluated.

Writes are atomic: the whole new file is written to a temporary file in the
same folder, flushed and fsynced, then renamed over the old one with
:func:`os.replace`.  Models already in the file are copied over unchanged.
"""
from __future__ import annotations

import datetime as _dt
import inspect
import json
import os
import platform
import stat
import sys
import tempfile
import warnings
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

__all__ = [
    "FORMAT_NAME", "SCHEMA_VERSION", "ModelFileError", "save_model", "load_model",
    "list_models", "read_model_info", "model_summaries",
]

FORMAT_NAME = "densehmm-model"
SCHEMA_VERSION = 1

MATRICES = ("startprob", "transmat", "emissionprob")
EMBEDDINGS = ("U", "Z", "W", "V", "z_start")
KINDS = ("standard", "dense")

# history mask values (the "missing" attribute of a history column)
_PRESENT, _NONE, _ABSENT = 0, 1, 2

_STOCHASTIC_ATOL = 1e-6
_EMBEDDING_ATOL = 1e-6


class ModelFileError(ValueError):
    """A model file cannot be read or written; the message names the file and the problem."""

    def __init__(self, path: Any, problem: Optional[str] = None) -> None:
        if problem is None:  # a single ready-made message
            self.path, self.problem = "", str(path)
            super().__init__(self.problem)
            return
        self.path = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


# ---------------------------------------------------------------- helpers
def _h5py():
    import h5py
    return h5py


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _plain(value: Any) -> Any:
    """numpy scalars/arrays -> Python values (for JSON)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.generic, np.ndarray)):
        return _plain(o)
    if isinstance(o, (set, frozenset)):
        return sorted(_plain(v) for v in o)
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    raise TypeError(f"{type(o).__name__} is not JSON-serialisable")


def _write_attrs(group, values: Mapping[str, Any]) -> None:
    """Store a flat mapping as attributes: scalars natively, anything else as JSON."""
    json_keys = []
    for key, value in values.items():
        key = str(key)
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool):
            group.attrs[key] = np.bool_(value)
        elif isinstance(value, int) and -2**63 <= value < 2**63:
            group.attrs[key] = np.int64(value)
        elif isinstance(value, float):
            group.attrs[key] = np.float64(value)
        elif isinstance(value, str):
            group.attrs[key] = value
        else:
            group.attrs[key] = json.dumps(value, default=_json_default, allow_nan=True)
            json_keys.append(key)
    if json_keys:
        group.attrs["json_keys"] = json.dumps(json_keys)


def _read_attrs(group, path, where: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    try:
        json_keys = set(json.loads(_as_str(group.attrs.get("json_keys", "[]"))))
    except (ValueError, TypeError) as e:
        raise ModelFileError(path, f"{where}: the json_keys attribute is not valid JSON ({e})") from None
    for key, value in group.attrs.items():
        if key == "json_keys":
            continue
        if key in json_keys:
            try:
                out[key] = json.loads(_as_str(value))
            except (ValueError, TypeError) as e:
                raise ModelFileError(path, f"{where}: attribute {key!r} is not valid JSON ({e})") from None
        else:
            out[key] = _attr_value(value)
    return out


def _as_str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _as_str(value.item())
    return str(value)


def _attr_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [_attr_value(v) for v in value.tolist()] if value.dtype.kind in "OSU" else value.tolist()
    return value


def software_versions() -> Dict[str, str]:
    """Versions of the software that wrote a file (TensorFlow is never imported for this)."""
    from importlib import metadata

    def dist_version(*names):
        for n in names:
            try:
                return metadata.version(n)
            except metadata.PackageNotFoundError:
                continue
        return ""

    from . import __version__
    tf = sys.modules.get("tensorflow")
    h5py = _h5py()
    return {
        "densehmm": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
        "tensorflow": getattr(tf, "__version__", "") or dist_version("tensorflow-cpu", "tensorflow"),
        "hmmlearn": dist_version("hmmlearn"),
    }


def _kind_of(model) -> str:
    if hasattr(model, "embeddings_") or type(model).__name__ == "DenseHMM":
        return "dense"
    return "standard"


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name or "/" in name or name in (".", "..") or name != name.strip():
        raise ValueError(f"invalid model name {name!r}: use a non-empty name without '/' or surrounding spaces")
    return name


# ------------------------------------------------------------- opening
def _open_existing(path, mode="r"):
    """Open a file that must be one of ours; raise ModelFileError otherwise."""
    h5py = _h5py()
    spath = os.fspath(path)
    if not os.path.exists(spath):
        raise ModelFileError(spath, "no such file")
    if os.path.isdir(spath):
        raise ModelFileError(spath, "is a folder, not a model file")
    try:
        is_h5 = h5py.is_hdf5(spath)
    except OSError as e:
        raise ModelFileError(spath, f"cannot be read ({e})") from None
    if not is_h5:
        raise ModelFileError(spath, "is not an HDF5 file (a densehmm model file is HDF5)")
    try:
        f = h5py.File(spath, mode)
    except OSError as e:
        raise ModelFileError(spath, f"is a damaged or unreadable HDF5 file ({e})") from None
    try:
        fmt = f.attrs.get("format")
        if fmt is None or _as_str(fmt) != FORMAT_NAME:
            raise ModelFileError(spath, f"is an HDF5 file but not a densehmm model file "
                                        f"(root attribute format={_as_str(fmt) if fmt is not None else 'missing'}, "
                                        f"expected {FORMAT_NAME!r})")
        version = f.attrs.get("schema_version")
        try:
            version = int(version)
        except (TypeError, ValueError):
            raise ModelFileError(spath, f"has an invalid schema_version attribute ({version!r})") from None
        if version > SCHEMA_VERSION:
            raise ModelFileError(spath, f"was written with schema version {version}, newer than this densehmm "
                                        f"reads (up to {SCHEMA_VERSION}); upgrade densehmm to read it")
        if version < 1:
            raise ModelFileError(spath, f"has an invalid schema_version {version}")
        if "models" not in f or not isinstance(f["models"], h5py.Group):
            raise ModelFileError(spath, "has no /models group")
    except Exception:
        f.close()
        raise
    return f


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


def _resolve_name(f, path, name: Optional[str]) -> str:
    names = list(f["models"].keys())
    if not names:
        raise ModelFileError(path, "holds no models")
    if name is None:
        if len(names) > 1:
            raise ModelFileError(path, f"holds {len(names)} models ({', '.join(names)}); choose one by name")
        return names[0]
    if name not in names:
        raise ModelFileError(path, f"has no model named {name!r} (it holds: {', '.join(names)})")
    return name


# --------------------------------------------------------------- saving
def _model_arrays(model, params: Optional[Mapping[str, Any]]) -> Dict[str, np.ndarray]:
    params = dict(params or {})
    out = {}
    for key in MATRICES:
        v = params.get(key)
        if v is None:
            v = getattr(model, key + "_", None)
        if v is None:
            raise ValueError(f"the model has no {key} yet: fit it (or set its parameters) before saving")
        out[key] = np.asarray(v)
    if _kind_of(model) == "dense":
        emb = dict(getattr(model, "embeddings_", None) or {})
        for key in EMBEDDINGS:
            v = params.get(key, emb.get(key))
            if v is None:
                raise ValueError(f"the dense model has no embedding {key} yet")
            out["embeddings/" + key] = np.asarray(v)
    return out


def _write_history(group, history: List[Mapping[str, Any]]) -> None:
    h5py = _h5py()
    columns: List[str] = []
    for rec in history:
        for k in rec:
            if k not in columns:
                columns.append(str(k))
    group.attrs["columns"] = json.dumps(columns)
    group.attrs["n_records"] = np.int64(len(history))
    for col in columns:
        mask = np.zeros(len(history), dtype=np.int8)
        vals = []
        for i, rec in enumerate(history):
            if col not in rec:
                mask[i] = _ABSENT
                vals.append(None)
            elif rec[col] is None:
                mask[i] = _NONE
                vals.append(None)
            else:
                v = rec[col]
                vals.append(v.item() if isinstance(v, np.generic) else v)
        present = [v for v in vals if v is not None]
        encoding = None
        if present and all(isinstance(v, bool) for v in present):
            data = np.array([bool(v) if v is not None else False for v in vals], dtype=bool)
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            data = np.array([v if v is not None else 0 for v in vals], dtype=np.int64)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            data = np.array([float(v) if v is not None else np.nan for v in vals], dtype=np.float64)
        elif all(isinstance(v, str) for v in present):
            data = np.array([v if v is not None else "" for v in vals], dtype=object)
        else:
            encoding = "json"
            data = np.array([json.dumps(v, default=_json_default) if v is not None else "" for v in vals],
                            dtype=object)
        if data.dtype == object:
            ds = group.create_dataset(col, data=data, dtype=h5py.string_dtype("utf-8"))
        else:
            ds = group.create_dataset(col, data=data)
        if encoding:
            ds.attrs["encoding"] = encoding
        if mask.any():
            ds.attrs["missing"] = mask


def _write_model(mg, model, arrays: Dict[str, np.ndarray], *, corpus, test_corpus, metrics,
                 extra_attrs: Mapping[str, Any]) -> None:
    h5py = _h5py()
    kind = _kind_of(model)
    n = int(arrays["transmat"].shape[0])
    m = int(arrays["emissionprob"].shape[1])
    attrs = {
        "kind": kind,
        "class": type(model).__name__,
        "n_states": n,
        "n_symbols": m,
        "created_utc": _utc_now(),
        "stop_reason": str(getattr(model, "stop_reason_", "") or ""),
    }
    if kind == "dense":
        attrs["dim"] = int(arrays["embeddings/V"].shape[1])
    fit_method = getattr(model, "fit_method", None)
    attrs["fit_method"] = str(fit_method) if fit_method is not None else ("baum-welch" if kind == "standard" else "")
    seed = getattr(model, "seed", None)
    if seed is not None:
        attrs["seed"] = seed
    seed_used = getattr(model, "seed_used_", None)
    if seed_used is not None:
        attrs["seed_used"] = seed_used
    start_mode = getattr(model, "start_mode_", None)
    if isinstance(start_mode, str):
        attrs["start_mode"] = start_mode
    device = getattr(model, "device_used_", None)
    attrs["device_used"] = "" if device is None else str(device)
    try:
        attrs["n_parameters"] = int(model.n_parameters)
    except Exception:  # an estimator that cannot count its parameters yet
        pass
    attrs.update(extra_attrs)
    _write_attrs(mg, attrs)

    for key, arr in arrays.items():
        kw = {}
        if arr.size >= 4096:
            kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True}
        mg.create_dataset(key, data=arr, **kw)
    mg["startprob"].attrs["description"] = "initial state distribution pi[i]"
    mg["transmat"].attrs["description"] = "transition matrix A[i, j] = P(state j at t+1 | state i at t)"
    mg["emissionprob"].attrs["description"] = "emission matrix B[i, k] = P(symbol k | state i)"
    if kind == "dense":
        eg = mg["embeddings"]
        eg.attrs["description"] = ("A = softmax(Z U^T) row-wise, B = softmax(W V^T) row-wise, "
                                   "pi = softmax(U z_start) (cooc fits store the stationary pi in startprob)")

    vocab = getattr(model, "vocabulary", None)
    if vocab is None and corpus is not None:
        vocab = getattr(corpus, "vocabulary", None)
    if vocab is not None:
        vocab = [str(s) for s in vocab]
        if len(vocab) != m:
            raise ValueError(f"the vocabulary has {len(vocab)} symbols but the model has {m}")
        mg.create_dataset("vocabulary", data=np.array(vocab, dtype=object), dtype=h5py.string_dtype("utf-8"))

    cfg = {}
    get_config = getattr(model, "get_config", None)
    if callable(get_config):
        cfg = get_config()
    cg = mg.create_group("config", track_order=True)
    _write_attrs(cg, dict(cfg))

    hg = mg.create_group("history", track_order=True)
    _write_history(hg, list(getattr(model, "history_", None) or []))

    metg = mg.create_group("metrics", track_order=True)
    _write_attrs(metg, dict(metrics or {}))

    for gname, corp in (("provenance", corpus), ("provenance_test", test_corpus)):
        if corp is None:
            continue
        prov = dict(getattr(corp, "provenance", None) or {})
        seqs = getattr(corp, "sequences", None)
        if seqs is not None:
            prov.setdefault("n_sequences", len(seqs))
            prov.setdefault("n_tokens", int(sum(len(s) for s in seqs)))
        voc = getattr(corp, "vocabulary", None)
        if voc is not None:
            prov.setdefault("n_symbols", len(voc))
        pg = mg.create_group(gname, track_order=True)
        _write_attrs(pg, prov)

    sg = mg.create_group("software", track_order=True)
    _write_attrs(sg, software_versions())


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_rewrite(path, write_fn) -> None:
    """Write a new version of ``path``: temp file in the same folder, fsync, os.replace."""
    h5py = _h5py()
    spath = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(spath)
    if not os.path.isdir(folder):
        raise ModelFileError(spath, f"the folder {folder} does not exist")
    old = None
    if os.path.exists(spath):
        old = _open_existing(spath)  # refuses foreign/newer files: never replace what we cannot read
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(spath) + ".", suffix=".tmp")
    except OSError as e:
        if old is not None:
            old.close()
        raise ModelFileError(spath, f"cannot write in {folder} ({e.strerror or e})") from None
    os.close(fd)
    try:
        try:
            with h5py.File(tmp, "w", track_order=True) as f:
                f.attrs["format"] = FORMAT_NAME
                f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
                f.attrs["writer"] = "densehmm " + software_versions()["densehmm"]
                f.attrs["modified_utc"] = _utc_now()
                f.attrs["description"] = ("Hidden Markov models written by DenseHMM Studio; "
                                          "one group per model under /models (see docs/FILE_FORMAT.md)")
                models = f.create_group("models", track_order=True)
                write_fn(old, models)
                f.flush()
        finally:
            if old is not None:
                old.close()
                old = None
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if os.path.exists(spath):
            mode = stat.S_IMODE(os.stat(spath).st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, spath)
        _fsync_dir(folder)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and not isinstance(e, ModelFileError):
            raise ModelFileError(spath, f"could not be written ({e}); the previous file is unchanged") from e
        raise


def save_model(path, model, name: Optional[str] = None, corpus: Any = None, *, test_corpus: Any = None,
               metrics: Optional[Mapping[str, Any]] = None, overwrite: bool = False,
               params: Optional[Mapping[str, Any]] = None) -> str:
    """Save a fitted model into an HDF5 file (atomically; other models in the file are kept).

    Parameters
    ----------
    path : str or path-like
        The file; created if missing.  An existing file must be a densehmm model file.
    model : StandardHMM or DenseHMM
        A model with parameters (fitted or set).
    name : str, optional
        Group name of the model in the file.  Default: ``"<kind>_<k>"`` with the
        first unused ``k`` (so saving twice adds a second model).
    corpus : Corpus, optional
        Training data: its provenance and sizes are stored (and its vocabulary
        when the model has none).
    test_corpus : Corpus, optional
        Evaluation data: its provenance is stored as ``provenance_test``.
    metrics : dict, optional
        Final metrics (floats), stored as attributes of ``metrics``.
    overwrite : bool
        Replace a model of the same name (in place, keeping the order).  Without
        it an existing name raises :class:`ModelFileError`.
    params : dict, optional
        Arrays to store instead of the model's current ones (keys ``startprob``,
        ``transmat``, ``emissionprob`` and for dense models ``U, Z, W, V, z_start``),
        e.g. the ``params`` snapshot of a :class:`ProgressEvent` for checkpoints.

    Returns
    -------
    str
        The name the model was stored under.

    Raises
    ------
    ModelFileError
        The existing file is not a readable densehmm model file, the name is taken, or the
        write failed (the previous file is then unchanged).
    ValueError
        The model has no parameters, or an invalid name.
    """
    spath = os.fspath(path)
    arrays = _model_arrays(model, params)
    kind = _kind_of(model)
    if name is not None:
        _check_name(name)
    chosen: Dict[str, str] = {}

    def write_fn(old, models):
        existing = list(old["models"].keys()) if old is not None else []
        new_name = name
        if new_name is None:
            k = 1
            while f"{kind}_{k}" in existing:
                k += 1
            new_name = f"{kind}_{k}"
        elif new_name in existing and not overwrite:
            raise ModelFileError(spath, f"already holds a model named {new_name!r} "
                                        f"(choose another name or overwrite it)")
        chosen["name"] = new_name
        wrote = False
        for old_name in existing:
            if old_name == new_name:
                mg = models.create_group(new_name, track_order=True)
                _write_model(mg, model, arrays, corpus=corpus, test_corpus=test_corpus, metrics=metrics,
                             extra_attrs={"name": new_name})
                wrote = True
            else:
                old.copy(old["models"][old_name], models, name=old_name)
        if not wrote:
            mg = models.create_group(new_name, track_order=True)
            _write_model(mg, model, arrays, corpus=corpus, test_corpus=test_corpus, metrics=metrics,
                         extra_attrs={"name": new_name})

    _atomic_rewrite(spath, write_fn)
    return chosen["name"]


def delete_model(path, name: str) -> None:
    """Remove one model from a file (atomically); the others are kept."""
    spath = os.fspath(path)

    def write_fn(old, models):
        names = list(old["models"].keys())
        if name not in names:
            raise ModelFileError(spath, f"has no model named {name!r} (it holds: {', '.join(names)})")
        for n in names:
            if n != name:
                old.copy(old["models"][n], models, name=n)

    if not os.path.exists(spath):
        raise ModelFileError(spath, "no such file")
    _atomic_rewrite(spath, write_fn)


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
        from .dense import DenseHMM
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
        from .standard import StandardHMM
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

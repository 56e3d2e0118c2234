"""Reading model files: validation, :func:`read_model_info`, :func:`load_model`, :func:`list_models`."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from . import safety
from ..maths import check_stochastic
from ..registry import migrate_config, model_class, model_from_config
from .schema import (_ABSENT, _EMBEDDING_ATOL, _NONE, _PRESENT, FORMAT_NAME, KINDS, MATRICES,
                     SCHEMA_VERSION, ModelFileError, _as_str, _h5py, _read_attrs)


# ------------------------------------------------------------- opening
def _open_existing(path, mode="r"):
    """Open a file that must be one of ours; raise ModelFileError otherwise.

    Only a regular file is opened (a FIFO or device would block or never end); the
    root must say ``format="densehmm-model"`` with an integral ``schema_version`` this
    code reads, and ``/models`` must be a group reached by a hard link.
    """
    import errno
    import stat

    h5py = _h5py()
    spath = os.fspath(path)
    try:
        st = os.stat(spath)
    except FileNotFoundError:
        if os.path.islink(spath):
            raise ModelFileError(spath, "no such file (a symbolic link to a missing file)") from None
        raise ModelFileError(spath, "no such file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ModelFileError(spath, "cannot be opened: a symbolic link loop") from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise ModelFileError(spath, "permission denied: the file (or a folder on its path) is not readable") \
                from None
        raise ModelFileError(spath, f"cannot be opened ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ModelFileError(spath, "is a folder, not a model file")
    if not stat.S_ISREG(st.st_mode):
        raise ModelFileError(spath, "is not a regular file (a FIFO, device or socket)")
    try:
        with open(spath, "rb"):
            pass
        safety.probe(spath, st, probe_read)  # damaged files can hang or crash HDF5: read them in a child first
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EPERM):
            raise ModelFileError(spath, "permission denied: the file is not readable") from None
        raise ModelFileError(spath, f"cannot be opened ({e.strerror or e})") from None
    try:
        is_h5 = h5py.is_hdf5(spath)
    except OSError as e:
        raise ModelFileError(spath, f"cannot be read ({e})") from None
    if not is_h5:
        raise ModelFileError(spath, "is not an HDF5 file (a densehmm model file is HDF5)")
    try:
        f = h5py.File(spath, mode)
    except (OSError, RuntimeError, ValueError) as e:
        raise ModelFileError(spath, f"is a damaged or unreadable HDF5 file ({_one_line(e)})") from None
    try:
        try:
            fmt = f.attrs.get("format")
            fmt_text = None if fmt is None else _as_str(fmt)
        except (OSError, RuntimeError, TypeError, ValueError) as e:  # UnicodeDecodeError is a ValueError
            raise ModelFileError(spath, f"is an HDF5 file but its format attribute cannot be read "
                                        f"({_one_line(e)})") from None
        if fmt_text != FORMAT_NAME:
            shown = "missing" if fmt_text is None else repr(fmt_text[:40])
            raise ModelFileError(spath, f"is an HDF5 file but not a densehmm model file "
                                        f"(root attribute format={shown}, expected {FORMAT_NAME!r})")
        try:
            version = f.attrs.get("schema_version")
        except (OSError, RuntimeError, TypeError, ValueError) as e:
            raise ModelFileError(spath, f"has an unreadable schema_version attribute ({_one_line(e)})") from None
        try:
            if isinstance(version, (bool, np.bool_, str, bytes)):
                raise TypeError
            fv = float(version)
            if not fv.is_integer():
                raise ValueError
            version = int(fv)
        except (TypeError, ValueError, OverflowError):
            raise ModelFileError(spath, f"has an invalid schema_version attribute ({str(version)[:40]}); "
                                        f"expected an integer") from None
        if version > SCHEMA_VERSION:
            raise ModelFileError(spath, f"was written with schema version {version}, newer than this densehmm "
                                        f"reads (up to {SCHEMA_VERSION}); upgrade densehmm to read it")
        if version < 1:
            raise ModelFileError(spath, f"has an invalid schema_version {version}")
        if "models" not in f:
            raise ModelFileError(spath, "has no /models group")
        if not isinstance(safety.child(f, "models", spath, "the file"), h5py.Group):
            raise ModelFileError(spath, "has no /models group")
    except Exception:
        f.close()
        raise
    return f


def _one_line(e: BaseException) -> str:
    """An exception's text on one line (HDF5's messages hold newlines)."""
    return " ".join(str(e).split())


def _resolve_name(f, path, name: Optional[str], names: Optional[List[str]] = None) -> str:
    names = list(f["models"].keys()) if names is None else names
    if not names:
        raise ModelFileError(path, "holds no models")
    if name is None:
        if len(names) > 1:
            raise ModelFileError(path, f"holds {len(names)} models ({', '.join(names)}); choose one by name")
        return names[0]
    if name not in names:
        raise ModelFileError(path, f"has no model named {name!r} (it holds: {', '.join(names)})")
    return name


def _isolated(fn):
    """Run the reader in a forked child (:func:`safety.run_isolated`): this process never opens
    the file with HDF5, which may hang or crash on damaged metadata."""
    import functools

    @functools.wraps(fn)
    def wrapper(path, *args, **kwargs):
        if not safety.probe_enabled():
            return fn(path, *args, **kwargs)
        return safety.run_isolated(path, lambda: fn(path, *args, **kwargs))
    return wrapper


@_isolated
def list_models(path) -> List[str]:
    """Names of the models stored in a file, in the order they were added.

    Raises
    ------
    ModelFileError
        The file is missing, not HDF5, not a densehmm model file, or too new.
    """
    def run():
        f = _open_existing(path)
        try:
            return list(f["models"].keys())
        finally:
            f.close()
    return _guard(path, run)


# -------------------------------------------------------------- loading
def _dataset(objs, path, where, key, shape, *, floating=True):
    """The dataset ``key`` of a (checked) model group, its shape and type checked (nothing read)."""
    h5py = _h5py()
    ds = objs.get(key)
    if ds is None:
        raise ModelFileError(path, f"{where}: dataset {key!r} is missing")
    if not isinstance(ds, h5py.Dataset):
        raise ModelFileError(path, f"{where}: {key!r} is not a dataset")
    if ds.shape != tuple(shape):
        raise ModelFileError(path, f"{where}: dataset {key!r} has shape {ds.shape}, expected {tuple(shape)}")
    if floating and ds.dtype.kind != "f":
        raise ModelFileError(path, f"{where}: dataset {key!r} has type {ds.dtype}, expected floating point")
    return ds


def _read_dataset(ds, path, where, key, *, floating=True):
    try:
        arr = ds[()]
    except (OSError, ValueError, RuntimeError) as e:
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
        check_stochastic(key, arr)
    except ValueError as e:
        raise ModelFileError(path, f"{where}: {e}") from None


def _check_softmax(path, where, key, rows, other, stored) -> None:
    """``stored`` must equal softmax(rows other^T) to 1e-6 (NaN from overflowing embeddings fails too)."""
    with np.errstate(over="ignore", invalid="ignore"):
        # softmax in one buffer (a 50,000-word model: 12.8 MB, where temporaries cost a third of the read)
        diff = 0.0
        if stored.size:
            work = rows @ other.T
            work -= np.max(work, axis=1, keepdims=True)
            np.exp(work, out=work)
            work /= np.sum(work, axis=1, keepdims=True)
            work -= stored
            np.abs(work, out=work)
            diff = np.max(work)
    if not (diff <= _EMBEDDING_ATOL):  # written so that NaN fails it
        why = "the embeddings overflow" if not np.isfinite(diff) else f"largest difference {float(diff):.3g}"
        name = {"transmat": "softmax(Z U^T)", "emissionprob": "softmax(W V^T)"}[key]
        raise ModelFileError(path, f"{where}: {key} does not match {name} of the stored embeddings ({why})")


def _positive_int(attrs, key, path, where):
    v = attrs.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
        raise ModelFileError(path, f"{where}: attribute {key!r} must be a positive integer, got {v!r}")
    return int(v)


def _history_columns(hg, path, where, objs=None):
    """(columns, n_records, datasets) of a history group, all checked against each other."""
    h5py = _h5py()
    objs = objs or {}
    try:
        columns = json.loads(_as_str(hg.attrs.get("columns", "[]")))
    except (ValueError, TypeError):
        raise ModelFileError(path, f"{where}: history/columns is not valid JSON") from None
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ModelFileError(path, f"{where}: history/columns is not a list of names")
    n = safety.history_rows(hg.attrs.get("n_records"), path, where)
    dss = {}
    for col in columns:
        ds = objs.get("history/" + col)
        if ds is None:
            if col not in hg:
                raise ModelFileError(path, f"{where}: history column {col!r} is missing")
            ds = safety.child(hg, col, path, f"{where}/history")
        if not isinstance(ds, h5py.Dataset):
            raise ModelFileError(path, f"{where}: history column {col!r} is missing")
        if ds.ndim != 1:
            raise ModelFileError(path, f"{where}: history column {col!r} is not one-dimensional")
        if n is None:
            n = safety.history_rows(ds.shape[0], path, where)
        if ds.shape[0] != n:
            raise ModelFileError(path, f"{where}: history column {col!r} has {ds.shape[0]} entries, expected {n}")
        if ds.dtype.kind not in "fiub" and h5py.check_string_dtype(ds.dtype) is None:
            raise ModelFileError(path, f"{where}: history column {col!r} has an unsupported type {ds.dtype}")
        dss[col] = ds
    return columns, n or 0, dss


def _read_history(hg, path, where, rows: Optional[int] = None, objs=None, columns_only: bool = False):
    """``(records, n_records)``; with ``rows=k`` only the first k and the last k records are read.

    ``columns_only``: ``records`` is instead ``{"columns": [...], "values": {column: values},
    "masks": {column: int8 array}}`` (:func:`history_records` turns it into the records): numeric
    columns stay numpy arrays, which cross a process boundary as raw buffers (a streamed read
    sends 1,000 records this way instead of walking 7,000 values one by one)."""
    h5py = _h5py()
    columns, n, dss = _history_columns(hg, path, where, objs)
    if rows is None or n <= 2 * rows:
        index = np.arange(n)
    else:
        index = np.concatenate([np.arange(rows), np.arange(n - rows, n)])
    safety.check_budget(path, where, len(index) * max(1, len(columns)) * safety.HISTORY_VALUE_BYTES,
                        f"its {n} history records")
    values: Dict[str, Any] = {}
    masks: Dict[str, np.ndarray] = {}
    for col, ds in dss.items():
        mask = ds.attrs.get("missing", None)
        mask = np.zeros(n, dtype=np.int8) if mask is None else np.asarray(mask)
        if mask.shape != (n,) or mask.dtype.kind not in "iu":
            raise ModelFileError(path, f"{where}: history column {col!r} has a mis-shaped 'missing' mask")
        mask = mask[index]
        part = ds[()] if len(index) == n else np.concatenate([ds[:rows], ds[n - rows:]])
        if ds.dtype.kind == "O" or h5py.check_string_dtype(ds.dtype) is not None:
            vals: Any = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in part.tolist()]
            if _as_str(ds.attrs.get("encoding", "")) == "json":
                vals = [json.loads(v) if mask[i] == _PRESENT else None for i, v in enumerate(vals)]
        else:
            vals = np.asarray(part)
        values[col], masks[col] = vals, mask.astype(np.int8, copy=False)
    cols = {"columns": list(dss), "values": values, "masks": masks, "length": len(index)}
    return (cols if columns_only else history_records(cols)), n


def history_records(cols: dict) -> List[dict]:
    """The records of a history read with ``columns_only`` (see :func:`_read_history`)."""
    names = cols["columns"]
    k = int(cols["length"])
    lists = []
    plain = True
    for col in names:
        vals, mask = cols["values"][col], np.asarray(cols["masks"][col])
        vals = vals.tolist() if isinstance(vals, np.ndarray) else list(vals)
        if len(vals) != k or mask.shape != (k,):
            raise ValueError(f"history column {col!r} has {len(vals)} values for {k} records")
        lists.append((vals, mask))
        plain = plain and not mask.any()
    if plain:  # nothing absent and no None: one dict per row, built in C
        return [dict(zip(names, row)) for row in zip(*(v for v, _m in lists))] if names else [{} for _ in range(k)]
    out = []
    for i in range(k):
        rec = {}
        for col, (vals, mask) in zip(names, lists):
            if mask[i] == _ABSENT:
                continue
            rec[col] = None if mask[i] == _NONE else vals[i]
        out.append(rec)
    return out


def _read_group_attrs(objs, key, path, where) -> Optional[dict]:
    h5py = _h5py()
    g = objs.get(key)
    if g is None:
        return None
    if not isinstance(g, h5py.Group):
        raise ModelFileError(path, f"{where}: {key!r} is not a group")
    return _read_attrs(g, path, f"{where}/{key}")


def _decoded(values: list) -> List[str]:
    """The UTF-8 strings of a string dataset's values (bytes; str where h5py decoded them).

    Decoded in one piece (50,000 words: 3 ms against 30 ms one by one), split at NUL, which
    HDF5's variable-length strings cannot hold; a fixed-length dataset whose values hold
    NULs gives more pieces than values and is decoded one by one."""
    try:
        out = b"\0".join(values).decode("utf-8").split("\0")
    except TypeError:  # some values are str
        out = []
    if len(out) == len(values):
        return out
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values]


def _read_adam(objs, path, where: str, size: int, with_arrays: bool) -> Optional[dict]:
    """The ``optimizer`` group: Adam's state of a DenseHMM-EM fit (``m``, ``v``: ``(size,)``, ``t``); without
    ``with_arrays`` ``m`` and ``v`` are their shapes (unread)."""
    attrs = _read_group_attrs(objs, "optimizer", path, where) or {}
    t = attrs.get("t")
    if attrs.get("method") != "adam" or isinstance(t, bool) or not isinstance(t, (int, float)) \
            or not (np.isfinite(t) and t >= 0):
        raise ModelFileError(path, f"{where}/optimizer: expected method 'adam' and a step count t >= 0, got "
                                   f"method {attrs.get('method')!r}, t {t!r}")
    dsets = {key: _dataset(objs, path, where, f"optimizer/{key}", (size,)) for key in ("m", "v")}
    if not with_arrays:
        return {"m": (size,), "v": (size,), "t": float(t)}
    safety.check_budget(path, where, 2 * 8 * size, f"its optimizer state ({size} parameters)")
    out: Dict[str, Any] = {key: _read_dataset(ds, path, where, f"optimizer/{key}") for key, ds in dsets.items()}
    if np.any(out["v"] < 0):
        raise ModelFileError(path, f"{where}: dataset 'optimizer/v' holds negative values")
    out["t"] = float(t)
    return out


def _read_strings(objs, path, where: str, key: str) -> list:
    """A 1-D dataset of distinct UTF-8 strings (e.g. the tag vocabulary)."""
    h5py = _h5py()
    ds = objs[key]
    if not isinstance(ds, h5py.Dataset) or len(ds.shape) != 1:
        raise ModelFileError(path, f"{where}: dataset {key!r} has shape {getattr(ds, 'shape', None)}, expected (k,)")
    if h5py.check_string_dtype(ds.dtype) is None:
        raise ModelFileError(path, f"{where}: dataset {key!r} does not hold strings")
    out = _decoded(ds[()].tolist())
    if len(set(out)) != len(out):
        raise ModelFileError(path, f"{where}: dataset {key!r} holds duplicate strings")
    return out


def _read_model_group(f, path, name, *, with_arrays=True, history=True, history_columns=False) -> dict:
    """Read and validate one model group into a plain dict.

    Every object of the group is checked first (links, storage, declared sizes; see
    :mod:`.safety`), then every dataset's shape against what the model's attributes
    allow, then the memory all of it needs, and only then is anything read.  With
    ``with_arrays=False`` the arrays are not read at all (only their shapes are
    returned); ``history`` is True (all records), False (none) or ``k`` (the first and
    last ``k``); ``history_length`` always holds the number of records.
    """
    h5py = _h5py()
    where = f"model {name!r}"
    mg, objs = safety.model_group(f, path, name)
    attrs = _read_attrs(mg, path, where)
    kind = attrs.get("kind")
    if kind not in KINDS:
        raise ModelFileError(path, f"{where}: attribute 'kind' must be one of {KINDS}, got {kind!r}")
    n = _positive_int(attrs, "n_states", path, where)
    m = _positive_int(attrs, "n_symbols", path, where)
    info: Dict[str, Any] = {"name": name, "attrs": attrs}
    shapes = {"startprob": (n,), "transmat": (n, n), "emissionprob": (n, m)}
    if kind == "dense":
        l = _positive_int(attrs, "dim", path, where)
        shapes.update({"embeddings/U": (n, l), "embeddings/Z": (n, l), "embeddings/W": (n, l),
                       "embeddings/V": (m, l), "embeddings/z_start": (l,)})
    dsets = {key: _dataset(objs, path, where, key, shape) for key, shape in shapes.items()}
    vocab_ds = objs.get("vocabulary")
    if vocab_ds is not None:
        if not isinstance(vocab_ds, h5py.Dataset) or vocab_ds.shape != (m,):
            raise ModelFileError(path, f"{where}: dataset 'vocabulary' has shape "
                                       f"{getattr(vocab_ds, 'shape', None)}, expected ({m},)")
        if h5py.check_string_dtype(vocab_ds.dtype) is None:
            raise ModelFileError(path, f"{where}: dataset 'vocabulary' does not hold strings")
    hist_group = objs.get("history")
    if hist_group is not None:
        if not isinstance(hist_group, h5py.Group):
            raise ModelFileError(path, f"{where}: 'history' is not a group")
    # What reading needs (float64 arrays, the softmax checks' temporaries, Python strings).
    need = 0
    if with_arrays:
        need += sum(8 * int(np.prod(s)) for s in shapes.values())
        if kind == "dense":
            need += 3 * 8 * (n * n + n * m)
    if vocab_ds is not None:
        need += m * safety.HISTORY_VALUE_BYTES
    safety.check_budget(path, where, need, f"its arrays (n={n}, m={m})")

    arrays: Dict[str, Any] = {}
    if with_arrays:
        for key, ds in dsets.items():
            arrays[key] = _read_dataset(ds, path, where, key)
        for key in MATRICES:
            _check_stochastic(arrays[key], path, where, key)
        if kind == "dense":
            U, Z, W, V = (arrays["embeddings/" + k] for k in "UZWV")
            _check_softmax(path, where, "transmat", Z, U, arrays["transmat"])
            _check_softmax(path, where, "emissionprob", W, V, arrays["emissionprob"])
    else:
        arrays = {key: tuple(ds.shape) for key, ds in dsets.items()}
    if kind == "dense" and "feature_vocabulary" in objs:  # symbol features (issue 14)
        fvocab = _read_strings(objs, path, where, "feature_vocabulary")
        fds = _dataset(objs, path, where, "embeddings/feature_V", (len(fvocab), l))
        arrays["embeddings/feature_V"] = _read_dataset(fds, path, where, "embeddings/feature_V") if with_arrays \
            else tuple(fds.shape)
        ds = objs.get("feature_index")
        if ds is None or not isinstance(ds, h5py.Dataset) or len(ds.shape) != 2 or ds.shape[1] != 2 \
                or ds.dtype.kind not in "iu":
            raise ModelFileError(path, f"{where}: dataset 'feature_index' must be an integer (k, 2) array")
        fidx = np.asarray(ds[()], dtype=np.int64)
        if fidx.size and (fidx.min() < 0 or fidx[:, 0].max() >= m or fidx[:, 1].max() >= len(fvocab)):
            raise ModelFileError(path, f"{where}: dataset 'feature_index' points outside the symbols or features")
        info["features"] = {"vocabulary": fvocab, "index": fidx}
    if kind == "dense" and "optimizer" in objs:
        n_feat = len(info["features"]["vocabulary"]) if "features" in info else 0
        info["adam_state"] = _read_adam(objs, path, where, l * (3 * n + m + 1 + n_feat), with_arrays)
    vocab = None
    if vocab_ds is not None:
        vocab = _decoded(vocab_ds[()].tolist())
        if len(set(vocab)) != len(vocab):
            raise ModelFileError(path, f"{where}: dataset 'vocabulary' holds duplicate symbols")
    info["vocabulary"] = vocab
    info["tag_vocabulary"] = _read_strings(objs, path, where, "tag_vocabulary") if "tag_vocabulary" in objs else None
    info["config"] = migrate_config(kind, _read_group_attrs(objs, "config", path, where) or {})
    info["metrics"] = _read_group_attrs(objs, "metrics", path, where) or {}
    info["provenance"] = _read_group_attrs(objs, "provenance", path, where)
    info["provenance_test"] = _read_group_attrs(objs, "provenance_test", path, where)
    info["software"] = _read_group_attrs(objs, "software", path, where) or {}
    info["notes"] = _read_group_attrs(objs, "notes", path, where) or {}
    if hist_group is None:
        info["history"], info["history_length"] = [], 0
    elif history is False:
        info["history"], info["history_length"] = [], _history_columns(hist_group, path, where, objs)[1]
    else:
        rows = None if history is True else int(history)
        info["history"], info["history_length"] = _read_history(hist_group, path, where, rows, objs,
                                                                columns_only=history_columns)
    info["arrays"] = arrays
    return info


def _guard(path, fn):
    """Turn low-level h5py/OS errors while reading into ModelFileError."""
    try:
        return fn()
    except ModelFileError:
        raise
    except MemoryError:
        raise ModelFileError(os.fspath(path), "too large: reading it ran out of memory") from None
    except (OSError, KeyError, RuntimeError, TypeError, ValueError, IndexError, AttributeError, OverflowError,
            RecursionError) as e:
        text = " ".join(str(e).split())
        raise ModelFileError(os.fspath(path), f"is damaged or unreadable ({type(e).__name__}: {text})") from None


@_isolated
def read_model_info(path, name: Optional[str] = None, *, arrays: bool = True, history: Any = True) -> dict:
    """Everything stored for one model, validated, as plain Python values and numpy arrays.

    Returns a dict with ``name``, ``attrs`` (kind, n_states, n_symbols, dim, fit_method, seed,
    device_used, created_utc, ...), ``arrays`` (``startprob``, ``transmat``, ``emissionprob``,
    ``embeddings/U`` ...; only their shapes (lists), unread and unchecked, when ``arrays=False``),
    ``vocabulary``, ``config``, ``history`` (all records; none with ``history=False``; the
    first and last ``k`` with ``history=k``), ``history_length``, ``metrics``, ``provenance``,
    ``provenance_test``, ``software``, ``notes`` and ``file`` (the root attributes).  No model
    object is built (so TensorFlow is never imported).  What is refused before anything is
    read: docs/FILE_FORMAT.md, "What a reader refuses".  The file is read in a forked child.
    """
    return _read_infos(path, [name], arrays, history)[0]


@_isolated
def read_model_infos(path, names: Optional[List[str]] = None, *, arrays: bool = True,
                     history: Any = True) -> List[dict]:
    """:func:`read_model_info` of several models (default: all, in file order) in one read."""
    return _read_infos(path, names, arrays, history)


def _read_infos(path, names, arrays, history) -> List[dict]:
    def run():
        spath = os.fspath(path)
        f = _open_existing(path)
        try:
            existing = list(f["models"].keys())
            chosen = existing if names is None else [_resolve_name(f, spath, n, existing) for n in names]
            root = _read_attrs(f, spath, "the root group")
            out = []
            for nm in chosen:
                info = _read_model_group(f, spath, nm, with_arrays=arrays, history=history)
                info["file"] = root
                if not arrays:
                    info["arrays"] = {k: list(v) for k, v in info["arrays"].items()}
                out.append(info)
            return out
        finally:
            f.close()
    return _guard(path, run)


def probe_read(path) -> None:
    """Read everything a reader or writer may touch (the probe of :func:`safety.probe` runs this)."""
    spath = os.fspath(path)
    f = _open_existing(spath)
    try:
        _read_attrs(f, spath, "the root group")
        for nm in list(f["models"].keys()):
            _read_model_group(f, spath, nm)
    finally:
        f.close()


def _summaries(f, spath: str) -> List[dict]:
    out = []
    for nm in f["models"].keys():
        mg = safety.model_group(f, spath, nm, check=False)
        a = _read_attrs(mg, spath, f"model {nm!r}")
        out.append({"name": nm, **{k: a.get(k) for k in
                                   ("kind", "n_states", "n_symbols", "dim", "fit_method", "created_utc")}})
    return out


@_isolated
def model_summaries(path) -> List[dict]:
    """One small dict per model (name, kind, n_states, n_symbols, dim, fit_method, created_utc)."""
    def run():
        f = _open_existing(path)
        try:
            return _summaries(f, os.fspath(path))
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
    return _rebuilt(spath, read_model_info(spath, name))


def load_models(path, names: Optional[List[str]] = None) -> List[tuple]:
    """``[(info, model)]`` of several models (default: all, in file order), read in ONE pass
    (:func:`read_model_infos`; one forked read instead of two per model): ``info`` as
    :func:`read_model_info` returns it, ``model`` as :func:`load_model` returns it."""
    spath = os.fspath(path)
    return [(info, _rebuilt(spath, info)) for info in read_model_infos(spath, names)]


def _rebuilt(spath: str, info: dict):
    try:
        return _build_model(spath, info)
    except ModelFileError:
        raise
    except (TypeError, ValueError) as e:
        raise ModelFileError(spath, f"model {info['name']!r} cannot be rebuilt ({e})") from None


def _stream(path, batch: int, max_parts: Optional[int] = None) -> Iterator[Any]:
    """The child's side of :class:`ModelStream`: the summaries, then the infos in parts."""
    spath = os.fspath(path)
    f = _guard(path, lambda: _open_existing(path))
    try:
        names, root, summaries = _guard(path, lambda: (list(f["models"].keys()),
                                                       _read_attrs(f, spath, "the root group"), _summaries(f, spath)))
        yield {"names": names, "summaries": summaries}
        if max_parts:
            batch = max(batch, -(-len(names) // max_parts))
        for start in range(0, len(names), batch):
            part = names[start:start + batch]

            def read(part=part):
                infos = [_read_model_group(f, spath, nm, history_columns=True) for nm in part]
                for info in infos:
                    info["file"] = root
                return infos
            yield _guard(path, read)
    finally:
        f.close()


class ModelStream:
    """Every model of a file in ONE forked read, streamed in parts (:func:`safety.run_isolated_iter`).

    Opening reads only the models' names and summaries (:attr:`names`, :attr:`summaries`, as
    :func:`model_summaries` returns them), so that a caller can refuse the file (too many
    models, too much memory) before it takes any array; then :meth:`parts` yields lists of
    ``(info, model)`` of up to ``batch`` models each (more where ``max_parts`` parts would not
    hold them all), in file order (``info`` and ``model`` as :func:`load_models` returns them).
    The child reads and checks the next part while this process rebuilds the models of the
    last one.  :meth:`close` (or leaving a ``with`` block) stops the read: the child is
    killed.  One fork for the whole file instead of one for the names, one for the summaries
    and one per part.
    """

    def __init__(self, path, batch: int = 8, max_parts: Optional[int] = None) -> None:
        self.path = os.fspath(path)
        self._items = safety.run_isolated_iter(self.path,
                                               lambda: _stream(self.path, max(1, int(batch)), max_parts))
        try:
            head = next(self._items)
        except StopIteration:
            raise ModelFileError(self.path, "is damaged: the reading process ended without an answer") from None
        except BaseException:
            self._items.close()
            raise
        self.names: List[str] = [str(n) for n in head["names"]]
        self.summaries: List[dict] = list(head["summaries"])

    def parts(self) -> Iterator[List[tuple]]:
        for infos in self._items:
            for info in infos:
                if isinstance(info.get("history"), dict):   # sent as columns (see _read_history)
                    try:
                        info["history"] = history_records(info["history"])
                    except (KeyError, TypeError, ValueError) as e:
                        raise ModelFileError(self.path, f"is damaged: model {info.get('name')!r}: its history "
                                                        f"could not be passed back ({e})") from None
            yield [(info, _rebuilt(self.path, info)) for info in infos]

    def close(self) -> None:
        self._items.close()

    def __enter__(self) -> "ModelStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
    adam = info.get("adam_state")
    if adam is not None and isinstance(adam["m"], np.ndarray):
        state["adam_state"] = adam
    model.set_arrays(state)
    model.vocabulary = info["vocabulary"]
    model.tag_vocabulary = info.get("tag_vocabulary")
    model.metrics_ = info["metrics"]
    model.provenance_ = info["provenance"]
    model.provenance_test_ = info["provenance_test"]
    model.model_name_ = info["name"]
    return model

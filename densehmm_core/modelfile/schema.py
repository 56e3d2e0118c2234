"""The model-file format: names and versions, the error type, attribute encoding, opening a file."""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
from typing import Any, Dict, Mapping, Optional

import numpy as np

from ..hmm_base import MATRIX_NAMES
from ..maths import EMBEDDING_NAMES
from ..registry import MODEL_KINDS

FORMAT_NAME = "densehmm-model"
#: 2: the model contract of issue 12 (config = constructor arguments, ``n_iter``,
#: ``cooc_steps``, ``mstep_steps``); version-1 configurations are migrated on read
#: (:func:`densehmm_core.registry.migrate_config`).
SCHEMA_VERSION = 2

KINDS = tuple(MODEL_KINDS)
MATRICES = MATRIX_NAMES
EMBEDDINGS = EMBEDDING_NAMES

# history mask values (the "missing" attribute of a history column)
_PRESENT, _NONE, _ABSENT = 0, 1, 2

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


class ModelNameTaken(ModelFileError):
    """:func:`save_model`: the file holds a model of that name, not written by this run (another run, or
    anything else); the caller may choose another name."""


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
    """A group's attributes as plain values; anything unreadable or of an unsupported type
    (opaque, references, compound, non-UTF-8 bytes) is a ModelFileError naming the attribute."""
    out: Dict[str, Any] = {}
    attrs = group.attrs  # one attribute manager for all of them (each ``group.attrs`` makes a new one)
    try:
        names = list(attrs.keys())
    except (OSError, RuntimeError, ValueError, TypeError) as e:
        raise ModelFileError(path, f"{where}: the attributes cannot be listed ({e})") from None
    try:
        raw_keys = attrs["json_keys"] if "json_keys" in names else "[]"
        json_keys = set(json.loads(_as_str(raw_keys)))
    except (ValueError, TypeError) as e:
        raise ModelFileError(path, f"{where}: the json_keys attribute is not valid JSON ({e})") from None
    for key in names:
        if key == "json_keys":
            continue
        try:
            value = attrs[key]
        except (OSError, RuntimeError, ValueError, TypeError, KeyError) as e:
            raise ModelFileError(path, f"{where}: attribute {key!r} cannot be read ({e})") from None
        try:
            if key in json_keys:
                out[key] = json.loads(_as_str(value))
            else:
                out[key] = _attr_value(value)
        except UnicodeDecodeError:
            raise ModelFileError(path, f"{where}: attribute {key!r} is not valid UTF-8 text") from None
        except _UnsupportedValue as e:
            raise ModelFileError(path, f"{where}: attribute {key!r} has an unsupported type ({e})") from None
        except (ValueError, TypeError, RecursionError) as e:
            raise ModelFileError(path, f"{where}: attribute {key!r} is not valid JSON ({e})") from None
    return out


class _UnsupportedValue(TypeError):
    """An attribute value that is not a number, a string or an array of them."""


def _as_str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _as_str(value.item())
    return str(value)


def _attr_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.void):
        raise _UnsupportedValue("opaque or compound data")
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biufcSU":
            raise _UnsupportedValue(str(value.dtype))
        if value.dtype.kind == "c":
            raise _UnsupportedValue("complex number")
        return value.item() if value.dtype.kind not in "SU" else _attr_value(value.item())
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OSU":
            return [_attr_value(v) for v in value.tolist()]
        if value.dtype.kind not in "biuf":
            raise _UnsupportedValue(f"array of {value.dtype}")
        return value.tolist()
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    raise _UnsupportedValue(type(value).__name__)


def software_versions() -> Dict[str, str]:
    """Versions of the software that wrote a file (TensorFlow is never imported for this)."""
    from .. import __version__
    from ..config import dist_version
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


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name or "/" in name or name in (".", "..") or name != name.strip():
        raise ValueError(f"invalid model name {name!r}: use a non-empty name without '/' or surrounding spaces")
    return name


# ------------------------------------------------------------- opening

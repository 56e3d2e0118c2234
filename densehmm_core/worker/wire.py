"""The worker protocol's wire format and schema: JSON + ``.npy`` buffers (never pickles),
plain data for models' inputs and events, and the checks every message passes.

Control messages (parent -> worker) are :data:`CONTROL_OPS`, replies (worker -> parent)
:data:`REPLY_OPS`; :func:`check_control` and :func:`check_reply` raise :class:`ValueError`
naming what is wrong with a message, which either side treats as a protocol error.
"""
from __future__ import annotations

import dataclasses
import io
import json
import struct
from typing import Any, List, Optional

import numpy as np

from ..events import ProgressEvent

__all__ = ["WorkerError", "encode_message", "encode_parts", "decode_message", "supports", "as_plain_sequences",
           "from_plain_sequences", "event_to_plain", "CONTROL_OPS", "REPLY_OPS", "HEARTBEAT_S",
           "check_control", "check_reply"]


class WorkerError(RuntimeError):
    """The worker process failed (an exception in the fit, or the process died).

    ``remote_traceback`` holds the worker's formatted traceback when there is one.
    """

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback


class WorkerUnreachable(WorkerError):
    """A fit's message could not be written to its worker: the process had ended before it read the
    message, so the fit never started there.  ``retry`` is True when a new process may take the
    fit: this one had run (it said so) and ended without refusing a message (killed or crashed
    while idle).  It is False when it refused a message (a protocol error: the same message
    would fail again) or never started (a start that fails fails again: the error says why).
    :meth:`~densehmm_core.worker.WorkerPool.iter_fit_on` sends the fit once more only when True."""

    def __init__(self, message: str, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = bool(retry)


# ---------------------------------------------------------------- wire format
_MAGIC = b"DHW1"


def encode_message(msg: Any) -> bytes:
    """Encode plain data (dict with str keys, list, tuple, str, int, float, bool, None,
    numpy scalars and numeric arrays) as JSON + ``.npy`` buffers; never pickles."""
    return b"".join(encode_parts(msg))


def encode_parts(msg: Any) -> List[Any]:
    """:func:`encode_message` as a list of buffers (whose concatenation it is): the arrays'
    memory itself, not copied, for writing to a file or pipe piece by piece."""
    arrays: List[np.ndarray] = []

    def enc(o):
        if isinstance(o, np.ndarray):
            if o.dtype.hasobject:
                raise TypeError("object arrays cannot be sent to a worker")
            arrays.append(o)
            return {"__nd__": len(arrays) - 1}
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, dict):
            if any(not isinstance(k, str) for k in o):
                raise TypeError("only str keys can be sent to a worker")
            if "__nd__" in o:
                raise TypeError("the key '__nd__' is reserved")
            return {k: enc(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            if all(type(v) is str for v in o):   # a vocabulary: JSON as it is (30,000 calls of enc cost 10 ms)
                return o
            return [enc(v) for v in o]
        if o is None or isinstance(o, (str, bool, int, float)):
            return o
        raise TypeError(f"{type(o).__name__} cannot be sent to a worker")

    header = json.dumps(enc(msg), allow_nan=True).encode("utf-8")
    parts: List[Any] = [_MAGIC + struct.pack("<QI", len(header), len(arrays)) + header]
    fmt = np.lib.format
    for a in arrays:
        a = a if a.flags.c_contiguous else np.ascontiguousarray(a)   # (ascontiguousarray makes 0-d 1-d)
        head = io.BytesIO()
        d = fmt.header_data_from_array_1_0(a)
        try:
            fmt.write_array_header_1_0(head, d)
        except ValueError:  # a header over 64 KiB (never for our shapes)
            fmt.write_array_header_2_0(head, d)
        parts.append(head.getvalue())
        parts.append(a.reshape(-1).view(np.uint8))
    return parts


def decode_message(data) -> Any:
    """Inverse of :func:`encode_message` (arrays come back with their dtype and shape).

    ``data``: bytes or any buffer (a ``memoryview`` of part of a larger answer is not copied;
    each array is copied out once, so the arrays own their memory and are writable).
    Any malformed input raises :class:`ValueError` (never a memory bomb: every array's
    declared size is checked against the bytes present before it is allocated).
    """
    try:
        return _decode(memoryview(data).cast("B"))
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - struct.error, UnicodeDecodeError, IndexError, KeyError, ...
        raise ValueError(f"malformed worker message ({type(exc).__name__}: {exc})") from None


def _decode(data: memoryview) -> Any:
    if bytes(data[:4]) != _MAGIC:
        raise ValueError("not a worker message")
    if len(data) < 16:
        raise ValueError("truncated worker message")
    hlen, narr = struct.unpack_from("<QI", data, 4)
    if 16 + hlen > len(data) or narr > len(data):
        raise ValueError("truncated worker message")
    pos = 16 + hlen
    arrays = []
    for _ in range(narr):
        arr, pos = _read_npy(data, pos)
        arrays.append(arr)

    def array_of(o: dict):  # called by the JSON parser for each object (no second walk of the tree)
        if len(o) == 1 and "__nd__" in o:
            i = o["__nd__"]
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(arrays):
                raise ValueError(f"array reference {i!r} out of range")
            return arrays[i]
        return o

    return json.loads(bytes(data[16:16 + hlen]).decode("utf-8"), object_hook=array_of)


def _read_npy(data: memoryview, pos: int) -> tuple:
    """The ``.npy`` buffer at ``data[pos:]``, its size checked before anything is allocated (no
    pickles); ``(array, position after it)``."""
    fmt = np.lib.format
    version = (data[pos + 6], data[pos + 7]) if len(data) >= pos + 8 else None
    if version == (1, 0):
        start = pos + 10 + struct.unpack_from("<H", data, pos + 8)[0]
    elif version == (2, 0):
        start = pos + 12 + struct.unpack_from("<I", data, pos + 8)[0]
    else:
        raise ValueError(f"unsupported array format version {version}")
    if start > len(data):
        raise ValueError("truncated array header")
    head = io.BytesIO(bytes(data[pos:start]))
    fmt.read_magic(head)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(head)
    else:
        shape, fortran, dtype = fmt.read_array_header_2_0(head)
    if dtype.hasobject:
        raise ValueError("object arrays are not accepted")
    count = 1
    for d in shape:
        count *= int(d)
    nbytes = count * dtype.itemsize
    left = len(data) - start
    if nbytes > left:
        raise ValueError(f"an array declares {nbytes} bytes but only {left} follow")
    arr = np.frombuffer(data[start:start + nbytes], dtype=dtype, count=count).copy()
    return arr.reshape(shape, order="F" if fortran else "C"), start + nbytes


# ------------------------------------------------------- model <-> plain data
def supports(model: Any) -> bool:
    """True for the models a worker can train: those of the registry
    (:func:`densehmm_core.model_from_config` rebuilds them from ``kind`` and ``get_config()``)."""
    from ..hmm_base import BaseHMM
    from ..registry import MODEL_KINDS, model_class
    return isinstance(model, BaseHMM) and model.kind in MODEL_KINDS and type(model) is model_class(model.kind)


def as_plain_sequences(data, n_symbols) -> Optional[dict]:
    """The sequences as what crosses to a worker: one int32 token array and the lengths (int64),
    checked as :func:`~densehmm_core.sequences.as_sequences` checks them.  A list of 1-D integer
    arrays (a Corpus's) is joined and checked at once with numpy: checking the Brown corpus's
    57,340 sentences one by one kept a thread of the app's process busy in Python for 0.3 s, which
    the window felt (the GIL); a :class:`~densehmm_core.data.Corpus` gives its tokens joined already
    (:attr:`~densehmm_core.data.Corpus.tokens`).  Anything else, or any problem, goes through
    ``as_sequences``, whose message names the sequence at fault."""
    if data is None:
        return None
    from ..data.corpus import Corpus
    from ..sequences import as_sequences
    if isinstance(data, Corpus):   # joined once and kept by the Corpus (the app joins it when it is read)
        tokens, lengths = data.tokens, data.lengths
        if tokens.ndim == 1 and tokens.size == int(lengths.sum()) and tokens.size and lengths.min() >= 1 \
                and tokens.min() >= 0 and (n_symbols is None or tokens.max() < int(n_symbols)):
            return {"tokens": tokens, "lengths": lengths}
    seqs = data.sequences if hasattr(data, "sequences") and not isinstance(data, np.ndarray) else data
    if isinstance(seqs, list) and seqs and all(type(s) is np.ndarray for s in seqs):
        try:
            tokens = np.concatenate(seqs)
        except ValueError:      # arrays of different dimensions
            tokens = None
        if tokens is not None and tokens.ndim == 1 and tokens.dtype.kind in "iu" and tokens.size:
            lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
            lo, hi = int(tokens.min()), int(tokens.max())
            if lengths.min() >= 1 and lo >= 0 and (n_symbols is None or hi < int(n_symbols)):
                return {"tokens": tokens.astype(np.int32, copy=False), "lengths": lengths}
    seqs = as_sequences(data, n_symbols=n_symbols)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    tokens = np.concatenate(seqs).astype(np.int32, copy=False) if len(seqs) else np.zeros(0, np.int32)
    return {"tokens": tokens, "lengths": lengths}


def from_plain_sequences(d: Optional[dict]):
    if d is None:
        return None
    lengths = np.asarray(d["lengths"], dtype=np.int64)
    return np.split(np.asarray(d["tokens"]), np.cumsum(lengths)[:-1]) if len(lengths) else []


def event_to_plain(ev: ProgressEvent, with_params: bool) -> dict:
    d = {f.name: getattr(ev, f.name) for f in dataclasses.fields(ev)}
    if not with_params:
        d["params"] = None
    return d


# ---------------------------------------------------------------- protocol
#: control messages the worker accepts (parent -> worker)
CONTROL_OPS = ("fit", "cancel", "stop", "warm")
#: replies the parent accepts (worker -> parent)
REPLY_OPS = ("event", "end", "warm", "tensorflow", "alive", "cancel_ack", "protocol_error")
#: seconds between the worker's "alive" messages (so a stopped or hung worker is noticed)
HEARTBEAT_S = 0.5


def check_control(msg: Any) -> dict:
    """A control message as the worker expects it; ValueError naming what is wrong."""
    from ..registry import MODEL_KINDS
    if not isinstance(msg, dict):
        raise ValueError(f"a control message must be an object, not {type(msg).__name__}")
    op = msg.get("op")
    if op not in CONTROL_OPS:
        raise ValueError(f"unknown control message {op!r}")
    if op in ("fit", "cancel"):
        job = msg.get("job")
        if not isinstance(job, int) or isinstance(job, bool):
            raise ValueError(f"{op} message without a job number")
    if op == "fit":
        if msg.get("kind") not in MODEL_KINDS:
            raise ValueError(f"fit message with an unknown model kind {msg.get('kind')!r}")
        if not isinstance(msg.get("config"), dict):
            raise ValueError("fit message without a config object")
        train = msg.get("train")
        if not (isinstance(train, dict) and isinstance(train.get("tokens"), np.ndarray)
                and isinstance(train.get("lengths"), np.ndarray)):
            raise ValueError("fit message without training sequences")
        threads = msg.get("threads")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"fit message with a thread budget that is not a whole number >= 1: {threads!r}")
    return msg


def _check_tf_info(msg: dict) -> None:
    """The TensorFlow report of a "warm" or "tensorflow" reply: ``tf_version`` (a non-empty
    string) and ``devices`` (objects whose "name", "type" and "spec" are strings)."""
    version, devices = msg.get("tf_version"), msg.get("devices")
    if not isinstance(version, str) or not version:
        raise ValueError(f"{msg['op']} reply without TensorFlow's version")
    if not isinstance(devices, list) or not all(
            isinstance(d, dict) and all(isinstance(d.get(k), str) for k in ("name", "type", "spec"))
            for d in devices):
        raise ValueError(f"{msg['op']} reply with a bad device list")


def check_reply(msg: Any) -> dict:
    """A worker's reply as the parent expects it; ValueError naming what is wrong."""
    if not isinstance(msg, dict):
        raise ValueError(f"a reply must be an object, not {type(msg).__name__}")
    op = msg.get("op")
    if op not in REPLY_OPS:
        raise ValueError(f"unknown reply {op!r}")
    if op in ("event", "end") and "job" in msg:
        job = msg["job"]
        if not isinstance(job, int) or isinstance(job, bool):
            raise ValueError(f"{op} reply with a bad job number {job!r}")
    if op == "event":
        ev = msg.get("event")
        if not isinstance(ev, dict):
            raise ValueError("event reply without an event")
        try:
            msg["event"] = ProgressEvent(**ev)
        except TypeError as exc:
            raise ValueError(f"bad event ({exc})") from None
        if not isinstance(msg["event"].step, int) or not isinstance(msg["event"].metrics, dict):
            raise ValueError("bad event (step or metrics of the wrong type)")
        if msg["event"].params is not None and not isinstance(msg["event"].params, dict):
            raise ValueError("bad event (params is not an object)")
    elif op == "end":
        outcome = msg.get("outcome")
        if outcome not in ("done", "diverged", "failed"):
            raise ValueError(f"end reply with an unknown outcome {outcome!r}")
        if outcome != "failed" and not isinstance(msg.get("state"), dict):
            raise ValueError("end reply without the model's state")
    elif op == "tensorflow":
        _check_tf_info(msg)
    elif op == "warm":
        if "error" in msg:
            if not isinstance(msg["error"], str):
                raise ValueError("warm reply with a bad error")
        else:
            _check_tf_info(msg)
    return msg



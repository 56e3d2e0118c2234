"""Sessions: every finished job in one ``.h5`` file, so that a day's work survives a restart.

A session file is an ordinary model file (``densehmm info`` and File > Open read it): one
model group per job, written in ONE atomic replace by the core's
:func:`densehmm_core.modelfile.save_models` (locked; temporary file, fsync, rename) with the
model's history, its training data's provenance, its final metrics, ``trained_utc`` = when
the job ended, and ``notes`` holding the job itself: name, form settings, sweep, state, stop
reason, run time, device, scores, and the data set it trained on (file, split, seed,
reading and preprocessing options).

Opening one (:func:`load_session`) treats the file as hostile: the core's reader refuses
links, external storage, virtual datasets and size bombs and reads in a forked, memory-capped,
time-limited child (docs/FILE_FORMAT.md); here the job count and the memory all jobs need
together are checked before any array is read, and every field of every job's notes is
checked against :data:`NOTES_SCHEMA` (types, ranges, string sizes): the first bad field is
reported (:class:`SessionError`) and nothing is restored.  Stored data-file paths are only
validated and returned; reading them again is the window's decision (after the user
confirms).  No Qt here.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["SESSION_KEY", "VERSION", "MAX_JOBS", "MAX_NAME", "MAX_TEXT", "MAX_PATH", "SessionError",
           "SessionCancelled", "DataRef", "SessionJob", "Session", "session_notes", "save_session",
           "load_session", "is_session_info", "recorded_training_time", "validate_notes", "NOTES_SCHEMA",
           "tagging_record", "tagging_scores_of"]

#: ``notes`` key that marks a model group as a session entry (value: format version)
SESSION_KEY = "app_session"
#: the version this app writes and the newest it reads (2: a words job's tagging scores, ``tagging``;
#: 3: the demo marked in its data set, ``dataset.demo``: a data set without a path is the demo only then)
VERSION = 3
#: the name of the app's demo data set (:func:`app.datasets.demo_dataset`): in a session of version 2
#: or older, a data set without a path is the demo only under this name (a path the writer refused
#: was stored as none too)
DEMO_NAME_PREFIX = "Demo: synthetic HMM"
#: most jobs a session may hold (a file declaring more is refused before anything is read)
MAX_JOBS = 2000
#: longest job, sweep, data-set and device name (characters)
MAX_NAME = 1000
#: longest free text (stop reason, score text)
MAX_TEXT = 10_000
#: longest stored data-file path
MAX_PATH = 4096
#: most entries of a dict field (scores, options)
MAX_ENTRIES = 64
#: jobs per part of the (one, forked) read: progress and cancel between parts; the reading
#: process reads the next part while this one rebuilds the models of the last
BATCH = 4


class SessionError(ValueError):
    """A session file that cannot be restored; the message names the file, the job and the field."""

    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}")


class SessionCancelled(Exception):
    """The user cancelled opening a session (nothing was restored)."""


class _Bad(ValueError):
    """One field failed its check: ``field`` (dotted path) and ``problem``."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"field {field!r} {problem}")


# ------------------------------------------------------------------ field checks
def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text):,} characters)"


def _text(limit: int, *, empty: bool = True, choices: Optional[Tuple[str, ...]] = None):
    def check(v, field):
        if not isinstance(v, str):
            raise _Bad(field, f"must be text, got {_shown(v)}")
        if len(v) > limit:
            raise _Bad(field, f"is {len(v):,} characters long (at most {limit:,})")
        if not empty and not v.strip():
            raise _Bad(field, "is empty")
        if any(ord(c) < 32 and c not in "\t\n" for c in v):
            raise _Bad(field, "holds control characters")
        if choices is not None and v not in choices:
            raise _Bad(field, f"must be one of {', '.join(choices)}, got {_shown(v)}")
        return v
    return check


def _int(lo: int, hi: int):
    def check(v, field):
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Bad(field, f"must be an integer, got {_shown(v)}")
        if not lo <= v <= hi:
            raise _Bad(field, f"must be between {lo} and {hi}, got {v}")
        return v
    return check


def _number(lo: float, hi: float):
    def check(v, field):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Bad(field, f"must be a number, got {_shown(v)}")
        if not (lo <= v <= hi):  # NaN fails it
            raise _Bad(field, f"must be a number between {lo:g} and {hi:g}, got {v!r}")
        return float(v)
    return check


def _bool(v, field):
    if not isinstance(v, bool):
        raise _Bad(field, f"must be true or false, got {_shown(v)}")
    return v


def _optional(check):
    def opt(v, field):
        return None if v is None else check(v, field)
    return opt


def _scalar(v, field):
    """A plain setting: None, true/false, a finite number or a short text."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return _int(-2 ** 63, 2 ** 63 - 1)(v, field)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _Bad(field, f"must be a finite number, got {v!r}")
        return v
    return _text(MAX_NAME)(v, field)


def _mapping(v, field) -> dict:
    if not isinstance(v, dict):
        raise _Bad(field, f"must be a mapping, got {_shown(v)}")
    if len(v) > MAX_ENTRIES:
        raise _Bad(field, f"has {len(v)} entries (at most {MAX_ENTRIES})")
    return v


def _scores(v, field):
    out = {}
    for k, x in _mapping(v, field).items():
        _text(64, empty=False)(k, f"{field} key")
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise _Bad(f"{field}.{k}", f"must be a number, got {_shown(x)}")
        out[k] = float(x)   # -inf is a score (an impossible sequence)
    return out


def _spec(v, field):
    """The model form's settings (``ModelSpec.to_dict()``): the model type one of the core's, the
    sizes integers, every option of the form checked against its estimator's metadata (type, range,
    choices); settings this version does not know (an older or newer form's) must be plain values
    and are mapped or dropped by ``ModelSpec.from_dict``."""
    from densehmm_core import hyperparams

    from .modelspec import ModelSpec, form_params, type_labels
    params = dict(form_params())
    out = {}
    for k, x in _mapping(v, field).items():
        _text(64, empty=False)(k, f"{field} key")
        f = f"{field}.{k}"
        if k == "model_type":
            out[k] = _text(64, choices=tuple(type_labels()))(x, f)
        elif k in ("n", "l", "seed"):
            out[k] = _int(0, 2 ** 31 - 1)(x, f)
        elif k in params:
            hp = next(iter(params[k].values()))
            if hp.type is bool:
                x = _bool(x, f)
            elif hp.type is int:
                x = _optional(_int(-2 ** 63, 2 ** 63 - 1))(x, f)
            elif hp.type is float:
                x = _optional(_number(-math.inf, math.inf))(x, f)
            else:
                x = _optional(_text(64))(x, f)
            problem = hyperparams.check_value(hp, x)
            if problem:
                raise _Bad(f, problem)
            out[k] = x
        else:
            out[k] = _scalar(x, f)
    return ModelSpec.from_dict(out).to_dict() if out else {}


#: the data panel's preprocessing and split (``DataSet.options`` besides ``read``)
_OPTION_CHECKS: Dict[str, Callable] = {
    "split": _number(0.0, 1.0),
    "seed": _int(-2 ** 63, 2 ** 63 - 1),
    "preset": _optional(_text(64)),
    "subset": _optional(_int(0, 2 ** 63 - 1)),
    "subset_random": _bool,
    "chunk_length": _optional(_int(0, 2 ** 63 - 1)),
    "max_length": _optional(_int(0, 2 ** 63 - 1)),
    "min_length": _optional(_int(0, 2 ** 63 - 1)),
    "merge_below": _optional(_number(0.0, 1.0)),
    "dedupe": _bool,
}


def _read_options(v, field):
    """The reader options of the Observe group: names the core's readers know, plain values."""
    from densehmm_core.data import READER_DEFAULTS
    known = set().union(*READER_DEFAULTS.values())
    out = {}
    for k, x in _mapping(v, field).items():
        if k not in known:
            raise _Bad(f"{field}.{k}" if isinstance(k, str) and len(k) <= 64 else f"{field} key",
                       f"is not a reader option (known: {', '.join(sorted(known))})")
        out[k] = _scalar(x, f"{field}.{k}")
    return out


def _options(v, field):
    from densehmm_core.data import PRESETS
    out = {}
    for k, x in _mapping(v, field).items():
        f = f"{field}.{k}"
        if k == "read":
            out[k] = _read_options(x, f)
        elif k in _OPTION_CHECKS:
            out[k] = _OPTION_CHECKS[k](x, f)
            if k == "preset" and out[k] is not None and out[k] not in PRESETS:
                raise _Bad(f, f"is not a preset (known: {', '.join(PRESETS)})")
        else:
            raise _Bad(f if isinstance(k, str) and len(k) <= 64 else f"{field} key",
                       f"is not a data-set option (known: {', '.join(sorted(_OPTION_CHECKS))}, read)")
    return out


def _path(v, field):
    p = _text(MAX_PATH, empty=False)(v, field)
    if not os.path.isabs(p):
        raise _Bad(field, f"must be an absolute path, got {_shown(p)}")
    return os.path.normpath(p)


def _dataset(v, field):
    d = _mapping(v, field)
    for k in d:
        if k not in ("name", "path", "options", "demo"):
            raise _Bad(f"{field}.{k}" if isinstance(k, str) and len(k) <= 64 else f"{field} key",
                       "is not a data-set field (name, path, options, demo)")
    name = _text(MAX_NAME)(d.get("name", ""), f"{field}.name")
    path = _optional(_path)(d.get("path"), f"{field}.path")
    if "demo" in d:          # version 3 and later: the demo is marked
        demo = _bool(d["demo"], f"{field}.demo")
        if demo and path is not None:
            raise _Bad(f"{field}.demo", "is true for a data set with a path (the demo has none)")
    else:                    # older sessions stored the demo as "no path", under the demo's name
        demo = path is None and name.startswith(DEMO_NAME_PREFIX)
    return DataRef(name=name, path=path, options=_options(d.get("options") or {}, f"{field}.options"), demo=demo)


#: largest state x tag table a session's tagging scores may hold (cells)
MAX_TAG_CELLS = 4_000_000
#: the score fields of a stored tagging result (:func:`densehmm_core.metrics.tagging_scores`)
TAG_FIELDS = ("m1", "one_to_one", "v_measure")


def _index_list(v, field, n: int, hi: int) -> List[int]:
    if not isinstance(v, list) or len(v) != n:
        raise _Bad(field, f"must be a list of {n} integers, got {_shown(v)}")
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, int) or not -1 <= x < hi:
            raise _Bad(f"{field}[{i}]", f"must be an integer in -1..{hi - 1}, got {_shown(x)}")
    return v


def _tagging(v, field):
    """A words job's tagging scores against gold tags (the Tags tab, the states' mapped tags), with the
    digest of the tokens scored (``key``): shown at once when the job is, on the same data."""
    d = _mapping(v, field)
    for k in d:
        if k not in ("key", "contingency", "mapping", "one_to_one_mapping", "n_tokens") + TAG_FIELDS:
            raise _Bad(f"{field}.{_shown(k)}", "is not a tagging field")
    for k in ("key", "contingency", "mapping", "n_tokens") + TAG_FIELDS:
        if k not in d:
            raise _Bad(f"{field}.{k}", "is missing")
    key = _text(64, empty=False)(d["key"], f"{field}.key")
    if not re.fullmatch(r"[0-9a-f]+", key):
        raise _Bad(f"{field}.key", f"must be a hex digest, got {_shown(key)}")
    table = d["contingency"]
    if not isinstance(table, list) or not table or not isinstance(table[0], list) or not table[0]:
        raise _Bad(f"{field}.contingency", f"must be a non-empty table (list of rows), got {_shown(table)}")
    n, k = len(table), len(table[0])
    if n * k > MAX_TAG_CELLS:
        raise _Bad(f"{field}.contingency", f"has {n} x {k} cells (at most {MAX_TAG_CELLS:,})")
    for i, row in enumerate(table):
        if not isinstance(row, list) or len(row) != k or \
                any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in row):
            raise _Bad(f"{field}.contingency[{i}]", f"must be {k} counts (integers >= 0)")
    out = {"key": key, "contingency": table, "mapping": _index_list(d["mapping"], f"{field}.mapping", n, k),
           "n_tokens": _int(0, 2 ** 62)(d["n_tokens"], f"{field}.n_tokens")}
    if "one_to_one_mapping" in d:
        out["one_to_one_mapping"] = _index_list(d["one_to_one_mapping"], f"{field}.one_to_one_mapping", n, k)
    for name in TAG_FIELDS:
        out[name] = _number(0.0, 1.0)(d[name], f"{field}.{name}")
    return out


#: every field of a session entry's notes: name -> (required, check)
NOTES_SCHEMA: Dict[str, Tuple[bool, Callable]] = {
    SESSION_KEY: (True, _int(1, 2 ** 31 - 1)),
    "job_name": (True, _text(MAX_NAME, empty=False)),
    "spec": (False, _optional(_spec)),
    "sweep": (False, _optional(_text(MAX_NAME, empty=False))),
    "state": (False, _text(16, choices=("finished", "cancelled", "diverged"))),
    "reason": (False, _text(MAX_TEXT)),
    "elapsed_s": (False, _number(0.0, 1e9)),
    "step": (False, _optional(_int(0, 2 ** 31 - 1))),
    "total": (False, _optional(_int(1, 2 ** 31 - 1))),
    "device": (False, _text(100)),
    "scores": (False, _scores),
    "score_text": (False, _text(MAX_TEXT)),
    "dataset": (False, _optional(_dataset)),
    "tagging": (False, _optional(_tagging)),     # since version 2
}


def validate_notes(notes: dict) -> dict:
    """The checked values of a session entry's notes (:data:`NOTES_SCHEMA`); raises ValueError
    ``field 'x' ...`` naming the first bad field."""
    version = notes.get(SESSION_KEY)
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise _Bad(SESSION_KEY, f"is {version}: the session was written by a newer DenseHMM Studio "
                                f"(this one reads up to {VERSION})")
    out = {}
    for key in notes:
        if key not in NOTES_SCHEMA:
            raise _Bad(key if len(key) <= 64 else key[:40] + "...", "is not a session field")
    for key, (required, check) in NOTES_SCHEMA.items():
        if key in notes:
            out[key] = check(notes[key], key)
        elif required:
            raise _Bad(key, "is missing")
    return out


# ------------------------------------------------------------------ what a session holds
@dataclasses.dataclass(frozen=True)
class DataRef:
    """The data set a job trained on: its name, its file and options; ``demo``: the app's demo
    (generated again, no file).  A data set that is not the demo and has no path had a file name the
    writer refused (a control character): its data are not available (the jobs are restored without)."""
    name: str
    path: Optional[str]
    options: dict
    demo: bool = False

    @property
    def available(self) -> bool:
        """Whether the data can be had again: the demo, or a file named by its path."""
        return self.demo or self.path is not None

    @property
    def key(self) -> tuple:
        """Jobs with the same key trained on the same data set."""
        return (self.path, self.demo, self.name if not self.available else "",
                repr(sorted(self.options.items(), key=lambda kv: kv[0])))


@dataclasses.dataclass
class SessionJob:
    """One job read back from a session file, every field checked."""
    group: str                  # the model group's name in the file
    model: Any
    name: str
    spec: dict
    sweep: Optional[str]
    state: str                  # finished | cancelled | diverged
    reason: str
    elapsed_s: Optional[float]  # None: not recorded (a plain model file's model)
    step: Optional[int]
    total: Optional[int]
    device: str
    scores: Dict[str, float]
    score_text: str
    dataset: Optional[DataRef]
    tagging: Optional[dict] = None   # checked tagging scores (see :func:`tagging_record`), or None


@dataclasses.dataclass
class Session:
    path: str
    jobs: List[SessionJob]

    def data_refs(self) -> List[DataRef]:
        """The distinct data sets of the jobs, in the order of their first job."""
        seen: Dict[tuple, DataRef] = {}
        for j in self.jobs:
            if j.dataset is not None:
                seen.setdefault(j.dataset.key, j.dataset)
        return list(seen.values())


def recorded_training_time(model: Any) -> Optional[float]:
    """How long ``model`` trained, as its history recorded it (the last record's ``elapsed``,
    seconds), or None when the history does not say (a model file from elsewhere)."""
    hist = getattr(model, "history_", None) or []
    v = hist[-1].get("elapsed") if hist and isinstance(hist[-1], dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        return None
    return float(v)


def is_session_info(info: dict) -> bool:
    """Whether a ``read_model_info`` dict is a session entry."""
    return SESSION_KEY in (info.get("notes") or {})


def _clip(text: Any, limit: int) -> str:
    text = "".join(c if ord(c) >= 32 or c in "\t\n" else " " for c in str(text or ""))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def session_notes(job, dataset: Any = None) -> dict:
    """The ``notes`` of a job's session entry (plain JSON-able values that pass
    :func:`validate_notes`: over-long texts are shortened)."""
    ds = dataset if dataset is not None else job.dataset
    ref = None
    if ds is not None and hasattr(ds, "options"):
        path = getattr(ds, "path", None)
        demo = bool(getattr(ds, "is_demo", False))
        if path is not None:
            try:
                _path(path, "dataset.path")
            except _Bad:      # a path the reader refuses (a control character, legal in Linux names; too long):
                path = None   # the job is kept and restored, its data are not read again
        ref = {"name": _clip(ds.name, MAX_NAME), "path": path, "options": dict(ds.options or {}),
               "demo": demo and path is None}
    return {
        SESSION_KEY: VERSION,
        "job_name": _clip(job.name, MAX_NAME) or "job",
        "spec": dict(job.spec or {}),
        "sweep": _clip(job.sweep, MAX_NAME) if job.sweep else None,
        "state": job.state.value,
        "reason": _clip(job.reason, MAX_TEXT),
        "elapsed_s": float(job.elapsed),
        "step": int(job.step),
        "total": int(job.total) if job.total else None,
        "device": _clip(job.device, 100),
        "scores": {k: float(v) for k, v in (job.scores or {}).items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)},
        "score_text": _clip(job.score_text, MAX_TEXT),
        "dataset": ref,
        **({"tagging": job.tagging} if getattr(job, "tagging", None) else {}),
    }


def tagging_record(key: str, scores: dict) -> dict:
    """A tagging result (:func:`densehmm_core.metrics.tagging_scores`, scored on the tokens whose digest is
    ``key``) as plain JSON-able values for a session entry (``job.tagging``)."""
    def ints(a):
        return [int(x) for x in a]
    out = {"key": str(key), "contingency": [ints(row) for row in scores["contingency"]],
           "mapping": ints(scores["mapping"]), "n_tokens": int(scores["n_tokens"])}
    if scores.get("one_to_one_mapping") is not None:
        out["one_to_one_mapping"] = ints(scores["one_to_one_mapping"])
    for name in TAG_FIELDS:
        out[name] = float(scores[name])
    return out


def tagging_scores_of(record: dict) -> Tuple[str, dict]:
    """``(key, scores)`` of a checked ``tagging`` record, the scores as the core returns them (arrays)."""
    import numpy as np
    scores: Dict[str, Any] = {"contingency": np.asarray(record["contingency"], dtype=np.int64),
                              "mapping": np.asarray(record["mapping"], dtype=np.int64),
                              "n_tokens": int(record["n_tokens"])}
    if "one_to_one_mapping" in record:
        scores["one_to_one_mapping"] = np.asarray(record["one_to_one_mapping"], dtype=np.int64)
    for name in TAG_FIELDS:
        scores[name] = float(record[name])
    return record["key"], scores


def save_session(path: str, items: List[tuple], progress: Optional[Callable[[int, int], None]] = None) -> List[str]:
    """Write ``(name, job, corpus, test_corpus, metrics)`` items (finished jobs) as one session file.

    Runs on a background thread; the whole file is replaced atomically in one write
    (:func:`densehmm_core.modelfile.save_models`): after a crash at any moment the file holds
    the previous session or the new one, complete.  ``progress(done, total)`` per job.
    """
    from densehmm_core import modelfile
    entries = []
    for name, job, corpus, test_corpus, metrics in items:
        entries.append({"name": name, "model": job.model, "corpus": corpus, "test_corpus": test_corpus,
                        "metrics": {k: v for k, v in (metrics or {}).items()
                                    if isinstance(v, (int, float)) and not isinstance(v, bool)},
                        "trained_utc": job.finished_utc, "notes": session_notes(job)})
    return modelfile.save_models(path, entries, progress=progress, compress=False)


# ------------------------------------------------------------------ reading
def _entry(path: str, index: int, info: dict, model) -> SessionJob:
    """One job from its validated model and its notes (checked here)."""
    group = info["name"]
    notes = info.get("notes") or {}
    if not is_session_info(info):   # a plain model in a session file: a finished job
        return SessionJob(group, model, group, {}, None, "finished", "", None, None, None, "file", {}, "", None)
    try:
        n = validate_notes(notes)
    except _Bad as e:
        raise SessionError(path, f"job {index + 1} ({_shown(group)}): {e}") from None
    return SessionJob(group=group, model=model, name=n["job_name"], spec=n.get("spec") or {},
                      sweep=n.get("sweep"), state=n.get("state", "finished"), reason=n.get("reason", ""),
                      elapsed_s=n.get("elapsed_s", 0.0), step=n.get("step"), total=n.get("total"),
                      device=n.get("device") or "file", scores=n.get("scores") or {},
                      score_text=n.get("score_text", ""), dataset=n.get("dataset"), tagging=n.get("tagging"))


def _needed_bytes(summary: dict) -> int:
    """Memory one job's arrays need once read (float64; the vocabulary as Python strings), from
    its model's attributes (:func:`densehmm_core.modelfile.model_summaries`); values that are
    not sizes count 0 here (the model's own read refuses them)."""
    from densehmm_core.modelfile import HISTORY_VALUE_BYTES

    def size(key):
        v = summary.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2 ** 40 else 0
    n, m, l = size("n_states"), size("n_symbols"), size("dim")
    return 8 * (n + n * n + n * m + 3 * n * l + m * l + l) + m * HISTORY_VALUE_BYTES


def load_session(path: str, progress: Optional[Callable[[int, int], None]] = None,
                 cancel: Optional[threading.Event] = None) -> Session:
    """Read and check a session file (runs on a background thread).

    The whole file is read by ONE forked, memory-capped, time-limited child of the core
    (:class:`densehmm_core.modelfile.ModelStream`), which sends it in parts of :data:`BATCH`
    jobs: this thread checks and rebuilds one part while the child reads the next.

    1. The job count (at most :data:`MAX_JOBS`) and the memory all jobs' arrays need together
       (the core's budget) are checked from the models' attributes, which the child sends
       first: this process takes no array of a file refused here (the child is stopped).
    2. Every job's notes are checked (:data:`NOTES_SCHEMA`): the first bad field raises
       :class:`SessionError` naming the job and the field.  ``progress(jobs read, jobs)``
       after each part; ``cancel`` (a ``threading.Event``) is honoured between parts
       (:class:`SessionCancelled`; the child is stopped).

    Raises ModelFileError for what the core's reader refuses.  Nothing is half-returned.
    """
    from densehmm_core import modelfile
    spath = os.path.abspath(os.fspath(path))

    def check_cancel() -> None:
        if cancel is not None and cancel.is_set():
            raise SessionCancelled(spath)

    check_cancel()
    with modelfile.ModelStream(spath, batch=BATCH, max_parts=50) as stream:   # one forked read, in parts
        names = stream.names
        if not names:
            raise SessionError(spath, "holds no jobs")
        if len(names) > MAX_JOBS:
            raise SessionError(spath, f"holds {len(names):,} jobs, more than a session may hold ({MAX_JOBS:,}): "
                                      f"refused")
        need = sum(_needed_bytes(summary) for summary in stream.summaries)
        budget = modelfile.memory_budget()
        if need > budget:
            raise SessionError(spath, f"too large: its {len(names):,} jobs need {need / 1e9:.3g} GB of memory, "
                                      f"more than the {budget / 1e9:.3g} GB allowed (DENSEHMM_MAX_MODEL_BYTES)")
        total = len(names)
        jobs: List[SessionJob] = []
        if progress is not None:
            progress(0, total)
        for part in stream.parts():
            check_cancel()
            for info, model in part:
                jobs.append(_entry(spath, len(jobs), info, model))
            if progress is not None:
                progress(len(jobs), total)
        check_cancel()
    if len(jobs) != total:
        raise SessionError(spath, f"is damaged: {len(jobs)} of its {total} jobs could be read")
    return Session(spath, jobs)


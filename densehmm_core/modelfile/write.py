"""Writing model files: :func:`save_model` and :func:`delete_model`, atomically."""
from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np

from .schema import (_ABSENT, _NONE, EMBEDDINGS, FORMAT_NAME, MATRICES, SCHEMA_VERSION, ModelFileError, ModelNameTaken,
                     _check_name, _h5py, _json_default, _utc_now, _write_attrs, software_versions)
from .read import _open_existing


# --------------------------------------------------------------- saving
def _file_arrays(model, params: Optional[Mapping[str, Any]]) -> Dict[str, np.ndarray]:
    """The datasets of a model group (path in the group -> array): ``model.arrays()["params"]``,
    or the given ``params`` (a checkpoint's event snapshot, same keys) instead."""
    src = dict(params) if params is not None else model.arrays()["params"]
    names = MATRICES + (EMBEDDINGS if model.kind == "dense" else ())
    missing = [k for k in names if src.get(k) is None]
    if missing:
        raise ValueError(f"the model has no {', '.join(missing)} yet: fit it (or set its parameters) "
                         "before saving")
    if model.kind == "dense" and src.get("feature_V") is not None and model.features_ is not None:
        names = names + ("feature_V",)  # symbol features (issue 14)
    return {(k if k in MATRICES else "embeddings/" + k): np.asarray(src[k]) for k in names}


def _write_plain_column(group, col: str, history: List[Mapping[str, Any]]) -> bool:
    """Write a column that every record holds, all Python floats, all ints or all strings (the usual
    case: step, loss, elapsed, phase ...) at once; False (nothing written) for any other column,
    which the general code below writes (the same dataset either way)."""
    try:
        vals = [rec[col] for rec in history]
    except KeyError:
        return False
    kinds = set(map(type, vals))
    if kinds == {float}:
        group.create_dataset(col, data=np.array(vals, dtype=np.float64))
    elif kinds == {int}:
        if not all(-2 ** 63 <= v < 2 ** 63 for v in (min(vals), max(vals))):
            return False
        group.create_dataset(col, data=np.array(vals, dtype=np.int64))
    elif kinds == {str}:
        group.create_dataset(col, data=np.array(vals, dtype=object), dtype=_h5py().string_dtype("utf-8"))
    else:
        return False
    return True


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
        if _write_plain_column(group, col, history):
            continue
        mask = np.zeros(len(history), dtype=np.int8)
        vals: List[Any] = []
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


#: Bytes per chunk of a compressed array (HDF5's default chunk cache holds one).
CHUNK_BYTES = 1 << 20


def _row_chunks(arr: np.ndarray) -> tuple:
    """Chunks of whole rows, about :data:`CHUNK_BYTES` each (one row split when longer).

    h5py's own guess cuts a 50,000 x 16 matrix into 3,125 x 1 columns (256 chunks against 7
    here): the two large arrays of a 50,000-word dense model took 1.6 times as long to read
    (77 against 48 ms), and the reader always reads whole arrays."""
    if arr.ndim == 1:
        return (int(min(arr.shape[0], max(1, CHUNK_BYTES // arr.itemsize))),)
    row = int(np.prod(arr.shape[1:])) * arr.itemsize
    if row <= CHUNK_BYTES:
        return (int(min(arr.shape[0], CHUNK_BYTES // row)),) + tuple(int(d) for d in arr.shape[1:])
    return (1,) * (arr.ndim - 1) + (int(max(1, CHUNK_BYTES // arr.itemsize)),)


def _write_model(mg, model, arrays: Dict[str, np.ndarray], *, corpus, test_corpus, metrics,
                 extra_attrs: Mapping[str, Any], trained_utc: Optional[str] = None,
                 notes: Optional[Mapping[str, Any]] = None, compress: bool = True,
                 software: Optional[Mapping[str, str]] = None) -> None:
    h5py = _h5py()
    kind = model.kind
    n = int(arrays["transmat"].shape[0])
    m = int(arrays["emissionprob"].shape[1])
    cfg = model.resolved_config()     # the settings used (DenseHMM: its preset's values filled in)
    state = model.arrays()
    attrs = {
        "kind": kind,
        "class": type(model).__name__,
        "n_states": n,
        "n_symbols": m,
        "created_utc": _utc_now(),
        "trained_utc": str(trained_utc) if trained_utc else _utc_now(),
        "stop_reason": str(state.get("stop_reason") or ""),
    }
    if kind == "dense":
        attrs["dim"] = int(arrays["embeddings/V"].shape[1])
    attrs["fit_method"] = str(cfg.get("fit_method", "baum-welch"))
    if cfg.get("seed") is not None:
        attrs["seed"] = cfg["seed"]
    for key in ("seed_used", "start_mode", "restart_losses"):
        if state.get(key) is not None:
            attrs[key] = state[key]
    attrs["device_used"] = str(state.get("device_used") or "")
    if model.n_symbols is not None:
        attrs["n_parameters"] = int(model.n_parameters)
    attrs.update(extra_attrs)
    _write_attrs(mg, attrs)

    for key, arr in arrays.items():
        kw = {}
        if compress and arr.size >= 4096:
            kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True, "chunks": _row_chunks(arr)}
        mg.create_dataset(key, data=arr, **kw)
    mg["startprob"].attrs["description"] = "initial state distribution pi[i]"
    mg["transmat"].attrs["description"] = "transition matrix A[i, j] = P(state j at t+1 | state i at t)"
    mg["emissionprob"].attrs["description"] = "emission matrix B[i, k] = P(symbol k | state i)"
    if kind == "dense":
        eg = mg["embeddings"]
        eg.attrs["description"] = ("A = softmax(Z U^T) row-wise, B = softmax(W V^T) row-wise, "
                                   "pi = softmax(U z_start) (cooc fits store the stationary pi in startprob)")

    vocab = model.vocabulary
    if vocab is None and corpus is not None:
        vocab = getattr(corpus, "vocabulary", None)
    if vocab is not None:
        vocab = [str(s) for s in vocab]
        if len(vocab) != m:
            raise ValueError(f"the vocabulary has {len(vocab)} symbols but the model has {m}")
        mg.create_dataset("vocabulary", data=np.array(vocab, dtype=object), dtype=h5py.string_dtype("utf-8"))

    # Symbol features (issue 14): the feature names, which symbol has which feature, and
    # embeddings/feature_V; V is stored as the effective embedding (own + features).
    feats = model.features_ if model.kind == "dense" else None
    if feats is not None and "embeddings/feature_V" in arrays:
        mg.create_dataset("feature_vocabulary", data=np.array(list(feats.vocabulary), dtype=object),
                          dtype=h5py.string_dtype("utf-8"))
        mg.create_dataset("feature_index", data=np.stack([feats.rows, feats.cols], axis=1).astype(np.int64))
        mg["feature_index"].attrs["description"] = "rows (symbol, feature): the symbol has the feature"

    # Adam's state of a DenseHMM-EM fit: a continued fit (--resume) takes the steps one fit would
    adam = state.get("adam_state") if kind == "dense" else None
    if adam is not None:
        og = mg.create_group("optimizer", track_order=True)
        _write_attrs(og, {"method": "adam", "t": float(adam["t"])})
        for key in ("m", "v"):
            arr = np.asarray(adam[key])
            kw = {}
            if compress and arr.size >= 4096:
                kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True, "chunks": _row_chunks(arr)}
            og.create_dataset(key, data=arr, **kw)
        og.attrs["description"] = ("Adam's first (m) and second (v) moments in the packed order U, Z, W, V "
                                   "(own part), z_start[, feature_V], and its step count t")

    # The gold tag set of the training corpus (tagged corpora; issue 14): decode and
    # evaluate name the tags a state is mapped to.
    tags = getattr(model, "tag_vocabulary", None)
    if tags is None and corpus is not None:
        tags = getattr(corpus, "tag_vocabulary", None)
    if tags is not None:
        mg.create_dataset("tag_vocabulary", data=np.array([str(t) for t in tags], dtype=object),
                          dtype=h5py.string_dtype("utf-8"))

    cg = mg.create_group("config", track_order=True)
    _write_attrs(cg, cfg)

    hg = mg.create_group("history", track_order=True)
    _write_history(hg, state["history"])

    metg = mg.create_group("metrics", track_order=True)
    _write_attrs(metg, dict(metrics or {}))
    if notes:
        _write_attrs(mg.create_group("notes", track_order=True), dict(notes))

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
    _write_attrs(sg, software if software is not None else software_versions())


def _atomic_rewrite(path, write_fn, keep_old: bool = True) -> None:
    """Write a new version of ``path`` through :mod:`densehmm_core.fileio`.

    Under the file's lock (so concurrent writers serialise and none loses another's
    model), the current file is re-read, the whole new file is built **in memory** by
    ``write_fn(old, models_group)`` (HDF5 never writes to disk, so a full disk cannot
    leave it in a broken state), and the bytes are written to a temporary file that
    atomically replaces ``path``.  Every failure is a one-line :class:`ModelFileError`
    and leaves the previous file unchanged.  ``keep_old=False`` (a file written anew):
    the current file is not opened, only checked to be a densehmm model file, and
    ``write_fn`` gets ``None`` for it.
    """
    import io

    from .. import fileio
    h5py = _h5py()
    spath = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(spath)
    if not os.path.isdir(folder):
        raise ModelFileError(spath, f"the folder {folder} does not exist")
    try:
        with fileio.file_lock(spath):
            fileio.check_writable(spath, what="model file")  # read-only, a folder, a FIFO: refused now
            old = None
            if os.path.lexists(spath):
                if keep_old:
                    old = _open_existing(spath)
                else:
                    _check_model_file(spath)  # never overwrite a foreign file; its models are not read
            buf = io.BytesIO()
            try:
                with h5py.File(buf, "w", track_order=True) as f:
                    f.attrs["format"] = FORMAT_NAME
                    f.attrs["schema_version"] = np.int64(SCHEMA_VERSION)
                    f.attrs["writer"] = "densehmm " + software_versions()["densehmm"]
                    f.attrs["modified_utc"] = _utc_now()
                    f.attrs["description"] = ("Hidden Markov models written by DenseHMM Studio; "
                                              "one group per model under /models (see docs/FILE_FORMAT.md)")
                    models = f.create_group("models", track_order=True)
                    write_fn(old, models)
            finally:
                if old is not None:
                    old.close()
            data = buf.getbuffer()
            fileio.write_bytes(spath, data)
            from . import safety
            safety.trust(spath, data)  # our own bytes (old models were probed before they were copied)
            del data
    except ModelFileError:
        raise
    except fileio.FileWriteError as e:
        if e.disk_full:
            raise ModelFileError(spath, "could not be written: the disk is full; the previous file is "
                                        "unchanged") from None
        raise ModelFileError(spath, f"{e.reason}; the previous file is unchanged") from None
    except (OSError, RuntimeError) as e:
        what = "the disk is full" if fileio.is_disk_full(e) else " ".join(str(e).split())
        raise ModelFileError(spath, f"could not be written ({what}); the previous file is unchanged") from e


def _check_model_file(spath: str) -> None:
    """Raise ModelFileError unless ``spath`` is a densehmm model file (format, schema version and
    ``/models`` checked: :func:`_open_existing`), reading only its root, in a forked child
    (:func:`safety.run_isolated`) where the probe is on: a file that is only replaced is
    not read whole first (the probe of a 40 MB session took longer than writing the new one)."""
    from . import safety

    def check() -> None:
        _open_existing(spath).close()
    if safety.probe_enabled():
        safety.run_isolated(spath, check)
    else:
        check()


def copy_checked(old, models, name: str, path) -> None:
    """Copy model ``name`` of the old file into the new one, after checking it (links, storage)."""
    from . import safety
    src, _ = safety.model_group(old, path, name)
    old.copy(src, models, name=name)


def save_model(path, model, name: Optional[str] = None, corpus: Any = None, *, test_corpus: Any = None,
               metrics: Optional[Mapping[str, Any]] = None, overwrite: bool = False,
               params: Optional[Mapping[str, Any]] = None, trained_utc: Optional[str] = None,
               notes: Optional[Mapping[str, Any]] = None, run_id: Optional[str] = None,
               if_taken: str = "error") -> str:
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
        and tag vocabulary when the model has none).
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
    trained_utc : str, optional
        When training finished (ISO 8601, UTC), stored as ``trained_utc``; default: now
        (the time of writing, right for a model saved as its fit ends).
    notes : dict, optional
        Anything else to keep with the model (JSON-able values), stored in the group
        ``notes`` and read back as ``read_model_info(...)["notes"]`` (e.g. the app's
        session: job name, settings, data-set reference).
    run_id : str, optional
        Names the training run that saves (``densehmm train``: its checkpoints and final save), stored
        as the model's attribute ``run_id``: a model of the same name that this run wrote is replaced
        without ``overwrite``; one written otherwise (e.g. by a run started at the same time with the
        same ``--name``) raises :class:`ModelNameTaken`, or with ``if_taken="next"`` takes the next free name.
    if_taken : {"error", "next"}
        What to do when ``name`` is held by a model this call may not replace (see ``overwrite`` and
        ``run_id``): raise :class:`ModelNameTaken` (default), or store the model as ``NAME-k`` with the first
        free ``k >= 2``, chosen while the file is locked (so two runs never pick the same name).

    Returns
    -------
    str
        The name the model was stored under (with ``if_taken="next"`` it may differ from ``name``).

    Raises
    ------
    ModelFileError
        The existing file is not a readable densehmm model file, the name is taken
        (:class:`ModelNameTaken`), or the write failed (the previous file is then unchanged).
    ValueError
        The model has no parameters, or an invalid name.
    """
    spath = os.fspath(path)
    arrays = _file_arrays(model, params)
    kind = model.kind
    if name is not None:
        _check_name(name)
    if if_taken not in ("error", "next"):
        raise ValueError(f"if_taken must be 'error' or 'next', not {if_taken!r}")
    chosen: Dict[str, str] = {}

    def write_fn(old, models):
        existing = list(old["models"].keys()) if old is not None else []
        new_name = name
        if new_name is None:
            k = 1
            while f"{kind}_{k}" in existing:
                k += 1
            new_name = f"{kind}_{k}"
        elif new_name in existing and not overwrite and not (run_id and _run_of(old, new_name) == run_id):
            if if_taken == "error":
                raise ModelNameTaken(spath, f"already holds a model named {new_name!r} "
                                            f"(choose another name or overwrite it)")
            k = 2
            while f"{name}-{k}" in existing:
                k += 1
            new_name = f"{name}-{k}"
            _check_name(new_name)
        chosen["name"] = new_name
        extra = {"name": new_name, **({"run_id": str(run_id)} if run_id else {})}
        wrote = False
        for old_name in existing:
            if old_name == new_name:
                mg = models.create_group(new_name, track_order=True)
                _write_model(mg, model, arrays, corpus=corpus, test_corpus=test_corpus, metrics=metrics,
                             extra_attrs=extra, trained_utc=trained_utc, notes=notes)
                wrote = True
            else:
                copy_checked(old, models, old_name, spath)
        if not wrote:
            mg = models.create_group(new_name, track_order=True)
            _write_model(mg, model, arrays, corpus=corpus, test_corpus=test_corpus, metrics=metrics,
                         extra_attrs=extra, trained_utc=trained_utc, notes=notes)

    _atomic_rewrite(spath, write_fn)
    return chosen["name"]


def _run_of(old, name: str) -> Optional[str]:
    """The ``run_id`` attribute of model ``name`` of the open file ``old`` (None when it has none)."""
    value = old["models"][name].attrs.get("run_id")
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def save_models(path, entries, progress: Optional[Callable[[int, int], None]] = None,
                compress: bool = True) -> List[str]:
    """Write a NEW file at ``path`` holding exactly ``entries`` (a whole-file atomic replace).

    Each entry is a mapping of :func:`save_model`'s arguments: ``model`` and ``name`` (required,
    distinct), and optionally ``corpus``, ``test_corpus``, ``metrics``, ``params``,
    ``trained_utc``, ``notes``.  Unlike calling :func:`save_model` once per model (which
    re-reads and rewrites the file each time: quadratic), the file is built once in memory and
    written once (temporary file, fsync, rename): after a crash at any moment ``path`` holds its
    previous content or all of ``entries``.  An existing ``path`` must be a densehmm model
    file (it is replaced, its models are not kept).  ``progress(done, total)`` is called after
    each model is built.  ``compress=False`` stores the arrays uncompressed (trained
    probabilities hardly compress: gzip saves under 10 % and costs most of the writing time).
    Returns the names.
    """
    spath = os.fspath(path)
    items = []
    seen = set()
    for e in entries:
        name = _check_name(e["name"])
        if name in seen:
            raise ValueError(f"two models are named {name!r}")
        seen.add(name)
        items.append((name, e, _file_arrays(e["model"], e.get("params"))))
    total = len(items)
    software = software_versions()

    def write_fn(old, models):
        for i, (name, e, arrays) in enumerate(items):
            mg = models.create_group(name, track_order=True)
            _write_model(mg, e["model"], arrays, corpus=e.get("corpus"), test_corpus=e.get("test_corpus"),
                         metrics=e.get("metrics"), extra_attrs={"name": name}, trained_utc=e.get("trained_utc"),
                         notes=e.get("notes"), compress=compress, software=software)
            if progress is not None:
                progress(i + 1, total)

    _atomic_rewrite(spath, write_fn, keep_old=False)
    return [name for name, _e, _a in items]


def delete_model(path, name: str) -> None:
    """Remove one model from a file (atomically); the others are kept."""
    spath = os.fspath(path)

    def write_fn(old, models):
        names = list(old["models"].keys())
        if name not in names:
            raise ModelFileError(spath, f"has no model named {name!r} (it holds: {', '.join(names)})")
        for n in names:
            if n != name:
                copy_checked(old, models, n, spath)

    if not os.path.exists(spath):
        raise ModelFileError(spath, "no such file")
    _atomic_rewrite(spath, write_fn)

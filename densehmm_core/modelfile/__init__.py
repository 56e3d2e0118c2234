"""HDF5 model files: :func:`save_model`, :func:`load_model`, :func:`list_models`.

One file holds one or several models (one group each under ``/models``).  The
schema is documented in ``docs/FILE_FORMAT.md``; in short::

    /                       attrs: format="densehmm-model", schema_version=2, writer, modified_utc
    /models/<name>/         attrs: kind, class, n_states, n_symbols, dim, fit_method, seed,
                                   device_used, created_utc, stop_reason, n_parameters
        startprob           (n,)   float64
        transmat            (n, n) float64, row = from-state
        emissionprob        (n, m) float64
        embeddings/U Z W    (n, l) float64          (dense models only)
        embeddings/V        (m, l) float64
        embeddings/z_start  (l,)   float64
        vocabulary          (m,)   UTF-8 strings    (when the model knows its symbols)
        config/             attrs: every hyper-parameter of ``resolved_config()``
        history/<column>    one 1-D dataset per column (step, loss, train_ll, test_ll, ...)
        metrics/            attrs: final metrics (floats)
        provenance/         attrs: training-data provenance (file, sha256, format, options, ...)
        provenance_test/    attrs: provenance of the evaluation data (when given)
        software/           attrs: versions (densehmm, numpy, tensorflow, hmmlearn, h5py, python)

Attributes are plain scalars or strings; a value that needs structure (a list, a
dict, ``None``) is stored as a JSON string and its key is listed in the
group's ``json_keys`` attribute.  Nothing is ever pickled or evaluated.

Writes are atomic and serialised: under a lock file beside the target the current file is
re-read, the new file is built in memory and written through :mod:`densehmm_core.fileio`
(temporary file in the same folder, fsync, :func:`os.replace`).  Reads run in a forked child
(:mod:`.safety`: hostile files are refused before anything is read).  Models already in the
file are copied over unchanged.

Modules: :mod:`.schema` (format constants, :class:`ModelFileError`, attribute encoding),
:mod:`.safety` (what a reader refuses before reading), :mod:`.read` (opening and checking a
file, validation, loading) and :mod:`.write` (saving).
"""
from __future__ import annotations

from .read import (ModelStream, list_models, load_model, load_models, model_summaries, read_model_info,
                   read_model_infos)
from .safety import HISTORY_VALUE_BYTES, memory_budget
from .schema import FORMAT_NAME, SCHEMA_VERSION, ModelFileError, ModelNameTaken, software_versions
from .write import delete_model, save_model, save_models

__all__ = [
    "FORMAT_NAME", "SCHEMA_VERSION", "ModelFileError", "ModelNameTaken", "save_model", "load_model",
    "list_models", "read_model_info", "read_model_infos", "model_summaries", "delete_model", "software_versions",
    "load_models", "ModelStream", "save_models", "memory_budget", "HISTORY_VALUE_BYTES",
]

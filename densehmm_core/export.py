"""Export a model's matrices and embeddings to CSV (one file per array, or a zip of them).

For spreadsheets and R: every file has a header row and a first column of row
labels, so ``read.csv("transmat.csv", row.names = 1)`` gives the matrix.

Files: ``startprob.csv`` (state, prob), ``transmat.csv`` (rows: from-state,
columns: to-state), ``emissionprob.csv`` (rows: states, columns: the symbols of
the vocabulary), and for dense models ``U.csv``, ``Z.csv``, ``W.csv`` (rows:
states), ``V.csv`` (rows: symbols), ``z_start.csv`` (dimension, value), with symbol features ``feature_V.csv``
(rows: features; ``V.csv`` then holds each symbol's own + feature vectors); plus
``vocabulary.csv`` (index, symbol).  Numbers are written with 17 significant
digits (``repr``), so reading them back gives the same float64 values.
"""
from __future__ import annotations

import csv
import io
import os
import zipfile
from typing import Any, Dict, List, Optional

import numpy as np

__all__ = ["model_tables", "export_csv", "EXPORT_FILES"]


def _num(x: float) -> str:
    return repr(float(x))


def _arrays_of(source: Any, name: Optional[str]):
    """(arrays dict, vocabulary, kind) from a model object or a model file path."""
    if isinstance(source, (str, os.PathLike)):
        from .modelfile import read_model_info
        info = read_model_info(source, name)
        arrays = {k.split("/")[-1]: v for k, v in info["arrays"].items()}
        if info.get("features") is not None:
            arrays["feature_vocabulary"] = np.array(info["features"]["vocabulary"], dtype=object)
        return arrays, info["vocabulary"], info["attrs"]["kind"]
    arrays = source.arrays()["params"]
    if not arrays:
        raise ValueError("the model has no parameters yet: fit it before exporting")
    arrays = source.arrays()["params"]
    if not arrays:
        raise ValueError("the model has no parameters yet: fit it before exporting")
    if "feature_V" in arrays:  # symbol features: the feature names of feature_V's rows
        arrays["feature_vocabulary"] = np.array(source.features_.vocabulary, dtype=object)
    return arrays, source.vocabulary, source.kind


def model_tables(source: Any, name: Optional[str] = None) -> Dict[str, str]:
    """CSV texts of a model: ``{"transmat.csv": "...", ...}``.

    Parameters
    ----------
    source : StandardHMM, DenseHMM, or a path to a model file
    name : str, optional
        Model name inside the file (when ``source`` is a path holding several).
    """
    arrays, vocab, kind = _arrays_of(source, name)
    n = arrays["transmat"].shape[0]
    m = arrays["emissionprob"].shape[1]
    states = [f"state_{i}" for i in range(n)]
    symbols = list(vocab) if vocab is not None else [str(k) for k in range(m)]
    out: Dict[str, str] = {}

    def table(header: List[str], rows: List[List[str]]) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return buf.getvalue()

    out["startprob.csv"] = table(["state", "prob"], [[s, _num(v)] for s, v in zip(states, arrays["startprob"])])
    out["transmat.csv"] = table(["from_state"] + states,
                                [[s] + [_num(v) for v in row] for s, row in zip(states, arrays["transmat"])])
    out["emissionprob.csv"] = table(["state"] + symbols,
                                    [[s] + [_num(v) for v in row] for s, row in zip(states, arrays["emissionprob"])])
    out["vocabulary.csv"] = table(["index", "symbol"], [[str(i), s] for i, s in enumerate(symbols)])
    if "U" in arrays:
        l = arrays["U"].shape[1]
        dims = [f"dim_{j}" for j in range(l)]
        for key in ("U", "Z", "W"):
            out[f"{key}.csv"] = table(["state"] + dims,
                                      [[s] + [_num(v) for v in row] for s, row in zip(states, arrays[key])])
        out["V.csv"] = table(["symbol"] + dims, [[s] + [_num(v) for v in row] for s, row in zip(symbols, arrays["V"])])
        out["z_start.csv"] = table(["dim", "value"], [[d, _num(v)] for d, v in zip(dims, arrays["z_start"])])
        if "feature_V" in arrays:  # symbol features: one row per feature (V.csv holds own + features)
            fnames = [str(s) for s in arrays.get("feature_vocabulary", range(len(arrays["feature_V"])))]
            out["feature_V.csv"] = table(["feature"] + dims,
                                         [[f] + [_num(v) for v in row] for f, row in zip(fnames, arrays["feature_V"])])
    return out


#: Every file name an export may hold (``model_tables`` writes a subset of them): a folder holding only these
#: (and nothing else) is a previous export, which a new export replaces.
EXPORT_FILES = ("startprob.csv", "transmat.csv", "emissionprob.csv", "vocabulary.csv", "U.csv", "Z.csv", "W.csv",
                "V.csv", "z_start.csv", "feature_V.csv")


def export_csv(source: Any, target, name: Optional[str] = None) -> List[str]:
    """Write the CSV tables of a model into a folder, or into a zip file (``target`` ends in ``.zip``).

    Every file is written atomically (temporary file + rename, see :mod:`densehmm_core.fileio`)
    with the usual permissions (``0666`` minus the umask), under the target's lock.  An
    existing file that is not a zip (for a ``.zip`` target) or a non-folder (otherwise)
    is refused, as is a read-only file: nothing is overwritten by accident.

    A folder ends up holding exactly this model's files: a new or empty folder is written into; a folder
    holding a previous export (only names of :data:`EXPORT_FILES`) is replaced by this one (its files this
    model lacks, e.g. ``feature_V.csv``, are removed after the new files are in place); a folder holding
    anything else is refused (nothing in it is touched).

    Returns
    -------
    list of str
        The names of the CSV files written.

    Raises
    ------
    FileWriteError
        The target cannot be written (one-line message: which file, why).
    """
    from . import fileio
    target = os.fspath(target)
    if not target.strip():
        raise ValueError("no export target given: name a folder, or a file ending in .zip")
    tables = model_tables(source, name)
    if target.lower().endswith(".zip"):
        if os.path.isfile(target) and not zipfile.is_zipfile(target):
            raise fileio.FileWriteError(target, "exists and is not a zip file: not overwritten")
        _check_parent(target)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for fname, text in tables.items():
                z.writestr(fname, text)
        fileio.write_bytes(target, buf.getbuffer())
        return list(tables)
    if os.path.exists(target) and not os.path.isdir(target):
        raise fileio.FileWriteError(target, "exists and is not a folder: give a folder or a name ending in .zip")
    if not os.path.isdir(target):
        _check_parent(target)
        try:
            os.makedirs(target, exist_ok=True)
        except OSError as e:
            raise fileio.FileWriteError(target, f"cannot create the folder ({e.strerror or e})") from None
    with fileio.file_lock(target):
        old = _previous_export(target)
        for fname, text in tables.items():
            fileio.write_text(os.path.join(target, fname), text, lock=False)
        for fname in sorted(set(old) - set(tables)):   # the previous model's files this one lacks
            try:
                os.unlink(os.path.join(target, fname))
            except FileNotFoundError:
                pass
            except OSError as e:
                raise fileio.FileWriteError(os.path.join(target, fname), "is left from a previous export and "
                                            f"cannot be removed ({e.strerror or e})") from None
    return list(tables)


def _previous_export(folder: str) -> List[str]:
    """The files of ``folder`` (empty, or a previous export: only :data:`EXPORT_FILES`, as plain files);
    anything else there is refused with one line naming it, before anything is written."""
    from . import fileio
    try:
        entries = sorted(os.listdir(folder))
    except OSError as e:
        raise fileio.FileWriteError(folder, f"cannot be listed ({e.strerror or e})") from None
    foreign = [e for e in entries if e not in EXPORT_FILES or not os.path.isfile(os.path.join(folder, e))
               or os.path.islink(os.path.join(folder, e))]
    if foreign:
        shown = ", ".join(repr(e) for e in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise fileio.FileWriteError(folder, f"holds files that are not a CSV export ({shown}): nothing written; "
                                            "give a new or empty folder, or one holding only a previous export")
    return entries


def _check_parent(target: str) -> None:
    """The folder that is to receive ``target`` exists and accepts a new file (one line naming it, else)."""
    import errno
    import tempfile

    from . import fileio
    parent = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(parent):
        raise fileio.FileWriteError(target, f"the folder {parent} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".densehmm-probe.", suffix=".tmp")
    except OSError as e:
        why = "it does not accept new files" if e.errno == errno.ENOENT else (e.strerror or str(e))
        raise fileio.FileWriteError(target, f"cannot write in the folder {parent} ({why})") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass

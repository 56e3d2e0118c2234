"""What the two command lines share (``densehmm_core.cli``: train, evaluate, ...; ``densehmm_core.experiments.cli``:
reproduce, sweep): the user-error type and reading a data file with the command-line data options.

Both import it from here, so neither command line imports the other's internals (the experiments never
import ``densehmm_core.cli``; an import-linter contract keeps it so).
"""
from __future__ import annotations

from typing import Optional

__all__ = ["UserError", "user_error_types", "check_file", "load_corpus", "print_data_warnings"]


class UserError(Exception):
    """A problem the user can fix (printed as one line, exit status 2)."""


def user_error_types():
    """The exception types that are the user's to fix (one line, exit status 2).

    Imported when an error is handled, so that ``--help`` stays free of numpy.
    """
    from .data.errors import DataFormatError
    from .device import DeviceError
    from .fileio import FileWriteError
    from .modelfile import ModelFileError
    return (UserError, ModelFileError, DataFormatError, DeviceError, FileWriteError)


def check_file(path: str) -> None:
    """A one-line error for a DATA path that cannot be read ('-' is standard input)."""
    if path != "-":
        from .data.source import check_data_path
        check_data_path(path)


def load_corpus(path: str, args, *, preprocess: bool, read_as: Optional[dict] = None):
    """Read a data file through densehmm_core.data.load with the command's options.

    Preprocessing options given on the command line override those of ``--preset``.
    ``read_as`` (evaluate, decode): the reader options of the model's training data; its
    ``observe``, ``tagset``, ``drop_traces`` and ``collapse_tags`` are used where they apply to
    DATA's format and the command line does not set them, and its ``chunk_len`` (the sequences
    cut into pieces as for training) where ``--chunk`` is not given.  Words are read as written
    (``--lowercase`` and the rare-word classes act when encoding for the model).
    """
    check_file(path)
    from . import data as data_mod
    defaults = {k: v for k, v in (read_as or {}).items()
                if k in ("observe", "tagset", "drop_traces", "collapse_tags")}
    if not preprocess:   # evaluate/decode: every word as written; the model's vocabulary decides
        defaults["min_count"] = 1
    options = {}
    observe = getattr(args, "observe", None)
    if observe:
        options["observe"] = observe
    if getattr(args, "column", None) is not None:
        options["column"] = args.column
    if getattr(args, "tagset", None):
        options["tagset"] = args.tagset
    if getattr(args, "keep_traces", False):
        options["drop_traces"] = False
    extra = getattr(args, "extra", None) or None
    if preprocess:  # train: the vocabulary is built here
        if getattr(args, "lowercase", None):
            options["lowercase"] = True
        for opt in ("min_count", "max_vocab", "rare"):
            if getattr(args, opt, None) is not None:
                options[opt] = getattr(args, opt)
        for e in extra or []:
            check_file(e)
    if getattr(args, "lowercase", None) and (observe or defaults.get("observe")) != "words":
        raise UserError("--lowercase needs --observe words")
    if extra:
        options["extra"] = list(extra)
    preset = getattr(args, "preset", None)
    if preset is not None and preset not in data_mod.PRESETS:
        raise UserError(f"unknown preset {preset!r} (choose one of: {', '.join(sorted(data_mod.PRESETS))})")
    if getattr(args, "subset", None) is not None:
        options["subset"] = int(args.subset)
    chunk = getattr(args, "chunk_len", None)
    if chunk is None and not preprocess:
        chunk = (read_as or {}).get("chunk_len")
    if chunk is not None:
        options["chunk_len"] = int(chunk)
    if getattr(args, "max_len", None) is not None:
        options["max_len"] = int(args.max_len)
    if preprocess:
        if getattr(args, "min_len", None) is not None:
            options["min_len"] = int(args.min_len)
        if getattr(args, "merge_below", None) is not None:
            options["merge_below"] = float(args.merge_below)
    if getattr(args, "encoding", None):
        options["encoding"] = args.encoding
    try:
        corpus = data_mod.load(path, format=args.format or "auto", preset=preset, defaults=defaults, **options)
    except (TypeError, ValueError) as e:
        undecodable = getattr(e, "undecodable", None)
        if undecodable and isinstance(e, data_mod.DataFormatError):   # the hint in the command line's words
            what, encoding = undecodable
            raise data_mod.DataFormatError(f"{what}; pass --encoding latin-1 (or the file's encoding) if it is "
                                           f"not {encoding}", e.path, e.line) from None
        if isinstance(e, user_error_types()):
            raise
        raise UserError(f"{path}: {e}") from None
    if not getattr(args, "quiet", False):
        print_data_warnings(corpus, "standard input" if path == "-" else path)
    return corpus


def print_data_warnings(corpus, source: str) -> None:
    """The reader's warnings (``corpus.warnings``: malformed tokens skipped, empty records, rare words
    mapped to ``<unk>``, ...) as ``note: SOURCE: ...`` lines on stderr, as the app's log shows them:
    data left out are never left out silently.  A closed stderr never stops the work."""
    import sys
    for warning in corpus.warnings:
        try:
            print(f"note: {source}: {warning}", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            return

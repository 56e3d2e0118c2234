"""What the two command lines share (``densehmm_core.cli``: train, evaluate, ...; ``densehmm_core.experiments.cli``:
reproduce, sweep): the user-error type and reading a data file with the command-line data options.

Both import it from here, so neither command line imports the other's internals (the experiments never
import ``densehmm_core.cli``; an import-linter contract keeps it so).
"""
from __future__ import annotations

import re
from typing import Optional

__all__ = ["UserError", "user_error_types", "check_file", "load_corpus", "print_data_warnings", "in_flags",
           "flag_text", "OPTION_FLAGS", "DATA_OPTION_DESTS"]


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


#: The command-line flag of each reader or preprocessing option: errors and notes name the flag the user types,
#: never the library's option (``--subset must be >= 1``, ``pass --mol all``).  The flags themselves are defined
#: in ``densehmm_core/cli/parser.py`` (``_data_options``); this table is what the messages say.
OPTION_FLAGS = {
    "subset": "--subset", "max_len": "--max-len", "min_len": "--min-len", "chunk_len": "--chunk",
    "merge_below": "--merge-below", "min_count": "--min-count", "max_vocab": "--max-vocab", "rare": "--rare",
    "observe": "--observe", "column": "--column", "tagset": "--tagset", "encoding": "--encoding",
    "lowercase": "--lowercase", "drop_traces": "--keep-traces", "mol": "--mol", "alphabet": "--alphabet",
    "nucleotide": "--nucleotide", "collapse_tags": "--collapse-tags", "on_bad_sentence": "--skip-bad-sentences",
}
#: Options whose flag is a switch: the (option, value) the switch sets.
_SWITCHES = {"drop_traces": False, "collapse_tags": True, "lowercase": True, "on_bad_sentence": "skip"}

#: Every data flag's ``args`` name (train, evaluate, decode, sweep): what a sweep's settings record.
DATA_OPTION_DESTS = ("format", "preset", "observe", "column", "tagset", "keep_traces", "subset", "chunk_len",
                     "max_len", "min_len", "merge_below", "lowercase", "min_count", "max_vocab", "rare", "encoding",
                     "mol", "alphabet", "nucleotide", "collapse_tags", "skip_bad_sentences")

#: A preset's steps that build a vocabulary from the data's own counts: never run on data read for a model
#: (evaluate, decode), whose vocabulary decides.
VOCABULARY_STEPS = ("merge_below",)
VOCABULARY_READER_OPTIONS = ("min_count", "max_vocab", "rare", "unknown_symbol")


def flag_text(option: str, value=None) -> str:
    """How the command line says ``option=value``: ``--mol all``, ``--keep-traces``, ``--subset``."""
    flag = OPTION_FLAGS.get(option, "--" + option.replace("_", "-"))
    if option in _SWITCHES:
        return flag if value is None or value == _SWITCHES[option] else f"no {flag}"
    return flag if value is None else f"{flag} {value}"


_ASSIGNMENT = re.compile(r"\b(%s)=('[^']*'|\"[^\"]*\"|[\w.+-]+)" % "|".join(OPTION_FLAGS))
_QUOTED_OPTION = re.compile(r"\boptions? ('(?:%s)'(?:, '(?:%s)')*)" % ("|".join(OPTION_FLAGS), "|".join(OPTION_FLAGS)))
_LEADING_OPTION = re.compile(r"^(%s)(?= must | is a )" % "|".join(OPTION_FLAGS))


def in_flags(text: str) -> str:
    """A library message in the command line's words: ``mol='all'`` -> ``--mol all``, ``option 'drop_traces'``
    -> ``--keep-traces``, ``subset must be >= 1`` -> ``--subset must be >= 1``."""
    def assignment(m):
        raw = m.group(2)
        value = raw[1:-1] if raw[:1] in "'\"" else {"True": True, "False": False, "None": None}.get(raw, raw)
        return flag_text(m.group(1), value)
    text = _ASSIGNMENT.sub(assignment, text)
    text = _QUOTED_OPTION.sub(lambda m: ", ".join(OPTION_FLAGS[o.strip("'")] for o in m.group(1).split(", ")), text)
    return _LEADING_OPTION.sub(lambda m: OPTION_FLAGS[m.group(1)], text)


def load_corpus(path: str, args, *, preprocess: bool, read_as: Optional[dict] = None):
    """Read a data file through densehmm_core.data.load with the command's options.

    Preprocessing options given on the command line override those of ``--preset``.
    ``read_as`` (evaluate, decode): the reader options of the model's training data; those of
    ``densehmm_core.data.MODEL_READ_OPTIONS`` are used where they apply to DATA's format and the command line does not
    set them, and its ``chunk_len`` (the sequences cut into pieces as for training) where ``--chunk`` is
    not given.  Words are read as written (``--lowercase`` and the rare-word classes act when encoding for
    the model).  Without ``preprocess`` (data read for a model) a preset gives its reader options and its
    selection of sequences (``subset``, ``max_len``), never its vocabulary steps (:data:`VOCABULARY_STEPS`):
    the model's vocabulary decides (a note says what was not applied).
    """
    check_file(path)
    from . import data as data_mod
    extra = getattr(args, "extra", None) or None
    if path == "-" and "-" in (extra or []) or (extra or []).count("-") > 1:
        raise UserError("standard input can be read only once: give '-' for DATA or one --extra, not both")
    # evaluate/decode: the model's reading options, every word as written (the model's vocabulary decides);
    # the core's rule, the app's too (densehmm_core.data.reading_for_model)
    defaults = {} if preprocess else data_mod.reading_for_model(read_as)
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
    for opt in ("mol", "alphabet", "nucleotide"):
        if getattr(args, opt, None):
            options[opt] = getattr(args, opt)
    if getattr(args, "collapse_tags", False):
        options["collapse_tags"] = True
    if getattr(args, "skip_bad_sentences", False):
        options["on_bad_sentence"] = "skip"
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
    not_applied: dict = {}
    if preset is not None and not preprocess:
        p = data_mod.get_preset(preset)
        builds = [k for k in p.get("load", {}) if k in VOCABULARY_READER_OPTIONS]
        if builds:
            raise UserError(f"--preset {preset} builds a vocabulary ("
                            + ", ".join(flag_text(k, p["load"][k]) for k in builds)
                            + ") and cannot read data for a model, whose vocabulary decides: give the reading "
                              "flags (--format, --observe, ...) instead")
        not_applied = {k: v for k, v in p.get("preprocess", {}).items() if k in VOCABULARY_STEPS and v is not None}
        options.update({k: None for k in not_applied})   # None overrides the preset's value: the step is skipped
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
        if isinstance(e, data_mod.DataFormatError) and e.skippable and "on_bad_sentence" not in options:
            raise data_mod.DataFormatError(f"{in_flags(e.reason)} (--skip-bad-sentences reads the complete "
                                           "sentences and counts the broken ones)", e.path, e.line,
                                           skippable=True) from None
        if isinstance(e, user_error_types()):
            raise
        raise UserError(f"{path}: {in_flags(str(e))}") from None
    if not getattr(args, "quiet", False):
        source = "standard input" if path == "-" else path
        print_data_warnings(corpus, source)
        if not_applied:
            _note(f"{source}: --preset {preset}: "
                  + ", ".join(flag_text(k, v) for k, v in not_applied.items())
                  + " not applied: the data are read through the model's vocabulary (symbols it lacks are "
                    "counted and read as its residual or unknown symbol)")
    return corpus


def _note(text: str) -> None:
    import sys
    try:
        print(f"note: {text}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def print_data_warnings(corpus, source: str) -> None:
    """The reader's warnings (``corpus.warnings``: malformed tokens skipped, empty records, rare words
    mapped to ``<unk>``, ...) as ``note: SOURCE: ...`` lines on stderr, as the app's log shows them:
    data left out are never left out silently.  A closed stderr never stops the work."""
    for warning in corpus.warnings:
        _note(f"{source}: {in_flags(warning)}")

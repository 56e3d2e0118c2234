"""``load``: open any supported file and return a Corpus."""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, Optional

from .corpus import DEFAULT_RESIDUAL, Corpus
from .conll import read_conll, read_conllu
from .detect import detect_format, normalize_format
from .errors import DataFormatError
from .fasta import read_fasta
from .presets import get_preset
from .ptb import read_ptb
from .source import open_source
from .tagged import collapse_brown_tag, read_medpost, read_word_tag
from .tokens import DEFAULT_UNKNOWN, TokenReport, build_token_corpus

__all__ = ["load", "READER_DEFAULTS", "PREPROCESS_DEFAULTS"]

log = logging.getLogger("densehmm_core.data")

_TOKEN_DEFAULTS = {"observe": "tags", "max_vocab": None, "unknown_symbol": DEFAULT_UNKNOWN, "lowercase": False,
                   "on_malformed": "skip", "encoding": "utf-8"}

#: Every reader option, per format, with its default.
READER_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "fasta": {"mol": "protein", "alphabet": "observed", "uppercase": True, "strip_stop": True,
              "nucleotide": None, "keep_names": True},
    "medpost": dict(_TOKEN_DEFAULTS),
    "word_tag": dict(_TOKEN_DEFAULTS),
    "word_slash_tag": dict(_TOKEN_DEFAULTS, collapse_tags=False),
    "ptb": dict(_TOKEN_DEFAULTS, drop_traces=True),
    "conll": dict(_TOKEN_DEFAULTS, column=1, word_column=0, sep=None),
    "conllu": dict(_TOKEN_DEFAULTS, tagset="upos"),
}

#: Preprocessing options (see :meth:`Corpus.preprocess`) with their defaults.
PREPROCESS_DEFAULTS: Dict[str, Any] = {"dedupe": False, "subset": None, "subset_seed": None, "max_len": None,
                                       "min_len": None, "merge_below": None, "residual_symbol": DEFAULT_RESIDUAL,
                                       "shuffle_seed": None}

_ALL_READER_OPTIONS = set().union(*READER_DEFAULTS.values())


def _version() -> str:
    try:
        from .. import __version__
        return __version__
    except Exception:  # pragma: no cover
        return "unknown"


def load(path, format: str = "auto", *, preset: Optional[str] = None,
         progress: Optional[Callable[[int, int], Any]] = None, **options) -> Corpus:
    """Read a data file into a :class:`Corpus`.

    Parameters
    ----------
    path : str or path-like
        The file; ``.gz`` (gzip) files are decompressed transparently while streaming.
        ``"-"`` reads standard input.  Line endings may be LF, CRLF or CR (old Mac).
    format : str, default "auto"
        ``"auto"`` detects the format from the extension, then from the content.
        Otherwise one of ``fasta``, ``medpost``, ``word_tag``, ``word_slash_tag``,
        ``ptb``, ``conll``, ``conllu`` (aliases such as ``"brown"``, ``"mrg"``,
        ``"word/tag"`` are accepted).
    preset : str, optional
        A name from :data:`PRESETS` (``paper_protein``, ``paper_medpost``,
        ``reference_code_protein``, ``reference_code_penn``): its reader and
        preprocessing options are used; explicit ``options`` override them.
    progress : callable, optional
        ``progress(bytes_read, total_bytes)``, called every few MB and at the end
        (bytes of the file on disk, i.e. compressed bytes for ``.gz``).
    **options
        Reader options (see ``READER_DEFAULTS`` and docs/DATA.md):

        * FASTA: ``mol`` ("protein" | "na" | "all"), ``alphabet`` ("observed", a
          preset name from ``ALPHABETS`` or a string of symbols), ``uppercase``,
          ``strip_stop``, ``nucleotide`` (None | "dna" | "rna"), ``keep_names``.
        * Tagged formats: ``observe`` ("tags" | "words"), ``max_vocab``,
          ``unknown_symbol``, ``lowercase`` (words), ``on_malformed`` ("skip" | "error"),
          ``encoding``; ``collapse_tags`` (word/TAG), ``drop_traces`` (PTB),
          ``column``, ``word_column``, ``sep`` (CoNLL), ``tagset`` ("upos" | "xpos", CoNLL-U).

        and preprocessing options, applied after reading (see :meth:`Corpus.preprocess`):
        ``dedupe``, ``subset``, ``subset_seed``, ``max_len``, ``min_len``,
        ``merge_below``, ``residual_symbol``, ``shuffle_seed``.

    Returns
    -------
    Corpus
        With ``provenance`` holding the file name, path, size, sha256, format, every
        reader option (defaults included), the preset and the preprocessing steps.

    Raises
    ------
    DataFormatError
        Bad content: empty or binary file, unknown format, undecodable text, no
        records, malformed structure (with the file name, the line and the reason).
        Also: the file is not readable (permissions, a symbolic link loop, an
        unreadable folder on its path) or not a regular file (a FIFO or device).
    FileNotFoundError
        The file does not exist.
    TypeError, ValueError
        Unknown option names or bad option values.
    """
    preset_name = preset
    reader_opts: Dict[str, Any] = {}
    prep_opts: Dict[str, Any] = {}
    preset_reader: Dict[str, Any] = {}
    if preset is not None:
        p = get_preset(preset)
        preset_reader = dict(p.get("load", {}))
        prep_opts.update(p.get("preprocess", {}))
    for k, v in options.items():
        if k in PREPROCESS_DEFAULTS:
            prep_opts[k] = v
        elif k in _ALL_READER_OPTIONS:
            reader_opts[k] = v
        else:
            raise TypeError(f"load() got an unknown option {k!r}; reader options: {sorted(_ALL_READER_OPTIONS)}, "
                            f"preprocessing options: {sorted(PREPROCESS_DEFAULTS)}")
    if format is None:
        format = "auto"
    fixed_format = None if format == "auto" else normalize_format(format)

    with open_source(path, progress) as src:
        fmt = fixed_format or detect_format(src.name, src.sample, src.path)
        defaults = READER_DEFAULTS[fmt]
        bad = [k for k in reader_opts if k not in defaults]
        if bad:
            raise ValueError(f"option{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} "
                             f"do{'es' if len(bad) == 1 else ''} not apply to format {fmt!r}")
        opts = dict(defaults)
        opts.update({k: v for k, v in preset_reader.items() if k in defaults})
        opts.update(reader_opts)
        result = _read(src, fmt, opts)
        sha = src.sha256()
        size = src.size
        compressed = src.compressed
        name = src.name
        abspath = src.path if src.is_stdin else os.path.abspath(src.path)
        line_endings = src.line_endings
    if progress is not None:
        progress(size, size)

    provenance = {
        "file": name, "path": abspath, "size": size, "sha256": sha, "compressed": compressed,
        "format": fmt, "format_detected": fixed_format is None, "preset": preset_name,
        "options": _jsonable(opts), "preprocess_options": _jsonable(prep_opts),
        "reader": result["info"], "preprocessing": [], "densehmm_version": _version(),
    }
    corpus = Corpus(result["sequences"], result["vocabulary"], names=result["names"], provenance=provenance,
                    warnings=result["warnings"], validate=False)
    if line_endings == "cr":
        corpus.warnings.append("old Mac line endings (CR only) were read as line breaks")
    for w in corpus.warnings:
        log.info("%s: %s", name, w)
    if any(v is not None and v is not False for k, v in prep_opts.items() if k != "residual_symbol"):
        corpus = corpus.preprocess(**prep_opts)
    return corpus


def _jsonable(d: Dict[str, Any]) -> Dict[str, Any]:
    """Option values as plain JSON types (numpy scalars become Python numbers)."""
    out = {}
    for k, v in d.items():
        if hasattr(v, "item") and callable(v.item):
            v = v.item()
        elif not isinstance(v, (str, int, float, bool, type(None))):
            v = repr(v)
        out[k] = v
    return out


def _read(src, fmt: str, opts: Dict[str, Any]) -> Dict[str, Any]:
    if fmt == "fasta":
        return read_fasta(src, **opts)
    report = TokenReport(src.path, opts["on_malformed"])
    lines = src.text_lines(opts["encoding"])
    if fmt == "medpost":
        sents = read_medpost(lines, report)
    elif fmt == "word_tag":
        sents = read_word_tag(lines, report, "_")
    elif fmt == "word_slash_tag":
        sents = read_word_tag(lines, report, "/")
    elif fmt == "ptb":
        sents = read_ptb(lines, report, src.path, drop_traces=bool(opts["drop_traces"]))
    elif fmt == "conll":
        sents = read_conll(lines, report, src.path, column=int(opts["column"]), word_column=int(opts["word_column"]),
                           sep=opts["sep"])
    elif fmt == "conllu":
        sents = read_conllu(lines, report, src.path, tagset=opts["tagset"])
    else:  # pragma: no cover - normalize_format guards this
        raise ValueError(f"unknown format {fmt!r}")
    tag_map = collapse_brown_tag if (fmt == "word_slash_tag" and opts.get("collapse_tags")) else None
    return build_token_corpus(sents, report, observe=opts["observe"], max_vocab=opts["max_vocab"],
                              unknown_symbol=opts["unknown_symbol"], lowercase=bool(opts["lowercase"]),
                              tag_map=tag_map)

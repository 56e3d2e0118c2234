"""``load``: open any supported file and return a Corpus."""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .corpus import DEFAULT_RESIDUAL, Corpus
from .conll import read_conll, read_conllu
from .detect import detect_format, normalize_format
from .errors import DataFormatError, printable
from .fasta import read_fasta
from .presets import get_preset
from .ptb import read_ptb
from .source import open_source
from .tagged import collapse_brown_tag, read_medpost, read_word_tag
from .tokens import DEFAULT_UNKNOWN, WORDS_MIN_COUNT, TokenEncoder, TokenReport

__all__ = ["load", "READER_DEFAULTS", "PREPROCESS_DEFAULTS", "WORDS_MIN_COUNT"]

log = logging.getLogger("densehmm_core.data")

_TOKEN_DEFAULTS = {"observe": "tags", "max_vocab": None, "min_count": None, "rare": "unk",
                   "unknown_symbol": DEFAULT_UNKNOWN, "lowercase": False, "on_malformed": "skip", "encoding": "utf-8"}
#: Options that shape the one vocabulary of a multi-file corpus (taken from the main file's options).
_VOCAB_OPTIONS = ("observe", "max_vocab", "min_count", "rare", "unknown_symbol", "lowercase")

#: Every reader option, per format, with its default.
READER_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "fasta": {"mol": "protein", "alphabet": "observed", "uppercase": True, "strip_stop": True,
              "nucleotide": None, "keep_names": True},
    "medpost": dict(_TOKEN_DEFAULTS),
    "word_tag": dict(_TOKEN_DEFAULTS),
    "word_slash_tag": dict(_TOKEN_DEFAULTS, collapse_tags=False),
    "ptb": dict(_TOKEN_DEFAULTS, drop_traces=True),
    "conll": dict(_TOKEN_DEFAULTS, column=1, word_column=0, sep=None, on_bad_sentence="error"),
    "conllu": dict(_TOKEN_DEFAULTS, tagset="upos", on_bad_sentence="error"),
}

#: Preprocessing options (see :meth:`Corpus.preprocess`) with their defaults.
PREPROCESS_DEFAULTS: Dict[str, Any] = {"dedupe": False, "subset": None, "subset_seed": None, "chunk_len": None,
                                       "max_len": None,
                                       "min_len": None, "merge_below": None, "residual_symbol": DEFAULT_RESIDUAL,
                                       "shuffle_seed": None}

_ALL_READER_OPTIONS = set().union(*READER_DEFAULTS.values())


def _version() -> str:
    from .. import __version__
    return __version__


PathLike = Union[str, "os.PathLike[str]"]


def load(path, format: str = "auto", *, preset: Optional[str] = None,
         progress: Optional[Callable[[int, int], Any]] = None,
         extra: Optional[Union[PathLike, Sequence[PathLike]]] = None,
         defaults: Optional[Dict[str, Any]] = None, **options) -> Corpus:
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
        preprocessing options are used; explicit ``options`` override them.  A preset
        whose reader options do not apply to the file's format (``paper_protein`` on a
        CoNLL-U file) is a ``ValueError``.
    progress : callable, optional
        ``progress(bytes_read, total_bytes)``, called every few MB and at the end
        (bytes of the file on disk, i.e. compressed bytes for ``.gz``), for ``path``
        (not for ``extra`` files).
    extra : path or list of paths, optional
        Tagged corpora only: more files of unlabelled text for the same training corpus
        (e.g. Brown or CoNLL-2000 beside a gold CoNLL-U file).  Each is read in its own
        format (detected) with the options that apply to it; one vocabulary is built
        from the counts over every file (``lowercase``, ``min_count``, ``max_vocab``,
        ``rare`` act on the union).  Their sentences come after those of ``path`` and
        their tags are :data:`NO_TAG` (-1): whatever tags an extra file has are not gold.
        :meth:`Corpus.labelled` gives back the sentences of ``path`` alone (for scoring).
        ``subset`` (and ``subset_seed``) choose among the sentences of ``path`` only: the extra
        files' sentences all stay.
    defaults : dict, optional
        Reader options that replace the format's defaults **where they apply to the
        detected format** (others are ignored), below the preset and ``options``: e.g.
        ``{"observe": "words", "tagset": "xpos"}`` taken from a model's training
        provenance, to read new data the way its training data were read.
    **options
        Reader options (see ``READER_DEFAULTS`` and docs/DATA.md):

        * FASTA: ``mol`` ("protein" | "na" | "all"), ``alphabet`` ("observed", a
          preset name from ``ALPHABETS`` or a string of symbols), ``uppercase``,
          ``strip_stop``, ``nucleotide`` (None | "dna" | "rna"), ``keep_names``.
        * Tagged formats: ``observe`` ("tags" | "words"), ``max_vocab``, ``min_count``
          (words: :data:`WORDS_MIN_COUNT` = 2 when not given, so that words seen once, and
          at scoring time words never seen, are read as ``unknown_symbol``; 1 keeps every
          word), ``rare`` ("unk" | "shape": rare words become ``unknown_symbol`` or their
          word-shape class, see :mod:`densehmm_core.data.wordshape`),
          ``unknown_symbol``, ``lowercase`` (words), ``on_malformed`` ("skip" | "error"),
          ``encoding``; ``collapse_tags`` (word/TAG), ``drop_traces`` (PTB),
          ``column``, ``word_column``, ``sep`` (CoNLL), ``tagset`` ("upos" | "xpos", CoNLL-U),
          ``on_bad_sentence`` (CoNLL, CoNLL-U: "error", or "skip" to read the complete
          sentences of a file cut short or holding a broken line, and count the others).

        and preprocessing options, applied after reading (see :meth:`Corpus.preprocess`):
        ``dedupe``, ``subset``, ``subset_seed``, ``chunk_len``, ``max_len``, ``min_len``,
        ``merge_below``, ``residual_symbol``, ``shuffle_seed``.

    Returns
    -------
    Corpus
        With ``provenance`` holding the file name, path, size, sha256, format, every
        reader option (defaults included), the preset, the preprocessing steps and, with
        ``extra``, one entry per extra file.  For tagged formats ``corpus.tags`` and
        ``corpus.tag_vocabulary`` hold the gold tags (whatever ``observe`` is).

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
    fixed_format = None if str(format).strip().lower() == "auto" else normalize_format(format)

    extras: List[Any] = [] if extra is None else ([extra] if isinstance(extra, (str, os.PathLike)) else list(extra))

    # the text encoding asked for (the file's byte-order mark, if any, still decides): one that is not
    # ASCII-compatible is refused before the file is opened; utf-16-le/-be, utf-32-le/-be are transcoded
    encoding = next((o["encoding"] for o in (reader_opts, preset_reader, defaults or {}) if "encoding" in o), None)
    with open_source(path, progress, encoding) as src:
        fmt = fixed_format or detect_format(src.name, src.sample, src.path)
        fmt_defaults = READER_DEFAULTS[fmt]
        bad = [k for k in reader_opts if k not in fmt_defaults]
        if bad:
            raise ValueError(f"option{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} "
                             f"do{'es' if len(bad) == 1 else ''} not apply to format {fmt!r}")
        foreign = [k for k in preset_reader if k not in fmt_defaults]
        if foreign:
            raise ValueError(f"preset {preset_name!r} is meant for {get_preset(preset_name)['format']} files, not "
                             f"{fmt}: its option{'s' if len(foreign) > 1 else ''} "
                             f"{', '.join(f'{k}={preset_reader[k]!r}' for k in foreign)} "
                             f"do{'es' if len(foreign) == 1 else ''} not apply")
        if extras and fmt == "fasta":
            raise ValueError("extra= (more files for one training corpus) is for tagged corpora, not FASTA")
        opts = dict(fmt_defaults)
        opts.update({k: v for k, v in (defaults or {}).items() if k in fmt_defaults})
        opts.update(preset_reader)
        opts.update(reader_opts)
        if opts.get("observe") == "words" and opts.get("min_count") is None:
            opts["min_count"] = WORDS_MIN_COUNT   # words: rare ones (and unseen ones later) -> unknown_symbol
        if fmt == "fasta":
            result = read_fasta(src, **opts)
        else:
            encoder = TokenEncoder(**{k: opts[k] for k in _VOCAB_OPTIONS})
            result = _read_tokens(src, fmt, opts, encoder, gold=True)
        sha = src.sha256()
        size = src.bytes_read if src.is_stdin else src.size
        compressed = src.compressed
        name = src.name
        abspath = src.path if src.is_stdin else os.path.abspath(src.path)
        line_endings = src.line_endings
    if progress is not None:
        progress(size, size)
    extra_prov: List[Dict[str, Any]] = []
    if fmt != "fasta":
        warnings = list(result["warnings"])
        for e in extras:
            e_prov, e_warn = _read_extra(e, opts, encoder)
            extra_prov.append(e_prov)
            warnings += [f"{printable(e_prov['file'])}: {w}" for w in e_warn]
        enc = encoder.finish()
        result = {"sequences": enc["sequences"], "vocabulary": enc["vocabulary"], "names": enc["names"],
                  "tags": enc["tags"], "tag_vocabulary": enc["tag_vocabulary"],
                  "warnings": warnings + enc["warnings"], "info": dict(result["info"], **enc["info"])}

    provenance = {
        "file": name, "path": abspath, "size": size, "sha256": sha, "compressed": compressed,
        "format": fmt, "format_detected": fixed_format is None, "preset": preset_name,
        "options": _jsonable(opts), "preprocess_options": _jsonable(prep_opts),
        "reader": result["info"], "preprocessing": [], "densehmm_version": _version(),
    }
    if extra_prov:
        provenance["extra"] = extra_prov
    corpus = Corpus(result["sequences"], result["vocabulary"], names=result["names"], provenance=provenance,
                    warnings=result["warnings"], validate=False, tags=result.get("tags"),
                    tag_vocabulary=result.get("tag_vocabulary"))
    corpus.warnings.extend(_source_warnings(line_endings))
    for w in corpus.warnings:
        log.info("%s: %s", name, w)
    prep = dict(prep_opts)
    if extra_prov and prep.get("subset") is not None:
        corpus = _subset_of_path(corpus, prep)
    if any(v is not None and v is not False for k, v in prep.items() if k != "residual_symbol"):
        corpus = corpus.preprocess(**prep)
    return corpus


def _subset_of_path(corpus: Corpus, prep: Dict[str, Any]) -> Corpus:
    """With ``extra`` files, ``subset`` (and ``subset_seed``) choose among the sentences of ``path`` only: the
    extra files' sentences (after them, without gold tags) all stay, since they are given for their text.
    ``dedupe`` runs first, as in :meth:`Corpus.preprocess`; the other steps are left in ``prep``."""
    sub = {k: prep.pop(k) for k in ("dedupe", "subset", "subset_seed") if k in prep}
    if sub.pop("dedupe", False):
        corpus = corpus.preprocess(dedupe=True)
    n_path = len(corpus.labelled_indices())   # they come first, with gold tags
    head = corpus.select(range(n_path)).preprocess(**sub)   # the step's own choice (first N, or seeded)
    tail = range(n_path, corpus.n_sequences)
    step = dict(head.provenance["preprocessing"][-1], extra_kept=len(tail))
    return corpus._derive(list(head.sequences) + [corpus.sequences[i] for i in tail],
                          names=None if corpus.names is None else list(head.names) + [corpus.names[i] for i in tail],
                          tags=list(head.tags) + [corpus.tags[i] for i in tail], step=step)


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


def _sentences(src, fmt: str, opts: Dict[str, Any], report: TokenReport):
    lines = src.text_lines(opts["encoding"])
    if fmt == "medpost":
        return read_medpost(lines, report)
    if fmt == "word_tag":
        return read_word_tag(lines, report, "_")
    if fmt == "word_slash_tag":
        return read_word_tag(lines, report, "/")
    if fmt == "ptb":
        return read_ptb(lines, report, src.path, drop_traces=bool(opts["drop_traces"]))
    if fmt == "conll":
        return read_conll(lines, report, src.path, column=int(opts["column"]), word_column=int(opts["word_column"]),
                          sep=opts["sep"])
    if fmt == "conllu":
        return read_conllu(lines, report, src.path, tagset=opts["tagset"])
    raise ValueError(f"unknown format {fmt!r}")  # pragma: no cover - normalize_format guards this


def _read_tokens(src, fmt: str, opts: Dict[str, Any], encoder: TokenEncoder, *, gold: bool,
                 name_prefix: str = "") -> Dict[str, Any]:
    """Feed one tagged file to ``encoder``; returns its counts and warnings."""
    report = TokenReport(src.path, opts["on_malformed"], opts.get("on_bad_sentence", "error"))
    tag_map = collapse_brown_tag if (fmt == "word_slash_tag" and opts.get("collapse_tags")) else None
    return encoder.add(_sentences(src, fmt, opts, report), report, gold=gold, tag_map=tag_map,
                       name_prefix=name_prefix)


def _read_extra(spec, main_opts: Dict[str, Any], encoder: TokenEncoder):
    """Read one extra (unlabelled) file into ``encoder``: (provenance entry, warnings).

    ``spec`` is a path or a ``(path, format)`` pair.  The options of the main file that
    apply to the extra file's format are used, the others take their defaults.
    """
    fmt_req = None
    if isinstance(spec, (tuple, list)):
        spec, fmt_req = spec
    with open_source(spec, None, main_opts.get("encoding")) as src:
        fmt = normalize_format(fmt_req) if fmt_req else detect_format(src.name, src.sample, src.path)
        if fmt == "fasta":
            raise DataFormatError("an extra file must be a tagged corpus (words), not FASTA", src.path)
        opts = dict(READER_DEFAULTS[fmt])
        opts.update({k: v for k, v in main_opts.items() if k in opts})
        part = _read_tokens(src, fmt, opts, encoder, gold=False, name_prefix=f"{src.name}:")
        prov = {"file": src.name, "path": src.path if src.is_stdin else os.path.abspath(src.path), "size": src.size,
                "sha256": src.sha256(),
                "compressed": src.compressed, "format": fmt, "options": _jsonable(opts), "reader": part["info"]}
    return prov, part["warnings"] + _source_warnings(src.line_endings)


def _source_warnings(line_endings: str) -> List[str]:
    """What reading the file itself changed (not its content), for ``corpus.warnings``."""
    if line_endings == "cr":
        return ["old Mac line endings (CR only) were read as line breaks"]
    return []

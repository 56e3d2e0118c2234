"""The supported formats (names, extensions) and format detection by extension and content."""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from .errors import DataFormatError

__all__ = ["FORMATS", "ALIASES", "describe_formats", "file_dialog_filters", "detect_format", "normalize_format"]

#: name -> label, extensions (without ``.gz``; gzip is always accepted), description.
FORMATS: Dict[str, Dict[str, Any]] = {
    "fasta": {"label": "FASTA sequences",
              "extensions": [".fasta", ".fa", ".faa", ".fna", ".ffn", ".frn", ".fas", ".fsa", ".mpfa", ".seq"],
              "description": "Protein or nucleotide sequences; '>' header lines (RCSB pdb_seqres, UniProt, "
                             "UniRef, Prodigal, NCBI), single-line or wrapped."},
    "medpost": {"label": "MedPost tagged corpus",
                "extensions": [".ioc"],
                "description": "An id line (P01234567A01) followed by one line of word_TAG tokens."},
    "word_tag": {"label": "word_TAG tagged text",
                 "extensions": [".pos", ".tagged"],
                 "description": "One sentence per line of word_TAG tokens (split on the last '_')."},
    "word_slash_tag": {"label": "word/TAG tagged text (Brown)",
                       "extensions": [],
                       "description": "One sentence per line of word/TAG tokens (split on the last '/'); "
                                      "collapse_tags=True collapses Brown tag suffixes."},
    "ptb": {"label": "Penn Treebank trees",
            "extensions": [".mrg"],
            "description": "Bracketed parse trees; leaves (TAG word); -NONE- traces dropped by default."},
    "conll": {"label": "CoNLL columns",
              "extensions": [".conll", ".conllx", ".iob", ".bio"],
              "description": "One token per line in columns, a blank line between sentences; pick the "
                             "tag column with column=."},
    "conllu": {"label": "CoNLL-U (Universal Dependencies)",
               "extensions": [".conllu"],
               "description": "10 tab-separated columns; UPOS or XPOS tags; ranges and empty nodes skipped."},
}

ALIASES = {"fa": "fasta", "faa": "fasta", "fna": "fasta", "ioc": "medpost", "word/tag": "word_slash_tag",
           "brown": "word_slash_tag", "slash": "word_slash_tag", "word_TAG": "word_tag", "underscore": "word_tag",
           "mrg": "ptb", "penn": "ptb", "treebank": "ptb", "conllu": "conllu", "conll-u": "conllu",
           "conll2000": "conll", "columns": "conll"}


_ALIASES_LOWER = {k.lower(): v for k, v in ALIASES.items()}


def normalize_format(fmt: str) -> str:
    """The canonical format name for ``fmt``, a name or an alias in any case (``"FASTA"``,
    ``"CoNLL-U"``, ``"Brown"``); ``ValueError`` if unknown."""
    key = str(fmt).strip().lower()
    f = key if key in FORMATS else _ALIASES_LOWER.get(key)
    if f is None:
        raise ValueError(f"unknown format {fmt!r}; choose 'auto' or one of {sorted(FORMATS)}")
    return f


def describe_formats() -> List[Dict[str, object]]:
    """The formats for a user interface: a list of dicts with name, label, extensions, description."""
    return [{"name": k, **v, "extensions": list(v["extensions"])} for k, v in FORMATS.items()]


def file_dialog_filters() -> List[str]:
    """Qt-style file-dialog filters, e.g. ``"FASTA sequences (*.fasta *.fa ... *.fasta.gz ...)"``;
    the first is "All supported files", the last "All files (*)"."""
    out = []
    every = []
    for v in FORMATS.values():
        exts = list(v["extensions"]) or [".txt"]
        pats = [f"*{e}" for e in exts] + [f"*{e}.gz" for e in exts]
        every += pats
        out.append(f"{v['label']} ({' '.join(pats)})")
    every += ["*.txt", "*.txt.gz"]
    return [f"All supported files ({' '.join(dict.fromkeys(every))})"] + out + ["All files (*)"]


def _by_extension(name: str) -> Optional[str]:
    n = name.lower()
    if n.endswith(".gz"):
        n = n[:-3]
    ext = os.path.splitext(n)[1]
    for k, v in FORMATS.items():
        if ext in v["extensions"]:
            return k
    return None


_CONLLU_ID = re.compile(r"^\d+(?:[-.]\d+)?$")


def sniff(sample: bytes) -> Optional[str]:
    """Guess the format from the first bytes of the content (None if nothing fits)."""
    text = sample.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if len(sample) >= 1 << 16 and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut
    lines = [ln.rstrip("\r") for ln in lines][:400]
    nonblank = [ln for ln in lines if ln.strip()]
    if not nonblank:
        return None
    first = nonblank[0].lstrip()
    if first.startswith(">") or (first.startswith(";") and any(ln.startswith(">") for ln in nonblank)):
        return "fasta"
    if first.startswith("("):
        return "ptb"
    body = [ln for ln in nonblank if not ln.startswith("#")]
    if body:
        tabbed = [ln.split("\t") for ln in body]
        if sum(1 for f in tabbed if len(f) == 10 and _CONLLU_ID.match(f[0])) >= 0.9 * len(body):
            return "conllu"
    ids = sum(1 for ln in nonblank if re.match(r"^\s*[A-Za-z]*\d+[A-Za-z]\d+\s*$", ln))
    toks = [t for ln in nonblank for t in ln.split()]
    under = sum(1 for t in toks if "_" in t[1:])
    slash = sum(1 for t in toks if "/" in t[1:])
    if ids and ids >= 0.3 * len(nonblank) and under >= 0.5 * (len(toks) - ids):
        return "medpost"
    counts = [len(ln.split()) for ln in nonblank]
    has_blank = any(not ln.strip() for ln in lines[:-1])
    if has_blank and len(nonblank) >= 2 and min(counts) >= 2 and max(counts) == min(counts) and counts[0] <= 12:
        return "conll"
    if toks and under >= 0.6 * len(toks) and under >= slash:
        return "word_tag"
    if toks and slash >= 0.6 * len(toks):
        return "word_slash_tag"
    return None


def detect_format(name: str, sample: bytes, path: Optional[str] = None) -> str:
    """Format from the extension, else from the content; :class:`DataFormatError` if neither fits."""
    fmt = _by_extension(name)
    if fmt is not None:
        return fmt
    fmt = sniff(sample)
    if fmt is None:
        raise DataFormatError("unknown format: the content looks like none of "
                              f"{', '.join(FORMATS)}; name the format to read it as", path or name)
    return fmt

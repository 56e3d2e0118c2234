"""Readers of tagged text: plain ``word_TAG``, Brown-style ``word/TAG`` and MedPost ``.ioc``."""
from __future__ import annotations

import re
from typing import Iterator, List, Optional, Tuple

from .tokens import Sentence, TokenReport

__all__ = ["read_word_tag", "read_medpost", "collapse_brown_tag", "MEDPOST_ID"]

#: A MedPost sentence id line, e.g. ``P01234567A01`` (a single token without the ``_`` separator).
MEDPOST_ID = re.compile(r"^[A-Za-z]*\d+[A-Za-z]\d+$")
_BROWN_SUFFIX = re.compile(r"(?:-tl|-hl|-nc)+$", re.IGNORECASE)


def collapse_brown_tag(tag: str) -> str:
    """Collapse a Brown tag: drop the ``fw-`` prefix, keep the first part of a ``+`` join and
    strip the ``-tl``, ``-hl`` and ``-nc`` suffixes (``fw-nn-tl`` -> ``nn``, ``ppss+md`` -> ``ppss``)."""
    t = tag
    if t[:3].lower() == "fw-" and len(t) > 3:
        t = t[3:]
    if "+" in t:
        head = t.split("+", 1)[0]
        t = head if head else t
    t2 = _BROWN_SUFFIX.sub("", t)
    return t2 if t2 else t


def split_tokens(line: str, lineno: int, sep: str, report: TokenReport) -> List[Tuple[str, str]]:
    pairs = []
    for tok in line.split():
        word, s, tag = tok.rpartition(sep)
        if not s:
            report.malformed(lineno, tok, f"no '{sep}' separator")
        elif not word:
            report.malformed(lineno, tok, "empty word")
        elif not tag:
            report.malformed(lineno, tok, "empty tag")
        else:
            pairs.append((word, tag))
    return pairs


def read_word_tag(lines: Iterator[Tuple[int, str]], report: TokenReport, sep: str = "_") -> Iterator[Sentence]:
    """One sentence per non-blank line of ``word<sep>TAG`` tokens (split on the last ``sep``)."""
    for lineno, line in lines:
        if not line.strip():
            continue
        yield lineno, None, split_tokens(line, lineno, sep, report)


def read_medpost(lines: Iterator[Tuple[int, str]], report: TokenReport) -> Iterator[Sentence]:
    """MedPost ``.ioc``: an id line (``P01234567A01``) followed by one line of ``word_TAG`` tokens.

    An id line followed directly by another id line is an empty record (counted by the caller);
    a sentence line without a preceding id line is named by its line number.
    """
    pending: Optional[Tuple[int, str]] = None
    for lineno, line in lines:
        s = line.strip()
        if not s:
            continue
        if " " not in s and "\t" not in s and "_" not in s and MEDPOST_ID.match(s):
            if pending is not None:
                yield pending[0], pending[1], []
            pending = (lineno, s)
            continue
        sid = pending[1] if pending is not None else None
        pending = None
        yield lineno, sid, split_tokens(s, lineno, "_", report)
    if pending is not None:
        yield pending[0], pending[1], []

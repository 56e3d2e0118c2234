"""Readers of CoNLL column files and CoNLL-U."""
from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from .errors import DataFormatError
from .tokens import Sentence, TokenReport

__all__ = ["read_conll", "read_conllu", "CONLLU_COLUMNS"]

CONLLU_COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")


def read_conll(lines: Iterator[Tuple[int, str]], report: TokenReport, path: str, column: int = 1,
               word_column: int = 0, sep: Optional[str] = None) -> Iterator[Sentence]:
    """CoNLL columns: one token per line, a blank line between sentences.

    Parameters
    ----------
    column : int, default 1
        0-based index of the tag column (negative counts from the end).
    word_column : int, default 0
        0-based index of the word column.
    sep : str, optional
        Column separator; default any run of whitespace.

    Every token line must have the same number of columns as the first one;
    ``-DOCSTART-`` lines are skipped.
    """
    ncols = None
    sent: List[Tuple[str, str]] = []
    start = 0
    broken = False          # on_bad_sentence="skip": the current sentence is left out
    for lineno, line in lines:
        if not line.strip():
            if (sent or start) and not broken:
                yield start, None, sent
            sent, start, broken = [], 0, False
            continue
        if broken:
            continue
        fields = line.split(sep) if sep is not None else line.split()
        if fields and fields[0] == "-DOCSTART-":
            continue
        if ncols is not None and len(fields) != ncols:
            report.bad_sentence(lineno, f"wrong column count: expected {ncols} columns (as on the first token "
                                        f"line), found {len(fields)}")
            broken = True
            continue
        if ncols is None:
            ncols = len(fields)
            for c, what in ((column, "column"), (word_column, "word_column")):
                if not -ncols <= c < ncols:
                    raise DataFormatError(f"{what}={c} requested but the file has {ncols} column"
                                          f"{'s' if ncols != 1 else ''} (0-based indices)", path, lineno)
        if not start:
            start = lineno
        word, tag = fields[word_column].strip(), fields[column].strip()
        if not word:
            report.malformed(lineno, line, "empty word")
        elif not tag:
            report.malformed(lineno, line, "empty tag")
        else:
            sent.append((word, tag))
    if (sent or start) and not broken:
        yield start, None, sent


def _is_int(s: str) -> bool:
    return s.isascii() and s.isdigit()


def read_conllu(lines: Iterator[Tuple[int, str]], report: TokenReport, path: str, tagset: str = "upos"
                ) -> Iterator[Sentence]:
    """CoNLL-U: 10 tab-separated columns, ``#`` comments, blank line after each sentence.

    Multiword-token ranges (``3-4``) and empty nodes (``8.1``) are skipped; ``tagset``
    picks UPOS or XPOS; a tag ``_`` counts as a malformed (missing) tag.  The
    ``# sent_id`` comment names the sentence.

    Token IDs must count 1, 2, 3, ... in each sentence.  A sentence that starts with no
    blank line before it (a token ID 1 after tokens, or a ``# sent_id`` / ``# text``
    comment after tokens) is read as a new sentence and counted
    (:meth:`TokenReport.missing_blank`); any other ID out of order (a gap, a repeat, 0, a
    first ID other than 1) breaks the sentence (:meth:`TokenReport.bad_sentence`).
    """
    if tagset not in ("upos", "xpos"):
        raise ValueError(f"tagset must be 'upos' or 'xpos', got {tagset!r}")
    col = 3 if tagset == "upos" else 4
    sent: List[Tuple[str, str]] = []
    sid: Optional[str] = None
    start = 0
    last = 0                # the last word ID of the current sentence (0: none yet)
    broken = False          # on_bad_sentence="skip": the current sentence is left out
    for lineno, line in lines:
        if not line.strip():
            if start and not broken:
                yield start, sid, sent
            sent, sid, start, last, broken = [], None, 0, 0, False
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            key = body.split("=", 1)[0].strip() if "=" in body else ""
            if key in ("sent_id", "text") and (last or broken):
                # the next sentence's comments, with no blank line before them
                if not broken:
                    yield start, sid, sent
                report.missing_blank(lineno)
                sent, sid, start, last, broken = [], None, 0, 0, False
            if broken:
                continue
            if key == "sent_id":
                sid = body.split("=", 1)[1].strip()
            continue
        fields = line.split("\t")
        tid = fields[0]
        first = _first_id(tid)
        if first == 1 and (last or broken) and len(fields) == 10:
            # a token ID 1 (or a range 1-2) after tokens: a new sentence with no blank line before it
            if not broken:
                yield start, sid, sent
            report.missing_blank(lineno)
            sent, sid, start, last, broken = [], None, 0, 0, False
        if broken:
            continue
        if not start:
            start = lineno
        if len(fields) != 10:
            report.bad_sentence(lineno, f"wrong column count: CoNLL-U needs 10 tab-separated columns, found "
                                        f"{len(fields)}")
            broken = True
            continue
        if _is_int(tid):
            if int(tid) != last + 1:
                report.bad_sentence(lineno, _out_of_order(int(tid), last))
                broken = True
                continue
            last += 1
        elif "-" in tid and all(_is_int(p) for p in tid.split("-", 1)):
            continue  # multiword-token range
        elif "." in tid and all(_is_int(p) for p in tid.split(".", 1)):
            continue  # empty node
        else:
            report.bad_sentence(lineno, f"bad token ID {tid[:20]!r} (expected an integer, a range 3-4 or an "
                                        f"empty node 8.1)")
            broken = True
            continue
        word, tag = fields[1], fields[col].strip()
        if not word:
            report.malformed(lineno, line[:60], "empty word")
        elif not tag or tag == "_":
            report.malformed(lineno, line[:60], f"missing {tagset.upper()}")
        else:
            sent.append((word, tag))
    if start and not broken:
        yield start, sid, sent


def _first_id(tid: str) -> Optional[int]:
    """The word ID a token line starts at: ``3`` for ``3`` and for a range ``3-4``; None otherwise."""
    head = tid.split("-", 1)[0] if "-" in tid else tid
    return int(head) if _is_int(head) and len(head) < 10 else None


def _out_of_order(tid: int, last: int) -> str:
    if not last:
        return f"bad token ID {tid}: a sentence's first token has ID 1"
    if tid <= last:
        return f"bad token ID {tid}: it repeats an ID (the previous token has ID {last}; IDs count 1, 2, 3, ...)"
    return f"bad token ID {tid}: IDs skip from {last} to {tid} (expected {last + 1})"

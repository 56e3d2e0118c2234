"""Reader of Penn Treebank bracketed parse trees (``.mrg``): leaves ``(TAG word)``."""
from __future__ import annotations

import re
from typing import Iterator, List, Tuple

from .errors import DataFormatError
from .tokens import Sentence, TokenReport

__all__ = ["read_ptb", "TRACE_TAG"]

TRACE_TAG = "-NONE-"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def read_ptb(lines: Iterator[Tuple[int, str]], report: TokenReport, path: str,
             drop_traces: bool = True) -> Iterator[Sentence]:
    """Yield one sentence per top-level tree: its leaves ``(TAG word)`` in order.

    ``-NONE-`` trace leaves (empty elements such as ``*T*-1``) are dropped when
    ``drop_traces`` is true.  Unbalanced brackets and text outside a tree raise
    :class:`DataFormatError`; a bracket without children that is not ``(TAG word)``
    is counted as a malformed token.
    """
    # stack of open brackets: [atoms, has_child]
    stack: List[list] = []
    leaves: List[Tuple[str, str]] = []
    tree_line = 0
    for lineno, line in lines:
        if "(" not in line and ")" not in line:
            if not line.strip():
                continue
            if not stack:
                raise DataFormatError(f"text outside a bracketed tree: {line.strip()[:40]!r}", path, lineno)
        for tok in _TOKEN.findall(line):
            if tok == "(":
                if not stack:
                    tree_line = lineno
                    leaves = []
                else:
                    stack[-1][1] = True
                stack.append([[], False])
            elif tok == ")":
                if not stack:
                    raise DataFormatError("unbalanced brackets: ')' without a matching '('", path, lineno)
                atoms, has_child = stack.pop()
                if not has_child:
                    if len(atoms) == 2:
                        tag, word = atoms
                        if not (drop_traces and tag == TRACE_TAG):
                            leaves.append((word, tag))
                    else:
                        report.malformed(lineno, "(" + " ".join(atoms) + ")",
                                         "leaf is not of the form (TAG word)")
                if not stack:
                    yield tree_line, None, leaves
                    leaves = []
            else:
                if not stack:
                    raise DataFormatError(f"text outside a bracketed tree: {tok[:40]!r}", path, lineno)
                stack[-1][0].append(tok)
    if stack:
        raise DataFormatError(f"unbalanced brackets: {len(stack)} '(' not closed at the end of the file "
                              f"(tree starting at line {tree_line})", path, tree_line)

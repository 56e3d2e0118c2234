"""The one exception type raised for bad input data."""
from __future__ import annotations

import os
from typing import Optional, Union

__all__ = ["DataFormatError", "printable"]


def printable(text: str) -> str:
    """``text`` with control and other unprintable characters escaped repr-style (``\\x1b``,
    ``\\n``): a file name in a message can neither move the cursor nor forge a line."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class DataFormatError(ValueError):
    """A data file could not be read.

    Raised by every reader for bad content (empty or binary file, unknown format,
    undecodable text, malformed records, no records...).  It is a ``ValueError``.

    Parameters
    ----------
    reason : str
        What is wrong, in words.
    path : str or path-like, optional
        The file (its name is shown in the message).
    line : int, optional
        1-based line number where the problem was found (of the decompressed text
        for ``.gz`` files).
    skippable : bool, default False
        The problem lies inside one sentence of a CoNLL / CoNLL-U file (e.g. a file cut
        in the middle of a line): reading it with ``on_bad_sentence="skip"`` keeps the
        complete sentences and counts the others.

    Attributes
    ----------
    reason : str
    path : str or None
    file : str or None
        The file's base name (in the message with control characters escaped).
    line : int or None
    skippable : bool
    """

    def __init__(self, reason: str, path: Union[str, os.PathLike, None] = None, line: Optional[int] = None,
                 skippable: bool = False):
        self.reason = str(reason)
        self.skippable = bool(skippable)
        self.path = None if path is None else os.fspath(path)
        self.file = None if self.path is None else os.path.basename(self.path)
        self.line = None if line is None else int(line)
        super().__init__(self._message())

    def _message(self) -> str:
        where = []
        if self.file is not None:
            where.append(printable(self.file))
        if self.line is not None:
            where.append(f"line {self.line}")
        return (", ".join(where) + ": " + self.reason) if where else self.reason

    def __reduce__(self):
        return (type(self), (self.reason, self.path, self.line, self.skippable))

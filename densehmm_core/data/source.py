"""Opening a data file for streaming: gzip, sha256, progress, binary and encoding checks."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import zlib
from typing import Callable, Iterator, Optional, Tuple

from .errors import DataFormatError

__all__ = ["Source", "open_source"]

_CHUNK = 1 << 20
_SAMPLE = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
# Control bytes that never occur in text files (NUL and friends; tab, LF, VT, FF, CR, ESC allowed).
_BINARY_BYTES = bytes(range(0, 8)) + bytes(range(14, 27)) + bytes(range(28, 32))

ProgressCallback = Callable[[int, int], object]


class _HashingRaw(io.RawIOBase):
    """Raw reader that feeds sha256 and reports progress as bytes are read."""

    def __init__(self, fh, total: int, progress: Optional[ProgressCallback]):
        super().__init__()
        self._fh = fh
        self.total = total
        self.pos = 0
        self.sha = hashlib.sha256()
        self._progress = progress
        self._next_report = 0

    def readable(self):
        return True

    def readinto(self, b):
        n = self._fh.readinto(b)
        if n:
            self.sha.update(memoryview(b)[:n])
            self.pos += n
            if self._progress is not None and (self.pos >= self._next_report or self.pos >= self.total):
                self._next_report = self.pos + 4 * _CHUNK
                self._progress(self.pos, self.total)
        return n

    def drain(self) -> None:
        """Read the rest of the file so that the hash covers every byte."""
        while True:
            chunk = self._fh.read(_CHUNK)
            if not chunk:
                break
            self.sha.update(chunk)
            self.pos += len(chunk)
            if self._progress is not None and self.pos >= self._next_report:
                self._next_report = self.pos + 4 * _CHUNK
                self._progress(self.pos, self.total)

    def close(self):
        try:
            self._fh.close()
        finally:
            super().close()


class Source:
    """An open data file: a binary line stream over its (decompressed) content.

    Attributes
    ----------
    path : str
    name : str
        Base name of the file.
    size : int
        Size in bytes on disk.
    compressed : bool
        True for gzip files (detected by their magic bytes).
    stream : binary file object
        Iterate it for lines (``bytes`` ending in ``b"\\n"``).
    sample : bytes
        The first bytes of the decompressed content (for format sniffing).
    """

    def __init__(self, path, progress: Optional[ProgressCallback] = None):
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise FileNotFoundError(f"cannot open {self.path}: {exc.strerror or exc}") from exc
        if os.path.isdir(self.path):
            raise DataFormatError("is a directory, not a data file", self.path)
        self.size = int(st.st_size)
        fh = open(self.path, "rb", buffering=0)
        self._raw = _HashingRaw(fh, self.size, progress)
        self._buffered = io.BufferedReader(self._raw, buffer_size=_CHUNK)
        self.stream = self._buffered
        try:
            head = self._buffered.peek(2)[:2]
            self.compressed = head == _GZIP_MAGIC
            if self.compressed:
                gz = gzip.GzipFile(fileobj=self._buffered, mode="rb")
                self.stream = io.BufferedReader(gz, buffer_size=_CHUNK)
            self.sample = self._peek_sample()
            self._check_sample()
        except BaseException:
            self.close()
            raise

    def _peek_sample(self) -> bytes:
        try:
            return bytes(self.stream.peek(_SAMPLE)[:_SAMPLE])
        except (OSError, EOFError, zlib.error) as exc:
            raise DataFormatError(f"corrupt gzip data ({exc})", self.path) from None

    def _check_sample(self) -> None:
        s = self.sample
        if not s:
            if self.compressed:
                raise DataFormatError("empty file (the gzip archive holds no data)", self.path)
            raise DataFormatError("empty file", self.path)
        if not s.strip():
            raise DataFormatError("empty file (only whitespace)", self.path, 1)
        if s.startswith(_GZIP_MAGIC) and self.compressed:
            raise DataFormatError("gzip inside gzip: decompress the file once first", self.path)
        cut = s.translate(None, _BINARY_BYTES)
        if len(cut) != len(s):
            off = next(i for i, c in enumerate(s) if c in _BINARY_BYTES)
            line = s.count(b"\n", 0, off) + 1
            raise DataFormatError(
                f"binary file (byte 0x{s[off]:02x} at offset {off}); expected a text data file", self.path, line)

    # ------------------------------------------------------------------ reading
    def binary_lines(self) -> Iterator[bytes]:
        """Yield raw lines (with their line ending); gzip errors become DataFormatError."""
        it = iter(self.stream)
        while True:
            try:
                line = next(it)
            except StopIteration:
                return
            except (OSError, EOFError, zlib.error) as exc:
                raise DataFormatError(f"corrupt or truncated gzip data ({exc})", self.path) from None
            yield line

    def _blocks(self) -> Iterator[bytes]:
        """Blocks of whole lines (the last block may lack a final newline)."""
        rest: list = []
        read = self.stream.read
        while True:
            try:
                chunk = read(_CHUNK)
            except (OSError, EOFError, zlib.error) as exc:
                raise DataFormatError(f"corrupt or truncated gzip data ({exc})", self.path) from None
            if not chunk:
                if rest:
                    yield b"".join(rest)
                return
            cut = chunk.rfind(b"\n")
            if cut < 0:
                rest.append(chunk)
                continue
            rest.append(chunk[: cut + 1])
            yield b"".join(rest)
            rest = [chunk[cut + 1:]]

    def text_lines(self, encoding: str = "utf-8") -> Iterator[Tuple[int, str]]:
        """Yield ``(line_number, text)`` with the line ending removed, decoding strictly."""
        try:
            "".encode(encoding)
        except LookupError:
            raise ValueError(f"unknown text encoding {encoding!r}") from None
        lineno = 0
        first = True
        for block in self._blocks():
            if first:
                first = False
                if block.startswith(_BOM):
                    block = block[3:]
            nul = block.find(b"\x00")
            if nul >= 0:
                raise DataFormatError("binary data (NUL byte) in a text file", self.path,
                                      lineno + block.count(b"\n", 0, nul) + 1)
            try:
                text = block.decode(encoding)
            except UnicodeDecodeError as exc:
                line_start = block.rfind(b"\n", 0, exc.start) + 1
                raise DataFormatError(
                    f"undecodable text: not valid {encoding} (byte 0x{block[exc.start]:02x} at column "
                    f"{exc.start - line_start + 1}); pass encoding='latin-1' (or the file's encoding) "
                    f"if it is not {encoding}", self.path, lineno + block.count(b"\n", 0, exc.start) + 1) from None
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            for line in lines:
                lineno += 1
                yield lineno, line.rstrip("\r")

    def sha256(self) -> str:
        """Hex sha256 of the whole file on disk (reads what the reader left unread)."""
        self._raw.drain()
        return self._raw.sha.hexdigest()

    def close(self) -> None:
        try:
            self.stream.close()
        except Exception:  # pragma: no cover - closing a half-read gzip stream
            pass
        try:
            self._buffered.close()
        except Exception:  # pragma: no cover
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def open_source(path, progress: Optional[ProgressCallback] = None) -> Source:
    """Open ``path`` for streaming (see :class:`Source`)."""
    return Source(path, progress)

"""Opening a data file for streaming: gzip, sha256, progress, binary and encoding checks."""
from __future__ import annotations

import gzip
import hashlib
import io
import errno
import os
import stat
import sys
import zlib
from typing import Any, Callable, Iterator, Optional, Tuple

from .errors import DataFormatError, printable

__all__ = ["Source", "open_source", "STDIN", "encoding_kind"]

#: The path that means standard input.
STDIN = "-"

_CHUNK = 1 << 20
_SAMPLE = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
# Control bytes that never occur in text files (NUL and friends; tab, LF, VT, FF, CR, ESC allowed).
_BINARY_BYTES = bytes(range(0, 8)) + bytes(range(14, 27)) + bytes(range(28, 32))

ProgressCallback = Callable[[int, int], object]

# Byte-order marks of the UTF-16 / UTF-32 text that Windows tools write (Notepad's "Unicode",
# PowerShell's ">" redirection, Excel's "Unicode text"): such files are read as UTF-8 after
# transcoding.  UTF-32 first: its little-endian mark starts with UTF-16's.
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
              (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))

# Archives other than gzip, by their magic numbers: (magic, what, article).
_ARCHIVES = ((b"PK\x03\x04", "zip", "a"), (b"PK\x05\x06", "zip", "a"), (b"PK\x07\x08", "zip", "a"),
             (b"BZh", "bzip2", "a"), (b"\xfd7zXZ\x00", "xz", "an"), (b"7z\xbc\xaf\x27\x1c", "7z", "a"),
             (b"\x28\xb5\x2f\xfd", "zstd", "a"))


# Encodings read through a transcoding stream: with their byte-order mark ("bom": the mark says
# the byte order), or in the byte order their name says ("wide", for files without the mark).
_BOM_CODECS = ("utf-16", "utf-32")
_WIDE_CODECS = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


def encoding_kind(encoding: str) -> str:
    """How the readers take text ``encoding``: ``"ascii"`` (an ASCII-compatible encoding, decoded
    line by line: UTF-8, Latin-1, cp1252, ...), ``"bom"`` (utf-16, utf-32: the file's byte-order
    mark decides) or ``"wide"`` (utf-16-le/-be, utf-32-le/-be: transcoded to UTF-8).

    ``ValueError`` for an unknown encoding or one that does not write ASCII as ASCII (cp037,
    utf-7, ...): the readers split lines and columns on ASCII bytes."""
    import codecs
    try:
        name = codecs.lookup(str(encoding)).name
    except LookupError:
        raise ValueError(f"unknown text encoding {encoding!r}") from None
    if name in _BOM_CODECS:
        return "bom"
    if name in _WIDE_CODECS:
        return "wide"
    probe = bytes(range(128))
    try:
        compatible = probe.decode(name) == probe.decode("ascii")
    except (UnicodeError, LookupError):
        compatible = False
    if not compatible:
        raise ValueError(f"text encoding {encoding!r} is not supported: it does not write ASCII characters as "
                         f"ASCII bytes (the readers take UTF-8, Latin-1, cp1252 and other ASCII-compatible "
                         f"encodings; UTF-16 and UTF-32 text is read from its byte-order mark, or with "
                         f"encoding utf-16-le, utf-16-be, utf-32-le or utf-32-be)")
    return "ascii"


def _codec_name(encoding: str) -> str:
    import codecs
    return codecs.lookup(str(encoding)).name


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



def check_data_path(path: str) -> None:
    """Refuse a path that cannot be a data file, without opening it (one-line errors).

    Missing files are :class:`FileNotFoundError`; anything else that makes the file
    unreadable (permissions, a symbolic link loop, a folder, a FIFO or device that
    would block or never end) is :class:`DataFormatError`.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise FileNotFoundError(f"cannot open {printable(path)}: it is a symbolic link to a missing file") from None
        raise FileNotFoundError(f"cannot open {printable(path)}: no such file") from None
    except OSError as exc:
        raise DataFormatError(_why_not(exc), path) from None
    if stat.S_ISDIR(st.st_mode):
        raise DataFormatError("is a directory, not a data file", path)
    if not stat.S_ISREG(st.st_mode):
        raise DataFormatError("not a regular file (a FIFO, device or socket); pass '-' to read standard input",
                              path)


def _open_regular(path: str):
    """Open a data file for binary reading; refusals as in :func:`check_data_path`."""
    check_data_path(path)
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the check above cannot block the open.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise DataFormatError(_why_not(exc), path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataFormatError("not a regular file (a FIFO, device or socket); pass '-' to read standard input",
                                  path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0), int(st.st_size)
    except BaseException:
        os.close(fd)
        raise


def _why_not(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "cannot be opened: a symbolic link loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied: the file (or a folder on its path) is not readable"
    if exc.errno == errno.ENOTDIR:
        return "cannot be opened: a part of the path is not a folder"
    if exc.errno == errno.ENAMETOOLONG:
        return "cannot be opened: the name is too long"
    return f"cannot be opened ({exc.strerror or exc})"


class _Wrapper(io.RawIOBase):
    """A raw byte stream that reads another one (``_s``) and closes it with itself."""

    def __init__(self, stream):
        super().__init__()
        self._s = stream

    def readable(self):
        return True

    def close(self):
        try:
            self._s.close()
        finally:
            super().close()


class _CRToLF(_Wrapper):
    """A byte stream with every CR turned into LF (for files with old Mac line endings)."""

    def readinto(self, b):
        data = self._s.read(len(b))
        if not data:
            return 0
        data = data.replace(b"\r", b"\n")
        n = len(data)
        b[:n] = data
        return n


class _Transcoded(_Wrapper):
    """A UTF-16 / UTF-32 byte stream (with its byte-order mark) read as UTF-8 bytes."""

    def __init__(self, stream, encoding: str, path: Optional[str], by_mark: bool = True):
        super().__init__(stream)
        import codecs
        self._decoder = codecs.getincrementaldecoder(encoding)("strict")
        self._encoding = encoding
        self._why = (f", after the byte-order mark that says {encoding}" if by_mark else
                     ", the encoding given")
        self._path = path
        self._pending = b""
        self._done = False
        self._consumed = 0

    def _more(self, size: int) -> None:
        data = self._s.read(max(size, 4096))
        final = not data
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise DataFormatError(
                f"undecodable text: not valid {self._encoding} (byte offset about "
                f"{self._consumed + max(0, exc.start)}{self._why})", self._path) from None
        self._consumed += len(data)
        self._pending += text.encode("utf-8")
        self._done = final

    def readinto(self, b):
        while not self._pending and not self._done:
            self._more(len(b))
        n = min(len(b), len(self._pending))
        b[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _wide_encoding(head: bytes) -> Optional[str]:
    """``"utf-16"`` or ``"utf-32"`` when ``head`` starts with such a byte-order mark."""
    for bom, encoding in _WIDE_BOMS:
        if head.startswith(bom):
            return encoding
    return None


def _looks_utf16_without_bom(sample: bytes) -> Optional[str]:
    """Mostly ASCII text with a NUL after (``"utf-16-le"``) or before (``"utf-16-be"``) every
    character: UTF-16 without its mark; None otherwise."""
    probe = sample[:4096]
    if len(probe) < 8:
        return None
    for start, order in ((0, "utf-16-le"), (1, "utf-16-be")):
        zeros = probe[1 - start::2]
        chars = probe[start::2]
        if zeros.count(0) >= 0.9 * len(zeros) and chars.count(0) == 0:
            return order
    return None


def _no_mark(encoding: str, looks: Optional[str]) -> str:
    """Why ``encoding`` (utf-16 or utf-32, which take the byte order from a mark) cannot read a file without one."""
    fix = (f"this file looks like {looks} (a NUL byte {'after' if looks.endswith('le') else 'before'} every "
           f"character): read it with encoding {looks}" if looks else
           f"name the byte order ({encoding}-le or {encoding}-be) if it is {encoding.upper()} text, else its "
           f"real encoding")
    return f"encoding {encoding!r} needs a byte-order mark at the start of the file, and this file has none: {fix}"


class _Capped(_Wrapper):
    """The content stream, refused once it exceeds ``limit`` bytes (stdin or decompressed gzip:
    an endless pipe or a ``.gz`` bomb stops here instead of filling the memory)."""

    def __init__(self, stream, limit: int, path: Optional[str], what: str):
        super().__init__(stream)
        self.limit = int(limit)
        self.count = 0
        self._path = path
        self._what = what

    def readinto(self, b):
        data = self._s.read(min(len(b), self.limit + 1 - self.count))
        if not data:
            return 0
        self.count += len(data)
        if self.count > self.limit:
            raise DataFormatError(_too_much(self._what, self.limit), self._path)
        n = len(data)
        b[:n] = data
        return n


def _too_much(what: str, limit: int) -> str:
    from ..memory import TEXT_BYTES_PER_BYTE, budget_hint, gb
    return (f"{what} holds more than {gb(limit)} of text: reading it would need more than the "
            f"{gb(limit * TEXT_BYTES_PER_BYTE)} of memory allowed ({budget_hint()})")


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

    def __init__(self, path, progress: Optional[ProgressCallback] = None, encoding: Optional[str] = None):
        kind = "ascii" if encoding is None else encoding_kind(encoding)   # refused before the file is opened
        self.path = os.fspath(path)
        self.is_stdin = self.path == STDIN
        self.name = "<stdin>" if self.is_stdin else os.path.basename(self.path)
        self.line_endings = "lf"
        #: ``"utf-16"`` / ``"utf-32"`` when the text had that byte-order mark, or the codec given as
        #: ``encoding`` (``"utf-16-le"``, ...) for such text without the mark (read as UTF-8).
        self.transcoded_from: Optional[str] = None
        from ..memory import text_limit
        limit = text_limit()
        if self.is_stdin:
            fh = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)
            self.size = 0
        else:
            fh, self.size = _open_regular(self.path)
            if self.size > limit:
                fh.close()
                raise DataFormatError(_too_much("the file", limit), self.path)
        self._raw = _HashingRaw(fh, self.size, progress)
        self._buffered = io.BufferedReader(self._raw, buffer_size=_CHUNK)
        self.stream: io.BufferedReader[Any] = self._buffered
        try:
            try:
                head = self._buffered.peek(2)[:2]
            except OSError as exc:
                raise DataFormatError(f"cannot be read ({exc.strerror or exc})", self.path) from None
            self.compressed = head == _GZIP_MAGIC
            if self.compressed:
                gz = gzip.GzipFile(fileobj=self._buffered, mode="rb")
                self.stream = io.BufferedReader(_Capped(gz, limit, self.path, "the decompressed file"),
                                                buffer_size=_CHUNK)
            elif self.is_stdin:
                self.stream = io.BufferedReader(_Capped(self._buffered, limit, None, "standard input"),
                                                buffer_size=_CHUNK)
            self.sample = self._peek_sample()
            wide = _wide_encoding(self.sample)
            if wide is not None:
                self.transcoded_from = wide
                self.stream = io.BufferedReader(_Transcoded(self.stream, wide, self.path), buffer_size=_CHUNK)
                self.sample = self._peek_sample()
            elif kind == "wide":
                # UTF-16/32 without its mark, in the byte order the encoding given names
                self.transcoded_from = _codec_name(str(encoding))
                order = _looks_utf16_without_bom(self.sample)
                if order and self.transcoded_from.startswith("utf-16") and order != self.transcoded_from:
                    raise DataFormatError(f"encoding {encoding!r} does not fit: this file looks like {order} (a "
                                          f"NUL byte {'after' if order.endswith('le') else 'before'} every "
                                          f"character): read it with encoding {order}", self.path, 1)
                self.stream = io.BufferedReader(_Transcoded(self.stream, self.transcoded_from, self.path,
                                                            by_mark=False), buffer_size=_CHUNK)
                self.sample = self._peek_sample()
            elif kind == "bom":
                raise DataFormatError(_no_mark(_codec_name(str(encoding)), _looks_utf16_without_bom(self.sample)),
                                      self.path, 1)
            else:
                order = _looks_utf16_without_bom(self.sample)
                if order:
                    raise DataFormatError(f"UTF-16 text without a byte-order mark (a NUL byte "
                                          f"{'after' if order.endswith('le') else 'before'} every character): save "
                                          f"the file as UTF-8 (the tagged formats also read it with encoding "
                                          f"{order})", self.path, 1)
            if b"\r" in self.sample and b"\n" not in self.sample:
                # Old Mac line endings (CR only): read them as lines.
                self.line_endings = "cr"
                self.stream = io.BufferedReader(_CRToLF(self.stream), buffer_size=_CHUNK)
                self.sample = self.sample.replace(b"\r", b"\n")
            self._check_sample()
        except BaseException:
            self.close()
            raise

    def _read_error(self, exc: BaseException) -> DataFormatError:
        if self.compressed and not (isinstance(exc, OSError) and exc.errno is not None):
            return DataFormatError(f"corrupt or truncated gzip data ({exc})", self.path)
        return DataFormatError(f"read error ({getattr(exc, 'strerror', None) or exc})", self.path)

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
            for magic, what, article in _ARCHIVES:
                if s.startswith(magic):
                    inside = " (inside the gzip file)" if self.compressed else ""
                    raise DataFormatError(f"{article} {what} archive{inside}: only gzip is read; unpack it first",
                                          self.path)
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
                raise self._read_error(exc) from None
            yield line

    def _blocks(self) -> Iterator[bytes]:
        """Blocks of whole lines (the last block may lack a final newline)."""
        rest: list = []
        read = self.stream.read
        while True:
            try:
                chunk = read(_CHUNK)
            except (OSError, EOFError, zlib.error) as exc:
                raise self._read_error(exc) from None
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
        """Yield ``(line_number, text)`` with the line ending removed, decoding strictly.

        A file that began with a UTF-16 or UTF-32 byte-order mark is already UTF-8 here
        (:attr:`transcoded_from`): its mark decides, and ``encoding`` is not used."""
        if self.transcoded_from is not None:
            encoding = "utf-8"
        kind = encoding_kind(encoding)
        if kind != "ascii":   # the source was opened without it (see open_source's encoding)
            raise DataFormatError(_no_mark(_codec_name(encoding), _looks_utf16_without_bom(self.sample))
                                  if kind == "bom" else f"encoding {encoding!r} must be given when the file is "
                                  f"opened (open_source(path, encoding=...))", self.path, 1)
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
                what = (f"undecodable text: not valid {encoding} (byte 0x{block[exc.start]:02x} at column "
                        f"{exc.start - line_start + 1})")
                err = DataFormatError(f"{what}; pass encoding='latin-1' (or the file's encoding) if it is not "
                                      f"{encoding}", self.path, lineno + block.count(b"\n", 0, exc.start) + 1)
                # the reason without the hint, for a front end's own words (the command line names --encoding)
                err.undecodable = (what, encoding)  # type: ignore[attr-defined]
                raise err from None
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            for line in lines:
                lineno += 1
                yield lineno, line.rstrip("\r")

    @property
    def bytes_read(self) -> int:
        """Bytes read from the file (or standard input) so far."""
        return self._raw.pos

    def sha256(self) -> str:
        """Hex sha256 of the whole file on disk (reads what the reader left unread)."""
        self._raw.drain()
        return self._raw.sha.hexdigest()

    def close(self) -> None:
        try:
            self.stream.close()
        except Exception:  # noqa: BLE001 - closing a half-read gzip stream may raise anything  # pragma: no cover
            pass
        try:
            self._buffered.close()
        except Exception:  # noqa: BLE001 - as above  # pragma: no cover
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def open_source(path, progress: Optional[ProgressCallback] = None, encoding: Optional[str] = None) -> Source:
    """Open ``path`` for streaming (see :class:`Source`).  ``encoding`` (the reader option, when
    given): refused here when it is not ASCII-compatible (:func:`encoding_kind`); utf-16-le/-be and
    utf-32-le/-be are transcoded to UTF-8 when the file has no byte-order mark (a mark decides)."""
    return Source(path, progress, encoding)

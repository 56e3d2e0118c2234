"""Streaming FASTA reader (proteins, DNA/RNA), including RCSB pdb_seqres headers."""
from __future__ import annotations

import array
import re
import zlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .errors import DataFormatError

__all__ = ["read_fasta", "ALPHABETS", "AMINO_ACIDS"]

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
_IUPAC_EXTRA = "RYSWKMBDHVN"

#: Alphabet presets: name -> (symbols in vocabulary order, wildcard for symbols outside the set).
ALPHABETS: Dict[str, Tuple[str, str]] = {
    "protein": (AMINO_ACIDS + "BZJUOX", "X"),   # 20 amino acids + ambiguity/rare codes B Z J U O + X
    "protein20": (AMINO_ACIDS + "X", "X"),      # 20 amino acids; everything else becomes X
    "dna": ("ACGTN", "N"),
    "rna": ("ACGUN", "N"),
    "dna_iupac": ("ACGT" + _IUPAC_EXTRA, "N"),
    "rna_iupac": ("ACGU" + _IUPAC_EXTRA, "N"),
}

_WS = b" \t\r\n\v\f"
# Characters a sequence line may hold: letters, stop '*', gaps '-' and '.'.
_ALLOWED = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1)) + b"*-."
_MOL_VALUES = ("protein", "na", "all")
_BLOCK = 1 << 22
_READ = 1 << 22
_MOL_FIELD = re.compile(rb"(?:^|\s)mol:(\S*)")


def _table(uppercase: bool, nucleotide: Optional[str]) -> bytes:
    t = bytearray(range(256))
    if uppercase:
        for c in range(ord("a"), ord("z") + 1):
            t[c] = c - 32
    if nucleotide == "dna":
        t[ord("U")] = ord("T")
        if uppercase:
            t[ord("u")] = ord("T")
        else:
            t[ord("u")] = ord("t")
    elif nucleotide == "rna":
        t[ord("T")] = ord("U")
        t[ord("t")] = ord("U") if uppercase else ord("u")
    return bytes(t)


def _check_options(mol, alphabet, nucleotide):
    if mol not in _MOL_VALUES:
        raise ValueError(f"mol must be one of {_MOL_VALUES}, got {mol!r}")
    if nucleotide not in (None, "dna", "rna"):
        raise ValueError(f"nucleotide must be None, 'dna' (U -> T) or 'rna' (T -> U), got {nucleotide!r}")
    if not isinstance(alphabet, str) or not alphabet:
        raise ValueError(f"alphabet must be 'observed', a preset name {sorted(ALPHABETS)} or a string of symbols")
    if alphabet not in ALPHABETS and alphabet != "observed" and len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet {alphabet!r} repeats a symbol")


def read_fasta(src, *, mol: str = "protein", alphabet: str = "observed", uppercase: bool = True,
               strip_stop: bool = True, nucleotide: Optional[str] = None, keep_names: bool = True
               ) -> Dict[str, Any]:
    """Read a FASTA stream into encoded sequences.

    Parameters
    ----------
    src : Source
        An open source (see :mod:`densehmm_core.data.source`).
    mol : {"protein", "na", "all"}, default "protein"
        For headers with a ``mol:`` field (RCSB pdb_seqres), which molecule type to keep.
        Records without the field are always kept.
    alphabet : str, default "observed"
        ``"observed"`` (the sorted set of symbols seen), a preset name from ``ALPHABETS``
        (fixed vocabulary; other symbols become the preset's wildcard, counted in a warning),
        or a string of symbols (fixed vocabulary; any other symbol is an error).
    uppercase : bool, default True
        Upper-case the sequences.
    strip_stop : bool, default True
        Strip trailing ``*`` stop symbols.
    nucleotide : {None, "dna", "rna"}
        ``"dna"`` rewrites U as T, ``"rna"`` rewrites T as U.
    keep_names : bool, default True
        Keep each record's identifier (first word of its header).

    Returns
    -------
    dict with keys sequences, vocabulary, names, warnings, info
    """
    _check_options(mol, alphabet, nucleotide)
    path = src.path
    table = _table(bool(uppercase), nucleotide)
    buf = bytearray()
    lengths = array.array("q")
    header_lines = array.array("q")
    names: Optional[List[bytes]] = [] if keep_names else None
    n_empty = 0
    first_empty = 0
    n_mol_skipped = 0
    mol_skipped_types: Dict[str, int] = {}
    n_stops = 0
    n_records = 0

    lineno = 0  # lines consumed before the current record

    mol_tag = b"mol:" + mol.encode("ascii")
    check_mol = mol != "all"
    ws = _WS
    extend = buf.extend
    add_length = lengths.append
    add_line = header_lines.append
    add_name = names.append if names is not None else None

    def block(data: bytes, first: bool) -> None:
        """Whole records (the first block may start with blank or ';' comment lines)."""
        nonlocal lineno, n_empty, first_empty, n_mol_skipped, n_stops, n_records
        if first:
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            if data[:1] != b">":
                cut = data.find(b"\n>")
                prefix = data if cut < 0 else data[:cut]
                for line in prefix.split(b"\n"):
                    lineno += 1
                    t = line.strip()
                    if t and t[:1] != b";":
                        raise DataFormatError(
                            "sequence data before any '>' header line: not a FASTA file (every record must "
                            "start with a '>' header)", path, lineno)
                if cut < 0:
                    return
                data = data[cut + 1:]
        recs = data.split(b"\n>")
        recs[0] = recs[0][1:]
        n_records += len(recs)
        for rec in recs:
            lineno += 1
            header_line = lineno
            lineno += rec.count(b"\n")
            nl = rec.find(b"\n")
            if nl < 0:
                header, body = rec.rstrip(b"\r"), b""
            else:
                header, body = rec[:nl].rstrip(b"\r"), rec[nl + 1:]
            if check_mol and b"mol:" in header:
                j = header.find(mol_tag)
                k = j + len(mol_tag)
                if not (j >= 0 and (j == 0 or header[j - 1] in ws) and (k == len(header) or header[k] in ws)):
                    found = _MOL_FIELD.search(header)
                    if found is not None:
                        value = found.group(1).decode("ascii", "replace").lower()
                        if value != mol:
                            n_mol_skipped += 1
                            mol_skipped_types[value] = mol_skipped_types.get(value, 0) + 1
                            continue
            seq = body.translate(table, ws)
            if strip_stop and seq.endswith(b"*"):
                stripped = seq.rstrip(b"*")
                n_stops += len(seq) - len(stripped)
                seq = stripped
            if not seq:
                if n_empty == 0:
                    first_empty = header_line
                n_empty += 1
                continue
            extend(seq)
            add_length(len(seq))
            add_line(header_line)
            if add_name is not None:
                word = header.split(None, 1)
                add_name(word[0] if word else b"")

    read = src.stream.read
    pending: List[bytes] = []
    first = True
    try:
        while True:
            chunk = read(_READ)
            if not chunk:
                break
            # Cut before the last header start; a boundary straddling two chunks is split
            # when the pending pieces are joined.
            cut = chunk.rfind(b"\n>")
            if cut < 0:
                pending.append(chunk)
                continue
            pending.append(chunk[:cut])
            data = b"".join(pending)
            pending = [chunk[cut + 1:]]
            block(data, first)
            first = False
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFormatError(f"corrupt or truncated gzip data ({exc})", path) from None
    data = b"".join(pending)
    if data.endswith(b"\n"):
        data = data[:-1]
    if data:
        block(data, first)
    if not n_records:
        raise DataFormatError("no records: the file holds no '>' header line", path)

    warnings: List[str] = []
    if n_mol_skipped:
        kinds = ", ".join(f"{v} mol:{k}" for k, v in sorted(mol_skipped_types.items()))
        warnings.append(f"{n_mol_skipped} records skipped by molecule type ({kinds}; kept mol:{mol}, "
                        f"pass mol='all' to keep every record)")
    if n_empty:
        warnings.append(f"{n_empty} empty record{'s' if n_empty != 1 else ''} skipped "
                        f"(first at line {first_empty})")
    if not lengths:
        reason = "no records with sequence data"
        if n_records:
            reason += f" ({n_records} records: {n_empty} empty, {n_mol_skipped} skipped by molecule type)"
        raise DataFormatError(reason, path)

    # The distinct bytes, block by block with C-speed translate (no per-residue Python work).
    seen = b""
    mv = memoryview(buf)
    for i in range(0, len(buf), _BLOCK):
        rest = bytes(mv[i:i + _BLOCK]).translate(None, seen)
        while rest:
            seen += rest[:1]
            rest = rest.translate(None, rest[:1])
    if seen.translate(None, _ALLOWED):
        mv.release()
        _locate_invalid(src.path, table, mol, keep_all=not check_mol)
    observed = sorted(chr(c) for c in seen)
    lut = bytearray(256)
    if alphabet == "observed":
        vocabulary = observed
    else:
        if alphabet in ALPHABETS:
            symbols, wildcard = ALPHABETS[alphabet]
        else:
            symbols, wildcard = alphabet, None
        vocabulary = list(symbols)
        outside = [c for c in observed if c not in symbols]
        if outside:
            if wildcard is None:
                # the first residue outside it in the file, and its own line
                pos = min(p for p in (buf.find(c.encode("latin-1")) for c in outside) if p >= 0)
                bad = chr(buf[pos])
                ends = np.cumsum(np.frombuffer(lengths, dtype=np.int64))
                rec = int(np.searchsorted(ends, pos, side="right"))
                mv.release()
                offset = pos - (int(ends[rec - 1]) if rec else 0)
                line, name = _locate_residue(src.path, table, header_lines[rec], offset)
                raise DataFormatError(f"symbol {bad!r} is not in the alphabet {alphabet!r} (record {name!r}, "
                                      f"starting at line {header_lines[rec]})", path, line)
            n_out = sum(buf.count(c.encode("latin-1")) for c in outside)
            warnings.append(f"{n_out} residues outside the {alphabet!r} alphabet "
                            f"({', '.join(outside)}) mapped to {wildcard!r}")
            lut = bytearray([vocabulary.index(wildcard)]) * 256
    for i, c in enumerate(vocabulary):
        lut[ord(c)] = i
    encode_table = bytes(lut)
    encoded = np.empty(len(buf), dtype=np.int32)
    for i in range(0, len(buf), _BLOCK):
        encoded[i:i + _BLOCK] = np.frombuffer(bytes(mv[i:i + _BLOCK]).translate(encode_table), dtype=np.uint8)
    mv.release()
    buf.clear()
    del buf
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.frombuffer(lengths, dtype=np.int64), out=bounds[1:])
    b = bounds.tolist()
    sequences = [encoded[b[i]:b[i + 1]] for i in range(len(lengths))]
    names_out: Optional[List[str]] = None
    if names is not None:
        names_out = b"\n".join(names).decode("utf-8", "replace").split("\n") if names else []
    info = {"n_records": n_records, "n_empty": n_empty, "n_mol_skipped": n_mol_skipped,
            "n_stop_symbols_stripped": n_stops, "lines": lineno}
    return {"sequences": sequences, "vocabulary": vocabulary, "names": names_out, "warnings": warnings, "info": info}


def _locate_invalid(path, table: bytes, mol: str, keep_all: bool) -> None:
    """Second pass, only when the data hold an invalid character: raise with its line number."""
    from .source import open_source
    kept = False
    header = b""
    with open_source(path) as src:
        for lineno, line in enumerate(src.binary_lines(), start=1):
            if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if line[:1] == b">":
                header = line[1:].rstrip(b"\r\n")
                found = None if keep_all else _MOL_FIELD.search(header)
                kept = found is None or found.group(1).decode("ascii", "replace").lower() == mol
                continue
            if not kept:
                continue
            bad = line.translate(table, _WS).translate(None, _ALLOWED)
            if bad:
                ch = bad[:1]
                raise DataFormatError(
                    f"invalid character {ch.decode('latin-1')!r} (byte 0x{ch[0]:02x}) in the sequence of record "
                    f"{_name(header)!r}", path, lineno)
    raise DataFormatError("invalid character in a sequence", path)  # pragma: no cover


def _locate_residue(path, table: bytes, header_line: int, offset: int) -> Tuple[int, str]:
    """Second pass, only for an error: the line of residue ``offset`` (0-based, as read) of the record
    whose header is on ``header_line``, and the record's name."""
    from .source import open_source
    name = ""
    with open_source(path) as src:
        for lineno, line in enumerate(src.binary_lines(), start=1):
            if lineno < header_line:
                continue
            if lineno == header_line:
                name = _name(line.lstrip(b"\xef\xbb\xbf")[1:].rstrip(b"\r\n"))
                continue
            n = len(line.translate(table, _WS))
            if offset < n:
                return lineno, name
            offset -= n
    return header_line, name  # pragma: no cover - the residue is in the record


def _name(header: bytes) -> str:
    body = header.strip()
    word = body.split(None, 1)[0] if body else b""
    return word.decode("utf-8", "replace")

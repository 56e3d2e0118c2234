"""Fuzzing every reader (issue 4): random bytes and mutated valid files give a valid Corpus or a
DataFormatError, never another exception."""
import atexit
import gzip
import os
import pathlib
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from densehmm_core.data import Corpus, DataFormatError, load

FIX = pathlib.Path(__file__).parent / "fixtures" / "data"
READERS = {
    "fasta": "pdb_seqres_like.fasta",
    "medpost": "sentences.ioc",
    "word_tag": "word_tag.txt",
    "word_slash_tag": "brown.txt",
    "ptb": "trees.mrg",
    "conll": "chunks.conll",
    "conllu": "sentences.conllu",
}
# A RAM-backed folder when there is one: thousands of small files are written.
_RAM = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
_DIR = pathlib.Path(tempfile.mkdtemp(prefix="densehmm-fuzz-", dir=_RAM))
atexit.register(shutil.rmtree, _DIR, True)

# Bytes that matter to the parsers, to make mutations meaningful.
_SPECIAL = st.sampled_from([b">", b"\n", b"\r\n", b"\t", b" ", b"_", b"/", b"(", b")", b"#", b"-", b".", b"*",
                            b"1-2", b"3.1", b"mol:na", b"\x00", b"\xff", b"\xc3", b"\xef\xbb\xbf", b"_NN",
                            b"P01234567A01\n", b"-NONE-", b"-DOCSTART-", b"\x1f\x8b"])


@st.composite
def mutated(draw, base: bytes):
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "dup", "truncate", "swap"]))
        pos = draw(st.integers(0, len(data))) if data else 0
        if op == "insert":
            data[pos:pos] = draw(st.one_of(_SPECIAL, st.binary(min_size=1, max_size=4)))
        elif op == "delete" and data:
            data[pos:pos + draw(st.integers(1, 20))] = b""
        elif op == "replace" and data:
            data[pos:pos + 1] = draw(st.one_of(_SPECIAL, st.binary(min_size=1, max_size=1)))
        elif op == "dup" and data:
            end = min(len(data), pos + draw(st.integers(1, 40)))
            data[pos:pos] = data[pos:end]
        elif op == "truncate":
            del data[pos:]
        elif op == "swap" and data:
            q = draw(st.integers(0, len(data) - 1))
            data[pos:pos + 1], data[q:q + 1] = data[q:q + 1], data[pos:pos + 1]
    return bytes(data)


def inputs(fixture):
    base = (FIX / fixture).read_bytes()
    return st.tuples(
        st.one_of(st.binary(max_size=120), mutated(base), st.just(base)),
        st.sampled_from(["plain", "plain", "plain", "gzip", "crlf"]),
        st.sampled_from(["fixed", "fixed", "auto"]),
    )


def check(fmt, fixture, data, wrap, detect):
    if wrap == "gzip":
        data = gzip.compress(data, mtime=0)
    elif wrap == "crlf":
        data = data.replace(b"\n", b"\r\n")
    path = _DIR / (fixture + (".gz" if wrap == "gzip" else ""))
    path.write_bytes(data)
    try:
        c = load(path, format=fmt if detect == "fixed" else "auto")
    except DataFormatError as e:
        assert e.reason and e.file == path.name
        return
    assert isinstance(c, Corpus) and c.n_sequences >= 1
    m = c.n_symbols
    assert m == len(set(c.vocabulary)) >= 1
    for s in c.sequences:
        assert s.dtype == np.int32 and s.ndim == 1 and s.size >= 1
        assert 0 <= s.min() and s.max() < m


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_fuzz_reader(fmt):
    fixture = READERS[fmt]

    @settings(max_examples=1000, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(inputs(fixture))
    def run(args):
        check(fmt, fixture, *args)

    run()

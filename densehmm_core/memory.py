"""How much memory work may take, and how much training, scoring or decoding will take.

One budget (:func:`memory_budget`: ``$DENSEHMM_MAX_MODEL_BYTES`` or half the physical
memory) bounds everything a command allocates: a model file's arrays
(:mod:`densehmm_core.modelfile.safety`), the text a data file may hold
(:func:`text_limit`, checked while reading by :mod:`densehmm_core.data.source`) and the
inference buffers of a fit (:func:`inference_bytes`), which the command line and the
worker pool check before anything is allocated (the CLI: one line, exit 2).

The estimate follows what the engine allocates (:mod:`densehmm_core.engine.array_engine`).
The engine sorts the sequences by length and cuts them into chunks of at most
``chunk_elements`` floats (``T_max x n_seq x n_states``), **but a sequence longer than that
forms a chunk of its own**: one chunk then holds ``T x n`` floats per working array, however
long ``T`` is.  Per (token x state) of the largest chunk the engine holds
:data:`BYTES_PER_CHUNK_ELEMENT` (forward, backward / posteriors, gathered emission
probabilities and a temporary, float64 each: the engine's ``BYTES_PER_ELEMENT``), per token of
that chunk :data:`BYTES_PER_CHUNK_TOKEN` (scale factors, symbols, index copies), and per token
of all the data :data:`BYTES_PER_TOKEN` (the corpus, the chunks' symbols and emission
indices, the final metrics' passes).  Measured peaks (``tests/test_memory.py``; docs/CLI.md)
stay below the estimate for one long sequence and for many short ones, with 2 and 8 states,
standard and dense models.
"""
from __future__ import annotations

import os
from typing import Iterable, Optional

import numpy as np

from . import config

__all__ = ["TooLargeError", "check_fits", "check_inference", "memory_budget", "gb", "text_limit",
           "largest_chunk_tokens", "inference_bytes",
           "BYTES_PER_TOKEN", "BYTES_PER_CHUNK_TOKEN", "BYTES_PER_CHUNK_ELEMENT", "BASE_BYTES",
           "TENSORFLOW_BYTES", "TEXT_BYTES_PER_BYTE", "DEFAULT_CHUNK_ELEMENTS", "budget_hint"]

#: bytes per token of the whole data (train and test) held while a model trains or scores
BYTES_PER_TOKEN = 40
#: bytes per padded position of the largest chunk besides its state arrays
BYTES_PER_CHUNK_TOKEN = 32
#: bytes per (position x state) of the largest chunk (the engine's ArrayEngine.BYTES_PER_ELEMENT,
#: tests/test_memory.py checks that they agree)
BYTES_PER_CHUNK_ELEMENT = 32
#: the interpreter, numpy, h5py and the package (measured ~100 MB)
BASE_BYTES = 160 << 20
#: TensorFlow once imported (measured ~600-900 MB on the CPU)
TENSORFLOW_BYTES = 1 << 30
#: memory per byte of text while a data file is read (word corpora ~25, FASTA ~9, measured)
TEXT_BYTES_PER_BYTE = 32
#: the chunk bound of the engines (NumpyEngine's and ArrayEngine's default ``chunk_elements``;
#: tests/test_memory.py checks that they agree)
DEFAULT_CHUNK_ELEMENTS = 2 ** 23


class TooLargeError(ValueError):
    """Work that would need more memory than :func:`memory_budget` allows (a one-line message)."""


def memory_budget() -> int:
    """Bytes one command may allocate: ``$DENSEHMM_MAX_MODEL_BYTES`` or half the physical memory."""
    env = config.max_model_bytes()
    if env is not None:
        return env
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 << 30


def budget_hint() -> str:
    """Where the budget comes from, for the end of every "too large" message."""
    if config.max_model_bytes() is not None:
        return "set by DENSEHMM_MAX_MODEL_BYTES"
    return "half this machine's memory; set DENSEHMM_MAX_MODEL_BYTES to change it"


def gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:.3g} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:.3g} MB"


def text_limit() -> int:
    """Bytes of (decompressed) text a data source may hold: reading more would need more
    memory than :func:`memory_budget` allows (:data:`TEXT_BYTES_PER_BYTE` per byte); a
    ``.gz`` bomb or an endless standard input stops here."""
    return max(1 << 20, memory_budget() // TEXT_BYTES_PER_BYTE)


def _lengths(lengths: Iterable[int]) -> np.ndarray:
    """Sequence lengths as an int64 array (an array as it is: a corpus's 57,340 lengths were turned
    into Python ints three times over before each job)."""
    if isinstance(lengths, np.ndarray):
        return lengths.astype(np.int64, copy=False).reshape(-1)
    return np.fromiter((int(x) for x in lengths), dtype=np.int64)


def largest_chunk_tokens(lengths: Iterable[int], n_states: int,
                         chunk_elements: int = DEFAULT_CHUNK_ELEMENTS) -> int:
    """Padded positions (``T_max x n_seq``) of the largest chunk the engine makes for
    sequences of these lengths and a model of ``n_states`` (the engine's own rule: chunks of
    ``chunk_elements // n_states`` tokens, a longer sequence alone)."""
    lens = np.sort(_lengths(lengths))[::-1]
    if lens.size == 0:
        return 0
    budget = max(1, int(chunk_elements) // max(1, int(n_states)))
    largest, i = 0, 0
    while i < lens.size:                      # the engine's loop (array_engine.PreparedSequences)
        tmax = int(lens[i])
        nb = max(1, budget // tmax)
        largest = max(largest, tmax * min(nb, lens.size - i))
        if tmax <= budget:                    # every later chunk is at most `budget` positions
            break
        i += nb
    return largest


def inference_bytes(lengths: Iterable[int], n_states: int, n_symbols: int = 0, *, tensorflow: bool = False,
                    chunk_elements: Optional[int] = None) -> int:
    """Peak bytes of training, scoring or decoding sequences of these ``lengths`` with a model
    of ``n_states`` states and ``n_symbols`` symbols (module docstring), ``tensorflow``: the
    fit imports TensorFlow."""
    lens = _lengths(lengths)
    n = max(1, int(n_states))
    chunk = largest_chunk_tokens(lens, n, DEFAULT_CHUNK_ELEMENTS if chunk_elements is None else chunk_elements)
    model = 8 * 8 * (n * n + n * max(0, int(n_symbols)))   # the matrices, their counts and copies
    return int(BASE_BYTES + (TENSORFLOW_BYTES if tensorflow else 0) + BYTES_PER_TOKEN * int(lens.sum())
               + (BYTES_PER_CHUNK_TOKEN + BYTES_PER_CHUNK_ELEMENT * n) * chunk + model)


def check_fits(nbytes: float, what: str) -> None:
    """:class:`TooLargeError` when ``nbytes`` exceed the budget: "too large: WHAT needs about ..."."""
    budget = memory_budget()
    if nbytes > budget:
        raise TooLargeError(f"too large: {what} needs about {gb(nbytes)} of memory, more than the {gb(budget)} "
                            f"allowed ({budget_hint()})")


def check_inference(lengths: Iterable[int], n_states: int, n_symbols: int = 0, *, tensorflow: bool = False) -> None:
    """:func:`check_fits` for :func:`inference_bytes` (before anything is allocated)."""
    lens = _lengths(lengths)
    check_fits(inference_bytes(lens, n_states, n_symbols, tensorflow=tensorflow),
               f"{int(lens.sum())} tokens (longest sequence {int(lens.max()) if lens.size else 0}) with "
               f"{int(n_states)} states")

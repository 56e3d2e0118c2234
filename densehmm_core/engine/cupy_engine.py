"""The CuPy engine: the shared array algorithm on an NVIDIA GPU.

Everything algorithmic is :mod:`densehmm_core.engine.array_engine`, run with
``xp = cupy``.  What is specific to the GPU:

* chunks are sized by the free GPU memory (``memory_fraction`` of what
  ``cudaMemGetInfo`` plus CuPy's pool report at :meth:`prepare` time, over
  :attr:`ArrayEngine.BYTES_PER_ELEMENT`), not by a fixed CPU bound, so a million
  tokens usually form one or a few chunks;
* :meth:`prepare` uploads the chunks once (symbols, indices, the sparse
  symbol-by-position matrix for the emission counts); EM iterations reuse them;
* emission counts are one cuSPARSE product per chunk (``emit_method="sparse"``);
* each call copies its results to the host once (one buffer per call).

No hmmlearn fallback: on a GPU small chunks stay batched.

``CupyEngine(backend=...)`` accepts another :class:`ArrayBackend`; the tests pass
a numpy backend with a fake free-memory figure to run this engine's own code
path (memory-sized chunks, sparse counts, one transfer) on the CPU.
"""
from __future__ import annotations

from typing import Optional

from .array_engine import ArrayEngine
from .backend import ArrayBackend, cupy_backend

__all__ = ["CupyEngine"]


class CupyEngine(ArrayEngine):
    """Batched scaled forward-backward and Viterbi on a GPU with CuPy (float64).

    Parameters
    ----------
    device : int
        CUDA device index (``/GPU:1`` -> 1).
    memory_fraction : float
        Share of the free GPU memory one chunk may use (several jobs may share a GPU).
    chunk_elements : int or None
        Optional cap on ``T_max x n_seq x n_states`` of a chunk on top of the memory bound.
    backend : ArrayBackend or None
        Default: CuPy on ``device`` (raises :class:`~densehmm_core.engine.backend.GpuUnavailableError`
        when CuPy or the GPU is missing).
    """

    name = "cupy"

    def __init__(self, device: int = 0, memory_fraction: float = 0.5, chunk_elements: Optional[int] = None,
                 backend: Optional[ArrayBackend] = None) -> None:
        self.device = int(device)
        self.device_name = f"/GPU:{self.device}"
        super().__init__(backend if backend is not None else cupy_backend(self.device),
                         chunk_elements=chunk_elements, emit_method="sparse",
                         memory_fraction=memory_fraction)

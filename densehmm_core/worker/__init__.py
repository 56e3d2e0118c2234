"""Training in a separate worker process: the same progress stream, over a pipe.

A front end that must stay responsive while models train (the desktop app) runs each
fit in a worker process instead of a thread: the training then never competes with the
front end for Python's GIL, and the worker lowers its own CPU priority (``nice``), so
the front end's thread gets a core whenever it needs one.

:meth:`WorkerPool.iter_fit` behaves like ``model.iter_fit``: it yields the same
:class:`~densehmm_core.events.ProgressEvent` objects (``model.history_`` grows with them),
honours a :class:`~densehmm_core.events.CancelToken`, and when the stream ends the
model in *this* process holds exactly the worker's result (matrices, embeddings,
history, stop reason, seed and device used), also after a cancel or a divergence
(:class:`~densehmm_core.events.TrainingDiverged` is raised here, as in-process, after the
last finite parameters were copied over).

Workers are persistent (TensorFlow is imported once per worker) and are reused one fit
at a time.  Messages are JSON plus raw ``.npy`` buffers (``allow_pickle=False``): no
pickles cross the pipe, only plain numbers, strings and numeric arrays.  Parameter
snapshots are sent at most every ``params_interval`` seconds (always with the first and
the last event); every event itself is forwarded.  Only :class:`~densehmm_core.DenseHMM`
and :class:`~densehmm_core.StandardHMM` can be trained in a worker (:func:`supports`).

The first time a fit imports TensorFlow in a worker, the worker says so (a "tensorflow"
reply with its version and devices, ahead of the fit's next event): the caller finds it in
:attr:`TrainingWorker.tf_info`, so that a front end that never asked (``--no-tensorflow``)
still learns which TensorFlow its fits use.

The package has four modules: :mod:`.wire` (the message format, JSON + ``.npy``, and the
schema checks of every message in both directions), :mod:`.server` (the worker process's
side: serving fits), :mod:`.pool` (the caller's side: :class:`TrainingWorker` and
:class:`WorkerPool`) and :mod:`.lifeline` (a worker ends with its parent: Linux's
parent-death signal and a watchdog on the parent's pid, also used by the sweeps'
process executor).
"""
from __future__ import annotations

from .pool import TrainingWorker, WorkerPool, close_shared_pool, shared_pool
from .wire import WorkerError, WorkerUnreachable, decode_message, encode_message, supports

__all__ = ["WorkerPool", "TrainingWorker", "WorkerError", "WorkerUnreachable", "supports", "shared_pool",
           "close_shared_pool", "encode_message", "decode_message"]

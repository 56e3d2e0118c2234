"""Imported by the forkserver of a local Dask cluster before it forks the workers
(:func:`densehmm_core.experiments.dask_executor.start_forkserver`): TensorFlow, once, so that
the workers are forked with it and none imports it again (each import took 11-12 s when both
workers of a 2-core machine did it at once, docs/PERFORMANCE.md).

Importing TensorFlow only loads its libraries: it starts no thread and initialises no
runtime and no GPU (the first operation, in a worker, does; this module must never list
devices or run an operation, CUDA does not survive a fork), so the forkserver that forks the workers stays
one thread (tests/test_distributed.py checks it).  A failure is swallowed: the workers then
import TensorFlow themselves, as without this module.

The forkserver lives as long as the process that started it and then ends; tearing TensorFlow
down at its exit took about 1 s, during which a pipe it inherited (the command's stdout and
stderr, e.g. ``densehmm ... | tee log``) stayed open.  On Linux it therefore ends at once
(``os._exit`` at exit: it holds no buffered output and no file of its own to remove -- its
listening socket file was made, and is removed, by the process that started it); the workers it
forks are not affected (multiprocessing's children end with ``os._exit`` and never run these exit
handlers).
"""
import atexit
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")   # what densehmm_core.device.import_tf sets
try:
    import tensorflow  # noqa: F401
except Exception:  # noqa: BLE001 - never break the forkserver: the workers import it themselves
    pass
if sys.platform.startswith("linux"):
    atexit.register(os._exit, 0)

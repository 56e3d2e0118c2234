"""Imported by the forkserver of a local Dask cluster before it forks the workers
(:func:`densehmm_core.experiments.dask_executor.start_forkserver`): TensorFlow, once, so that
the workers are forked with it and none imports it again (each import took 11-12 s when both
workers of a 2-core machine did it at once, docs/PERFORMANCE.md).

Importing TensorFlow only loads its libraries: it starts no thread and initialises no
runtime (the first operation, in a worker, does), so the forkserver that forks the workers stays
one thread (tests/test_dask_security.py checks it).  A failure is swallowed: the workers then
import TensorFlow themselves, as without this module.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")   # what densehmm_core.device.import_tf sets
try:
    import tensorflow  # noqa: F401
except Exception:  # noqa: BLE001 - never break the forkserver: the workers import it themselves
    pass

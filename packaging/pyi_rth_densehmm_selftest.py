"""PyInstaller runtime hook of DenseHMM Studio: an opt-in self-test of the frozen bundle.

Runs before the app's main script. It does nothing unless the environment variable
``DENSEHMM_BUNDLE_SELFTEST=1`` is set; then it checks that the libraries the app only imports
later, on worker threads (TensorFlow through short DenseHMM fits, hmmlearn/scikit-learn/SciPy,
h5py, the model file writer) really work inside the bundle, prints one line per check and exits with status
0 (all passed) or 1 — without starting the GUI. Used by tests/test_packaging.py and handy on a
user's machine: ``DENSEHMM_BUNDLE_SELFTEST=1 ./DenseHMM-Studio``.
"""


def _densehmm_bundle_selftest():
    import os
    import sys
    import tempfile
    import traceback

    def check(name, fn):
        try:
            detail = fn()
        except BaseException:  # noqa: BLE001 - report every failure, keep going
            print(f"selftest FAIL {name}:\n{traceback.format_exc()}", flush=True)
            return False
        print(f"selftest ok   {name}: {detail}", flush=True)
        return True

    def resources():
        base = getattr(sys, "_MEIPASS", None)  # unfrozen (a developer running this file): the checkout
        base = base or os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
        root = os.path.join(base, "resources")
        for rel in ("icons/densehmm-studio.svg", "densehmm-studio.desktop", "mime/densehmm-studio.xml"):
            if not os.path.isfile(os.path.join(root, rel)):
                raise FileNotFoundError(os.path.join(root, rel))
        return root

    def tensorflow():
        import numpy as np
        import tensorflow as tf

        # DenseHMM trained with both schemes, a few steps each, on a tiny random data set: the direct
        # co-occurrence fit (the app's TensorFlow code path) and EM (its M-step on the array module, no
        # TensorFlow; in the bundle it checks numpy, scipy's sparse matrices and the engine)
        from densehmm_core.dense import DenseHMM

        rng = np.random.default_rng(0)
        seqs = [rng.integers(0, 4, size=30) for _ in range(4)]
        for method, budget in (("cooc", {"cooc_steps": 20}), ("em", {"n_iter": 2})):
            model = DenseHMM(3, 2, n_symbols=4, fit_method=method, seed=0, **budget).fit(seqs)
            a = np.asarray(model.transmat_)
            if a.shape != (3, 3) or not np.all(np.isfinite(a)) or not np.allclose(a.sum(axis=1), 1.0):
                raise ValueError(f"{method}: bad transition matrix {a}")
        devices = ", ".join(d.device_type for d in tf.config.list_physical_devices())
        return f"TensorFlow {tf.__version__} (devices: {devices}); DenseHMM cooc (TensorFlow) and em fits"

    def hmmlearn():
        import hmmlearn
        import numpy as np
        from hmmlearn.hmm import CategoricalHMM

        m = CategoricalHMM(n_components=2, random_state=0, init_params="", params="")
        m.startprob_ = np.array([0.6, 0.4])
        m.transmat_ = np.array([[0.7, 0.3], [0.4, 0.6]])
        m.emissionprob_ = np.array([[0.5, 0.5], [0.1, 0.9]])
        ll = m.score(np.array([[0], [1], [1]]))
        if not np.isfinite(ll):
            raise ValueError(ll)
        return f"hmmlearn {hmmlearn.__version__}, log-likelihood {ll:.4f}"

    def model_file():
        import h5py
        import numpy as np

        from densehmm_core.modelfile import FORMAT_NAME, software_versions

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.h5")
            with h5py.File(path, "w") as f:
                f.attrs["format"] = FORMAT_NAME
                f["x"] = np.arange(4.0)
            with h5py.File(path, "r") as f:
                if f.attrs["format"] != FORMAT_NAME or list(f["x"][:]) != [0.0, 1.0, 2.0, 3.0]:
                    raise ValueError("HDF5 round trip differs")
        versions = software_versions()
        missing = [k for k, v in versions.items() if not v]
        if missing:
            raise ValueError(f"software_versions() has no version for {missing} (package metadata missing?)")
        return ", ".join(f"{k} {v}" for k, v in versions.items())

    def worker_process():
        # the app trains in spawned worker processes (densehmm_core.worker): in a frozen bundle a
        # worker is the bundle's own executable started by multiprocessing (main.py calls
        # multiprocessing.freeze_support()); train a small model in one and compare
        import numpy as np

        from densehmm_core.standard import StandardHMM
        from densehmm_core.worker import WorkerPool

        os.environ.pop("DENSEHMM_BUNDLE_SELFTEST", None)  # the worker must not run this self-test
        # This hook runs as __main__ before the app's main.py; a spawned worker looks at
        # __main__.__file__ to decide what to re-run, so present it as the app does.
        main = sys.modules["__main__"]
        main.__file__ = os.path.join(getattr(sys, "_MEIPASS", os.getcwd()), "main.py")
        rng = np.random.default_rng(0)
        seqs = [rng.integers(0, 4, size=30) for _ in range(4)]
        here = StandardHMM(3, n_symbols=4, n_iter=5, seed=0).fit(seqs)
        there = StandardHMM(3, n_symbols=4, n_iter=5, seed=0)
        pool = WorkerPool(max_idle=1)
        try:
            events = list(pool.iter_fit(there, seqs))
        finally:
            pool.close()
        if not np.array_equal(here.transmat_, there.transmat_):
            raise ValueError("the worker's fit differs from the in-process fit")
        return f"{len(events)} events from a worker process, same matrices as in-process"

    results = [check("resources", resources), check("hmmlearn", hmmlearn), check("model file", model_file),
               check("tensorflow", tensorflow), check("worker process", worker_process)]
    ok = all(results)
    print("selftest passed" if ok else "selftest FAILED", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if ok else 1)  # never start the GUI in self-test mode


if __import__("os").environ.get("DENSEHMM_BUNDLE_SELFTEST") == "1":
    _densehmm_bundle_selftest()

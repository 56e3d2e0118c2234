#!/usr/bin/env python
"""Loading a model file with a 50,000-word vocabulary (issue 14's target: under 1 s).

Run:

    .venv/bin/python tests/benchmarks/bench_model_load.py [--repeats 9] [--inflate-mb 0]

The models are those of ``tests/test_modelfile_vocab.py`` (seeded): a DenseHMM n = 32, l = 16 and
a standard HMM n = 45, both m = 50,000 words with a 17-tag set, saved with ``save_model``.
Measured in the same run, per model:

* ``load_model`` of the file as written now (gzip in chunks of whole rows, about 1 MB);
* ``load_model`` of the same file with its large arrays re-chunked as h5py guesses (what
  ``save_model`` wrote before: V of 50,000 x 16 in 3,125 x 1 columns), the baseline;
* the floor: the arrays and the vocabulary read with h5py in this process (no forked reader, no
  checks, no model built).

``--inflate-mb N`` first fills N MB of this process with small Python objects and arrays (the test
suite's process reaches 2-3 GB): forking the isolated reader costs more in a larger process.
Medians and minima of ``--repeats`` loads; the machine is shared, so compare ratios within a run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [REPO, os.path.dirname(HERE)]


def _timed(fn, repeats):
    fn()   # warm the caches (imports, the file in the page cache)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out), min(out)


def _rechunk_as_h5py_guesses(path):
    """The large arrays written again with h5py's own chunk shape (the previous writer)."""
    import h5py
    with h5py.File(path, "a") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.compression == "gzip":
                found.append(name)
        found = []
        f.visititems(visit)
        for name in found:
            data, attrs = f[name][()], dict(f[name].attrs)
            del f[name]
            ds = f.create_dataset(name, data=data, compression="gzip", compression_opts=4, shuffle=True)
            ds.attrs.update(attrs)
    return found


def _floor(path, name):
    import h5py
    with h5py.File(path, "r") as f:
        g = f["models/" + name]
        arrays = []
        g.visititems(lambda k, o: arrays.append(o[()]) if isinstance(o, h5py.Dataset) and k != "vocabulary"
                     and not k.startswith("history") else None)
        [v.decode("utf-8") for v in g["vocabulary"][()].tolist()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--inflate-mb", type=int, default=0)
    args = ap.parse_args(argv)
    import numpy as np
    from test_modelfile_vocab import M, _corpus, _dense, _words

    from densehmm_core.modelfile import load_model, save_model
    from densehmm_core.standard import StandardHMM
    ballast = []
    if args.inflate_mb:
        per = 1 << 20
        ballast = [[{"k": [i, str(i)]} for i in range(2000)] if i % 2 else np.ones(per // 8) for i in
                   range(args.inflate_mb * 2 // 3)]
    rss = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmRSS")]
    print(f"load average {os.getloadavg()[0]:.1f}; this process {int(rss[0]) // 1024 if rss else '?'} MB; "
          f"median (min) of {args.repeats} loads")
    vocab = list(_words(M))
    rng = np.random.default_rng(1)
    standard = StandardHMM(45, M, seed=0)
    standard.startprob_ = rng.dirichlet(np.ones(45))
    standard.transmat_ = rng.dirichlet(np.ones(45), size=45)
    standard.emissionprob_ = rng.dirichlet(np.ones(M), size=45)
    with tempfile.TemporaryDirectory() as tmp:
        for label, model in (("dense n=32 l=16", _dense(32, 16, M)), ("standard n=45", standard)):
            now = os.path.join(tmp, f"now-{model.kind}.h5")
            before = os.path.join(tmp, f"before-{model.kind}.h5")
            save_model(now, model, "m", corpus=_corpus(vocab))
            save_model(before, model, "m", corpus=_corpus(vocab))
            _rechunk_as_h5py_guesses(before)
            t_now = _timed(lambda: load_model(now, "m"), args.repeats)
            t_before = _timed(lambda: load_model(before, "m"), args.repeats)
            t_floor = _timed(lambda: _floor(now, "m"), args.repeats)
            print(f"{label:16s} load_model {t_now[0]:.3f} ({t_now[1]:.3f}) s | h5py's chunks {t_before[0]:.3f} "
                  f"({t_before[1]:.3f}) s: {t_before[0] / t_now[0]:.2f}x | floor (h5py here) {t_floor[0]:.3f} s: "
                  f"load is {t_now[0] / t_floor[0]:.1f}x the floor | target < 1 s")
    del ballast


if __name__ == "__main__":
    main()

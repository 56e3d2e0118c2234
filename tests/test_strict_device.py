"""The GPU code path under CuPy's rules, on the CPU (issue 22: a device-resident EM loop).

:mod:`strictdev` wraps numpy arrays in device arrays that behave like ``cupy.ndarray`` where host
and device meet: a host array handed to a device operation raises, an implicit conversion to numpy
raises, and every crossing is recorded.  Every EM fit of the package runs here on the CuPy engine's
code path with those arrays and must give the numpy engine's numbers, with nothing but scalars
crossing to the host per iteration (plus the snapshots when they are due).  The engine's own calls
run on it in ``tests/test_engine.py`` (the ``gpu-path-strict`` variants of every engine test).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from strictdev import DeviceArray, HostDeviceMixError, strict_backend  # noqa: E402 - this folder

from densehmm_core.cooc_sparse import DevicePairs, pair_counts, sparse_mad  # noqa: E402
from densehmm_core.data.corpus import Corpus  # noqa: E402
from densehmm_core.dense import DenseHMM  # noqa: E402
from densehmm_core.engine.cupy_engine import CupyEngine  # noqa: E402
from densehmm_core.engine.backend import numpy_backend  # noqa: E402
from densehmm_core.events import START_PHASE  # noqa: E402
from densehmm_core.standard import StandardHMM  # noqa: E402

WORDS = ["the", "The", "cats", "cat", "dogs", "runs", "ran", "running", "walked", "walks", "a", "A",
         "Paris", "London", "1999", "2001", "quickly", "slowly", "blue-green", "."]


# ------------------------------------------------------------------ the harness bites
def test_the_harness_refuses_what_cupy_refuses_and_counts_crossings():
    be = strict_backend()
    xp = be.xp
    host = np.arange(6.0)
    d = xp.asarray(host)                             # an explicit upload: a copy on the device
    assert isinstance(d, DeviceArray) and be.traffic.h2d == [6]
    e = xp.asarray(host)
    e += 1.0
    assert host[0] == 0.0 and xp.asarray(e) is not None     # the host array is not the device's
    be.traffic.clear()
    with pytest.raises(HostDeviceMixError):
        d + np.ones(6)                               # a host array in a kernel
    with pytest.raises(HostDeviceMixError):
        np.ones(6) * d
    with pytest.raises(HostDeviceMixError):
        xp.maximum(d, np.zeros(6))
    with pytest.raises(HostDeviceMixError):
        np.asarray(d)                                # implicit device -> host
    with pytest.raises(HostDeviceMixError):
        d[:3] = np.zeros(3)                          # a host array assigned into device memory
    with pytest.raises(HostDeviceMixError):
        xp.exp(d, out=np.empty(6))
    with pytest.raises(ValueError):                  # cupyx's sparse constructor takes device arrays only
        be.sparse.csr_matrix((np.ones(2), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    assert be.traffic.d2h == []
    s = (d * 2.0).sum()                              # reductions stay on the device (0-d arrays)
    assert isinstance(s, DeviceArray) and s.shape == ()
    assert float(s) == 30.0 and be.traffic.d2h == [1]
    assert isinstance(np.exp(d), DeviceArray)        # numpy's functions dispatch to the device
    np.testing.assert_array_equal(be.to_host(xp.exp(d)), np.exp(np.arange(6.0)))
    assert be.traffic.d2h == [1, 6]
    S = be.csr_matrix(np.ones(2), np.array([0, 1], np.int32), np.array([0, 1, 2], np.int32), (2, 2))
    assert isinstance(S @ xp.ones((2, 3)), DeviceArray)
    with pytest.raises(HostDeviceMixError):
        S @ np.ones((2, 3))


def test_to_host_many_is_one_transfer_of_every_array():
    """Several device arrays come back in one transfer, each with its shape, as float64 (float32
    widened exactly); on numpy they are copies the caller may own."""
    be = strict_backend()
    xp = be.xp
    host = [np.arange(3.0), np.arange(6.0).reshape(2, 3) / 7, (np.arange(8) / 3).astype(np.float32).reshape(4, 2)]
    dev = [xp.asarray(a) for a in host]
    be.traffic.clear()
    out = be.to_host_many(dev)
    assert be.traffic.d2h == [3 + 6 + 8]
    for a, b in zip(out, host):
        assert isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == b.shape
        np.testing.assert_array_equal(a, b.astype(np.float64))
    nb = numpy_backend()
    copies = nb.to_host_many(host)
    for a, b in zip(copies, host):
        assert a.dtype == np.float64 and not np.shares_memory(a, b)
        np.testing.assert_array_equal(a, b)


def _corpus(n_seq=60, seed=3):
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(0, len(WORDS), size=int(rng.integers(2, 40))).astype(np.int32) for _ in range(n_seq)]
    return Corpus(seqs, list(WORDS)), seqs


FITS = {
    "dense-em": (DenseHMM, dict(n_states=4, dim=3, fit_method="em", mstep_steps=5, mstep_dtype="float64")),
    "dense-em-float32": (DenseHMM, dict(n_states=4, dim=3, fit_method="em", mstep_steps=5)),
    "dense-em-features-l2": (DenseHMM, dict(n_states=4, dim=3, fit_method="em", mstep_steps=5, l2=0.01,
                                            mstep_dtype="float64", symbol_features="orthographic")),
    "dense-em-full-logits": (DenseHMM, dict(n_states=4, dim=4, fit_method="em", mstep_steps=5, logits="full",
                                            l2=0.01, mstep_dtype="float64")),
    "dense-em-restarts-random": (DenseHMM, dict(n_states=4, dim=3, fit_method="em", mstep_steps=5, restarts=2,
                                                init_method="random", mstep_dtype="float64")),
    "dense-marginal": (DenseHMM, dict(n_states=4, dim=3, fit_method="marginal")),
    "dense-posterior-sparsity": (DenseHMM, dict(n_states=4, dim=3, fit_method="em", mstep_steps=5,
                                                posterior_sparsity=1.0, mstep_dtype="float64")),
    # its co-occurrence phase runs in TensorFlow (on the CPU), its EM phase on the device path
    "dense-cooc-em": (DenseHMM, dict(n_states=4, dim=3, fit_method="cooc_em", cooc_steps=30, mstep_steps=5,
                                     mstep_dtype="float64")),
    "baum-welch": (StandardHMM, dict(n_components=4, emission_pseudocount=0.01)),
    "baum-welch-random": (StandardHMM, dict(n_components=4, init_method="random")),
}


@pytest.mark.parametrize("name", list(FITS))
def test_every_em_fit_runs_on_the_device_path_under_cupys_rules(name):
    """The same fit on the numpy engine and on the strict device path: the same likelihood path and
    parameters; per iteration only scalars come back (snapshots aside), and nothing is uploaded
    after the start (the counts, parameters and Adam's state stay on the device)."""
    cls, kw = FITS[name]
    if kw.get("fit_method") == "cooc_em":
        pytest.importorskip("tensorflow")       # not on the GPU test machine
    kw = dict(kw, seed=1, n_iter=6, tol=0, snapshot_every=3, diagnostics_every=2)
    if cls is StandardHMM:
        kw = {("n_states" if k == "n_components" else k): v for k, v in kw.items()}
    corpus, seqs = _corpus()
    ref = cls(**kw).fit(corpus, eval_data=seqs[:10])
    be = strict_backend()
    eng = CupyEngine(backend=be)
    model = cls(**kw)
    model._engine = lambda: eng
    events, crossings = [], []
    for ev in model.iter_fit(corpus, eval_data=seqs[:10]):
        if ev.phase not in (START_PHASE, "cooc"):    # cooc_em: its EM phase
            events.append(ev)
            first_of_run = not events[:-1] or events[-2].metrics.get("restart") != ev.metrics.get("restart")
            crossings.append((list(be.traffic.d2h), list(be.traffic.h2d), ev.params is not None, first_of_run))
        be.traffic.clear()
    rtol = 1e-6 if name.endswith("float32") else 1e-10   # float32: one block on a GPU, two on the CPU
    np.testing.assert_allclose([e.train_ll for e in events],
                               [r["train_ll"] for r in ref.history_ if r["phase"] != "cooc"], rtol=rtol)
    for a, b in ((model.startprob_, ref.startprob_), (model.transmat_, ref.transmat_),
                 (model.emissionprob_, ref.emissionprob_)):
        np.testing.assert_allclose(a, b, rtol=rtol * 100, atol=1e-12)
    n, m = model.n_states, model.n_symbols
    ntok = sum(len(s) for s in seqs)
    host_side = {n * ntok, ntok} if name == "dense-posterior-sparsity" else set()   # see below
    mats = n + n * n + n * m
    if isinstance(model, DenseHMM):
        # a snapshot is one transfer: the packed theta (n_parameters; with fixed kernels U and W too)
        # followed, but for the marginal fit, by the matrices the E-step used (pi, A and B); at the end
        # of restarts the best run's matrices are not the last evaluated (theta alone: the host
        # computes them)
        sizes = {s for d2h, _, _, _ in crossings[:-1] for s in d2h if s > 3 and s not in host_side}
        assert len(sizes) == 1, sizes
        snap = sizes.pop()
        theta = snap if name == "dense-marginal" else snap - mats
        assert theta >= model.n_parameters, (snap, theta)
        every, final = {snap}, ({snap, theta} if "restarts" in name else {snap})
    else:                                           # a snapshot is pi, A and B in one transfer
        every = final = {mats}
    for i, (d2h, h2d, has_params, first_of_run) in enumerate(crossings):
        # the projection of posterior sparsity runs on the host (documented): the posteriors come back
        # each E-step, the symbols once
        big = [s for s in d2h if s > 3 and s not in host_side]
        allowed = final if i == len(crossings) - 1 else every   # theta alone: the final event only
        assert set(big) <= allowed, (i, d2h, allowed)
        assert len(big) <= 1, (i, d2h)                  # a snapshot is one transfer
        assert bool(big) <= has_params or i == len(crossings) - 1, (i, d2h)
        if not first_of_run and name != "dense-posterior-sparsity":   # a run's start uploads it
            assert h2d == [], (i, h2d)


def test_scoring_decoding_and_diagnostics_on_the_device_path():
    corpus, seqs = _corpus(seed=5)
    model = DenseHMM(4, 3, fit_method="em", seed=2, n_iter=3).fit(corpus)
    be = strict_backend()
    eng = CupyEngine(backend=be)
    ref = model.score_per_sequence(seqs)
    (ref_paths, ref_lp), ref_post = model.decode(seqs), model.predict_proba(seqs)
    model._engine = lambda: eng
    np.testing.assert_allclose(model.score_per_sequence(seqs), ref, rtol=1e-12)
    paths, lp = model.decode(seqs)
    np.testing.assert_allclose(lp, ref_lp, rtol=1e-12)
    assert all(np.array_equal(a, b) for a, b in zip(paths, ref_paths))
    for a, b in zip(model.predict_proba(seqs), ref_post):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)
    pc = pair_counts(seqs, model.n_symbols)
    pairs = DevicePairs(pc, be)
    be.traffic.clear()
    mad = pairs.mad(be.to_device(model.transmat_), be.to_device(model.emissionprob_))
    assert mad == pytest.approx(sparse_mad(None, model.transmat_, model.emissionprob_, pc), rel=1e-12)
    assert be.traffic.d2h == [1]


def test_cupy_provides_every_name_the_device_code_uses():
    """What the harness cannot model is CuPy's coverage of numpy's API: every numpy name the device
    code used (module functions, ufuncs, array methods), recorded while the fits and the engine's calls
    ran on the strict path, exists in CuPy.  Needs CuPy importable (not a GPU): the GPU check runs it."""
    cupy = pytest.importorskip("cupy")
    import strictdev
    strictdev.USED.clear()
    for name in FITS:
        test_every_em_fit_runs_on_the_device_path_under_cupys_rules(name)
    test_scoring_decoding_and_diagnostics_on_the_device_path()
    used = set(strictdev.USED)
    assert ("module", "numpy.take") in used and ("method", "sum") in used and ("module", "numpy.exp") in used
    missing = []
    for kind, name in sorted(used):
        if kind == "method":
            ok = hasattr(cupy.ndarray, name)
        elif kind == "module":
            obj = cupy
            for part in name.split(".")[1:]:
                obj = getattr(obj, part, None)
            ok = obj is not None
        else:            # "ufunc" (name or name.method) and "function": the top-level name
            ok = hasattr(cupy, name.split(".")[0])
        if not ok:
            missing.append((kind, name))
    assert missing == []

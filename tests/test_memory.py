"""Memory is bounded (issue 27, item 3): the size checks count the engine's T x n buffers (a
single long sequence forms a chunk of its own), standard input and decompressed ``.gz`` data are
capped while reading, worker processes load TensorFlow only for the jobs that need it.  Every
case ends with one line and exit 2, or runs within the estimate (peak RSS measured in a
subprocess: ``VmHWM`` of the process itself, which, unlike ``ru_maxrss``, does not count
the copy of the forking parent before ``exec``)."""
from __future__ import annotations

import gzip
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from densehmm_core.engine.array_engine import ArrayEngine
from densehmm_core.engine.numpy_engine import NumpyEngine
from densehmm_core.memory import (BYTES_PER_CHUNK_ELEMENT, DEFAULT_CHUNK_ELEMENTS, TooLargeError, inference_bytes,
                                  largest_chunk_tokens, text_limit)

REPO = pathlib.Path(__file__).resolve().parent.parent
LETTERS = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak memory from /proc")

# runs the command line in this process and reports its own peak resident memory on stderr
WRAP = ("import sys\n"
        "from densehmm_core.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0].split()[1]\n"
        "print('PEAK', int(hwm) * 1024, file=sys.stderr)\n"
        "sys.exit(rc)\n")


def cli(args, cwd, budget=None, stdin=None):
    """(exit status, stdout, stderr lines without the PEAK line, peak RSS in bytes)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("DENSEHMM_MAX_MODEL_BYTES", None)
    if budget is not None:
        env["DENSEHMM_MAX_MODEL_BYTES"] = str(int(budget))
    p = subprocess.Popen([sys.executable, "-c", WRAP, *map(str, args)], cwd=cwd, env=env, text=True,
                         stdin=stdin or subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=600)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    peak = [int(ln.split()[1]) for ln in lines if ln.startswith("PEAK ")]
    return p.returncode, out, [ln for ln in lines if not ln.startswith("PEAK ")], (peak[0] if peak else None)


def one_line_error(lines, phrase):
    errors = [ln for ln in lines if not ln.startswith("training ")]
    assert len(errors) == 1 and phrase in errors[0], lines
    return errors[0]


def fasta(path, lengths, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "wb") as fh:
        for i, L in enumerate(lengths):
            fh.write(b">s%d\n" % i + LETTERS[rng.integers(0, 20, L)].tobytes() + b"\n")
    return path


# ------------------------------------------------------------------ the estimate
def test_the_estimates_constants_are_the_engines():
    assert ArrayEngine.BYTES_PER_ELEMENT == BYTES_PER_CHUNK_ELEMENT
    assert NumpyEngine().chunk_elements == DEFAULT_CHUNK_ELEMENTS


@pytest.mark.parametrize("n_states", [1, 2, 7, 64])
@pytest.mark.parametrize("chunk_elements", [50, 997, 2 ** 12])
def test_the_largest_chunk_is_the_engines(n_states, chunk_elements):
    """Oracle: the chunks the engine really makes (their padded T_max x n_seq)."""
    rng = np.random.default_rng(n_states * chunk_elements)
    lengths = list(rng.integers(1, 60, 200)) + [int(chunk_elements) * 3 // max(1, n_states) + 5, 150, 77]
    seqs = [rng.integers(0, 5, L) for L in lengths]
    prepared = NumpyEngine(chunk_elements=chunk_elements).prepare(seqs, n_states)
    engine_largest = max(ch.obs.shape[0] * ch.obs.shape[1] for ch in prepared.chunks)
    assert largest_chunk_tokens(lengths, n_states, chunk_elements) == engine_largest
    # the lengths as a list of Python ints, a generator or an int32 array (a worker's): the same
    as_array = np.array(lengths, dtype=np.int32)
    assert largest_chunk_tokens(as_array, n_states, chunk_elements) == engine_largest
    assert largest_chunk_tokens((int(x) for x in lengths), n_states, chunk_elements) == engine_largest
    assert inference_bytes(as_array, n_states, 5) == inference_bytes([int(x) for x in lengths], n_states, 5)


def test_a_long_sequence_counts_as_one_chunk_of_t_by_n():
    T = 10 * DEFAULT_CHUNK_ELEMENTS
    assert largest_chunk_tokens([T], 2) == T
    # 6 more states: 6 more float arrays of T x 1 per working array, and the larger matrices
    assert inference_bytes([T], 8) - inference_bytes([T], 2) == 6 * BYTES_PER_CHUNK_ELEMENT * T + 64 * (64 - 4)
    # many short sequences with the same number of tokens: bounded by the chunk budget
    assert largest_chunk_tokens([100] * (T // 100), 2) <= DEFAULT_CHUNK_ELEMENTS // 2


# ---------------------------------------------------------------- measured: runs within it
@pytest.mark.parametrize("layout,n", [("one", 2), ("one", 8), ("short", 4)])
def test_training_stays_within_the_estimate(tmp_path, layout, n):
    lengths = [2_000_000] if layout == "one" else [200] * 10_000
    path = fasta(tmp_path / "d.fa", lengths)
    estimate = inference_bytes(lengths, n, 20)
    rc, out, err, peak = cli(["train", path, "--model", "standard", "--states", n, "--iter", "1", "--split", "0",
                              "--out", "m.h5"], tmp_path, budget=estimate)
    assert rc == 0, err
    assert peak <= estimate, (peak, estimate)
    if layout == "one":    # the estimate follows the engine's T x n buffers: not a loose bound
        assert peak >= 0.5 * estimate, (peak, estimate)


def test_decode_and_evaluate_of_a_long_sequence_stay_within_the_estimate(tmp_path):
    lengths = [1_500_000]
    path = fasta(tmp_path / "d.fa", lengths)
    rc, _, err, _ = cli(["train", fasta(tmp_path / "small.fa", [300] * 20, seed=1), "--model", "standard",
                         "--states", "6", "--iter", "2", "--split", "0", "--out", "m.h5"], tmp_path)
    assert rc == 0, err
    estimate = inference_bytes(lengths, 6, 20)
    for cmd in (["evaluate", "m.h5", path], ["decode", "m.h5", path]):
        rc, out, err, peak = cli(cmd, tmp_path, budget=estimate)
        assert rc == 0, err
        assert peak <= estimate, (cmd[0], peak, estimate)
        rc, out, err, peak = cli(cmd, tmp_path, budget=estimate - 1)
        assert rc == 2 and out == ""
        one_line_error(err, "too large: 1500000 tokens (longest sequence 1500000) with 6 states needs about")
        assert peak < estimate / 2


# ------------------------------------------------------------- refused: one line, exit 2
def test_a_huge_one_line_fasta_is_refused_before_training(tmp_path):
    lengths = [3_000_000]
    path = fasta(tmp_path / "one.fa", lengths)
    estimate = inference_bytes(lengths, 2, 20)
    rc, out, err, peak = cli(["train", path, "--model", "standard", "--states", "2", "--iter", "1", "--split", "0"],
                             tmp_path, budget=estimate - 1)
    assert rc == 2 and out == ""
    line = one_line_error(err, "too large: 3000000 tokens (longest sequence 3000000) with 2 states")
    assert "set by DENSEHMM_MAX_MODEL_BYTES" in line
    # read, never trained: far below what training would have taken
    assert peak < estimate / 2


def test_a_gzip_bomb_stops_while_it_is_read(tmp_path):
    path = tmp_path / "bomb.fa.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:   # 64 MB of residues in ~70 KB
        fh.write(b">x\n")
        block = b"ACGT" * (1 << 16)
        for _ in range(256):
            fh.write(block)
        fh.write(b"\n")
    assert path.stat().st_size < 1 << 20
    budget = 128 << 20
    rc, out, err, peak = cli(["train", path, "--model", "standard", "--states", "2", "--iter", "1"], tmp_path,
                             budget=budget)
    assert rc == 2 and out == ""
    one_line_error(err, "bomb.fa.gz: the decompressed file holds more than 4.19 MB of text")
    assert peak < budget


ENDLESS = ("import sys\n"
           "chunk = (b'>s\\n' + b'ACDEFGHIKLMNPQRSTVWY' * 50 + b'\\n') * 100\n"
           "try:\n"
           "    while True:\n"
           "        sys.stdout.buffer.write(chunk)\n"
           "except (BrokenPipeError, OSError):\n"
           "    pass\n")


def test_endless_standard_input_is_capped(tmp_path):
    budget = 128 << 20
    producer = subprocess.Popen([sys.executable, "-c", ENDLESS], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        rc, out, err, peak = cli(["train", "-", "--model", "standard", "--states", "2"], tmp_path, budget=budget,
                                 stdin=producer.stdout)
    finally:
        producer.kill()
        producer.wait(10)
    assert rc == 2 and out == ""
    assert one_line_error(err, "standard input holds more than") == (
        "densehmm train: error: standard input holds more than 4.19 MB of text: reading it would need more than "
        "the 0.134 GB of memory allowed (set by DENSEHMM_MAX_MODEL_BYTES)")
    assert peak < budget


def test_the_text_limit_follows_the_budget(monkeypatch):
    monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", str(320 << 20))
    assert text_limit() == 10 << 20
    monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", "1000")
    assert text_limit() == 1 << 20          # never below 1 MB


# ------------------------------------------------------------------------ workers
def test_a_worker_refuses_a_fit_that_would_not_fit(monkeypatch):
    from densehmm_core.standard import StandardHMM
    from densehmm_core.worker import WorkerPool
    seqs = [np.zeros(100_000, dtype=np.int64), np.ones(10, dtype=np.int64)]
    estimate = inference_bytes([100_000, 10], 3, 2)
    monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", str(estimate - 1))
    pool = WorkerPool(max_idle=1)
    try:
        with pytest.raises(TooLargeError, match="too large: 100010 tokens"):
            list(pool.iter_fit(StandardHMM(3, n_symbols=2, n_iter=1, seed=0), seqs))
        monkeypatch.setenv("DENSEHMM_MAX_MODEL_BYTES", str(estimate))
        model = StandardHMM(3, n_symbols=2, n_iter=1, seed=0)
        assert list(pool.iter_fit(model, seqs))[-1].done
    finally:
        pool.close()


def _maps_tensorflow(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as fh:
        return "libtensorflow" in fh.read()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_load_tensorflow_only_for_models_that_need_it():
    from densehmm_core import DenseHMM, StandardHMM
    from densehmm_core.synthetic import demo_dataset
    from densehmm_core.worker import WorkerPool
    train = demo_dataset(seed=2)[0][:50]
    assert not StandardHMM(3).needs_tensorflow and not DenseHMM(3, 2, fit_method="em").needs_tensorflow
    assert DenseHMM(3, 2, fit_method="cooc").needs_tensorflow and DenseHMM(3, 2, fit_method="cooc_em").needs_tensorflow
    pool = WorkerPool(max_idle=2)
    try:
        w = pool.acquire(needs_tensorflow=False)
        list(pool.iter_fit_on(w, StandardHMM(3, n_iter=2, seed=0), train))
        assert not _maps_tensorflow(w.process.pid) and w.tf_info is None
        cooc = DenseHMM(3, 2, fit_method="cooc", cooc_steps=3, finish="none", seed=0)
        list(pool.iter_fit(cooc, train))
        tf_workers = [x for x in pool._idle if x.tf_info is not None]
        assert len(tf_workers) == 1 and _maps_tensorflow(tf_workers[0].process.pid)
        # a model that needs TensorFlow goes to the worker that has it; one that does not, elsewhere
        assert pool.acquire(needs_tensorflow=True) is tf_workers[0]
        other = pool.acquire(needs_tensorflow=False)
        assert other.tf_info is None and not _maps_tensorflow(other.process.pid)
    finally:
        pool.close()


def _tensorflow_task(seed):
    """A sweep task training a standard HMM: reports whether its process holds TensorFlow."""
    from densehmm_core import StandardHMM
    from densehmm_core.synthetic import demo_dataset
    StandardHMM(3, n_iter=2, seed=seed).fit(demo_dataset(seed=2)[0][:30])
    return [{"x": seed, "tensorflow": "tensorflow" in sys.modules}]


def test_sweep_process_workers_do_not_import_tensorflow_for_standard_models(tmp_path):
    from densehmm_core.experiments.runner import ResultStore, Task, run_tasks
    store = ResultStore(tmp_path / "r.csv", ["x"])
    tasks = [Task(func=f"{__name__}:_tensorflow_task", kwargs={"seed": i}, key={"x": i}) for i in range(2)]
    rep = run_tasks(tasks, store, ["x"], jobs=2, executor="process", import_tf=True, out=lambda s: None)
    assert rep.done == 2 and not rep.failed
    assert sorted(str(r["tensorflow"]) for r in ResultStore(tmp_path / "r.csv").rows) == ["False", "False"]

"""The start of a fit in the progress stream (issue 24.3, "silent start"): a spectral start's stages
(reading the adjacent pairs, the SVD, k-means) are events of phase "start" before the first step, in
order; a cancel during the start ends the fit within 0.5 s and leaves the model as it was; the CLI
prints the stages; a random start that the data forces is said in the stream (issue 22)."""
import pathlib
import threading
import time

import numpy as np
import pytest

from densehmm_core.cooc_sparse import pair_counts
from densehmm_core.dense import DenseHMM
from densehmm_core.events import START_PHASE, START_STAGES, CancelToken, run_start, start_text
from densehmm_core.spectral import boundary_counts, spectral_embeddings, spectral_matrices, spectral_matrices_steps
from densehmm_core.standard import StandardHMM
from densehmm_core.synthetic import demo_dataset

PTB = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pos" / "ptb_wsj_sample_combined.mrg"
FIX = pathlib.Path(__file__).parent / "fixtures" / "data"


@pytest.fixture(scope="module")
def words():
    """The Penn Treebank sample's words (min_count 1: 11,968 types, 94,084 tokens)."""
    if not PTB.exists():
        pytest.skip("../shared/data is not present")
    from densehmm_core.data import load
    return load(str(PTB), observe="words", min_count=1).sequences


@pytest.fixture(scope="module")
def demo():
    return demo_dataset(seed=3)[0]


def _split(events):
    starts = [e for e in events if e.phase == START_PHASE]
    steps = [e for e in events if e.phase != START_PHASE]
    return starts, steps


def _check_stage_order(starts, order=("pairs", "svd", "kmeans")):
    """Stages in the order pairs, SVD, k-means (a small alphabet: pairs, contexts, k-means); inside a
    stage the share done never decreases and each stage ends at 1; no progress is reported twice in a
    row (the CLI printed each such line twice)."""
    order = list(order)
    said = [(e.metrics["stage"], e.metrics["stage_done"], e.metrics["detail"]) for e in starts]
    assert all(a != b for a, b in zip(said, said[1:])), said
    stages = [e.metrics["stage"] for e in starts]
    seen = [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s]
    assert seen == order, seen
    for stage in order:
        done = [e.metrics["stage_done"] for e in starts if e.metrics["stage"] == stage]
        assert done == sorted(done) and done[-1] == 1.0
        idx = {e.metrics["stage_index"] for e in starts if e.metrics["stage"] == stage}
        assert idx == {order.index(stage) + 1}
    for e in starts:
        assert e.step == 0 and e.loss is None and e.params is None and not e.done
        assert e.metrics["start"] == "spectral" and e.metrics["stages"] == 3


@pytest.mark.parametrize("make", [
    lambda: DenseHMM(8, 2, fit_method="em", n_iter=1, mstep_steps=2, seed=4),
    lambda: StandardHMM(8, n_iter=1, seed=4),
], ids=["dense-em", "standard"])
def test_a_small_alphabets_start_reports_pairs_contexts_kmeans(demo, make):
    """More states than symbols (8 states, the demo's 5 symbols): the contexts are counted in the SVD's
    place, stage 2 of 3, and k-means clusters contexts, not symbols."""
    starts, steps = _split(list(make().iter_fit(demo)))
    _check_stage_order(starts, ("pairs", "contexts", "kmeans"))
    said = [start_text(e.metrics, detail=True) for e in starts]
    assert said[2] == "start 2/3: counting contexts 0%  2000 tokens, 5 symbols for 8 states", said
    assert said[-1].startswith("start 3/3: k-means 100%  8 clusters of ") and "contexts" in said[-1], said


@pytest.mark.parametrize("make", [
    lambda: DenseHMM(3, 2, fit_method="em", n_iter=2, mstep_steps=2, seed=4),
    lambda: DenseHMM(3, 2, fit_method="marginal", n_iter=1, seed=4),
    lambda: StandardHMM(3, n_iter=2, seed=4),
], ids=["dense-em", "dense-marginal", "standard"])
def test_the_spectral_start_reports_its_stages_before_the_first_step_in_order(demo, make):
    model = make()
    events = list(model.iter_fit(demo))
    starts, steps = _split(events)
    assert events == starts + steps and steps[0].step == 0 and steps[-1].done
    _check_stage_order(starts)
    # progress only: the stream's steps and the model's history are those of a fit without it
    assert [r["step"] for r in model.history_] == [e.step for e in steps]
    assert all(r["phase"] != START_PHASE for r in model.history_)
    elapsed = [e.elapsed for e in events]
    assert elapsed == sorted(elapsed)


def test_the_start_with_progress_gives_the_same_start_as_without(demo):
    """The stages only report: the first step's emissions are those of the spectral start computed
    directly (spectral_embeddings / spectral_matrices, the same seed)."""
    m = int(max(s.max() for s in demo)) + 1
    dense = DenseHMM(3, 2, fit_method="em", n_iter=1, mstep_steps=1, seed=4, mstep_dtype="float64")
    first = _split(list(dense.iter_fit(demo)))[1][0]
    emb = spectral_embeddings(pair_counts(demo, m), 3, 2, dense._rng(0), 0.2, bounds=boundary_counts(demo, m))
    logits = emb["W"] @ emb["V"].T
    B = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(first.params["emissionprob"], B / B.sum(axis=1, keepdims=True), rtol=1e-12)
    std = StandardHMM(3, n_iter=1, seed=4)
    first = _split(list(std.iter_fit(demo)))[1][0]
    _, _, B = spectral_matrices(demo, m, 3, np.random.default_rng(4))
    np.testing.assert_array_equal(first.params["emissionprob"], B)


def test_the_cooc_fit_reports_its_spectral_start_too(demo):
    pytest.importorskip("tensorflow")
    model = DenseHMM(3, 2, fit_method="cooc", cooc_steps=2, finish_steps=0, seed=4)
    starts, steps = _split(list(model.iter_fit(demo)))
    _check_stage_order(starts)    # its pairs were counted for the fit: one "pairs" step saying how many
    assert [e.metrics["stage_done"] for e in starts if e.metrics["stage"] == "pairs"] == [1.0]
    assert steps[0].phase == "cooc" and steps[-1].done


def test_start_text_names_the_stage():
    m = {"stage": "svd", "stage_index": 2, "stages": 3, "stage_done": 0.3, "detail": "rank 32 of 100 x 2004",
         "restart": 1, "restarts": 3, "start": "spectral"}
    assert start_text(m) == "start 2/3: SVD (restart 2/3)"
    assert start_text(m, detail=True) == "start 2/3: SVD (restart 2/3) 30%  rank 32 of 100 x 2004"
    assert start_text({"stage": "random", "start": "random (no adjacent pairs)"}) == "start: random (no adjacent pairs)"


def _cancel_at(words, make, when, *, by_thread: float = 0.0):
    """Fit ``make()`` on the words and cancel at the first start event for which ``when(ev)`` holds
    (or ``by_thread`` seconds after it, from another thread); ``(seconds from the cancel to the end
    of the stream, events, model)``."""
    model = make()
    token = CancelToken()
    events, cancelled_at = [], []

    def cancel():
        cancelled_at.append(time.perf_counter())
        token.cancel()

    for ev in model.iter_fit(words, cancel=token):
        events.append(ev)
        if not cancelled_at and ev.phase == START_PHASE and when(ev):
            if by_thread:
                t = threading.Timer(by_thread, cancel)
                t.start()
                cancelled_at.append(None)
            else:
                cancel()
    end = time.perf_counter()
    assert cancelled_at and cancelled_at[-1] is not None
    return end - cancelled_at[-1], events, model


CANCEL_POINTS = {
    "pairs": lambda ev: ev.metrics["stage"] == "pairs",
    "svd": lambda ev: ev.metrics["stage"] == "svd" and ev.metrics["stage_done"] == 0.0,
    "kmeans": lambda ev: ev.metrics["stage"] == "kmeans",
}


@pytest.mark.parametrize("point", list(CANCEL_POINTS))
@pytest.mark.parametrize("make", [
    lambda: DenseHMM(45, 32, fit_method="em", n_iter=5, seed=0),
    lambda: StandardHMM(45, n_iter=5, seed=0),
], ids=["dense-em", "standard"])
def test_a_cancel_during_the_start_ends_the_fit_within_half_a_second_and_leaves_no_model(words, make, point):
    """On the treebank's words (n = 45, 11,968 symbols) a cancel at any stage of the start ends the
    stream within 0.5 s (measured: about 0.01-0.3 s on the 2-core development machine; the
    longest piece of work between two checks is one Lanczos call), with a "cancelled" event, no
    parameters, no history and the model's matrices as they were (none)."""
    took, events, model = _cancel_at(words, make, CANCEL_POINTS[point])
    assert took < 0.5, f"cancel at {point} took {took:.3f} s"
    last = events[-1]
    assert last.done and last.reason == "cancelled" and last.params is None and last.phase != START_PHASE
    assert all(e.phase == START_PHASE for e in events[:-1])
    assert model.startprob_ is None and model.transmat_ is None and model.emissionprob_ is None
    assert len(model.history_) == 1 and model.history_[0]["train_ll"] is None   # the final event's record only
    assert model.stop_reason_ == "cancelled"


def test_a_cancel_from_another_thread_during_the_svd_ends_the_fit_within_half_a_second(words):
    """The cancel arrives while the SVD runs (50 ms after its first event: inside the Gram matrix or the
    Lanczos call, which cannot be interrupted): the fit still ends within 0.5 s."""
    took, events, model = _cancel_at(words, lambda: DenseHMM(45, 32, fit_method="em", n_iter=5, seed=0),
                                     CANCEL_POINTS["svd"], by_thread=0.05)
    assert took < 0.5, f"took {took:.3f} s"
    assert events[-1].reason == "cancelled" and model.startprob_ is None


def test_a_cancel_during_the_start_of_a_refit_keeps_the_previous_model(demo):
    model = StandardHMM(3, n_iter=3, seed=4).fit(demo)
    before = {k: v.copy() for k, v in model.arrays()["params"].items()}
    token = CancelToken()
    events = []
    for ev in model.iter_fit(demo, cancel=token):
        events.append(ev)
        if ev.phase == START_PHASE and ev.metrics["stage"] == "svd":
            token.cancel()
    assert events[-1].reason == "cancelled" and events[-1].params is None
    for k, v in model.arrays()["params"].items():
        np.testing.assert_array_equal(v, before[k])


def test_run_start_polls_the_token_after_every_step_and_closes_the_start():
    token = CancelToken()
    closed = []

    def steps():
        try:
            for stage in START_STAGES:
                from densehmm_core.events import StartStep
                yield StartStep(stage, 0.0)
            return "started"
        finally:
            closed.append(True)

    got = []

    def drive():
        result = yield from run_start(steps(), token, lambda st: st)
        got.append(result)

    for st in drive():
        if st.stage == "svd":
            token.cancel()
    assert got == [(False, None)] and closed == [True]
    token2 = CancelToken()
    out = []
    gen = run_start(steps(), token2, lambda st: st.stage)
    while True:
        try:
            out.append(next(gen))
        except StopIteration as stop:
            assert stop.value == (True, "started")
            break
    assert out == list(START_STAGES)


def test_spectral_matrices_steps_reports_pairs_svd_kmeans(demo):
    m = int(max(s.max() for s in demo)) + 1
    gen = spectral_matrices_steps(demo, m, 4, np.random.default_rng(0))
    stages = []
    while True:
        try:
            stages.append(next(gen).stage)
        except StopIteration as stop:
            pi, A, B = stop.value
            break
    assert stages[0] == "pairs" and stages[-1] == "kmeans" and "svd" in stages
    np.testing.assert_array_equal(B, spectral_matrices(demo, m, 4, np.random.default_rng(0))[2])


def test_the_cli_prints_the_start_stages(tmp_path, capsys):
    from densehmm_core.cli import main
    rc = main(["train", str(FIX / "words.conllu"), "--observe", "words", "--model", "standard", "--states", "4",
               "--iter", "2", "--split", "0", "--seed", "3", "-v", "--out", str(tmp_path / "m.h5")])
    err = capsys.readouterr().err
    assert rc == 0, err
    lines = err.splitlines()
    first_step = next(i for i, line in enumerate(lines) if line.startswith("baum-welch 0"))
    starts = [line for line in lines[:first_step] if line.startswith("start ")]
    assert [s.split(":")[0] for s in starts][0] == "start 1/3"
    for name in ("start 1/3: reading pairs", "start 2/3: SVD", "start 3/3: k-means"):
        assert any(s.startswith(name) for s in starts), (name, starts)
    assert any(s.startswith("start 3/3: k-means 100%") for s in starts)
    said = [s.rsplit("  (", 1)[0] for s in starts]       # without the elapsed time
    assert all(a != b for a, b in zip(said, said[1:])), starts


def test_the_cli_knows_the_start_phase_without_importing_numpy():
    from densehmm_core.cli import progress
    assert progress.START_PHASE == START_PHASE


def test_the_progress_bar_shows_the_start_stage():
    import io

    from densehmm_core.cli.progress import ProgressPrinter
    from densehmm_core.events import ProgressEvent, StartStep
    out = io.StringIO()
    printer = ProgressPrinter("bar", out)
    printer(ProgressEvent(step=0, total=40, phase=START_PHASE, metrics=StartStep("svd", 0.5).metrics(), elapsed=1.0))
    printer(ProgressEvent(step=0, total=40, phase=START_PHASE, metrics=StartStep("kmeans", 0.0).metrics(), elapsed=1.2))
    lines = out.getvalue().split("\r")[1:]
    assert lines[0].startswith("start 2/3: SVD [") and "#" in lines[0]
    assert lines[1].startswith("start 3/3: k-means [") and "#" not in lines[1]


def test_a_cancelled_start_leaves_no_thread_behind(words):
    """A cancel inside the SVD stops the Lanczos iterations in the fit's own thread: no thread is left
    running (one left inside multi-threaded BLAS deadlocked the next fork of the process, the
    model-file probe), and the process can fork at once."""
    import os
    before = {t.ident for t in threading.enumerate()}
    took, events, model = _cancel_at(words, lambda: DenseHMM(45, 32, fit_method="em", n_iter=5, seed=0),
                                     CANCEL_POINTS["svd"], by_thread=0.05)
    time.sleep(0.1)   # the Timer thread that cancelled has ended
    assert {t.ident for t in threading.enumerate() if t.is_alive()} <= before
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0

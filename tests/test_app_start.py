"""A words job in its start (issue 24.3): the jobs table and the dashboard say which start stage runs,
the placeholders name the model's type, the axes are those of n states and m words from the first
frame, and a cancel during the start takes effect at once and leaves a job without a model."""
import pathlib
import threading
import time

import pytest

PTB = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pos" / "ptb_wsj_sample_combined.mrg"


@pytest.fixture
def slow_svd(monkeypatch):
    """The SVD of the start held until released (so the test sees the start; the real work follows)."""
    import densehmm_core.spectral as sp
    gate = threading.Event()
    orig = sp._top_vectors

    def held(X, k):
        from densehmm_core.events import check_cancel
        deadline = time.monotonic() + 30
        while not gate.wait(0.01) and time.monotonic() < deadline:
            check_cancel()   # as the real Lanczos iterations do
        return orig(X, k)
    monkeypatch.setattr(sp, "_top_vectors", held)
    yield gate
    gate.set()


def _words_window(make_window, qtbot):
    if not PTB.exists():
        pytest.skip("../shared/data is not present")
    w = make_window()
    w.open_files([str(PTB)])
    qtbot.waitUntil(lambda: bool(w.datasets) and not w.data_ctl.loading, timeout=60000)
    p = w.data_panel
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.min_count.setValue(1)
    old = w.datasets[0]
    p.reread_button.click()
    qtbot.waitUntil(lambda: old not in w.datasets and not w.data_ctl.loading, timeout=60000)
    return w


@pytest.mark.parametrize("kind", ["dense_em", "standard"])
def test_a_words_job_in_its_start_shows_its_stage_axes_and_model_type(make_window, qtbot, slow_svd, kind):
    from app.modelspec import ModelSpec
    from app.panels import jobs_panel as jp
    w = _words_window(make_window, qtbot)
    m = w.datasets[0].n_symbols
    assert m > 5000
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type=kind, n=45, l=32, n_iter=3))
    assert w.current_job is job
    d = w.dashboard
    # from the first frame: the heatmaps' axes are those of 45 states and m words, B is the words table
    assert d.heatmaps.transmat.row_labels() == [str(i) for i in range(45)]
    x0, x1 = d.heatmaps.transmat.plot.vb.viewRange()[0]
    assert (x0, x1) == pytest.approx((-0.5, 44.5))
    assert d.heatmaps.showing_top_words() and d.heatmaps.top_words.table.rowCount() == 45
    assert f"of {m} symbols" in d.heatmaps.top_words.title.text()
    assert d.heatmaps.info.text() == f"n = 45 states, m = {m} symbols"
    text = d.embeddings.placeholder.text()
    if kind == "dense_em":
        assert text.startswith("DenseHMM embeddings (n = 45 states, l = 32)") and "standard HMM" not in text
    else:
        assert "a standard HMM has no dense representation" in text
    # the start's stage, in the jobs table and the dashboard's title
    qtbot.waitUntil(lambda: job.last_event is not None and job.last_event.metrics.get("stage") == "svd",
                    timeout=30000)
    item = w.jobs_panel.items[job.id]
    qtbot.waitUntil(lambda: w.jobs_panel.bars[job.id].format() == "SVD 2/3", timeout=5000)
    bar = w.jobs_panel.bars[job.id]
    assert bar.maximum() == 1000 and 333 <= bar.value() < 667          # not a busy bar: a share of the start
    assert item.text(jp.C_RESULT).startswith("start 2/3: SVD")
    assert "start 2/3: SVD" in d.title.text()
    qtbot.waitUntil(lambda: item.text(jp.C_TIME) not in ("0 s", "—"), timeout=5000)   # time runs
    # cancel during the start: at once, a cancelled job without a model
    t0 = time.perf_counter()
    w.jobs.cancel(job)
    qtbot.waitUntil(lambda: job.state.is_final, timeout=5000)
    assert time.perf_counter() - t0 < 0.5
    assert job.state.value == "cancelled" and not job.has_model and job.model.emissionprob_ is None
    assert "remote run" not in d.title.text()
    # no model to draw: the page says why instead of empty matrices and curves
    assert "ended (cancelled) before its start was ready" in d.live_placeholder.text()
    assert not d.showing_views() and d.live_placeholder.isVisible()
    assert not w.errors

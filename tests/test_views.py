"""The plotting views (app/views): what they display equals the models' numbers.

Oracles: the matrices given, an independent PCA (eigen-decomposition of the covariance,
not the SVD the view uses), hmmlearn's Viterbi and posteriors for the decode view.
Offscreen Qt (conftest sets QT_QPA_PLATFORM=offscreen).
"""
from __future__ import annotations

import math
import numpy as np
import pytest

pytest.importorskip("pytestqt")
pg = pytest.importorskip("pyqtgraph")

from PySide6 import QtCore, QtGui  # noqa: E402

from densehmm_core.events import ProgressEvent  # noqa: E402
from densehmm_core.hmm_base import BaseHMM  # noqa: E402

from app.views import (CompareView, Dashboard, DecodeView, EmbeddingScatter, MatrixHeatmap,  # noqa: E402
                       OverviewView, ParameterHeatmaps, TrainingCurves)
from app.views.theme import fmt_compact, plot_title, state_colors  # noqa: E402
from app.views.projection import pca_2d  # noqa: E402
from qtshow import settled, shown  # noqa: E402 - this folder

AMINO = list("ACDEFGHIKLMNPQRSTVWY")


def random_params(n, m, seed=0, l=None):
    rng = np.random.default_rng(seed)
    p = {"startprob": rng.dirichlet(np.ones(n)), "transmat": rng.dirichlet(np.ones(n), n),
         "emissionprob": rng.dirichlet(np.ones(m), n)}
    if l is not None:
        p.update(U=rng.normal(size=(n, l)), Z=rng.normal(size=(n, l)), W=rng.normal(size=(n, l)),
                 V=rng.normal(size=(m, l)), z_start=rng.normal(size=l))
    return p


def plain_model(params, seed=0):
    """A BaseHMM with the given matrices: the core's decode / posteriors / sampling."""
    n, m = params["emissionprob"].shape
    model = BaseHMM(n, m, seed=seed)
    model.startprob_ = params["startprob"]
    model.transmat_ = params["transmat"]
    model.emissionprob_ = params["emissionprob"]
    return model


# ------------------------------------------------------------------- heatmaps
def test_heatmap_shows_exactly_the_matrices_with_labels(qtbot):
    p = random_params(4, 20, seed=1)
    w = shown(qtbot, ParameterHeatmaps())
    w.set_vocabulary(AMINO)
    w.set_params(p)
    np.testing.assert_array_equal(w.image_data("transmat"), p["transmat"])
    np.testing.assert_array_equal(w.image_data("emissionprob"), p["emissionprob"])
    np.testing.assert_array_equal(w.image_data("startprob"), p["startprob"][None, :])
    assert w.emission.col_labels() == AMINO
    assert w.emission.row_labels() == ["0", "1", "2", "3"]
    assert w.transmat.col_labels() == ["0", "1", "2", "3"]
    # the label axis draws the amino-acid letters at their columns
    axis = w.emission.plot.getAxis("bottom")
    assert axis.tickStrings([0.0, 19.0], 1, 1) == ["A", "Y"]
    # a second update with new numbers replaces the image, labels stay
    q = random_params(4, 20, seed=2)
    w.set_params(q)
    np.testing.assert_array_equal(w.image_data("transmat"), q["transmat"])
    assert w.emission.col_labels() == AMINO
    # a new vocabulary relabels
    w.set_vocabulary([f"T{i}" for i in range(20)])
    assert w.emission.col_labels()[3] == "T3"


def test_heatmap_axes_set_before_the_first_parameters_keep_their_labels(qtbot):
    """A job drawn from its start (``set_shape``: the axes before any values) kept its symbols' names
    only until the first parameters arrived: B's columns then read 0..m-1 instead of the residues,
    tags or nucleotides (every job with a named vocabulary, in the dashboard)."""
    p = random_params(4, 20, seed=1)
    w = shown(qtbot, ParameterHeatmaps())
    w.set_vocabulary(AMINO)
    w.set_shape(4, 20)
    assert w.emission.col_labels() == AMINO
    w.set_params(p)
    np.testing.assert_array_equal(w.image_data("emissionprob"), p["emissionprob"])
    assert w.emission.col_labels() == AMINO
    assert w.emission.plot.getAxis("bottom").labels == AMINO      # what the axis draws
    assert w.emission.row_labels() == ["0", "1", "2", "3"]
    # a matrix of another shape without labels: indices (the names were for the other shape)
    h = shown(qtbot, MatrixHeatmap("B", "state", "symbol"))
    h.set_shape(2, 3, ["s", "t"], ["x", "y", "z"])
    h.set_matrix(np.full((2, 3), 1 / 3))
    assert (h.row_labels(), h.col_labels()) == (["s", "t"], ["x", "y", "z"])
    h.clear()
    h.set_shape(2, 3, ["s", "t"], ["x", "y", "z"])
    h.set_matrix(np.full((2, 4), 0.25))
    assert (h.row_labels(), h.col_labels()) == (["0", "1"], ["0", "1", "2", "3"])


def test_heatmap_levels_tooltip_and_cell_mapping(qtbot):
    A = np.array([[0.1, 0.9], [0.25, 0.75]])
    h = shown(qtbot, MatrixHeatmap("A", "from state", "to state", symbol="A", fixed_range=True), (400, 300))
    h.set_matrix(A)
    assert h.levels() == (0.0, 1.0)
    h.set_fixed_range(False)
    assert h.levels() == (0.1, 0.9)
    text = h.hover_text(1, 0)
    assert "A[1, 0] = 0.25" in text and "from state 1" in text and "to state 0" in text
    # the centre of cell (row 1, col 0) in scene coordinates maps back to that cell
    qtbot.wait(10)
    scene_pt = h.plot.vb.mapViewToScene(QtCore.QPointF(0.0, 1.0))
    assert h.cell_at_scene_pos(scene_pt) == (1, 0)
    scene_pt = h.plot.vb.mapViewToScene(QtCore.QPointF(1.0, 0.0))
    assert h.cell_at_scene_pos(scene_pt) == (0, 1)
    # rows are drawn top to bottom: row 0 is above row 1 on screen
    y0 = h.plot.vb.mapViewToScene(QtCore.QPointF(0.0, 0.0)).y()
    y1 = h.plot.vb.mapViewToScene(QtCore.QPointF(0.0, 1.0)).y()
    assert y0 < y1


def test_heatmap_hover_shows_tooltip_with_exact_value(qtbot):
    from PySide6 import QtWidgets
    A = np.array([[0.123456789, 0.876543211], [0.5, 0.5]])
    h = shown(qtbot, MatrixHeatmap("A", "from state", "to state", symbol="A"), (400, 300))
    h.set_matrix(A)
    qtbot.wait(10)
    seen = []
    h.sigHovered.connect(seen.append)
    h.graphics.scene().sigMouseMoved.emit(h.plot.vb.mapViewToScene(QtCore.QPointF(0.1, -0.2)))
    assert seen[-1] == (0, 0, A[0, 0])
    assert "0.123456789" in QtWidgets.QToolTip.text()
    h.graphics.scene().sigMouseMoved.emit(QtCore.QPointF(-50.0, -50.0))  # outside the matrix
    assert seen[-1] is None


def test_heatmap_rejects_bad_shapes_and_clears(qtbot):
    h = shown(qtbot, MatrixHeatmap(), (300, 200))
    with pytest.raises(ValueError):
        h.set_matrix(np.zeros((2, 2, 2)))
    h.set_matrix(np.array([0.2, 0.8]))
    np.testing.assert_array_equal(h.image_data(), [[0.2, 0.8]])
    h.clear()
    assert h.image_data() is None


# ----------------------------------------------------------------- embeddings
def independent_pca(X):
    """PCA through the covariance eigen-decomposition (not the SVD the view uses)."""
    Xc = X - X.mean(axis=0)
    vals, vecs = np.linalg.eigh(Xc.T @ Xc)
    order = np.argsort(vals)[::-1][:2]
    return Xc @ vecs[:, order], vals[order] / vals.sum()


def test_embeddings_pca_for_l_above_2(qtbot):
    p = random_params(5, 12, seed=3, l=6)
    w = shown(qtbot, EmbeddingScatter())
    w.set_vocabulary(AMINO[:12])
    w.set_embeddings(p)
    assert w.mode() == "pca"
    stacked = np.concatenate([p[k].reshape(-1, 6) for k in ("U", "Z", "W", "V", "z_start")])
    Y, expl = independent_pca(stacked)
    got = np.concatenate([w.coordinates(k) for k in ("U", "Z", "W", "V", "z_start")])
    for c in range(2):  # principal axes are defined up to sign
        sign = np.sign(got[:, c] @ Y[:, c])
        np.testing.assert_allclose(got[:, c], sign * Y[:, c], atol=1e-10)
    xt, yt = w.axis_titles()
    assert "PC 1" in xt and f"{100 * expl[0]:.0f}%" in xt and "PC 2" in yt
    assert "PCA" in plot_title(w.plot) and "l = 6" in plot_title(w.plot)
    assert w.label_texts("V") == AMINO[:12]
    # state points are named in their hover tooltip; written labels on request (dense clusters stay legible)
    assert w.label_texts("U") == []
    w.state_labels_box.setChecked(True)
    assert w.label_texts("U") == [f"u{i}" for i in range(5)]
    for t, xy in zip(w._labels["U"], w.coordinates("U")):
        assert (t.pos().x(), t.pos().y()) == pytest.approx(tuple(xy))
    # the plotted scatter holds the same points
    xs, ys = w.scatters["V"].getData()
    np.testing.assert_allclose(np.column_stack([xs, ys]), w.coordinates("V"))


def test_small_embeddings_read_in_their_own_units(qtbot):
    """Defect (Overview, "Before training"): embeddings within +-0.5 had ticks -500 .. 500 and the axis
    title "PC 2 (2% of variance) (x0.001)", cut off.  No SI scaling: ticks are the coordinates."""
    p = random_params(5, 12, seed=3, l=6)
    for k in ("U", "Z", "W", "V", "z_start"):
        p[k] = p[k] * 1e-3
    w = shown(qtbot, EmbeddingScatter())
    w.set_embeddings(p)
    qtbot.wait(20)
    for side in ("left", "bottom"):
        ax = w.plot.getAxis(side)
        assert "(x" not in ax.labelString() and ax.autoSIPrefixScale == 1.0, (side, ax.labelString())
        lo, hi = ax.range
        ticks = [v for level in ax.tickValues(lo, hi, 300) for v in level[1]]
        assert ticks and max(abs(v) for v in ticks) < 0.01, (side, ticks)


def test_overview_legend_row_is_one_line_where_it_fits(qtbot):
    """Defect (Overview on a 1366 x 768 screen): the legend beneath each scatter took two lines of three,
    leaving the scatter a strip 30 px tall.  Where the five names fit on one line they take one, inside
    the plot's width; a narrow view keeps three per line."""
    p = {k: v for k, v in random_params(5, 12, seed=3, l=3).items() if k in ("U", "Z", "W", "V", "z_start")}
    # 320: Overview's scatter on a 1366 x 768 laptop (pyqtgraph's 9 px margins kept it on two lines)
    for width, cols in ((400, 5), (320, 5), (200, 3)):
        w = shown(qtbot, EmbeddingScatter(controls=False), (width, 300))
        w.set_embeddings(p)
        qtbot.wait(20)
        assert w.legend_names() == ["U", "Z", "W", "V", "z_start"] and w.legend.columnCount == cols, width
        if cols == 5:
            assert w.legend.sceneBoundingRect().width() <= w.graphics.width()
            assert w.legend.sceneBoundingRect().height() <= 6 + max(
                label.boundingRect().height() for _s, label in w.legend.items)


def test_embeddings_direct_for_l_2_and_rows_for_l_1(qtbot):
    p = random_params(3, 4, seed=4, l=2)
    w = shown(qtbot, EmbeddingScatter())
    w.set_embeddings(p)
    assert w.mode() == "direct"
    np.testing.assert_array_equal(w.coordinates("U"), p["U"])
    np.testing.assert_array_equal(w.coordinates("V"), p["V"])
    assert w.axis_titles() == ("dimension 1", "dimension 2")
    assert w.label_texts("V") == ["0", "1", "2", "3"]

    q = random_params(3, 4, seed=5, l=1)
    w.set_embeddings(q)
    assert w.mode() == "1d"
    np.testing.assert_array_equal(w.coordinates("W")[:, 0], q["W"][:, 0])
    rows = {k: set(w.coordinates(k)[:, 1]) for k in ("U", "Z", "W", "V")}
    assert all(len(r) == 1 for r in rows.values()) and len({r.pop() for r in rows.values()}) == 4
    # deselecting a set hides its points and labels
    w.boxes["V"].setChecked(False)
    assert not w.scatters["V"].isVisible()
    assert all(not t.isVisible() for t in w._labels["V"])
    assert w.scatters["U"].isVisible()


def test_embeddings_placeholder_for_standard_models(qtbot):
    w = shown(qtbot, EmbeddingScatter())
    w.set_embeddings(random_params(3, 4))
    assert w.mode() == "none" and w.stack.currentWidget() is w.placeholder


def test_pca_helper_matches_independent_pca():
    X = np.random.default_rng(9).normal(size=(30, 5))
    Y, comps, expl = pca_2d(X)
    Y2, expl2 = independent_pca(X)
    np.testing.assert_allclose(np.abs(Y), np.abs(Y2), atol=1e-10)
    np.testing.assert_allclose(expl, expl2, atol=1e-12)
    np.testing.assert_allclose(comps @ comps.T, np.eye(2), atol=1e-12)


# --------------------------------------------------------------------- curves
def test_curves_plot_the_given_history(qtbot):
    hist = [{"step": s, "loss": 1.0 / (s + 1), "train_ll": -100.0 + s, "test_ll": -120.0 + s,
             "train_nll": 2.0 - 0.01 * s, "test_nll": 2.1 - 0.01 * s, "mad": 0.1 / (s + 1)}
            for s in range(0, 50, 5)]
    hist[3]["test_nll"] = None  # a step without a test evaluation
    w = shown(qtbot, TrainingCurves())
    w.set_history(hist)
    steps = np.array([h["step"] for h in hist], float)
    for key in ("loss", "train_nll", "mad"):
        x, y = w.curve_data(key)
        np.testing.assert_array_equal(x, steps)
        np.testing.assert_allclose(y, [h[key] for h in hist])
    x, y = w.curve_data("test_nll")
    np.testing.assert_array_equal(x, np.delete(steps, 3))
    assert w.nll_kind() == "nll"
    assert w.plots["mad"].getAxis("left").logMode  # MAD spans decades
    # a finished history fills the x axis (no growing room for a stream of unknown length)
    x0, x1 = w.plots["loss"].vb.viewRange()[0]
    assert x0 <= 0 and 45 <= x1 <= 45 * 1.1
    # live events that follow a history widen it to their total
    w.add_event(ProgressEvent(step=50, total=100, loss=0.01, train_ll=-50.0, metrics={}))
    assert w.plots["loss"].vb.viewRange()[0][1] >= 100


def test_curves_from_events_and_ll_fallback(qtbot):
    w = shown(qtbot, TrainingCurves(orientation="horizontal"))
    for s in range(4):
        w.add_event(ProgressEvent(step=s, loss=5.0 - s, train_ll=-50.0 + s, test_ll=None))
    x, y = w.curve_data("train_nll")
    np.testing.assert_array_equal(x, [0, 1, 2, 3])
    np.testing.assert_array_equal(y, [50, 49, 48, 47])  # -train_ll: no normalised NLL in the stream
    assert w.nll_kind() == "ll"
    assert "total" in plot_title(w.plots["nll"])
    # the same step again (history, then its last event) updates the point instead of doubling it
    w.add_event(ProgressEvent(step=3, loss=1.5, test_ll=-60.0))
    assert list(w.curve_data("loss")[1]) == [5.0, 4.0, 3.0, 1.5]
    assert list(w.curve_data("test_nll")[1]) == [60.0] and list(w.curve_data("train_nll")[1])[-1] == 47
    # a new stream (step goes back) starts the curves again
    w.add_event(ProgressEvent(step=0, loss=9.0, metrics={"train_nll": 1.5}))
    assert list(w.curve_data("loss")[1]) == [9.0]
    w.set_history([{"step": 1, "loss": 2.0, "metrics": {"train_nll": 0.5, "mad": 0.01}}])
    assert list(w.curve_data("train_nll")[1]) == [0.5] and w.nll_kind() == "nll"
    assert list(w.curve_data("mad")[1]) == [0.01]


# --------------------------------------------------------------------- decode
def hmmlearn_oracle(params, seq):
    from hmmlearn.hmm import CategoricalHMM
    n, m = params["emissionprob"].shape
    ref = CategoricalHMM(n_components=n, n_features=m, implementation="scaling")
    ref.startprob_, ref.transmat_, ref.emissionprob_ = (params["startprob"], params["transmat"],
                                                        params["emissionprob"])
    X = np.asarray(seq).reshape(-1, 1)
    logp, path = ref.decode(X, algorithm="viterbi")
    return path, ref.predict_proba(X), logp


def test_decode_view_shows_viterbi_path_and_posteriors(qtbot):
    p = random_params(4, 6, seed=7)
    model = plain_model(p)
    rng = np.random.default_rng(11)
    seqs = [rng.integers(0, 6, size=L) for L in (30, 45, 12)]
    corpus = type("C", (), {"sequences": seqs, "vocabulary": list("abcdef"), "names": ["s0", "s1", "s2"]})()
    w = shown(qtbot, DecodeView())
    w.set_model(model, corpus)
    assert w.sequence_count() == 3
    for idx in (0, 1):
        w.select_sequence(idx)
        path, post, logp = hmmlearn_oracle(p, seqs[idx])
        np.testing.assert_array_equal(w.current_path(), path)
        np.testing.assert_allclose(w.current_posteriors(), post, atol=1e-10)
        np.testing.assert_allclose(w.posterior_image(), post.T, atol=1e-10)
        colors = state_colors(4)
        rgba = w.track_colors()[0]
        for t in (0, len(path) // 2, len(path) - 1):
            c = colors[path[t]]
            assert tuple(rgba[t][:3]) == (c.red(), c.green(), c.blue())
        assert f"{logp:.6g}" in w.status.text()
    # symbols label the track's axis
    seq = seqs[1]
    assert w._sym_axis.labels == ["abcdef"[s] for s in seq]
    assert "s1" in w.seq_label.text()
    # the spin box selects sequences too
    w.spin.setValue(2)
    assert w.current_path().shape == (12,)



def test_decode_view_key_wraps_and_long_labels_never_clip(qtbot):
    """Many states: the colour key takes at most two lines and ends with "+K more" (hovering reads the
    rest); a long sequence id is elided with the whole line in the tooltip; hovering a position reads
    its symbol, Viterbi state and posteriors."""
    p = random_params(60, 6, seed=3)
    model = plain_model(p)
    seq = np.random.default_rng(4).integers(0, 6, size=40)
    name = "sp|" + "VERYLONGIDENTIFIER" * 6
    corpus = type("C", (), {"sequences": [seq], "vocabulary": list("abcdef"), "names": [name]})()
    w = shown(qtbot, DecodeView())
    w.resize(700, 500)
    w.set_model(model, corpus)
    key = w.legend_label
    qtbot.waitUntil(lambda: w.current_path() is not None, timeout=2000)
    lines = key.text().split("<br>")
    assert len(lines) == 2 and 0 < key.shown() < 60
    assert f"+{60 - key.shown()} more" in lines[-1] and "Hover" in key.toolTip()
    assert key.sizeHint().height() <= key.height()
    narrow = key.shown()
    w.resize(3000, 500)
    qtbot.waitUntil(lambda: key.shown() > narrow, timeout=2000)   # laid out again for the width
    # the sequence line: elided, whole in the tooltip, and it does not widen the view
    w.resize(700, 500)
    qtbot.waitUntil(lambda: w.seq_label.is_elided(), timeout=2000)
    assert name in w.seq_label.toolTip() and w.width() <= 700
    assert f"length {len(seq)}" in w.seq_label.visible_lines()[0]   # the id is cut, not the length
    path, post, _ = hmmlearn_oracle(p, seq)
    t = 17
    text = w.hover_text(t)
    assert f"position {t} · symbol {'abcdef'[seq[t]]} · Viterbi state {path[t]} " in text
    assert f"(posterior {post[t, path[t]]:.2f})" in text and f"most probable state {int(np.argmax(post[t]))}" in text
    assert w.hover_text(len(seq)) == "" and w.hover_text(-1) == ""
    # a few states: every one listed, no tooltip
    w.set_model(plain_model(random_params(3, 6, seed=1)), corpus)
    qtbot.waitUntil(lambda: key.shown() == 3, timeout=2000)
    assert "more" not in key.text() and key.toolTip() == ""

def test_a_hidden_decode_view_decodes_when_shown_or_read(qtbot):
    """A Decode tab that is not shown costs the GUI thread nothing when a model arrives (a job
    finishing): it decodes when it is shown, or when its results are read (exports, tests)."""
    from PySide6.QtWidgets import QTabWidget, QWidget
    p = random_params(3, 5, seed=2)
    model = plain_model(p)
    calls = []
    decode = model.decode
    model.decode = lambda seqs: calls.append(len(seqs)) or decode(seqs)
    seqs = [np.random.default_rng(1).integers(0, 5, size=20)]
    tabs = QTabWidget()
    tabs.addTab(QWidget(), "other")
    view = DecodeView()
    tabs.addTab(view, "decode")
    shown(qtbot, tabs)
    assert not view.isVisible()
    view.set_model(model, seqs)
    view.select_sequence(0)
    assert calls == []                                   # hidden: nothing decoded yet
    tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: calls == [1], timeout=2000)  # shown: decoded once
    np.testing.assert_array_equal(view.current_path(), hmmlearn_oracle(p, seqs[0])[0])
    tabs.setCurrentIndex(0)
    view.set_model(model, seqs)
    assert calls == [1]
    np.testing.assert_array_equal(view.current_path(), hmmlearn_oracle(p, seqs[0])[0])   # read: decoded
    assert calls == [1, 1]


def test_decode_view_samples_without_data_and_survives_errors(qtbot):
    p = random_params(3, 5, seed=8)
    model = plain_model(p)
    w = shown(qtbot, DecodeView())
    w.set_model(model, None)
    assert w.sequence_count() >= 1 and "sampled" in w.seq_label.text()
    path, post, _ = hmmlearn_oracle(p, w.current_sequence())
    np.testing.assert_array_equal(w.current_path(), path)

    class Broken:
        n_symbols = 5

        def decode(self, seqs):
            raise RuntimeError("engine exploded")

        def predict_proba(self, seqs):
            raise RuntimeError("engine exploded")

    w.set_model(Broken(), [np.array([0, 1, 2])])
    assert "engine exploded" in w.status.text()


# ------------------------------------------------------------ overview, compare
def test_overview_before_and_after(qtbot):
    p0, p1 = random_params(3, 5, seed=1, l=4), random_params(3, 5, seed=2, l=4)
    w = shown(qtbot, OverviewView(), (1200, 700))
    w.set_initial(p0)
    w.set_final(p1)
    qtbot.waitUntil(lambda: not w.draw_pending, timeout=5000)
    np.testing.assert_array_equal(w.before.transmat.image_data(), p0["transmat"])
    np.testing.assert_array_equal(w.after.emission.image_data(), p1["emissionprob"])
    assert w.before.embeddings.isVisible() and w.after.embeddings.mode() == "pca"
    w.clear()
    w.set_final(random_params(3, 5, seed=3))  # standard model: no embeddings column
    qtbot.waitUntil(lambda: not w.draw_pending, timeout=5000)
    assert not w.after.embeddings.isVisible()
    assert "not recorded" not in w.before.label.text()     # the view does not guess (a live job's may come)
    # no initial model (read from a file or a session; the window says so): the row says so, no empty plots
    w.set_initial_not_recorded()
    assert "not recorded" in w.before.label.text()
    assert not w.before.transmat.isVisible() and not w.before.embeddings.isVisible()
    assert w.after.transmat.isVisible()
    w.set_initial(p0)                          # known after all: drawn as usual
    qtbot.waitUntil(lambda: not w.draw_pending, timeout=5000)
    assert w.before.label.text() == "Before training" and w.before.transmat.isVisible()
    np.testing.assert_array_equal(w.before.transmat.image_data(), p0["transmat"])
    w.clear()
    assert w.before.transmat.isVisibleTo(w.page)


def test_overview_draws_one_part_per_event_loop_turn(qtbot):
    """Defect (the Brown corpus's 30,499 words): opening Overview drew both rows at once, 0.15 s of the GUI
    thread.  Shown, it draws one part of a row per event-loop turn (its matrices, then its embeddings);
    hidden, nothing until it shows; an export (``flush``) draws everything at once."""
    import time

    from PySide6.QtWidgets import QApplication
    p0, p1 = random_params(3, 5, seed=1, l=4), random_params(3, 5, seed=2, l=4)
    w = shown(qtbot, OverviewView(), (1200, 700))
    w.set_initial(p0)
    w.set_final(p1)
    assert w.draw_pending and w.before.params is None and w.after.params is None   # nothing drawn inline

    def parts():
        return [(r.params is not None, r.embeddings.mode() != "none") for r in (w.before, w.after)]
    turns = []
    for _ in range(200):
        if not w.draw_pending:
            break
        was = parts()
        QApplication.processEvents()
        now = parts()
        if w.draw_pending and now != was:
            assert not w.page.updatesEnabled()      # a part drawn, more to come: the page is not painted yet
        turns.append(sum(a != b for row_was, row_now in zip(was, now) for a, b in zip(row_was, row_now)))
        time.sleep(0.005)
    assert max(turns) == 1 and sum(turns) == 4, turns                # never two parts in one turn
    assert parts() == [(True, True), (True, True)]
    assert w.page.updatesEnabled()                                   # painted once, after the last part
    w.hide()
    w.set_final(p0)
    qtbot.wait(50)
    assert w.draw_pending and w.after.params is p1                   # hidden: held
    w.flush()
    assert not w.draw_pending and w.after.params is p0 and w.page.updatesEnabled()
    np.testing.assert_array_equal(w.after.transmat.image_data(), p0["transmat"])
    w.show()                                   # cleared after one part: painted again, not left frozen
    w.set_final(p1)
    for _ in range(200):                       # until the first part (one part per turn, see above)
        if not w.page.updatesEnabled():
            break
        QApplication.processEvents()
        time.sleep(0.005)
    assert w.draw_pending and not w.page.updatesEnabled()
    w.clear()
    assert w.page.updatesEnabled()


def test_overview_shows_a_vocabulary_sized_b_as_top_words(qtbot):
    """Defect: a words model's B (17 x 2,167) was drawn as a heatmap: a dark strip under a fence of labels.
    Above HEATMAP_MAX_SYMBOLS symbols each row shows the states' most probable words, as the dashboard does."""
    from app.views.heatmap import HEATMAP_MAX_SYMBOLS
    m = HEATMAP_MAX_SYMBOLS + 50
    words = [f"w{k}" for k in range(m)]
    p0, p1 = random_params(4, m, seed=1, l=3), random_params(4, m, seed=2, l=3)
    w = shown(qtbot, OverviewView(), (1200, 700))
    w.set_vocabulary(words)
    w.set_initial(p0)
    w.set_final(p1)
    qtbot.waitUntil(lambda: not w.draw_pending, timeout=5000)
    for row, p in ((w.before, p0), (w.after, p1)):
        assert row.emission_stack.currentWidget() is row.top_words and row.top_words.isVisible()
        best = int(np.argmax(p["emissionprob"][2]))
        assert row.top_words.table.item(2, 0).text() == words[best]
    w.clear()
    w.set_final(random_params(4, 6, seed=3, l=3))          # a small alphabet: the heatmap again
    qtbot.waitUntil(lambda: not w.draw_pending, timeout=5000)
    assert w.after.emission_stack.currentWidget() is w.after.emission and w.after.emission.image_data() is not None


def test_compare_differences_and_metrics(qtbot):
    pa, pb = random_params(3, 4, seed=1), random_params(3, 4, seed=2)
    a, b = plain_model(pa), plain_model(pb)
    w = shown(qtbot, CompareView(), (1100, 600))
    # nothing compared: how to start, not an empty table
    assert w.placeholder.isVisible() and "press Compare" in w.placeholder.text() and not w.table.isVisible()
    w.set_models("job 1", a, "job 2", b, {"test_nll": 1.25, "loss": 7.0, "note": "x", "elapsed": 3.5},
                 {"test_nll": 1.0, "loss": 0.1, "elapsed": 2.0}, same_data=True)
    perm = w.permutation()
    np.testing.assert_allclose(w.difference("transmat"), pb["transmat"][np.ix_(perm, perm)] - pa["transmat"])
    np.testing.assert_allclose(w.maps["emissionprob"].image_data(), pb["emissionprob"][perm] - pa["emissionprob"])
    lo, hi = w.maps["transmat"].levels()
    assert lo == -hi and hi == pytest.approx(np.abs(pb["transmat"][np.ix_(perm, perm)] - pa["transmat"]).max())
    rows = w.table_rows()
    assert rows["test NLL / token"] == ["1.25", "1", "-0.25"]
    assert rows["time (s)"] == ["3.5", "2", "-1.5"]
    assert "loss" not in rows and "note" not in rows  # losses of trainers are not comparable
    assert rows["states n"][:2] == ["3", "3"]
    assert w.maps_box.isVisibleTo(w)
    # trained on other data: their own NLL is not listed, and the view says why
    w.set_models("job 1", a, "job 2", b, {"test_nll": 1.25}, {"test_nll": 1.0}, same_data=False)
    assert "test NLL / token" not in w.table_rows() and "not comparable" in w.note.text()

    c = plain_model(random_params(5, 4, seed=3))
    w.set_models("job 1", a, "job 3", c, {}, {})
    assert "different numbers of states" in w.note.text() and "n = 3" in w.note.text()
    assert not w.maps_box.isVisibleTo(w) and w.difference("transmat") is None
    assert w.table.isVisible() and not w.placeholder.isVisible()
    w.clear()
    assert w.placeholder.isVisible() and not w.table.isVisible()


def test_compare_shows_the_words_whose_emissions_changed_most(qtbot):
    """Defect (two word models, m = 2,000): ΔB was a 17 x 2,000 heatmap of faint hairlines labelled every
    200th word.  Beyond DELTA_B_MAX_SYMBOLS symbols it shows those whose column of |ΔB| sums highest,
    most changed first, each named; small alphabets keep every symbol in order."""
    from app.views.compare import DELTA_B_MAX_SYMBOLS as K
    m = 300
    words = [f"w{i}" for i in range(m)]
    pa, pb = random_params(4, m, seed=5), random_params(4, m, seed=6)
    w = shown(qtbot, CompareView(), (1100, 600))
    w.set_models("A", plain_model(pa), "B", plain_model(pb), vocabulary=words)
    perm = w.permutation()
    dB = pb["emissionprob"][perm] - pa["emissionprob"]
    np.testing.assert_allclose(w.difference("emissionprob"), dB)          # the whole difference is kept
    change = np.abs(dB).sum(axis=0)
    cols = w.shown_symbols()
    assert len(cols) == K and len(set(cols.tolist())) == K
    assert np.all(np.diff(change[cols]) <= 0) and change[cols].min() >= np.sort(change)[-K]   # brute force
    np.testing.assert_allclose(w.maps["emissionprob"].image_data(), dB[:, cols])
    assert w.maps["emissionprob"].col_labels() == [words[c] for c in cols]
    assert f"{K} of {m}" in plot_title(w.maps["emissionprob"].plot) and "changed most" in w.note.text()
    pa, pb = random_params(4, 6, seed=5), random_params(4, 6, seed=6)    # a small alphabet: all, in order
    w.set_models("A", plain_model(pa), "B", plain_model(pb))
    np.testing.assert_array_equal(w.shown_symbols(), np.arange(6))
    assert plot_title(w.maps["emissionprob"].plot) == "ΔB" and "changed most" not in w.note.text()


def test_compare_aligns_states_before_subtracting(qtbot):
    """Model B is model A with its states relabelled: after alignment every difference is 0."""
    pa = random_params(4, 6, seed=4)
    perm = np.array([2, 0, 3, 1])
    inv = np.argsort(perm)
    pb = {"startprob": pa["startprob"][inv], "transmat": pa["transmat"][np.ix_(inv, inv)],
          "emissionprob": pa["emissionprob"][inv]}
    w = shown(qtbot, CompareView(), (1000, 600))
    w.set_models("A", plain_model(pa), "B", plain_model(pb))
    for key in ("startprob", "transmat", "emissionprob"):
        np.testing.assert_allclose(w.difference(key), 0.0, atol=1e-12)
    np.testing.assert_array_equal(w.permutation(), perm)
    assert "Hungarian" in w.note.text()


def test_compare_scores_both_models_on_the_same_data(qtbot):
    from densehmm_core.metrics import normalized_nll
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 4, size=25) for _ in range(6)]
    a = StandardHMM(2, n_symbols=4, n_iter=2, seed=0).fit(seqs)
    b = StandardHMM(3, n_symbols=4, n_iter=2, seed=1).fit(seqs)
    w = shown(qtbot, CompareView(), (1000, 600))
    from app.views.compare import score_both
    w.set_models("A", a, "B", b, scores=score_both(a, b, seqs), data_name="test split")
    row = w.table_rows()["NLL / token, same data"]
    assert "test split" in w.note.text()
    assert row[0] == fmt_compact(normalized_nll(a, seqs)) and row[1] == fmt_compact(normalized_nll(b, seqs))


# ------------------------------------------------------------------ dashboard
def test_dashboard_follows_events_and_models(qtbot):
    dash = shown(qtbot, Dashboard(), (1300, 850))
    dash.set_vocabulary(AMINO[:5])
    p0, p1 = random_params(3, 5, seed=1, l=3), random_params(3, 5, seed=2, l=3)
    dash.update_from_event(ProgressEvent(step=0, total=10, phase="cooc", loss=1.0, params=p0,
                                         metrics={"mad": 0.1}))
    np.testing.assert_array_equal(dash.image_data("transmat"), p0["transmat"])
    # the overview tab is hidden: it stores the update and draws it when shown (cheap live stream)
    assert dash.overview.has_content() and dash.overview.before.transmat.image_data() is None
    dash.update_from_event(ProgressEvent(step=5, total=10, phase="cooc", loss=0.5, metrics={"mad": 0.05}))
    np.testing.assert_array_equal(dash.image_data("transmat"), p0["transmat"])  # no params: unchanged
    dash.update_from_event(ProgressEvent(step=10, total=10, phase="cooc", loss=0.2, params=p1, done=True,
                                         reason="max_steps", metrics={"mad": 0.01}))
    np.testing.assert_array_equal(dash.image_data("emissionprob"), p1["emissionprob"])
    dash.tabs.setCurrentWidget(dash.overview)
    qtbot.waitUntil(lambda: not dash.overview.draw_pending, timeout=5000)   # drawn from the event loop
    np.testing.assert_array_equal(dash.overview.after.transmat.image_data(), p1["transmat"])
    np.testing.assert_array_equal(dash.overview.before.transmat.image_data(), p0["transmat"])
    assert "Done" in dash.overview.after.label.text()
    dash.tabs.setCurrentWidget(dash.live)
    assert list(dash.curves.curve_data("loss")[0]) == [0, 5, 10]
    assert dash.embeddings.label_texts("V") == AMINO[:5]
    assert "max_steps" in dash.title.text()
    assert set(dash.views()) >= {"dashboard", "transmat", "emission", "embeddings", "curves", "decode",
                                 "overview", "compare"}

    model = plain_model(p1)
    seqs = [np.array([0, 1, 2, 3, 4, 0, 1]), np.array([4, 4, 3])]
    dash.set_model(model, type("C", (), {"sequences": seqs, "vocabulary": AMINO[:5]})())
    path, _, _ = hmmlearn_oracle(p1, seqs[0])
    np.testing.assert_array_equal(dash.decode.current_path(), path)
    dash.set_history([{"step": 1, "loss": 3.0}, {"step": 2, "loss": 2.0}])
    assert list(dash.curves.curve_data("loss")[1]) == [3.0, 2.0]
    dash.clear()
    assert dash.image_data("transmat") is None and dash.decode.current_path() is None


def test_dashboard_survives_a_bad_snapshot(qtbot):
    dash = shown(qtbot, Dashboard(), (1000, 700))
    errors = []
    dash.sigError.connect(errors.append)
    bad = random_params(3, 4, l=2)
    bad["transmat"] = np.zeros((3, 3, 3))
    bad["V"] = np.zeros((4, 5))  # l disagrees with U
    dash.update_from_event(ProgressEvent(step=1, loss=1.0, params=bad))
    # the live update is drawn in parts from the event loop; each bad part is reported
    qtbot.waitUntil(lambda: any("matrices" in e for e in errors) and any("embeddings" in e for e in errors),
                    timeout=5000)
    good = random_params(3, 4)
    dash.update_from_event(ProgressEvent(step=2, loss=0.5, params=good))
    np.testing.assert_array_equal(dash.image_data("transmat"), good["transmat"])
    assert list(dash.curves.curve_data("loss")[1]) == [1.0, 0.5]
    # the title's tooltip keeps the error, and says why the stream ended, in words
    assert "embeddings view" in dash.title.toolTip()
    dash.update_from_event(ProgressEvent(step=3, loss=0.4, params=good, done=True, reason="max_steps"))
    tip = dash.title.toolTip()
    assert "max_steps: every iteration or step it was given was run" in tip and "embeddings view" in tip
    # another job: neither is left over from this one
    dash.clear()
    assert dash.title.toolTip() == ""
    dash.update_from_event(ProgressEvent(step=1, loss=0.4, params=good, done=True, reason="converged"))
    assert dash.title.toolTip() == "converged: the objective changed by less than tol"


def test_dashboard_with_real_core_models(qtbot):
    """A DenseHMM with embeddings set directly and a fitted StandardHMM, as the app shows them."""
    dense_mod = pytest.importorskip("densehmm_core.dense")
    std_mod = pytest.importorskip("densehmm_core.standard")
    p = random_params(3, 5, seed=4, l=2)
    dense = dense_mod.DenseHMM(3, 2, n_symbols=5, seed=0)
    dense.set_embeddings({k: p[k] for k in ("U", "Z", "W", "V", "z_start")})
    dash = shown(qtbot, Dashboard(), (1200, 800))
    dash.set_model(dense, None)
    np.testing.assert_array_equal(dash.image_data("transmat"), dense.transmat_)
    np.testing.assert_array_equal(dash.image_data("emissionprob"), dense.emissionprob_)
    np.testing.assert_array_equal(dash.embeddings.coordinates("V"), p["V"])  # l = 2: drawn directly
    assert dash.decode.sequence_count() > 0  # sampled from the model

    seqs, _ = dense.sample(6, 40, seed=1)
    std = std_mod.StandardHMM(3, n_symbols=5, n_iter=3, seed=0).fit(seqs)
    dash.set_model(std, seqs)
    np.testing.assert_array_equal(dash.image_data("transmat"), std.transmat_)
    assert dash.embeddings.mode() == "none"
    path, _, _ = hmmlearn_oracle(model_params_of(std), seqs[0])
    np.testing.assert_array_equal(dash.decode.current_path(), path)
    dash.compare.set_models("dense", dense, "standard", std, {}, {})
    perm = dash.compare.permutation()  # the standard HMM's states in the DenseHMM's order
    np.testing.assert_allclose(dash.compare.difference("emissionprob"), std.emissionprob_[perm] - dense.emissionprob_)


def model_params_of(model):
    return {"startprob": model.startprob_, "transmat": model.transmat_, "emissionprob": model.emissionprob_}


def test_the_live_page_shows_a_placeholder_until_a_job_or_model_is_shown(qtbot):
    """No job: one placeholder instead of six empty plots (with axes of nonsense ranges); the views from
    the job's first frame, a model's, or an event's; and the placeholder again once cleared."""
    from app.views.dashboard import NO_JOB
    dash = shown(qtbot, Dashboard(), (1200, 800))
    assert not dash.showing_views() and dash.live_placeholder.isVisible()
    assert dash.live_placeholder.text() == NO_JOB and not dash.heatmaps.isVisible()
    p = random_params(4, 8, seed=5, l=3)
    feeds = [lambda: dash.set_job_model(plain_model(p)),
             lambda: dash.update_from_event(ProgressEvent(step=1, loss=0.5, params=p)),
             lambda: dash.set_model(plain_model(p)),
             lambda: dash.set_history([{"step": 0, "loss": 1.0}]),
             lambda: dash.set_initial_params(p)]
    for feed in feeds:
        dash.clear()
        assert not dash.showing_views()
        feed()
        qtbot.wait(5)
        assert dash.showing_views() and dash.heatmaps.isVisible() and not dash.live_placeholder.isVisible()
    dash.clear()
    dash.set_model(None)          # no model: nothing to show
    dash.set_job_model(None)
    assert not dash.showing_views()


def test_views_render_non_empty(qtbot):
    """Every view draws something (not a blank widget) once it has data."""
    dash = shown(qtbot, Dashboard(), (1200, 800))
    p = random_params(4, 8, seed=5, l=3)
    dash.set_initial_params(p)
    dash.update_from_event(ProgressEvent(step=3, loss=0.5, params=p, metrics={"mad": 0.01, "train_nll": 1.0}))
    dash.set_model(plain_model(p), [np.arange(8), np.arange(8)[::-1]])
    for name in ("transmat", "emission", "embeddings", "curves", "decode", "overview"):
        w = dash.views()[name]
        dash.tabs.setCurrentWidget(dash.live if name in ("transmat", "emission", "embeddings", "curves")
                                   else w)
        qtbot.wait(5)
        if name == "overview":      # drawn in parts from the event loop, then painted once
            qtbot.waitUntil(lambda: not w.draw_pending and w.page.updatesEnabled(), timeout=5000)
        img = w.grab().toImage()
        colors = {img.pixel(x, y) for x in range(0, img.width(), 7) for y in range(0, img.height(), 7)}
        assert len(colors) > 8, name


# ------------------------------------------------- readability and redraw cost (defects from the app)
def _level_strings(axis, lo, hi, size=300.0):
    """(spacing, values, strings) of every tick level the axis would draw for ``lo..hi``."""
    return [(sp, vals, axis.tickStrings(vals, axis.scale, sp)) for sp, vals in axis.tickValues(lo, hi, size)]


@pytest.mark.parametrize("values,spacing", [([355625.0, 355625.2, 355625.4, 355625.6], 0.2),
                                            ([0.1, 0.1001, 0.1002], 1e-4), ([0.0, 0.01, 0.02], 0.01),
                                            ([2.0e6, 2.5e6, 3.0e6], 5e5), ([1e-5, 2e-5, 3e-5], 1e-5),
                                            ([-1e-17, 0.5, 1.0], 0.5)])
def test_tick_strings_are_distinct_and_true(values, spacing):
    from app.views.theme import tick_strings
    out = tick_strings(values, spacing)
    assert len(set(out)) == len(values)
    for v, s in zip(values, out):
        assert float(s) == pytest.approx(v, abs=spacing / 2)
        assert s != "-0.0" and "e-17" not in s


@pytest.mark.parametrize("lo,width", [(0.1, 2e-4), (0.0, 0.05), (355625.0, 1.0), (0.2, 1e-6)])
def test_colorbar_labels_distinct_for_a_narrow_range(qtbot, lo, width):
    """Defect: with the fixed 0..1 range off the colour bar showed "0" repeated (or nothing)."""
    h = shown(qtbot, MatrixHeatmap("A", fixed_range=False), (320, 420))
    data = lo + width * np.random.default_rng(1).random((6, 6))
    h.set_matrix(data)
    qtbot.wait(10)
    blo, bhi = h.levels()
    assert (blo, bhi) == (data.min(), data.max())
    ax = h.colorbar.axis
    fm = QtGui.QFontMetricsF(ax.style.get("tickFont") or QtGui.QFont())
    levels = _level_strings(ax, blo, bhi, ax.height())
    assert levels and sum(len(v) for _, v, _ in levels) >= 2
    for spacing, vals, strings in levels[:2]:
        assert len(set(strings)) == len(strings)
        for v, s in zip(vals, strings):
            assert float(s) == pytest.approx(v, abs=spacing / 2)
            assert fm.horizontalAdvance(s) < ax.width()  # wide enough: pyqtgraph drops labels that do not fit


def test_nll_curve_prefers_normalised_values_and_normalises_totals(qtbot):
    w = shown(qtbot, TrainingCurves(orientation="horizontal"), (900, 250))
    # the co-occurrence fit: loss and MAD only, then one total test log-likelihood on its last event
    w.set_token_counts(train=1000, test=400)
    for s in range(3):
        w.add_event(ProgressEvent(step=10 * s, total=20, loss=1.0 / (s + 1), metrics={"mad": 1e-3 / (s + 1)}))
    w.add_event(ProgressEvent(step=20, total=20, loss=0.3, test_ll=-1152.0, metrics={"mad": 2e-4}, done=True))
    assert w.nll_kind() == "nll"
    assert list(w.curve_data("test_nll")[1]) == [1152.0 / 400]
    assert "Normalised" in plot_title(w.plots["nll"])
    # x axis: the stream's total steps (fixed while it runs), the lone test point inside the y range
    x0, x1 = w.plots["loss"].vb.viewRange()[0]
    assert x0 <= 0 and x1 >= 20
    y0, y1 = w.plots["nll"].vb.viewRange()[1]
    assert y0 < 1152.0 / 400 < y1
    # dense EM: train_nll and train_ll on the same event give the training token count; test_ll alone
    w2 = shown(qtbot, TrainingCurves(), (400, 600))
    w2.add_event(ProgressEvent(step=0, loss=2.0, train_ll=-500.0, test_ll=-300.0,
                               metrics={"train_nll": 2.0, "test_tokens": 100}))
    w2.add_event(ProgressEvent(step=1, loss=1.9, train_ll=-475.0, test_ll=-290.0, metrics={}))
    np.testing.assert_allclose(w2.curve_data("train_nll")[1], [2.0, 1.9])
    np.testing.assert_allclose(w2.curve_data("test_nll")[1], [3.0, 2.9])
    assert w2.token_counts() == (250.0, 100.0)


def test_nll_axis_labels_differ_when_values_vary_little(qtbot):
    """Defect: "355625" on every tick of the -log L axis."""
    w = shown(qtbot, TrainingCurves(orientation="horizontal"), (900, 250))
    for s, v in enumerate([-355625.9, -355625.6, -355625.2]):
        w.add_event(ProgressEvent(step=s, loss=1.0, train_ll=v))
    assert w.nll_kind() == "ll"
    ax = w.plots["nll"].getAxis("left")
    lo, hi = w.plots["nll"].vb.viewRange()[1]
    assert lo < 355625.2 and hi > 355625.9
    levels = _level_strings(ax, lo, hi, w.plots["nll"].vb.height())
    shown_strings = [s for _, _, strings in levels[:2] for s in strings]
    assert len(shown_strings) >= 2 and len(set(shown_strings)) == len(shown_strings)
    # one MAD point on a log axis still gets a labelled tick
    mad = w.plots["mad"]
    w.add_event(ProgressEvent(step=3, loss=1.0, metrics={"mad": 1.3e-4}))
    assert mad.getAxis("left").logMode
    lo, hi = mad.vb.viewRange()[1]
    assert lo < np.log10(1.3e-4) < hi
    vals = [v for _, vs in mad.getAxis("left").tickValues(lo, hi, mad.vb.height()) for v in vs]
    assert vals and all(lo <= v <= hi for v in vals)


@pytest.mark.parametrize("orientation", ["horizontal", "vertical"])
def test_a_lone_first_point_gets_the_x_range_of_the_other_plots(qtbot, orientation):
    """Defect: a diverged EM job's single event (step 0 with a MAD) drew the MAD plot over x = -0.4..0.4
    ("x0.001" on the axis) beside 0..1 on the others: switching the MAD axis to log turned pyqtgraph's
    auto range back on."""
    w = shown(qtbot, TrainingCurves(orientation=orientation), (900, 250) if orientation == "horizontal"
              else (400, 600))
    w.set_total(50)                  # a job in its start: the x axis spans its iterations
    w.add_event(ProgressEvent(step=0, total=50, train_ll=-3.2e4, metrics={"mad": 0.07, "train_nll": 1.6}))
    qtbot.wait(10)
    assert w.plots["mad"].getAxis("left").logMode
    ranges = [w.plots[k].vb.viewRange()[0] for k in ("loss", "nll", "mad")]
    assert all(r == pytest.approx(ranges[0]) for r in ranges), ranges
    assert ranges[0][0] <= 0.0 and ranges[0][1] >= 50
    w.set_history([{"step": 0, "train_ll": -3.2e4, "mad": 0.07, "train_nll": 1.6}])   # it diverged: its history
    qtbot.wait(10)
    ranges = [w.plots[k].vb.viewRange()[0] for k in ("loss", "nll", "mad")]
    assert all(r == pytest.approx(ranges[0]) for r in ranges) and ranges[0][0] <= 0.0 < 0.5 < ranges[0][1], ranges
    w.add_event(ProgressEvent(step=1, loss=0.4, train_ll=-3.1e4, metrics={"mad": 0.05, "train_nll": 1.5}))
    w.add_event(ProgressEvent(step=2, loss=0.01, train_ll=-3.0e4, metrics={"mad": 0.04, "train_nll": 1.4}))
    qtbot.wait(10)
    assert w.plots["loss"].getAxis("left").logMode     # the loss spans decades now: log axis, same x
    ranges = [w.plots[k].vb.viewRange()[0] for k in ("loss", "nll", "mad")]
    assert all(r == pytest.approx(ranges[0]) for r in ranges) and ranges[0][1] >= 2.0, ranges


def test_a_legend_moves_to_the_corner_its_curves_leave_free(qtbot):
    """Defect (a restored session's screenshot): a test NLL that stays high ran under the upper-right
    legend.  The legend takes the corner the curves cross least, and no point of them lies under it."""
    w = shown(qtbot, TrainingCurves(orientation="horizontal"), (900, 250))
    train = np.linspace(2.0, 1.0, 30)       # from the upper left to the lower right
    test = np.full(30, 1.95)                # stays at the top, to the right end: the lower left is free
    for s, (a, b) in enumerate(zip(train, test)):
        w.add_event(ProgressEvent(step=s, total=30, loss=1.0, metrics={"train_nll": a, "test_nll": b}))
    qtbot.wait(20)
    p = w.plots["nll"]
    assert w.legend_corner("nll") == "bottom-left"
    box = p.legend.sceneBoundingRect()
    for key in ("train_nll", "test_nll"):
        x, y = w.curves[key].getData()
        grid = np.linspace(x.min(), x.max(), 300)
        for gx, gy in zip(grid, np.interp(grid, x, y)):
            assert not box.contains(p.vb.mapViewToScene(QtCore.QPointF(gx, gy))), (key, gx, gy)
    # curves that leave the upper right free keep the legend there
    w2 = shown(qtbot, TrainingCurves(orientation="horizontal"), (900, 250))
    for s in range(30):
        w2.add_event(ProgressEvent(step=s, total=30, loss=1.0 + 1.0 / (s + 1), metrics={"train_nll": 1.0 / (s + 1)}))
    qtbot.wait(20)
    assert w2.legend_corner("nll") == "top-right" and w2.legend_corner("loss") == "top-right"


def test_a_short_plot_puts_its_legend_entries_side_by_side(qtbot):
    """Defect (a 1366 x 768 screen): in a curves row 130 px tall the stacked "train" / "test" legend covered
    half the NLL plot and "test" ran past its bottom.  A short plot lays the entries out in one row, inside
    the plot; a tall one keeps them stacked."""
    from app.views.curves import LEGEND_MAX_HEIGHT
    for height, cols in ((130, 2), (600, 1)):
        w = shown(qtbot, TrainingCurves(orientation="horizontal"), (900, height))
        for s in range(20):
            w.add_event(ProgressEvent(step=s, total=20, loss=1.0, metrics={"train_nll": 2.0 - s / 20,
                                                                             "test_nll": 2.1 - s / 20}))
        qtbot.wait(20)
        p = w.plots["nll"]
        assert p.legend.columnCount == cols, (height, p.legend.columnCount)
        assert w.legend_names("nll") == ["train", "test"]
        box, vb = p.legend.sceneBoundingRect(), p.vb.sceneBoundingRect()
        assert vb.contains(box), (height, box, vb)
        if cols == 2:   # stacked, the entries would have taken more than the allowed share of the plot
            p.legend.setColumnCount(1)
            stacked = p.legend.sceneBoundingRect().height()
            assert box.height() < stacked and stacked > LEGEND_MAX_HEIGHT * vb.height(), (box, stacked)


def test_a_legend_gets_room_above_curves_that_cross_every_corner(qtbot):
    """Defect (a words job on a 1366 x 768 screen): in the short NLL plot "train" and "test" crossed
    every corner and the legend sat on the test curve.  The y range then keeps room above the curves
    and the legend sits there; new curves ask again.  The first and last steps' tick labels show
    (pyqtgraph hid them in the narrow MAD plot: its axis read 1 ... 7 for steps 0 ... 8)."""
    w = shown(qtbot, TrainingCurves(orientation="horizontal"), (700, 130))   # plots as narrow as on a laptop
    for s in range(9):   # an X: train from the upper left down, test from the lower left up
        w.add_event(ProgressEvent(step=s, total=8, loss=1.0, metrics={
            "train_nll": 2.0 - s / 8, "test_nll": 1.0 + s / 8, "mad": 0.5 - s / 40}))
    qtbot.wait(20)
    p = w.plots["nll"]
    assert 0 < w.legend_room("nll") <= 0.5
    box = p.legend.mapRectToScene(p.legend.boundingRect())
    assert p.vb.sceneBoundingRect().contains(box)
    for key in ("train_nll", "test_nll"):
        x, y = w.curves[key].getData()
        grid = np.linspace(x.min(), x.max(), 300)
        for gx, gy in zip(grid, np.interp(grid, x, y)):
            assert not box.contains(p.vb.mapViewToScene(QtCore.QPointF(gx, gy))), (key, gx, gy)
    img = QtGui.QImage(10, 10, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(img)
    try:
        texts = [spec[2] for spec in w.plots["mad"].getAxis("bottom").generateDrawSpecs(painter)[2]]
    finally:
        painter.end()
    assert "0" in texts and "8" in texts, texts
    # new curves that leave a corner free: no room
    w.set_history([{"step": s, "train_nll": 2.0 - s / 8} for s in range(9)])
    qtbot.wait(20)
    assert w.legend_room("nll") == 0.0 and w.legend_corner("nll") == "top-right"


def test_matrices_share_the_width_by_their_columns(qtbot):
    """Defect (a DNA model, 6 states, 4 symbols): B's four columns had 3/5 of the width and A's six were
    a strip beside it.  The widths follow the columns, within 1 : 2 and 2 : 1; a vocabulary-sized B
    (the top-words table) keeps three quarters."""
    w = shown(qtbot, ParameterHeatmaps(), (900, 500))
    for (n, m), shares in (((6, 4), (15, 10)), ((5, 5), (10, 10)), ((5, 21), (5, 10)), ((45, 4), (20, 10))):
        w.set_params(random_params(n, m, seed=n + m))
        assert w.column_shares() == shares, (n, m)
    w.set_params(random_params(5, 300, seed=3))
    assert w.column_shares() == (1, 3)
    w2 = shown(qtbot, ParameterHeatmaps(), (900, 500))
    w2.set_shape(6, 4)                  # a job in its start: the same shares before the parameters come
    assert w2.column_shares() == (15, 10)
    qtbot.wait(20)
    assert w2.transmat.width() > w2.emission_stack.width()


def test_an_ended_stream_does_not_promise_a_loss_yet(qtbot):
    """An EM stream has no loss before its first M-step: "No loss in this stream yet." while it runs; once it
    ended without one (it diverged in its first M-step, or its history is shown) the "yet" goes."""
    w = shown(qtbot, TrainingCurves(orientation="horizontal"), (900, 250))
    w.add_event(ProgressEvent(step=0, total=50, train_ll=-100.0, metrics={"train_nll": 1.6}))
    assert w.note("loss") == "No loss in this stream yet."
    w.add_event(ProgressEvent(step=0, total=50, train_ll=-100.0, metrics={"train_nll": 1.6}, done=True,
                              reason="cancelled"))
    assert w.note("loss") == "No loss in this stream."
    w.clear()
    w.add_event(ProgressEvent(step=0, total=50, train_ll=-100.0, metrics={"train_nll": 1.6}))
    assert w.note("loss") == "No loss in this stream yet."
    w.set_history([{"step": 0, "train_ll": -100.0, "train_nll": 1.6}])
    assert w.note("loss") == "No loss in this stream."


def test_curve_ranges_are_kept_while_data_stay_inside(qtbot):
    w = shown(qtbot, TrainingCurves(), (400, 600))
    w.add_event(ProgressEvent(step=0, total=100, loss=2.0))
    w.add_event(ProgressEvent(step=1, total=100, loss=1.0))
    before = w.plots["loss"].vb.viewRange()
    w.add_event(ProgressEvent(step=2, total=100, loss=1.5))  # inside: no new range (no axis re-layout)
    assert w.plots["loss"].vb.viewRange() == before
    w.add_event(ProgressEvent(step=3, total=100, loss=0.2))  # below: the range follows
    assert w.plots["loss"].vb.viewRange()[1][0] < 0.2


def test_embedding_labels_never_overlap_and_controls_fit(qtbot, monkeypatch):
    import app.views.embeddings as emb
    monkeypatch.setattr(emb, "LABEL_ALL_UP_TO", 0)   # labels off the markers however few (see below)
    rng = np.random.default_rng(7)
    n, m, l = 10, 21, 5
    p = dict(U=rng.normal(size=(n, l)), Z=rng.normal(size=(n, l)), W=rng.normal(size=(n, l)),
             V=rng.normal(size=(m, l)) * 0.2, z_start=rng.normal(size=l))
    p["V"][0] *= 30  # one outlier squeezes the others into a dense cluster
    w = shown(qtbot, EmbeddingScatter(), (300, 420))
    w.set_vocabulary(AMINO + ["X"])
    w.set_embeddings(p)
    w.state_labels_box.setChecked(True)
    qtbot.wait(10)
    w.finish_labels()   # label items are made a batch per event-loop turn (issue 24.13): all of them now
    visible = [t for k in EMBEDDING_KEYS for t in w._labels[k] if t.isVisible()]
    assert "A" in w.visible_labels("V") and 0 < len(visible) < 3 * n + m
    # glyphs lie inside the text's document margin
    rects = [t.sceneBoundingRect().adjusted(*(d * t.textItem.document().documentMargin() for d in (1, 1, -1, -1)))
             for t in visible]
    for i in range(len(rects)):
        for j in range(i + 1, len(rects)):
            assert not rects[i].intersects(rects[j]), (visible[i].textItem.toPlainText(),
                                                       visible[j].textItem.toPlainText())
    # ... nor another point's marker (they were written over the state markers of a words model)
    owner = {id(t): (k, i) for k in EMBEDDING_KEYS for t, i in zip(w._labels[k], w._label_idx[k])}
    for t, rect in zip(visible, rects):
        for k in EMBEDDING_KEYS:
            r = 0.5 * w.scatters[k].opts["size"]
            for j, (x, y) in enumerate(w.coordinates(k)):
                if (k, j) == owner[id(t)]:
                    continue
                c = w.plot.vb.mapViewToScene(QtCore.QPointF(x, y))
                mark = QtCore.QRectF(c.x() - r, c.y() - r, 2 * r, 2 * r)
                assert not rect.intersects(mark), (t.textItem.toPlainText(), k, j)
    # hidden names are still in the hover tooltips; zooming in shows more labels of the points in view
    # (a label of a point out of view is hidden: it would be cut at the plot's frame)
    def shown_in(x0, x1, y0, y1):
        out = 0
        for k in EMBEDDING_KEYS:
            xy = w.coordinates(k)
            out += sum(t.isVisible() and x0 <= xy[i, 0] <= x1 and y0 <= xy[i, 1] <= y1
                       for t, i in zip(w._labels[k], w._label_idx[k]))
        return out
    few = shown_in(-1, 1, -1, 1)
    w.plot.setRange(xRange=(-1, 1), yRange=(-1, 1), padding=0)
    qtbot.wait(10)
    assert shown_in(-1, 1, -1, 1) > few
    # the check boxes wrap instead of being clipped, and the title fits the plot
    qtbot.wait(10)
    for box in list(w.boxes.values()) + [w.labels_box, w.state_labels_box]:
        assert w.controls.rect().contains(box.geometry()), box.text()
    title_w = QtGui.QFontMetricsF(w.plot.titleLabel.item.font()).horizontalAdvance(
        w.plot.titleLabel.item.toPlainText())
    assert title_w < w.plot.width()


EMBEDDING_KEYS = ("U", "Z", "W", "V", "z_start")


def test_a_small_alphabet_names_every_symbol_even_among_markers(qtbot, monkeypatch):
    """Defect (DNA genes, 4 bases beside the state markers): keeping labels off the markers hid "G" and
    "T".  A set of at most LABEL_ALL_UP_TO labels names each point, over another marker where no place
    beside it is free; a vocabulary's labels stay off them."""
    import app.views.embeddings as emb
    g = np.linspace(-1, 1, 15)
    grid = np.array([(x, y) for x in g for y in g])            # state markers everywhere
    p = dict(U=grid, Z=grid + 0.03, W=grid - 0.03, z_start=np.array([2.0, 2.0]),
             V=np.array([[-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5], [0.5, 0.5]]))
    for limit, want in ((0, []), (emb.LABEL_ALL_UP_TO, ["A", "C", "G", "T"])):
        monkeypatch.setattr(emb, "LABEL_ALL_UP_TO", limit)
        w = shown(qtbot, EmbeddingScatter(), (400, 420))
        w.set_vocabulary(["A", "C", "G", "T"])
        w.set_embeddings(p)
        qtbot.wait(10)
        assert sorted(w.visible_labels("V")) == want, limit
    assert emb.LABEL_ALL_UP_TO < emb.TOP_LABELLED    # the words' 50 labels keep off the markers


def test_compare_table_is_not_elided(qtbot):
    from app.views.theme import fmt_compact
    pa, pb = random_params(3, 4, seed=1), random_params(3, 4, seed=2)
    w = shown(qtbot, CompareView(), (900, 500))
    ma = {"test_nll": 355625.37, "mad": 0.000132808, "elapsed": 29.481, "train_nll": 0.0116691234}
    mb = {"test_nll": 351708.2, "mad": 0.0004140, "elapsed": 15.2325, "train_nll": 2.88523}
    w.set_models("job 1", plain_model(pa), "job 2", plain_model(pb), ma, mb, same_data=True)
    qtbot.wait(10)
    rows = w.table_rows()
    assert rows["train NLL / token"][0] == "0.011669" and rows["co-occurrence MAD"][0] == "1.3281e-4"
    assert rows["test NLL / token"][0] == "355625"
    assert rows["test NLL / token"][2] == fmt_compact(351708.2 - 355625.37) == "-3917.2"
    fm = w.table.fontMetrics()
    for i in range(w.table.rowCount()):
        for j in range(3):
            item = w.table.item(i, j)
            assert fm.horizontalAdvance(item.text()) <= w.table.columnWidth(j), item.text()
    assert w.table.item(list(rows).index("train NLL / token"), 0).toolTip() == repr(0.0116691234)
    assert w.table.horizontalScrollBar().maximum() == 0 and w.table.verticalScrollBar().maximum() == 0
    # filled while hidden (the app's Compare tab), then shown: still whole
    w2 = CompareView()
    qtbot.addWidget(w2)
    w2.set_models("job 1", plain_model(pa), "job 3", plain_model(random_params(4, 4, seed=3)),
                  dict(ma, mad=1.5e-7), mb, same_data=True)
    w2.resize(900, 500)
    w2.show()
    qtbot.waitExposed(w2)
    qtbot.wait(10)
    assert w2.table.horizontalScrollBar().maximum() == 0 and w2.table.verticalScrollBar().maximum() == 0


def test_dashboard_draws_the_live_page_only_when_visible(qtbot):
    dash = shown(qtbot, Dashboard(), (1200, 800))
    p0, p1 = random_params(3, 5, seed=1, l=3), random_params(3, 5, seed=2, l=3)
    dash.update_from_event(ProgressEvent(step=0, total=10, loss=1.0, params=p0))
    qtbot.waitUntil(lambda: not dash.live_update_pending, timeout=5000)  # drawn in parts
    dash.tabs.setCurrentWidget(dash.decode)
    dash.update_from_event(ProgressEvent(step=5, total=10, loss=0.5, params=p1))
    # recorded, not drawn: the hidden heatmap still holds the old snapshot, the curve the old points
    np.testing.assert_array_equal(dash.transmat.image.image, p0["transmat"])
    assert list(dash.curves.curve_data("loss")[0]) == [0]
    dash.tabs.setCurrentWidget(dash.live)
    np.testing.assert_array_equal(dash.transmat.image.image, p1["transmat"])
    np.testing.assert_allclose(dash.embeddings.coordinates("V").shape, (5, 2))
    assert list(dash.curves.curve_data("loss")[0]) == [0, 5]
    # image_data() and exports draw a pending snapshot first
    dash.tabs.setCurrentWidget(dash.decode)
    dash.update_from_event(ProgressEvent(step=6, total=10, loss=0.4, params=p0))
    np.testing.assert_array_equal(dash.image_data("transmat"), p0["transmat"])


def test_a_live_update_is_drawn_in_parts_one_event_loop_turn_apart(qtbot):
    """Responsiveness (issue 6): one update never redraws the whole page in one event-loop turn."""
    import time
    from app.views.dashboard import STAGE_GAP_MS
    dash = shown(qtbot, Dashboard(), (1200, 800))
    p0, p1 = random_params(4, 6, seed=1, l=3), random_params(4, 6, seed=2, l=3)
    dash.update_from_event(ProgressEvent(step=0, total=10, loss=1.0, params=p0))
    dash.flush()
    calls = []
    orig = dash.heatmaps.set_params
    dash.heatmaps.set_params = lambda params, *a, **k: (calls.append(time.perf_counter()), orig(params, *a, **k))
    drawn = []
    dash.sigLiveDrawn.connect(drawn.append)
    dash.update_from_event(ProgressEvent(step=1, total=10, loss=0.5, params=p1))
    # nothing drawn yet: the parts are queued for the event loop
    assert dash.live_update_pending and not calls
    np.testing.assert_array_equal(dash.transmat.image.image, p0["transmat"])
    qtbot.waitUntil(lambda: not dash.live_update_pending and bool(drawn), timeout=5000)
    assert len(calls) == 3   # transmat, emission, startprob: three separate parts
    assert all(b - a >= 0.8 * STAGE_GAP_MS / 1000 for a, b in zip(calls, calls[1:]))
    np.testing.assert_array_equal(dash.transmat.image.image, p1["transmat"])
    np.testing.assert_array_equal(dash.emission.image.image, p1["emissionprob"])
    assert drawn[-1] >= 0.0 and isinstance(drawn[-1], float)
    # the parts add up to the whole snapshot: a new vocabulary relabels and redraws all of it
    calls.clear()
    dash.set_vocabulary(list("abcdef"))
    assert len(calls) == 1 and dash.emission.col_labels() == list("abcdef")
    np.testing.assert_array_equal(dash.transmat.image.image, p1["transmat"])
    np.testing.assert_array_equal(dash.emission.image.image, p1["emissionprob"])
    np.testing.assert_array_equal(dash.startprob.image.image.ravel(), p1["startprob"])
    # a newer update replaces the queued parts of an older one; flush() draws at once
    dash.update_from_event(ProgressEvent(step=2, total=10, loss=0.4, params=p0))
    dash.update_from_event(ProgressEvent(step=3, total=10, loss=0.3, params=p1))
    dash.flush()
    assert not dash.live_update_pending
    np.testing.assert_array_equal(dash.transmat.image.image, p1["transmat"])
    assert list(dash.curves.curve_data("loss")[1]) == [1.0, 0.5, 0.4, 0.3]


def test_staged_model_and_history_then_live_events_keep_every_point(qtbot):
    std_mod = pytest.importorskip("densehmm_core.standard")
    from densehmm_core.synthetic import demo_dataset
    train, _, _ = demo_dataset(seed=0)
    model = std_mod.StandardHMM(3, n_iter=4, tol=-np.inf, seed=0).fit(train)
    dash = shown(qtbot, Dashboard(), (1200, 800))
    dash.set_history(model.history_[:3], staged=True)
    # an event arriving while the history is still queued lands after it
    dash.update_from_event(ProgressEvent(step=3, total=4, loss=model.history_[3]["loss"]))
    dash.flush()
    assert list(dash.curves.curve_data("loss")[0]) == [0, 1, 2, 3]
    dash.clear()
    dash.set_model(model, train, staged=True)
    assert dash.model() is model and dash.live_update_pending
    np.testing.assert_array_equal(dash.image_data("transmat"), model.transmat_)  # image_data flushes
    assert not dash.live_update_pending
    np.testing.assert_array_equal(dash.image_data("emissionprob"), model.emissionprob_)
    assert list(dash.curves.curve_data("loss")[0]) == [h["step"] for h in model.history_]
    assert dash.decode.current_path() is not None


def test_a_data_set_chosen_in_decode_while_the_job_is_still_drawn_stays_chosen(qtbot):
    """Decode's "Data" box used right after a job was selected (its views still drawn in parts): the
    queued part decoding the job's own data ran later and replaced the chosen data set's sequences,
    while the box still named the chosen one."""
    std_mod = pytest.importorskip("densehmm_core.standard")
    from densehmm_core.synthetic import demo_dataset
    train, test, _ = demo_dataset(seed=0)
    model = std_mod.StandardHMM(3, n_iter=2, seed=0).fit(train)
    other = [np.asarray(s)[:37] for s in test[:5]]            # another data set: 5 sequences of 37
    dash = shown(qtbot, Dashboard(), (1200, 800))
    dash.tabs.setCurrentWidget(dash.decode)
    dash.set_model(model, train, staged=True)
    assert dash.live_update_pending
    dash.decode_on(model, other)                              # the user's choice, before the parts ran
    dash.flush()
    assert dash.decode.sequence_count() == 5
    np.testing.assert_array_equal(dash.decode.current_sequence(), other[0])
    assert len(dash.decode.current_path()) == 37


# ---------------------------------------------------------------- readable category axes
UPOS = "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()
RESIDUES = list("ACDEFGHIKLMNPQRSTVWYX")
PTB = ("CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH VB "
       "VBD VBG VBN VBP VBZ WDT WP WP$ WRB # $ . , : -LRB- -RRB- `` ''").split()  # the 45 Penn Treebank tags
assert len(PTB) == 45


def _drawn_boxes_overlap(drawn):
    rects = [r for _i, _t, r, _rot in drawn]
    for a in range(len(rects)):
        for b in range(a + 1, len(rects)):
            if rects[a].intersects(rects[b]):
                return True
    return False


@pytest.mark.parametrize("labels,width", [(UPOS, 700), (RESIDUES, 520), (PTB, 560), (PTB, 260)])
def test_category_axis_labels_are_readable(qtbot, labels, width):
    """Every category is named when the names fit (upright if needed), else a regular subset; drawn
    names never overlap, and every name (shown or not) is in the axis tooltip at its position."""
    k = len(labels)
    h = MatrixHeatmap("B", "state", "symbol")
    qtbot.addWidget(h)
    h.set_matrix(np.random.default_rng(0).random((6, k)), None, labels)
    h.resize(width, 380)
    h.show()
    qtbot.waitExposed(h)
    h.grab()  # paint: the axis lays out its labels
    qtbot.wait(20)
    h.grab()
    ax = h._bottom
    drawn = ax.drawn_labels()
    mode, stride = ax.layout_mode()
    idx = [i for i, *_ in drawn]
    assert idx == list(range(idx[0], k, stride)) and idx[0] < stride  # a regular subset (or all)
    assert [t for _i, t, *_ in drawn] == [labels[i] for i in idx]
    assert not _drawn_boxes_overlap(drawn)
    for i, *_ in drawn:  # each label sits under its own column
        assert ax.label_at(i) == labels[i]
    assert [ax.label_at(i) for i in range(k)] == labels
    if k <= 21 and width >= 520:
        assert stride == 1  # 17 tags at 700 px, 21 residues at 520 px: all labelled
    if k == 17:
        assert mode == "rotated"  # CCONJ, PROPN, PUNCT do not fit side by side at 41 px a column
    if k == 21:
        assert mode == "horizontal"  # one letter each: side by side
    if k == 45 and width == 560:
        assert stride <= 2
    # upright labels stay inside the axis' height (nothing clipped beneath)
    axis_h = ax.geometry().height()
    for *_r, rect, rotated in drawn:
        if rotated:
            assert rect.bottom() <= axis_h + 1


def test_category_axis_tooltip_names_the_category_under_the_mouse(qtbot):
    h = MatrixHeatmap("B", "state", "symbol")
    qtbot.addWidget(h)
    h.set_matrix(np.ones((3, 45)) / 45, None, PTB)
    h.resize(260, 300)
    h.show()
    qtbot.waitExposed(h)
    h.grab()
    ax = h._bottom
    assert ax.layout_mode()[1] > 1  # a subset is drawn at this width
    vb = h.plot.vb
    for i in (1, 3, 44):  # categories without a drawn label
        scene_x = vb.mapViewToScene(QtCore.QPointF(i, 0)).x()
        local = ax.mapFromScene(QtCore.QPointF(scene_x, ax.sceneBoundingRect().center().y()))

        class Ev:
            def pos(self, p=local):
                return p
        ax.hoverMoveEvent(Ev())
        assert ax.toolTip() == PTB[i]


def test_dashboard_header_never_clips(qtbot):
    from app.views.widgets import HeaderLabel
    text = ("Job 12: DenseHMM-EM n=10 l=3 seed 0 on pdb_seqres_2022_09_28__subsampled_1000.fasta  —  "
            "em 37/100  ·  −Q/token 2.91385  ·  train_nll 2.87654  ·  test_nll 2.99123  ·  mad 0.000123456")
    w = HeaderLabel(text, max_lines=2)
    qtbot.addWidget(w)
    w.show()
    fm = QtGui.QFontMetricsF(w.font())
    heights = set()
    for width in (1400, 900, 600, 350, 180):
        w.resize(width, w.height())
        lines = w.visible_lines()
        heights.add(w.height())
        assert 1 <= len(lines) <= 2
        assert all(fm.horizontalAdvance(line) <= width - 4 + 0.5 for line in lines)
        if w.is_elided():
            assert w.toolTip().startswith(text)  # nothing is lost
        else:
            shown = " ".join(" ".join(lines).split())
            for piece in text.replace("  —  ", "  ·  ").split("  ·  "):  # every piece whole on screen
                assert " ".join(piece.split()) in shown
    assert len(heights) == 1  # fixed height: never re-lays out the plots beneath
    w.resize(1400, w.height())
    assert not w.is_elided()
    w.resize(180, w.height())
    assert w.is_elided()


def test_curves_name_the_loss_and_explain_sparse_plots(qtbot):
    """A co-occurrence stream: no "train" legend entry beside nothing and a note on the single test
    NLL; an EM stream: the loss is named −Q per token (with a tooltip); Baum-Welch: MAD drawn."""
    c = TrainingCurves(orientation="horizontal")
    qtbot.addWidget(c)
    cooc = [ProgressEvent(step=s, total=100, phase="cooc", loss=1.0 / (s + 1), metrics={"mad": 0.1 / (s + 1)})
            for s in range(0, 100, 10)]
    cooc.append(ProgressEvent(step=100, total=100, phase="cooc", loss=0.01, test_ll=-180.0,
                              metrics={"mad": 0.001, "test_nll": 1.8}, done=True))
    for ev in cooc:
        c.add_event(ev)
    assert c.loss_title() == "Co-occurrence loss"
    assert c.legend_names("nll") == ["test"]
    assert "computed once, at the end" in c.note("nll")
    assert c.note("mad") == "" and c.note("loss") == ""
    assert list(c.curve_data("test_nll")[1]) == [1.8]

    c.clear()
    assert c.legend_names("nll") == [] and c.loss_title() == "Training loss"
    c.add_event(ProgressEvent(step=0, total=3, phase="em", loss=None, train_ll=-200.0,
                              metrics={"train_nll": 2.0, "mad_skipped": "m = 9000 > 2000 symbols"}))
    for s, q in ((1, 2.9), (2, 2.8)):
        c.add_event(ProgressEvent(step=s, total=3, phase="em", loss=q, train_ll=-190.0 + s,
                                  metrics={"train_nll": 1.9 - 0.01 * s}))
    assert c.loss_title() == "EM objective −Q per token"
    assert "−Q" in c.plots["loss"].toolTip() and "NLL" in c.plots["loss"].toolTip()
    assert list(c.curve_data("loss")[0]) == [1.0, 2.0]  # no −Q for the initial model
    assert c.legend_names("nll") == ["train"]
    assert "m = 9000 > 2000 symbols" in c.note("mad")


def test_standard_hmm_stream_fills_the_mad_plot(qtbot):
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(2)
    seqs = [rng.integers(0, 5, size=30) for _ in range(8)]
    # the MAD is a diagnostic with a cadence (diagnostics_every): the curve has a point at each step
    # that has one (0, 2, 4 here), and the last step always has one
    model = StandardHMM(3, n_symbols=5, n_iter=4, seed=0, tol=0, diagnostics_every=2)
    c = TrainingCurves()
    qtbot.addWidget(c)
    for ev in model.iter_fit(seqs):
        c.add_event(ev)
    x, y = c.curve_data("mad")
    assert list(x) == [0, 2, 4] and len(model.history_) == 5 and np.all(y > 0)
    assert c.note("mad") == ""
    assert c.loss_title() == "Training NLL per token (Baum-Welch)"


# ---------------------------------------------------------------- sweep summary
def test_sweep_view_medians_and_quartiles_fill_as_jobs_finish(qtbot):
    from app.views import SweepView
    from app.views.sweep import row_from_spec
    w = shown(qtbot, SweepView(), (900, 450))
    assert w.stack.currentWidget() is w.placeholder
    rng = np.random.default_rng(0)
    table = {}
    job = 0
    for n in (3, 5, 10):
        for l in (2, 3):
            vals = rng.uniform(2.0, 3.0, size=5)
            table[(n, l)] = vals
            for seed, v in enumerate(vals):
                job += 1
                w.add_row(row_from_spec({"kind": "dense_cooc", "n": n, "l": l, "seed": seed},
                                        {"test_nll": v, "mad": v / 1000}, job))
    assert w.stack.currentWidget() is w.graphics
    s = w.series("nll")
    assert set(s) == {"dense-cooc, l = 2", "dense-cooc, l = 3"}
    ns, med, q25, q75 = s["dense-cooc, l = 3"]
    assert list(ns) == [3, 5, 10]
    for i, n in enumerate((3, 5, 10)):
        v = np.sort(table[(n, 3)])
        assert med[i] == pytest.approx(v[2])  # median of 5
        assert q25[i] == pytest.approx(v[1]) and q75[i] == pytest.approx(v[3])  # linear quantiles of 5 values
    assert w.series("mad")["dense-cooc, l = 2"][1][0] == pytest.approx(np.median(table[(3, 2)]) / 1000)
    assert w.nll_source() == "test_nll"
    # a standard HMM (no l) is its own series; a replaced row (same job) is not counted twice
    w.add_row(row_from_spec({"kind": "standard", "n": 5, "l": 3, "seed": 0}, {"test_nll": 2.5}, 999))
    w.add_row(row_from_spec({"kind": "standard", "n": 5, "l": 3, "seed": 0}, {"test_nll": 2.25}, 999))
    assert w.series("nll")["standard"][1].tolist() == [2.25]
    assert "standard" not in w.series("mad")  # no MAD given: no empty series
    assert len(w.rows()) == 31
    assert "Not drawn" not in w.header.text()
    # a job whose test NLL is infinite (a test symbol of probability 0) cannot be drawn: the header says so
    w.add_row(row_from_spec({"kind": "standard", "n": 10, "l": 3, "seed": 0}, {"test_nll": float("inf")}, 1000))
    assert w.series("nll")["standard"][0].tolist() == [5]
    assert "Not drawn: 1 job(s) with an infinite test NLL" in w.header.text()


def test_log_axis_draws_each_tick_value_once(qtbot):
    from app.views.axes import ThinLogAxis
    import pyqtgraph as pg
    ax = ThinLogAxis("left")
    for lo, hi in ((-5.0, -1.0), (-4.3, -1.7)):  # pyqtgraph puts the decades on two levels here
        std = pg.AxisItem.tickValues(ax, lo, hi, 400)  # the linear ticks pyqtgraph passes in
        levels = ax.logTickValues(lo, hi, 400, std)
        values = [round(v, 9) for _s, vals in levels for v in vals]
        assert len(values) == len(set(values)) and len(values) > 0


def _log_ticks(lo, hi, size):
    from app.views.axes import ThinLogAxis
    ax = ThinLogAxis("left")
    ax.setLogMode(False, True)
    values = [v for _s, vals in ax.tickValues(np.log10(lo), np.log10(hi), size) for v in vals]
    return [float(10.0 ** v) for v in values], ax.tickStrings(values, 1.0, None)


def test_log_axis_labels_at_least_two_values(qtbot):
    """A short log axis over 1.3 decades is labelled at both decades (a mis-aligned filter once left
    only 0.01); well inside one decade it gets evenly spaced values (a MAD of 0.0021 .. 0.0029 had
    one tick, "0.00246", written over the axis title)."""
    vals, labels = _log_ticks(0.0053, 0.112, 80)  # room for 3 labels: 0.01, 0.02, 0.05, 0.1 are 4
    np.testing.assert_allclose(vals, [0.01, 0.1])
    assert labels == ["0.01", "0.1"]
    vals, labels = _log_ticks(0.0021, 0.0029, 400)
    np.testing.assert_allclose(vals, [0.0022, 0.0024, 0.0026, 0.0028])
    assert labels == ["0.0022", "0.0024", "0.0026", "0.0028"]
    vals, labels = _log_ticks(0.99995, 1.00012, 300)  # around a decade: still distinct labels
    assert len(vals) >= 2 and len(set(labels)) == len(labels)
    assert all(0.99995 <= v <= 1.00012 for v in vals)


def test_narrow_chart_names_all_21_residues_in_a_smaller_font(qtbot):
    """The data panel's frequency chart is ~300 px wide: all 21 residues are named (a slightly smaller
    font) instead of every second one."""
    import pyqtgraph as pg
    from app.views.axes import LabelAxis
    ax = LabelAxis("bottom")
    w = pg.PlotWidget(axisItems={"bottom": ax})
    qtbot.addWidget(w)
    ax.set_labels(RESIDUES)
    w.plot(np.arange(21), np.arange(21))
    w.setXRange(-0.6, 20.6, padding=0)
    w.resize(330, 220)
    w.show()
    qtbot.waitExposed(w)
    w.grab()
    qtbot.wait(20)
    w.grab()
    assert ax.layout_mode()[1] == 1
    assert [t for _i, t, *_ in ax.drawn_labels()] == RESIDUES
    assert not _drawn_boxes_overlap(ax.drawn_labels())
    font = ax.style["tickFont"]
    assert font is None or font.pointSizeF() >= LabelAxis.MIN_POINT_SIZE


def test_category_axis_measures_its_labels_once_per_font(qtbot):
    """Issue 24.11: a word model's axis (5,166 words) measured every word again at each point size
    it tried, on every resize and range change (0.3-0.5 s of a restored job's first drawing).
    The widths are now kept per font (and set of labels): the same as measuring afresh."""
    import pyqtgraph as pg
    from PySide6 import QtGui
    from app.views.axes import LabelAxis
    words = [f"w{i}" * (1 + i % 7) for i in range(3000)]
    ax = LabelAxis("bottom")
    w = pg.PlotWidget(axisItems={"bottom": ax})
    qtbot.addWidget(w)
    ax.set_labels(words)
    w.plot(np.arange(3000), np.arange(3000))
    w.resize(500, 220)
    w.show()
    qtbot.waitExposed(w)
    w.grab()
    measured = dict(ax._widest_by_font)
    assert measured                                       # the sizes tried, each measured once
    for lo in (0, 100, 1000):                             # range changes and resizes: nothing measured again
        w.setXRange(lo, lo + 200, padding=0)
        w.resize(480 + lo // 50, 220)
        w.grab()
    assert {k: v for k, v in ax._widest_by_font.items() if k in measured} == measured

    def brute(labels, font, cap):  # the oracle: every label measured
        return min(max(QtGui.QFontMetricsF(font).horizontalAdvance(s) for s in labels), cap)

    for (family, size, *_rest), widest in ax._widest_by_font.items():
        f = QtGui.QFont(ax._base_font())
        f.setPointSizeF(size)
        assert widest == brute(words, f, ax._max_px)
    # label sets where the widest is not the longest and stays under the cap, or is a single letter
    rng = np.random.default_rng(0)
    sets = [words[:10], list("ACDEFGHIKLMNPQRSTVWYX"), ["iiiiiiii", "WWWWWWW", "mm", "l" * 12, "W"],
            ["".join(rng.choice(list("iIlmMWw.,"), size=int(k))) for k in rng.integers(1, 12, size=400)]]
    for labels in sets:
        ax.set_labels(labels)
        f = ax.style.get("tickFont") or ax.font()
        assert ax._widest(f) == brute(labels, f, ax._max_px), labels[:5]


def test_infinite_test_nll_is_explained_in_the_plot(qtbot):
    """A standard HMM whose test part has an impossible sequence reports test NLL +inf: the NLL plot
    says why (and names Smoothing) instead of silently drawing no test curve."""
    w = shown(qtbot, TrainingCurves(), (400, 600))
    for s in range(3):
        w.add_event(ProgressEvent(step=s, total=3, loss=2.0 - 0.1 * s, train_ll=-200.0 + s,
                                  test_ll=-math.inf, metrics={"train_nll": 2.0 - 0.01 * s, "test_nll": math.inf}))
    assert not np.isfinite(w.curve_data("test_nll")[1]).any()
    assert "Test NLL is infinite" in w.note("nll") and "Smoothing" in w.note("nll")
    w.clear()
    w.add_event(ProgressEvent(step=0, loss=2.0, train_ll=-200.0, test_ll=-100.0,
                              metrics={"train_nll": 2.0, "test_nll": 2.5}))
    assert w.note("nll") == ""


def test_compact_combo_box_elides_its_current_item_and_names_it_in_the_tooltip(qtbot):
    from app.views.widgets import CompactComboBox
    box = CompactComboBox(8)
    long = "DenseHMM — direct co-occurrence fit"
    box.addItems([long, "short"])
    box.setToolTip("What the box chooses")
    # a long item does not set the minimum width (8 characters do)
    assert box.minimumSizeHint().width() < box.fontMetrics().horizontalAdvance(long)
    shown(qtbot, box, size=(120, 30))
    box.grab()   # a paint
    assert box.is_elided() and box.toolTip() == f"What the box chooses\n\n{long}"
    box.setCurrentIndex(1)
    box.grab()   # a paint
    assert not box.is_elided() and box.toolTip() == "What the box chooses"
    box.setCurrentIndex(0)
    box.resize(box.fontMetrics().horizontalAdvance(long) + 80, 30)
    box.grab()   # a paint
    assert not box.is_elided() and box.toolTip() == "What the box chooses"


def test_color_key_lines_fit_its_width_caption_included(qtbot):
    """Each line of the key, drawn as plain text, fits the key's width: with one line the caption
    shares it with the entries and the "+K more" tail."""
    import re
    from PySide6.QtGui import QColor, QFontMetricsF
    from app.views.widgets import ColorKey
    for max_lines in (1, 2):
        key = shown(qtbot, ColorKey("State colours:", max_lines=max_lines), size=(300, 40))
        key.set_colors([QColor("#336699")] * 60)
        fm = QFontMetricsF(key.font())
        lines = key.text().split("<br>")
        assert len(lines) == max_lines and 0 < key.shown() < 60 and f"+{60 - key.shown()} more" in lines[-1]
        for line in lines:
            plain = re.sub(r"<[^>]+>", "", line).replace("&nbsp;", "\u00a0").replace("&#9632;", "\u25a0")
            assert fm.horizontalAdvance(plain) <= key.width() - 4, (max_lines, plain)


def _tick_text_rects(axis):
    """The tick labels pyqtgraph would draw on ``axis``: ``[(text, QRectF)]``."""
    img = QtGui.QImage(10, 10, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(img)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(text, rect) for rect, _flags, text in (specs[2] if specs else [])]


@pytest.mark.parametrize("width", [250, 300, 420, 700])
def test_scatter_tick_labels_keep_a_gap(qtbot, width):
    """Defect (the dashboard's embeddings at 240 px, PC 1 from -4.5 to 8): the x axis read
    "-4-3-2-1 0 1 2 ...", the minus signs joining the labels into one string.  pyqtgraph draws a
    finer tick level's labels while they fill up to 60 % of the axis; the labels of a horizontal axis
    now keep at least a character's gap, and the coarse level (0, 5) is always labelled."""
    rng = np.random.default_rng(0)
    p = {k: rng.normal(size=(s, 2)) for k, s in (("U", 6), ("Z", 6), ("W", 6), ("V", 12))}
    p["z_start"] = rng.normal(size=2)
    p["V"][0] = (-4.5, 0.0)
    p["V"][1] = (8.0, 0.5)
    w = shown(qtbot, EmbeddingScatter(controls=False), (width, 320))
    w.set_embeddings(p)
    qtbot.wait(30)
    ax = w.plot.getAxis("bottom")
    texts = _tick_text_rects(ax)
    assert len(texts) >= 2, texts
    boxes = sorted((r.left(), r.right(), t) for t, r in texts)
    gap = QtGui.QFontMetricsF(ax.style["tickFont"] or ax.font()).horizontalAdvance("0")
    for (_l0, r0, t0), (l1, _r1, t1) in zip(boxes, boxes[1:]):
        assert l1 - r0 >= gap, (width, t0, t1, l1 - r0, [b[2] for b in boxes])


@pytest.mark.parametrize("lo,hi,width", [(-5.5, 10.25, 300), (0, 15, 350), (-8, 8, 300)])
def test_numeric_bottom_axes_keep_a_gap_between_labels(qtbot, lo, hi, width):
    """The rule for every numeric bottom axis of the views (steps, positions, coordinates), in settings
    where a plain pyqtgraph axis crowds its labels (checked first): only the coarser level is labelled."""
    from app.views.axes import GappedAxis, labels_crowded

    def texts_of(axis_items):
        w = shown(qtbot, pg.PlotWidget(axisItems=axis_items), (width, 150))
        w.setXRange(lo, hi, padding=0)
        qtbot.wait(20)
        ax = w.getPlotItem().getAxis("bottom")
        return w, ax, _tick_text_rects(ax)      # the widget too: it owns the axis

    _plain_w, plain_ax, plain = texts_of({})
    gap = QtGui.QFontMetricsF(plain_ax.font()).horizontalAdvance("0")
    assert labels_crowded([r for _t, r in plain], gap), [t for t, _r in plain]
    _w, ax, texts = texts_of({"bottom": GappedAxis("bottom")})
    assert len(texts) >= 2, texts
    assert not labels_crowded([r for _t, r in texts], gap), [t for t, _r in texts]
    assert {t for t, _r in texts} < {t for t, _r in plain}     # the coarse level's labels, as pyqtgraph's
    assert ax.style["maxTextLevel"] == 2     # the style is restored after each drawing


def test_views_number_their_bottom_axes_with_the_gapped_axis(qtbot):
    from app.panels.data_panel import DataPanel
    from app.views.axes import GappedAxis
    curves, scatter, decode, panel = TrainingCurves(), EmbeddingScatter(), DecodeView(), DataPanel()
    for w in (curves, scatter, decode, panel):
        qtbot.addWidget(w)
    axes = [p.getAxis("bottom") for p in curves.plots.values()]
    axes += [scatter.plot.getAxis("bottom"), decode.post_plot.getAxis("bottom")]
    axes.append(panel.len_plot.getPlotItem().getAxis("bottom"))
    assert all(isinstance(a, GappedAxis) for a in axes), [type(a).__name__ for a in axes]


@pytest.mark.parametrize("size", [(866, 118), (700, 130), (1200, 200)])
def test_short_curves_keep_legend_note_and_last_label_apart(qtbot, size):
    """Defects (a co-occurrence job on a 1366 x 768 laptop, curves 118 px tall): the NLL plot's legend
    ("test") moved to the upper left, over the note that explains the single test point, and the MAD
    plot's last step label read "150" (for 1500), cut at the widget's right edge."""
    c = shown(qtbot, TrainingCurves(orientation="horizontal"), size)
    for s in range(0, 1500, 250):
        c.add_event(ProgressEvent(step=s, total=1500, phase="cooc", loss=0.8 / (s + 1),
                                  metrics={"mad": 0.003 / (1 + s / 250)}))
    c.add_event(ProgressEvent(step=1476, total=1500, phase="cooc", loss=0.09, test_ll=-180.0,
                              metrics={"mad": 0.0013, "test_nll": 2.4656}, done=True))
    p = c.plots["nll"]
    text = p._note.textItem
    # (a fixed 50 ms wait read a half-laid-out note, 60 x 104 px, once on the slow CI host)
    note_box, legend_box = settled(qtbot, lambda: (text.mapRectToScene(text.boundingRect()),
                                                   p.legend.mapRectToScene(p.legend.boundingRect())))
    assert c.note("nll") and c.legend_names("nll") == ["test"]
    assert not note_box.intersects(legend_box), (c.legend_corner("nll"), note_box, legend_box)
    # every step label drawn lies inside the view (none cut at its edge)
    view = c.graphics.mapToScene(c.graphics.viewport().rect()).boundingRect()
    for key in ("loss", "nll", "mad"):
        ax = c.plots[key].getAxis("bottom")
        for t, r in _tick_text_rects(ax):
            box = ax.mapRectToScene(r)
            assert view.left() <= box.left() and box.right() <= view.right(), (key, t, box, view)


@pytest.mark.parametrize("height,spread", [(110, 1.0), (140, 1.0), (400, 1.0), (110, 0.09), (130, 0.09)])
def test_colour_bar_labels_never_overlap(qtbot, height, spread):
    """Defect (a 6-state A on a 1366 x 768 laptop, the heatmap 45 px tall): the colour bar read
    "1.0 0.8 0.6 0.4 0.2" on top of each other.  pyqtgraph labels at least two intervals whatever the
    bar's height; its labels now stay half a line apart (fewer, wider spaced values), and a tall bar
    keeps pyqtgraph's values."""
    rng = np.random.default_rng(0)
    w = MatrixHeatmap("Transition matrix A", "from state", "to state")
    w.setMinimumSize(0, 0)      # as short as beside π on a netbook (the bar 30 px tall at 110)
    w = shown(qtbot, w, (220, height))
    w.set_matrix(rng.dirichlet(np.ones(6), size=6))
    w.set_fixed_range(False)
    # spread 1: values over 0..1; 0.09: a narrow range (a DNA model's A, 0.135 .. 0.225), which must
    # keep two labels (one alone gives no scale)
    if spread == 1.0:
        w.set_matrix(np.clip(rng.dirichlet(np.ones(6), size=6) * 3, 0, 1))
    else:
        w.set_matrix(rng.permutation(np.linspace(0.18 - spread / 2, 0.18 + spread / 2, 36)).reshape(6, 6))
    ax = w.colorbar.axis
    texts = settled(qtbot, lambda: _tick_text_rects(ax))
    assert len(texts) >= 2, (height, texts)
    line = QtGui.QFontMetricsF(ax.font()).height()
    centres = sorted((r.center().y(), t) for t, r in texts)
    for (y0, s0), (y1, s1) in zip(centres, centres[1:]):
        assert y1 - y0 >= 1.1 * line, (height, s0, s1, y1 - y0, line)
    if height >= 400 and spread == 1.0:   # room: the labels pyqtgraph chose, every 0.1 or 0.2
        values = sorted(float(t) for t, _r in texts)
        assert len(values) >= 5, values


def test_log_axis_labels_use_one_notation(qtbot):
    """Defect (the sweep's MAD axis, 7e-5 .. 2.2e-4): "0.0002, 0.0001, 9e-05, 8e-05, 7e-05", two notations
    on one axis.  Scientific for the whole axis when a value is below 1e-4, compact ("9e-5")."""
    vals, labels = _log_ticks(6.5e-5, 2.3e-4, 300)
    assert len(vals) >= 3, labels
    for v, text in zip(vals, labels):
        mant, exp = text.split("e")
        assert float(text) == pytest.approx(v, rel=1e-6) and not exp.startswith(("+", "-0", "0")), text
    vals, labels = _log_ticks(0.0053, 0.112, 300)   # within 1e-4 .. 1e6: plain
    assert labels and all("e" not in t for t in labels), labels


@pytest.mark.parametrize("size,lo,hi", [((866, 118), 0.52, 0.60), ((700, 130), 0.52, 0.60),
                                        ((900, 250), 2.1, 2.9), ((1200, 400), 5.4, 6.1), ((866, 118), 5.4, 6.1)])
def test_curves_value_axis_labels_stand_apart(qtbot, size, lo, hi):
    """Defect (a co-occurrence job's curves on a 1330 x 830 window, the NLL plot 60 px tall): its axis
    read "0.60 0.58 0.56 0.54 0.52", each label touching the next.  pyqtgraph always labels its first
    tick level, chosen from the axis' length alone; the labels of a linear value axis now stand 1.25
    lines apart (a wider 1-2-5 step), and at least two stay; a tall plot keeps pyqtgraph's."""
    from app.views.axes import LABEL_LINES_APART
    c = shown(qtbot, TrainingCurves(orientation="horizontal"), size)
    steps = np.arange(9)
    for s, v in zip(steps, np.linspace(hi, lo, len(steps))):
        c.add_event(ProgressEvent(step=int(s), total=8, loss=float(v), metrics={"train_nll": float(v)}))
    settled(qtbot, lambda: [_tick_text_rects(c.plots[k].getAxis("left")) for k in ("loss", "nll")])
    for key in ("loss", "nll"):
        ax = c.plots[key].getAxis("left")
        assert not ax.logMode
        texts = _tick_text_rects(ax)
        assert len(texts) >= 2, (key, texts)
        line = QtGui.QFontMetricsF(ax.style["tickFont"] or ax.font()).height()
        centres = sorted((r.center().y(), t) for t, r in texts)
        for (y0, s0), (y1, s1) in zip(centres, centres[1:]):
            assert y1 - y0 >= (LABEL_LINES_APART - 0.05) * line, (key, s0, s1, y1 - y0, line)
        if c.plots[key].vb.height() > 250:   # room: pyqtgraph's own labels, every 0.1 or 0.2
            assert len(texts) >= 4, texts


@pytest.mark.parametrize("size", [(866, 118), (1330, 140), (900, 250)])
def test_curves_log_axis_labels_stand_apart(qtbot, size):
    """Defect (the same window): the co-occurrence loss, 1 down to 3e-7 on a log axis, read "1e0 1e-2
    1e-4 1e-6 1e-8", each label touching the next.  Its decades now stand 1.25 lines apart too."""
    from app.views.axes import LABEL_LINES_APART
    c = shown(qtbot, TrainingCurves(orientation="horizontal"), size)
    for s in range(0, 20001, 500):
        c.add_event(ProgressEvent(step=s, total=20000, phase="cooc", loss=10.0 ** (-6.5 * s / 20000),
                                  metrics={"mad": 0.01 / (1 + s / 500)}))
    ax = c.plots["loss"].getAxis("left")
    texts = settled(qtbot, lambda: _tick_text_rects(ax))
    assert ax.logMode
    assert len(texts) >= 2, texts
    line = QtGui.QFontMetricsF(ax.style["tickFont"] or ax.font()).height()
    centres = sorted((r.center().y(), t) for t, r in texts)
    for (y0, s0), (y1, s1) in zip(centres, centres[1:]):
        assert y1 - y0 >= (LABEL_LINES_APART - 0.05) * line, (s0, s1, y1 - y0, line)
    assert all(float(t) > 0 and abs(math.log10(float(t)) - round(math.log10(float(t)))) < 1e-9
               for t, _r in texts), texts      # decades, written as such


def test_category_axis_widest_label_equals_measuring_all_of_them(qtbot):
    """The widest-label search stops early (length times the widest character a label uses bounds its
    width; the Brown corpus's 30,499 words took 62 ms with the font's maxWidth as the bound, now 11 ms):
    it finds what measuring every label finds, short wide labels and new labels included."""
    from PySide6 import QtGui
    from app.views.axes import LabelAxis
    rng = np.random.default_rng(4)
    narrow = ["".join(rng.choice(list("il.,'"), size=int(k))) for k in rng.integers(3, 14, 4000)]
    wide = ["WMW", "MW@W", "ÆÆ", "——"]
    ax = LabelAxis("bottom", max_label_px=400)
    for labels in (narrow + wide, narrow, ["a", "b"], wide[::-1] + narrow):
        ax.set_labels(labels)
        for size in (7.0, 9.0, 12.0):
            f = QtGui.QFont(ax._base_font())
            f.setPointSizeF(size)
            fm = QtGui.QFontMetricsF(f)
            assert ax._widest(f) == pytest.approx(max(fm.horizontalAdvance(s) for s in labels)), (size, labels[:3])
    ax = LabelAxis("bottom", max_label_px=30)     # the cap: longer names are elided
    ax.set_labels(wide + narrow)
    assert ax._widest(ax._base_font()) == 30


def test_the_dashboard_makes_symbol_names_text_once_for_all_its_views(qtbot):
    """Seven views take the vocabulary; the dashboard converts it once and hands every view the same
    names (each view converting 30,499 words again cost the click that starts a job about 15 ms).
    The names are what ``str`` gives, in order."""
    calls = []

    class Name:
        def __init__(self, i):
            self.i = i

        def __str__(self):
            calls.append(self.i)
            return f"s{self.i}"

    m = 600
    vocab = [Name(i) for i in range(m)]
    d = shown(qtbot, Dashboard(), (1200, 800))
    d.set_vocabulary(vocab)
    assert len(calls) == m                    # once per name, not once per view
    from app.views.theme import symbol_labels, symbol_names
    names = symbol_names(vocab)
    assert list(names) == [f"s{i}" for i in range(m)]
    assert symbol_names(names) is names       # text already: passed on as it is
    assert symbol_labels(m, names) == list(names) and symbol_labels(m + 1, names)[-1] == str(m)
    assert symbol_names(None) is None


def test_compare_never_keeps_the_previous_comparisons_symbol_names(qtbot):
    """Review rev24 item 6: models without a vocabulary, and none given, kept the names of the comparison
    before (the same number of symbols): ΔB's axis named symbols these models do not have.  Now numbers."""
    pa, pb = random_params(3, 4, seed=1), random_params(3, 4, seed=2)
    named_a, named_b = plain_model(pa), plain_model(pb)
    named_a.vocabulary = named_b.vocabulary = ["w", "x", "y", "z"]
    w = shown(qtbot, CompareView(), (1100, 600))
    w.set_models("job 1", named_a, "job 2", named_b, {}, {})
    assert w.maps["emissionprob"].col_labels() == ["w", "x", "y", "z"]
    w.set_models("job 3", plain_model(pa), "job 4", plain_model(pb), {}, {})
    assert w.maps["emissionprob"].col_labels() == ["0", "1", "2", "3"]
    w.set_models("job 3", plain_model(pa), "job 4", plain_model(pb), {}, {}, vocabulary=["p", "q", "r", "s"])
    assert w.maps["emissionprob"].col_labels() == ["p", "q", "r", "s"]

"""Layout rules of the plotting views on small screens: stacks as small as the page shown, plot titles
that fit their plots, no embedding check boxes without embeddings.  Offscreen Qt."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pg = pytest.importorskip("pyqtgraph")

from PySide6 import QtWidgets  # noqa: E402

from app.views import EmbeddingScatter, MatrixHeatmap, TrainingCurves  # noqa: E402
from app.views.theme import TITLE_POINTS, plot_title  # noqa: E402
from app.views.widgets import PageStack  # noqa: E402
from qtshow import shown  # noqa: E402 - this folder


def _heatmap(qtbot, title: str, matrix, size):
    """A heatmap titled ``title`` showing ``matrix``, on screen at ``size``."""
    h = MatrixHeatmap(title, "state", "symbol", symbol="B")
    h.set_matrix(matrix)
    return shown(qtbot, h, size)


def _page(width: int, height: int) -> QtWidgets.QWidget:
    w = QtWidgets.QWidget()
    w.setMinimumSize(width, height)
    return w


def test_a_stack_is_as_small_as_the_page_it_shows(qtbot):
    """Qt's stacked widget asks for its largest page's minimum: the hidden top-words table (300 px) made
    the emission heatmap's column 300 px wide and the dashboard scroll sideways on a netbook."""
    host = QtWidgets.QWidget()
    qtbot.addWidget(host)
    lay = QtWidgets.QHBoxLayout(host)
    lay.setContentsMargins(0, 0, 0, 0)
    stack = PageStack()
    small, large = _page(100, 50), _page(300, 80)
    stack.addWidget(small)
    stack.addWidget(large)
    lay.addWidget(stack)
    lay.addWidget(_page(40, 10))
    host.show()
    qtbot.waitExposed(host)
    assert (stack.minimumSizeHint().width(), stack.minimumSizeHint().height()) == (100, 50)
    assert host.minimumSizeHint().width() == 100 + lay.spacing() + 40
    stack.setCurrentWidget(large)
    qtbot.waitUntil(lambda: host.minimumSizeHint().width() == 300 + lay.spacing() + 40, timeout=2000)
    assert stack.minimumSizeHint().height() == 80
    large.setMinimumWidth(350)     # the page's own minimum changes: the stack follows
    qtbot.waitUntil(lambda: host.minimumSizeHint().width() == 350 + lay.spacing() + 40, timeout=2000)
    host.resize(200, 100)          # the hidden small page never sets the minimum
    stack.setCurrentWidget(small)
    qtbot.waitUntil(lambda: host.minimumSizeHint().width() == 100 + lay.spacing() + 40, timeout=2000)


def _points(plot) -> float:
    """The title's point size (pyqtgraph writes it into the label's HTML, not into its font)."""
    return float(plot.titleLabel.opts["size"].removesuffix("pt"))


def _title_rects(plots):
    return [p.titleLabel.item.sceneBoundingRect() for p in plots]


@pytest.mark.parametrize("width", [560, 640, 760])
def test_curve_titles_side_by_side_never_overlap(qtbot, width):
    """Three curves side by side in a netbook's 600 px: "Training NLL per token (Baum-Welch)" reached
    over "Normalised NLL (train, test)", and "Co-occurrence MAD" past the right edge."""
    w = TrainingCurves(orientation="horizontal")
    qtbot.addWidget(w)
    w.set_history([{"step": s, "loss": 2.0 - 0.1 * s, "phase": "baum-welch", "train_ll": -2.0 + 0.1 * s,
                    "mad": 0.01} for s in range(4)])
    assert w.plots["loss"]._styled_title == "Training NLL per token (Baum-Welch)"
    w.resize(width, 220)
    w.show()
    qtbot.waitExposed(w)
    qtbot.wait(20)
    plots = [w.plots[k] for k in ("loss", "nll", "mad")]
    rects = _title_rects(plots)
    scene = w.graphics.ci.sceneBoundingRect()
    for (a, ra), (b, rb) in itertools.combinations(zip(("loss", "nll", "mad"), rects), 2):
        assert ra.right() <= rb.left() + 1 or rb.right() <= ra.left() + 1, (a, b, ra, rb)
    for p, r in zip(plots, rects):
        assert r.left() >= scene.left() - 1 and r.right() <= scene.right() + 1, (p._styled_title, r, scene)
        assert _points(p) >= TITLE_POINTS[-1]


def test_a_title_that_fits_keeps_its_full_size_and_text(qtbot):
    w = TrainingCurves(orientation="horizontal")
    qtbot.addWidget(w)
    w.resize(1400, 260)
    w.show()
    qtbot.waitExposed(w)
    qtbot.wait(20)
    for p in w.plots.values():
        assert _points(p) == TITLE_POINTS[0]
        assert p.titleLabel.item.toPlainText() == p._styled_title


def test_a_title_too_wide_even_small_is_elided_inside_its_plot(qtbot):
    """A heatmap of 180 px (its netbook minimum) with a long title: 8 pt, elided, within the widget; back
    to the whole title at 11 pt once wide."""
    long_title = "Emission matrix B of a model with a very long descriptive name"
    h = _heatmap(qtbot, long_title, np.full((3, 4), 0.25), (180, 200))
    qtbot.wait(20)
    item = h.plot.titleLabel.item
    assert _points(h.plot) == TITLE_POINTS[-1]
    assert item.toPlainText().endswith("…") and len(item.toPlainText()) < len(long_title)
    assert h.plot.titleLabel.toolTip() == long_title == plot_title(h.plot)   # whole in the tooltip
    r = item.sceneBoundingRect()
    assert r.left() >= -1 and r.right() <= h.graphics.width() + 1
    h.resize(900, 400)
    qtbot.waitUntil(lambda: item.toPlainText() == long_title, timeout=2000)
    assert h.plot.titleLabel.toolTip() == ""
    assert _points(h.plot) == TITLE_POINTS[0]


def test_a_two_line_title_drawn_smaller_keeps_both_lines(qtbot):
    """The title row grows for a second line (the state x tag view's scores); a refit at a smaller size
    (pyqtgraph's setTitle makes the row one line high again) keeps both lines."""
    from PySide6 import QtGui
    h = _heatmap(qtbot, "States x gold tags: P(tag | state)<br>M-1 0.600,  1-1 0.600,  V-measure 0.474",
                 np.full((3, 3), 1 / 3), (600, 300))
    label = h.plot.titleLabel

    def holds_two_lines() -> bool:
        font = QtGui.QFont(label.item.font())
        font.setPointSizeF(_points(h.plot))
        return label.geometry().height() >= 2 * QtGui.QFontMetricsF(font).lineSpacing()

    qtbot.waitUntil(lambda: _points(h.plot) == TITLE_POINTS[0], timeout=2000)
    assert holds_two_lines()
    h.resize(200, 300)
    qtbot.waitUntil(lambda: _points(h.plot) < TITLE_POINTS[0], timeout=2000)
    qtbot.wait(20)
    assert label.item.toPlainText().split("\n")[1].startswith("M-1") and holds_two_lines()


def test_embedding_check_boxes_show_only_with_embeddings(qtbot):
    """A standard HMM's placeholder had U, Z, W, V check boxes above it, ticking nothing."""
    rng = np.random.default_rng(0)
    e = EmbeddingScatter()
    qtbot.addWidget(e)
    e.resize(400, 300)
    e.show()
    qtbot.waitExposed(e)
    assert e.placeholder.isVisible() and not e.controls.isVisible()
    e.set_embeddings({k: rng.normal(size=(4, 2)) for k in ("U", "Z", "W", "V")})
    assert e.controls.isVisible() and not e.placeholder.isVisible()
    e.clear()
    assert e.placeholder.isVisible() and not e.controls.isVisible()
    bare = EmbeddingScatter(controls=False)   # Overview's: never any
    qtbot.addWidget(bare)
    bare.show()
    bare.set_embeddings({k: rng.normal(size=(4, 2)) for k in ("U", "Z", "W", "V")})
    assert not bare.controls.isVisible()


def test_row_ticks_stay_outside_the_cells(qtbot):
    """pyqtgraph's ticks reached 5 px into the plot: beside a narrow cell's value, 0.50 read "-0.50".
    The pixels just inside the left edge, at each row's centre, are the cell's own colour."""
    h = _heatmap(qtbot, "B", np.full((4, 4), 0.5), (230, 200))
    qtbot.wait(30)
    img = h.graphics.grab().toImage()
    ratio = img.devicePixelRatio()
    vb = h.plot.vb.sceneBoundingRect()
    view = h.graphics
    for row in range(4):
        centre = h.plot.vb.mapViewToScene(pg.QtCore.QPointF(2.0, row))   # a cell's centre: its colour
        cell = img.pixelColor(int(view.mapFromScene(centre).x() * ratio), int(view.mapFromScene(centre).y() * ratio))
        left = view.mapFromScene(pg.QtCore.QPointF(vb.left(), centre.y()))
        inside = [img.pixelColor(int((left.x() + dx) * ratio), int(left.y() * ratio)) for dx in (1, 2, 3, 4)]
        assert all(c == cell for c in inside), (row, cell.name(), [c.name() for c in inside])


def test_a_short_embedding_plot_names_its_axes_briefly(qtbot):
    """On a netbook Overview's embedding plots are about 100 px high: "PC 2 (19% of variance)" was cut
    to "PC 2 (19% of varianc".  A short plot says "PC 2 (19%)"; a tall one the whole title."""
    rng = np.random.default_rng(1)
    e = EmbeddingScatter(controls=False)
    qtbot.addWidget(e)
    e.resize(240, 190)
    e.show()
    qtbot.waitExposed(e)
    e.set_embeddings({k: rng.normal(size=(5, 3)) for k in ("U", "Z", "W", "V")})
    left = e.plot.getAxis("left")
    qtbot.waitUntil(lambda: left.labelText.startswith("PC 2 (") and left.labelText.endswith("%)"), timeout=2000)
    assert e.plot.vb.boundingRect().height() < 130
    e.resize(500, 600)
    qtbot.waitUntil(lambda: left.labelText.endswith("% of variance)"), timeout=2000)
    assert e.plot.getAxis("bottom").labelText.endswith("% of variance)")


def test_a_narrow_compare_page_scrolls_its_table_not_itself(qtbot):
    """The comparison table was never narrower than its content, so on a netbook the Compare page was
    757 px wide in a 622 px viewport.  Squeezed, the table scrolls sideways itself (every row still
    shown, the scroll bar below them); with room it is as wide as its content, without scroll bars."""
    from app.views import CompareView
    from app.views.compare import TABLE_MIN_WIDTH
    from densehmm_core.hmm_base import BaseHMM
    rng = np.random.default_rng(2)

    def model(seed):
        r = np.random.default_rng(seed)
        m = BaseHMM(8, 12, seed=seed)
        m.startprob_, m.transmat_ = r.dirichlet(np.ones(8)), r.dirichlet(np.ones(8), 8)
        m.emissionprob_ = r.dirichlet(np.ones(12), 8)
        return m

    w = CompareView()
    qtbot.addWidget(w)
    w.resize(622, 520)          # a netbook's viewport
    w.show()
    qtbot.waitExposed(w)
    w.set_models("job 1", model(1), "job 2", model(2), {"test_nll": 2.5 + rng.random()}, {"test_nll": 2.4},
                 same_data=True)
    qtbot.wait(30)
    t = w.table
    assert w.minimumSizeHint().width() <= 622
    assert TABLE_MIN_WIDTH <= t.width() < t.content_width
    qtbot.waitUntil(lambda: t.verticalScrollBar().maximum() == 0, timeout=2000)   # every row shown
    assert t.horizontalScrollBar().maximum() > 0
    w.resize(1100, 520)
    qtbot.waitUntil(lambda: t.width() >= t.content_width, timeout=2000)
    qtbot.waitUntil(lambda: t.horizontalScrollBar().maximum() == 0 == t.verticalScrollBar().maximum(), timeout=2000)


def test_a_one_line_legend_row_shows_every_name_whole(qtbot):
    """Under Overview's scatters on a 1280 x 720 laptop the legend row took one line but "z_start" was
    cut to "z_st": its width was estimated at 8 px of spacing per entry, the layout puts 8 px between
    every marker and text.  At every width, a one-line row ends inside the view."""
    rng = np.random.default_rng(3)
    p = {k: rng.normal(size=(5 if k != "z_start" else 1, 3)) for k in ("U", "Z", "W", "V")}
    p["z_start"] = rng.normal(size=3)
    w = EmbeddingScatter(controls=False)
    qtbot.addWidget(w)
    w.resize(400, 300)
    w.show()
    qtbot.waitExposed(w)
    w.set_embeddings(p)
    one_line = 0
    for width in range(240, 430, 10):
        w.resize(width, 300)
        qtbot.wait(15)
        if w.legend.columnCount != 5:
            continue
        one_line += 1
        last = max(label.item.sceneBoundingRect().right() for _s, label in w.legend.items)
        assert last <= w.graphics.viewport().width(), (width, last)
    assert one_line >= 3

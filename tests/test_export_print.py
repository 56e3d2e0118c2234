"""Exported figures are print-ready (user audit 24, items 4, 5, 7): white with dark text whatever the window's
theme (the screen keeps it), no window furniture, PNGs tagged 96 dpi x scale, colour bars on pi and delta pi."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from app.export import export_widget  # noqa: E402
from app.views import Dashboard  # noqa: E402
from app.window.appearance import apply_theme  # noqa: E402
from densehmm_core.events import ProgressEvent  # noqa: E402

WHITE = QtGui.QColor(255, 255, 255).rgb()


def params(n=4, m=6, seed=0, l=3):
    rng = np.random.default_rng(seed)
    return {"startprob": rng.dirichlet(np.ones(n)), "transmat": rng.dirichlet(np.ones(n), n),
            "emissionprob": rng.dirichlet(np.ones(m), n), "U": rng.normal(size=(n, l)),
            "Z": rng.normal(size=(n, l)), "W": rng.normal(size=(n, l)), "V": rng.normal(size=(m, l)),
            "z_start": rng.normal(size=l)}


@pytest.fixture
def dashboard(qtbot):
    d = Dashboard()
    qtbot.addWidget(d)
    d.resize(1100, 700)
    d.show()
    qtbot.waitExposed(d)
    p = params()
    d.update_from_event(ProgressEvent(step=0, loss=1.0, params=p, metrics={"mad": 0.1}))
    d.update_from_event(ProgressEvent(step=4, loss=0.3, params=p, metrics={"mad": 0.01}))
    return d


@pytest.fixture
def dark(qtbot):
    apply_theme("dark")
    try:
        yield
    finally:
        apply_theme("system")


def _corners(img: QtGui.QImage):
    w, h = img.width(), img.height()
    return {img.pixel(x, y) for x, y in ((0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1), (w // 2, 1))}


def _ink(img: QtGui.QImage) -> int:
    """How many sampled pixels are near black (text, axes)."""
    return sum(QtGui.QColor(img.pixel(x, y)).lightness() < 60
               for x in range(0, img.width(), 2) for y in range(0, img.height(), 2))


def test_a_dark_theme_figure_is_white_with_dark_text_and_the_screen_stays_dark(dashboard, dark, tmp_path, qtbot):
    from pyqtgraph import GraphicsView
    views = dashboard.export_target().findChildren(GraphicsView)
    dark_bg = {v: v.backgroundBrush().color().name() for v in views}
    assert QtGui.QColor(next(iter(dark_bg.values()))).lightness() < 80     # the screen is dark
    window_before = dashboard.export_target().palette().color(QtGui.QPalette.ColorRole.Window).name()
    axis = dashboard.views()["transmat"].findChildren(GraphicsView)[0]
    out = export_widget(dashboard, tmp_path / "dark.png")
    img = QtGui.QImage(str(out))
    assert _corners(img) == {WHITE}
    assert _ink(img) > 500            # axes and labels drawn dark on the white
    # the whole figure is light: no dark plot panels left
    dark_px = sum(QtGui.QColor(img.pixel(x, y)).lightness() < 60 and QtGui.QColor(img.pixel(x, y)).saturation() < 30
                  for x in range(0, img.width(), 4) for y in range(0, img.height(), 4))
    assert dark_px < 0.05 * (img.width() // 4) * (img.height() // 4)
    # the screen keeps its theme
    assert {v: v.backgroundBrush().color().name() for v in views} == dark_bg
    assert dashboard.export_target().palette().color(QtGui.QPalette.ColorRole.Window).name() == window_before
    assert axis is not None
    for fmt in ("pdf", "svg"):
        assert export_widget(dashboard, tmp_path / f"dark.{fmt}").stat().st_size > 1000


def test_light_figures_are_white_without_splitter_grips(dashboard, tmp_path):
    page = dashboard.export_target()
    out = export_widget(dashboard, tmp_path / "light.png")
    img = QtGui.QImage(str(out))
    assert _corners(img) == {WHITE}        # not the window grey (239, 239, 239)
    handles = [h for h in page.findChildren(QtWidgets.QSplitterHandle) if h.isVisible()]
    assert handles
    for h in handles:
        r = QtCore.QRect(h.mapTo(page, QtCore.QPoint(0, 0)), h.size())
        colours = {img.pixel(x, y) for x in range(r.left(), r.right() + 1) for y in range(r.top(), r.bottom() + 1)}
        assert colours == {WHITE}, "a splitter grip was drawn into the figure"


@pytest.mark.parametrize("scale", [1, 2, 3])
def test_png_dpi_tag_is_96_times_the_scale(dashboard, tmp_path, scale):
    img = QtGui.QImage(str(export_widget(dashboard.views()["transmat"], tmp_path / "a.png", scale=scale)))
    dpi = img.dotsPerMeterX() * 0.0254
    assert abs(dpi - 96 * scale) < 0.5 and img.dotsPerMeterY() == img.dotsPerMeterX()
    # the same size in inches as the 1x figure
    assert abs(img.width() / dpi - dashboard.views()["transmat"].width() / 96) < 0.05


def _bar_beside_strip(heatmap):
    bar = heatmap.colorbar
    assert bar.scene() is heatmap.graphics.scene() and bar.isVisible()
    strip = heatmap.plot.vb.sceneBoundingRect()
    box = bar.sceneBoundingRect()
    assert box.left() >= strip.right() and box.width() > 60
    assert strip.top() - 10 <= box.center().y() <= strip.bottom() + 10   # beside the strip
    return bar


def test_pi_has_a_colour_bar_that_follows_its_range_and_is_in_the_figure(dashboard, tmp_path, qtbot):
    hm = dashboard.heatmaps
    qtbot.waitUntil(lambda: hm.startprob.image_data() is not None)
    assert "0 to 1" in hm.fixed_box.toolTip()
    bar = _bar_beside_strip(hm.startprob)
    hm.set_fixed_range(True)
    assert tuple(bar.levels()) == (0.0, 1.0)
    hm.set_fixed_range(False)
    pi = params()["startprob"]
    assert bar.levels() == pytest.approx((pi.min(), pi.max()))
    img = QtGui.QImage(str(export_widget(hm.startprob, tmp_path / "pi.png")))
    box = bar.sceneBoundingRect().toRect()
    colours = {img.pixel(x, box.center().y() - 6) for x in range(box.left(), box.right())}
    assert len(colours) > 20          # the colour map drawn beside the strip


def test_delta_pi_has_a_colour_bar(qtbot):
    from app.views import CompareView
    w = CompareView()
    qtbot.addWidget(w)
    w.resize(1100, 700)
    w.show()
    qtbot.waitExposed(w)
    hm = w.maps["startprob"]
    hm.set_matrix(np.array([0.1, -0.2, 0.05]))
    qtbot.wait(20)
    bar = _bar_beside_strip(hm)
    assert bar.levels() == pytest.approx((-0.2, 0.2))


def test_a_decode_figure_says_which_positions_it_shows_without_the_screen_instruction(qtbot, tmp_path):
    """Audit 24 item 9: the figure of a 323-long sequence showed positions 0-249 and printed "drag or zoom"."""
    import xml.etree.ElementTree as ET
    from types import SimpleNamespace
    from app.views import DecodeView
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 6, size=L) for L in (323, 40)]
    model = StandardHMM(3, n_symbols=6, n_iter=2, seed=0).fit(seqs)
    w = DecodeView()
    qtbot.addWidget(w)
    w.resize(900, 500)
    w.show()
    qtbot.waitExposed(w)
    w.set_model(model, SimpleNamespace(sequences=seqs, vocabulary=list("abcdef"), names=["s0", "s1"]))
    w.select_sequence(0)
    on_screen = w.status.text()
    assert "drag or zoom" in on_screen
    svg = export_widget(w, tmp_path / "decode.svg")
    texts = " ".join(" ".join("".join(el.itertext()).split()) for el in ET.parse(svg).getroot().iter(
        "{http://www.w3.org/2000/svg}text"))
    assert "drag or zoom" not in texts
    assert "Positions 0–249 of 323 shown." in texts
    assert w.status.text() == on_screen          # the screen keeps its line
    w.track_plot.setXRange(99.5, 199.5, padding=0)   # the user scrolled: the figure says so
    assert w.figure_status().endswith("Positions 100–199 of 323 shown.")
    w.track_plot.setXRange(-0.5, 322.5, padding=0)
    assert "Positions" not in w.figure_status()
    w.select_sequence(1)                      # a short sequence is shown whole: nothing to say
    assert "Positions" not in w.figure_status() and "drag" not in w.figure_status()

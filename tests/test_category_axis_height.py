"""The room under a category axis with upright labels (app.views.axes.LabelAxis) fits the labels
shown, not the longest name of the whole vocabulary: a word chart's first view (short, frequent
words) keeps its bars tall; panning to a long word grows the axis so that nothing is clipped; it
does not shrink back while the user pans, and Reset (``refit``) fits it to the view again."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pg = pytest.importorskip("pyqtgraph")

LONG = 480     # index of the one long word (a multiple of every stride the axis takes here: it is drawn)


def _vocabulary():
    rng = np.random.default_rng(1)
    words = ["".join(rng.choice(list("abcdeno"), size=int(k))) for k in rng.integers(1, 5, 1000)]
    words[LONG] = "internationalisation"
    return words


def _chart(qtbot, words):
    from app.views.axes import LabelAxis
    ax = LabelAxis("bottom", max_label_px=400)
    w = pg.PlotWidget(axisItems={"bottom": ax})
    qtbot.addWidget(w)
    w.setLabel("bottom", "symbol")
    ax.set_labels(words)
    w.plot(np.arange(len(words)), np.linspace(1.0, 0.0, len(words)))
    w.resize(360, 320)
    w.show()
    qtbot.waitExposed(w)
    return w, ax


def _settle(w):
    """Paint, let the layout take the axis' new height, paint again."""
    from PySide6.QtWidgets import QApplication
    for _ in range(2):
        w.grab()
        QApplication.processEvents()


def _view(w, ax, lo, hi):
    w.setXRange(lo, hi, padding=0)
    _settle(w)
    return ax.geometry().height()


def _room(ax):
    """(axis height, bottom of the lowest upright label drawn, the drawn labels' widest text, one line)."""
    from PySide6 import QtGui
    drawn = ax.drawn_labels()
    assert drawn and all(rot for *_x, rot in drawn), "the labels stand upright at this width"
    fm = QtGui.QFontMetricsF(ax.style["tickFont"] or ax.font())
    lowest = max(rect.bottom() for *_x, rect, _rot in drawn)
    return ax.geometry().height(), lowest, max(fm.horizontalAdvance(t) for _i, t, *_r in drawn), fm.height()


def test_upright_labels_get_the_room_of_those_shown(qtbot):
    words = _vocabulary()
    w, ax = _chart(qtbot, words)
    title = ax.label.boundingRect().height()
    first = _view(w, ax, -0.5, 59.5)
    h, lowest, widest, line = _room(ax)
    assert lowest <= h + 1                           # nothing clipped
    assert widest < 50                               # short words in view
    assert h <= lowest + title + line                # no room kept for the long word (old: 150+ px more)
    # the long word comes into view: the axis grows to hold it whole
    grown = _view(w, ax, LONG - 30, LONG + 30)
    h, lowest, widest, _line = _room(ax)
    assert "internationalisation" in [t for _i, t, *_r in ax.drawn_labels()]
    assert widest > 100 and lowest <= h + 1 and grown > first + 60
    # back to the first view: the axis keeps its height while the user pans
    assert _view(w, ax, -0.5, 59.5) == grown
    # refit (a chart's Reset): the first view's room again
    ax.refit()
    _settle(w)
    assert _view(w, ax, -0.5, 59.5) == first
    # new labels: measured afresh
    ax.set_labels(["x" * 12] * 1000)
    h_new = _view(w, ax, -0.5, 59.5)
    h, lowest, widest, line = _room(ax)
    assert lowest <= h + 1 and h <= lowest + title + line and h_new == h


def test_the_frequency_charts_reset_fits_the_axis_to_its_first_view(qtbot):
    """The data panel's frequency chart: after a pan to the rare, long words, Reset shows the first
    view with the first view's room under the axis."""
    from app.datasets import dataset_from_corpus
    from app.panels.data_panel import DataPanel
    from densehmm_core.data import Corpus
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" if i < 100 else f"internationalisation{i}" for i in range(400)]
    corpus = Corpus.from_sequences([rng.zipf(1.5, size=20) % 400 for _ in range(300)], vocabulary=vocab)
    panel = DataPanel()
    qtbot.addWidget(panel)
    panel.resize(420, 900)
    panel.show()
    qtbot.waitExposed(panel)
    panel.set_dataset(dataset_from_corpus("words.txt", corpus))
    plot = panel.freq_plot
    ax = plot.getPlotItem().getAxis("bottom")
    _settle(plot)
    first = ax.geometry().height()
    assert all(len(t) < 5 for _i, t, *_r in ax.drawn_labels())      # the frequent words: short
    k = len(panel.freq_order)
    plot.setXRange(k - 40.5, k - 0.5, padding=0)                     # the rarest words
    _settle(plot)
    assert any(len(t) > 19 for _i, t, *_r in ax.drawn_labels())
    assert ax.geometry().height() > first + 60
    plot.reset_button.click()
    _settle(plot)
    assert ax.geometry().height() == first

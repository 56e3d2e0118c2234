"""The data panel's frequency chart paints only the bars in view (app.panels.data_panel.FrequencyBars):
the same picture as pyqtgraph's BarGraphItem, which draws every bar at each paint."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pg = pytest.importorskip("pyqtgraph")


def _pictures(qtbot, heights, ranges):
    """Grabs of two identical plots, pyqtgraph's item and ours, at each x range."""
    from app.panels.data_panel import FrequencyBars
    out = []
    plots = []
    for item in (pg.BarGraphItem(x=np.arange(len(heights)), height=heights, width=0.8,
                                 brush=pg.mkBrush(60, 120, 200)),
                 FrequencyBars(heights, width=0.8, brush=pg.mkBrush(60, 120, 200))):
        w = pg.PlotWidget()
        qtbot.addWidget(w)
        w.resize(420, 260)
        w.addItem(item)
        w.show()
        qtbot.waitExposed(w)
        plots.append((w, item))
    for x0, x1 in ranges:
        shots = []
        for w, item in plots:
            w.setXRange(x0, x1, padding=0)
            w.setYRange(0, float(np.max(heights)), padding=0)
            shots.append(w.grab().toImage())
        out.append((shots[0], shots[1], plots[1][1].shown_range()))
    return out


def test_bars_in_view_are_painted_as_pyqtgraph_paints_them(qtbot):
    rng = np.random.default_rng(3)
    heights = np.sort(rng.zipf(1.4, 5000).astype(float))[::-1]
    ranges = [(-0.6, 59.4), (1234.3, 1290.9), (4970.5, 5003.0), (-40.0, 10.0), (100.0, 2100.0), (-0.6, 4999.4)]
    for (ref, ours, (first, stop)), (x0, x1) in zip(_pictures(qtbot, heights, ranges), ranges):
        assert ref == ours, f"the picture differs at x range {x0}..{x1}"
        # the bars reaching into the view, and no other (a bar spans i - 0.4 .. i + 0.4)
        inside = [i for i in range(len(heights)) if i + 0.4 >= x0 and i - 0.4 <= x1]
        assert first <= inside[0] and stop - 1 >= inside[-1] and stop - first <= len(inside) + 2
    assert _pictures(qtbot, heights, [(-0.6, 59.4)])[0][2] == (0, 61)


def test_the_data_panel_uses_them_for_a_word_vocabulary(qtbot):
    """A 400-word vocabulary: the bars in the order of the counts, the first view's FREQ_SHOWN painted."""
    from app.datasets import dataset_from_corpus
    from app.panels.data_panel import FREQ_SHOWN, DataPanel, FrequencyBars
    from densehmm_core.data import Corpus
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(400)]
    corpus = Corpus.from_sequences([rng.zipf(1.5, size=20) % 400 for _ in range(300)], vocabulary=vocab)
    panel = DataPanel()
    qtbot.addWidget(panel)
    panel.resize(420, 900)
    panel.show()
    panel.set_dataset(dataset_from_corpus("words.txt", corpus))
    qtbot.waitExposed(panel)
    bars = panel.freq_bars
    assert isinstance(bars, FrequencyBars)
    np.testing.assert_array_equal(bars.opts["height"], np.sort(corpus.symbol_counts)[::-1])
    panel.freq_plot.grab()
    first, stop = bars.shown_range()
    assert first == 0 and FREQ_SHOWN <= stop <= FREQ_SHOWN + 2

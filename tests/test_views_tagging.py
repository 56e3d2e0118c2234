"""Views for corpora with gold tags (issue 14): state x tag table, tagging curves, top words,
frequent-word embedding labels, decode with gold and predicted tags, the Dashboard's Tags tab."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from densehmm_core.hmm_base import BaseHMM  # noqa: E402
from densehmm_core.metrics import tagging_scores  # noqa: E402

from app.views import Dashboard, DecodeView, EmbeddingScatter, ParameterHeatmaps  # noqa: E402
from app.views.tagging import StateTagView, TaggingCurves  # noqa: E402
from app.views.topwords import TopWordsTable  # noqa: E402
from qtshow import settled, shown  # noqa: E402 - this folder


class Hover:
    """A hover event at ``at`` (scene position) for pyqtgraph's ``hoverEvent``."""
    exit = False

    def __init__(self, at):
        self.at = at

    def pos(self):
        return self.at


def model_of(pi, A, B):
    n, m = np.shape(B)
    model = BaseHMM(n, m, seed=0)
    model.startprob_, model.transmat_, model.emissionprob_ = (np.asarray(x, float) for x in (pi, A, B))
    return model


def test_state_tag_view_matches_a_hand_made_table(qtbot):
    # states of 6 tokens and their gold tags (A, B, C), counted by hand:
    #            A  B  C
    # state 0:   1  1  0     -> A (tie: the lower tag index)
    # state 1:   0  2  1     -> B
    # state 2:   0  0  1     -> C
    pred = [np.array([0, 0, 1]), np.array([1, 1, 2])]
    gold = [np.array([0, 1, 1]), np.array([1, 2, 2])]
    scores = tagging_scores(pred, gold, n_states=3, n_tags=3)
    w = shown(qtbot, StateTagView())
    w.set_scores(scores, ["A", "B", "C"])
    np.testing.assert_array_equal(w.counts(), [[1, 1, 0], [0, 2, 1], [0, 0, 1]])
    np.testing.assert_allclose(w.heatmap.image_data(), [[0.5, 0.5, 0], [0, 2 / 3, 1 / 3], [0, 0, 1]])
    assert w.row_labels() == ["0 → A", "1 → B", "2 → C"]
    assert w.col_labels() == ["A", "B", "C"]
    assert "M-1 0.667" in w.heatmap._title  # (1 + 2 + 1) / 6
    assert w.heatmap.hover_text(1, 2) == "state 1 → B, gold tag C\n1 of the state's 3 tokens (P = 0.3333)"


def test_tagging_curves_and_top_words(qtbot):
    c = shown(qtbot, TaggingCurves(), (500, 300))
    c.add_point(0, {"m1": 0.3, "one_to_one": 0.2, "v_measure": 0.1})
    c.add_point(5, {"m1": 0.5, "one_to_one": 0.4, "v_measure": 0.3})
    assert c.series("m1")[1].tolist() == [0.3, 0.5] and c.series("v_measure")[0].tolist() == [0, 5]
    B = np.array([[0.1, 0.5, 0.2, 0.2], [0.4, 0.1, 0.1, 0.4]])
    t = shown(qtbot, TopWordsTable(top=3), (500, 300))
    t.set_emissions(B, ["the", "dog", "runs", "fast"], ["0 → DET", "1 → NOUN"])
    assert t.words() == [["dog", "runs", "fast"], ["the", "fast", "dog"]]  # ties keep the lower index
    assert t.table.verticalHeaderItem(1).text() == "1 → NOUN"
    assert t.table.item(0, 0).text() == "dog" and "0.5" in t.table.item(0, 0).toolTip()


def test_top_words_of_a_large_vocabulary_follow_a_full_sort(qtbot):
    """With many symbols only each row's candidates are sorted; the oracle is a full stable sort of the
    row (largest first, ties by index), on rows full of ties; words named from the vocabulary."""
    rng = np.random.default_rng(7)
    n, m, top = 6, 400, 10
    B = np.round(rng.dirichlet(np.full(m, 0.3), size=n), 3)    # rounded: many equal values
    vocab = [f"w{k}" for k in range(m)]
    t = shown(qtbot, TopWordsTable(top=top), (500, 300))
    t.set_emissions(B, vocab)
    want = [[vocab[k] for k in np.argsort(-B[i], kind="stable")[:top]] for i in range(n)]
    assert t.words() == want
    assert t.table.item(2, 0).text() == want[2][0]
    assert t.table.item(2, 0).toolTip() == f"state 2: P({want[2][0]}) = {B[2].max():.6g}"
    t.set_emissions(B, None)                                  # no names: the indices
    assert t.words()[0] == [str(np.argsort(-B[0], kind="stable")[j]) for j in range(top)]


def test_top_symbols_match_a_full_stable_sort():
    """The candidates' bound comes from a sample of the columns; the oracle is each row's full stable
    sort by decreasing value (ties by index), on shapes around the sampling threshold, rows of one
    repeated value, heavy ties, one large entry and NaN."""
    from app.views.topwords import top_symbols
    rng = np.random.default_rng(11)
    for n, m, top in [(3, 41, 10), (5, 39, 10), (4, 400, 10), (2, 30499, 10), (7, 1000, 1), (3, 5, 10),
                      (6, 2000, 25)]:
        mats = [rng.dirichlet(np.full(m, 0.3), size=n),
                np.round(rng.dirichlet(np.full(m, 0.3), size=n), 3),        # many equal values
                np.full((n, m), 1.0 / m)]                                      # every value tied
        spike = np.full((n, m), 1e-9)
        spike[:, m // 2] = 1.0
        mats.append(spike)
        nan = mats[0].copy()
        nan[0, ::3] = np.nan
        mats.append(nan)
        for B in mats:
            want = np.argsort(-B, axis=1, kind="stable")[:, :min(top, m)]
            np.testing.assert_array_equal(top_symbols(B, top), want, err_msg=f"{n}x{m} top {top}")


def test_large_vocabulary_shows_top_words_instead_of_a_heatmap(qtbot):
    rng = np.random.default_rng(0)
    n, m = 4, 500
    B = rng.dirichlet(np.ones(m), n)
    w = shown(qtbot, ParameterHeatmaps())
    vocab = [f"w{i}" for i in range(m)]
    w.set_vocabulary(vocab)
    w.set_params({"startprob": np.ones(n) / n, "transmat": np.ones((n, n)) / n, "emissionprob": B})
    assert w.showing_top_words()
    assert w.top_words.words()[2][0] == vocab[int(np.argmax(B[2]))]
    w.set_params({"emissionprob": B[:, :20] / B[:, :20].sum(1, keepdims=True)})
    assert not w.showing_top_words()  # a small alphabet keeps its heatmap


def test_embedding_scatter_labels_only_the_most_frequent_words(qtbot):
    rng = np.random.default_rng(1)
    m, l = 120, 4
    w = shown(qtbot, EmbeddingScatter(), (700, 500))
    w.set_vocabulary([f"w{i}" for i in range(m)])
    counts = rng.integers(1, 1000, size=m)
    w.set_symbol_frequencies(counts, top=15)
    w.set_embeddings({"V": rng.normal(size=(m, l)), "U": rng.normal(size=(3, l))})
    top = list(np.argsort(-counts, kind="stable")[:15])
    assert w.labelled_symbols() == top
    assert sorted(w.label_texts("V")) == sorted(f"w{i}" for i in top)
    pts = list(w.scatters["V"].points()) + list(w.faint_symbols.points())
    assert len(pts) == m  # the others are still drawn, as faint small points (an item of their own)
    assert sorted(int(p.data()) for p in w.scatters["V"].points()) == sorted(top)
    sizes = {int(p.data()): p.size() for p in pts}
    assert sorted(sizes) == list(range(m))
    assert all(sizes[i] > sizes[j] for i in top for j in set(range(m)) - set(top))
    assert w.faint_symbols.zValue() < w.scatters["V"].zValue()   # drawn under the frequent ones
    xs, ys = w.faint_symbols.getData()
    idx = [int(d) for d in w.faint_symbols.data["data"]]
    np.testing.assert_allclose(np.column_stack([xs, ys]), w.coordinates("V")[idx])
    w.boxes["V"].setChecked(False)
    assert not w.faint_symbols.isVisible() and not w.scatters["V"].isVisible()
    w.boxes["V"].setChecked(True)
    # other counts (another data set): the labelled words follow them, and the next snapshot too
    counts2 = counts[::-1].copy()
    w.set_symbol_frequencies(counts2, top=10)
    top2 = list(np.argsort(-counts2, kind="stable")[:10])
    assert w.labelled_symbols() == top2
    w.set_embeddings({"V": rng.normal(size=(m, l)), "U": rng.normal(size=(3, l))})
    assert w.labelled_symbols() == top2
    assert sorted(int(p.data()) for p in w.scatters["V"].points()) == sorted(top2)


def test_embedding_labels_are_reused_across_models_and_measured_for_their_new_text(qtbot):
    """Showing another job clears the view and labels the new words: the text items of the old labels
    are kept hidden and reused (no item made or removed per job shown: ~8 ms per view), each with its
    new text, and the boxes that place them are measured for the new text (a box kept from the old,
    shorter word let labels overlap)."""
    import pyqtgraph as pg
    rng = np.random.default_rng(1)
    m, l = 400, 6
    w = shown(qtbot, EmbeddingScatter(), (700, 500))

    def show(words, seed):
        counts = np.random.default_rng(seed).integers(1, 1000, size=m)
        w.clear()
        w.set_vocabulary(words)
        w.set_symbol_frequencies(counts, top=20)
        w.set_embeddings({"V": rng.normal(size=(m, l)), "U": rng.normal(size=(3, l))})
        w.finish_labels()
        return [words[i] for i in np.argsort(-counts, kind="stable")[:20]]

    def text_items():
        return [it for it in w.plot.items if isinstance(it, pg.TextItem)]

    want = show([f"w{i}" for i in range(m)], 0)
    assert sorted(w.label_texts("V")) == sorted(want)
    first = {id(t) for t in text_items()}
    assert len(first) == 20
    for rep, words in enumerate([[f"a-much-longer-word-{i}" for i in range(m)], [f"x{i}" for i in range(m)]]):
        want = show(words, rep + 1)
        assert sorted(w.label_texts("V")) == sorted(want)
        assert {id(t) for t in text_items()} == first            # the same items, none made or removed
        for t in w._labels["V"]:
            br = t.textItem.boundingRect()
            if getattr(t, "_box_size", None) is not None:
                assert t._box_size[:2] == (br.width(), br.height())   # measured for the text it shows
        boxes = w.label_boxes("V")
        for i, a in enumerate(boxes):   # the labels shown overlap no other label shown
            for b in boxes[i + 1:]:
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
    w.clear()
    assert not any(t.isVisible() for t in text_items())


def test_decode_view_shows_words_gold_and_predicted_tags(qtbot):
    pi = [1.0, 0.0]
    A = [[0.1, 0.9], [0.9, 0.1]]
    B = [[0.8, 0.1, 0.1], [0.1, 0.45, 0.45]]
    model = model_of(pi, A, B)
    data = SimpleNamespace(sequences=[np.array([0, 1, 0, 2])], vocabulary=["the", "dog", "cat"],
                           tags=[np.array([0, 1, 0, 0])], tag_vocabulary=["DET", "NOUN"], observes_words=True)
    w = shown(qtbot, DecodeView(), (900, 600))
    w.set_model(model, data)
    w.set_state_tags([0, 1])  # state 0 -> DET, state 1 -> NOUN
    path = w.current_path()
    rows = w.tag_rows()
    assert rows[0] == ["the", "dog", "the", "cat"]
    assert rows[1] == ["DET", "NOUN", "DET", "DET"]
    assert rows[2] == [f"{['DET', 'NOUN'][s]} ({s})" for s in path]
    assert list(path) == [0, 1, 0, 1]  # the Viterbi path of this model (alternating)
    bad = w.tag_table.item(2, 3)
    assert bad.background().color().alpha() > 0  # NOUN predicted, DET gold: shaded
    assert w.tag_table.verticalHeaderItem(0).text() == "word"
    # tag data (the observed symbols are the gold tags): the first row says so
    tags = SimpleNamespace(sequences=[np.array([0, 1, 0, 0])], vocabulary=["DET", "NOUN"],
                           tags=[np.array([0, 1, 0, 0])], tag_vocabulary=["DET", "NOUN"], observes_words=False)
    w.set_model(model_of(pi, A, [[0.9, 0.1], [0.2, 0.8]]), tags)
    w.set_state_tags([0, 1])
    assert w.tag_rows()[0] == ["DET", "NOUN", "DET", "DET"]
    assert w.tag_table.verticalHeaderItem(0).text() == "observed tag"
    # words whose every word reads as its tag (PTB's "." tagged "."): still words, as the reader recorded
    # (the row's name was guessed from the cells and said "observed tag")
    dots = SimpleNamespace(sequences=[np.array([0, 0])], vocabulary=[".", ","], tags=[np.array([0, 0])],
                           tag_vocabulary=[".", ","], observes_words=True)
    w.set_model(model_of(pi, A, [[0.9, 0.1], [0.2, 0.8]]), dots)
    w.set_state_tags([0, 1])
    assert w.tag_rows()[0] == [".", "."] and w.tag_table.verticalHeaderItem(0).text() == "word"


def test_decode_view_converts_only_the_sequences_it_shows(qtbot):
    """Showing a model converts the sequence on screen, not every sequence of the data set (57,340
    for the Brown corpus: about 40 ms of the GUI thread each time a job was shown); the sequence and
    gold tags shown are the data set's own, also after another one is picked."""
    class Counted(list):
        looked = 0

        def __getitem__(self, i):
            type(self).looked += 1
            return list.__getitem__(self, i)

        def __iter__(self):
            return (self[i] for i in range(len(self)))

    rng = np.random.default_rng(5)
    seqs = Counted([list(rng.integers(0, 3, size=int(rng.integers(2, 9)))) for _ in range(1000)])
    tags = Counted([list(rng.integers(0, 2, size=len(s))) for s in seqs])
    Counted.looked = 0
    data = SimpleNamespace(sequences=seqs, vocabulary=["the", "dog", "cat"], tags=tags,
                           tag_vocabulary=["DET", "NOUN"])
    model = model_of([0.5, 0.5], [[0.1, 0.9], [0.9, 0.1]], [[0.8, 0.1, 0.1], [0.1, 0.45, 0.45]])
    w = shown(qtbot, DecodeView(), (900, 600))
    w.set_model(model, data)
    assert w.sequence_count() == 1000
    assert Counted.looked <= 4          # the first sequence and its tags (each looked at once or twice)
    w.select_sequence(537)
    np.testing.assert_array_equal(w.current_sequence(), list.__getitem__(seqs, 537))
    assert w.tag_rows()[1] == [["DET", "NOUN"][g] for g in list.__getitem__(tags, 537)]
    np.testing.assert_array_equal(w.current_path(), model.predict([np.array(list.__getitem__(seqs, 537))])[0])
    assert Counted.looked <= 10


def test_dashboard_shows_the_tags_tab_for_a_tagged_corpus(qtbot):
    rng = np.random.default_rng(3)
    n, m, k = 3, 6, 4
    model = model_of(rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), n), rng.dirichlet(np.ones(m), n))
    seqs = [rng.integers(0, m, size=12) for _ in range(5)]
    tags = [rng.integers(0, k, size=12) for _ in range(5)]
    corpus = SimpleNamespace(sequences=seqs, vocabulary=[f"w{i}" for i in range(m)], tags=tags,
                             tag_vocabulary=["DET", "NOUN", "VERB", "ADJ"])
    d = shown(qtbot, Dashboard(), (1200, 800))
    assert not d.tabs.isTabVisible(d.tabs.indexOf(d.tags_page))
    d.set_model(model, corpus)
    qtbot.waitUntil(lambda: not d.live_tagging_busy(), timeout=10000)  # scored off the GUI thread
    assert d.tabs.isTabVisible(d.tabs.indexOf(d.tags_page))
    want = tagging_scores(model.predict(seqs), tags, n_states=n, n_tags=k)
    np.testing.assert_array_equal(d.state_tags.counts(), want["contingency"])
    assert d.tag_curves.series("m1")[1].tolist() == [want["m1"]]
    d.clear()
    assert not d.tabs.isTabVisible(d.tabs.indexOf(d.tags_page))


def test_live_snapshots_are_scored_against_gold_tags_in_the_background(qtbot):
    """While a job trains on tagged data, its snapshots are decoded and scored off the GUI thread:
    the curves get the core's scores of exactly those parameters."""
    from densehmm_core.events import ProgressEvent
    rng = np.random.default_rng(4)
    n, m, k = 3, 5, 3
    seqs = [rng.integers(0, m, size=10) for _ in range(6)]
    tags = [rng.integers(0, k, size=10) for _ in range(6)]
    corpus = SimpleNamespace(sequences=seqs, tags=tags, tag_vocabulary=["A", "B", "C"], vocabulary=list("vwxyz"))
    d = shown(qtbot, Dashboard(), (1100, 700))
    d.set_tagged_data(corpus)
    snaps = [{"startprob": rng.dirichlet(np.ones(n)), "transmat": rng.dirichlet(np.ones(n), n),
              "emissionprob": rng.dirichlet(np.ones(m), n)} for _ in range(2)]
    d.update_from_event(ProgressEvent(step=0, total=2, params=snaps[0]))
    qtbot.waitUntil(lambda: not d.live_tagging_busy(), timeout=10000)
    d.update_from_event(ProgressEvent(step=2, total=2, params=snaps[1], done=True))  # final: not throttled
    qtbot.waitUntil(lambda: d.tag_curves.series("m1")[0].size == 2 and not d.live_tagging_busy(), timeout=10000)
    steps, m1 = d.tag_curves.series("m1")
    assert steps.tolist() == [0.0, 2.0]
    for snap, got in zip(snaps, m1):
        want = tagging_scores(model_of(snap["startprob"], snap["transmat"], snap["emissionprob"]).predict(seqs),
                              tags, n_states=n, n_tags=k)
        assert got == pytest.approx(want["m1"])
    np.testing.assert_array_equal(d.state_tags.counts(), want["contingency"])
    assert d.tabs.isTabVisible(d.tabs.indexOf(d.tags_page))
    d.clear()  # a result arriving after the job changed is dropped
    assert not d.tabs.isTabVisible(d.tabs.indexOf(d.tags_page))


def test_exported_top_words_table_shows_every_column(qtbot, tmp_path, monkeypatch):
    """Issue 24 item 4: a figure cannot scroll, so an exported top-words table narrower than its words puts
    all of its columns in the figure (long words elided), and is back to normal afterwards."""
    from app import export
    n, m = 4, 40
    vocab = [f"internationalisation{i:02d}" for i in range(m)]
    B = np.random.default_rng(3).dirichlet(np.ones(m), size=n)
    t = shown(qtbot, TopWordsTable(), (420, 300))
    t.set_emissions(B, vocab)
    table = t.table

    def right_edge():
        last = table.columnCount() - 1
        return table.columnViewportPosition(last) + table.columnWidth(last)
    wide = [table.columnWidth(c) for c in range(table.columnCount())]
    assert table.columnCount() == 10 and right_edge() > table.viewport().width()   # cut on screen (scrolls)
    seen = []
    real_render = export._render

    def spy(widget, painter):
        seen.append((right_edge(), table.viewport().width()))
        real_render(widget, painter)
    monkeypatch.setattr(export, "_render", spy)
    export.export_widget(t, tmp_path / "top.png")
    assert seen and seen[0][0] <= seen[0][1]          # every column inside the figure
    assert [table.columnWidth(c) for c in range(table.columnCount())] == wide   # restored


def test_state_tag_title_fits_a_narrow_view_with_its_scores(qtbot):
    """Issue 24 item 4: the title with M-1, 1-1 and V-measure was one line, cut at both ends in a
    376 px wide view and in its figures; the scores now have a line of their own, each line fits."""
    from PySide6 import QtGui
    pred = [np.array([0, 0, 1, 2, 1])]
    gold = [np.array([0, 1, 1, 2, 2])]
    scores = tagging_scores(pred, gold, n_states=3, n_tags=3)
    w = shown(qtbot, StateTagView(), size=(376, 480))
    w.set_scores(scores, ["NN", "VB", "DT"])
    label = w.heatmap.plot.titleLabel
    settled(qtbot, lambda: (label.geometry(), w.heatmap.graphics.width()))
    lines = label.item.toPlainText().split("\n")
    assert lines[0] == "States x gold tags: P(tag | state)" and lines[1].startswith("M-1 0.")
    assert "V-measure" in lines[1]
    metrics = QtGui.QFontMetricsF(label.item.font())
    width = w.heatmap.graphics.width()
    assert all(metrics.horizontalAdvance(t) < width for t in lines)
    # the title row holds both lines (pyqtgraph's row is one line high)
    assert label.geometry().height() >= 2 * metrics.lineSpacing()


def test_a_model_scored_before_it_is_shown_draws_its_mapped_tags_at_once(qtbot, monkeypatch):
    """Issue 24.7: a words job that finished while another was shown is scored then
    (``prepare_tagging``, off the GUI thread); showing it afterwards draws the mapped tags in the same
    call -- no "state i" rows while the scores are computed -- and starts no second scoring."""
    import app.views.tag_scoring as dash
    rng = np.random.default_rng(5)
    n, m, k = 3, 6, 4
    model = model_of(rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), n), rng.dirichlet(np.ones(m), n))
    seqs = [rng.integers(0, m, size=12) for _ in range(5)]
    tags = [rng.integers(0, k, size=12) for _ in range(5)]
    names = ["DET", "NOUN", "VERB", "ADJ"]
    corpus = SimpleNamespace(sequences=seqs, vocabulary=[f"w{i}" for i in range(m)], tags=tags, tag_vocabulary=names)
    runs = []
    real = dash.score_tags

    def counted(*a):
        runs.append(1)
        real(*a)
    monkeypatch.setattr(dash, "score_tags", counted)
    d = shown(qtbot, Dashboard(), (1200, 800))
    d.prepare_tagging(model, corpus)
    d.prepare_tagging(model, corpus)          # already running: not started again
    qtbot.waitUntil(lambda: not d.tag_scorer.inflight, timeout=10000)
    assert len(runs) == 1
    d.set_model(model, corpus)                # not staged: everything drawn in this call
    want = tagging_scores(model.predict(seqs), tags, n_states=n, n_tags=k)
    np.testing.assert_array_equal(d.state_tags.counts(), want["contingency"])
    assert d.state_tags.row_labels() == [f"{i} → {names[t]}" for i, t in enumerate(want["mapping"])]
    assert not d.live_tagging_busy() and len(runs) == 1
    # a model shown while its scores are still being computed waits for that run (no second one)
    other = model_of(rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), n), rng.dirichlet(np.ones(m), n))
    d.clear()
    d.prepare_tagging(other, corpus)
    d.set_model(other, corpus)
    qtbot.waitUntil(lambda: not d.live_tagging_busy(), timeout=10000)
    assert len(runs) == 2
    want = tagging_scores(other.predict(seqs), tags, n_states=n, n_tags=k)
    np.testing.assert_array_equal(d.state_tags.counts(), want["contingency"])


def test_equal_scores_leave_each_point_visible(qtbot):
    """Defect (a co-occurrence model on tags: M-1 = 1-1 = 0.487): the 1-1 point hid the M-1 point, and the
    plot showed two of its three scores.  M-1 is drawn largest and first: a ring of its colour stays
    around 1-1's marker on the same value."""
    from PySide6 import QtCore, QtGui
    w = shown(qtbot, TaggingCurves(), (360, 300))
    w.add_point(10, {"m1": 0.487, "one_to_one": 0.487, "v_measure": 0.2})
    vb = w.plot.vb
    settled(qtbot, lambda: (vb.viewRange(), vb.sceneBoundingRect()))
    img = w.graphics.grab().toImage()
    centre = w.graphics.mapFromScene(vb.mapViewToScene(QtCore.QPointF(10, 0.487)))

    def colours_near(radius):
        out = set()
        for dx in range(-radius, radius + 1):
            for dy in range(-radius, radius + 1):
                x, y = centre.x() + dx, centre.y() + dy
                if 0 <= x < img.width() and 0 <= y < img.height():
                    out.add(QtGui.QColor(img.pixel(x, y)).name())
        return out

    near = colours_near(6)
    assert "#1f77b4" in near and "#ff7f0e" in near, near    # M-1's blue and 1-1's orange both show


def test_decode_tag_table_keeps_room_for_a_scroll_bar_only_when_it_scrolls(qtbot):
    """Defect: a short sentence's table had an empty band beneath its rows (room always kept for a
    horizontal scroll bar).  The band is there only while the words do not fit; it follows the width."""
    pi, A, B = [1.0, 0.0], [[0.1, 0.9], [0.9, 0.1]], [[0.8, 0.1, 0.1], [0.1, 0.45, 0.45]]
    words = ["the", "dog", "cat"]
    short, long = np.array([0, 1, 0, 2]), np.tile([0, 1, 0, 2], 15)
    data = SimpleNamespace(sequences=[short, long], vocabulary=words,
                           tags=[np.array([0, 1, 0, 0]), np.tile([0, 1, 0, 0], 15)], tag_vocabulary=["DET", "NOUN"])
    w = shown(qtbot, DecodeView(), (900, 600))
    w.set_model(model_of(pi, A, B), data)
    w.set_state_tags([0, 1])
    t = w.tag_table
    rows = sum(t.rowHeight(r) for r in range(3)) + 2 * t.frameWidth() + 2
    bar = t.horizontalScrollBar().sizeHint().height()
    qtbot.waitUntil(lambda: t.height() == rows, timeout=2000)          # four words fit: no band
    assert not t.horizontalScrollBar().isVisible()
    w.select_sequence(1)                                               # sixty words: they scroll
    qtbot.waitUntil(lambda: t.height() == rows + bar, timeout=2000)
    qtbot.waitUntil(lambda: t.horizontalScrollBar().isVisible(), timeout=2000)
    w.resize(4000, 600)                                                # wide enough again
    qtbot.waitUntil(lambda: t.height() == rows, timeout=2000)


def test_uniform_scatter_draws_what_pyqtgraphs_scatter_draws(qtbot):
    """The faint symbols' item looks its one style up once instead of once per point (40 ms of the GUI
    thread per snapshot at 30,499 words): the atlas places, the drawn pixels and the hover tooltips
    are pyqtgraph's own, through new data, a hovered point and a style change."""
    import pyqtgraph as pg
    from PySide6 import QtCore, QtGui
    from app.views.embeddings import UniformScatter
    rng = np.random.default_rng(2)
    kw = dict(symbol="d", size=4, pen=pg.mkPen(None), brush=pg.mkBrush(120, 80, 200, 55), hoverable=True,
              tip=lambda x, y, data: f"w{int(data)}")
    views = []
    for cls in (pg.ScatterPlotItem, UniformScatter):
        pw = pg.PlotWidget()
        pw.resize(300, 240)
        qtbot.addWidget(pw)
        item = cls(**kw)
        pw.addItem(item)
        views.append((pw, item))
    for step in range(3):
        xy = rng.normal(size=(400 + 200 * step, 2))
        for pw, item in views:
            item.setData(x=xy[:, 0], y=xy[:, 1], data=np.arange(len(xy)))
            pw.setXRange(-3, 3, padding=0)
            pw.setYRange(-3, 3, padding=0)
        (pa, a), (pb, b) = views
        assert a.data["sourceRect"].tolist() == b.data["sourceRect"].tolist()
        assert pa.grab().toImage() == pb.grab().toImage()
    # a hovered point (the first): the same tooltip on the view box, and the same picture after
    x0, y0 = b.getData()[0][0], b.getData()[1][0]
    for pw, item in views:
        item.hoverEvent(Hover(QtCore.QPointF(x0, y0)))
    tips = [item.getViewBox().toolTip() for _pw, item in views]
    assert tips[0] == tips[1] and "w0" in tips[1].split("\n\n"), tips
    assert pa.grab().toImage() == pb.grab().toImage()
    for pw, item in views:     # a new brush: every point's place in the atlas is looked up again
        item.setBrush(pg.mkBrush(20, 160, 60, 90))
    assert a.data["sourceRect"].tolist() == b.data["sourceRect"].tolist()
    assert pa.grab().toImage() == pb.grab().toImage()
    assert QtGui.QColor(pb.grab().toImage().pixel(150, 120)).isValid()


def test_dashboard_symbol_counts_are_the_corpus_counts(qtbot):
    """The faint words' counts: a Corpus's own (counted once, by the thread that read it: counting
    Brown's 1.2 M tokens again took 29 ms of the GUI thread when a job started), else counted from
    the sequences; both equal a hand count."""
    from densehmm_core.data import Corpus
    d = Dashboard()
    qtbot.addWidget(d)
    corpus = Corpus.from_tokens([["a", "b", "a"], ["c", "a"], ["b"]], vocabulary=["a", "b", "c", "d"])
    model = SimpleNamespace(n_symbols=4)
    counts = d._symbol_counts(model, corpus)
    np.testing.assert_array_equal(counts, [3, 2, 1, 0])
    assert counts is corpus.symbol_counts
    assert d._symbol_counts(model, corpus) is counts            # asked again (Overview): not counted again
    # a corpus over fewer symbols than the model's (its counts are not the model's): counted
    smaller = Corpus.from_tokens([["a", "b", "a"], ["c", "a"]], vocabulary=["a", "b", "c"])
    fresh = Dashboard()
    qtbot.addWidget(fresh)
    np.testing.assert_array_equal(fresh._symbol_counts(model, smaller), [3, 1, 1, 0])
    assert fresh._symbol_counts(SimpleNamespace(n_symbols=None), smaller) is None


def test_uniform_scatter_moves_the_same_points_in_place(qtbot):
    """A live snapshot of the same vocabulary moves the faint points without building pyqtgraph's record
    array again; the picture, the data and the view's range are those of a fresh setData (the oracle),
    and other points (another subset) are set afresh."""
    import pyqtgraph as pg
    from app.views.embeddings import UniformScatter
    rng = np.random.default_rng(3)
    kw = dict(symbol="d", size=4, pen=pg.mkPen(None), brush=pg.mkBrush(120, 80, 200, 55))
    pa, pb = pg.PlotWidget(), pg.PlotWidget()
    for pw in (pa, pb):
        pw.resize(300, 240)
        qtbot.addWidget(pw)
    a, b = pg.ScatterPlotItem(**kw), UniformScatter(**kw)
    pa.addItem(a)
    pb.addItem(b)
    ids = np.sort(rng.choice(900, size=500, replace=False))
    records = None
    for step in range(3):
        xy = rng.normal(size=(500, 2)) * (1 + step)       # the points spread: the range must follow
        a.setData(x=xy[:, 0], y=xy[:, 1], data=ids)
        b.set_points(xy[:, 0], xy[:, 1], ids)
        if records is None:
            records = b.data
        assert b.data is records                           # moved in place, not built again
        for pw in (pa, pb):
            pw.autoRange(padding=0)
        np.testing.assert_array_equal(b.getData()[0], xy[:, 0])
        np.testing.assert_array_equal([int(d) for d in b.data["data"]], ids)
        assert b.dataBounds(0) == a.dataBounds(0) and b.dataBounds(1) == a.dataBounds(1)
        assert pa.grab().toImage() == pb.grab().toImage()
    other = np.arange(300)
    xy = rng.normal(size=(300, 2))
    b.set_points(xy[:, 0], xy[:, 1], other)
    assert b.data is not records and [int(d) for d in b.data["data"]] == list(range(300))
    b.setData([], [])
    b.set_points(xy[:, 0], xy[:, 1], other)                # cleared in between: set afresh
    assert len(b.data) == 300


def test_uniform_scatter_makes_new_points_as_pyqtgraph_does(qtbot):
    """New points (a fresh scatter, another subset) are copies of the one record pyqtgraph builds
    (its ``setData`` of 30,499 points spent 11 ms in numpy's ``empty``): every field of every record,
    the picture and a hovered point's tooltip are those of pyqtgraph's own ``setData`` (the oracle)."""
    import pyqtgraph as pg
    from PySide6 import QtCore
    from app.views.embeddings import UniformScatter
    rng = np.random.default_rng(8)
    kw = dict(symbol="o", size=5, pen=pg.mkPen(None), brush=pg.mkBrush(30, 90, 200, 70), hoverable=True,
              tip=lambda x, y, data: f"w{int(data)}")
    pa, pb = pg.PlotWidget(), pg.PlotWidget()
    for pw in (pa, pb):
        pw.resize(300, 240)
        qtbot.addWidget(pw)
    for n in (2, 3, 700, 1500):
        a, b = pg.ScatterPlotItem(**kw), UniformScatter(**kw)
        pa.clear()
        pb.clear()
        pa.addItem(a)
        pb.addItem(b)
        ids = np.sort(rng.choice(5 * n, size=n, replace=False))
        xy = rng.normal(size=(n, 2))
        a.setData(x=xy[:, 0], y=xy[:, 1], data=ids)
        b.set_points(xy[:, 0], xy[:, 1], ids)
        assert len(b.data) == n
        for field in a.data.dtype.names:
            assert a.data[field].tolist() == b.data[field].tolist(), (n, field)
        assert b.dataBounds(0) == a.dataBounds(0) and b.dataBounds(1) == a.dataBounds(1)
        for pw in (pa, pb):
            pw.setXRange(-3, 3, padding=0)
            pw.setYRange(-3, 3, padding=0)
        assert pa.grab().toImage() == pb.grab().toImage()

    for item in (a, b):
        item.hoverEvent(Hover(QtCore.QPointF(xy[7, 0], xy[7, 1])))
    assert a.getViewBox().toolTip() == b.getViewBox().toolTip()
    assert f"w{ids[7]}" in b.getViewBox().toolTip()


def test_decode_offers_sequence_ids_once_the_find_box_is_used(qtbot):
    """The ids go to the find box's completer when the box gets the focus, not each time a job is
    shown (57,340 ids: 5 ms of the GUI thread); then it completes on them, and new data's ids replace
    them at the next focus.  Finding by id works without the completer."""
    from PySide6 import QtCore, QtGui, QtWidgets
    model = model_of([0.5, 0.5], [[0.1, 0.9], [0.9, 0.1]], [[0.8, 0.1, 0.1], [0.1, 0.45, 0.45]])
    rng = np.random.default_rng(6)
    seqs = [rng.integers(0, 3, size=5) for _ in range(30)]
    data = SimpleNamespace(sequences=seqs, names=[f"rec{i:02d}" for i in range(30)])
    w = shown(qtbot, DecodeView(), (900, 600))
    w.set_model(model, data)
    completer = w.find_edit.completer()
    assert completer.model().rowCount() == 0
    assert w.find_sequence("rec17") == 17                       # found without the completer

    def focus():
        QtWidgets.QApplication.sendEvent(w.find_edit, QtGui.QFocusEvent(QtCore.QEvent.Type.FocusIn))
    focus()
    assert completer.model().rowCount() == 30
    completer.setCompletionPrefix("c1")
    assert completer.completionCount() == 10                    # rec10 .. rec19 contain "c1"
    w.set_model(model, SimpleNamespace(sequences=seqs[:3], names=["x", "y", "z"]))
    assert completer.model().rowCount() == 0
    focus()
    assert completer.model().stringList() == ["x", "y", "z"]


def brute_cap(natural, room):
    """The largest common width ``cap`` with sum(min(w, cap)) <= room, by counting up."""
    cap = 0
    while sum(min(w, cap + 1) for w in natural) <= room:
        cap += 1
    return cap


def test_fit_widths_against_hand_tables_and_brute_force():
    from app.views.topwords import fit_widths
    # by hand: natural 30 80 100 50 = 260 > 200: 30 and 50 keep theirs, 120 left for two -> 60 each
    assert fit_widths([30, 80, 100, 50], 200, 20) == [30, 60, 60, 50]
    assert fit_widths([30, 80, 100, 50], 201, 20) == [30, 61, 60, 50]     # the spare pixel: first cut column
    assert fit_widths([30, 80, 100, 50], 260, 20) == [30, 80, 100, 50]    # fits: natural
    assert fit_widths([30, 80, 100, 50], 79, 20) == [30, 80, 100, 50]     # under 20 each: whole words, scroll
    assert fit_widths([30, 80, 100, 50], 80, 20) == [20, 20, 20, 20]      # exactly the least
    rng = np.random.default_rng(5)
    for _ in range(300):
        natural = [int(w) for w in rng.integers(5, 200, size=int(rng.integers(1, 12)))]
        room, least = int(rng.integers(1, 1500)), int(rng.integers(1, 60))
        got = fit_widths(natural, room, least)
        if sum(natural) <= room or sum(min(w, least) for w in natural) > room:
            assert got == natural
            continue
        cap = brute_cap(natural, room)
        assert cap >= least
        assert sum(got) == room and all(g <= w for g, w in zip(got, natural))
        assert [min(g, cap) for g in got] == [min(w, cap) for w in natural]      # one common width
        assert all(g - cap in (0, 1) for g, w in zip(got, natural) if w > cap)


def test_top_words_columns_fit_the_table_and_grow_back(qtbot):
    """At the app's default window a words dashboard showed 7 of its 10 columns (it scrolled): the
    columns now share the table's width, long words elided, short columns whole; a wider table gives
    every column its words' width again, and a table too narrow for three letters a word scrolls."""
    n, m = 6, 60
    rng = np.random.default_rng(2)
    vocab = [("of", "in", "it")[k % 3] if k % 4 else f"internationalisation{k}" for k in range(m)]
    B = rng.dirichlet(np.ones(m), size=n)
    wide = shown(qtbot, TopWordsTable(), (2600, 300))
    wide.set_emissions(B, vocab)
    natural = wide.column_widths()
    t = shown(qtbot, TopWordsTable(), (900, 300))
    t.set_emissions(B, vocab)
    table = t.table
    from app.views.topwords import fit_widths
    room = table.viewport().width()
    widths = t.column_widths()
    assert sum(natural) > room >= sum(widths)                           # would scroll; fits now
    assert widths == fit_widths(natural, room, t.least_width())         # (fit_widths: brute force above)
    assert any(w == nat for w, nat in zip(widths, natural)) and max(widths) < max(natural)  # some whole, some cut
    qtbot.waitUntil(lambda: table.horizontalScrollBar().maximum() == 0, timeout=2000)
    i, j = next((i, j) for i in range(n) for j in range(10) if table.item(i, j).text().startswith("international"))
    word = table.item(i, j).text()
    assert table.fontMetrics().horizontalAdvance(word) > table.columnWidth(j)   # shown cut ("…")
    assert word in table.item(i, j).toolTip()                            # the whole word on hover
    cut = max(range(10), key=lambda c: natural[c] - widths[c])
    table.horizontalHeader().resizeSection(cut, natural[cut] + 40)    # the user drags a cut column wider
    qtbot.waitUntil(lambda: table.horizontalScrollBar().maximum() > 0, timeout=2000)
    qtbot.wait(50)
    assert t.column_widths()[cut] == natural[cut] + 40                 # kept (until the next snapshot)
    t.resize(2600, 300)
    qtbot.waitUntil(lambda: t.column_widths() == natural, timeout=2000)  # room again: whole words
    t.resize(260, 300)
    qtbot.waitUntil(lambda: t.column_widths() == natural, timeout=2000)  # below three letters: scrolls
    assert table.horizontalScrollBar().maximum() > 0

"""What a newcomer trips over (issue 24): File > Open shows every file and reports each one it cannot
read, a CoNLL-U file cut short, the data panel (Observe first, the wheel, chart reset, frequencies by
count).  pytest-qt, offscreen; jobs in threads (conftest's make_window)."""
import pathlib

import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox  # noqa: E402
from qtshow import settled, shown  # noqa: E402 - this folder

FIX = pathlib.Path(__file__).resolve().parent / "fixtures" / "data"
WORDS = FIX / "words.conllu"


def _wait_loaded(qtbot, w):
    qtbot.waitUntil(lambda: not w.data_ctl.loading, timeout=30000)


# ----------------------------------------------------------------------------- 24.8 files dropped without a word
def test_open_lists_all_files_and_reports_each_one_it_cannot_read(make_window, qtbot, tmp_path, monkeypatch):
    w = make_window()
    rnd = tmp_path / "random.bin"
    rnd.write_bytes(np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes())
    prog = tmp_path / "a.out"
    prog.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(200))
    good = tmp_path / "good.fasta"
    good.write_text(">a\nACDE\n")
    seen = {}

    def fake(parent, caption, folder, filters, selected="", *a, **k):
        seen.update(filters=filters.split(";;"), selected=selected)
        return [str(rnd), str(prog), str(good)], selected
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", fake)
    w.data_ctl.open_dialog()
    _wait_loaded(qtbot, w)
    assert seen["filters"][0] == "All files (*)" and seen["selected"] == "All files (*)"
    assert any(f.startswith("All supported files") for f in seen["filters"])
    assert [d.name for d in w.datasets] == ["good.fasta"]
    assert len(w.errors) == 1
    title, text = w.errors[0]
    assert title == "Cannot open files" and "2 files could not be opened" in text
    assert "• random.bin: line 1: binary file" in text and "• a.out: line 1: binary file" in text


def _cut_conllu(tmp_path):
    """words.conllu cut in the middle of a token line of its third sentence (the file ends there)."""
    lines = WORDS.read_text().split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith("5\trockets"))
    path = tmp_path / "cut.conllu"
    path.write_text("\n".join(lines[:i] + ["5\trock"]))
    return path, i + 1


@pytest.mark.parametrize("answer", [QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No])
def test_a_conllu_file_cut_short_offers_its_complete_sentences(make_window, qtbot, tmp_path, monkeypatch, answer):
    w = make_window()
    path, line = _cut_conllu(tmp_path)
    asked = []
    monkeypatch.setattr(QMessageBox, "question", staticmethod(
        lambda parent, title, text, *a, **k: asked.append((title, text)) or answer))
    w.open_files([str(path)])
    _wait_loaded(qtbot, w)
    qtbot.waitUntil(lambda: not w.data_ctl.loading and bool(w.datasets or w.errors), timeout=30000)
    assert len(asked) == 1 and f"cut.conllu, line {line}: wrong column count" in asked[0][1]
    if answer == QMessageBox.StandardButton.No:
        assert not w.datasets and len(w.errors) == 1 and "wrong column count" in w.errors[0][1]
        return
    assert not w.errors and len(w.datasets) == 1
    ds = w.datasets[0]
    assert ds.corpus.n_sequences == 2 and ds.options["read"] == {"on_bad_sentence": "skip"}   # s1, s2
    warn = f"1 incomplete or broken sentence skipped (first at line {line}: wrong column count"
    assert any(x.startswith(warn) for x in ds.warnings)
    assert warn in w.data_panel.fields["Warnings"].text()
    # re-reading as words (Observe group) keeps the broken sentence out
    p = w.data_panel
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.reread_button.click()
    qtbot.waitUntil(lambda: w.datasets[0] is not ds and not w.data_ctl.loading, timeout=30000)
    assert w.datasets[0].observes_words and w.datasets[0].corpus.n_sequences == 2 and not w.errors


# ----------------------------------------------------------------------------- 24.6 data panel
def _wheel(widget, dy=-120, modifiers=Qt.KeyboardModifier.NoModifier):
    pos = QPointF(widget.width() / 2, widget.height() / 2)
    ev = QWheelEvent(pos, widget.mapToGlobal(pos), QPoint(0, 0), QPoint(0, dy), Qt.MouseButton.NoButton,
                     modifiers, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, ev)


def test_data_panel_observe_first_wheel_scrolls_ctrl_wheel_zooms_reset(make_window, qtbot):
    w = make_window()
    w.resize(1400, 700)
    w.open_files([str(WORDS)])
    _wait_loaded(qtbot, w)
    p = w.data_panel
    qtbot.waitUntil(lambda: p.freq_plot.isVisible(), timeout=10000)
    # Observe comes before the statistics and both charts
    y = {name: wid.mapTo(p, QPoint(0, 0)).y() for name, wid in
         (("observe", p.observe_box), ("stats", p.fields["Tokens"]), ("freq", p.freq_plot), ("len", p.len_plot))}
    assert y["observe"] < y["stats"] < y["freq"] < y["len"]
    # frequencies by count, most frequent first (UPOS of words.conllu, counted by hand)
    counts = np.asarray(p.freq_bars.opts["height"])
    assert list(counts) == sorted(counts, reverse=True)
    labels = p.freq_plot.getAxis("bottom").labels
    # ties in vocabulary order
    assert labels[:4] == ["NOUN", "PUNCT", "DET", "VERB"] and list(counts[:4]) == [5, 5, 4, 4]
    # the wheel over a chart scrolls the panel, not the chart
    area = w.data_dock.widget()
    bar = area.verticalScrollBar()
    w.data_dock.setFixedHeight(320)
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=5000)
    area.ensureWidgetVisible(p.freq_plot)
    bar.setValue(0)
    before = p.freq_plot.getViewBox().viewRange()[0]
    _wheel(p.freq_plot.viewport())
    assert bar.value() > 0 and p.freq_plot.getViewBox().viewRange()[0] == before
    # Ctrl + wheel zooms; Reset shows the whole chart again
    _wheel(p.freq_plot.viewport(), 240, Qt.KeyboardModifier.ControlModifier)
    zoomed = p.freq_plot.getViewBox().viewRange()[0]
    assert zoomed[1] - zoomed[0] < before[1] - before[0] - 1e-6
    p.freq_plot.reset_button.click()
    assert p.freq_plot.getViewBox().viewRange()[0] == pytest.approx(list(p.freq_plot.full_range))


# ----------------------------------------------------------------------------- 24.5 help, 24.12 tab shortcuts
def _activate(qtbot, w):
    """The window active (shortcuts reach it, as for a user's key press)."""
    w.activateWindow()
    w.raise_()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is w, timeout=5000)

def test_help_has_every_section_and_f1_opens_it_at_the_part_in_use(make_window, qtbot):
    from app.panels.help import TOPICS, HelpDialog
    from app.resources import resource_path
    html = resource_path("help/help.html").read_text(encoding="utf-8")
    for topic in TOPICS:
        assert f'<a name="{topic}"></a>' in html and f'href="#{topic}"' in html
    for term in ("A<sub>ij</sub> = exp(z<sub>i</sub>·u<sub>j</sub>)", "MAD", "M-1 (many-to-one)", "1-1 (one-to-one)",
                 "V-measure", "NLL per token", "Paper's NLL", "Ctrl+Tab", "Alt+1",
                 "Train &gt; Run sweep (Ctrl+Shift+T)", "Hover a position", "Ctrl+C", "Copy table"):
        assert term in html
    # the Jobs panel's Stop column: every reason a fit ends with is explained (a diverged job says why
    # in its Result cell)
    from densehmm_core.events import STOP_REASONS
    for reason in set(STOP_REASONS) - {"diverged"}:
        assert f"<i>{reason}</i>" in html, reason
    # the default start the help names is the core's (issue 22: defaults shown where users look)
    from densehmm_core.dense import DenseHMM
    from densehmm_core.hyperparams import resolved_defaults
    from densehmm_core.standard import StandardHMM
    assert "the default start of every model" in " ".join(html.split())
    assert {resolved_defaults(DenseHMM, fit_method=m)["init_method"] for m in ("em", "cooc", "marginal")} \
        == {resolved_defaults(StandardHMM)["init_method"]} == {"spectral"}
    w = make_window()
    _activate(qtbot, w)
    w.stack.setCurrentWidget(w.start_view)
    qtbot.keyClick(w, Qt.Key.Key_F1)
    dlg = w.findChild(HelpDialog)
    assert dlg is not None and dlg.isVisible() and dlg.topic == "start"
    assert "What a DenseHMM is" in dlg.browser.toPlainText()
    # on the dashboard's Decode tab
    w.stack.setCurrentWidget(w.dashboard)
    w.dashboard.tabs.setCurrentWidget(w.dashboard.decode)
    w.menus.act_help.trigger()
    assert w.findChildren(HelpDialog) == [dlg] and dlg.topic == "decode"
    top = dlg.browser.verticalScrollBar().value()
    # focus in the Model panel
    w.model_form.setFocus()
    w.model_form.focusNextChild()
    w.menus.act_help.trigger()
    assert dlg.topic == "model" and dlg.browser.verticalScrollBar().value() < top    # Model comes before Decode


def test_help_fits_a_netbook_screen(make_window, qtbot, monkeypatch):
    """On a 1024 x 600 screen (free 1024 x 560) the 760 x 640 help window reached below the screen;
    it now opens at most 90% of the free area (its text scrolls), and at full size on a larger one."""
    from PySide6.QtCore import QRect

    from app.mainwindow import MainWindow
    from app.panels.help import HELP_SIZE, show_help
    for (aw, ah), want in (((1024, 560), (760, 504)), ((1920, 1040), HELP_SIZE)):
        monkeypatch.setattr(MainWindow, "available_geometry", lambda self, aw=aw, ah=ah: QRect(0, 0, aw, ah))
        w = make_window(f"help{aw}")
        dlg = show_help(w, "metrics")
        assert (dlg.width(), dlg.height()) == want
        dlg.close()


def test_ctrl_tab_and_alt_digits_switch_the_centre_tabs(make_window, qtbot):
    w = make_window()
    _activate(qtbot, w)
    tabs = w.dashboard.tabs
    w.stack.setCurrentWidget(w.start_view)
    qtbot.keyClick(w, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)   # from the start page: the dashboard
    assert w.stack.currentWidget() is w.dashboard and tabs.currentIndex() == 0
    qtbot.keyClick(w, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert tabs.tabText(tabs.currentIndex()) == "Decode"
    qtbot.keyClick(w, Qt.Key.Key_4, Qt.KeyboardModifier.AltModifier)
    assert tabs.tabText(tabs.currentIndex()) == "Compare"
    qtbot.keyClick(w, Qt.Key.Key_5, Qt.KeyboardModifier.AltModifier)
    qtbot.keyClick(w, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)    # Tags is hidden: wraps to Dashboard
    assert tabs.currentIndex() == 0
    qtbot.keyClick(w, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert tabs.tabText(tabs.currentIndex()) == "Sweep"
    qtbot.keyClick(w, Qt.Key.Key_6, Qt.KeyboardModifier.AltModifier)           # hidden: stays, says so
    assert tabs.tabText(tabs.currentIndex()) == "Sweep" and "No Tags tab" in w.statusBar().currentMessage()


# ----------------------------------------------------------------------------- 24.7 word views
def test_live_pca_keeps_its_sign_where_the_largest_entry_rule_would_flip():
    """Two frames whose first principal axis is (1, -1, 0)/sqrt(2) tilted a little either way: the
    largest-entry rule alone turns the second frame round; with the first frame as reference it
    points the same way (oracle: the axes' dot product and the coordinates of a fixed point)."""
    from app.views.projection import pca_2d
    t = np.linspace(-1, 1, 21)
    base = np.column_stack([t, -t, 0.05 * np.sin(7 * t)])

    def frame(eps):
        X = base.copy()
        X[:, 0] *= 1 + eps
        return X
    y1, c1, _ = pca_2d(frame(+0.01))
    y2_plain, c2_plain, _ = pca_2d(frame(-0.01))
    assert float(c1[0] @ c2_plain[0]) < 0                        # the flip the issue saw
    y2, c2, _ = pca_2d(frame(-0.01), reference=c1)
    assert float(c1[0] @ c2[0]) > 0.99 and float(c1[1] @ c2[1]) > 0
    np.testing.assert_allclose(y2[:, 0], -y2_plain[:, 0])
    assert np.sign(y2[-1, 0]) == np.sign(y1[-1, 0])
    assert pca_2d(frame(-0.01), reference=np.ones((2, 5)))[1].tolist() == c2_plain.tolist()   # another l: no reference


def test_embedding_view_keeps_the_pca_sign_between_frames(qtbot):
    from app.views import EmbeddingScatter
    w = shown(qtbot, EmbeddingScatter(), (500, 400))
    t = np.linspace(-1, 1, 12)

    def params(eps):
        V = np.column_stack([t * (1 + eps), -t, 0.05 * np.sin(7 * t)])
        return {"V": V, "U": V[:3] * 0.5, "Z": V[3:6] * 0.5, "W": V[6:9] * 0.5, "z_start": V[0] * 0.1}
    w.set_embeddings(params(0.01))
    first = w.coordinates("V")
    w.set_embeddings(params(-0.01))
    assert np.abs(w.coordinates("V") - first).max() < 0.05     # a tilt, not a mirror image


def test_scatter_labels_never_overlap_and_more_are_shown_than_on_one_side(qtbot, monkeypatch):
    """50 frequent words of a crowded scatter: the labels shown never overlap (every pair checked
    on screen), and trying four sides shows more of them than the right side alone."""
    from app.views import EmbeddingScatter
    from app.views import embeddings as emb_mod
    rng = np.random.default_rng(5)
    m = 400
    V = rng.normal(size=(m, 2)) * np.r_[1.0, 0.6]
    counts = rng.zipf(1.6, size=m).astype(float)
    vocab = [f"word{i:03d}" for i in range(m)]

    def shown_labels():
        w = shown(qtbot, EmbeddingScatter(), (640, 480))
        w.set_vocabulary(vocab)
        w.set_symbol_frequencies(counts)
        w.set_embeddings({"V": V})
        qtbot.wait(50)
        w._declutter()
        return w
    w = shown_labels()
    boxes = w.label_boxes("V")
    assert len(w.labelled_symbols()) == 50 and len(boxes) == len(w.visible_labels("V"))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5), (a, b)
    monkeypatch.setattr(emb_mod, "LABEL_ANCHORS", emb_mod.LABEL_ANCHORS[:1])
    one_side = len(shown_labels().visible_labels("V"))
    assert len(boxes) > one_side


def test_scatter_labels_stay_inside_the_plot(qtbot):
    """A label beside a point at the plot's edge reached past the frame (cut in a figure: "nillion" in
    the words dashboard's SVG); it now takes a side where it fits inside the plot's area, or is hidden."""
    from app.views import EmbeddingScatter
    rng = np.random.default_rng(8)
    m = 120
    V = rng.normal(size=(m, 2)) * 0.3
    # the outermost points; the left one above the cluster's height (its label, on the inner side,
    # would otherwise reach over the cluster's markers, which labels keep off)
    V[0], V[1], V[2], V[3] = (4.0, 0.0), (-4.0, 2.0), (0.1, 3.0), (0.0, -3.0)
    counts = np.r_[[1000.0, 999.0, 998.0, 997.0], rng.integers(1, 50, size=m - 4)]
    vocab = [f"internationalisation{i}" for i in range(m)]
    w = shown(qtbot, EmbeddingScatter(), (520, 440))
    w.set_vocabulary(vocab)
    w.set_symbol_frequencies(counts)
    w.set_embeddings({"V": V})
    qtbot.wait(50)
    w._declutter()
    area = w.plot.vb.sceneBoundingRect()
    boxes = w.label_boxes("V")
    placed = w.visible_labels("V")
    assert "internationalisation0" in placed and "internationalisation1" in placed   # placed on their inner side
    for text, (x0, y0, x1, y1) in zip(placed, boxes):
        assert area.left() - 0.5 <= x0 and x1 <= area.right() + 0.5, (text, x0, x1, area)
        assert area.top() - 0.5 <= y0 and y1 <= area.bottom() + 0.5, (text, y0, y1, area)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5)


def test_a_words_model_is_drawn_faint_at_once_and_its_state_names_are_kept(qtbot):
    """Selecting a words job: the symbol counts reach the scatter before its embeddings (no frame
    with every word full-size); selecting the model again names the states at once (cached scores)."""
    from types import SimpleNamespace

    from densehmm_core.dense import DenseHMM
    from app.views import Dashboard
    rng = np.random.default_rng(6)
    n, m, k, l = 3, 300, 4, 3
    model = DenseHMM(n, dim=l, seed=0)
    model.n_symbols = m
    model.set_embeddings({"U": rng.normal(size=(n, l)), "Z": rng.normal(size=(n, l)), "W": rng.normal(size=(n, l)),
                          "V": rng.normal(size=(m, l)), "z_start": rng.normal(size=l)})
    seqs = [rng.integers(0, m, size=15) for _ in range(20)]
    tags = [rng.integers(0, k, size=15) for _ in range(20)]
    corpus = SimpleNamespace(sequences=seqs, vocabulary=[f"w{i}" for i in range(m)], tags=tags,
                             tag_vocabulary=["DET", "NOUN", "VERB", "ADJ"])
    d = shown(qtbot, Dashboard(), (1200, 800))
    seen = []
    orig = d.embeddings.set_embeddings

    def spy(params, *a, **kw):
        seen.append(d.embeddings._freq is not None)
        return orig(params, *a, **kw)
    d.embeddings.set_embeddings = spy
    d.set_model(model, corpus, staged=True)
    qtbot.waitUntil(lambda: not d.live_update_pending and not d.live_tagging_busy(), timeout=20000)
    assert seen and all(seen)
    names = d.heatmaps._row_names
    assert names is not None and all("→" in s for s in names)
    d.clear()
    assert d.heatmaps._row_names is None
    d.set_model(model, SimpleNamespace(**vars(corpus)), staged=False)   # the same data read again
    assert d.heatmaps._row_names == names and not d.live_tagging_busy()


# ----------------------------------------------------------------------------- 24.9 dark theme
def test_view_theme_dark_colours_the_widgets_and_the_plots(make_window, qtbot):
    import pyqtgraph as pg
    from PySide6.QtGui import QPalette
    w = make_window()
    w.data_ctl.load_demo()
    qtbot.waitUntil(lambda: w.data_panel.freq_plot.isVisible(), timeout=10000)
    d = w.dashboard
    views = [v for v in d.findChildren(pg.GraphicsView) if v.backgroundBrush().style() != Qt.BrushStyle.NoBrush]
    assert views

    def lightness(c):
        return c.lightness()
    try:
        w.menus.theme_actions["dark"].trigger()
        pal = QApplication.palette()
        assert lightness(pal.color(QPalette.ColorRole.Window)) < 80
        assert lightness(pal.color(QPalette.ColorRole.Text)) > 180
        assert w.settings.theme == "dark" and w.menus.theme_actions["dark"].isChecked()
        for v in views:                                          # every plot background is dark
            assert lightness(v.backgroundBrush().color()) < 80
        axes = [it for v in views for it in v.scene().items() if isinstance(it, pg.AxisItem)]
        assert axes and all(lightness(a.textPen().color()) > 180 for a in axes)   # light tick labels
        titled = [it for v in views for it in v.scene().items()
                  if isinstance(it, pg.PlotItem) and getattr(it, "_styled_title", None)]
        assert titled and all(it._styled_fg == pal.color(QPalette.ColorRole.Text).name() for it in titled)
        notes = [it for v in d.curves.findChildren(pg.GraphicsView) for it in v.scene().items()
                 if isinstance(it, pg.TextItem)]          # the notes inside the curves ("No loss ... yet")
        assert notes and all(lightness(it.color) > 180 for it in notes)
        # the widgets get the palette by posted events
        qtbot.waitUntil(lambda: lightness(w.data_panel.palette().color(QPalette.ColorRole.Window)) < 80, timeout=5000)
        # a job shown after the switch: its curves' legend entries are new, and light too (they were dark)
        from app.modelspec import ModelSpec
        job = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=3, n_iter=3, tol=0.0))
        qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
        w.jobs_ctl.show_job(job)
        qtbot.waitUntil(lambda: not d.live_update_pending and bool(d.curves.legend_names("nll")), timeout=20000)
        labels = [label for p in d.curves.plots.values() for _s, label in p.legend.items]
        assert labels and all(lightness(pg.mkColor(label.opts["color"])) > 180 for label in labels)
        w.menus.theme_actions["light"].trigger()
        assert lightness(QApplication.palette().color(QPalette.ColorRole.Window)) > 180
        assert all(lightness(v.backgroundBrush().color()) > 180 for v in views)
        assert all(lightness(a.textPen().color()) < 80 for a in axes)
    finally:
        w.set_theme("system")


# ----------------------------------------------------------------------------- 24.12 smaller items
def test_start_page_gives_way_jobs_have_numbers_and_time_and_status_are_not_cut(make_window, qtbot, monkeypatch):
    from app.modelspec import ModelSpec
    from app.panels import jobs_panel as jp
    w = make_window()
    assert w.stack.currentWidget() is w.start_view
    w.data_ctl.load_demo()
    assert w.stack.currentWidget() is w.dashboard and "press Train (Ctrl+T)" in w.dashboard.title.text()
    spec = ModelSpec.make(model_type="standard", n=2, n_iter=3, tol=0.0)
    jobs = [w.jobs_ctl.start_training(spec) for _ in range(2)]              # the same settings twice
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    assert jobs[0].name == jobs[1].name                           # same name, told apart by their number
    items = [w.jobs_panel.items[j.id] for j in jobs]
    assert [it.text(jp.C_ID) for it in items] == [str(j.id) for j in jobs] and jobs[0].id != jobs[1].id
    assert jp.COLUMNS[jp.C_ID][0] == "#" and not w.jobs_panel.tree.isColumnHidden(jp.C_ID)
    # Time: "elapsed · ETA" fits its column (it was cut at 84 px)
    assert [jp.format_seconds(s) for s in (42, 725, 3780)] == ["42 s", "12:05", "1:03:00"]
    # a job of a fraction of a second read "0 s"
    assert [jp.format_seconds(s) for s in (0.26, 4.04, 9.96, 10.4)] == ["0.3 s", "4.0 s", "10 s", "10 s"]
    fm = w.jobs_panel.tree.fontMetrics()
    assert w.jobs_panel._time_width >= fm.horizontalAdvance(jp.TIME_SAMPLE) + 8
    if not w.jobs_panel.tree.isColumnHidden(jp.C_TIME):
        assert w.jobs_panel.tree.columnWidth(jp.C_TIME) == w.jobs_panel._time_width
    # the status bar's TensorFlow label keeps its whole text (the loading itself is not started here)
    monkeypatch.setattr("app.tasks.run_background", lambda *a, **k: None)
    w.start_background_init()
    label = w.tf_label
    assert label.minimumWidth() >= label.fontMetrics().horizontalAdvance(label.text())
    w.resize(700, 500)
    assert settled(qtbot, label.width) >= label.fontMetrics().horizontalAdvance(label.text())


def test_a_large_vocabulary_shows_its_most_frequent_words_first(make_window, qtbot, tmp_path):
    from app.panels.data_panel import FREQ_SHOWN
    path = tmp_path / "many.txt"      # word_TAG: word k occurs k + 1 times (k = 0..299)
    path.write_text("\n".join(" ".join(f"w{k}_NN" for _ in range(k + 1)) for k in range(300)) + "\n")
    w = make_window()
    w.open_files([str(path)])
    _wait_loaded(qtbot, w)
    p = w.data_panel
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.min_count.setValue(1)
    old = w.datasets[0]
    p.reread_button.click()
    qtbot.waitUntil(lambda: old not in w.datasets and not w.data_ctl.loading, timeout=30000)
    assert w.datasets[0].n_symbols == 300
    labels = p.freq_plot.getAxis("bottom").labels
    assert labels[:3] == ["w299", "w298", "w297"] and list(p.freq_bars.opts["height"][:3]) == [300, 299, 298]
    x0, x1 = p.freq_plot.getViewBox().viewRange()[0]
    assert (x0, x1) == pytest.approx((-0.6, FREQ_SHOWN - 0.4))
    p.freq_plot.setXRange(100, 200, padding=0)
    p.freq_plot.reset_view()
    assert p.freq_plot.getViewBox().viewRange()[0] == pytest.approx([-0.6, FREQ_SHOWN - 0.4])

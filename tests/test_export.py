"""Figure export (app/export.py): valid PNG / SVG / PDF files, atomic writes, menus."""
from __future__ import annotations

import os
import re
import stat
import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from PySide6 import QtGui, QtWidgets  # noqa: E402

import app.export as export  # noqa: E402
import app.vector_figure as vector_figure  # noqa: E402
from app.export import ExportError, add_export_context_menu, export_widget  # noqa: E402
from app.views import Dashboard, ParameterHeatmaps  # noqa: E402
from densehmm_core.events import ProgressEvent  # noqa: E402
from qtshow import settled  # noqa: E402 - this folder

SVG_NS = "{http://www.w3.org/2000/svg}"


def params(n=4, m=6, seed=0, l=3):
    rng = np.random.default_rng(seed)
    return {"startprob": rng.dirichlet(np.ones(n)), "transmat": rng.dirichlet(np.ones(n), n),
            "emissionprob": rng.dirichlet(np.ones(m), n), "U": rng.normal(size=(n, l)),
            "Z": rng.normal(size=(n, l)), "W": rng.normal(size=(n, l)), "V": rng.normal(size=(m, l)),
            "z_start": rng.normal(size=l)}


@pytest.fixture
def heatmaps(qtbot):
    w = ParameterHeatmaps()
    qtbot.addWidget(w)
    w.set_vocabulary(list("ACDEFG"))
    w.set_params(params())
    w.resize(700, 450)
    w.show()
    qtbot.waitExposed(w)
    return w


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


def only_file(folder):
    return sorted(os.listdir(folder))


def test_png_signature_size_and_content(heatmaps, tmp_path):
    out = export_widget(heatmaps, tmp_path / "a.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    img = QtGui.QImage(str(out))
    assert (img.width(), img.height()) == (700, 450)
    colors = {img.pixel(x, y) for x in range(0, 700, 5) for y in range(0, 450, 5)}
    assert len(colors) > 20  # heatmap colours, text, axes: not a blank image
    hi = export_widget(heatmaps, tmp_path / "b.png", scale=2.0)
    img2 = QtGui.QImage(str(hi))
    assert (img2.width(), img2.height()) == (1400, 900)
    assert only_file(tmp_path) == ["a.png", "b.png"]  # no temporary files left
    if os.path.exists("/proc/self/status"):  # the usual 0666 minus umask, not mkstemp's 0600
        umask = next(int(line.split()[1], 8) for line in open("/proc/self/status") if line.startswith("Umask:"))
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~umask


def test_svg_is_well_formed_with_vector_content(heatmaps, tmp_path):
    out = export_widget(heatmaps, tmp_path / "fig.svg")
    root = ET.parse(out).getroot()
    assert root.tag == SVG_NS + "svg"
    tags = [el.tag.replace(SVG_NS, "") for el in root.iter()]
    assert tags.count("image") >= 2  # the heatmaps
    assert sum(tags.count(t) for t in ("path", "polyline", "rect")) > 10  # axes, ticks, frames
    texts = " ".join("".join(el.itertext()) for el in root.iter(SVG_NS + "text"))
    for label in ("Transition matrix A", "from state", "symbol", "A", "G"):
        assert label in texts
    assert root.get("viewBox") == "0 0 700 450"


def test_pdf_header_and_size(heatmaps, tmp_path):
    out = export_widget(heatmaps, tmp_path / "fig.pdf")
    data = out.read_bytes()
    assert data[:5] == b"%PDF-"
    assert b"%%EOF" in data[-64:]
    assert len(data) > 5000
    assert b"/MediaBox" in data


def test_format_argument_overrides_suffix(heatmaps, tmp_path):
    out = export_widget(heatmaps, tmp_path / "figure.dat", fmt="svg")
    assert out.read_bytes().lstrip().startswith(b"<?xml")


def test_whole_dashboard_exports_its_current_page(dashboard, tmp_path):
    out = export_widget(dashboard, tmp_path / "dash.png")
    img = QtGui.QImage(str(out))
    page = dashboard.export_target()
    assert page is dashboard.live
    assert (img.width(), img.height()) == (page.width(), page.height())
    dashboard.tabs.setCurrentWidget(dashboard.overview)
    svg = export_widget(dashboard, tmp_path / "overview.svg")
    texts = " ".join("".join(el.itertext()) for el in ET.parse(svg).getroot().iter(SVG_NS + "text"))
    assert "Before training" in texts
    # the overview defers updates while hidden: exporting it draws the pending ones first
    dashboard.tabs.setCurrentWidget(dashboard.live)
    newer = params(seed=5)
    dashboard.update_from_event(ProgressEvent(step=9, loss=0.1, params=newer))
    assert dashboard.overview.after.transmat.image_data() is None or not np.array_equal(
        dashboard.overview.after.transmat.image_data(), newer["transmat"])
    export_widget(dashboard.overview, tmp_path / "ov.png")
    np.testing.assert_array_equal(dashboard.overview.after.transmat.image_data(), newer["transmat"])
    for name, w in dashboard.views().items():
        assert export_widget(w, tmp_path / f"{name}.pdf").stat().st_size > 1000, name


def test_never_shown_widget_gets_a_size(qtbot, tmp_path):
    w = ParameterHeatmaps()
    qtbot.addWidget(w)
    w.set_params(params())
    out = export_widget(w, tmp_path / "hidden.png")
    img = QtGui.QImage(str(out))
    assert img.width() >= 200 and img.height() >= 150


def test_failure_leaves_no_partial_file(heatmaps, tmp_path, monkeypatch):
    target = tmp_path / "fig.svg"

    def exploding_render(widget, painter):
        painter.drawLine(0, 0, 10, 10)  # something is already written to the temporary file
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(export, "_render", exploding_render)
    for name in ("fig.svg", "fig.pdf", "fig.png"):
        with pytest.raises(ExportError, match="renderer crashed"):
            export_widget(heatmaps, tmp_path / name)
    assert only_file(tmp_path) == []
    # an existing file is left untouched by a failed export
    target.write_text("previous figure")
    with pytest.raises(ExportError):
        export_widget(heatmaps, target)
    assert target.read_text() == "previous figure"
    assert only_file(tmp_path) == ["fig.svg"]


def test_bad_paths_and_formats_are_clear_errors(heatmaps, tmp_path):
    with pytest.raises(ExportError, match="unknown figure format"):
        export_widget(heatmaps, tmp_path / "fig.bmpx")
    with pytest.raises(ExportError, match="does not exist"):
        export_widget(heatmaps, tmp_path / "missing" / "fig.png")
    with pytest.raises(ExportError, match="scale"):
        export_widget(heatmaps, tmp_path / "fig.png", scale=0)
    (tmp_path / "adir.png").mkdir()
    with pytest.raises(ExportError):
        export_widget(heatmaps, tmp_path / "adir.png")
    assert only_file(tmp_path) == ["adir.png"]


def test_context_menu_action_exports(heatmaps, tmp_path, monkeypatch):
    seen = []
    acts = add_export_context_menu(heatmaps, lambda: str(tmp_path), name="matrices",
                                   on_exported=seen.append)
    assert acts[0].text() == "Export figure..."
    # pyqtgraph's own "Export..." (its SVG exporter crashes with PySide6) is replaced in every plot menu
    for view in heatmaps.findChildren(__import__("pyqtgraph").GraphicsView):
        assert [a.text() for a in view.scene().contextMenu] == ["Export figure..."]
    asked = {}

    def fake_dialog(parent, caption, start, filters):
        asked["start"] = start
        return str(tmp_path / "ctx"), export.FORMATS["pdf"]

    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(fake_dialog))
    acts[0].trigger()
    assert asked["start"] == os.path.join(str(tmp_path), "matrices.png")
    assert (tmp_path / "ctx.pdf").read_bytes()[:5] == b"%PDF-"
    assert seen == [tmp_path / "ctx.pdf"]

    # PNG asks for the resolution
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a: (str(tmp_path / "ctx.png"), export.FORMATS["png"])))
    monkeypatch.setattr(export._ScaleDialog, "exec", lambda self: QtWidgets.QDialog.DialogCode.Accepted)
    monkeypatch.setattr(export._ScaleDialog, "scale", lambda self: 3.0)
    acts[0].trigger()
    img = QtGui.QImage(str(tmp_path / "ctx.png"))
    assert img.width() == 3 * heatmaps.width()


def test_plot_menus_offer_our_export_not_pyqtgraphs(dashboard):
    """Right-click on a plot: pyqtgraph's menu gets "Export figure..." / "Export dashboard..."."""
    vb = dashboard.transmat.plot.vb
    scene = vb.scene()

    class Ev:
        acceptedItem = vb

    menu = scene.addParentContextMenus(vb, vb.getMenu(Ev()), Ev())
    texts = [a.text() for a in menu.actions()]
    assert "Export figure..." in texts and "Export dashboard..." in texts
    assert "Export..." not in texts  # pyqtgraph's exporter (its SVG export crashes with PySide6)


def test_context_menu_error_is_a_dialog_not_a_crash(heatmaps, tmp_path, monkeypatch):
    acts = add_export_context_menu(heatmaps)
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a: (str(tmp_path / "nope" / "x.svg"), "")))
    shown = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "critical", staticmethod(lambda *a: shown.append(a[2])))
    acts[0].trigger()
    assert shown and "does not exist" in shown[0]


def test_dashboard_views_have_export_menus(dashboard):
    for name in ("transmat", "emission", "embeddings", "curves", "decode", "overview", "compare"):
        acts = dashboard.views()[name]._export_actions
        assert acts[0].text() == "Export figure..."
    assert [a.text() for a in dashboard.transmat._export_actions] == [
        "Export figure...", "Export dashboard...", "Export matrices and embeddings (CSV)..."]


def _visible_controls(widget):
    types = (QtWidgets.QAbstractButton, QtWidgets.QAbstractSpinBox, QtWidgets.QComboBox, QtWidgets.QLineEdit)
    return [w for w in widget.findChildren(QtWidgets.QWidget)
            if isinstance(w, types) and w.isVisibleTo(widget)
            and not isinstance(w.parentWidget(), QtWidgets.QAbstractScrollArea)]


def test_exported_figures_contain_no_widgets(dashboard, tmp_path, monkeypatch):
    """Check boxes (embeddings, fixed colour range) are on screen but not in PNG / PDF / SVG."""
    live = dashboard.live
    dashboard.flush()   # the staged live update drawn: the embeddings' check boxes show with their plot
    before = _visible_controls(live)
    assert any(isinstance(w, QtWidgets.QCheckBox) for w in before)  # the dashboard has controls on screen
    seen = _spy_render(monkeypatch, _visible_controls)
    for suffix in ("png", "pdf", "svg"):
        export_widget(dashboard, tmp_path / f"d.{suffix}")
    assert seen == [[], [], []]
    assert _visible_controls(live) == before  # shown again afterwards


def test_default_file_names_come_from_job_and_view(dashboard, tmp_path, monkeypatch):
    from densehmm_core.dense import DenseHMM
    from app.export import file_stem, view_file_name
    model = DenseHMM(10, 3, n_symbols=6, fit_method="em", seed=0, init_method="spectral")
    assert file_stem(model) == "dense-em_n10_l3_seed0_spectral"   # the start method too (issue 24, item 4)
    assert file_stem(DenseHMM(10, 3, n_symbols=6, fit_method="em", seed=0, init_method="random")) == \
        "dense-em_n10_l3_seed0_random"
    assert view_file_name("dense-em_n10_l3_seed0", "transmat", "png") == "dense-em_n10_l3_seed0_transitions.png"
    dashboard.set_file_stem(file_stem(model))
    asked = []

    def fake_dialog(parent, caption, start, filters):
        asked.append(start)
        return str(tmp_path / "sub" / "fig.pdf"), export.FORMATS["pdf"]
    (tmp_path / "sub").mkdir()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(fake_dialog))
    dashboard.transmat._export_actions[0].trigger()
    assert os.path.basename(asked[0]) == "dense-em_n10_l3_seed0_spectral_transitions.png"
    # the folder of that export is where the next dialog starts
    dashboard.curves._export_actions[0].trigger()
    assert asked[1] == os.path.join(str(tmp_path / "sub"), "dense-em_n10_l3_seed0_spectral_training_curves.png")


def test_csv_export_from_the_dashboard_writes_the_cores_tables(dashboard, tmp_path, monkeypatch):
    import zipfile
    from densehmm_core.export import model_tables
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 6, size=40) for _ in range(5)]
    model = StandardHMM(3, n_symbols=6, n_iter=3, seed=0).fit(seqs)
    dashboard.set_model(model, seqs)
    target = tmp_path / "m_csv.zip"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a: (str(target), export.CSV_FILTER)))
    act = [a for a in dashboard.emission._export_actions if "CSV" in a.text()][0]
    act.trigger()
    with zipfile.ZipFile(target) as z:
        got = {n: z.read(n).decode() for n in z.namelist()}
    assert got == model_tables(model)


def test_a_plot_widget_itself_exports(qtbot, tmp_path):
    """A pyqtgraph PlotWidget is a QGraphicsView, whose render() hides QWidget.render."""
    import pyqtgraph as pg
    w = pg.PlotWidget()
    qtbot.addWidget(w)
    w.plot([0, 1, 2], [1, 0, 1])
    w.resize(300, 200)
    w.show()
    qtbot.waitExposed(w)
    export_widget(w, tmp_path / "p.png")
    img = QtGui.QImage(str(tmp_path / "p.png"))
    assert (img.width(), img.height()) == (300, 200)


def test_decode_figure_names_the_sequence_and_leaves_out_its_chooser(qtbot, tmp_path):
    """The decode view's chooser row ("Sequence:" spin box, id, find box) is on screen only;
    the exported figure's title names the sequence instead."""
    from densehmm_core.standard import StandardHMM
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 6, size=L) for L in (30, 45, 12)]
    model = StandardHMM(3, n_symbols=6, n_iter=3, seed=0).fit(seqs)
    long_id = "sp|P69905|HBA_HUMAN Hemoglobin subunit alpha OS=Homo sapiens"
    corpus = type("C", (), {"sequences": seqs, "vocabulary": list("abcdef"), "names": ["s0", "s1", long_id]})()
    w = _shown_decode(qtbot, (900, 500), model, corpus)
    w.select_sequence(1)
    title = "Sequence 1 of 3 (id s1, length 45): Viterbi state path"
    assert w.figure_title() == title
    svg = export_widget(w, tmp_path / "decode.svg")
    root = ET.parse(svg).getroot()
    texts = [" ".join("".join(el.itertext()).split()) for el in root.iter(SVG_NS + "text")]
    joined = " | ".join(texts)
    assert title in joined
    assert "Posterior state probabilities" in joined and "position t" in joined
    assert "Sequence:" not in joined and "of 3 (data set)" not in joined and "Find sequence" not in joined
    assert "State colours:" in joined  # the legend is part of the figure
    png = export_widget(w, tmp_path / "decode.png")
    img = QtGui.QImage(str(png))
    assert (img.width(), img.height()) == (900, 500)
    colors = {img.pixel(x, y) for x in range(0, 900, 5) for y in range(0, 500, 5)}
    assert len(colors) > 20  # state colours, heat strip, text: not blank
    assert w.controls.isVisible() and "of 3 (data set)" in w.seq_label.text()  # back on screen
    # a long id is cut in the title (the id box on screen keeps it whole)
    w.select_sequence(2)
    assert w.figure_title() == ("Sequence 2 of 3 (id " + long_id[:39] + "…, length 12): Viterbi state path")
    w.set_model(model, None)  # no data: sampled sequences, said in the title
    assert w.figure_title() == "Sequence 0 of 10 sampled from the model (seed 0, length 120): Viterbi state path"
    w.clear()
    assert w.figure_title() == "Viterbi state path"


def _spy_render(monkeypatch, probe):
    """Record ``probe(widget)`` at the moment each figure is drawn."""
    seen = []
    real = export._render

    def spy(widget, painter):
        seen.append(probe(widget))
        real(widget, painter)
    monkeypatch.setattr(export, "_render", spy)
    return seen


def test_exported_embeddings_name_their_markers_in_a_legend_row(qtbot, tmp_path, monkeypatch):
    """On screen the check boxes are the legend; they are left out of the figure, so the figure
    gets a legend row of the sets shown (an unticked set is not named), removed afterwards."""
    from app.views import EmbeddingScatter
    w = EmbeddingScatter()
    qtbot.addWidget(w)
    w.resize(420, 500)
    w.show()
    qtbot.waitExposed(w)
    w.set_embeddings({k: v for k, v in params(l=3).items() if k in ("U", "Z", "W", "V", "z_start")})
    w.boxes["W"].setChecked(False)
    rows_before = w.graphics.ci.layout.rowCount()
    assert w.legend_names() == [] and w.boxes["U"].isVisible()
    seen = _spy_render(monkeypatch, lambda _w: (w.legend_names(), w.boxes["U"].isVisibleTo(w)))
    svg = export_widget(w, tmp_path / "emb.svg")
    export_widget(w, tmp_path / "emb.png")
    assert seen == [(["U", "Z", "V", "z_start"], False)] * 2
    texts = " ".join("".join(el.itertext()) for el in ET.parse(svg).getroot().iter(SVG_NS + "text"))
    assert "z_start" in texts and "state labels" not in texts
    assert w.legend_names() == [] and w.boxes["U"].isVisible()  # the screen is as it was
    assert len(w.graphics.ci.items) == 1 and w.graphics.ci.layout.rowCount() <= rows_before + 1
    # the overview's scatter has no check boxes and always its legend row: left as it is
    ov = EmbeddingScatter(controls=False)
    qtbot.addWidget(ov)
    ov.resize(420, 500)
    ov.set_embeddings({k: v for k, v in params(l=3).items() if k in ("U", "Z", "W", "V", "z_start")})
    seen.clear()
    monkeypatch.setattr(export, "_render", lambda widget, painter: seen.append(
        (ov.legend_names(), len(ov.graphics.ci.items))))
    export_widget(ov, tmp_path / "ov.png")
    assert seen == [(["U", "Z", "W", "V", "z_start"], 2)]  # the plot and its one legend


def _tagged_decode(qtbot, length):
    from types import SimpleNamespace
    from densehmm_core.hmm_base import BaseHMM
    rng = np.random.default_rng(2)
    model = BaseHMM(2, 3, seed=0)
    model.startprob_, model.transmat_ = np.array([1.0, 0.0]), np.array([[0.1, 0.9], [0.9, 0.1]])
    model.emissionprob_ = np.array([[0.8, 0.1, 0.1], [0.1, 0.45, 0.45]])
    seq = rng.integers(0, 3, size=length)
    data = SimpleNamespace(sequences=[seq], vocabulary=["the", "dog", "cat"], tags=[rng.integers(0, 2, size=length)],
                           tag_vocabulary=["DET", "NOUN"])
    w = _shown_decode(qtbot, (900, 600), model, data)
    w.set_state_tags([0, 1])
    return w


def _shown_decode(qtbot, size, model, data):
    """A shown DecodeView of ``size`` drawing ``model`` on ``data``."""
    from app.views import DecodeView
    w = DecodeView()
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    qtbot.waitExposed(w)
    w.set_model(model, data)
    return w


def test_decode_tag_table_is_whole_in_a_figure_or_left_out(qtbot, tmp_path, monkeypatch):
    """Figures have no scroll bars: a short sentence's words / gold / predicted table is drawn
    whole without the scroll bar's strip; a table too wide for the figure is left out (not cut)."""
    from PySide6 import QtCore
    def probe(_w):
        t = w.tag_table
        bars = [b for b in w.findChildren(QtWidgets.QScrollBar) if b.isVisibleTo(w)]
        return t.isVisibleTo(w), t.height(), len(bars)

    w = _tagged_decode(qtbot, 4)
    t = w.tag_table
    assert t.horizontalScrollBarPolicy() == QtCore.Qt.ScrollBarPolicy.ScrollBarAsNeeded
    on_screen = t.height()
    rows = sum(t.rowHeight(r) for r in range(3)) + 2 * t.frameWidth() + 2
    seen = _spy_render(monkeypatch, probe)
    svg = export_widget(w, tmp_path / "short.svg")
    assert seen == [(True, rows, 0)] and rows == on_screen   # (on screen too: no strip while it fits)
    texts = " ".join("".join(el.itertext()) for el in ET.parse(svg).getroot().iter(SVG_NS + "text"))
    assert "gold tag" in texts and "predicted" in texts
    assert t.height() == on_screen and t.horizontalScrollBarPolicy() == QtCore.Qt.ScrollBarPolicy.ScrollBarAsNeeded

    w = _tagged_decode(qtbot, 120)  # 120 columns never fit in 900 px
    assert w.tag_table.horizontalScrollBar().isVisible()
    seen.clear()
    svg = export_widget(w, tmp_path / "long.svg")
    assert seen[0][0] is False and seen[0][2] == 0
    texts = " ".join("".join(el.itertext()) for el in ET.parse(svg).getroot().iter(SVG_NS + "text"))
    assert "gold tag" not in texts and "Viterbi state path" in texts
    assert w.tag_table.isVisible() and w.tag_table.horizontalScrollBar().isVisible()  # back on screen


def test_emissions_export_what_shows_them_for_a_large_vocabulary(dashboard, tmp_path):
    """With hundreds of symbols the emissions are a top-words table, not a heatmap: exporting
    "emission" (File > Export figure) draws the table, not the hidden, empty heatmap."""
    rng = np.random.default_rng(0)
    n, m = 4, 400
    dashboard.set_vocabulary([f"w{i}" for i in range(m)])
    dashboard.heatmaps.set_params({"startprob": np.ones(n) / n, "transmat": np.ones((n, n)) / n,
                                   "emissionprob": rng.dirichlet(np.ones(m), n)})
    assert dashboard.heatmaps.showing_top_words() and not dashboard.emission.isVisible()
    svg = export_widget(dashboard.emission, tmp_path / "b.svg")
    texts = " ".join("".join(el.itertext()) for el in ET.parse(svg).getroot().iter(SVG_NS + "text"))
    assert f"Top 10 of {m} symbols per state, most probable first" in texts and "Emission matrix B" not in texts
    assert "hover" not in texts.lower()  # a hint for the screen (in the tooltip), not for a figure
    word = dashboard.heatmaps.top_words.words()[0][0]
    assert word in texts


def _path_corners(d):
    """The corners of a polygon path (``M x,y L ... Z``, absolute or relative), as absolute points."""
    pts, cur, start = [], (0.0, 0.0), None
    for cmd, args in re.findall(r"([MmLlZz])([^MmLlZz]*)", d):
        nums = [float(v) for v in re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", args)]
        for x, y in zip(nums[0::2], nums[1::2]):
            cur = (cur[0] + x, cur[1] + y) if cmd in "ml" else (x, y)
            if cmd in "Mm" and start is None:
                start = cur
            pts.append(cur)
        if cmd in "Zz":
            if pts and start is not None and np.allclose(pts[-1], start, atol=1e-3):
                pts.pop()      # an explicit closing line
            start = None
    return pts


def _svg_rect_fills(root):
    """(colour, x, y, w, h) of every filled rectangle path in a Qt SVG (absolute coordinates)."""
    import re
    out = []
    for g in root.iter(SVG_NS + "g"):
        fill = g.get("fill")
        m = re.match(r"matrix\(([^)]*)\)", g.get("transform") or "")
        if not fill or fill == "none" or m is None:
            continue
        a, b, c, d, e, f = (float(v) for v in m.group(1).split(","))
        for el in g:
            if el.tag == SVG_NS + "rect":
                x, y, w, h = (float(el.get(k)) for k in ("x", "y", "width", "height"))
            elif el.tag == SVG_NS + "path" and re.fullmatch(r"M[^A-Za-z]*(([Ll][^A-Za-z]*){3,4}|l[^A-Za-z]*)[Zz]\s*",
                                                             el.get("d") or ""):
                corners = _path_corners(el.get("d"))
                xs, ys = [p[0] for p in corners], [p[1] for p in corners]
                x, y, w, h = min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)
            else:
                continue
            out.append((fill, a * x + e, d * y + f, a * w, d * h))
    return out


def test_svg_and_pdf_heatmap_cells_are_vector_rectangles(heatmaps, tmp_path):
    """Heatmaps are small images scaled up, which viewers smooth into a blur (issue 24, item 4): in SVG
    (and PDF) every cell is a filled rectangle of the colour shown on screen; no image is left."""
    out = export_widget(heatmaps, tmp_path / "h.svg")
    root = ET.parse(out).getroot()
    A = heatmaps.transmat.image_data()
    shapes = {(str(m.shape[1]), str(m.shape[0])) for m in
              (A, heatmaps.emission.image_data(), heatmaps.startprob.image_data())}
    images = {(el.get("width"), el.get("height")) for el in root.iter(SVG_NS + "image")}
    assert not images & shapes   # (left: the colour bars' gradients, 1 x 256, and the plots' backgrounds)
    # the screen's colours of A's cells: the item's own rendering (levels and colour map)
    qimg = heatmaps.transmat.image.qimage.convertToFormat(QtGui.QImage.Format.Format_RGB32)
    want = {QtGui.QColor(qimg.pixel(x, y)).name() for y in range(A.shape[0]) for x in range(A.shape[1])}
    fills = {f for f, *_ in _svg_rect_fills(root)}
    assert want <= fills
    # the cells of A tile its plot: as many rectangles of A's colours as runs of equal cells, at most
    # one per cell, inside the figure
    rects = [r for r in _svg_rect_fills(root) if r[0] in want]
    assert len(rects) >= A.shape[0]
    w, h = heatmaps.width(), heatmaps.height()
    assert all(0 <= x <= w and 0 <= y <= h for _f, x, y, *_ in rects)
    # on screen (and in a PNG) the heatmaps are images again
    assert "paint" not in vars(heatmaps.transmat.image)


def test_svg_clips_of_nested_widgets_sit_where_the_widgets_are(qtbot, tmp_path):
    """Qt's SVG writer put the clip path a widget sets while painting (a table's cells) in that
    widget's own coordinates: a table away from the figure's corner lost every cell text in viewers.
    Every text drawn under a clip lies inside that clip."""
    import re
    outer = QtWidgets.QWidget()
    lay = QtWidgets.QHBoxLayout(outer)
    lay.addWidget(QtWidgets.QLabel("left of the table"))
    table = QtWidgets.QTableWidget(4, 3)
    for i in range(4):
        for j in range(3):
            table.setItem(i, j, QtWidgets.QTableWidgetItem(f"cell{i}{j}"))
    lay.addWidget(table)
    qtbot.addWidget(outer)
    outer.resize(700, 300)
    outer.show()
    qtbot.waitExposed(outer)
    root = ET.parse(export_widget(outer, tmp_path / "t.svg")).getroot()
    clips = {}
    for cp in root.iter(SVG_NS + "clipPath"):
        nums = [float(v) for v in re.findall(r"[-+]?\d+\.?\d*", cp[0].get("d"))]
        xs, ys = nums[0::2], nums[1::2]
        clips[cp.get("id")] = (min(xs), min(ys), max(xs), max(ys))
    seen = 0
    for wrap in root.iter(SVG_NS + "g"):
        ref = wrap.get("clip-path")
        if not ref:
            continue
        x0, y0, x1, y1 = clips[ref[5:-1]]
        for g in wrap.iter(SVG_NS + "g"):
            m = re.match(r"matrix\(([^)]*)\)", g.get("transform") or "")
            for t in g.findall(SVG_NS + "text"):
                if not "".join(t.itertext()).startswith("cell"):
                    continue
                a, b, c, d, e, f = (float(v) for v in m.group(1).split(","))
                x, y = a * float(t.get("x")) + e, d * float(t.get("y")) + f
                assert x0 <= x <= x1 and y0 - 1 <= y <= y1 + 1, (t.text, (x, y), (x0, y0, x1, y1))
                seen += 1
    assert seen == 12


def test_svg_plot_lines_and_symbols_are_in_figure_coordinates(qtbot, tmp_path):
    """Curves and scatter symbols reached the SVG in data coordinates under a large transform with
    non-scaling strokes, which viewers that ignore vector-effect drew as bands hundreds of pixels
    wide; symbols were pixmap fragments.  Now: plain coordinates, vector symbols."""
    import pyqtgraph as pg
    w = pg.PlotWidget()
    w.plot([0, 1, 2, 3], [3, 1, 2, 0], pen=pg.mkPen("r", width=2), symbol="o", symbolBrush="b")
    qtbot.addWidget(w)
    w.resize(400, 300)
    w.show()
    qtbot.waitExposed(w)
    text = export_widget(w, tmp_path / "c.svg").read_text()
    root = ET.fromstring(text)
    drawn = [el for g in root.iter(SVG_NS + "g") for el in g if el.tag in (SVG_NS + "path", SVG_NS + "polyline")]
    assert drawn and not any(el.get("vector-effect") == "non-scaling-stroke" for el in drawn)
    circles = [el for el in drawn if el.tag == SVG_NS + "path" and " C" in el.get("d", "")]
    assert len(circles) == 4   # the four symbols are vector circles (were pixmap fragments)
    lines = [el for el in root.iter(SVG_NS + "polyline")]
    assert lines
    pts = [float(v) for el in lines for p in el.get("points").split() for v in p.split(",")]
    xs, ys = pts[0::2], pts[1::2]
    assert max(xs) - min(xs) > 200 and max(ys) - min(ys) > 150      # spans the plot, in pixels
    assert all(0 <= x <= 400 for x in xs) and all(0 <= y <= 300 for y in ys)
    assert w.plotItem.listDataItems()[0].scatter._exportOpts is False   # the screen's drawing back


def _tagged_dashboard(qtbot, size=(1300, 800)):
    """A shown Dashboard with a tagged words model (12 states, tags with long names): the Tags page
    is filled but never painted (the Dashboard tab stays current)."""
    from types import SimpleNamespace
    from densehmm_core.hmm_base import BaseHMM
    rng = np.random.default_rng(11)
    n, m, k = 12, 30, 6
    model = BaseHMM(n, m, seed=0)
    model.startprob_, model.transmat_ = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), n)
    model.emissionprob_ = rng.dirichlet(np.full(m, 0.2), n)
    seqs = [rng.integers(0, m, size=20) for _ in range(30)]
    tags = [rng.integers(0, k, size=20) for _ in range(30)]
    names = ["NNS", "NN", "VBZ", "DT", "ADJ-LONG", "PRP$"]
    corpus = SimpleNamespace(sequences=seqs, vocabulary=[f"w{i}" for i in range(m)], tags=tags, tag_vocabulary=names)
    d = Dashboard()
    qtbot.addWidget(d)
    d.resize(*size)
    d.show()
    qtbot.waitExposed(d)
    d.set_model(model, corpus)
    qtbot.waitUntil(lambda: not d.live_tagging_busy() and d.state_tags.counts() is not None, timeout=10000)
    assert d.tabs.currentWidget() is d.live and not d.tags_page.isVisible()
    return d


def _left_labels_drawn(view):
    return [text for _i, text, _r, _rot in view.heatmap._left.drawn_labels()]


def test_a_view_off_screen_exports_at_its_on_screen_size_with_every_label(qtbot, tmp_path):
    """A view whose tab is not current (or hidden) was drawn at whatever size it last had (640 x 480
    never shown, 376 px wide after a narrow layout), and its first PNG lost the row labels wider than
    the axis's first guess ("0 → NNS"): pyqtgraph widens an axis only after painting it once.  Now it
    is laid out at the size it would have on screen, in every format, with every row label."""
    d = _tagged_dashboard(qtbot)
    rows = d.state_tags.row_labels()
    assert len(rows) == 12
    png = QtGui.QImage(str(export_widget(d.state_tags, tmp_path / "st.png")))
    assert _left_labels_drawn(d.state_tags) == rows          # the first figure names every row
    svg = ET.parse(export_widget(d.state_tags, tmp_path / "st.svg")).getroot()
    texts = [("".join(el.itertext())).strip() for el in svg.iter(SVG_NS + "text")]
    assert all(r in texts for r in rows)
    pdf = export_widget(d.state_tags, tmp_path / "st.pdf").read_bytes()
    # the oracle: the size the view has once its tab is shown
    d.tabs.setCurrentWidget(d.tags_page)
    qtbot.waitUntil(lambda: d.state_tags.isVisible())
    on_screen = settled(qtbot, lambda: d.state_tags.size())
    assert (png.width(), png.height()) == (on_screen.width(), on_screen.height())
    assert svg.get("viewBox") == f"0 0 {on_screen.width()} {on_screen.height()}"
    box = [round(float(v)) for v in
           re.search(rb"/MediaBox\s*\[([^\]]*)\]", pdf).group(1).split()]
    assert box == [0, 0, round(on_screen.width() * 0.75), round(on_screen.height() * 0.75)]


def test_a_hidden_tab_exports_at_the_dashboards_page_size(qtbot, tmp_path):
    """The whole Tags page, its tab hidden: the size of the page the dashboard shows, every row named."""
    d = _tagged_dashboard(qtbot, size=(1150, 760))
    d.tabs.setTabVisible(d.tabs.indexOf(d.tags_page), False)
    page = d.live.size()
    for fmt in ("png", "svg"):
        out = export_widget(d.views()["tags"], tmp_path / f"tags.{fmt}")
        if fmt == "png":
            img = QtGui.QImage(str(out))
            assert (img.width(), img.height()) == (page.width(), page.height())
        else:
            assert ET.parse(out).getroot().get("viewBox") == f"0 0 {page.width()} {page.height()}"
        assert _left_labels_drawn(d.state_tags) == d.state_tags.row_labels(), fmt
        assert d.state_tags.width() > d.tag_curves.width() > 100   # the splitter's 3 : 2 as on screen


def _drawn_shapes(root):
    """Every element an SVG draws, in order: (tag, the attributes in effect (its groups' and its own),
    its points or text).  Polygon paths, absolute or relative, become their absolute corners."""
    out = []

    def walk(el, inherited):
        attrs = {**inherited, **{k: v for k, v in el.attrib.items() if k not in ("d", "points")}}
        tag = el.tag.replace(SVG_NS, "")
        if tag in ("g", "svg"):
            for kid in el:
                walk(kid, attrs)
            return
        if tag in ("defs", "clipPath", "title", "desc"):
            return
        if tag == "path" and re.fullmatch(r"\s*[Mm][^A-KN-Ya-kn-y]*", el.get("d") or ""):
            geometry = _path_corners(el.get("d"))
        else:
            geometry = (el.get("d"), el.get("points"), "".join(el.itertext()))
        out.append((tag, attrs, geometry))
    walk(root, {})
    return out


def test_svg_of_thousands_of_points_is_compact_and_draws_the_same(qtbot, tmp_path, monkeypatch):
    """Issue 24.4: every faint word point had two groups with all its attributes (the words dashboard's
    SVG was 2.2 MB).  Neighbouring groups alike are merged, polygons written with relative steps: the
    file is several times smaller and draws exactly the same shapes, in the same order, with the same
    attributes, each point still a shape of its own (translucent points overlap as before)."""
    from app.views import EmbeddingScatter
    rng = np.random.default_rng(0)
    n, m, l = 10, 5400, 8
    w = EmbeddingScatter()
    qtbot.addWidget(w)
    w.resize(700, 600)
    w.show()
    qtbot.waitExposed(w)
    w.set_symbol_frequencies(rng.zipf(1.5, size=m).astype(float), redraw=False)
    w.set_embeddings({"U": rng.normal(size=(n, l)), "Z": rng.normal(size=(n, l)), "W": rng.normal(size=(n, l)),
                      "V": rng.normal(size=(m, l)), "z_start": rng.normal(size=l)})
    qtbot.wait(50)
    small = export_widget(w, tmp_path / "compact.svg")
    monkeypatch.setattr(vector_figure, "_compact_svg", lambda root: False)
    full = export_widget(w, tmp_path / "full.svg")
    assert small.stat().st_size * 4 < full.stat().st_size        # 1.9 MB -> 0.36 MB here
    a, b = _drawn_shapes(ET.parse(full).getroot()), _drawn_shapes(ET.parse(small).getroot())
    assert len(a) == len(b) > m
    faint = 0
    for (tag_a, attrs_a, geo_a), (tag_b, attrs_b, geo_b) in zip(a, b):
        assert tag_a == tag_b and attrs_a == attrs_b
        if isinstance(geo_a, list):
            np.testing.assert_allclose(geo_b, geo_a, atol=1.5e-3)
            faint += attrs_a.get("fill-opacity") not in (None, "1")
        else:
            assert geo_a == geo_b
    assert faint >= m - 60          # the faint points: a shape each

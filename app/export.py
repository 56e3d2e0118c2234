"""Figure export: any view (or the whole dashboard) to PNG, SVG or PDF.

* PNG: the widget rendered into a QImage at ``scale`` times its on-screen size
  (``scale=2`` gives a 2x resolution image; text and lines are redrawn, not resampled).
* SVG: :class:`QSvgGenerator` (vector lines and text; heatmap cells as rectangles), tidied
  afterwards (:func:`app.vector_figure.tidy_svg`: curves in figure coordinates, repeated groups merged).
  pyqtgraph 0.14's own SVGExporter crashes with PySide6 6.11/6.12 and is not used;
  its "Export..." scene menu is replaced by ours.
* PDF: :class:`QPdfWriter`, one page the size of the widget, vector content.

A view not on screen (a tab not current) is laid out at the size it would have there and painted
once before its figure is drawn (:func:`_prepare`, :func:`_paint_off_screen`).

Every write is atomic: the figure is drawn into a temporary file in the target folder
and renamed over the target only when complete, so a failure leaves no partial file
and an existing file untouched.

A figure contains the plots, not the controls: check boxes, buttons, spin boxes, combo
boxes and line edits (and any widget whose ``exportHidden`` property is true, e.g. a
control's caption) are hidden while the figure is drawn and shown again afterwards, and
tables show no scroll bars.  A view whose controls also tell something the figure needs
(the embeddings' check boxes are their legend) has a ``figure_mode()`` method returning a
context manager; inside it the view draws what the figure needs instead (a legend row).

Default file names come from the job and the view (:func:`file_stem`, e.g.
``dense-em_n10_l3_seed0_spectral_transitions.png``).  The matrices and embeddings of a model are
exported as CSV through the core (:func:`densehmm_core.export.export_csv`).
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import re
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from PySide6 import QtCore, QtGui, QtSvg, QtWidgets

from densehmm_core import fileio

from . import pyside_fix  # noqa: F401  (PySide6 6.12 + Python 3.11 None refcount bug)
from .print_figure import print_colours
from .vector_figure import tidy_svg, vector_plots
from .view_registry import view_file_name

__all__ = ["export_widget", "add_export_context_menu", "ask_and_export", "ExportError", "FORMATS", "figure_size",
           "ask_png_scale", "ViewChooser",
           "FILE_FILTER", "format_for_path", "file_stem", "view_file_name", "controls_hidden",
           "export_model_csv", "ask_and_export_csv", "export_actions"]

#: format -> file-dialog filter text
FORMATS = {"png": "PNG image (*.png)", "svg": "SVG vector image (*.svg)", "pdf": "PDF document (*.pdf)"}
FILE_FILTER = ";;".join(FORMATS.values())
#: Logical pixels per inch used for the PDF page size (a widget pixel = 1/96 inch).
PDF_DPI = 96
#: Largest PNG side accepted (pixels), to refuse absurd scales before allocating.
MAX_PNG_SIDE = 20000


class ExportError(OSError):
    """A figure could not be written; the message names the file and the reason."""


def format_for_path(path: Union[str, os.PathLike], fmt: Optional[str] = None) -> str:
    """The export format of ``path``: ``fmt`` if given, else from the suffix."""
    if fmt is None:
        fmt = pathlib.Path(path).suffix.lstrip(".")
    fmt = str(fmt).lower().lstrip(".")
    if fmt == "jpg":
        fmt = "jpeg"
    if fmt not in FORMATS:
        raise ExportError(f"{path}: unknown figure format {fmt!r}; use one of: {', '.join(FORMATS)}")
    return fmt


#: widget types that are controls, never part of a figure
_CONTROL_TYPES = (QtWidgets.QAbstractButton, QtWidgets.QAbstractSpinBox, QtWidgets.QComboBox,
                  QtWidgets.QLineEdit, QtWidgets.QSlider)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", str(text)).strip("_.")


def file_stem(model: Any = None, **fields) -> str:
    """A file-name stem naming a model: kind (and fit method), n, l, seed and start, e.g.
    ``dense-em_n10_l3_seed0_spectral``.

    ``model`` is a ``StandardHMM`` / ``DenseHMM`` (its ``get_config()``) or ``None``;
    keyword ``fields`` (kind, n, l, seed, start) override what the model says.
    """
    params = model.resolved_config() if model is not None else {}  # the settings it trains with
    kind = fields.get("kind")
    if kind is None and model is not None:  # the core's kind and, for a DenseHMM, its fit method
        kind = f"{model.kind}-{params['fit_method']}" if "fit_method" in params else model.kind
    n = fields.get("n", params.get("n_states"))
    l = fields.get("l", params.get("dim"))
    seed = fields.get("seed", params.get("seed"))
    start = fields.get("start", params.get("init_method"))
    parts = [kind or "model"]
    if n is not None:
        parts.append(f"n{n}")
    if l is not None:
        parts.append(f"l{l}")
    if seed is not None:
        parts.append(f"seed{seed}")
    if start is not None:
        parts.append(start)
    return _safe("_".join(str(p) for p in parts)) or "model"


@contextlib.contextmanager
def controls_hidden(widget: QtWidgets.QWidget):
    """Hide the controls inside ``widget`` (see the module doc) while the block runs."""
    hidden: List[QtWidgets.QWidget] = []
    marked = [w for w in widget.findChildren(QtWidgets.QWidget) if w.property("exportHidden")]
    plain = [w for w in widget.findChildren(QtWidgets.QWidget) if isinstance(w, _CONTROL_TYPES)]
    for w in marked + plain:
        if w is widget or not w.isVisibleTo(widget):
            continue  # already hidden (also: inside a container hidden just before)
        if isinstance(w, QtWidgets.QAbstractButton) and isinstance(w.parentWidget(), QtWidgets.QAbstractScrollArea):
            continue  # a table's corner button
        w.hide()
        hidden.append(w)
    # scroll bars are controls too (a figure cannot scroll); a QGraphicsView (every plot) has none
    off = QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    scrolled: List[Tuple[QtWidgets.QAbstractScrollArea, Any, Any]] = []
    for area in widget.findChildren(QtWidgets.QAbstractScrollArea):
        if not area.isVisibleTo(widget):
            continue
        h, v = area.horizontalScrollBarPolicy(), area.verticalScrollBarPolicy()
        if (h, v) != (off, off):
            scrolled.append((area, h, v))
            area.setHorizontalScrollBarPolicy(off)
            area.setVerticalScrollBarPolicy(off)
    try:
        with contextlib.ExitStack() as modes:
            in_mode = 0
            for w in [widget] + widget.findChildren(QtWidgets.QWidget):
                mode = getattr(w, "figure_mode", None)
                if callable(mode) and (w is widget or w.isVisibleTo(widget)):
                    modes.enter_context(mode())
                    in_mode += 1
            if hidden or scrolled or in_mode:
                owners = {id(h.parentWidget()): h.parentWidget() for h in hidden if h.parentWidget()}
                for lay_owner in owners.values():
                    if lay_owner.layout() is not None:
                        lay_owner.layout().activate()
                if widget.layout() is not None:
                    widget.layout().activate()
                QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
            yield hidden
    finally:
        for area, h, v in scrolled:
            area.setHorizontalScrollBarPolicy(h)
            area.setVerticalScrollBarPolicy(v)
        for w in reversed(hidden):
            w.show()


def _target_of(widget: QtWidgets.QWidget) -> QtWidgets.QWidget:
    """Widgets may name what to draw for them (the Dashboard: its current page)."""
    get = getattr(widget, "export_target", None)
    if callable(get):
        target = get()
        if target is not None:
            return target
    return widget


def _send_pending_resizes(widget: QtWidgets.QWidget) -> None:
    """Deliver the move / resize events Qt holds back for a hidden widget and its children (as
    ``QWidgetPrivate::sendPendingMoveAndResizeEvents`` does when such a widget is shown or rendered):
    each one lays out its children, which are then handled in turn."""
    pending_move = QtCore.Qt.WidgetAttribute.WA_PendingMoveEvent
    pending_resize = QtCore.Qt.WidgetAttribute.WA_PendingResizeEvent
    todo = [widget]
    while todo:
        w = todo.pop(0)
        if w.testAttribute(pending_move):
            QtWidgets.QApplication.sendEvent(w, QtGui.QMoveEvent(w.pos(), w.pos()))
            w.setAttribute(pending_move, False)
        if w.testAttribute(pending_resize):
            QtWidgets.QApplication.sendEvent(w, QtGui.QResizeEvent(w.size(), QtCore.QSize()))
            w.setAttribute(pending_resize, False)
        todo.extend(c for c in w.children() if isinstance(c, QtWidgets.QWidget) and not c.isWindow())


def _lay_out_hidden(widget: QtWidgets.QWidget) -> bool:
    """A widget off screen in a shown window (a tab not current, a hidden tab, the dashboard while
    the start view shows) kept the size it last had (or none yet).  Each hidden page of a stack on
    the way up to the first shown widget is given the size the stack gives its current page, and
    everything below is laid out as it would be on screen.  False when no ancestor is shown."""
    chain: List[QtWidgets.QWidget] = []
    w: Optional[QtWidgets.QWidget] = widget
    while w is not None and not w.isVisible():
        chain.append(w)
        w = None if w.isWindow() else w.parentWidget()
    if w is None or not chain:
        return False
    for page in reversed(chain):      # top-down: a stack is laid out before its pages are sized
        owner = page.parentWidget()
        rect: Optional[QtCore.QRect] = None
        if isinstance(owner, QtWidgets.QStackedWidget):
            rect = owner.contentsRect()    # what its layout gives the current page
        elif isinstance(owner, QtWidgets.QTabWidget) and isinstance(page, QtWidgets.QStackedWidget):
            # a hidden QTabWidget leaves its pages' stack as it was (it lays it out when shown):
            # the rectangle it would give it, from the style as QTabWidget computes it
            option = QtWidgets.QStyleOptionTabWidgetFrame()
            owner.initStyleOption(option)
            rect = owner.style().subElementRect(QtWidgets.QStyle.SubElement.SE_TabWidgetTabContents, option, owner)
        if rect is not None and rect.isValid() and page.geometry() != rect:
            page.setGeometry(rect)
        _send_pending_resizes(page)
        if page.layout() is not None:
            page.layout().activate()
    return True


def _prepare(widget: QtWidgets.QWidget) -> QtCore.QSize:
    """Make sure the widget is laid out, up to date and has a usable size (also when never shown).

    Views that defer updates while hidden (the overview) implement ``prepare_export()``.  A view
    off screen inside a shown window is laid out at the size it would have on screen
    (:func:`_lay_out_hidden`); one in a window never shown, at its size hint (at least 640 x 480)
    unless it was resized.
    """
    for w in [widget] + widget.findChildren(QtWidgets.QWidget):
        hook = getattr(w, "prepare_export", None)
        if callable(hook):
            hook()
    placed = not widget.isVisible() and _lay_out_hidden(widget)
    if widget.layout() is not None:
        widget.layout().activate()
    size = widget.size()
    if size.width() < 10 or size.height() < 10 or (not widget.isVisible() and not placed and not widget.testAttribute(
            QtCore.Qt.WidgetAttribute.WA_Resized)):
        hint = widget.sizeHint()
        size = QtCore.QSize(max(hint.width(), 640), max(hint.height(), 480))
        widget.resize(size)
        if widget.layout() is not None:
            widget.layout().activate()
    QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
    return widget.size()


def _render(widget: QtWidgets.QWidget, painter: QtGui.QPainter) -> None:
    """Draw the figure of ``widget`` (the one place every format's figure goes through; the tests spy
    on it: the off-screen layout pass, :func:`_paint_off_screen`, paints through
    :func:`_render_widget` and is not a figure)."""
    _render_widget(widget, painter)


def _render_widget(widget: QtWidgets.QWidget, painter: QtGui.QPainter) -> None:
    # QWidget.render explicitly: a QGraphicsView (a pyqtgraph PlotWidget) hides it behind its own
    # render(painter, target, source) of the scene
    QtWidgets.QWidget.render(widget, painter, QtCore.QPoint(0, 0), QtGui.QRegion(),
                  QtWidgets.QWidget.RenderFlag.DrawWindowBackground | QtWidgets.QWidget.RenderFlag.DrawChildren)


def _write_png(widget, size: QtCore.QSize, path: str, scale: float) -> None:
    w, h = int(round(size.width() * scale)), int(round(size.height() * scale))
    if max(w, h) > MAX_PNG_SIDE:
        raise ExportError(f"{path}: a PNG of {w} x {h} pixels is too large (at most {MAX_PNG_SIDE} per side)")
    image = QtGui.QImage(w, h, QtGui.QImage.Format.Format_ARGB32)
    if image.isNull():
        raise ExportError(f"{path}: could not allocate a {w} x {h} image")
    image.setDevicePixelRatio(scale)
    dots = int(round(PDF_DPI * scale / 0.0254))   # 96 dpi x scale: the 1x figure's size in print, sharper
    image.setDotsPerMeterX(dots)
    image.setDotsPerMeterY(dots)
    image.fill(widget.palette().color(QtGui.QPalette.ColorRole.Window))
    painter = QtGui.QPainter()
    if not painter.begin(image):
        raise ExportError(f"{path}: could not paint into the image")
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        _render(widget, painter)
    finally:
        painter.end()
    if not image.save(path, "PNG"):
        raise ExportError(f"{path}: writing the PNG failed")


def _write_svg(widget, size: QtCore.QSize, path: str, title: str) -> None:
    try:  # SVG 1.1 keeps clip paths (plots zoomed in stay inside their frames); Tiny 1.2 drops them
        gen = QtSvg.QSvgGenerator(QtSvg.QSvgGenerator.SvgVersion.Svg11)
    except (AttributeError, TypeError):  # pragma: no cover - Qt < 6.5
        gen = QtSvg.QSvgGenerator()
    gen.setFileName(path)
    gen.setSize(size)
    gen.setViewBox(QtCore.QRect(0, 0, size.width(), size.height()))
    gen.setResolution(PDF_DPI)
    gen.setTitle(title)
    gen.setDescription("Figure exported by DenseHMM Studio")
    # Qt's SVG writer places the clip paths a widget sets in its own paint event (table cells, plot
    # frames) in that widget's coordinates, without the widget's offset inside the figure: every
    # viewer then clips away the texts and plots of all but the top-left widget.  Recorded into a
    # QPicture first and played back, each clip reaches the writer with the offset applied.
    picture = _recorded(widget)
    if picture is None:
        raise ExportError(f"{path}: could not record the figure")
    painter = QtGui.QPainter()
    if not painter.begin(gen):
        raise ExportError(f"{path}: could not open the SVG for writing")
    try:
        painter.drawPicture(0, 0, picture)
    finally:
        painter.end()
    tidy_svg(path)


def _recorded(widget: QtWidgets.QWidget, draw: Optional[Callable] = None) -> Optional[QtGui.QPicture]:
    """``widget`` drawn into a QPicture by ``draw`` (default :func:`_render`); None: the picture
    could not be opened."""
    picture = QtGui.QPicture()
    recorder = QtGui.QPainter()
    if not recorder.begin(picture):
        return None
    try:
        (draw or _render)(widget, recorder)
    finally:
        recorder.end()
    return picture


def _write_pdf(widget, size: QtCore.QSize, path: str, title: str) -> None:
    writer = QtGui.QPdfWriter(path)
    writer.setResolution(PDF_DPI)
    writer.setTitle(title)
    writer.setCreator("DenseHMM Studio")
    page = QtGui.QPageSize(QtCore.QSizeF(size.width() * 72.0 / PDF_DPI, size.height() * 72.0 / PDF_DPI),
                           QtGui.QPageSize.Unit.Point, "figure", QtGui.QPageSize.SizeMatchPolicy.ExactMatch)
    writer.setPageLayout(QtGui.QPageLayout(page, QtGui.QPageLayout.Orientation.Portrait, QtCore.QMarginsF(0, 0, 0, 0),
                                           QtGui.QPageLayout.Unit.Point))
    painter = QtGui.QPainter()
    if not painter.begin(writer):
        raise ExportError(f"{path}: could not open the PDF for writing")
    try:
        # QPdfWriter's device pixels are 1/PDF_DPI inch: one widget pixel maps to one device pixel
        _render(widget, painter)
    finally:
        painter.end()
    del writer  # flush and close the file before it is checked and renamed


def export_widget(widget: QtWidgets.QWidget, path: Union[str, os.PathLike], fmt: Optional[str] = None,
                  scale: float = 1.0, title: Optional[str] = None) -> pathlib.Path:
    """Write ``widget`` as it looks on screen to ``path`` (PNG, SVG or PDF), atomically.

    Parameters
    ----------
    widget : QWidget
        Any view; a widget with an ``export_target()`` method (the Dashboard) is drawn
        through what that returns.  A widget never shown is laid out at its size hint.
    path : str or path-like
        Target file; its folder must exist.
    fmt : {"png", "svg", "pdf"}, optional
        Defaults to the suffix of ``path``.
    scale : float
        PNG only: resolution factor relative to the on-screen size (``2`` = twice the pixels).
    title : str, optional
        Document title stored in SVG / PDF files.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ExportError
        Unknown format, missing folder, unwritable file or a failed render.  The target is
        then left as it was (absent, or the previous file) and no temporary file remains.
    """
    path = pathlib.Path(path)
    kind = format_for_path(path, fmt)
    scale = float(scale)
    if not (scale > 0 and scale <= 16):
        raise ExportError(f"{path}: scale must lie in (0, 16], got {scale}")
    folder = path.parent if str(path.parent) else pathlib.Path(".")
    if not folder.is_dir():
        raise ExportError(f"{path}: folder {folder} does not exist")
    target = _target_of(widget)
    size = _prepare(target)
    if size.width() <= 0 or size.height() <= 0:
        raise ExportError(f"{path}: the view has no size to draw")
    title = title or path.stem
    with print_colours(target), controls_hidden(target):   # white, dark text, whatever the theme
        if not target.isVisible():
            _paint_off_screen(target)
        return _export_prepared(target, path, kind, size, scale, title, folder)


def _paint_off_screen(widget: QtWidgets.QWidget) -> None:
    """Paint a widget that is not on screen once, into nothing, and let what that changes settle.

    Some items size themselves while painting: a pyqtgraph axis finds its widest tick label in its
    first paint and only then asks the layout for the width it needs, so the first figure of a view
    never painted on screen lost the row labels that did not fit yet ("3 → NNS" on the Tags page)."""
    if _recorded(widget, _render_widget) is None:
        return
    QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)


def _export_prepared(target, path: pathlib.Path, kind: str, size, scale: float, title: str,
                     folder: pathlib.Path) -> pathlib.Path:
    try:
        with fileio.atomic_path(path, suffix=".part") as tmp:
            if kind in ("png", "jpeg"):
                _write_png(target, size, tmp, scale)
            else:
                with vector_plots(target):
                    if kind == "svg":
                        _write_svg(target, size, tmp, title)
                    else:
                        _write_pdf(target, size, tmp, title)
            if os.path.getsize(tmp) == 0:
                raise ExportError(f"{path}: nothing was written (is the disk full or the file locked?)")
    except ExportError:
        raise
    except fileio.FileWriteError as exc:
        raise ExportError(str(exc)) from exc
    except Exception as exc:
        raise ExportError(f"{path}: export failed: {exc}") from exc
    return path


# ---------------------------------------------------------------- interaction
class _ScaleDialog(QtWidgets.QDialog):
    """Asks for the PNG resolution, showing the resulting pixel size."""

    def __init__(self, size: QtCore.QSize, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("PNG resolution")
        self.setMinimumWidth(360)   # the title bar shows the whole title
        lay = QtWidgets.QFormLayout(self)
        self.combo = QtWidgets.QComboBox()
        for s in (1, 2, 3, 4):
            self.combo.addItem(f"{s}x  ({size.width() * s} x {size.height() * s} pixels)", s)
        self.combo.setCurrentIndex(1)
        lay.addRow("Resolution:", self.combo)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok |
                                             QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addRow(buttons)

    def scale(self) -> float:
        return float(self.combo.currentData())


def figure_size(widget: QtWidgets.QWidget) -> QtCore.QSize:
    """The size (logical pixels) of ``widget``'s figure: what :func:`export_widget` draws, laid out as
    on screen also when the view is off screen (a tab not current)."""
    return _prepare(_target_of(widget))


def ask_png_scale(widget: QtWidgets.QWidget, parent: Optional[QtWidgets.QWidget] = None) -> Optional[float]:
    """Ask for the resolution of ``widget``'s PNG (1x-4x, each with its size in pixels); ``None``: cancelled."""
    dlg = _ScaleDialog(figure_size(widget), parent)
    if dlg.exec() != QtWidgets.QDialog.DialogCode.Accepted:
        return None
    return dlg.scale()


class ViewChooser(QtWidgets.QDialog):
    """File > Export figure's question "Which view?": every view by its title, at once (a tree: the
    pages, the views inside each beneath it), the first one selected; double-click or OK chooses.

    ``entries`` are ``(name, title, parent name or None)`` in display order (a parent before its
    parts); :meth:`chosen` is the name of the view chosen."""

    def __init__(self, entries: Sequence[Tuple[str, str, Optional[str]]],
                 parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export figure")
        lay = QtWidgets.QVBoxLayout(self)
        lay.addWidget(QtWidgets.QLabel("Which view?"))
        self.tree = QtWidgets.QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.setRootIsDecorated(False)
        self.tree.setIndentation(18)
        items: dict = {}
        for name, title, owner in entries:
            above = items.get(owner)
            item = QtWidgets.QTreeWidgetItem([title])
            item.setData(0, QtCore.Qt.ItemDataRole.UserRole, name)
            item.setToolTip(0, title)
            (above.addChild(item) if above is not None else self.tree.addTopLevelItem(item))
            items[name] = item
        self.tree.expandAll()
        self.tree.setItemsExpandable(False)
        # every part is listed and nothing folds: no expand arrows (rootIsDecorated covers the top level only)
        self.tree.setStyleSheet("QTreeView::branch { image: none; border-image: none; }")
        if self.tree.topLevelItemCount():
            self.tree.setCurrentItem(self.tree.topLevelItem(0))
        self.tree.itemDoubleClicked.connect(lambda *_a: self.accept())
        lay.addWidget(self.tree)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok |
                                             QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        # wide and tall enough for every title without eliding or scrolling (within the screen)
        fm = self.tree.fontMetrics()
        rows = len(entries)
        width = max((fm.horizontalAdvance(t) + 18 * self._depth(items[n]) for n, t, _o in entries), default=200)
        self.tree.setMinimumWidth(min(width + 48, 900))
        self.tree.setMinimumHeight(min(rows * (fm.height() + 6) + 12, 600))

    @staticmethod
    def _depth(item: QtWidgets.QTreeWidgetItem) -> int:
        depth = 0
        while item.parent() is not None:
            item, depth = item.parent(), depth + 1
        return depth

    def titles(self) -> List[str]:
        """The titles listed, top to bottom."""
        out = []
        it = QtWidgets.QTreeWidgetItemIterator(self.tree)
        while it.value() is not None:
            out.append(it.value().text(0))
            it += 1
        return out

    def select(self, title: str) -> None:
        """Make the view titled ``title`` the current choice (``KeyError`` if not listed)."""
        found = self.tree.findItems(title, QtCore.Qt.MatchFlag.MatchExactly | QtCore.Qt.MatchFlag.MatchRecursive)
        if not found:
            raise KeyError(title)
        self.tree.setCurrentItem(found[0])

    def chosen(self) -> Optional[str]:
        item = self.tree.currentItem()
        return None if item is None else item.data(0, QtCore.Qt.ItemDataRole.UserRole)


def ask_and_export(widget: QtWidgets.QWidget, parent: Optional[QtWidgets.QWidget] = None,
                   default_dir: Optional[str] = None, name: str = "figure.png",
                   on_exported: Optional[Callable[[pathlib.Path], None]] = None) -> Optional[pathlib.Path]:
    """Ask for a file (PNG / SVG / PDF) and, for PNG, a resolution; export; report errors in a dialog.

    ``name`` is the default file name (``.png`` is added when it has no suffix).
    Returns the path written, or ``None`` when cancelled or failed.  Never raises for
    export problems (the app must not die on a bad path).
    """
    parent = parent or widget.window()
    if not pathlib.Path(name).suffix:
        name = f"{name}.png"
    start = os.path.join(default_dir or os.path.expanduser("~"), name)
    path, chosen = QtWidgets.QFileDialog.getSaveFileName(parent, "Export figure", start, FILE_FILTER)
    if not path:
        return None
    if not pathlib.Path(path).suffix:
        for fmt, filt in FORMATS.items():
            if filt == chosen:
                path += "." + fmt
                break
        else:
            path += ".png"
    try:
        fmt = format_for_path(path)
    except ExportError as exc:
        QtWidgets.QMessageBox.critical(parent, "Export figure", str(exc))
        return None
    scale = 1.0
    if fmt == "png":
        chosen = ask_png_scale(widget, parent)
        if chosen is None:
            return None
        scale = chosen
    try:
        out = export_widget(widget, path, fmt, scale=scale)
    except ExportError as exc:
        QtWidgets.QMessageBox.critical(parent, "Export figure", str(exc))
        return None
    if on_exported is not None:
        on_exported(out)
    return out


Target = Union[QtWidgets.QWidget, Callable[[], QtWidgets.QWidget]]


def add_export_context_menu(widget: QtWidgets.QWidget, get_default_dir: Optional[Callable[[], str]] = None,
                            *, name: Optional[str] = None,
                            extra: Sequence[Tuple[str, Target]] = (),
                            on_exported: Optional[Callable[[pathlib.Path], None]] = None) -> List[QtGui.QAction]:
    """Add a right-click "Export figure..." menu to ``widget`` (and all plots inside it).

    On pyqtgraph plots the action joins the plot's own menu (replacing pyqtgraph's
    "Export..." entry, whose SVG exporter crashes with PySide6); elsewhere in the widget
    a small menu pops up.

    Parameters
    ----------
    widget : QWidget
        The view to export.
    get_default_dir : callable, optional
        Returns the folder the file dialog starts in (e.g. the last folder used).
    name : str or callable, optional
        Default file name (without suffix), or a function returning it at the time of
        the export (e.g. the job's stem plus the view); defaults to the widget's object name.
    extra : sequence of (label, widget or callable returning a widget[, name or callable])
        More entries, e.g. ``[("Export dashboard...", dashboard)]``; a third item names the
        file.  A target that is a plain function with attribute ``is_action`` is called
        as the action itself (e.g. the CSV export).
    on_exported : callable, optional
        Called with the path after a successful export (e.g. to remember the folder).

    Returns
    -------
    list of QAction
        The actions added ("Export figure..." first), so a test can trigger them.
    """
    stem = name or widget.objectName() or "figure"

    def make(label: str, target: Target, stem_) -> QtGui.QAction:
        act = QtGui.QAction(label, widget)

        def run() -> None:
            if getattr(target, "is_action", False):
                target()
                return
            tgt = target() if callable(target) and not isinstance(target, QtWidgets.QWidget) else target
            fname = stem_() if callable(stem_) else stem_
            ask_and_export(tgt, widget, get_default_dir() if get_default_dir else None, fname, on_exported)
        act.triggered.connect(run)
        return act

    actions = [make("Export figure...", widget, stem)]
    for entry in extra:
        label, target = entry[0], entry[1]
        stem_ = entry[2] if len(entry) > 2 else (label.replace("Export", "").strip(" .").lower() or "figure")
        actions.append(make(label, target, stem_))
    first_time = getattr(widget, "_export_actions", None) is None
    widget._export_actions = actions  # kept alive with the widget; read at popup time

    # pyqtgraph views: our actions replace the scene's "Export..." entry in every plot menu.
    # The innermost call wins: a view already given a menu by its own widget keeps it.
    import pyqtgraph as pg
    views = widget.findChildren(pg.GraphicsView)
    if isinstance(widget, pg.GraphicsView):
        views.append(widget)
    for view in views:
        owner = getattr(view, "_export_owner", None)
        if owner is not None and owner is not widget:
            continue
        scene = view.scene()
        if scene is not None and hasattr(scene, "contextMenu"):
            scene.contextMenu = list(actions)
        if owner is None:
            view._export_owner = widget
            view.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
            view.customContextMenuRequested.connect(
                lambda pos, v=view, w=widget: _graphics_menu(v, pos, w._export_actions))

    if first_time:
        widget.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
        widget.customContextMenuRequested.connect(
            lambda pos: _popup(widget, widget.mapToGlobal(pos), widget._export_actions))
    return actions


def export_model_csv(model: Any, target: Union[str, os.PathLike]) -> List[str]:
    """Write a model's matrices and embeddings as CSV files into the folder ``target`` (or a zip
    when it ends in ``.zip``), through the core (:func:`densehmm_core.export.export_csv`,
    atomic).  Returns the CSV file names.  Raises :class:`ExportError` with the path and reason."""
    from densehmm_core.export import export_csv
    if model is None:
        raise ExportError(f"{target}: there is no model to export yet (wait until the job has finished)")
    try:
        return export_csv(model, target)
    except (OSError, ValueError) as exc:
        raise ExportError(f"{target}: CSV export failed: {exc}") from exc


CSV_FILTER = "Zip of CSV files (*.zip);;Folder of CSV files (*)"


def ask_and_export_csv(model: Any, parent: Optional[QtWidgets.QWidget] = None, default_dir: Optional[str] = None,
                       stem: str = "model", on_exported: Optional[Callable[[pathlib.Path], None]] = None
                       ) -> Optional[pathlib.Path]:
    """Ask for a ``.zip`` (or a folder: a name without ``.zip``) and write the model's CSV tables
    there; errors are shown in a dialog, never raised."""
    start = os.path.join(default_dir or os.path.expanduser("~"), f"{stem}_csv.zip")
    path, chosen = QtWidgets.QFileDialog.getSaveFileName(parent, "Export matrices and embeddings (CSV)",
                                                         start, CSV_FILTER)
    if not path:
        return None
    try:
        export_model_csv(model, path)
    except ExportError as exc:
        QtWidgets.QMessageBox.critical(parent, "Export CSV", str(exc))
        return None
    out = pathlib.Path(path)
    if on_exported is not None:
        on_exported(out)
    return out


def export_actions(widget: QtWidgets.QWidget) -> List[QtGui.QAction]:
    """The export entries of ``widget`` or of the nearest widget around it that has them
    (:func:`add_export_context_menu`), or none: for a child with a menu of its own (a table's
    Copy entries, :mod:`app.views.tablecopy`) that keeps its view's export entries."""
    w: Optional[QtWidgets.QWidget] = widget
    while w is not None:
        actions = getattr(w, "_export_actions", None)
        if actions:
            return list(actions)
        w = w.parentWidget()
    return []


def _graphics_menu(view, pos: QtCore.QPoint, actions) -> None:
    """Right-click in a pyqtgraph view: plot areas show their own menu (with our actions)."""
    import pyqtgraph as pg
    for item in view.items(pos):
        if isinstance(item, pg.ViewBox) and item.menuEnabled():
            return
    _popup(view, view.mapToGlobal(pos), actions)


def _popup(owner: QtWidgets.QWidget, global_pos: QtCore.QPoint, actions) -> None:
    menu = QtWidgets.QMenu(owner)
    menu.addActions(actions)
    menu.popup(global_pos)

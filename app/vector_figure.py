"""Figures for vector files (SVG, PDF): plots drawn as vector shapes while a figure is drawn, and the
SVG that Qt writes tidied afterwards.  Used by :mod:`app.export`."""
from __future__ import annotations

import contextlib
import re
import types
from typing import Any, List, Optional

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["vector_plots", "tidy_svg", "MAX_VECTOR_CELLS"]


#: Heatmaps with more cells than this stay one (unsmoothed) image in SVG / PDF
MAX_VECTOR_CELLS = 200_000


@contextlib.contextmanager
def vector_plots(widget: QtWidgets.QWidget):
    """While the block runs, the plots inside ``widget`` draw for a vector file: every heatmap
    (a pyqtgraph ``ImageItem``: a small image scaled up, which viewers smooth into a blur) as one
    filled rectangle per run of equal cells, scatter symbols as vector shapes instead of pixmaps
    (pyqtgraph's export mode)."""
    import pyqtgraph as pg
    views = widget.findChildren(pg.GraphicsView) + ([widget] if isinstance(widget, pg.GraphicsView) else [])
    exporting, cells = [], []
    for view in views:
        scene = view.scene()
        if scene is None:
            continue
        for item in scene.items():
            if isinstance(item, pg.GraphicsItem) and hasattr(item, "setExportMode"):
                item.setExportMode(True, {"antialias": True})
                exporting.append(item)
            if isinstance(item, pg.ImageItem) and item.image is not None and \
                    int(np.prod(item.image.shape[:2])) <= MAX_VECTOR_CELLS:
                item.paint = types.MethodType(_paint_cells, item)   # this instance only, undone below
                cells.append(item)
    try:
        yield
    finally:
        for item in cells:
            del item.paint
        for item in exporting:
            item.setExportMode(False)


def _paint_cells(item, painter: QtGui.QPainter, *_args) -> None:
    """``ImageItem.paint`` for vector files: the cells of the item's image (its colours as on screen)
    as rectangles in the item's coordinates (one cell = 1 x 1), equal neighbours in a row merged."""
    item.render()   # the item's QImage from its data, levels and colour map (as pyqtgraph paints it)
    qimage = getattr(item, "qimage", None)
    if qimage is None or qimage.isNull():
        return
    qimage = qimage.convertToFormat(QtGui.QImage.Format.Format_ARGB32)
    h, w = qimage.height(), qimage.width()
    argb = np.frombuffer(qimage.constBits(), dtype=np.uint32, count=qimage.bytesPerLine() // 4 * h)
    argb = argb.reshape(h, qimage.bytesPerLine() // 4)[:, :w]
    painter.save()
    # the image covers the data's shape in item coordinates (a downsampled image: fewer, larger cells)
    shape = item.image.shape[:2] if item.axisOrder == "col-major" else item.image.shape[:2][::-1]
    painter.scale(shape[0] / w, shape[1] / h)
    painter.setPen(QtCore.Qt.PenStyle.NoPen)
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
    # a cell reaches a little into its right / lower neighbour (drawn after it): no hairline seams
    # between cells in viewers that antialias edges
    pad = 0.25
    for y in range(h):
        row = argb[y]
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
        ends = np.r_[starts[1:], w]
        for x0, x1 in zip(starts.tolist(), ends.tolist()):
            color = QtGui.QColor.fromRgba(int(row[x0]))
            if color.alpha() == 0:
                continue
            rect = QtCore.QRectF(x0, y, x1 - x0 + (pad if x1 < w else 0.0), 1.0 + (pad if y + 1 < h else 0.0))
            painter.fillRect(rect, color)
    if item.border is not None:
        painter.setPen(item.border)
        painter.drawRect(item.boundingRect())
    painter.restore()



_SVG = "http://www.w3.org/2000/svg"
_MATRIX = re.compile(r"^\s*matrix\(([^)]*)\)\s*$")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
#: an ``x,y`` pair of a path's or polyline's coordinates
_PAIR = re.compile(rf"({_NUMBER.pattern})\s*,\s*({_NUMBER.pattern})")


def tidy_svg(path: str) -> None:
    """Plot lines and symbols reach the SVG in data coordinates under a large ``transform`` with
    ``vector-effect="non-scaling-stroke"``, which several viewers and print tools ignore (a curve
    became a band hundreds of pixels wide, a symbol's outline a disc).  Their coordinates are
    mapped through the transform here, so the file needs neither."""
    import xml.etree.ElementTree as ET
    ET.register_namespace("", _SVG)
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    tree = ET.parse(path)
    shapes = {f"{{{_SVG}}}path": "d", f"{{{_SVG}}}polyline": "points", f"{{{_SVG}}}polygon": "points"}
    changed = False
    for group in tree.getroot().iter(f"{{{_SVG}}}g"):
        m = _MATRIX.match(group.get("transform") or "")
        kids = list(group)
        if m is None or not kids or any(k.tag not in shapes or k.get("vector-effect") != "non-scaling-stroke"
                                        for k in kids):
            continue
        a, b, c, d, e, f = (float(x) for x in m.group(1).replace(",", " ").split())
        if (a, b, c, d, e, f) == (1.0, 0.0, 0.0, 1.0, 0.0, 0.0):
            continue

        def mapped(text: str) -> str:
            # the commands (M, L, C, Z) stay; each x,y pair after them is mapped in place
            def point(pm) -> str:
                x, y = float(pm.group(1)), float(pm.group(2))
                return f"{a * x + c * y + e:.6g},{b * x + d * y + f:.6g}"
            return _PAIR.sub(point, text)
        for k in kids:
            attr = shapes[k.tag]
            k.set(attr, mapped(k.get(attr) or ""))
            del k.attrib["vector-effect"]
        group.set("transform", "matrix(1,0,0,1,0,0)")
        changed = True
    changed = _compact_svg(tree.getroot()) or changed
    if changed:
        tree.write(path, encoding="UTF-8", xml_declaration=True)


#: group attributes that make a group more than a holder of inherited properties (drawn as one layer)
_GROUP_EFFECTS = ("opacity", "filter", "mask", "id", "style")
_POLYGON = re.compile(r"^\s*M\s*([-+\d.eE]+),([-+\d.eE]+)((?:\s*L\s*[-+\d.eE]+,[-+\d.eE]+)+)\s*Z\s*$")


def _compact_svg(root) -> bool:
    """Write what Qt's SVG writer repeats once (the words dashboard's ~5,400 scatter points were 2.2 MB).

    Qt opens a ``<g>`` with every style attribute (and one with the clip) for each symbol it draws.
    Neighbouring groups with the same attributes are merged (their children kept in order: the same
    drawing, each shape still a shape of its own, so translucent points overlap as before); a
    ``fill-rule`` all the paths of a group share moves to the group (an inherited property); polygon
    paths (``M x,y L x,y ... Z``: the scatter symbols) are written with relative steps.  Groups that
    draw as a layer (opacity, filter, mask) or are referenced (an id) are left alone."""
    g_tag, path_tag = f"{{{_SVG}}}g", f"{{{_SVG}}}path"
    changed = False

    def mergeable(el) -> bool:
        return el.tag == g_tag and not any(k in el.attrib for k in _GROUP_EFFECTS) and not (el.text or "").strip()

    stack = [root]
    while stack:
        parent = stack.pop()
        kids = list(parent)
        merged: List[Any] = []
        for kid in kids:
            last = merged[-1] if merged else None
            if last is not None and mergeable(kid) and mergeable(last) and kid.attrib == last.attrib \
                    and not (last.tail or "").strip():
                last.extend(list(kid))
                changed = True
            else:
                merged.append(kid)
        if len(merged) != len(kids):
            parent[:] = merged
        stack.extend(merged)
    for group in root.iter(g_tag):
        paths = [k for k in group if k.tag == path_tag]
        rules = {k.get("fill-rule") for k in paths}
        if paths and len(paths) == len(group) and len(rules) == 1 and None not in rules \
                and "fill-rule" not in group.attrib:
            group.set("fill-rule", rules.pop())
            for k in paths:
                del k.attrib["fill-rule"]
            changed = True
    clips = {id(p) for cp in root.iter(f"{{{_SVG}}}clipPath") for p in cp.iter(path_tag)}
    for el in root.iter(path_tag):
        if id(el) in clips:
            continue    # a few clip outlines: left as Qt wrote them
        d = _relative_polygon(el.get("d") or "")
        if d is not None:
            el.set("d", d)
            changed = True
    return changed


def _fmt(v: float) -> str:
    text = f"{v:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _relative_polygon(d: str) -> Optional[str]:
    """``M x,y L x,y ... Z`` with relative steps (``m x,y l dx,dy ... z``), to 0.001 px; None: another path."""
    m = _POLYGON.match(d)
    if m is None:
        return None
    try:
        x0, y0 = float(m.group(1)), float(m.group(2))
        pts = [(float(a), float(b)) for a, b in re.findall(r"L\s*([-+\d.eE]+),([-+\d.eE]+)", m.group(3))]
    except ValueError:
        return None
    if pts and pts[-1] == (x0, y0):
        pts = pts[:-1]           # the closing line: z draws it
    # steps between the rounded points: the rounding does not add up along the outline
    rounded = [(round(x0, 3), round(y0, 3))] + [(round(x, 3), round(y, 3)) for x, y in pts]
    steps = [f"{_fmt(b[0] - a[0])},{_fmt(b[1] - a[1])}" for a, b in zip(rounded, rounded[1:])]
    return f"M{_fmt(rounded[0][0])},{_fmt(rounded[0][1])}" + (f"l{' '.join(steps)}" if steps else "") + "z"

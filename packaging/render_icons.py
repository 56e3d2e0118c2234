#!/usr/bin/env python3
"""Render the DenseHMM Studio icon SVG to the PNG sizes of the hicolor icon theme.

Usage (from the repository root)::

    .venv/bin/python packaging/render_icons.py            # writes resources/icons/hicolor/...
    .venv/bin/python packaging/render_icons.py --check    # exit 1 if a PNG is missing

The source is ``resources/icons/densehmm-studio.svg``; each size ``N`` is written to
``resources/icons/hicolor/NxN/apps/densehmm-studio.png`` (the freedesktop icon theme layout, so the
install script can copy the tree as it is). Rendering uses Qt's ``QSvgRenderer`` with antialiasing
onto a transparent ARGB image, i.e. exactly what the app sees when it loads the SVG itself.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from the repository: use its densehmm_core
    sys.path.insert(0, str(REPO))
from densehmm_core import fileio  # noqa: E402  (dependency-free: only the standard library)
ICON_DIR = REPO / "resources" / "icons"
SVG = ICON_DIR / "densehmm-studio.svg"
ICON_NAME = "densehmm-studio"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def png_path(size: int, root: pathlib.Path = ICON_DIR) -> pathlib.Path:
    """Path of the PNG of edge length ``size`` inside the hicolor tree under ``root``."""
    return root / "hicolor" / f"{size}x{size}" / "apps" / f"{ICON_NAME}.png"


def render(svg: pathlib.Path = SVG, sizes=SIZES, root: pathlib.Path = ICON_DIR):
    """Render ``svg`` at every size; return the written paths.

    Raises
    ------
    ValueError
        If Qt cannot parse the SVG.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer
    from PySide6.QtWidgets import QApplication

    # a QApplication (not just a QGuiApplication): inside a test session, widget tests that run
    # later reuse whatever application object exists
    app = QGuiApplication.instance() or QApplication([sys.argv[0]])  # noqa: F841 (keeps Qt alive)
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg}: Qt cannot parse this SVG")
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
        renderer.render(painter)
        painter.end()
        out = png_path(size, root)
        out.parent.mkdir(parents=True, exist_ok=True)
        with fileio.atomic_path(out, suffix=".png") as tmp:  # the project's one atomic writer
            if not image.save(tmp, "PNG"):
                raise OSError(f"{out}: could not write PNG")
        written.append(out)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that every PNG exists (tests/test_packaging.py checks they match the SVG)")
    args = parser.parse_args(argv)
    if args.check:
        missing = [p for p in map(png_path, SIZES) if not p.is_file()]
        for p in missing:
            print(f"missing: {p.relative_to(REPO)}", file=sys.stderr)
        return 1 if missing else 0
    for p in render():
        print(p.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())

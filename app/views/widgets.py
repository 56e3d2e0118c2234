"""Widgets shared by the plotting views: placeholders, page stacks, compact boxes, the job header and
the colour key (the plot axes are in :mod:`app.views.axes`).

Display code, no model maths.  (The one wrapping layout is :class:`app.flow.FlowLayout`.)
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["Placeholder", "PageStack", "HeaderLabel", "ColorKey", "CompactComboBox", "smart_minimum"]


class Placeholder(QtWidgets.QLabel):
    """Centered grey text shown where a view has nothing to show yet."""

    def __init__(self, text: str, parent=None) -> None:
        super().__init__(text, parent)
        self.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        pal = self.palette()
        pal.setColor(QtGui.QPalette.ColorRole.WindowText,
                     pal.color(QtGui.QPalette.ColorGroup.Disabled, QtGui.QPalette.ColorRole.WindowText))
        self.setPalette(pal)


def smart_minimum(widget: QtWidgets.QWidget) -> QtCore.QSize:
    """The minimum size a layout gives ``widget`` (Qt's ``qSmartMinSize``): its explicit minimum where set,
    otherwise its minimum size hint (its size hint where its policy cannot shrink), 0 where its policy is
    Ignored."""
    policy = widget.sizePolicy()
    hint, min_hint, explicit = widget.sizeHint(), widget.minimumSizeHint(), widget.minimumSize()
    ignored = QtWidgets.QSizePolicy.Policy.Ignored
    shrink = QtWidgets.QSizePolicy.PolicyFlag.ShrinkFlag.value

    def side(pol, h: int, mh: int, ex: int) -> int:
        if ex > 0:
            return ex
        if pol == ignored:
            return 0
        return max(mh if pol.value & shrink else max(h, mh), 0)

    return QtCore.QSize(side(policy.horizontalPolicy(), hint.width(), min_hint.width(), explicit.width()),
                        side(policy.verticalPolicy(), hint.height(), min_hint.height(), explicit.height()))


class PageStack(QtWidgets.QStackedWidget):
    """A stacked widget as small as the page it shows.

    Qt's stacked widget asks for the largest minimum over all its pages, so a hidden page (the top-words
    table behind the emission heatmap) widened the page shown, and on a small screen (1024 x 600) the
    dashboard scrolled sideways.  Here the size hints are the current page's and follow it when the page
    changes or its own minimum does.  (Where a placeholder stands in for views whose room the window's
    first layout must keep, the dashboard's live page, a plain stack stays.)
    """

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None) -> None:
        super().__init__(parent)
        self.currentChanged.connect(lambda _index: self.updateGeometry())

    def _margins(self) -> QtCore.QSize:
        m = self.contentsMargins()
        return QtCore.QSize(m.left() + m.right(), m.top() + m.bottom())

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        page = self.currentWidget()
        if page is None:
            return super().sizeHint()
        return page.sizeHint().expandedTo(smart_minimum(page)) + self._margins()

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 (Qt API)
        page = self.currentWidget()
        if page is None:
            return super().minimumSizeHint()
        return smart_minimum(page) + self._margins()

    def event(self, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.LayoutRequest:   # the page's minimum may have changed
            self.updateGeometry()
        return super().event(event)


class CompactComboBox(QtWidgets.QComboBox):
    """A combo box as narrow as ``chars`` characters: a long item (a model type, a file name) must not
    set its panel's minimum width.  Closed, the current item is elided ("…") when the box is narrow,
    and its tooltip then names it whole (after the box's own tooltip); the list it opens is as wide as
    its longest item (Qt widens the popup)."""

    def __init__(self, chars: int = 14, parent=None) -> None:
        super().__init__(parent)
        self.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(int(chars))
        self._own_tip = ""
        self._shown: tuple = (False, "")   # (elided, full text) at the last paint

    def is_elided(self) -> bool:
        """Whether the current item is drawn elided (at the last paint)."""
        return bool(self._shown[0])

    def setToolTip(self, text: str) -> None:  # noqa: N802 (Qt API)
        self._own_tip = str(text)
        super().setToolTip(self._own_tip)

    def paintEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        painter = QtWidgets.QStylePainter(self)
        opt = QtWidgets.QStyleOptionComboBox()
        self.initStyleOption(opt)
        painter.drawComplexControl(QtWidgets.QStyle.ComplexControl.CC_ComboBox, opt)
        field = self.style().subControlRect(QtWidgets.QStyle.ComplexControl.CC_ComboBox, opt,
                                            QtWidgets.QStyle.SubControl.SC_ComboBoxEditField, self)
        room = field.width() - (opt.iconSize.width() + 4 if not opt.currentIcon.isNull() else 0)
        full = opt.currentText
        opt.currentText = self.fontMetrics().elidedText(full, QtCore.Qt.TextElideMode.ElideRight, max(0, room))
        elided = opt.currentText != full
        if (elided, full) != self._shown:
            self._shown = (elided, full)
            tip = f"{self._own_tip}\n\n{full}" if elided and self._own_tip else (full if elided else self._own_tip)
            super().setToolTip(tip)
        painter.drawControl(QtWidgets.QStyle.ControlElement.CE_ComboBoxLabel, opt)


class HeaderLabel(QtWidgets.QWidget):
    """A one-to-``max_lines`` line header that never clips.

    The text is broken into lines at its separators (``"  ·  "``, ``"  —  "``, then
    spaces); when it needs more than ``max_lines`` lines the last one is elided ("…")
    and the whole text is in the tooltip.  Its height is fixed (``max_lines`` lines), so
    a header that changes with every progress event never re-lays out the views beneath
    it, and its width never sets the page's minimum width.  It paints itself, so an
    exported figure shows exactly what is on screen.
    """

    SEPARATORS = ("  —  ", "  ·  ")

    def __init__(self, text: str = "", max_lines: int = 2, bold: bool = True, parent=None) -> None:
        super().__init__(parent)
        self._text = ""
        self._lines: List[str] = []
        self._elided = False
        self._tip_extra = ""
        self._max_lines = max(1, int(max_lines))
        if bold:
            f = self.font()
            f.setBold(True)
            self.setFont(f)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(10)
        self._fix_height()
        self.setText(text)

    # ------------------------------------------------------------------ API
    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 (QLabel-like API)
        text = str(text)
        if text == self._text:
            return
        self._text = text
        self._relayout()
        self.update()

    def set_extra_tip(self, text: str) -> None:
        """Extra text for the tooltip (a view's error, a file's full path), shown below the full text."""
        self._tip_extra = str(text or "")
        self._update_tip()

    def visible_lines(self) -> List[str]:
        """The lines drawn at the current width."""
        return list(self._lines)

    def is_elided(self) -> bool:
        """Whether some of the text is left out on screen (it is then in the tooltip)."""
        return self._elided

    # ------------------------------------------------------------- internals
    def _fix_height(self) -> None:
        fm = QtGui.QFontMetrics(self.font())
        self.setFixedHeight(fm.lineSpacing() * self._max_lines + 4)

    def changeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        if ev.type() == QtCore.QEvent.Type.FontChange:
            self._fix_height()
            self._relayout()
        super().changeEvent(ev)

    def resizeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(ev)
        self._relayout()

    def _tokens(self) -> List[str]:
        """Pieces the text may break between (each keeps its leading separator)."""
        parts = [self._text]
        for sep in self.SEPARATORS:
            out = []
            for p in parts:
                bits = p.split(sep)
                out.extend([bits[0]] + [sep + b for b in bits[1:]])
            parts = out
        return [p for p in parts if p]

    def _relayout(self) -> None:
        fm = QtGui.QFontMetricsF(self.font())
        width = max(10.0, float(self.width() - 4))
        lines: List[str] = []
        cur = ""
        for tok in self._tokens():
            cand = cur + tok
            if not cur or fm.horizontalAdvance(cand) <= width:
                cur = cand
                continue
            lines.append(cur)
            cur = tok.lstrip(" ·—") if tok.startswith(self.SEPARATORS) else tok
        if cur:
            lines.append(cur)
        # a piece wider than the line breaks at spaces
        wrapped: List[str] = []
        for line in lines:
            while fm.horizontalAdvance(line) > width and " " in line.strip():
                words = line.split(" ")
                head = ""
                for i in range(len(words)):
                    cand = " ".join(words[:i + 1])
                    if fm.horizontalAdvance(cand) > width and head:
                        break
                    head = cand
                if not head or head == line:
                    break
                wrapped.append(head.rstrip())
                line = line[len(head):].lstrip()
            wrapped.append(line)
        elided = len(wrapped) > self._max_lines
        if elided:
            rest = " ".join(wrapped[self._max_lines - 1:])
            wrapped = wrapped[:self._max_lines - 1] + [rest]
        out = []
        for line in wrapped:
            short = fm.elidedText(line, QtCore.Qt.TextElideMode.ElideRight, width)
            elided = elided or short != line
            out.append(short)
        self._lines, self._elided = out, elided
        self._update_tip()

    def _update_tip(self) -> None:
        tip = self._text if self._elided else ""
        if self._tip_extra:
            tip = f"{tip}\n{self._tip_extra}" if tip else self._tip_extra
        self.setToolTip(tip)

    def paintEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        p = QtGui.QPainter(self)
        p.setPen(self.palette().color(QtGui.QPalette.ColorRole.WindowText))
        p.setFont(self.font())
        fm = QtGui.QFontMetrics(self.font())
        y = 2 + fm.ascent()
        for line in self._lines:
            p.drawText(2, y, line)
            y += fm.lineSpacing()
        p.end()


class ColorKey(QtWidgets.QLabel):
    """A key of categorical colours (``■ 0  ■ 1  …``) in at most ``max_lines`` lines that never clips.

    The entries are laid out for the current width; those that do not fit end the last line as
    "… +K more", and the tooltip then says where to read them (``more_tip``).  Its width never
    sets the page's minimum width.
    """

    def __init__(self, caption: str, max_lines: int = 2, more_tip: str = "", parent=None) -> None:
        super().__init__(parent)
        self._caption = str(caption)
        self._max_lines = max(1, int(max_lines))
        self._more_tip = str(more_tip)
        self._colors: List[QtGui.QColor] = []
        self._shown = 0
        self.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(10)
        self._relayout()

    def set_colors(self, colors: Sequence[QtGui.QColor]) -> None:
        """One entry per colour, numbered from 0 (none: the key is empty)."""
        self._colors = list(colors)
        self._relayout()

    def shown(self) -> int:
        """How many entries are listed at the current width."""
        return self._shown

    def resizeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(ev)
        self._relayout()

    def changeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        if ev.type() == QtCore.QEvent.Type.FontChange:
            self._relayout()
        super().changeEvent(ev)

    def _relayout(self) -> None:
        fm = QtGui.QFontMetricsF(self.font())
        width = max(10.0, float(self.width() - 4))
        n = len(self._colors)
        sep = fm.horizontalAdvance("\u00a0\u00a0 ")

        def advance(i: int) -> float:
            return fm.horizontalAdvance(f"\u25a0\u00a0{i}") + sep

        caption = fm.horizontalAdvance(self._caption + " ") if self._caption else 0.0
        lines: List[List[int]] = [[]]
        used = caption
        for i in range(n):
            if lines[-1] and used + advance(i) > width:
                lines.append([])
                used = 0.0
            lines[-1].append(i)
            used += advance(i)
        if len(lines) > self._max_lines:
            lines = lines[:self._max_lines]
            more = fm.horizontalAdvance(f"… +{n} more")
            last = lines[-1]
            start = caption if len(lines) == 1 else 0.0   # the caption shares the first line
            while len(last) > 1 and start + sum(advance(i) for i in last) + more > width:
                last.pop()
        self._shown = sum(len(line) for line in lines)
        rows = ["&nbsp;&nbsp; ".join(f"<span style='color:{self._colors[i].name()}'>&#9632;</span>&nbsp;{i}"
                                     for i in line) for line in lines]
        if rows and self._caption:
            rows[0] = f"{self._caption} {rows[0]}"
        if self._shown < n:
            rows[-1] += f"&nbsp;&nbsp; … +{n - self._shown} more"
        self.setText("<br>".join(rows) if n else "")
        self.setToolTip(self._more_tip if self._shown < n else "")
        lh = fm.lineSpacing()
        self.setFixedHeight(int(math.ceil(lh * max(1, len(rows) if n else 1))) + 4)

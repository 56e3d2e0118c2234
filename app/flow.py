"""THE wrapping layout of the app: widgets left to right, onto further lines when the width runs out
(the Jobs panel's buttons in a narrow dock, the embeddings' legend row)."""
from __future__ import annotations

from typing import List, Optional

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem

__all__ = ["FlowLayout"]


class FlowLayout(QLayout):
    """Items left to right at their size hints, wrapped onto as many lines as the width needs.

    Parameters
    ----------
    spacing : int
        Pixels between items (and between lines, unless ``line_spacing`` is given).
    line_spacing : int, optional
        Pixels between lines.
    right_from : int, optional
        When every item fits on one line, the items from this index on sit at the line's
        right end (like a stretch before them in a :class:`QHBoxLayout`); once the items
        wrap they simply follow the others.
    """

    def __init__(self, parent=None, spacing: int = 6, right_from: Optional[int] = None,
                 line_spacing: Optional[int] = None) -> None:
        super().__init__(parent)
        self._items: List[QLayoutItem] = []
        self._spacing = int(spacing)
        self._line_spacing = self._spacing if line_spacing is None else int(line_spacing)
        self.right_from = right_from

    # QLayout's interface --------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt's name
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):  # noqa: N802
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self):  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._place(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._place(rect, apply=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        """Everything on one line."""
        shown = self._shown()
        m = self.contentsMargins()
        w = sum(i.sizeHint().width() for i in shown) + self._spacing * max(0, len(shown) - 1)
        h = max((i.sizeHint().height() for i in shown), default=0)
        return QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802
        """As narrow as the widest item (one item per line)."""
        shown = self._shown()
        m = self.contentsMargins()
        w = max((i.sizeHint().width() for i in shown), default=0)
        h = max((i.sizeHint().height() for i in shown), default=0)
        return QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    # placing ------------------------------------------------------------------
    def _shown(self) -> List[QLayoutItem]:
        return [i for i in self._items if not i.isEmpty()]

    def lines(self, width: int) -> List[List[QLayoutItem]]:
        """The items of each line at ``width`` pixels (margins included)."""
        m = self.contentsMargins()
        room = max(0, width - m.left() - m.right())
        lines: List[List[QLayoutItem]] = []
        x = 0
        for item in self._shown():
            w = item.sizeHint().width()
            if lines and lines[-1] and x + self._spacing + w <= room:
                lines[-1].append(item)
                x += self._spacing + w
            else:
                lines.append([item])
                x = w
        return lines

    def _place(self, rect: QRect, apply: bool) -> int:
        """Lay the items out in ``rect`` (when ``apply``); returns the height they need."""
        m = self.contentsMargins()
        lines = self.lines(rect.width())
        right_end = rect.x() + rect.width() - m.right()
        y = rect.y() + m.top()
        shown = self._shown()
        first_right = None
        if len(lines) == 1 and self.right_from is not None:
            rest = [i for i in self._items[self.right_from:] if not i.isEmpty()]
            first_right = shown.index(rest[0]) if rest else None
        for k, line in enumerate(lines):
            height = max(i.sizeHint().height() for i in line)
            x = rect.x() + m.left()
            if apply:
                for j, item in enumerate(line):
                    size = item.sizeHint()
                    if first_right is not None and j == first_right:   # the rest sits at the right end
                        tail = line[j:]
                        x = max(x, right_end - sum(i.sizeHint().width() for i in tail)
                                - self._spacing * (len(tail) - 1))
                    item.setGeometry(QRect(QPoint(x, y + (height - size.height()) // 2), size))
                    x += size.width() + self._spacing
            y += height + (self._line_spacing if k < len(lines) - 1 else 0)
        return y - rect.y() + m.bottom()

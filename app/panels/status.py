"""A status-bar label that is never cut: it keeps the width of its whole text (the temporary
message beside it gives way instead), the long form in its tooltip."""
from __future__ import annotations

from PySide6.QtWidgets import QLabel

__all__ = ["StatusLabel"]


class StatusLabel(QLabel):
    """``setText(text, tip="")``: the short text shown in full, ``tip`` (default ``text``) as tooltip."""

    def setText(self, text: str, tip: str = "") -> None:  # noqa: N802 (Qt API)
        super().setText(text)
        self.setToolTip(tip or text)
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance(text) + 2 * self.margin() + 8)

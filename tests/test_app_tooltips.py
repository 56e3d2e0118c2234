"""Help inside the app: every control of the Data panel a user can change explains itself in a tooltip
(the newcomer audit of 2026-12-08 found eight without one).  Offscreen Qt."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtWidgets  # noqa: E402


def test_every_data_panel_control_has_a_tooltip(qtbot):
    from app.panels.data_panel import DataPanel
    panel = DataPanel()
    qtbot.addWidget(panel)
    kinds = (QtWidgets.QAbstractSpinBox, QtWidgets.QAbstractButton, QtWidgets.QComboBox, QtWidgets.QLineEdit)
    controls = [w for w in panel.findChildren(QtWidgets.QWidget) if isinstance(w, kinds)
                and not isinstance(w.parent(), (QtWidgets.QAbstractSpinBox, QtWidgets.QComboBox))]
    assert len(controls) > 15
    missing = [w.text() if hasattr(w, "text") else (w.objectName() or type(w).__name__)
               for w in controls if not w.toolTip().strip()]
    assert not missing, missing

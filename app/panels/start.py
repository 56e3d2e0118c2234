"""The start view: demo data set, Open, recent files and a drop hint."""
from __future__ import annotations

import os
from typing import List

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton,
                               QSizePolicy, QVBoxLayout, QWidget)

from ..resources import app_icon

__all__ = ["StartView"]


class StartView(QWidget):
    """First thing a new user sees: one click to a trainable data set."""

    demo_requested = Signal()
    open_requested = Signal()
    recent_requested = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        box = QFrame()
        box.setMaximumWidth(720)
        lay = QVBoxLayout(box)
        head = QHBoxLayout()
        icon = QLabel()
        pm = app_icon().pixmap(64, 64)
        if not pm.isNull():
            icon.setPixmap(pm)
        head.addWidget(icon)
        title = QLabel("<h1 style='margin:0'>DenseHMM Studio</h1>"
                       "<div>Hidden Markov models learned through dense representations</div>")
        head.addWidget(title, 1)
        lay.addLayout(head)
        lay.addSpacing(12)
        intro = QLabel(
            "Start with the built-in demo data set (the paper's synthetic setup: a random "
            "Dirichlet(0.1) HMM with n = m = 5, 50 training and 50 test sequences of length 200), "
            "then press <b>Train</b> in the Model panel.")
        intro.setWordWrap(True)
        lay.addWidget(intro)
        buttons = QHBoxLayout()
        self.demo_button = QPushButton("Use the demo data set")
        self.demo_button.setObjectName("demoButton")
        self.demo_button.setDefault(True)
        self.demo_button.clicked.connect(self.demo_requested)
        self.open_button = QPushButton("Open a file…")
        self.open_button.clicked.connect(self.open_requested)
        for b in (self.demo_button, self.open_button):
            b.setMinimumHeight(34)
            buttons.addWidget(b)
        buttons.addStretch(1)
        lay.addLayout(buttons)
        lay.addSpacing(12)
        lay.addWidget(QLabel("<b>Recent files</b>"))
        self.recent = QListWidget()
        self.recent.setMaximumHeight(160)
        self.recent.setTextElideMode(Qt.ElideMiddle)
        self.recent.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.recent.itemActivated.connect(lambda it: self.recent_requested.emit(it.data(Qt.UserRole)))
        self.recent.itemClicked.connect(lambda it: self.recent_requested.emit(it.data(Qt.UserRole)))
        lay.addWidget(self.recent)
        self.no_recent = QLabel("<i>No recent files yet.</i>")
        lay.addWidget(self.no_recent)
        lay.addSpacing(12)
        hint = QLabel("Tip: drop FASTA files, tagged corpora (word_TAG, word/TAG, Penn Treebank .mrg, "
                      "CoNLL, CoNLL-U, MedPost .ioc) or .h5 model files anywhere on this window — "
                      "several at once.")
        hint.setWordWrap(True)
        hint.setObjectName("dropHint")
        hint.setStyleSheet("QLabel#dropHint { border: 2px dashed palette(mid); border-radius: 8px; padding: 14px; }")
        hint.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Minimum)
        lay.addWidget(hint)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(box, 3)
        row.addStretch(1)
        outer.addLayout(row)
        outer.addStretch(2)
        self.set_recent_files([])

    def set_recent_files(self, files: List[str]) -> None:
        self.recent.clear()
        for f in files:
            it = QListWidgetItem(f"{os.path.basename(f)}    —    {os.path.dirname(f)}")
            it.setData(Qt.UserRole, f)
            it.setToolTip(f)
            self.recent.addItem(it)
        self.recent.setVisible(bool(files))
        self.no_recent.setVisible(not files)

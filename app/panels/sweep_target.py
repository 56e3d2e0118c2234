"""Where Run sweep trains: this app's worker pool, a local Dask cluster or a Dask scheduler."""
from __future__ import annotations

from typing import Optional, Tuple

from PySide6.QtWidgets import (QButtonGroup, QDialog, QDialogButtonBox, QFileDialog, QGridLayout, QHBoxLayout,
                               QLabel, QLineEdit, QPushButton, QRadioButton, QVBoxLayout, QWidget)

__all__ = ["SweepTargetDialog"]


class SweepTargetDialog(QDialog):
    """Edits the two settings of Dask sweeps: the target (``""``, ``"local"`` or an address)
    and the shared folder the workers save their models to."""

    def __init__(self, target: str = "", shared_dir: str = "", parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Where sweeps run")
        self.setMinimumWidth(540)
        lay = QVBoxLayout(self)
        grid = QGridLayout()
        self.here = QRadioButton("This app's worker pool (live matrices for every job)")
        self.local = QRadioButton("A local Dask cluster (one worker process per parallel job, private to this app)")
        self.local.setToolTip("TLS with credentials made for each sweep, listening on 127.0.0.1 only, "
                              "no dashboard: no other process can connect")
        self.remote = QRadioButton("A Dask scheduler:")
        self.group = QButtonGroup(self)
        for b in (self.here, self.local, self.remote):
            self.group.addButton(b)
        self.address = QLineEdit()
        self.address.setPlaceholderText("tls://host:8786 or tcp://host:8786")
        self.address.setToolTip("tls:// uses the certificates of Dask's configuration "
                                "(distributed.comm.tls.ca-file, distributed.comm.tls.client.cert)")
        grid.addWidget(self.here, 0, 0, 1, 2)
        grid.addWidget(self.local, 1, 0, 1, 2)
        grid.addWidget(self.remote, 2, 0)
        grid.addWidget(self.address, 2, 1)
        lay.addLayout(grid)
        shared = QHBoxLayout()
        shared.addWidget(QLabel("Shared folder:"))
        self.shared = QLineEdit(shared_dir)
        self.shared.setPlaceholderText("none: remote runs show their metrics only")
        self.shared.setToolTip("A folder every Dask worker can write (shared storage): each remote run "
                               "saves its model there and the app shows it when the run ends")
        shared.addWidget(self.shared, 1)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        shared.addWidget(browse)
        lay.addLayout(shared)
        note = QLabel("Remote runs appear in the Jobs panel with their state and final metrics; "
                      "their final model is shown when it reaches the app as a file "
                      "(a local cluster always writes to this machine).")
        note.setWordWrap(True)
        lay.addWidget(note)
        trust = QLabel("A Dask scheduler you name is trusted: results come back as pickles, so whoever "
                       "controls its scheduler or a worker can run code in this app. Use tls:// on a "
                       "shared network (docs/DISTRIBUTED.md).")
        trust.setWordWrap(True)
        lay.addWidget(trust)
        self.problem = QLabel("")   # why the address cannot be used (shown on OK)
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #b00020")
        self.problem.hide()
        lay.addWidget(self.problem)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        if target == "local":
            self.local.setChecked(True)
        elif target:
            self.remote.setChecked(True)
            self.address.setText(target)
        else:
            self.here.setChecked(True)
        self.group.buttonToggled.connect(lambda *_: self._sync())
        self.address.textEdited.connect(lambda _: self.remote.setChecked(True))
        self.address.textEdited.connect(lambda _: self.problem.hide())
        self._sync()

    def _sync(self) -> None:
        self.shared.setEnabled(not self.here.isChecked())
        self.problem.hide()

    def accept(self) -> None:
        """Close with OK, unless the scheduler's address is malformed (then say why, stay open)."""
        if self.remote.isChecked():
            from ..remote_jobs import target_problem
            address = self.address.text().strip()
            reason = target_problem(address) if address else "enter the scheduler's address, e.g. tls://host:8786"
            if reason:
                self.problem.setText(reason)
                self.problem.show()
                self.adjustSize()
                return
        super().accept()

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Shared folder for the models of remote runs",
                                                  self.shared.text())
        if folder:
            self.shared.setText(folder)

    def values(self) -> Tuple[str, str]:
        """``(target, shared_dir)``: target ``""``, ``"local"`` or the address."""
        if self.local.isChecked():
            target = "local"
        elif self.remote.isChecked():
            target = self.address.text().strip()
        else:
            target = ""
        return target, self.shared.text().strip()

"""The Jobs panel: one row per job with state, progress bar, elapsed/ETA, device and Cancel."""
from __future__ import annotations

from typing import Dict, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QProgressBar, QPushButton,
                               QSpinBox, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from ..jobs import Job, JobState

__all__ = ["JobsPanel", "format_seconds"]

COLS = ["Job", "Data", "State", "Progress", "Elapsed", "ETA", "Device", "Result", ""]
C_NAME, C_DATA, C_STATE, C_PROG, C_ELAPSED, C_ETA, C_DEVICE, C_RESULT, C_CANCEL = range(len(COLS))

_STATE_COLOURS = {
    JobState.DIVERGED: QColor("#c62828"),
    JobState.FAILED: QColor("#c62828"),
    JobState.CANCELLED: QColor("#8a6d00"),
    JobState.FINISHED: QColor("#2e7d32"),
}


def format_seconds(s: Optional[float]) -> str:
    if s is None:
        return "—"
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


class JobsPanel(QWidget):
    """Lists the jobs of a :class:`~app.jobs.JobManager`.

    Signals: ``current_changed(job or None)``, ``cancel_requested(job)``, ``export_requested(list)``,
    ``compare_requested(job, job)``, ``score_requested(job)``, ``pool_size_changed(int)``.
    """

    current_changed = Signal(object)
    cancel_requested = Signal(object)
    export_requested = Signal(object)
    compare_requested = Signal(object, object)
    score_requested = Signal(object)
    pool_size_changed = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.items: Dict[int, QTreeWidgetItem] = {}
        self.bars: Dict[int, QProgressBar] = {}
        self._styled: Dict[int, object] = {}   # job id -> the state its row colours show
        self.cancel_buttons: Dict[int, QPushButton] = {}
        self.jobs: Dict[int, Job] = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.cancel_sel = QPushButton("Cancel selected")
        self.cancel_sel.clicked.connect(lambda: [self.cancel_requested.emit(j) for j in self.selected_jobs()])
        self.export_btn = QPushButton("Export .h5…")
        self.export_btn.setToolTip("Save the selected jobs' models (or all jobs of their sweep) to an HDF5 file")
        self.export_btn.clicked.connect(lambda: self.export_requested.emit(self.selected_jobs()))
        self.compare_btn = QPushButton("Compare")
        self.compare_btn.setToolTip("Select two finished jobs: metrics table and matrix differences")
        self.compare_btn.clicked.connect(self._compare)
        self.score_btn = QPushButton("Score on data")
        self.score_btn.setToolTip("Score the selected model on the current data set (normalised NLL)")
        self.score_btn.clicked.connect(lambda: [self.score_requested.emit(j) for j in self.selected_jobs()])
        for b in (self.cancel_sel, self.export_btn, self.compare_btn, self.score_btn):
            bar.addWidget(b)
        bar.addStretch(1)
        bar.addWidget(QLabel("Parallel jobs"))
        self.pool = QSpinBox(); self.pool.setRange(1, 64)
        self.pool.setToolTip("Size of the training thread pool")
        self.pool.valueChanged.connect(self.pool_size_changed)
        bar.addWidget(self.pool)
        lay.addLayout(bar)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLS))
        self.tree.setHeaderLabels(COLS)
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.tree.setAlternatingRowColors(True)
        h = self.tree.header()
        h.setStretchLastSection(False)
        h.setSectionResizeMode(C_NAME, QHeaderView.Interactive)
        h.setSectionResizeMode(C_RESULT, QHeaderView.Stretch)
        self.tree.setColumnWidth(C_NAME, 260)
        self.tree.setColumnWidth(C_DATA, 150)
        self.tree.setColumnWidth(C_STATE, 80)
        self.tree.setColumnWidth(C_PROG, 190)
        self.tree.setColumnWidth(C_ELAPSED, 70)
        self.tree.setColumnWidth(C_ETA, 70)
        self.tree.setColumnWidth(C_DEVICE, 70)
        self.tree.setColumnWidth(C_CANCEL, 70)
        self.tree.currentItemChanged.connect(self._current_changed)
        lay.addWidget(self.tree)

    # ------------------------------------------------------------ queries
    def job_for_item(self, item) -> Optional[Job]:
        return None if item is None else self.jobs.get(item.data(0, Qt.UserRole))

    def current_job(self) -> Optional[Job]:
        return self.job_for_item(self.tree.currentItem())

    def selected_jobs(self) -> List[Job]:
        jobs = [self.job_for_item(it) for it in self.tree.selectedItems()]
        jobs = [j for j in jobs if j is not None]
        if not jobs and self.current_job() is not None:
            jobs = [self.current_job()]
        return jobs

    def select(self, job: Job) -> None:
        item = self.items.get(job.id)
        if item is not None:
            self.tree.setCurrentItem(item)

    # ------------------------------------------------------------ updates
    def add_job(self, job: Job) -> None:
        item = QTreeWidgetItem([""] * len(COLS))
        item.setData(0, Qt.UserRole, job.id)
        self.jobs[job.id] = job
        self.items[job.id] = item
        self.tree.addTopLevelItem(item)
        bar = QProgressBar()
        bar.setRange(0, 1000)
        bar.setTextVisible(True)
        bar.setMaximumHeight(18)
        self.bars[job.id] = bar
        self.tree.setItemWidget(item, C_PROG, bar)
        btn = QPushButton("Cancel")
        btn.setMaximumHeight(22)
        btn.clicked.connect(lambda _=False, j=job: self.cancel_requested.emit(j))
        self.cancel_buttons[job.id] = btn
        self.tree.setItemWidget(item, C_CANCEL, btn)
        self.update_job(job)
        if self.tree.currentItem() is None:
            self.tree.setCurrentItem(item)

    def remove_job(self, job: Job) -> None:
        item = self.items.pop(job.id, None)
        if item is not None:
            self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(item))
        self.bars.pop(job.id, None); self.cancel_buttons.pop(job.id, None); self.jobs.pop(job.id, None)
        self._styled.pop(job.id, None)

    def update_job(self, job: Job) -> None:
        item = self.items.get(job.id)
        if item is None:
            return
        ds = getattr(job.dataset, "name", "") if job.dataset is not None else ""
        result = job.reason
        if job.state == JobState.RUNNING and job.last_event is not None and job.last_event.loss is not None:
            result = f"loss {job.last_event.loss:.6g}"
        if getattr(job, "score_text", ""):
            result = (result + "  ·  " if result else "") + job.score_text
        texts = {C_NAME: job.name, C_DATA: ds, C_STATE: job.state.value,
                 C_ELAPSED: format_seconds(job.elapsed) if job.started_at is not None else "—",
                 C_ETA: format_seconds(job.eta), C_DEVICE: job.device, C_RESULT: result}
        # Only touch what changed: every set* call on an item repaints the tree.
        for col, text in texts.items():
            if item.text(col) != text:
                item.setText(col, text)
        tips = {C_NAME: job.name, C_DATA: ds,
                C_RESULT: job.reason + (("\n\n" + job.error) if job.error else "")}
        for col, tip in tips.items():
            if item.toolTip(col) != tip:
                item.setToolTip(col, tip)
        if self._styled.get(job.id) != job.state:
            self._styled[job.id] = job.state
            colour = _STATE_COLOURS.get(job.state)
            for c in range(len(COLS)):
                item.setForeground(c, QBrush(colour) if colour is not None and c in (C_STATE, C_RESULT) else QBrush())
                if job.state in (JobState.DIVERGED, JobState.FAILED):
                    item.setBackground(c, QBrush(QColor(198, 40, 40, 45)))
        bar = self.bars.get(job.id)
        if bar is not None:
            frac = job.fraction
            if frac is None and job.state == JobState.RUNNING:
                if bar.maximum() != 0:
                    bar.setRange(0, 0)   # busy indicator
            else:
                if bar.maximum() != 1000:
                    bar.setRange(0, 1000)
                value = int(round(1000 * (frac or 0.0)))
                if bar.value() != value:
                    bar.setValue(value)
                fmt = f"{job.step}/{job.total}" if job.total else "%p%"
                if bar.format() != fmt:
                    bar.setFormat(fmt)
        btn = self.cancel_buttons.get(job.id)
        if btn is not None:
            btn.setEnabled(not job.state.is_final)

    def set_pool_size(self, n: int) -> None:
        self.pool.blockSignals(True)
        self.pool.setValue(n)
        self.pool.blockSignals(False)

    # ------------------------------------------------------------ private
    def _current_changed(self, cur, _prev) -> None:
        self.current_changed.emit(self.job_for_item(cur))

    def _compare(self) -> None:
        jobs = [j for j in self.selected_jobs() if j.state.has_model]
        if len(jobs) >= 2:
            self.compare_requested.emit(jobs[0], jobs[1])
        else:
            self.compare_requested.emit(None, None)

"""The Jobs panel: a sortable results table of every job, with the jobs of a sweep grouped.

One row per job: state, progress bar, the model (kind, n, l, parameters), its results
(train and test NLL per token, MAD, iterations, stop reason), time, device and Cancel.
The numbers come from :func:`app.jobrows.job_row`.  Clicking a header sorts by that
column (numbers as numbers, unknown values last); the jobs of a sweep sit under one
group row that says how many of them finished.
"""
from __future__ import annotations

import math
import re
from typing import Dict, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QHBoxLayout, QHeaderView, QLabel, QProgressBar,
                               QPushButton, QSpinBox, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from ..jobrows import job_row
from ..jobs import Job, JobState

__all__ = ["JobsPanel", "format_seconds", "COLUMNS"]

#: (header, row key or None, tooltip)
COLUMNS = [
    ("Job", "name", "The job's name; the jobs of a sweep are grouped under it"),
    ("State", "state", "queued, running, finished, cancelled, diverged or failed"),
    ("Progress", None, "Steps done of the maximum"),
    ("Model", "model", "Model kind"),
    ("n", "n", "Hidden states"),
    ("l", "l", "Embedding length (Standard-fair: the l whose parameter count it matches)"),
    ("Params", "parameters", "Free parameters of the model"),
    ("Train NLL", "train_nll", "Final normalised negative log-likelihood per token, training data"),
    ("Test NLL", "test_nll", "Final normalised negative log-likelihood per token, held-out data"),
    ("MAD", "mad", "Final mean absolute deviation of the model's co-occurrence matrix from the data's"),
    ("Iter.", "iterations", "Steps (co-occurrence fit) or EM / Baum-Welch iterations done"),
    ("Stop", "stop", "Why training stopped"),
    ("Time", "time_s", "Seconds the job ran (ETA while running)"),
    ("Device", "device", "Where the job ran"),
    ("Data", "data", "The data set the job trained on"),
    ("Result", "result", "Final test NLL per token (score on other data after it)"),
    ("", None, ""),
]
(C_NAME, C_STATE, C_PROG, C_MODEL, C_N, C_L, C_PARAMS, C_TRAIN, C_TEST, C_MAD, C_ITER, C_STOP, C_TIME,
 C_DEVICE, C_DATA, C_RESULT, C_CANCEL) = range(len(COLUMNS))
_KEYS = {c: key for c, (_h, key, _t) in enumerate(COLUMNS) if key}
_NUMERIC = {C_N, C_L, C_PARAMS, C_TRAIN, C_TEST, C_MAD, C_ITER, C_TIME, C_RESULT}

SORT_ROLE = Qt.UserRole + 1

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


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3g}"
    return str(value)


def _natural(text) -> tuple:
    """Sort key of a text: case-insensitive, numbers by value ("n=3" before "n=10")."""
    parts = re.split(r"(\d+)", str(text or "").lower())
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


class _Item(QTreeWidgetItem):
    """Sorts numeric columns by number, unknown values last, and text columns case-insensitively."""

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        tree = self.treeWidget()
        col = tree.sortColumn() if tree is not None else 0
        a, b = self.data(col, SORT_ROLE), other.data(col, SORT_ROLE)
        if col in _NUMERIC:
            a = math.inf if a is None else float(a)
            b = math.inf if b is None else float(b)
        else:
            a, b = _natural(a), _natural(b)
        if a != b:
            return a < b
        return str(self.data(0, Qt.UserRole)) < str(other.data(0, Qt.UserRole))  # ties: in job order


class JobsPanel(QWidget):
    """Lists the jobs of a :class:`~app.jobs.JobManager` as a results table.

    Signals: ``current_changed(job or None)``, ``cancel_requested(job)``, ``export_requested(list)``,
    ``compare_requested(job, job)``, ``score_requested(job)``, ``pool_size_changed(int)``,
    ``select_new_changed(bool)``.
    """

    current_changed = Signal(object)
    cancel_requested = Signal(object)
    export_requested = Signal(object)
    compare_requested = Signal(object, object)
    score_requested = Signal(object)
    pool_size_changed = Signal(int)
    select_new_changed = Signal(bool)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.items: Dict[int, QTreeWidgetItem] = {}
        self.groups: Dict[str, QTreeWidgetItem] = {}
        self.bars: Dict[int, QProgressBar] = {}
        self._styled: Dict[int, object] = {}   # job id -> the state its row colours show
        self.cancel_buttons: Dict[int, QPushButton] = {}
        self.jobs: Dict[int, Job] = {}
        self.rows: Dict[int, dict] = {}        # job id -> its newest job_row
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.cancel_sel = QPushButton("Cancel selected")
        self.cancel_sel.clicked.connect(lambda: [self.cancel_requested.emit(j) for j in self.selected_jobs()])
        self.export_btn = QPushButton("Export .h5…")
        self.export_btn.setToolTip("Save the selected jobs' models to an HDF5 file")
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
        self.select_new = QCheckBox("Show new jobs")
        self.select_new.setChecked(True)
        self.select_new.setToolTip("Select a job (the first of a sweep) as soon as it is started, "
                                   "so that the dashboard shows it")
        self.select_new.toggled.connect(self.select_new_changed)
        bar.addWidget(self.select_new)
        bar.addWidget(QLabel("Parallel jobs"))
        self.pool = QSpinBox()
        self.pool.setRange(1, 64)
        self.pool.setToolTip("How many jobs train at once")
        self.pool.valueChanged.connect(self.pool_size_changed)
        bar.addWidget(self.pool)
        lay.addLayout(bar)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels([c[0] for c in COLUMNS])
        for c, (_h, _k, tip) in enumerate(COLUMNS):
            self.tree.headerItem().setToolTip(c, tip)
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSortingEnabled(True)
        self.tree.sortByColumn(C_NAME, Qt.AscendingOrder)
        self.tree.setMinimumHeight(120)
        h = self.tree.header()
        h.setStretchLastSection(False)
        h.setSectionResizeMode(QHeaderView.Interactive)
        widths = {C_NAME: 250, C_STATE: 72, C_PROG: 120, C_MODEL: 96, C_N: 36, C_L: 32, C_PARAMS: 58,
                  C_TRAIN: 78, C_TEST: 78, C_MAD: 70, C_ITER: 56, C_STOP: 90, C_TIME: 66, C_DEVICE: 60,
                  C_DATA: 130, C_RESULT: 150, C_CANCEL: 66}
        for c, w in widths.items():
            self.tree.setColumnWidth(c, w)
        self.tree.currentItemChanged.connect(self._current_changed)
        lay.addWidget(self.tree, 1)

    # ------------------------------------------------------------ queries
    def job_for_item(self, item) -> Optional[Job]:
        if item is None:
            return None
        key = item.data(0, Qt.UserRole)
        return self.jobs.get(key) if isinstance(key, int) else None

    def current_job(self) -> Optional[Job]:
        return self.job_for_item(self.tree.currentItem())

    def selected_jobs(self) -> List[Job]:
        """The selected jobs; a selected sweep row stands for all of its jobs."""
        jobs: List[Job] = []
        for it in self.tree.selectedItems():
            if isinstance(it.data(0, Qt.UserRole), int):
                cands = [self.job_for_item(it)]
            else:
                cands = [self.job_for_item(it.child(i)) for i in range(it.childCount())]
            jobs += [j for j in cands if j is not None and j not in jobs]
        if not jobs and self.current_job() is not None:
            jobs = [self.current_job()]
        return jobs

    def select(self, job: Job) -> None:
        item = self.items.get(job.id)
        if item is not None:
            parent = item.parent()
            if parent is not None:
                parent.setExpanded(True)
            self.tree.setCurrentItem(item)
            self.tree.scrollToItem(item)

    def row(self, job: Job) -> dict:
        """The newest results row of ``job`` (see :func:`app.jobrows.job_row`)."""
        return self.rows.get(job.id) or job_row(job)

    def sweep_rows(self, sweep: str) -> List[dict]:
        """Rows of the finished jobs of ``sweep`` (for the sweep summary view)."""
        return [self.rows[j.id] for j in self.jobs.values()
                if j.sweep == sweep and j.state.has_model and j.id in self.rows]

    def visible_order(self) -> List[int]:
        """Job ids in the order the table shows them (top to bottom, groups expanded)."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            if isinstance(top.data(0, Qt.UserRole), int):
                out.append(top.data(0, Qt.UserRole))
            for k in range(top.childCount()):
                out.append(top.child(k).data(0, Qt.UserRole))
        return out

    # ------------------------------------------------------------ updates
    def _group(self, sweep: str) -> QTreeWidgetItem:
        g = self.groups.get(sweep)
        if g is None:
            g = _Item([""] * len(COLUMNS))
            g.setData(0, Qt.UserRole, f"group:{sweep}")
            g.setData(C_NAME, SORT_ROLE, sweep)
            f = g.font(C_NAME)
            f.setBold(True)
            g.setFont(C_NAME, f)
            self.groups[sweep] = g
            self.tree.addTopLevelItem(g)
            g.setFirstColumnSpanned(True)   # the group's summary reads across the whole row
            g.setExpanded(True)
        return g

    def _update_group(self, sweep: str) -> None:
        g = self.groups.get(sweep)
        if g is None:
            return
        jobs = [self.job_for_item(g.child(i)) for i in range(g.childCount())]
        jobs = [j for j in jobs if j is not None]
        done = sum(j.state.is_final for j in jobs)
        running = sum(j.state == JobState.RUNNING for j in jobs)
        kinds = sorted({self.row(j)["model"] for j in jobs})
        text = f"{sweep}: {', '.join(kinds)} — {len(jobs)} jobs, {done} done" + (f", {running} running"
                                                                                   if running else "")
        if g.text(C_NAME) != text:
            g.setText(C_NAME, text)
            g.setToolTip(C_NAME, text)

    def add_job(self, job: Job) -> None:
        item = _Item([""] * len(COLUMNS))
        item.setData(0, Qt.UserRole, job.id)
        self.jobs[job.id] = job
        self.items[job.id] = item
        sorting = self.tree.isSortingEnabled()
        self.tree.setSortingEnabled(False)   # insert first, then sort once
        if job.sweep:
            self._group(job.sweep).addChild(item)
        else:
            self.tree.addTopLevelItem(item)
        bar = QProgressBar()
        bar.setRange(0, 1000)
        bar.setTextVisible(True)
        bar.setMaximumHeight(18)
        self.bars[job.id] = bar
        self.tree.setItemWidget(item, C_PROG, bar)
        if not job.state.is_final:
            btn = QPushButton("Cancel")
            btn.setMaximumHeight(22)
            btn.clicked.connect(lambda _=False, j=job: self.cancel_requested.emit(j))
            self.cancel_buttons[job.id] = btn
            self.tree.setItemWidget(item, C_CANCEL, btn)
        self.update_job(job)
        self.tree.setSortingEnabled(sorting)
        if self.tree.currentItem() is None:
            self.tree.setCurrentItem(item)

    def remove_job(self, job: Job) -> None:
        item = self.items.pop(job.id, None)
        if item is not None:
            parent = item.parent()
            if parent is not None:
                parent.removeChild(item)
                if parent.childCount() == 0:
                    self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(parent))
                    self.groups.pop(job.sweep, None)
            else:
                self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(item))
        for d in (self.bars, self.cancel_buttons, self.jobs, self._styled, self.rows):
            d.pop(job.id, None)

    def update_job(self, job: Job) -> None:
        item = self.items.get(job.id)
        if item is None:
            return
        row = job_row(job)
        row["data"] = (getattr(job.dataset, "name", "") if job.dataset is not None
                       else getattr(job, "dataset_name", ""))   # a restored job whose data set is not open
        self.rows[job.id] = row
        texts = {c: _fmt(row.get(key)) for c, key in _KEYS.items()}
        # inside a sweep's group the "[sweep N] " prefix of the name says nothing new
        texts[C_NAME] = job.name[len(f"[{job.sweep}] "):] if job.sweep and job.name.startswith(
            f"[{job.sweep}] ") else job.name
        texts[C_DATA] = row["data"] or "—"
        if job.state == JobState.RUNNING:
            texts[C_TIME] = format_seconds(job.elapsed) + (f" (ETA {format_seconds(job.eta)})"
                                                           if job.eta is not None else "")
            ev = job.last_event
            if ev is not None and ev.loss is not None:
                texts[C_RESULT] = f"loss {ev.loss:.6g}"
        else:
            texts[C_TIME] = format_seconds(row["time_s"]) if row["time_s"] is not None else "—"
            if job.state in (JobState.FAILED, JobState.DIVERGED):
                texts[C_RESULT] = job.reason or job.state.value
        if getattr(job, "score_text", ""):
            texts[C_RESULT] = (texts[C_RESULT] + "  ·  " if texts[C_RESULT] != "—" else "") + job.score_text
        # Only touch what changed: every set* call on an item repaints the tree.
        for col, text in texts.items():
            if item.text(col) != text:
                item.setText(col, text)
        for c, key in _KEYS.items():
            value = row.get(key)
            if c == C_NAME:
                value = job.name
            if item.data(c, SORT_ROLE) != value:
                item.setData(c, SORT_ROLE, value)
        for c in _NUMERIC:
            item.setTextAlignment(c, Qt.AlignRight | Qt.AlignVCenter)
        tips = {C_NAME: job.name, C_DATA: row["data"], C_STOP: row["stop"] or "",
                C_RESULT: (job.reason + (("\n\n" + job.error) if job.error else ""))
                if job.state in (JobState.FAILED, JobState.DIVERGED) else texts[C_RESULT]}
        for col, tip in tips.items():
            if item.toolTip(col) != tip:
                item.setToolTip(col, tip)
        if self._styled.get(job.id) != job.state:
            self._styled[job.id] = job.state
            colour = _STATE_COLOURS.get(job.state)
            for c in range(len(COLUMNS)):
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
        if btn is not None and job.state.is_final and btn.isVisibleTo(self.tree):
            btn.setEnabled(False)
            btn.hide()   # nothing to cancel any more: the column stays quiet
        if job.sweep:
            self._update_group(job.sweep)

    def set_pool_size(self, n: int) -> None:
        self.pool.blockSignals(True)
        self.pool.setValue(n)
        self.pool.blockSignals(False)

    def set_select_new(self, on: bool) -> None:
        self.select_new.blockSignals(True)
        self.select_new.setChecked(bool(on))
        self.select_new.blockSignals(False)

    # ------------------------------------------------------------ private
    def _current_changed(self, cur, _prev) -> None:
        job = self.job_for_item(cur)
        if job is not None or cur is None:
            self.current_changed.emit(job)

    def _compare(self) -> None:
        jobs = [j for j in self.selected_jobs() if j.has_model]
        if len(jobs) >= 2:
            self.compare_requested.emit(jobs[0], jobs[1])
        else:
            self.compare_requested.emit(None, None)

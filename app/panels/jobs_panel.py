"""The Jobs panel: a sortable results table of every job, with the jobs of a sweep grouped.

One row per job: state, progress bar, the model (kind, n, l, parameters), its results
(train and test NLL per token, MAD, iterations, stop reason), time, device and Cancel.
The numbers come from :func:`app.jobrows.job_row`.  Clicking a header sorts by that
column (numbers as numbers, unknown values last); the jobs of a sweep sit under one
group row that says how many of them finished.

Narrow widths: the table never scrolls sideways by itself.  The Job column takes the
width left over and the Data column grows to show its names; when the columns do not fit,
the least important ones give way (:data:`PRIORITY`; the Job column always stays), and
the Job cell's tooltip lists their values.  The header's context menu chooses which
columns may be shown (kept in the settings by the main window); every cell's tooltip
holds its full text.
"""
from __future__ import annotations

import math
import re
from typing import Dict, List, Optional

from PySide6.QtCore import QEvent, QItemSelectionModel, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QPalette
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QHBoxLayout, QHeaderView, QLabel, QMenu,
                               QProgressBar, QPushButton, QSpinBox, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from densehmm_core.events import START_PHASE, start_fraction, start_label, start_text, stop_text

from ..jobrows import INFINITE_TEST_NLL, job_row
from ..jobs import Job, JobState
from ..flow import FlowLayout
from ..views.tablecopy import install_copy

__all__ = ["JobsPanel", "format_seconds", "COLUMNS", "COLUMN_IDS", "PRIORITY"]

#: (header, row key or None, tooltip)
#: The progress bars' fill: a green of its own, never the selection's blue (on a selected row a bar
#: filled with the highlight colour disappeared into the row, its text unreadable in the dark theme);
#: white text on it has a contrast ratio of about 5:1.
BAR_FILL = QColor(30, 125, 70)

COLUMNS = [
    ("Job", "name", "The job's name; the jobs of a sweep are grouped under it"),
    ("#", "job", "The job's number (as in the dashboard's title, the log and exported model names)"),
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
(C_NAME, C_ID, C_STATE, C_PROG, C_MODEL, C_N, C_L, C_PARAMS, C_TRAIN, C_TEST, C_MAD, C_ITER, C_STOP, C_TIME,
 C_DEVICE, C_DATA, C_RESULT, C_CANCEL) = range(len(COLUMNS))
_KEYS = {c: key for c, (_h, key, _t) in enumerate(COLUMNS) if key}
#: the columns' names in the settings (``jobs/hidden_columns``)
COLUMN_IDS = [key or {C_PROG: "progress", C_CANCEL: "cancel"}[c] for c, (_h, key, _t) in enumerate(COLUMNS)]
#: most important first: where the columns do not fit, the last ones are hidden first
PRIORITY = [C_NAME, C_STATE, C_PROG, C_ID, C_RESULT, C_MODEL, C_TEST, C_N, C_L, C_CANCEL, C_TRAIN, C_TIME, C_DATA,
            C_MAD, C_ITER, C_PARAMS, C_STOP, C_DEVICE]
#: widths of the columns that keep theirs (pixels); Job and Data share what is left
_WIDTHS = {C_ID: 40, C_STATE: 72, C_PROG: 100, C_MODEL: 96, C_N: 36, C_L: 32, C_PARAMS: 58, C_TRAIN: 74, C_TEST: 74,
           C_MAD: 70, C_ITER: 56, C_STOP: 84, C_TIME: 84, C_DEVICE: 60, C_RESULT: 130, C_CANCEL: 66}
#: narrowest Job and Data columns (their text is elided below that; the tooltip holds it), and
#: the widest they grow to before the columns after them get room: Job's full names come
#: right after C_GROW_NAME, Data's first 200 pixels right after the Data column itself (up to
#: 300 only when all columns fit)
_MIN_NAME, _MAX_NAME, _MIN_DATA, _MID_DATA, _MAX_DATA = 130, 320, 80, 200, 300
C_GROW_NAME = C_TEST
_NUMERIC = {C_ID, C_N, C_L, C_PARAMS, C_TRAIN, C_TEST, C_MAD, C_ITER, C_TIME, C_RESULT}

SORT_ROLE = Qt.UserRole + 1

_STATE_COLOURS = {
    JobState.DIVERGED: QColor("#c62828"),
    JobState.FAILED: QColor("#c62828"),
    JobState.CANCELLED: QColor("#8a6d00"),
    JobState.FINISHED: QColor("#2e7d32"),
}


def format_seconds(s: Optional[float]) -> str:
    """A duration as the Time column shows it, short enough for its width with an ETA beside
    it: ``0.3 s`` (under 10 s: a job of a fraction of a second read "0 s"), ``42 s``, ``12:05``
    (minutes:seconds), ``1:03:00`` (hours:minutes:seconds)."""
    if s is None:
        return "—"
    if s < 9.95:
        return f"{max(float(s), 0.0):.1f} s"
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{(s % 3600) // 60:02d}:{s % 60:02d}"


#: the longest Time text the column is sized for (a running job: elapsed and ETA)
TIME_SAMPLE = "59:59 · ETA 59:59"


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


class _CancelButton(QPushButton):
    """A row's Cancel button; once disabled (the job ended) it stays hidden, although the
    tree shows its item widgets again whenever it lays them out."""

    def setVisible(self, visible: bool) -> None:  # noqa: N802 - Qt's name
        super().setVisible(visible and self.isEnabled())


class JobsPanel(QWidget):
    """Lists the jobs of a :class:`~app.jobs.JobManager` as a results table.

    Signals: ``current_changed(job or None)``, ``cancel_requested(job)``, ``export_requested(list)``,
    ``compare_requested(job, job)``, ``score_requested(job)``, ``pool_size_changed(int)``,
    ``select_new_changed(bool)``, ``selection_changed(list of jobs)``, ``cancel_selected_requested(list)``,
    ``compare_refused(int)``.
    """

    current_changed = Signal(object)
    selection_changed = Signal(list)        # the selected jobs (app.state.AppState.selection follows)
    cancel_requested = Signal(object)
    cancel_selected_requested = Signal(list)   # "Cancel selected": the window asks before cancelling several
    export_requested = Signal(object)
    compare_requested = Signal(object, object)
    compare_refused = Signal(int)              # Compare with other than two selected models: how many there are
    score_requested = Signal(object)
    pool_size_changed = Signal(int)
    select_new_changed = Signal(bool)
    hidden_columns_changed = Signal(list)   # ids (COLUMN_IDS) of the columns the user hid

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.items: Dict[int, QTreeWidgetItem] = {}
        self.groups: Dict[str, QTreeWidgetItem] = {}
        self.bars: Dict[int, QProgressBar] = {}
        self._styled: Dict[int, object] = {}   # job id -> the state its row colours show
        self.cancel_buttons: Dict[int, QPushButton] = {}
        self.jobs: Dict[int, Job] = {}
        self.rows: Dict[int, dict] = {}        # job id -> its newest job_row
        self.user_hidden: set = set()          # columns the user hid (header's context menu)
        self.no_room: set = set()              # columns hidden because the table is too narrow
        self._name_width = 0                   # widest Job text (pixels)
        self._data_width = 0                   # widest Data text (pixels)
        # a running job's Time runs on between its events (a long step -- the start's SVD, a
        # co-occurrence chunk -- sends none for seconds)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick_times)
        self._clock.start()
        self._n_active = 0
        self._measured: Dict[int, tuple] = {}  # job id -> (final?, Data, Job texts) when last measured
        self._fitting = False
        self._deferred_groups: Optional[set] = None   # sweeps whose group row add_jobs updates at its end
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        # the buttons wrap onto a second line in a narrow dock; the options sit at the right end
        self.toolbar = QWidget()
        bar = FlowLayout(self.toolbar, spacing=6, right_from=4)
        bar.setContentsMargins(0, 0, 0, 0)
        self.cancel_sel = QPushButton("Cancel selected")
        self.cancel_sel.setToolTip("Cancel the selected jobs (asks first when there are several) (Ctrl+.)")
        self.cancel_sel.clicked.connect(lambda: self.cancel_selected_requested.emit(self.selected_jobs()))
        self.export_btn = QPushButton("Export .h5…")
        self.export_btn.setToolTip("Save the selected jobs' models to an HDF5 file")
        self.export_btn.clicked.connect(lambda: self.export_requested.emit(self.selected_jobs()))
        self.compare_btn = QPushButton("Compare")
        self.compare_btn.setToolTip("Select two finished jobs: metrics table and matrix differences")
        self.compare_btn.clicked.connect(self.request_compare)
        self.score_btn = QPushButton("Score on data")
        self.score_btn.setToolTip("Score the selected model on the current data set's test split (all of it when it "
                                  "has none): normalised NLL; a file is read as the model reads data (e.g. as "
                                  "words, every word as written)")
        self.score_btn.clicked.connect(lambda: [self.score_requested.emit(j) for j in self.selected_jobs()])
        for b in (self.cancel_sel, self.export_btn, self.compare_btn, self.score_btn):
            bar.addWidget(b)
        self.select_new = QCheckBox("Show new jobs")
        self.select_new.setChecked(True)
        self.select_new.setToolTip("Select a job (the first of a sweep) as soon as it is started, "
                                   "so that the dashboard shows it")
        self.select_new.toggled.connect(self.select_new_changed)
        bar.addWidget(self.select_new)
        parallel = QWidget()      # the label and its spin box stay on one line
        pl = QHBoxLayout(parallel)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(QLabel("Parallel jobs"))
        self.pool = QSpinBox()
        self.pool.setRange(1, 64)
        self.pool.setToolTip("How many jobs train at once")
        self.pool.valueChanged.connect(self.pool_size_changed)
        pl.addWidget(self.pool)
        bar.addWidget(parallel)
        lay.addWidget(self.toolbar)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels([c[0] for c in COLUMNS])
        # the Time column fits a running job's "elapsed · ETA" in this font (cells were cut at 84 px)
        self._time_width = max(_WIDTHS[C_TIME], self.tree.fontMetrics().horizontalAdvance(TIME_SAMPLE) + 14)
        for c, (_h, _k, tip) in enumerate(COLUMNS):
            self.tree.headerItem().setToolTip(c, tip)
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSortingEnabled(True)
        self.tree.sortByColumn(C_NAME, Qt.AscendingOrder)
        self.tree.setMinimumHeight(70)   # a header and two rows: the window fits a 1366 x 768 screen
        self.tree.setMinimumWidth(_MIN_NAME + 20)
        self.tree.setTextElideMode(Qt.ElideMiddle)   # names and files differ at their ends
        h = self.tree.header()
        h.setStretchLastSection(False)
        h.setMinimumSectionSize(24)
        h.setSectionResizeMode(QHeaderView.Interactive)   # fitted to the width; the user may still drag
        h.setContextMenuPolicy(Qt.CustomContextMenu)
        h.customContextMenuRequested.connect(lambda pos: self.column_menu().exec(h.mapToGlobal(pos)))
        self.tree.headerItem().setToolTip(C_CANCEL, "Cancel a queued or running job")
        self.tree.currentItemChanged.connect(self._current_changed)
        self.tree.itemSelectionChanged.connect(lambda: self.selection_changed.emit(self.selected_jobs()))
        self.tree.viewport().installEventFilter(self)
        install_copy(self.tree)   # Ctrl+C: the selected jobs' shown columns as text (a spreadsheet)
        lay.addWidget(self.tree, 1)
        self.fit_columns()

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
        """Make ``job`` the current row and the whole selection (a new job replaces what was selected, so
        that Cancel / Export / Score act on the job on screen, never on rows selected before).  The flags
        are explicit: a plain ``setCurrentItem`` follows the keyboard's modifiers, and with Ctrl still down
        from Ctrl+T it added the new job to the selection."""
        item = self.items.get(job.id)
        if item is not None:
            parent = item.parent()
            if parent is not None:
                parent.setExpanded(True)
            flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
            self.tree.setCurrentItem(item, 0, flags)
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

    # ------------------------------------------------------------ columns
    def column_title(self, c: int) -> str:
        return COLUMNS[c][0] or "Cancel"

    def hidden_columns(self) -> List[int]:
        """Columns not shown now: hidden by the user, or for lack of room."""
        return [c for c in range(len(COLUMNS)) if self.tree.isColumnHidden(c)]

    def set_hidden_columns(self, ids) -> None:
        """The columns the user hid (ids of :data:`COLUMN_IDS`; unknown ones and Job are ignored)."""
        hidden = {COLUMN_IDS.index(i) for i in ids if i in COLUMN_IDS} - {C_NAME}
        if hidden != self.user_hidden:
            self.user_hidden = hidden
            self.fit_columns()
            self.hidden_columns_changed.emit([COLUMN_IDS[c] for c in sorted(hidden)])

    def set_column_shown(self, c: int, on: bool) -> None:
        ids = {COLUMN_IDS[k] for k in self.user_hidden}
        ids = ids - {COLUMN_IDS[c]} if on else ids | {COLUMN_IDS[c]}
        self.set_hidden_columns(sorted(ids))

    def column_menu(self) -> QMenu:
        """The header's context menu: a check box per column (Job always shows)."""
        menu = QMenu(self)
        menu.setToolTipsVisible(True)
        for c in range(len(COLUMNS)):
            if c == C_NAME:
                continue
            title = self.column_title(c) + (" (no room)" if c in self.no_room else "")
            a = menu.addAction(title)
            a.setCheckable(True)
            a.setChecked(c not in self.user_hidden)
            a.setToolTip(COLUMNS[c][2] or self.tree.headerItem().toolTip(c))
            a.toggled.connect(lambda on, c=c: self.set_column_shown(c, on))
        menu.addSeparator()
        menu.addAction("Show all columns", lambda: self.set_hidden_columns([]))
        return menu

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Resize and obj is self.tree.viewport():
            self.fit_columns()
        return super().eventFilter(obj, event)

    def fit_columns(self) -> None:
        """Fit the columns to the table's width (no sideways scrolling).

        In :data:`PRIORITY` order, while they fit: each column at its width (Job and Data at
        their narrowest), Job widened to its longest name after :data:`C_GROW_NAME`, Data to
        its longest name after itself; the first that does not fit and all after it are
        hidden.  What is left goes to Data, then Job.
        """
        if self._fitting:
            return
        self._fitting = True
        try:
            room = self.tree.viewport().width()
            wanted = [c for c in PRIORITY if c not in self.user_hidden
                      and not (c == C_CANCEL and self._n_active == 0)]   # no Cancel buttons: no column
            grow = {C_NAME: max(0, min(_MAX_NAME, self._name_width) - _MIN_NAME),
                    C_DATA: max(0, min(_MAX_DATA, self._data_width) - _MIN_DATA)}
            widths = {C_NAME: _MIN_NAME}
            used = _MIN_NAME
            for c in wanted[1:]:
                w = _MIN_DATA if c == C_DATA else (self._time_width if c == C_TIME else _WIDTHS[c])
                if used + w > room:
                    break
                widths[c] = w
                used += w
                for g in (C_NAME, C_DATA):    # the Job or Data column widened to its names now
                    if c == (C_GROW_NAME if g == C_NAME else C_DATA) and g in widths:
                        extra = min(grow[g], room - used, _MID_DATA - _MIN_DATA if g == C_DATA else grow[g])
                        widths[g] += extra
                        used += extra
                        grow[g] -= extra
            no_room = {c for c in wanted if c not in widths}
            if C_DATA in widths:
                extra = min(room - used, grow[C_DATA])
                widths[C_DATA] += extra
                used += extra
            widths[C_NAME] += max(0, room - used)
            for c in range(len(COLUMNS)):
                hide = c not in widths
                if self.tree.isColumnHidden(c) != hide:
                    self.tree.setColumnHidden(c, hide)
                if not hide and self.tree.columnWidth(c) != widths[c]:
                    self.tree.setColumnWidth(c, widths[c])
            if no_room != self.no_room:
                self.no_room = no_room
                for job in self.jobs.values():
                    self._name_tip(job)
        finally:
            self._fitting = False

    def _name_tip(self, job: Job) -> None:
        """The Job cell's tooltip: the job's name, and the values of the hidden columns."""
        item = self.items.get(job.id)
        if item is None:
            return
        lines = [job.name]
        for c in sorted(self.user_hidden | self.no_room, key=PRIORITY.index):
            if c == C_CANCEL:
                continue
            text = (self.bars[job.id].text() if job.id in self.bars else "") if c == C_PROG else item.text(c)
            lines.append(f"{self.column_title(c)}: {text}")
        tip = "\n".join(lines)
        if item.toolTip(C_NAME) != tip:
            item.setToolTip(C_NAME, tip)

    def _measure(self, item: Optional[QTreeWidgetItem] = None) -> None:
        """Refit when the longest Job or Data text (with ``item``'s, a new or changed row; else
        of all rows, after a removal) or the presence of active jobs (the Cancel column) changed."""
        fm = self.tree.fontMetrics()
        items = [item] if item is not None else list(self.items.values())
        name = max((fm.horizontalAdvance(it.text(C_NAME)) + 40 for it in items), default=0)  # + tree indent
        data = max((fm.horizontalAdvance(it.text(C_DATA)) + 16 for it in items), default=0)
        if item is not None:
            name, data = max(name, self._name_width), max(data, self._data_width)
        active = sum(not j.state.is_final for j in self.jobs.values())
        if (name, data, active) != (self._name_width, self._data_width, self._n_active):
            self._name_width, self._data_width, self._n_active = name, data, active
            self.fit_columns()

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
        pal = bar.palette()   # only these roles are the bar's own: the rest follows the theme
        for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
            pal.setColor(group, QPalette.ColorRole.Highlight, BAR_FILL)
            pal.setColor(group, QPalette.ColorRole.HighlightedText, QColor(255, 255, 255))
        bar.setPalette(pal)
        self.bars[job.id] = bar
        self.tree.setItemWidget(item, C_PROG, bar)
        if not job.state.is_final:
            btn = _CancelButton("Cancel")
            btn.setMaximumHeight(22)
            btn.clicked.connect(lambda _=False, j=job: self.cancel_requested.emit(j))
            self.cancel_buttons[job.id] = btn
            self.tree.setItemWidget(item, C_CANCEL, btn)
        self.update_job(job)
        self.tree.setSortingEnabled(sorting)
        if self.tree.currentItem() is None:
            self.tree.setCurrentItem(item)

    def add_jobs(self, jobs: List[Job]) -> None:
        """Add many jobs at once (a restored session): the table is sorted once and each sweep's
        group row summarised once, so the time grows linearly with the number of jobs."""
        sorting = self.tree.isSortingEnabled()
        self.tree.setSortingEnabled(False)
        self._deferred_groups = set()
        updates = self.updatesEnabled()
        self.setUpdatesEnabled(False)   # a shown progress bar repaints at once on setValue: 14 ms each
        try:
            for job in jobs:
                self.add_job(job)
        finally:
            groups, self._deferred_groups = self._deferred_groups, None
            for sweep in groups:
                self._update_group(sweep)
            self._measure()
            self.tree.setSortingEnabled(sorting)
            self.setUpdatesEnabled(updates)

    def remove_jobs(self, jobs: List[Job]) -> None:
        """Remove many jobs at once (a cancelled session restore): the rows are measured once."""
        self._deferred_groups = set()
        try:
            for job in jobs:
                self.remove_job(job)
        finally:
            groups, self._deferred_groups = self._deferred_groups, None
            for sweep in groups:
                self._update_group(sweep)
            self._measure()

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
        for d in (self.bars, self.cancel_buttons, self.jobs, self._styled, self.rows, self._measured):
            d.pop(job.id, None)
        if self._deferred_groups is None:
            self._measure()
        elif job.sweep in self.groups:
            self._deferred_groups.add(job.sweep)

    @staticmethod
    def _running_time(job: Job) -> str:
        return format_seconds(job.elapsed) + (f" · ETA {format_seconds(job.eta)}" if job.eta is not None else "")

    def _tick_times(self) -> None:
        """The Time cells of the running jobs, once a second (only those that changed are set), with
        their tooltips (the cell's, and the Job cell's while Time is hidden): between two progress
        events they kept the time of the last one."""
        for job_id, job in self.jobs.items():
            if job.state == JobState.RUNNING:
                item = self.items.get(job_id)
                text = self._running_time(job)
                if item is not None and item.text(C_TIME) != text:
                    item.setText(C_TIME, text)
                    item.setToolTip(C_TIME, text)
                    if C_TIME in self.user_hidden or C_TIME in self.no_room:
                        self._name_tip(job)

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
            texts[C_TIME] = self._running_time(job)
            ev = job.last_event
            if ev is not None and ev.phase == START_PHASE:     # the start being prepared: its stage
                texts[C_RESULT] = start_text(ev.metrics, detail=True)
            elif ev is not None and ev.loss is not None:
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
        tips = dict(texts)      # every cell's full text (it may be elided)
        stop = row["stop"] or "—"
        tips.update({C_DATA: row["data"] or "—", C_STOP: stop_text(stop) or stop,
                     C_RESULT: (job.reason + (("\n\n" + job.error) if job.error else ""))
                     if job.state in (JobState.FAILED, JobState.DIVERGED) else texts[C_RESULT]})
        test_nll = row.get("test_nll")
        if test_nll is not None and math.isinf(test_nll):    # "inf" in green says nothing of why
            tips[C_TEST] = INFINITE_TEST_NLL
            if texts[C_RESULT] == texts[C_TEST]:
                tips[C_RESULT] = INFINITE_TEST_NLL
        del tips[C_NAME]        # the Job cell's tooltip: _name_tip
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
            ev = job.last_event
            starting = job.state == JobState.RUNNING and ev is not None and ev.phase == START_PHASE
            if starting:    # the start's own progress, named by its stage ("start 2/3: SVD")
                if bar.maximum() != 1000:
                    bar.setRange(0, 1000)
                value = int(round(1000 * start_fraction(ev.metrics)))
                if bar.value() != value:
                    bar.setValue(value)
                fmt = start_label(ev.metrics)     # "SVD 2/3" (the Result cell has the whole text)
                if bar.format() != fmt:
                    bar.setFormat(fmt)
            elif frac is None and job.state == JobState.RUNNING:
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
        if btn is not None and job.state.is_final and btn.isEnabled():
            btn.setEnabled(False)
            btn.hide()   # nothing to cancel any more: the column stays quiet
        if job.sweep:
            if self._deferred_groups is not None:   # add_jobs: summarised once at the end
                self._deferred_groups.add(job.sweep)
            else:
                self._update_group(job.sweep)
        self._name_tip(job)
        measured = (job.state.is_final, texts[C_DATA], texts[C_NAME])
        if self._measured.get(job.id) != measured:   # the widest Data name, Cancel column or not
            self._measured[job.id] = measured
            if self._deferred_groups is None:        # add_jobs measures all rows once at its end
                self._measure(item)

    def set_pool_size(self, n: int) -> None:
        self.pool.blockSignals(True)
        self.pool.setValue(n)
        self.pool.blockSignals(False)

    def set_select_new(self, on: bool) -> None:
        self.select_new.blockSignals(True)
        self.select_new.setChecked(bool(on))
        self.select_new.blockSignals(False)

    def request_compare(self) -> None:
        """The Compare button (and Train > Compare two jobs): ``compare_requested`` with the two
        selected jobs with models, else ``compare_refused`` (never two picked out of more)."""
        jobs = [j for j in self.selected_jobs() if j.has_model]
        if len(jobs) == 2:
            self.compare_requested.emit(jobs[0], jobs[1])
        else:
            self.compare_refused.emit(len(jobs))

    # ------------------------------------------------------------ private
    def _current_changed(self, cur, _prev) -> None:
        job = self.job_for_item(cur)
        if job is not None or cur is None:
            self.current_changed.emit(job)

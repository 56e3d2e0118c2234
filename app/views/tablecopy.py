"""Copying a table's cells as tab-separated text (a spreadsheet, a paper's notes, a message): Ctrl+C
copies the selected cells; the right-click menu copies them or the whole table with its headers.

Used by the tables of the window: each state's top words, Compare, Decode's words and tags, and the
Jobs panel (its rows and visible columns, sweeps' jobs included).  The text is what the table shows
(the display role; a cell drawn by a widget, such as the Jobs panel's progress bar, gives the
widget's text, and a column of buttons alone with no title is left out), in the order it shows
it: columns in their on-screen order, hidden ones left out; a tree's rows depth first.  Tabs and
line breaks inside a cell become spaces, so every line of the text is one row."""
from __future__ import annotations

from typing import Iterator, List, Optional

from PySide6 import QtCore, QtGui, QtWidgets

from ..export import export_actions

__all__ = ["install_copy", "table_text", "copy_to_clipboard"]


def _rows(model: QtCore.QAbstractItemModel, parent: QtCore.QModelIndex = QtCore.QModelIndex()
          ) -> Iterator[QtCore.QModelIndex]:
    """Every row of ``model`` depth first (a tree's children after their parent), as column 0's index."""
    for r in range(model.rowCount(parent)):
        index = model.index(r, 0, parent)
        yield index
        if model.rowCount(index) > 0:
            yield from _rows(model, index)


def _key(index: QtCore.QModelIndex) -> tuple:
    """A row's place in the model: its row numbers from the top level down."""
    path = []
    while index.isValid():
        path.append(index.row())
        index = index.parent()
    return tuple(reversed(path))


def _header(view: QtWidgets.QAbstractItemView) -> QtWidgets.QHeaderView:
    """The view's column header (a table's horizontal header, a tree's header)."""
    return view.horizontalHeader() if isinstance(view, QtWidgets.QTableView) else view.header()


def _columns(view: QtWidgets.QAbstractItemView) -> List[int]:
    """The view's shown columns, in their on-screen order."""
    model = view.model()
    header = _header(view)
    cols = [header.logicalIndex(v) for v in range(header.count())]
    return [c for c in cols if 0 <= c < model.columnCount() and not header.isSectionHidden(c)]


def _clean(value) -> str:
    return "" if value is None else " ".join(str(value).replace("\t", " ").splitlines())


def _cell(view: QtWidgets.QAbstractItemView, index: QtCore.QModelIndex) -> str:
    """What a cell shows as text: its display role, or the text of the widget drawn in it (a progress
    bar's "3/3"; a button is an action, not data: nothing)."""
    text = _clean(index.data())
    if not text:
        w = view.indexWidget(index)
        if w is not None and not isinstance(w, QtWidgets.QAbstractButton) and callable(getattr(w, "text", None)):
            text = _clean(w.text())
    return text


def table_text(view: QtWidgets.QAbstractItemView, selected_only: bool = True, headers: bool = False) -> str:
    """The view's cells as tab-separated lines.

    ``selected_only``: the rows and columns that hold a selected cell (a cell of them that is not
    selected stays empty); otherwise every row and shown column.  ``headers``: a first line of
    column titles where they show, and, for a table whose row titles show (the top words' states),
    a first column of them.  Empty string when nothing is selected (``selected_only``) or the table is empty."""
    model = view.model()
    if model is None:
        return ""
    cols = _columns(view)
    rows = list(_rows(model))
    chosen: Optional[set] = None
    if selected_only:
        sel = view.selectionModel()
        chosen = set() if sel is None else {(_key(i), i.column()) for i in sel.selectedIndexes()}
        keep_rows = {key for key, _c in chosen}
        keep_cols = {c for _k, c in chosen}
        rows = [r for r in rows if _key(r) in keep_rows]
        cols = [c for c in cols if c in keep_cols]
    if not rows or not cols:
        return ""
    body = [[("" if chosen is not None and (_key(r), c) not in chosen else _cell(view, r.sibling(r.row(), c)))
             for c in cols] for r in rows]
    titles = [_clean(model.headerData(c, QtCore.Qt.Orientation.Horizontal)) for c in cols]
    keep = [j for j in range(len(cols)) if titles[j] or any(line[j] for line in body)]   # (not a Cancel column)
    if not keep:
        return ""
    row_titles = headers and isinstance(view, QtWidgets.QTableView) and not view.verticalHeader().isHidden()
    lines: List[str] = []
    if headers and not _header(view).isHidden():     # (Decode's words and tags have no column titles)
        lines.append("\t".join(([""] if row_titles else []) + [titles[j] for j in keep]))
    for r, line in zip(rows, body):
        first = [_clean(model.headerData(r.row(), QtCore.Qt.Orientation.Vertical))] if row_titles else []
        lines.append("\t".join(first + [line[j] for j in keep]))
    return "\n".join(lines)


def copy_to_clipboard(text: str) -> None:
    """``text`` on the system clipboard (nothing when it is empty: the clipboard keeps what it had)."""
    if text:
        QtGui.QGuiApplication.clipboard().setText(text)


def install_copy(view: QtWidgets.QAbstractItemView) -> List[QtGui.QAction]:
    """Give ``view`` Ctrl+C (the selected cells) and a right-click menu: **Copy**, **Copy table** (every
    row and shown column, with the headers), then the export entries of its view
    (:func:`app.export.export_actions`), after a separator.  Returns the two copy actions (tests
    trigger them)."""
    copy = QtGui.QAction("Copy", view)
    copy.setShortcut(QtGui.QKeySequence(QtGui.QKeySequence.StandardKey.Copy))
    copy.setShortcutContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
    copy.triggered.connect(lambda: copy_to_clipboard(table_text(view)))
    whole = QtGui.QAction("Copy table", view)
    whole.triggered.connect(lambda: copy_to_clipboard(table_text(view, selected_only=False, headers=True)))
    view.addAction(copy)                  # (the shortcut works while the table has the focus)

    def menu(pos: QtCore.QPoint) -> None:
        m = QtWidgets.QMenu(view)
        sel = view.selectionModel()
        copy.setEnabled(sel is not None and sel.hasSelection())
        m.addAction(copy)
        m.addAction(whole)
        more = export_actions(view)
        if more:
            m.addSeparator()
            for a in more:
                m.addAction(a)
        m.exec(view.viewport().mapToGlobal(pos))
        copy.setEnabled(True)

    view.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.CustomContextMenu)
    view.customContextMenuRequested.connect(menu)
    return [copy, whole]


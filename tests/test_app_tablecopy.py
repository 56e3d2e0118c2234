"""Copying tables as text (Ctrl+C and the right-click menu): the cells the table shows, in its order,
against hand-made tables and the views' own contents."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402

from app.views.tablecopy import install_copy, table_text  # noqa: E402
from app.views.topwords import TopWordsTable  # noqa: E402
from qtshow import shown  # noqa: E402 - this folder


def clipboard():
    return QtGui.QGuiApplication.clipboard().text()


def action(view, text):
    return next(a for a in view.actions() if a.text() == text)


def select(view, cells):
    sel = view.selectionModel()
    sel.clearSelection()
    for r, c in cells:
        sel.select(view.model().index(r, c), QtCore.QItemSelectionModel.SelectionFlag.Select)


def test_a_hand_made_table_copies_its_selection_and_whole(qtbot):
    t = QtWidgets.QTableWidget(3, 3)
    t.setHorizontalHeaderLabels(["x", "y", "z"])
    t.setVerticalHeaderLabels(["r0", "r1", "r2"])
    for r in range(3):
        for c in range(3):
            t.setItem(r, c, QtWidgets.QTableWidgetItem(f"{r}{c}"))
    t.item(1, 1).setText("a\tb\nc")                      # a tab and a line break inside a cell
    shown(qtbot, t, (400, 200))
    copy, whole = install_copy(t)
    assert copy.shortcut() == QtGui.QKeySequence(QtGui.QKeySequence.StandardKey.Copy)
    select(t, [(0, 0), (2, 2)])                           # two corners: the rows and columns between
    copy.trigger()
    assert clipboard() == "00\t\n\t22"
    select(t, [(1, 0), (1, 1)])
    assert table_text(t) == "10\ta b c"
    whole.trigger()
    assert clipboard() == "\tx\ty\tz\nr0\t00\t01\t02\nr1\t10\ta b c\t12\nr2\t20\t21\t22"
    t.horizontalHeader().moveSection(2, 0)                # z shown first, y hidden: as on screen
    t.setColumnHidden(1, True)
    assert table_text(t, selected_only=False, headers=True) == "\tz\tx\nr0\t02\t00\nr1\t12\t10\nr2\t22\t20"
    t.verticalHeader().setVisible(False)                  # no row titles on screen: none copied
    assert table_text(t, selected_only=False, headers=True).splitlines()[:2] == ["z\tx", "02\t00"]
    t.clearSelection()
    QtGui.QGuiApplication.clipboard().setText("kept")
    copy.trigger()                                        # nothing selected: the clipboard keeps its text
    assert clipboard() == "kept"


def test_a_tree_copies_children_after_their_parent(qtbot):
    tree = QtWidgets.QTreeWidget()
    tree.setColumnCount(2)
    tree.setHeaderLabels(["job", "nll"])
    group = QtWidgets.QTreeWidgetItem(tree, ["sweep 1", ""])
    QtWidgets.QTreeWidgetItem(group, ["a", "1.5"])
    QtWidgets.QTreeWidgetItem(group, ["b", "2.5"])
    QtWidgets.QTreeWidgetItem(tree, ["c", "3.5"])
    shown(qtbot, tree, (300, 200))
    install_copy(tree)
    assert table_text(tree, selected_only=False, headers=True) == "job\tnll\nsweep 1\t\na\t1.5\nb\t2.5\nc\t3.5"
    # cells drawn by widgets (the Jobs panel's): a progress bar gives its text, an untitled column of
    # buttons is left out
    tree.setColumnCount(4)
    tree.setHeaderLabels(["job", "nll", "progress", ""])
    for item, done in ((group.child(0), 1), (group.child(1), 2), (tree.topLevelItem(1), 3)):
        bar = QtWidgets.QProgressBar()
        bar.setRange(0, 3)
        bar.setValue(done)
        bar.setFormat("%v/%m")
        tree.setItemWidget(item, 2, bar)
        tree.setItemWidget(item, 3, QtWidgets.QPushButton("Cancel"))
    assert table_text(tree, selected_only=False, headers=True) == \
        "job\tnll\tprogress\nsweep 1\t\t\na\t1.5\t1/3\nb\t2.5\t2/3\nc\t3.5\t3/3"
    tree.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
    group.child(1).setSelected(True)
    tree.topLevelItem(1).setSelected(True)
    assert table_text(tree) == "b\t2.5\t2/3\nc\t3.5\t3/3"          # selected rows: their shown columns


def test_top_words_copy_as_the_table_lists_them(qtbot):
    n, m = 4, 300
    vocab = [f"w{k}" for k in range(m)]
    B = np.random.default_rng(1).dirichlet(np.full(m, 0.2), size=n)
    t = shown(qtbot, TopWordsTable(), (900, 300))
    t.set_emissions(B, vocab, [f"{i} → T{i}" for i in range(n)])
    words = t.words()
    table = t.table
    select(table, [(r, c) for r in (1, 2) for c in range(3)])
    table.setFocus()
    qtbot.waitUntil(table.hasFocus, timeout=2000)
    QtGui.QGuiApplication.clipboard().setText("")
    qtbot.keyClick(table, QtCore.Qt.Key.Key_C, QtCore.Qt.KeyboardModifier.ControlModifier)   # Ctrl+C
    assert clipboard() == "\n".join("\t".join(words[r][:3]) for r in (1, 2))
    action(table, "Copy").trigger()
    assert clipboard() == "\n".join("\t".join(words[r][:3]) for r in (1, 2))
    whole = table_text(table, selected_only=False, headers=True).splitlines()
    assert whole[0] == "\t" + "\t".join(str(c + 1) for c in range(10))
    assert whole[1:] == [f"{i} → T{i}\t" + "\t".join(words[i]) for i in range(n)]


def test_the_jobs_panel_copies_the_selected_jobs_shown_columns(qtbot, tmp_path):
    os.environ["DENSEHMM_JOB_EXECUTOR"] = "thread"
    from PySide6.QtCore import QSettings
    from app.mainwindow import MainWindow
    from app.modelspec import ModelSpec
    from app.panels import jobs_panel as jp
    from app.settings import Settings
    w = MainWindow(Settings(QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)))
    qtbot.addWidget(w)
    try:
        w.data_ctl.load_demo()
        jobs = [w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=n, n_iter=2, tol=0.0, seed=0))
                for n in (2, 3)]
        qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
        panel, tree = w.jobs_panel, w.jobs_panel.tree
        tree.clearSelection()
        panel.items[jobs[1].id].setSelected(True)
        action(tree, "Copy").trigger()
        item = panel.items[jobs[1].id]
        shown_cols = [tree.header().logicalIndex(v) for v in range(tree.header().count())
                      if not tree.isColumnHidden(tree.header().logicalIndex(v))]
        bar = panel.bars[jobs[1].id]
        want = [bar.text() if c == jp.C_PROG else item.text(c) for c in shown_cols]
        assert bar.text() == f"{jobs[1].step}/{jobs[1].total}" == "2/2"   # the progress bar's own text
        assert clipboard() == "\t".join(want)
        assert item.text(jp.C_RESULT) in clipboard().split("\t")
        lines = table_text(tree, selected_only=False, headers=True).splitlines()
        assert lines[0].split("\t") == [tree.headerItem().text(c) for c in shown_cols]
        assert len(lines) == 3
    finally:
        w.jobs.cancel_all()
        w.jobs.wait(20)
        os.environ.pop("DENSEHMM_JOB_EXECUTOR", None)

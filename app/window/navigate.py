"""Keyboard navigation of the centre and help: F1 (help on the part in use), Ctrl+Tab /
Ctrl+Shift+Tab (next / previous tab of the centre) and Alt+1..6 (Dashboard, Decode, Overview,
Compare, Sweep, Tags)."""
from __future__ import annotations

import functools

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from ..panels.help import show_help

__all__ = ["add_navigation", "TAB_NAMES", "show_tab", "step_tab"]

#: the centre's tabs in order, each with Alt+<position>
TAB_NAMES = ("Dashboard", "Decode", "Overview", "Compare", "Sweep", "Tags")


def _tab_index(window, name: str) -> int:
    tabs = window.dashboard.tabs
    for i in range(tabs.count()):
        if tabs.tabText(i).replace("&", "") == name:
            return i
    return -1


def show_tab(window, name: str) -> bool:
    """Show the dashboard at tab ``name``; False (and a status-bar note) when that tab is hidden
    (Tags: for corpora with gold tags only)."""
    tabs = window.dashboard.tabs
    i = _tab_index(window, name)
    if i < 0 or not tabs.isTabVisible(i):
        window.statusBar().showMessage(f"No {name} tab for the job shown", 4000)
        return False
    window.show_dashboard()
    tabs.setCurrentIndex(i)
    return True


def step_tab(window, step: int) -> None:
    """The next (``step`` 1) or previous (-1) visible tab of the centre, wrapping around; from the
    start page, the dashboard's current tab."""
    tabs = window.dashboard.tabs
    if window.leave_start_page():
        return
    n = tabs.count()
    i = tabs.currentIndex()
    for _ in range(n):
        i = (i + step) % n
        if tabs.isTabVisible(i):
            tabs.setCurrentIndex(i)
            return


def add_navigation(window, view_menu, help_menu) -> dict:
    """Add the centre's tab actions to ``view_menu`` and Help > Contents (F1) to ``help_menu``;
    returns them: ``{"next_tab": .., "prev_tab": .., "tabs": {name: action}, "help": ..}``."""
    def action(text, slot, keys):
        a = QAction(text, window)
        a.setShortcuts([QKeySequence(k) for k in keys])
        a.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        a.triggered.connect(lambda _=False: slot())
        return a
    tabs = view_menu.addMenu("Centre &tab")
    next_tab = action("&Next tab", lambda: step_tab(window, 1), ["Ctrl+Tab", "Ctrl+PgDown"])
    prev_tab = action("&Previous tab", lambda: step_tab(window, -1), ["Ctrl+Shift+Tab", "Ctrl+PgUp"])
    tabs.addActions([next_tab, prev_tab])
    tabs.addSeparator()
    tab_actions = {}
    for pos, name in enumerate(TAB_NAMES, 1):
        a = action(name, functools.partial(show_tab, window, name), [f"Alt+{pos}"])
        tabs.addAction(a)
        tab_actions[name] = a
    act_help = action("&Help contents", lambda: show_help(window), ["F1"])
    act_help.setStatusTip("What HMMs and DenseHMMs are, each view, the metrics, the shortcuts")
    help_menu.insertAction(help_menu.actions()[0] if help_menu.actions() else None, act_help)
    return {"next_tab": next_tab, "prev_tab": prev_tab, "tabs": tab_actions, "help": act_help}

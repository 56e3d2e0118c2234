"""Help > Contents (F1): what an HMM and a DenseHMM are, what each view shows, the metrics and the
shortcuts, from ``resources/help/help.html``; F1 opens it at the part of the window in use."""
from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QApplication, QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from ..resources import resource_path

__all__ = ["HelpDialog", "show_help", "help_topic", "HELP_FILE", "TOPICS"]

HELP_FILE = "help/help.html"
#: the help window's first size (pixels), less where the screen's free area is smaller (90% of it)
HELP_SIZE = (760, 640)
#: every anchor of the help file, in its order
TOPICS = ("hmm", "densehmm", "start", "data", "model", "jobs", "dashboard", "decode", "overview", "compare",
          "sweep", "tags", "metrics", "shortcuts")


class HelpDialog(QDialog):
    """A non-modal window with the help text; :meth:`show_topic` scrolls to one section."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("helpDialog")
        self.setWindowTitle("DenseHMM Studio help")
        self.resize(*HELP_SIZE)
        lay = QVBoxLayout(self)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(False)
        path = resource_path(HELP_FILE)
        if path is not None:
            self.browser.setSource(QUrl.fromLocalFile(str(path)))
        else:
            self.browser.setHtml(f"<p>The help file ({HELP_FILE}) is missing from this installation; "
                                 f"see docs/APP.md.</p>")
        lay.addWidget(self.browser)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay.addWidget(buttons)
        self.topic = ""

    def show_topic(self, topic: str) -> None:
        self.topic = topic if topic in TOPICS else ""
        if self.topic:
            self.browser.scrollToAnchor(self.topic)
        else:
            self.browser.verticalScrollBar().setValue(0)


def help_topic(window) -> str:
    """The section for the part of ``window`` in use: the dock holding the keyboard focus, else
    the centre's page and, on the dashboard, its tab."""
    focus = QApplication.focusWidget()
    for dock, topic in ((window.data_dock, "data"), (window.model_dock, "model"), (window.jobs_dock, "jobs")):
        if focus is not None and dock.isAncestorOf(focus):
            return topic
    if window.stack.currentWidget() is window.start_view:
        return "start"
    tabs = window.dashboard.tabs
    name = tabs.tabText(tabs.currentIndex()).replace("&", "").strip().lower()
    return name if name in TOPICS else "dashboard"


def show_help(window, topic: Optional[str] = None) -> HelpDialog:
    """Open (or raise) the window's help at ``topic`` (default: :func:`help_topic`)."""
    dlg = window.findChild(HelpDialog)
    if dlg is None:
        dlg = HelpDialog(window)
        # on a netbook (1024 x 600) the 640 px window reached below the screen, its Close button lost
        avail = window.available_geometry()
        dlg.resize(min(HELP_SIZE[0], int(0.9 * avail.width())), min(HELP_SIZE[1], int(0.9 * avail.height())))
    dlg.show_topic(help_topic(window) if topic is None else topic)
    dlg.show()
    dlg.raise_()
    dlg.activateWindow()
    return dlg

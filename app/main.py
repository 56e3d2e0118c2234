"""Placeholder launcher until the desktop-app issue lands (see README)."""
import sys


def main(argv=None):
    from PySide6.QtWidgets import QApplication, QLabel
    app = QApplication.instance() or QApplication(sys.argv if argv is None else argv)
    w = QLabel("DenseHMM Studio — the desktop app is being built.")
    w.setWindowTitle("DenseHMM Studio")
    w.resize(480, 120)
    w.show()
    return app.exec()

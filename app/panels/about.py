"""About box with the versions of everything that matters."""
from __future__ import annotations

import platform
import sys
from typing import Optional

from PySide6.QtWidgets import QMessageBox, QWidget

from densehmm_core.config import dist_version

__all__ = ["versions", "about_text", "show_about", "TF_WHERE"]

#: where the app's TensorFlow runs by default (``MainWindow.tf_where``)
TF_WHERE = "a training worker process"


def _dist_version(*names: str) -> str:
    return dist_version(*names, missing="not installed")


def versions(tf_loaded: Optional[str] = None, tf_where: str = TF_WHERE) -> dict:
    """Versions without importing anything heavy.

    ``tf_loaded``: TensorFlow's version as reported by the process that loaded it, at
    start-up or when a job first did (``tf_where``: a training worker process, or the
    app's own process with ``DENSEHMM_JOB_EXECUTOR=thread``); without it, the version is
    read from the package metadata and marked "not loaded yet".
    """
    import PySide6
    from PySide6 import QtCore
    import densehmm_core
    tf = sys.modules.get("tensorflow")
    return {
        "DenseHMM Studio": _dist_version("densehmm-studio") if _dist_version("densehmm-studio") != "not installed"
        else densehmm_core.__version__,
        "densehmm_core": densehmm_core.__version__,
        "Python": platform.python_version(),
        "numpy": _dist_version("numpy"),
        "TensorFlow": (f"{tf_loaded} (loaded in {tf_where})" if tf_loaded
                       else (tf.__version__ + " (loaded)") if tf is not None and hasattr(tf, "__version__")
                       else _dist_version("tensorflow-cpu", "tensorflow") + " (not loaded yet)"),
        "hmmlearn": _dist_version("hmmlearn"),
        "h5py": _dist_version("h5py"),
        "PySide6": PySide6.__version__,
        "Qt": QtCore.qVersion(),
        "pyqtgraph": _dist_version("pyqtgraph"),
        "Platform": platform.platform(),
    }


def about_text(tf_loaded: Optional[str] = None, tf_where: str = TF_WHERE) -> str:
    rows = "".join(f"<tr><td><b>{k}</b></td><td>&nbsp;{v}</td></tr>"
                   for k, v in versions(tf_loaded, tf_where).items())
    return ("<h3>DenseHMM Studio</h3>"
            "<p>Learn hidden Markov models through dense representations "
            "(Sicking et al., <i>DenseHMM: Learning Hidden Markov Models by Learning Dense "
            "Representations</i>, 2020).</p>"
            f"<table>{rows}</table>")


def show_about(parent: QWidget, tf_loaded: Optional[str] = None, tf_where: str = TF_WHERE) -> None:
    QMessageBox.about(parent, "About DenseHMM Studio", about_text(tf_loaded, tf_where))

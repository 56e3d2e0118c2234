"""Persistent user settings (QSettings): geometry/docks, last folder, recent files, form defaults, theme."""
from __future__ import annotations

import json
import os
from typing import List, Optional

from PySide6.QtCore import QByteArray, QSettings

__all__ = ["Settings", "MAX_RECENT"]

MAX_RECENT = 10


class Settings:
    """A thin typed wrapper around :class:`QSettings`.

    Parameters
    ----------
    qsettings : QSettings, optional
        Defaults to ``QSettings("DenseHMM", "DenseHMM Studio")``. Tests pass an INI-file backed one.
    """

    def __init__(self, qsettings: Optional[QSettings] = None) -> None:
        self.q = qsettings if qsettings is not None else QSettings("DenseHMM", "DenseHMM Studio")

    # window ------------------------------------------------------------
    def save_window(self, geometry: QByteArray, state: QByteArray) -> None:
        self.q.setValue("window/geometry", geometry)
        self.q.setValue("window/state", state)

    def window_geometry(self) -> Optional[QByteArray]:
        v = self.q.value("window/geometry")
        return v if isinstance(v, QByteArray) else None

    def window_state(self) -> Optional[QByteArray]:
        v = self.q.value("window/state")
        return v if isinstance(v, QByteArray) else None

    # folders and recent files -------------------------------------------
    @property
    def last_folder(self) -> str:
        return str(self.q.value("files/last_folder", os.path.expanduser("~")))

    @last_folder.setter
    def last_folder(self, folder: str) -> None:
        self.q.setValue("files/last_folder", folder)

    @property
    def export_folder(self) -> str:
        """Where figures and CSV files were last exported (the last data folder until then)."""
        return str(self.q.value("files/export_folder", self.last_folder))

    @export_folder.setter
    def export_folder(self, folder: str) -> None:
        self.q.setValue("files/export_folder", folder)

    def _json(self, key: str, kind: type):
        """The JSON value stored under ``key`` if it is a ``kind`` (list or dict), else an empty
        one (missing, hand-edited or broken entries never fail)."""
        raw = self.q.value(key, None)
        if isinstance(raw, kind):       # QSettings may hand back a list it parsed itself
            return raw
        try:
            value = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            value = None
        return value if isinstance(value, kind) else kind()

    def recent_files(self) -> List[str]:
        return [str(f) for f in self._json("files/recent", list)][:MAX_RECENT]

    def add_recent_file(self, path: str) -> List[str]:
        path = os.path.abspath(path)
        files = [f for f in self.recent_files() if f != path]
        files.insert(0, path)
        files = files[:MAX_RECENT]
        self.q.setValue("files/recent", json.dumps(files))
        return files

    def clear_recent_files(self) -> None:
        self.q.setValue("files/recent", "[]")

    # model form defaults ------------------------------------------------
    def form_defaults(self) -> dict:
        return self._json("form/defaults", dict)

    def set_form_defaults(self, values: dict) -> None:
        self.q.setValue("form/defaults", json.dumps(values))

    # jobs ---------------------------------------------------------------
    @property
    def pool_size(self) -> int:
        try:
            return max(1, int(self.q.value("jobs/pool_size", 2)))
        except (TypeError, ValueError):
            return 2

    @pool_size.setter
    def pool_size(self, n: int) -> None:
        self.q.setValue("jobs/pool_size", int(n))

    @property
    def gpu_slots(self) -> int:
        """How many jobs run at once on each GPU (``jobs/gpu_slots``, default 1)."""
        try:
            return max(1, int(self.q.value("jobs/gpu_slots", 1)))
        except (TypeError, ValueError):
            return 1

    @gpu_slots.setter
    def gpu_slots(self, n: int) -> None:
        self.q.setValue("jobs/gpu_slots", int(n))

    @property
    def select_new_jobs(self) -> bool:
        """Whether a newly started job (the first of a sweep) is selected and shown at once."""
        return str(self.q.value("jobs/select_new", "true")).lower() in ("true", "1")

    @select_new_jobs.setter
    def select_new_jobs(self, on: bool) -> None:
        self.q.setValue("jobs/select_new", "true" if on else "false")

    @property
    def jobs_hidden_columns(self) -> List[str]:
        """Columns of the Jobs table the user hid (``jobs/hidden_columns``: ids of
        ``app.panels.jobs_panel.COLUMN_IDS`` as a JSON list; default: none)."""
        return [str(i) for i in self._json("jobs/hidden_columns", list)]

    @jobs_hidden_columns.setter
    def jobs_hidden_columns(self, ids: List[str]) -> None:
        self.q.setValue("jobs/hidden_columns", json.dumps([str(i) for i in ids]))

    # sweeps on Dask (app.remote_jobs) -----------------------------------
    @property
    def sweep_target(self) -> str:
        """Where Run sweep trains: ``""`` this app's worker pool (default), ``"local"`` a local
        Dask cluster, or a Dask scheduler's address (``tcp://host:8786``)."""
        return str(self.q.value("sweeps/target", "") or "").strip()

    @sweep_target.setter
    def sweep_target(self, target: str) -> None:
        self.q.setValue("sweeps/target", (target or "").strip())

    @property
    def sweep_shared_dir(self) -> str:
        """A folder every Dask worker can write (shared storage): remote runs save their models
        there and the app reads them; ``""``: none (remote runs then show their metrics only)."""
        return str(self.q.value("sweeps/shared_dir", "") or "").strip()

    @sweep_shared_dir.setter
    def sweep_shared_dir(self, folder: str) -> None:
        self.q.setValue("sweeps/shared_dir", (folder or "").strip())

    # theme --------------------------------------------------------------
    @property
    def theme(self) -> str:
        """``"system"`` (follow the desktop), ``"light"`` or ``"dark"``."""
        t = str(self.q.value("ui/theme", "system"))
        return t if t in ("system", "light", "dark") else "system"

    @theme.setter
    def theme(self, value: str) -> None:
        self.q.setValue("ui/theme", value)

    def sync(self) -> None:
        self.q.sync()

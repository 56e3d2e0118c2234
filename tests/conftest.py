"""Test configuration shared by every test module."""
import os
import pathlib

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
# ../shared/data beside the checkout (or beside the folder holding a git worktree of it);
# DENSEHMM_SHARED_DATA overrides.
_CANDIDATES = [pathlib.Path(os.environ["DENSEHMM_SHARED_DATA"])] if os.environ.get("DENSEHMM_SHARED_DATA") else []
_CANDIDATES += [REPO.parent / "shared" / "data", REPO.parent.parent / "shared" / "data"]
SHARED_DATA = next((p for p in _CANDIDATES if p.is_dir()), _CANDIDATES[0])


@pytest.fixture(scope="session")
def shared_data():
    """Path of ../shared/data; tests using it skip cleanly when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_main_thread(request):
    """After a Qt test, collect its garbage here, on the main thread, and not later in whichever
    thread allocates next: a PySide6 wrapper collected in a worker thread (a training job
    importing TensorFlow) deadlocked against the GUI thread once (see app/gcguard.py)."""
    import gc
    yield
    if "qtbot" in request.fixturenames:
        gc.collect()


@pytest.fixture
def make_window(qtbot, tmp_path, monkeypatch):
    """``make(name="a")`` -> a shown MainWindow with its own settings file ``<tmp>/<name>.ini``.

    Jobs run in threads (``DENSEHMM_JOB_EXECUTOR=thread``); error dialogs do not block but are
    recorded as ``(title, text)`` in the list ``window.errors`` (shared by the windows of a test);
    each window's jobs are cancelled and waited for at the end.
    """
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QMessageBox

    from app.mainwindow import MainWindow
    from app.settings import Settings

    monkeypatch.setenv("DENSEHMM_JOB_EXECUTOR", "thread")
    errors = []
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(
        lambda parent, title, text, *a, **k: errors.append((title, text)) or QMessageBox.StandardButton.Ok))
    # closing a window with jobs left (a test that failed half-way) must not wait for an answer that
    # never comes offscreen: "Quit?" is answered Yes; a test's own patch of QMessageBox.question wins
    ask = QMessageBox.question

    def question(parent, title, *a, **k):
        if str(title).startswith("Quit DenseHMM Studio"):
            return QMessageBox.StandardButton.Yes
        return ask(parent, title, *a, **k)
    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    made = []

    def make(name="a"):
        w = MainWindow(Settings(QSettings(str(tmp_path / f"{name}.ini"), QSettings.Format.IniFormat)))
        w.errors = errors
        qtbot.addWidget(w)
        # the offscreen screen is 800 x 600, where the window fits by scrolling its panels and pages;
        # the tests click what a 1400 x 900 display shows
        w.resize(1400, 900)
        w.show()
        made.append(w)
        return w
    yield make
    for w in made:
        w.jobs.cancel_all()
        w.jobs.wait(10)


@pytest.fixture
def session_files(qtbot, monkeypatch):
    """``save(window, path)`` -> the names File > Save session wrote; ``open(window, path,
    ready=bool)`` -> the jobs File > Open session restored, once ``ready(jobs)`` holds.

    The question whether to read a session's data files again is answered ``Sessions.answer``
    (Yes by default); ``Sessions.asked`` records ``(title, text)`` of each question."""
    from PySide6.QtWidgets import QMessageBox

    class Sessions:
        answer = QMessageBox.StandardButton.Yes
        asked: list = []

        @staticmethod
        def save(w, path):
            names = []
            w.sessions_ctl.save_session(str(path), on_done=names.extend)
            qtbot.waitUntil(lambda: bool(names), timeout=30000)
            return names

        @staticmethod
        def open(w, path, ready=bool):
            restored = []
            w.sessions_ctl.open_session(str(path), on_done=restored.extend)
            qtbot.waitUntil(lambda: ready(restored), timeout=30000)
            return restored
    Sessions.asked = []
    monkeypatch.setattr(QMessageBox, "question", staticmethod(
        lambda parent, title, text, *a, **k: Sessions.asked.append((title, text)) or Sessions.answer))
    return Sessions


@pytest.fixture
def full_disk(tmp_path):
    """``make(free_bytes)`` -> a folder on a small tmpfs with about ``free_bytes`` left.

    Needs root and a working ``mount`` (skips otherwise); unmounted at the end.
    """
    import shutil
    import subprocess

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs needs root and mount")
    mounts = []

    def make(free_bytes=4096, size_kb=512):
        mnt = tmp_path / f"tmpfs{len(mounts)}"
        mnt.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(mnt)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
        mounts.append(mnt)
        st = os.statvfs(mnt)
        fill = st.f_bavail * st.f_frsize - int(free_bytes)
        with open(mnt / ".filler", "wb") as fh:
            while fill > 0:
                chunk = min(fill, 1 << 16)
                try:
                    fh.write(b"\0" * chunk)
                    fh.flush()
                except OSError:
                    break
                fill -= chunk
        return mnt

    yield make
    import subprocess as sp
    for mnt in mounts:
        sp.run(["umount", "-l", str(mnt)], capture_output=True)

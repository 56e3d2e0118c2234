"""The GUI process runs BLAS on one thread; training workers keep theirs (app/blas.py)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("threadpoolctl")


def test_the_app_limits_its_blas_to_one_thread_and_its_workers_do_not_inherit_it(tmp_path):
    """app.main limits BLAS before the window exists (beside a busy worker, a two-thread call waited
    for the other core: the PCA of a 30,000-word model took up to 32 ms against 8, docs/PERFORMANCE.md); a
    process started with spawn, as the training workers are, keeps the BLAS's own count."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = """
import multiprocessing, sys
from threadpoolctl import threadpool_info


def blas_threads():
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def report(q):
    import numpy  # noqa: F401 - what a worker loads
    q.put(blas_threads())


if __name__ == "__main__":
    import numpy  # noqa: F401
    from app import main as m
    from app.mainwindow import MainWindow
    print("BEFORE", blas_threads(), flush=True)
    orig = MainWindow.__init__
    def init(self, *a, **k):
        print("WINDOW", blas_threads(), flush=True)
        ctx = multiprocessing.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=report, args=(q,))
        p.start()
        print("WORKER", q.get(timeout=60), flush=True)
        p.join(60)
        orig(self, *a, **k)
    MainWindow.__init__ = init
    sys.exit(m.main(["main.py", "--no-tensorflow", "--quit-after", "0.3"]))
"""
    script = tmp_path / "blas_probe.py"
    script.write_text(code)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("OPENBLAS_NUM_THREADS", None)
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([sys.executable, str(script)], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = {k: int(v) for k, v in (line.split() for line in out.stdout.splitlines()
                                   if line.startswith(("BEFORE", "WINDOW", "WORKER")))}
    from app import blas
    assert seen["WINDOW"] == blas.BLAS_THREADS == 1
    assert seen["WORKER"] == seen["BEFORE"]       # a spawned worker: the library's own count
    if (os.cpu_count() or 1) < 2 or seen["BEFORE"] < 2:
        pytest.skip("one core: BLAS has one thread anyway (the limit is checked above)")

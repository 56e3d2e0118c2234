"""Child process of tests/test_sweep_faults.py: runs a sweep and kills itself (SIGKILL) at the
K-th Python event (call, return, C call, C return) inside one kind of sweep writer.

    python tests/sweep_fault_child.py rows   OUT K   # events inside ResultStore.write (the runs CSV)
    python tests/sweep_fault_child.py models OUT K   # events inside save_model (DIR/models/*.h5)

K = 0 runs to the end and prints ``events N``: how many events the writer had in the whole
sweep (the range the test draws its kill points from).  ``rows`` appends ``x`` to OUT/done.log
after each finished task's row was written (os.write: nothing buffered) and to OUT/ran.log when a
task starts.  Not a test module: pytest does not collect it.
"""
from __future__ import annotations

import os
import signal
import sys

ROWS_TASKS = 12


def square(x: int, out: str) -> list:
    """A task: records that it ran; its row holds a long cell so that the CSV rewrite has work."""
    _log(os.path.join(out, "ran.log"), x)
    return [{"x": x, "y": x * x, "pad": "p" * 2000}]


def _log(path: str, x) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{x}\n".encode())
    finally:
        os.close(fd)


class Killer:
    """Counts profile events while ``active``; SIGKILLs this process at event ``kill_at``."""

    def __init__(self, kill_at: int) -> None:
        self.kill_at = kill_at
        self.count = 0
        self.active = 0

    def __call__(self, frame, event, arg) -> None:
        if self.active:
            self.count += 1
            if self.count == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    def wrap(self, fn):
        def wrapped(*a, **kw):
            self.active += 1
            try:
                return fn(*a, **kw)
            finally:
                self.active -= 1
        return wrapped


def rows_sweep(out: str, killer: Killer) -> None:
    from densehmm_core.experiments import runner
    runner.ResultStore.write = killer.wrap(runner.ResultStore.write)
    original_add = runner.ResultStore.add

    def add(self, rows):
        original_add(self, rows)
        for r in rows:
            _log(os.path.join(out, "done.log"), r["x"])
    runner.ResultStore.add = add
    tasks = [runner.Task(key={"x": i}, func="sweep_fault_child:square", kwargs={"x": i, "out": out},
                         label=f"x={i}") for i in range(ROWS_TASKS)]
    store = runner.ResultStore(os.path.join(out, "runs.csv"), ["x", "y", "pad"], key=("x",),
                               types={"x": runner.canonical_int, "y": runner.canonical_int})
    with runner.FolderLock(out):
        runner.run_tasks(tasks, store, ["x"], out=lambda line: None)


def models_sweep(out: str, killer: Killer) -> None:
    import densehmm_core.modelfile as modelfile
    from densehmm_core.experiments.comparison import run_comparison
    modelfile.save_model = killer.wrap(modelfile.save_model)
    code = run_comparison(*models_sweep_args(out), quiet=True, save_models=True, shared=shared_corpus())
    if code != 0:
        raise SystemExit(code)


def shared_corpus() -> dict:
    """Six short seeded sequences over 4 symbols (the data of the model sweep)."""
    import numpy as np
    rng = np.random.default_rng(7)
    return {"sequences": [rng.integers(0, 4, size=int(rng.integers(8, 14))) for _ in range(6)], "n_symbols": 4}


def models_sweep_args(out: str):
    from densehmm_core.experiments.comparison import ComparisonSettings
    s = ComparisonSettings.quick("sweep", data="corpus", grid=((2, 1), (3, 1)), repeats=3,
                                 models=("standard", "standard-fair"), data_fingerprint="0:test")
    return s, out


def main() -> None:
    kind, out, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    killer = Killer(kill_at)
    sys.setprofile(killer)
    (rows_sweep if kind == "rows" else models_sweep)(out, killer)
    sys.setprofile(None)
    print(f"events {killer.count}", flush=True)


if __name__ == "__main__":
    main()

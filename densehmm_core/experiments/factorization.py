"""Non-linear matrix factorisation experiment (paper Section 4 and Table "expd").

A ground-truth ``n x n`` row-stochastic matrix ``A`` (Dirichlet(0.1) rows) is
approximated by ``f(U Z^T)`` with ``U, Z`` of shape ``n x l`` and ``f`` either

* ``softmax``    -- row-wise softmax, ``exp(x_ij) / sum_k exp(x_ik)``, or
* ``normabslin`` -- ``|x_ij| / sum_k |x_ik|`` (the paper's "normAbsLin").

``U`` and ``Z`` start from a standard normal and are optimised with Adam
(lr 0.01, the update rule of ``tf.train.AdamOptimizer``) on the relative error
``||f(U Z^T) - A||_F / ||A||_F`` -- the objective the paper's public notebook
minimised.  Both methods start from the same ``(U, Z)`` (as in that notebook).

Everything is plain numpy with hand-written gradients (checked against finite
differences in the tests): all restarts of all ground-truth matrices of one
``(n, l, method)`` are optimised as one batch.  Adam is element-wise and the
batch loss is a sum of independent problems, so a batch step is exactly an
independent Adam step for every problem.  A problem that has converged is
removed from the batch and keeps the parameters it had when it stopped.

Stopping rule ("stop when the loss stops decreasing"): after ``min_steps``, the
loss is checked every ``window`` (500) steps; a run stops when the lowest loss of
the last window is not lower than ``(1 - rel_tol)`` (``rel_tol = 0``) times the
lowest loss before it, or after ``max_steps``.  (The paper's notebook stopped
only when two consecutive float32 losses were exactly equal, i.e. in practice
after 30,000 steps; a window is needed in float64 because Adam on the
non-squared norm oscillates around the optimum.)  The error reported is the one
of the final parameters.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ..commandline import UserError
from ..maths import median_quartiles
from .cancel import cancel_token, check_cancelled
from .figures import factorization_figure

__all__ = [
    "FactorizationSettings", "PAPER_GRID", "PAPER_TABLE", "QUICK_GRID",
    "dirichlet_matrix", "transform", "relative_error", "loss_and_grads",
    "fit_batch", "run_task", "make_tasks", "summarize", "format_table",
]

METHODS = ("normabslin", "softmax")

#: (n, l) pairs of the paper's appendix table.
PAPER_GRID: Tuple[Tuple[int, int], ...] = (
    (3, 1), (3, 2), (3, 3), (3, 5),
    (5, 1), (5, 3), (5, 5), (5, 10),
    (10, 1), (10, 5), (10, 10), (10, 15),
)
QUICK_GRID: Tuple[Tuple[int, int], ...] = ((3, 1), (3, 3), (5, 2), (5, 5))

#: The paper's table: (n, l) -> {method: (median, q25, q75)}.
PAPER_TABLE: Dict[Tuple[int, int], Dict[str, Tuple[float, float, float]]] = {
    (3, 1): {"normabslin": (0.678, 0.652, 0.696), "softmax": (0.048, 0.004, 0.110)},
    (3, 2): {"normabslin": (0.162, 0.002, 0.270), "softmax": (0.001, 0.000, 0.001)},
    (3, 3): {"normabslin": (0.001, 0.001, 0.001), "softmax": (0.001, 0.000, 0.001)},
    (3, 5): {"normabslin": (0.001, 0.001, 0.001), "softmax": (0.001, 0.001, 0.001)},
    (5, 1): {"normabslin": (0.769, 0.745, 0.827), "softmax": (0.453, 0.321, 0.505)},
    (5, 3): {"normabslin": (0.346, 0.093, 0.396), "softmax": (0.001, 0.001, 0.003)},
    (5, 5): {"normabslin": (0.001, 0.001, 0.002), "softmax": (0.001, 0.001, 0.001)},
    (5, 10): {"normabslin": (0.001, 0.001, 0.002), "softmax": (0.002, 0.001, 0.003)},
    (10, 1): {"normabslin": (0.862, 0.851, 0.868), "softmax": (0.616, 0.581, 0.645)},
    (10, 5): {"normabslin": (0.310, 0.235, 0.345), "softmax": (0.012, 0.005, 0.028)},
    (10, 10): {"normabslin": (0.002, 0.002, 0.002), "softmax": (0.003, 0.002, 0.005)},
    (10, 15): {"normabslin": (0.002, 0.002, 0.002), "softmax": (0.003, 0.003, 0.043)},
}

COLUMNS = ["experiment", "settings_id", "n", "l", "method", "matrix", "restart", "seed",
           "error", "steps", "stopped", "initial_error", "task_seconds"]
KEY = ("experiment", "settings_id", "n", "l", "method")


@dataclass(frozen=True)
class FactorizationSettings:
    """Settings of one factorisation sweep (the defaults are the paper's)."""

    grid: Tuple[Tuple[int, int], ...] = PAPER_GRID
    n_matrices: int = 10
    n_restarts: int = 20
    alpha: float = 0.1
    lr: float = 0.01
    min_steps: int = 2000
    max_steps: int = 30000
    window: int = 500
    rel_tol: float = 0.0
    seed: int = 0
    methods: Tuple[str, ...] = METHODS

    @classmethod
    def quick(cls, **kw) -> "FactorizationSettings":
        base: Dict[str, Any] = dict(grid=QUICK_GRID, n_matrices=3, n_restarts=3, min_steps=200, max_steps=1000,
                    window=100)
        base.update(kw)
        return cls(**base)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["grid"] = [list(p) for p in self.grid]
        d["methods"] = list(self.methods)
        return d

    @property
    def settings_id(self) -> str:
        """Short hash of everything but the grid and the methods (rows carry n, l, method)."""
        d = self.to_dict()
        d.pop("grid")
        d.pop("methods")
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]


# --------------------------------------------------------------------- maths
def _seed(*parts: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([int(p) for p in parts])


def dirichlet_matrix(n: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """An ``n x n`` matrix whose rows are drawn from Dirichlet(alpha, ..., alpha).

    Rows are redrawn in the (rare, for small alpha) case that numerical underflow
    gives an all-zero row.
    """
    A = rng.dirichlet(np.full(n, alpha), size=n)
    bad = ~np.isfinite(A).all(axis=1) | (A.sum(axis=1) <= 0)
    while bad.any():
        A[bad] = rng.dirichlet(np.full(n, alpha), size=int(bad.sum()))
        bad = ~np.isfinite(A).all(axis=1) | (A.sum(axis=1) <= 0)
    return A


def transform(X: np.ndarray, method: str) -> np.ndarray:
    """Row-wise ``softmax`` or ``normabslin`` of ``X`` (last axis)."""
    if method == "softmax":
        from ..maths import softmax
        return softmax(X, axis=-1)
    if method == "normabslin":
        Y = np.abs(X)
        return Y / Y.sum(axis=-1, keepdims=True)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")


def relative_error(A_hat: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``||A_hat - A||_F / ||A||_F`` over the last two axes."""
    return (np.sqrt(((A_hat - A) ** 2).sum(axis=(-2, -1)))
            / np.sqrt((A ** 2).sum(axis=(-2, -1))))


def loss_and_grads(U: np.ndarray, Z: np.ndarray, G: np.ndarray, method: str):
    """Relative error of ``f(U Z^T)`` against ``G`` and its gradients.

    Shapes: ``U, Z`` (b, n, l), ``G`` (b, n, n).  Returns ``(loss (b,), dU, dZ)``.
    """
    X = U @ np.swapaxes(Z, -1, -2)
    A = transform(X, method)
    R = A - G
    rnorm = np.sqrt((R ** 2).sum(axis=(-2, -1)))
    gnorm = np.sqrt((G ** 2).sum(axis=(-2, -1)))
    loss = rnorm / gnorm
    D = R / (np.maximum(rnorm, 1e-300) * gnorm)[:, None, None]           # dL/dA
    inner = (D * A).sum(axis=-1, keepdims=True)
    if method == "softmax":
        dX = A * (D - inner)
    else:
        S = np.abs(X).sum(axis=-1, keepdims=True)
        dX = np.sign(X) * (D - inner) / np.maximum(S, 1e-300)
    dU = dX @ Z
    dZ = np.swapaxes(dX, -1, -2) @ U
    return loss, dU, dZ


def fit_batch(G: np.ndarray, U0: np.ndarray, Z0: np.ndarray, method: str, *, lr: float = 0.01,
              min_steps: int = 2000, max_steps: int = 30000, window: int = 500,
              rel_tol: float = 0.0, beta1: float = 0.9, beta2: float = 0.999,
              eps: float = 1e-8, cancel=None) -> dict:
    """Optimise a batch of independent factorisation problems with Adam.

    Parameters
    ----------
    G : (b, n, n) ground-truth matrices (one per problem).
    U0, Z0 : (b, n, l) initial factors.
    method : "softmax" or "normabslin".
    cancel : a :class:`~densehmm_core.events.CancelToken` (or None), checked before every Adam step:
        once it is set, :class:`~densehmm_core.experiments.cancel.TaskCancelled` is raised (an interrupted
        sweep; a batch stopped half-way is no result).

    Returns
    -------
    dict with ``error`` (b,) relative error of the final factors, ``steps`` (b,)
    steps taken, ``stopped`` (b,) bool (True: converged before ``max_steps``),
    ``initial_error`` (b,), ``U``, ``Z`` (final factors).
    """
    G = np.asarray(G, dtype=np.float64)
    U = np.array(U0, dtype=np.float64)
    Z = np.array(Z0, dtype=np.float64)
    b = G.shape[0]
    U_out, Z_out = U.copy(), Z.copy()
    steps = np.full(b, max_steps, dtype=np.int64)
    stopped = np.zeros(b, dtype=bool)
    initial = relative_error(transform(U @ np.swapaxes(Z, -1, -2), method), G)

    active = np.arange(b)
    mU, vU = np.zeros_like(U), np.zeros_like(U)
    mZ, vZ = np.zeros_like(Z), np.zeros_like(Z)
    best_before = np.full(b, np.inf)
    best_window = np.full(b, np.inf)
    Ga = G
    for t in range(1, max_steps + 1):
        check_cancelled(cancel)
        loss, dU, dZ = loss_and_grads(U, Z, Ga, method)
        if not np.all(np.isfinite(loss)):
            # keep going for the finite ones; non-finite problems stop here
            bad = ~np.isfinite(loss) | ~np.isfinite(dU).all(axis=(1, 2)) | ~np.isfinite(dZ).all(axis=(1, 2))
            dU[bad] = 0.0
            dZ[bad] = 0.0
        best_window = np.minimum(best_window, loss)
        # Adam (tf.train.AdamOptimizer form)
        mU = beta1 * mU + (1 - beta1) * dU
        vU = beta2 * vU + (1 - beta2) * dU * dU
        mZ = beta1 * mZ + (1 - beta1) * dZ
        vZ = beta2 * vZ + (1 - beta2) * dZ * dZ
        lr_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        U = U - lr_t * mU / (np.sqrt(vU) + eps)
        Z = Z - lr_t * mZ / (np.sqrt(vZ) + eps)
        if t % window == 0:
            done = np.zeros(len(active), dtype=bool)
            if t >= min_steps:
                done = best_window >= (1.0 - rel_tol) * best_before
            best_before = np.minimum(best_before, best_window)
            best_window = np.full(len(active), np.inf)
            if t == max_steps:
                done[:] = True
            if done.any():
                idx = active[done]
                U_out[idx], Z_out[idx] = U[done], Z[done]
                steps[idx] = t
                stopped[idx] = t < max_steps
                keep = ~done
                active = active[keep]
                U, Z, Ga = U[keep], Z[keep], Ga[keep]
                mU, vU, mZ, vZ = mU[keep], vU[keep], mZ[keep], vZ[keep]
                best_before, best_window = best_before[keep], best_window[keep]
            if len(active) == 0:
                break
    if len(active):
        U_out[active], Z_out[active] = U, Z
    err = relative_error(transform(U_out @ np.swapaxes(Z_out, -1, -2), method), G)
    return {"error": err, "steps": steps, "stopped": stopped, "initial_error": initial,
            "U": U_out, "Z": Z_out}


# --------------------------------------------------------------- tasks/rows
def ground_truth(n: int, settings: FactorizationSettings) -> np.ndarray:
    """The ``n_matrices`` ground-truth matrices of size ``n`` (shared by every l)."""
    return np.stack([dirichlet_matrix(n, settings.alpha,
                                      np.random.default_rng(_seed(settings.seed, 1, n, i)))
                     for i in range(settings.n_matrices)])


def initial_factors(n: int, l: int, settings: FactorizationSettings):
    """Standard-normal ``(U, Z)`` for every (matrix, restart); the same for both methods."""
    Us, Zs = [], []
    for i in range(settings.n_matrices):
        for r in range(settings.n_restarts):
            rng = np.random.default_rng(_seed(settings.seed, 2, n, l, i, r))
            Us.append(rng.standard_normal((n, l)))
            Zs.append(rng.standard_normal((n, l)))
    return np.stack(Us), np.stack(Zs)


def run_task(n: int, l: int, method: str, settings: dict) -> List[dict]:
    """One ``(n, l, method)`` cell: every matrix x restart, one row each."""
    s = FactorizationSettings(**{**settings, "grid": tuple(map(tuple, settings["grid"])),
                                 "methods": tuple(settings["methods"])})
    t0 = time.perf_counter()
    G1 = ground_truth(n, s)
    G = np.repeat(G1, s.n_restarts, axis=0)
    U0, Z0 = initial_factors(n, l, s)
    res = fit_batch(G, U0, Z0, method, lr=s.lr, min_steps=s.min_steps, max_steps=s.max_steps,
                    window=s.window, rel_tol=s.rel_tol, cancel=cancel_token())   # Ctrl-C on a thread sweep
    secs = time.perf_counter() - t0
    rows = []
    k = 0
    for i in range(s.n_matrices):
        for r in range(s.n_restarts):
            rows.append({
                "experiment": "factorization", "settings_id": s.settings_id,
                "n": n, "l": l, "method": method, "matrix": i, "restart": r,
                "seed": f"{s.seed}/{n}/{l}/{i}/{r}",
                "error": float(res["error"][k]), "steps": int(res["steps"][k]),
                "stopped": bool(res["stopped"][k]), "initial_error": float(res["initial_error"][k]),
                "task_seconds": round(secs, 3),
            })
            k += 1
    return rows


def make_tasks(settings: FactorizationSettings):
    """Runner tasks, the slowest first (large n, large l, then normAbsLin)."""
    from .runner import Task
    sd = settings.to_dict()
    tasks = []
    for (n, l) in settings.grid:
        for method in settings.methods:
            key = {"experiment": "factorization", "settings_id": settings.settings_id,
                   "n": n, "l": l, "method": method}
            tasks.append(Task(key=key, func="densehmm_core.experiments.factorization:run_task",
                              kwargs={"n": n, "l": l, "method": method, "settings": sd},
                              label=f"factorization n={n} l={l} {method}",
                              cost=float(n * n * max(l, 1))))
    tasks.sort(key=lambda t: -t.cost)
    return tasks


# ----------------------------------------------------------------- summary
def summarize(rows: Sequence[dict]) -> List[dict]:
    """Median and 25/75 percentiles per (n, l, method): over all runs and over the
    best restart of each ground-truth matrix."""
    by: Dict[tuple, List[dict]] = {}
    for r in rows:
        by.setdefault((int(r["n"]), int(r["l"]), str(r["method"])), []).append(r)
    out = []
    for (n, l, method), rs in sorted(by.items()):
        err = np.array([float(r["error"]) for r in rs])
        best: Dict[int, float] = {}
        for r in rs:
            i = int(r["matrix"])
            best[i] = min(best.get(i, np.inf), float(r["error"]))
        med, q25, q75 = median_quartiles(err)
        bmed, bq25, bq75 = median_quartiles(list(best.values()))
        paper = PAPER_TABLE.get((n, l), {}).get(method)
        out.append({"n": n, "l": l, "l_over_n": l / n, "method": method, "runs": len(rs),
                    "median": med, "q25": q25, "q75": q75,
                    "best_median": bmed, "best_q25": bq25, "best_q75": bq75,
                    "stopped_fraction": float(np.mean([str(r["stopped"]) in ("True", "true", "1")
                                                       for r in rs])),
                    "median_steps": float(np.median([int(r["steps"]) for r in rs])),
                    "paper_median": None if paper is None else paper[0],
                    "paper_q25": None if paper is None else paper[1],
                    "paper_q75": None if paper is None else paper[2]})
    return out


def _fmt(m, a, b) -> str:
    return f"{m:.3f} ({a:.3f}/{b:.3f})"


def format_table(summary: Sequence[dict]) -> str:
    """Markdown table: ours (all runs, best restart) beside the paper's, per method."""
    cells: Dict[tuple, Dict[str, dict]] = {}
    for s in summary:
        cells.setdefault((s["n"], s["l"]), {})[s["method"]] = s
    lines = ["| n | l | normAbsLin (ours, all runs) | normAbsLin (ours, best restart) | normAbsLin (paper) "
             "| softmax (ours, all runs) | softmax (ours, best restart) | softmax (paper) |",
             "|---|---|---|---|---|---|---|---|"]
    for (n, l) in sorted(cells):
        parts = [str(n), str(l)]
        for method in METHODS:
            s = cells[(n, l)].get(method)
            if s is None:
                parts += ["-", "-", "-"]
                continue
            parts.append(_fmt(s["median"], s["q25"], s["q75"]))
            parts.append(_fmt(s["best_median"], s["best_q25"], s["best_q75"]))
            p = PAPER_TABLE.get((n, l), {}).get(method)
            parts.append("-" if p is None else _fmt(*p))
        lines.append("| " + " | ".join(parts) + " |")
    return "\n".join(lines)


# -------------------------------------------------------------- the sweep
def describe_rows(rows: Sequence[dict]) -> str:
    """Progress-line summary of one task's rows."""
    med, q25, q75 = median_quartiles([float(r["error"]) for r in rows])
    steps = np.array([int(r["steps"]) for r in rows])
    return f"error median {med:.4f} ({q25:.4f}/{q75:.4f}), median steps {int(np.median(steps))}"


def write_outputs(rows: Sequence[dict], out) -> dict:
    """Summary CSV, markdown table and figure from the rows of a sweep."""
    from pathlib import Path
    from .runner import ResultStore, remove_result_file
    out = Path(out)
    summary = summarize(rows)
    cols = ["n", "l", "l_over_n", "method", "runs", "median", "q25", "q75", "best_median",
            "best_q25", "best_q75", "stopped_fraction", "median_steps", "paper_median",
            "paper_q25", "paper_q75"]
    path = out / "factorization_summary.csv"
    remove_result_file(path)
    ResultStore(path, cols).add(summary)
    table = format_table(summary)
    _atomic_text(out / "factorization_table.md", table + "\n")
    factorization_figure(rows, out / "factorization.png", PAPER_TABLE)
    return {"summary": summary, "table": table}


def _atomic_text(path, text: str) -> None:
    from pathlib import Path

    from .. import fileio
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fileio.write_text(path, text, follow_links=False)


#: Most rows one factorisation folder may have ((n, l) pairs x methods x matrices x restarts).
MAX_ROWS = 1_000_000


def _result_settings(s: FactorizationSettings) -> dict:
    d = s.to_dict()
    d.pop("grid")
    d.pop("methods")
    return d


def check_size(s: FactorizationSettings, jobs: int) -> None:
    """Refuse (ValueError, one line) a sweep with more than :data:`MAX_ROWS` rows or whose largest
    batched fit (matrices x restarts problems of n x n, with Adam state) exceeds the memory budget."""
    from ..modelfile.safety import memory_budget
    rows = len(s.grid) * len(s.methods) * s.n_matrices * s.n_restarts
    if rows > MAX_ROWS:
        raise ValueError(f"too large: {len(s.grid)} (n, l) pairs x {len(s.methods)} methods x {s.n_matrices} "
                         f"matrices x {s.n_restarts} restarts = {rows} runs, more than the {MAX_ROWS} allowed")
    worst = max(8.0 * s.n_matrices * s.n_restarts * (8 * n * n + 8 * n * l) for n, l in s.grid)
    budget = memory_budget()
    if worst * max(1, jobs) > budget:
        raise ValueError(f"too large: the largest fit needs about {worst * max(1, jobs) / 1e9:.3g} GB with "
                         f"{max(1, jobs)} jobs, more than the {budget / 1e9:.3g} GB allowed (half this machine's "
                         "memory; set DENSEHMM_MAX_MODEL_BYTES to change it)")


def run_factorization(settings: FactorizationSettings, out, *, jobs: int = 1,
                      executor: str = "thread", quiet: bool = False, run: bool = True) -> int:
    """Run (or resume) the factorisation sweep into ``out``; returns an exit code.  Too large, a folder
    of other settings or with damaged files, or another sweep using it raise
    :class:`~densehmm_core.commandline.UserError` (the command line: one line, exit 2)."""
    from pathlib import Path

    from .. import fileio
    from .runner import FolderBusyError, FolderLock, ResultFileError
    try:
        check_size(settings, jobs)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with FolderLock(out):
            return _run_locked(settings, out, jobs=jobs, executor=executor, quiet=quiet, run=run)
    except (FolderBusyError, ResultFileError, fileio.FileWriteError) as exc:
        raise UserError(str(exc)) from None


def _run_locked(settings: FactorizationSettings, out, *, jobs: int, executor: str, quiet: bool, run: bool) -> int:
    from .runner import (ResultFileError, ResultStore, column_types, format_seconds, read_settings_file, run_tasks,
                         settings_differences)
    types = column_types(("n", "l", "matrix", "restart", "steps"), ("error", "initial_error", "task_seconds"))
    store = ResultStore(out / "factorization_runs.csv", COLUMNS, key=KEY + ("matrix", "restart"), types=types)
    spath = out / "factorization_settings.json"

    def build(d: dict) -> FactorizationSettings:
        return FactorizationSettings(**{**d, "grid": tuple(tuple(p) for p in d["grid"]),
                                        "methods": tuple(d["methods"])})
    found = read_settings_file(spath, build)
    if found is None and store.rows:
        raise ResultFileError(store.path, f"holds {len(store.rows)} runs but {spath.name} is missing: which "
                                          "settings made them cannot be checked; use another --out folder")
    if found is not None:
        diff = settings_differences(_result_settings(found[0]), _result_settings(settings))
        if diff:
            raise ResultFileError(out, "holds runs made with other settings: " + "; ".join(diff)
                                  + "; use another --out folder (or the settings it was made with)")
    _atomic_text(spath, json.dumps({**settings.to_dict(), "settings_id": settings.settings_id}, indent=2) + "\n")
    tasks = make_tasks(settings)
    say = (lambda s: None) if quiet else (lambda s: print(s, flush=True))
    say(f"factorization: {len(tasks)} tasks ({len(settings.grid)} (n, l) pairs x "
        f"{len(settings.methods)} methods), {settings.n_matrices} matrices x "
        f"{settings.n_restarts} restarts each, jobs={jobs}; results in {out}")
    if not run:
        tasks = []
        say(f"--report-only: {len(store.rows)} finished runs in {store.path}")
    rep = run_tasks(tasks, store, KEY, jobs=jobs, executor=executor, import_tf=False,
                    describe=describe_rows, out=say, error_log=out / "errors.log")
    sid = settings.settings_id
    rows = [r for r in store.rows if r.get("settings_id") == sid
            and (int(r["n"]), int(r["l"])) in set(settings.grid)]
    if rows:
        res = write_outputs(rows, out)
        say(res["table"])
    say(f"done: {rep.done} run, {rep.skipped} skipped, {len(rep.failed)} failed in "
        f"{format_seconds(rep.seconds)} (sum of task times {format_seconds(rep.task_seconds)})")
    if rep.interrupted:
        return 130
    return 1 if rep.failed else 0

"""An interrupted thread sweep stops every task it runs: the factorization's Adam loop checks the sweep's
cancel token, and every fit in densehmm_core/experiments/ is given one (review rev24)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "densehmm_core" / "experiments"


def test_factorization_task_stops_at_the_next_adam_step_once_cancelled(monkeypatch):
    """The token set during the 10th step: the task raises TaskCancelled before an 11th (it used to run
    all its steps, here a million, while Ctrl-C waited for it)."""
    from densehmm_core.events import CancelToken
    from densehmm_core.experiments import factorization
    from densehmm_core.experiments.cancel import TaskCancelled, call_with_token
    from densehmm_core.experiments.runner import call_task
    token = CancelToken()
    calls = []
    real = factorization.loss_and_grads

    def counting(*a, **kw):
        calls.append(1)
        if len(calls) == 10:
            token.cancel()
        return real(*a, **kw)
    monkeypatch.setattr(factorization, "loss_and_grads", counting)
    s = factorization.FactorizationSettings.quick(grid=((3, 1),), n_matrices=1, n_restarts=1,
                                                  min_steps=10 ** 6, max_steps=10 ** 6)
    with pytest.raises(TaskCancelled):
        call_with_token(token, call_task, "densehmm_core.experiments.factorization:run_task",
                        {"n": 3, "l": 1, "method": "softmax", "settings": s.to_dict()})
    assert len(calls) == 10


def test_factorization_without_a_token_is_unchanged():
    """No token (processes, Dask, a direct call): the same numbers as before the check."""
    import numpy as np

    from densehmm_core.events import CancelToken
    from densehmm_core.experiments.factorization import fit_batch
    rng = np.random.default_rng(0)
    G = rng.dirichlet(np.full(3, 0.5), size=(2, 3))
    U0, Z0 = rng.standard_normal((2, 3, 1)), rng.standard_normal((2, 3, 1))
    a = fit_batch(G, U0, Z0, "softmax", min_steps=20, max_steps=40, window=10)
    b = fit_batch(G, U0, Z0, "softmax", min_steps=20, max_steps=40, window=10, cancel=CancelToken())
    np.testing.assert_array_equal(a["error"], b["error"])
    np.testing.assert_array_equal(a["steps"], b["steps"])


#: The calls that train: methods named fit, fit_* or iter_fit, and the factorization's fit_batch.
def _is_fit(call: ast.Call) -> str:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if isinstance(f, ast.Attribute) and (name in ("fit", "iter_fit") or name.startswith("fit_")):
        return name
    return name if name == "fit_batch" else ""


def test_every_fit_in_the_experiments_is_cancellable():
    """Every fit the experiments start passes the sweep's token: through fit_cancellable, or a cancel=
    argument of its own.  A fit added without one would make Ctrl-C on a thread sweep wait for it."""
    bare = []
    for path in sorted(EXPERIMENTS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_fit(node):
                if not any(k.arg == "cancel" for k in node.keywords):
                    bare.append(f"{path.name}:{node.lineno} {_is_fit(node)}(...)")
    assert not bare, "fits without the sweep's cancel token (use cancel.fit_cancellable): " + ", ".join(bare)


def test_the_scan_sees_a_bare_fit():
    """The scan above is not vacuous: it finds an unwrapped fit and accepts a wrapped one."""
    calls = [n for n in ast.walk(ast.parse("m.fit(x)\nm.fit_cooc(c, cancel=t)\nfit_cancellable(m, x)\n"
                                           "m.iter_fit(x)\nfit_batch(G, U, Z, 'softmax')"))
             if isinstance(n, ast.Call)]
    found = [(_is_fit(c), any(k.arg == "cancel" for k in c.keywords)) for c in calls if _is_fit(c)]
    assert sorted(found) == [("fit", False), ("fit_batch", False), ("fit_cooc", True), ("iter_fit", False)]

"""One row of results per job: what the Jobs panel's table shows and the sweep view plots.

:func:`job_row` reads a job (its spec, its model, the model's history and the job's
state) into a plain dict; no maths here (a total log-likelihood is turned into NLL per
token by the core's :func:`densehmm_core.metrics.normalized_nll`).  The sweep summary
view takes ``[job_row(j) for j in jobs]`` of finished jobs.

Keys of a row (``None`` where unknown):

=============  ==============================================================
``job``        job id (int); ``name``, ``sweep`` (str or None), ``state`` (str)
``model``      the model type's short label (the core's: ``Dense-cooc``, ``Dense-EM``, ``Dense-cooc-EM``,
               ``Standard``, ``Standard-fair``)
``kind``       the core's model type key (``dense_cooc``, ``dense_em``, ``dense_cooc_em``, ``standard``,
               ``standard_fair``; :func:`densehmm_core.registry.model_types`)
``n``, ``l``   hidden states; embedding length (for ``Standard-fair``: the l its n' matches)
``seed``       model seed
``parameters`` free parameters of the model
``train_nll``  final normalised NLL (per token) on the training data
``test_nll``   the same on the held-out data; also ``result``
``mad``        final co-occurrence MAD (for the three: the history's last value, else, for a model
               read from a file, the file's metrics group)
``iterations`` steps / EM iterations done
``stop``       why training stopped (converged, max_steps, cancelled, ...)
``time_s``     seconds the job ran
``device``     where it ran
=============  ==============================================================
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .modelspec import ModelSpec, short_label

__all__ = ["job_row", "ROW_KEYS", "as_number", "INFINITE_TEST_NLL"]

#: Why a test NLL is infinite (said where one is shown: the curves, the jobs table's cells).
INFINITE_TEST_NLL = ("Test NLL is infinite: some test sequences have probability 0 under the model (symbols "
                     "the training part lacks). Standard HMMs: set Smoothing > 0.")

ROW_KEYS = ("job", "name", "sweep", "state", "model", "kind", "n", "l", "seed", "parameters", "train_nll",
            "test_nll", "result", "mad", "iterations", "stop", "time_s", "device")


def _kind(job) -> str:
    """The job's model type key: from its form values, else (a model read from a file) from the model."""
    if job.spec:
        return ModelSpec.from_dict(job.spec).model_type
    model = job.model
    return f"dense_{model.fit_method}" if model.kind == "dense" else "standard"


def _latest(history: List[dict], key: str) -> Optional[float]:
    for rec in reversed(history):
        v = rec.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def as_number(v: Any) -> Optional[float]:
    """``v`` as a float when it is a number (not a bool), else None (a value read from a file)."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _per_token(ll: Optional[float], data: Any) -> Optional[float]:
    if ll is None or data is None:
        return None
    from densehmm_core.metrics import normalized_nll
    try:
        return float(normalized_nll(ll, data))
    except (TypeError, ValueError):
        return None


def job_row(job) -> Dict[str, Any]:
    """The results of one job as a flat dict (see the module docstring for the keys)."""
    model = job.model
    spec = job.spec or {}
    history = job.history
    kind = _kind(job)
    l = getattr(model, "dim", None)
    if l is None and kind == "standard_fair":
        l = spec.get("l")
    try:
        params = int(model.n_parameters)
    except (AttributeError, RuntimeError, TypeError):
        params = None
    recorded = getattr(model, "metrics_", None) or {}     # a model file's metrics group
    train_nll = _latest(history, "train_nll")
    if train_nll is None:
        train_nll = _per_token(_latest(history, "train_ll"), job.train)
    if train_nll is None:
        train_nll = as_number(recorded.get("train_nll"))
    test_nll = _latest(history, "test_nll")
    if test_nll is None:
        test_nll = _per_token(_latest(history, "test_ll"), job.test)
    if test_nll is None:
        test_nll = as_number(recorded.get("test_nll"))
    mad = _latest(history, "mad")
    if mad is None:
        mad = as_number(recorded.get("mad"))
    iterations = int(history[-1].get("step") or 0) if history else (job.step or None)
    stop = job.reason or getattr(model, "stop_reason_", "") or None
    seed = spec.get("seed", getattr(model, "seed", None))
    return {
        "job": job.id, "name": job.name, "sweep": job.sweep, "state": job.state.value,
        "model": short_label(kind), "kind": kind, "n": int(model.n_states), "l": l, "seed": seed,
        "parameters": params, "train_nll": train_nll, "test_nll": test_nll, "result": test_nll,
        "mad": None if mad is None else float(mad), "iterations": iterations, "stop": stop,
        "time_s": job.elapsed if job.started_at is not None else None, "device": job.device,
    }

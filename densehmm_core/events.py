"""The progress-event stream shared by every trainer, the CLI and the GUI.

Every training procedure in :mod:`densehmm_core` is written as a generator
(``model.iter_fit(...)``) that yields :class:`ProgressEvent` objects.  ``fit``
is just a loop over that generator; the CLI prints the events, the GUI plots
them.  A :class:`CancelToken` is polled by the trainers between chunks of work.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import numpy as np

__all__ = [
    "ProgressEvent",
    "CancelToken",
    "TrainingCancelled",
    "TrainingDiverged",
    "ProgressCallback",
]


class TrainingDiverged(RuntimeError):
    """A loss or a parameter became non-finite.

    The model that raised it keeps its last finite parameters.
    """


class TrainingCancelled(Exception):
    """Raised only by helpers that must unwind; ``fit`` itself returns normally."""


class CancelToken:
    """A thread-safe flag a front end sets to stop a running fit.

    Trainers poll :attr:`cancelled` between chunks (an EM iteration, a chunk of
    Adam steps); the model keeps the parameters reached so far.
    """

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def __bool__(self) -> bool:  # pragma: no cover - convenience
        return self.cancelled


@dataclass
class ProgressEvent:
    """One step of a training stream.

    Attributes
    ----------
    step : int
        Step (Adam step for co-occurrence fits) or EM / Baum-Welch iteration,
        counted from 1.  ``step == 0`` is the event describing the initial model.
    total : int or None
        The maximum number of steps the trainer will run (for progress bars).
    phase : str
        What produced it: ``"baum-welch"``, ``"em"``, ``"cooc"``, ...
    loss : float or None
        The objective being minimised (for Baum-Welch: the negative normalised
        log-likelihood).
    train_ll : float or None
        Total log-likelihood of the training data, where computed.
    test_ll : float or None
        Total log-likelihood of the evaluation data passed to ``iter_fit``.
    metrics : dict
        Anything else (``"mad"``, ``"train_nll"``, ``"test_nll"``, ``"restart"``...).
    params : dict or None
        Snapshot (copies) of the current parameters: ``startprob``, ``transmat``,
        ``emissionprob`` and, for dense models, ``U``, ``Z``, ``W``, ``V``,
        ``z_start``.  Present every ``snapshot_every`` steps and on the last event.
    done : bool
        True on the final event of the stream (converged, max steps, cancelled).
    reason : str
        Why the stream ended (``"converged"``, ``"max_steps"``, ``"cancelled"``) on
        the last event; empty otherwise.
    elapsed : float
        Seconds since the stream started.
    """

    step: int
    total: Optional[int] = None
    phase: str = ""
    loss: Optional[float] = None
    train_ll: Optional[float] = None
    test_ll: Optional[float] = None
    metrics: dict = field(default_factory=dict)
    params: Optional[dict] = None
    done: bool = False
    reason: str = ""
    elapsed: float = 0.0

    @property
    def fraction(self) -> Optional[float]:
        """Progress in [0, 1] if ``total`` is known."""
        if not self.total:
            return None
        return min(1.0, max(0.0, self.step / self.total))

    def summary(self) -> str:
        """One human-readable line (used by the CLI's verbose mode)."""
        parts = [f"{self.phase or 'step'} {self.step}" + (f"/{self.total}" if self.total else "")]
        if self.loss is not None:
            parts.append(f"loss={self.loss:.6g}")
        if self.train_ll is not None:
            parts.append(f"train_ll={self.train_ll:.6g}")
        if self.test_ll is not None:
            parts.append(f"test_ll={self.test_ll:.6g}")
        for k, v in self.metrics.items():
            if isinstance(v, (int, float, np.floating, np.integer)):
                parts.append(f"{k}={float(v):.6g}")
        if self.done:
            parts.append(f"[{self.reason or 'done'}]")
        return "  ".join(parts)


ProgressCallback = Callable[[ProgressEvent], Any]


class Stopwatch:
    """Tiny helper: ``elapsed`` seconds since construction."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def snapshot(arrays: Mapping[str, Any]) -> dict:
    """Copy a mapping of arrays so that a consumer on another thread owns them."""
    return {k: np.array(v, copy=True) for k, v in arrays.items() if v is not None}

"""The progress-event stream shared by every trainer, the CLI and the GUI.

Every training procedure in :mod:`densehmm_core` is written as a generator
(``model.iter_fit(...)``) that yields :class:`ProgressEvent` objects.  ``fit``
is just a loop over that generator; the CLI prints the events, the GUI plots
them.  A :class:`CancelToken` is polled by the trainers between chunks of work.

Before its first step a fit may report how its **start** is being prepared: events of phase
:data:`START_PHASE` (``"start"``), one or more per stage of a spectral start (:data:`START_STAGES`:
reading the adjacent pairs, the SVD of the context matrix -- or, with more states than symbols,
counting the tokens' contexts -- and k-means) or one saying that the start is
random and why.  They carry no loss and no parameters, are not recorded in ``history_``, and the
cancel token is polled after each (:func:`run_start`): a fit cancelled during its start ends within
a fraction of a second and leaves the model as it was before the fit.
"""
from __future__ import annotations

import contextvars
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Mapping, Optional, Tuple, TypeVar

import numpy as np

__all__ = [
    "ProgressEvent",
    "CancelToken",
    "TrainingCancelled",
    "TrainingDiverged",
    "LOWER_LR",
    "ProgressCallback",
    "START_PHASE",
    "START_STAGES",
    "START_SHORT",
    "START_INDEX",
    "START_COUNT",
    "StartStep",
    "start_text",
    "start_fraction",
    "start_label",
    "run_start",
    "check_cancel",
    "StartCancelled",
    "STOP_REASONS",
    "stop_meaning",
    "stop_text",
]

#: ``ProgressEvent.phase`` of the events that report a fit's start before its first step.
START_PHASE = "start"
#: The stages of a spectral start, in order, with what they are called on screen; a start that
#: falls back to random reports one step of stage ``"random"``.
#: ``"contexts"`` takes the SVD's place where there are more states than symbols (a small alphabet's
#: start counts the contexts of the tokens instead: :func:`densehmm_core.spectral.context_states`).
START_STAGES = {"pairs": "reading pairs", "svd": "SVD", "contexts": "counting contexts", "kmeans": "k-means"}
#: Their short names (a progress bar's text: "SVD 2/3").
START_SHORT = {"pairs": "pairs", "svd": "SVD", "contexts": "contexts", "kmeans": "k-means"}
#: Each stage's place in a start (one of :data:`START_COUNT`).
START_INDEX = {"pairs": 1, "svd": 2, "contexts": 2, "kmeans": 3}
#: How many stages a spectral start has.
START_COUNT = max(START_INDEX.values())

#: What each ``ProgressEvent.reason`` (and a model's ``stop_reason_``) means, in words.  The values
#: themselves stay as they are in model files, CSV tables and sessions; this is what a reader is told
#: (the CLI's last line, the Jobs panel's tooltips).
STOP_REASONS = {
    "converged": "the objective changed by less than tol",
    "max_steps": "every iteration or step it was given was run",
    "stalled": "the co-occurrence fit stopped making progress",
    "line_search": "the line search found no better point",
    "cancelled": "stopped by the user before its last iteration",
    "diverged": "training diverged; the last finite model was kept",
}


def stop_meaning(reason: str) -> str:
    """``STOP_REASONS[reason]``, or ``""`` for a reason it does not know (e.g. an error message, or
    "loaded from a file", which say what they mean)."""
    return STOP_REASONS.get(reason, "")


def stop_text(reason: str) -> str:
    """``"max_steps: every iteration or step it was given was run"`` (a tooltip's text), or ``""`` for
    a reason :data:`STOP_REASONS` does not know."""
    meaning = stop_meaning(reason)
    return f"{reason}: {meaning}" if meaning else ""


class TrainingDiverged(RuntimeError):
    """A loss or a parameter became non-finite.

    The model that raised it keeps its last finite parameters.  Its message ends with what to
    change, which depends on the step that diverged (:data:`LOWER_LR` for Adam steps).
    """


#: The remedy a :class:`TrainingDiverged` message gives for an Adam step (the co-occurrence fit,
#: EM's M-step); the steps without a learning rate name their own.
LOWER_LR = "Lower the learning rate (lr)."


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
        Start events (phase ``"start"``) carry the number of steps done before that start
        (0, or the steps of earlier restarts).
    total : int or None
        The maximum number of steps the trainer will run (for progress bars).
    phase : str
        What produced it: ``"baum-welch"``, ``"em"``, ``"cooc"``, ..., or ``"start"``
        (:data:`START_PHASE`: the start is being prepared; metrics ``stage``, ``stage_index``,
        ``stages``, ``stage_done`` (0..1), ``detail``, ``start``, ``restart``, ``restarts``).
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
        if self.phase == START_PHASE:
            return start_text(self.metrics, detail=True)
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


@dataclass(frozen=True)
class StartStep:
    """What a start in progress reports (:func:`run_start` turns it into a start event).

    ``stage``: a key of :data:`START_STAGES` or ``"random"``; ``done``: the share of the stage
    done (0 when it begins, 1 when it ends); ``detail``: a short text (sizes, the k-means run);
    ``note``: how the fit starts (``"spectral"``, ``"random (no adjacent pairs)"``).
    """

    stage: str
    done: float = 0.0
    detail: str = ""
    note: str = "spectral"

    def metrics(self, restart: int = 0, restarts: int = 1) -> dict:
        """The metrics of its start event."""
        known = self.stage in START_STAGES
        return {"stage": self.stage, "stage_index": START_INDEX[self.stage] if known else 1,
                "stages": START_COUNT if known else 1,
                "stage_done": float(min(1.0, max(0.0, self.done))), "detail": self.detail, "start": self.note,
                "restart": int(restart), "restarts": int(restarts)}


def start_label(metrics: Mapping[str, Any]) -> str:
    """The short form of :func:`start_text` for a progress bar: ``"SVD 2/3"``, ``"random start"``."""
    stage = str(metrics.get("stage", ""))
    if stage not in START_SHORT:
        return "random start" if stage == "random" else "start"
    return f"{START_SHORT[stage]} {metrics.get('stage_index', 1)}/{metrics.get('stages', START_COUNT)}"


def start_text(metrics: Mapping[str, Any], detail: bool = False) -> str:
    """``"start 2/3: SVD"`` (with ``detail``: ``"start 2/3: SVD 40% (rank 32 of 2004 columns)"``) from
    the metrics of a start event; ``"start: random (no adjacent pairs)"`` for a random start."""
    stage = str(metrics.get("stage", ""))
    if stage not in START_STAGES:
        return f"start: {metrics.get('start') or stage}"
    text = f"start {metrics.get('stage_index', 1)}/{metrics.get('stages', START_COUNT)}: {START_STAGES[stage]}"
    if int(metrics.get("restarts", 1) or 1) > 1:
        text += f" (restart {int(metrics.get('restart', 0)) + 1}/{int(metrics['restarts'])})"
    if detail:
        done = float(metrics.get("stage_done", 0.0) or 0.0)
        text += f" {100 * done:.0f}%"
        if metrics.get("detail"):
            text += f"  {metrics['detail']}"
    return text


def start_fraction(metrics: Mapping[str, Any]) -> float:
    """The share of the whole start done (0..1) that a start event reports (its stage and the stage's share)."""
    stages = max(1, int(metrics.get("stages", 1) or 1))
    index = min(stages, max(1, int(metrics.get("stage_index", 1) or 1)))
    done = float(min(1.0, max(0.0, float(metrics.get("stage_done", 0.0) or 0.0))))
    return (index - 1 + done) / stages


T = TypeVar("T")


class StartCancelled(Exception):
    """Raised by :func:`check_cancel` inside a start's long call once its fit is cancelled."""


_START_CANCEL: "contextvars.ContextVar[Optional[CancelToken]]" = contextvars.ContextVar("densehmm_start_cancel",
                                                                                        default=None)


def check_cancel() -> None:
    """Inside a start step driven by :func:`run_start`: raise :class:`StartCancelled` when the fit's
    cancel token is set (a no-op elsewhere).  Long calls that cannot yield (ARPACK's Lanczos
    iterations, through its matrix-vector product) call it, so a cancel interrupts them in the
    calling thread: no helper thread is left running (a thread left inside multi-threaded BLAS
    deadlocks the next ``fork`` of the process, e.g. the model-file probe)."""
    token = _START_CANCEL.get()
    if token is not None and token.cancelled:
        raise StartCancelled()


def run_start(steps: Generator[StartStep, None, T], cancel: Optional[CancelToken],
              event: Callable[[StartStep], ProgressEvent]) -> Generator[ProgressEvent, None, Tuple[bool, Optional[T]]]:
    """Drive a start: each :class:`StartStep` of ``steps`` becomes ``event(step)``, yielded at once, and
    the cancel token is polled after each (and by :func:`check_cancel` inside a step's long calls).
    Returns ``(True, the start)``, or ``(False, None)`` when it was cancelled (``steps`` is closed: it
    leaves nothing half done)."""
    while True:
        if cancel is not None and cancel.cancelled:
            steps.close()
            return False, None
        reset = _START_CANCEL.set(cancel)
        try:
            step = next(steps)
        except StopIteration as stop:
            return True, stop.value
        except StartCancelled:
            steps.close()
            return False, None
        finally:
            _START_CANCEL.reset(reset)
        yield event(step)

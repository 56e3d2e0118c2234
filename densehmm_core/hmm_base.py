"""The estimator surface shared by :class:`StandardHMM` and :class:`DenseHMM`.

Subclasses implement :meth:`_iter_fit` (a generator of :class:`ProgressEvent`)
and :attr:`n_parameters`; everything else — scoring, decoding, sampling, the
``fit`` loop with callback and cancel token, AIC/BIC — lives here once.
"""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence

import numpy as np

from .events import CancelToken, ProgressCallback, ProgressEvent
from .sequences import as_sequences, infer_n_symbols, n_tokens

__all__ = ["BaseHMM", "check_stochastic", "history_record"]


def check_stochastic(name: str, a: np.ndarray, shape: tuple, atol: float = 1e-8) -> np.ndarray:
    """Validate a probability vector/matrix: shape, finite, non-negative, rows sum to 1."""
    a = np.asarray(a, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds non-finite values")
    if np.any(a < 0):
        raise ValueError(f"{name} holds negative values")
    sums = a.sum(axis=-1)
    if not np.allclose(sums, 1.0, rtol=0, atol=atol):
        raise ValueError(f"{name} rows must sum to 1 (got sums {np.round(sums, 6)})")
    return a


def history_record(ev: ProgressEvent) -> dict:
    """The ``history_`` entry of one progress event (its scalar numbers)."""
    rec = {"step": ev.step, "loss": ev.loss, "train_ll": ev.train_ll, "test_ll": ev.test_ll,
           "elapsed": ev.elapsed, "phase": ev.phase}
    rec.update({k: v for k, v in ev.metrics.items() if np.isscalar(v)})
    return rec


class BaseHMM:
    """Common estimator surface of the HMMs (numpydoc in the subclasses).

    Attributes set by fitting or by assignment: ``startprob_`` (n,), ``transmat_``
    (n, n; row = from-state), ``emissionprob_`` (n, m).
    """

    kind = "base"

    def __init__(self, n_states: int, n_symbols: Optional[int] = None, seed: Optional[int] = None,
                 engine: str = "auto", device: str = "auto") -> None:
        if int(n_states) < 1:
            raise ValueError("n_states must be >= 1")
        self.n_states = int(n_states)
        self.n_symbols = None if n_symbols is None else int(n_symbols)
        self.seed = seed
        self.engine = engine
        self.device = device
        self.startprob_: Optional[np.ndarray] = None
        self.transmat_: Optional[np.ndarray] = None
        self.emissionprob_: Optional[np.ndarray] = None
        self.history_: List[dict] = []
        self.stop_reason_: str = ""
        self.vocabulary: Optional[List[str]] = None

    # ------------------------------------------------------------------ data
    def _engine(self):
        """The inference engine of ``engine`` on ``device`` (:func:`densehmm_core.engine.engine_for`)."""
        from .engine import engine_for
        return engine_for(self.engine, self.device)

    def _resolve_n_symbols(self, data: Any, lengths=None) -> None:
        if self.n_symbols is None:
            m = infer_n_symbols(data)
            if m is None:
                seqs = as_sequences(data, lengths)
                m = int(max(int(s.max()) for s in seqs)) + 1
            self.n_symbols = m
        vocab = getattr(data, "vocabulary", None)
        if vocab is not None and not isinstance(data, np.ndarray) and self.vocabulary is None:
            self.vocabulary = list(vocab)

    def _seqs(self, data: Any, lengths=None) -> List[np.ndarray]:
        self._check_params()
        return as_sequences(data, lengths, n_symbols=self.n_symbols)

    def _check_params(self) -> None:
        if self.startprob_ is None or self.transmat_ is None or self.emissionprob_ is None:
            raise RuntimeError(f"{type(self).__name__} has no parameters yet: fit it or set them")
        n = self.n_states
        if self.n_symbols is None:
            self.n_symbols = int(np.asarray(self.emissionprob_).shape[1])
        m = self.n_symbols
        self.startprob_ = check_stochastic("startprob_", self.startprob_, (n,))
        self.transmat_ = check_stochastic("transmat_", self.transmat_, (n, n))
        self.emissionprob_ = check_stochastic("emissionprob_", self.emissionprob_, (n, m))

    @property
    def params(self) -> dict:
        """Copies of the three matrices (``startprob``, ``transmat``, ``emissionprob``)."""
        return {"startprob": np.array(self.startprob_), "transmat": np.array(self.transmat_),
                "emissionprob": np.array(self.emissionprob_)}

    # --------------------------------------------------------------- scoring
    def score_per_sequence(self, data: Any, lengths=None) -> np.ndarray:
        """Log-likelihood of each sequence (``-inf`` for impossible sequences)."""
        seqs = self._seqs(data, lengths)
        return self._engine().loglik(self.startprob_, self.transmat_, self.emissionprob_, seqs)

    def score(self, data: Any, lengths=None) -> float:
        """Total log-likelihood of the data."""
        return float(np.sum(self.score_per_sequence(data, lengths)))

    def predict_proba(self, data: Any, lengths=None):
        """State posteriors: a list of (T_i, n) arrays (a single array for a single sequence)."""
        seqs = self._seqs(data, lengths)
        post = self._engine().posteriors(self.startprob_, self.transmat_, self.emissionprob_, seqs)
        if lengths is None and isinstance(data, np.ndarray) and data.ndim == 1 and data.dtype != object:
            return post[0]
        return post

    def decode(self, data: Any, lengths=None):
        """Viterbi: ``(paths, logprobs)`` — a list of int arrays and their log-probabilities."""
        seqs = self._seqs(data, lengths)
        return self._engine().viterbi(self.startprob_, self.transmat_, self.emissionprob_, seqs)

    def predict(self, data: Any, lengths=None) -> List[np.ndarray]:
        """Most likely state path of each sequence (Viterbi)."""
        return self.decode(data, lengths)[0]

    def sample(self, n_sequences: int = 1, length: Any = 100, seed: Optional[int] = None):
        """Sample sequences: returns ``(observations, states)``, two lists of int arrays.

        ``length`` is one int or one length per sequence. Same seed, same output.
        """
        self._check_params()
        from .engine.sampling import sample_sequences
        return sample_sequences(self.startprob_, self.transmat_, self.emissionprob_,
                                n_sequences, length, seed)

    # ------------------------------------------------------ model selection
    @property
    def n_parameters(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def aic(self, data: Any, lengths=None) -> float:
        return -2.0 * self.score(data, lengths) + 2.0 * self.n_parameters

    def bic(self, data: Any, lengths=None) -> float:
        seqs = self._seqs(data, lengths)
        return -2.0 * self.score(seqs) + self.n_parameters * np.log(n_tokens(seqs))

    # --------------------------------------------------------------- fitting
    def get_config(self) -> dict:
        """Hyper-parameters as a JSON-able dict (used by the HDF5 writer and the GUI)."""
        raise NotImplementedError

    def iter_fit(self, data: Any, lengths=None, *, init: bool = True, eval_data: Any = None,
                 cancel: Optional[CancelToken] = None, **kw) -> Iterator[ProgressEvent]:
        """Train, yielding a :class:`ProgressEvent` per step; the last one has ``done=True``."""
        self._resolve_n_symbols(data, lengths)
        seqs = as_sequences(data, lengths, n_symbols=self.n_symbols)
        eval_seqs = None if eval_data is None else as_sequences(eval_data, n_symbols=self.n_symbols)
        self.history_ = [] if init else list(self.history_)
        for ev in self._iter_fit(seqs, init=init, eval_seqs=eval_seqs, cancel=cancel, **kw):
            self.history_.append(history_record(ev))
            if ev.done:
                self.stop_reason_ = ev.reason
            yield ev

    def _iter_fit(self, seqs, *, init, eval_seqs, cancel, **kw) -> Iterator[ProgressEvent]:  # pragma: no cover
        raise NotImplementedError

    def fit(self, data: Any, lengths=None, *, init: bool = True, eval_data: Any = None,
            callback: Optional[ProgressCallback] = None, cancel: Optional[CancelToken] = None, **kw):
        """Train the model (a loop over :meth:`iter_fit`); returns ``self``."""
        for ev in self.iter_fit(data, lengths, init=init, eval_data=eval_data, cancel=cancel, **kw):
            if callback is not None:
                callback(ev)
        return self

"""The estimator surface shared by :class:`StandardHMM` and :class:`DenseHMM`.

Subclasses implement :meth:`_iter_fit` (a generator of :class:`ProgressEvent`)
and :attr:`n_parameters`; everything else — scoring, decoding, sampling, the
``fit`` loop with callback and cancel token, AIC/BIC, the configuration and the
fitted state — lives here once.

The model contract (docs/ARCHITECTURE.md):

* ``get_config()`` returns exactly the constructor's keyword arguments, so
  ``type(m)(**m.get_config())`` rebuilds an equal, unfitted model (scikit-learn's
  ``get_params`` rule); ``kind`` is a class attribute, not part of the config, and
  :func:`densehmm_core.model_from_config` maps ``(kind, config)`` back to a model.
* ``arrays()`` / ``set_arrays()`` carry the fitted state (matrices, embeddings,
  history and the fitted attributes) between the model, its HDF5 file, the worker
  process and the app.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .events import START_PHASE, CancelToken, ProgressCallback, ProgressEvent
from .maths import check_stochastic
from .sequences import as_sequences, check_vocabulary, data_vocabulary, is_one_sequence, n_tokens

__all__ = ["BaseHMM", "history_record", "MATRIX_NAMES"]

#: The matrices of every HMM, under the keys of ``ProgressEvent.params`` and of ``arrays()``.
MATRIX_NAMES: Tuple[str, ...] = ("startprob", "transmat", "emissionprob")


def history_record(ev: ProgressEvent) -> dict:
    """The ``history_`` entry of one progress event (its scalar numbers)."""
    rec = {"step": ev.step, "loss": ev.loss, "train_ll": ev.train_ll, "test_ll": ev.test_ll,
           "elapsed": ev.elapsed, "phase": ev.phase}
    rec.update({k: v for k, v in ev.metrics.items() if np.isscalar(v)})
    return rec


#: scikit-learn's and hmmlearn's names for our constructor arguments (for the fit-option hint).
_FIT_OPTION_ALIASES = {"max_iter": "n_iter", "n_components": "n_states", "random_state": "seed",
                       "n_features": "n_symbols", "learning_rate": "lr", "n_init": "restarts"}


class BaseHMM:
    """Common estimator surface of the HMMs (numpydoc in the subclasses).

    Attributes set by fitting or by assignment: ``startprob_`` (n,), ``transmat_``
    (n, n; row = from-state), ``emissionprob_`` (n, m).
    """

    #: The model kind of :func:`densehmm_core.model_from_config` ("standard", "dense").
    kind: str = ""
    #: Fitted attributes carried by :meth:`arrays` besides the arrays (stored without the ``_``).
    fitted_attrs: Tuple[str, ...] = ("stop_reason_",)
    #: The constructor's keyword arguments, in order: the keys of :meth:`get_config`.  Each
    #: estimator lists its own beside its ``__init__`` (tests/test_contract.py checks that the
    #: two agree).
    config_keys: Tuple[str, ...] = ()
    #: Keyword options of :meth:`fit` / :meth:`iter_fit` beyond the data, ``init``, ``eval_data``,
    #: ``callback`` and ``cancel`` (DenseHMM: ``restarts``); everything else is a constructor argument.
    fit_options: Tuple[str, ...] = ()
    #: Metadata of the constructor's arguments and the model types users pick from
    #: (:mod:`densehmm_core.hyperparams`): the CLI options, the app's model form and the docs table.
    hyper_params: Tuple[Any, ...] = ()
    model_types: Tuple[Any, ...] = ()

    def __init__(self, n_states: int, n_symbols: Optional[int] = None, seed: Optional[int] = None,
                 engine: str = "auto", device: str = "auto") -> None:
        if int(n_states) < 1:
            raise ValueError("n_states must be >= 1")
        self.n_states = int(n_states)
        self.n_symbols = None if n_symbols is None else int(n_symbols)
        # given (constructor, set_params) rather than learnt from data or parameters: a fresh fit
        # keeps a given alphabet size and infers one it was not given (get_config says None then)
        self._n_symbols_given = n_symbols is not None
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

    def _fit_alphabet(self, data: Any, lengths=None, eval_data: Any = None,
                      init: bool = True) -> Tuple[int, Optional[List[str]]]:
        """The alphabet of a fit on ``data``: ``(n_symbols, vocabulary)``, the model left unchanged.

        A fresh fit (``init``) on a Corpus takes its vocabulary and its size (an ``n_symbols`` given to the
        model -- or read from a file -- must match it); on plain sequences it keeps a given ``n_symbols``,
        else the model's vocabulary's size when the symbols fit in it, else the largest symbol + 1 (and
        no vocabulary).  A continued fit keeps the model's alphabet.  ``data`` or ``eval_data`` numbered
        by another vocabulary than the fit's are a ``ValueError``."""
        vocab = data_vocabulary(data)
        vocabulary = None if self.vocabulary is None else list(self.vocabulary)
        n = self.n_symbols
        if init and vocab is not None:
            if self._n_symbols_given and n != len(vocab):
                raise ValueError(f"the data's vocabulary has {len(vocab)} symbols but the model has n_symbols={n} "
                                 f"(given to it, or read from its file): set_params(n_symbols=None) lets a "
                                 f"fresh fit take the data's")
            n, vocabulary = len(vocab), list(vocab)
        elif init and not self._n_symbols_given:
            top = int(max(int(s.max()) for s in as_sequences(data, lengths))) + 1
            n = len(vocabulary) if vocabulary is not None and top <= len(vocabulary) else top
            if vocabulary is not None and len(vocabulary) != n:
                vocabulary = None      # the model's strings belonged to other data
        elif not init and vocabulary is None and vocab is not None:
            vocabulary = list(vocab)
        if n is None:
            n = len(vocabulary) if vocabulary is not None else int(
                max(int(s.max()) for s in as_sequences(data, lengths))) + 1
        if vocabulary is not None and len(vocabulary) != n:
            raise ValueError(f"the model's vocabulary has {len(vocabulary)} strings but n_symbols={n}")
        check_vocabulary(data, vocabulary)
        if eval_data is not None:
            check_vocabulary(eval_data, vocabulary)
        return n, vocabulary

    def _adopt_alphabet(self, n_symbols: int, vocabulary: Optional[List[str]]) -> None:
        """Take the alphabet :meth:`_fit_alphabet` gave, once the data were read with it."""
        self.n_symbols, self.vocabulary = int(n_symbols), vocabulary

    def _seqs(self, data: Any, lengths=None) -> List[np.ndarray]:
        self._check_params()
        return as_sequences(data, lengths, n_symbols=self.n_symbols, vocabulary=self.vocabulary)

    def _check_params(self) -> None:
        if self.startprob_ is None or self.transmat_ is None or self.emissionprob_ is None:
            raise RuntimeError(f"{type(self).__name__} has no parameters yet: fit it or set them")
        n = self.n_states
        if self.n_symbols is None:
            self.n_symbols = int(np.asarray(self.emissionprob_).shape[1])
        m = self.n_symbols
        # rows to maths.STOCHASTIC_ATOL, as set_arrays and the model files
        self.startprob_ = check_stochastic("startprob_", self.startprob_, (n,))
        self.transmat_ = check_stochastic("transmat_", self.transmat_, (n, n))
        self.emissionprob_ = check_stochastic("emissionprob_", self.emissionprob_, (n, m))

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
        if lengths is None and is_one_sequence(data):
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

    @property
    def needs_tensorflow(self) -> bool:
        """Whether fitting this model imports TensorFlow (a worker process decides per job by
        asking the model; standard HMMs never do)."""
        return False

    # ------------------------------------------------------ model selection
    @property
    def n_parameters(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def aic(self, data: Any, lengths=None) -> float:
        return -2.0 * self.score(data, lengths) + 2.0 * self.n_parameters

    def bic(self, data: Any, lengths=None) -> float:
        seqs = self._seqs(data, lengths)
        return -2.0 * self.score(seqs) + self.n_parameters * np.log(n_tokens(seqs))

    # ------------------------------------------------------- configuration
    @classmethod
    def fixed_options(cls, config: Dict[str, Any]) -> Dict[str, Any]:
        """The options that other options of ``config`` fix, with their values (none here; DenseHMM:
        ``logits="full"`` fixes ``dim`` and ``init_method``).  A form shows them fixed and a
        configuration built from a form takes them."""
        return {}

    def get_config(self) -> dict:
        """The constructor's keyword arguments (JSON-able): ``type(self)(**cfg)`` rebuilds an
        equal, unfitted model (options left at ``None`` stay ``None``; an ``n_symbols`` learnt by a fit is
        ``None``).  Model files, forms and workers use :meth:`resolved_config`."""
        cfg = {}
        for key in self.config_keys:
            val = getattr(self, key)
            cfg[key] = val.item() if isinstance(val, np.generic) else val
        if not self._n_symbols_given:
            cfg["n_symbols"] = None     # learnt by a fit, not an argument: a copy learns its own
        return cfg

    def resolved_config(self) -> dict:
        """The settings a fit uses: :meth:`get_config` with the options the estimator decides itself
        filled in (DenseHMM: those left at ``None`` for its preset) and the alphabet size learnt by a
        fit.  Model files record these, so a model read back trains with explicit values."""
        return {**self.get_config(), "n_symbols": self.n_symbols}

    def get_params(self, deep: bool = True) -> dict:
        """scikit-learn's name for :meth:`get_config`: the constructor's arguments, so that
        ``sklearn.base.clone`` copies these estimators (scikit-learn's model selection does not take
        them: it needs scikit-learn's estimator tags).  ``deep`` is accepted and changes nothing: no
        argument is itself an estimator."""
        return self.get_config()

    def set_params(self, **params) -> "BaseHMM":
        """Change options of the configuration (e.g. more iterations before resuming a fit).

        An unknown option is a ``TypeError``; values are checked by the constructor.
        """
        cfg = self.get_config()
        unknown = sorted(set(params) - set(cfg))
        if unknown:
            raise TypeError(f"unknown {type(self).__name__} option{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(repr(k) for k in unknown)}; valid options: {', '.join(cfg)}")
        checked = type(self)(**{**cfg, **params})
        for key in params:
            setattr(self, key, getattr(checked, key))
        if "n_symbols" in params:
            self._n_symbols_given = params["n_symbols"] is not None
        return self

    # ------------------------------------------------------- fitted state
    def arrays(self) -> Dict[str, Any]:
        """The fitted state, as plain values (copies).

        Returns a dict with ``"params"`` -- the matrices ``startprob``, ``transmat``,
        ``emissionprob`` (and, for a DenseHMM, the embeddings ``U, Z, W, V, z_start``)
        as float64 arrays under the keys of ``ProgressEvent.params`` (empty before
        fitting) --, ``"history"`` (a list of dicts, :attr:`history_`) and one entry per
        fitted attribute of :attr:`fitted_attrs` (``"stop_reason"``, for a DenseHMM also
        ``"start_mode"``, ``"seed_used"``, ``"device_used"``, ``"restart_losses"``).
        :meth:`set_arrays` restores it bit for bit.
        """
        params = self._param_arrays()
        out: Dict[str, Any] = {"params": {k: np.array(v, dtype=np.float64) for k, v in params.items()},
                               "history": [dict(r) for r in self.history_]}
        for attr in self.fitted_attrs:
            val = getattr(self, attr)
            if isinstance(val, dict):
                val = {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in val.items()}
            out[attr.rstrip("_")] = list(val) if isinstance(val, list) else val
        return out

    def _param_arrays(self) -> Dict[str, np.ndarray]:
        if self.transmat_ is None:
            return {}
        return {k: getattr(self, k + "_") for k in MATRIX_NAMES}

    def set_arrays(self, state: Dict[str, Any]) -> "BaseHMM":
        """Restore a fitted state from :meth:`arrays` (keys that are absent are left as they are).

        ``state["params"]`` holds the matrices (and the embeddings of a DenseHMM); the
        matrices are stored exactly as given (validated: shapes, stochastic rows).
        Raises ``ValueError`` for an unknown key or inconsistent arrays.
        """
        known = {"params", "history"} | {a.rstrip("_") for a in self.fitted_attrs}
        unknown = sorted(set(state) - known)
        if unknown:
            raise ValueError(f"{type(self).__name__}.set_arrays: unknown keys {unknown}")
        for attr in self.fitted_attrs:
            key = attr.rstrip("_")
            if key in state:
                val = state[key]
                setattr(self, attr, list(val) if isinstance(val, (list, tuple)) else val)
        params = state.get("params")
        if params:
            self._set_param_arrays(dict(params))
        if "history" in state:
            self.history_ = [dict(r) for r in (state["history"] or [])]
        return self

    def _set_param_arrays(self, params: Dict[str, Any]) -> None:
        unknown = sorted(set(params) - set(MATRIX_NAMES))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no arrays {unknown}")
        missing = [k for k in MATRIX_NAMES if params.get(k) is None]
        if missing:
            raise ValueError(f"the fitted state lacks {missing}")
        pi, A, B = (np.array(params[k]) for k in MATRIX_NAMES)   # copies; float32 checked as float32
        n = self.n_states
        if A.ndim != 2 or B.ndim != 2:
            raise ValueError("transmat and emissionprob must be matrices")
        m = B.shape[1]
        if self.n_symbols is not None and m != self.n_symbols:
            raise ValueError(f"emissionprob has {m} columns but the model has n_symbols={self.n_symbols}")
        self.startprob_ = check_stochastic("startprob", pi, (n,))
        self.transmat_ = check_stochastic("transmat", A, (n, n))
        self.emissionprob_ = check_stochastic("emissionprob", B, (n, m))
        self.n_symbols = m

    # --------------------------------------------------------------- fitting
    def record_event(self, ev: ProgressEvent) -> None:
        """Append ``ev``'s record to :attr:`history_` (and keep the stop reason of the last event).

        The one place history is recorded: :meth:`iter_fit`, the co-occurrence fit and the
        relay of a fit that runs in a worker process all call it.  Start events (phase ``"start"``:
        progress before the first step, no numbers of the model) are not recorded.
        """
        if ev.phase == START_PHASE:
            return
        self.history_.append(history_record(ev))
        if ev.done:
            self.stop_reason_ = ev.reason

    def iter_fit(self, data: Any, lengths=None, *, init: bool = True, eval_data: Any = None,
                 cancel: Optional[CancelToken] = None, **kw) -> Iterator[ProgressEvent]:
        """Train, yielding a :class:`ProgressEvent` per step; the last one has ``done=True``."""
        if "eval_seqs" in kw:   # the internal name: it reached _iter_fit twice ("multiple values")
            raise TypeError("held-out data go in eval_data=, not eval_seqs=")
        self._check_fit_options(kw)
        n, vocabulary = self._fit_alphabet(data, lengths, eval_data, init=init)
        seqs = as_sequences(data, lengths, n_symbols=n)
        eval_seqs = None if eval_data is None else as_sequences(eval_data, n_symbols=n)
        self._adopt_alphabet(n, vocabulary)       # only once the data were read with it
        self.history_ = [] if init else list(self.history_)
        for ev in self._iter_fit(seqs, init=init, eval_seqs=eval_seqs, cancel=cancel, **kw):
            self.record_event(ev)
            yield ev

    def _check_fit_options(self, kw: Dict[str, Any]) -> None:
        """A ``TypeError`` for options :meth:`fit` does not take, pointing to the constructor
        argument meant (``max_iter`` -> ``n_iter``, as in scikit-learn and hmmlearn)."""
        unknown = sorted(set(kw) - set(self.fit_options))
        if not unknown:
            return
        import difflib
        name, cfg = type(self).__name__, list(self.get_config())
        hints = []
        for key in unknown:
            target = key if key in cfg else _FIT_OPTION_ALIASES.get(key)
            if target not in cfg:
                close = difflib.get_close_matches(key, cfg + list(self.fit_options), n=1, cutoff=0.6)
                target = close[0] if close else None
            if target in self.fit_options:
                hints.append(f"did you mean fit(..., {target}=...)")
            elif target is not None:
                hints.append(f"{'' if target == key else 'did you mean '}{name}({target}=...) "
                             f"or model.set_params({target}=...)")
        takes = ", ".join(("data", "lengths", "init", "eval_data", "callback", "cancel") + self.fit_options)
        raise TypeError(f"unexpected fit options {unknown}: fit takes {takes}; training settings are "
                        f"constructor arguments" + (f" ({'; '.join(hints)})" if hints else ""))

    def _iter_fit(self, seqs, *, init, eval_seqs, cancel) -> Iterator[ProgressEvent]:  # pragma: no cover
        raise NotImplementedError

    def fit(self, data: Any, lengths=None, *, init: bool = True, eval_data: Any = None,
            callback: Optional[ProgressCallback] = None, cancel: Optional[CancelToken] = None, **kw):
        """Train the model (a loop over :meth:`iter_fit`); returns ``self``."""
        for ev in self.iter_fit(data, lengths, init=init, eval_data=eval_data, cancel=cancel, **kw):
            if callback is not None:
                callback(ev)
        return self

"""DenseHMM: an HMM whose matrices are softmax kernels of learned embeddings.

Sicking et al. (2020), "DenseHMM: Learning Hidden Markov Models by Learning
Dense Representations".  With embeddings ``U, Z, W`` (n x l), ``V`` (m x l) and
``z_start`` (l)::

    A[i, j] = softmax_j(z_i . u_j)        (row i = from-state)
    B[i, k] = softmax_k(w_i . v_k)
    pi[i]   = softmax_i(z_start . u_i)

Two training schemes (``fit_method``):

``"cooc"``
    Direct co-occurrence fit: minimise ``||Omega_gt - B^T diag(pi) A B||_F^2``
    where ``pi`` is the stationary distribution of ``A`` (a linear solve inside
    the TensorFlow graph, differentiated through) and ``Omega_gt`` the
    normalised counts of adjacent symbol pairs (or a matrix given to
    :meth:`DenseHMM.fit_cooc`), with at most ``cooc_steps`` Adam steps and
    ``finish_steps`` steps of a second-order finish.  After the fit
    ``startprob_`` is the stationary ``pi``.  The cost after counting does not depend on the data size.
``"em"``
    Baum-Welch with a gradient M-step: E-step counts from the inference engine,
    then ``mstep_steps`` Adam steps on ``-Q / n_tokens``, for at most ``n_iter``
    EM iterations; Adam's state persists across EM iterations.
``"marginal"``
    The direct fit: L-BFGS on ``-log p(X) / n_tokens + (l2/2) ||theta||^2`` (at most ``n_iter``
    iterations); by the Fisher identity each evaluation is one E-step plus the closed-form
    gradient of ``-Q`` (:mod:`densehmm_core.dense_marginal`).  EM's M-step takes the same ``l2``.

See docs/DENSEHMM.md for the defaults, the presets (``"default"``, ``"paper"``)
and how the tests pin the M-step loss down.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, Optional, Tuple, cast

import numpy as np

from .em import DIAGNOSTICS_EVERY, EMSettings, run_em
from .events import CancelToken, ProgressEvent, StartStep, snapshot
from .posterior_sparsity import check_sparsity
from .dense_layout import FeatureLayout, Layout
from .dense_hyper import (DENSE_HYPER_PARAMS, DENSE_MODEL_TYPES, FIT_METHODS, INIT_METHODS, LOGITS,
                          MSTEP_DTYPES, PRESETS)
from .hmm_base import MATRIX_NAMES, BaseHMM
from .dense_adam_state import AdamStateMixin
from .maths import (EMBEDDING_NAMES, analytic_cooc, empirical_cooc, softmax, softmax_inverse_lstsq,
                    stationary_distribution)

__all__ = ["DenseHMM", "PRESETS", "init_embeddings"]

#: Above this many symbols the co-occurrence fit uses the sparse loss (``sparse_cooc=None``).
SPARSE_COOC_MIN_SYMBOLS = 1000
#: The options a preset resolves (a ``None`` constructor argument takes the preset's value).
PRESET_KEYS = ("lr", "lr_final", "cooc_steps", "mstep_steps", "n_iter", "tol", "finish", "finish_steps",
               "loss", "restarts", "stationary_grad", "init_method", "init_scale", "mstep_dtype")
#: Options of the co-occurrence fit only (a ``cooc_em`` fit's cooc phase takes these, and
#: ``restarts``, ``init_method`` and ``init_scale``, from the arguments; its other settings from
#: the preset).
COOC_ONLY_KEYS = ("lr_final", "cooc_steps", "finish", "finish_steps", "loss", "stationary_grad")


# ---------------------------------------------------------------- numpy helpers
def _empirical_omega(seqs, m: int) -> np.ndarray:
    try:
        return empirical_cooc(seqs, m)
    except ValueError:
        raise ValueError("co-occurrence fit needs at least one sequence of length >= 2") from None


def init_embeddings(n: int, m: int, l: int, rng: np.random.Generator, scale: float = 1.0) -> dict:
    """Standard-normal embeddings (times ``scale``), drawn in the order U, Z, W, V, z_start."""
    return {"U": scale * rng.standard_normal((n, l)), "Z": scale * rng.standard_normal((n, l)),
            "W": scale * rng.standard_normal((n, l)), "V": scale * rng.standard_normal((m, l)),
            "z_start": scale * rng.standard_normal(l)}


# ----------------------------------------------------------------------- model
class DenseHMM(AdamStateMixin, BaseHMM):
    """Hidden Markov model parametrised by dense embeddings (Sicking et al., 2020).

    Parameters
    ----------
    n_states : int
        Number of hidden states ``n``.
    dim : int
        Embedding length ``l``.
    n_symbols : int, optional
        Number of observable symbols ``m`` (inferred from the data if not given).
    fit_method : {"cooc", "em", "cooc_em", "marginal"}
        Training scheme used by :meth:`fit` (see the module docstring).
    seed : int, optional
        Seeds the start (the random start's normal draws, the spectral start's k-means and
        restarts; restart ``r`` uses ``[seed, r]``) and everything random in a fit.
        Same seed, same numbers on CPU.  Without a seed one is drawn at fit time and
        stored in ``seed_used_``.
    preset : {"default", "paper"}
        Where hyper-parameters left at ``None`` come from (:data:`PRESETS`).
    lr : float, optional
        Adam learning rate (cooc: start of the cosine schedule; em: M-step learning rate).
    lr_final : float, optional
        Cooc only: learning rate at the end of the cosine schedule.
    cooc_steps : int, optional
        Cooc only: maximum Adam steps of the co-occurrence fit.
    mstep_steps : int, optional
        EM only: Adam steps per M-step (on the engine's array module: :mod:`densehmm_core.dense_mstep`).
    n_iter : int, optional
        EM: maximum EM iterations (as ``StandardHMM``'s ``n_iter``); marginal: maximum L-BFGS
        iterations (each one E-step or more: the line search's trial points).
    tol : float, optional
        Cooc: stop the Adam phase when a chunk improves the loss by less than ``tol``
        (relative).  EM: stop when the relative change of the training log-likelihood is
        below ``tol``.  ``0`` disables early stopping.
    finish : {"auto", "lm", "lbfgs", "none"}, optional
        Cooc only: second-order finish after the Adam phase.  ``"lm"``: Levenberg-Marquardt
        with the analytic Jacobian of Omega (numpy; memory ``8 m^2 l(3n+m+1)`` bytes);
        ``"lbfgs"``: L-BFGS on the TensorFlow loss and gradient; ``"auto"``: LM when that
        Jacobian has at most 4 million entries, else L-BFGS.  Both use the exact gradient
        through the stationary distribution.
    finish_steps : int, optional
        Cooc only: maximum iterations of the finish (``0``: no finish).
    loss : {"normalized", "frobenius"}, optional
        Cooc only: ``||Omega_gt - Omega||_F^2`` divided by ``||Omega_gt||_F^2`` or raw.
    restarts : int, optional
        Seeded restarts; the best run is kept (lowest cooc loss / highest training
        log-likelihood).  Can also be passed to :meth:`fit`.
    stationary_grad : bool, optional
        Cooc only: differentiate through the stationary distribution (``False``: treat it as
        a constant each step, as the paper's code did).
    device : str
        ``"auto"``, ``"cpu"``, ``"gpu"`` or a device string such as ``"/GPU:1"``.  EM runs where
        its engine runs (``engine="auto"``: CuPy on that GPU when CuPy works there, numpy
        otherwise): E-step, M-step and Adam state stay on that device; no TensorFlow.  The
        co-occurrence fits run their TensorFlow steps there
        (:func:`densehmm_core.device.resolve_device`).  The one used is ``device_used_``.
        ``"cpu"`` never touches a GPU.
    snapshot_every : int, optional
        Put a parameter snapshot into the progress event every this many steps (cooc: Adam /
        L-BFGS steps, default 1000; em: EM iterations, default 1).  The last event always has one.
    chunk : int
        Cooc: Adam steps per progress event and early-stopping check; a chunk runs as compiled
        calls of about 0.15 s, the cancel token polled after each (:class:`~densehmm_core.dense_cooc.Pace`).
    init_scale : float, optional
        Standard deviation of the initial (random) embeddings (preset: 0.2; ``"paper"``: 1.0).
    init_method : {"spectral", "random"}, optional
        How a fit starts (preset: ``"spectral"``; ``"paper"``: ``"random"``).  ``"random"``: normal
        embeddings (``init_scale``).  ``"spectral"``: ``V`` and ``W`` from the training data's
        adjacent-pair counts (context vectors, SVD, k-means of the frequent symbols;
        :mod:`densehmm_core.spectral`), ``U``, ``Z``, ``z_start`` random; seeded restarts differ
        in their k-means starts.  With more states than symbols seen in pairs (a small alphabet: DNA,
        proteins) EM and the likelihood fit start from the embeddings closest to the matrices counted
        from the tokens' contexts (:func:`densehmm_core.spectral.context_states`; ``init_scale`` is
        not used), the co-occurrence fits from one state per symbol and copies of the most frequent.
        Where the data has no adjacent pairs the fit starts randomly and says so in its first event
        (``metrics["start"]``).
    l2 : float
        EM and marginal: weight of the L2 penalty ``(l2/2) ||theta||^2`` on all embeddings (features
        included), added to EM's M-step loss ``-Q / n_tokens`` and to the direct fit's
        ``-log p(X) / n_tokens``; 0 (the default): none.
    logits : {"dense", "full"}
        ``"dense"`` (the DenseHMM): the logits of ``A`` and ``B`` are ``Z U^T`` and ``W V^T``.
        ``"full"``: ``U = W =`` the n x n identity (kept fixed; ``dim`` must equal ``n_states``), so
        every transition logit (``Z``) and emission logit (``V^T``) is free; with symbol features this
        is the log-linear feature HMM of Berg-Kirkpatrick et al. (2010).  EM and ``"marginal"`` only,
        random start; pair it with an ``l2`` penalty (docs/DENSEHMM.md, "Full logits").
    posterior_sparsity : float
        EM: ``sigma`` of the posterior-sparsity E-step (Graca et al. 2011): the token posteriors are
        projected so that each symbol uses few states before the M-step counts them
        (:mod:`densehmm_core.posterior_sparsity`); 0 (the default): the plain E-step.  The direct
        fit (``"marginal"``) ignores it.
    diagnostics_every : int
        EM and marginal: the co-occurrence MAD and the test NLL every this many iterations (and on the first
        and the last event; :data:`densehmm_core.em.DIAGNOSTICS_EVERY`).
    param_limit : float
        Divergence guard: an embedding entry beyond this magnitude (all softmaxes saturated
        far beyond float64) counts as divergence, like a non-finite loss or parameter.
    jit : bool
        XLA-compile the co-occurrence fit's Adam chunks (about 3x faster per step for small models; the
        first fit of each model shape pays a compilation of a few seconds).  EM's M-step runs on the
        array module, without TensorFlow: ``jit`` does not change it.
    engine : {"auto", "numpy", "cupy"}
        Inference engine for the E-step and scoring (:func:`densehmm_core.engine.engine_for`):
        ``"auto"`` = CuPy on ``device``'s GPU when CuPy works there, numpy otherwise.
    symbol_features : str, optional
        Name of a registered feature function (:mod:`densehmm_core.features`, e.g.
        ``"orthographic"``): each symbol's embedding is its own vector plus the vectors of its
        features (``feature_V``).  Needs the symbols' strings (fit on a Corpus, or set
        ``vocabulary``).  ``None``: plain embeddings.
    sparse_cooc : bool, optional
        Co-occurrence fit on the observed pairs only (:mod:`densehmm_core.cooc_sparse`: no
        ``m x m`` array; L-BFGS finish).  ``None``: when ``m > SPARSE_COOC_MIN_SYMBOLS`` (1000)
        or with symbol features.

    Attributes
    ----------
    embeddings_ : dict
        ``U``, ``Z``, ``W`` (n x l), ``V`` (m x l), ``z_start`` (l).  Assigning a dict
        (or :meth:`set_embeddings`) recomputes the matrices.
    startprob_, transmat_, emissionprob_ : ndarray
        ``pi``, ``A``, ``B``.  ``startprob_`` is ``softmax(U z_start)``, except after a cooc fit
        (``start_mode_ == "stationary"``) where it is the stationary distribution of ``A``.
    start_mode_ : {"embedding", "stationary"}
    history_ : list of dict
        One record per progress event.
    features_ : SymbolFeatures or None
        The symbol x feature incidence of the last fit with ``symbol_features`` (its
        ``vocabulary`` is the feature vocabulary; ``embeddings_["feature_V"]`` the feature vectors).
    device_used_ : str
        The device of the last fit: the engine's for EM and the likelihood fit (``"/CPU:0"``, a GPU
        with CuPy), TensorFlow's for the co-occurrence fits.
    adam_state_ : dict or None
        Adam's state after the last EM iteration of a ``fit_method="em"`` (or ``"cooc_em"``) fit:
        ``{"m": ndarray, "v": ndarray, "t": float}``, the first and second moments in the packed
        parameter order (:mod:`densehmm_core.dense_layout`) and the steps taken.  Adam's state
        persists across EM iterations, so ``fit(..., init=False)`` (and ``densehmm train --resume``)
        continues from it: a fit stopped after k iterations and continued gives the same iterates as
        one fit.  Saved in model files; ``None`` after the other fit methods and after
        :meth:`set_embeddings` (a continued fit then starts Adam's moments at zero).
    evaluations_ : int
        E-steps of the last ``fit_method="marginal"`` fit (all restarts, line-search trials included).
    """

    kind = "dense"
    config_keys = ("n_states", "dim", "n_symbols", "fit_method", "seed", "preset", "lr", "lr_final",
                   "cooc_steps", "mstep_steps", "n_iter", "tol", "finish", "finish_steps", "loss",
                   "restarts", "stationary_grad", "device", "snapshot_every", "chunk", "init_scale",
                   "param_limit", "jit", "engine", "symbol_features", "sparse_cooc", "init_method",
                   "diagnostics_every", "l2", "mstep_dtype", "posterior_sparsity", "logits")
    fitted_attrs = ("stop_reason_", "start_mode_", "seed_used_", "device_used_", "restart_losses_", "adam_state_")
    fit_options = ("restarts",)

    # ---- hyper-parameter metadata (densehmm_core.hyperparams, written in densehmm_core.dense_hyper): the CLI
    # options, the app's model form and the docs table are derived from it
    model_types = DENSE_MODEL_TYPES
    hyper_params = DENSE_HYPER_PARAMS

    def __init__(self, n_states: int, dim: int, n_symbols: Optional[int] = None,
                 fit_method: str = "cooc", seed: Optional[int] = None, *, preset: str = "default",
                 lr: Optional[float] = None, lr_final: Optional[float] = None,
                 cooc_steps: Optional[int] = None, mstep_steps: Optional[int] = None,
                 n_iter: Optional[int] = None,
                 tol: Optional[float] = None, finish: Optional[str] = None,
                 finish_steps: Optional[int] = None,
                 loss: Optional[str] = None, restarts: Optional[int] = None,
                 stationary_grad: Optional[bool] = None, device: str = "auto",
                 snapshot_every: Optional[int] = None, chunk: int = 250, init_scale: Optional[float] = None,
                 param_limit: float = 1e4, jit: bool = False, engine: str = "auto",
                 symbol_features: Optional[str] = None, sparse_cooc: Optional[bool] = None,
                 init_method: Optional[str] = None, diagnostics_every: int = DIAGNOSTICS_EVERY,
                 l2: float = 0.0, mstep_dtype: Optional[str] = None, posterior_sparsity: float = 0.0,
                 logits: str = "dense") -> None:
        super().__init__(n_states, n_symbols=n_symbols, seed=seed, engine=engine, device=device)
        if int(dim) < 1:
            raise ValueError("dim (embedding length l) must be >= 1")
        if fit_method not in FIT_METHODS:
            raise ValueError(f"fit_method must be one of {FIT_METHODS}, got {fit_method!r}")
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; available: {sorted(PRESETS)}")
        if loss is not None and loss not in ("normalized", "frobenius"):
            raise ValueError("loss must be 'normalized' or 'frobenius'")
        self.dim = int(dim)
        self.fit_method = fit_method
        self.preset = preset
        self.lr, self.lr_final = lr, lr_final
        self.cooc_steps, self.mstep_steps, self.n_iter = cooc_steps, mstep_steps, n_iter
        self.tol, self.finish, self.finish_steps = tol, finish, finish_steps
        self.loss, self.restarts = loss, restarts
        if finish is not None and finish not in ("auto", "lm", "lbfgs", "none"):
            raise ValueError("finish must be 'auto', 'lm', 'lbfgs' or 'none'")
        self.stationary_grad = stationary_grad
        self.snapshot_every = snapshot_every
        self.chunk = int(chunk)
        if self.chunk < 1:
            raise ValueError("chunk must be >= 1")
        self.init_scale = None if init_scale is None else float(init_scale)
        if init_method is not None and init_method not in INIT_METHODS:
            raise ValueError(f"init_method must be one of {INIT_METHODS}, got {init_method!r}")
        self.init_method = init_method
        if int(diagnostics_every) < 1:
            raise ValueError("diagnostics_every must be >= 1")
        self.diagnostics_every = int(diagnostics_every)
        if not (np.isfinite(l2) and float(l2) >= 0):
            raise ValueError(f"l2 must be a finite number >= 0, got {l2}")
        self.l2 = float(l2)
        if mstep_dtype is not None and mstep_dtype not in MSTEP_DTYPES:
            raise ValueError(f"mstep_dtype must be one of {MSTEP_DTYPES}, got {mstep_dtype!r}")
        self.mstep_dtype = mstep_dtype
        self.posterior_sparsity = check_sparsity(posterior_sparsity)
        if logits not in LOGITS:
            raise ValueError(f"logits must be one of {LOGITS}, got {logits!r}")
        self.logits = logits
        self._check_logits(fit_method)
        self.param_limit = float(param_limit)
        self.jit = bool(jit)
        if symbol_features is not None:
            from .features import FEATURE_FUNCTIONS
            if symbol_features not in FEATURE_FUNCTIONS:
                raise ValueError(f"unknown symbol_features {symbol_features!r}; registered: "
                                 f"{sorted(FEATURE_FUNCTIONS)}")
        self.symbol_features = symbol_features
        self.sparse_cooc = None if sparse_cooc is None else bool(sparse_cooc)
        self.features_: Any = None
        self._embeddings: Optional[dict] = None
        self.start_mode_ = "embedding"
        self.device_used_: Optional[str] = None
        self.seed_used_: Optional[int] = None
        self.restart_losses_: list = []
        self._adam: Any = None
        self.evaluations_ = 0

    # ------------------------------------------------------------ settings
    @staticmethod
    def _logit_fixes(config: Dict[str, Any]) -> Dict[str, Tuple[Any, str]]:
        """What ``logits="full"`` fixes (the one place that says it): option -> (value, why)."""
        if config.get("logits") != "full":
            return {}
        n = int(config["n_states"])
        return {"dim": (n, f"needs dim = n_states ({n}): U and W are the n x n identity"),
                "init_method": ("random", "starts randomly (init_method='random'): the spectral start gives "
                                          "dense kernels")}

    @classmethod
    def fixed_options(cls, config: Dict[str, Any]) -> Dict[str, Any]:
        """``logits="full"`` fixes ``dim`` to ``n_states`` and the start to random."""
        return {name: value for name, (value, _) in cls._logit_fixes(config).items()}

    def _check_logits(self, method: str) -> None:
        """``logits="full"``: EM and the direct fit only (the co-occurrence fits run in TensorFlow on dense
        kernels), and no option set against what it fixes (:meth:`fixed_options`)."""
        if self.logits != "full":
            return
        if method not in ("em", "marginal"):
            raise ValueError(f"logits='full' trains by fit_method 'em' or 'marginal', not {method!r}")
        for name, (value, why) in self._logit_fixes({"logits": self.logits, "n_states": self.n_states}).items():
            given = getattr(self, name)
            if given is not None and given != value:
                raise ValueError(f"logits='full' {why}; got {name}={given!r}")

    def hyper(self, method: Optional[str] = None) -> dict:
        """The resolved hyper-parameters of ``method`` (default: ``fit_method``)."""
        method = method or self.fit_method
        # cooc_em: the shared arguments (lr, tol) set the EM phase; its cooc phase takes the
        # cooc-only arguments and restarts, the rest from the preset
        cooc_phase = self.fit_method == "cooc_em" and method == "cooc"
        if method == "cooc_em":
            method = "em"
        base = dict(PRESETS[self.preset][method])
        for key in PRESET_KEYS:
            val = getattr(self, key)
            if val is not None and key in base and (
                    not cooc_phase or key in COOC_ONLY_KEYS + ("restarts", "init_method", "init_scale")):
                base[key] = val
        for key, value in self.fixed_options({"logits": self.logits, "n_states": self.n_states}).items():
            if key in base and getattr(self, key) is None:      # a preset's default gives way (full logits)
                base[key] = value
        if method == "cooc":
            base["snapshot_every"] = self.snapshot_every or 1000
        else:
            base["snapshot_every"] = self.snapshot_every or 1
        return base

    def resolved_config(self) -> dict:
        """The constructor's keyword arguments with the options left at ``None`` resolved from the
        preset for ``fit_method`` (what a model file records: the settings used).  Options of another
        fit method stay as given.  :meth:`get_config` keeps the ``None`` s, so that a copy follows a
        later change of ``preset`` or ``fit_method`` as the original does."""
        cfg = super().resolved_config()
        h = self.hyper()
        for key in PRESET_KEYS + ("snapshot_every",):
            val = h.get(key, cfg[key])
            cfg[key] = val.item() if isinstance(val, np.generic) else val
        return cfg

    @property
    def n_parameters(self) -> int:
        """Free parameters of the embeddings: ``l (3n + m + 1 + F)`` (``F`` symbol features); with
        ``logits="full"`` (``U``, ``W`` fixed) ``n (n + m + 1 + F)``."""
        if self.n_symbols is None:
            raise RuntimeError("n_symbols is unknown until the model is fitted or given n_symbols")
        n_feat = 0
        if self.features_ is not None:
            n_feat = self.features_.n_features
        elif self._embeddings is not None and self._embeddings.get("feature_V") is not None:
            n_feat = len(self._embeddings["feature_V"])      # parameters taken from a snapshot or a file
        elif self.symbol_features is not None:
            raise RuntimeError(f"the number of {self.symbol_features!r} symbol features is known once the "
                               "model has read its vocabulary (fitted, or given embeddings)")
        kernels = self.n_states if self.logits == "full" else 3 * self.n_states
        return self.dim * (kernels + self.n_symbols + 1 + n_feat)

    @property
    def needs_tensorflow(self) -> bool:
        """The co-occurrence fit (and its finish) runs in TensorFlow; EM does not."""
        return self.fit_method in ("cooc", "cooc_em")

    # ---------------------------------------------------------- embeddings
    @property
    def embeddings_(self) -> Optional[dict]:
        """Copies of the embeddings (``None`` before fitting/setting)."""
        if self._embeddings is None:
            return None
        return {k: v.copy() for k, v in self._embeddings.items()}

    @embeddings_.setter
    def embeddings_(self, emb: dict) -> None:
        self.set_embeddings(emb)

    def set_embeddings(self, emb: dict, start_mode: Optional[str] = None) -> "DenseHMM":
        """Set ``U, Z, W, V, z_start`` and recompute ``pi, A, B``.

        ``start_mode`` ``"embedding"`` (``pi = softmax(U z_start)``) or ``"stationary"``
        (``pi`` = stationary distribution of ``A``); default: keep the current mode.
        """
        self._embeddings = self._checked_embeddings(emb, start_mode)
        self._update_matrices()
        self._adam = None      # Adam's moments belonged to other parameters
        return self

    def _packed_size(self) -> Optional[int]:
        """Entries of the packed parameters (Adam's state has as many); None while unknown."""
        if self.n_symbols is None or (self.symbol_features is not None and self.features_ is None):
            return None
        if self.symbol_features is None:
            return Layout(self.n_states, self.n_symbols, self.dim).size
        return FeatureLayout(self.n_states, self.n_symbols, self.dim, self.features_).size

    def _checked_embeddings(self, emb: dict, start_mode: Optional[str] = None) -> Dict[str, np.ndarray]:
        """:meth:`set_embeddings`' checks: float64 copies of ``emb`` (sets ``n_symbols`` and the start mode)."""
        missing = [k for k in EMBEDDING_NAMES if emb.get(k) is None]
        if missing:
            raise ValueError(f"embeddings lack {missing}")
        n, l = self.n_states, self.dim
        arrs = {k: np.array(emb[k], dtype=np.float64) for k in EMBEDDING_NAMES}
        m = arrs["V"].shape[0] if arrs["V"].ndim == 2 else -1
        want = {"U": (n, l), "Z": (n, l), "W": (n, l), "V": (m, l), "z_start": (l,)}
        for k, shape in want.items():
            if arrs[k].shape != shape:
                raise ValueError(f"embedding {k} must have shape {shape}, got {arrs[k].shape}")
            if not np.all(np.isfinite(arrs[k])):
                raise ValueError(f"embedding {k} holds non-finite values")
        if self.n_symbols is not None and m != self.n_symbols:
            raise ValueError(f"V has {m} rows but the model has n_symbols={self.n_symbols}")
        self.n_symbols = m
        if "feature_V" in emb and emb["feature_V"] is not None:
            fv = np.array(emb["feature_V"], dtype=np.float64)
            if fv.ndim != 2 or fv.shape[1] != l or not np.all(np.isfinite(fv)):
                raise ValueError(f"embedding feature_V must be a finite (n_features, {l}) array")
            arrs["feature_V"] = fv
        if start_mode is not None:
            if start_mode not in ("embedding", "stationary"):
                raise ValueError("start_mode must be 'embedding' or 'stationary'")
            self.start_mode_ = start_mode
        return arrs

    def _param_arrays(self) -> Dict[str, np.ndarray]:
        out = super()._param_arrays()
        if out and self._embeddings is not None:
            out.update(self._embeddings)
        return out

    def _set_param_arrays(self, params: Dict[str, Any]) -> None:
        emb = {k: params.pop(k) for k in EMBEDDING_NAMES + ("feature_V",) if k in params}
        if emb and all(params.get(k) is not None for k in MATRIX_NAMES):
            # the matrices are restored as given (below): recomputing them first is wasted work
            # (a 50,000-word model: a softmax over n x 50,000 entries on every load)
            self._embeddings = self._checked_embeddings(emb)
        elif emb:
            self.set_embeddings(emb)
        super()._set_param_arrays(params)

    def _update_matrices(self) -> None:
        e = self._embeddings
        self.transmat_ = softmax(e["Z"] @ e["U"].T, axis=1)
        self.emissionprob_ = softmax(e["W"] @ e["V"].T, axis=1)
        if self.start_mode_ == "stationary":
            self.startprob_ = stationary_distribution(self.transmat_)
        else:
            self.startprob_ = softmax(e["U"] @ e["z_start"])

    def init_embeddings(self, seed: Optional[int] = None, n_symbols: Optional[int] = None) -> "DenseHMM":
        """Draw random embeddings without fitting: normal with standard deviation ``init_scale`` (the
        resolved one: 0.2 with the default preset), seeded by ``seed`` (default: the model's)."""
        if n_symbols is not None:
            self.n_symbols = int(n_symbols)
        if self.n_symbols is None:
            raise ValueError("n_symbols must be known to initialise embeddings")
        rng = np.random.default_rng(self.seed if seed is None else seed)
        self.start_mode_ = "embedding"
        self.set_embeddings(init_embeddings(self.n_states, self.n_symbols, self.dim, rng,
                                            float(self.hyper()["init_scale"])))
        return self

    def _snapshot(self, theta=None, layout=None, start_mode: str = "stationary") -> dict:
        if theta is not None:
            saved = (self._embeddings, self.startprob_, self.transmat_, self.emissionprob_,
                     self.start_mode_)
            self.set_embeddings(layout.unpack(np.asarray(theta)), start_mode=start_mode)
            out = self._snapshot()
            (self._embeddings, self.startprob_, self.transmat_, self.emissionprob_,
             self.start_mode_) = saved
            return out
        return snapshot(self._param_arrays())

    # ------------------------------------------------------------- fitting
    def _rng(self, restart: int) -> np.random.Generator:
        return np.random.default_rng([int(self.seed_used_), int(restart)])

    def _prepare_fit(self, restarts: Optional[int], init: bool, method: Optional[str] = None):
        """Seed of this fit; returns ``(hyper-parameters of ``method``, number of runs, parameter
        layout)`` (one run when continuing from the current embeddings).  With ``symbol_features``
        the layout is a :class:`~densehmm_core.dense_layout.FeatureLayout`.  No TensorFlow."""
        if self.seed is None:
            self.seed_used_ = cast(int, np.random.SeedSequence().entropy) % (2 ** 63)
        else:
            self.seed_used_ = int(self.seed)
        self._check_logits(method or self.fit_method)
        if init or (method or self.fit_method) != "em":
            self._adam = None    # only a continued EM fit uses Adam's state
        h = self.hyper(method)
        nr = int(h["restarts"] if restarts is None else restarts)
        if nr < 1:
            raise ValueError("restarts must be >= 1")
        layout: Any
        if self.symbol_features is not None:
            layout = FeatureLayout(self.n_states, self.n_symbols, self.dim, self._build_features(init))
        else:
            layout = Layout(self.n_states, self.n_symbols, self.dim)
        return h, (nr if init else 1), layout

    def _build_features(self, init: bool = False):
        """The symbol x feature incidence of ``vocabulary`` (kept in ``features_``; built anew for a fresh
        fit, ``init``: the vocabulary may have changed)."""
        from .features import build_features
        vocab = self.vocabulary
        if vocab is None or len(vocab) != self.n_symbols:
            raise ValueError(f"symbol_features={self.symbol_features!r} needs the symbols' strings: fit on a "
                             f"Corpus or set model.vocabulary (one string per symbol, {self.n_symbols})")
        f = self.features_
        if init or f is None or f.name != self.symbol_features or f.n_symbols != len(vocab):
            f = build_features(vocab, self.symbol_features)
        self.features_ = f
        fv = None if init or self._embeddings is None else self._embeddings.get("feature_V")
        if fv is not None and fv.shape[0] != f.n_features:
            raise ValueError(f"the model's feature_V has {fv.shape[0]} rows but {f.n_features} features")
        return f

    def _use_sparse_cooc(self) -> bool:
        if self.sparse_cooc is not None:
            return self.sparse_cooc
        return self.symbol_features is not None or self.n_symbols > SPARSE_COOC_MIN_SYMBOLS

    def _graph(self, layout, target=None):
        """The training graph: :class:`~densehmm_core.words_tf.WordGraph` with features or a
        sparse target (a ``PairCounts``), else today's dense graph."""
        from .cooc_sparse import PairCounts
        from . import words_tf
        if isinstance(target, PairCounts) or getattr(layout, "n_feat", 0):
            if target is not None and not isinstance(target, PairCounts):
                target = PairCounts.from_dense(target)
            return words_tf.WordGraph(layout, target)
        return words_tf.DenseGraph(layout, target)

    def fit_cooc(self, omega: np.ndarray, *, init: bool = True, callback=None,
                 cancel: Optional[CancelToken] = None, restarts: Optional[int] = None) -> "DenseHMM":
        """Fit the embeddings to a given co-occurrence matrix ``omega`` (m x m).

        ``omega`` is normalised to sum 1.  Returns ``self``; ``callback`` receives every
        :class:`ProgressEvent`.
        """
        for ev in self.iter_fit_cooc(omega, init=init, cancel=cancel, restarts=restarts):
            if callback is not None:
                callback(ev)
        return self

    def iter_fit_cooc(self, omega: np.ndarray, *, init: bool = True,
                      cancel: Optional[CancelToken] = None,
                      restarts: Optional[int] = None) -> Iterator[ProgressEvent]:
        """Generator version of :meth:`fit_cooc` (records ``history_`` like :meth:`iter_fit`).

        ``omega`` may also be a sparse :class:`~densehmm_core.cooc_sparse.PairCounts`."""
        from .cooc_sparse import PairCounts
        om: Any
        if isinstance(omega, PairCounts):
            om, size = omega, omega.m
        else:
            om = np.asarray(omega, dtype=np.float64)
            if om.ndim != 2 or om.shape[0] != om.shape[1]:
                raise ValueError(f"omega must be a square (m, m) matrix, got shape {om.shape}")
            size = om.shape[0]
        if self.n_symbols is not None and size != self.n_symbols:
            raise ValueError(f"omega is {size}x{size} but the model has "
                             f"n_symbols={self.n_symbols}")
        self.n_symbols = size
        self.history_ = [] if init else list(self.history_)
        for ev in self._iter_cooc(om, init=init, eval_seqs=None, cancel=cancel, restarts=restarts):
            self.record_event(ev)
            yield ev

    def _iter_fit(self, seqs, *, init, eval_seqs, cancel, restarts: Optional[int] = None) -> Iterator[ProgressEvent]:
        omega: Any = None
        if self.fit_method in ("cooc", "cooc_em"):
            if self._use_sparse_cooc():
                from .cooc_sparse import pair_counts
                omega = pair_counts(seqs, self.n_symbols)
            else:
                omega = _empirical_omega(seqs, self.n_symbols)
        if self.fit_method == "cooc":
            yield from self._iter_cooc(omega, init=init, eval_seqs=eval_seqs, cancel=cancel,
                                       restarts=restarts)
        elif self.fit_method == "cooc_em":
            yield from self._iter_cooc_em(seqs, omega, init=init, eval_seqs=eval_seqs, cancel=cancel,
                                          restarts=restarts)
        else:
            yield from self._iter_em(seqs, init=init, eval_seqs=eval_seqs, cancel=cancel,
                                     restarts=restarts, marginal=self.fit_method == "marginal")

    def _iter_cooc_em(self, seqs, omega, *, init, eval_seqs, cancel, restarts) -> Iterator[ProgressEvent]:
        """"cooc then EM": the co-occurrence fit (its preset settings, ``restarts`` runs, the
        lowest loss kept), then EM (this model's settings) started from its embeddings, with
        ``z_start`` chosen so that ``softmax(U z_start)`` is closest to the stationary ``pi``."""
        if not init and self.history_ and self.history_[-1].get("phase") == "em":
            # continuing a fit whose EM phase began: that phase goes on (from Adam's kept state)
            yield from self._iter_em(seqs, init=False, eval_seqs=eval_seqs, cancel=cancel, restarts=1)
            return
        cancelled = False
        for ev in self._iter_cooc(omega, init=init, eval_seqs=None, cancel=cancel, restarts=restarts):
            if ev.done:
                cancelled = ev.reason == "cancelled"
                ev = dataclasses.replace(ev, done=cancelled, reason=ev.reason if cancelled else "")
            yield ev
        if cancelled:
            return
        emb = self._embeddings
        emb["z_start"] = softmax_inverse_lstsq(emb["U"], self.startprob_)
        self.start_mode_ = "embedding"
        self.set_embeddings(emb)
        yield from self._iter_em(seqs, init=False, eval_seqs=eval_seqs, cancel=cancel, restarts=1)

    def _start_theta(self, layout, restart: int, init: bool, h: dict, pairs=None, bounds=None):
        """``(packed start of one restart, how it started)``; ``pairs``
        (:class:`~densehmm_core.cooc_sparse.PairCounts` of the training data, None when it has no
        adjacent pairs) and ``bounds`` (sequence boundaries, when known) feed the spectral start;
        where they cannot give one the start is random and the note says why."""
        from .spectral import finish
        return finish(self._start_steps(layout, restart, init, h, pairs, bounds))

    def _start_steps(self, layout, restart: int, init: bool, h: dict, pairs=None, bounds=None,
                     report_pairs: bool = False, seqs=None):
        """:meth:`_start_theta` reporting its progress: a generator of
        :class:`~densehmm_core.events.StartStep` (the spectral start's stages; one ``"random"`` step when
        the data cannot give a spectral start) that returns ``(packed start, note)``.
        ``report_pairs``: the pairs were counted by the caller; say so as the stage's end.
        ``seqs``: the training sequences, when known (fitting sequences): with fewer symbols seen in
        pairs than states the start comes from their contexts (:func:`densehmm_core.spectral.context_states`)."""
        if not init and self._embeddings is not None and restart == 0:
            if self._embeddings["V"].shape[0] != layout.m:
                raise ValueError("init=False but the current embeddings have another n_symbols")
            return layout.pack(self._embeddings), "continued"
        scale = float(h["init_scale"])
        note = h["init_method"]
        if h["init_method"] == "spectral":
            why: Optional[str] = "no adjacent pairs" if pairs is None else None
            if why is None:
                from .spectral import (context_states_steps, embeddings_from_matrices, needs_contexts,
                                       spectral_embeddings_steps)
                if report_pairs:
                    yield StartStep("pairs", 1.0, f"{len(pairs.vals)} distinct pairs of {layout.m} symbols")
                if seqs is not None and needs_contexts(pairs, layout.n):
                    pi, A, B = yield from context_states_steps(seqs, layout.m, layout.n, self._rng(restart))
                    return layout.pack(embeddings_from_matrices(pi, A, B, layout.l)), note
                emb = yield from spectral_embeddings_steps(pairs, layout.n, layout.l, self._rng(restart), scale,
                                                           bounds=bounds)
                return layout.pack(emb), note
            note = f"random ({why})"
            yield StartStep("random", 1.0, why, note)
        emb = init_embeddings(layout.n, layout.m, layout.l, self._rng(restart), scale)
        if self.logits == "full":
            emb["U"] = emb["W"] = np.eye(layout.n)
        return layout.pack(emb), note

    # ......................................................... cooc scheme
    def _iter_cooc(self, omega, *, init, eval_seqs, cancel, restarts) -> Iterator[ProgressEvent]:
        from .dense_cooc import iter_cooc
        return iter_cooc(self, omega, init=init, eval_seqs=eval_seqs, cancel=cancel, restarts=restarts)

    def _adopt(self, theta, layout, stationary: bool, matrices=None) -> None:
        """Make the packed ``theta`` the model's embeddings.  ``matrices``: its ``(pi, A, B)`` (host
        float64, ``pi = softmax(U z_start)``), already computed by the caller (the EM loop, for its
        E-step); without them, or with ``stationary``, they are computed here."""
        self.start_mode_ = "stationary" if stationary else "embedding"
        emb = layout.unpack(np.asarray(theta))
        if matrices is None or stationary:
            self.set_embeddings(emb)
            return
        self._embeddings = self._checked_embeddings(emb)
        self.startprob_, self.transmat_, self.emissionprob_ = matrices

    @staticmethod
    def _diverged_msg(status: int, step: int, what: str, advice: str) -> str:
        """The message of :class:`TrainingDiverged` in phase ``what`` at ``step``; ``advice``: what to
        change (:data:`~densehmm_core.events.LOWER_LR` for the Adam steps; the L-BFGS and
        Levenberg-Marquardt steps have no learning rate and name their own)."""
        from .dense_mstep import STATUS_LIMIT
        if status == STATUS_LIMIT:
            return (f"{what} diverged at step {step}: an embedding left the range the divergence "
                    f"guard allows (param_limit); the model keeps its last finite parameters. {advice}")
        return (f"{what} diverged at step {step}: the loss or a parameter became non-finite; "
                f"the model keeps its last finite parameters. {advice}")

    def model_omega(self) -> np.ndarray:
        """``B^T diag(pi_stat) A B`` of the current matrices (``pi_stat`` stationary for ``A``)."""
        self._check_params()
        return analytic_cooc(None, self.transmat_, self.emissionprob_)

    # ........................................................... EM scheme
    def _iter_em(self, seqs, *, init, eval_seqs, cancel, restarts,
                 marginal: bool = False) -> Iterator[ProgressEvent]:
        h, nr, layout = self._prepare_fit(restarts, init, "marginal" if marginal else "em")
        if int(h["n_iter"]) < 1 or int(h.get("mstep_steps", 1)) < 1:
            raise ValueError("n_iter and mstep_steps must be >= 1")
        eng = self._engine()
        self.device_used_ = eng.device_name
        from . import dense_em
        hooks = (dense_em.DenseMarginalHooks if marginal else dense_em.DenseEMHooks)(self, layout, h, seqs, init, eng)
        settings = EMSettings(n_iter=int(h["n_iter"]), tol=float(h["tol"]), phase="marginal" if marginal else "em",
                              restarts=nr,
                              snapshot_every=int(h["snapshot_every"]), diagnostics_every=self.diagnostics_every)
        yield from run_em(self, hooks, seqs, eval_seqs=eval_seqs, cancel=cancel, settings=settings)

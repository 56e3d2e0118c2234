"""The standard (non-dense) discrete HMM trained by Baum-Welch, and :func:`n_fair`."""
from __future__ import annotations

import math
from typing import Iterator, List, Optional

import numpy as np

from .em import DIAGNOSTICS_EVERY, EMHooks, EMSettings, run_em
from .events import ProgressEvent, TrainingDiverged, snapshot
from .hmm_base import BaseHMM
from .hyperparams import HyperParam, ModelType
from .posterior_sparsity import check_sparsity, sparsity_estep

__all__ = ["StandardHMM", "n_fair", "n_parameters_standard"]

ENGINES = ("auto", "numpy", "cupy", "hmmlearn")


def n_parameters_standard(n: int, m: int) -> int:
    """Free parameters of a discrete HMM: ``(n-1) + n(n-1) + n(m-1) = n^2 + n(m-1) - 1``."""
    return int(n) ** 2 + int(n) * (int(m) - 1) - 1


def n_fair(n: int, m: int, l: int) -> int:
    """Number of states of a standard HMM with about as many free parameters as a DenseHMM.

    A DenseHMM with ``n`` states, ``m`` symbols and embedding size ``l`` has
    ``l (3n + m + 1)`` parameters (U, Z, W: n x l; V: m x l; z_start: l).  A standard
    HMM with ``n'`` states has ``n'^2 + n'(m - 1) - 1`` free parameters.  ``n_fair``
    is the positive root ``n'`` of ``n'^2 + n'(m-1) - 1 = l(3n+m+1)``, rounded to
    the nearest integer (at least 1):
    ``n' = (-(m-1) + sqrt((m-1)^2 + 4 (1 + l(3n+m+1)))) / 2``.

    Examples
    --------
    >>> n_fair(5, 5, 3)   # 3 * (15 + 5 + 1) = 63 parameters; n'^2 + 4 n' - 1 = 63 at n' = 6.25
    6
    """
    n, m, l = int(n), int(m), int(l)
    if min(n, m, l) < 1:
        raise ValueError("n, m and l must be >= 1")
    p = l * (3 * n + m + 1)
    root = (-(m - 1) + math.sqrt((m - 1) ** 2 + 4.0 * (1 + p))) / 2.0
    return max(1, int(math.floor(root + 0.5)))


class StandardHMM(BaseHMM):
    """Discrete HMM with free parameters, trained by Baum-Welch (EM with the closed-form M-step).

    Parameters
    ----------
    n_states : int
        Number of hidden states ``n``.
    n_symbols : int, optional
        Number of observable symbols ``m`` (default: the Corpus vocabulary size,
        else the largest symbol in the training data + 1).
    n_iter : int
        Maximum number of Baum-Welch iterations (M-steps).
    tol : float
        Convergence threshold on the relative change of the total training
        log-likelihood between two iterations, ``|ll_k - ll_{k-1}| / |ll_{k-1}| < tol``
        (the rule of every EM fit, :mod:`densehmm_core.em`); ``0`` or less disables it.
    seed : int, optional
        Seed of the initialisation: ``startprob`` and every row of ``transmat`` and
        ``emissionprob`` are drawn from a flat Dirichlet(1) (uniform on the simplex)
        with ``numpy.random.default_rng(seed)``, in that order.  Same seed, same model.
    engine : {"auto", "numpy", "cupy", "hmmlearn"}
        ``"numpy"``: our batched scaled forward-backward (:mod:`densehmm_core.engine`);
        ``"cupy"``: the same on a GPU (``device``); ``"auto"``: CuPy when ``device`` is a
        GPU (or ``"auto"``) and CuPy works there, numpy otherwise.
        ``"hmmlearn"``: every Baum-Welch iteration is delegated to
        ``hmmlearn.hmm.CategoricalHMM(implementation="scaling", init_params="")``
        started from our current parameters (scoring/decoding still use numpy).
    device : str
        Where the E-step runs with ``engine="auto"`` or ``"cupy"``: ``"auto"``, ``"cpu"``
        (never touches a GPU), ``"gpu"`` or ``"/GPU:1"`` (:func:`densehmm_core.device.parse_device`).
    snapshot_every : int
        A parameter snapshot is attached to every ``snapshot_every``-th event (and
        always to the last one).
    init_method : {"spectral", "random"}
        ``"spectral"`` (the default): uniform ``startprob`` and ``transmat``, emission rows from
        the training data's context clusters, the same start as a spectral DenseHMM's emissions
        (:func:`densehmm_core.spectral.spectral_matrices`); with more states than symbols seen in
        pairs (a small alphabet: DNA, proteins) ``pi``, ``A`` and ``B`` are counted from the tokens'
        contexts (:func:`densehmm_core.spectral.context_states`); where the data has no adjacent
        pairs the fit starts randomly and its first event says so (``metrics["start"]``).
        ``"random"``: the Dirichlet draws above.
    emission_pseudocount : float
        Additive smoothing of the emission M-step, ``B[i, k] = (N[i, k] + a) / (N[i] + m a)``
        with the expected counts ``N`` (the MAP estimate under a symmetric Dirichlet(1 + a)
        prior; hmmlearn's ``emissionprob_prior = 1 + a``).  0 (the default) is plain
        Baum-Welch, which gives probability 0 to every symbol the training data lacks, so
        held-out sequences with such symbols score ``-inf`` (words: use e.g. 0.01).
    diagnostics_every : int
        The co-occurrence MAD and the test NLL are computed every this many iterations (and on
        the first and the last event); see :data:`densehmm_core.em.DIAGNOSTICS_EVERY`.
    posterior_sparsity : float
        ``sigma`` of the posterior-sparsity E-step (Graca et al. 2011): the token posteriors are
        projected so that each symbol uses few states before the M-step counts them
        (:mod:`densehmm_core.posterior_sparsity`); 0 (the default): the plain E-step.  Not with
        ``engine="hmmlearn"``.

    Notes
    -----
    Training is :meth:`iter_fit`, a generator of :class:`ProgressEvent` (phase
    ``"baum-welch"``) from the one EM loop (:func:`densehmm_core.em.run_em`).  Event
    ``step = k`` describes the model after ``k`` M-steps:
    ``train_ll`` is its total training log-likelihood (computed by the E-step that
    follows), ``loss = -train_ll / n_tokens`` and ``params`` its matrices.  The
    stream ends (``done=True``) when the relative change falls below ``tol`` (``"converged"``;
    the model is the one of the last event), after ``n_iter`` M-steps
    (``"max_steps"``) or when the cancel token is set (``"cancelled"``; the model
    keeps the parameters reached).  A non-finite log-likelihood or parameter raises
    :class:`TrainingDiverged` and the model keeps its last finite parameters.
    """

    kind = "standard"
    config_keys = ("n_states", "n_symbols", "n_iter", "tol", "seed", "engine", "snapshot_every", "device",
                   "init_method", "emission_pseudocount", "diagnostics_every", "posterior_sparsity")

    # ---- hyper-parameter metadata (densehmm_core.hyperparams): the CLI options, the app's model form and
    # the docs table are derived from it; defaults are read from __init__'s signature, never copied here
    model_types = (
        ModelType("standard", "standard", "baum-welch", "Standard HMM (Baum-Welch)", "Standard"),
        ModelType("standard_fair", "standard", "baum-welch", "Fair standard HMM (n_fair states)", "Standard-fair",
                  fair=True),
    )
    hyper_params = (
        HyperParam("n_states", int, "States n", "Number of hidden states n.", low=1, flag="--states",
                   short="-n", metavar="N", group="model"),
        HyperParam("n_symbols", int, "Symbols m", "Number of observable symbols m (from the data when not given).",
                   low=1, group="model"),
        HyperParam("n_iter", int, "Baum-Welch iterations", "Maximum Baum-Welch iterations.", low=0,
                   high=10_000_000, flag="--iter", metavar="K", form=True),
        HyperParam("tol", float, "Tolerance", "Stop when the relative change of the total training "
                   "log-likelihood, |ll_k - ll_k-1| / |ll_k-1|, falls below this (the rule of every EM fit; 0: "
                   "never).", flag="--tol", metavar="TOL", form=True, log=True, high=1),
        HyperParam("seed", int, "Seed", "Seeds the Dirichlet(1) initialisation.", low=0, group="model"),
        HyperParam("engine", str, "Engine", "Inference engine (hmmlearn: its Baum-Welch iterations).",
                   choices=ENGINES),
        HyperParam("snapshot_every", int, "Snapshot every", "A parameter snapshot in every this many events.",
                   low=1),
        HyperParam("device", str, "Device", "Where training runs (auto, cpu, gpu, /GPU:1): E-step, M-step and "
                   "diagnostics with CuPy when it works on that GPU, else numpy; cpu never touches a GPU.",
                   flag="--device", group="model"),
        HyperParam("init_method", str, "Start", "How training starts. spectral (the default): uniform start and "
                   "transitions, emission rows from the training data's context clusters (more states "
                   "than symbols, as DNA and proteins: start, transitions and emissions counted from the "
                   "tokens' contexts, a symbol and the symbols before it clustered by what follows; random "
                   "where the data has no adjacent pairs, said in the log). random: Dirichlet draws.",
                   choices=("random", "spectral"), flag="--init", form=True, group="model"),
        HyperParam("emission_pseudocount", float, "Smoothing", "Additive smoothing of the emission M-step, "
                   "(expected count + a) / (state total + m a); 0 is plain Baum-Welch, which gives probability 0 "
                   "to symbols the training data lacks, so test sequences with them score -inf (words: try 0.01).",
                   low=0, high=1000, flag="--pseudocount", metavar="A", form=True, group="model", decimals=4,
                   step=0.01),
        HyperParam("diagnostics_every", int, "Diagnostics every", "The co-occurrence MAD and the test NLL every "
                   "this many iterations (and on the first and the last).", low=1, flag="--diagnostics-every",
                   metavar="K"),
        HyperParam("posterior_sparsity", float, "Posterior sparsity", "sigma of the posterior-sparsity E-step "
                   "(Graca et al. 2011): each symbol's token posteriors are projected to use few states (an "
                   "L1/Linf penalty) before the M-step counts them (0: the plain E-step).", low=0, high=1000,
                   flag="--posterior-sparsity", metavar="SIGMA"),
    )

    def __init__(self, n_states: int, n_symbols: Optional[int] = None, n_iter: int = 100,
                 tol: float = 1e-6, seed: Optional[int] = None, engine: str = "auto",
                 snapshot_every: int = 1, device: str = "auto", init_method: str = "spectral",
                 emission_pseudocount: float = 0.0, diagnostics_every: int = DIAGNOSTICS_EVERY,
                 posterior_sparsity: float = 0.0) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        super().__init__(n_states, n_symbols, seed, engine, device)
        if int(n_iter) < 0:
            raise ValueError("n_iter must be >= 0")
        self.n_iter = int(n_iter)
        self.tol = float(tol)
        if np.isnan(self.tol):
            raise ValueError("tol must be a number (0 or less: no early stopping)")
        self.snapshot_every = max(1, int(snapshot_every))
        if init_method not in ("random", "spectral"):
            raise ValueError(f"init_method must be 'random' or 'spectral', got {init_method!r}")
        self.init_method = init_method
        a = float(emission_pseudocount)
        if not (np.isfinite(a) and a >= 0):
            raise ValueError(f"emission_pseudocount must be a finite number >= 0, got {emission_pseudocount!r}")
        self.emission_pseudocount = a
        if int(diagnostics_every) < 1:
            raise ValueError("diagnostics_every must be >= 1")
        self.diagnostics_every = int(diagnostics_every)
        self.posterior_sparsity = check_sparsity(posterior_sparsity)
        if self.posterior_sparsity > 0 and engine == "hmmlearn":
            raise ValueError("posterior_sparsity needs our engine (numpy or cupy), not engine='hmmlearn'")

    # ---------------------------------------------------------------- surface
    @property
    def n_parameters(self) -> int:
        """Free parameters: ``n^2 + n(m-1) - 1``."""
        if self.n_symbols is None:
            raise RuntimeError("n_symbols is unknown: fit the model or pass n_symbols")
        return n_parameters_standard(self.n_states, self.n_symbols)

    def init_params(self, n_symbols: Optional[int] = None) -> "StandardHMM":
        """Draw the initial parameters from the seed (see the class docstring)."""
        if n_symbols is not None:
            self.n_symbols = int(n_symbols)
        if self.n_symbols is None:
            raise RuntimeError("n_symbols is unknown")
        n, m = self.n_states, self.n_symbols
        rng = np.random.default_rng(self.seed)
        self.startprob_ = rng.dirichlet(np.ones(n))
        self.transmat_ = rng.dirichlet(np.ones(n), size=n)
        self.emissionprob_ = rng.dirichlet(np.ones(m), size=n)
        return self

    # ---------------------------------------------------------------- training
    @staticmethod
    def _mstep(stats, old_A, old_B, pseudocount: float = 0.0):
        """Closed-form M-step (emissions smoothed by ``pseudocount``); a state with no
        expected counts keeps its old row.  Works on numpy and CuPy arrays alike."""
        start = stats.start / stats.start.sum()
        tsum = stats.trans.sum(axis=1, keepdims=True)
        A = (stats.trans / (tsum + (tsum <= 0))) * (tsum > 0) + old_A * (tsum <= 0)
        emit = stats.emit + pseudocount
        esum = emit.sum(axis=1, keepdims=True)
        B = (emit / (esum + (esum <= 0))) * (esum > 0) + old_B * (esum <= 0)
        return start, A, B

    def _iter_fit(self, seqs: List[np.ndarray], *, init: bool, eval_seqs, cancel) -> Iterator[ProgressEvent]:
        hooks = _BaumWelch(self, seqs, init)
        settings = EMSettings(n_iter=self.n_iter, tol=self.tol, phase="baum-welch",
                              snapshot_every=self.snapshot_every, diagnostics_every=self.diagnostics_every)
        yield from run_em(self, hooks, seqs, eval_seqs=eval_seqs, cancel=cancel, settings=settings)

    def _engine(self):
        if self.engine == "hmmlearn":      # hmmlearn fits; our numpy engine scores and decodes
            from .engine import get_engine
            return get_engine("numpy")
        return super()._engine()

    def _hmmlearn_model(self):
        import logging
        from hmmlearn.hmm import CategoricalHMM
        logging.getLogger("hmmlearn").setLevel(logging.ERROR)
        return CategoricalHMM(n_components=self.n_states, n_features=self.n_symbols, n_iter=1,
                              tol=-np.inf, params="ste", init_params="", implementation="scaling",
                              emissionprob_prior=1.0 + self.emission_pseudocount)


class _BaumWelch(EMHooks):
    """Baum-Welch in the one EM loop: the state is ``(pi, A, B)`` on the engine's device and the
    M-step the closed form (:meth:`StandardHMM._mstep`); with ``engine="hmmlearn"`` every
    E-step + M-step is one ``CategoricalHMM.fit`` iteration on the host."""

    loss_is_nll = True
    divergence_advice = ("Add emission smoothing (emission_pseudocount, --pseudocount) so that no "
                         "probability becomes 0.")

    def __init__(self, model: "StandardHMM", seqs: List[np.ndarray], init: bool) -> None:
        self.model, self.seqs, self.init = model, seqs, init
        self.engine = model._engine()
        self.backend = self.engine.backend
        self.hmm = model._hmmlearn_model() if model.engine == "hmmlearn" else None
        if self.hmm is not None:
            self.X = np.concatenate(seqs)[:, None]
            self.lengths = np.array([len(x) for x in seqs])
        self.note: Optional[str] = None
        self.sparsity = sparsity_estep(model.posterior_sparsity)

    def start(self, restart: int):
        from .spectral import finish
        return finish(self.start_steps(restart))

    def start_steps(self, restart: int):
        """The start with its progress (spectral: pairs, SVD, k-means); the model's matrices are set
        only after the last step, so a cancel during the start leaves them as they were."""
        from .events import StartStep
        model = self.model
        if self.init or model.startprob_ is None:
            self.note = model.init_method
            if model.init_method == "spectral":
                from .spectral import spectral_matrices_steps, spectral_unavailable, within
                why = spectral_unavailable(self.seqs)
                if why is None:
                    mats = yield from within(self.engine.compute, spectral_matrices_steps(
                        self.seqs, model.n_symbols, model.n_states, np.random.default_rng(model.seed)))
                    model.startprob_, model.transmat_, model.emissionprob_ = mats
                else:
                    self.note = f"random ({why})"
                    yield StartStep("random", 1.0, why, self.note)
                    model.init_params()
            else:
                model.init_params()
        else:
            self.note = "continued"
        model._check_params()
        be = self.backend
        with be.context():
            return tuple(be.to_device(np.asarray(a, dtype=np.float64))
                         for a in (model.startprob_, model.transmat_, model.emissionprob_))

    def start_note(self) -> Optional[str]:
        return self.note

    def matrices(self, state):
        return state

    def estep(self, engine, state, data, want_stats: bool):
        if self.hmm is None:
            return super().estep(engine, state, data, want_stats)
        hmm = self.hmm
        hmm.startprob_, hmm.transmat_, hmm.emissionprob_ = (np.array(a) for a in state)
        if not want_stats:
            return None, float(hmm.score(self.X, self.lengths))
        hmm.fit(self.X, self.lengths)
        ll = float(hmm.monitor_.history[-1])
        A_new, B_new = np.array(hmm.transmat_), np.array(hmm.emissionprob_)
        # hmmlearn leaves all-zero rows for states without counts: keep the old rows
        A_new[A_new.sum(axis=1) == 0] = state[1][A_new.sum(axis=1) == 0]
        B_new[B_new.sum(axis=1) == 0] = state[2][B_new.sum(axis=1) == 0]
        return (np.array(hmm.startprob_), A_new, B_new), ll

    def mstep(self, state, stats, it: int):
        be = self.backend
        with self.engine.compute():
            if self.hmm is not None:
                new = stats
            else:
                new = StandardHMM._mstep(stats, state[1], state[2], self.model.emission_pseudocount)
            xp = be.xp
            ok = bool(xp.isfinite(new[0]).all() & xp.isfinite(new[1]).all() & xp.isfinite(new[2]).all())
        if not ok:
            self.adopt(state)
            raise TrainingDiverged(
                f"Baum-Welch iteration {it}: the M-step produced non-finite parameters; the model "
                "keeps its last finite parameters")
        return new, None

    def adopt(self, state) -> None:
        # on a GPU one transfer for the three (each transfer is a synchronisation)
        self.model.startprob_, self.model.transmat_, self.model.emissionprob_ = \
            self.backend.to_host_many(state)

    def snapshot(self, state) -> dict:
        self.adopt(state)
        return snapshot(self.model._param_arrays())

"""The standard (non-dense) discrete HMM trained by Baum-Welch, and :func:`n_fair`."""
from __future__ import annotations

import math
from typing import Iterator, List, Optional

import numpy as np

from .events import ProgressEvent, Stopwatch, TrainingDiverged, snapshot
from .hmm_base import BaseHMM
from .hyperparams import HyperParam, ModelType
from .sequences import n_tokens

__all__ = ["StandardHMM", "n_fair", "n_parameters_standard"]

ENGINES = ("auto", "numpy", "cupy", "hmmlearn")
#: The co-occurrence MAD (``mean |Omega_data - B^T diag(pi) A B|``, pi stationary) is reported in
#: every Baum-Welch event, like the DenseHMM's, up to this many symbols; above it the O(m^2)
#: matrices are not formed and the exact MAD is computed from the observed pairs instead
#: (:func:`densehmm_core.cooc_sparse.sparse_mad`).
MAD_MAX_SYMBOLS = 2000


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
        Convergence threshold on the gain of the total training log-likelihood
        between two iterations (absolute, the same rule as hmmlearn's
        ``ConvergenceMonitor``): training stops when ``ll_k - ll_{k-1} < tol``.
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
    init_method : {"random", "spectral"}
        ``"random"``: the Dirichlet draws above.  ``"spectral"``: uniform ``startprob`` and
        ``transmat``, emission rows from the training data's context clusters, the same
        start as a spectral DenseHMM's emissions (:func:`densehmm_core.spectral.spectral_matrices`).
    emission_pseudocount : float
        Additive smoothing of the emission M-step, ``B[i, k] = (N[i, k] + a) / (N[i] + m a)``
        with the expected counts ``N`` (the MAP estimate under a symmetric Dirichlet(1 + a)
        prior; hmmlearn's ``emissionprob_prior = 1 + a``).  0 (the default) is plain
        Baum-Welch, which gives probability 0 to every symbol the training data lacks, so
        held-out sequences with such symbols score ``-inf`` (words: use e.g. 0.01).

    Notes
    -----
    Training is :meth:`iter_fit`, a generator of :class:`ProgressEvent` (phase
    ``"baum-welch"``).  Event ``step = k`` describes the model after ``k`` M-steps:
    ``train_ll`` is its total training log-likelihood (computed by the E-step that
    follows), ``loss = -train_ll / n_tokens`` and ``params`` its matrices.  The
    stream ends (``done=True``) when the gain falls below ``tol`` (``"converged"``;
    the model is the one of the last event), after ``n_iter`` M-steps
    (``"max_steps"``) or when the cancel token is set (``"cancelled"``; the model
    keeps the parameters reached).  A non-finite log-likelihood or parameter raises
    :class:`TrainingDiverged` and the model keeps its last finite parameters.
    """

    kind = "standard"
    config_keys = ("n_states", "n_symbols", "n_iter", "tol", "seed", "engine", "snapshot_every", "device",
                   "init_method", "emission_pseudocount")

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
        HyperParam("tol", float, "Tolerance", "Stop when an iteration gains less than this in total training "
                   "log-likelihood (absolute, as hmmlearn).", flag="--tol", metavar="TOL", form=True, log=True,
                   high=1),
        HyperParam("seed", int, "Seed", "Seeds the Dirichlet(1) initialisation.", low=0, group="model"),
        HyperParam("engine", str, "Engine", "Inference engine (hmmlearn: its Baum-Welch iterations).",
                   choices=ENGINES),
        HyperParam("snapshot_every", int, "Snapshot every", "A parameter snapshot in every this many events.",
                   low=1),
        HyperParam("device", str, "Device", "Where the E-step runs (auto, cpu, gpu, /GPU:1): CuPy when it works "
                   "on that GPU, else numpy; cpu never touches a GPU.", flag="--device", group="model"),
        HyperParam("init_method", str, "Start", "How training starts. random: Dirichlet draws. spectral: uniform "
                   "start and transitions, emission rows from the training data's context clusters.",
                   choices=("random", "spectral"), flag="--init", form=True, group="model"),
        HyperParam("emission_pseudocount", float, "Smoothing", "Additive smoothing of the emission M-step, "
                   "(expected count + a) / (state total + m a); 0 is plain Baum-Welch, which gives probability 0 "
                   "to symbols the training data lacks, so test sequences with them score -inf (words: try 0.01).",
                   low=0, high=1000, flag="--pseudocount", metavar="A", form=True, group="model", decimals=4,
                   step=0.01),
    )

    def __init__(self, n_states: int, n_symbols: Optional[int] = None, n_iter: int = 100,
                 tol: float = 1e-4, seed: Optional[int] = None, engine: str = "auto",
                 snapshot_every: int = 1, device: str = "auto", init_method: str = "random",
                 emission_pseudocount: float = 0.0) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        super().__init__(n_states, n_symbols, seed, engine, device)
        if int(n_iter) < 0:
            raise ValueError("n_iter must be >= 0")
        self.n_iter = int(n_iter)
        self.tol = float(tol)
        self.snapshot_every = max(1, int(snapshot_every))
        if init_method not in ("random", "spectral"):
            raise ValueError(f"init_method must be 'random' or 'spectral', got {init_method!r}")
        self.init_method = init_method
        a = float(emission_pseudocount)
        if not (np.isfinite(a) and a >= 0):
            raise ValueError(f"emission_pseudocount must be a finite number >= 0, got {emission_pseudocount!r}")
        self.emission_pseudocount = a

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
        expected counts keeps its old row."""
        start = stats.start / stats.start.sum()
        tsum = stats.trans.sum(axis=1, keepdims=True)
        A = np.where(tsum > 0, stats.trans / np.where(tsum > 0, tsum, 1.0), old_A)
        emit = stats.emit + pseudocount
        esum = emit.sum(axis=1, keepdims=True)
        B = np.where(esum > 0, emit / np.where(esum > 0, esum, 1.0), old_B)
        return start, A, B

    def _iter_fit(self, seqs: List[np.ndarray], *, init: bool, eval_seqs, cancel,
                  **kw) -> Iterator[ProgressEvent]:
        if kw:
            raise TypeError(f"unexpected fit options: {sorted(kw)}")
        if (init or self.startprob_ is None) and self.init_method == "spectral":
            from .spectral import spectral_matrices
            self.startprob_, self.transmat_, self.emissionprob_ = spectral_matrices(
                seqs, self.n_symbols, self.n_states, np.random.default_rng(self.seed))
        elif init or self.startprob_ is None:
            self.init_params()
        self._check_params()
        sw = Stopwatch()
        tokens = n_tokens(seqs)
        n = self.n_states
        eng = self._engine()
        data = eng.prepare(seqs, n)
        edata = None if eval_seqs is None else eng.prepare(eval_seqs, n)
        e_tokens = None if eval_seqs is None else n_tokens(eval_seqs)
        hmm = self._hmmlearn_model() if self.engine == "hmmlearn" else None
        if hmm is not None:
            X = np.concatenate(seqs)[:, None]
            lengths = np.array([len(s) for s in seqs])

        from .cooc_sparse import pair_counts, sparse_mad
        from .maths import analytic_cooc, empirical_cooc
        from .metrics import cooc_mad
        m = self.emissionprob_.shape[1]
        omega_emp = pairs = None
        if any(len(s) > 1 for s in seqs):
            if m <= MAD_MAX_SYMBOLS:
                omega_emp = empirical_cooc(seqs, m)
            else:  # the same MAD, exactly, from the observed pairs: no m x m array
                pairs = pair_counts(seqs, m)

        prev_ll = None
        for it in range(self.n_iter + 1):
            if cancel is not None and cancel.cancelled:
                yield ProgressEvent(step=it, total=self.n_iter, phase="baum-welch",
                                    params=snapshot(self._param_arrays()), done=True, reason="cancelled",
                                    elapsed=sw.elapsed)
                return
            last = it == self.n_iter
            new = None
            if hmm is None:
                if last:
                    ll = float(eng.loglik(self.startprob_, self.transmat_, self.emissionprob_, data).sum())
                else:
                    stats = eng.statistics(self.startprob_, self.transmat_, self.emissionprob_, data)
                    ll = stats.total_loglik
            else:
                hmm.startprob_ = self.startprob_.copy()
                hmm.transmat_ = self.transmat_.copy()
                hmm.emissionprob_ = self.emissionprob_.copy()
                if last:
                    ll = float(hmm.score(X, lengths))
                else:
                    hmm.fit(X, lengths)
                    ll = float(hmm.monitor_.history[-1])
                    A_new, B_new = np.array(hmm.transmat_), np.array(hmm.emissionprob_)
                    # hmmlearn leaves all-zero rows for states without counts: keep the old rows
                    A_new[A_new.sum(axis=1) == 0] = self.transmat_[A_new.sum(axis=1) == 0]
                    B_new[B_new.sum(axis=1) == 0] = self.emissionprob_[B_new.sum(axis=1) == 0]
                    new = (np.array(hmm.startprob_), A_new, B_new)
            if not np.isfinite(ll):
                raise TrainingDiverged(
                    f"Baum-Welch iteration {it}: training log-likelihood is {ll}; the model keeps "
                    "its last finite parameters")
            test_ll = None
            metrics: dict = {"train_nll": -ll / tokens}
            if edata is not None:
                test_ll = float(eng.loglik(self.startprob_, self.transmat_, self.emissionprob_, edata).sum())
                metrics["test_nll"] = -test_ll / e_tokens
            if prev_ll is not None:
                metrics["delta_ll"] = ll - prev_ll
            if omega_emp is not None:
                metrics["mad"] = cooc_mad(omega_emp, analytic_cooc(None, self.transmat_, self.emissionprob_))
            elif pairs is not None:
                metrics["mad"] = sparse_mad(None, self.transmat_, self.emissionprob_, pairs)
            converged = prev_ll is not None and (ll - prev_ll) < self.tol
            done = converged or last
            yield ProgressEvent(
                step=it, total=self.n_iter, phase="baum-welch", loss=-ll / tokens, train_ll=ll,
                test_ll=test_ll, metrics=metrics,
                params=snapshot(self._param_arrays()) if (done or it % self.snapshot_every == 0) else None,
                done=done, reason=("converged" if converged else "max_steps") if done else "",
                elapsed=sw.elapsed)
            if done:
                return
            if new is None:
                new = self._mstep(stats, self.transmat_, self.emissionprob_, self.emission_pseudocount)
            start, A, B = new
            if not (np.all(np.isfinite(start)) and np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
                raise TrainingDiverged(
                    f"Baum-Welch iteration {it}: the M-step produced non-finite parameters; the model "
                    "keeps its last finite parameters")
            self.startprob_, self.transmat_, self.emissionprob_ = start, A, B
            prev_ll = ll

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

"""DenseHMM's hyper-parameter metadata (:mod:`densehmm_core.hyperparams`): the model types it offers and
what each constructor option means, its range and where it shows (CLI flag, app form, docs table).

:class:`densehmm_core.dense.DenseHMM` takes these as its ``model_types`` and ``hyper_params``; the
defaults are read from its ``__init__`` signature and presets, never copied here.
"""
from __future__ import annotations

from typing import Any, Dict

from .features import FEATURE_FUNCTIONS
from .hyperparams import HyperParam, ModelType

__all__ = ["PRESETS", "DENSE_MODEL_TYPES", "DENSE_HYPER_PARAMS", "FIT_METHODS", "MSTEP_DTYPES", "INIT_METHODS",
           "LOGITS"]

#: Hyper-parameter presets per fit method.  ``None`` constructor arguments take these values.
PRESETS: Dict[str, Dict[str, Dict[str, Any]]] = {
    # Measured defaults (docs/DENSEHMM.md): normalised loss, larger Adam step with a cosine
    # decay, then an L-BFGS finish; early stopping on relative loss improvement per chunk.
    # Both schemes start from the data's context statistics (spectral, random parts at 0.2).
    "default": {
        "cooc": {"lr": 0.05, "lr_final": 0.001, "cooc_steps": 1000, "tol": 1e-7, "finish": "auto",
                 "finish_steps": 500, "loss": "normalized", "restarts": 1, "stationary_grad": True,
                 "init_method": "spectral", "init_scale": 0.2},
        "em": {"lr": 0.01, "mstep_steps": 25, "n_iter": 40, "tol": 1e-6, "restarts": 1,
               "init_method": "spectral", "init_scale": 0.2, "mstep_dtype": "float32"},
        "marginal": {"n_iter": 100, "tol": 1e-7, "restarts": 1, "init_method": "spectral", "init_scale": 0.2},
    },
    # The paper's settings: plain Adam, lr 0.001 for 10,000 steps on the raw squared Frobenius
    # loss with pi treated as a constant; EM with 25 Adam steps at lr 0.01 per M-step.
    "paper": {
        "cooc": {"lr": 0.001, "lr_final": 0.001, "cooc_steps": 10000, "tol": 0.0, "finish": "none",
                 "finish_steps": 0, "loss": "frobenius", "restarts": 1, "stationary_grad": False,
                 "init_method": "random", "init_scale": 1.0},
        "em": {"lr": 0.01, "mstep_steps": 25, "n_iter": 40, "tol": 0.0, "restarts": 1,
               "init_method": "random", "init_scale": 1.0, "mstep_dtype": "float64"},
        # not in the paper: its start and stopping rule, L-BFGS on the marginal likelihood
        "marginal": {"n_iter": 100, "tol": 0.0, "restarts": 1, "init_method": "random", "init_scale": 1.0},
    },
}

FIT_METHODS = ("cooc", "em", "cooc_em", "marginal")
#: Floating-point types of EM's M-step (:class:`densehmm_core.dense_mstep.MStep`).
MSTEP_DTYPES = ("float32", "float64")
INIT_METHODS = ("random", "spectral")
#: The logits of A and B: ``"dense"`` (``Z U^T``, ``W V^T`` of length-l embeddings) or ``"full"``
#: (``U = W =`` the identity, ``l = n``: every logit free).
LOGITS = ("dense", "full")

DENSE_MODEL_TYPES = (
    ModelType("dense_cooc", "dense", "cooc", "DenseHMM — direct co-occurrence", "Dense-cooc"),
    ModelType("dense_em", "dense", "em", "DenseHMM — EM (gradient M-step)", "Dense-EM"),
    ModelType("dense_cooc_em", "dense", "cooc_em", "DenseHMM — co-occurrence + EM", "Dense-cooc-EM"),
    ModelType("dense_marginal", "dense", "marginal", "DenseHMM — likelihood (L-BFGS)",
              "Dense-marginal"),
)
DENSE_HYPER_PARAMS = (
    HyperParam("n_states", int, "States n", "Number of hidden states n.", low=1, flag="--states",
               short="-n", metavar="N", group="model"),
    HyperParam("dim", int, "Embedding length l", "Embedding length l.", low=1, flag="--dim", short="-l",
               metavar="L", group="model"),
    HyperParam("n_symbols", int, "Symbols m", "Number of observable symbols m (from the data when not given).",
               low=1, group="model"),
    HyperParam("fit_method", str, "Fit method", "Training scheme: direct co-occurrence fit, EM with a "
               "gradient M-step, the co-occurrence fit followed by EM from it, or L-BFGS on the likelihood "
               "itself (marginal).", choices=FIT_METHODS,
               flag="--method", group="model"),
    HyperParam("seed", int, "Seed", "Seeds the initialisation (restart r uses [seed, r]).", low=0,
               group="model"),
    HyperParam("preset", str, "Settings", "Where options left unset come from: the measured defaults or "
               "the paper's settings.", choices=tuple(PRESETS), group="model"),
    HyperParam("lr", float, "Learning rate", "Adam learning rate (cooc: start of the cosine schedule; em: "
               "the M-step's).", methods=("cooc", "em", "cooc_em"), low=0, low_open=True, high=1e6, flag="--lr",
               metavar="RATE", form=True, log=True),
    HyperParam("lr_final", float, "Final learning rate", "Learning rate at the end of the cosine schedule.",
               methods=("cooc", "cooc_em"), low=0, low_open=True),
    HyperParam("cooc_steps", int, "Adam steps", "Maximum Adam steps of the co-occurrence fit.",
               methods=("cooc", "cooc_em"), low=1, high=10_000_000, flag="--steps", metavar="K", form=True,
               step=100),
    HyperParam("n_iter", int, "EM iterations", "Maximum EM iterations (marginal: L-BFGS iterations).",
               methods=("em", "cooc_em", "marginal"), low=1,
               high=10_000_000, flag="--iter", metavar="K", form=True),
    HyperParam("mstep_steps", int, "Adam steps per M-step", "Adam steps per M-step.",
               methods=("em", "cooc_em"), low=1, high=100_000, flag="--mstep-steps", metavar="K", form=True),
    HyperParam("mstep_dtype", str, "M-step precision", "Floating-point type of EM's M-step (the Adam "
               "steps on -Q: parameters, gradient, Adam's moments; the E-step, the likelihoods and the model's "
               "matrices stay float64). float32 (the default; the paper preset: float64) halves the M-step's "
               "time and gives the same tagging scores (docs/PERFORMANCE.md).",
               methods=("em", "cooc_em"), choices=MSTEP_DTYPES, flag="--mstep-dtype"),
    HyperParam("tol", float, "Tolerance", "Early stopping: cooc, the relative loss improvement of a chunk; "
               "em and marginal, the relative change of the training log-likelihood, the rule of every EM fit "
               "(0: never).",
               low=0, high=1,
               flag="--tol", metavar="TOL", form=True, log=True),
    HyperParam("finish", str, "Finish", "Second-order finish after the Adam phase (Levenberg-Marquardt, "
               "L-BFGS, auto = by problem size, none).", methods=("cooc", "cooc_em"),
               choices=("auto", "lm", "lbfgs", "none"), flag="--finish"),
    HyperParam("finish_steps", int, "Finish steps", "Maximum iterations of the finish (0: none).",
               methods=("cooc", "cooc_em"), low=0, flag="--finish-steps", metavar="K"),
    HyperParam("loss", str, "Loss", "Co-occurrence loss: normalised or raw squared Frobenius norm.",
               methods=("cooc", "cooc_em"), choices=("normalized", "frobenius")),
    HyperParam("restarts", int, "Restarts", "Seeded restarts; the best run is kept.", low=1, high=100,
               flag="--restarts", metavar="R", form=True, group="model"),
    HyperParam("stationary_grad", bool, "Stationary gradient", "Differentiate through the stationary "
               "distribution (False: a constant each step, as the paper's code).", methods=("cooc", "cooc_em")),
    HyperParam("device", str, "Device", "Where training runs: auto, cpu, gpu or a device string such as "
               "/GPU:1; EM runs wholly there (E-step, M-step, diagnostics) with CuPy when CuPy works on that "
               "GPU, else numpy on the CPU; the co-occurrence fits' TensorFlow steps run there too; cpu never "
               "touches a GPU.", flag="--device", group="model"),
    HyperParam("snapshot_every", int, "Snapshot every", "A parameter snapshot in every this many progress "
               "steps (cooc: Adam steps, em: iterations).", low=1),
    HyperParam("chunk", int, "Chunk", "Adam steps per progress event and early-stopping check (run as "
               "compiled calls of about 0.15 s, a cancel check after each).", low=1),
    HyperParam("init_method", str, "Start", "How training starts. spectral (the default; the paper preset: "
               "random): V and W from the training data's context counts (each symbol's neighbours "
               "counted, reduced by an SVD, frequent symbols clustered by k-means); restarts differ in "
               "their k-means starts; more states than symbols (DNA, proteins): EM and the likelihood fit start "
               "from the tokens' contexts (a symbol and the symbols before it, clustered by what follows), "
               "the co-occurrence fits from one state per symbol and copies of the most frequent; data "
               "without adjacent pairs starts randomly and says why. random: normal "
               "embeddings (Init scale).",
               choices=INIT_METHODS,
               flag="--init", form=True, group="model"),
    HyperParam("init_scale", float, "Init scale", "Standard deviation of the random initial embeddings "
               "(all of U, Z, W, V with a random start; U, Z and z_start with a spectral one; default 0.2, "
               "the paper preset 1).", low=0,
               low_open=True, high=100, flag="--init-scale", metavar="S", form=True, group="model", step=0.1),
    HyperParam("param_limit", float, "Parameter limit", "Divergence guard on the embeddings' magnitude.",
               low=0, low_open=True),
    HyperParam("jit", bool, "XLA", "XLA-compile the co-occurrence fit's Adam loops (faster steps, a "
               "compilation first).", methods=("cooc", "cooc_em")),
    HyperParam("engine", str, "Engine", "Inference engine of the E-step and scoring.",
               choices=("auto", "numpy", "cupy")),
    HyperParam("symbol_features", str, "Symbol features", "Registered symbol features (e.g. orthographic: "
               "word form, suffixes, capitals, digits, hyphens; for words read without lower-casing).",
               choices=tuple(FEATURE_FUNCTIONS), optional=True, flag="--symbol-features", metavar="NAME",
               form=True, group="model"),
    HyperParam("sparse_cooc", bool, "Sparse co-occurrence", "Co-occurrence fit on the observed pairs only "
               "(default: above 1000 symbols or with symbol features).", methods=("cooc", "cooc_em")),
    HyperParam("diagnostics_every", int, "Diagnostics every", "EM: the co-occurrence MAD and the test NLL "
               "every this many iterations (and on the first and the last).",
               methods=("em", "cooc_em", "marginal"), low=1, flag="--diagnostics-every", metavar="K"),
    HyperParam("l2", float, "L2 penalty", "Weight of the L2 penalty: l2/2 times the squared norm of all "
               "embeddings (features included), added to EM's M-step loss (-Q per token) and to the direct "
               "fit's NLL per token (0: none).",
               methods=("em", "cooc_em", "marginal"), low=0, high=1e6, flag="--l2", metavar="LAMBDA",
               form=True, log=True),
    HyperParam("logits", str, "Logits", "dense: the DenseHMM's logits Z U^T and W V^T of length-l embeddings. "
               "full: U and W fixed to the identity (l = n), every transition and emission logit free; with "
               "symbol features the log-linear feature HMM of Berg-Kirkpatrick et al. (2010). Starts randomly; "
               "pair it with an L2 penalty.", choices=LOGITS, methods=("em", "marginal"), flag="--logits",
               form=True, group="model"),
    HyperParam("posterior_sparsity", float, "Posterior sparsity", "sigma of the posterior-sparsity E-step "
               "(Graca et al. 2011): each symbol's token posteriors are projected to use few states (an "
               "L1/Linf penalty) before the M-step counts them (0: the plain E-step).",
               methods=("em", "cooc_em"), low=0, high=1000, flag="--posterior-sparsity", metavar="SIGMA"),
)


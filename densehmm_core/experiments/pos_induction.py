"""``densehmm reproduce pos-induction``: unsupervised part-of-speech induction on words.

Every model is trained on the words of a tagged corpus (the shared Penn Treebank sample by
default: 3,914 sentences, 94,084 words without traces, 45 tags), its hidden states are
decoded by Viterbi, and the state sequences are scored against the gold tags by
:func:`densehmm_core.metrics.tagging_scores` (many-to-one M-1, one-to-one 1-1, V-measure).
Also recorded: training NLL per token and the fit's CPU and wall time.

Models (``MODELS``; ``n`` = number of gold tags unless ``n_states`` is given):

``baum-welch``      standard HMM, Baum-Welch (``n_iter`` iterations, no early stop), random
                    (Dirichlet) start: the baseline
``baum-welch-spectral``  the same, started from the spectral emissions (the control: how much
                    of a spectral DenseHMM's score is its start, not its model)
``dense-em``        DenseHMM-EM, lower-cased words, embedding length l
``dense-em-feat``   DenseHMM-EM with ``symbol_features="orthographic"`` on the words *as
                    written* (not lower-cased: the lower-cased form is one of the features)
``dense-direct``    DenseHMM co-occurrence fit (sparse loss), lower-cased words
``cooc-em``         co-occurrence fit, then DenseHMM-EM from it (``fit_method="cooc_em"``)
``dense-marginal``  DenseHMM fit directly on the likelihood by L-BFGS (``fit_method="marginal"``,
                    ``n_iter`` L-BFGS iterations, each one E-step or more), lower-cased words
``dense-marginal-feat``  the same with orthographic symbol features (words as written)
``baum-welch-spectral-ps``  ``baum-welch-spectral`` with the posterior-sparsity E-step
                    (``posterior_sparsity = sigma``, the setting ``sparsity``; Graca et al. 2011,
                    :mod:`densehmm_core.posterior_sparsity`)
``dense-em-ps``     ``dense-em`` with the posterior-sparsity E-step (the same sigma)
``dense-em-feat-ps``  ``dense-em-feat`` with the posterior-sparsity E-step (the same sigma)
``spectral-clusters``  no HMM training: each word tagged by the argmax over states of the spectral
                    start's emission column ``B[:, w]`` (restart 0 of seed ``seed``, embedding
                    length l): the start every spectral model begins from, scored alone
``dense-marginal-full-feat``  the log-linear feature HMM of Berg-Kirkpatrick et al. (2010):
                    ``DenseHMM(n, n, logits="full", symbol_features="orthographic")`` (every
                    transition and emission logit free, orthographic features, words as written),
                    fit directly on the likelihood by L-BFGS, L2 penalty ``kappa`` on the *total*
                    log-likelihood (``l2 = kappa / tokens``; their kappa = 1), random start
``dense-em-full-feat``  the same model and penalty trained by EM (``steps`` Adam steps at ``lr`` per M-step)
``dense-marginal-full``  ``dense-marginal-full-feat`` without the features (lower-cased words): a standard
                    HMM's free logits with the same penalty, fit the same way (what the features add)
``full-start``      no training: each word tagged by the argmax over states of the full-logit rows'
                    random start (restart 0 of seed ``seed``): what those rows begin from

``l2`` (default 0) is the L2 penalty of every dense-logit DenseHMM's objective (EM's M-step and the
direct fit alike); the full-logit rows take ``kappa`` instead (their ``l`` is ``n``; the table shows
"-").  Rows record ``e_steps``: the E-steps of the fit (EM: ``n_iter + 1``; the direct
fit: every line-search trial point), for comparing CPU time per E-step.

DenseHMMs start as ``init_method`` says (default ``"spectral"``: ``V`` and ``W`` from the
training text's context counts, :mod:`densehmm_core.spectral`; ``"random"``: normal
embeddings).  Random parts have standard deviation ``init_scale`` = 0.2 (the library default is
1.0): with l = 32 a standard-normal start gives logits of standard deviation ~5.7, i.e. nearly
one-hot random emission rows, and EM then stays far from Baum-Welch (measured in docs/RESULTS.md).

Every (model, l, seed) run is one row of ``pos_induction_runs.csv``; a rerun of the same
command skips finished runs (resumable), ``--report-only`` rebuilds the summary
(``pos_induction_summary.csv``, mean and standard deviation over seeds) and the table
(``pos_induction_table.md``).  Extra unlabelled text (``--extra``) joins the training
corpus; only the sentences with gold tags are scored.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..commandline import UserError
__all__ = ["PosSettings", "MODELS", "run_one", "make_tasks", "summarize", "format_table", "run_pos_induction"]

MODELS = ("spectral-clusters", "baum-welch", "baum-welch-spectral", "dense-em", "dense-em-feat", "dense-direct",
          "cooc-em", "dense-marginal", "dense-marginal-feat", "baum-welch-spectral-ps", "dense-em-ps",
          "dense-em-feat-ps", "full-start", "dense-em-full-feat", "dense-marginal-full", "dense-marginal-full-feat")
#: Rows of the full-logit model (``DenseHMM(logits="full")``: l = n, penalty ``kappa``)
FULL_MODELS = ("full-start", "dense-em-full-feat", "dense-marginal-full", "dense-marginal-full-feat")
INIT_METHODS = ("spectral", "random")
#: settings a resumed run must share with the runs already in its folder (the data and extra
#: files by their content: size and SHA-256, never by their names)
RESUME_KEYS = ("data_fingerprint", "extra_fingerprints", "n_states", "n_iter", "steps", "lr", "init_scale",
               "init_method", "max_sequences", "quick", "l2", "sparsity", "kappa")
#: settings only some models use (which ones: the predicate)
MODEL_KEYS = {"sparsity": lambda m: m.endswith("-ps"), "kappa": lambda m: m in FULL_MODELS}
KEY = ("model", "dim", "seed")
COLUMNS = KEY + ("n_states", "n_symbols", "n_tokens", "n_iter", "m1", "one_to_one", "v_measure",
                 "train_nll", "fit_cpu_s", "fit_wall_s", "stop_reason", "e_steps")


@dataclass
class PosSettings:
    """What ``reproduce pos-induction`` runs (``to_dict`` goes to ``pos_induction_settings.json``)."""

    data: str
    extra: Tuple[str, ...] = ()
    models: Tuple[str, ...] = MODELS
    dims: Tuple[int, ...] = (16, 32, 64)
    seeds: int = 5
    seed: int = 0
    n_states: Optional[int] = None       # default: the number of gold tags
    n_iter: int = 100                    # Baum-Welch iterations = DenseHMM EM iterations
    steps: int = 25                      # Adam steps per M-step
    lr: float = 0.01
    init_scale: float = 0.2              # std of the initial embeddings (DenseHMM default; paper: 1.0)
    init_method: str = "spectral"        # how the DenseHMMs start (densehmm_core.spectral) or "random"
    l2: float = 0.0                      # L2 penalty of the DenseHMMs' objectives (EM and direct fit)
    sparsity: float = 1.0                # sigma of the "-ps" rows' posterior-sparsity E-step
    kappa: float = 1.0                   # L2 penalty of the full-logit rows on the total log-likelihood
    max_sequences: Optional[int] = None
    quick: bool = False
    direct_dims: Tuple[int, ...] = field(default=())  # l of the cooc-based models (default: dims)
    data_fingerprint: str = ""           # "SIZE:SHA256" of data (runner.file_fingerprint); set by the run
    extra_fingerprints: Tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: dict) -> "PosSettings":
        return cls(**{**d, "extra": tuple(d.get("extra", ())), "models": tuple(d["models"]),
                      "dims": tuple(d["dims"]), "direct_dims": tuple(d.get("direct_dims", ())),
                      "extra_fingerprints": tuple(d.get("extra_fingerprints", ()))})

    def result_settings(self, models: Optional[Sequence[str]] = None) -> dict:
        """What changes a run's result (rows carry model, l and seed).  ``sparsity`` and ``kappa`` only
        where a model (of ``models``, default :attr:`models`) uses them (folders made before they existed
        keep their settings_id)."""
        d = self.to_dict()
        models = self.models if models is None else models
        return {k: d[k] for k in RESUME_KEYS if k not in MODEL_KEYS or any(MODEL_KEYS[k](m) for m in models)}

    @staticmethod
    def _id(settings: dict) -> str:
        import hashlib
        return hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]

    @property
    def settings_id(self) -> str:
        return self._id(self.result_settings())

    def accepted_ids(self) -> set:
        """The ids a settings file of these settings may carry: :attr:`settings_id`, and, with
        ``l2 = 0`` (what folders made before the option existed used), the id such a folder wrote
        (without ``l2``)."""
        ids = {self.settings_id}
        if self.l2 == 0.0:
            ids.add(self._id({k: v for k, v in self.result_settings().items() if k != "l2"}))
        return ids

    @classmethod
    def quick_settings(cls, data: str, **kw) -> "PosSettings":
        base: Dict[str, Any] = dict(dims=(16,), seeds=1, n_iter=5, steps=10, max_sequences=300, quick=True)
        base.update(kw)
        return cls(data=data, **base)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["extra"] = list(self.extra)
        d["extra_fingerprints"] = list(self.extra_fingerprints)
        return d

    def model_dims(self, model: str) -> Tuple[int, ...]:
        if model.startswith("baum-welch") or model in FULL_MODELS:
            return (0,)
        if model in ("dense-direct", "cooc-em") and self.direct_dims:
            return tuple(self.direct_dims)
        return tuple(self.dims)


def _load(s: PosSettings, lowercase: bool):
    from ..data import load
    corpus = load(s.data, observe="words", lowercase=lowercase, min_count=1, extra=list(s.extra) or None)
    if s.max_sequences is not None:
        corpus = corpus.select(list(range(min(s.max_sequences, corpus.n_sequences))))
    if corpus.tags is None:
        raise ValueError(f"{s.data}: the corpus has no gold tags to score against")
    return corpus


def model_config(s: PosSettings, model: str, dim: int, n: int, seed: int,
                 n_tokens: Optional[int] = None) -> Tuple[str, Dict[str, Any]]:
    """``(kind, config)`` of one run's estimator (n states, embedding length ``dim``), for
    :func:`densehmm_core.model_from_config`; the full-logit rows' penalty needs the corpus's ``n_tokens``."""
    ps: Dict[str, Any] = dict(posterior_sparsity=s.sparsity) if model.endswith("-ps") else {}
    if model.startswith("baum-welch"):
        return "standard", dict(n_states=n, n_iter=s.n_iter, tol=0.0, seed=seed, snapshot_every=10 ** 9,
                                init_method="random" if model == "baum-welch" else "spectral", **ps)
    base: Dict[str, Any] = dict(n_states=n, dim=dim, seed=seed, init_scale=s.init_scale,
                                init_method=s.init_method)
    em: Dict[str, Any] = dict(n_iter=s.n_iter, mstep_steps=s.steps, lr=s.lr, tol=0.0, snapshot_every=10 ** 9,
                              l2=s.l2)
    marginal: Dict[str, Any] = dict(fit_method="marginal", n_iter=s.n_iter, tol=0.0, snapshot_every=10 ** 9, l2=s.l2)
    if model in ("dense-em", "dense-em-ps"):
        return "dense", dict(base, fit_method="em", **em, **ps)
    if model in ("dense-em-feat", "dense-em-feat-ps"):
        return "dense", dict(base, fit_method="em", symbol_features="orthographic", **em, **ps)
    if model == "dense-marginal":
        return "dense", dict(base, **marginal)
    if model == "dense-marginal-feat":
        return "dense", dict(base, symbol_features="orthographic", **marginal)
    if model in FULL_MODELS:
        if n_tokens is None:
            raise ValueError(f"{model}: its penalty kappa / tokens needs n_tokens")
        return "dense", full_config(s, model, n, seed, n_tokens)
    if model == "dense-direct":
        kw: Dict[str, Any] = dict(cooc_steps=100, finish_steps=50) if s.quick else {}
        return "dense", dict(base, fit_method="cooc", sparse_cooc=True, snapshot_every=10 ** 9, **kw)
    if model == "cooc-em":
        kw2: Dict[str, Any] = dict(finish_steps=20) if s.quick else {}
        return "dense", dict(base, fit_method="cooc_em", sparse_cooc=True, **em, **kw2)
    raise ValueError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")


def full_config(s: PosSettings, model: str, n: int, seed: int, n_tokens: int) -> Dict[str, Any]:
    """The configuration of a full-logit row (``l2 = kappa / n_tokens``; ``full-start`` is the untrained
    ``dense-marginal-full-feat``)."""
    cfg: Dict[str, Any] = dict(n_states=n, dim=n, seed=seed, logits="full", init_method="random",
                               init_scale=s.init_scale, tol=0.0, snapshot_every=10 ** 9, n_iter=s.n_iter,
                               l2=s.kappa / n_tokens,
                               symbol_features=None if model == "dense-marginal-full" else "orthographic")
    if model == "dense-em-full-feat":
        return dict(cfg, fit_method="em", mstep_steps=s.steps, lr=s.lr)
    return dict(cfg, fit_method="marginal")


def run_one(model: str, dim: int, seed: int, settings: dict, shared=None) -> List[dict]:
    """Train one model and score it: one result row."""
    from ..metrics import tagging_scores
    s = PosSettings.from_dict(settings)
    # the feature models read the words as written (the lower-cased form is one of their features)
    corpus = _load(s, lowercase=not (model.endswith(("-feat", "-feat-ps")) or model == "full-start"))
    n = s.n_states or corpus.n_tags
    gold = corpus.labelled()
    if model in ("spectral-clusters", "full-start"):     # no training: each word tagged by its start's argmax
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if model == "spectral-clusters":
            est = spectral_start(corpus.sequences, n, dim, corpus.n_symbols, seed, s.init_scale)
        else:
            est = full_start(corpus, model_config(s, model, dim, n, seed, corpus.n_tokens)[1])
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        cols = est.emissionprob_.argmax(axis=0)
        pred = [cols[np.asarray(x)] for x in gold.sequences]
        e_steps = 0
    else:
        from ..registry import model_from_config
        from .cancel import fit_cancellable
        est = model_from_config(*model_config(s, model, dim, n, seed, corpus.n_tokens))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        fit_cancellable(est, corpus)     # an interrupted run (thread executor) stops it
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        pred = est.predict(gold.sequences)
        e_steps = est.evaluations_ if "marginal" in model else (0 if model == "dense-direct" else s.n_iter + 1)
    scores = tagging_scores(pred, gold.tags, n_states=n, n_tags=corpus.n_tags)
    nll = -est.score(corpus.sequences) / corpus.n_tokens
    return [{"model": model, "dim": dim, "seed": seed, "n_states": n, "n_symbols": corpus.n_symbols,
             "n_tokens": corpus.n_tokens, "n_iter": s.n_iter, "m1": scores["m1"],
             "one_to_one": scores["one_to_one"], "v_measure": scores["v_measure"], "train_nll": nll,
             "fit_cpu_s": cpu, "fit_wall_s": wall, "stop_reason": getattr(est, "stop_reason_", ""),
             "e_steps": e_steps}]


def full_start(corpus, cfg: Dict[str, Any]):
    """A DenseHMM of configuration ``cfg`` holding the start its fit on ``corpus`` begins from (restart 0),
    untrained."""
    from ..dense import DenseHMM
    from ..spectral import finish
    est = DenseHMM(**cfg)
    est.n_symbols, est.vocabulary = corpus.n_symbols, list(corpus.vocabulary)
    h, _, layout = est._prepare_fit(None, True)
    theta, _ = finish(est._start_steps(layout, 0, True, h))
    est._adopt(theta, layout, stationary=False)
    return est


def spectral_start(seqs, n: int, dim: int, m: int, seed: int, init_scale: float):
    """A DenseHMM holding the spectral start a spectral DenseHMM fit of ``seed`` begins from (restart
    0: the same random stream), untrained."""
    from ..cooc_sparse import pair_counts
    from ..dense import DenseHMM
    from ..spectral import boundary_counts, spectral_embeddings
    emb = spectral_embeddings(pair_counts(seqs, m), n, dim, np.random.default_rng([int(seed), 0]), init_scale,
                              bounds=boundary_counts(seqs, m))
    return DenseHMM(n, dim, n_symbols=m, seed=seed).set_embeddings(emb, start_mode="embedding")


def make_tasks(s: PosSettings):
    from .runner import Task
    cost = {"baum-welch": 1.0, "baum-welch-spectral": 1.0, "dense-em": 2.0, "dense-em-feat": 2.5,
            "dense-direct": 1.5, "cooc-em": 3.0, "dense-marginal": 1.5, "dense-marginal-feat": 2.0,
            "spectral-clusters": 0.1, "baum-welch-spectral-ps": 3.0, "dense-em-ps": 4.0,
            "dense-em-feat-ps": 5.0, "full-start": 0.2, "dense-em-full-feat": 6.0, "dense-marginal-full": 3.0,
            "dense-marginal-full-feat": 4.0}
    tasks = []
    for model in s.models:
        for dim in s.model_dims(model):
            for r in range(s.seeds):
                seed = s.seed + r
                tasks.append(Task(key={"model": model, "dim": dim, "seed": seed},
                                  func="densehmm_core.experiments.pos_induction:run_one",
                                  kwargs={"model": model, "dim": dim, "seed": seed, "settings": s.to_dict()},
                                  label=f"{model} l={dim} seed={seed}", cost=cost[model] * max(dim, 16) / 16))
    return tasks


def describe(rows: Sequence[dict]) -> str:
    r = rows[0]
    return f"M-1 {float(r['m1']):.3f}  1-1 {float(r['one_to_one']):.3f}  VM {float(r['v_measure']):.3f}"


def summarize(rows: Sequence[dict]) -> List[dict]:
    """Mean and standard deviation over seeds per (model, l)."""
    groups: Dict[Tuple[str, int], List[dict]] = {}
    for r in rows:
        groups.setdefault((str(r["model"]), int(r["dim"])), []).append(r)
    out = []
    order = {m: i for i, m in enumerate(MODELS)}
    for (model, dim), rs in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])):
        row = {"model": model, "dim": dim, "runs": len(rs)}
        for col in ("m1", "one_to_one", "v_measure", "train_nll", "fit_cpu_s", "fit_wall_s", "e_steps"):
            v = np.array([float(r.get(col) or 0) for r in rs])
            row[col + "_mean"] = float(v.mean())
            row[col + "_std"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
        # rows written before E-steps were recorded have none: unknown, not 0
        row["e_steps_known"] = all(r.get("e_steps") not in (None, "") for r in rs)
        out.append(row)
    return out


def per_estep(r: dict) -> str:
    """Mean fit CPU seconds per E-step of a summary row ("-" without E-steps)."""
    return f"{r['fit_cpu_s_mean'] / r['e_steps_mean']:.3f}" if r.get("e_steps_mean") and r.get(
        "e_steps_known", True) else "-"


def format_table(summary: Sequence[dict]) -> str:
    """A Markdown table: mean +- std over seeds."""
    head = ("| model | l | runs | M-1 | 1-1 | V-measure | train NLL / token | fit CPU s | E-steps | CPU s / E-step |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in summary:
        def ms(c, d=3):
            return f"{r[c + '_mean']:.{d}f} ± {r[c + '_std']:.{d}f}"
        esteps = f"{r['e_steps_mean']:.0f}" if r.get("e_steps_known", True) else "-"
        lines.append(f"| {r['model']} | {r['dim'] or '-'} | {r['runs']} | {ms('m1')} | {ms('one_to_one')} | "
                     f"{ms('v_measure')} | {ms('train_nll', 2)} | {r['fit_cpu_s_mean']:.1f} | "
                     f"{esteps} | {per_estep(r)} |")
    return "\n".join(lines)


#: Most runs one pos-induction folder may have (models x dims x seeds).
MAX_RUNS = 100_000
INT_COLUMNS = ("dim", "seed", "n_states", "n_symbols", "n_tokens", "n_iter", "e_steps")
FLOAT_COLUMNS = ("m1", "one_to_one", "v_measure", "train_nll", "fit_cpu_s", "fit_wall_s")


def check_resume(out: Path, s: PosSettings, store, report_only: bool = False) -> Optional[PosSettings]:
    """Refuse (:class:`~.runner.ResultFileError`) a folder whose runs were made with other result
    settings (:data:`RESUME_KEYS`; ``sparsity`` and ``kappa`` only where both the folder and the command
    have models that use them; the settings file keeps the folder's value, :func:`record_settings`), whose
    settings file is missing, damaged or edited by hand.  Returns the folder's recorded settings (None for
    a new folder); ``report_only``: they are not compared with the command's (the report is rebuilt from
    what the folder holds)."""
    from .runner import ResultFileError, read_settings_file, settings_differences
    path = out / "pos_induction_settings.json"

    def build(d: dict) -> PosSettings:
        if "data_fingerprint" not in d:
            raise ResultFileError(path, "was written before result folders recorded their data's content "
                                        "(size and SHA-256): the data cannot be checked against it; use another "
                                        "--out folder")
        return PosSettings.from_dict(d)
    try:
        found = read_settings_file(path, build, accepted=PosSettings.accepted_ids)
    except ResultFileError as e:
        if e.reason.startswith("is not a settings file") and store.rows:
            raise ResultFileError(path, "was written before result folders recorded their data's content "
                                        "(no settings_id): use another --out folder") from None
        raise
    if found is None:
        if store.rows:
            raise ResultFileError(store.path, f"holds {len(store.rows)} runs but {path.name} is missing: which "
                                              "settings made them cannot be checked; use another --out folder")
        return None
    if report_only:
        return found[0]
    # a setting only some models use is compared where both the folder (its recorded models and the
    # models of its rows) and the command have such models; where only the folder has, the settings
    # file written next keeps the folder's value (record_settings), so a later run that uses it again
    # is compared with the value its rows were made with
    held = folder_models(found[0], store)
    old, new = found[0].result_settings(held), s.result_settings()
    for key in MODEL_KEYS:
        if (key in old) != (key in new):
            old.pop(key, None)
            new.pop(key, None)
    diff = settings_differences(old, new)
    if diff:
        raise ResultFileError(out, "holds runs made with other settings: " + "; ".join(diff)
                              + "; use another --out folder (or the settings it was made with)")
    return found[0]


def folder_models(recorded: PosSettings, store) -> Tuple[str, ...]:
    """The models a folder holds runs of: those its settings file records and those of its rows."""
    have = set(recorded.models) | {str(r.get("model")) for r in store.rows}
    return tuple(m for m in MODELS if m in have) + tuple(sorted(have - set(MODELS)))


def record_settings(s: PosSettings, recorded: Optional[PosSettings], store) -> PosSettings:
    """What the settings file of a folder records after a run of ``s``: every model it holds runs of,
    and the folder's value of each setting only some models use where ``s``'s models use none of it
    (so the folder's rows stay checked against the settings that made them)."""
    from dataclasses import replace
    if recorded is None:
        return s
    held = folder_models(recorded, store)
    for key, uses in MODEL_KEYS.items():
        if not any(uses(m) for m in s.models) and any(uses(m) for m in held):
            s = replace(s, **{key: getattr(recorded, key)})
    models = set(held) | set(s.models)
    return replace(s, models=tuple(m for m in MODELS if m in models) + tuple(sorted(models - set(MODELS))))


def run_pos_induction(s: PosSettings, out, *, jobs: int = 1, executor: str = "thread", run: bool = True,
                      quiet: bool = False) -> int:
    """Run (or resume) the experiment into ``out``; returns an exit code.  Bad data, a folder that holds
    other settings' runs or damaged files, or another sweep using it raise
    :class:`~densehmm_core.commandline.UserError` (the command line: one line, exit 2)."""
    from dataclasses import replace

    from .. import fileio
    from .runner import FolderBusyError, FolderLock, ResultFileError, file_fingerprint
    runs = sum(len(s.model_dims(m)) for m in s.models) * s.seeds
    if runs > MAX_RUNS:
        raise UserError(f"too large: {runs} runs (models x dims x seeds), more than the {MAX_RUNS} one folder "
                        "may have")
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        if run:   # --report-only reads the folder's rows only (its data may be elsewhere by now)
            s = replace(s, data_fingerprint=file_fingerprint(s.data),
                        extra_fingerprints=tuple(file_fingerprint(f) for f in s.extra))
    except OSError as e:
        raise UserError(f"{e.filename or out}: {e.strerror or e}") from None
    try:
        with FolderLock(out):
            return _run_locked(s, out, jobs=jobs, executor=executor, run=run, quiet=quiet)
    except (FolderBusyError, ResultFileError, fileio.FileWriteError) as exc:
        raise UserError(str(exc)) from None


def _run_locked(s: PosSettings, out: Path, *, jobs: int, executor: str, run: bool, quiet: bool) -> int:

    from .factorization import _atomic_text
    from .runner import ResultStore, column_types, run_tasks
    say = (lambda x: None) if quiet else (lambda x: print(x, flush=True))
    types = column_types(INT_COLUMNS, FLOAT_COLUMNS)
    store = ResultStore(out / "pos_induction_runs.csv", COLUMNS, renames={"nll_per_token": "train_nll"},
                        key=KEY, types=types)
    recorded = check_resume(out, s, store, report_only=not run)
    if not run and recorded is not None:
        s = recorded   # --report-only: the folder's own settings (its file is kept as it is)
    if not run:        # nothing runs: the report needs the rows only (not the data, not the memory)
        return _report(out, store, say)
    try:
        corpus = _load(s, lowercase=True)
    except Exception as exc:  # noqa: BLE001 - one clean line
        raise UserError(f"cannot read {s.data}: {exc}") from None
    from ..modelfile.safety import memory_budget
    from .comparison import run_memory
    n = s.n_states or corpus.n_tags
    lengths = [len(x) for x in corpus.sequences]
    worst = max(run_memory(n, n if model in FULL_MODELS else dim,        # full logits: l = n
                           "dense" if model.startswith("dense") or model == "cooc-em" else "standard",
                           corpus.n_symbols, lengths, cooc_matrices=2)  # scores tags: no co-occurrence MAD
                for model in s.models for dim in s.model_dims(model))
    if worst * max(1, jobs) > memory_budget():
        raise UserError(f"too large: the largest run (n={n}, m={corpus.n_symbols}, l up to "
                        f"{max(max(s.dims), 1)}) needs about {worst * max(1, jobs) / 1e9:.3g} GB with "
                        f"{max(1, jobs)} jobs, more than the {memory_budget() / 1e9:.3g} GB allowed (half this "
                        "machine's memory; set DENSEHMM_MAX_MODEL_BYTES to change it)")
    say(f"pos-induction: {corpus.n_sequences} sentences, {corpus.n_tokens} words, m = {corpus.n_symbols} "
        f"lower-cased word types (the feature models read them as written), {corpus.n_tags} gold tags, "
        f"from {s.data}")
    kept = record_settings(s, recorded, store)
    _atomic_text(out / "pos_induction_settings.json",
                 json.dumps({**kept.to_dict(), "settings_id": kept.settings_id}, indent=2) + "\n")
    code = 0
    if run:
        failed = out / "pos_induction_failed.csv"
        report = run_tasks(make_tasks(s), store, KEY, jobs=jobs, executor=executor,
                           import_tf=any(not m.startswith("baum-welch") for m in s.models),
                           describe=describe, out=say, error_log=out / "pos_induction_errors.log",
                           failed_store=ResultStore(failed, KEY + ("status", "error")))
        code = 0 if report.ok else 1
    return max(code, _report(out, store, say))


def _report(out: Path, store, say) -> int:
    """The summary CSV and the table of the finished runs in ``out`` (rebuilt from its rows)."""
    from .factorization import _atomic_text
    from .runner import ResultStore, remove_result_file
    summary = summarize(store.rows)
    path = out / "pos_induction_summary.csv"
    remove_result_file(path)
    if summary:
        ResultStore(path, list(summary[0].keys())).add(summary)
    table = format_table(summary)
    _atomic_text(out / "pos_induction_table.md", table + "\n")
    say(table)
    return 0

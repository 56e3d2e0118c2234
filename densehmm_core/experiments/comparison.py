"""Model comparison of the paper's Section 5: DenseHMM-EM, DenseHMM-direct, standard HMM
and the "fair" standard HMM on synthetic, protein, MedPost and Penn Treebank data.

One runner task = one ``(dataset, n, l, repetition, model)``; it rebuilds its data
(synthetic: a fresh Dirichlet(0.1) HMM and its samples; real data: a seeded
50:50 shuffle split of the preprocessed corpus), fits the model and returns one
CSV row with every metric, seed and runtime.  All four models of one repetition
see the same data (same seeds).

Metrics on the test data
------------------------
``mad``
    Co-occurrence MAD between the model's analytic Omega (``B^T diag(pi) A B``,
    ``pi`` stationary) and the ground truth Omega: the analytic Omega of the true
    HMM for synthetic data, the empirical Omega of the test sequences otherwise.
``mad_sampled``
    Same, but the model's Omega is counted on sequences sampled from the model
    (as many and as long as the test sequences).
``mad_paper``
    What the paper's code plotted: ``mad`` (analytic) for DenseHMM-direct and
    ``mad_sampled`` for the three EM-trained models.
``test_nll``
    ``-log P(test) / number of test tokens`` (``train_nll``: the same on the training data).
``test_paper_nll``
    ``-log P(test) / (number of test sequences x longest test length)`` (the paper).

Runs CSVs written before these names (``nll_per_token``, ``nll_paper``,
``train_nll_per_token``) are read with the columns renamed (:data:`OLD_COLUMNS`).

``dense-direct-gt`` (synthetic only) is DenseHMM-direct trained on the *true*
analytic Omega instead of the training sequences' counts -- what the paper's
public code did on synthetic data (``fit_coocs(..., gt_AB)``).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple
from typing import TYPE_CHECKING, Union

import numpy as np

from ..commandline import UserError
from ..grid import PAPER_GRID
from ..maths import median_quartiles
from .names import EXTRA_MODELS, MODEL_LABEL, MODELS, SWEEP_MODELS  # noqa: F401 - the model names (names.py)

if TYPE_CHECKING:
    from .dask_executor import DaskTarget

__all__ = ["ComparisonSettings", "PAPER_GRID", "MODELS", "run_one", "make_tasks", "summarize",
           "format_tables", "run_comparison", "COLUMNS"]

QUICK_GRID: Tuple[Tuple[int, int], ...] = ((3, 1), (3, 2))
DATA_PRESETS = {"protein": "paper_protein", "medpost": "paper_medpost", "penn": "reference_code_penn"}
#: ``"sweep"``: any data file, loaded once by the caller and given to the tasks as ``shared``.
_DATASET_CODE = {"synthetic": 1, "protein": 2, "medpost": 3, "penn": 4, "sweep": 5}
_MODEL_CODE = {"dense-em": 1, "dense-direct": 2, "standard-fair": 3, "standard": 4, "dense-direct-gt": 5,
               "dense-cooc": 2}
_COOC_MODELS = ("dense-direct", "dense-direct-gt", "dense-cooc")

KEY = ("dataset", "settings_id", "n", "l", "rep", "model")
#: Columns of runs CSVs written before the normalised NLL had one name (read with today's names).
OLD_COLUMNS = {"nll_per_token": "test_nll", "nll_paper": "test_paper_nll", "train_nll_per_token": "train_nll"}

COLUMNS = list(KEY) + [
    "status", "n_states", "n_symbols", "n_parameters", "data_seed", "model_seed", "sample_seed",
    "n_train_seqs", "n_test_seqs", "n_train_tokens", "n_test_tokens",
    "mad", "mad_sampled", "mad_paper", "mad_train_omega",
    "test_nll", "test_paper_nll", "train_nll", "test_ll", "train_ll",
    "iterations", "stop_reason", "fit_seconds", "eval_seconds", "task_seconds", "dense_preset",
    "model_sha256",
]
#: How every cell of a runs CSV must parse (a resume refuses a row that does not).
INT_COLUMNS = ("n", "l", "rep", "n_states", "n_symbols", "n_parameters", "data_seed", "model_seed", "sample_seed",
               "n_train_seqs", "n_test_seqs", "n_train_tokens", "n_test_tokens", "iterations")
FLOAT_COLUMNS = ("mad", "mad_sampled", "mad_paper", "mad_train_omega", "test_nll", "test_paper_nll", "train_nll",
                 "test_ll", "train_ll", "fit_seconds", "eval_seconds", "task_seconds")
#: Floats of the engine's largest forward-backward chunk (``ArrayEngine``'s default ``chunk_elements``).
#: Most runs one sweep may have (grid pairs x repeats x models): far above the paper's (500).
MAX_RUNS = 100_000


@dataclass(frozen=True)
class ComparisonSettings:
    """Settings of one model-comparison sweep (defaults: the paper's)."""

    dataset: str
    data: Optional[str] = None
    grid: Tuple[Tuple[int, int], ...] = PAPER_GRID
    repeats: int = 10
    models: Tuple[str, ...] = MODELS
    seed: int = 0
    dense_preset: str = "paper"
    em_iter: int = 40            # DenseHMM-EM: EM iterations
    em_steps: int = 25           # DenseHMM-EM: Adam steps per M-step
    cooc_steps: Optional[int] = None  # DenseHMM-direct: None = the preset's (paper: 10,000)
    bw_iter: int = 40            # standard HMMs: Baum-Welch iterations
    bw_tol: float = 1e-2         # standard HMMs: hmmlearn's default tolerance (the reference's), an
    #                              absolute gain of the log-likelihood; see run_one for how it is applied
    test_fraction: float = 0.5
    max_sequences: Optional[int] = None
    # synthetic data
    alpha: float = 0.1
    n_train_seqs: int = 10
    n_test_seqs: int = 10
    seq_len: int = 200
    # "sweep": how the data file was read (format, preset and every other load/preprocess option)
    data_options: Optional[dict] = None
    # the data file's content, "SIZE:SHA256" (runner.file_fingerprint): what a resume checks
    data_fingerprint: Optional[str] = None

    @classmethod
    def full(cls, dataset: str, data: Optional[str] = None, **kw) -> "ComparisonSettings":
        if dataset not in _DATASET_CODE:
            raise ValueError(f"unknown dataset {dataset!r}")
        models = MODELS + (EXTRA_MODELS if dataset == "synthetic" else ())
        base: Dict[str, Any] = dict(dataset=dataset, data=None if data is None else str(data), models=models)
        base.update(kw)
        s = cls(**base)
        s.validate()
        return s

    @classmethod
    def quick(cls, dataset: str, data: Optional[str] = None, **kw) -> "ComparisonSettings":
        base: Dict[str, Any] = dict(grid=QUICK_GRID, repeats=1, em_iter=3, em_steps=10, cooc_steps=300, bw_iter=5)
        if dataset != "synthetic":
            base["max_sequences"] = 60
        base.update(kw)
        return cls.full(dataset, data, **base)

    def validate(self) -> None:
        bad = [m for m in self.models if m not in _MODEL_CODE]
        if bad:
            raise ValueError(f"unknown model(s) {bad}; choose from {list(_MODEL_CODE)}")
        if "dense-direct-gt" in self.models and self.dataset != "synthetic":
            raise ValueError("dense-direct-gt needs a ground-truth HMM: synthetic data only")
        if self.dataset != "synthetic" and not self.data:
            raise ValueError(f"{self.dataset} needs a data file")
        if self.dataset == "sweep" and "dense-direct-gt" in self.models:
            raise ValueError("dense-direct-gt needs a ground-truth HMM: synthetic data only")
        if self.dense_preset not in ("paper", "default"):
            raise ValueError("dense_preset must be 'paper' or 'default'")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["grid"] = [list(p) for p in self.grid]
        d["models"] = list(self.models)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ComparisonSettings":
        d = dict(d)
        d["grid"] = tuple(tuple(p) for p in d["grid"])
        d["models"] = tuple(d["models"])
        return cls(**d)

    def result_settings(self) -> dict:
        """Every setting that changes a run's result (not the grid, repeats or models: rows carry
        those), the data by its content (size and SHA-256) and never by its name or place."""
        d = self.to_dict()
        for k in ("grid", "repeats", "models"):
            d.pop(k)
        fingerprint = d.pop("data_fingerprint")
        if d["data"] is not None:
            d["data"] = fingerprint
        return d

    @property
    def settings_id(self) -> str:
        """Hash of :meth:`result_settings`: the key column that ties a row to its settings."""
        return hashlib.sha1(json.dumps(self.result_settings(), sort_keys=True).encode()).hexdigest()[:10]


# ------------------------------------------------------------------- seeds
def _int_seed(*parts: int) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def _seeds(s: ComparisonSettings, n: int, l: int, rep: int, model: str):
    code = _DATASET_CODE[s.dataset]
    data_seed = _int_seed(s.seed, code, n, l, rep)
    model_seed = _int_seed(s.seed, code, n, l, rep, 100 + _MODEL_CODE[model])
    sample_seed = _int_seed(s.seed, code, n, l, rep, 200 + _MODEL_CODE[model])
    return data_seed, model_seed, sample_seed


# -------------------------------------------------------------------- data
_CORPUS_CACHE: Dict[tuple, tuple] = {}


def _corpus(path: str, preset: str, max_sequences: Optional[int]):
    """(list of int64 arrays, n_symbols), preprocessed with the paper's preset; cached."""
    key = (os.path.abspath(path), preset, max_sequences)
    if key not in _CORPUS_CACHE:
        from ..data import load
        corpus = load(path, preset=preset)
        seqs = [np.asarray(x, dtype=np.int64) for x in corpus.sequences]
        m = getattr(corpus, "n_symbols", None)
        if m is None:
            m = len(corpus.vocabulary)
        if max_sequences is not None:
            seqs = seqs[:int(max_sequences)]
        _CORPUS_CACHE[key] = (seqs, int(m))
    return _CORPUS_CACHE[key]


def _split(seqs: List[np.ndarray], test_fraction: float, seed: int):
    # Not maths.split_indices: this split (test = the FIRST n_test of the permutation) is the one
    # the recorded results in docs/results were computed with; changing it would change them.
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(seqs))
    n_test = int(round(len(seqs) * test_fraction))
    n_test = min(max(n_test, 1), len(seqs) - 1)
    test = [seqs[i] for i in order[:n_test]]
    train = [seqs[i] for i in order[n_test:]]
    return train, test


def make_data(s: ComparisonSettings, n: int, l: int, rep: int, shared: Optional[dict] = None):
    """``(train, test, n_symbols, omega_gt, truth)`` of one repetition (``truth``: the true
    HMM parameters for synthetic data, else None).  ``shared``: the corpus of a ``"sweep"``
    (``{"sequences": [...], "n_symbols": m}``), read once by the caller."""
    from ..maths import analytic_cooc, empirical_cooc
    data_seed = _seeds(s, n, l, rep, "standard")[0]
    if s.dataset == "synthetic":
        from ..engine.sampling import sample_sequences
        from ..synthetic import random_hmm
        rng = np.random.default_rng(data_seed)
        truth = random_hmm(n, n, s.alpha, int(rng.integers(2 ** 63)))
        m = n

        def draw(k):
            # like the reference code: redraw (up to 100 times) until every symbol occurs
            best = None
            for _ in range(100):
                seqs, _states = sample_sequences(*truth, k, s.seq_len, int(rng.integers(2 ** 63)))
                best = seqs
                if len(np.unique(np.concatenate(seqs))) == m:
                    break
            return best

        train, test = draw(s.n_train_seqs), draw(s.n_test_seqs)
        omega_gt = analytic_cooc(None, truth.transmat, truth.emissionprob)
        return train, test, m, omega_gt, truth
    if s.dataset == "sweep":
        if shared is None:
            raise ValueError("a sweep task needs its corpus (shared=...)")
        seqs, m = list(shared["sequences"]), int(shared["n_symbols"])
        if s.max_sequences is not None:
            seqs = seqs[:int(s.max_sequences)]
    else:
        seqs, m = _corpus(s.data, DATA_PRESETS[s.dataset], s.max_sequences)
    train, test = _split(seqs, s.test_fraction, data_seed)
    return train, test, m, empirical_cooc(test, m), None


# ------------------------------------------------------------------- models
def model_config(s: ComparisonSettings, model: str, n: int, l: int, m: int, seed: int) -> Tuple[str, dict]:
    """``(kind, config)`` of one compared model, for :func:`densehmm_core.model_from_config`."""
    if model in ("standard", "standard-fair"):
        from ..standard import n_fair
        k = n if model == "standard" else n_fair(n, m, l)
        return "standard", {"n_states": k, "n_symbols": m, "n_iter": s.bw_iter, "tol": s.bw_tol, "seed": seed,
                            "init_method": "random"}
    cfg = {"n_states": n, "dim": l, "n_symbols": m, "seed": seed, "preset": s.dense_preset, "device": "cpu"}
    if model == "dense-em":
        return "dense", dict(cfg, fit_method="em", n_iter=s.em_iter, mstep_steps=s.em_steps)
    return "dense", dict(cfg, fit_method="cooc", cooc_steps=s.cooc_steps)


def _fit_reference_rule(s: ComparisonSettings, model: str, n: int, l: int, m: int, seed: int, train):
    """Baum-Welch stopped by the reference's rule -- hmmlearn's ``ConvergenceMonitor``: iteration k+1
    computes the log-likelihood ``L_k`` of the current parameters (its E-step), runs the M-step and then
    stops when the absolute gain ``L_k - L_(k-1)`` is below ``bw_tol`` (a loss counts too), returning the
    parameters of k+1 M-steps -- while the package's one EM rule is relative: fit without early stopping,
    find that k in the history (``history_[k]``: the parameters after k M-steps) and refit the same
    seeded model for exactly k+1 iterations (the first iterations of a seeded fit are the same bits).
    (Before this was exact, the refit ran k iterations: one M-step fewer than hmmlearn.)"""
    from ..registry import model_from_config
    from .cancel import fit_cancellable
    kind, cfg = model_config(s, model, n, l, m, seed)
    est = fit_cancellable(model_from_config(kind, dict(cfg, tol=0.0)), train)
    lls = [r["train_ll"] for r in est.history_]
    steps = len(lls) - 1                # M-steps of the full fit (hmmlearn computes L_0 .. L_(steps-1))
    stop = next((k for k in range(1, steps) if lls[k] - lls[k - 1] < s.bw_tol), None)
    if stop is None:
        return est
    if stop + 1 < steps:
        est = fit_cancellable(model_from_config(kind, dict(cfg, tol=0.0, n_iter=stop + 1)), train)
    est.stop_reason_ = "converged"
    return est


def run_one(dataset: str, n: int, l: int, rep: int, model: str, settings: dict,
            shared: Optional[dict] = None, save_dir: Optional[str] = None) -> List[dict]:
    """Fit and evaluate one model of one repetition; returns one row.

    ``shared``: the corpus of a ``"sweep"`` (see :func:`make_data`).  ``save_dir``: also
    save the fitted model to ``save_dir/<dataset>_n<n>_l<l>_rep<rep>_<model>.h5``.
    """
    from ..events import TrainingDiverged
    from ..maths import analytic_cooc, empirical_cooc
    from ..metrics import cooc_mad
    from ..registry import model_from_config
    from .cancel import fit_cancellable
    t0 = time.perf_counter()
    s = ComparisonSettings.from_dict(settings)
    data_seed, model_seed, sample_seed = _seeds(s, n, l, rep, model)
    train, test, m, omega_gt, truth = make_data(s, n, l, rep, shared)
    est = model_from_config(*model_config(s, model, n, l, m, model_seed))
    status = "ok"
    t1 = time.perf_counter()
    try:
        if model == "dense-direct-gt":
            fit_cancellable(est, analytic_cooc(None, truth.transmat, truth.emissionprob), method="fit_cooc")
        elif est.kind == "standard" and s.bw_tol > 0:
            est = _fit_reference_rule(s, model, n, l, m, model_seed, train)
        else:
            fit_cancellable(est, train)     # an interrupted sweep (thread executor) stops it
    except TrainingDiverged as exc:
        status = f"diverged: {exc}"
    fit_seconds = time.perf_counter() - t1
    t2 = time.perf_counter()
    test_lls = est.score_per_sequence(test)
    train_ll = float(est.score(train))
    test_ll = float(np.sum(test_lls))
    n_test_tokens = int(sum(len(x) for x in test))
    n_train_tokens = int(sum(len(x) for x in train))
    omega_model = analytic_cooc(None, est.transmat_, est.emissionprob_)
    mad = cooc_mad(omega_model, omega_gt)
    samples, _ = est.sample(len(test), [len(x) for x in test], seed=sample_seed)
    mad_sampled = cooc_mad(empirical_cooc(samples, m), omega_gt)
    mad_paper = mad if model in _COOC_MODELS else mad_sampled
    hist = getattr(est, "history_", []) or []
    row = {
        "dataset": dataset, "settings_id": s.settings_id, "n": n, "l": l, "rep": rep, "model": model,
        "status": status, "n_states": est.n_states, "n_symbols": m,
        "n_parameters": int(est.n_parameters), "data_seed": data_seed, "model_seed": model_seed,
        "sample_seed": sample_seed, "n_train_seqs": len(train), "n_test_seqs": len(test),
        "n_train_tokens": n_train_tokens, "n_test_tokens": n_test_tokens,
        "mad": mad, "mad_sampled": mad_sampled, "mad_paper": mad_paper,
        "mad_train_omega": cooc_mad(empirical_cooc(train, m), omega_gt),
        "test_nll": -test_ll / n_test_tokens,
        "test_paper_nll": -test_ll / (len(test) * max(len(x) for x in test)),
        "train_nll": -train_ll / n_train_tokens,
        "test_ll": test_ll, "train_ll": train_ll,
        "iterations": int(hist[-1]["step"]) if hist else 0,
        "stop_reason": getattr(est, "stop_reason_", ""),
        "fit_seconds": round(fit_seconds, 4),
        "eval_seconds": round(time.perf_counter() - t2, 4),
        "task_seconds": round(time.perf_counter() - t0, 4),
        "dense_preset": s.dense_preset if model.startswith("dense") else "",
    }
    if save_dir:
        from ..modelfile import save_model
        from .runner import file_fingerprint
        name = model_file_name(dataset, n, l, rep, model)
        path = os.path.join(save_dir, name + ".h5")
        if os.path.lexists(path):  # left by a run that ended before its row was written
            os.unlink(path)
        save_model(path, est, name=name, notes={"sweep": {"settings_id": s.settings_id, "dataset": dataset,
                                                           "n": n, "l": l, "rep": rep, "model": model}})
        row["model_sha256"] = file_fingerprint(path).split(":")[1]
    return [row]


def model_file_name(dataset: str, n, l, rep, model: str) -> str:
    """The name (and file name, plus ``.h5``) of a run's model in ``DIR/models/``."""
    return f"{dataset}_n{n}_l{l}_rep{rep}_{model}"


def _cost(s: ComparisonSettings, n: int, l: int, model: str) -> float:
    tokens = 4000.0 if s.dataset == "synthetic" else 100000.0
    if model in ("standard", "standard-fair"):
        k = n if model == "standard" else max(n, int(np.sqrt(l * (3 * n + 20))))
        return s.bw_iter * tokens * k * k * 1e-7 + 0.3
    if model == "dense-em":
        return s.em_iter * tokens * n * n * 1e-7 + 2.0
    return 2.0


def make_tasks(s: ComparisonSettings, save_dir: Optional[str] = None):
    from .runner import Task
    sd = s.to_dict()
    extra = {} if not save_dir else {"save_dir": str(save_dir)}
    tasks = []
    for (n, l) in s.grid:
        for rep in range(s.repeats):
            for model in s.models:
                key = {"dataset": s.dataset, "settings_id": s.settings_id, "n": n, "l": l,
                       "rep": rep, "model": model}
                tasks.append(Task(key=key, func="densehmm_core.experiments.comparison:run_one",
                                  kwargs={"dataset": s.dataset, "n": n, "l": l, "rep": rep,
                                          "model": model, "settings": sd, **extra},
                                  label=f"{s.dataset} n={n} l={l} rep={rep} {model}",
                                  cost=_cost(s, n, l, model)))
    # repetition-major (an interrupted sweep leaves complete repetitions of every model and
    # pair), expensive first within a repetition (better packing on few cores)
    tasks.sort(key=lambda t: (t.key["rep"], -t.cost))
    return tasks


def describe_rows(rows: Sequence[dict]) -> str:
    r = rows[0]
    extra = "" if r["status"] == "ok" else f"  [{r['status'][:60]}]"
    return (f"mad {float(r['mad']):.5f}  mad_paper {float(r['mad_paper']):.5f}  "
            f"test nll {float(r['test_nll']):.4f}  fit {float(r['fit_seconds']):.1f}s{extra}")


# ------------------------------------------------------------------ summary
SUMMARY_METRICS = ("mad", "mad_paper", "mad_sampled", "test_nll", "test_paper_nll", "fit_seconds")


def summarize(rows: Sequence[dict]) -> List[dict]:
    """Median and 25/75 percentiles per (n, l, model)."""
    by: Dict[tuple, List[dict]] = {}
    for r in rows:
        by.setdefault((int(r["n"]), int(r["l"]), r["model"]), []).append(r)
    order = {m: i for i, m in enumerate(MODELS + EXTRA_MODELS + SWEEP_MODELS)}
    out = []
    for (n, l, model) in sorted(by, key=lambda k: (k[0], k[1], order.get(k[2], 99))):
        rs = by[(n, l, model)]
        rec = {"n": n, "l": l, "model": model, "runs": len(rs),
               "n_states": ",".join(sorted({str(r["n_states"]) for r in rs}, key=int)),
               "diverged": sum(1 for r in rs if not str(r["status"]).startswith("ok"))}
        for k in SUMMARY_METRICS:
            med, a, b = median_quartiles([float(r[k]) for r in rs])
            rec[f"{k}_median"], rec[f"{k}_q25"], rec[f"{k}_q75"] = med, a, b
        out.append(rec)
    return out


def format_tables(summary: Sequence[dict], models: Sequence[str]) -> str:
    """Markdown: MAD x 1e3 (analytic), MAD x 1e3 (paper's variant) and NLL per token tables."""
    def table(metric: str, scale: float, digits: int, title: str) -> str:
        cells: Dict[tuple, Dict[str, dict]] = {}
        for s in summary:
            cells.setdefault((s["n"], s["l"]), {})[s["model"]] = s
        ms = [m for m in models if any(m in c for c in cells.values())]
        head = "| n | l | " + " | ".join(ms) + " |"
        lines = [f"**{title}** (median (25/75 percentile))", "", head,
                 "|---|---|" + "---|" * len(ms)]
        for (n, l) in sorted(cells):
            parts = [str(n), str(l)]
            for m in ms:
                c = cells[(n, l)].get(m)
                if c is None:
                    parts.append("-")
                    continue
                f = f"{{:.{digits}f}}"
                parts.append(f"{f.format(c[metric + '_median'] * scale)} "
                             f"({f.format(c[metric + '_q25'] * scale)}/{f.format(c[metric + '_q75'] * scale)})"
                             + (f" [n={c['n_states']}]" if m == "standard-fair" else ""))
            lines.append("| " + " | ".join(parts) + " |")
        return "\n".join(lines)
    return "\n\n".join([
        table("mad", 1e3, 3, "Co-occurrence MAD x 1000, model's analytic Omega"),
        table("mad_paper", 1e3, 3, "Co-occurrence MAD x 1000, the paper code's variant "
                                    "(sampled Omega for EM-trained models, analytic for DenseHMM-direct)"),
        table("test_nll", 1.0, 4, "Test NLL per token"),
        table("test_paper_nll", 1.0, 4, "Test NLL / (sequences x longest length) (the paper's normalisation)"),
        table("fit_seconds", 1.0, 2, "Fit time per model (s)"),
    ])


def write_outputs(rows: Sequence[dict], s: ComparisonSettings, out) -> dict:
    from .factorization import _atomic_text
    from .figures import comparison_figure
    from .runner import ResultStore, remove_result_file
    out = Path(out)
    name = s.dataset
    summary = summarize(rows)
    path = out / f"{name}_summary.csv"
    remove_result_file(path)
    ResultStore(path, list(summary[0].keys()) if summary else []).add(summary)
    tables = format_tables(summary, s.models)
    _atomic_text(out / f"{name}_tables.md", tables + "\n")
    figs = [
        comparison_figure(rows, "mad", out / f"{name}_mad.png",
                          title=f"{name}: co-occurrence MAD (model's analytic Omega)",
                          ylabel="MAD", logy=True),
        comparison_figure(rows, "mad_paper", out / f"{name}_mad_paper.png",
                          title=f"{name}: co-occurrence MAD (paper code's variant)",
                          ylabel="MAD", logy=True),
        comparison_figure(rows, "test_nll", out / f"{name}_nll.png",
                          title=f"{name}: test NLL per token", ylabel="NLL / token"),
    ]
    return {"summary": summary, "tables": tables, "figures": figs}


# ------------------------------------------------------------------ resume
def check_resume(out: Path, s: "ComparisonSettings", store) -> None:
    """Refuse (:class:`~.runner.ResultFileError`, one line) a folder whose runs were made with
    other result settings, whose settings file is missing, damaged or edited by hand, or whose
    rows belong to other settings.  Grid, repeats and models may change (rows carry them)."""
    from .runner import ResultFileError, read_settings_file, settings_differences
    path = out / f"{s.dataset}_settings.json"

    def build(d: dict) -> ComparisonSettings:
        if d.get("data") is not None and "data_fingerprint" not in d:
            raise ResultFileError(path, "was written before result folders recorded their data's content "
                                        "(size and SHA-256): DATA cannot be checked against it; use another "
                                        "--out folder")
        old = ComparisonSettings.from_dict(d)
        old.validate()
        return old
    found = read_settings_file(path, build)
    if found is None:
        if store.rows:
            raise ResultFileError(store.path, f"holds {len(store.rows)} runs but {path.name} is missing: which "
                                              "settings made them cannot be checked; use another --out folder")
        return
    old, _ = found
    if old.dataset != s.dataset:
        raise ResultFileError(path, f"is the settings file of a {old.dataset} sweep, not of {s.dataset}")
    diff = settings_differences(old.result_settings(), s.result_settings())
    if diff:
        raise ResultFileError(out, "holds runs made with other settings: " + "; ".join(diff)
                              + "; use another --out folder (or the settings it was made with)")
    sid = s.settings_id
    for row, line in zip(store.rows, store.lines):
        if row.get("dataset") != s.dataset or row.get("settings_id") != sid:
            raise ResultFileError(store.path, f"a run of other settings (dataset {row.get('dataset')!r}, "
                                              f"settings_id {row.get('settings_id')!r}; {path.name} says "
                                              f"{s.dataset!r}, {sid!r})", line)


def check_model_files(save_dir: Path, store) -> int:
    """Every finished row that recorded a model file must find it unchanged in ``save_dir``
    (its SHA-256 in the row's ``model_sha256``); returns how many rows have no model file."""
    from .runner import ResultFileError, file_fingerprint
    without = 0
    for row, line in zip(store.rows, store.lines):
        want = row.get("model_sha256", "")
        if not want:
            without += 1
            continue
        path = save_dir / (model_file_name(row["dataset"], row["n"], row["l"], row["rep"], row["model"]) + ".h5")
        if os.path.islink(path) or (os.path.lexists(path) and not path.is_file()):
            raise ResultFileError(path, "is not a plain file: refused")
        if not path.exists():
            raise ResultFileError(path, f"is missing: line {line} of {store.path.name} says the run saved it")
        if file_fingerprint(path).split(":")[1] != want:
            raise ResultFileError(path, f"does not match line {line} of {store.path.name} (the file changed "
                                        "after the run saved it)")
    return without


#: m x m float64 arrays a comparison run holds at its peak: the test set's co-occurrence matrix (the
#: reference), the model's, a sampled one, and ``cooc_mad``'s difference and absolute value (measured
#: with tracemalloc and peak RSS on run_one, m = 1000-3000: 5.0 for standard and dense-em, 5.14 for
#: dense-cooc; 6 bounds them; tests/test_sweep_audit.py)
RUN_COOC_MATRICES = 6


def run_memory(n: int, l: int, model: str, m: int, lengths: Sequence[int],
               cooc_matrices: float = RUN_COOC_MATRICES) -> float:
    """Bytes one run needs at most, about: what ``train`` counts for its E-step
    (:func:`densehmm_core.memory.inference_bytes` without the interpreter's base: the model's matrices,
    the data, the largest chunk's forward-backward buffers, a sequence longer than one chunk being a
    chunk of its own), ``cooc_matrices`` m x m float64 arrays (:data:`RUN_COOC_MATRICES`) and, for a
    DenseHMM, the embeddings with their Adam state."""
    from ..memory import BASE_BYTES, inference_bytes
    k = n
    if model == "standard-fair":
        from ..standard import n_fair
        k = int(n_fair(n, m, l))
    nbytes = float(inference_bytes(lengths, k, m) - BASE_BYTES) + 8.0 * cooc_matrices * m * m
    if model.startswith("dense"):
        nbytes += 8.0 * 4.0 * (3 * n + m + 1) * l
    return nbytes


def check_size(s: "ComparisonSettings", m: int, lengths: Sequence[int], jobs: int) -> None:
    """Refuse a sweep that cannot fit (ValueError, one line) before anything is allocated: more
    than :data:`MAX_RUNS` runs, or ``jobs`` of its largest run (:func:`run_memory` of the sequences'
    ``lengths``) above the memory budget."""
    from ..modelfile.safety import memory_budget
    runs = len(s.grid) * s.repeats * len(s.models)
    if runs > MAX_RUNS:
        raise ValueError(f"too large: {len(s.grid)} (n, l) pairs x {s.repeats} repeats x {len(s.models)} models "
                         f"= {runs} runs, more than the {MAX_RUNS} one sweep may have")
    worst, what = 0.0, ""
    for (n, l) in s.grid:
        for model in s.models:
            b = run_memory(n, l, model, m, lengths)
            if b > worst:
                worst, what = b, f"{model} with n={n}, l={l}, m={m}"
    budget = memory_budget()
    need = worst * max(1, min(jobs, runs))
    if need > budget:
        par = f" x {min(jobs, runs)} parallel jobs" if min(jobs, runs) > 1 else ""
        raise ValueError(f"too large: a run of {what} needs about {worst / 1e9:.3g} GB{par}, more than the "
                         f"{budget / 1e9:.3g} GB allowed (half this machine's memory; set "
                         "DENSEHMM_MAX_MODEL_BYTES to change it)")


def run_comparison(settings: ComparisonSettings, out, *, jobs: int = 1, executor: str = "thread",
                   quiet: bool = False, run: bool = True, scheduler: Union[None, str, "DaskTarget"] = None,
                   shared: Optional[dict] = None, save_models: bool = False) -> int:
    """Run (or resume) one comparison sweep into ``out``; returns an exit code (0, 1: runs failed,
    130: interrupted).  A problem the user can fix raises :class:`~densehmm_core.commandline.UserError`
    (the command line prints it as its other errors: one line, exit 2).

    ``executor``: ``"thread"``, ``"process"`` or ``"dask"`` (``scheduler``: a
    :class:`~.dask_executor.DaskTarget` or an existing Dask scheduler's address; none starts a
    local cluster of ``jobs`` workers).  ``shared``: the
    corpus of a ``"sweep"`` (``{"sequences", "n_symbols"}``), sent to the workers once.
    ``save_models``: every run also saves its model to ``out/models/`` (with a remote
    cluster that folder must be on storage the workers share).  Failed runs are listed in
    ``<name>_failed.csv`` (key, error) and retried by a rerun.

    The folder is locked for the whole call (:class:`~.runner.FolderLock`: a second sweep on it
    gets a UserError naming the first); a folder whose runs, settings or model files do
    not fit these settings is refused (a UserError naming file, line and reason) before
    anything is computed.  docs/FILE_FORMAT.md, "Result folders", lists what each file promises.
    """
    from .. import fileio
    from .runner import FolderBusyError, FolderLock, ResultFileError, file_fingerprint
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create the output folder {out}: {e.strerror or e}") from None
    if settings.data is not None and settings.data_fingerprint is None:
        try:
            settings = replace(settings, data_fingerprint=file_fingerprint(settings.data))
        except OSError as e:
            raise UserError(f"cannot read {settings.data}: {e.strerror or e}") from None
    try:
        with FolderLock(out):
            return _run_locked(settings, out, jobs=jobs, executor=executor, quiet=quiet, run=run,
                               scheduler=scheduler, shared=shared, save_models=save_models)
    except (FolderBusyError, ResultFileError, fileio.FileWriteError) as exc:
        raise UserError(str(exc)) from None


def _run_locked(settings: ComparisonSettings, out: Path, *, jobs, executor, quiet, run, scheduler, shared,
                save_models) -> int:
    from .factorization import _atomic_text
    from .runner import ResultFileError, ResultStore, column_types, format_seconds, remove_result_file, run_tasks
    name = settings.dataset
    say = (lambda x: None) if quiet else (lambda x: print(x, flush=True))
    types = column_types(INT_COLUMNS, FLOAT_COLUMNS)
    store = ResultStore(out / f"{name}_runs.csv", COLUMNS, renames=OLD_COLUMNS, key=KEY, types=types)
    check_resume(out, settings, store)
    save_dir = None
    if save_models:
        save_dir = out / "models"
        if save_dir.is_symlink() or (save_dir.exists() and not save_dir.is_dir()):
            raise ResultFileError(save_dir, "is not a folder (a link or a file): refused")
        save_dir.mkdir(exist_ok=True)
        save_dir = save_dir.resolve()
        if run:
            without = check_model_files(save_dir, store)
            if without:
                say(f"note: {without} finished runs have no model file (they ran without --save-models)")
    if settings.dataset == "sweep":
        if shared is None:
            raise ValueError("a sweep needs its corpus (shared=...)")
        seqs, m = shared["sequences"], int(shared["n_symbols"])
    elif settings.dataset == "synthetic":
        seqs, m = [], 0
    else:
        # fail early and clearly on a bad data file (in this process, before any worker starts)
        try:
            seqs, m = _corpus(settings.data, DATA_PRESETS[name], settings.max_sequences)
        except Exception as exc:  # noqa: BLE001 - reported as a clean error
            raise UserError(f"cannot read {settings.data}: {exc}") from None
        if len(seqs) < 2:
            raise UserError(f"{settings.data}: need at least 2 sequences, got {len(seqs)}")
        say(f"{name}: {len(seqs)} sequences, {sum(len(x) for x in seqs)} tokens, m = {m} "
            f"(preset {DATA_PRESETS[name]}) from {settings.data}")
    if settings.dataset == "synthetic":
        lengths = [settings.seq_len] * (settings.n_train_seqs + settings.n_test_seqs)
        m = max(n for n, _ in settings.grid)
    else:      # a sweep's runs read the first max_sequences of its corpus
        used = seqs if settings.max_sequences is None else seqs[:int(settings.max_sequences)]
        lengths = [len(x) for x in used]
    try:
        from .dask_executor import DaskTarget
        remote = executor == "dask" and DaskTarget.of(scheduler).address is not None
        check_size(settings, m, lengths, 1 if remote else jobs)  # a remote cluster: its own memory per worker
    except ValueError as exc:
        raise UserError(str(exc)) from None
    _atomic_text(out / f"{name}_settings.json",
                 json.dumps({**settings.to_dict(), "settings_id": settings.settings_id}, indent=2) + "\n")
    tasks = make_tasks(settings, save_dir=None if save_dir is None else str(save_dir))
    say(f"{name}: {len(tasks)} runs = {len(settings.grid)} (n, l) pairs x {settings.repeats} repeats x "
        f"{len(settings.models)} models; jobs={jobs}; results in {out}")
    if not run:
        tasks = []
        say(f"--report-only: {len(store.rows)} finished runs in {store.path}")
    failed_path = out / f"{name}_failed.csv"
    if run:
        remove_result_file(failed_path)  # the failures of this run only; a rerun retries the old ones
    rep = run_tasks(tasks, store, KEY, jobs=jobs, executor=executor,
                    import_tf=any(model.startswith("dense") for model in settings.models),
                    # only the co-occurrence fits use TensorFlow (model_config: every dense model but dense-em)
                    preload_tf=any(model.startswith("dense") and model != "dense-em" for model in settings.models),
                    describe=describe_rows, out=say, error_log=out / "errors.log",
                    scheduler=scheduler, shared=shared,
                    failed_store=ResultStore(failed_path, list(KEY) + ["status", "error"]))
    sid = settings.settings_id
    grid = set(settings.grid)
    rows = [r for r in store.rows if r.get("settings_id") == sid and r.get("dataset") == name
            and (int(r["n"]), int(r["l"])) in grid and r["model"] in settings.models
            and int(r["rep"]) < settings.repeats]
    if rows:
        res = write_outputs(rows, settings, out)
        say(res["tables"])
    say(f"done: {rep.done} run, {rep.skipped} skipped, {len(rep.failed)} failed in "
        f"{format_seconds(rep.seconds)} (sum of task times {format_seconds(rep.task_seconds)})")
    if rep.interrupted:
        return 130
    return 1 if rep.failed else 0

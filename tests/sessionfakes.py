"""Finished jobs without training, for the session tests and tests/benchmarks/bench_session.py.

A "fitted" model here is a real estimator of the core whose parameters were drawn at random
(seeded) and whose history is a made-up loss curve: saving and restoring it goes through
exactly the code a trained model goes through.
"""
from __future__ import annotations

from typing import Optional

import numpy as np


def fitted_model(kind: str = "standard", n: int = 4, m: int = 6, l: int = 3, steps: int = 30, seed: int = 0,
                 vocabulary: Optional[list] = None):
    """A StandardHMM (``kind="standard"``) or DenseHMM (``"dense"``, co-occurrence fit) with
    seeded random parameters, ``steps + 1`` history records and ``vocabulary`` (default: none)."""
    rng = np.random.default_rng(seed)
    if kind == "dense":
        from densehmm_core.dense import DenseHMM
        model = DenseHMM(n, l, fit_method="cooc", seed=seed)
        model.init_embeddings(seed=seed, n_symbols=m)
        phase = "cooc"
    else:
        from densehmm_core.standard import StandardHMM
        from densehmm_core.synthetic import random_hmm
        model = StandardHMM(n, n_iter=steps, seed=seed)
        p = random_hmm(n, m, alpha=1.0, seed=seed)
        model.set_arrays({"params": {"startprob": p.startprob, "transmat": p.transmat,
                                     "emissionprob": p.emissionprob}})
        phase = "baum-welch"
    loss = 3.0 + rng.random()
    history = []
    for step in range(steps + 1):
        loss *= 0.97
        history.append({"step": step, "loss": loss, "train_nll": loss, "test_nll": loss * 1.05,
                        "mad": 0.01 / (step + 1), "elapsed": 0.1 * (step + 1), "phase": phase})
    model.history_ = history
    if vocabulary is not None:
        model.vocabulary = list(vocabulary)
    return model


def finished_job(model, name: str, *, dataset=None, sweep: Optional[str] = None, spec: Optional[dict] = None,
                 elapsed: float = 12.5):
    """An app Job that finished training ``model`` (as the Jobs panel holds it)."""
    from app.jobs import Job, JobState
    steps = len(model.history_) - 1
    job = Job(name, model, getattr(dataset, "train", None), getattr(dataset, "test", None), dataset=dataset,
              device="cpu", sweep=sweep, spec=spec)
    job.state = JobState.FINISHED
    job.reason = "max_steps"
    job.started_at, job.finished_at = 100.0, 100.0 + elapsed
    job.finished_utc = "2026-11-26T12:00:00Z"
    job.step, job.total = steps, steps
    return job


def add_jobs(window, jobs) -> None:
    """Put finished jobs into a window's Jobs panel (as if they had trained there)."""
    for job in jobs:
        window.jobs.jobs.append(job)
        window.jobs_panel.add_job(job)


def word_file(path: str, n_words: int = 5166, n_sentences: int = 3000, length: int = 18, seed: int = 0) -> str:
    """A word_TAG corpus (``word_TAG`` tokens, one sentence a line) with ``n_words`` distinct words."""
    rng = np.random.default_rng(seed)
    tags = ["NN", "VB", "JJ", "DT", "IN", "RB", "PRP", "CC"]
    words = [f"w{i}" for i in range(n_words)]
    with open(path, "w") as fh:
        for s in range(n_sentences):
            idx = rng.integers(0, n_words, size=length)
            if s < n_words // length + 1:          # every word at least once
                idx = np.arange(s * length, (s + 1) * length) % n_words
            fh.write(" ".join(f"{words[i]}_{tags[i % len(tags)]}" for i in idx) + "\n")
    return path


def protein_fasta(path) -> str:
    """A small protein FASTA file (16 seeded sequences of 30-45 residues over 9 letters)."""
    rng = np.random.default_rng(1)
    with open(path, "w") as f:
        for i in range(16):
            f.write(f">s{i}\n" + "".join(rng.choice(list("ACDEFGHIK"), 30 + i)) + "\n")
    return str(path)

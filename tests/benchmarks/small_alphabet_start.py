#!/usr/bin/env python
"""The spectral start with more states than symbols (a small alphabet: DNA, proteins): the tokens'
contexts (the default start of every fit of sequences, densehmm_core.spectral.context_states) against
the start by symbols (one state per symbol, the states left over copies of the most frequent: the
co-occurrence fit's start, and the sequence fits' start before 2026-12-07) and the random start.
Run on demand (about 10 minutes of CPU on the 2-core development machine):

    .venv/bin/python tests/benchmarks/small_alphabet_start.py [--iters 100] [--seeds 2]

Data: the first 300,000 bases of the NCTC11397 genome in chunks of 10,000 (the first half trains, the
second is held out) with 8 states, and the PDB seqres sample (1,000 proteins, split in halves, seed 0)
with 40 states.  Models: Baum-Welch and DenseHMM-EM (l = 4 on DNA, 8 on proteins), tol 0.  Printed:
the training NLL per token after 0, 10, 30 and --iters iterations and the held-out NLL at the end,
per start, the mean over the seeds.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
DNA = os.path.join(DATA, "dna", "GCF_001457455.1_NCTC11397_genomic.fna.gz")
PDB = os.path.join(DATA, "proteins", "pdb_seqres_2022_09_28__subsampled_1000.fasta")


def datasets():
    from densehmm_core import load
    genome = load(DNA).sequences[0][:300_000]
    chunks = [genome[i:i + 10_000] for i in range(0, genome.size, 10_000)]
    yield "DNA (NCTC11397, 150k bases)", chunks[:15], chunks[15:], 4, 8, 4
    train, test = load(PDB).split(test_fraction=0.5, seed=0)
    yield "proteins (PDB seqres, 500 chains)", train.sequences, test.sequences, max(
        train.n_symbols, test.n_symbols), 40, 8


def symbol_start(model, seqs, m, seed):
    """The start by symbols (what densehmm_core.spectral.spectral_embeddings gives from the pairs)."""
    from densehmm_core.cooc_sparse import pair_counts
    from densehmm_core.maths import softmax
    from densehmm_core.spectral import STANDARD_RANK, boundary_counts, spectral_embeddings
    rng = np.random.default_rng(seed)
    n = model.n_states
    if model.kind == "dense":
        emb = spectral_embeddings(pair_counts(seqs, m), n, model.dim, rng, 0.2, bounds=boundary_counts(seqs, m))
        model.set_embeddings(emb, start_mode="embedding")
    else:
        emb = spectral_embeddings(pair_counts(seqs, m), n, STANDARD_RANK, rng, 0.0, bounds=boundary_counts(seqs, m))
        model.startprob_, model.transmat_ = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n), size=n)
        model.emissionprob_ = softmax(emb["W"] @ emb["V"].T, axis=1)


def run(kind, start, train, test, m, n, l, iters, seed):
    from densehmm_core import DenseHMM, StandardHMM
    init = "random" if start == "random" else "spectral"
    model = (DenseHMM(n, l, n_symbols=m, fit_method="em", n_iter=iters, tol=0, seed=seed, init_method=init)
             if kind == "dense" else StandardHMM(n, n_symbols=m, n_iter=iters, tol=0, seed=seed, init_method=init))
    fresh = True
    if start == "symbols":
        symbol_start(model, train, m, seed)
        fresh = False
    nll = {}
    for ev in model.iter_fit(train, init=fresh):
        if ev.phase != "start" and ev.step in (0, 10, 30, iters):
            nll[ev.step] = ev.metrics["train_nll"]
    ntest = sum(len(x) for x in test)
    return [nll[k] for k in (0, 10, 30, iters)] + [-model.score(test) / ntest]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    if not os.path.exists(DNA) or not os.path.exists(PDB):
        print("../shared/data is not present")
        return 0
    it = args.iters
    print(f"| data | model | start | train NLL at 0 | 10 | 30 | {it} | held-out NLL | CPU s |\n"
          "|---|---|---|---|---|---|---|---|---|")
    for name, train, test, m, n, l in datasets():
        for kind in ("standard", "dense"):
            for start in ("contexts", "symbols", "random"):
                t = time.process_time()
                rows = np.mean([run(kind, start, train, test, m, n, l, it, s) for s in range(args.seeds)], axis=0)
                what = f"Baum-Welch, n = {n}" if kind == "standard" else f"DenseHMM-EM, n = {n}, l = {l}"
                print(f"| {name} | {what} | {start} | " + " | ".join(f"{x:.4f}" for x in rows)
                      + f" | {time.process_time() - t:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

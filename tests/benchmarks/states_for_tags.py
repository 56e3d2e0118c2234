#!/usr/bin/env python
"""Many-to-one accuracy against the number of states on the words of a tagged corpus: what the app's
"states" hint (app/panels/form_hints.py) quotes.  Run on demand (about 3 minutes of CPU):

    .venv/bin/python tests/benchmarks/states_for_tags.py [--data FILE] [--seeds 3]

The data set as the app reads words by default (lower-case, min. count 2, rare words as one unknown
symbol), split in halves as the app does (seed 0); every model trains on the first half and is scored
there (Viterbi states against the gold tags).  Rows: the app's default model (the direct co-occurrence
fit, l = 3) with the form's 5 states and with one state per gold tag; DenseHMM-EM (l = n) and a standard
HMM with Smoothing 0.01 with one state per gold tag (their defaults otherwise: a spectral start).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
EWT_DEV = os.path.join(os.path.dirname(REPO), "shared", "data", "pos", "en_ewt-ud-dev.conllu")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=EWT_DEV)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    from densehmm_core import DenseHMM, StandardHMM, load
    from densehmm_core.metrics import tagging_scores
    corpus = load(args.data, observe="words", lowercase=True, min_count=2)
    train, _ = corpus.split(test_fraction=0.5, seed=0)
    k = len(corpus.tag_vocabulary)
    print(f"{os.path.basename(args.data)}: {corpus.n_symbols} symbols, {train.n_tokens} training tokens, "
          f"{k} gold tags; seeds 0-{args.seeds - 1}", flush=True)
    rows = {
        "co-occurrence fit, n = 5, l = 3 (the form's defaults)": lambda s: DenseHMM(5, 3, fit_method="cooc", seed=s),
        f"co-occurrence fit, n = {k}, l = 3": lambda s: DenseHMM(k, 3, fit_method="cooc", seed=s),
        f"DenseHMM-EM, n = l = {k}": lambda s: DenseHMM(k, k, fit_method="em", seed=s),
        f"standard HMM, n = {k}, Smoothing 0.01": lambda s: StandardHMM(k, seed=s, emission_pseudocount=0.01),
    }
    print("| model | M-1 per seed | mean | CPU s |\n|---|---|---|---|")
    for name, make in rows.items():
        t = time.process_time()
        m1 = []
        for seed in range(args.seeds):
            model = make(seed).fit(train)
            m1.append(tagging_scores([model.predict(x) for x in train.sequences], train.tags)["m1"])
        print(f"| {name} | {' / '.join(f'{x:.3f}' for x in m1)} | {np.mean(m1):.3f} | "
              f"{time.process_time() - t:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

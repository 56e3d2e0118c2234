"""``densehmm reproduce pos-induction`` run from the tests on the small gold-tagged fixture, and the oracle
its start and fitted rows are checked against (tests/test_pos_induction.py, test_marginal.py,
test_full_logits.py)."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List

WORDS = Path(__file__).parent / "fixtures" / "data" / "words.conllu"


def reproduce(argv: List[str]) -> int:
    """Exit status of the ``densehmm`` command line ``argv`` (a ``reproduce`` command), through its main
    (which prints user errors as one line)."""
    from densehmm_core.cli import main
    return main(argv)


def read_rows(path) -> List[dict]:
    """The rows of a CSV file as dicts."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def pos_rows(out: Path, *options: str) -> Dict[str, dict]:
    """Run ``reproduce pos-induction --quick`` on :data:`WORDS` into ``out`` (it must succeed); its runs
    by model name."""
    argv = ["reproduce", "pos-induction", "--data", str(WORDS), "--out", str(out), "--quick", *options]
    assert reproduce(argv) == 0
    return {r["model"]: r for r in read_rows(out / "pos_induction_runs.csv")}


def start_and_fitted_scores(model, corpus):
    """Fit ``model`` on ``corpus`` and return the tagging scores of its start (each word tagged by the
    argmax of the first event's emissions) and of the fitted model (Viterbi paths)."""
    from densehmm_core.events import START_PHASE
    from densehmm_core.metrics import tagging_scores
    n = corpus.n_tags
    B0 = [e for e in model.iter_fit(corpus) if e.phase != START_PHASE][0].params["emissionprob"]
    start = tagging_scores([B0.argmax(axis=0)[s] for s in corpus.sequences], corpus.tags, n_states=n, n_tags=n)
    fitted = tagging_scores(model.predict(corpus.sequences), corpus.tags, n_states=n, n_tags=n)
    return start, fitted

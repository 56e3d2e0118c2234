"""The tagging scores' scheduler (app.views.tag_scoring.TagScorer), with the background run replaced
by one the test finishes by hand: which snapshots are scored, in which order, and which results are shown."""
from types import SimpleNamespace

import numpy as np
import pytest

import app.views.tag_scoring as ts


@pytest.fixture
def runs(monkeypatch):
    """Background runs started: [(mats, done, failed)], finished by the test."""
    started = []
    monkeypatch.setattr(ts, "score_tags",
                        lambda mats, seqs, gold, k, done, failed: started.append((mats, done, failed)))
    return started


def _snap(rng, n=3, m=4):
    return {"startprob": rng.dirichlet(np.ones(n)), "transmat": rng.dirichlet(np.ones(n), n),
            "emissionprob": rng.dirichlet(np.ones(m), n)}


def _corpus(rng, m=4, k=2):
    seqs = [rng.integers(0, m, size=8) for _ in range(3)]
    tags = [rng.integers(0, k, size=8) for _ in range(3)]
    return SimpleNamespace(sequences=seqs, tags=tags, tag_vocabulary=["X", "Y"])


class _Model:
    """A model as the scorer sees it (kept in a weak dictionary: hashable, weakly referenced)."""

    def __init__(self, snap):
        for k, v in snap.items():
            setattr(self, k + "_", v)


def test_live_snapshots_one_at_a_time_the_newest_waiting_stale_results_dropped(runs):
    rng = np.random.default_rng(0)
    shown, errors = [], []
    sc = ts.TagScorer(on_error=errors.append)
    snaps = [_snap(rng) for _ in range(4)]
    show = lambda step, scores, names: shown.append((step, scores, names))  # noqa: E731
    sc.score_snapshot(0, snaps[0], show)
    assert len(runs) == 0 and not sc.live            # no tagged data: nothing scored
    sc.set_live_data(_corpus(rng))
    sc.score_snapshot(0, snaps[0], show)
    sc.score_snapshot(1, snaps[1], show)              # one is running: waits
    sc.score_snapshot(2, snaps[2], show)              # the newest replaces the waiting one
    assert len(runs) == 1 and sc.busy()
    runs[0][1]("s0")
    assert shown == [(0, "s0", ["X", "Y"])]
    assert len(runs) == 2 and runs[1][0][1] is snaps[2]["transmat"]   # the waiting one runs at once
    runs[1][1]("s2")
    assert shown[-1][:2] == (2, "s2") and not sc.busy()
    sc.score_snapshot(3, snaps[3], show)              # within the interval of the last: waits ...
    assert len(runs) == 2 and sc.busy()
    sc.score_snapshot(3, snaps[3], show, final=True)  # ... but the last snapshot of a fit never waits
    assert len(runs) == 3
    sc.reset()                                        # another job shown: its result is dropped
    runs[2][1]("s3")
    assert len(shown) == 2 and not sc.busy()
    sc.score_snapshot(4, {"startprob": None}, show, final=True)  # no matrices (an embeddings-only event)
    assert len(runs) == 3
    sc.score_snapshot(5, snaps[0], show, final=True)
    runs[3][2](ValueError("bad"), "")
    assert errors == ["tagging scores: ValueError: bad"] and not sc.busy()


def test_models_scored_once_per_model_and_data_and_kept(runs):
    rng = np.random.default_rng(1)
    corpus = _corpus(rng)
    snap = _snap(rng)
    model = _Model(snap)
    sc = ts.TagScorer(on_error=lambda _m: None)
    shown = []
    assert not sc.score_model(model, SimpleNamespace(sequences=corpus.sequences), lambda *a: shown.append(a))
    sc.prepare(model, corpus)
    sc.prepare(model, corpus)                                  # running: not started again
    assert sc.score_model(model, corpus, lambda *a: shown.append(a))   # waits for that run
    assert len(runs) == 1 and sc.busy() and shown == []
    runs[0][1]("scores")
    assert shown == [("scores", ["X", "Y"])] and not sc.busy() and not sc.inflight
    key = sc.scores_of(model)[0]
    assert key == ts.tag_fingerprint(corpus.sequences, corpus.tags, ["X", "Y"])
    sc.score_model(model, corpus, lambda *a: shown.append(a))  # kept: shown at once, no run
    assert len(runs) == 1 and shown[-1] == ("scores", ["X", "Y"])
    other = _corpus(np.random.default_rng(2))                  # other data: scored again
    sc.score_model(model, other, lambda *a: shown.append(a))
    assert len(runs) == 2
    restored = _Model(snap)
    sc.keep(restored, key, {"m1": 0.5})                        # a session's stored scores
    sc.score_model(restored, corpus, lambda *a: shown.append(a))
    assert len(runs) == 2 and shown[-1] == ({"m1": 0.5}, ["X", "Y"])
    n_shown = len(shown)
    sc.reset()                                                 # another model shown before it finished:
    runs[1][1]("other scores")                                 # kept, but not shown
    assert len(shown) == n_shown and sc.scores_of(model)[1] == "other scores"


def test_first_tokens_takes_whole_sequences_up_to_the_limit():
    seqs = [np.arange(n) for n in (4, 3, 5)]
    tags = [np.zeros(n, int) for n in (4, 3, 5)]
    assert [len(s) for s in ts.first_tokens(seqs, tags, 7)[0]] == [4, 3]
    assert [len(s) for s in ts.first_tokens(seqs, tags, 2)[0]] == [4]   # at least one sequence
    assert [len(t) for t in ts.first_tokens(seqs, tags, 100)[1]] == [4, 3, 5]

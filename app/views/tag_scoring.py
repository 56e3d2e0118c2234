"""When and on what a model is scored against gold tags (unsupervised part-of-speech induction).

The views of :mod:`app.views.tagging` draw scores; this module decides when to compute them, off
the GUI thread (the core decodes and scores: :func:`~densehmm_core.metrics.tagging_scores`):

* :class:`TagScorer`: a live job's snapshots (one at a time, at most every
  :data:`TAG_LIVE_INTERVAL_S` seconds, the newest waiting for the running one, the last one always)
  and finished models (one run per model and data, kept per model; a second caller waits for it);
* :func:`score_tags`: one background run;
* :func:`first_tokens`, :func:`tag_fingerprint`: what is scored, and its digest (the key under
  which a model's scores are kept, and stored in sessions).
"""
from __future__ import annotations

import hashlib
import time
import weakref
from typing import Callable, List, Optional

import numpy as np

__all__ = ["TagScorer", "first_tokens", "tag_fingerprint", "score_tags"]

#: tokens decoded to score a model against gold tags when it is shown (the first sequences)
TAG_EVAL_MAX_TOKENS = 50000
#: while training on tagged data: snapshots are scored against the gold tags off the GUI thread,
#: one at a time, at least this many seconds apart, on the first sequences up to this many tokens
TAG_LIVE_INTERVAL_S = 2.0
TAG_LIVE_MAX_TOKENS = 5000

_MATRICES = ("startprob", "transmat", "emissionprob")


def first_tokens(seqs, tags, limit: int):
    """The first sequences (and their tags) holding at most ``limit`` tokens (at least one sequence)."""
    take, total = 0, 0
    while take < len(seqs) and (take == 0 or total + len(seqs[take]) <= limit):
        total += len(seqs[take])
        take += 1
    return list(seqs[:take]), list(tags[:take])


def tag_fingerprint(seqs, gold, names) -> str:
    """A digest of the tokens and gold tags scored (the same data, read again, give the same one)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (seqs, gold):
        for a in part:
            h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
            h.update(b"|")
    h.update("\n".join(names).encode())
    return h.hexdigest()


def score_tags(mats, seqs, gold, n_tags: int, done, failed) -> None:
    """Decode ``seqs`` with the HMM ``(pi, A, B)`` and score against ``gold`` on a background
    thread (the core's Viterbi and :func:`~densehmm_core.metrics.tagging_scores`)."""
    pi, A, B = (np.array(x, dtype=np.float64) for x in mats)

    def work():
        from densehmm_core.hmm_base import BaseHMM
        from densehmm_core.metrics import tagging_scores
        hmm = BaseHMM(A.shape[0], B.shape[1])
        hmm.startprob_, hmm.transmat_, hmm.emissionprob_ = pi, A, B
        return tagging_scores(hmm.predict(seqs), gold, n_states=A.shape[0], n_tags=n_tags)

    from ..tasks import run_background
    run_background(work, done, failed)


class TagScorer:
    """Schedules the tagging scores of one dashboard: a live job's snapshots and the models shown.

    Parameters
    ----------
    on_error : callable
        Called with a one-line message when a background run fails.

    Results come back through the callbacks given with each request, on the GUI thread; a live
    snapshot's result is dropped when the job or its data changed since (:meth:`set_live_data`,
    :meth:`reset`).
    """

    def __init__(self, on_error: Callable[[str], None]) -> None:
        self._on_error = on_error
        self._live: Optional[tuple] = None   # (sequences, gold tags, tag names) scored live
        self._busy = False                   # a snapshot is being scored
        self._pending: Optional[tuple] = None  # (step, params, show): the newest snapshot waiting
        self._last = float("-inf")
        self._gen = 0                        # bumped when the job or its data change
        self._final_pending = False          # the shown model is being scored
        self.cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()     # model -> (data key, scores)
        # model -> (data key, callbacks): scores being computed (prepare, score_model)
        self.inflight: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    # ----------------------------------------------------------- live snapshots
    def set_live_data(self, corpus) -> None:
        """Data with gold tags (``tags``, ``tag_vocabulary``) on which a live job's snapshots are
        scored (its first :data:`TAG_LIVE_MAX_TOKENS` tokens); ``None`` or data without tags: off."""
        self.reset()
        tags = getattr(corpus, "tags", None)
        names = getattr(corpus, "tag_vocabulary", None)
        seqs = getattr(corpus, "sequences", None)
        if tags is None or names is None or not seqs:
            self._live = None
            return
        s, t = first_tokens(list(seqs), list(tags), TAG_LIVE_MAX_TOKENS)
        self._live = (s, t, [str(x) for x in names])

    @property
    def live(self) -> bool:
        """Whether a live job's snapshots are scored (tagged data was set)."""
        return self._live is not None

    def score_snapshot(self, step, params: dict, show: Callable, final: bool = False) -> None:
        """Score one snapshot (``params`` with ``startprob``, ``transmat``, ``emissionprob``) in the
        background; ``show(step, scores, tag_names)`` gets the result.  While one runs, or within
        :data:`TAG_LIVE_INTERVAL_S` of the last (unless ``final``), the newest waits and runs after."""
        if self._live is None or any(params.get(k) is None for k in _MATRICES):
            return
        now = time.monotonic()
        if self._busy or (not final and now - self._last < TAG_LIVE_INTERVAL_S):
            self._pending = (step, params, show)  # the newest waits for the running one
            return
        self._busy, self._last, self._pending = True, now, None
        seqs, gold, names = self._live
        gen = self._gen

        def done(scores) -> None:
            self._busy = False
            if gen != self._gen:
                return  # another job or data since
            show(step, scores, names)
            if self._pending is not None:
                (p_step, p_params, p_show), self._pending = self._pending, None
                self.score_snapshot(p_step, p_params, p_show, final=True)

        def failed(exc, _tb) -> None:
            self._busy = False
            self._on_error(f"tagging scores: {type(exc).__name__}: {exc}")

        score_tags([params[k] for k in _MATRICES], seqs, gold, len(names), done, failed)

    def reset(self) -> None:
        """Another job (or none) is shown: results of snapshots still being scored are dropped."""
        self._gen += 1
        self._busy, self._pending, self._final_pending = False, None, False
        self._last = float("-inf")

    def busy(self) -> bool:
        """Whether a snapshot or the shown model is being scored (or waits to be)."""
        return self._busy or self._pending is not None or self._final_pending

    # ----------------------------------------------------------- finished models
    def inputs(self, model, corpus):
        """``(key, mats, seqs, gold, names)`` of scoring ``model`` on ``corpus``'s gold tags (its first
        :data:`TAG_EVAL_MAX_TOKENS` tokens), or None (no tags, or no matrices)."""
        tags = getattr(corpus, "tags", None)
        names = getattr(corpus, "tag_vocabulary", None)
        mats = [getattr(model, k + "_", None) for k in _MATRICES]
        if model is None or tags is None or names is None or any(x is None for x in mats):
            return None
        seqs, gold = first_tokens(list(getattr(corpus, "sequences", [])), list(tags), TAG_EVAL_MAX_TOKENS)
        names = [str(t) for t in names]
        return tag_fingerprint(seqs, gold, names), mats, seqs, gold, names

    def score_model(self, model, corpus, show: Callable) -> bool:
        """Score the model shown: ``show(scores, tag_names)`` once its scores are ready (at once when
        kept from before on the same data).  False (nothing to score): ``corpus`` has no gold tags."""
        inputs = self.inputs(model, corpus)
        if inputs is None:
            return False
        key, mats, seqs, gold, names = inputs
        gen = self._gen
        self._final_pending = True

        def done(scores) -> None:
            self._final_pending = False
            if gen == self._gen:
                show(scores, names)

        def failed(exc, _tb) -> None:
            self._final_pending = False
            self._on_error(f"tagging scores: {type(exc).__name__}: {exc}")

        cached = self.cache.get(model)
        if cached is not None and cached[0] == key:
            done(cached[1])
        else:
            self._run(model, key, mats, seqs, gold, len(names), done, failed)
        return True

    def prepare(self, model, corpus) -> None:
        """Score a finished model now (one that finished while another was shown), so that showing it
        later draws the mapped tags at once (issue 24.7)."""
        inputs = self.inputs(model, corpus)
        if inputs is None:
            return
        key, mats, seqs, gold, names = inputs
        cached = self.cache.get(model)
        if cached is None or cached[0] != key:
            self._run(model, key, mats, seqs, gold, len(names), lambda _s: None, lambda *_a: None)

    def scores_of(self, model) -> Optional[tuple]:
        """``(key, scores)`` kept for ``model`` (``key``: the digest of the tokens and tags scored), or None."""
        return self.cache.get(model)

    def keep(self, model, key: str, scores: dict) -> None:
        """Scores of ``model`` computed before (a restored session's job)."""
        self.cache[model] = (str(key), scores)

    def _run(self, model, key, mats, seqs, gold, n_tags: int, done, failed) -> None:
        """One background run per model and data (a second caller waits for it); the result is kept."""
        running = self.inflight.get(model)
        if running is not None and running[0] == key:
            running[1].append((done, failed))
            return
        callbacks: List[tuple] = [(done, failed)]
        self.inflight[model] = (key, callbacks)

        def finished(scores) -> None:
            if self.inflight.get(model, (None, None))[1] is callbacks:
                del self.inflight[model]
            self.cache[model] = (key, scores)
            for ok, _bad in callbacks:
                ok(scores)

        def broken(exc, tb) -> None:
            if self.inflight.get(model, (None, None))[1] is callbacks:
                del self.inflight[model]
            for _ok, bad in callbacks:
                bad(exc, tb)
        score_tags(mats, seqs, gold, n_tags, finished, broken)

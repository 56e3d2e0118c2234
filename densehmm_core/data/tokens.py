"""Shared machinery of the token readers: malformed-token report and vocabulary building."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .errors import DataFormatError

__all__ = ["TokenReport", "build_token_corpus", "OBSERVE_VALUES", "DEFAULT_UNKNOWN"]

OBSERVE_VALUES = ("tags", "words")
DEFAULT_UNKNOWN = "<unk>"
_MAX_EXAMPLES = 5

# A reader yields (line number of the sentence start, sentence id or None, list of (word, tag)).
Sentence = Tuple[int, Optional[str], List[Tuple[str, str]]]


class TokenReport:
    """Counts malformed tokens (and raises at the first one when ``on_malformed='error'``)."""

    def __init__(self, path: str, on_malformed: str = "skip"):
        if on_malformed not in ("skip", "error"):
            raise ValueError(f"on_malformed must be 'skip' or 'error', got {on_malformed!r}")
        self.path = path
        self.on_malformed = on_malformed
        self.n_malformed = 0
        self.reasons: Dict[str, int] = {}
        self.examples: List[Tuple[int, str, str]] = []

    def malformed(self, lineno: int, token: str, reason: str) -> None:
        if self.on_malformed == "error":
            raise DataFormatError(f"malformed token {token!r}: {reason}", self.path, lineno)
        self.n_malformed += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if len(self.examples) < _MAX_EXAMPLES:
            self.examples.append((lineno, token, reason))

    def warning(self) -> Optional[str]:
        if not self.n_malformed:
            return None
        why = ", ".join(f"{reason}: {n}" for reason, n in sorted(self.reasons.items(), key=lambda kv: -kv[1]))
        ex = "; ".join(f"line {ln} {tok[:40]!r}" for ln, tok, _ in self.examples)
        return f"{self.n_malformed} malformed tokens skipped ({why}); e.g. {ex}"


def build_token_corpus(sentences: Iterable[Sentence], report: TokenReport, *, observe: str = "tags",
                       max_vocab: Optional[int] = None, unknown_symbol: str = DEFAULT_UNKNOWN,
                       lowercase: bool = False, tag_map: Optional[Callable[[str], str]] = None
                       ) -> Dict[str, Any]:
    """Encode reader output as int32 sequences over a sorted vocabulary."""
    if observe not in OBSERVE_VALUES:
        raise ValueError(f"observe must be one of {OBSERVE_VALUES}, got {observe!r}")
    if max_vocab is not None and int(max_vocab) < 2:
        raise ValueError(f"max_vocab must be >= 2 (the unknown symbol counts), got {max_vocab}")
    index: Dict[str, int] = {}
    seqs: List[np.ndarray] = []
    names: List[str] = []
    n_empty = 0
    first_empty = 0
    n_sent = 0
    words = observe == "words"
    mapped: Dict[str, str] = {}
    for lineno, sid, pairs in sentences:
        n_sent += 1
        if words:
            syms = [w.lower() for w, _ in pairs] if lowercase else [w for w, _ in pairs]
        elif tag_map is not None:
            syms = []
            for _, t in pairs:
                mt = mapped.get(t)
                if mt is None:
                    mt = mapped[t] = tag_map(t)
                syms.append(mt)
        else:
            syms = [t for _, t in pairs]
        if not syms:
            if n_empty == 0:
                first_empty = lineno
            n_empty += 1
            continue
        get = index.get
        ids = []
        for s in syms:
            i = get(s)
            if i is None:
                i = index[s] = len(index)
            ids.append(i)
        seqs.append(np.array(ids, dtype=np.int32))
        names.append(sid if sid is not None else f"line {lineno}")
    warnings: List[str] = []
    w = report.warning()
    if w:
        warnings.append(w)
    if n_empty:
        warnings.append(f"{n_empty} empty sentence{'s' if n_empty != 1 else ''} skipped "
                        f"(no usable token; first at line {first_empty})")
    if not seqs:
        raise DataFormatError("no records: no sentence with a usable token" +
                              (f" ({report.n_malformed} malformed tokens)" if report.n_malformed else ""),
                              report.path)
    first_seen = list(index)
    m0 = len(first_seen)
    counts = np.zeros(m0, dtype=np.int64)
    for start in range(0, len(seqs), 4096):
        counts += np.bincount(np.concatenate(seqs[start:start + 4096]), minlength=m0)
    n_unknown_types = 0
    n_unknown_tokens = 0
    if max_vocab is not None and m0 > int(max_vocab):
        keep_n = int(max_vocab) - 1
        order = sorted(range(m0), key=lambda i: (-counts[i], first_seen[i]))
        kept = sorted((first_seen[i] for i in order[:keep_n]))
        if unknown_symbol in kept:
            raise ValueError(f"unknown_symbol {unknown_symbol!r} occurs in the data; choose another")
        vocabulary = kept + [unknown_symbol]
        new_index = {s: i for i, s in enumerate(kept)}
        lut = np.full(m0, len(kept), dtype=np.int32)
        for i, s in enumerate(first_seen):
            j = new_index.get(s)
            if j is not None:
                lut[i] = j
        n_unknown_types = m0 - keep_n
        n_unknown_tokens = int(counts[lut == len(kept)].sum())
    else:
        vocabulary = sorted(first_seen)
        pos = {s: i for i, s in enumerate(vocabulary)}
        lut = np.array([pos[s] for s in first_seen], dtype=np.int32)
    seqs = [lut[s] for s in seqs]
    info = {"n_sentences_read": n_sent, "n_empty": n_empty, "n_malformed": report.n_malformed,
            "n_types": m0, "n_unknown_types": n_unknown_types, "n_unknown_tokens": n_unknown_tokens}
    if n_unknown_types:
        warnings.append(f"vocabulary capped at {max_vocab}: {n_unknown_types} rare {observe} "
                        f"({n_unknown_tokens} tokens) mapped to {unknown_symbol!r}")
    return {"sequences": seqs, "vocabulary": vocabulary, "names": names, "warnings": warnings, "info": info}

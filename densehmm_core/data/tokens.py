"""Shared machinery of the token readers: malformed-token report and vocabulary building."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .errors import DataFormatError
from .wordshape import shape_classes, word_shape

__all__ = ["TokenReport", "TokenEncoder", "build_token_corpus", "OBSERVE_VALUES", "RARE_VALUES",
           "DEFAULT_UNKNOWN", "NO_TAG", "WORDS_MIN_COUNT"]

OBSERVE_VALUES = ("tags", "words")
RARE_VALUES = ("unk", "shape")
DEFAULT_UNKNOWN = "<unk>"
#: ``load(observe="words")`` without ``min_count``: words seen once become the unknown symbol, so a
#: word model has one (and reads words it never saw as that symbol when it scores new data).
WORDS_MIN_COUNT = 2
#: The tag value of a token without a gold tag (sentences of extra, unlabelled files).
NO_TAG = -1
_MAX_EXAMPLES = 5

# A reader yields (line number of the sentence start, sentence id or None, list of (word, tag)).
Sentence = Tuple[int, Optional[str], List[Tuple[str, str]]]



def _intern(table: dict, items) -> np.ndarray:
    """Codes of ``items`` in ``table`` (new items get the next code), as int32."""
    get = table.get
    out = []
    for x in items:
        i = get(x)
        if i is None:
            i = table[x] = len(table)
        out.append(i)
    return np.array(out, dtype=np.int32)

class TokenReport:
    """Counts malformed tokens (and raises at the first one when ``on_malformed='error'``)."""

    def __init__(self, path: str, on_malformed: str = "skip", on_bad_sentence: str = "error"):
        if on_malformed not in ("skip", "error"):
            raise ValueError(f"on_malformed must be 'skip' or 'error', got {on_malformed!r}")
        if on_bad_sentence not in ("skip", "error"):
            raise ValueError(f"on_bad_sentence must be 'skip' or 'error', got {on_bad_sentence!r}")
        self.path = path
        self.on_malformed = on_malformed
        self.on_bad_sentence = on_bad_sentence
        self.n_bad_sentences = 0
        self.first_bad: Optional[Tuple[int, str]] = None
        self.n_missing_blank = 0
        self.first_missing_blank = 0
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

    def bad_sentence(self, lineno: int, reason: str) -> None:
        """A line that breaks its sentence's structure (CoNLL, CoNLL-U): an error naming
        ``on_bad_sentence="skip"``, or, with it, the sentence is counted and left out."""
        if self.on_bad_sentence == "error":
            raise DataFormatError(reason, self.path, lineno, skippable=True)
        self.n_bad_sentences += 1
        if self.first_bad is None:
            self.first_bad = (lineno, reason)

    def missing_blank(self, lineno: int) -> None:
        """A sentence that starts with no blank line before it (CoNLL-U: a token ID 1 or a
        ``# sent_id`` comment after tokens): read as a new sentence, counted for a warning."""
        self.n_missing_blank += 1
        if not self.first_missing_blank:
            self.first_missing_blank = lineno

    def missing_blank_warning(self) -> Optional[str]:
        n = self.n_missing_blank
        if not n:
            return None
        return (f"{n} sentence{'s' if n != 1 else ''} had no blank line before {'them' if n != 1 else 'it'} "
                f"(read as new sentence{'s' if n != 1 else ''}; first at line {self.first_missing_blank})")

    def bad_sentence_warning(self) -> Optional[str]:
        if not self.n_bad_sentences:
            return None
        line, reason = self.first_bad or (0, "")
        return (f"{self.n_bad_sentences} incomplete or broken sentence{'s' if self.n_bad_sentences != 1 else ''} "
                f"skipped (first at line {line}: {reason})")

    def warning(self) -> Optional[str]:
        if not self.n_malformed:
            return None
        why = ", ".join(f"{reason}: {n}" for reason, n in sorted(self.reasons.items(), key=lambda kv: -kv[1]))
        ex = "; ".join(f"line {ln} {tok[:40]!r}" for ln, tok, _ in self.examples)
        return f"{self.n_malformed} malformed tokens skipped ({why}); e.g. {ex}"


class TokenEncoder:
    """Encode the sentences of one or more files over one vocabulary.

    :meth:`add` reads the sentences of a file (``gold=True`` keeps its tags as gold
    tags, ``gold=False`` marks them :data:`NO_TAG`); :meth:`finish` builds the
    vocabulary from the counts over every file added and encodes everything.

    Symbols are the words (``observe="words"``, lower-cased with ``lowercase``) or the
    tags.  A word type is *rare* when it occurs fewer than ``min_count`` times or falls
    beyond the ``max_vocab`` most frequent ones (ties alphabetical); rare words become
    ``unknown_symbol`` (``rare="unk"``) or their word-shape class (``rare="shape"``,
    see :mod:`densehmm_core.data.wordshape`; the shape is taken from the word as
    written, before lower-casing).  The vocabulary is the kept symbols in sorted order
    followed by the unknown/shape symbols that occur (in the documented class order);
    it never holds more than ``max_vocab`` symbols.
    """

    def __init__(self, *, observe: str = "tags", max_vocab: Optional[int] = None, min_count: Optional[int] = None,
                 rare: str = "unk", unknown_symbol: str = DEFAULT_UNKNOWN, lowercase: bool = False):
        if observe not in OBSERVE_VALUES:
            raise ValueError(f"observe must be one of {OBSERVE_VALUES}, got {observe!r}")
        if rare not in RARE_VALUES:
            raise ValueError(f"rare must be one of {RARE_VALUES}, got {rare!r}")
        if rare == "shape" and observe != "words":
            raise ValueError("rare='shape' (word-shape classes) needs observe='words'")
        if max_vocab is not None and int(max_vocab) < 2:
            raise ValueError(f"max_vocab must be >= 2 (the unknown symbol counts), got {max_vocab}")
        if min_count is not None and int(min_count) < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        self.observe = observe
        self.max_vocab = None if max_vocab is None else int(max_vocab)
        self.min_count = None if min_count is None else int(min_count)
        self.rare = rare
        self.unknown_symbol = str(unknown_symbol)
        self.lowercase = bool(lowercase)
        self._forms: Dict[str, int] = {}        # symbol as read (word as written, or mapped tag) -> id
        self._tags: Dict[str, int] = {}
        self._seqs: List[np.ndarray] = []
        self._tag_seqs: List[Optional[np.ndarray]] = []
        self._names: List[str] = []
        self._any_gold = False

    def add(self, sentences: Iterable[Sentence], report: TokenReport, *, gold: bool = True,
            tag_map: Optional[Callable[[str], str]] = None, name_prefix: str = "") -> Dict[str, Any]:
        """Read one file's sentences; returns its counts and warnings."""
        words = self.observe == "words"
        forms = self._forms
        tags = self._tags
        mapped: Dict[str, str] = {}
        n_sent = n_empty = first_empty = n_tok = 0
        n_before = len(self._seqs)
        self._any_gold = self._any_gold or gold
        for lineno, sid, pairs in sentences:
            n_sent += 1
            if not pairs:
                if n_empty == 0:
                    first_empty = lineno
                n_empty += 1
                continue
            if tag_map is not None:
                ts = []
                for _, t in pairs:
                    mt = mapped.get(t)
                    if mt is None:
                        mt = mapped[t] = tag_map(t)
                    ts.append(mt)
            else:
                ts = [t for _, t in pairs]
            syms = [w for w, _ in pairs] if words else ts
            ids = _intern(forms, syms)
            self._seqs.append(ids)
            n_tok += len(ids)
            if gold:
                self._tag_seqs.append(_intern(tags, ts))
            else:
                self._tag_seqs.append(None)
            self._names.append(name_prefix + (sid if sid is not None else f"line {lineno}"))
        warnings: List[str] = []
        for w in (report.missing_blank_warning(), report.bad_sentence_warning(), report.warning()):
            if w:
                warnings.append(w)
        if n_empty:
            warnings.append(f"{n_empty} empty sentence{'s' if n_empty != 1 else ''} skipped "
                            f"(no usable token; first at line {first_empty})")
        n_seq = len(self._seqs) - n_before
        if not n_seq:
            why = [f"{report.n_malformed} malformed tokens"] if report.n_malformed else []
            if report.n_bad_sentences:
                why.append(report.bad_sentence_warning() or "")
            raise DataFormatError("no records: no sentence with a usable token" +
                                  (f" ({'; '.join(why)})" if why else ""), report.path)
        info = {"n_sentences_read": n_sent, "n_empty": n_empty, "n_malformed": report.n_malformed,
                "n_sequences": n_seq, "n_tokens": n_tok, "n_bad_sentences": report.n_bad_sentences,
                "n_missing_blank_lines": report.n_missing_blank}
        return {"info": info, "warnings": warnings}

    def _keys(self, forms: List[str]) -> List[str]:
        if self.observe == "words" and self.lowercase:
            return [f.lower() for f in forms]
        return forms

    def finish(self) -> Dict[str, Any]:
        """Build the vocabulary and encode: a dict of ``sequences``, ``vocabulary``, ``names``,
        ``tags``, ``tag_vocabulary`` (None when no file was gold), ``warnings`` and ``info``."""
        forms = list(self._forms)
        nf = len(forms)
        form_counts = np.zeros(nf, dtype=np.int64)
        for start in range(0, len(self._seqs), 4096):
            form_counts += np.bincount(np.concatenate(self._seqs[start:start + 4096]), minlength=nf)
        keys = self._keys(forms)
        key_index: Dict[str, int] = {}
        form_key = np.empty(nf, dtype=np.int64)
        for i, key in enumerate(keys):
            j = key_index.get(key)
            if j is None:
                j = key_index[key] = len(key_index)
            form_key[i] = j
        key_names = list(key_index)
        nk = len(key_names)
        key_counts = np.bincount(form_key, weights=form_counts, minlength=nk).astype(np.int64)
        cand = [j for j in range(nk) if self.min_count is None or key_counts[j] >= self.min_count]
        cand.sort(key=lambda j: (-key_counts[j], key_names[j]))
        shape = self.rare == "shape"
        shapes: Dict[int, str] = {}

        def rare_symbol(form_id: int) -> str:
            if not shape:
                return self.unknown_symbol
            s = shapes.get(form_id)
            if s is None:
                s = shapes[form_id] = word_shape(forms[form_id], self.unknown_symbol)
            return s

        reserve = 0
        while True:
            k = len(cand) if self.max_vocab is None else max(0, min(len(cand), self.max_vocab - reserve))
            kept = np.zeros(nk, dtype=bool)
            kept[cand[:k]] = True
            rare_forms = np.flatnonzero(~kept[form_key])
            used = {rare_symbol(int(f)) for f in rare_forms}
            if self.max_vocab is None or k + len(used) <= self.max_vocab:
                break
            if k == 0:
                raise ValueError(f"max_vocab={self.max_vocab} is too small: the rare words alone need "
                                 f"{len(used)} shape classes")
            reserve = len(used)
        kept_names = sorted(key_names[j] for j in cand[:k])
        order = shape_classes(self.unknown_symbol) if shape else [self.unknown_symbol]
        extra = [c for c in order if c in used]
        clash = set(extra) & set(kept_names)
        if clash:
            raise ValueError(f"unknown_symbol / shape class {sorted(clash)[0]!r} occurs in the data as a kept "
                             f"{self.observe[:-1]}; choose another unknown_symbol")
        vocabulary = kept_names + extra
        pos = {s: i for i, s in enumerate(vocabulary)}
        lut = np.empty(nf, dtype=np.int32)
        for i in range(nf):
            lut[i] = pos[keys[i]] if kept[form_key[i]] else pos[rare_symbol(i)]
        seqs = [lut[s] for s in self._seqs]
        n_unknown_types = nk - k
        n_unknown_tokens = int(form_counts[rare_forms].sum())
        tag_vocabulary: Optional[List[str]] = None
        tag_seqs: Optional[List[np.ndarray]] = None
        if self._any_gold:
            tag_vocabulary = sorted(self._tags)
            tpos = {s: i for i, s in enumerate(tag_vocabulary)}
            tlut = np.array([tpos[t] for t in self._tags], dtype=np.int32)
            tag_seqs = [tlut[t] if t is not None else np.full(s.shape[0], NO_TAG, dtype=np.int32)
                        for s, t in zip(self._seqs, self._tag_seqs)]
        warnings: List[str] = []
        info: Dict[str, Any] = {"n_types": nk, "n_unknown_types": int(n_unknown_types),
                                "n_unknown_tokens": n_unknown_tokens,
                                "n_tags": None if tag_vocabulary is None else len(tag_vocabulary)}
        if shape and n_unknown_types:
            info["shape_classes"] = extra
        if n_unknown_types:
            # "14 words seen fewer than 2 times (14 tokens) mapped to '<unk>'" (it read "14 seen fewer than 2
            # times: 14 rare words (14 tokens) mapped to ...": one number three times)
            rare_count = nk - len(cand) if self.min_count is not None else 0
            into = (f"{len(extra)} word-shape classes" if shape else repr(self.unknown_symbol))
            tail = f"({n_unknown_tokens} tokens) mapped to {into}"
            if k >= len(cand):
                what = f"{n_unknown_types} {self.observe} seen fewer than {self.min_count} times"
                warnings.append(f"{what} {tail}")
            elif not rare_count:
                warnings.append(f"{n_unknown_types} {self.observe} beyond the vocabulary capped at {self.max_vocab} "
                                f"{tail}")
            else:
                warnings.append(f"{n_unknown_types} rare {self.observe} {tail}: {rare_count} seen fewer than "
                                f"{self.min_count} times, the others beyond the vocabulary capped at {self.max_vocab}")
        return {"sequences": seqs, "vocabulary": vocabulary, "names": list(self._names), "warnings": warnings,
                "info": info, "tags": tag_seqs, "tag_vocabulary": tag_vocabulary}


def build_token_corpus(sentences: Iterable[Sentence], report: TokenReport, *, observe: str = "tags",
                       max_vocab: Optional[int] = None, unknown_symbol: str = DEFAULT_UNKNOWN,
                       lowercase: bool = False, tag_map: Optional[Callable[[str], str]] = None,
                       min_count: Optional[int] = None, rare: str = "unk") -> Dict[str, Any]:
    """Encode one file's reader output (see :class:`TokenEncoder`)."""
    enc = TokenEncoder(observe=observe, max_vocab=max_vocab, min_count=min_count, rare=rare,
                       unknown_symbol=unknown_symbol, lowercase=lowercase)
    part = enc.add(sentences, report, gold=True, tag_map=tag_map)
    out = enc.finish()
    out["info"] = dict(part["info"], **out["info"])
    out["warnings"] = part["warnings"] + out["warnings"]
    return out

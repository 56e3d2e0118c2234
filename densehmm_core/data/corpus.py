"""Corpus: encoded sequences with their vocabulary, provenance, statistics and preprocessing."""
from __future__ import annotations

import copy
import hashlib
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["Corpus", "DEFAULT_RESIDUAL", "NO_TAG"]

DEFAULT_RESIDUAL = "<other>"
#: Tag value of a token without a gold tag (e.g. the sentences of extra, unlabelled files).
NO_TAG = -1
_CHUNK_TOKENS = 1 << 22


def _check_tags(tags, sequences, tag_vocabulary) -> List[np.ndarray]:
    if tag_vocabulary is None:
        raise ValueError("tags were given without a tag_vocabulary")
    tags = list(tags)
    if len(tags) != len(sequences):
        raise ValueError(f"{len(tags)} tag sequences for {len(sequences)} sequences")
    k = len(tag_vocabulary)
    out = []
    for i, (t, s) in enumerate(zip(tags, sequences)):
        a = np.asarray(t)
        if a.ndim != 1 or a.shape[0] != len(s):
            raise ValueError(f"tags of sequence {i} have shape {a.shape}, the sequence has length {len(s)}")
        if a.dtype.kind not in "iu":
            raise ValueError(f"tags of sequence {i} are not integers (dtype {a.dtype})")
        if a.size and (int(a.min()) < NO_TAG or int(a.max()) >= k):
            raise ValueError(f"tags of sequence {i} hold a value outside {NO_TAG}..{k - 1}")
        out.append(a.astype(np.int32, copy=False))
    return out


def _as_int32_sequence(s, i: int, m: int) -> np.ndarray:
    a = np.asarray(s)
    if a.ndim != 1:
        raise ValueError(f"sequence {i} is not one-dimensional (shape {a.shape})")
    if a.shape[0] == 0:
        raise ValueError(f"sequence {i} is empty; every sequence needs length >= 1")
    if a.dtype.kind not in "iu":
        raise ValueError(f"sequence {i} holds non-integer symbols (dtype {a.dtype})")
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi >= m:
        raise ValueError(f"sequence {i} holds symbol {lo if lo < 0 else hi}, outside 0..{m - 1}")
    return a.astype(np.int32, copy=False)


class Corpus:
    """Encoded symbol sequences with their vocabulary.

    A Corpus is what :func:`densehmm_core.data.load` returns and what every model
    accepts in place of a list of sequences (models read ``.sequences`` and
    ``.vocabulary``).  Treat it as immutable: :meth:`preprocess` and :meth:`split`
    return new objects (which may share sequence memory with this one).

    Parameters
    ----------
    sequences : iterable of 1-D integer arrays
        Each of length >= 1 with symbols in ``0 .. len(vocabulary) - 1``.
    vocabulary : sequence of str
        Symbol strings in index order.
    names : sequence of str, optional
        One identifier per sequence (FASTA record id, MedPost sentence id...).
    provenance : dict, optional
        JSON-able description of where the data came from (see :func:`load`).
    warnings : list of str, optional
        Human-readable notes about problems met while reading.
    validate : bool, default True
        Check shapes and symbol ranges and make the symbols strings (readers and derived corpora
        skip this for speed: their vocabulary is strings already).
    tags : iterable of 1-D integer arrays, optional
        Gold tags aligned with ``sequences`` (same lengths), indices into
        ``tag_vocabulary``; :data:`NO_TAG` (-1) marks a token without a gold tag.
    tag_vocabulary : sequence of str, optional
        Tag strings in index order (required with ``tags``).

    Attributes
    ----------
    sequences : list of numpy.ndarray (int32)
    vocabulary : list of str
    tags : list of numpy.ndarray (int32) or None
        The gold tags of a tagged corpus (whatever ``observe`` was), ``None`` when the
        data have none (FASTA, in-memory sequences).  Every derived corpus
        (:meth:`select`, :meth:`split`, :meth:`preprocess`) keeps them aligned.
    tag_vocabulary : list of str or None
    names : list of str or None
    provenance : dict
    warnings : list of str
    """

    def __init__(self, sequences: Iterable, vocabulary: Sequence[str], *, names: Optional[Sequence[str]] = None,
                 provenance: Optional[Dict[str, Any]] = None, warnings: Optional[List[str]] = None,
                 validate: bool = True, tags: Optional[Iterable] = None,
                 tag_vocabulary: Optional[Sequence[str]] = None):
        self.vocabulary: List[str] = [str(v) for v in vocabulary] if validate else list(vocabulary)
        m = len(self.vocabulary)
        if validate:
            if m == 0:
                raise ValueError("the vocabulary is empty")
            if len(set(self.vocabulary)) != m:
                raise ValueError("the vocabulary holds duplicate symbols")
            self.sequences = [_as_int32_sequence(s, i, m) for i, s in enumerate(sequences)]
            if not self.sequences:
                raise ValueError("a Corpus needs at least one sequence")
        else:
            self.sequences = list(sequences)
        self.tag_vocabulary: Optional[List[str]] = (None if tag_vocabulary is None
                                                     else [str(t) for t in tag_vocabulary])
        self.tags: Optional[List[np.ndarray]] = None
        if tags is not None:
            self.tags = _check_tags(tags, self.sequences, self.tag_vocabulary) if validate else list(tags)
        elif self.tag_vocabulary is not None:
            raise ValueError("a tag_vocabulary was given without tags")
        self.names = None if names is None else [str(n) for n in names]
        if self.names is not None and len(self.names) != len(self.sequences):
            raise ValueError(f"{len(self.names)} names for {len(self.sequences)} sequences")
        self.provenance: Dict[str, Any] = dict(provenance or {})
        self.provenance.setdefault("preprocessing", [])
        self.warnings: List[str] = list(warnings or [])
        self._counts: Optional[np.ndarray] = None
        self._lengths: Optional[np.ndarray] = None
        self._tokens: Optional[np.ndarray] = None

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_sequences(cls, sequences: Iterable, vocabulary: Optional[Sequence[str]] = None,
                       **kwargs) -> "Corpus":
        """Build a Corpus from integer sequences; the vocabulary defaults to ``"0", "1", ...``."""
        seqs = [np.asarray(s) for s in sequences]
        if vocabulary is None:
            m = 1 + max((int(s.max()) for s in seqs if s.size), default=0)
            vocabulary = [str(i) for i in range(m)]
        kwargs.setdefault("provenance", {"format": "in-memory"})
        return cls(seqs, vocabulary, **kwargs)

    @classmethod
    def from_tokens(cls, sentences: Iterable[Sequence[str]], vocabulary: Optional[Sequence[str]] = None,
                    **kwargs) -> "Corpus":
        """Build a Corpus from sequences of symbol strings (vocabulary: sorted symbols, unless given)."""
        sents = [list(s) for s in sentences]
        if vocabulary is None:
            vocabulary = sorted({t for s in sents for t in s})
        index = {v: i for i, v in enumerate(vocabulary)}
        try:
            seqs = [np.fromiter((index[t] for t in s), dtype=np.int32, count=len(s)) for s in sents]
        except KeyError as exc:
            raise ValueError(f"symbol {exc.args[0]!r} is not in the vocabulary") from None
        kwargs.setdefault("provenance", {"format": "in-memory"})
        return cls(seqs, vocabulary, **kwargs)

    # -------------------------------------------------------------- properties
    @property
    def n_symbols(self) -> int:
        """Vocabulary size ``m``."""
        return len(self.vocabulary)

    @property
    def n_sequences(self) -> int:
        """Number of sequences."""
        return len(self.sequences)

    @property
    def lengths(self) -> np.ndarray:
        """Sequence lengths (int64 array)."""
        if self._lengths is None:
            self._lengths = np.fromiter((s.shape[0] for s in self.sequences), dtype=np.int64,
                                        count=len(self.sequences))
        return self._lengths

    @property
    def tokens(self) -> np.ndarray:
        """Every sequence's symbols joined in order (int32, read-only): the layout a worker process
        receives (:func:`densehmm_core.worker.wire.as_plain_sequences`).  Joined once and kept (4 bytes
        per token), so that the thread starting a job does not join thousands of arrays again."""
        if self._tokens is None:
            tokens = np.concatenate(self.sequences).astype(np.int32, copy=False)   # (a new array)
            tokens.flags.writeable = False
            self._tokens = tokens
        return self._tokens

    @property
    def n_tokens(self) -> int:
        """Total number of symbols over all sequences."""
        return int(self.lengths.sum())

    @property
    def symbol_counts(self) -> np.ndarray:
        """Occurrences of each symbol (int64 array of length ``n_symbols``)."""
        if self._counts is None:
            m = self.n_symbols
            counts = np.zeros(m, dtype=np.int64)
            batch: List[np.ndarray] = []
            size = 0
            for s in self.sequences:
                batch.append(s)
                size += s.shape[0]
                if size >= _CHUNK_TOKENS:
                    counts += np.bincount(np.concatenate(batch), minlength=m)[:m]
                    batch, size = [], 0
            if batch:
                counts += np.bincount(np.concatenate(batch), minlength=m)[:m]
            self._counts = counts
        return self._counts

    @property
    def symbol_frequencies(self) -> np.ndarray:
        """Relative frequency of each symbol (sums to 1)."""
        c = self.symbol_counts
        return c / max(int(c.sum()), 1)

    @property
    def symbol_index(self) -> Dict[str, int]:
        """Mapping symbol string -> index."""
        return {v: i for i, v in enumerate(self.vocabulary)}

    @property
    def has_tags(self) -> bool:
        """True when the corpus carries gold tags (:attr:`tags`) for at least one token."""
        return self.tags is not None and any(t.size and int(t.max()) >= 0 for t in self.tags)

    @property
    def n_tags(self) -> int:
        """Size of the tag vocabulary (0 without tags)."""
        return 0 if self.tag_vocabulary is None else len(self.tag_vocabulary)

    @property
    def observes_words(self) -> bool:
        """Whether the symbols are the words of a tagged corpus (read with ``observe="words"``; the
        reader's provenance records it), not its tags or a FASTA file's letters."""
        return ((self.provenance or {}).get("options") or {}).get("observe") == "words"

    def labelled_indices(self) -> List[int]:
        """Indices of the sequences that carry gold tags (those of extra, unlabelled files have only
        ``NO_TAG``; they follow the main file's); empty without tags."""
        if self.tags is None:
            return []
        return [i for i, t in enumerate(self.tags) if t.size and int(t.max()) >= 0]

    def labelled(self) -> "Corpus":
        """The sequences that carry gold tags (drops those of extra, unlabelled files).

        Raises ``ValueError`` when no sequence has a gold tag.
        """
        if self.tags is None:
            raise ValueError("the corpus has no gold tags")
        keep = self.labelled_indices()
        if not keep:
            raise ValueError("no sequence of the corpus has gold tags")
        if len(keep) == self.n_sequences:
            return self
        return self.select(keep, step={"step": "labelled", "kept": len(keep), "of": self.n_sequences})

    def tag_counts(self) -> np.ndarray:
        """Occurrences of each gold tag (int64 array of length ``n_tags``)."""
        if self.tags is None:
            raise ValueError("the corpus has no gold tags")
        k = self.n_tags
        t = np.concatenate(self.tags) if self.tags else np.zeros(0, dtype=np.int32)
        return np.bincount(t[t >= 0], minlength=k)[:k].astype(np.int64)

    @property
    def format(self) -> Optional[str]:
        """The reader format (``provenance["format"]``), e.g. ``"fasta"``."""
        return self.provenance.get("format")

    # ------------------------------------------------------------- statistics
    def length_histogram(self, bins: Any = None) -> Tuple[np.ndarray, np.ndarray]:
        """Histogram of sequence lengths: ``(counts, edges)`` as from :func:`numpy.histogram`.

        ``bins`` defaults to at most 50 integer-aligned bins.
        """
        L = self.lengths
        if bins is None:
            lo, hi = int(L.min()), int(L.max())
            width = max(1, int(np.ceil((hi - lo + 1) / 50)))
            bins = np.arange(lo, hi + width + 1, width)
        counts, edges = np.histogram(L, bins=bins)
        return counts, edges

    def statistics(self) -> Dict[str, Any]:
        """JSON-able summary: counts, length statistics and histogram, symbol counts and frequencies,
        and for tagged corpora the gold-tag counts (``tag_counts``, ``n_untagged_tokens``; None otherwise)."""
        L = self.lengths
        counts, edges = self.length_histogram()
        sc = self.symbol_counts
        total = max(int(sc.sum()), 1)
        untagged = None
        if self.tags is not None:
            untagged = int(np.count_nonzero(np.concatenate(self.tags) < 0)) if self.tags else 0
        return {
            "n_sequences": self.n_sequences,
            "n_tokens": self.n_tokens,
            "n_symbols": self.n_symbols,
            "length_min": int(L.min()),
            "length_max": int(L.max()),
            "length_mean": float(L.mean()),
            "length_median": float(np.median(L)),
            "length_histogram": {"counts": [int(c) for c in counts], "edges": [float(e) for e in edges]},
            "symbol_counts": {v: int(c) for v, c in zip(self.vocabulary, sc)},
            "symbol_frequencies": {v: int(c) / total for v, c in zip(self.vocabulary, sc)},
            # gold tags (tagged corpora): tokens per tag, and tokens without a gold tag (extra files)
            "tag_counts": None if self.tags is None else dict(zip(self.tag_vocabulary, self.tag_counts().tolist())),
            "n_untagged_tokens": untagged,
        }

    # ------------------------------------------------------- encode / decode
    def decode(self, sequence: Sequence[int], sep: Optional[str] = None):
        """Map symbol indices back to strings (a list, or one string joined with ``sep``)."""
        out = [self.vocabulary[int(i)] for i in sequence]
        return out if sep is None else sep.join(out)

    def encode(self, symbols: Iterable[str]) -> np.ndarray:
        """Map symbol strings to an int32 array (``KeyError`` for an unknown symbol)."""
        idx = self.symbol_index
        return np.array([idx[s] for s in symbols], dtype=np.int32)

    def encode_with(self, vocabulary: Sequence[str], *, unknown: Optional[str] = None, lowercase: bool = False,
                    shapes: bool = False) -> "Corpus":
        """This corpus re-encoded to another vocabulary (e.g. a model's), symbols matched by their strings.

        Parameters
        ----------
        vocabulary : sequence of str
            The target symbols in index order (``model.vocabulary``).
        unknown : str, optional
            A symbol of ``vocabulary`` that takes every symbol the vocabulary lacks (a model's
            residual symbol such as ``"<other>"``).  Without it, such symbols are an error.
        lowercase : bool, default False
            Words: a symbol the vocabulary lacks is looked up lower-cased (a model trained on
            lower-cased words, data read as written).
        shapes : bool, default False
            Words: a symbol still not found goes to its word-shape class
            (:func:`~densehmm_core.data.word_shape`, judged on the symbol as written) when the
            vocabulary has that class, before falling back to ``unknown``.

        Returns
        -------
        Corpus
            The same sequences, names and provenance over ``vocabulary``; the provenance records
            an ``encode_with`` step (with the symbols sent to ``unknown`` and their token count).

        Raises
        ------
        ValueError
            The sequences use symbols that ``vocabulary`` lacks and no ``unknown`` is given (the
            message names them and counts their tokens); ``unknown`` is not in ``vocabulary``;
            ``vocabulary`` is empty or holds duplicates.
        """
        target = list(vocabulary)
        # the same symbols at the same indices (a model shown on its own data, the usual case): no
        # conversion or index of 30,000 names (12 ms of a job's start in the window, Brown corpus)
        same = target == self.vocabulary
        if same:
            target = self.vocabulary              # (strings, no duplicates, not empty: a Corpus's own)
            index: Dict[str, int] = {unknown: target.index(unknown)} if unknown in target else {}
        else:
            target = [str(v) for v in target]
            index = {v: i for i, v in enumerate(target)}
            if not target:
                raise ValueError("the vocabulary to encode with is empty")
            if len(index) != len(target):
                raise ValueError("the vocabulary to encode with holds duplicate symbols")
        if unknown is not None and unknown not in index:
            raise ValueError(f"the unknown symbol {unknown!r} is not in the vocabulary to encode with")
        counts = self.symbol_counts
        if same:
            # the same symbols at the same indices (a model shown on its own data): every symbol is
            # found as it is, none lower-cased, shaped or missing; nothing to match
            found, n_lower, n_shape, missing = {}, 0, 0, []
        else:
            found, n_lower, n_shape, missing = self._match(index, unknown, lowercase, shapes)
        step: Dict[str, Any] = {"step": "encode_with", "n_symbols_before": self.n_symbols,
                                "n_symbols_after": len(target)}
        if lowercase:
            step["lowercased_tokens"] = n_lower
        if shapes:
            step["shape_class_tokens"] = n_shape
        if missing:
            names = [self.vocabulary[i] for i in missing]
            n_tokens = int(counts[missing].sum())
            if unknown is None:
                shown = ", ".join(repr(v) for v in names[:8]) + (", ..." if len(names) > 8 else "")
                raise ValueError(f"{len(names)} symbol(s) not in the vocabulary: {shown} "
                                 f"({n_tokens} of {self.n_tokens} tokens)")
            step.update(unknown_symbol=unknown, to_unknown=names, unknown_tokens=n_tokens)
        fill = -1 if unknown is None else index[unknown]  # -1 only for symbols no sequence uses
        lut = None if same else np.array(
            [index.get(v, found.get(i, fill)) for i, v in enumerate(self.vocabulary)], dtype=np.int32)
        if lut is None or (lut.size == len(target) and np.array_equal(lut, np.arange(lut.size))):
            # the same symbols at the same indices: the sequences shared (as select's are), and what
            # was counted of them
            out = self._derive(list(self.sequences), vocabulary=None if same else target, names=self.names,
                               step=step, tags=self.tags)
            out._lengths, out._counts = self._lengths, self._counts
            return out
        return self._derive([lut[s] for s in self.sequences], vocabulary=target, names=self.names, step=step,
                            tags=self.tags)

    def _match(self, index: Dict[str, int], unknown: Optional[str], lowercase: bool, shapes: bool):
        """How this corpus's symbols meet a target vocabulary ``index`` (symbol -> position):
        (corpus symbol -> target index found by lower-casing or word shape, tokens found
        lower-cased, tokens found by shape, the used corpus symbols still not found)."""
        counts = self.symbol_counts
        found: Dict[int, int] = {}
        n_lower = n_shape = 0
        if lowercase or shapes:
            from .wordshape import word_shape
            for i, v in enumerate(self.vocabulary):
                if v in index or counts[i] == 0:
                    continue
                if lowercase and v.lower() in index:
                    found[i] = index[v.lower()]
                    n_lower += int(counts[i])
                elif shapes:
                    sh = word_shape(v, unknown or "<unk>")
                    if sh != unknown and sh in index:
                        found[i] = index[sh]
                        n_shape += int(counts[i])
        missing = [i for i, v in enumerate(self.vocabulary) if v not in index and i not in found and counts[i] > 0]
        return found, n_lower, n_shape, missing

    def unmatched(self, vocabulary: Sequence[str], *, lowercase: bool = False, shapes: bool = False,
                  unknown: Optional[str] = None) -> List[int]:
        """Indices (in this corpus's vocabulary) of the symbols that occur and that ``vocabulary``
        lacks, after the look-ups of :meth:`encode_with` (lower-cased, word shape): the symbols
        ``encode_with`` sends to ``unknown``, or refuses without one."""
        index = {str(v): i for i, v in enumerate(vocabulary)}
        return self._match(index, unknown, lowercase, shapes)[3]

    def to_arrays(self) -> Tuple[np.ndarray, np.ndarray]:
        """hmmlearn's layout: ``(X, lengths)`` with ``X`` of shape (N, 1)."""
        return np.concatenate(self.sequences).reshape(-1, 1), self.lengths.copy()

    # ------------------------------------------------------------ containers
    def __len__(self) -> int:
        return len(self.sequences)

    def __iter__(self):
        return iter(self.sequences)

    def __getitem__(self, item):
        if isinstance(item, (int, np.integer)):
            return self.sequences[item]
        idx = np.arange(len(self.sequences))[item]
        return self.select(idx, step={"step": "select", "n": int(np.size(idx))})

    def __repr__(self) -> str:
        src = self.provenance.get("file") or self.provenance.get("format") or "in-memory"
        return (f"Corpus({src!r}: {self.n_sequences} sequences, {self.n_tokens} tokens, "
                f"{self.n_symbols} symbols)")

    # ------------------------------------------------------------ derivation
    def _derive(self, sequences, vocabulary=None, names=None, step: Optional[Dict[str, Any]] = None,
                extra: Optional[Dict[str, Any]] = None, tags=None) -> "Corpus":
        """A new corpus sharing this one's vocabulary and tag vocabulary; ``tags`` must be
        given (aligned with ``sequences``) when this corpus has tags."""
        prov = copy.deepcopy(self.provenance)
        if step is not None:
            prov["preprocessing"] = list(prov.get("preprocessing", [])) + [step]
        if extra:
            prov.update(extra)
        if (self.tags is None) != (tags is None):
            raise ValueError("derived corpus: tags must be given exactly when the corpus has tags")
        c = Corpus(sequences, self.vocabulary if vocabulary is None else vocabulary, names=None,
                   provenance=prov, warnings=self.warnings, validate=False, tags=tags,
                   tag_vocabulary=self.tag_vocabulary)
        if names is not None:   # this corpus's own names (strings already), or a subset of them
            if len(names) != len(c.sequences):
                raise ValueError(f"{len(names)} names for {len(c.sequences)} sequences")
            c.names = list(names)
        if vocabulary is None:
            c.vocabulary = self.vocabulary  # share the very same list
        c.tag_vocabulary = self.tag_vocabulary
        return c

    def _chunked(self, k: int) -> "Corpus":
        """Every sequence longer than ``k`` cut into pieces of ``k`` symbols (the ``chunk_len`` step)."""
        if k < 1:
            raise ValueError(f"chunk_len must be >= 1, got {k}")
        seqs: List[np.ndarray] = []
        tags: Optional[List[np.ndarray]] = None if self.tags is None else []
        names: Optional[List[str]] = None if self.names is None else []
        n_cut = 0
        for i, s in enumerate(self.sequences):
            n = int(s.shape[0])
            cut = n > k
            n_cut += cut
            for a in range(0, max(n, 1), k):       # one piece, the whole, when not cut
                b = min(n, a + k)
                seqs.append(s[a:b])
                if tags is not None:
                    tags.append(self.tags[i][a:b])
                if names is not None:
                    names.append(f"{self.names[i]}:{a + 1}-{b}" if cut else self.names[i])
        return self._derive(seqs, names=names, tags=tags,
                            step={"step": "chunk_len", "chunk_len": k, "cut": n_cut,
                                  "sequences": len(seqs), "of": self.n_sequences})

    def select(self, indices: Union[Sequence[int], np.ndarray], step: Optional[Dict[str, Any]] = None) -> "Corpus":
        """A Corpus with the sequences at ``indices`` (same vocabulary)."""
        idx = [int(i) for i in np.asarray(indices, dtype=np.int64).ravel()]
        if not idx:
            raise ValueError("the selection is empty")
        seqs = [self.sequences[i] for i in idx]
        names = None if self.names is None else [self.names[i] for i in idx]
        tags = None if self.tags is None else [self.tags[i] for i in idx]
        return self._derive(seqs, names=names, step=step, tags=tags)

    def split(self, test_fraction: float = 0.5, seed: Optional[int] = 0, shuffle: bool = True
              ) -> Tuple["Corpus", "Corpus"]:
        """Seeded shuffle and train/test split (default 50:50).

        Parameters
        ----------
        test_fraction : float, default 0.5
            Share of sequences in the test part, in (0, 1); both parts get at least one sequence.
        seed : int or None, default 0
            Seed of the shuffle (``numpy.random.default_rng``); same seed, same split.
        shuffle : bool, default True
            If False the first sequences go to train, the last to test.

        Returns
        -------
        (train, test) : tuple of Corpus
            Both share this corpus's vocabulary; their provenance records the split.
        """
        from ..maths import split_indices
        train_idx, test_idx = split_indices(self.n_sequences, test_fraction, seed, shuffle)
        parts = {"train": train_idx, "test": test_idx}
        out = []
        for part, idx in parts.items():
            info = {"part": part, "test_fraction": float(test_fraction),
                    "seed": None if seed is None else int(seed), "shuffle": bool(shuffle),
                    "n_sequences": int(len(idx)), "of": self.n_sequences}
            c = self.select(idx)
            c.provenance["split"] = info
            out.append(c)
        return out[0], out[1]

    def preprocess(self, *, dedupe: bool = False, subset: Optional[int] = None, subset_seed: Optional[int] = None,
                   chunk_len: Optional[int] = None, max_len: Optional[int] = None, min_len: Optional[int] = None,
                   merge_below: Optional[float] = None, residual_symbol: str = DEFAULT_RESIDUAL,
                   shuffle_seed: Optional[int] = None) -> "Corpus":
        """Apply the paper's preprocessing steps; returns a new Corpus.

        The steps run in this fixed order, each only when its option is given, and
        each is appended to ``provenance["preprocessing"]`` with its effect:

        1. ``dedupe``: drop exact duplicate sequences (the first occurrence stays).
        2. ``subset``: keep ``subset`` sequences: the first ones, or, with
           ``subset_seed``, a seeded random sample (kept in file order).
        3. ``chunk_len``: cut every sequence longer than ``chunk_len`` into consecutive pieces of
           ``chunk_len`` symbols (the last one shorter), in order; a piece of sequence ``name``
           is named ``name:START-END`` (1-based, inclusive).  A genome (one long sequence)
           becomes many, which a split can hold out and the engine batches.
        4. ``max_len``: truncate every sequence after ``max_len`` symbols.
        5. ``min_len``: drop sequences shorter than ``min_len``.
        6. ``merge_below``: sort symbols by count (rarest first, ties by index) and
           merge the longest run of rarest symbols whose cumulative frequency stays
           strictly below ``merge_below`` (a fraction, e.g. 0.002 for 0.2 %) into one
           residual symbol ``residual_symbol``, appended at the end of the
           vocabulary.  Nothing happens when fewer than two symbols qualify.
        7. ``shuffle_seed``: seeded shuffle of the sequence order.

        Raises
        ------
        ValueError
            Bad option values, or when no sequence is left.
        """
        c = self
        if dedupe:
            seen = set()
            first: List[int] = []
            for i, s in enumerate(c.sequences):
                h = hashlib.blake2b(s.tobytes(), digest_size=16).digest()
                if h not in seen:
                    seen.add(h)
                    first.append(i)
            c = c.select(first, step={"step": "dedupe", "removed": c.n_sequences - len(first)})
        if subset is not None:
            n = int(subset)
            if n < 1:
                raise ValueError(f"subset must be >= 1, got {subset}")
            total = c.n_sequences
            if subset_seed is None:
                idx = np.arange(min(n, total))
            else:
                rng = np.random.default_rng(int(subset_seed))
                idx = np.sort(rng.choice(total, size=min(n, total), replace=False))
            c = c.select(idx, step={"step": "subset", "n": n, "seed": None if subset_seed is None else int(subset_seed),
                                    "mode": "first" if subset_seed is None else "random", "kept": int(len(idx)),
                                    "of": total})
        if chunk_len is not None:
            c = c._chunked(int(chunk_len))
        if max_len is not None:
            k = int(max_len)
            if k < 1:
                raise ValueError(f"max_len must be >= 1, got {max_len}")
            n_cut = int(np.count_nonzero(c.lengths > k))
            seqs = [s[:k] if s.shape[0] > k else s for s in c.sequences]
            tags = None if c.tags is None else [t[:k] if t.shape[0] > k else t for t in c.tags]
            c = c._derive(seqs, names=c.names, step={"step": "max_len", "max_len": k, "truncated": n_cut},
                          tags=tags)
        if min_len is not None:
            k = int(min_len)
            if k < 1:
                raise ValueError(f"min_len must be >= 1, got {min_len}")
            keep = np.flatnonzero(c.lengths >= k)
            if keep.size == 0:
                raise ValueError(f"no sequence has length >= {k}")
            c = c.select(keep, step={"step": "min_len", "min_len": k, "removed": c.n_sequences - int(keep.size)})
        if merge_below is not None:
            c = c._merge_rare(float(merge_below), str(residual_symbol))
        if shuffle_seed is not None:
            order = np.random.default_rng(int(shuffle_seed)).permutation(c.n_sequences)
            c = c.select(order, step={"step": "shuffle", "seed": int(shuffle_seed)})
        return c

    def _merge_rare(self, threshold: float, residual: str) -> "Corpus":
        if not (0.0 <= threshold < 1.0):
            raise ValueError(f"merge_below is a fraction in [0, 1), got {threshold}")
        counts = self.symbol_counts
        total = int(counts.sum())
        m = self.n_symbols
        order = np.lexsort((np.arange(m), counts))  # count ascending, then index
        cum = np.cumsum(counts[order]) / max(total, 1)
        k = int(np.count_nonzero(cum < threshold))
        merged = sorted(int(i) for i in order[:k])
        step = {"step": "merge_below", "threshold": threshold, "residual_symbol": residual,
                "merged": [self.vocabulary[i] for i in merged],
                "merged_fraction": float(cum[k - 1]) if k else 0.0,
                "n_symbols_before": m}
        if k < 2:
            # Nothing merged: the provenance says so consistently (a single symbol below the
            # threshold is left alone and named separately).
            step["merged"] = []
            step["merged_fraction"] = 0.0
            step["below_threshold_kept"] = [self.vocabulary[i] for i in merged]
            step["n_symbols_after"] = m
            return self._derive(self.sequences, names=self.names, step=step, tags=self.tags)
        merged_set = set(merged)
        kept = [i for i in range(m) if i not in merged_set]
        if residual in {self.vocabulary[i] for i in kept}:
            raise ValueError(f"residual symbol {residual!r} is already a kept symbol; choose another name")
        lut = np.empty(m, dtype=np.int32)
        lut[kept] = np.arange(len(kept), dtype=np.int32)
        lut[merged] = len(kept)
        vocab = [self.vocabulary[i] for i in kept] + [residual]
        seqs = [lut[s] for s in self.sequences]
        step["n_symbols_after"] = len(vocab)
        return self._derive(seqs, vocabulary=vocab, names=self.names, step=step, tags=self.tags)

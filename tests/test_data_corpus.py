"""Corpus (issue 4): statistics, split, preprocessing (checked against brute-force oracles)."""
import json
from collections import Counter

import numpy as np
import pytest

from densehmm_core.data import Corpus, load
from densehmm_core.sequences import as_sequences, infer_n_symbols


def make_corpus(seed=0, n=40, m=7, max_len=30):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(m, 0.3))
    seqs = [rng.choice(m, size=rng.integers(1, max_len), p=p) for _ in range(n)]
    return Corpus(seqs, [f"s{i}" for i in range(m)], names=[f"r{i}" for i in range(n)])


def test_basic_properties_and_statistics():
    c = make_corpus()
    toks = np.concatenate(c.sequences)
    assert c.n_sequences == 40 and c.n_tokens == toks.size == c.lengths.sum()
    assert c.n_symbols == len(c.vocabulary) == 7
    assert all(s.dtype == np.int32 for s in c.sequences)
    assert np.array_equal(c.symbol_counts, np.bincount(toks, minlength=7))
    assert np.isclose(c.symbol_frequencies.sum(), 1.0)
    st = json.loads(json.dumps(c.statistics()))
    assert st["n_tokens"] == c.n_tokens and sum(st["length_histogram"]["counts"]) == 40
    assert st["length_min"] == int(c.lengths.min()) and st["length_max"] == int(c.lengths.max())
    assert st["symbol_counts"] == {f"s{i}": int(v) for i, v in enumerate(np.bincount(toks, minlength=7))}
    X, L = c.to_arrays()
    assert X.shape == (c.n_tokens, 1) and np.array_equal(L, c.lengths)


def test_corpus_is_accepted_as_sequences():
    c = make_corpus()
    seqs = as_sequences(c, n_symbols=c.n_symbols)
    assert len(seqs) == c.n_sequences and all(np.array_equal(a, b) for a, b in zip(seqs, c.sequences))
    assert infer_n_symbols(c) == 7


def test_validation():
    with pytest.raises(ValueError, match="outside"):
        Corpus([np.array([0, 3])], ["a", "b"])
    with pytest.raises(ValueError, match="empty"):
        Corpus([np.array([], dtype=int)], ["a"])
    with pytest.raises(ValueError, match="duplicate"):
        Corpus([np.array([0])], ["a", "a"])
    t = Corpus.from_tokens([["x", "y"], ["y"]])
    assert t.vocabulary == ["x", "y"] and t.decode(t.sequences[0], sep="") == "xy"
    assert np.array_equal(t.encode(["y", "x"]), [1, 0])


def test_split_seeded_disjoint_shared_vocabulary():
    c = make_corpus(n=41)
    tr, te = c.split()
    assert tr.n_sequences == 21 and te.n_sequences == 20  # round(20.5) == 20 test sequences
    assert tr.vocabulary is c.vocabulary and te.vocabulary is c.vocabulary
    assert sorted(tr.names + te.names) == sorted(c.names)
    tr2, te2 = c.split(seed=0)
    assert tr2.names == tr.names and te2.names == te.names
    tr3, _ = c.split(seed=1)
    assert tr3.names != tr.names
    a, b = c.split(test_fraction=0.25, seed=3)
    assert b.n_sequences == round(41 * 0.25) and a.n_sequences == 41 - b.n_sequences
    assert b.provenance["split"] == {"part": "test", "test_fraction": 0.25, "seed": 3, "shuffle": True,
                                     "n_sequences": b.n_sequences, "of": 41}
    nos_tr, nos_te = c.split(shuffle=False)
    assert nos_tr.names == c.names[:nos_tr.n_sequences]
    with pytest.raises(ValueError):
        c.split(test_fraction=1.0)


def test_split_sizes():
    for n in (2, 3, 10, 41):
        c = make_corpus(n=n)
        tr, te = c.split()
        assert tr.n_sequences + te.n_sequences == n and tr.n_sequences >= 1 and te.n_sequences >= 1
        assert te.n_sequences == min(max(int(round(n * 0.5)), 1), n - 1)


def test_subset_first_and_random():
    c = make_corpus()
    f = c.preprocess(subset=10)
    assert f.names == c.names[:10]
    r1 = c.preprocess(subset=10, subset_seed=5)
    r2 = c.preprocess(subset=10, subset_seed=5)
    assert r1.names == r2.names and r1.names != f.names
    assert [int(x[1:]) for x in r1.names] == sorted(int(x[1:]) for x in r1.names)  # file order kept
    assert c.preprocess(subset=1000).n_sequences == 40
    assert r1.provenance["preprocessing"][-1]["mode"] == "random"


def test_max_len_min_len():
    c = make_corpus()
    t = c.preprocess(max_len=5)
    assert all(len(a) == min(len(b), 5) and np.array_equal(a, b[:5]) for a, b in zip(t.sequences, c.sequences))
    assert t.provenance["preprocessing"][0]["truncated"] == int(np.sum(c.lengths > 5))
    k = c.preprocess(min_len=10)
    assert k.names == [n for n, L in zip(c.names, c.lengths) if L >= 10]
    with pytest.raises(ValueError):
        c.preprocess(min_len=10_000)


@pytest.mark.parametrize("k", [1, 4, 7, 29])
def test_chunk_len_cuts_long_sequences_into_consecutive_named_pieces(k):
    """Every sequence longer than k becomes pieces of k symbols (the last shorter) that concatenate
    back to it, in order, named name:START-END (1-based, inclusive); shorter ones stay as they are."""
    c = make_corpus()
    t = c.preprocess(chunk_len=k)
    expected, names = [], []
    for name, s in zip(c.names, c.sequences):       # brute force: symbol by symbol
        if len(s) <= k:
            expected.append(list(s))
            names.append(name)
            continue
        for a in range(0, len(s), k):
            expected.append(list(s[a:a + k]))
            names.append(f"{name}:{a + 1}-{min(len(s), a + k)}")
    assert [list(x) for x in t.sequences] == expected and t.names == names
    assert t.n_tokens == c.n_tokens and max(t.lengths) <= k
    step = t.provenance["preprocessing"][-1]
    assert step == {"step": "chunk_len", "chunk_len": k, "cut": int(np.sum(c.lengths > k)),
                    "sequences": len(expected), "of": c.n_sequences}
    with pytest.raises(ValueError, match="chunk_len must be >= 1"):
        c.preprocess(chunk_len=0)


def test_chunk_len_comes_before_max_len_and_load_applies_it(tmp_path):
    """The steps' order: cut first, then truncate the pieces; load() takes the option too (a genome)."""
    c = make_corpus()
    t = c.preprocess(chunk_len=10, max_len=4)
    assert [s["step"] for s in t.provenance["preprocessing"]] == ["chunk_len", "max_len"]
    assert t.n_sequences == c.preprocess(chunk_len=10).n_sequences and max(t.lengths) <= 4
    path = tmp_path / "genome.fa"
    path.write_text(">chr1 a genome\n" + "ACGT" * 25 + "AC\n")
    g = load(str(path), chunk_len=30)
    assert g.lengths.tolist() == [30, 30, 30, 12] and g.names[0] == "chr1:1-30" and g.names[-1] == "chr1:91-102"
    assert "".join("".join(g.decode(s)) for s in g.sequences) == "ACGT" * 25 + "AC"


def brute_force_merge(corpus, threshold):
    """Oracle: add symbols rarest first while the cumulative share stays below the threshold."""
    counts = Counter()
    for s in corpus.sequences:
        counts.update(corpus.decode(s))
    total = sum(counts.values())
    order = sorted(range(corpus.n_symbols), key=lambda i: (counts[corpus.vocabulary[i]], i))
    merged, acc = [], 0
    for i in order:
        acc += counts[corpus.vocabulary[i]]
        if acc / total < threshold:
            merged.append(corpus.vocabulary[i])
        else:
            break
    return merged if len(merged) >= 2 else []


@pytest.mark.parametrize("seed,threshold", [(0, 0.05), (1, 0.1), (2, 0.2), (3, 0.01), (4, 0.5)])
def test_merge_rare_matches_oracle(seed, threshold):
    c = make_corpus(seed=seed, m=9)
    merged = brute_force_merge(c, threshold)
    r = c.preprocess(merge_below=threshold, residual_symbol="RES")
    step = r.provenance["preprocessing"][-1]
    assert sorted(step["merged"]) == sorted(merged)
    if merged:
        assert r.vocabulary == [v for v in c.vocabulary if v not in merged] + ["RES"]
    else:
        assert r.vocabulary == c.vocabulary
    for a, b in zip(c.sequences, r.sequences):
        expect = ["RES" if x in merged else x for x in c.decode(a)]
        assert r.decode(b) == expect
    assert r.n_symbols == c.n_symbols - len(merged) + (1 if merged else 0)


def test_encode_with_matches_symbol_strings():
    """Oracle: every token keeps its string; the new vocabulary is the target one."""
    rng = np.random.default_rng(3)
    words = ["a", "b", "c", "d", "e"]
    sents = [list(rng.choice(words, size=int(rng.integers(1, 9)))) for _ in range(20)]
    c = Corpus.from_tokens(sents, vocabulary=words + ["unused"], names=[f"s{i}" for i in range(20)])
    target = ["e", "x", "c", "a", "d", "b"]
    e = c.encode_with(target)
    assert e.vocabulary == target and e.names == c.names
    assert [e.decode(s) for s in e.sequences] == sents  # "unused" is missing from target but never used
    assert all(s.dtype == np.int32 for s in e.sequences)
    assert e.provenance["preprocessing"][-1]["step"] == "encode_with"
    assert c.vocabulary == words + ["unused"]  # the original corpus is unchanged


def test_encode_with_its_own_vocabulary_shares_the_sequences():
    """A model's vocabulary that is the corpus's own (a job shown with the data it trained on): the
    sequences are the same, shared as select's are, not copied one by one (the Brown corpus: 100 ms of
    the GUI thread); the result is what the general path gives, provenance included."""
    rng = np.random.default_rng(5)
    words = ["a", "b", "c", "<unk>"]
    sents = [list(rng.choice(words, size=int(rng.integers(1, 9)))) for _ in range(30)]
    c = Corpus.from_tokens(sents, vocabulary=words, names=[f"s{i}" for i in range(30)])
    e = c.encode_with(list(words), unknown="<unk>")
    assert all(x is y for x, y in zip(e.sequences, c.sequences))
    assert e.vocabulary == words and [e.decode(s) for s in e.sequences] == sents
    counted = np.bincount(np.concatenate(e.sequences), minlength=4)      # what was counted comes along
    np.testing.assert_array_equal(e.symbol_counts, counted)
    np.testing.assert_array_equal(e.lengths, [len(x) for x in sents])
    assert e.n_tokens == sum(map(len, sents))
    step = e.provenance["preprocessing"][-1]
    assert step == {"step": "encode_with", "n_symbols_before": 4, "n_symbols_after": 4}
    # with lower-casing and word shapes asked for: nothing is looked up lower-cased or shaped
    e2 = c.encode_with(tuple(words), unknown="<unk>", lowercase=True, shapes=True)
    assert all(x is y for x, y in zip(e2.sequences, c.sequences))
    assert e2.provenance["preprocessing"][-1] == {"step": "encode_with", "n_symbols_before": 4,
                                                  "n_symbols_after": 4, "lowercased_tokens": 0,
                                                  "shape_class_tokens": 0}
    # one symbol more at the end, or two swapped: mapped, not shared
    longer = c.encode_with(words + ["z"])
    assert not any(x is y for x, y in zip(longer.sequences, c.sequences))
    assert [longer.decode(s) for s in longer.sequences] == sents
    swapped = c.encode_with(["b", "a", "c", "<unk>"])
    assert [swapped.decode(s) for s in swapped.sequences] == sents
    assert any(not np.array_equal(x, y) for x, y in zip(swapped.sequences, c.sequences))


class CountedStr(str):
    """A symbol name that counts its conversions to ``str``."""
    calls = 0

    def __str__(self):
        CountedStr.calls += 1
        return str.__str__(self)


def test_a_corpus_read_with_its_own_vocabulary_converts_no_names():
    """The window reads a job's data with its model's vocabulary when the job starts: with the corpus's
    own names (the usual case) no name is converted or indexed again (12 ms of 30,000 names at every
    start, the Brown corpus).  The result is what the names give, and a bad unknown symbol is refused."""
    from densehmm_core.data import encode_for_model
    rng = np.random.default_rng(9)
    words = ["a", "b", "c", "<unk>"]
    sents = [list(rng.choice(words, size=int(rng.integers(1, 9)))) for _ in range(20)]
    c = Corpus.from_tokens(sents, vocabulary=words)
    named = [CountedStr(w) for w in words]                   # equal names, each conversion counted
    CountedStr.calls = 0
    e = c.encode_with(named, unknown="<unk>")
    f = encode_for_model(c, named, len(words))
    assert CountedStr.calls == 0
    for out in (e, f):
        assert out.vocabulary == words and all(type(v) is str for v in out.vocabulary)
        assert [out.decode(s) for s in out.sequences] == sents
        assert all(x is y for x, y in zip(out.sequences, c.sequences))
    assert f.provenance["preprocessing"][-1] == {"step": "encode_with", "n_symbols_before": 4, "n_symbols_after": 4}
    with pytest.raises(ValueError, match="unknown symbol 'zz' is not in the vocabulary"):
        c.encode_with(named, unknown="zz")
    other = [CountedStr(w) for w in ["b", "a", "c", "<unk>"]]     # other names: converted once each
    CountedStr.calls = 0
    swapped = c.encode_with(other)
    assert CountedStr.calls == 4 and [swapped.decode(s) for s in swapped.sequences] == sents


def test_encode_with_unknown_symbols():
    c = Corpus.from_tokens([["a", "q", "b"], ["q", "z", "q"], ["a"]])
    with pytest.raises(ValueError, match=r"2 symbol\(s\) not in the vocabulary: 'q', 'z' \(4 of 7 tokens\)"):
        c.encode_with(["a", "b", "<other>"])
    e = c.encode_with(["a", "b", "<other>"], unknown="<other>")
    assert [e.decode(s) for s in e.sequences] == [["a", "<other>", "b"], ["<other>"] * 3, ["a"]]
    step = e.provenance["preprocessing"][-1]
    assert step["to_unknown"] == ["q", "z"] and step["unknown_tokens"] == 4
    with pytest.raises(ValueError, match="unknown symbol 'RES' is not in the vocabulary"):
        c.encode_with(["a", "b"], unknown="RES")
    with pytest.raises(ValueError, match="duplicate"):
        c.encode_with(["a", "a", "b"])
    tagged = Corpus([np.array([0, 1]), np.array([1])], ["a", "b"], tags=[np.array([1, 0]), np.array([1])],
                    tag_vocabulary=["X", "Y"])
    t = tagged.encode_with(["b", "a"])  # gold tags stay aligned with the tokens
    assert [list(s) for s in t.sequences] == [[1, 0], [0]] and [list(x) for x in t.tags] == [[1, 0], [1]]
    assert t.tag_vocabulary == ["X", "Y"]


def test_merge_residual_name_clash():
    c = Corpus.from_tokens([list("aaaaaaaaaabbbbbbbbbcd")])
    with pytest.raises(ValueError, match="already a kept symbol"):
        c.preprocess(merge_below=0.2, residual_symbol="a")


def test_dedupe_and_shuffle_and_order_of_steps():
    seqs = [np.array([0, 1]), np.array([1]), np.array([0, 1]), np.array([2, 2, 2]), np.array([1])]
    c = Corpus(seqs, ["a", "b", "c"], names=list("vwxyz"))
    d = c.preprocess(dedupe=True)
    assert d.names == ["v", "w", "y"] and d.provenance["preprocessing"][0]["removed"] == 2
    s = c.preprocess(shuffle_seed=3)
    assert sorted(s.names) == sorted(c.names) and s.names == c.preprocess(shuffle_seed=3).names
    all_steps = c.preprocess(dedupe=True, subset=2, max_len=1, min_len=1, merge_below=0.4, shuffle_seed=0)
    assert [x["step"] for x in all_steps.provenance["preprocessing"]] == \
        ["dedupe", "subset", "max_len", "min_len", "merge_below", "shuffle"]


def test_getitem_and_repr():
    c = make_corpus()
    assert np.array_equal(c[3], c.sequences[3])
    sub = c[:5]
    assert isinstance(sub, Corpus) and sub.names == c.names[:5]
    assert "40 sequences" in repr(c)


def test_load_applies_preprocessing_like_preprocess(tmp_path):
    rng = np.random.default_rng(1)
    lines = []
    for i in range(50):
        L = int(rng.integers(1, 60))
        probs = [.3, .2, .1, .1, .1, .1, .05, .03, .01, .01]
        lines.append(f">s{i}\n" + "".join(rng.choice(list("ACDEFGHIKW"), size=L, p=probs)))
    p = tmp_path / "p.fasta"
    p.write_text("\n".join(lines) + "\n")
    base = load(p)
    opts = dict(subset=30, subset_seed=2, max_len=20, min_len=3, merge_below=0.03)
    a = load(p, **opts)
    b = base.preprocess(**opts)
    assert a.vocabulary == b.vocabulary and a.names == b.names
    assert all(np.array_equal(x, y) for x, y in zip(a.sequences, b.sequences))
    assert a.provenance["preprocessing"] == b.provenance["preprocessing"]

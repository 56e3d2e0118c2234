"""Issue 14 data layer: words mode with gold tags, rare-word shape classes, multi-file corpora;
issue 16 data items (presets for another format, merge provenance).

The fixture tests/fixtures/data/words.conllu is counted by hand in the comments below.
"""
import pathlib

import numpy as np
import pytest

from densehmm_core.data import NO_TAG, SHAPE_CLASSES, Corpus, load, word_shape

FIX = pathlib.Path(__file__).parent / "fixtures" / "data"
WORDS = FIX / "words.conllu"
EXTRA = FIX / "words_extra.txt"

# The fixture, as written (word, UPOS, XPOS) per sentence.
GOLD = [
    [("The", "DET", "DT"), ("dog", "NOUN", "NN"), ("runs", "VERB", "VBZ"), ("quickly", "ADV", "RB"),
     (".", "PUNCT", ".")],
    [("the", "DET", "DT"), ("dog", "NOUN", "NN"), ("barked", "VERB", "VBD"), (".", "PUNCT", ".")],
    [("NASA", "PROPN", "NNP"), ("launched", "VERB", "VBD"), ("3", "NUM", "CD"), ("well-known", "ADJ", "JJ"),
     ("rockets", "NOUN", "NNS"), (".", "PUNCT", ".")],
    [("Vinken", "PROPN", "NNP"), ("runs", "VERB", "VBZ"), ("to", "ADP", "IN"), ("the", "DET", "DT"),
     ("dog", "NOUN", "NN"), ("!", "PUNCT", ".")],
    [("The", "DET", "DT"), ("happiness", "NOUN", "NN"), ("was", "AUX", "VBD"), ("amazing", "ADJ", "JJ"),
     ("--", "PUNCT", ":")],
]


def _rows(c: Corpus):
    """(words, tags) per sequence as strings."""
    return [(c.decode(s), [c.tag_vocabulary[i] if i >= 0 else None for i in t]) for s, t in zip(c.sequences, c.tags)]


# ----------------------------------------------------------------------------- gold tags
def test_words_mode_has_aligned_gold_tags():
    c = load(WORDS, observe="words", min_count=1)
    assert c.tag_vocabulary == sorted({u for s in GOLD for _, u, _ in s})
    assert _rows(c) == [([w for w, _, _ in s], [u for _, u, _ in s]) for s in GOLD]
    assert all(t.dtype == np.int32 for t in c.tags) and c.has_tags and c.n_tags == 10
    st = c.statistics()
    assert st["tag_counts"]["NOUN"] == 5 and st["tag_counts"]["PUNCT"] == 5 and st["n_untagged_tokens"] == 0
    assert sum(st["tag_counts"].values()) == c.n_tokens == 26
    assert c.names == ["s1", "s2", "s3", "s4", "s5"]
    assert c.observes_words and c.select([0]).observes_words and not load(WORDS).observes_words
    x = load(WORDS, observe="words", min_count=1, tagset="xpos")
    assert [[x.tag_vocabulary[i] for i in t] for t in x.tags] == [[p for _, _, p in s] for s in GOLD]


def test_tags_mode_keeps_gold_tags_too():
    c = load(WORDS)  # observe="tags": the symbols are the tags, and .tags holds them as well
    assert c.vocabulary == c.tag_vocabulary
    assert all(np.array_equal(s, t) for s, t in zip(c.sequences, c.tags))


def test_fasta_and_in_memory_have_no_tags():
    f = load(FIX / "pdb_seqres_like.fasta")
    assert f.tags is None and f.tag_vocabulary is None and not f.has_tags and f.n_tags == 0
    m = Corpus.from_sequences([np.array([0, 1, 1])])
    assert m.tags is None
    with pytest.raises(ValueError, match="no gold tags"):
        f.labelled()


def test_tags_validation():
    seqs = [np.array([0, 1]), np.array([1])]
    with pytest.raises(ValueError, match="length"):
        Corpus(seqs, ["a", "b"], tags=[np.array([0]), np.array([0])], tag_vocabulary=["X"])
    with pytest.raises(ValueError, match="outside"):
        Corpus(seqs, ["a", "b"], tags=[np.array([0, 2]), np.array([0])], tag_vocabulary=["X", "Y"])
    with pytest.raises(ValueError, match="tag_vocabulary"):
        Corpus(seqs, ["a", "b"], tags=[np.array([0, 0]), np.array([0])])
    c = Corpus(seqs, ["a", "b"], tags=[np.array([0, NO_TAG]), np.array([1])], tag_vocabulary=["X", "Y"])
    assert c.tag_counts().tolist() == [1, 1]


def test_split_select_and_every_preprocessing_step_keep_tags_aligned():
    c = load(WORDS, observe="words", min_count=1, lowercase=True)
    rows = dict(zip(c.names, _rows(c)))
    # dedupe, subset, max_len, min_len, merge_below, shuffle: each one keeps (word, tag) pairs together
    p = c.preprocess(dedupe=True, subset=4, subset_seed=3, max_len=4, min_len=2, merge_below=0.2, shuffle_seed=1)
    assert [s["step"] for s in p.provenance["preprocessing"]] == ["dedupe", "subset", "max_len", "min_len",
                                                                   "merge_below", "shuffle"]
    cut = c.preprocess(chunk_len=3)      # pieces of sentences keep their tags
    assert cut.n_sequences > c.n_sequences
    for name, (words, tags) in zip(cut.names, _rows(cut)):
        base, _, span = name.rpartition(":")
        if base in rows and span and "-" in span:
            a, b = (int(x) for x in span.split("-"))
            assert (words, tags) == (rows[base][0][a - 1:b], rows[base][1][a - 1:b])
        else:
            assert (words, tags) == rows[name]
    assert p.vocabulary != c.vocabulary  # rare words were merged into <other>
    assert p.tag_vocabulary is c.tag_vocabulary
    for name, (words, tags) in zip(p.names, _rows(p)):
        w0, t0 = rows[name]
        assert tags == t0[:4]
        assert all(w == w_ or w == "<other>" for w, w_ in zip(words, w0[:4]))
    train, test = c.split(0.4, seed=7)
    for part in (train, test):
        assert [rows[n] for n in part.names] == _rows(part)
    assert sorted(train.names + test.names) == sorted(c.names)
    sub = c[[4, 0]]
    assert _rows(sub) == [rows["s5"], rows["s1"]]


# ------------------------------------------------------------------------ vocabulary
def test_lowercase_and_min_count_with_unk():
    c = load(WORDS, observe="words", min_count=2)
    # as written: The 2, the 2, dog 3, runs 2, "." 3; 14 types once each
    assert c.vocabulary == [".", "The", "dog", "runs", "the", "<unk>"]
    low = load(WORDS, observe="words", lowercase=True, min_count=2)
    assert low.vocabulary == [".", "dog", "runs", "the", "<unk>"]   # the: 4
    counts = dict(zip(low.vocabulary, low.symbol_counts.tolist()))
    assert counts == {".": 3, "dog": 3, "runs": 2, "the": 4, "<unk>": 14}
    assert low.provenance["reader"]["n_unknown_types"] == 14
    assert "14 words seen fewer than 2 times (14 tokens) mapped to '<unk>'" in low.warnings


def test_max_vocab_counts_the_unknown_symbol():
    c = load(WORDS, observe="words", min_count=1, lowercase=True, max_vocab=6)
    # by count: the 4, . 3, dog 3, runs 2, then the count-1 words alphabetically: "!" first
    assert c.vocabulary == ["!", ".", "dog", "runs", "the", "<unk>"]
    full = load(WORDS, observe="words", min_count=1, lowercase=True, max_vocab=18)   # 18 lower-cased types: no cap
    assert "<unk>" not in full.vocabulary and full.n_symbols == 18


def test_rare_words_become_shape_classes():
    c = load(WORDS, observe="words", lowercase=True, min_count=2, rare="shape")
    assert c.vocabulary == [".", "dog", "runs", "the", "<unk-num>", "<unk-hyph>", "<unk-caps>", "<unk-cap>",
                            "<unk-ness>", "<unk-ing>", "<unk-ed>", "<unk-ly>", "<unk-s>", "<unk-punct>", "<unk>"]
    words = [c.decode(s) for s in c.sequences]
    assert words[2] == ["<unk-caps>", "<unk-ed>", "<unk-num>", "<unk-hyph>", "<unk-s>", "."]
    assert words[3] == ["<unk-cap>", "runs", "<unk>", "the", "dog", "<unk-punct>"]
    assert words[4] == ["the", "<unk-ness>", "<unk-s>", "<unk-ing>", "<unk-punct>"]
    # the shape comes from the word as written (NASA, Vinken), not from its lower-cased form
    assert c.provenance["options"]["rare"] == "shape"


@pytest.mark.parametrize("max_vocab", [11, 12, 14, 16, 18, 25])
def test_max_vocab_with_shapes_matches_brute_force(max_vocab):
    c = load(WORDS, observe="words", min_count=1, lowercase=True, rare="shape", max_vocab=max_vocab)
    # oracle: the largest k such that the k most frequent types (ties alphabetical) plus the shape
    # classes of all other words fit into max_vocab
    tokens = [w for s in GOLD for w, _, _ in s]
    types = sorted({w.lower() for w in tokens}, key=lambda t: (-sum(w.lower() == t for w in tokens), t))
    for k in range(len(types), -1, -1):
        kept = set(types[:k])
        classes = {word_shape(w) for w in tokens if w.lower() not in kept}
        if k + len(classes) <= max_vocab:
            break
    assert c.vocabulary == sorted(kept) + [s for s in SHAPE_CLASSES if s in classes]
    assert c.n_symbols <= max_vocab


def test_max_vocab_too_small_for_the_shapes_and_bad_values():
    with pytest.raises(ValueError, match="too small"):
        load(WORDS, observe="words", min_count=1, rare="shape", max_vocab=5)
    with pytest.raises(ValueError, match="observe='words'"):
        load(WORDS, rare="shape")
    with pytest.raises(ValueError, match="min_count"):
        load(WORDS, observe="words", min_count=0)
    with pytest.raises(ValueError, match="rare must be"):
        load(WORDS, observe="words", min_count=1, rare="drop")


@pytest.mark.parametrize("word,shape", [
    ("1998", "<unk-num>"), ("3.5", "<unk-num>"), ("1-1/2", "<unk-num>"), ("F-16", "<unk-num>"),
    ("well-known", "<unk-hyph>"), ("--", "<unk-punct>"), ("NASA", "<unk-caps>"), ("U.S.", "<unk-caps>"),
    ("I", "<unk-cap>"), ("Vinken", "<unk-cap>"), ("walking", "<unk-ing>"), ("nation", "<unk-tion>"),
    ("region", "<unk-ion>"), ("happiness", "<unk-ness>"), ("kindly", "<unk-ly>"), ("dogs", "<unk-s>"),
    ("is", "<unk>"), ("ed", "<unk>"), ("%", "<unk-punct>"), ("zyx", "<unk>"), ("café", "<unk>"),
])
def test_word_shape_rules(word, shape):
    assert word_shape(word) == shape
    assert shape in SHAPE_CLASSES


# ------------------------------------------------------------------------ several files
def test_extra_files_make_one_training_corpus():
    gold = load(WORDS, observe="words", lowercase=True, min_count=2)
    c = load(WORDS, observe="words", lowercase=True, min_count=2, extra=[EXTRA])
    # union counts: the 5, . 5, dog 4, runs 3, vinken 2 (Vinken in both files), ran 1
    assert c.vocabulary == [".", "dog", "runs", "the", "vinken", "<unk>"]
    assert "vinken" not in gold.vocabulary
    assert c.n_sequences == 7 and c.names[5:] == ["words_extra.txt:line 2", "words_extra.txt:line 4"]
    assert all((t == NO_TAG).all() for t in c.tags[5:]) and all((t >= 0).all() for t in c.tags[:5])
    assert c.statistics()["n_untagged_tokens"] == 7
    assert c.tag_vocabulary == gold.tag_vocabulary      # extra files add no tags (theirs are not gold)
    lab = c.labelled()
    assert lab.n_sequences == 5 and [list(t) for t in lab.tags] == [list(t) for t in gold.tags]
    e = c.provenance["extra"]
    assert len(e) == 1 and e[0]["file"] == "words_extra.txt" and e[0]["format"] == "word_slash_tag"
    assert e[0]["reader"]["n_tokens"] == 7 and len(e[0]["sha256"]) == 64
    # a split mixes both; labelled() of a part keeps only gold sentences
    train, test = c.split(0.5, seed=0)
    assert train.labelled().n_sequences + test.labelled().n_sequences == 5


def test_extra_file_with_explicit_format_and_errors():
    c = load(WORDS, observe="words", min_count=1, extra=[(EXTRA, "brown")])
    assert c.provenance["extra"][0]["format"] == "word_slash_tag"
    with pytest.raises(ValueError, match="not FASTA"):
        load(WORDS, observe="words", min_count=1, extra=[FIX / "pdb_seqres_like.fasta"])
    with pytest.raises(ValueError, match="tagged corpora"):
        load(FIX / "pdb_seqres_like.fasta", extra=[EXTRA])
    with pytest.raises(FileNotFoundError):
        load(WORDS, observe="words", min_count=1, extra=[FIX / "missing.txt"])


# ------------------------------------------------------------------------ issue 16 items
def test_preset_for_another_format_is_an_error():
    with pytest.raises(ValueError, match="paper_protein.*meant for fasta files, not conllu.*mol='all'"):
        load(WORDS, preset="paper_protein")
    with pytest.raises(ValueError, match="not fasta"):
        load(FIX / "pdb_seqres_like.fasta", preset="paper_medpost")
    with pytest.raises(ValueError, match="drop_traces"):
        load(WORDS, preset="reference_code_penn")
    # a tag preset on another tagged format is fine (its options apply)
    c = load(WORDS, preset="paper_medpost")
    assert c.provenance["preset"] == "paper_medpost"


def test_merge_provenance_never_lists_nothing_with_a_fraction():
    seqs = [np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3])]
    c = Corpus(seqs, ["a", "b", "c", "d"])
    one = c.preprocess(merge_below=0.15).provenance["preprocessing"][-1]   # only "d" (10 %) qualifies
    assert one["merged"] == [] and one["merged_fraction"] == 0.0 and one["below_threshold_kept"] == ["d"]
    two = c.preprocess(merge_below=0.45).provenance["preprocessing"][-1]   # d, then a (ties by index)
    assert two["merged"] == ["a", "d"] and two["merged_fraction"] == pytest.approx(0.4)


# ------------------------------------------------------------------------ shared data
@pytest.mark.shared_data
def test_ptb_words_counts(shared_data):
    p = shared_data / "pos" / "ptb_wsj_sample_combined.mrg"
    if not p.exists():
        pytest.skip("PTB sample absent")
    c = load(p, observe="words", min_count=1, lowercase=True)
    # issue 14: 94,084 words without traces, 10,947 lower-cased types, 45 tags
    assert (c.n_tokens, c.n_symbols, c.n_tags) == (94_084, 10_947, 45)
    assert c.tag_counts()[c.tag_vocabulary.index("NN")] == 13_166
    t = load(p, observe="words", min_count=1, drop_traces=False)
    assert t.n_tokens == 100_676 and "-NONE-" in t.tag_vocabulary


@pytest.mark.shared_data
def test_ewt_with_conll2000_as_extra_text(shared_data):
    gold = shared_data / "pos" / "en_ewt-ud-dev.conllu"
    ext = shared_data / "pos" / "conll2000_test.txt"
    if not (gold.exists() and ext.exists()):
        pytest.skip("EWT dev or CoNLL-2000 test absent")
    c = load(gold, observe="words", lowercase=True, min_count=2, rare="shape", extra=[ext])
    assert c.n_tokens == 25_147 + 47_377 and c.n_tags == 17
    assert c.labelled().n_tokens == 25_147 and c.provenance["extra"][0]["format"] == "conll"
    assert set(SHAPE_CLASSES) >= set(c.provenance["reader"]["shape_classes"])


def test_encode_with_lowercase_and_shapes_keeps_tags():
    model_vocab = [".", "dog", "runs", "the", "<unk-num>", "<unk-caps>", "<unk-cap>", "<unk-ed>", "<unk>"]
    data = load(WORDS, observe="words", min_count=1)          # as written: The, NASA, Vinken, ...
    enc = data.encode_with(model_vocab, unknown="<unk>", lowercase=True, shapes=True)
    assert enc.decode(enc.sequences[0]) == ["the", "dog", "runs", "<unk>", "."]       # quickly: no <unk-ly>
    assert enc.decode(enc.sequences[2])[:3] == ["<unk-caps>", "<unk-ed>", "<unk-num>"]
    assert enc.decode(enc.sequences[3])[0] == "<unk-cap>"                               # Vinken
    assert all(np.array_equal(a, b) for a, b in zip(enc.tags, data.tags))
    step = enc.provenance["preprocessing"][-1]
    assert step["lowercased_tokens"] == 2 and step["shape_class_tokens"] == 5          # The x2; 5 shaped
    # without lower-casing "The" is unknown; capitalised, so it takes <unk-cap> first
    plain = data.encode_with(model_vocab, unknown="<unk>", shapes=True)
    assert plain.decode(plain.sequences[0])[0] == "<unk-cap>"


# ----------------------------------------------------------------------------- reusable word models (issue 24.1)
def test_words_default_to_an_unknown_symbol_for_words_seen_once():
    """observe="words" without min_count: words seen once (counted by hand: all but The 2, the 2, dog 3,
    runs 2, . 3) become <unk>, so the model has one; tags keep min_count None (every tag)."""
    from densehmm_core.data import WORDS_MIN_COUNT
    c = load(WORDS, observe="words")
    assert WORDS_MIN_COUNT == 2 and c.provenance["options"]["min_count"] == 2
    assert c.vocabulary == [".", "The", "dog", "runs", "the", "<unk>"]
    assert int(c.symbol_counts[-1]) == 26 - (2 + 2 + 3 + 2 + 3)
    assert c.decode(c.sequences[0]) == ["The", "dog", "runs", "<unk>", "."]
    assert load(WORDS, observe="words", min_count=2).vocabulary == c.vocabulary
    assert "<unk>" not in load(WORDS, observe="words", min_count=1).vocabulary   # 1 keeps every word
    assert load(WORDS).provenance["options"]["min_count"] is None


def test_unknown_report_and_skipping_sentences_with_unknown_words():
    """What a model does not know in a file, counted against the hand count of words_extra.txt
    ("The dog ran ." and "Vinken runs ."), and the two ways out: <unk>, or leave the sentences out."""
    from densehmm_core.data import encode_for_model, unknown_report
    data = load(EXTRA, observe="words", min_count=1)
    with_unk = [".", "The", "dog", "runs", "the", "<unk>"]
    rep = unknown_report(data, with_unk)
    assert rep == {"types": 2, "tokens": 2, "total_tokens": 7, "sentences": 2, "total_sentences": 2,
                   "examples": ["Vinken", "ran"], "unknown_symbol": "<unk>", "mostly_unknown": False}
    enc = encode_for_model(data, with_unk, len(with_unk))
    assert [enc.decode(s) for s in enc.sequences] == [["The", "dog", "<unk>", "."], ["<unk>", "runs", "."]]
    no_unk = [".", "The", "Vinken", "dog", "runs", "the"]
    rep = unknown_report(data, no_unk)
    assert (rep["types"], rep["tokens"], rep["sentences"], rep["examples"], rep["unknown_symbol"]) == \
        (1, 1, 1, ["ran"], None)
    with pytest.raises(ValueError, match=r"1 symbol\(s\) not in the vocabulary: 'ran' \(1 of 7 tokens\)"):
        encode_for_model(data, no_unk, len(no_unk))
    kept = encode_for_model(data, no_unk, len(no_unk), on_unknown="skip")
    assert [kept.decode(s) for s in kept.sequences] == [["Vinken", "runs", "."]]
    assert kept.names == [data.names[1]] and len(kept.tags) == 1
    step = [s for s in kept.provenance["preprocessing"] if s["step"] == "skip_unknown"][0]
    assert step["skipped_sequences"] == 1 and step["unknown_types"] == 1
    # lower-cased look-up: "The" is found as "the", so only what is left counts
    assert unknown_report(data, [".", "dog", "runs", "the", "<unk>"], lowercase=True)["examples"] == ["Vinken", "ran"]
    with pytest.raises(ValueError, match="every one of the 2 sequences"):
        encode_for_model(data, [".", "x"], 2, on_unknown="skip")
    with pytest.raises(ValueError, match="on_unknown"):
        encode_for_model(data, no_unk, 6, on_unknown="drop")

"""Readers of issue 4 on small hand-written fixtures: every format and quirk, and the errors."""
import gzip
import json
import pathlib

import numpy as np
import pytest

from densehmm_core.data import (ALPHABETS, FORMATS, Corpus, DataFormatError, collapse_brown_tag,
                                describe_formats, file_dialog_filters, load)

FIX = pathlib.Path(__file__).parent / "fixtures" / "data"


def seqs_as_strings(c, sep=""):
    return [c.decode(s, sep=sep) for s in c.sequences]


# ----------------------------------------------------------------------------- FASTA
def test_fasta_pdb_seqres_mol_filter_empty_stop_uppercase():
    c = load(FIX / "pdb_seqres_like.fasta")
    assert c.format == "fasta"
    assert seqs_as_strings(c) == ["MVLSEGEWQL", "MNIFEA", "ACDEF", "YQF"]
    assert c.names == ["101m_A", "104l_A", "1abc_B", "1xyz_A"]
    assert c.vocabulary == sorted(set("MVLSEGEWQLMNIFEAACDEFYQF"))
    assert all(s.dtype == np.int32 for s in c.sequences)
    assert any("1 empty record skipped" in w for w in c.warnings)
    assert any("2 records skipped by molecule type" in w and "mol:na" in w for w in c.warnings)
    assert c.provenance["reader"]["n_stop_symbols_stripped"] == 1


def test_fasta_mol_options():
    assert seqs_as_strings(load(FIX / "pdb_seqres_like.fasta", mol="na")) == ["CGCAAATTTGCG", "GGACUUCC"]
    allc = load(FIX / "pdb_seqres_like.fasta", mol="all")
    assert allc.n_sequences == 6 and allc.n_tokens == 24 + 12 + 8
    with pytest.raises(ValueError):
        load(FIX / "pdb_seqres_like.fasta", mol="dna")


def test_fasta_keep_stop_and_lowercase():
    c = load(FIX / "pdb_seqres_like.fasta", strip_stop=False, uppercase=False)
    assert seqs_as_strings(c) == ["MVLSEGEWQL", "mnifea", "ACDEF*", "YQF"]


def test_fasta_plain_headers_wrapped_and_blank_lines():
    c = load(FIX / "uniprot_prodigal.fasta")
    assert c.names[0] == "sp|P69905|HBA_HUMAN" and c.names[2] == "UniRef90_A0A8C0C0Z5"
    assert c.names[3] == "938293.PRJEB85.HG003688_1"
    text = (FIX / "uniprot_prodigal.fasta").read_text().split(">")[4].split("\n", 1)[1]
    assert seqs_as_strings(c)[3] == text.replace("\n", "").rstrip("*")
    assert len(c.sequences[3]) == 60 + 60 + 51


def test_fasta_crlf_and_gzip_equal_plain(tmp_path):
    raw = (FIX / "uniprot_prodigal.fasta").read_bytes()
    crlf = tmp_path / "crlf.fa"
    crlf.write_bytes(raw.replace(b"\n", b"\r\n"))
    gz = tmp_path / "seqs.fasta.gz"
    gz.write_bytes(gzip.compress(raw.replace(b"\n", b"\r\n")))
    base = load(FIX / "uniprot_prodigal.fasta")
    for p in (crlf, gz):
        c = load(p)
        assert c.vocabulary == base.vocabulary and c.names == base.names
        assert all(np.array_equal(a, b) for a, b in zip(c.sequences, base.sequences))
    assert load(gz).provenance["compressed"] is True


def test_fasta_nucleotide_and_alphabet_presets():
    c = load(FIX / "nucleotides.fasta")
    assert seqs_as_strings(c) == ["ACGUACGUNRY", "ACGTTTGCAN"]
    assert seqs_as_strings(load(FIX / "nucleotides.fasta", nucleotide="dna")) == ["ACGTACGTNRY", "ACGTTTGCAN"]
    assert seqs_as_strings(load(FIX / "nucleotides.fasta", nucleotide="rna")) == ["ACGUACGUNRY", "ACGUUUGCAN"]
    d = load(FIX / "nucleotides.fasta", nucleotide="dna", alphabet="dna")
    assert d.vocabulary == list("ACGTN")
    assert seqs_as_strings(d) == ["ACGTACGTNNN", "ACGTTTGCAN"]
    assert any("2 residues outside the 'dna' alphabet" in w for w in d.warnings)
    iu = load(FIX / "nucleotides.fasta", alphabet="rna_iupac", nucleotide="rna")
    assert iu.vocabulary == list(ALPHABETS["rna_iupac"][0]) and not iu.warnings
    p = load(FIX / "pdb_seqres_like.fasta", alphabet="protein20")
    assert p.n_symbols == 21 and p.vocabulary[-1] == "X"
    with pytest.raises(DataFormatError, match="not in the alphabet") as e:
        load(FIX / "nucleotides.fasta", alphabet="ACGT")
    assert e.value.line == 2   # the line of the 'U', not the record's header line


def test_fasta_errors(tmp_path):
    cases = {
        "noheader.fa": (b"ACGT\nACGT\n", "before any '>' header", 1),
        "badchar.fa": (b">a\nACGT\nAC1T\n", "invalid character '1'", 3),
        "onlyempty.fa": (b">a\n>b\n\n", "no records", None),
        "empty.fa": (b"", "empty file", None),
        "blank.fa": (b"\n\n  \n", "empty file", 1),
        "binary.fa": (b">a\nAC\x00\x01GT\n", "binary file", 2),
    }
    for name, (data, reason, line) in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(DataFormatError, match=reason) as e:
            load(p)
        assert isinstance(e.value, ValueError)
        assert e.value.file == name and e.value.line == line
        assert name in str(e.value)


def test_utf16_fasta_with_mark_reads_as_utf8_and_without_mark_is_refused(tmp_path):
    text = ">a\nACGT\n>b\nACGA\n>c\nAGT\n"
    (tmp_path / "plain.fa").write_text(text)
    base = load(tmp_path / "plain.fa")
    for name, data in {"le.fa": text.encode("utf-16"), "be.fa": b"\xfe\xff" + text.encode("utf-16-be"),
                       "u32.fa": text.encode("utf-32")}.items():
        (tmp_path / name).write_bytes(data)
        c = load(tmp_path / name)
        assert c.names == base.names and c.vocabulary == base.vocabulary, name
        assert all(np.array_equal(x, y) for x, y in zip(c.sequences, base.sequences)), name
    # errors keep their line numbers (counted in the text, not in the wide bytes)
    (tmp_path / "bad.fa").write_bytes(">a\nACGT\nAC1T\n".encode("utf-16"))
    with pytest.raises(DataFormatError, match="invalid character '1'") as e:
        load(tmp_path / "bad.fa")
    assert e.value.line == 3
    # UTF-16 without its mark: a NUL after every character, said as such (not "binary file")
    (tmp_path / "nomark.fa").write_bytes(text.encode("utf-16-le"))
    with pytest.raises(DataFormatError, match="UTF-16 text without a byte-order mark") as e:
        load(tmp_path / "nomark.fa")
    assert e.value.line == 1
    # a lone surrogate after the mark: undecodable, with the encoding named
    (tmp_path / "broken.fa").write_bytes(text.encode("utf-16") + b"\x00\xd8A\x00")
    with pytest.raises(DataFormatError, match="not valid utf-16"):
        load(tmp_path / "broken.fa")


def test_gzip_corrupt_and_empty(tmp_path):
    p = tmp_path / "x.fa.gz"
    rng = np.random.default_rng(0)
    body = b"".join(b">r\n" + bytes(rng.choice(list(b"ACGT"), 70)) + b"\n" for _ in range(2000))
    full = gzip.compress(body)
    p.write_bytes(full[: len(full) // 2])
    with pytest.raises(DataFormatError, match="gzip"):
        load(p)
    q = tmp_path / "y.fa.gz"
    q.write_bytes(gzip.compress(b""))
    with pytest.raises(DataFormatError, match="empty"):
        load(q)


# ---------------------------------------------------------------------- tagged text
def test_medpost_ioc():
    c = load(FIX / "sentences.ioc")
    assert c.format == "medpost"
    assert c.names == ["P01234567A01", "P01234567A02", "P07654321A02"]
    assert seqs_as_strings(c, " ") == ["NN CC NN VBD VVN .", "DD NN VVD MC NN .", "NN NNS VVD RR ."]
    assert any("1 empty sentence skipped" in w for w in c.warnings)
    w = load(FIX / "sentences.ioc", observe="words", min_count=1)
    assert w.decode(w.sequences[0]) == ["Pain", "and", "fever", "were", "reported", "."]


def test_word_tag_last_underscore_and_malformed():
    c = load(FIX / "word_tag.txt")
    assert c.format == "word_tag"
    assert seqs_as_strings(c, " ") == ["NNP CD", "PRP$ NN TO NNP MD VB JJR .", "NNP VBZ JJ ."]
    w = load(FIX / "word_tag.txt", observe="words", min_count=1)
    assert w.decode(w.sequences[2]) == ["New_York", "is", "big", "."]
    mal = [x for x in c.warnings if "malformed" in x]
    assert len(mal) == 1 and mal[0].startswith("4 malformed tokens skipped")
    assert "no '_' separator: 2" in mal[0] and "empty word: 1" in mal[0] and "empty tag: 1" in mal[0]
    assert c.provenance["reader"]["n_malformed"] == 4
    assert any("1 empty sentence skipped" in x for x in c.warnings)
    with pytest.raises(DataFormatError, match="malformed token 'M.'") as e:
        load(FIX / "word_tag.txt", on_malformed="error")
    assert e.value.line == 4


def test_word_slash_tag_brown_and_collapse():
    c = load(FIX / "brown.txt")
    assert c.format == "word_slash_tag"
    words = load(FIX / "brown.txt", observe="words", min_count=1)
    assert "1-1/2" in words.vocabulary and "can't" in words.vocabulary
    assert seqs_as_strings(c, " ")[1] == "pps md* vb , ppss+bem jj fw-at-hl fw-np-hl ."
    col = load(FIX / "brown.txt", collapse_tags=True)
    assert seqs_as_strings(col, " ") == ["at np nn jj nn vbd nr `` cd nns .", "pps md* vb , ppss jj at np ."]
    assert col.provenance["options"]["collapse_tags"] is True
    assert [collapse_brown_tag(t) for t in ["nn-tl", "fw-nn-tl", "ppss+md", "np$-hl", "--", "nn-tl-hl"]] == \
        ["nn", "nn", "ppss", "np$", "--", "nn"]


def test_ptb_leaves_traces_and_sentences():
    c = load(FIX / "trees.mrg")
    assert c.format == "ptb"
    assert seqs_as_strings(c, " ") == ["NNP NNP , MD VB DT NN .", "PRP$ NN VBD CD NN -LRB- `` ."]
    k = load(FIX / "trees.mrg", drop_traces=False)
    assert k.decode(k.sequences[1])[0] == "-NONE-" and k.n_tokens == c.n_tokens + 1
    w = load(FIX / "trees.mrg", observe="words", min_count=1)
    assert w.decode(w.sequences[0]) == ["Pierre", "Vinken", ",", "will", "join", "the", "board", "."]


def test_ptb_errors(tmp_path):
    for text, reason, line in [("( (S (NN a) )\n", "not closed", 1), ("(NN a))\n", "without a matching", 1),
                               ("(NN a)\nhello\n", "outside a bracketed tree", 2)]:
        p = tmp_path / "t.mrg"
        p.write_text(text)
        with pytest.raises(DataFormatError, match=reason) as e:
            load(p)
        assert e.value.line == line


def test_conll_columns():
    c = load(FIX / "chunks.conll")
    assert c.format == "conll"
    assert seqs_as_strings(c, " ") == ["NN IN DT NN .", "# VBD ."]
    ch = load(FIX / "chunks.conll", column=2)
    assert seqs_as_strings(ch, " ") == ["B-NP B-PP B-NP I-NP O", "O B-VP O"]
    assert load(FIX / "chunks.conll", column=-1).vocabulary == ch.vocabulary
    w = load(FIX / "chunks.conll", observe="words", min_count=1)
    assert w.decode(w.sequences[1]) == ["#", "rose", "."]
    with pytest.raises(DataFormatError, match="file has 3 columns"):
        load(FIX / "chunks.conll", column=3)


def test_conll_wrong_column_count(tmp_path):
    p = tmp_path / "bad.conll"
    p.write_text("a DT B\nb NN I\n\nc VB\n")
    with pytest.raises(DataFormatError, match="expected 3 columns.*found 2") as e:
        load(p)
    assert e.value.line == 4


def test_conllu_upos_xpos_ranges_empty_nodes():
    c = load(FIX / "sentences.conllu")
    assert c.format == "conllu"
    assert c.names == ["s1", "s2"]
    assert seqs_as_strings(c, " ") == ["PRON AUX PART VERB PUNCT", "INTJ PUNCT"]
    x = load(FIX / "sentences.conllu", tagset="xpos")
    assert seqs_as_strings(x, " ") == ["PRP VBD RB VB .", "UH"]
    assert x.provenance["reader"]["n_malformed"] == 1  # XPOS '_'
    w = load(FIX / "sentences.conllu", observe="words", min_count=1)
    assert w.decode(w.sequences[0]) == ["I", "did", "n't", "go", "."]


def test_conllu_errors(tmp_path):
    p = tmp_path / "bad.conllu"
    p.write_text("1\ta\ta\tDET\tDT\t_\t0\troot\t_\t_\n2\tb\tb\tNOUN\n")
    with pytest.raises(DataFormatError, match="10 tab-separated columns, found 4") as e:
        load(p)
    assert e.value.line == 2
    p.write_text("x\ta\ta\tDET\tDT\t_\t0\troot\t_\t_\n")
    with pytest.raises(DataFormatError, match="bad token ID"):
        load(p)


def test_words_vocabulary_cap_and_unknown():
    full = load(FIX / "word_tag.txt", observe="words", min_count=1)
    capped = load(FIX / "word_tag.txt", observe="words", min_count=1, max_vocab=3, unknown_symbol="<UNK>")
    counts = dict(zip(full.vocabulary, full.symbol_counts))
    top2 = sorted(counts, key=lambda s: (-counts[s], s))[:2]
    assert capped.vocabulary == sorted(top2) + ["<UNK>"]
    # every token is either kept or unknown, positions unchanged
    for a, b in zip(full.sequences, capped.sequences):
        fa, fb = full.decode(a), capped.decode(b)
        assert [x if x in top2 else "<UNK>" for x in fa] == fb
    assert any("vocabulary capped at 3" in w for w in capped.warnings)
    low = load(FIX / "word_tag.txt", observe="words", min_count=1, lowercase=True)
    assert "your" in low.vocabulary and "Your" not in low.vocabulary


def test_undecodable_text(tmp_path):
    p = tmp_path / "latin.txt"
    p.write_bytes("caf\u00e9_NN is_VBZ ._.\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match="not valid utf-8") as e:
        load(p, format="word_tag")
    assert e.value.line == 1
    c = load(p, format="word_tag", encoding="latin-1", observe="words", min_count=1)
    assert "caf\u00e9" in c.vocabulary


def test_unknown_format_and_options(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some prose here\nwith no tags at all\n")
    with pytest.raises(DataFormatError, match="unknown format"):
        load(p)
    with pytest.raises(TypeError, match="unknown option"):
        load(FIX / "trees.mrg", colour="red")
    with pytest.raises(ValueError, match="does not apply"):
        load(FIX / "trees.mrg", mol="all")
    with pytest.raises(ValueError, match="unknown format"):
        load(FIX / "trees.mrg", format="xml")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.fa")


def test_format_override_and_detection_by_content(tmp_path):
    # pdb_seqres.txt-style name: detected by content
    p = tmp_path / "pdb_seqres.txt"
    p.write_bytes((FIX / "pdb_seqres_like.fasta").read_bytes())
    assert load(p).format == "fasta"
    for fix, fmt in [("trees.mrg", "ptb"), ("sentences.conllu", "conllu"), ("chunks.conll", "conll"),
                     ("sentences.ioc", "medpost"), ("brown.txt", "word_slash_tag"), ("word_tag.txt", "word_tag")]:
        q = tmp_path / (fix + ".txt")
        q.write_bytes((FIX / fix).read_bytes())
        assert load(q).format == fmt, fix
    assert load(FIX / "brown.txt", format="brown").format == "word_slash_tag"


def test_provenance_is_json_and_complete():
    import hashlib
    c = load(FIX / "trees.mrg", max_len=3)
    prov = json.loads(json.dumps(c.provenance))
    data = (FIX / "trees.mrg").read_bytes()
    assert prov["sha256"] == hashlib.sha256(data).hexdigest()
    assert prov["size"] == len(data) and prov["file"] == "trees.mrg"
    assert prov["options"]["drop_traces"] is True and prov["options"]["observe"] == "tags"
    assert prov["preprocess_options"] == {"max_len": 3}
    assert prov["preprocessing"][0]["step"] == "max_len"


def test_progress_callback(tmp_path):
    p = tmp_path / "big.fa"
    p.write_bytes(b">r\n" + b"ACGT" * 3_000_000 + b"\n")
    calls = []
    load(p, progress=lambda done, total: calls.append((done, total)))
    size = p.stat().st_size
    assert calls[-1] == (size, size) and len(calls) >= 3
    assert all(a <= b for (a, _), (b, _) in zip(calls, calls[1:]))


def test_formats_table():
    names = [f["name"] for f in describe_formats()]
    assert names == list(FORMATS)
    filt = file_dialog_filters()
    assert filt[0].startswith("All supported files") and "*.fasta.gz" in filt[0] and "*.mrg" in filt[0]
    assert filt[-1] == "All files (*)"


def test_package_reexports():
    import densehmm_core
    assert densehmm_core.load is load and densehmm_core.Corpus is Corpus
    assert densehmm_core.DataFormatError is DataFormatError


@pytest.mark.parametrize("read_size", [1, 2, 3, 5, 7, 16, 61, 1 << 22])
def test_fasta_block_boundaries(monkeypatch, tmp_path, read_size):
    """The FASTA reader reads blocks; records and line numbers must not depend on the block size."""
    import densehmm_core.data.fasta as fasta_mod
    text = (b"\n;comment\n" + (FIX / "pdb_seqres_like.fasta").read_bytes() + b"\n\n" +
            (FIX / "uniprot_prodigal.fasta").read_bytes())
    p = tmp_path / "mix.fa"
    p.write_bytes(text.replace(b"\n", b"\r\n"))
    bad = tmp_path / "bad.fa"
    bad.write_bytes(text + b">last\nACDE\nAC9E\n")
    ref_names = [line[1:].split()[0].decode() for line in text.split(b"\n")
                 if line.startswith(b">") and line.split()[0] not in (b">102d_A", b">1rna_A", b">103l_A")]
    monkeypatch.setattr(fasta_mod, "_READ", read_size)
    c = load(p)
    assert c.names == ref_names
    assert seqs_as_strings(c)[:4] == ["MVLSEGEWQL", "MNIFEA", "ACDEF", "YQF"]
    assert any("first at line 7" in w for w in c.warnings)  # 103l_A: 2 prefix lines + line 5
    with pytest.raises(DataFormatError, match="invalid character '9'") as e:
        load(bad)
    assert e.value.line == text.count(b"\n") + 3


def test_load_options_numpy_values_and_dedupe(tmp_path):
    p = tmp_path / "dups.fa"
    p.write_text(">a\nACDE\n>b\nACDE\n>c\nAC\n>d\nacde*\n")
    c = load(p, dedupe=True, max_len=np.int64(3))
    assert c.names == ["a", "c"] and seqs_as_strings(c) == ["ACD", "AC"]
    prov = json.loads(json.dumps(c.provenance))
    assert prov["preprocess_options"] == {"dedupe": True, "max_len": 3}
    assert [s["step"] for s in prov["preprocessing"]] == ["dedupe", "max_len"]
    assert prov["preprocessing"][0]["removed"] == 2


@pytest.mark.parametrize("fixture", ["sentences.ioc", "word_tag.txt", "brown.txt", "trees.mrg", "chunks.conll",
                                     "sentences.conllu"])
def test_tagged_crlf_gzip_bom_equal_plain(tmp_path, fixture):
    raw = (FIX / fixture).read_bytes()
    base = load(FIX / fixture)
    variants = {
        "crlf": raw.replace(b"\n", b"\r\n"),
        "gz": gzip.compress(raw),
        "bom": b"\xef\xbb\xbf" + raw,
        # Windows tools write "Unicode" text as UTF-16 with a byte-order mark: read as UTF-8.
        "utf-16": raw.decode("utf-8").encode("utf-16"),
        "utf-16-be": b"\xfe\xff" + raw.decode("utf-8").encode("utf-16-be"),
        "utf-32-crlf": raw.decode("utf-8").replace("\n", "\r\n").encode("utf-32"),
        "gz-utf-16": gzip.compress(raw.decode("utf-8").encode("utf-16")),
    }
    for kind, data in variants.items():
        p = tmp_path / (fixture + (".gz" if kind.startswith("gz") else ""))
        p.write_bytes(data)
        c = load(p)
        assert c.format == base.format, kind
        assert c.vocabulary == base.vocabulary and c.names == base.names, kind
        assert all(np.array_equal(a, b) for a, b in zip(c.sequences, base.sequences)), kind


# ----------------------------------------------------------------------------- truncated files (issue 24.8)
@pytest.mark.parametrize("fmt,cut_line", [("conllu", "3\trockets\trock"), ("conll", "rockets")])
def test_a_file_cut_short_reads_its_complete_sentences_on_request(tmp_path, fmt, cut_line):
    """words.conllu cut in the middle of a token line of its third sentence (and again after the
    fourth): refused with the line and skippable=True; with on_bad_sentence="skip" the complete
    sentences are read (hand count: s1, s2, s4) and the two broken ones are counted."""
    src = (FIX / "words.conllu").read_text().split("\n")
    if fmt == "conll":   # the same sentences as "word TAG" columns
        src = [" ".join(ln.split("\t")[1:4:2]) if "\t" in ln else ln for ln in src if not ln.startswith("#")]
    third = next(i for i, ln in enumerate(src) if ln.startswith("rockets" if fmt == "conll" else "5\trockets"))
    lines = src[:third] + [cut_line] + src[third + 1:]
    fourth_end = max(i for i, ln in enumerate(lines) if ln.startswith("!" if fmt == "conll" else "6\t!"))
    lines = lines[:fourth_end + 1] + ["", "The" if fmt == "conll" else "1\tThe\tthe"]   # the file ends mid-sentence
    path = tmp_path / f"cut.{fmt}"
    path.write_text("\n".join(lines))
    with pytest.raises(DataFormatError, match="wrong column count") as err:
        load(path, format=fmt)
    assert err.value.skippable and err.value.line == third + 1
    c = load(path, format=fmt, on_bad_sentence="skip", observe="words", min_count=1)
    assert [c.decode(s) for s in c.sequences] == [["The", "dog", "runs", "quickly", "."], ["the", "dog", "barked", "."],
                                                  ["Vinken", "runs", "to", "the", "dog", "!"]]
    assert c.provenance["reader"]["n_bad_sentences"] == 2
    assert any(w.startswith(f"2 incomplete or broken sentences skipped (first at line {third + 1}:")
               for w in c.warnings)
    assert not DataFormatError("x").skippable

"""Reader defects found by user audit 24: CoNLL-U sentence boundaries and token IDs, extra files'
line-ending warnings, the custom-alphabet error's line, encodings that are not ASCII-compatible,
format names in any case, archives other than gzip and file names with control characters."""
import bz2
import gzip
import lzma
import zipfile

import numpy as np
import pytest

from densehmm_core.data import DataFormatError, load

TOK = "{i}\t{w}\t{w}\t{t}\t{t}\t_\t0\troot\t_\t_"


def conllu(*sentences, blank=True):
    """CoNLL-U text: each sentence is (sent_id or None, [(id, word, tag), ...]); ``blank=False``
    leaves out the blank lines between sentences."""
    out = []
    for sid, toks in sentences:
        if sid is not None:
            out.append(f"# sent_id = {sid}")
        out += [TOK.format(i=i, w=w, t=t) for i, w, t in toks]
        if blank:
            out.append("")
    return "\n".join(out) + "\n"


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


S1 = ("s1", [(1, "a", "DET"), (2, "b", "NOUN")])
S2 = ("s2", [(1, "c", "DET"), (2, "d", "NOUN")])


# --------------------------------------------------------------- 1. CoNLL-U sentence boundaries
def test_conllu_sentences_without_blank_line_are_split_and_counted(tmp_path):
    p = tmp_path / "restart.conllu"
    p.write_text(conllu(S1, S2, blank=False))
    c = load(p, observe="words", min_count=1)
    assert c.names == ["s1", "s2"]                      # not one 4-token sentence named s2
    assert [c.decode(s) for s in c.sequences] == [["a", "b"], ["c", "d"]]
    assert c.warnings == ["1 sentence had no blank line before it (read as new sentence; first at line 4)"]
    assert c.provenance["reader"]["n_missing_blank_lines"] == 1
    # the same with a blank line: no warning, same sentences
    q = tmp_path / "ok.conllu"
    q.write_text(conllu(S1, S2))
    ok = load(q, observe="words", min_count=1)
    assert ok.names == c.names and not ok.warnings and ok.provenance["reader"]["n_missing_blank_lines"] == 0


def test_conllu_restart_without_comment_and_text_comment(tmp_path):
    p = tmp_path / "ids.conllu"
    # an ID 1 after tokens starts a sentence (named by its line); '# text' after tokens does too
    p.write_text(conllu(S1, (None, S2[1]), blank=False) +
                 "\n".join(["# text = e f", TOK.format(i=1, w="e", t="DET"), TOK.format(i=2, w="f", t="NOUN"),
                            "# text = g", TOK.format(i=1, w="g", t="X")]) + "\n")
    c = load(p, observe="words", min_count=1)
    assert [c.decode(s) for s in c.sequences] == [["a", "b"], ["c", "d"], ["e", "f"], ["g"]]
    assert c.names[:2] == ["s1", "line 4"]
    assert c.warnings[0].startswith("3 sentences had no blank line before them")
    # '# sent_id' then '# text' of one sentence: one boundary, the id kept
    q = tmp_path / "two_comments.conllu"
    q.write_text(conllu(S1, blank=False) + "# sent_id = s2\n# text = c d\n" + conllu((None, S2[1])))
    d = load(q)
    assert d.names == ["s1", "s2"] and d.provenance["reader"]["n_missing_blank_lines"] == 1


@pytest.mark.parametrize("ids, line, reason", [
    ((1, 2, 5), 4, "IDs skip from 2 to 5"),
    ((1, 2, 2), 4, "repeats an ID"),
    ((0, 1), 2, "first token has ID 1"),
    ((3, 4), 2, "first token has ID 1"),
])
def test_conllu_token_ids_out_of_order_break_the_sentence(tmp_path, ids, line, reason):
    p = tmp_path / "bad.conllu"
    p.write_text(conllu(("s1", [(i, f"w{i}", "X") for i in ids]), S2))
    with pytest.raises(DataFormatError, match=reason) as e:
        load(p)
    assert e.value.line == line and e.value.file == "bad.conllu" and e.value.skippable
    c = load(p, on_bad_sentence="skip")
    assert "s2" in c.names and "s1" not in c.names
    assert c.provenance["reader"]["n_bad_sentences"] == 1


def test_conllu_ranges_and_empty_nodes_still_read(tmp_path):
    rows = ["# sent_id = s1", "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_", TOK.format(i=1, w="do", t="AUX"),
            TOK.format(i=2, w="n't", t="PART"), "2.1\tx\tx\tX\t_\t_\t_\t_\t_\t_", TOK.format(i=3, w="go", t="VERB"),
            # the next sentence starts with a range and no blank line before it
            "1-2\tcan't\t_\t_\t_\t_\t_\t_\t_\t_", TOK.format(i=1, w="ca", t="AUX"),
            TOK.format(i=2, w="n't", t="PART"), ""]
    p = tmp_path / "mwt.conllu"
    p.write_text("\n".join(rows) + "\n")
    c = load(p, observe="words", min_count=1)
    assert [c.decode(s) for s in c.sequences] == [["do", "n't", "go"], ["ca", "n't"]]
    assert c.provenance["reader"]["n_missing_blank_lines"] == 1 and c.names[1] == "line 7"


def test_shared_ewt_counts_unchanged(shared_data):
    for name, n_sent, n_tok in (("en_ewt-ud-dev.conllu", 2001, 25147), ("en_ewt-ud-test.conllu", 2077, 25094)):
        c = load(shared_data / "pos" / name)
        assert (c.n_sequences, c.n_tokens, c.n_symbols) == (n_sent, n_tok, 17)
        assert not c.warnings and c.provenance["reader"]["n_missing_blank_lines"] == 0


# ----------------------------------------------------------------- 3. custom alphabet
def test_custom_alphabet_error_names_the_first_bad_symbol_and_its_line(tmp_path):
    p = tmp_path / "alph.fa"
    p.write_text(">a\nACDE\nACXD\n>b\nACDE\n")
    with pytest.raises(DataFormatError, match=r"symbol 'X' is not in the alphabet 'ACDE' \(record 'a'") as e:
        load(p, alphabet="ACDE")
    assert e.value.line == 3
    q = tmp_path / "dashdot.fa"       # '-' on line 2 comes before '*' (sorted first) on line 4
    q.write_text(">a\nAC-D.E*\n>b\nAC**D\n")
    with pytest.raises(DataFormatError, match="symbol '-'") as e:
        load(q, alphabet="ACDE")
    assert e.value.line == 2
    r = tmp_path / "later.fa"         # a wrapped record, a skipped mol:na record and a comment before it
    r.write_text(";c\n>n mol:na\nXX\n>p mol:protein\nACDE\n\nACDE\r\nAcdZ\n")
    with pytest.raises(DataFormatError, match="symbol 'Z'.*record 'p'") as e:
        load(r, alphabet="ACDE")
    assert e.value.line == 8


# -------------------------------------------------------------------- 5. format names
@pytest.mark.parametrize("name, fmt", [("FASTA", "fasta"), ("Fasta", "fasta"), ("PTB", "ptb"), ("CoNLL", "conll"),
                                       ("MEDPOST", "medpost"), ("WORD_TAG", "word_tag"), ("CONLLU", "conllu"),
                                       ("Word_Slash_Tag", "word_slash_tag"), ("BROWN", "word_slash_tag"),
                                       (" conll-U ", "conllu")])
def test_format_names_in_any_case(name, fmt):
    from densehmm_core.data.detect import normalize_format
    assert normalize_format(name) == fmt


def test_format_given_in_capitals_and_auto(tmp_path):
    p = _write(tmp_path / "x.txt", b">a\nACDE\n")
    assert load(p, format="FASTA").format == "fasta"
    assert load(p, format="AUTO").format == "fasta"
    with pytest.raises(ValueError, match="unknown format 'XML'"):
        load(p, format="XML")


# ------------------------------------------------------------- 2. extra files' warnings
def test_extra_file_cr_line_endings_warning_names_the_file(tmp_path):
    main = tmp_path / "main.conllu"
    main.write_text(conllu(S1, S2))
    extra = tmp_path / "old_mac.conllu"
    extra.write_bytes(conllu(S2, ("s3", [(1, "z", "X")])).replace("\n", "\r").encode())
    c = load(main, extra=[extra])
    assert "old_mac.conllu: old Mac line endings (CR only) were read as line breaks" in c.warnings
    assert c.n_sequences == 4
    # the main file's own: once, without a file name
    main.write_bytes(conllu(S1, S2).replace("\n", "\r").encode())
    assert load(main).warnings == ["old Mac line endings (CR only) were read as line breaks"]


# --------------------------------------------------------- 6. archives, control characters
def test_archives_other_than_gzip_are_named(tmp_path):
    text = b"The_DT dog_NN barks_VBZ\n" * 20
    zp = tmp_path / "a.pos.zip"
    with zipfile.ZipFile(zp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.pos", text)
    cases = {zp: "a zip archive", _write(tmp_path / "a.pos.bz2", bz2.compress(text)): "a bzip2 archive",
             _write(tmp_path / "a.pos.xz", lzma.compress(text)): "an xz archive",
             _write(tmp_path / "a.pos.gz", gzip.compress(bz2.compress(text))): r"a bzip2 archive \(inside the gzip"}
    for path, what in cases.items():
        with pytest.raises(DataFormatError, match=f"{what}.*only gzip is read; unpack it first") as e:
            load(path)
        assert "binary file" not in str(e.value)


def test_file_names_with_control_characters_are_escaped(tmp_path):
    p = _write(tmp_path / "evil\x1b[31mname.fa", b"ACGT\n")
    with pytest.raises(DataFormatError) as e:
        load(p)
    assert str(e.value).startswith("evil\\x1b[31mname.fa, line 1: ")
    assert "\x1b" not in str(e.value) and e.value.file == "evil\x1b[31mname.fa"
    with pytest.raises(FileNotFoundError) as f:
        load(tmp_path / "gone\nfake.fa")
    assert "gone\\nfake.fa" in str(f.value) and "\n" not in str(f.value)


# ----------------------------------------------------------------------- 4. encodings
def test_encodings_that_are_not_ascii_compatible_are_refused_up_front(tmp_path):
    p = tmp_path / "ok.conllu"
    p.write_text(conllu(S1, S2))
    for enc in ("cp037", "utf-7", "base64"):
        with pytest.raises(ValueError, match=f"text encoding '{enc}' is not supported") as e:
            load(p, encoding=enc)
        assert not isinstance(e.value, DataFormatError)
    with pytest.raises(ValueError, match="unknown text encoding"):
        load(p, encoding="no-such-codec")
    # utf-16 on a file without a byte-order mark: said so, not "wrong column count"
    with pytest.raises(DataFormatError, match="'utf-16' needs a byte-order mark.*utf-16-le or utf-16-be"):
        load(p, encoding="utf-16")
    for enc in ("latin-1", "cp1252", "utf-8-sig"):
        assert load(p, encoding=enc).n_tokens == 4


def test_utf16_without_mark_is_read_with_its_byte_order(tmp_path):
    text = conllu(S1, S2)
    base = load(_write(tmp_path / "plain.conllu", text.encode()), observe="words", min_count=1)
    for enc in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        p = _write(tmp_path / f"{enc}.conllu", text.encode(enc))
        c = load(p, encoding=enc, observe="words", min_count=1)
        assert c.names == base.names and c.vocabulary == base.vocabulary, enc
        assert all(np.array_equal(x, y) for x, y in zip(c.sequences, base.sequences)), enc
    le = tmp_path / "utf-16-le.conllu"
    with pytest.raises(DataFormatError, match="without a byte-order mark.*encoding utf-16-le"):
        load(le)
    with pytest.raises(DataFormatError, match="looks like utf-16-le.*read it with encoding utf-16-le"):
        load(le, encoding="utf-16-be")
    with pytest.raises(DataFormatError, match="'utf-16' needs a byte-order mark.*read it with encoding utf-16-le"):
        load(le, encoding="utf-16")
    # a byte-order mark still decides; gzip and extra files take the encoding too
    assert load(_write(tmp_path / "bom.conllu", text.encode("utf-16")), encoding="utf-16").n_tokens == 4
    gz = _write(tmp_path / "be.conllu.gz", gzip.compress(text.encode("utf-16-be")))
    assert load(gz, encoding="utf-16-be").n_tokens == 4
    assert load(le, encoding="utf-16-le", extra=[le]).n_sequences == 4

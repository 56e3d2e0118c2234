"""Data holding symbols a model does not know (Score, Decode on another data set): say how many
and offer the way out — read them as the model's unknown symbol, or leave out the sentences
that hold them.  The counting and the encoding are the core's
(``densehmm_core.data.unknown_report`` / ``encode_for_model``, as in the command line)."""
from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QMessageBox, QWidget

__all__ = ["unknown_message", "refusal_message", "read_for_model"]


def unknown_message(rep: dict, data_name: str) -> str:
    """The dialog's text for :func:`densehmm_core.data.unknown_report`'s ``rep``."""
    shown = ", ".join(repr(w) for w in rep["examples"][:6]) + (", …" if rep["types"] > 6 else "")
    text = (f"'{data_name}' holds {rep['types']:,} symbol(s) the model does not know "
            f"({rep['tokens']:,} of {rep['total_tokens']:,} tokens, in {rep['sentences']:,} of "
            f"{rep['total_sentences']:,} sequences), e.g. {shown}.\n\n")
    if rep["unknown_symbol"] is not None:
        text += (f"The model reads symbols it does not know as {rep['unknown_symbol']!r} "
                 f"(its unknown symbol); or leave out the sequences that hold them.")
    else:
        text += ("The model has no unknown symbol to read them as (a word model trained with "
                 "min. count 2 or more has '<unk>'): leave out the sequences that hold them?")
    return text


def _kind(model, read: dict) -> str:
    """What the model reads (``read``: its training data's reader options), in words: "the words of a tagged
    corpus", "the tags of a tagged corpus (upos)", "21 symbols (A, C, …)"."""
    if read.get("observe") == "words":
        return "the words of a tagged corpus"
    if read.get("observe") == "tags":
        return "the tags of a tagged corpus" + (f" ({read['tagset']})" if read.get("tagset") else "")
    vocab = [str(v) for v in (model.vocabulary or [])]
    return f"{len(vocab)} symbols ({', '.join(vocab[:6])}{', …' if len(vocab) > 6 else ''})"


def refusal_message(rep: dict, data_name: str, model, what: str = "Score", read_as: Optional[dict] = None) -> str:
    """The refusal's text when (nearly) every token of the data is unknown to the model (``mostly_unknown``)."""
    share = rep["tokens"] / max(rep["total_tokens"], 1)
    shown = ", ".join(repr(w) for w in rep["examples"][:4])
    return (f"{rep['tokens']:,} of {rep['total_tokens']:,} tokens of '{data_name}' ({share:.0%}) are symbols the "
            f"model does not know (e.g. {shown}): these data are not of the kind the model was trained on, and "
            f"a result would mean nothing.\n\nThe model reads {_kind(model, read_as or {})}. {what} it on a file of "
            f"that kind (open it with the Data panel; a tagged corpus is read as the model's training data were), or "
            f"choose a model trained on data like '{data_name}'.")


def _ask(box: QMessageBox) -> None:
    """Show ``box`` modally (tests replace this)."""
    box.exec()


def read_for_model(parent: QWidget, model, data, data_name: str, what: str = "Score",
                   read_as: Optional[dict] = None):
    """``data`` read with ``model``'s alphabet after asking the user about the symbols the model
    does not know; None when the user cancels (or nothing is left).  Without unknown symbols
    nobody is asked; when (nearly) all tokens are unknown (the core's ``mostly_unknown``) the data
    are refused, with what to do.  ``read_as``: the reader options of the model's training data (its words
    looked up lower-cased when they were read so)."""
    from densehmm_core.data import encode_for_model, unknown_report
    prov = getattr(model, "provenance_", None)
    lowercase = bool((read_as or {}).get("lowercase"))   # words looked up as the model read them
    rep = unknown_report(data, model.vocabulary, provenance=prov, lowercase=lowercase)
    if not rep["types"]:
        return encode_for_model(data, model.vocabulary, model.n_symbols, provenance=prov, lowercase=lowercase)
    if rep["mostly_unknown"]:   # refused: reading them all as '<unk>' would give a meaningless number
        box = QMessageBox(QMessageBox.Icon.Warning, f"{what}: data the model cannot read",
                          refusal_message(rep, data_name, model, what, read_as), QMessageBox.StandardButton.Ok, parent)
        box.setObjectName("unreadableDataDialog")
        _ask(box)
        return None
    box = QMessageBox(QMessageBox.Icon.Question, f"{what}: symbols the model does not know",
                      unknown_message(rep, data_name), QMessageBox.StandardButton.Cancel, parent)
    box.setObjectName("unknownSymbolsDialog")
    as_unknown = None
    if rep["unknown_symbol"] is not None:
        as_unknown = box.addButton(f"Read them as {rep['unknown_symbol']!r}", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(as_unknown)
    left = rep["total_sentences"] - rep["sentences"]
    skip = box.addButton(f"Leave out {rep['sentences']:,} sequences ({left:,} left)", QMessageBox.ButtonRole.ActionRole)
    skip.setEnabled(left > 0)
    _ask(box)
    clicked = box.clickedButton()
    if clicked is None or clicked not in (as_unknown, skip):
        return None
    return encode_for_model(data, model.vocabulary, model.n_symbols, provenance=prov, lowercase=lowercase,
                            on_unknown="map" if clicked is as_unknown else "skip")


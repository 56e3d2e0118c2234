"""Data holding symbols a model does not know (Score, Decode on another data set): say how many
and offer the way out — read them as the model's unknown symbol, or leave out the sentences
that hold them.  The counting and the encoding are the core's
(``densehmm_core.data.unknown_report`` / ``encode_for_model``, as in the command line)."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

__all__ = ["unknown_message", "read_for_model"]


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


def _ask(box: QMessageBox) -> None:
    """Show ``box`` modally (tests replace this)."""
    box.exec()


def read_for_model(parent: QWidget, model, data, data_name: str, what: str = "Score"):
    """``data`` read with ``model``'s alphabet after asking the user about the symbols the model
    does not know; None when the user cancels (or nothing is left).  Without unknown symbols
    nobody is asked."""
    from densehmm_core.data import encode_for_model, unknown_report
    prov = getattr(model, "provenance_", None)
    rep = unknown_report(data, model.vocabulary, provenance=prov)
    if not rep["types"]:
        return encode_for_model(data, model.vocabulary, model.n_symbols, provenance=prov)
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
    return encode_for_model(data, model.vocabulary, model.n_symbols, provenance=prov,
                            on_unknown="map" if clicked is as_unknown else "skip")


"""The model form's hints for the words of a tagged corpus: one registry, one row per hint.

A hint sits below the option field it is about, shows only on words data while that field is enabled
and its condition holds, says in one line what goes wrong and why (the tooltip gives the measurement),
and offers one button that sets the better values. Nothing changes by itself: the user's choice stays
until the button is pressed.

What a hint's condition, texts and values see: the form's option values by name, plus ``n_states``
(States n), ``model_type`` (the model type's key) and ``gold_tags`` (the number of gold tags of the
words data set, None when it has none). Its text and button are format strings of the same names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

__all__ = ["FormHint", "HintRow", "WORDS_HINTS", "WORDS_INIT_SCALE", "WORDS_PSEUDOCOUNT", "hint_facts"]

#: Init scale the start hint sets for dense models (the spectral runs' random parts)
WORDS_INIT_SCALE = 0.2
#: the smoothing the standard HMM's hint sets (docs/RESULTS.md, "Smoothing a standard HMM on words")
WORDS_PSEUDOCOUNT = 0.01


@dataclass(frozen=True)
class FormHint:
    """One hint: ``field`` is the option it sits below (``"n_states"``: States n); ``shown(facts)``
    says when it shows; ``apply(kind, facts)`` (``kind``: ``"dense"`` or ``"standard"``) gives the values
    its button sets, by option name (``n_states`` too).  ``facts``: the module docstring's names."""

    name: str
    field: str
    text: str
    tip: str
    button: str
    button_tip: str
    shown: Callable[[Mapping[str, Any]], bool]
    apply: Callable[[str, Mapping[str, Any]], Dict[str, Any]]


def hint_facts(options: Mapping[str, Any], n_states: int, model_type: str, gold_tags) -> Dict[str, Any]:
    """What the hints see (the module docstring): the form's options and these three."""
    return {**options, "n_states": int(n_states), "model_type": model_type, "gold_tags": gold_tags}


def _spectral(kind: str, facts: Mapping[str, Any]) -> Dict[str, Any]:
    return {"init_method": "spectral", **({"init_scale": WORDS_INIT_SCALE} if kind == "dense" else {})}


WORDS_HINTS = (
    FormHint(
        name="states", field="n_states",
        text="Words with {gold_tags} gold tags: {n_states} states cannot tell them apart.",
        tip=("Each state can stand for one part of speech only if there are as many states as tags. On UD "
             "English EWT's dev file as words (lower-case, min. count 2, half of the sentences for training, "
             "17 UPOS tags, 3 seeds; docs/RESULTS.md, \"States for the tags\") the co-occurrence fit reached "
             "many-to-one 0.34 with 5 states (l = 3) and 0.44 with 17; with 17 states DenseHMM-EM (l = 17) "
             "and a smoothed standard HMM reached 0.48."),
        button="Use {gold_tags}",
        button_tip="Set States n to the number of gold tags",
        shown=lambda o: bool(o.get("gold_tags")) and o["n_states"] < o["gold_tags"]
        and o.get("model_type") != "standard_fair",
        apply=lambda kind, o: {"n_states": int(o["gold_tags"])}),
    FormHint(
        name="start", field="init_method",
        text="Words: a spectral start tags far better.",
        tip=("On the words of a tagged corpus a random start tags badly: in docs/RESULTS.md, section 4 "
             "(Penn Treebank sample, n = 45), many-to-one accuracy was 0.46-0.51 from a random start "
             "and 0.62-0.67 from the spectral one; random DenseHMMs also needed Init scale 0.2, not 1."),
        button="Use spectral",
        button_tip=f"Set Start to spectral (dense models: Init scale {WORDS_INIT_SCALE:g} too, as in those runs)",
        shown=lambda o: o.get("init_method") == "random",
        apply=_spectral),
    FormHint(
        name="smoothing", field="emission_pseudocount",
        text="Words: test words the training part lacks score inf.",
        tip=("Plain Baum-Welch gives probability 0 to every word its training sentences lack. On the Penn "
             "Treebank sample's words (min. count 2, n = 17, 30 iterations; docs/RESULTS.md, \"Smoothing a "
             "standard HMM on words\") 972 of 1,957 test sentences had such a word: the test NLL was inf. "
             "Smoothing 0.01 gave a test NLL of 6.13 and many-to-one 0.41 (0.1: 6.00 and 0.41; 1: 6.34 "
             "and 0.34)."),
        button=f"Use {WORDS_PSEUDOCOUNT:g}",
        button_tip=f"Set Smoothing to {WORDS_PSEUDOCOUNT:g}",
        shown=lambda o: not o.get("emission_pseudocount"),
        apply=lambda kind, o: {"emission_pseudocount": WORDS_PSEUDOCOUNT}),
)


class HintRow(QWidget):
    """A hint's row of the form: the italic, wrapped text and its button (``label``, ``button``)."""

    def __init__(self, hint: FormHint) -> None:
        super().__init__()
        self.hint = hint
        self.setObjectName(f"{hint.name}Hint")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel(hint.text)
        self.label.setWordWrap(True)
        font = self.label.font()
        font.setItalic(True)
        self.label.setFont(font)
        self.label.setToolTip(hint.tip)
        self.button = QPushButton(hint.button)
        self.button.setToolTip(hint.button_tip)
        row.addWidget(self.label, 1)
        row.addWidget(self.button)

    def set_facts(self, facts: Mapping[str, Any]) -> None:
        """The text and the button's label for these facts (their format fields filled in)."""
        text, button = self.hint.text.format(**facts), self.hint.button.format(**facts)
        if self.label.text() != text:
            self.label.setText(text)
        if self.button.text() != button:
            self.button.setText(button)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        """As tall as the text needs at the row's width: QFormLayout sizes its rows by their size
        hints, and a wrapped label's hint is for a wider line (a third line was cut off)."""
        hint = super().sizeHint()
        if self.width() > 0:
            hint.setHeight(self.heightForWidth(self.width()))
        return hint

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.updateGeometry()      # the height the new width needs

"""The model form's hints for the words of a tagged corpus: one registry, one row per hint.

A hint sits below the option field it is about, shows only on words data while that field is enabled
and its condition holds, says in one line what goes wrong and why (the tooltip gives the measurement),
and offers one button that sets the better values. Nothing changes by itself: the user's choice stays
until the button is pressed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

__all__ = ["FormHint", "HintRow", "WORDS_HINTS", "WORDS_INIT_SCALE", "WORDS_PSEUDOCOUNT"]

#: Init scale the start hint sets for dense models (the spectral runs' random parts)
WORDS_INIT_SCALE = 0.2
#: the smoothing the standard HMM's hint sets (docs/RESULTS.md, "Smoothing a standard HMM on words")
WORDS_PSEUDOCOUNT = 0.01


@dataclass(frozen=True)
class FormHint:
    """One hint: ``field`` is the option it sits below; ``shown(options)`` (the form's option values)
    says when it shows; ``apply(kind)`` (``"dense"`` or ``"standard"``) gives the option values its
    button sets."""

    name: str
    field: str
    text: str
    tip: str
    button: str
    button_tip: str
    shown: Callable[[Mapping[str, Any]], bool]
    apply: Callable[[str], Dict[str, Any]]


def _spectral(kind: str) -> Dict[str, Any]:
    return {"init_method": "spectral", **({"init_scale": WORDS_INIT_SCALE} if kind == "dense" else {})}


WORDS_HINTS = (
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
        apply=lambda kind: {"emission_pseudocount": WORDS_PSEUDOCOUNT}),
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

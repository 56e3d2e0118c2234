"""Word-shape classes: what a rare word is replaced by when ``rare="shape"``.

A rare word (below ``min_count`` or beyond ``max_vocab``) keeps what its spelling says
about its part of speech instead of becoming one anonymous ``<unk>``.  The class of a
word is the **first** rule that matches, in this order (the word as written in the file,
before any lower-casing, so capitalisation stays visible):

==================  ====================================================================
class               rule
==================  ====================================================================
``<unk-num>``       contains a digit (``1998``, ``3.5``, ``1-1/2``, ``F-16``)
``<unk-hyph>``      contains a hyphen and a letter (``well-known``; ``--`` is punctuation)
``<unk-caps>``      every letter upper-case, at least two letters (``NASA``, ``U.S.``)
``<unk-cap>``       starts with an upper-case letter (``Vinken``)
``<unk-SUFFIX>``    ends (lower-cased) in one of :data:`SUFFIXES`, tried longest first,
                    leaving a stem of at least 2 characters (``<unk-ing>``, ``<unk-ly>``...)
``<unk-punct>``     no letter and no digit (``--``, ``%``)
``<unk>``           anything else (the reader's ``unknown_symbol``)
==================  ====================================================================

>>> [word_shape(w) for w in ["1998", "well-known", "NASA", "Vinken", "walking", "%", "zyx"]]
['<unk-num>', '<unk-hyph>', '<unk-caps>', '<unk-cap>', '<unk-ing>', '<unk-punct>', '<unk>']
"""
from __future__ import annotations

from typing import List, Tuple

__all__ = ["word_shape", "SUFFIXES", "SHAPE_CLASSES", "shape_classes"]

#: Common English derivational and inflectional suffixes, tried longest first.
SUFFIXES: Tuple[str, ...] = ("able", "ment", "ness", "tion", "ity", "ive", "ous", "ing", "est", "ion", "ful",
                             "ish", "ed", "ly", "er", "al", "ic", "s")
_SUFFIXES_LONGEST_FIRST = tuple(sorted(SUFFIXES, key=lambda s: (-len(s), SUFFIXES.index(s))))
_MIN_STEM = 2


def shape_classes(unknown_symbol: str = "<unk>") -> List[str]:
    """Every class name, in the documented order (the last one is ``unknown_symbol``)."""
    return (["<unk-num>", "<unk-hyph>", "<unk-caps>", "<unk-cap>"] + [f"<unk-{s}>" for s in SUFFIXES]
            + ["<unk-punct>", unknown_symbol])


#: The class names with the default unknown symbol.
SHAPE_CLASSES: Tuple[str, ...] = tuple(shape_classes())


def word_shape(word: str, unknown_symbol: str = "<unk>") -> str:
    """The shape class of ``word`` (see the module documentation for the rules)."""
    has_alpha = False
    has_digit = False
    all_upper = True
    n_alpha = 0
    for ch in word:
        if ch.isdigit():
            has_digit = True
        elif ch.isalpha():
            has_alpha = True
            n_alpha += 1
            if not ch.isupper():
                all_upper = False
    if has_digit:
        return "<unk-num>"
    if has_alpha and "-" in word:
        return "<unk-hyph>"
    if has_alpha and all_upper and n_alpha >= 2:
        return "<unk-caps>"
    if word[:1].isupper():
        return "<unk-cap>"
    if has_alpha:
        low = word.lower()
        for suf in _SUFFIXES_LONGEST_FIRST:
            if len(low) >= len(suf) + _MIN_STEM and low.endswith(suf):
                return f"<unk-{suf}>"
        return unknown_symbol
    return "<unk-punct>"

"""Sweep grids of (n, l) pairs: the paper's grid and the ``"n=3,5 l=1,2"`` text of ``--grid``.

One owner for both: ``densehmm sweep --grid``, ``reproduce synthetic`` and the app's sweep read
their grids here (the command line adds its ``model=`` names, which it checks against its own
list).
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

__all__ = ["PAPER_GRID", "Grid", "parse_grid", "grid_text", "describe_grid"]

Grid = Tuple[Tuple[int, int], ...]

#: The (n, l) pairs of the paper's model comparison (Sicking et al., 2020, Section 5).
PAPER_GRID: Grid = ((3, 1), (3, 2), (3, 3), (5, 2), (5, 3), (5, 5), (10, 2), (10, 3), (10, 5), (10, 10))

_ALIASES = {"models": "model", "states": "n", "dim": "l"}


def parse_grid(text: str, models: Optional[Sequence[str]] = None,
               default_l: Optional[int] = None) -> Tuple[Grid, Optional[Tuple[str, ...]]]:
    """``"n=3,5 l=1,2 model=a,b"`` -> ``((n, l) pairs, model names)``: every combination of the
    n and l values, in the order given, duplicates dropped.

    ``models``: the allowed ``model=`` names; None: ``model=`` is refused.  The model names
    returned are None when the text names none.  ``default_l``: the l of a grid that names none (a
    model without an l of its own: a standard HMM, full logits); None: ``l=`` is required.
    Raises ValueError with the reason.
    """
    names = ("n", "l", "model") if models is not None else ("n", "l")
    parts: Dict[str, list] = {}
    for item in str(text).replace(";", " ").split():
        if "=" not in item:
            raise ValueError(f"{item!r} is not NAME=VALUES (e.g. n=3,5 l=1,2)")
        k, v = item.split("=", 1)
        k = _ALIASES.get(k.strip().lower(), k.strip().lower())
        if k not in names:
            raise ValueError(f"unknown name {k!r} (use {', '.join(names[:-1])} and {names[-1]})")
        if k in parts:
            raise ValueError(f"{k} is given twice")
        parts[k] = [x.strip() for x in v.split(",") if x.strip()]
        if not parts[k]:
            raise ValueError(f"{k} has no values")
    if "l" not in parts and default_l is not None:
        parts["l"] = [str(int(default_l))]
    for k in ("n", "l"):
        if k not in parts:
            raise ValueError(f"{k}=... is missing")
    try:
        ns = [int(x) for x in parts["n"]]
        ls = [int(x) for x in parts["l"]]
    except ValueError:
        raise ValueError("n and l take positive integers, e.g. n=3,5 l=1,2") from None
    if min(ns) < 1 or min(ls) < 1:
        raise ValueError("n and l must be >= 1")
    chosen: Optional[Tuple[str, ...]] = None
    if "model" in parts:
        bad = [m for m in parts["model"] if m not in (models or ())]
        if bad:
            raise ValueError(f"unknown model(s) {', '.join(bad)} (choose from {', '.join(models or ())})")
        chosen = tuple(dict.fromkeys(parts["model"]))
    grid = tuple((n, l) for n in dict.fromkeys(ns) for l in dict.fromkeys(ls))
    return grid, chosen


def _by_n(grid: Grid) -> Dict[int, list]:
    out: Dict[int, list] = {}
    for n, l in grid:
        out.setdefault(int(n), []).append(int(l))
    return out


def describe_grid(grid: Grid) -> str:
    """``"n=3: l∈{1, 2, 3}, n=5: l∈{2, 3, 5}"`` (for labels)."""
    return ", ".join(f"n={n}: l∈{{{', '.join(map(str, ls))}}}" for n, ls in _by_n(grid).items())


def grid_text(grid: Grid) -> Optional[str]:
    """The ``--grid`` text of ``grid`` when it is one product of n and l values (None otherwise:
    the paper's grid, for one, has other l values for each n)."""
    by_n = _by_n(grid)
    ls = list(by_n.values())
    if any(x != ls[0] for x in ls):
        return None
    return f"n={','.join(map(str, by_n))} l={','.join(map(str, ls[0]))}"

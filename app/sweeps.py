"""THE owner of sweep names: ``"sweep 3"`` made, parsed, ordered and handed out here only (no Qt).

A window numbers its sweeps 1, 2, 3 ... (:meth:`SweepNames.new`); a restored session's sweeps keep their
names when no sweep of the window has them, else they get the next free number
(:meth:`SweepNames.restored`): two sweeps never share a name, so the Sweep tab and the Jobs panel
never pool them.  The window's one :class:`SweepNames` lives in the state (``AppState.sweep_names``).
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, Optional

__all__ = ["SweepNames", "sweep_name", "sweep_number", "sweep_order", "renamed_job_name"]

_NAME = re.compile(r"sweep (\d+)")


def sweep_name(number: int) -> str:
    return f"sweep {int(number)}"


def sweep_number(name: Optional[str]) -> int:
    """The number of an app sweep's name (``"sweep 3"`` -> 3; anything else 0)."""
    m = _NAME.fullmatch(name or "")
    return int(m.group(1)) if m else 0


def sweep_order(name: Optional[str]) -> tuple:
    """Sort key of sweep names: ``"sweep 2"`` before ``"sweep 10"``; a name without a number first."""
    return (sweep_number(name) or -1, name or "")


def renamed_job_name(job_name: str, old: str, new: str) -> str:
    """A sweep job's name (``"[sweep 1] Standard n=2"``) with its sweep's new name."""
    prefix = f"[{old}]"
    return f"[{new}]{job_name[len(prefix):]}" if job_name.startswith(prefix) else job_name


class SweepNames:
    """Hands out the names of a window's sweeps (see the module doc)."""

    def __init__(self) -> None:
        self._last = 0        # the highest number handed out or restored

    def new(self) -> str:
        """The name of a new sweep: the number after every one handed out or restored."""
        self._last += 1
        return sweep_name(self._last)

    def restored(self, names: Iterable[Optional[str]], taken: Iterable[Optional[str]]) -> Dict[str, str]:
        """``{name in the session: name in the window}`` of a restored session's sweeps (``names``, in
        order); ``taken``: the sweep names the window's jobs have.  A name no sweep of the window has is
        kept (and counted: new sweeps are numbered after it); one that is taken gets the next free number."""
        used = {t for t in taken if t}
        self._last = max([self._last] + [sweep_number(t) for t in used])
        kept = [n for n in dict.fromkeys(n for n in names if n) if n not in used]
        self._last = max([self._last] + [sweep_number(n) for n in kept])
        out: Dict[str, str] = {}
        for n in dict.fromkeys(n for n in names if n):
            out[n] = n if n in kept else self.new()
        return out

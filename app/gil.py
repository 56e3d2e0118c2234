"""How often a background thread of the GUI process hands the GIL to the GUI thread.

Reading a file, preprocessing and scoring run on background threads of the window's process
(:mod:`app.tasks`). Python lets a thread that wants the GIL wait up to its switch interval,
5 ms by default, and the GUI thread wants it for every Python callback Qt makes while it
handles one batch of events (event filters, paint and resize handlers of the plots): about a
hundred of them while a 1.2 M-word corpus was read, so one batch waited up to 0.55-0.85 s.  At
1 ms the same batch took 0.19-0.25 s; with the drop filter off the application's event stream, 90 ms
at 1 ms, 64-80 ms at 0.5 ms and 44-49 ms at :data:`SWITCH_INTERVAL_S`, 0.25 ms; reading the file took
as long at each interval (1.0-1.1 s; docs/PERFORMANCE.md, "A 1.2 M-word corpus" and "The GIL
handed over every 0.25 ms").  A thread computing alone is never interrupted: the interval only
matters while another thread asks for the GIL.  :func:`install` sets it once, from
:func:`app.main.main`.
"""
from __future__ import annotations

import sys

__all__ = ["install", "SWITCH_INTERVAL_S"]

#: seconds (Python's default: 0.005)
SWITCH_INTERVAL_S = 0.00025


def install() -> None:
    """Set the process's switch interval to :data:`SWITCH_INTERVAL_S`."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)

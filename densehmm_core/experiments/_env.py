"""Environment variables set for a while, for the child processes started meanwhile (the runner's
worker pools, the local Dask cluster's forkserver)."""
from __future__ import annotations

import os
from typing import Dict, Optional

__all__ = ["EnvPatch"]


class EnvPatch:
    """``with EnvPatch({"NAME": "value"}):`` the variables set inside the block, restored after (a
    variable that was unset is removed again)."""

    def __init__(self, values: Dict[str, str]) -> None:
        self.values = values
        self.old: Dict[str, Optional[str]] = {}

    def __enter__(self):
        for k, v in self.values.items():
            self.old[k] = os.environ.get(k)
            os.environ[k] = v
        return self

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return False

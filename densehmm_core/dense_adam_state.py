"""Adam's state kept by a DenseHMM between EM fits (``DenseHMM.adam_state_``): the one owner of its
checks, of when it is dropped, and of its lazy read-back from the EM loop's device."""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np


class AdamStateMixin:
    """``adam_state_``: ``{"m", "v", "t"}`` on the host, or None.  The EM loop leaves its moments as arrays
    of its module (:meth:`_keep_adam`); they cross to the host only when read (saving, a worker's reply).
    Parameters set without a state of their own drop it (:meth:`set_arrays`, ``set_embeddings``)."""

    _adam: Any = None

    @property
    def adam_state_(self) -> Optional[Dict[str, Any]]:
        """Adam's state (see DenseHMM's attributes), on the host."""
        if self._adam is not None and not isinstance(self._adam, dict):
            backend, moments = self._adam
            m, v = backend.to_host_many([moments.m, moments.v], dtype=moments.m.dtype)
            self._adam = {"m": m, "v": v, "t": float(moments.t)}
        return self._adam

    @adam_state_.setter
    def adam_state_(self, state: Optional[Dict[str, Any]]) -> None:
        if state is not None:
            if not isinstance(state, dict) or set(state) != {"m", "v", "t"}:
                raise ValueError("adam_state must be None or a dict with keys 'm', 'v' and 't'")
            m, v = (np.asarray(state[k]) for k in "mv")
            t = float(state["t"])
            if m.ndim != 1 or m.shape != v.shape or m.dtype.kind != "f" or v.dtype.kind != "f":
                raise ValueError("adam_state's m and v must be floating-point vectors of one length")
            if not (np.isfinite(t) and t >= 0 and np.all(np.isfinite(m)) and np.all(np.isfinite(v))
                    and np.all(v >= 0)):
                raise ValueError("adam_state must be finite, with t >= 0 and v >= 0")
            size = self._packed_size()
            if size is not None and m.shape[0] != size:
                raise ValueError(f"adam_state has {m.shape[0]} entries but the model has {size} parameters")
            state = {"m": m, "v": v, "t": t}
        self._adam = state

    def _keep_adam(self, backend, moments) -> None:
        """The EM loop's Adam state ``moments`` (arrays of ``backend``, not modified later): read back
        by :attr:`adam_state_` when needed."""
        self._adam = (backend, moments)

    def _packed_size(self) -> Optional[int]:  # pragma: no cover - DenseHMM's
        raise NotImplementedError

    def set_arrays(self, state: Dict[str, Any]):
        """BaseHMM's ``set_arrays``, with Adam's state applied after the parameters (its length checked
        against them); parameters given without an ``adam_state`` drop the one kept (its moments belonged
        to other parameters)."""
        rest = {k: v for k, v in state.items() if k != "adam_state"}
        super().set_arrays(rest)  # type: ignore[misc]
        if "adam_state" in state:
            self.adam_state_ = state["adam_state"]
        elif rest.get("params"):
            self._adam = None
        return self

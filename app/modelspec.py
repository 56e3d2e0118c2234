"""What the model form describes, and how it becomes a core estimator (wiring only, no maths)."""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["MODEL_TYPES", "ModelSpec", "build_model", "paper_defaults", "sweep_grid", "PAPER_GRID",
           "fair_states"]

#: key -> label shown in the form
MODEL_TYPES = {
    "dense_cooc": "DenseHMM — direct co-occurrence",
    "dense_em": "DenseHMM — EM (gradient M-step)",
    "standard": "Standard HMM (Baum-Welch)",
    "standard_fair": "Fair standard HMM (n_fair states)",
}

#: the paper's (n, l) grid (Sicking et al. 2020, section 5)
PAPER_GRID = {3: (1, 2, 3), 5: (2, 3, 5), 10: (2, 3, 5, 10)}


def paper_defaults(kind: str, preset: str = "paper") -> dict:
    """Training settings of a model type: the core's named preset ("paper" or the tuned "default").

    Dense models read :data:`densehmm_core.dense.PRESETS`; standard HMMs use the core's
    Baum-Welch defaults (the paper does not state its iteration count).
    """
    out = {"lr": 0.01, "steps": 100, "tol": 1e-4, "mstep_steps": 25}
    if kind.startswith("dense"):
        method = "cooc" if kind == "dense_cooc" else "em"
        try:
            from densehmm_core.dense import PRESETS
            p = PRESETS.get(preset, PRESETS.get("paper", {})).get(method, {})
        except Exception:  # core not importable: the paper's numbers
            p = {"cooc": {"lr": 0.001, "steps": 10000, "tol": 0.0},
                 "em": {"lr": 0.01, "steps": 25, "em_iter": 40, "tol": 0.0}}[method]
        if method == "cooc":
            out.update(lr=float(p.get("lr", 0.001)), steps=int(p.get("steps", 10000)), tol=float(p.get("tol", 0.0)))
        else:
            out.update(lr=float(p.get("lr", 0.01)), steps=int(p.get("em_iter", 40)), tol=float(p.get("tol", 0.0)),
                       mstep_steps=int(p.get("steps", 25)))
    return out


@dataclasses.dataclass
class ModelSpec:
    """The model form's values."""
    kind: str = "dense_cooc"
    n: int = 5
    l: int = 3
    lr: float = 0.001
    steps: int = 10000
    mstep_steps: int = 25
    tol: float = 1e-7
    restarts: int = 1
    seed: int = 0
    device: str = "auto"
    preset: str = "paper"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelSpec":
        names = {f.name for f in dataclasses.fields(cls)}
        spec = cls(**{k: v for k, v in (d or {}).items() if k in names})
        if spec.kind not in MODEL_TYPES:
            spec.kind = "dense_cooc"
        return spec

    @property
    def is_dense(self) -> bool:
        return self.kind.startswith("dense")

    def label(self, n_states: Optional[int] = None) -> str:
        n = self.n if n_states is None else n_states
        short = {"dense_cooc": "Dense-cooc", "dense_em": "Dense-EM", "standard": "Standard",
                 "standard_fair": "Standard-fair"}[self.kind]
        if self.is_dense:
            return f"{short} n={n} l={self.l} seed={self.seed}"
        if self.kind == "standard_fair":
            return f"{short} n'={n} (n={self.n}, l={self.l}) seed={self.seed}"
        return f"{short} n={n} seed={self.seed}"


def fair_states(n: int, m: int, l: int) -> int:
    """n_fair from the core (the standard HMM with about the DenseHMM's parameter count)."""
    from densehmm_core.standard import n_fair
    return int(n_fair(int(n), int(m), int(l)))


def _accepts(fn) -> Tuple[set, bool]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover
        return set(), True
    names = set(sig.parameters)
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    return names, var_kw


def _pick(names: set, var_kw: bool, candidates: List[str], value: Any, out: Dict[str, Any]) -> None:
    for c in candidates:
        if c in names:
            out[c] = value
            return


def build_model(spec: ModelSpec, n_symbols: int, device: Optional[str] = None):
    """Create the core estimator for a form.

    Returns ``(model, n_states, fit_kwargs)``; the core's constructor signatures are
    inspected so that only the options they accept are passed.
    """
    import densehmm_core as core
    device = spec.device if device is None else device
    out: Dict[str, Any] = {}
    if spec.is_dense:
        cls = core.DenseHMM
        names, var_kw = _accepts(cls.__init__)
        n_states = int(spec.n)
        kwargs: Dict[str, Any] = {"n_states": n_states, "dim": int(spec.l), "n_symbols": int(n_symbols),
                                  "fit_method": "cooc" if spec.kind == "dense_cooc" else "em",
                                  "seed": int(spec.seed)}
        _pick(names, var_kw, ["preset"], spec.preset, kwargs)
        _pick(names, var_kw, ["lr", "learning_rate"], float(spec.lr), kwargs)
        if spec.kind == "dense_cooc":
            _pick(names, var_kw, ["steps", "n_steps", "max_steps"], int(spec.steps), kwargs)
        else:
            _pick(names, var_kw, ["em_iter", "n_iter", "max_iter"], int(spec.steps), kwargs)
            _pick(names, var_kw, ["steps", "mstep_steps", "m_steps"], int(spec.mstep_steps), kwargs)
        _pick(names, var_kw, ["tol", "tolerance"], float(spec.tol), kwargs)
        _pick(names, var_kw, ["device"], device or "auto", kwargs)
        _pick(names, var_kw, ["restarts", "n_restarts"], int(spec.restarts), kwargs)
    else:
        cls = core.StandardHMM
        names, var_kw = _accepts(cls.__init__)
        n_states = int(spec.n) if spec.kind == "standard" else fair_states(spec.n, n_symbols, spec.l)
        kwargs = {"n_states": n_states, "n_symbols": int(n_symbols), "seed": int(spec.seed)}
        _pick(names, var_kw, ["device"], device or "auto", kwargs)
        _pick(names, var_kw, ["n_iter", "max_iter", "n_steps"], int(spec.steps), kwargs)
        _pick(names, var_kw, ["tol", "tolerance"], float(spec.tol), kwargs)
        if int(spec.restarts) > 1:
            _pick(names, var_kw, ["n_restarts", "restarts"], int(spec.restarts), kwargs)
    model = cls(**kwargs)
    if int(spec.restarts) > 1 and not any(k in kwargs for k in ("n_restarts", "restarts")):
        fnames, fvar = _accepts(model.iter_fit)
        for c in ("n_restarts", "restarts"):
            if c in fnames:
                out[c] = int(spec.restarts)
                break
    return model, n_states, out


def sweep_grid(spec: ModelSpec, repeats: int) -> List[ModelSpec]:
    """The paper's grid as form values: n in {3, 5, 10} with their l values, ``repeats`` seeds each.

    For a plain standard HMM (which has no l) only the n values are repeated.
    """
    specs = []
    for n, ls in PAPER_GRID.items():
        for l in (ls if spec.kind != "standard" else (spec.l,)):
            for r in range(int(repeats)):
                specs.append(dataclasses.replace(spec, n=n, l=l, seed=int(spec.seed) + r))
    return specs

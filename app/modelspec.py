"""What the model form describes, and how it becomes a core estimator (wiring only, no maths)."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["MODEL_TYPES", "INIT_METHODS", "CONFIG_KEYS", "ModelSpec", "build_model", "model_config", "paper_defaults",
           "sweep_grid", "PAPER_GRID", "fair_states"]

#: key -> label shown in the form
MODEL_TYPES = {
    "dense_cooc": "DenseHMM — direct co-occurrence",
    "dense_em": "DenseHMM — EM (gradient M-step)",
    "standard": "Standard HMM (Baum-Welch)",
    "standard_fair": "Fair standard HMM (n_fair states)",
}

#: the core's ``init_method`` values -> label shown in the form's "Start" choice
INIT_METHODS = {
    "random": "random",
    "spectral": "spectral (data's context counts)",
}

#: the paper's (n, l) grid (Sicking et al. 2020, section 5)
PAPER_GRID = {3: (1, 2, 3), 5: (2, 3, 5), 10: (2, 3, 5, 10)}


#: Which configuration option each form field sets, per model type (the one place the form's
#: values meet the estimators' option names; ``n`` and ``l`` are ``n_states`` and ``dim``).
#: ``steps`` is the form's "training length" field: Adam steps of the co-occurrence fit,
#: EM iterations, or Baum-Welch iterations.  ``init_method`` is the form's "Start" choice,
#: ``init_scale`` its "Init scale" (dense models only), ``pseudocount`` its "Smoothing" (standard
#: models only).  ``device`` is the form's Device: every model's E-step can run on a GPU (CuPy).
CONFIG_KEYS = {
    "dense_cooc": {"lr": "lr", "steps": "cooc_steps", "tol": "tol", "restarts": "restarts",
                   "preset": "preset", "seed": "seed", "device": "device", "init_method": "init_method",
                   "init_scale": "init_scale"},
    "dense_em": {"lr": "lr", "steps": "n_iter", "mstep_steps": "mstep_steps", "tol": "tol",
                 "restarts": "restarts", "preset": "preset", "seed": "seed", "device": "device",
                 "init_method": "init_method", "init_scale": "init_scale"},
    "standard": {"steps": "n_iter", "tol": "tol", "seed": "seed", "device": "device", "init_method": "init_method",
                 "pseudocount": "emission_pseudocount"},
    "standard_fair": {"steps": "n_iter", "tol": "tol", "seed": "seed", "device": "device",
                      "init_method": "init_method", "pseudocount": "emission_pseudocount"},
}


def paper_defaults(kind: str, preset: str = "paper") -> dict:
    """Training settings of a model type: the core's named preset ("paper" or the tuned "default").

    Dense models read :data:`densehmm_core.dense.PRESETS` (through :data:`CONFIG_KEYS`);
    standard HMMs use the core's Baum-Welch defaults (the paper does not state its
    iteration count).
    """
    out = {"lr": 0.01, "steps": 100, "tol": 1e-6, "mstep_steps": 25, "init_method": "spectral", "init_scale": 0.2}
    if kind.startswith("dense"):
        from densehmm_core.dense import PRESETS
        method = "cooc" if kind == "dense_cooc" else "em"
        p = PRESETS[preset][method]
        for field, key in CONFIG_KEYS[kind].items():
            if field in out and key in p:
                out[field] = p[key]
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
    preset: str = "default"
    init_method: str = "spectral"
    init_scale: float = 0.2
    pseudocount: float = 0.0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelSpec":
        names = {f.name for f in dataclasses.fields(cls)}
        spec = cls(**{k: v for k, v in (d or {}).items() if k in names})
        if spec.kind not in MODEL_TYPES:
            spec.kind = "dense_cooc"
        if spec.init_method not in INIT_METHODS:
            spec.init_method = "spectral"
        return spec

    @property
    def is_dense(self) -> bool:
        return self.kind.startswith("dense")

    def label(self, n_states: Optional[int] = None) -> str:
        n = self.n if n_states is None else n_states
        short = {"dense_cooc": "Dense-cooc", "dense_em": "Dense-EM", "standard": "Standard",
                 "standard_fair": "Standard-fair"}[self.kind]
        start = f" {self.init_method}"
        if self.is_dense:
            return f"{short} n={n} l={self.l} seed={self.seed}{start}"
        if self.kind == "standard_fair":
            return f"{short} n'={n} (n={self.n}, l={self.l}) seed={self.seed}{start}"
        return f"{short} n={n} seed={self.seed}{start}"


def fair_states(n: int, m: int, l: int) -> int:
    """n_fair from the core (the standard HMM with about the DenseHMM's parameter count)."""
    from densehmm_core.standard import n_fair
    return int(n_fair(int(n), int(m), int(l)))


def model_config(spec: ModelSpec, n_symbols: int, device: Optional[str] = None) -> Tuple[str, Dict[str, Any]]:
    """The form's values as ``(kind, config)`` for :func:`densehmm_core.model_from_config`
    (each field maps to one option through :data:`CONFIG_KEYS`)."""
    values = dataclasses.asdict(spec)
    values["device"] = (spec.device if device is None else device) or "auto"
    if spec.is_dense:
        kind = "dense"
        cfg: Dict[str, Any] = {"n_states": int(spec.n), "dim": int(spec.l), "n_symbols": int(n_symbols),
                               "fit_method": "cooc" if spec.kind == "dense_cooc" else "em"}
    else:
        kind = "standard"
        n_states = int(spec.n) if spec.kind == "standard" else fair_states(spec.n, n_symbols, spec.l)
        cfg = {"n_states": n_states, "n_symbols": int(n_symbols)}
    for field, key in CONFIG_KEYS[spec.kind].items():
        cfg[key] = values[field]
    return kind, cfg


def build_model(spec: ModelSpec, n_symbols: int, device: Optional[str] = None):
    """Create the core estimator for a form through the core's registry.

    Returns ``(model, n_states, fit_kwargs)`` (``fit_kwargs`` is empty: every option is in
    the model's configuration).
    """
    from densehmm_core import model_from_config
    kind, cfg = model_config(spec, n_symbols, device)
    return model_from_config(kind, cfg), cfg["n_states"], {}


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

"""What the model form describes, and how it becomes a core estimator (wiring only, no maths).

Nothing here lists model types or hyper-parameters: the model types (their keys, labels, estimator kind
and fit method) are the core's (:func:`densehmm_core.registry.model_types`), and the form's option
fields are the hyper-parameters an estimator's metadata marks ``form=True``
(:mod:`densehmm_core.hyperparams`), stored under their configuration names in :attr:`ModelSpec.options`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

from densehmm_core import grid as grid_mod
from densehmm_core import hyperparams
from densehmm_core.registry import model_class, model_classes, model_type, model_types

__all__ = ["ModelSpec", "build_model", "model_config", "type_defaults", "sweep_grid", "PAPER_GRID", "fair_states",
           "type_labels", "short_label", "form_params", "DEFAULT_TYPE"]

#: the paper's (n, l) grid (Sicking et al. 2020, section 5): the core's
PAPER_GRID = grid_mod.PAPER_GRID
#: the form's model type at first start
DEFAULT_TYPE = "dense_cooc"
#: what the form sets itself (its own widgets), not as option fields
_STRUCTURAL = ("n_states", "dim", "n_symbols", "fit_method", "seed", "preset", "device")


def type_labels() -> Dict[str, str]:
    """Model type key -> the label the form lists, from the core (dense types first)."""
    return {t.key: t.label for t in model_types()}


def short_label(key: str) -> str:
    """What tables and job names call a model type (``"Dense-cooc-EM"``)."""
    return model_type(key).short


def form_params() -> List[Tuple[str, Dict[type, Any]]]:
    """The form's option fields, in order: ``(name, {estimator class: its HyperParam})`` for every
    hyper-parameter some estimator marks ``form=True`` (a name two estimators share is one field)."""
    out: Dict[str, Dict[type, Any]] = {}
    for cls in model_classes():
        for hp in cls.hyper_params:
            if hp.form and hp.name not in _STRUCTURAL:
                out.setdefault(hp.name, {})[cls] = hp
    return list(out.items())


def type_defaults(key: str, preset: str = "default") -> Dict[str, Any]:
    """The option values of model type ``key`` when nothing is set: the estimator's constructor defaults,
    those left to a preset resolved by the core (DenseHMM: ``preset`` for its fit method)."""
    t = model_type(key)
    cls = model_class(t.kind)
    values = hyperparams.resolved_defaults(cls, t.fit_method if t.kind == "dense" else None,
                                           preset if t.kind == "dense" else None)
    return {name: values[name] for name, per in form_params() if cls in per}


@dataclasses.dataclass
class ModelSpec:
    """The model form's values: a model type of the core, sizes, seed, device, settings preset and the
    option fields (``options``: configuration name -> value; only those the type's estimator has are
    passed on)."""
    model_type: str = DEFAULT_TYPE
    n: int = 5
    l: int = 3
    seed: int = 0
    device: str = "auto"
    preset: str = "default"
    options: Dict[str, Any] = dataclasses.field(default_factory=dict)

    # the core's names for what the type is
    @property
    def kind(self) -> str:
        """The core's model kind (``"dense"``, ``"standard"``)."""
        return model_type(self.model_type).kind

    @property
    def fit_method(self) -> str:
        return model_type(self.model_type).fit_method

    @property
    def fair(self) -> bool:
        return model_type(self.model_type).fair

    @property
    def is_dense(self) -> bool:
        return self.kind == "dense"

    def to_dict(self) -> dict:
        """Flat and JSON-able (settings, sessions, job rows): the structural fields, the core ``kind``
        and ``fit_method``, and every option under its configuration name."""
        return {"model_type": self.model_type, "kind": self.kind, "fit_method": self.fit_method, "n": self.n,
                "l": self.l, "seed": self.seed, "device": self.device, "preset": self.preset, **self.options}

    @classmethod
    def from_dict(cls, d: Optional[dict]) -> "ModelSpec":
        """Read :meth:`to_dict` output, or a form saved before the core's metadata drove the form (the
        model type in ``kind``, ``steps`` for the training length, ``pseudocount``); unknown keys are
        ignored, an unknown model type becomes the default."""
        d = dict(d or {})
        key = d.get("model_type") or d.get("kind")
        if key not in type_labels():
            key = DEFAULT_TYPE
        t = model_type(key)
        estimator = model_class(t.kind)
        if "steps" in d:  # the old form's one "training length" field
            d["cooc_steps" if t.fit_method == "cooc" else "n_iter"] = d.pop("steps")
        if "pseudocount" in d:
            d["emission_pseudocount"] = d.pop("pseudocount")
        spec = cls(model_type=key)
        for f in ("n", "l", "seed", "device", "preset"):
            if d.get(f) is not None:
                setattr(spec, f, d[f])
        known = {name for name, _ in form_params()}
        spec.options = {k: v for k, v in d.items() if k in known}
        for k, v in list(spec.options.items()):
            if hyperparams.uses(estimator, k) and v not in (hyperparams.hyper_param(estimator, k).choices or (v,)):
                del spec.options[k]  # e.g. a start method this version does not offer
        return spec

    @classmethod
    def make(cls, **fields) -> "ModelSpec":
        """``ModelSpec.make(model_type="standard", n=3, n_iter=4, tol=0.0)``: :meth:`from_dict` of the
        keywords (structural fields and options by configuration name, in one flat list)."""
        return cls.from_dict(fields)

    def label(self, n_states: Optional[int] = None) -> str:
        n = self.n if n_states is None else n_states
        short = short_label(self.model_type)
        # always named (the core's default is spectral; the paper's settings start randomly)
        start = self.options.get("init_method") or type_defaults(self.model_type, self.preset).get("init_method")
        start = f" {start}" if start else ""
        if self.is_dense:      # the options that change the model itself are named too
            full = " full logits" if self.options.get("logits") == "full" else ""
            feats = f" +{self.options['symbol_features']}" if self.options.get("symbol_features") else ""
            return f"{short} n={n} l={self.l} seed={self.seed}{start}{full}{feats}"
        if self.fair:
            return f"{short} n'={n} (n={self.n}, l={self.l}) seed={self.seed}{start}"
        return f"{short} n={n} seed={self.seed}{start}"


def fair_states(n: int, m: int, l: int) -> int:
    """n_fair from the core (the standard HMM with about the DenseHMM's parameter count)."""
    from densehmm_core.standard import n_fair
    return int(n_fair(int(n), int(m), int(l)))


def model_config(spec: ModelSpec, n_symbols: int, device: Optional[str] = None) -> Tuple[str, Dict[str, Any]]:
    """The form's values as ``(kind, config)`` for :func:`densehmm_core.model_from_config`: the sizes,
    seed, device, the dense fit method and settings preset, and every option the type's estimator uses
    (each under its configuration name)."""
    t = model_type(spec.model_type)
    cls = model_class(t.kind)
    cfg: Dict[str, Any] = {"n_symbols": int(n_symbols), "seed": int(spec.seed),
                           "device": (spec.device if device is None else device) or "auto"}
    if t.kind == "dense":
        cfg.update(n_states=int(spec.n), dim=int(spec.l), fit_method=t.fit_method, preset=spec.preset)
    else:
        cfg["n_states"] = fair_states(spec.n, n_symbols, spec.l) if t.fair else int(spec.n)
    for name, value in spec.options.items():
        if hyperparams.uses(cls, name, t.fit_method if t.kind == "dense" else None):
            cfg[name] = value
    cfg.update(cls.fixed_options(cfg))     # e.g. full logits: l = n, random start (the form shows them fixed)
    return t.kind, cfg


def build_model(spec: ModelSpec, n_symbols: int, device: Optional[str] = None):
    """Create the core estimator for a form through the core's registry.

    Returns ``(model, n_states, fit_kwargs)`` (``fit_kwargs`` is empty: every option is in
    the model's configuration).
    """
    from densehmm_core import model_from_config
    kind, cfg = model_config(spec, n_symbols, device)
    return model_from_config(kind, cfg), cfg["n_states"], {}


def sweep_grid(spec: ModelSpec, repeats: int, grid: Optional[grid_mod.Grid] = None) -> List[ModelSpec]:
    """The form's values over ``grid`` ((n, l) pairs; default: the paper's), ``repeats`` seeds each.

    For a plain standard HMM (which has no l), and where the core fixes l by another option (full
    logits: l = n), only the distinct n values are repeated, each with that l.
    """
    specs = []
    plain_standard = not spec.is_dense and not spec.fair
    pairs = PAPER_GRID if grid is None else tuple(grid)
    if plain_standard:
        pairs = tuple((n, spec.l) for n in dict.fromkeys(n for n, _ in pairs))
    elif "dim" in model_class(spec.kind).fixed_options(model_config(spec, 1)[1]):
        pairs = tuple((n, n) for n in dict.fromkeys(n for n, _ in pairs))
    for n, l in pairs:
        for r in range(int(repeats)):
            specs.append(dataclasses.replace(spec, n=n, l=l, seed=int(spec.seed) + r,
                                             options=dict(spec.options)))
    return specs

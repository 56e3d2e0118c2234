"""Metadata of the estimators' hyper-parameters and model types: ONE place that the command line's
options (``cli/parser.py``, ``cli/train.py``), the app's model form (``app/panels/model_form.py``) and
the docs table (``docs/DENSEHMM.md``, :func:`markdown_table`) are derived from.

Each estimator lists, next to its ``config_keys``, a class attribute ``hyper_params`` (one
:class:`HyperParam` per constructor argument: type, range, help text, the fit methods that use it,
its command-line flag and whether the model form shows it) and ``model_types`` (the choices a user
picks from: :class:`ModelType`, e.g. DenseHMM with ``fit_method="cooc_em"``).  Defaults are never
copied here: :func:`default` reads them from a model built from its configuration (the option as the
estimator holds it, scikit-learn's ``get_params`` rule; ``None`` = "from the preset" for DenseHMM;
:func:`resolved_defaults` resolves those through ``resolved_config``).

Adding a hyper-parameter: the constructor argument, its name in ``config_keys``, one
``HyperParam`` line in ``hyper_params`` (and the maths) -- the CLI flag, the form field with its
tooltip, the docs table and the saved configuration follow (docs/ARCHITECTURE.md has the recipe;
``tests/test_hyperparams.py`` follows it with a dummy parameter).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["HyperParam", "ModelType", "default", "defaults", "hyper_param", "uses", "resolved_defaults",
           "check_value", "markdown_table", "default_text", "cli_flags", "applies_text", "cli_help", "add_cli_options",
           "options_from_cli"]


@dataclasses.dataclass(frozen=True)
class HyperParam:
    """One constructor argument of an estimator, as users see it."""

    name: str                          #: constructor argument = configuration key
    type: type                         #: int, float, str or bool
    label: str                         #: short name (the model form's label)
    help: str                          #: what it does: tooltips, ``--help``, the docs table
    methods: Tuple[str, ...] = ()      #: fit methods that use it (empty: every one of the estimator)
    low: Optional[float] = None        #: smallest value allowed (numbers)
    high: Optional[float] = None       #: largest value allowed (numbers; also the form's range)
    low_open: bool = False             #: the value must be strictly above ``low``
    choices: Tuple[str, ...] = ()      #: allowed values (strings)
    optional: bool = False             #: None is allowed too (the form lists it first, as "none")
    flag: Optional[str] = None         #: command-line option of ``densehmm train`` (None: none)
    short: Optional[str] = None        #: its one-letter alias (``-n``)
    metavar: Optional[str] = None      #: its placeholder in ``--help``
    form: bool = False                 #: a field of the app's model form
    group: str = "training"            #: "training" (reset with the model type) or "model" (kept)
    log: bool = False                  #: the form steps it by factors of 10 (learning rates, tolerances)
    decimals: int = 3                  #: the form's decimals for a linear float
    step: float = 1.0                  #: the form's step for a linear number

    @property
    def dest(self) -> Optional[str]:
        """The argparse attribute of the flag (``--mstep-steps`` -> ``mstep_steps``)."""
        return self.flag.lstrip("-").replace("-", "_") if self.flag else None


@dataclasses.dataclass(frozen=True)
class ModelType:
    """A model a user picks: an estimator (``kind``), its fit method and, for the paper's fair
    standard HMM, ``fair`` (states chosen to match a DenseHMM's parameter count)."""

    key: str                 #: e.g. "dense_cooc_em" (stored with app jobs and sessions)
    kind: str                #: the estimator's kind ("dense", "standard")
    fit_method: str          #: one of the estimator's fit methods
    label: str               #: what the model form lists
    short: str               #: what tables and job names show
    fair: bool = False


def hyper_param(cls, name: str) -> HyperParam:
    """The metadata of ``name`` in ``cls.hyper_params`` (``KeyError`` when it has none)."""
    for hp in cls.hyper_params:
        if hp.name == name:
            return hp
    raise KeyError(f"{cls.__name__} has no hyper-parameter {name!r}")


def _built(cls, **config: Any):
    """An unfitted model of ``cls`` built from ``config``, the required options (:data:`_REQUIRED`) at
    their placeholders -- the estimator's own construction, no copy of its defaults.  (``cls`` is
    given, as :func:`densehmm_core.registry.model_from_config` would look it up: this module sits below
    the registry.)"""
    return cls(**{**{k: v for k, v in _REQUIRED.items() if k in cls.config_keys}, **config})


#: The constructor arguments without a default, with the placeholder values models are built with
#: here (:func:`default`, :func:`resolved_defaults`; reported as None or "required": the user sets them).
_REQUIRED = {"n_states": 1, "dim": 1}


def default(cls, name: str) -> Any:
    """The default of ``name``: the option as a model built without it holds it (``None`` for a
    required one, and for DenseHMM's options left to its preset)."""
    if name not in cls.config_keys:
        raise KeyError(f"{cls.__name__} has no option {name!r}")
    return None if name in _REQUIRED else getattr(_built(cls), name)


def defaults(cls) -> Dict[str, Any]:
    """Every hyper-parameter's constructor default."""
    return {hp.name: default(cls, hp.name) for hp in cls.hyper_params}




def resolved_defaults(cls, fit_method: Optional[str] = None, preset: Optional[str] = None) -> Dict[str, Any]:
    """The values a model of ``cls`` trains with when nothing is set: a model of ``cls`` built from
    its configuration and read back with ``resolved_config``, which fills in what the estimator decides
    itself (DenseHMM: the options left to ``preset`` for ``fit_method``) -- the estimator's own
    resolution, not a copy of it.  (``cls`` is given: this module sits below the registry.)"""
    cfg: Dict[str, Any] = {}
    for key, value in (("fit_method", fit_method), ("preset", preset)):
        if value is not None and key in cls.config_keys:
            cfg[key] = value
    full = _built(cls, **cfg).resolved_config()
    return {hp.name: (None if hp.name in _REQUIRED else full[hp.name]) for hp in cls.hyper_params}


def uses(cls, name: str, fit_method: Optional[str] = None) -> bool:
    """Whether a ``cls`` model fitted with ``fit_method`` uses the hyper-parameter ``name``."""
    try:
        hp = hyper_param(cls, name)
    except KeyError:
        return False
    return not hp.methods or fit_method is None or fit_method in hp.methods


def check_value(hp: HyperParam, value: Any) -> Optional[str]:
    """Why ``value`` is not allowed for ``hp`` (``None`` when it is), e.g. "must be > 0 and finite"."""
    if hp.choices and value not in hp.choices and not (hp.optional and value is None):
        return f"must be one of {', '.join(hp.choices)}{' or none' if hp.optional else ''}, got {value!r}"
    if hp.type in (int, float) and value is not None:
        v = float(value)
        if not math.isfinite(v):
            return f"must be {'> ' if hp.low_open else '>= '}{_num(hp.low)} and finite, got {value}" \
                if hp.low is not None else f"must be finite, got {value}"
        if hp.low is not None and (v < hp.low or (hp.low_open and v == hp.low)):
            return f"must be {'> ' if hp.low_open else '>= '}{_num(hp.low)} and finite, got {value}"
        if hp.high is not None and v > hp.high:
            return f"must be <= {_num(hp.high)}, got {value}"
    return None


def _num(x: Optional[float]) -> str:
    return "" if x is None else (str(int(x)) if float(x).is_integer() else f"{x:g}")


def applies_text(cls, hp: HyperParam) -> str:
    """Which models use ``hp``, e.g. "dense (cooc, cooc_em)" or "standard"."""
    methods = hp.methods or ()
    all_methods = tuple(t.fit_method for t in cls.model_types)
    if not methods or set(methods) >= set(all_methods):
        return cls.kind
    return f"{cls.kind} ({', '.join(methods)})"


def cli_flags(classes: Sequence[Any]) -> Dict[str, List[Tuple[Any, HyperParam]]]:
    """Flag -> the (estimator, metadata) pairs it sets, in the order of first appearance."""
    out: Dict[str, List[Tuple[Any, HyperParam]]] = {}
    for cls in classes:
        for hp in cls.hyper_params:
            if hp.flag:
                out.setdefault(hp.flag, []).append((cls, hp))
    return out


def default_text(cls, name: str) -> str:
    """The default of ``name`` as the docs say it: a value, "from the preset", "none" or "required"."""
    if name in _REQUIRED and name in cls.config_keys:
        return "required"
    d = default(cls, name)
    if d is None:   # left to the preset of a fit method that uses it (EM's iterations: not cooc's)
        methods = hyper_param(cls, name).methods or (None,)
        preset = any(resolved_defaults(cls, fit_method=m).get(name) is not None for m in methods)
        return "from the preset" if preset else "none"
    return repr(d) if isinstance(d, str) else str(d)


def cli_help(pairs: Sequence[Tuple[Any, HyperParam]]) -> str:
    """The ``--help`` text of a flag: who uses it, what it does, the option it sets and its default."""
    def text(hp: HyperParam) -> str:    # lower-cased after the colon, but not an acronym ("EM", "L2")
        acronym = len(hp.help) > 1 and (hp.help[1].isupper() or hp.help[1].isdigit())
        return (hp.help if acronym else hp.help[0].lower() + hp.help[1:]).rstrip(".")
    parts = [f"{applies_text(cls, hp)}: {text(hp)}" for cls, hp in pairs]
    if len({hp.help for _, hp in pairs}) == 1 and len(pairs) > 1:
        parts = [f"{' and '.join(applies_text(c, h) for c, h in pairs)}: {text(pairs[0][1])}"]
    defs = {cls.kind: default_text(cls, hp.name) for cls, hp in pairs}
    shown = [v for v in defs.values() if v != "required"]
    if len(set(shown)) == 1 and len(shown) == len(defs):
        tail = f"; default {shown[0]}"
    else:
        tail = "".join(f"; {k} default {v}" for k, v in defs.items() if v != "required")
    return "; ".join(parts) + f" (option {pairs[0][1].name}{tail})"


def add_cli_options(groups: Dict[str, Any], classes: Sequence[Any], skip: Sequence[str] = ()) -> None:
    """Add every flag of the estimators' metadata to argparse groups (``{"model": g, "training": g}``,
    by :attr:`HyperParam.group`); options in ``skip`` (configuration names) are left to the caller."""
    for flag, pairs in cli_flags(classes).items():
        hp = pairs[0][1]
        if hp.name in skip:
            continue
        names = [flag] + ([hp.short] if hp.short else [])
        kw: Dict[str, Any] = {"help": cli_help(pairs), "default": None}
        if hp.choices:
            kw["choices"] = list(dict.fromkeys(c for _, h in pairs for c in h.choices))
        elif hp.type in (int, float):
            kw["type"] = hp.type
        if hp.metavar:
            kw["metavar"] = hp.metavar
        groups[hp.group].add_argument(*names, **kw)


def options_from_cli(args: Any, cls: Any, fit_method: Optional[str], classes: Sequence[Any],
                     skip: Sequence[str] = ()) -> Dict[str, Any]:
    """The configuration options set by ``densehmm train``'s flags for a ``cls`` model fitted with
    ``fit_method``.  A flag this model does not use, or a value out of range, is a ``ValueError`` whose
    message names the flag (the CLI prints it as one line)."""
    cfg: Dict[str, Any] = {}
    flags = cli_flags(classes)
    for flag, pairs in flags.items():
        hp0 = pairs[0][1]
        value = getattr(args, hp0.dest)
        if value is None or hp0.name in skip:
            continue
        mine = [hp for c, hp in pairs if c is cls]
        if not mine:
            raise ValueError(f"{flag} applies to {' and '.join(c.kind for c, _ in pairs)} models only")
        hp = mine[0]
        if not uses(cls, hp.name, fit_method):
            alts = [f for f, ps in flags.items() for c, h in ps
                    if c is cls and h.methods and fit_method in h.methods and not set(hp.methods) <= set(h.methods)]
            raise ValueError(f"{flag} applies to --method {', '.join(hp.methods)}"
                             + (f"; use {', '.join(alts)} for {fit_method}" if alts else ""))
        why = check_value(hp, value)
        if why:
            raise ValueError(f"{flag} {why}")
        cfg[hp.name] = value
    return cfg


def _range(hp: HyperParam) -> str:
    if hp.choices:
        return ", ".join(f"`{c}`" for c in hp.choices) + (", none" if hp.optional else "")
    if hp.type is bool:
        return "true / false"
    lo = "" if hp.low is None else f"{'>' if hp.low_open else '>='} {_num(hp.low)}"
    hi = "" if hp.high is None else f"<= {_num(hp.high)}"
    return ", ".join(x for x in (lo, hi) if x) or "any"


def markdown_table(classes: Sequence[Any]) -> str:
    """The docs table of every hyper-parameter (docs/DENSEHMM.md embeds it; a test keeps it current)."""
    rows = ["| estimator | option | type | range | default | fit methods | CLI | form | meaning |",
            "|---|---|---|---|---|---|---|---|---|"]
    for cls in classes:
        for hp in cls.hyper_params:
            methods = ", ".join(hp.methods) if hp.methods else "all"
            rows.append(f"| {cls.__name__} | `{hp.name}` | {hp.type.__name__} | {_range(hp)} | "
                        f"{default_text(cls, hp.name)} | {methods} | "
                        f"{'`' + hp.flag + '`' if hp.flag else ''} | {hp.label if hp.form else ''} | "
                        f"{hp.help.replace('|', '/')} |")
    return "\n".join(rows) + "\n"

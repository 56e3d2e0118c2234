"""The estimators' hyper-parameter metadata (densehmm_core.hyperparams) and what is derived from it: the
CLI's train options, the app's model form, the docs table; and the recipe "adding a hyper-parameter"
(docs/ARCHITECTURE.md) followed once with a dummy parameter."""
from __future__ import annotations

import inspect
import os
import pathlib
import re

import pytest

from densehmm_core import hyperparams
from densehmm_core.dense import FIT_METHODS, DenseHMM
from densehmm_core.hyperparams import HyperParam
from densehmm_core.registry import model_classes, model_types
from densehmm_core.standard import StandardHMM

REPO = pathlib.Path(__file__).resolve().parent.parent
TABLE = re.compile(r"<!-- hyperparams-table -->\n(.*?)<!-- /hyperparams-table -->", re.S)


@pytest.mark.parametrize("cls", [DenseHMM, StandardHMM])
def test_metadata_covers_the_constructor(cls):
    """One metadata line per constructor argument (= config key); defaults are the signature's."""
    assert [hp.name for hp in cls.hyper_params] and \
        {hp.name for hp in cls.hyper_params} == set(cls.config_keys)
    params = inspect.signature(cls.__init__).parameters
    for hp in cls.hyper_params:
        d = params[hp.name].default
        assert hyperparams.default(cls, hp.name) == (None if d is inspect.Parameter.empty else d)
        assert hp.help and hp.label and hp.type in (int, float, str, bool)
        assert set(hp.methods) <= {t.fit_method for t in cls.model_types}, hp.name
        if d not in (None, inspect.Parameter.empty):
            assert hyperparams.check_value(hp, d) is None, hp.name   # its own default is in range
    # the model types are the core's kinds and fit methods
    assert {t.kind for t in cls.model_types} == {cls.kind}


def test_every_fit_method_is_a_model_type():
    """cooc_em included: every fit method of every estimator is a model type users can pick."""
    types = model_types()
    assert {t.fit_method for t in types if t.kind == "dense"} == set(FIT_METHODS)
    assert len({t.key for t in types}) == len(types)


def test_check_value_against_the_ranges():
    lr = hyperparams.hyper_param(DenseHMM, "lr")
    assert hyperparams.check_value(lr, 0.0) == "must be > 0 and finite, got 0.0"
    assert hyperparams.check_value(lr, float("inf")).startswith("must be > 0 and finite")
    assert hyperparams.check_value(lr, 1e-3) is None
    steps = hyperparams.hyper_param(DenseHMM, "finish_steps")
    assert hyperparams.check_value(steps, 0) is None and hyperparams.check_value(steps, -1) is not None
    assert hyperparams.check_value(hyperparams.hyper_param(DenseHMM, "init_method"), "nope").startswith("must be")


def test_docs_table_is_the_metadata():
    text = (REPO / "docs" / "DENSEHMM.md").read_text()
    m = TABLE.search(text)
    assert m, "docs/DENSEHMM.md lost its hyperparams-table markers"
    assert m.group(1) == hyperparams.markdown_table(model_classes()), \
        "regenerate: python -c 'from densehmm_core.hyperparams import markdown_table; ...' (docs/DENSEHMM.md)"


def _train_args(argv):
    from densehmm_core.cli.parser import build_parser
    return build_parser().parse_args(["train", "demo"] + argv)


def _value_for(hp: HyperParam):
    if hp.choices:
        return hp.choices[-1]
    if hp.type is str:   # free strings: a valid one of each
        return {"device": "cpu", "symbol_features": "orthographic"}[hp.name]
    return {int: 3, float: 0.125}[hp.type]


def test_every_cli_flag_sets_its_option():
    """Each metadata flag is a train option that reaches its configuration key (for a model and fit
    method that use it) and is refused, naming the flag, for one that does not."""
    from densehmm_core.cli.common import UserError
    from densehmm_core.cli.train import _model_config
    for flag, pairs in hyperparams.cli_flags(model_classes()).items():
        cls, hp = pairs[0]
        if hp.name in ("n_states", "dim", "fit_method"):
            continue
        value = _value_for(hp)
        model = "dense" if cls is DenseHMM else "standard"
        method = hp.methods[0] if cls is DenseHMM and hp.methods else "cooc"
        argv = ["--model", model, "--states", "3"] + (["--dim", "2", "--method", method] if model == "dense" else [])
        kind, cfg = _model_config(_train_args(argv + [flag, str(value)]), 5)
        assert cfg[hp.name] == value, flag
        users = {c for c, _ in pairs}
        if users != {DenseHMM, StandardHMM}:
            other = ["--model", "standard"] if model == "dense" else ["--model", "dense", "--dim", "2"]
            with pytest.raises(UserError, match=re.escape(flag)):
                _model_config(_train_args(other + ["--states", "3", flag, str(value)]), 5)


class DummyStandard(StandardHMM):
    """The recipe, followed: a constructor argument, its config key, one metadata line (and the maths,
    here none)."""
    config_keys = StandardHMM.config_keys + ("dummy_weight",)
    hyper_params = StandardHMM.hyper_params + (
        HyperParam("dummy_weight", float, "Dummy weight", "A test-only option, to follow the recipe.", low=0,
                   high=10, flag="--dummy-weight", metavar="W", form=True, group="model", decimals=2),)

    def __init__(self, *args, dummy_weight: float = 0.5, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.dummy_weight = float(dummy_weight)


@pytest.fixture
def dummy(monkeypatch):
    """The registry hands out DummyStandard for kind "standard" (model_class reads the module's class)."""
    import densehmm_core.standard as standard_module
    monkeypatch.setattr(standard_module, "StandardHMM", DummyStandard)
    yield DummyStandard


def test_a_new_hyper_parameter_reaches_cli_form_and_saved_config(dummy, tmp_path, qtbot, capsys):
    from densehmm_core.cli import main
    from densehmm_core.cli.parser import build_parser
    from densehmm_core.modelfile import load_model
    # the CLI: a flag with the metadata's help, and the value in the saved model's configuration
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    help_text = train.format_help()
    assert "--dummy-weight W" in help_text and "test-only option" in help_text
    out = tmp_path / "m.h5"
    assert main(["train", "demo", "--model", "standard", "--states", "2", "--iter", "2", "--dummy-weight", "2.5",
                 "--out", str(out), "--quiet"]) == 0
    assert load_model(str(out)).get_config()["dummy_weight"] == 2.5
    assert main(["train", "demo", "--states", "2", "--dim", "2", "--dummy-weight", "2.5"]) == 2
    assert "--dummy-weight applies to standard models only" in capsys.readouterr().err
    assert main(["train", "demo", "--model", "standard", "--states", "2", "--dummy-weight", "11"]) == 2
    assert "--dummy-weight must be <= 10" in capsys.readouterr().err
    # the docs table has its row
    assert "| DummyStandard | `dummy_weight` | float | >= 0, <= 10 | 0.5 |" in hyperparams.markdown_table(
        model_classes())
    # the app's model form: a field with the metadata's label, range, default and tooltip, enabled for the
    # standard model types only; its value reaches the model's configuration
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.modelspec import build_model
    from app.panels.model_form import ModelForm
    form = ModelForm()
    qtbot.addWidget(form)
    field = form.fields["dummy_weight"]
    assert form.field_labels["dummy_weight"].text() == "Dummy weight" and field.maximum() == 10
    form.kind.setCurrentIndex(form.kind.findData("standard"))
    assert field.isEnabled() and "test-only option" in field.toolTip() and field.value() == 0.5
    field.setValue(1.25)
    model, _, _ = build_model(form.spec(), 5)
    assert isinstance(model, DummyStandard) and model.get_config()["dummy_weight"] == 1.25
    form.kind.setCurrentIndex(form.kind.findData("dense_em"))
    assert not field.isEnabled() and "dummy_weight" not in build_model(form.spec(), 5)[0].get_config()


def test_help_says_from_the_preset_for_options_a_method_preset_sets_and_keeps_acronyms():
    """``densehmm train --help`` said "default none" for EM's iterations, Adam steps per M-step and
    M-step dtype (the default method, cooc, leaves them unset; EM's preset sets 40, 25, float32), and
    lower-cased a help text's leading acronym ("eM: the co-occurrence MAD ...")."""
    for name, em_value in (("n_iter", 40), ("mstep_steps", 25), ("mstep_dtype", "float32")):
        assert hyperparams.resolved_defaults(DenseHMM, fit_method="em")[name] == em_value
        assert hyperparams.resolved_defaults(DenseHMM)[name] is None          # (cooc, the default method)
        assert hyperparams.default_text(DenseHMM, name) == "from the preset", name
    assert hyperparams.default_text(DenseHMM, "symbol_features") == "none"   # no preset sets it
    assert hyperparams.default_text(StandardHMM, "n_iter") == "100"
    flags = hyperparams.cli_flags([DenseHMM, StandardHMM])
    assert hyperparams.cli_help(flags["--iter"]).endswith(
        "(option n_iter; dense default from the preset; standard default 100)")
    diag = hyperparams.cli_help(flags["--diagnostics-every"])
    assert diag.startswith("dense (em, cooc_em, marginal): EM: the co-occurrence MAD"), diag
    assert "standard: the co-occurrence MAD" in diag       # an ordinary first word is lower-cased

"""The model form: model type, sizes, training settings (paper defaults), device; Train and Sweep.

The model types and the option fields (label, range, default, tooltip, which model types use them) come
from the core's metadata (:mod:`densehmm_core.hyperparams`, through :mod:`app.modelspec`): a
hyper-parameter an estimator marks ``form=True`` is a field here with its help text as tooltip, enabled
for the model types whose estimator and fit method use it."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout,
                               QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget)

from densehmm_core import grid as grid_mod
from densehmm_core import hyperparams
from densehmm_core.registry import model_class, model_type

from ..modelspec import DEFAULT_TYPE, PAPER_GRID, ModelSpec, fair_states, form_params, type_defaults, type_labels
from ..views.widgets import CompactComboBox
from .form_hints import WORDS_HINTS, HintRow, hint_facts

__all__ = ["ModelForm", "SciSpinBox"]

class SciSpinBox(QDoubleSpinBox):
    """A double spin box that shows and accepts scientific notation (1e-07)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setDecimals(15)

    def textFromValue(self, value: float) -> str:  # noqa: N802 (Qt API)
        return "0" if value == 0 else f"{value:.6g}"

    def valueFromText(self, text: str) -> float:  # noqa: N802
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int):
        from PySide6.QtGui import QValidator
        t = text.strip()
        try:
            float(t)
            return QValidator.Acceptable, text, pos
        except ValueError:
            ok = all(c in "0123456789.eE+-" for c in t)
            return (QValidator.Intermediate if ok else QValidator.Invalid), text, pos

    def stepBy(self, steps: int) -> None:  # noqa: N802 - multiply/divide by 10
        v = self.value() or 1e-6
        self.setValue(v * (10.0 ** steps))


def _labelled(rows) -> QWidget:
    """Rows of ``(text, field)`` in a block of the panel's full width, the fields aligned and stretched."""
    box = QWidget()
    grid = QGridLayout(box)
    grid.setContentsMargins(0, 0, 0, 0)
    for i, (text, field) in enumerate(rows):
        grid.addWidget(QLabel(text), i, 0)
        grid.addWidget(field, i, 1)
    grid.setColumnStretch(1, 1)
    return box


def option_widget(hp) -> QWidget:
    """The field for one hyper-parameter (:class:`densehmm_core.hyperparams.HyperParam`): a spin box in
    its range (steps of x10 for ``log`` ones), a choice, or a check box."""
    if hp.choices:
        w = QComboBox()
        if hp.optional:
            w.addItem("none", None)
        for c in hp.choices:
            w.addItem(c, c)
        return w
    if hp.type is bool:
        return QCheckBox()
    if hp.type is int:
        w = QSpinBox()
        w.setRange(int(hp.low if hp.low is not None else 0) + (1 if hp.low_open else 0),
                   int(hp.high if hp.high is not None else 2 ** 31 - 1))
        w.setSingleStep(max(1, int(hp.step)))
        return w
    tiny = 1e-8 if hp.log else 10.0 ** -hp.decimals
    low = (hp.low if hp.low is not None else -1e12) + (tiny if hp.low_open else 0.0)
    high = hp.high if hp.high is not None else 1e12
    if hp.log:
        w = SciSpinBox()
    else:
        w = QDoubleSpinBox()
        w.setDecimals(hp.decimals)
        w.setSingleStep(hp.step)
    w.setRange(low, high)
    return w


def _value(w: QWidget) -> Any:
    if isinstance(w, QComboBox):
        return w.currentData()
    if isinstance(w, QCheckBox):
        return w.isChecked()
    return w.value()


def _set_value(w: QWidget, v: Any) -> None:
    if isinstance(w, QComboBox):
        i = next((k for k in range(w.count()) if w.itemData(k) is None), -1) if v is None else w.findData(v)
        if i >= 0:
            w.setCurrentIndex(i)
    elif isinstance(w, QCheckBox):
        w.setChecked(bool(v))
    elif isinstance(w, QSpinBox):
        w.setValue(int(v))
    else:
        w.setValue(float(v))


def _changed_signal(w: QWidget):
    if isinstance(w, QComboBox):
        return w.currentIndexChanged
    if isinstance(w, QCheckBox):
        return w.toggled
    return w.valueChanged


class ModelForm(QWidget):
    """Edits a :class:`~app.modelspec.ModelSpec`; emits ``train_requested`` / ``sweep_requested``.

    ``fields`` maps each option's configuration name (``"lr"``, ``"cooc_steps"``, ``"init_method"``,
    ``"emission_pseudocount"``...) to its widget; ``field_labels`` to its label.
    """

    # requests carry no values: the window reads the form once the data are there (with none open, loading
    # the demo sets the form to the demo's settings first)
    train_requested = Signal()
    sweep_requested = Signal()
    sweep_target_requested = Signal()         # "Change…" where sweeps run
    changed = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._m: Optional[int] = None
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.kind = CompactComboBox(12)   # the core's model types (key as item data)
        for key, label in type_labels().items():
            self.kind.addItem(label, key)
        self.kind.setToolTip("Dense models learn embeddings U, Z, W (states) and V (symbols); "
                             "A = softmax(Z U^T), B = softmax(W V^T).")
        self.preset = CompactComboBox(12)
        self.preset.addItem("Tuned (core defaults)", "default")
        self.preset.addItem("Paper (Sicking et al. 2020)", "paper")
        self.preset.setToolTip("Where the training settings come from: the core's measured defaults "
                               "(spectral start, normalised loss, schedule, L-BFGS finish), or the paper's "
                               "settings (random start, plain Adam)")
        # the model type and the settings' source span the panel, so their long names show whole at
        # the panel's first width (in the fields' column they were elided)
        form.addRow(_labelled([("Model", self.kind), ("Settings", self.preset)]))
        self.n = QSpinBox(); self.n.setRange(1, 2000); self.n.setValue(5)
        self.n.setToolTip(hyperparams.hyper_param(model_class("dense"), "n_states").help)
        form.addRow("States n", self.n)
        self.hints: Dict[str, HintRow] = {}     # app.panels.form_hints, by name
        self._add_hints(form, "n_states")
        self.l = QSpinBox(); self.l.setRange(1, 1024); self.l.setValue(3)   # its tooltip: _update_visibility
        self.l_label = QLabel("Embedding length l")
        form.addRow(self.l_label, self.l)
        self.n_fair = QLabel("—")
        self.n_fair.setToolTip("States of a standard HMM with about the DenseHMM's number of free "
                               "parameters l(3n+m+1) (paper, section 5).")
        form.addRow("n_fair", self.n_fair)
        # the option fields, from the core's metadata
        self.fields: Dict[str, QWidget] = {}
        self.field_labels: Dict[str, QLabel] = {}
        self._params = dict(form_params())
        for name, per_class in self._params.items():
            hp = next(iter(per_class.values()))
            w = option_widget(hp)
            self.fields[name] = w
            self.field_labels[name] = QLabel(hp.label)
            form.addRow(self.field_labels[name], w)
            self._add_hints(form, name)
        self._form = form
        self._words = False
        self._gold_tags: Optional[int] = None
        self.seed = QSpinBox(); self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip(hyperparams.hyper_param(model_class("dense"), "seed").help)
        form.addRow("Seed", self.seed)
        self.device = CompactComboBox(12)
        self.device.setToolTip("Where the job trains: EM (E-step, M-step, diagnostics) runs on that GPU with "
                               "CuPy when CuPy works there (else on the CPU), the co-occurrence fits' TensorFlow "
                               "steps when TensorFlow sees it. 'auto' spreads jobs over the GPUs; 'cpu' never "
                               "touches a GPU.")
        form.addRow("Device", self.device)
        lay.addLayout(form)
        self.defaults_button = QPushButton("Reset to defaults")
        self.defaults_button.setToolTip("The training settings (learning rate, steps, iterations, tolerance) of "
                                        "the chosen settings for this model type")
        self.defaults_button.clicked.connect(self.apply_paper_defaults)
        self.train_button = QPushButton("Train")
        self.train_button.setObjectName("trainButton")
        self.train_button.setToolTip("Start a job with these settings (Ctrl+T)")
        self.train_button.clicked.connect(lambda: self.train_requested.emit())
        row = QHBoxLayout()
        row.addWidget(self.defaults_button)
        row.addStretch(1)
        row.addWidget(self.train_button)
        lay.addLayout(row)
        sweep = QGroupBox("Sweep")
        sweep_rows = QVBoxLayout(sweep)
        gl = QHBoxLayout()
        sweep_rows.addLayout(gl)
        gl.addWidget(QLabel("Grid"))
        self.sweep_grid = QLineEdit()
        self.sweep_grid.setObjectName("sweepGrid")
        self.sweep_grid.setPlaceholderText("the paper's grid, or e.g. n=3,5,10 l=2,4")
        self.sweep_grid.setToolTip("Which (n, l) pairs the sweep trains, as the command line's --grid: "
                                   "\"n=3,5,10 l=2,4\" is every combination of those n (hidden states) and l "
                                   "(embedding length) values. Empty: the paper's grid "
                                   f"({grid_mod.describe_grid(PAPER_GRID)}). A standard HMM has no l: "
                                   "its grid needs only n (\"n=2,3,5\"), and its sweep repeats the n values.")
        gl.addWidget(self.sweep_grid, 1)
        sl = QHBoxLayout()
        sweep_rows.addLayout(sl)
        self.sweep_info = QLabel(); self.sweep_info.setWordWrap(True)
        self.sweep_info.setObjectName("sweepInfo")
        sl.addWidget(self.sweep_info, 1)
        self.repeats = QSpinBox(); self.repeats.setRange(1, 100); self.repeats.setValue(3)
        self.repeats.setPrefix("× "); self.repeats.setToolTip("Repeats (seeds) per (n, l)")
        sl.addWidget(self.repeats)
        self.sweep_button = QPushButton("Run sweep")
        self.sweep_button.setToolTip("Train every (n, l) of the grid, repeated with seeds seed, seed + 1, ... "
                                     "(Ctrl+Shift+T)")
        self.sweep_button.clicked.connect(self.request_sweep)
        sl.addWidget(self.sweep_button)
        self.sweep_grid.textChanged.connect(self._update_sweep_info)
        self.repeats.valueChanged.connect(self._update_sweep_info)
        target_row = QHBoxLayout()   # where the sweep runs: this app or a Dask cluster (app.remote_jobs)
        self.sweep_target_label = QLabel()
        self.sweep_target_label.setWordWrap(True)
        self.sweep_target_button = QPushButton("Change…")
        self.sweep_target_button.setToolTip("Run sweeps with this app's workers or on a Dask cluster")
        self.sweep_target_button.clicked.connect(self.sweep_target_requested)
        target_row.addWidget(self.sweep_target_label, 1)
        target_row.addWidget(self.sweep_target_button)
        sweep_rows.addLayout(target_row)
        self.set_sweep_target("this app's worker pool")
        self._update_sweep_info()
        lay.addWidget(sweep)
        lay.addStretch(1)
        self.set_devices([])
        self.kind.currentIndexChanged.connect(self._kind_changed)
        for w in (self.n, self.l):
            w.valueChanged.connect(self._update_fair)
        for w in (self.n, self.l, self.seed):
            w.valueChanged.connect(self.changed)
        for w in self.fields.values():
            _changed_signal(w).connect(self.changed)
        self.changed.connect(self._update_hints)
        # options another option fixes (full logits: l = n, random start): shown fixed, kept in step with n
        self.fields["logits"].currentIndexChanged.connect(self._update_visibility)
        self.n.valueChanged.connect(self._update_fixed)
        self.preset.currentIndexChanged.connect(self._kind_changed)
        every = {k: v for name in type_labels() for k, v in type_defaults(name, "default").items()}
        self.set_spec(ModelSpec(model_type=DEFAULT_TYPE, preset="default",
                                options={**every, **type_defaults(DEFAULT_TYPE, "default")}))

    # ---------------------------------------------------------------- values
    def spec(self) -> ModelSpec:
        return ModelSpec(model_type=self.kind.currentData(), n=self.n.value(), l=self.l.value(),
                         seed=self.seed.value(), device=self.device.currentData() or "auto",
                         preset=self.preset.currentData(),
                         options={name: _value(w) for name, w in self.fields.items()})

    def set_spec(self, spec: ModelSpec) -> None:
        i = self.kind.findData(spec.model_type)
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(max(0, i))
        self.kind.blockSignals(False)
        self.preset.blockSignals(True)
        self.preset.setCurrentIndex(max(0, self.preset.findData(spec.preset)))
        self.preset.blockSignals(False)
        self.n.setValue(int(spec.n)); self.l.setValue(int(spec.l))
        self.seed.setValue(int(spec.seed))
        for name, value in spec.options.items():
            if name in self.fields and (value is not None or next(iter(self._params[name].values())).optional):
                _set_value(self.fields[name], value)
        j = self.device.findData(spec.device)
        if j >= 0:
            self.device.setCurrentIndex(j)
        self._update_visibility()
        self._update_fair()

    def apply_paper_defaults(self) -> None:
        """The training settings ("training" group of the metadata) and the start (Start, Init scale) of
        the chosen preset for this type -- the paper's settings start randomly, the core's defaults from
        the data; the model's other choices (smoothing, restarts) are kept."""
        key = self.kind.currentData()
        cls = model_class(model_type(key).kind)
        for name, value in type_defaults(key, self.preset.currentData()).items():
            start = name in ("init_method", "init_scale")
            if (self._params[name][cls].group == "training" or start) and value is not None:
                _set_value(self.fields[name], value)
        self._update_fixed()

    # ------------------------------------------------------------------ sweep
    def sweep_pairs(self):
        """The grid's (n, l) pairs (the paper's when the field is empty); ValueError with the reason.
        A model type without an l of its own (a standard HMM; full logits: l = n) needs only n values:
        a grid without l takes the form's l, which the sweep then sets (``app.modelspec.sweep_grid``)."""
        text = self.sweep_grid.text().strip()
        if not text:
            return PAPER_GRID
        return grid_mod.parse_grid(text, default_l=None if self._sweep_needs_l() else self.l.value())[0]

    def _sweep_needs_l(self) -> bool:
        """Whether a sweep of the form's model type varies l (not a plain standard HMM, nor l fixed to n)."""
        t = model_type(self.kind.currentData())
        return (t.kind == "dense" or t.fair) and "dim" not in self.fixed_options()

    def _update_sweep_info(self) -> None:
        try:
            pairs = self.sweep_pairs()
        except ValueError as exc:
            self.sweep_info.setText(f"Grid: {exc}")
            self.sweep_info.setStyleSheet("color: #c0392b;")
            self.sweep_button.setEnabled(False)
        else:
            which = "the paper's grid: " if not self.sweep_grid.text().strip() else ""
            if self._sweep_needs_l():
                what = grid_mod.describe_grid(pairs)
                runs = len(pairs) * self.repeats.value()
            else:   # the n values only (a standard HMM has no l; full logits: l = n)
                ns = list(dict.fromkeys(n for n, _l in pairs))
                what = f"n ∈ {{{', '.join(map(str, ns))}}}"
                runs = len(ns) * self.repeats.value()
            self.sweep_info.setText(f"{which}{what} — up to {runs} jobs")
            self.sweep_info.setStyleSheet("")
            self.sweep_button.setEnabled(True)

    def request_sweep(self) -> bool:
        """Emit ``sweep_requested``; False (nothing emitted) when the grid text is not valid (the form says why)."""
        if self.sweep_values() is None:
            return False
        self.sweep_requested.emit()
        return True

    def sweep_values(self) -> Optional[tuple]:
        """``(repeats, (n, l) pairs)`` of Run sweep as the form is now, or None when the grid text is not
        valid (the form then says why and Run sweep is disabled)."""
        try:
            pairs = self.sweep_pairs()
        except ValueError:
            self._update_sweep_info()
            return None
        return self.repeats.value(), pairs

    def set_sweep_target(self, text: str) -> None:
        """Say where Run sweep trains (see :func:`app.remote_jobs.describe_target`)."""
        self.sweep_target_label.setText(f"Runs on: {text}")

    def set_devices(self, devices: List[str]) -> None:
        """Fill the device list (the devices TensorFlow or CuPy lists)."""
        current = self.device.currentData() or "auto"
        self.device.clear()
        self.device.addItem("auto", "auto")
        seen = {"auto"}
        for d in (devices or ["cpu"]):
            if d not in seen:
                self.device.addItem(d.lstrip("/"), d)
                seen.add(d)
        i = self.device.findData(current)
        self.device.setCurrentIndex(max(0, i))

    def set_n_symbols(self, m: Optional[int]) -> None:
        """The current data set's alphabet size (n_fair depends on it)."""
        self._m = m
        self._update_fair()

    def set_words_data(self, words: bool, gold_tags: Optional[int] = None) -> None:
        """Whether the current data set's symbols are the words of a tagged corpus, and how many gold
        tags it has (the form's hints, :data:`app.panels.form_hints.WORDS_HINTS`, show only for those)."""
        self._words = bool(words)
        self._gold_tags = int(gold_tags) if words and gold_tags else None
        self._update_hints()

    def apply_hint(self, name: str) -> None:
        """A hint's button: set the values it offers (the hint then goes)."""
        kind = model_type(self.kind.currentData()).kind
        for option, value in self.hints[name].hint.apply(kind, self._hint_facts()).items():
            _set_value(self._hint_field(option), value)

    def _add_hints(self, form: QFormLayout, field: str) -> None:
        """The rows of the hints about ``field``, below it (hidden until :meth:`_update_hints`)."""
        for hint in WORDS_HINTS:
            if hint.field == field:
                self.hints[hint.name] = row = HintRow(hint)
                row.button.clicked.connect(lambda _=False, h=hint: self.apply_hint(h.name))
                form.addRow("", row)

    def _hint_field(self, name: str) -> QWidget:
        return self.n if name == "n_states" else self.fields[name]

    def _hint_facts(self) -> Dict[str, Any]:
        return hint_facts({name: _value(w) for name, w in self.fields.items()}, self.n.value(),
                          self.kind.currentData(), self._gold_tags)

    # -------------------------------------------------------------- updates
    def _update_hints(self) -> None:
        """Each hint shows on words data while its field is enabled and its condition holds."""
        facts = self._hint_facts()
        for row in self.hints.values():
            show = self._words and self._hint_field(row.hint.field).isEnabled() and row.hint.shown(facts)
            if show:
                row.set_facts(facts)
            self._form.setRowVisible(row, show)

    def _kind_changed(self) -> None:
        self.apply_paper_defaults()
        self._update_visibility()
        self._update_fair()
        self.changed.emit()

    def _update_visibility(self) -> None:
        """Enable the fields the current model type's estimator uses (for its fit method); each field's
        label and tooltip are that estimator's."""
        t = model_type(self.kind.currentData())
        cls = model_class(t.kind)
        dense = t.kind == "dense"
        self.l.setEnabled(dense or t.fair)
        self.l_label.setEnabled(dense or t.fair)
        self.l.setToolTip(hyperparams.hyper_param(model_class("dense"), "dim").help
                          + " (A fair standard HMM: the l of the DenseHMM whose parameter count it matches.)")
        self.preset.setEnabled(dense)
        for name, per_class in self._params.items():
            used = hyperparams.uses(cls, name, t.fit_method if dense else None)
            hp = per_class.get(cls) or next(iter(per_class.values()))
            self.fields[name].setEnabled(used)
            self.field_labels[name].setEnabled(used)
            self.field_labels[name].setText(hp.label)
            users = ", ".join(c.kind + (f" ({', '.join(h.methods)})" if h.methods else "")
                              for c, h in per_class.items())
            self.fields[name].setToolTip(f"{hp.help}\n\nUsed by: {users} models (option {name}).")
        self._update_fixed()
        self._update_sweep_info()   # a standard HMM's grid needs only n

    def fixed_options(self) -> Dict[str, Any]:
        """The options the form's other values fix for the current model type (the core says which:
        ``fixed_options`` of its estimator; full logits fix l and Start)."""
        t = model_type(self.kind.currentData())
        cls = model_class(t.kind)
        method = t.fit_method if t.kind == "dense" else None
        cfg: Dict[str, Any] = {"n_states": self.n.value()}
        cfg.update({name: _value(w) for name, w in self.fields.items() if hyperparams.uses(cls, name, method)})
        return cls.fixed_options(cfg)

    def _update_fixed(self) -> None:
        """Show the fixed options with their values, disabled; ``_update_visibility`` enabled the rest."""
        fixed = self.fixed_options()
        if "dim" in fixed:
            self.l.setValue(int(fixed["dim"]))
            self.l.setEnabled(False)
            self.l_label.setEnabled(False)
            self.l.setToolTip(f"Fixed to n by Logits = {_value(self.fields['logits'])}.")
        for name, value in fixed.items():
            if name in self.fields:
                _set_value(self.fields[name], value)
                self.fields[name].setEnabled(False)
                self.field_labels[name].setEnabled(False)
                self.fields[name].setToolTip(f"Fixed to {value} by Logits = {_value(self.fields['logits'])}.")
        self._update_hints()

    def _update_fair(self) -> None:
        if self._m is None:
            self.n_fair.setText("— (load a data set)")
            return
        try:
            nf = fair_states(self.n.value(), self._m, self.l.value())
        except ValueError as exc:  # sizes n_fair cannot be computed for
            self.n_fair.setText(f"— ({type(exc).__name__})")
            return
        self.n_fair.setText(f"{nf}   (m = {self._m})")

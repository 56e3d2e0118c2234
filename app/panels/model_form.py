"""The model form: model type, sizes, training settings (paper defaults), device; Train and Sweep."""
from __future__ import annotations

from typing import List, Optional

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                               QPushButton, QSpinBox, QVBoxLayout, QWidget)

from ..modelspec import INIT_METHODS, MODEL_TYPES, PAPER_GRID, ModelSpec, fair_states, paper_defaults

__all__ = ["ModelForm", "SciSpinBox"]

#: Init scale the hint's "Use spectral" sets for dense models (the spectral runs' random parts)
WORDS_INIT_SCALE = 0.2
WORDS_HINT_TIP = ("On the words of a tagged corpus a random start tags badly: in docs/RESULTS.md, section 4 "
                  "(Penn Treebank sample, n = 45), many-to-one accuracy was 0.46-0.51 from a random start "
                  "and 0.62-0.67 from the spectral one; random DenseHMMs also needed Init scale 0.2, not 1.")


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


class ModelForm(QWidget):
    """Edits a :class:`~app.modelspec.ModelSpec`; emits ``train_requested`` / ``sweep_requested``."""

    train_requested = Signal(object)          # ModelSpec
    sweep_requested = Signal(object, int)     # ModelSpec, repeats
    sweep_target_requested = Signal()         # "Change…" where sweeps run
    changed = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._m: Optional[int] = None
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.kind = QComboBox()
        for key, label in MODEL_TYPES.items():
            self.kind.addItem(label, key)
        self.kind.setToolTip("Dense models learn embeddings U, Z, W (states) and V (symbols); "
                             "A = softmax(Z U^T), B = softmax(W V^T).")
        form.addRow("Model", self.kind)
        self.preset = QComboBox()
        self.preset.addItem("Tuned (core defaults)", "default")
        self.preset.addItem("Paper (Sicking et al. 2020)", "paper")
        self.preset.setToolTip("Where the training settings come from: the core's measured defaults "
                               "(spectral start, normalised loss, schedule, L-BFGS finish), or the paper's "
                               "settings (random start, plain Adam)")
        form.addRow("Settings", self.preset)
        self.n = QSpinBox(); self.n.setRange(1, 2000); self.n.setValue(5)
        form.addRow("States n", self.n)
        self.l = QSpinBox(); self.l.setRange(1, 1024); self.l.setValue(3)
        self.l_label = QLabel("Embedding length l")
        form.addRow(self.l_label, self.l)
        self.n_fair = QLabel("—")
        self.n_fair.setToolTip("States of a standard HMM with about the DenseHMM's number of free "
                               "parameters l(3n+m+1) (paper, section 5).")
        form.addRow("n_fair", self.n_fair)
        self.lr = SciSpinBox(); self.lr.setRange(1e-8, 1e6)
        self.lr_label = QLabel("Learning rate")
        form.addRow(self.lr_label, self.lr)
        self.steps = QSpinBox(); self.steps.setRange(1, 10_000_000)
        self.steps_label = QLabel("Steps")
        form.addRow(self.steps_label, self.steps)
        self.mstep = QSpinBox(); self.mstep.setRange(1, 100000)
        self.mstep_label = QLabel("Adam steps per M-step")
        form.addRow(self.mstep_label, self.mstep)
        self.tol = SciSpinBox(); self.tol.setRange(0.0, 1.0)
        self.tol.setToolTip("Relative improvement below which training stops early (0: never)")
        form.addRow("Tolerance", self.tol)
        self.restarts = QSpinBox(); self.restarts.setRange(1, 100)
        form.addRow("Restarts", self.restarts)
        self.init_method = QComboBox()
        for key, label in INIT_METHODS.items():
            self.init_method.addItem(label, key)
        self.init_method.setToolTip(
            "How training starts.\n"
            "random: random parameters (dense: normal embeddings with the Init scale's standard "
            "deviation; standard: Dirichlet draws).\n"
            "spectral: emissions from the training data's context counts: each symbol's left and "
            "right neighbours are counted, reduced by an SVD, and the frequent symbols clustered "
            "into n groups by k-means; state i starts by emitting group i, transitions start nearly "
            "uniform. Restarts differ in their k-means starts. The default; where the data has no adjacent "
            "pairs or fewer symbols than states the job starts randomly and its log says why.")
        form.addRow("Start", self.init_method)
        # below Start, only on the words of a tagged corpus with a random start: the spectral
        # start tags far better there (docs/RESULTS.md, section 4); one click switches, nothing
        # changes by itself
        self.words_hint = QWidget()
        self.words_hint.setObjectName("wordsStartHint")
        hint_row = QHBoxLayout(self.words_hint)
        hint_row.setContentsMargins(0, 0, 0, 0)
        self.words_hint_label = QLabel("Words: a spectral start tags far better.")
        self.words_hint_label.setWordWrap(True)
        font = self.words_hint_label.font()
        font.setItalic(True)
        self.words_hint_label.setFont(font)
        self.words_hint_label.setToolTip(WORDS_HINT_TIP)
        self.use_spectral_button = QPushButton("Use spectral")
        self.use_spectral_button.setToolTip("Set Start to spectral (dense models: Init scale "
                                            f"{WORDS_INIT_SCALE:g} too, as in those runs)")
        self.use_spectral_button.clicked.connect(self.use_spectral_start)
        hint_row.addWidget(self.words_hint_label, 1)
        hint_row.addWidget(self.use_spectral_button)
        form.addRow("", self.words_hint)
        self._form = form
        self._words = False
        self.init_scale = QDoubleSpinBox(); self.init_scale.setRange(0.001, 100.0)
        self.init_scale.setDecimals(3); self.init_scale.setSingleStep(0.1)
        self.init_scale.setToolTip("Standard deviation of the random initial embeddings (all of U, Z, W, V "
                                   "with a random start; U, Z and z_start with a spectral one)")
        self.init_scale_label = QLabel("Init scale")
        form.addRow(self.init_scale_label, self.init_scale)
        self.pseudocount = QDoubleSpinBox(); self.pseudocount.setRange(0.0, 1000.0)
        self.pseudocount.setDecimals(4); self.pseudocount.setSingleStep(0.01)
        self.pseudocount.setToolTip(
            "Standard HMMs: additive smoothing of the emission probabilities, (expected count + a) / "
            "(state total + m a). 0 is plain Baum-Welch, which gives probability 0 to every symbol the "
            "training data lacks, so test sequences with such symbols score -inf (words: try 0.01).")
        self.pseudocount_label = QLabel("Smoothing")
        form.addRow(self.pseudocount_label, self.pseudocount)
        self.seed = QSpinBox(); self.seed.setRange(0, 2**31 - 1)
        form.addRow("Seed", self.seed)
        self.device = QComboBox()
        self.device.setToolTip("Where the job trains: the E-step runs on that GPU with CuPy when CuPy works "
                               "there (else on the CPU), and dense models' TensorFlow steps when TensorFlow "
                               "sees it. 'auto' spreads jobs over the GPUs; 'cpu' never touches a GPU.")
        form.addRow("Device", self.device)
        lay.addLayout(form)
        self.defaults_button = QPushButton("Reset to defaults")
        self.defaults_button.setToolTip("Learning rate, steps and tolerance of the chosen settings for this model type")
        self.defaults_button.clicked.connect(self.apply_paper_defaults)
        self.train_button = QPushButton("Train")
        self.train_button.setObjectName("trainButton")
        self.train_button.setToolTip("Start a job with these settings (Ctrl+T)")
        self.train_button.clicked.connect(lambda: self.train_requested.emit(self.spec()))
        row = QHBoxLayout()
        row.addWidget(self.defaults_button)
        row.addStretch(1)
        row.addWidget(self.train_button)
        lay.addLayout(row)
        sweep = QGroupBox("Sweep: the paper's grid")
        sweep_rows = QVBoxLayout(sweep)
        sl = QHBoxLayout()
        sweep_rows.addLayout(sl)
        grid = ", ".join(f"n={n}: l∈{{{', '.join(map(str, ls))}}}" for n, ls in PAPER_GRID.items())
        info = QLabel(grid); info.setWordWrap(True)
        sl.addWidget(info, 1)
        self.repeats = QSpinBox(); self.repeats.setRange(1, 100); self.repeats.setValue(3)
        self.repeats.setPrefix("× "); self.repeats.setToolTip("Repeats (seeds) per (n, l)")
        sl.addWidget(self.repeats)
        self.sweep_button = QPushButton("Run sweep")
        self.sweep_button.clicked.connect(lambda: self.sweep_requested.emit(self.spec(), self.repeats.value()))
        sl.addWidget(self.sweep_button)
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
        lay.addWidget(sweep)
        lay.addStretch(1)
        self.set_devices([])
        self.kind.currentIndexChanged.connect(self._kind_changed)
        for w in (self.n, self.l):
            w.valueChanged.connect(self._update_fair)
        for w in (self.n, self.l, self.steps, self.mstep, self.restarts, self.seed):
            w.valueChanged.connect(self.changed)
        for w in (self.lr, self.tol, self.init_scale, self.pseudocount):
            w.valueChanged.connect(self.changed)
        self.init_method.currentIndexChanged.connect(self.changed)
        self.init_method.currentIndexChanged.connect(self._update_words_hint)
        self.preset.currentIndexChanged.connect(self._kind_changed)
        self.set_spec(ModelSpec(**{"kind": "dense_cooc", "preset": "default",
                                   **paper_defaults("dense_cooc", "default")}))
        self._update_words_hint()

    # ---------------------------------------------------------------- values
    def spec(self) -> ModelSpec:
        return ModelSpec(kind=self.kind.currentData(), n=self.n.value(), l=self.l.value(), lr=self.lr.value(),
                         steps=self.steps.value(), mstep_steps=self.mstep.value(), tol=self.tol.value(),
                         restarts=self.restarts.value(), seed=self.seed.value(),
                         device=self.device.currentData() or "auto", preset=self.preset.currentData(),
                         init_method=self.init_method.currentData(), init_scale=self.init_scale.value(),
                         pseudocount=self.pseudocount.value())

    def set_spec(self, spec: ModelSpec) -> None:
        i = self.kind.findData(spec.kind)
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(max(0, i))
        self.kind.blockSignals(False)
        self.preset.blockSignals(True)
        self.preset.setCurrentIndex(max(0, self.preset.findData(spec.preset)))
        self.preset.blockSignals(False)
        self.n.setValue(int(spec.n)); self.l.setValue(int(spec.l)); self.lr.setValue(float(spec.lr))
        self.steps.setValue(int(spec.steps)); self.mstep.setValue(int(spec.mstep_steps))
        self.tol.setValue(float(spec.tol)); self.restarts.setValue(int(spec.restarts))
        self.seed.setValue(int(spec.seed))
        self.init_method.setCurrentIndex(max(0, self.init_method.findData(spec.init_method)))
        self.init_scale.setValue(float(spec.init_scale))
        self.pseudocount.setValue(float(spec.pseudocount))
        j = self.device.findData(spec.device)
        if j >= 0:
            self.device.setCurrentIndex(j)
        self._update_visibility()
        self._update_fair()

    def apply_paper_defaults(self) -> None:
        d = paper_defaults(self.kind.currentData(), self.preset.currentData())
        self.lr.setValue(d["lr"]); self.steps.setValue(d["steps"]); self.tol.setValue(d["tol"])
        self.mstep.setValue(d["mstep_steps"])
        self.init_method.setCurrentIndex(max(0, self.init_method.findData(d["init_method"])))
        self.init_scale.setValue(float(d["init_scale"]))

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

    def set_words_data(self, words: bool) -> None:
        """Whether the current data set's symbols are the words of a tagged corpus (the hint
        under Start is shown for those while Start is random)."""
        self._words = bool(words)
        self._update_words_hint()

    def use_spectral_start(self) -> None:
        """The hint's button: Start = spectral and, for dense models, Init scale = 0.2."""
        self.init_method.setCurrentIndex(self.init_method.findData("spectral"))
        if self.kind.currentData().startswith("dense"):
            self.init_scale.setValue(WORDS_INIT_SCALE)

    # -------------------------------------------------------------- updates
    def _update_words_hint(self) -> None:
        self._form.setRowVisible(self.words_hint, self._words and self.init_method.currentData() == "random")

    def _kind_changed(self) -> None:
        self.apply_paper_defaults()
        self._update_visibility()
        self._update_fair()
        self.changed.emit()

    def _update_visibility(self) -> None:
        kind = self.kind.currentData()
        dense = kind.startswith("dense")
        self.l.setEnabled(kind != "standard")
        self.l_label.setEnabled(kind != "standard")
        self.lr.setEnabled(dense); self.lr_label.setEnabled(dense)
        self.mstep.setEnabled(kind == "dense_em"); self.mstep_label.setEnabled(kind == "dense_em")
        self.preset.setEnabled(dense)
        self.init_scale.setEnabled(dense); self.init_scale_label.setEnabled(dense)
        self.pseudocount.setEnabled(not dense); self.pseudocount_label.setEnabled(not dense)
        self.steps_label.setText({"dense_cooc": "Adam steps", "dense_em": "EM iterations"}.get(
            kind, "Baum-Welch iterations"))

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

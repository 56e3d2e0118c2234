"""The Dashboard: every view of one job or model, for the main window to embed.

Tabs, views, their export menus and what each is fed come from :mod:`app.view_registry`:
"Dashboard" (matrices and embeddings on top, curves beneath; live during training), "Decode",
"Overview" (before / after), "Compare", "Sweep" and "Tags" (tagged data only).  Each view has a
right-click "Export figure..." menu (and "Export dashboard..."); :meth:`Dashboard.views` names
them for File > Export figure.

The main window calls (at most ~10 times a second while a job trains):

* :meth:`update_from_event` with the newest :class:`~densehmm_core.events.ProgressEvent`,
* :meth:`set_token_counts` (train / test tokens of the job's data) so that a total
  log-likelihood in the stream is shown as NLL per token,
* :meth:`set_history`, :meth:`set_model` (a finished or loaded model; enables Decode),
  :meth:`set_initial_params` (the "before" of the overview), :meth:`set_vocabulary`,
  :meth:`clear`.

Updates are cheap: images are replaced with ``setImage(autoLevels=False)``, scatter and
curve items with ``setData``; axes and labels are rebuilt only when shapes change, view
ranges only when the data leave them.  While the live page is hidden (another tab is
current, or the dashboard is not shown) events are only recorded; the newest snapshot
and the curves are drawn when the page shows, before an export, or on :meth:`image_data`.
When to draw is not decided here: the parts of an update go through a
:class:`app.live.DrawQueue`; which job's events arrive, and how often, is
:class:`app.live.LiveFeed`'s business.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
from PySide6 import QtCore, QtWidgets

from densehmm_core.events import START_PHASE, start_text, stop_text

from .. import view_registry as registry
from ..export import add_export_context_menu, ask_and_export_csv, file_stem
from ..live import DrawQueue
from .theme import fmt_value, symbol_names
from .widgets import HeaderLabel, Placeholder
from .compare import CompareView
from .curves import TrainingCurves
from .decode import DecodeView
from .embeddings import EMBEDDING_SETS, EmbeddingScatter
from .heatmap import ParameterHeatmaps
from .overview import OverviewView
from .sweep import SweepView
from .tag_scoring import TagScorer
from .tagging import SCORES as TAG_SCORES, StateTagView, TaggingCurves, state_tag_labels

__all__ = ["Dashboard"]


def _build_view(spec: str) -> QtWidgets.QWidget:
    """A page named in the registry as ``"module:Class"`` (``".module"``: a module of ``app.views``)."""
    module, cls = spec.split(":")
    return getattr(importlib.import_module(module, __package__), cls)()


#: milliseconds between the parts of one live update (each part is painted in between)
STAGE_GAP_MS = 15

#: What the live page says while no job or model is shown.
NO_JOB = ("The selected job's start distribution π, transition matrix A, emission matrix B, embeddings and "
          "training curves appear here, live while it trains.\n\nTrain a model (Train, Ctrl+T), select a job "
          "in the Jobs list, or open a model file (.h5).")


class Dashboard(QtWidgets.QWidget):
    """All views of the selected job / model in tabs.

    Parameters
    ----------
    get_default_dir : callable, optional
        Returns the folder export dialogs start in (the main window's last folder).
    on_exported : callable, optional
        Called with the path of every figure exported from a right-click menu.
    """

    # pages built from the view registry (attributes named after their registry entries)
    decode: DecodeView
    overview: OverviewView
    compare: CompareView
    sweep: SweepView

    sigStatus = QtCore.Signal(str)
    #: A view could not show what it was given (message); the other views carry on.
    sigError = QtCore.Signal(str)
    #: All queued parts of a live update ran; seconds of GUI-thread time they took (object: float).
    sigLiveDrawn = QtCore.Signal(object)
    #: Decode's "Data" box: the user chose the open data set of this index to decode.
    decode_dataset_chosen = QtCore.Signal(int)

    def __init__(self, parent: Optional[QtWidgets.QWidget] = None,
                 get_default_dir: Optional[Callable[[], str]] = None,
                 on_exported: Optional[Callable[[Any], None]] = None) -> None:
        super().__init__(parent)
        self._vocab: Optional[Sequence[str]] = None
        self._model = None
        self._counted: tuple = (None, 0, None)   # (corpus, m, symbol counts): _symbol_counts
        self._has_initial = False
        self._last_step: Optional[int] = None
        self._tips: Dict[str, str] = {"stop": "", "error": ""}   # the title's tooltip (_update_title_tip)
        # queued parts of a live update or of a model shown: one per event-loop turn, each held while
        # its view is hidden (the live page's while it is; Decode's while its tab is not current)
        self._part_views: Dict[str, str] = {}
        self._stages = DrawQueue(self, gap_ms=STAGE_GAP_MS, shows=self._part_shows,
                                 on_drawn=self.sigLiveDrawn.emit)

        # the live page's parts (fed by the live stream) and the tags page are built here; the other
        # pages come from the view registry (app.view_registry), built in its order
        self.heatmaps = ParameterHeatmaps(fixed_range=False)
        self.transmat = self.heatmaps.transmat
        self.emission = self.heatmaps.emission
        self.startprob = self.heatmaps.startprob
        self.embeddings = EmbeddingScatter()
        self.curves = TrainingCurves(orientation="horizontal")
        # tagged corpora: states x gold tags and the tagging scores over training
        self.state_tags = StateTagView()
        self.tag_curves = TaggingCurves()
        self.tags_page = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.tags_page.addWidget(self.state_tags)
        self.tags_page.addWidget(self.tag_curves)
        self.tags_page.setStretchFactor(0, 3)
        self.tags_page.setStretchFactor(1, 2)
        # when and on what the tagging scores are computed (off the GUI thread)
        self.tag_scorer = TagScorer(on_error=self.sigError.emit)

        # the live page: matrices and embeddings on top, the curves beneath (resizable)
        self.live = QtWidgets.QWidget()
        live_lay = QtWidgets.QVBoxLayout(self.live)
        live_lay.setContentsMargins(2, 2, 2, 2)
        # the header changes with every event: fixed height (never re-lays out the plots), no
        # minimum width, and it wraps at its separators or elides with the full text in a tooltip
        self.title = HeaderLabel("No job selected", max_lines=2)
        live_lay.addWidget(self.title)
        self.h_split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.v_split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.h_split.addWidget(self.heatmaps)
        self.h_split.addWidget(self.embeddings)
        self.h_split.setStretchFactor(0, 5)
        self.h_split.setStretchFactor(1, 3)
        self.v_split.addWidget(self.h_split)
        self.v_split.addWidget(self.curves)
        self.v_split.setStretchFactor(0, 5)
        self.v_split.setStretchFactor(1, 2)
        # the curves' first share, 0.31 (their minimum, 130 px, is for short screens: they started there)
        self.v_split.setSizes([450, 200])
        for s in (self.h_split, self.v_split):
            s.setChildrenCollapsible(False)
        # no job or model shown: one placeholder instead of six empty plots
        # (a plain stack: the placeholder keeps the views' minimum size, so that the window's first layout,
        # made before any job shows, leaves room for them)
        self.live_stack = QtWidgets.QStackedWidget()
        self.live_placeholder = Placeholder(NO_JOB)
        self.live_stack.addWidget(self.live_placeholder)
        self.live_stack.addWidget(self.v_split)
        live_lay.addWidget(self.live_stack, 1)

        self.tabs = QtWidgets.QTabWidget()
        self._views: Dict[str, QtWidgets.QWidget] = {}
        builtin = {"live": self.live, "tags": self.tags_page}
        for info in registry.VIEWS:
            if info.builtin:
                w = builtin[info.name]
            elif info.widget is not None:
                w = _build_view(info.widget)
                setattr(self, info.name, w)  # self.decode, self.overview, self.compare, self.sweep
            else:  # a part of a view built before it (of the dashboard for the builtin pages)
                holder = self if registry.view_info(info.part_of).builtin else self._views[info.part_of]
                w = getattr(holder, info.attr or info.name)
            w.setObjectName(info.name)
            self._views[info.name] = w
            if info.page is not None:
                self.tabs.setTabVisible(self.tabs.addTab(w, info.page), info.shown)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.tabs)
        self.decode.dataset_chosen.connect(self.decode_dataset_chosen)

        # innermost first: each plot gets its own figure, plus the whole dashboard page.  File names
        # come from the job and the view (file_name); the folder of the last export is remembered.
        self._file_stem: Optional[str] = None
        self._stem_from_model = True
        self._export_dir: Optional[str] = None
        self._get_default_dir = get_default_dir
        self._on_exported = on_exported
        default_dir = self.export_dir
        exported = self._exported

        def csv_action() -> None:
            ask_and_export_csv(self._model, self, self.export_dir(), self._file_stem or "model", exported)
        csv_action.is_action = True
        csv = ("Export matrices and embeddings (CSV)...", csv_action)
        whole = ("Export dashboard...", self.export_target, lambda: self.file_name("dashboard"))
        for info in reversed(registry.VIEWS):  # parts before the views holding them: the innermost menu wins
            extra = ([whole] if info.name != "live" and registry.in_live_page(info.name) else []) + \
                ([csv] if info.csv else [])
            add_export_context_menu(self._views[info.name], default_dir,
                                    name=lambda v=info.name: self.file_name(v), extra=extra, on_exported=exported)
        # while the live page is hidden (another tab, or the dashboard not shown) its views only
        # record events; they are drawn when it shows, or before any of them is exported
        self.tabs.currentChanged.connect(self._tab_changed)
        self.live.installEventFilter(self)
        for info in registry.VIEWS:
            if registry.in_live_page(info.name):
                self._views[info.name].prepare_export = self.flush

    def eventFilter(self, obj, ev) -> bool:  # noqa: N802 (Qt API)
        if obj is self.live and ev.type() == QtCore.QEvent.Type.Show:
            self.flush()
        return super().eventFilter(obj, ev)

    def live_visible(self) -> bool:
        """Whether the live page (matrices, embeddings, curves) is on screen."""
        return self.live.isVisible()

    def _stage(self, name: str, view: str, fn, *args) -> None:
        """Queue part ``name``: ``fn(*args)`` updating view ``view`` (a registry name), run from the
        event loop while that view shows (see :class:`app.live.DrawQueue`); a failure is reported."""
        self._part_views[name] = view
        self._stages.put(name, self._safe, view, fn, *args)

    def _part_shows(self, name: str) -> bool:
        """Whether part ``name`` runs now: while the live page shows (every part, as a finished job's
        model reaches all views from there), or while the part's own view does (Decode's tab current)."""
        if self.live_visible():
            return True
        view = self._views.get(self._part_views.get(name, ""))
        return view is not None and view.isVisible()

    def _stage_params(self, params: dict) -> None:
        h = self.heatmaps
        self._stage("transmat", "matrices", h.set_params, {"transmat": params.get("transmat")})
        self._stage("emission", "matrices", h.set_params, {"emissionprob": params.get("emissionprob")})
        self._stage("startprob", "matrices", h.set_params, {"startprob": params.get("startprob")})
        if any(params.get(k) is not None for k in EMBEDDING_SETS):
            self._stage("embeddings", "embeddings", self.embeddings.set_embeddings, params)
        elif self.embeddings.mode() != "none":
            self._stage("embeddings", "embeddings", self.embeddings.clear)

    @property
    def live_update_pending(self) -> bool:
        """Whether parts of a live update are still queued (they run from the event loop)."""
        return self._stages.pending

    def run_stages(self) -> None:
        """Run every queued part of the live update now (before reading or exporting the views)."""
        self._stages.run_all()

    def flush(self) -> None:
        """Draw what the hidden live page recorded: the newest snapshot and the curves."""
        self.run_stages()
        self._safe("curves", self.curves.redraw)
        self.embeddings.finish_labels()   # label items still to be made from the event loop

    def _tab_changed(self, _index: int) -> None:
        if self.live_visible():
            self.flush()
        else:
            self._stages.resume()   # the parts of the page now shown (Decode, Overview, Tags)

    # ------------------------------------------------------------------ API
    def views(self) -> Dict[str, QtWidgets.QWidget]:
        """Name -> widget of every view in :data:`app.view_registry.VIEWS`, plus ``"dashboard"`` (the
        whole current page)."""
        return {"dashboard": self, **self._views}

    def export_choices(self) -> List[tuple]:
        """File > Export figure's list: ``(name, title, name of the view it sits in or None)``, the whole
        current page first, then every view of :data:`app.view_registry.VIEWS` whose tab shows (the Tags
        page only for tagged data), in registry order; of two views that take turns in one place (B's
        heatmap and its top words) only the one showing."""
        page = self.tabs.tabText(self.tabs.currentIndex()) if self.tabs.currentWidget() is not None else ""
        out = [("dashboard", f"Whole dashboard (current tab: {page})" if page else "Whole dashboard", None)]
        views = set(self._views.values())
        for info in registry.VIEWS:
            view, top = self._views[info.name], registry.page_of(info.name)
            turn = (isinstance(view.parentWidget(), QtWidgets.QStackedWidget) and view.parentWidget().parentWidget()
                    is not self.tabs and view.parentWidget().currentWidget() in views - {view})
            if self.tabs.isTabVisible(self.tabs.indexOf(self._views[top.name])) and not turn:
                out.append((info.name, info.title, info.part_of))
        return out

    def set_file_stem(self, stem: Optional[str]) -> None:
        """The job's part of default export file names (e.g. ``dense-em_n10_l3_seed0_spectral``, see
        :func:`app.export.file_stem`); ``None``: taken from the model shown."""
        self._file_stem = stem or None
        self._stem_from_model = stem is None

    def file_name(self, view: str, suffix: str = "") -> str:
        """Default export file name of a view: ``<job stem>_<view>`` (``suffix`` e.g. "png")."""
        return registry.view_file_name(self._file_stem, view, suffix)

    def export_dir(self) -> Optional[str]:
        """Folder export dialogs start in: that of the last export, else the main window's."""
        if self._export_dir:
            return self._export_dir
        return self._get_default_dir() if self._get_default_dir else None

    def remember_export(self, path) -> None:
        """The next export dialog starts in the folder of ``path`` (a file just written)."""
        import os
        self._export_dir = os.path.dirname(os.path.abspath(os.fspath(path)))

    def _exported(self, path) -> None:
        self.remember_export(path)
        if self._on_exported is not None:
            self._on_exported(path)

    def export_target(self) -> QtWidgets.QWidget:
        """What exporting the Dashboard draws: the page of the current tab (without the tab bar)."""
        return self.tabs.currentWidget() or self.live

    def set_title(self, text: str) -> None:
        """Text above the live views (e.g. the job's name); the status line follows it."""
        self.title.setText(text)

    def set_outcome(self, state: str, reason: str) -> None:
        """A job that ended without a final event of its own (it diverged or failed): the header says so
        and why, after what its last event showed (the whole reason in the tooltip when it is cut)."""
        tag = f"[{state}]"
        text = self.title.text()
        if tag not in text:
            self.title.setText(f"{text}  ·  {tag} {reason}".rstrip())
        self._safe("curves", self.curves.end_stream)   # the x axis fits its points, not the planned steps
        self.sigStatus.emit(f"{tag} {reason}".rstrip())

    def set_vocabulary(self, vocabulary: Optional[Sequence[str]]) -> None:
        """Symbol names (amino-acid letters, tags) in index order, or ``None`` for indices."""
        self._vocab = symbol_names(vocabulary)
        for v in self._needing("vocabulary"):
            v.set_vocabulary(self._vocab)

    def set_token_counts(self, train: Optional[int] = None, test: Optional[int] = None) -> None:
        """Token counts of the job's training / test split: the curves then show a total
        log-likelihood in the stream (e.g. the co-occurrence fit's final ``test_ll``) as NLL per
        token.  Kept across :meth:`clear` until set again (call it when the job changes)."""
        self.curves.set_token_counts(train, test)

    def set_job_model(self, model) -> None:
        """The shown job's model before its first parameters (a job in its start): the heatmaps get their
        final axes (n states, m symbols) and the placeholders name the model's type, from the first frame."""
        if model is None:
            return
        self._show_views()
        kind = getattr(model, "kind", None)
        n, m = getattr(model, "n_states", None), getattr(model, "n_symbols", None)
        if n is not None and m is not None:
            self._safe("matrices", self.heatmaps.set_shape, n, m)
        self.embeddings.set_model_kind(kind, n, getattr(model, "dim", None))
        self._embeddings_for(kind)

    def update_from_event(self, ev, skipped: Sequence = ()) -> None:
        """Show one progress event: curves always, matrices and embeddings when it has params; a start
        event (the start being prepared) only in the title and the status.  ``skipped``: the events
        passed over since the last update (:class:`app.live.LiveFeed`), points of the curves before it."""
        self._show_views()
        self.add_points(skipped)
        if ev.phase == START_PHASE:
            text = start_text(ev.metrics, detail=True)
            self._safe("curves", self.curves.set_total, ev.total)
            base = self.title.text().split("  —  ")[0]
            self.title.setText(f"{base}  —  {text}")
            self.sigStatus.emit(text)
            return
        if self._last_step is not None and ev.step is not None and ev.step < self._last_step and ev.step <= 0:
            self.curves.clear()
        self._last_step = ev.step
        # a point of a stream; not a final event without phase, step or loss (a model read from a file
        # without a history: only its recorded metrics, for the header; a fit cancelled before it began)
        placed = bool(ev.phase) or bool(ev.step) or ev.loss is not None or not ev.done
        if placed:
            self._stages.run("history")  # a queued history first: the event's point goes after it
            self._safe("curves", self.curves.add_event, ev, False)
            self._stage("curves", "curves", self.curves.redraw)
        if ev.params:
            self._stage_params(ev.params)  # held (newest only) while the live page is hidden
            if not self._has_initial and ev.step == 0:
                self._safe("overview", self.set_initial_params, ev.params)
            elif ev.step != 0:
                self._safe("overview", self.overview.set_final, ev.params,
                           "Done: trained model" if ev.done else f"During training (step {ev.step})")
        tag_scores = {k: (ev.metrics or {}).get(k) for k in TAG_SCORES}
        if any(v is not None for v in tag_scores.values()) and ev.step is not None:
            self._safe("tagging", self.tag_curves.add_point, ev.step, tag_scores)
        elif ev.params and self.tag_scorer.live and ev.step is not None:
            self.tag_scorer.score_snapshot(ev.step, ev.params, self._show_live_tagging, final=bool(ev.done))
        parts = [f"{ev.phase or 'step'} {ev.step}" + (f"/{ev.total}" if ev.total else "")] if placed else []
        if ev.loss is not None:
            name = {"em": "−Q/token", "cooc": "cooc loss", "baum-welch": "NLL/token"}.get(ev.phase, "loss")
            parts.append(f"{name} {fmt_value(ev.loss)}")
        for k in ("train_nll", "test_nll", "mad"):
            v = (ev.metrics or {}).get(k)
            if k == "train_nll" and ev.phase == "baum-welch" and v == ev.loss:
                continue       # Baum-Welch's loss is the training NLL per token: said once
            if v is not None:
                parts.append(f"{k} {fmt_value(v)}")
        if ev.done:
            parts.append(f"[{ev.reason or 'done'}]")
            self._tips["stop"] = stop_text(ev.reason or "")
            self._update_title_tip()
            if not ev.params and not self._has_initial:
                # ended in its start: no model to draw (empty matrices and curves): the page says why
                self.live_placeholder.setText(f"No parameters: the fit ended ({ev.reason or 'done'}) before "
                                              "its start was ready.")
                self.live_stack.setCurrentWidget(self.live_placeholder)
        text = "  ·  ".join(parts)
        base = self.title.text().split("  —  ")[0]
        self.title.setText(f"{base}  —  {text}")
        self.sigStatus.emit(text)

    def add_points(self, events: Sequence) -> None:
        """Points of the curves from past events of the stream shown (a running job's, without their
        parameters); drawn with the next update."""
        if events:
            self._stages.run("history")  # a queued history first: the points go after it
        for ev in events:
            if ev.phase != START_PHASE:
                self._safe("curves", self.curves.add_event, ev, False)

    def set_history(self, history: Optional[List[dict]], staged: bool = False) -> None:
        """Replace the curves by a model's history (list of dicts: step, loss, train_ll, test_ll, metrics);
        ``staged=True`` draws it from the event loop, as one part of a live update."""
        self._show_views()
        if staged:
            self._stages.discard("curves")  # the history replaces whatever was drawn live
            self._stage("history", "curves", self.curves.set_history, history)
        else:
            self.curves.set_history(history)

    def set_initial_params(self, params: Optional[dict]) -> None:
        """The model before training, for the overview's "before" row."""
        if params:
            self._show_views()
            self._has_initial = True
            self.overview.set_initial(params, "Before training")

    def has_initial_params(self) -> bool:
        """Whether the overview's "before" row has the shown job's starting parameters."""
        return self._has_initial

    def set_initial_not_recorded(self) -> None:
        """The shown job's starting parameters are not known (a model read from a file or a session):
        the overview's "before" row says so."""
        self._show_views()
        self.overview.set_initial_not_recorded()

    def set_model(self, model, corpus: Any = None, staged: bool = False) -> None:
        """Show a finished or loaded model in every view; enables Decode on ``corpus`` (or samples).

        ``staged=True`` (a live job that just finished) draws it in parts from the event loop,
        like a live update, instead of all at once; :meth:`flush` / :meth:`image_data` finish them.
        """
        self._model = model
        if self._stem_from_model and model is not None:
            self._file_stem = file_stem(model)
        if not staged:
            self.run_stages()  # the queued live parts first: the model's own views below replace them
        if model is None:
            for v in self._needing("model"):
                v.clear()
            return
        self._show_views()
        self._embeddings_for(getattr(model, "kind", None))
        if self._vocab is None:
            vocab = getattr(corpus, "vocabulary", None) or getattr(model, "vocabulary", None)
            if vocab is not None:
                self.set_vocabulary(list(vocab))

        def part(name: str, view: str, fn, *args) -> None:
            if staged:
                self._stage(name, view, fn, *args)
            else:
                self._safe(view, fn, *args)

        # the symbol counts before the embeddings: a large vocabulary is drawn faint at once, not as
        # thousands of full-size points first (issue 24.7)
        params = model.arrays()["params"]
        # (the embeddings drawn next take the counts: no drawing of their own then; staged: decided
        # when the part runs, by whether the embeddings' part is still queued)
        part("frequencies", "embeddings", self._show_frequencies, model, corpus,
             None if staged else not any(params.get(k) is not None for k in EMBEDDING_SETS))
        if params:
            if staged:
                self._stage_params(params)
            else:
                self._show_params(params)
            part("overview frequencies", "overview",
                 lambda: self.overview.set_symbol_frequencies(self._symbol_counts(model, corpus)))
            part("overview", "overview", self.overview.set_final, params, "After training")
        hist = getattr(model, "history_", None)
        if hist:
            self._stages.discard("curves")  # the history replaces whatever was drawn live
            part("history", "curves", self.curves.set_history, hist)
        for info in registry.VIEWS:
            if "model" in info.needs:
                part(info.name, info.name, self._views[info.name].set_model, model, corpus)
        part("tags", "tags", self._show_tagging, model, corpus)

    def model(self):
        return self._model

    def add_sweep_row(self, row: dict) -> None:
        """A finished sweep job's result in the Sweep tab (:func:`app.views.sweep.row_from_spec`)."""
        self.add_sweep_rows([row])

    def add_sweep_rows(self, rows: List[dict]) -> None:
        """Several finished sweep jobs' results in the Sweep tab, drawn once (a restored session's)."""
        self.sweep.add_rows(rows)

    def show_sweep(self, name: Optional[str]) -> None:
        """The sweep the Sweep tab summarises (None: the latest)."""
        self.sweep.show_sweep(name)

    def compare_models(self, name_a: str, model_a, name_b: str, model_b, metrics_a=None, metrics_b=None,
                       **kwargs) -> None:
        """Compare two models in the Compare tab (:meth:`app.views.compare.CompareView.set_models`)."""
        self.compare.set_models(name_a, model_a, name_b, model_b, metrics_a, metrics_b, **kwargs)

    def set_decode_datasets(self, names: List[str], current: int) -> None:
        """The open data sets offered in Decode's "Data" box (``current``: the one decoded)."""
        self.decode.set_datasets(names, current)

    def decode_on(self, model, data) -> None:
        """Decode ``model`` on ``data`` (a data set chosen in Decode's "Data" box, read by the window).
        A queued part of a job being drawn that would decode the job's own data is dropped: the
        choice stays."""
        self._stages.discard("decode")
        self.decode.set_model(model, data)

    def show_compare(self) -> None:
        """Bring the Compare tab to the front."""
        self.tabs.setCurrentWidget(self.compare)

    def set_tagged_data(self, corpus) -> None:
        """Data with gold tags (``tags``, ``tag_vocabulary``) on which the snapshots of a live job are
        scored (M-1, 1-1, V-measure curves and the state x tag view, updated during training);
        ``None`` or data without tags: off.  Kept until set again (call it when the job changes)."""
        self.tag_scorer.set_live_data(corpus)

    def _show_live_tagging(self, step, scores: dict, names: List[str]) -> None:
        self._safe("tagging", self._draw_live_tagging, step, scores, names)

    def _draw_live_tagging(self, step, scores: dict, names: List[str]) -> None:
        steps = self.tag_curves.series("m1")[0]
        if steps.size and float(step) < steps[-1]:
            return  # scored after a later point (e.g. the trained model's) was drawn: stale
        self.tag_curves.add_point(step, scores)
        self.tag_curves.set_note("")
        self.state_tags.set_scores(scores, names)
        self.tabs.setTabVisible(self.tabs.indexOf(self.tags_page), True)

    def live_tagging_busy(self) -> bool:
        """Whether a snapshot or the shown model is being scored against the gold tags (or waits to be)."""
        return self.tag_scorer.busy()

    def add_tagging_point(self, step: float, scores: dict) -> None:
        """One evaluation against gold tags (a :func:`~densehmm_core.metrics.tagging_scores` dict) at
        ``step``: a point of the M-1 / 1-1 / V-measure curves (events carrying ``metrics["m1"]`` etc.
        add theirs automatically)."""
        self.tag_curves.add_point(step, scores)
        self.tag_curves.set_note("")

    def _show_tagging(self, model, corpus) -> None:
        """With gold tags: decode (the first sequences) and score through the core, off the GUI thread
        (kept per model: shown again at once); then fill the Tags tab, the decode view's predicted
        tags and the top-words rows."""
        hist = getattr(model, "history_", None) or []
        step = hist[-1].get("step", 0) if hist else 0

        def show(scores, names) -> None:
            self.state_tags.set_scores(scores, names)
            self.decode.set_state_tags(scores["mapping"])
            self.heatmaps.set_state_names(state_tag_labels(scores["mapping"], names, len(scores["mapping"])))
            had_curve = self.tag_curves.series("m1")[0].size > 0
            self.tag_curves.add_point(step, scores)  # the trained model's point (replaces a live one there)
            if not had_curve:
                self.tag_curves.set_note("The training stream has no per-step tagging scores: the point is "
                                         f"the trained model's (first {scores['n_tokens']:,} tokens).")
            self.tabs.setTabVisible(self.tabs.indexOf(self.tags_page), True)

        if not self.tag_scorer.score_model(model, corpus, lambda scores, names: self._safe("tags", show, scores,
                                                                                          names)):
            self.tabs.setTabVisible(self.tabs.indexOf(self.tags_page), False)

    def prepare_tagging(self, model, corpus) -> None:
        """Score a finished model against ``corpus``'s gold tags in the background now (a job that
        finished while another was shown), so that showing it later draws the mapped tags at once
        instead of "state i" rows until the scores arrive (issue 24.7)."""
        self.tag_scorer.prepare(model, corpus)

    def tagging_of(self, model) -> Optional[tuple]:
        """``(key, scores)``: ``model``'s tagging scores as computed for showing it (``key``: the digest of
        the tokens and tags scored), or None when it has not been scored (sessions store them)."""
        return self.tag_scorer.scores_of(model)

    def set_tagging(self, model, key: str, scores: dict) -> None:
        """Tagging scores of ``model`` computed before (a restored session's job): showing it on the
        same data (the same ``key``) draws them at once, without scoring again."""
        self.tag_scorer.keep(model, key, scores)

    def _show_frequencies(self, model, corpus, redraw: Optional[bool] = True) -> None:
        """Embedding scatter of a large vocabulary: the most frequent symbols in full, labelled (``redraw=False``:
        the counts wait for the embeddings' update that follows; ``None``: so when that update is queued)."""
        if redraw is None:
            redraw = not self._stages.has("embeddings")
        self.embeddings.set_symbol_frequencies(self._symbol_counts(model, corpus), redraw=redraw)

    def set_symbol_data(self, model, corpus) -> None:
        """A live job's data: symbol counts for the dashboard's and Overview's scatters before its first
        snapshot (a finished model's come with :meth:`set_model`; they drew 2,000 full-size words)."""
        self._show_frequencies(model, corpus, None)
        self.overview.set_symbol_frequencies(self._symbol_counts(model, corpus))

    def _symbol_counts(self, model, corpus) -> Optional[np.ndarray]:
        """How often each of the model's symbols occurs in ``corpus`` (None: unknown); counted once per
        corpus and alphabet (the embeddings and Overview's two scatters ask)."""
        seqs, m = getattr(corpus, "sequences", None), getattr(model, "n_symbols", None)
        if not seqs or not m:
            return None
        if self._counted[0] is not corpus or self._counted[1] != int(m):
            known = getattr(corpus, "symbol_counts", None)      # a Corpus counts once (the loading thread)
            if known is not None and len(known) == int(m):
                counts = np.asarray(known)
            else:
                counts = np.bincount(np.concatenate(seqs), minlength=int(m))[:int(m)]
            self._counted = (corpus, int(m), counts)
        return self._counted[2]

    def image_data(self, name: str) -> Optional[np.ndarray]:
        """Matrix displayed by the live heatmaps: ``"startprob"``, ``"transmat"``, ``"emissionprob"``
        (with any update recorded while the page was hidden applied first)."""
        self.flush()
        return self.heatmaps.image_data(name)

    def clear(self) -> None:
        """Forget the current job / model (the vocabulary stays)."""
        self._stages.clear()
        self._model = None
        self._has_initial = False
        self._last_step = None
        self._tips = {"stop": "", "error": ""}
        self._update_title_tip()
        self.title.setText("No job selected")
        self.live_placeholder.setText(NO_JOB)
        self.live_stack.setCurrentWidget(self.live_placeholder)
        for v in self._needing("job"):
            v.clear()
        self.embeddings.set_symbol_frequencies(None)
        self.embeddings.set_model_kind(None)
        self._embeddings_for(None)
        self.tabs.setTabVisible(self.tabs.indexOf(self.tags_page), False)
        self.tag_scorer.reset()  # a snapshot still being scored belongs to the old job

    def showing_views(self) -> bool:
        """Whether the live page shows its views (a job or model is shown) rather than its placeholder."""
        return self.live_stack.currentWidget() is self.v_split

    # ------------------------------------------------------------- internals
    def _embeddings_for(self, kind: Optional[str]) -> None:
        """A standard HMM has no embeddings: its matrices take the embeddings' place (on a 1024 x 600
        netbook they need the width); any other model shows them (or why they are not there yet)."""
        self.embeddings.setVisible(kind != "standard")

    def _show_views(self) -> None:
        """Replace the live page's placeholder by its views (a job or model is being shown)."""
        if self.live_stack.currentWidget() is not self.v_split:
            self.live_stack.setCurrentWidget(self.v_split)

    def _needing(self, need: str) -> List[QtWidgets.QWidget]:
        """The views whose registry entry lists ``need`` (see :mod:`app.view_registry`)."""
        return [self._views[v.name] for v in registry.VIEWS if need in v.needs]

    def _safe(self, name: str, fn, *args) -> None:
        """Run one view's update; a failure is reported (sigError, title) and never propagates."""
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - a bad snapshot must not stop the live stream
            msg = f"{name} view: {type(exc).__name__}: {exc}"
            self.sigError.emit(msg)
            self._tips["error"] = msg
            self._update_title_tip()

    def _update_title_tip(self) -> None:
        """The title's tooltip below its full text: why the job stopped, in words, and a view's error
        (both forgotten when the job changes)."""
        self.title.set_extra_tip("\n".join(t for t in (self._tips["stop"], self._tips["error"]) if t))

    def _show_params(self, params: dict) -> None:
        self._safe("matrices", self.heatmaps.set_params, params)
        if any(params.get(k) is not None for k in EMBEDDING_SETS):
            self._safe("embeddings", self.embeddings.set_embeddings, params)
        elif self.embeddings.mode() != "none":
            self.embeddings.clear()


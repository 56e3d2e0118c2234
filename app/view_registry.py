"""THE list of the dashboard's views: name, title, export file name, where it sits, what state it needs.

The dashboard (:class:`app.views.dashboard.Dashboard`) builds its tabs, its right-click export menus,
``views()`` and the feeding of vocabulary, model and "forget the job" from this list; File > Export
figure lists the titles; export file names (:func:`view_file_name`) and the views demo
(``python -m app.views.demo``) read it too.  Qt-free data, so that :mod:`app.export` can name files
without importing the views.

**Adding a view** is one new file in ``app/views/`` (a ``QWidget`` subclass) and one line in
:data:`VIEWS`: a page of its own names its class in ``widget`` (``".module:Class"`` for a module of
``app.views``) and its tab title in ``page``.  What it declares in ``needs`` it is given:

``"vocabulary"``  ``set_vocabulary(names or None)`` when the job's data changes;
``"model"``       ``set_model(model, corpus)`` when a job finishes or a model is shown
                  (drawn in parts from the event loop, like a live update);
``"job"``         ``clear()`` when the shown job changes (a view without it keeps its content,
                  e.g. the sweep summary of every job).

``csv`` adds "Export matrices and embeddings (CSV)..." to its menu; a view inside the live page
(``part_of`` leading to ``"live"``) also gets "Export dashboard...".  The widget is built without
arguments, named after the entry (``objectName``) and reachable as ``dashboard.views()[name]``.
Views marked ``builtin`` are built by the dashboard itself (the live page and the tags page,
composites fed by the live stream).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Dict, FrozenSet, Optional, Tuple

__all__ = ["ViewInfo", "VIEWS", "view_info", "pages", "parts_of", "page_of", "in_live_page", "view_file_name", "NEEDS"]

#: what a view can ask the dashboard for (see the module doc)
NEEDS = frozenset({"vocabulary", "model", "job"})


@dataclasses.dataclass(frozen=True)
class ViewInfo:
    """One view of the dashboard (see the module doc)."""

    name: str                         #: object name; ``Dashboard.views()`` key, File > Export's id
    title: str                        #: what the user reads (File > Export figure's list)
    file_word: str                    #: default export file names: ``<job stem>_<file_word>.png``
    page: Optional[str] = None        #: tab title when the view is a page of its own
    widget: Optional[str] = None      #: ``"module:Class"`` (``".module"``: in ``app.views``) of a page
    part_of: Optional[str] = None     #: the view it sits in (built by that view or the dashboard)
    attr: Optional[str] = None        #: attribute of ``part_of`` that holds it (default: ``name``)
    csv: bool = False                 #: its menu offers the model's CSV tables
    needs: FrozenSet[str] = frozenset()
    builtin: bool = False             #: built by the dashboard itself
    shown: bool = True                #: tab visible at start (the tags page: only for tagged data)


def _v(name, title, file_word, **kw) -> ViewInfo:
    if "needs" in kw:
        kw["needs"] = frozenset(kw["needs"])
    return ViewInfo(name, title, file_word, **kw)


#: every view, pages in tab order; the parts of a page follow it
VIEWS: Tuple[ViewInfo, ...] = (
    _v("live", "Dashboard (matrices, embeddings, curves)", "dashboard", page="Dashboard", builtin=True,
       csv=True),
    _v("matrices", "Matrices π, A and B", "matrices", part_of="live", attr="heatmaps", csv=True,
       needs={"vocabulary", "job"}),
    _v("startprob", "Start distribution π", "start", part_of="matrices", csv=True),
    _v("transmat", "Transition matrix A", "transitions", part_of="matrices", csv=True),
    _v("emission", "Emission matrix B", "emissions", part_of="matrices", csv=True),
    _v("top_words", "Top words per state (B of a large vocabulary)", "top_words", part_of="matrices"),
    _v("embeddings", "Embeddings", "embeddings", part_of="live", csv=True, needs={"vocabulary", "job"}),
    _v("curves", "Training curves", "training_curves", part_of="live", csv=True, needs={"job"}),
    _v("decode", "Decode (Viterbi path, posteriors)", "decode", page="Decode", widget=".decode:DecodeView",
       csv=True, needs={"vocabulary", "model", "job"}),
    _v("overview", "Overview (before / after training)", "before_after", page="Overview",
       widget=".overview:OverviewView", csv=True, needs={"vocabulary", "job"}),
    _v("compare", "Compare two jobs", "compare", page="Compare", widget=".compare:CompareView"),
    _v("sweep", "Sweep summary", "sweep_summary", page="Sweep", widget=".sweep:SweepView"),
    _v("tags", "Tags (states x gold tags, scores)", "tags", page="Tags", builtin=True, shown=False),
    _v("state_tags", "States x gold tags", "state_x_tag", part_of="tags", needs={"job"}),
    _v("tagging", "Tagging scores (M-1, 1-1, V-measure)", "tagging_scores", part_of="tags", attr="tag_curves",
       needs={"job"}),
)



def view_info(name: str) -> ViewInfo:
    """The registry entry of ``name`` (``KeyError`` for an unknown view)."""
    for v in VIEWS:
        if v.name == name:
            return v
    raise KeyError(name)


def pages() -> Tuple[ViewInfo, ...]:
    """The views that are tabs of the dashboard, in tab order."""
    return tuple(v for v in VIEWS if v.page is not None)


def parts_of(name: str) -> Tuple[ViewInfo, ...]:
    """The views sitting directly in ``name``."""
    return tuple(v for v in VIEWS if v.part_of == name)


def page_of(name: str) -> ViewInfo:
    """The dashboard tab that ``name`` sits in (itself for a tab)."""
    info = view_info(name)
    while info.part_of is not None:
        info = view_info(info.part_of)
    return info


def in_live_page(name: str) -> bool:
    """Whether ``name`` is the live page or sits in it (its menu offers "Export dashboard...")."""
    by_name: Dict[str, ViewInfo] = {v.name: v for v in VIEWS}
    info: Optional[ViewInfo] = by_name.get(name)
    while info is not None:
        if info.name == "live":
            return True
        info = by_name.get(info.part_of) if info.part_of else None
    return False


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", str(text)).strip("_.")


def view_file_name(stem: Optional[str], view: str, suffix: str = "png") -> str:
    """``<stem>_<view's file word>.<suffix>`` (just the word without a stem); ``suffix=""``: no suffix."""
    words = {"dashboard": "dashboard", **{v.name: v.file_word for v in VIEWS}}  # "dashboard": the current page
    word = words.get(view, _safe(view) or "figure")
    base = f"{_safe(stem)}_{word}" if stem else word
    return f"{base}.{suffix}" if suffix else base

"""Every view on a synthetic model: ``python -m app.views.demo``.

A random HMM (Dirichlet(0.3) rows, n = 5 states, m = 20 symbols named by the amino-acid
letters) generates a small synthetic "protein" data set.  A DenseHMM (co-occurrence fit,
l = 3) trains on it in a background thread while the Dashboard shows the progress events
live, throttled to at most 10 redraws per second, exactly as the main window does.  When it
finishes, the Decode, Overview and Compare (DenseHMM vs a standard HMM) tabs fill in.

Options
-------
--screenshots DIR   train synchronously, write one PNG per view (and the dashboard as SVG
                    and PDF) into DIR, then exit (works with QT_QPA_PLATFORM=offscreen).
--steps N           co-occurrence Adam steps (default 1500).
--no-train          skip the DenseHMM training: show embeddings set directly (no TensorFlow).
--view NAME         show one view on its own (a name of app.view_registry.VIEWS: transmat,
                    emission, embeddings, curves, decode, overview, compare, matrices, ...);
                    default: the whole Dashboard.

All maths is the core's (densehmm_core): sampling, fitting, decoding, metrics.
"""
from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
from types import SimpleNamespace

import numpy as np

AMINO = list("ACDEFGHIKLMNPQRSTVWY")


def make_data(seed: int = 0, n: int = 5, m: int = 20, n_seq: int = 60, length: int = 150):
    """A synthetic corpus-like object (sequences, vocabulary, names) and the true parameters."""
    from densehmm_core.engine.sampling import sample_sequences
    from densehmm_core.synthetic import random_hmm
    true = random_hmm(n, m, alpha=0.3, seed=seed)
    train, _ = sample_sequences(*true, n_seq, length, seed + 1)
    test, _ = sample_sequences(*true, n_seq // 2, length, seed + 2)
    corpus = SimpleNamespace(sequences=[np.asarray(s, dtype=np.int32) for s in train],
                             vocabulary=AMINO[:m] if m <= len(AMINO) else [f"s{i}" for i in range(m)],
                             names=[f"synthetic_{i:03d}" for i in range(n_seq)])
    return corpus, test, true


def make_dense(n: int, m: int, l: int, steps: int, seed: int = 0):
    from densehmm_core.dense import DenseHMM
    return DenseHMM(n, l, n_symbols=m, fit_method="cooc", seed=seed, cooc_steps=steps, chunk=50,
                    snapshot_every=50)


def untrained_stream(model, seed: int = 0):
    """Without training: the initial embeddings, then a second draw, as two events (no TF)."""
    from densehmm_core.events import ProgressEvent
    model.init_embeddings(seed=seed)
    p0 = model.arrays()["params"]
    yield ProgressEvent(step=0, total=1, phase="demo", loss=1.0, params=p0, metrics={"mad": 0.05})
    model.init_embeddings(seed=seed + 7)
    p1 = model.arrays()["params"]
    yield ProgressEvent(step=1, total=1, phase="demo", loss=0.5, params=p1, metrics={"mad": 0.02},
                        done=True, reason="demo")


def fit_standard(corpus, test, n: int, seed: int = 0):
    from densehmm_core.standard import StandardHMM
    s = StandardHMM(n, n_symbols=len(corpus.vocabulary), n_iter=60, seed=seed)
    s.fit(corpus, eval_data=test)
    return s


def final_metrics(model, corpus, test) -> dict:
    from densehmm_core import metrics as M  # noqa: N812 (the core's metrics module)
    out = {}
    try:
        out["train NLL / token"] = M.normalized_nll(model, corpus)
        out["test NLL / token"] = M.normalized_nll(model, test)
    except Exception as exc:  # noqa: BLE001 - pragma: no cover - shown, not fatal
        out["NLL error"] = str(exc)
    try:
        m = model.n_symbols
        from densehmm_core.maths import analytic_cooc, empirical_cooc
        out["MAD vs data Ω"] = M.cooc_mad(empirical_cooc(corpus, m),
                                          analytic_cooc(model.startprob_, model.transmat_, model.emissionprob_))
    except Exception as exc:  # noqa: BLE001 - pragma: no cover
        out["MAD error"] = str(exc)
    return out


def build(args):
    from app.views.dashboard import Dashboard
    n, m, l = 5, 20, 3
    corpus, test, _true = make_data(n=n, m=m)
    dash = Dashboard()
    dash.setWindowTitle("DenseHMM Studio — views demo")
    dash.set_vocabulary(corpus.vocabulary)
    from densehmm_core.sequences import n_tokens
    dash.set_token_counts(n_tokens(corpus.sequences), n_tokens(test))
    dash.set_title(f"DenseHMM (cooc, n = {n}, l = {l}) on a synthetic protein-like data set")
    dense = make_dense(n, m, l, args.steps)
    if args.no_train:
        stream = untrained_stream(dense)
    else:
        stream = dense.iter_fit(corpus, eval_data=test)
    return dash, dense, stream, corpus, test, n


def finish(dash, dense, corpus, test, n) -> None:
    dash.set_history(dense.history_)
    dash.set_model(dense, corpus)
    std = fit_standard(corpus, test, n)
    dash.compare.set_models("DenseHMM (l = 3)", dense, "standard HMM", std,
                            final_metrics(dense, corpus, test), final_metrics(std, corpus, test))


def screenshots(args) -> int:
    from PySide6 import QtWidgets
    from app.export import export_widget
    from app.view_registry import pages, parts_of
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    dash, dense, stream, corpus, test, n = build(args)
    dash.resize(1400, 860)
    dash.show()
    for ev in stream:
        dash.update_from_event(ev)
        app.processEvents()
    finish(dash, dense, corpus, test, n)
    os.makedirs(args.screenshots, exist_ok=True)
    written = []
    views = dash.views()
    # every page shown (the registry's tabs; the tags page needs tagged data), then the live page's parts
    for info in pages():
        if dash.tabs.isTabVisible(dash.tabs.indexOf(views[info.name])):
            dash.tabs.setCurrentWidget(views[info.name])
            app.processEvents()
            name = "dashboard" if info.name == "live" else info.name
            written.append(export_widget(dash, os.path.join(args.screenshots, f"view_{name}.png")))
    dash.tabs.setCurrentWidget(views["live"])
    app.processEvents()
    for info in parts_of("live") + parts_of("matrices"):
        if views[info.name].isVisibleTo(dash):
            written.append(export_widget(views[info.name], os.path.join(args.screenshots, f"view_{info.name}.png"),
                                         scale=2.0))
    written.append(export_widget(dash, os.path.join(args.screenshots, "view_dashboard.svg")))
    written.append(export_widget(dash, os.path.join(args.screenshots, "view_dashboard.pdf")))
    for p in written:
        print(p)
    return 0


def interactive(args) -> int:
    from PySide6 import QtCore, QtWidgets
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    dash, dense, stream, corpus, test, n = build(args)
    if args.view:
        views = dash.views()
        if args.view not in views:
            raise SystemExit(f"unknown view {args.view!r}; choose from {', '.join(sorted(views))}")
        single = views[args.view]
        if single is not dash:
            single.setParent(None)  # taken out of the dashboard: its own window
            single.setWindowTitle(f"DenseHMM Studio — {args.view} view demo")
            single.resize(1000, 700)
            single.show()
    if not args.view or views[args.view] is dash:
        dash.resize(1400, 860)
        dash.show()
    events: "queue.Queue" = queue.Queue()

    def worker():
        try:
            for ev in stream:
                events.put(ev)
        except Exception as exc:  # noqa: BLE001 - shown in the window title, the demo keeps running
            events.put(exc)
        events.put(None)

    threading.Thread(target=worker, daemon=True).start()
    state = {"done": False}

    def poll():  # <= 10 redraws per second, always the newest event
        newest = None
        while True:
            try:
                item = events.get_nowait()
            except queue.Empty:
                break
            if item is None:
                state["done"] = True
                break
            if isinstance(item, Exception):
                dash.set_title(f"training failed: {item}")
                continue
            if newest is not None and newest.params is not None and item.params is None:
                item.params = newest.params
            newest = item
        if newest is not None:
            dash.update_from_event(newest)
        if state["done"]:
            timer.stop()
            finish(dash, dense, corpus, test, n)

    timer = QtCore.QTimer()
    timer.setInterval(100)
    timer.timeout.connect(poll)
    timer.start()
    return app.exec()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m app.views.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--screenshots", metavar="DIR")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--view", metavar="NAME")
    args = ap.parse_args(argv)
    if args.screenshots:
        return screenshots(args)
    return interactive(args)


if __name__ == "__main__":
    sys.exit(main())

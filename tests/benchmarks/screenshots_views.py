#!/usr/bin/env python
"""Screenshots of the readable views (issues 14 and 16) for docs/APP.md — run on demand.

    xvfb-run -a -s "-screen 0 1920x1200x24" .venv/bin/python tests/benchmarks/screenshots_views.py
    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/screenshots_views.py   # no X server

Trains small real models on the shared data (../shared/data: the UD English EWT dev file and
the protein FASTA; skipped with a message when absent) and on the core's synthetic demo
data, then saves, under ``docs/screenshots/`` (``--out``):

* ``heatmap_17_tags.png``: pi, A and B of a standard HMM on the 17 UPOS tags (every tag named);
* ``heatmap_21_residues.png``: the same for proteins (21 residue letters, X included);
* ``data_panel_17_tags.png``: the data panel's symbol-frequency axis with the 17 tags;
* ``dashboard_header.png``: a DenseHMM-EM job's live page at 1000 px wide (the header wraps,
  the loss is named −Q per token);
* ``compare_aligned.png``: Compare of a DenseHMM and a standard HMM (states aligned first);
* ``sweep.png``: the sweep summary of a small co-occurrence sweep (median and quartiles of 3 seeds);
* ``model_form.png``: the Model panel set to a DenseHMM-EM with a spectral start (no training);
* ``model_form_words.png``: the Model panel on the words of a tagged corpus with a random start:
  the hint under Start with its "Use spectral" button, at the form's width in the 420 px Model
  dock of a 1400 x 900 screen (406 px beside the dock's vertical scroll bar);
* ``model_form_words_standard.png``: the same form with a standard HMM, a random start and no
  smoothing: both hints (``app.panels.form_hints``), Start's and Smoothing's;
* ``model_form_words_states.png``: the same form with the app's first settings (the direct
  co-occurrence fit, 5 states): the hint under States n (17 gold tags) and its "Use 17" button;
* ``tags_state_x_tag.png``, ``words_top_words.png``, ``words_embeddings.png``,
  ``decode_words_tags.png``: a word-level model on the tagged corpus (Tags tab, top words
  instead of an n x m heatmap, the 50 most frequent words labelled, decode with gold and
  predicted tags).

Every figure but the ``model_form`` ones (plain grabs: the form is all controls) is written with
:func:`app.export.export_widget` (what File > Export writes).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import settle  # noqa: E402 - this folder, not a package
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
CONLLU = os.path.join(SHARED, "pos", "en_ewt-ud-dev.conllu")
FASTA = os.path.join(SHARED, "proteins", "pdb_seqres_2022_09_28__subsampled_1000.fasta")



def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "screenshots"))
    ap.add_argument("--only", nargs="*", help="names of figures to make (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    want = set(args.only or [])

    import numpy as np
    from PySide6 import QtWidgets
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(["densehmm-studio"])
    from app.export import export_widget
    from app.views import Dashboard, ParameterHeatmaps, SweepView
    from app.views.sweep import row_from_spec
    from densehmm_core.data import load
    from densehmm_core.standard import StandardHMM

    def save(widget, name, scale=1.0):
        settle(app, 0.3)
        path = export_widget(widget, os.path.join(args.out, name), scale=scale)
        print("saved", path, flush=True)

    def wanted(name):
        return not want or name in want

    have_shared = os.path.exists(CONLLU) and os.path.exists(FASTA)
    if not have_shared:
        print("../shared/data missing: only the synthetic figures are made")

    if have_shared and (wanted("heatmap_17_tags.png") or wanted("data_panel_17_tags.png")
                        or wanted("dashboard_header.png")):
        tags = load(CONLLU, observe="tags")
        model = StandardHMM(10, n_symbols=len(tags.vocabulary), n_iter=25, seed=0).fit(tags.sequences)
        h = ParameterHeatmaps()
        h.set_vocabulary(tags.vocabulary)
        h.set_params({"startprob": model.startprob_, "transmat": model.transmat_,
                      "emissionprob": model.emissionprob_})
        h.resize(1100, 560)
        h.show()
        if wanted("heatmap_17_tags.png"):
            save(h, "heatmap_17_tags.png")
        if wanted("data_panel_17_tags.png"):
            from app.datasets import dataset_from_corpus
            from app.panels.data_panel import DataPanel
            panel = DataPanel()
            panel.set_dataset(dataset_from_corpus(CONLLU, tags))
            panel.resize(340, 760)
            panel.show()
            save(panel.freq_plot, "data_panel_17_tags.png")
        if wanted("dashboard_header.png"):
            from densehmm_core.dense import DenseHMM
            dense = DenseHMM(10, 3, n_symbols=len(tags.vocabulary), fit_method="em", seed=0, n_iter=15)
            dash = Dashboard()
            dash.set_vocabulary(tags.vocabulary)
            dash.set_title("Job 7: Dense-EM n=10 l=3 seed=0 on en_ewt-ud-dev.conllu (UPOS tags, 17 symbols)")
            dash.resize(1000, 760)
            dash.show()
            half = len(tags.sequences) // 2
            for ev in dense.iter_fit(tags.sequences[:half], eval_data=tags.sequences[half:]):
                dash.update_from_event(ev)
                app.processEvents()
            dash.set_model(dense, tags)
            save(dash.live, "dashboard_header.png")

    if have_shared and wanted("heatmap_21_residues.png"):
        prot = load(FASTA, subset=200, subset_seed=0, max_len=512)
        model = StandardHMM(10, n_symbols=len(prot.vocabulary), n_iter=10, seed=0).fit(prot.sequences)
        h = ParameterHeatmaps()
        h.set_vocabulary(prot.vocabulary)
        h.set_params({"startprob": model.startprob_, "transmat": model.transmat_,
                      "emissionprob": model.emissionprob_})
        h.resize(1000, 520)
        h.show()
        print("residues:", "".join(prot.vocabulary))
        save(h, "heatmap_21_residues.png")

    if wanted("model_form.png"):
        from app.modelspec import ModelSpec, type_defaults
        from app.panels.model_form import ModelForm
        form = ModelForm()
        form.set_n_symbols(5)
        form.set_spec(ModelSpec.make(model_type="dense_em", n=5, l=3,
                                     **dict(type_defaults("dense_em", "paper"), init_method="spectral")))
        form.resize(420, form.sizeHint().height())
        form.show()
        settle(app, 0.3)
        path = os.path.join(args.out, "model_form.png")   # grab(): export_widget hides a view's controls
        form.grab().save(path)
        print("saved", path, flush=True)

    if wanted("model_form_words.png") or wanted("model_form_words_standard.png") \
            or wanted("model_form_words_states.png"):
        from app.datasets import dataset_from_corpus
        from app.modelspec import ModelSpec, type_defaults
        from app.panels.model_form import ModelForm
        words_file = CONLLU if have_shared else os.path.join(REPO, "tests", "fixtures", "data", "words.conllu")
        ds = dataset_from_corpus(words_file, load(words_file, observe="words", lowercase=True))
        form = ModelForm()
        form.set_n_symbols(ds.n_symbols)            # what the window tells the form (app/window/data.py)
        form.set_words_data(ds.observes_words, ds.gold_tags)
        form.set_spec(ModelSpec.make(model_type="dense_em", n=17, l=32, **type_defaults("dense_em", "paper")))
        form.resize(max(406, form.minimumSizeHint().width()), form.sizeHint().height())
        form.show()
        settle(app, 0.3)
        assert form.hints["start"].isVisible()
        print("model form: width", form.width(), "minimum", form.minimumSizeHint().width(), flush=True)
        path = os.path.join(args.out, "model_form_words.png")
        form.grab().save(path)
        print("saved", path, flush=True)
        if wanted("model_form_words_standard.png"):   # the same form, a standard HMM: both hints
            form.set_spec(ModelSpec.make(model_type="standard", n=17,
                                         **{**type_defaults("standard", "default"), "init_method": "random"}))
            settle(app, 0.3)
            form.resize(form.width(), max(form.sizeHint().height(), form.heightForWidth(form.width())))
            settle(app, 0.3)
            assert form.hints["start"].isVisible() and form.hints["smoothing"].isVisible()
            path = os.path.join(args.out, "model_form_words_standard.png")
            form.grab().save(path)
            print("saved", path, flush=True)
        if wanted("model_form_words_states.png"):   # the app's first settings: too few states
            form.set_spec(ModelSpec.make(model_type="dense_cooc", n=5, l=3, **type_defaults("dense_cooc", "default")))
            settle(app, 0.3)
            form.resize(form.width(), max(form.sizeHint().height(), form.heightForWidth(form.width())))
            settle(app, 0.3)
            assert form.hints["states"].isVisible() and not form.hints["start"].isVisible()
            path = os.path.join(args.out, "model_form_words_states.png")
            form.grab().save(path)
            print("saved", path, flush=True)

    if wanted("sweep.png"):
        from densehmm_core.dense import DenseHMM
        from densehmm_core.standard import n_fair
        from densehmm_core.synthetic import demo_dataset
        demo = demo_dataset(seed=0)
        train, test = demo.train, demo.test
        m = int(np.shape(demo.params.emissionprob)[1])
        view = SweepView()
        view.resize(1000, 480)
        view.show()
        job = 0
        for n, ls in ((3, (2, 3)), (5, (2, 3)), (10, (2, 3))):
            for l in ls:
                for seed in range(3):
                    job += 1
                    d = DenseHMM(n, l, n_symbols=m, fit_method="cooc", seed=seed, cooc_steps=300)
                    d.fit(train, eval_data=test)
                    h = d.history_[-1]
                    view.add_row(row_from_spec({"kind": "dense_cooc", "n": n, "l": l, "seed": seed},
                                               {"test_nll": h.get("test_nll"), "mad": h.get("mad")}, job))
                    job += 1
                    s = StandardHMM(n_fair(n, m, l), n_symbols=m, n_iter=30, seed=seed).fit(train, eval_data=test)
                    h = s.history_[-1]
                    view.add_row(row_from_spec({"kind": "standard_fair", "n": n, "l": l, "seed": seed},
                                               {"test_nll": h.get("test_nll"), "mad": h.get("mad")}, job))
                    app.processEvents()
        save(view, "sweep.png")

    if wanted("compare_aligned.png"):
        from densehmm_core.dense import DenseHMM
        from densehmm_core.synthetic import demo_dataset
        from app.views import CompareView
        from app.views.compare import score_both
        demo = demo_dataset(seed=0)
        m = int(np.shape(demo.params.emissionprob)[1])
        a = DenseHMM(5, 3, n_symbols=m, fit_method="cooc", seed=0, cooc_steps=400).fit(demo.train, eval_data=demo.test)
        b = StandardHMM(5, n_symbols=m, n_iter=40, seed=1).fit(demo.train, eval_data=demo.test)
        view = CompareView()
        view.resize(1200, 560)
        view.show()
        ha, hb = a.history_[-1], b.history_[-1]
        view.set_models("Dense-cooc n=5 l=3 seed=0", a, "Standard n=5 seed=1", b,
                        {"test_nll": ha.get("test_nll"), "mad": ha.get("mad"), "step": ha.get("step"), "elapsed": 4.2},
                        {"test_nll": hb.get("test_nll"), "train_nll": hb.get("train_nll"), "mad": hb.get("mad"),
                         "step": hb.get("step"), "elapsed": 0.8},
                        scores=score_both(a, b, demo.test), data_name="the demo data's test split", same_data=True)
        save(view, "compare_aligned.png")

    words_figs = ("tags_state_x_tag.png", "words_top_words.png", "words_embeddings.png", "decode_words_tags.png")
    if have_shared and any(wanted(f) for f in words_figs):
        from densehmm_core.dense import DenseHMM
        words = load(CONLLU, observe="words", lowercase=True, max_vocab=1500, rare="shape")
        m = len(words.vocabulary)
        print(f"words: {m} symbols, {sum(len(s) for s in words.sequences)} tokens", flush=True)
        t0 = time.perf_counter()
        dense = DenseHMM(17, 8, n_symbols=m, fit_method="em", seed=0, n_iter=25)
        dash = Dashboard()
        dash.set_vocabulary(words.vocabulary)
        dash.set_title(f"Job 9: Dense-EM n=17 l=8 seed=0 on en_ewt-ud-dev.conllu (words, m = {m})")
        dash.resize(1300, 820)
        dash.show()
        for ev in dense.iter_fit(words.sequences):
            dash.update_from_event(ev)
            app.processEvents()
        print(f"word model trained in {time.perf_counter() - t0:.0f} s", flush=True)
        dash.set_model(dense, words)
        dash.h_split.setSizes([760, 540])
        settle(app, 0.5)
        t0 = time.perf_counter()
        while dash.live_tagging_busy() and time.perf_counter() - t0 < 60:  # scored off the GUI thread
            settle(app, 0.1)
        if wanted("tags_state_x_tag.png"):
            dash.tabs.setCurrentWidget(dash.tags_page)
            save(dash.tags_page, "tags_state_x_tag.png")
        dash.tabs.setCurrentWidget(dash.live)
        if wanted("words_top_words.png"):
            dash.resize(1500, 820)
            dash.h_split.setSizes([1240, 260])  # room for the ten words of each state
            save(dash.heatmaps, "words_top_words.png")
            dash.resize(1300, 820)
            dash.h_split.setSizes([760, 540])
        if wanted("words_embeddings.png"):
            save(dash.embeddings, "words_embeddings.png")
        if wanted("decode_words_tags.png"):
            dash.tabs.setCurrentWidget(dash.decode)
            # short enough for the words / gold / predicted table to fit whole (an exported figure leaves out
            # a table that does not)
            pick = next(i for i, s in enumerate(words.sequences) if 10 <= len(s) <= 13)
            dash.decode.select_sequence(pick)
            save(dash.decode, "decode_words_tags.png")
    del np
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # every figure is written; PySide6 can crash tearing down the many widgets at interpreter exit
    os._exit(code)

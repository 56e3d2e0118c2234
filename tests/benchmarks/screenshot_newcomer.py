#!/usr/bin/env python
"""Screenshots of issue 24's newcomer items for docs/APP.md — run on demand (a 1400 x 900 screen).

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python tests/benchmarks/screenshot_newcomer.py [--out DIR]

Saves into ``--out`` (default ``docs/screenshots``):

* ``data_panel_observe_first.png``: UD English EWT dev (../shared/data; the fixture words.conllu
  when absent) read as words with the defaults (min. count 2 -> <unk>): Observe first, the
  frequency chart most frequent first with its Reset button;
* ``help_densehmm.png`` / ``help_metrics.png``: Help contents (F1) at "What a DenseHMM is" and
  at "Metrics";
* ``unknown_symbols.png``: Score of a word model (min. count 1, no <unk>) on the EWT test file:
  the dialog that counts the words it does not know and offers to leave their sentences out;
* ``conllu_cut_short.png``: a CoNLL-U file cut in the middle of a line: the offer to read its
  complete sentences;
* ``words_embeddings_labels.png``: a DenseHMM on the words (co-occurrence fit, 300 steps):
  the scatter's labels placed on four sides without overlap;
* ``dark_theme.png``: the window with View > Theme > Dark while a demo job trains.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from qtwait import fresh_window, saver, screenshot_session, settle, wait_until  # noqa: E402 - this folder
if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
POS = os.path.join(os.path.dirname(REPO), "shared", "data", "pos")
DEV = os.path.join(POS, "en_ewt-ud-dev.conllu")
TEST = os.path.join(POS, "en_ewt-ud-test.conllu")
FIXTURE = os.path.join(REPO, "tests", "fixtures", "data", "words.conllu")


def main() -> int:
    out, app, tmp = screenshot_session(REPO)
    from PySide6.QtWidgets import QMessageBox
    from app.modelspec import ModelSpec
    dev = DEV if os.path.exists(DEV) else FIXTURE
    test = TEST if os.path.exists(TEST) else FIXTURE
    w = fresh_window(app, tmp)
    shot = saver(app, out, w)

    # 1. the data panel: words with the defaults
    w.open_files([dev])
    wait_until(app, lambda: len(w.datasets) == 1 and not w.data_ctl.loading, 120)
    p = w.data_panel
    p.observe.setCurrentIndex(p.observe.findData("words"))
    old = w.datasets[0]
    p.reread_button.click()
    wait_until(app, lambda: old not in w.datasets and not w.data_ctl.loading, 120)
    w.data_dock.raise_()
    words = w.datasets[0]
    print(f"words: {words.n_symbols} symbols, <unk> in vocabulary: {'<unk>' in words.vocabulary}", flush=True)
    shot("data_panel_observe_first.png", p)

    # 2. help
    from app.panels.help import show_help
    dlg = show_help(w, "densehmm")
    shot("help_densehmm.png", dlg)
    dlg.show_topic("metrics")
    shot("help_metrics.png", dlg)
    dlg.close()

    # 3. a DenseHMM on the words; its embedding scatter
    w.data_ctl.select_dataset(0)
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type="dense_cooc", n=12, l=3, cooc_steps=300, lr=0.05, tol=0.0,
                                          seed=0))
    wait_until(app, lambda: job.state.is_final, 600)
    w.jobs_ctl.show_job(job)
    d = w.dashboard
    wait_until(app, lambda: not d.live_update_pending and not d.live_tagging_busy(), 60)
    settle(app, 1.0)
    d.embeddings.resize(700, 520)
    shot("words_embeddings_labels.png", d.embeddings)
    print(f"scatter labels shown: {len(d.embeddings.visible_labels('V'))} of "
          f"{len(d.embeddings.labelled_symbols())}", flush=True)

    # 4. a word model without <unk> scored on another file: the offer
    p.min_count.setValue(1)
    old = w.datasets[0]
    p.reread_button.click()
    wait_until(app, lambda: old not in w.datasets and not w.data_ctl.loading, 120)
    every = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=5, n_iter=2, tol=0.0, seed=0))
    wait_until(app, lambda: every.state.is_final, 600)
    w.open_files([test])
    wait_until(app, lambda: len(w.datasets) == 2 and not w.data_ctl.loading, 120)
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.min_count.setValue(1)
    old = w.datasets[1]
    p.reread_button.click()
    wait_until(app, lambda: old not in w.datasets and not w.data_ctl.loading, 120)
    from app.panels import unknown

    def grab_box(box):
        box.show()
        shot("unknown_symbols.png", box)
        box.button(QMessageBox.StandardButton.Cancel).click()
    unknown._ask = grab_box
    w.results_ctl.score_job(every, ds=w.datasets[1])

    # 5. a CoNLL-U file cut short
    with open(dev, encoding="utf-8") as f:
        text = f.read()
    cut = os.path.join(tmp, "en_ewt_cut.conllu")
    with open(cut, "w", encoding="utf-8") as f:
        f.write(text[: len(text) * 2 // 3].rsplit("\t", 3)[0])

    def question(parent, title, message, buttons, default):
        box = QMessageBox(QMessageBox.Icon.Question, title, message, buttons, parent)
        box.show()
        shot("conllu_cut_short.png", box)
        box.close()
        return QMessageBox.StandardButton.Yes
    QMessageBox.question = staticmethod(question)
    n = len(w.datasets)
    w.open_files([cut])
    wait_until(app, lambda: len(w.datasets) == n + 1 and not w.data_ctl.loading, 120)
    print("cut file:", w.datasets[-1].warnings, flush=True)

    # 6. dark theme while a demo job trains
    w.set_theme("dark")
    w.data_ctl.load_demo()
    demo = w.jobs_ctl.start_training(
        ModelSpec.make(model_type="dense_cooc", n=5, l=3, cooc_steps=20000, lr=0.001, tol=0.0,
                                          seed=0))
    wait_until(app, lambda: demo.step > 200 or demo.state.is_final, 120)
    settle(app, 1.5)
    wait_until(app, lambda: not w.dashboard.live_update_pending, 30)   # (no update half drawn)
    shot("dark_theme.png", w)
    w.jobs.cancel_all()
    w.jobs.wait(5)
    w.set_theme("light")
    return 0


if __name__ == "__main__":
    sys.exit(main())

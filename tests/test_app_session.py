"""File > Save session / Open session: every finished job in one .h5, restored exactly (issue 16)."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from app.modelspec import ModelSpec  # noqa: E402
from sessionfakes import protein_fasta as _fasta  # noqa: E402




def test_session_round_trip_restores_jobs_models_and_data_sets(make_window, session_files, qtbot, tmp_path):
    from densehmm_core import modelfile
    w = make_window("a")
    fasta = _fasta(tmp_path / "p.fasta")
    w.open_files([fasta])
    qtbot.waitUntil(lambda: len(w.datasets) == 1 and not w.data_ctl.loading, timeout=30000)
    ds = w.datasets[0]
    a = w.jobs_ctl.start_training(
        ModelSpec.make(model_type="standard", n=3, n_iter=4, tol=0.0, seed=2, init_method="spectral"))
    sweep = w.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=2, tol=0.0), 1)
    jobs = [a] + sweep
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    scored = []
    w.results_ctl.score_job(a, ds, on_done=scored.append)
    qtbot.waitUntil(lambda: bool(scored), timeout=30000)
    path = str(tmp_path / "day.h5")
    names = session_files.save(w, path)
    assert len(names) == len(jobs) and not w.errors
    # the file is an ordinary model file; "trained" is when each job ended
    info = modelfile.read_model_info(path, names[0], arrays=False)
    assert info["attrs"]["trained_utc"] == a.finished_utc
    assert info["notes"]["dataset"]["path"] == ds.path and info["notes"]["job_name"] == a.name
    assert info["provenance"]["n_sequences"] == len(ds.processed.sequences)   # the training data's provenance

    w2 = make_window("b")
    restored = session_files.open(w2, path, ready=lambda restored: len(restored) == len(jobs))
    qtbot.waitUntil(lambda: len(w2.datasets) == 1 and all(j.dataset is not None for j in restored), timeout=30000)
    by_name = {j.name: j for j in restored}
    for old in jobs:
        new = by_name[old.name]
        assert (new.state, new.reason, new.sweep, new.spec, new.device) == \
               (old.state, old.reason, old.sweep, old.spec, old.device)
        assert new.elapsed == pytest.approx(old.elapsed)
        assert (new.step, new.total) == (old.step, old.total) and old.total
        assert w2.jobs_panel.bars[new.id].format() == w.jobs_panel.bars[old.id].format() == f"{old.step}/{old.total}"
        for attr in ("startprob_", "transmat_", "emissionprob_"):
            np.testing.assert_array_equal(getattr(new.model, attr), getattr(old.model, attr))
        assert [h["step"] for h in new.history] == [h["step"] for h in old.history]
        np.testing.assert_allclose([h["loss"] for h in new.history], [h["loss"] for h in old.history], rtol=0)
        # the results table shows the same numbers
        r_old, r_new = w.jobs_panel.row(old), w2.jobs_panel.row(new)
        for key in ("model", "n", "parameters", "train_nll", "test_nll", "iterations", "stop"):
            assert r_new[key] == r_old[key], key
    assert by_name[a.name].scores == pytest.approx(a.scores)
    # the form's "Start" choice is in the restored spec and in the restored model
    assert by_name[a.name].spec["init_method"] == "spectral" and by_name[a.name].model.init_method == "spectral"
    # the data set is read again from its file with the same split: same sequences
    ds2 = w2.datasets[0]
    assert ds2.path == ds.path and ds2.options == ds.options
    for x, y in zip(ds2.test.sequences, ds.test.sequences):
        np.testing.assert_array_equal(x, y)
    # sweeps stay grouped; a new sweep gets a new name
    assert len(w2.jobs_panel.groups) == 1
    more = w2.jobs_ctl.start_sweep(ModelSpec.make(model_type="standard", n_iter=1, tol=0.0), 1)
    assert more[0].sweep != sweep[0].sweep
    qtbot.waitUntil(lambda: all(j.state.is_final for j in more), timeout=60000)


def test_a_session_whose_data_file_is_gone_still_restores_its_jobs(make_window, session_files, qtbot, tmp_path):
    w = make_window("a")
    fasta = _fasta(tmp_path / "gone.fasta")
    w.open_files([fasta])
    qtbot.waitUntil(lambda: len(w.datasets) == 1 and not w.data_ctl.loading, timeout=30000)
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=2, tol=0.0))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    path = tmp_path / "s.h5"
    assert session_files.save(w, path)
    os.remove(fasta)
    w2 = make_window("b")
    restored = session_files.open(w2, path)
    assert restored[0].dataset is None and restored[0].state.has_model
    from app.panels.jobs_panel import C_DATA
    assert w2.jobs_panel.items[restored[0].id].text(C_DATA) == "gone.fasta"
    assert not w2.errors
    # File > Open (or a drop) of a session file restores it as a session too
    w3 = make_window("c")
    w3.open_files([path])
    qtbot.waitUntil(lambda: len(w3.jobs.jobs) == 1 and not w3.data_ctl.loading, timeout=30000)
    j3 = w3.jobs.jobs[0]
    assert j3.name == job.name and j3.spec == job.spec and j3.device == job.device


# ------------------------------------------------------------------ issues 24 (item 11), 25 and 27 (item 8)
def _finished_jobs(k=3, dataset=None, steps=6):
    from sessionfakes import finished_job, fitted_model
    vocab = None if dataset is None else dataset.vocabulary
    return [finished_job(fitted_model("standard", n=3, m=4 if vocab is None else len(vocab), steps=steps, seed=i,
                                      vocabulary=vocab), f"job {i}", dataset=dataset,
                         spec=ModelSpec.make(model_type="standard", n=3, seed=i).to_dict()) for i in range(k)]


def _saved(w, session_files, path, jobs):
    from sessionfakes import add_jobs
    add_jobs(w, jobs)
    return session_files.save(w, path)


def test_a_bad_field_is_one_dialog_naming_it_and_nothing_is_restored(make_window, qtbot, tmp_path):
    from densehmm_core import modelfile
    from app.session import session_notes
    jobs = _finished_jobs(3)
    notes = [session_notes(j) for j in jobs]
    notes[2]["elapsed_s"] = "abc"      # issue 27: this raised inside a Qt slot and half-restored the session
    path = tmp_path / "bad.h5"
    modelfile.save_models(path, [{"name": f"job{i}", "model": j.model, "notes": n}
                                 for i, (j, n) in enumerate(zip(jobs, notes))])
    w = make_window("a")
    w.sessions_ctl.open_session(str(path))
    qtbot.waitUntil(lambda: bool(w.errors), timeout=30000)
    qtbot.wait(200)
    assert w.errors == [("Cannot open the session",
                         f"{path}: job 3 ('job2'): field 'elapsed_s' must be a number, got 'abc'")]
    assert w.jobs.jobs == [] and w.jobs_panel.jobs == {}


def test_cancel_while_reading_or_while_adding_restores_nothing(make_window, session_files, qtbot, tmp_path,
                                                                monkeypatch):
    from PySide6.QtWidgets import QProgressDialog

    import app.window.sessions as ws
    from app.session import load_session
    w = make_window("a")
    path = tmp_path / "s.h5"
    _saved(w, session_files, path, _finished_jobs(60))

    def slow(path, progress, cancel):      # reading takes until the user cancels
        cancel.wait(10)
        return load_session(path, progress=progress, cancel=cancel)
    monkeypatch.setattr(ws, "load_session", slow)
    w2 = make_window("b")
    w2.sessions_ctl.open_session(str(path))
    dialog = w2.findChild(QProgressDialog)
    assert dialog.labelText().startswith("Reading s.h5")
    from PySide6.QtWidgets import QPushButton
    dialog.findChild(QPushButton).click()           # its Cancel button
    qtbot.waitUntil(lambda: any("cancelled: nothing restored" in t for _, t in w2.log_panel.lines), timeout=10000)
    assert w2.jobs.jobs == [] and not w2.errors
    # cancelled while the jobs are being added (25 per turn of the event loop): those added go again
    import threading
    session = load_session(str(path))
    cancel, restored = threading.Event(), []
    w2.sessions_ctl.restore_session(session, on_done=restored.extend, cancel=cancel)
    assert len(w2.jobs.jobs) == ws.ADD_CHUNK and len(w2.jobs_panel.jobs) == ws.ADD_CHUNK
    cancel.set()
    qtbot.waitUntil(lambda: not w2.jobs.jobs, timeout=10000)
    assert w2.jobs_panel.jobs == {} and w2.jobs_panel.tree.topLevelItemCount() == 0 and restored == []
    # and without cancel, all 60 arrive, in order
    w2.sessions_ctl.restore_session(session, on_done=restored.extend)
    qtbot.waitUntil(lambda: len(restored) == 60, timeout=30000)
    assert [j.name for j in w2.jobs.jobs] == [f"job {i}" for i in range(60)]


def test_stored_data_paths_are_shown_and_read_only_when_the_user_says_so(make_window, session_files, qtbot,
                                                                         tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    import app.window.sessions as ws
    w = make_window("a")
    fasta = _fasta(tmp_path / "p.fasta")
    w.open_files([fasta])
    qtbot.waitUntil(lambda: len(w.datasets) == 1 and not w.data_ctl.loading, timeout=30000)
    path = tmp_path / "s.h5"
    _saved(w, session_files, path, _finished_jobs(2, dataset=w.datasets[0]))
    reads = []
    monkeypatch.setattr(ws, "reopen_dataset", lambda *a, **k: reads.append(a) or pytest.fail("read"))
    session_files.answer = QMessageBox.StandardButton.No
    w2 = make_window("b")
    restored = session_files.open(w2, path)
    assert [t for t, _ in session_files.asked] == ["Read the session's data files?"]
    assert os.path.abspath(fasta) in session_files.asked[0][1]       # the full path, as stored
    qtbot.wait(300)
    assert reads == [] and w2.datasets == [] and all(j.dataset is None for j in restored)
    assert any("not read again" in t and fasta in t for _, t in w2.log_panel.lines)
    # a data set open already (same file, same options) is attached without asking
    session_files.asked.clear()
    w.jobs.jobs.clear()
    restored = session_files.open(w, path)
    assert session_files.asked == [] and all(j.dataset is w.datasets[0] for j in restored)


def test_after_a_restore_the_first_job_is_drawn_with_its_metrics(make_window, session_files, qtbot, tmp_path):
    """Issue 24: the first job's curves were empty until another job was selected, the header
    lost its metrics, and models from a file showed Time "0 s"."""
    from densehmm_core import modelfile
    from app.panels.jobs_panel import C_TIME, format_seconds
    from app.session import session_notes
    w = make_window("a")
    fasta = _fasta(tmp_path / "p.fasta")
    w.open_files([fasta])
    qtbot.waitUntil(lambda: len(w.datasets) == 1 and not w.data_ctl.loading, timeout=30000)
    job = w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=3, n_iter=5, tol=0.0, seed=1))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    w.jobs_ctl.show_job(job)
    qtbot.waitUntil(lambda: not w.dashboard.live_update_pending, timeout=10000)
    header = w.dashboard.title.text()
    assert "NLL/token" in header and "test_nll" in header   # (Baum-Welch: its loss is the training NLL)
    path = tmp_path / "s.h5"
    session_files.save(w, path)
    w2 = make_window("b")
    restored = session_files.open(w2, path)
    qtbot.waitUntil(lambda: w2.current_job is restored[0] and restored[0].dataset is not None
                    and not w2.dashboard.live_update_pending, timeout=30000)
    assert w2.dashboard.title.text().replace(f"Job {restored[0].id}", "") == header.replace(f"Job {job.id}", "")
    x, y = w2.dashboard.curves.curve_data("train_nll")
    np.testing.assert_array_equal(x, [h["step"] for h in job.history])
    np.testing.assert_allclose(y, [h["train_nll"] for h in job.history], rtol=0)
    # a plain model file's model restored as a job: its training time from its history, not "0 s"
    plain = tmp_path / "plain.h5"
    modelfile.save_models(plain, [{"name": "m", "model": job.model}] + [
        {"name": "s", "model": job.model, "notes": session_notes(job)}])
    w3 = make_window("c")
    got = session_files.open(w3, plain)
    seconds = job.history[-1]["elapsed"]
    assert got[0].elapsed == pytest.approx(seconds)
    assert w3.jobs_panel.items[got[0].id].text(C_TIME) == format_seconds(seconds)


def test_models_opened_from_a_plain_model_file_show_their_recorded_training_time(make_window, qtbot, tmp_path):
    """Issue 24.11: File > Open of a plain .h5 model file gave its jobs Time "—" though the file
    records how long each model trained (its history's last ``elapsed``); none recorded: "—"."""
    from densehmm_core import modelfile
    from app.panels.jobs_panel import C_TIME
    from sessionfakes import fitted_model
    timed = fitted_model("standard", n=3, m=4, steps=749, seed=0)      # elapsed 0.1 s per step: 75 s
    untimed = fitted_model("standard", n=3, m=4, steps=3, seed=1)
    untimed.history_ = [{"step": s, "loss": 1.0 / (s + 1)} for s in range(4)]
    path = tmp_path / "models.h5"
    modelfile.save_models(path, [{"name": "timed", "model": timed}, {"name": "untimed", "model": untimed}])
    w = make_window("a")
    w.open_files([str(path)])
    qtbot.waitUntil(lambda: len(w.jobs.jobs) == 2 and not w.data_ctl.loading, timeout=30000)
    a, b = w.jobs.jobs
    assert a.elapsed == pytest.approx(75.0) and b.started_at is None
    assert w.jobs_panel.items[a.id].text(C_TIME) == "1:15"
    assert w.jobs_panel.items[b.id].text(C_TIME) == "—"


def _tagged_words(path, rng):
    """word_TAG sentences: 30 words, each with its own tag among 4 (a words data set with gold tags)."""
    tags = ["NN", "VB", "DT", "JJ"]
    lines = []
    for _ in range(40):
        ws = rng.integers(0, 30, size=12)
        lines.append(" ".join(f"w{k}_{tags[k % 4]}" for k in ws))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_restored_words_job_shows_its_mapped_tags_without_scoring_again(make_window, session_files, qtbot,
                                                                          tmp_path, monkeypatch):
    """Issue 24.7: the tagging scores of a finished words job (the Tags tab, the states' mapped tags) are
    stored in the session; a restored job shown on the same data draws them at once, with no second
    decoding and scoring.  The oracle: the scores the first window computed through the core."""
    import app.views.tag_scoring as dash
    w = make_window("a")
    w.open_files([_tagged_words(tmp_path / "tagged.txt", np.random.default_rng(3))])
    qtbot.waitUntil(lambda: len(w.datasets) == 1 and not w.data_ctl.loading, timeout=30000)
    p = w.data_panel
    p.observe.setCurrentIndex(p.observe.findData("words"))
    p.min_count.setValue(1)
    old = w.datasets[0]
    p.reread_button.click()
    qtbot.waitUntil(lambda: old not in w.datasets and not w.data_ctl.loading, timeout=30000)
    assert getattr(w.datasets[0].train, "tags", None) is not None
    jobs = [w.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=4, n_iter=3, tol=0.0, seed=s))
            for s in (1, 2)]
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    d = w.dashboard
    for job in jobs:
        w.jobs_ctl.show_job(job)
        qtbot.waitUntil(lambda: d.tagging_of(job.model) is not None and not d.live_tagging_busy(), timeout=20000)
    want = {job.name + str(job.spec["seed"]): d.tagging_of(job.model)[1] for job in jobs}
    path = tmp_path / "words.h5"
    session_files.save(w, path)

    runs = []
    real = dash.score_tags
    monkeypatch.setattr(dash, "score_tags", lambda *a: runs.append(1) or real(*a))
    w2 = make_window("b")
    restored = session_files.open(w2, path, ready=lambda r: len(r) == 2)
    qtbot.waitUntil(lambda: all(j.dataset is not None for j in restored) and w2.current_job is restored[0]
                    and not w2.dashboard.live_update_pending, timeout=30000)
    d2 = w2.dashboard
    for job in restored:
        # shown as a user shows it, through the Jobs panel (the restore's own timer shows the first
        # job unless another row was chosen there), drawn in parts from the event loop, tags among them
        w2.jobs_panel.select(job)
        qtbot.waitUntil(lambda: w2.current_job is job, timeout=10000)
        qtbot.waitUntil(lambda: not d2.live_update_pending, timeout=10000)
        scores = want[job.name + str(job.spec["seed"])]
        np.testing.assert_array_equal(d2.state_tags.counts(), scores["contingency"])
        names = w2.datasets[0].train.tag_vocabulary
        assert d2.state_tags.row_labels() == [f"{i} → {names[t]}" for i, t in enumerate(scores["mapping"])]
        assert not d2.live_tagging_busy()
    assert runs == []          # nothing decoded and scored again


# ------------------------------------------------------------------ review rev24, item 1
def test_a_refused_data_path_restores_its_jobs_without_data_never_on_the_demo(make_window, session_files, qtbot,
                                                                            tmp_path):
    """A data file whose name the session cannot store (a carriage return: legal on Linux) is stored without
    a path; its jobs come back without data (the log says so), never on the demo that "no path" meant
    before, and nothing is asked or generated.  The demo is marked in the file and still comes back."""
    a = make_window("a")
    a.open_files([_fasta(tmp_path / "bad\rname.fasta")])
    qtbot.waitUntil(lambda: len(a.datasets) == 1 and not a.data_ctl.loading, timeout=30000)
    job = a.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=3, tol=0.0))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60000)
    a.data_ctl.load_demo()
    demo_job = a.jobs_ctl.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=3, tol=0.0, seed=1))
    qtbot.waitUntil(lambda: demo_job.state.is_final, timeout=60000)
    path = str(tmp_path / "s.h5")
    session_files.save(a, path)
    b = make_window("b")
    restored = session_files.open(b, path, ready=lambda jobs: len(jobs) == 2)
    by_name = {j.name: j for j in restored}
    bad, demo = by_name[job.name], by_name[demo_job.name]
    qtbot.waitUntil(lambda: demo.dataset is not None, timeout=30000)
    assert demo.dataset.is_demo and [d.is_demo for d in b.datasets] == [True]
    qtbot.wait(200)                     # (nothing else is read: no second data set, none attached to it)
    assert bad.dataset is None and bad.model.n_symbols == job.model.n_symbols != demo.dataset.n_symbols
    assert len(b.datasets) == 1 and not session_files.asked
    assert any("bad name.fasta" in t and "no stored path" in t and "kept without it" in t
               for _, t in b.log_panel.lines), b.log_panel.lines
    b.state.set_current_job(bad)        # a restored model: its start was not recorded, and the window says so
    b.dashboard.overview.flush()
    assert "not recorded" in b.dashboard.overview.before.label.text()


def test_a_version_2_session_still_restores_its_demo_jobs_on_the_demo(make_window, session_files, qtbot,
                                                                      tmp_path):
    """Sessions written before the demo was marked (version 2) stored it as a data set without a path under
    the demo's name: read as the demo still.  A path-less data set of another name there is not the demo."""
    from densehmm_core import modelfile
    from app import session as sess
    from app.datasets import demo_dataset
    from sessionfakes import finished_job, fitted_model
    assert demo_dataset().name.startswith(sess.DEMO_NAME_PREFIX)
    entries = []
    for i, name in enumerate([demo_dataset().name, "bad name.fasta"]):
        job = finished_job(fitted_model("standard", n=3, m=5, steps=3, seed=i), f"job {i}",
                           spec=ModelSpec.make(model_type="standard", n=3).to_dict())
        notes = sess.session_notes(job)
        notes[sess.SESSION_KEY] = 2
        notes["dataset"] = {"name": name, "path": None, "options": {"seed": 0}}    # as version 2 wrote them
        entries.append({"name": f"job{i}", "model": job.model, "notes": notes})
    path = str(tmp_path / "old.h5")
    modelfile.save_models(path, entries)
    refs = [sj.dataset for sj in sess.load_session(path).jobs]
    assert [(r.demo, r.available) for r in refs] == [(True, True), (False, False)]
    b = make_window("b")
    restored = session_files.open(b, path, ready=lambda jobs: len(jobs) == 2)
    qtbot.waitUntil(lambda: restored[0].dataset is not None, timeout=30000)
    assert restored[0].dataset.is_demo and restored[1].dataset is None and len(b.datasets) == 1

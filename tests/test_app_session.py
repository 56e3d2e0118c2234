"""File > Save session / Open session: every finished job in one .h5, restored exactly (issue 16)."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from app.modelspec import ModelSpec  # noqa: E402


def _fasta(path):
    rng = np.random.default_rng(1)
    with open(path, "w") as f:
        for i in range(16):
            f.write(f">s{i}\n" + "".join(rng.choice(list("ACDEFGHIK"), 30 + i)) + "\n")
    return str(path)


def test_session_round_trip_restores_jobs_models_and_data_sets(make_window, session_files, qtbot, tmp_path):
    from densehmm_core import modelfile
    w = make_window("a")
    fasta = _fasta(tmp_path / "p.fasta")
    w.open_files([fasta])
    qtbot.waitUntil(lambda: len(w.datasets) == 1 and not w.loading, timeout=30000)
    ds = w.datasets[0]
    a = w.start_training(ModelSpec.make(model_type="standard", n=3, n_iter=4, tol=0.0, seed=2, init_method="spectral"))
    sweep = w.start_sweep(ModelSpec.make(model_type="standard", n_iter=2, tol=0.0), 1)
    jobs = [a] + sweep
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    scored = []
    w.score_job(a, ds, on_done=scored.append)
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
    more = w2.start_sweep(ModelSpec.make(model_type="standard", n_iter=1, tol=0.0), 1)
    assert more[0].sweep != sweep[0].sweep
    qtbot.waitUntil(lambda: all(j.state.is_final for j in more), timeout=60000)


def test_a_session_whose_data_file_is_gone_still_restores_its_jobs(make_window, session_files, qtbot, tmp_path):
    w = make_window("a")
    fasta = _fasta(tmp_path / "gone.fasta")
    w.open_files([fasta])
    qtbot.waitUntil(lambda: len(w.datasets) == 1 and not w.loading, timeout=30000)
    job = w.start_training(ModelSpec.make(model_type="standard", n=2, n_iter=2, tol=0.0))
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
    qtbot.waitUntil(lambda: len(w3.jobs.jobs) == 1 and not w3.loading, timeout=30000)
    j3 = w3.jobs.jobs[0]
    assert j3.name == job.name and j3.spec == job.spec and j3.device == job.device

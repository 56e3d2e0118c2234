"""The Sweep tab summarises one sweep: the latest by default, the sweep of the job selected in the Jobs
panel when it has one; a restored session's sweeps show there as they did; a standard HMM's grid needs
only n."""
import numpy as np
import pytest

pytest.importorskip("pytestqt")

from app.modelspec import ModelSpec  # noqa: E402
from sessionfakes import protein_fasta as _fasta  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")




def _standard(n_iter=3):
    return ModelSpec.make(model_type="standard", n_iter=n_iter, tol=0.0, seed=0)


def _finish(qtbot, jobs):
    qtbot.waitUntil(lambda: all(j.state.is_final for j in jobs), timeout=60000)
    assert all(j.state.value == "finished" for j in jobs)


def _medians(view, jobs):
    """What the Sweep tab must draw for ``jobs``: the median test NLL at each n."""
    by_n = {}
    for j in jobs:
        by_n.setdefault(j.spec["n"], []).append(j.history[-1]["test_nll"])
    return [float(np.median(by_n[n])) for n in sorted(by_n)]


def test_the_sweep_tab_shows_one_sweep_the_latest_or_the_selected_jobs(make_window, qtbot, tmp_path):
    w = make_window("a")
    w.data_ctl.load_demo()
    demo = w.jobs_ctl.start_sweep(_standard(), 2, grid=((2, 1), (3, 1)))
    _finish(qtbot, demo)
    w.open_files([_fasta(tmp_path / "p.fasta")])
    qtbot.waitUntil(lambda: len(w.datasets) == 2 and not w.data_ctl.loading, timeout=30000)
    other = w.jobs_ctl.start_sweep(_standard(), 1, grid=((2, 1), (3, 1)))
    _finish(qtbot, other)
    single = w.jobs_ctl.start_training(_standard())
    _finish(qtbot, [single])
    view = w.dashboard.sweep
    s1, s2 = demo[0].sweep, other[0].sweep
    # a job of no sweep shown: the latest sweep, its rows only (the two were pooled: medians no job has)
    w.jobs_panel.select(single)
    assert w.current_job is single
    assert view.shown_sweep() == s2 and {r["job"] for r in view.rows()} == {j.id for j in other}
    assert view.series("nll")["standard"][1].tolist() == _medians(view, other)
    assert f"{s2} on p.fasta" in view.header.text()
    # a job of the first sweep selected in the Jobs panel: its sweep, on its data set
    w.jobs_panel.select(demo[1])
    assert w.current_job is demo[1]
    assert view.shown_sweep() == s1 and {r["job"] for r in view.rows()} == {j.id for j in demo}
    assert view.series("nll")["standard"][1].tolist() == _medians(view, demo)
    assert f"{s1} on {w.datasets[0].name}" in view.header.text() and "2 repeat(s)" in view.header.text()
    # a job of another sweep finishing meanwhile does not take the tab from the selected one
    more = w.jobs_ctl.start_sweep(_standard(), 1, grid=((2, 1),))
    w.jobs_panel.select(demo[0])
    _finish(qtbot, more)
    assert view.shown_sweep() == s1 and len(view.rows()) == len(demo)
    # back to a job of no sweep: the latest sweep again
    w.jobs_panel.select(single)
    assert view.shown_sweep() == more[0].sweep and [r["job"] for r in view.rows()] == [more[0].id]
    # the first sweep's group row selected in the Jobs panel: that sweep
    w.jobs_panel.tree.setCurrentItem(w.jobs_panel.groups[s1])
    assert view.shown_sweep() == s1 and {r["job"] for r in view.rows()} == {j.id for j in demo}


def test_a_new_sweeps_tab_says_which_sweep_before_its_first_job_finishes(qtbot):
    from app.views import SweepView
    from app.views.sweep import row_from_spec
    view = SweepView()
    qtbot.addWidget(view)
    view.add_row({**row_from_spec({"model_type": "standard", "n": 2}, {"test_nll": 2.0}, 1),
                  "sweep": "sweep 9", "data": "demo"})
    view.add_row({**row_from_spec({"model_type": "standard", "n": 2}, {"test_nll": 3.0}, 2),
                  "sweep": "sweep 10", "data": "EWT"})
    assert view.shown_sweep() == "sweep 10"            # the latest: sweep 10 after sweep 9
    assert view.series("nll")["standard"][1].tolist() == [3.0]
    view.show_sweep("sweep 11")
    assert view.stack.currentWidget() is view.placeholder and "sweep 11" in view.placeholder.text()
    assert view.rows() == [] and len(view.all_rows()) == 2


def test_a_restored_sessions_sweep_shows_in_the_sweep_tab(make_window, session_files, qtbot, tmp_path):
    w = make_window("a")
    w.data_ctl.load_demo()
    sweep = w.jobs_ctl.start_sweep(_standard(), 2, grid=((2, 1), (3, 1)))
    lone = w.jobs_ctl.start_training(_standard())
    _finish(qtbot, sweep + [lone])
    before = w.dashboard.sweep
    w.jobs_panel.select(sweep[0])
    want = sorted((r["n"], r["seed"], r["test_nll"], r["mad"]) for r in before.rows())
    assert len(want) == len(sweep)
    path = str(tmp_path / "s.h5")
    session_files.save(w, path)

    w2 = make_window("b")
    restored = session_files.open(w2, path, ready=lambda jobs: len(jobs) == len(sweep) + 1)
    view = w2.dashboard.sweep
    got = sorted((r["n"], r["seed"], r["test_nll"], r["mad"]) for r in view.rows())
    assert got == want
    assert view.series("nll")["standard"][1].tolist() == before.series("nll")["standard"][1].tolist()
    assert view.stack.currentWidget() is view.graphics
    assert f"{sweep[0].sweep} on {w.datasets[0].name}" in view.header.text()
    assert {j.sweep for j in restored} == {sweep[0].sweep, None}


def test_a_standard_hmms_grid_needs_only_n(qtbot):
    from app.panels.model_form import ModelForm
    form = ModelForm()
    qtbot.addWidget(form)
    form.kind.setCurrentIndex(form.kind.findData("standard"))
    form.repeats.setValue(3)
    form.sweep_grid.setText("n=2,3")
    assert form.sweep_button.isEnabled(), form.sweep_info.text()
    assert form.sweep_info.text() == "n ∈ {2, 3} — up to 6 jobs"
    got = []
    form.sweep_requested.connect(lambda *a: got.append(a))
    assert form.request_sweep() is True and len(got) == 1
    assert [p[0] for p in form.sweep_values()[1]] == [2, 3]
    # l given anyway: only the n values count (a standard HMM has no l)
    form.sweep_grid.setText("n=2,3 l=1,2")
    assert form.sweep_button.isEnabled() and "up to 6 jobs" in form.sweep_info.text()
    # other mistakes are still refused
    form.sweep_grid.setText("n=x")
    assert not form.sweep_button.isEnabled() and "positive integers" in form.sweep_info.text()
    # a DenseHMM varies l: its grid needs both, and changing the model type says so at once
    form.sweep_grid.setText("n=2,3")
    form.kind.setCurrentIndex(form.kind.findData("dense_em"))
    assert not form.sweep_button.isEnabled() and "l=... is missing" in form.sweep_info.text()
    # ... unless Logits full fixes l to n
    logits = form.fields["logits"]
    logits.setCurrentIndex(logits.findData("full"))
    assert form.sweep_button.isEnabled() and form.sweep_info.text() == "n ∈ {2, 3} — up to 6 jobs"
    logits.setCurrentIndex(logits.findData("dense"))
    assert not form.sweep_button.isEnabled()
    form.kind.setCurrentIndex(form.kind.findData("standard"))
    assert form.sweep_button.isEnabled()


# ------------------------------------------------------------------ review rev24, item 2
def test_sweep_names_have_one_owner_and_a_taken_name_gets_the_next_number():
    from app.sweeps import SweepNames, sweep_number, sweep_order
    names = SweepNames()
    assert names.new() == "sweep 1"
    # a session's "sweep 1" and "sweep 4" in a window that has a "sweep 1": the first moves, the second stays
    assert names.restored(["sweep 1", "sweep 1", "sweep 4", None], ["sweep 1", None]) == \
        {"sweep 1": "sweep 5", "sweep 4": "sweep 4"}
    assert names.new() == "sweep 6"
    assert [sweep_number(n) for n in ("sweep 12", "sweep 1x", "my sweep 3", None)] == [12, 0, 0, 0]
    assert sorted(["sweep 10", None, "sweep 2"], key=sweep_order) == [None, "sweep 2", "sweep 10"]


def test_a_restored_sweep_never_merges_with_a_sweep_of_the_same_name(make_window, session_files, qtbot, tmp_path):
    """Window b runs its own "sweep 1", then opens a session holding another "sweep 1" (twice): each restored
    sweep gets the next free number (jobs, their names, the Sweep tab's rows, the Jobs panel's groups), the
    log says so, and a new sweep is numbered after them all."""
    a = make_window("a")
    a.data_ctl.load_demo()
    theirs = a.jobs_ctl.start_sweep(_standard(), 1, grid=((2, 1), (3, 1)))
    _finish(qtbot, theirs)
    path = str(tmp_path / "s.h5")
    session_files.save(a, path)
    b = make_window("b")
    b.open_files([_fasta(tmp_path / "p.fasta")])
    qtbot.waitUntil(lambda: len(b.datasets) == 1 and not b.data_ctl.loading, timeout=30000)
    mine = b.jobs_ctl.start_sweep(_standard(), 1, grid=((2, 1), (3, 1)))
    _finish(qtbot, mine)
    first = session_files.open(b, path, ready=lambda jobs: len(jobs) == 2)
    # the restored first job is shown and selected: its sweep is the one summarised (not the stale selection's)
    qtbot.waitUntil(lambda: b.state.current_job is first[0], timeout=10000)
    assert b.state.selection == [first[0]] and b.dashboard.sweep.shown_sweep() == "sweep 2"
    again = session_files.open(b, path, ready=lambda jobs: len(jobs) == 2)
    assert mine[0].sweep == "sweep 1"
    assert {j.sweep for j in first} == {"sweep 2"} and {j.sweep for j in again} == {"sweep 3"}
    assert all(j.name.startswith(f"[{j.sweep}] ") for j in first + again)
    assert list(b.jobs_panel.groups) == ["sweep 1", "sweep 2", "sweep 3"]
    assert [b.jobs_panel.groups[g].childCount() for g in b.jobs_panel.groups] == [2, 2, 2]
    view = b.dashboard.sweep
    for jobs, data in ((mine, "p.fasta"), (first, "Demo"), (again, "Demo")):
        b.jobs_panel.select(jobs[0])
        assert view.shown_sweep() == jobs[0].sweep and len(view.rows()) == 2
        assert {r["data"].split(":")[0] for r in view.rows()} == {data}
        assert "1 repeat(s)" in view.header.text() and "," not in view.header.text().split(" — ")[0]
    assert any("sweep 1 of s.h5 restored as sweep 3" in t for _, t in b.log_panel.lines)
    nxt = b.jobs_ctl.start_sweep(_standard(), 1, grid=((2, 1),))
    assert nxt[0].sweep == "sweep 4"
    _finish(qtbot, nxt)


# ------------------------------------------------------------------ review rev24, item 5
def test_the_sweep_shown_follows_the_state_not_the_signal_that_came_last(make_window, qtbot):
    """A group row's choice survived only until the current job was shown anew (a data file read again, a
    remote job's finish): the tab then showed the job's sweep while the selection was another.  One function
    of the state (AppState.focused_sweep) decides, one listener of both signals applies it."""
    window = make_window("a")
    window.data_ctl.load_demo()
    s1 = window.jobs_ctl.start_sweep(_standard(), 1, grid=((2, 1),))
    s2 = window.jobs_ctl.start_sweep(_standard(), 1, grid=((2, 1),))
    single = window.jobs_ctl.start_training(_standard())
    _finish(qtbot, s1 + s2 + [single])
    view = window.dashboard.sweep
    window.jobs_panel.select(s2[0])
    assert window.state.focused_sweep() == view.shown_sweep() == s2[0].sweep
    window.jobs_panel.select(single)
    window.jobs_panel.tree.setCurrentItem(window.jobs_panel.groups[s1[0].sweep])
    assert {j.sweep for j in window.state.selection} == {s1[0].sweep}
    assert window.state.focused_sweep() == view.shown_sweep() == s1[0].sweep
    window.state.set_current_job(window.state.current_job)      # the current job shown anew
    assert window.state.focused_sweep() == view.shown_sweep() == s1[0].sweep
    window.state.set_selection([])                              # nothing selected: the shown job's (none: latest)
    assert window.state.focused_sweep() == (window.state.current_job.sweep or None)

"""Train with no data set open loads the demo: the first job trains with the settings the form
shows after that load (the demo's: 60,000 steps at learning rate 2e-4, tol 0), not those it held before."""
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import Qt  # noqa: E402

from app.datasets import DEMO_FORM  # noqa: E402
from app.modelspec import ModelSpec  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _submitted(w, monkeypatch):
    """The jobs the window starts, recorded instead of run (a 60,000-step fit is not this test's business)."""
    got = []
    monkeypatch.setattr(w.jobs, "submit", got.append)
    return got


def _form_not_the_demos(w):
    """The form as a user may have left it: the model type's own settings (lr 0.05, 1,000 steps, tol 1e-7)."""
    form = w.model_form
    form.set_spec(ModelSpec.make(model_type="dense_cooc", n=4, l=2, lr=0.05, cooc_steps=1000, tol=1e-7))
    assert form.spec().options["lr"] == 0.05


@pytest.mark.parametrize("how", ["button", "menu"])
def test_train_without_data_trains_what_the_form_shows_after_the_demo_load(make_window, qtbot, monkeypatch, how):
    w = make_window(how)
    _form_not_the_demos(w)
    got = _submitted(w, monkeypatch)
    assert w.current_dataset is None
    if how == "button":
        qtbot.mouseClick(w.model_form.train_button, Qt.LeftButton)
    else:   # Train > Start job, Ctrl+T
        assert w.menus.act_train.shortcut().toString() == "Ctrl+T"
        w.menus.act_train.trigger()
    assert w.current_dataset is not None and w.current_dataset.is_demo
    assert len(got) == 1
    shown = w.model_form.spec()
    assert {k: shown.to_dict()[k] for k in DEMO_FORM} == DEMO_FORM          # the form shows the demo's settings
    job = got[0]
    assert job.spec == shown.to_dict()                                       # ... and the job trains with them
    assert (job.spec["lr"], job.spec["cooc_steps"], job.spec["tol"]) == (2e-4, 60000, 0.0)
    assert (job.model.n_states, job.spec["l"]) == (5, 3)


def test_a_given_spec_is_kept_and_a_second_train_reads_the_form_as_it_is(make_window, qtbot, monkeypatch):
    """A spec given by code (not the form's) is what its job trains, demo or not; once data are open the
    form's values as they are now are used (nothing is loaded, nothing replaced)."""
    w = make_window("a")
    _form_not_the_demos(w)
    got = _submitted(w, monkeypatch)
    mine = ModelSpec.make(model_type="standard", n=3, n_iter=7, tol=0.0)
    w.jobs_ctl.start_training(mine)
    assert w.current_dataset.is_demo and got[0].spec == mine.to_dict()
    w.model_form.set_spec(ModelSpec.make(model_type="dense_cooc", n=4, l=2, lr=0.01, cooc_steps=500, tol=1e-7))
    qtbot.mouseClick(w.model_form.train_button, Qt.LeftButton)
    assert got[1].spec["lr"] == 0.01 and got[1].spec["cooc_steps"] == 500



@pytest.mark.parametrize("how", ["button", "menu"])
def test_run_sweep_without_data_runs_the_grid_the_form_shows_after_the_demo_load(make_window, qtbot, monkeypatch,
                                                                                  how):
    """Review rev24 item 4: Run sweep with no data read the grid (and so l) from the form before the demo's
    settings were swapped in: a standard HMM at l=7 over "n=2,3" ran dense_cooc (2, 7), (3, 7), a grid the
    form then refused ("l=... is missing").  The form is now read after the demo loads: a grid it refuses
    runs nothing (the form says why); one it takes runs the demo's model with the grid's l."""
    w = make_window(how)
    form = w.model_form
    form.set_spec(ModelSpec.make(model_type="standard", n=4, l=7, n_iter=5, tol=0.0))
    form.sweep_grid.setText("n=2,3")
    form.repeats.setValue(1)
    assert form.sweep_button.isEnabled()          # a standard HMM's grid needs only n
    got = _submitted(w, monkeypatch)

    def run_sweep():
        if how == "button":
            qtbot.mouseClick(form.sweep_button, Qt.LeftButton)
        else:   # Train > Run sweep, Ctrl+Shift+T
            w.menus.act_sweep.trigger()
    run_sweep()
    assert w.current_dataset is not None and w.current_dataset.is_demo
    shown = form.spec()
    assert shown.model_type == DEMO_FORM["model_type"] and shown.l == DEMO_FORM["l"]
    assert got == [] and "l=... is missing" in form.sweep_info.text() and not form.sweep_button.isEnabled()
    assert any("Run sweep" in t and "not valid" in t for _, t in w.log_panel.lines)
    form.sweep_grid.setText("n=2,3 l=2")
    run_sweep()
    assert sorted((j.spec["model_type"], j.spec["n"], j.spec["l"]) for j in got) == \
        [(DEMO_FORM["model_type"], 2, 2), (DEMO_FORM["model_type"], 3, 2)]
    assert all(j.spec["lr"] == DEMO_FORM["lr"] for j in got)

"""Training runs on a Dask cluster (densehmm_core.experiments.remote, issue 17's app part):
a remote run gives the numbers of the same run trained here, saves its model to a shared
folder when asked, and Cancel stops it (its future and its worker's fit)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from densehmm_core.engine.sampling import sample_sequences  # noqa: E402
from densehmm_core.experiments.dask_executor import SchedulerError  # noqa: E402
from densehmm_core.experiments.remote import RemoteRun, RemoteSweep, train_run  # noqa: E402
from densehmm_core.metrics import normalized_nll  # noqa: E402
from densehmm_core.standard import StandardHMM  # noqa: E402
from densehmm_core.synthetic import random_hmm  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                 dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    yield c
    c.close()


@pytest.fixture(scope="module")
def data():
    truth = random_hmm(3, 5, 0.5, 7)
    seqs, _ = sample_sequences(*truth, 16, 40, 8)
    return seqs[:10], seqs[10:]


ARGS = {}


def _run(run_id, n, seed, n_iter=6, tol=1e-4):
    ARGS[run_id] = dict(n_states=n, n_symbols=5, n_iter=n_iter, tol=tol, seed=seed)
    m = StandardHMM(**ARGS[run_id])
    return RemoteRun(run_id, m.kind, m.get_config(), label=f"n={n}")


def test_remote_runs_give_the_numbers_of_a_local_fit_and_save_their_model(cluster, data, tmp_path):
    train, test = data
    runs = [_run("a", 2, 1), _run("b", 3, 2), _run("c", 4, 3)]
    seen, progress = [], []
    sweep = RemoteSweep(runs, train, test, scheduler=cluster.scheduler_address, save_dir=str(tmp_path),
                        on_result=lambda r: seen.append((r.run_id, threading.current_thread().name)),
                        on_progress=lambda rid, info: progress.append((rid, info["state"])))
    sweep.start()
    try:
        assert sweep.wait(120)
        results = {r.run_id: r for r in sweep.poll()}
    finally:
        sweep.close()
    assert sorted(results) == ["a", "b", "c"] and sorted(r for r, _ in seen) == ["a", "b", "c"]
    assert all(name != threading.main_thread().name for _, name in seen)  # callbacks: Dask's threads
    assert {rid for rid, state in progress if state == "running"} == {"a", "b", "c"}
    workers = set()
    for run in runs:
        res = results[run.run_id]
        assert res.state == "finished" and res.error == ""
        row = res.row
        # oracle: the same model trained in this process, scored here
        local = StandardHMM(**ARGS[run.run_id]).fit(train, eval_data=test)
        assert row["train_nll"] == pytest.approx(normalized_nll(local, train), rel=1e-12)
        assert row["test_nll"] == pytest.approx(normalized_nll(local, test), rel=1e-12)
        assert row["mad"] == pytest.approx(local.history_[-1]["mad"], rel=1e-12)
        assert row["iterations"] == local.history_[-1]["step"] and row["stop"] == local.stop_reason_
        assert row["parameters"] == local.n_parameters and row["n_states"] == ARGS[run.run_id]["n_states"]
        assert [h["train_ll"] for h in res.history] == pytest.approx([h["train_ll"] for h in local.history_])
        # and the in-process task function gives the same row
        direct = train_run(run.kind, run.config, {"train": train, "test": test})["row"]
        for k in ("train_nll", "test_nll", "mad", "iterations", "stop", "parameters"):
            assert direct[k] == row[k]
        # the model saved by the worker on the shared folder is the fitted one
        from densehmm_core.modelfile import load_model
        saved = load_model(row["model_path"])
        np.testing.assert_array_equal(saved.transmat_, local.transmat_)
        assert normalized_nll(saved, test) == pytest.approx(row["test_nll"], rel=1e-12)
        workers.add(row["worker"])
    assert workers <= set(cluster.scheduler_info["workers"]) and all(workers)


def test_cancel_stops_a_running_run_and_a_queued_one(cluster, data):
    train, test = data
    # Baum-Welch that never converges (tol below any change): runs until cancelled
    runs = [_run("long1", 3, 1, n_iter=10 ** 7, tol=-np.inf), _run("long2", 3, 2, n_iter=10 ** 7, tol=-np.inf),
            _run("queued", 3, 3, n_iter=10 ** 7, tol=-np.inf)]
    running = threading.Event()
    sweep = RemoteSweep(runs, train, test, scheduler=cluster.scheduler_address,
                        on_progress=lambda rid, info: rid == "long1" and info["state"] == "progress" and running.set())
    sweep.start()
    client = distributed.Client(cluster.scheduler_address, set_as_default=False)
    try:
        assert running.wait(60)  # long1 reports progress: it is running on a worker
        assert sweep.cancel("long1") and sweep.cancel("queued")
        assert not sweep.cancel("long1")  # already ended
        assert sweep.state("long1") == "cancelled" and sweep.state("queued") == "cancelled"
        assert sweep.state("long2") == "pending"

        def executing(dask_worker):
            return dask_worker.state.executing_count
        # the cancelled fit stops on its worker (the cancel event), only long2 still computes
        deadline = time.monotonic() + 20
        while sum(client.run(executing).values()) != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(client.run(executing).values()) == 1
        sweep.cancel_all()
        while sum(client.run(executing).values()) != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(client.run(executing).values()) == 0
        states = {r.run_id: r.state for r in sweep.poll()}
        assert states == {"long1": "cancelled", "queued": "cancelled", "long2": "cancelled"}
        assert sweep.done
    finally:
        client.close()
        sweep.close()


def test_a_bad_scheduler_is_one_line(data, monkeypatch):
    monkeypatch.setenv("DENSEHMM_DASK_TIMEOUT", "1")
    sweep = RemoteSweep([_run("a", 2, 1)], *data, scheduler="tcp://127.0.0.1:9")
    with pytest.raises(SchedulerError) as info:
        sweep.start()
    assert str(info.value).startswith("cannot connect to the Dask scheduler at tcp://127.0.0.1:9")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="unique"):
        RemoteSweep([_run("a", 2, 1), _run("a", 3, 1)], *data)


def test_a_sweep_closed_while_connecting_submits_nothing(cluster, data):
    sweep = RemoteSweep([_run("a", 2, 1)], *data, scheduler=cluster.scheduler_address)
    sweep.close()            # e.g. the app quit while the connection was being made
    sweep.start()
    assert sweep.client is None and sweep.poll() == [] and sweep.state("a") == "pending"
    assert not any(str(k).startswith(f"densehmm-{sweep.sweep_id}") for k in cluster.scheduler.tasks)


def test_a_cancel_racing_the_close_of_the_client_is_a_cancel_not_an_error(monkeypatch):
    """The app cancels runs cancelled while connecting as soon as the sweep has started; once, the
    close the first cancel's result set off (another thread) closed the client in between, and the
    next cancel raised distributed's ClosedClientError in the GUI thread.  A cancel that fails because
    close() is closing the client ends the run as cancelled (close cancels what is left anyway);
    while the sweep is not closing, the same failure is raised."""
    class ClosedClient:
        def cancel(self, futures):
            raise distributed.client.ClosedClientError("Client is closed. Can't send cancel-keys message.")

    class Future:
        key = "densehmm-test-job1"

    class Event:                     # the run's cancel flag on the cluster (set before the cancel)
        def __init__(self, name, client=None):
            pass

        def set(self):
            pass
    monkeypatch.setattr(distributed, "Event", Event)

    seqs = [np.array([0, 1, 0, 1])]
    for closing in (True, False):
        results = []
        sweep = RemoteSweep([RemoteRun("job1", "standard", StandardHMM(2, n_symbols=2).get_config())], seqs,
                            on_result=results.append)
        sweep.client, sweep._futures["job1"], sweep._closed = ClosedClient(), Future(), closing
        if closing:
            assert sweep.cancel("job1") is True
            assert [(r.run_id, r.state) for r in results] == [("job1", "cancelled")]
        else:
            with pytest.raises(distributed.client.ClosedClientError):
                sweep.cancel("job1")
            assert results == []

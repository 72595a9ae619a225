"""Tests of dmlcore.jobs: background fits, progress, cancellation, isolation and fairness."""

import logging
import threading
import time

import pytest

from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.jobs import MAX_LOSS_POINTS, JobRegistry
from dmlcore.store import RunStore

TIMEOUT = 20


@pytest.fixture
def registry():
    jobs = JobRegistry(workers=1)
    yield jobs
    jobs.close()


@pytest.fixture(scope="module")
def sim():
    return simulate_demand_iv(n=300)


def blocking_task(gate: threading.Event, started: list | None = None, name: str = ""):
    """A fake fit that reports half-way progress, then waits for ``gate``."""
    def task(report, should_stop):
        if started is not None:
            started.append(name)
        report({"type": "stage", "stage": "outcome model s(c)", "fold": 0, "progress": 0.0})
        report({"type": "loss", "model": "s", "fold": 0, "epoch": 0, "train": 1.0, "val": 1.5, "progress": 0.5})
        assert gate.wait(TIMEOUT)
        return name
    return task


def wait_for(predicate, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_fit_runs_in_the_background_and_is_saved(tmp_path, sim):
    store = RunStore(tmp_path / "runs.sqlite3")
    jobs = JobRegistry(store=store)
    try:
        job_id = jobs.submit_fit("alice", "tiny", data=sim.data, method="ce-dml-cmr", truth=sim.truth,
                                 dataset="demand-iv", learner="nn", epochs=2)
        assert jobs.get(job_id, "alice").status in ("queued", "running")
        snap = jobs.wait(job_id, "alice", TIMEOUT)
    finally:
        jobs.close()
    assert snap.status == "done" and snap.error is None and snap.progress == 1.0
    assert snap.stage == "done" and snap.started <= snap.finished
    assert set(snap.losses) == {"s", "g", "f"}
    assert snap.losses["f"][None]["epoch"] == [0, 1]
    assert snap.run.record["dataset"] == "demand-iv"
    stored = store.load(snap.run_id, "alice")
    assert stored.label == "tiny" and stored.record["mse"] == pytest.approx(snap.run.record["mse"])


def test_progress_stage_and_losses_are_visible_while_running(registry):
    gate = threading.Event()
    job_id = registry.submit("alice", "fake", blocking_task(gate))
    wait_for(lambda: registry.get(job_id, "alice").progress == 0.5)
    snap = registry.get(job_id, "alice")
    assert (snap.status, snap.stage, snap.fold) == ("running", "outcome model s(c)", 0)
    assert snap.losses == {"s": {0: {"epoch": [0], "train": [1.0], "val": [1.5]}}}
    assert snap.active and not snap.ended
    gate.set()
    assert registry.wait(job_id, "alice", TIMEOUT).status == "done"


def test_loss_series_are_thinned_to_a_bounded_size(registry):
    def chatty(report, should_stop):
        for epoch in range(10 * MAX_LOSS_POINTS):
            report({"type": "loss", "model": "f", "fold": None, "epoch": epoch, "train": 1.0, "val": None,
                    "progress": epoch / (10 * MAX_LOSS_POINTS)})
        return None

    job_id = registry.submit("alice", "chatty", chatty)
    epochs = registry.wait(job_id, "alice", TIMEOUT).losses["f"][None]["epoch"]
    assert MAX_LOSS_POINTS // 2 <= len(epochs) <= MAX_LOSS_POINTS
    assert epochs[0] == 0 and len({b - a for a, b in zip(epochs, epochs[1:])}) == 1


def test_cancel_a_queued_job_never_starts_it(registry):
    gate, started = threading.Event(), []
    first = registry.submit("alice", "first", blocking_task(gate, started, "first"))
    second = registry.submit("alice", "second", blocking_task(gate, started, "second"))
    wait_for(lambda: registry.get(first, "alice").status == "running")
    assert registry.cancel(second, "alice") is True
    assert registry.get(second, "alice").status == "cancelled"
    gate.set()
    assert registry.wait(first, "alice", TIMEOUT).status == "done"
    time.sleep(0.05)
    assert started == ["first"]
    assert registry.cancel(second, "alice") is False


def test_cancel_a_running_fit_stops_it_between_epochs(registry, sim):
    job_id = registry.submit_fit("alice", "long", data=sim.data, method="ce-dml-cmr", truth=sim.truth,
                                 learner="nn", epochs=100000)
    wait_for(lambda: registry.get(job_id, "alice").losses)
    assert registry.cancel(job_id, "alice") is True
    assert registry.get(job_id, "alice").cancel_requested
    snap = registry.wait(job_id, "alice", TIMEOUT)
    assert snap.status == "cancelled" and snap.run is None and snap.error is None


def test_a_failing_job_keeps_its_message_and_spares_the_others(registry, caplog):
    def crash(report, should_stop):
        raise KeyError("boom")

    def bad_input(report, should_stop):
        raise DMLCoreError("Column 'price' is missing.")

    def diverge(report, should_stop):
        raise FitDiverged("The second-stage model f diverged.")

    with caplog.at_level(logging.ERROR, logger="dmlcore.jobs"):
        ids = [registry.submit("alice", fn.__name__, fn) for fn in (crash, bad_input, diverge)]
        ok = registry.submit("alice", "ok", lambda report, should_stop: "fine")
        snaps = [registry.wait(job_id, "alice", TIMEOUT) for job_id in ids]
        assert registry.wait(ok, "alice", TIMEOUT).status == "done"
    assert [s.status for s in snaps] == ["failed"] * 3
    assert [s.error for s in snaps] == ["unexpected KeyError: 'boom'", "Column 'price' is missing.",
                                       "The second-stage model f diverged."]
    assert "Traceback" in caplog.text and "KeyError: 'boom'" in caplog.text


def test_a_task_raising_fit_cancelled_ends_cancelled(registry):
    def cancelled(report, should_stop):
        raise FitCancelled("The fit was cancelled.")

    assert registry.wait(registry.submit("alice", "c", cancelled), "alice", TIMEOUT).status == "cancelled"


def test_owners_never_see_each_others_jobs(registry):
    gate = threading.Event()
    job_id = registry.submit("alice", "private", blocking_task(gate))
    assert registry.get(job_id, "bob") is None
    assert registry.list("bob") == []
    assert registry.cancel(job_id, "bob") is False
    assert registry.wait(job_id, "bob", 0.01) is None
    assert [s.id for s in registry.list("alice")] == [job_id]
    gate.set()
    registry.wait(job_id, "alice", TIMEOUT)


def test_list_is_newest_first(registry):
    ids = [registry.submit("alice", str(i), lambda report, should_stop: None) for i in range(3)]
    assert [s.id for s in registry.list("alice")] == ids[::-1]


def test_round_robin_across_owners(registry):
    gate, started = threading.Event(), []
    a_ids = [registry.submit("alice", f"a{i}", blocking_task(gate, started, f"a{i}")) for i in range(5)]
    wait_for(lambda: started == ["a0"])
    b_id = registry.submit("bob", "b0", blocking_task(gate, started, "b0"))
    gate.set()
    for job_id in a_ids:
        registry.wait(job_id, "alice", TIMEOUT)
    registry.wait(b_id, "bob", TIMEOUT)
    assert started == ["a0", "a1", "b0", "a2", "a3", "a4"]


def test_pending_jobs_per_owner_are_limited():
    jobs = JobRegistry(max_pending_per_owner=2)
    gate = threading.Event()
    try:
        jobs.submit("alice", "1", blocking_task(gate))
        jobs.submit("alice", "2", blocking_task(gate))
        with pytest.raises(DMLCoreError, match="2 runs queued or running"):
            jobs.submit("alice", "3", blocking_task(gate))
        jobs.submit("bob", "1", blocking_task(gate))
    finally:
        gate.set()
        jobs.close()


def test_old_finished_jobs_are_forgotten():
    jobs = JobRegistry(max_finished_per_owner=2)
    try:
        ids = [jobs.submit("alice", str(i), lambda report, should_stop: None) for i in range(4)]
        jobs.wait(ids[-1], "alice", TIMEOUT)
        assert [s.id for s in jobs.list("alice")] == ids[:1:-1]
    finally:
        jobs.close()


def test_submit_fit_rejects_bad_arguments_at_once(registry, sim):
    with pytest.raises(DMLCoreError, match="Unknown method"):
        registry.submit_fit("alice", "x", data=sim.data, method="magic")
    with pytest.raises(TypeError):
        registry.submit_fit("alice", "x", data=sim.data, method="2sls", epoch=3)
    assert registry.list("alice") == []

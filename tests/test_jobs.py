"""Tests of dmlcore.jobs: background fits, progress, cancellation, isolation, the fair queue and
its estimates, the queue kept across restarts, and fits in worker processes."""

import logging
import pickle
import sqlite3
import threading
import time

import pytest

from dmlcore.data.registry import load_dataset
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.jobs import MAX_ATTEMPTS, MAX_LOSS_POINTS, FairQueue, FitSpec, JobFile, JobRegistry
from dmlcore.runs import fit_run
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


def start_order(jobs: JobRegistry, batches: list[tuple[str, list[float]]]) -> list[str]:
    """The order in which queued jobs start: one worker, held by a blocker while all are queued;
    ``batches``: (owner, the estimated cost of each of its jobs)."""
    gate, started = threading.Event(), []
    blocker = jobs.submit("zed", "blocker", blocking_task(gate))
    wait_for(lambda: jobs.get(blocker, "zed").status == "running")
    ids = [(owner, jobs.submit(owner, f"{owner[0]}{i}", _recorder(started, f"{owner[0]}{i}"), cost=cost))
           for owner, costs in batches for i, cost in enumerate(costs)]
    gate.set()
    for owner, job_id in ids:
        assert jobs.wait(job_id, owner, TIMEOUT).status == "done"
    return started


def _recorder(started: list, name: str):
    def task(report, should_stop):
        started.append(name)
    return task


def test_jobs_of_unknown_cost_take_turns_one_by_one(registry):
    assert start_order(registry, [("alice", [None] * 4), ("bob", [None] * 2)]) == \
        ["a0", "b0", "a1", "b1", "a2", "a3"]


def test_small_batches_run_whole_in_the_order_they_came():
    jobs = JobRegistry(quantum=10)
    try:
        order = start_order(jobs, [("alice", [2, 2, 3]), ("bob", [2, 2, 3]), ("carol", [2, 2, 3])])
    finally:
        jobs.close()
    assert order == ["a0", "a1", "a2", "b0", "b1", "b2", "c0", "c1", "c2"]


def test_a_long_batch_yields_to_others_after_each_quantum():
    jobs = JobRegistry(quantum=10)
    try:
        order = start_order(jobs, [("alice", [6] * 5), ("bob", [2, 2, 2])])
    finally:
        jobs.close()
    assert order == ["a0", "b0", "b1", "b2", "a1", "a2", "a3", "a4"]


def test_fair_queue_order_is_the_order_jobs_start_and_leaves_the_queue_as_it_was():
    class Job:
        def __init__(self, owner, name, cost):
            self.owner, self.name, self.cost = owner, name, cost

    queue = FairQueue(quantum=10)
    for owner, costs in (("a", [6, 6, 25]), ("b", [1, 1]), ("c", [12])):
        for i, cost in enumerate(costs):
            queue.push(Job(owner, f"{owner}{i}", cost))
    planned = [job.name for job in queue.order()]
    assert planned == [job.name for job in queue.order()]
    popped = []
    while queue:
        popped.append(queue.pop().name)
    assert popped == planned == ["a0", "b0", "b1", "a1", "c0", "a2"]
    with pytest.raises(ValueError):
        FairQueue(quantum=0)


def test_queued_jobs_know_their_place_and_when_they_start():
    jobs = JobRegistry(quantum=100)
    gate = threading.Event()
    try:
        blocker = jobs.submit("zed", "blocker", lambda report, should_stop: gate.wait(TIMEOUT), cost=5)
        wait_for(lambda: jobs.get(blocker, "zed").status == "running")
        mine = [jobs.submit("alice", f"a{i}", lambda report, should_stop: None, cost=2) for i in range(3)]
        theirs = jobs.submit("bob", "b0", lambda report, should_stop: None, cost=4)
        snaps = [jobs.get(job_id, "alice") for job_id in mine] + [jobs.get(theirs, "bob")]
        running = jobs.get(blocker, "zed")
        assert running.position is None and running.ends_in == pytest.approx(5, abs=1)
        assert [s.position for s in snaps] == [1, 2, 3, 4]
        assert [s.cost for s in snaps] == [2, 2, 2, 4]
        assert [s.starts_in for s in snaps] == pytest.approx([5, 7, 9, 11], abs=1)
        assert [s.ends_in - s.starts_in for s in snaps] == pytest.approx([2, 2, 2, 4])
        jobs.cancel(mine[0], "alice")                     # the others move up
        assert jobs.get(theirs, "bob").position == 3
        assert jobs.get(theirs, "bob").starts_in == pytest.approx(9, abs=1)
    finally:
        gate.set()
        jobs.close()


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
    with pytest.raises(DMLCoreError, match="Unknown fit setting.*'epoch'"):
        registry.submit_fit("alice", "x", data=sim.data, method="2sls", epoch=3)
    with pytest.raises(DMLCoreError, match="epochs=3 applies to .* not to 2sls"):     # one it does not read
        registry.submit_fit("alice", "x", data=sim.data, method="2sls", epochs=3)
    assert registry.list("alice") == []


# ------------------------------------------------------------------ the queue across restarts
@pytest.fixture(scope="module")
def loaded():
    return load_dataset("demand-iv", n=300)


def fit_of(loaded, method="2sls", **kwargs) -> dict:
    return dict(data=loaded.data, method=method, truth=loaded.truth, dataset="demand-iv",
                data_params=loaded.params, **kwargs)


def test_queued_fits_survive_a_restart_and_end_as_a_fit_in_place_would(tmp_path, loaded):
    path, store = tmp_path / "queue.sqlite3", RunStore(tmp_path / "runs.sqlite3")
    first, gate = JobRegistry(store=store, job_file=path), threading.Event()
    try:
        blocker = first.submit("zed", "blocker", blocking_task(gate))
        wait_for(lambda: first.get(blocker, "zed").status == "running")
        ids = [first.submit_fit("alice", f"#1 {m}", **fit_of(loaded, m, **({} if m == "2sls" else {"learner": "linear"})))
               for m in ("2sls", "naive")]
    finally:
        first.close()            # the server stops with both fits still queued
        gate.set()
    second = JobRegistry(store=store, job_file=path)
    try:
        snaps = [second.wait(job_id, "alice", TIMEOUT) for job_id in ids]
        assert second.get(blocker, "zed") is None                 # a task of the process is not kept
    finally:
        second.close()
    assert [(s.status, s.restored, s.label) for s in snaps] == [("done", True, "#1 2sls"), ("done", True, "#1 naive")]
    direct = fit_run(loaded.data, "naive", truth=loaded.truth, learner="linear")
    assert snaps[1].run.record["mse"] == pytest.approx(direct.record["mse"])   # the truth was simulated again
    assert {r["label"] for r in store.list("alice")} == {"#1 2sls", "#1 naive"}
    third = JobRegistry(store=store, job_file=path)            # finished jobs come back as pointers
    try:
        back = third.get(ids[1], "alice")
        assert back.status == "done" and back.run is None and back.run_id == snaps[1].run_id
        assert third.dismiss(ids, "alice") == 2 and third.list("alice") == []
    finally:
        third.close()
    assert JobFile(path).rows() == []


def put_row(path, loaded, job_id: str, status: str, attempts: int = 0, spec: bytes | None = None):
    JobFile(path)
    blob = spec if spec is not None else pickle.dumps(FitSpec(loaded.data, "2sls", "demand-iv", {}))
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO jobs (id, owner, label, seq, created, status, cost, attempts, spec) "
                     "VALUES (?, 'alice', ?, ?, ?, ?, 1.0, ?, ?)",
                     (job_id, job_id, len(job_id), time.time(), status, attempts, blob))


def test_a_restart_names_each_fit_it_cannot_take_up(tmp_path, loaded):
    path = tmp_path / "queue.sqlite3"
    put_row(path, loaded, "a" * 32, "running", attempts=0)               # interrupted once: runs again
    put_row(path, loaded, "b" * 32, "running", attempts=MAX_ATTEMPTS)    # one restart too many
    put_row(path, loaded, "c" * 32, "queued", spec=b"not a fit")          # unreadable
    jobs = JobRegistry(job_file=path)
    try:
        again, tired, broken = (jobs.wait(job_id, "alice", TIMEOUT) for job_id in ("a" * 32, "b" * 32, "c" * 32))
    finally:
        jobs.close()
    assert again.status == "done" and again.restored and again.run.record["method"] == "2sls"
    assert tired.status == "failed" and f"interrupted by {MAX_ATTEMPTS + 1} server restarts" in tired.error
    assert broken.status == "failed" and broken.error.startswith("Lost in a server restart")
    assert "Start it again" in tired.error and "Start it again" in broken.error


def test_a_fit_with_a_truth_to_keep_needs_the_data_parameters(tmp_path, loaded):
    jobs = JobRegistry(job_file=tmp_path / "queue.sqlite3")
    try:
        with pytest.raises(DMLCoreError, match="data_params"):
            jobs.submit_fit("alice", "x", data=loaded.data, method="2sls", truth=loaded.truth)
    finally:
        jobs.close()


# ------------------------------------------------------------------ fits in worker processes
@pytest.fixture(scope="module")
def process_jobs(tmp_path_factory):
    from dmlcore.executors import get_executor

    home = tmp_path_factory.mktemp("process_jobs")
    jobs = JobRegistry(workers=2, store=RunStore(home / "runs.sqlite3"), executor=get_executor("local", jobs=2),
                       job_file=home / "queue.sqlite3")
    yield jobs
    jobs.close()


def test_a_fit_in_a_worker_process_streams_its_progress_and_comes_back_whole(process_jobs, loaded):
    job_id = process_jobs.submit_fit("alice", "#1 CE-DML-CMR", **fit_of(loaded, "ce-dml-cmr", learner="nn",
                                                                         epochs=3))
    snap = process_jobs.wait(job_id, "alice", 120)
    assert snap.status == "done" and snap.error is None, snap.error
    assert set(snap.losses) == {"s", "g", "f"} and snap.losses["f"][None]["epoch"] == [0, 1, 2]
    assert snap.stage == "done" and snap.progress == 1.0
    assert snap.run.data is loaded.data and snap.run.record["dataset"] == "demand-iv"
    assert snap.run.record["mse"] is not None and len(snap.run.curve()) > 0
    stored = process_jobs.store.load(snap.run_id, "alice")
    assert stored.record["mse"] == pytest.approx(snap.run.record["mse"])


def test_the_same_fit_gives_the_same_numbers_in_a_worker_and_in_place(process_jobs, loaded):
    job_id = process_jobs.submit_fit("alice", "naive", **fit_of(loaded, "naive", learner="gb", seed=3))
    remote = process_jobs.wait(job_id, "alice", 120)
    local = fit_run(loaded.data, "naive", truth=loaded.truth, learner="gb", seed=3)
    assert remote.status == "done", remote.error
    assert remote.run.record["mse"] == pytest.approx(local.record["mse"], rel=1e-9)


def test_a_cancel_reaches_the_fit_in_its_worker_process(process_jobs, loaded):
    job_id = process_jobs.submit_fit("bob", "long", **fit_of(loaded, "ce-dml-cmr", learner="nn", epochs=100000))
    wait_for(lambda: process_jobs.get(job_id, "bob").losses, timeout=120)
    assert process_jobs.get(job_id, "alice") is None              # nor can anyone else see it
    assert process_jobs.cancel(job_id, "bob")
    started = time.monotonic()
    snap = process_jobs.wait(job_id, "bob", 60)
    assert snap.status == "cancelled" and snap.run is None
    assert time.monotonic() - started < 30                          # stopped, not trained to the end


def test_a_failing_fit_in_a_worker_keeps_its_message(process_jobs, loaded):
    job_id = process_jobs.submit_fit("alice", "bad", **fit_of(loaded, "ce-dml-cmr", learner="nn", epochs=5, outcome_learner="nn", sampler="nn",
                                                               nuisance_params={"lr": 1e6}))
    snap = process_jobs.wait(job_id, "alice", 120)
    assert snap.status == "failed" and "diverged" in snap.error


def test_fits_on_a_local_ray_instance_stream_progress_and_give_the_same_numbers(tmp_path, loaded):
    pytest.importorskip("ray")
    from dmlcore.executors import get_executor

    jobs = JobRegistry(workers=2, store=RunStore(tmp_path / "runs.sqlite3"), executor=get_executor("ray", jobs=2))
    try:
        job_id = jobs.submit_fit("alice", "ray", **fit_of(loaded, "ce-dml-cmr", learner="nn", epochs=3))
        snap = jobs.wait(job_id, "alice", 300)
    finally:
        jobs.close()
    local = fit_run(loaded.data, "ce-dml-cmr", truth=loaded.truth, learner="nn", epochs=3)
    assert snap.status == "done", snap.error
    assert set(snap.losses) == {"s", "g", "f"}
    assert snap.run.record["mse"] == pytest.approx(local.record["mse"], rel=1e-6)

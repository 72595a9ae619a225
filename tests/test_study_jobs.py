"""Studies in the background of a server (dmlcore.study_jobs): their fits go through the server's
fair queue a few at a time, a cancel drops what is queued, a rerun completes the study, and the
numbers are those of ``run_study`` run directly."""

import threading
import time

import pytest

from dmlcore.jobs import JobRegistry
from dmlcore.store import RunStore
from dmlcore.studies import run_study
from dmlcore.study_jobs import IN_FLIGHT_PER_WORKER, Studies

TIMEOUT = 120


def grid(seeds: str, methods=("2sls",)) -> dict:
    return {"dataset": "demand-iv", "data": {"n": [200]}, "methods": list(methods), "seeds": seeds,
            "learner": "linear"}


def wait(study, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while study.status == "running":
        assert time.monotonic() < deadline, "the study did not end"
        time.sleep(0.05)
    return study


@pytest.fixture
def server(tmp_path):
    jobs = JobRegistry(workers=1, store=RunStore(tmp_path / "runs.sqlite3"))
    yield jobs, Studies(jobs)
    jobs.close()


def test_a_study_queues_a_few_fits_at_a_time_so_others_get_their_turn(server):
    jobs, studies = server
    seen, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            seen.append(sum(s.group is not None and s.active for s in jobs.list("alice")))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    study = studies.start("alice", grid("0-59"), "long")
    while study.ran < 1:                                    # the study is under way (fits take ~10 ms)
        time.sleep(0.005)
    bob = jobs.submit("bob", "demo", lambda report, should_stop: None, cost=1)
    assert jobs.wait(bob, "bob", TIMEOUT).status == "done"
    ran_before_bob = study.ran
    wait(study)
    stop.set()
    watcher.join()
    assert study.status == "done" and study.ran == 60 and study.error is None
    assert max(seen) <= IN_FLIGHT_PER_WORKER * jobs.workers
    assert ran_before_bob < 60                              # bob did not wait for the whole study
    assert jobs.list("alice") == []                         # the study's fits leave no jobs behind
    assert len(study.result().fits) == 60


def test_a_cancelled_study_stops_queueing_and_a_rerun_completes_it(server):
    jobs, studies = server
    study = studies.start("alice", grid("0-29", ("naive",)), "to cancel")
    while study.ran < 1:
        time.sleep(0.01)
    assert studies.cancel(study.id, "alice") and not studies.cancel(study.id, "bob")
    wait(study)
    assert study.status == "cancelled" and study.ran < 30
    fits = study.result().fits
    assert set(fits["status"]) == {"done"} and len(fits) == study.ran
    again = wait(studies.start("alice", grid("0-29", ("naive",)), "again"))
    assert again.status == "done" and again.reused == study.ran and again.ran == 30 - study.ran
    assert studies.get(study.id, "bob") is None and studies.latest("alice") is again


def test_a_study_in_worker_processes_gives_the_numbers_of_run_study(tmp_path):
    from dmlcore.executors import get_executor

    jobs = JobRegistry(workers=2, store=RunStore(tmp_path / "runs.sqlite3"), executor=get_executor("local", jobs=2))
    try:
        study = wait(Studies(jobs).start("alice", grid("0-1", ("2sls", "naive")), "processes"))
    finally:
        jobs.close()
    direct = run_study(grid("0-1", ("2sls", "naive")), keep=False)
    assert study.status == "done", study.error
    mine = study.result().fits.sort_values(["method", "seed"])["mse"].tolist()
    theirs = direct.fits.sort_values(["method", "seed"])["mse"].tolist()
    assert mine == pytest.approx(theirs, rel=1e-9)


def test_a_running_study_shows_its_fits_in_the_grids_order_however_they_finish():
    from dmlcore.study_jobs import StudyState

    direct = run_study(grid("0-1", ("2sls", "regression")), keep=False)
    rows = direct.fits.drop(columns="arm").to_dict("records")
    state = StudyState("id", "alice", "", None, len(rows), 0, len(rows), None, 1)
    state._order = {row["key"]: i for i, row in enumerate(rows)}
    state._rows = rows[::-1]                                  # the last fit of the grid finished first
    result = state.result()
    assert result.fits["key"].tolist() == [row["key"] for row in rows]
    assert (result.paired["arm_a"].iloc[0], result.paired["arm_b"].iloc[0]) == ("2sls", "regression")

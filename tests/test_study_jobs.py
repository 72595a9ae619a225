"""Studies in the background of a server (dmlcore.jobs.study_jobs): their fits go through the server's
fair queue a few at a time, a cancel drops what is queued, a rerun completes the study, and the
numbers are those of ``run_study`` run directly."""

import html
import io
import threading
import time
import zipfile

import pytest

from dmlcore.jobs import JobRegistry
from dmlcore.store import RunStore
from dmlcore.studies import run_study
from dmlcore.studies.report import report_html
from dmlcore.jobs.study_jobs import IN_FLIGHT_PER_WORKER, Studies

TIMEOUT = 120


def grid(seeds: str, methods=("2sls",)) -> dict:
    return {"dataset": "demand-iv", "data": {"n": [200]}, "methods": list(methods), "seeds": seeds,
            **({"learner": "linear"} if set(methods) - {"2sls"} else {})}      # 2SLS reads no learner


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
    result = study.result()                                  # run_study's own: the cancelled fits are rows
    fits = result.fits
    assert len(fits) == 30 and (fits["status"] == "done").sum() == study.ran
    assert (fits["status"] == "cancelled").sum() == 30 - study.ran == result.skipped
    assert study.message == result.message == f"{study.ran} of 30 fits run, 0 reused, {30 - study.ran} cancelled"
    again = wait(studies.start("alice", grid("0-29", ("naive",)), "again"))     # continues it: no second entry
    assert again.id == study.id and [s["id"] for s in jobs.store.list_studies("alice")] == [study.id]
    assert again.status == "done" and again.reused == 0 and again.earlier == study.ran and again.ran == 30 - study.ran
    assert again.message == again.result().message == "30 of 30 fits run, 0 reused"
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
    from dmlcore.jobs.study_jobs import StudyState

    direct = run_study(grid("0-1", ("2sls", "regression")), keep=False)
    rows = direct.fits.drop(columns="arm").to_dict("records")
    state = StudyState("id", "alice", "", None, len(rows), 0, len(rows), None, 1)
    state._order = {row["key"]: i for i, row in enumerate(rows)}
    state._rows = rows[::-1]                                  # the last fit of the grid finished first
    result = state.result()
    assert result.fits["key"].tolist() == [row["key"] for row in rows]
    assert (result.paired["arm_a"].iloc[0], result.paired["arm_b"].iloc[0]) == ("2sls", "regression")


def _counts_in(page: str) -> str:
    import re
    return re.search(r"<p id=counts>(.*?)\.</p>", page).group(1)


def test_a_finished_live_study_counts_as_its_fits_csv_on_the_page_and_in_report_html(server, tmp_path, monkeypatch):
    """Reused, run and failed fits: the page's line (StudyState.message), report.html and fits.csv agree."""
    import pandas as pd

    import dmlcore.studies.runner as runner
    from dmlcore.jobs.study_jobs import study_files

    jobs, studies = server
    assert wait(studies.start("alice", grid("0-1", ("2sls", "naive")), "first")).status == "done"
    real = runner.fit_run

    def fail_seed_3(data, method, settings, **kwargs):
        if settings.seed == 3 and method == "naive":
            raise runner.DMLCoreError("the test's failure at seed 3")
        return real(data, method, settings, **kwargs)

    monkeypatch.setattr(runner, "fit_run", fail_seed_3)
    study = wait(studies.start("alice", grid("0-3", ("2sls", "naive")), "second"))
    assert study.status == "done" and study.failed == 1
    result = study.result()
    with zipfile.ZipFile(io.BytesIO(study_files(result, study.spec))) as archive:
        archive.extractall(tmp_path / "files")
    fits = pd.read_csv(tmp_path / "files" / "fits.csv")
    page = html.unescape((tmp_path / "files" / "report.html").read_text())
    run = int(((fits["status"] != "cancelled") & ~fits["reused"]).sum())
    reused, failed = int(fits["reused"].sum()), int((fits["status"] == "failed").sum())
    assert (run, reused, failed, len(fits)) == (4, 4, 1, 8)
    expected = f"{run} of {len(fits)} fits run, {reused} reused, {failed} failed"
    assert study.message == _counts_in(page) == expected                     # the page's line and the report
    assert "1 of 8 fits failed. Reason: the test's failure at seed 3" in page
    assert "still running" not in page

    every = wait(studies.start("alice", {**grid("3", ("naive",)), "data": {"n": [300]}}, "all fail"))
    assert every.status == "failed" and every.result().failure_text().startswith("Every fit failed (1 of 1)")


def test_a_running_study_says_what_is_still_to_run():
    from dmlcore.jobs.study_jobs import StudyState

    direct = run_study(grid("0-1", ("2sls", "regression")), keep=False)
    rows = direct.fits.drop(columns="arm").to_dict("records")
    state = StudyState("id", "alice", "", None, 6, 2, 4, None, 1)
    state._order = {row["key"]: i for i, row in enumerate(rows)}
    state._rows, state.ran = rows[:3], 1
    result = state.result()
    assert result.total == 6 and result.pending == 3
    assert "3 still to run" in result.message and "still running when this report was written" in report_html(result)


def test_the_page_names_where_fits_run_ray_with_its_address(monkeypatch):
    from types import SimpleNamespace

    from dmlcore.jobs.study_jobs import executor_note

    monkeypatch.setenv("DMLCORE_RAY_ADDRESS", "10.0.0.5:6379")
    ray = SimpleNamespace(_executor=SimpleNamespace(kind="ray"), workers=4)
    assert executor_note(ray) == "Ray: the Ray cluster at 10.0.0.5:6379 (4 fits at once)"
    monkeypatch.delenv("DMLCORE_RAY_ADDRESS")
    assert executor_note(ray) == "Ray: a local Ray instance (4 fits at once)"
    local = SimpleNamespace(_executor=SimpleNamespace(kind="local"), workers=2)
    assert executor_note(local) == "local worker processes on this server (2 fits at once)"
    assert executor_note(SimpleNamespace(_executor=None, workers=1)) == "this server's own threads (1 fit at once)"


def test_a_study_killed_mid_way_is_continued_by_the_next_server_and_counts_its_fits_right(tmp_path):
    from dmlcore.studies import load_study

    store = RunStore(tmp_path / "runs.sqlite3")
    wait(Studies(JobRegistry(workers=1, store=store)).start("alice", grid("0-3", ("naive",)), "first"))
    jobs = JobRegistry(workers=1, store=store)
    studies = Studies(jobs)
    study = studies.start("alice", grid("0-19", ("naive",)), "killed")      # seeds 0-3 are stored: reused
    while study.ran < 2:
        time.sleep(0.01)
    studies.close()                               # the server stops mid-study (as a kill leaves it)
    jobs.close()
    wait(study)
    row = {s["id"]: s for s in store.list_studies("alice")}[study.id]
    assert row["status"] == "running" and study.status == "interrupted"          # not shown as finished
    stored_before = len(load_study(study.id, store, "alice").fits)
    assert stored_before < 20
    jobs2 = JobRegistry(workers=1, store=store)
    try:
        again = Studies(jobs2).get(study.id, "alice")        # the new server took it up without a click
        assert again is not None and again.label == "killed"
        wait(again)
    finally:
        jobs2.close()
    assert again.status == "done" and again.reused == 4 and again.earlier == stored_before - 4
    assert again.message == "16 of 20 fits run, 4 reused"
    reopened = load_study(study.id, store, "alice")
    assert reopened.message == "16 of 20 fits run, 4 reused"             # not "0 of 20 run, 20 reused"
    assert {s["id"]: s["status"] for s in store.list_studies("alice")}[study.id] == "done"
    assert len(store.list_studies("alice")) == 2


def test_a_store_made_before_statuses_were_kept_gains_the_columns(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:             # the studies table as released before issue 50
        conn.execute("CREATE TABLE studies (id TEXT PRIMARY KEY, owner TEXT NOT NULL, label TEXT NOT NULL, "
                     "spec TEXT NOT NULL, keys TEXT NOT NULL, created TEXT NOT NULL, created_ts REAL NOT NULL)")
        conn.execute("INSERT INTO studies VALUES ('s1', 'alice', 'old', '{}', '[\"k\"]', 'then', 1.0)")
    store = RunStore(path)
    [row] = store.list_studies("alice")
    assert row["status"] is None and store.load_study("s1")["reused"] is None
    store.set_study_status("s1", "done")
    assert store.list_studies("alice")[0]["status"] == "done"

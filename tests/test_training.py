"""The Train page's words and refresh rate for a session's runs (dashboard/training.py)."""

import time

import pytest

from dashboard import training
from dmlcore.jobs import JobSnapshot
from dmlcore.runs.typed import RunRecord


def snap(status: str, **fields) -> JobSnapshot:
    base = dict(id="x" * 32, owner="o", label="#1 DML-CMR · gb", status=status, progress=0.0, stage="", fold=None,
                losses={}, error=None, run=None, run_id=None, created=time.time(), started=None, finished=None,
                cancel_requested=False)
    return JobSnapshot(**{**base, **fields})


def test_the_page_refreshes_often_while_training_rarely_while_waiting_never_when_idle():
    running, waiting = snap("running"), snap("queued", position=3, starts_in=30.0, ends_in=50.0)
    assert training.poll_seconds([running, waiting]) == training.POLL_RUNNING
    rates = [training.poll_seconds([snap("queued", starts_in=s)]) for s in (3.0, 30.0, 300.0)]
    assert rates == sorted(rates) and rates[0] < rates[-1]                # the longer the wait, the rarer
    assert training.poll_seconds([snap("done"), snap("failed")]) is None
    assert training.poll_seconds([]) is None


def test_a_waiting_run_says_its_place_in_line_and_when_it_should_start_and_end():
    line = training.status_line(snap("queued", position=2, starts_in=40.0, ends_in=130.0))
    assert line == "waiting · 2nd in line · starts in about 40 s, done in about 2 min (estimates)"
    again = training.status_line(snap("queued", position=11, starts_in=3.0, ends_in=9.0, restored=True))
    assert again.startswith("queued again after a server restart · waiting · 11th in line · starts in about 5 s")


def test_a_running_run_says_its_stage_fold_and_time_left():
    line = training.status_line(snap("running", stage="outcome model s(c)", fold=1, ends_in=70.0,
                                     cancel_requested=True))
    assert line == "outcome model s(c) · fold 1 · about 1 min left · stopping after this step"


def test_a_run_finished_before_a_restart_points_to_the_store():
    assert training.status_line(snap("done", run_id="r" * 32)) == "done · in the run store (see Results)"
    assert [training.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == \
        ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]


# ------------------------------------------------------------------ time that matches the wall clock
class _Run:
    """A run as a snapshot holds it: its record and the record's typed view."""

    def __init__(self, record):
        self.record = record
        self.result = RunRecord.from_dict(record)


def test_a_running_run_says_the_time_spent_by_the_wall_clock():
    line = training.status_line(snap("running", stage="bootstrap: 3 of 20 refits", started=time.time() - 95.4,
                                     ends_in=500.0))
    assert line == "bootstrap: 3 of 20 refits · 95 s so far · about 8 min left"


def test_a_finished_run_says_the_wall_time_with_its_refits_not_the_fit_alone():
    record = {"seconds": 4.5, "mse": None, "effect": {"bootstrap": {"refits": 20}}, "heldout": {"relative": 0.1}}
    line = training.status_line(snap("done", run=_Run(record), started=1000.0, finished=1152.0))
    assert line == "done in 152.0 s (the fit 4.5 s, then 20 bootstrap refits and the held-out residual)"
    plain = training.status_line(snap("done", run=_Run({"seconds": 3.0, "mse": 0.25}), started=10.0, finished=13.2))
    assert plain == "done in 3.2 s · MSE 0.25"


def test_time_left_follows_progress_once_the_estimate_is_spent():
    from dmlcore.jobs.registry import _Job
    job = _Job(id="j", owner="o", label="l", seq=1, created=0.0, cost=10.0, task=None, fit=None)
    job.started, job.progress = 1000.0, 0.04
    assert job.seconds_left(1005.0) == 5.0                     # within the estimate, before progress counts
    assert job.seconds_left(1150.0) == pytest.approx(150.0 * 0.96 / 0.04)   # past it: extrapolated, not "10 s"
    job.progress = 0.0
    assert job.seconds_left(1150.0) == 150.0                   # no progress at all: at least as long again


def test_a_run_with_refits_costs_as_many_fits():
    from dmlcore.jobs import JobRegistry
    from dmlcore.runs import fits_in_run
    from tests.reliability_cases import GOOD_ROLES, base_table
    from dmlcore.data.roles import CausalData
    assert fits_in_run({"bootstrap": 20}, has_truth=False) == 23 and fits_in_run({}, has_truth=True) == 3
    assert fits_in_run({"effect_folds": 0}, has_truth=True) == 1 and fits_in_run({"effect_folds": 3}, has_truth=False) == 6
    roles = dict(GOOD_ROLES)
    data = CausalData(base_table(), roles.pop("problem"), roles.pop("outcome"), **roles)
    jobs = JobRegistry(workers=1)
    try:
        one = jobs.submit_fit("o", "a", data=data, method="2sls", heldout_folds=0, effect_folds=0)
        many = jobs.submit_fit("o", "b", data=data, method="2sls", heldout_folds=0, effect_folds=0, bootstrap=20)
        costs = {s.id: s.cost for s in jobs.list("o")}
        assert costs[many] == 21 * costs[one]
    finally:
        jobs.close()


def test_the_run_names_its_bootstrap_stage_as_soon_as_the_fit_ends():
    from dmlcore.data.roles import CausalData
    from dmlcore.runs import fit_run
    from tests.reliability_cases import GOOD_ROLES, base_table
    roles = dict(GOOD_ROLES)
    data = CausalData(base_table(), roles.pop("problem"), roles.pop("outcome"), **roles)
    events = []
    fit_run(data, "2sls", bootstrap=2, heldout_folds=0, effect_folds=0, callback=events.append)
    stages = [(e["stage"], round(e["progress"], 3)) for e in events if e["type"] == "stage"]
    assert ("bootstrap: 0 of 2 refits on resampled rows", round(1 / 3, 3)) in stages
    first = [s for s, _ in stages].index("bootstrap: 0 of 2 refits on resampled rows")
    assert all(not s.startswith("bootstrap") for s, _ in stages[:first])

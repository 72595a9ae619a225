"""The Train page's words and refresh rate for a session's runs (dashboard/training.py)."""

import time

from dashboard import training
from dmlcore.jobs import JobSnapshot


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

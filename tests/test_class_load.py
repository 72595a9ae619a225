"""bench/perf/class_load.py's accounting: when the server had stored each session's runs, and how much of
the workers' time the fits filled (the figures that located the idle workers of docs/class.md)."""

from __future__ import annotations

import sqlite3
import time

import pytest

from bench.perf import class_load
from dmlcore.data.registry import load_dataset
from dmlcore.runs import fit_run
from dmlcore.store import RunStore


@pytest.fixture()
def home(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    loaded = load_dataset("demand-iv", n=300, seed=1)
    for owner in ("a", "b"):
        for _ in range(2):
            store.save(fit_run(loaded.data, "2sls", dataset="demand-iv"), owner, "#1 2SLS")
    return tmp_path


def test_server_done_is_the_last_stored_run_after_each_click(home):
    with sqlite3.connect(home / "runs.sqlite3") as conn:
        stored = dict(conn.execute("SELECT owner, MAX(created_ts) FROM runs GROUP BY owner").fetchall())
    sessions = [{"owner": "a", "clicked": stored["a"] - 5.0}, {"owner": "b", "clicked": stored["b"] - 2.5},
                {"owner": "c", "clicked": time.time()}, {"owner": "a", "clicked": None}]
    done = class_load.server_done(home, sessions)
    assert done == pytest.approx([5.0, 2.5]) and sessions[0]["server_done_after"] == pytest.approx(5.0)
    assert "server_done_after" not in sessions[2] and "server_done_after" not in sessions[3]


def test_workers_fill_is_fit_seconds_over_workers_times_span(home):
    records = RunStore(home / "runs.sqlite3").list_records()
    seconds = sum(r["record"]["seconds"] for r in records)
    fill = class_load.workers_fill(home, workers=2, t0=0.0, done=[10.0, 40.0])
    assert fill["fits"] == 4 and fill["span_seconds"] == 40.0
    assert fill["share"] == pytest.approx(seconds / 80.0)
    assert class_load.workers_fill(home, workers=2, t0=0.0, done=[])["share"] is None


def test_runs_shown_counts_the_runs_mse_boxes_not_the_strength_box():
    # what the demo's Results page showed (2026-11-27): the 2SLS strength box's four, then one MSE box a run
    labels = ["Partial R²", "First-stage F (unadjusted)", "Effective F", "Kleibergen-Paap rk F",
              "#1 DML-CMR · gb", "#1 Naive plug-in · gb", "#1 2SLS", "#1 Regression (ignores C) · gb"]
    assert class_load.count_runs(labels) == 4
    assert class_load.count_runs(labels[:4]) == 0 and class_load.count_runs([" #12 2SLS"]) == 1


def test_server_queued_is_the_first_queued_run_after_each_click(tmp_path):
    from dmlcore.jobs.jobfile import JobFile
    JobFile(tmp_path / "queue.sqlite3")
    with sqlite3.connect(tmp_path / "queue.sqlite3") as conn:
        conn.executemany("INSERT INTO jobs (id, owner, label, seq, created, status) VALUES (?, ?, ?, ?, ?, ?)",
                         [("1", "a", "#1 2SLS", 1, 103.0, "done"), ("2", "a", "#1 DML-CMR", 2, 104.0, "done"),
                          ("3", "b", "#1 2SLS", 3, 120.0, "done")])
    sessions = [{"owner": "a", "clicked": 100.0}, {"owner": "b", "clicked": 110.0}, {"owner": "c", "clicked": 1.0}]
    assert class_load.server_queued(tmp_path, sessions) == [3.0, 10.0] and "queued_after" not in sessions[2]
    assert class_load.server_queued(tmp_path / "none", sessions) == []
    sessions[0].update(complete_after=30.0, server_done_after=12.0)
    assert class_load.browser_lag(sessions) == [18.0]


def _row(browsers: int, shown: int, load: float, last: float) -> dict:
    """A class run's JSON as class_load writes it, with ``shown`` of ``browsers`` pages showing their 4 runs."""
    sessions = [{"session": i, "queued_after": 0.5, "server_done_after": 10.0 + i, "page_says_seconds": 12.0 + i}
                for i in range(browsers)]
    q = {"n": shown, "first": 20.0, "median": 30.0, "last": last} if shown else {"n": 0}
    return {"sessions": sessions, "switches": [{"seconds": 0.3}] * 9 + [{"seconds": 2.5}],
            "summary": {"date": "2026-11-27 15:00:00 +0000", "command": "python bench/perf/class_load.py --browsers 20",
                        "load_before": [load, load, load], "runs_shown_per_session": [4] * shown + [None] * (browsers - shown),
                        "store": {"runs_per_session": 4, "runs_stored": 4 * browsers, "each_session_all_its_runs": True},
                        "results_complete_seconds": q, "server_done_seconds": {"n": browsers, "median": 15.0, "last": 30.0},
                        "page_says_seconds": {"n": browsers, "last": 31.0}, "server_queued_seconds": {"n": browsers, "last": 0.5},
                        "browser_lag_seconds": {"n": shown, "median": 5.0} if shown else {"n": 0},
                        "stayed_on_train": browsers - shown, "blank_pages": 0, "tracebacks_in_log": 0,
                        "cpu_while_busy": {"browsers_cpu": 0.5}}}


class _Rows:
    def __init__(self, data):
        self.data = data

    def json(self, file):
        return self.data


@pytest.mark.parametrize("browsers, shown, load, last, says", [
    (20, 20, 0.2, 90.0, ["the class measurement", "20 of 20 showing their runs: met", "within 120 s: met (90 s)",
                         "90th percentile: met (0.30 s)"]),
    (20, 20, 0.2, 150.0, ["within 120 s: not met (150 s)"]),
    (20, 6, 0.2, 75.0, ["6 of 20", "14 left on Train", "showing their runs: not met",
                        "not met (not every page showed its runs; the last that did: 75 s)"]),
    (6, 6, 12.0, 50.0, ["a small check", "load average 12", "this run does not judge them"]),
    (20, 20, 9.0, 90.0, ["not the class measurement", "this run does not judge them"]),
])
def test_the_paragraph_on_the_newest_class_run_follows_its_row(browsers, shown, load, last, says):
    from bench.docgen.classload import class_verdict
    text = class_verdict(_Rows(_row(browsers, shown, load, last)), "run.json")
    for phrase in says:
        assert phrase in text, (phrase, text)
    assert ("met (" in text) == (browsers == 20 and load < 1.0)

"""A run's refits in worker processes beside the fit (``jobs`` > 1, the CLI's default): the same record as in
process, a cancel still stops them, the run's own threads stay limited while they run and the workers run at a
lower priority than the caller (issue 45)."""

import json
import os
from functools import partial

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from dmlcore import cli
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.errors import DMLCoreError, FitCancelled
from dmlcore.executors import BESIDE_NICE, ProcessExecutor
from dmlcore.runs import heldout_residual
from dmlcore.runs import fit_run
from dmlcore.runs import fit as fit_module

# real-data conditions (no truth): the held-out residual's 2 refits and the debiased effect's own 3
SETTINGS = dict(learner="gb", folds=2, seed=1, heldout_folds=2, effect_folds=3, epochs=20)
WORKERS = "(worker processes)"


def _record(run) -> dict:
    record = json.loads(run.to_json())
    for key in ("seconds", "created"):      # when and how long, not what was computed
        record.pop(key)
    return record


def _blas_threads() -> int:
    return max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")


def test_refits_in_workers_give_the_record_of_refits_in_process(monkeypatch):
    data = simulate_demand_iv(300, seed=0).data
    here, there, threads = [], [], []
    diagnostics = fit_module._first_stage        # runs after the fit, while the workers still refit

    def counted(*args, **kwargs):
        threads.append(_blas_threads())
        return diagnostics(*args, **kwargs)
    monkeypatch.setattr(fit_module, "_first_stage", counted)
    with threadpool_limits(limits=2, user_api="blas"):     # the caller's own count, which the run must put back
        caller = _blas_threads()
        inline = fit_run(data, "dml-cmr", jobs=1, callback=here.append, **SETTINGS)
        after_inline = _blas_threads()
        workers = fit_run(data, "dml-cmr", jobs=2, callback=there.append, **SETTINGS)
        after_workers = _blas_threads()
    assert not any(WORKERS in str(e.get("stage")) for e in here)
    done = [e["stage"] for e in there if WORKERS in str(e.get("stage"))]
    assert len(done) == 2 + 3, done          # every refit came back from a worker
    assert inline.record["heldout"]["folds"] and inline.record["effect"]["debiased"]["f_hat"].startswith("cross-fitted: 3")
    assert _record(workers) == _record(inline)
    assert [e["progress"] for e in there] == sorted(e["progress"] for e in there)   # the bar never goes back
    # beside its workers the run's own BLAS threads are the workers' count (1) until it has taken every refit, the
    # diagnostics after the fit included; in process it keeps the caller's; either way the caller's is put back
    assert threads == [caller, 1] and after_inline == after_workers == caller
    if caller == 1:
        pytest.skip("OpenBLAS has one thread here: the limit beside the workers could not be told apart")


def test_cancel_stops_the_refits_in_workers(monkeypatch):
    data = simulate_demand_iv(300, seed=0).data
    events, closed = [], []
    close = heldout_residual.StartedRefits.close
    monkeypatch.setattr(heldout_residual.StartedRefits, "close", lambda self: (closed.append(self), close(self)))
    after_fit = lambda: any("held-out residual" in str(e.get("stage")) for e in events)   # noqa: E731
    with pytest.raises(FitCancelled):
        fit_run(data, "dml-cmr", jobs=2, callback=events.append, should_stop=after_fit, **SETTINGS)
    assert not any(WORKERS in str(e.get("stage")) for e in events)   # stopped while waiting, before any came back
    assert closed and closed[0]._pool._pool is None                  # and its workers were stopped


def test_dmlcore_fit_refits_in_workers_by_default(monkeypatch, capsys):
    monkeypatch.setattr(cli, "FIT_JOBS", 2)          # the CLI's own default (tests run with 1: conftest)
    seen = []

    def fit_run(data, method, settings, **kwargs):
        seen.append(settings.jobs)
        raise SystemExit(0)
    monkeypatch.setattr(cli, "fit_run", fit_run)
    for extra in ([], ["--jobs", "1"]):
        with pytest.raises(SystemExit):
            cli.main(["fit", "--dataset", "demand-iv", "--n", "200", "--method", "dml-cmr", *extra])
    assert seen == [min(2, os.cpu_count() or 1), 1]


def test_jobs_below_one_is_refused_before_the_fit():
    data = simulate_demand_iv(300, seed=0).data
    with pytest.raises(DMLCoreError, match="jobs must be an integer of at least 1; got 0"):
        fit_run(data, "dml-cmr", jobs=0, **SETTINGS)


def test_workers_beside_the_caller_run_at_a_lower_priority_than_it():
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with ProcessExecutor(1, 1) as pool:      # the worker's own niceness, as each item sees it
        seen = [niceness for _, niceness in pool.start(partial(os.getpriority, os.PRIO_PROCESS), [0, 0])]
    assert seen == [min(19, own + BESIDE_NICE)] * 2 and BESIDE_NICE > 0
    assert os.getpriority(os.PRIO_PROCESS, 0) == own        # the caller's own is left as it is

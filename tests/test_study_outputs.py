"""Provenance and cost in every study output (issue 50): provenance.json and its line in report.html,
seconds per fit with every refit, every fit's fold losses, Parquet beside each CSV, and a per-fit
time limit refused in one line when bad."""

import json
import os
from importlib import metadata

import numpy as np
import pandas as pd
import pytest

from dmlcore.errors import DMLCoreError
from dmlcore.store import RunStore
from dmlcore.studies import run_study, spec_from_dict
from dmlcore.studies.runner import load_study
from dmlcore.studies.spec import config_key

GRID = {"dataset": "demand-iv", "data": {"n": 200}, "methods": ["dml-cmr", "2sls"], "learner": "linear",
        "folds": 2, "n_draws": 2, "seeds": "0-1"}


def test_every_output_carries_provenance_cost_fold_losses_and_parquet(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    result = run_study(GRID, tmp_path / "out", store=store, owner="alice")
    out = tmp_path / "out"
    for name in ("fits", "summary", "paired", "fold_losses"):
        csv, parquet = pd.read_csv(out / f"{name}.csv"), pd.read_parquet(out / f"{name}.parquet")
        assert list(parquet.columns) == list(csv.columns) and len(parquet) == len(csv)
    p = json.loads((out / "provenance.json").read_text())
    assert p["libraries"]["torch"] == metadata.version("torch") and p["libraries"]["numpy"] == np.__version__
    assert p["libraries"]["scikit-learn"] == metadata.version("scikit-learn") and p["cores"] == os.cpu_count()
    assert {"load_1min_start", "load_1min_end", "machine", "commit", "started", "ended"} <= set(p)
    assert p["libraries"]["pandas"] in (out / "report.html").read_text()
    fits = result.fits
    summary = result.summary.set_index("arm")
    dml = fits[fits["method"] == "dml-cmr"]
    assert summary.loc["dml-cmr", "worker_seconds_mean"] == pytest.approx(dml["worker_seconds"].astype(float).mean())
    assert (dml["worker_seconds"] > dml["seconds"]).all()          # refits (debiased effect, diagnostics) counted
    losses = pd.read_csv(out / "fold_losses.csv")
    mine = losses[losses["method"] == "dml-cmr"]
    assert set(mine["key"]) == set(dml["key"]) and set(mine["fold"]) == {0, 1}   # K = 2 folds of every fit
    assert {"f", "s", "g"} <= set(mine["model"]) and mine["train"].notna().all()
    reopened = load_study(result.study_id, store, "alice")                       # stored fits: their losses too
    assert set(reopened.fold_losses) == set(result.fold_losses)


def test_a_time_limit_stops_a_fit_and_is_refused_in_one_line_when_bad(tmp_path):
    grid = {"dataset": "demand-iv", "data": {"n": 300}, "methods": ["naive"], "learner": "nn", "epochs": 5000,
            "seeds": "0", "time_limit": 1}
    result = run_study(grid, keep=False)
    [row] = result.fits.to_dict("records")
    assert row["status"] == "failed" and "time limit of 1 s" in row["error"]
    assert 1 <= row["worker_seconds"] < 30
    spec = spec_from_dict(grid)
    config = spec.configs()[0]
    assert config["time_limit"] == 1
    assert config_key(config) == config_key({k: v for k, v in config.items() if k != "time_limit"})   # same fit
    for bad, words in ((0, "at least 1"), ("ten", "whole seconds"), (1.5, "whole seconds")):
        with pytest.raises(DMLCoreError, match=words) as err:
            spec_from_dict({**grid, "time_limit": bad})
        assert "\n" not in str(err.value)


def test_the_smaller_points_sieve_precheck_titles_column_order_rounding_and_the_failed_caption():
    from dmlcore.studies.checks import check_study
    from dmlcore.studies.figures import mse_protocol
    from dmlcore.studies.runner import result_from_rows
    from dmlcore.studies.summarize import fixed, paired_view, summary_view

    with pytest.raises(DMLCoreError, match=r"Sieve 2SLS cannot fit demand-iv at N = 20: .*Raise N") as err:
        check_study(spec_from_dict({"dataset": "demand-iv", "data": {"n": 20}, "methods": ["2sls", "sieve-2sls"],
                                    "seeds": "0-1"}))
    assert "\n" not in str(err.value)
    check_study(spec_from_dict({"dataset": "demand-iv", "data": {"n": 60}, "methods": ["sieve-2sls"], "seeds": "0"}))
    rows = [{"dataset": "demand-iv", "n": n, "method": m, "seed": s, "mse": 1.0 + 0.1 * s + (m == "naive") + n / 1e4,
             "mse_fresh": None, "seconds": 1.0, "status": "done", "reused": False, "key": f"{m}{n}{s}"}
            for n in (500, 1000) for m in ("naive", "2sls") for s in range(6)]
    result = result_from_rows(rows)
    paired = paired_view(result.paired, result.fits)
    assert list(paired.columns[:4]) == ["N (rows)", "Method a", "Method b", "Verdict (a vs b)"]   # N in view at 1400 px
    assert set(paired["Method a"]) == {"Naive plug-in"}
    summary = summary_view(result.summary, result.fits)
    assert list(summary.columns[:2]) == ["N (rows)", "Method"] and set(summary["Method"]) == {"Naive plug-in", "2SLS"}
    assert fixed([0.27, 0.269, 1.5]) == ["0.270", "0.269", "1.500"]
    failed = result.fits.assign(status="failed", mse=None)
    assert "no fit has finished" in mse_protocol(failed) and "test points" not in mse_protocol(failed)

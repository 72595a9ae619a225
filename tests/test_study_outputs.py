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

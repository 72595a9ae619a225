"""Every headline table says which nuisance settings made its DML-family rows (bench/docgen/tables.py)."""

import pandas as pd

from bench.docgen.tables import nuisance_line
from bench.perf.default_fit import summary


def rows(**columns):
    base = {"method": ["dml-cmr", "ce-dml-cmr", "naive", "2sls"], "learner": ["nn", "nn", "nn", "linear"]}
    return pd.DataFrame({**base, **columns})


def test_rows_without_the_settings_are_labelled_as_the_learners_own():
    line = nuisance_line(rows())
    assert "the learner's own, `nn`" in line and "the default before `auto`" in line
    assert "--outcome-learner nn --sampler nn" in line


def test_rows_made_with_auto_say_so_and_a_mixed_file_names_both():
    auto = rows(outcome_learner=["auto", "auto", None, None], sampler=["auto", "auto", "auto", None])
    assert nuisance_line(auto) == ("Nuisances of the DML family's rows: `auto` for the outcome model s(c) and "
                                   "distribution model (the default).")
    mixed = rows(outcome_learner=["auto", None, None, None], sampler=["auto", None, "auto", None])
    line = nuisance_line(mixed)
    assert "`auto`" in line and "the learner's own, `nn`" in line
    assert nuisance_line(rows().iloc[3:]) == ""      # no method of the family: no line


def test_the_default_fit_summary_checks_both_targets_on_the_auto_runs():
    runs = [{"method": "dml-cmr", "named": False, "command_seconds": 29.0},
            {"method": "ce-dml-cmr", "named": False, "command_seconds": 20.0},
            {"method": "dml-cmr", "named": True, "command_seconds": 58.0},
            {"method": "ce-dml-cmr", "named": True, "command_seconds": 10.0}]
    out = summary(runs)
    assert out["ratio"] == 1.45 and out["ratio_met"] and out["seconds_met"]
    assert out["auto_cost"] == {"dml-cmr": 0.5, "ce-dml-cmr": 2.0}
    runs[0]["command_seconds"] = 31.0
    assert not summary(runs)["seconds_met"] and not summary(runs)["ratio_met"]

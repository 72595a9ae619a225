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
    runs = [{"method": "dml-cmr", "named": False, "command_seconds": 19.0},
            {"method": "ce-dml-cmr", "named": False, "command_seconds": 13.1},
            {"method": "dml-cmr", "named": True, "command_seconds": 38.0},
            {"method": "ce-dml-cmr", "named": True, "command_seconds": 6.55}]
    out = summary(runs)
    assert out["ratio"] == 1.45 and out["ratio_met"] and out["seconds_met"] and not out["seconds_goal_met"]
    assert out["auto_cost"] == {"dml-cmr": 0.5, "ce-dml-cmr": 2.0}
    runs[0]["command_seconds"] = 21.0
    assert not summary(runs)["seconds_met"] and not summary(runs)["ratio_met"]
    runs[0]["command_seconds"], runs[1]["command_seconds"] = 15.0, 12.0
    assert summary(runs)["seconds_goal_met"] and summary(runs)["seconds_met"]


def test_the_breakdown_names_every_stage_of_a_default_fit():
    # bench/perf/fit_stages.py files each progress stage of a run under a part; a renamed stage must not slip
    # into "other" unseen
    from bench.perf.fit_stages import classify
    from dmlcore.data.simulate import simulate_demand_iv
    from dmlcore.runs import fit_run

    sim = simulate_demand_iv(400, seed=0)
    stages = []
    fit_run(sim.data, "dml-cmr", truth=sim.truth, learner="gb", folds=3, seed=0, jobs=1, epochs=5,
            callback=lambda e: stages.append(e["stage"]) if e.get("type") == "stage" else None)
    parts = {stage: classify(stage) for stage in stages}
    assert {"choice", "nuisances", "second_stage", "refits"} <= set(parts.values())
    assert parts["outcome model s(c): candidate gb-small"] == "choice"
    chosen = [part for stage, part in parts.items() if ": the choice, " in stage]
    assert chosen == ["nuisances"] * 2 + ["refits"] * 4       # the fit's two nuisances, then the refits' (2 each)
    others = {stage for stage, part in parts.items() if part == "other"}
    assert others <= {"done", "first-stage diagnostics and the effect's interval"}, others

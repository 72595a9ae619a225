"""Typed results (issue 48, item 3): dmlcore.runs.typed reads every method's kept run record
(tests/records, written by tests/golden_records.py) into frozen dataclasses and writes it back unchanged;
Run's summary, conf_int and params read the record; the CLI's and the studies' renderers read the typed
views, not dict keys. One tiny fit (2SLS, 200 rows) checks a live record; the rest reads the kept records."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from dmlcore import fit_run, load_dataset
from dmlcore.errors import DMLCoreError
from dmlcore.runs import Run
from dmlcore.runs.result import _json_default
from dmlcore.runs.typed import (PARTS, Config, Effect, FirstStage, FoldLosses, Interval, Part, RunRecord)

ROOT = Path(__file__).parent.parent
RECORDS = {path.stem: json.loads(path.read_text()) for path in sorted((ROOT / "tests" / "records").glob("*.json"))}


def _check_fields(part: Part, stored: dict, where: str, seen: set) -> None:
    """Every key of ``stored`` is read into the field of that name (a nested part recursively) or kept in
    ``extra``: the typed view holds the record's values, it does not just keep a copy of the dict."""
    seen.add(type(part))
    named = {f.name for f in dataclasses.fields(part)} - {"extra", "keys"}
    assert set(part.extra) == set(stored) - named, where
    for key, value in stored.items():
        if key not in named:
            continue
        typed = getattr(part, key)
        if isinstance(typed, Part):
            _check_fields(typed, value, f"{where}.{key}", seen)
        elif isinstance(typed, list) and any(isinstance(v, Part) for v in typed):
            for i, (t, v) in enumerate(zip(typed, value)):
                _check_fields(t, v, f"{where}.{key}[{i}]", seen) if isinstance(t, Part) else None
        elif isinstance(typed, dict) and any(isinstance(v, Part) for v in typed.values()):
            for name, t in typed.items():
                _check_fields(t, value[name], f"{where}.{key}.{name}", seen)
        else:
            assert typed == value, f"{where}.{key}"


def test_every_kept_record_round_trips_through_its_typed_view():
    assert len(RECORDS) >= 16
    seen: set = set()
    for method, record in RECORDS.items():
        typed = RunRecord.from_dict(record)
        assert typed.to_dict() == record, method
        assert json.dumps(typed.to_dict()) == json.dumps(record), method        # key order too
        _check_fields(typed, record, method, seen)
        assert isinstance(typed.effect, Effect) and all(isinstance(e, Interval) for e in typed.effect.intervals)
        assert pickle.loads(pickle.dumps(typed)).to_dict() == record      # a view travels to a worker and back
    # the kept records exercise most parts; the rest are read in the tests below
    assert {RunRecord, Effect, Interval, FirstStage, Config, FoldLosses} <= seen


def test_to_dict_is_written_from_the_fields():
    record = RECORDS["dml-cmr"]
    effect = Effect.from_dict(record["effect"])
    moved = dataclasses.replace(effect, estimate=123.0, debiased=dataclasses.replace(effect.debiased, ci_lower=-1.0))
    out = moved.to_dict()
    assert out["estimate"] == 123.0 and out["debiased"]["ci_lower"] == -1.0
    assert list(out) == list(record["effect"]) and list(out["debiased"]) == list(record["effect"]["debiased"])
    assert {k: v for k, v in out.items() if k not in ("estimate", "debiased")} == \
        {k: v for k, v in record["effect"].items() if k not in ("estimate", "debiased")}
    # built in code (no source dict): the fields that are set, in field order
    assert Interval(estimate=1.0, ci_lower=0.5, ci_upper=1.5).to_dict() == {"estimate": 1.0, "ci_lower": 0.5,
                                                                             "ci_upper": 1.5}
    assert not Interval() and not Effect.from_dict({}) and Effect.from_dict({"estimate": 1.0})


def test_old_and_future_records_load_as_they_are():
    record = json.loads(json.dumps(RECORDS["2sls"]))
    for key in ("clr", "weights", "absorb", "linear"):           # an older record without these fields
        record.pop(key)
    record["config"].pop("small")
    record["effect"]["a_later_field"] = {"x": [1, 2]}            # and one written by a later version
    typed = RunRecord.from_dict(record)
    assert typed.to_dict() == record and typed.clr is None and typed.effect.extra == {"a_later_field": {"x": [1, 2]}}
    assert typed.config.small is None                              # a declared setting the record predates
    assert typed.config.cov_type == record["config"]["cov_type"]
    with pytest.raises(AttributeError, match="no setting 'nonsense'"):
        typed.config.nonsense
    with pytest.raises(DMLCoreError, match="reads a run record's dict; got list"):
        Effect.from_dict([1, 2])
    assert RunRecord.from_dict(None) is None
    # every part reads an empty dict and gives it back
    for cls in PARTS:
        assert cls.from_dict({}).to_dict() == {}


def test_summary_conf_int_and_params_read_the_record():
    for method, record in RECORDS.items():
        typed = RunRecord.from_dict(record)
        effect = record["effect"]
        text = typed.summary()
        assert text.splitlines()[0].strip() == "Run summary" and method in text and f"{record['n']}" in text
        assert f"{effect['estimate']:.4g}" in text, method
        interval = typed.conf_int()
        assert list(interval.columns) == ["lower", "upper"] and list(interval.index) == [effect["treatment"]]
        if effect["ci_lower"] is not None:
            assert f"{effect['ci_lower']:.4g}" in text and f"{effect['ci_upper']:.4g}" in text, method
            assert interval.iloc[0].tolist() == [effect["ci_lower"], effect["ci_upper"]]
        else:
            assert interval.isna().all().all()
        if effect.get("debiased"):
            assert " ".join(typed.effect.identification_note().split()) in " ".join(text.split())   # wrapped at 78
        if record.get("coefficients"):
            params = typed.params
            assert params.index[0] == record["roles"]["treatment"][0]
            assert params.to_dict() == pytest.approx(record["coefficients"])
            assert typed.bse.to_dict() == pytest.approx(record["std_errors"])
            assert all(name[:23] in text for name in record["coefficients"])
        else:
            with pytest.raises(DMLCoreError, match=f"params: {method} has no coefficients"):
                typed.params
    typed = RunRecord.from_dict(RECORDS["2sls"])
    assert typed.conf_int(level=typed.effect.level).equals(typed.conf_int())
    with pytest.raises(DMLCoreError, match=r"conf_int\(level=0.9\).*computed at 0.95"):
        typed.conf_int(level=0.9)
    no_effect = RunRecord.from_dict({**RECORDS["2sls"], "effect": {"estimate": None, "error": "two treatments"}})
    with pytest.raises(DMLCoreError, match="two treatments"):
        no_effect.conf_int()
    assert "Effect: n/a (two treatments)" in no_effect.summary()


def test_a_live_run_gives_its_record_back_byte_for_byte():
    sim = load_dataset("demand-iv", n=200, seed=0)
    run = fit_run(sim.data, "2sls", truth=sim.truth, dataset="demand-iv", effect_folds=0)
    assert run.to_dict() == run.record
    assert json.dumps(run.to_dict(), indent=2, default=_json_default) == run.to_json()
    assert run.mse == run.record["mse"] and run.mse is not None
    assert run.effect.estimate == run.record["effect"]["estimate"]
    assert run.effect.truth == run.record["effect"]["truth"] and isinstance(run.effect.covered, bool)
    assert run.diagnostics.strength.f_stat == run.record["diagnostics"]["strength"]["f_stat"]
    assert run.config.cov_type == run.record["config"]["cov_type"] and run.config.method == "2sls"
    assert run.clr.pieces == run.record["clr"]["pieces"] and run.linear.r2 == run.record["linear"]["r2"]
    assert run.heldout is None and run.nuisances == {} and run.bands == {}
    lower, upper = run.conf_int().iloc[0]
    assert (lower, upper) == (run.record["effect"]["ci_lower"], run.record["effect"]["ci_upper"])
    assert np.isclose(run.params["price"], run.record["effect"]["estimate"])
    text = run.summary()
    assert f"{run.mse:.4g}" in text and "True effect" in text
    # the views follow the record (the CLI adds --wild-bootstrap's result to it)
    run.record["wild_bootstrap"] = {"pvalue": 0.5, "draws": 9}
    assert run.result.wild_bootstrap.pvalue == 0.5 and run.to_dict() == run.record


RENDERERS = {"dmlcore/cli.py": ("_summary_text", "_summary_line", "_diagnostics_notes", "_coefficients_text",
                                "_effect_text"),
             "dmlcore/studies/runner.py": ("record_outcomes",),
             "dmlcore/studies/summarize.py": ("fold_loss_table",)}


def test_the_renderers_read_no_record_keys():
    """Issue 48's target: the CLI's and the studies' renderers read the typed views, not ``record["key"]`` or
    ``.get("key")`` (a read of a key named at run time, a column or a setting, stays allowed)."""
    reads = []
    for path, names in RENDERERS.items():
        tree = ast.parse((ROOT / path).read_text())
        functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert set(names) <= set(functions), path
        for name in names:
            for node in ast.walk(functions[name]):
                key = (node.slice if isinstance(node, ast.Subscript) else
                       node.args[0] if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                       and node.func.attr == "get" and node.args else None)
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    reads.append(f"{path}:{node.lineno} {ast.unparse(node)}")
    assert reads == []


def test_config_reads_settings_by_name():
    config = Config.from_dict(RECORDS["dml-cmr"]["config"])
    assert config.method == "dml-cmr" and config.learner == RECORDS["dml-cmr"]["config"]["learner"]
    assert config.get("folds") == RECORDS["dml-cmr"]["config"]["folds"] and config.get("absent", 7) == 7
    assert list(config.settings) == [k for k in RECORDS["dml-cmr"]["config"] if k not in ("method", "data")]
    assert math.isclose(RunRecord.from_dict(RECORDS["dml-cmr"]).effect.level, 0.95)


# The dashboard's renderers of run records and the tables, scanned whole: every string-key read there must be
# of something that is not a run record, named here by the variable that holds it (a DataFrame, its rows, the
# store's summaries, the plan's demo data, the metric help, a table column's spec).
DASHBOARD_RENDERERS = ("dashboard/results.py", "dashboard/results_view.py", "dashboard/effects_view.py",
                       "dashboard/training.py", "dmlcore/regression_table.py", "dmlcore/linear_cli.py")
NOT_RECORDS = {"frame": "a DataFrame", "shown": "a DataFrame", "with_truth": "a DataFrame", "curve": "a DataFrame",
               "row": "a DataFrame's row", "r": "a stored run's summary row (RunStore.list)",
               "helps": "metric_help's {metric: text}", "losses": "plots.losses_from_record's {model: ...}",
               "params": "a data set's options", "DEMO_DATA": "the plan's demo data set",
               "model": "a table column's spec {data, method, label, settings} (regression_table.models_table)"}


def string_reads(source: str, allowed=()) -> list[str]:
    """``x["key"]`` and ``x.get("key", ...)`` reads of a string key, except where ``x`` is a name in ``allowed``."""
    reads = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key, holder = node.slice, node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args):
            key, holder = node.args[0], node.func.value
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and not (
                isinstance(holder, ast.Name) and holder.id in allowed):
            reads.append(f"{node.lineno} {ast.unparse(node)}")
    return reads


def test_the_dashboard_and_the_tables_read_no_record_keys():
    """Issue 48's target for the dashboard and the tables: they read the typed views (ResultItem.result,
    Run.result, RunRecord.from_dict), not ``record["key"]``; at 2a12b70 this scan found 292 such reads in these
    six modules (121, 18, 50, 7, 77, 19)."""
    planted = ('x = item.record.get("effect")\ny = rec["mse"]\nz = (r.get("a") or {}).get("b")\n'
               'frame["MSE"] = 1\nw = row["run"]\n')
    assert string_reads(planted, NOT_RECORDS) == ['1 item.record.get(\'effect\')', "2 rec['mse']",
                                                   "3 (r.get('a') or {}).get('b')"]
    found = {path: string_reads((ROOT / path).read_text(), NOT_RECORDS) for path in DASHBOARD_RENDERERS}
    assert found == {path: [] for path in DASHBOARD_RENDERERS}


def test_updated_sets_keys_as_a_dict_update_would():
    record = RECORDS["2sls"]
    effect = Effect.from_dict(record["effect"])
    moved = effect.updated(estimate=1.5, clusters={"column": "g", "count": 3}, new_key=[1])
    expected = {**record["effect"], "estimate": 1.5, "clusters": {"column": "g", "count": 3}, "new_key": [1]}
    assert moved.to_dict() == expected and list(moved.to_dict()) == list(expected)
    assert moved.clusters.column == "g" and moved.extra["new_key"] == [1] and effect.to_dict() == record["effect"]
    # a part is written as its dict
    typed = RunRecord.from_dict(record)
    assert typed.updated(effect=moved).to_dict() == {**record, "effect": expected}
    assert typed.role("treatment") == record["roles"]["treatment"] and typed.role("nothing") == []


def test_first_stage_inference_reads_its_parts():
    from dmlcore.runs.typed import Endogenous, FirstStageInference, HypothesisTest
    stored = {"cov_type": "robust", "endogenous": {"price": {"partial_r2": 0.3, "f_stat_cov": 41.0, "later": 1}},
              "kleibergen_paap": {"stat": 9.0, "pvalue": 0.01, "df": 2, "null": "underidentified"},
              "overid": {"Sargan": {"stat": 1.5, "pvalue": 0.2, "df": 1, "null": "valid"}, "Wooldridge": None}}
    typed = FirstStageInference.from_dict(stored)
    assert typed.to_dict() == stored
    assert isinstance(typed.endogenous["price"], Endogenous) and typed.endogenous["price"].f_stat_cov == 41.0
    assert typed.endogenous["price"].extra == {"later": 1}
    assert isinstance(typed.overid["Sargan"], HypothesisTest) and typed.overid["Sargan"].pvalue == 0.2
    assert typed.overid["Wooldridge"] is None and typed.kleibergen_paap.null == "underidentified"

"""One identification rule everywhere (issue 44): the strength statistic under the covariance the user
chose, the same number on the CLI's stderr, in the run record, the regression table, the effect's
note (Results page, CLI summary line); constant or collinear covariates left out of the diagnostics
with one line; diagnostics that cannot be computed said beside the effect, never a silent "not flagged"."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.stats.covariance import FEW_CLUSTERS
from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F
from dmlcore.inference.effect_notes import identification_note
from dmlcore.inference.first_stage import first_stage, identification_statistic, redundant_covariates
from dmlcore.runs import fit_run

from test_cli import run_main

FIT = dict(learner="linear", folds=5, heldout_folds=0)


def _few_clusters(groups: int = 20, size: int = 30, strength: float = 0.4, seed: int = 1) -> CausalData:
    """An instrument with a cluster part, in fewer than FEW_CLUSTERS clusters: strong when rows are counted
    (homoskedastic F about 156), weak under clusters (clustered effective F about 7.7)."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(groups), size)
    z = rng.normal(size=groups)[g] + 0.3 * rng.normal(size=groups * size)
    v = rng.normal(size=groups)[g] + 0.5 * rng.normal(size=groups * size)
    x = rng.normal(size=groups * size)
    a = strength * z + v + 0.3 * x
    y = 2 * a + 1.5 * v + x + rng.normal(size=groups)[g] + rng.normal(size=groups * size)
    table = pd.DataFrame({"y": y, "a": a, "z": z, "x": x, "g": g.astype(float)})
    return CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=["x"])


def test_few_clusters_keep_the_clustered_statistic_with_a_caveat():
    data = _few_clusters()
    assert 20 < FEW_CLUSTERS
    pooled = first_stage(data, nonparametric=False)["strength"]
    clustered = first_stage(data, nonparametric=False, cov_type="clustered", cluster="g")
    strength = clustered["strength"]
    assert pooled["f_stat"] > 10 * WEAK_FIRST_STAGE_F               # rows counted: far above the bar
    assert strength["statistic"] == "effective F (clustered, 20 clusters)"
    assert strength["f_stat"] == clustered["inference"]["effective_f"] < WEAK_FIRST_STAGE_F   # not swapped back
    assert strength["n_clusters"] == 20 and "only 20 clusters" in strength["caveat"]
    assert clustered["weak"] and f"{strength['f_stat']:.2f}" in clustered["warning"]
    assert f"{pooled['f_stat']:.2f}" not in clustered["warning"]     # the homoskedastic F is not quoted


def test_robust_reads_the_effective_f_and_several_columns_kleibergen_paap():
    data = _few_clusters()
    robust = first_stage(data, nonparametric=False, cov_type="robust")
    assert robust["strength"]["statistic"] == "effective F (robust)"
    assert robust["strength"]["f_stat"] == robust["inference"]["effective_f"]
    several = identification_statistic("Cragg-Donald F", 40.0, "robust",
                                       {"effective_f": None, "kleibergen_paap_f": 3.5, "n_clusters": None})
    assert (several["statistic"], several["value"]) == ("Kleibergen-Paap rk F (robust)", 3.5)
    failed = identification_statistic("first-stage F", 40.0, "clustered", {"error": "singular"})
    assert failed["fallback"] and "homoskedastic" in failed["statistic"] and "singular" in failed["caveat"]
    assert identification_statistic("first-stage F", 40.0, "unadjusted", None)["value"] == 40.0
    proxies = identification_statistic("proxy first-stage F", 40.0, "robust", {"effective_f": 4.3, "n_clusters": None})
    assert proxies["statistic"] == "proxy effective F (robust)" and proxies["value"] == 4.3


def test_the_same_number_on_stderr_in_the_record_the_table_and_the_summary(tmp_path, capsys):
    data = _few_clusters()
    path = tmp_path / "few.csv"
    data.table.to_csv(path, index=False)
    table_path, json_path = tmp_path / "t.md", tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--csv", str(path), "--outcome", "y", "--treatment", "a",
                              "--instrument", "z", "--covariates", "x", "--method", "dml-cmr", "--learner", "linear",
                              "--heldout-folds", "0", "--cov", "clustered", "--cluster", "g",
                              "--table", str(table_path), "--json", str(json_path))
    assert code == 0, err
    record = __import__("json").loads(json_path.read_text())
    value = record["diagnostics"]["strength"]["f_stat"]
    assert record["effect"]["debiased"]["first_stage_f"] == value
    assert record["effect"]["debiased"]["first_stage_statistic"] == "effective F (clustered, 20 clusters)"
    assert f"effective F (clustered, 20 clusters) is {value:.2f}" in err            # stderr
    assert f"effective F (clustered, 20 clusters) {value:.2f}" in table_path.read_text()   # the table's note
    assert re.search(r"\| Effective F \(Montiel Olea-Pflueger\) \|  \| " + re.escape(f"{value:.2f}"),
                     table_path.read_text())
    assert f"the linear first stage's F {value:.3g} (effective F, clustered, 20 clusters)" in out   # summary line
    assert record["effect"]["weakly_identified"] and record["effect"]["ci_lower"] is None
    assert len(record["effect"]["interval"]) <= 200


def test_constant_and_collinear_covariates_are_left_out_in_one_line():
    data = _few_clusters()
    table = data.table.assign(zeros=0.0, ones=1.0, sum=data.table["x"] * 2 + 1.0)
    wide = CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=["x", "zeros", "ones", "sum"])
    dropped = redundant_covariates(wide)
    assert [(d["column"], d["why"]) for d in dropped] == [
        ("zeros", "all zeros"), ("ones", "constant"),
        ("sum", "a linear combination of the constant and the covariates before it")]
    result = first_stage(wide, nonparametric=False)
    plain = first_stage(data, nonparametric=False)
    assert result["strength"]["f_stat"] == pytest.approx(plain["strength"]["f_stat"], rel=1e-9)
    assert result["covariates"] == ["x"] and "\n" not in result["dropped_note"]
    assert all(f"'{name}'" in result["dropped_note"] for name in ("zeros", "ones", "sum"))
    zero_instrument = CausalData(table.assign(z2=np.where(table["g"] < 10, table["x"], 0.0)), "iv", "y",
                                 treatment="a", instrument=["z", "z2"], covariates=["x", "zeros"])
    assert [d["column"] for d in redundant_covariates(zero_instrument)] == ["zeros"]   # instruments are never dropped


@pytest.fixture(scope="module")
def rhc_subsample():
    """The issue's case: 3,000 rows of the shipped RHC data in which a rare category's dummy is all zeros."""
    rhc = load_dataset("rhc").data
    rows = np.sort(np.random.default_rng(4).choice(len(rhc.table), 3000, replace=False))
    return rhc.subset(rows)


def test_rhc_subsample_with_an_all_zeros_covariate_is_diagnosed(rhc_subsample):
    assert (rhc_subsample.table["cat2_Colon_Cancer"] == 0).all()
    result = first_stage(rhc_subsample, nonparametric=False, inference=False)   # refused before: "all zeros"
    assert [d["column"] for d in result["dropped"]] == ["cat2_Colon_Cancer"]
    assert result["strength"]["f_stat"] < WEAK_FIRST_STAGE_F and result["weak"]


def test_rhc_subsample_fit_is_flagged_not_given_an_interval(rhc_subsample):
    few = [c for c in rhc_subsample.covariates if not c.startswith("cat")][:8] + ["cat2_Colon_Cancer"]
    data = CausalData(rhc_subsample.table, "pcl", "t3d30", treatment="swang1",
                      treatment_proxy=rhc_subsample.treatment_proxy, outcome_proxy=rhc_subsample.outcome_proxy,
                      covariates=few)
    record = fit_run(data, "dml-cmr", learner="linear", folds=2, heldout_folds=0).record
    assert "error" not in record["diagnostics"] and "cat2_Colon_Cancer" in record["diagnostics"]["dropped_note"]
    effect = record["effect"]
    assert effect["weakly_identified"] and effect["ci_lower"] is None and len(effect["interval"]) <= 200
    assert identification_note(effect).startswith("flagged: Cragg-Donald F ")


def test_diagnostics_that_fail_are_said_beside_the_effect(monkeypatch):
    import dmlcore.runs.fit as runs

    def broken(*args, **kwargs):
        raise DMLCoreError("the diagnostics broke on purpose")

    monkeypatch.setattr(runs, "first_stage", broken)
    loaded = load_dataset("linear-iv", n=600, seed=1)
    effect = fit_run(loaded.data, "dml-cmr", **FIT).record["effect"]
    reason = effect["debiased"]["unchecked_reason"]
    assert "not checked" in reason and "broke on purpose" in reason and len(reason) <= 200
    assert effect["warning"] == reason
    note = identification_note(effect)
    assert note.startswith("not flagged: representer strength ") and note.endswith(reason)
    assert "first-stage F" not in note
    from dmlcore.inference.debiased_effect import unchecked_text
    assert len(unchecked_text("Among the covariates, column 'x' is all zeros. " * 10)) <= 200

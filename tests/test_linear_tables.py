"""The formula interface, the regression table and the linear IV options of the CLI (docs/linear-iv.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from linearmodels.iv import IV2SLS

from dmlcore.cli import main
from dmlcore.data.datasets import load_real_dataset
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import make_estimator
from dmlcore.regression_table import regression_table


@pytest.fixture(scope="module")
def card():
    return load_real_dataset("card")


def test_named_data_sets_keep_every_column(card):
    assert {"region66", "weight", "IQ", "id"} <= set(card.table.columns)
    assert len(card.table) == 3010
    assert card.table["region66"].between(1, 9).all()
    assert (card.table[[f"reg66{r}" for r in range(1, 10)]].to_numpy().argmax(axis=1) + 1
            == card.table["region66"]).all()
    for name in ("mroz", "meps"):
        data = load_real_dataset(name)
        assert len(data.table.columns) > len(data.used_columns())


def test_formula_equals_linearmodels_from_formula(card):
    formula = "lwage ~ 1 + exper + expersq + black + C(region66) + [educ ~ nearc4 + nearc2]"
    data = CausalData.from_formula(formula, card.table)
    assert data.treatment == ["educ"] and data.instrument == ["nearc4", "nearc2"]
    assert "C(region66)[T.2]" in data.covariates and "weight" in data.table.columns
    est = make_estimator("2sls", cov_type="robust").fit(data)
    ref = IV2SLS.from_formula(formula, card.table).fit(cov_type="robust")
    assert est.coef_["educ"] == pytest.approx(ref.params["educ"], rel=1e-10)
    assert est.std_errors_["educ"] == pytest.approx(ref.std_errors["educ"], rel=1e-10)
    implicit = CausalData.from_formula(formula.replace("~ 1 + ", "~ "), card.table)   # the intercept is implicit
    assert make_estimator("2sls", cov_type="robust").fit(implicit).coef_["educ"] == est.coef_["educ"]
    absorbed = CausalData.from_formula("lwage ~ exper + [educ ~ nearc4]", card.table, absorb="region66",
                                       weights="weight")
    assert absorbed.absorb == ["region66"] and absorbed.weights == "weight"


@pytest.mark.parametrize("formula,match", [
    ("lwage ~ 0 + exper + [educ ~ nearc4]", "removes the intercept"),
    ("lwage ~ exper + [educ ~ nearc4] - 1", "removes the intercept"),
    ("lwage ~ 1 + exper", "names no endogenous treatment"),
    ("lwage ~ 1 + nosuch + [educ ~ nearc4]", "Cannot read the formula"),
    ("lwage = educ", "A formula reads"),
])
def test_bad_formulas_are_refused_in_one_line(card, formula, match):
    with pytest.raises(DMLCoreError, match=match):
        CausalData.from_formula(formula, card.table)


def test_regression_table_numbers_come_from_the_estimators(card):
    table = regression_table(card, ["ols", "2sls", "liml"], cov_type="robust")
    frame = table.frame
    assert list(frame.columns) == ["", "OLS", "First stage: educ", "2SLS", "LIML"]
    row = frame.index[frame[""] == "educ"][0]
    tsls = make_estimator("2sls", cov_type="robust").fit(card)
    assert frame.loc[row, "2SLS"].rstrip("*") == f"{tsls.coef_['educ']:.3f}"
    assert frame.loc[row + 1, "2SLS"] == f"({tsls.std_errors_['educ']:.3f})"
    ols = IV2SLS(card.table["lwage"], card.table[["educ", *card.covariates]].assign(const=1.0), None, None).fit(
        cov_type="robust")
    assert frame.loc[row, "OLS"].rstrip("*") == f"{ols.params['educ']:.3f}"
    stats = dict(zip(frame[""], frame["First stage: educ"]))
    assert stats["First-stage F (robust)"] != "" and stats["Observations"] == "3,010"
    assert "heteroskedasticity-robust" in table.notes[0]
    tex, md = table.to_latex(), table.to_markdown()
    assert r"\begin{tabular}" in tex and "First stage: educ" in md and "Anderson-Rubin 95% set" in md


def test_regression_table_labels_clustered_overidentification(card):
    data = CausalData(card.table, "iv", "lwage", treatment="educ", instrument=["nearc4", "nearc2"],
                      covariates=["exper", "expersq", "black", "smsa", "south"], absorb="region66")
    table = regression_table(data, ["2sls", "gmm-iv"], cov_type="clustered-cr1", cluster="region66")
    labels = list(table.frame[""])
    assert "Hansen J overid. (cluster-robust)" in labels
    assert "Sargan overid. (homoskedastic errors only)" in labels
    assert any("CR1" in note and "region66" in note for note in table.notes)
    assert any("Only 9 clusters" in note for note in table.notes)
    assert any("absorbed" in note for note in table.notes)
    with pytest.raises(DMLCoreError, match="Table methods"):
        regression_table(data, ["dml-cmr"])


def test_cli_fit_with_absorb_weights_cluster_and_a_table(tmp_path, capsys):
    out = tmp_path / "t.tex"
    code = main(["fit", "--dataset", "card", "--method", "fuller",
                 "--formula", "lwage ~ exper + expersq + black + smsa + south + [educ ~ nearc4 + nearc2]",
                 "--absorb", "region66", "--weights", "weight", "--cov", "clustered-cr1", "--cluster", "region66",
                 "--table", str(out), "--table-methods", "ols,2sls,fuller", "--json", str(tmp_path / "r.json")])
    text = capsys.readouterr()
    assert code == 0, text.err
    assert "fuller on card" in text.out and "(95%, Fuller s.e., clustered" in text.out
    assert r"\toprule" in out.read_text() and "Fuller" in out.read_text()
    import json
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["absorb"] == ["region66"] and record["weights"] == "weight"
    assert record["config"]["cov_type"] == "clustered-cr1"


def test_cli_clusters_by_a_column_without_a_role_and_bootstraps(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["fit", "--dataset", "card", "--method", "2sls", "--cov", "clustered", "--cluster", "region66",
                 "--no-debias", "--heldout-folds", "0", "--wild-bootstrap", "199", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "wild cluster bootstrap (199 draws, webb, 9 clusters)" in text
    # the CLR set assumes homoskedastic errors: under --cov clustered the line says so instead of printing it
    assert "conditional likelihood-ratio 95% set [" not in text
    assert "conditional likelihood-ratio set: not shown under --cov clustered (homoskedastic errors only" in text
    assert main(["fit", "--dataset", "card", "--method", "2sls", "--no-debias", "--heldout-folds", "0"]) == 0
    assert "conditional likelihood-ratio 95% set [" in capsys.readouterr().out
    import json
    wild = json.loads(out.read_text())["wild_bootstrap"]
    assert 0 < wild["pvalue"] < 1 and wild["n_clusters"] == 9
    from dmlcore.inference.linear_iv import clr_set
    assert json.loads(out.read_text())["clr"]["pieces"] == clr_set(load_real_dataset("card"))["pieces"]


@pytest.mark.parametrize("argv,match", [
    (["--method", "dml-cmr", "--absorb", "region66"], "applies to the linear IV methods"),
    (["--method", "2sls", "--table", "t.docx"], r"Markdown \(.md\) or LaTeX \(.tex\)"),
    (["--method", "2sls", "--table-methods", "ols"], "give --table PATH too"),
    (["--method", "2sls", "--formula", "lwage ~ 1 + [educ ~ nearc4]", "--outcome", "lwage"], "own file only"),
    (["--method", "2sls", "--weights", "IQ"], "weights must be positive"),
    (["--method", "2sls", "--formula", "lwage ~ 1 + [educ ~ nearc4]", "--problem", "pcl"], "own file only"),
    (["--method", "liml", "--cov", "clustered", "--cluster", "region66", "--wild-bootstrap", "199"],
     "--method 2sls"),
    (["--method", "2sls", "--wild-bootstrap", "199"], "--cov clustered"),
])
def test_cli_refuses_bad_linear_options_in_one_line(argv, match, capsys):
    assert main(["fit", "--dataset", "card", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and pytest.importorskip("re").search(match, err), err


@pytest.mark.parametrize("extra,match", [(["--outcome", "lwage"], "not both"), (["--problem", "pcl"], "writes an IV model")])
def test_a_formula_on_an_own_file_refuses_role_options(extra, match, capsys, tmp_path):
    path = tmp_path / "card.csv"
    load_real_dataset("card").table.to_csv(path, index=False)
    assert main(["fit", "--csv", str(path), "--method", "2sls", "--formula", "lwage ~ 1 + [educ ~ nearc4]", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err, err


def test_formula_on_a_simulated_data_set_is_refused(capsys):
    assert main(["fit", "--dataset", "demand-iv", "--method", "2sls", "--formula", "sales ~ 1 + [price ~ z]"]) == 2
    assert "real data set" in capsys.readouterr().err


def test_weights_change_the_estimate(card):
    weighted = make_estimator("2sls").fit(CausalData(card.table, "iv", "lwage", treatment="educ",
                                                     instrument="nearc4", covariates=card.covariates,
                                                     weights="weight"))
    plain = make_estimator("2sls").fit(card)
    assert not np.isclose(weighted.coef_["educ"], plain.coef_["educ"], rtol=1e-3)
    ref = IV2SLS(card.table["lwage"], card.table[card.covariates].assign(const=1.0), card.table["educ"],
                 card.table["nearc4"], weights=card.table["weight"]).fit(cov_type="unadjusted")
    assert weighted.coef_["educ"] == pytest.approx(ref.params["educ"], rel=1e-9)
    assert weighted.std_errors_["educ"] == pytest.approx(ref.std_errors["educ"], rel=1e-9)
    assert pd.notna(weighted.offset_)


def test_regression_table_of_a_proximal_problem(linear_pcl):
    data = linear_pcl(400)
    table = regression_table(data, ["ols", "2sls", "fuller", "gmm-iv"])
    frame = table.frame
    assert list(frame.columns) == ["", "OLS", "First stage: w", "2SLS", "Fuller", "GMM"]
    labels = list(frame[""])
    assert labels.count("First-stage F (unadjusted)") == 1 and "kappa (k-class)" in labels
    kappa = dict(zip(frame[""], frame["GMM"]))["kappa (k-class)"]
    assert kappa == ""                                  # GMM is not a k-class estimator
    row = frame.index[frame[""] == "a"][0]
    est = make_estimator("2sls").fit(data)
    assert frame.loc[row, "2SLS"].rstrip("*") == f"{est.coef_['a']:.3f}"
    assert not any(label.startswith("Anderson-Rubin") for label in labels)     # IV only


def test_a_kept_table_keeps_the_fixed_effects_and_weights(tmp_path, monkeypatch):
    from dmlcore.data.tables import keep_table, load_kept_table, roles_text
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path))
    card = load_real_dataset("card")
    plain = roles_text(card)
    assert "absorb" not in plain and "weights" not in plain          # unchanged keys for earlier studies
    data = CausalData(card.table, "iv", "lwage", treatment="educ", instrument="nearc4",
                      covariates=["exper", "expersq", "black"], absorb="region66", weights="weight", name="card")
    kept = keep_table(data, "card.csv")
    back = load_kept_table(kept["table"], kept["roles"], "card.csv")
    assert back.absorb == ["region66"] and back.weights == "weight"
    assert make_estimator("2sls").fit(back).coef_["educ"] == pytest.approx(make_estimator("2sls").fit(data).coef_["educ"])

"""Several linear models side by side (issue 46): ``models_table`` / ``regression_table([...])`` and
``dmlcore table RUN.json ...``: each column's numbers are that model's own fit, under its own covariance."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as t_dist

from dmlcore import cli
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import make_estimator
from dmlcore.estimators.tsls import TwoStageLeastSquares
from dmlcore.inference.linear_iv import anderson_rubin_set, clr_set, first_stage_inference
from dmlcore.regression_table import models_table, regression_table


def _table(n=240, seed=4):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(8), n // 8)
    unit = np.arange(n) % 24
    z, x, u = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n) + rng.normal(size=8)[g]
    d = 0.5 * z + 0.3 * x + u + 0.2 * (unit % 3)
    return pd.DataFrame({"y": 0.4 * d + x + u + rng.normal(size=n) + 0.1 * unit, "d": d, "z": z, "x": x, "g": g,
                         "unit": unit, "w": rng.uniform(0.5, 2, n)})


@pytest.fixture(scope="module")
def frames():
    table = _table()
    plain = CausalData(table, "iv", "y", treatment=["d"], instrument=["z"], covariates=["x"], name="sim")
    fe = CausalData(table, "iv", "y", treatment=["d"], instrument=["z"], covariates=["x"], absorb=["unit"],
                    weights="w", name="sim")
    return table, plain, fe


@pytest.fixture(scope="module")
def table(frames):
    _, plain, fe = frames
    return models_table([
        {"data": plain, "method": "ols"},
        {"data": plain, "method": "2sls"},
        {"data": plain, "method": "liml", "cov_type": "robust"},
        {"data": fe, "method": "2sls", "cov_type": "clustered", "cluster": "g", "small": True, "label": "FE"},
    ], labels={"d": "Treatment", "y": "Outcome"})


def _cell(table, row, column):
    frame = table.frame.set_index("")
    return frame.loc[row, table.frame.columns[column]]


def test_each_column_is_its_models_own_fit_under_its_covariance(frames, table):
    _, plain, fe = frames
    assert list(table.frame.columns)[1:] == ["(1) OLS", "(2) 2SLS", "(3) LIML", "(4) FE"]
    assert table.caption == "Dependent variable: Outcome"
    liml = make_estimator("liml", cov_type="robust").fit(plain)
    clustered = make_estimator("2sls", cov_type="clustered", cluster="g", small=True).fit(fe)
    rows = table.frame[""].tolist()
    d = rows.index("Treatment")
    assert table.frame.iloc[d + 1, 3] == f"({liml.std_errors_['d']:.3f})"
    assert table.frame.iloc[d + 1, 4] == f"({clustered.std_errors_['d']:.3f})"
    assert _cell(table, "Observations", 4) == "240" and _cell(table, "Clusters", 4) == "8 (g)"
    assert _cell(table, "Clusters", 2) == "" and _cell(table, "Fixed effects", 4) == "unit"
    assert _cell(table, "Weights", 4) == "w" and _cell(table, "Weights", 1) == "no"
    assert _cell(table, "R²", 4) == f"{clustered.r2_:.3f}"
    assert _cell(table, "kappa (k-class)", 3) == f"{liml.kappa_:.4f}"
    assert _cell(table, "Standard errors", 4) == "CR1 by g, t(7)" and _cell(table, "Standard errors", 3) == "HC0"
    robust_f = first_stage_inference(plain, "robust")["endogenous"]["d"]["f_stat_cov"]
    assert _cell(table, "First-stage F", 3) == f"{robust_f:.2f}" and _cell(table, "First-stage F", 1) == ""
    (lo, hi), = anderson_rubin_set(fe, "clustered", "g", small=True)["pieces"]
    assert _cell(table, "Anderson-Rubin 95% set", 4) == f"[{lo:.3f}, {hi:.3f}]"
    (lo, hi), = anderson_rubin_set(plain, "robust")["pieces"]
    assert _cell(table, "Anderson-Rubin 95% set", 3) == f"[{lo:.3f}, {hi:.3f}]"


def test_clr_only_beside_a_homoskedastic_column_and_a_note_says_so(frames, table):
    _, plain, _ = frames
    (lo, hi), = clr_set(plain)["pieces"]
    assert _cell(table, "CLR 95% set", 2) == f"[{lo:.3f}, {hi:.3f}]"
    assert _cell(table, "CLR 95% set", 3) == _cell(table, "CLR 95% set", 4) == ""
    assert any("left out for columns (3), (4)" in note for note in table.notes)


def test_stars_use_t_with_the_columns_degrees_of_freedom_under_small(frames, table):
    _, _, fe = frames
    est = make_estimator("2sls", cov_type="clustered", cluster="g", small=True).fit(fe)
    b, s = float(est.coef_["d"]), float(est.std_errors_["d"])
    p = 2 * t_dist.sf(abs(b / s), 7)
    stars = "***" if p < 0.01 else "**" if p < 0.05 else "*" if p < 0.10 else ""
    d = table.frame[""].tolist().index("Treatment")
    assert table.frame.iloc[d, 4] == f"{b:.3f}{stars}"
    assert "from t with each column's degrees of freedom" in table.notes[0]


def test_regression_table_of_a_list_is_the_models_table(frames):
    _, plain, _ = frames
    models = [{"data": plain, "method": "2sls"}, {"data": plain, "method": "2sls", "cov_type": "robust"}]
    assert regression_table(models, keep=["d"]).to_markdown() == models_table(models, keep=["d"]).to_markdown()
    kept = models_table(models, keep=["d"])
    assert kept.frame[""].tolist()[:2] == ["d", ""] and "x" not in kept.frame[""].tolist()
    assert any(note.startswith("Also in the models, not shown: x, the constant") for note in kept.notes)


@pytest.mark.parametrize("models,options,match", [
    ([], {}, "at least one model"),
    ([{"method": "2sls"}], {}, "needs 'data'"),
    (["x"], {}, "run record"),
])
def test_bad_models_are_refused_in_one_line(models, options, match):
    with pytest.raises(DMLCoreError, match=match) as err:
        models_table(models, **options)
    assert "\n" not in str(err.value)


def test_bad_keep_titles_and_methods_are_refused(frames):
    _, plain, _ = frames
    with pytest.raises(DMLCoreError, match="keep names coefficients no model has: 'educ'"):
        models_table([{"data": plain, "method": "2sls"}], keep=["educ"])
    with pytest.raises(DMLCoreError, match="one title per model"):
        models_table([{"data": plain, "method": "2sls"}], titles=["a", "b"])
    with pytest.raises(DMLCoreError, match="must come from ols"):
        models_table([{"data": plain, "method": "dml-cmr"}])


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


def test_the_table_command_reads_stored_runs_and_an_ols_column(tmp_path):
    path = tmp_path / "sim.csv"
    _table().to_csv(path, index=False)
    base = ["fit", "--csv", str(path), "--outcome", "y", "--treatment", "d", "--instrument", "z", "--covariates", "x"]
    assert _run(base + ["--method", "2sls", "--cov", "robust", "--json", str(tmp_path / "a.json")])[0] == 0
    assert _run(base + ["--method", "2sls", "--absorb", "unit", "--cov", "clustered", "--cluster", "g", "--small",
                        "--json", str(tmp_path / "b.json")])[0] == 0
    status, out, err = _run(["table", f"ols:{tmp_path / 'a.json'}", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                             "--label", "d=Treatment", "--keep", "d,x", "--title", "OLS", "--title", "2SLS",
                             "--title", "2SLS, FE"])
    assert status == 0, err
    assert "| (1) OLS | (2) 2SLS | (3) 2SLS, FE |" in out and "| Treatment |" in out
    record = json.loads((tmp_path / "b.json").read_text())
    assert f"({record['std_errors']['d']:.3f})" in out and "| Clusters |  |  | 8 (g) |" in out
    ols = TwoStageLeastSquares(cov_type="robust").fit(CausalData(_table(), "cmr", "y", inputs=["d", "x"],
                                                                 conditioning=["d", "x"]))
    assert f"({ols.std_errors_['d']:.3f})" in out
    status, out, _ = _run(["table", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path / "t.tex")])
    tex = (tmp_path / "t.tex").read_text()
    assert status == 0 and "multicolumn" not in tex and r"{\footnotesize\raggedright" in tex   # notes wrap
    (tmp_path / "bad.json").write_text("{}")
    status, _, err = _run(["table", str(tmp_path / "bad.json")])
    assert status == 2 and len(err.strip().splitlines()) == 1 and "not a linear IV run record" in err

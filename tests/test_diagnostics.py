import numpy as np
import pandas as pd
import pytest
from linearmodels.iv import IV2SLS

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_iv, simulate_demand_pcl
from dmlcore.inference.first_stage import first_stage
from dmlcore.errors import DMLCoreError


def _reference(data, dummies=()):
    """linearmodels' first stage, each column in ``dummies`` entered as 0/1 columns of its
    levels (the first left out), built here by hand."""
    t = data.table.assign(const=1.0)
    parts, columns = [t], {}
    for role in ("covariates", "instrument"):
        columns[role] = []
        for c in getattr(data, role):
            if c in dummies:
                d = pd.get_dummies(t[c], prefix=c, drop_first=True, dtype=float)
                parts.append(d)
                columns[role] += list(d.columns)
            else:
                columns[role].append(c)
    t = pd.concat(parts, axis=1)
    fit = IV2SLS(t[data.outcome], t[["const"] + columns["covariates"]], t[data.treatment],
                 t[columns["instrument"]]).fit(cov_type="unadjusted", debiased=True)
    return fit.first_stage


def test_strong_instrument_matches_linearmodels():
    data = simulate_demand_iv(n=2000, seed=0).data
    assert data.categorical == ["customer_type"]
    out = first_stage(data)
    ref = _reference(data, dummies=("customer_type",))
    row = ref.diagnostics.loc["price"]
    d = out["treatments"]["price"]
    np.testing.assert_allclose(d["partial_r2"], row["partial.rsquared"], rtol=1e-6)
    np.testing.assert_allclose(d["f_stat"], row["f.stat"], rtol=1e-6)
    np.testing.assert_allclose(d["f_pvalue"], row["f.pval"], atol=1e-9)
    np.testing.assert_allclose(out["cragg_donald_f"], ref.cragg_donald_f, rtol=1e-6)
    # constant, time and 6 dummies of the 7 customer types
    assert (d["df_num"], d["df_denom"]) == (1, 2000 - 1 - 8)
    assert out["weak"] is False and out["warning"] is None
    # price = 25 + (z + 3) psi(t) + w: the instrument acts through an interaction with time
    assert d["np_r2_gain"] > 0.2
    assert d["np_r2_gain"] == pytest.approx(d["np_r2"] - d["np_r2_covariates"])


def test_weak_instrument_flagged():
    data = simulate_demand_iv(n=2000, seed=0, iv_strength=0.01).data
    out = first_stage(data, nonparametric=False)
    d = out["treatments"]["price"]
    assert d["f_stat"] < 10 and out["weak"] is True
    assert "fuel_price" in out["warning"] and "weak" in out["warning"]
    assert f"{d['f_stat']:.2f}" in out["warning"]
    assert d["np_r2"] is None and d["np_r2_gain"] is None


def test_several_instruments_cragg_donald():
    rng = np.random.default_rng(5)
    n = 1500
    z1, z2, x, u = rng.normal(size=(4, n))
    a = 0.3 * z1 + 0.1 * z2 + 0.5 * x + u + rng.normal(size=n)
    table = pd.DataFrame({"y": a + u, "a": a, "z1": z1, "z2": z2, "x": x})
    data = CausalData(table, "iv", "y", treatment="a", instrument=["z1", "z2"], covariates="x")
    out = first_stage(data, nonparametric=False)
    ref = _reference(data)
    np.testing.assert_allclose(out["treatments"]["a"]["f_stat"], ref.diagnostics.loc["a", "f.stat"],
                               rtol=1e-6)
    np.testing.assert_allclose(out["treatments"]["a"]["partial_r2"],
                               ref.diagnostics.loc["a", "partial.rsquared"], rtol=1e-6)
    np.testing.assert_allclose(out["cragg_donald_f"], ref.cragg_donald_f, rtol=1e-6)
    assert out["treatments"]["a"]["df_num"] == 2


def _grouped(n=1500, seed=3):
    """A covariate 'group' (codes 0..4) that moves both the instrument and the treatment, by
    amounts that are not monotone in its codes: only its dummies control it."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 5, size=n).astype(float)
    bump = np.array([0.0, 2.0, -1.5, 2.5, -1.0])[group.astype(int)]
    z = bump + rng.normal(size=n)
    a = 0.1 * z + 2.0 * bump + rng.normal(size=n)
    return pd.DataFrame({"y": a + rng.normal(size=n), "a": a, "z": z, "group": group})


def test_categorical_covariate_enters_as_dummies():
    table = _grouped()
    data = CausalData(table, "iv", "y", treatment="a", instrument="z", covariates="group", categorical="group")
    out = first_stage(data, nonparametric=False)
    d = out["treatments"]["a"]
    row = _reference(data, dummies=("group",)).diagnostics.loc["a"]
    np.testing.assert_allclose(d["partial_r2"], row["partial.rsquared"], rtol=1e-6)
    np.testing.assert_allclose(d["f_stat"], row["f.stat"], rtol=1e-6)
    assert (d["df_num"], d["df_denom"]) == (1, len(table) - 1 - 5)    # constant and 4 dummies
    # read as a number, the group's codes leave its effect in both z and a: a spurious, far larger F
    linear = first_stage(CausalData(table, "iv", "y", treatment="a", instrument="z", covariates="group"),
                         nonparametric=False)["treatments"]["a"]
    np.testing.assert_allclose(linear["f_stat"], _reference(data).diagnostics.loc["a", "f.stat"], rtol=1e-6)
    assert linear["f_stat"] > 20 * d["f_stat"] and linear["partial_r2"] > 0.5 > 0.05 > d["partial_r2"]


def test_categorical_instrument_counts_each_dummy():
    rng = np.random.default_rng(4)
    n = 1200
    z = rng.integers(1, 5, size=n).astype(float)
    x = rng.normal(size=n)
    a = np.array([0.0, 1.0, -1.0, 0.5])[z.astype(int) - 1] + 0.5 * x + rng.normal(size=n)
    table = pd.DataFrame({"y": a + rng.normal(size=n), "a": a, "z": z, "x": x})
    data = CausalData(table, "iv", "y", treatment="a", instrument="z", covariates="x", categorical="z")
    out = first_stage(data, nonparametric=False)
    ref = _reference(data, dummies=("z",))
    d = out["treatments"]["a"]
    np.testing.assert_allclose(d["f_stat"], ref.diagnostics.loc["a", "f.stat"], rtol=1e-6)
    np.testing.assert_allclose(d["partial_r2"], ref.diagnostics.loc["a", "partial.rsquared"], rtol=1e-6)
    np.testing.assert_allclose(out["cragg_donald_f"], ref.cragg_donald_f, rtol=1e-6)
    assert (d["df_num"], d["df_denom"]) == (3, n - 3 - 2)
    assert out["instruments"] == ["z"]


def test_no_covariates():
    data = simulate_demand_iv(n=500, seed=2).data
    bare = CausalData(data.table, "iv", "sales", treatment="price", instrument="fuel_price")
    out = first_stage(bare)
    row = _reference(bare).diagnostics.loc["price"]
    np.testing.assert_allclose(out["treatments"]["price"]["f_stat"], row["f.stat"], rtol=1e-6)
    assert abs(out["treatments"]["price"]["np_r2_covariates"]) < 0.02   # the fold mean


def test_errors():
    cmr = simulate_demand_pcl(n=200).data
    cmr = CausalData(cmr.table, "cmr", cmr.outcome, inputs=cmr.input_columns, conditioning=cmr.conditioning_columns)
    with pytest.raises(DMLCoreError, match="IV and PCL problems.*'cmr'"):
        first_stage(cmr)
    data = simulate_demand_iv(n=300, seed=0).data
    table = data.table.assign(z_copy=-data.table["fuel_price"])
    # collinear instruments are now rejected when the roles are set, before any diagnostic
    with pytest.raises(DMLCoreError, match=r"'z_copy' \(instrument\) is a linear combination of 'fuel_price'"):
        CausalData(table, "iv", "sales", treatment="price", instrument=["fuel_price", "z_copy"],
                   covariates=["time"])

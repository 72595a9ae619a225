"""Tests of dmlcore.data.roles: role validation (each error names the column and the fix)
and the conditional-moment-restriction form of the IV, PCL and generic CMR problems."""

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.roles import CausalData, CMRArrays
from dmlcore.errors import DMLCoreError


def iv_table(n=40, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    x = rng.normal(size=n)
    a = z + rng.normal(size=n)
    y = 2 * a + x + rng.normal(size=n)
    return pd.DataFrame({"y": y, "a": a, "z": z, "x": x, "note": ["text"] * n})


def pcl_table(n=40, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.normal(size=n)
    return pd.DataFrame({"y": u + rng.normal(size=n), "a": u + rng.normal(size=n),
                         "v1": u + rng.normal(size=n), "v2": rng.normal(size=n),
                         "w": u + rng.normal(size=n), "x": rng.normal(size=n)})


def iv(table, **roles):
    kwargs = dict(outcome="y", treatment="a", instrument="z", covariates=["x"])
    kwargs.update(roles)
    return CausalData(table, "iv", **kwargs)


def error_of(fn):
    with pytest.raises(DMLCoreError) as info:
        fn()
    return str(info.value)


# ------------------------------------------------------------------ validation errors
def test_valid_iv_data_accepted_and_unused_columns_ignored():
    data = iv(iv_table())  # the text column "note" has no role: it must not be checked
    assert data.roles() == {"outcome": ["y"], "treatment": ["a"], "instrument": ["z"], "covariates": ["x"]}
    assert data.used_columns() == ["y", "a", "z", "x"]


def test_unknown_column_is_named_with_available_columns():
    msg = error_of(lambda: iv(iv_table(), instrument="fuel"))
    assert "'fuel'" in msg and "instrument" in msg
    assert "not in the table" in msg
    assert "Available columns" in msg and "y, a, z, x" in msg


def test_column_in_two_roles_is_named():
    msg = error_of(lambda: iv(iv_table(), covariates=["x", "z"]))
    assert "'z'" in msg and "two roles" in msg
    assert "instrument" in msg and "covariates" in msg
    assert "give it one" in msg


def test_outcome_also_a_treatment_is_rejected():
    msg = error_of(lambda: iv(iv_table(), treatment="y"))
    assert "'y'" in msg and "two roles" in msg


def test_non_numeric_column_is_named_with_an_example():
    table = iv_table()
    table["a"] = table["a"].astype(str)
    table.loc[3, "a"] = "cheap"
    msg = error_of(lambda: iv(table))
    assert "'a'" in msg and "not numeric" in msg
    assert "'cheap'" in msg
    assert "Encode it as numbers" in msg


@pytest.mark.parametrize("bad, word", [(np.nan, "missing (NaN)"), (np.inf, "infinite"),
                                       (-np.inf, "infinite")])
def test_non_finite_values_are_named_with_row(bad, word):
    table = iv_table()
    table.loc[7, "x"] = bad
    msg = error_of(lambda: iv(table))
    assert "'x'" in msg and word in msg
    assert "row 7" in msg
    assert "Remove or impute" in msg


def test_nullable_integer_missing_value_is_reported():
    table = iv_table()
    table["x"] = pd.array([1, None] + [2] * (len(table) - 2), dtype="Int64")
    msg = error_of(lambda: iv(table))
    assert "'x'" in msg and "row 1" in msg


def test_nan_in_a_column_without_role_is_allowed():
    table = iv_table()
    table["spare"] = np.nan
    iv(table)


def test_boolean_column_counts_as_numeric():
    table = iv_table()
    table["x"] = table["x"] > 0
    data = iv(table)
    assert set(np.unique(data.cmr().conditioning[:, 1])) == {0.0, 1.0}


def test_constant_instrument_rejected():
    table = iv_table()
    table["z"] = 3.0
    msg = error_of(lambda: iv(table))
    assert "'z'" in msg and "instrument" in msg and "constant" in msg
    assert "Choose another column" in msg


def test_constant_treatment_proxy_rejected():
    table = pcl_table()
    table["v2"] = 1.0
    msg = error_of(lambda: CausalData(table, "pcl", "y", treatment="a", treatment_proxy=["v1", "v2"],
                                      outcome_proxy="w"))
    assert "'v2'" in msg and "treatment proxy" in msg and "constant" in msg


def test_constant_treatment_rejected():
    table = iv_table()
    table["a"] = 1.0
    msg = error_of(lambda: iv(table))
    assert "'a'" in msg and "constant" in msg


@pytest.mark.parametrize("problem, roles, missing", [
    ("iv", dict(outcome="y", treatment="a"), "instrument"),
    ("iv", dict(outcome="", treatment="a", instrument="z"), "outcome"),
    ("iv", dict(outcome="y", instrument="z"), "treatment"),
    ("pcl", dict(outcome="y", treatment="a", treatment_proxy="v1"), "outcome_proxy"),
    ("pcl", dict(outcome="y", treatment="a", outcome_proxy="w"), "treatment_proxy"),
    ("cmr", dict(outcome="y", inputs=["a"]), "conditioning"),
])
def test_missing_required_role_is_named(problem, roles, missing):
    table = pcl_table() if problem == "pcl" else iv_table()
    msg = error_of(lambda: CausalData(table, problem, **roles))
    assert f"'{missing}'" in msg and problem.upper() in msg
    assert "Assign one" in msg


@pytest.mark.parametrize("problem, roles, extra", [
    ("iv", dict(outcome="y", treatment="a", instrument="z", outcome_proxy="x"), "outcome_proxy"),
    ("iv", dict(outcome="y", treatment="a", instrument="z", inputs=["x"]), "inputs"),
    ("pcl", dict(outcome="y", treatment="a", treatment_proxy="v1", outcome_proxy="w", instrument="v2"),
     "instrument"),
    ("cmr", dict(outcome="y", inputs=["a"], conditioning=["v1"], treatment="a"), "treatment"),
])
def test_role_not_used_by_problem_is_named(problem, roles, extra):
    table = pcl_table() if problem in ("pcl", "cmr") else iv_table()
    msg = error_of(lambda: CausalData(table, problem, **roles))
    assert f"'{extra}'" in msg and "not used" in msg and problem.upper() in msg
    assert "remove it" in msg


def test_unknown_problem_rejected():
    msg = error_of(lambda: CausalData(iv_table(), "rdd", "y", treatment="a", instrument="z"))
    assert "'rdd'" in msg and "iv, pcl, cmr" in msg


def test_table_must_be_dataframe():
    msg = error_of(lambda: CausalData(iv_table().to_numpy(), "iv", "y", treatment="a", instrument="z"))
    assert "DataFrame" in msg


def test_two_treatments_are_refused_by_every_method_but_the_linear_iv_ones():
    from dmlcore.estimators.dml import DMLCMR
    from dmlcore.estimators.tsls import TwoStageLeastSquares
    table = iv_table()
    table["z2"] = table["z"] ** 2 + np.random.default_rng(1).normal(size=len(table))
    data = CausalData(table, "iv", "y", treatment=["a", "x"], instrument=["z", "z2"])
    msg = error_of(lambda: DMLCMR("linear", folds=2).fit(data))
    assert "2 treatment columns (a, x)" in msg and "give one treatment column" in msg
    assert set(TwoStageLeastSquares().fit(data).coef_.index) >= {"a", "x"}


def test_too_few_rows_rejected():
    msg = error_of(lambda: iv(iv_table().iloc[:3]))
    assert "3 row(s)" in msg and "at least 4" in msg


@pytest.mark.parametrize("folds", [1, 0, -3, 2.5, "3"])
def test_check_folds_rejects_bad_k(folds):
    data = iv(iv_table(n=100))
    msg = error_of(lambda: data.check_folds(folds))
    assert "folds (K)" in msg and "at least 2" in msg and repr(folds) in msg


def test_check_folds_needs_ten_rows_per_fold():
    data = iv(iv_table(n=40))
    data.check_folds(4)  # exactly 10 per fold: fine
    data.check_folds(np.int64(2))
    msg = error_of(lambda: data.check_folds(5))
    assert "5 folds need at least 50 rows" in msg and "has 40" in msg
    assert "fewer folds or more data" in msg


# ------------------------------------------------------------------ CMR form
def test_iv_cmr_form():
    table = iv_table()
    data = iv(table)
    assert data.input_columns == ["a", "x"]
    assert data.conditioning_columns == ["z", "x"]
    assert data.modelled_columns == ["a"]
    arr = data.cmr()
    np.testing.assert_array_equal(arr.y, table["y"].to_numpy())
    np.testing.assert_array_equal(arr.inputs, table[["a", "x"]].to_numpy())
    np.testing.assert_array_equal(arr.conditioning, table[["z", "x"]].to_numpy())
    assert arr.modelled_index == [0]
    assert arr.known_map == [(1, 1)]
    np.testing.assert_array_equal(arr.modelled, table[["a"]].to_numpy())
    assert arr.n == len(table)


def test_pcl_cmr_form():
    table = pcl_table()
    data = CausalData(table, "pcl", "y", treatment="a", treatment_proxy=["v1", "v2"], outcome_proxy="w",
                      covariates="x")
    assert data.input_columns == ["a", "w", "x"]
    assert data.conditioning_columns == ["a", "v1", "v2", "x"]
    assert data.modelled_columns == ["w"]
    arr = data.cmr()
    assert arr.modelled_index == [1]
    assert arr.known_map == [(0, 0), (2, 3)]


def test_generic_cmr_form_allows_input_also_conditioning():
    table = pcl_table()
    data = CausalData(table, "cmr", "y", inputs=["w", "a", "x"], conditioning=["v1", "a"])
    assert data.input_columns == ["w", "a", "x"]
    assert data.conditioning_columns == ["v1", "a"]
    assert data.modelled_columns == ["w", "x"]
    arr = data.cmr()
    assert arr.modelled_index == [0, 2]
    assert arr.known_map == [(1, 1)]


def test_generic_cmr_outcome_cannot_be_input():
    with pytest.raises(DMLCoreError, match="'y'"):
        CausalData(pcl_table(), "cmr", "y", inputs=["y", "a"], conditioning=["v1"])


def test_assemble_places_draws_and_known_columns():
    arr = CMRArrays(y=np.zeros(2), inputs=np.zeros((2, 4)), conditioning=np.zeros((2, 3)),
                    input_names=["w", "a", "m", "x"], conditioning_names=["x", "v", "a"],
                    modelled_names=["w", "m"])
    C = np.array([[10.0, 20.0, 30.0], [11.0, 21.0, 31.0]])
    draws = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2) + 100  # (n=2, m=3, dm=2)
    out = arr.assemble(C, draws)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out[:, :, 0], draws[:, :, 0])   # w: first modelled column
    np.testing.assert_array_equal(out[:, :, 2], draws[:, :, 1])   # m: second modelled column
    np.testing.assert_array_equal(out[:, :, 1], np.repeat(C[:, [2]], 3, axis=1))  # a: known, C column 2
    np.testing.assert_array_equal(out[:, :, 3], np.repeat(C[:, [0]], 3, axis=1))  # x: known, C column 0


def test_assemble_on_iv_data_reproduces_inputs_from_observed_treatment():
    table = iv_table()
    arr = iv(table).cmr()
    out = arr.assemble(arr.conditioning, arr.modelled[:, None, :])
    np.testing.assert_array_equal(out[:, 0, :], arr.inputs)


def test_subset_keeps_roles_and_rows():
    table = iv_table()
    data = iv(table, name="mine")
    sub = data.subset(np.arange(10, 30))
    assert sub.roles() == data.roles() and sub.name == "mine"
    np.testing.assert_array_equal(sub.table["y"].to_numpy(), table["y"].to_numpy()[10:30])
    assert list(sub.table.index) == list(range(20))

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.ihdp import (COVARIATES, ihdp_covariates, list_replicates, load_replicate,
                               semisynthetic_f, simulate_ihdp_like, simulate_semisynthetic)
from dmlcore.errors import DMLCoreError

# shared/ sits beside the project root: <root>/../shared/data
SHARED_IHDP = Path(__file__).resolve().parents[2] / "shared" / "data" / "ihdp"
SETTING = SHARED_IHDP / "3000_5_6_2_IHDP_n_0.1"
needs_shared = pytest.mark.skipif(not SETTING.is_dir(),
                                  reason=f"the IHDP replicates ({SETTING}) are not in this checkout")
needs_econml = pytest.mark.skipif(importlib.util.find_spec("econml") is None,
                                  reason="the IHDP covariates ship with econml, which is not installed")
ALL_COLUMNS = ["x1", "x2", "x3", "x4", "x5", "x6", "u1", "z1", "t1", "d1", "y1", "g1", "v1",
               "m1", "m2", "m3", "w1"]


class TableOracle:
    """Predicts a column of a reference table by looking its input rows up."""

    def __init__(self, table, inputs, target):
        self.inputs = inputs
        self.lookup = {tuple(row): value for row, value in
                       zip(table[inputs].to_numpy(), table[target].to_numpy())}

    def predict(self, frame):
        return np.array([self.lookup[tuple(row)] for row in frame[self.inputs].to_numpy()])


def _fake_replicate(folder: Path, rows: int = 30, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    for split in ("train", "val", "test"):
        table = pd.DataFrame(rng.normal(size=(rows, len(ALL_COLUMNS))), columns=ALL_COLUMNS)
        table["z1"] = rng.integers(5, size=rows).astype(float)
        table.to_csv(folder / f"{split}.csv", index=False)
    return folder


# ----------------------------------------------------------- replicate files
def test_load_replicate_roles_and_truth(tmp_path):
    folder = _fake_replicate(tmp_path / "setting" / "0")
    sim = load_replicate(folder)
    data = sim.data
    assert data.problem == "iv" and list(data.table.columns) == ["y1", "t1", "z1", *COVARIATES]
    assert data.input_columns == ["t1", *COVARIATES]
    assert data.conditioning_columns == ["z1", *COVARIATES]
    val = pd.read_csv(folder / "val.csv")
    assert sim.truth.score(TableOracle(val, ["t1", *COVARIATES], "v1")) == {"mse": 0.0}
    assert sim.truth.score(TableOracle(val, ["t1", *COVARIATES], "y1"))["mse"] > 0.1
    assert "val.csv" in sim.truth.description
    curve = sim.truth.curve(TableOracle(val, ["t1", *COVARIATES], "v1"))
    assert curve["x"].is_monotonic_increasing and np.allclose(curve["estimate"], curve["truth"])
    test = pd.read_csv(folder / "test.csv")
    on_test = load_replicate(folder, split_test="test")
    assert on_test.truth.score(TableOracle(test, ["t1", *COVARIATES], "v1")) == {"mse": 0.0}


def test_load_replicate_errors(tmp_path):
    with pytest.raises(DMLCoreError, match="does not exist"):
        load_replicate(tmp_path / "nowhere")
    folder = _fake_replicate(tmp_path / "s" / "0")
    with pytest.raises(DMLCoreError, match="split_test must be one of"):
        load_replicate(folder, split_test="validation")
    with pytest.raises(DMLCoreError, match="both 'val'"):
        load_replicate(folder, split_train="val", split_test="val")
    (folder / "val.csv").unlink()
    with pytest.raises(DMLCoreError, match="val.csv is missing"):
        load_replicate(folder)
    pd.read_csv(folder / "test.csv").drop(columns=["z1"]).to_csv(folder / "train.csv", index=False)
    with pytest.raises(DMLCoreError, match="lacks the column"):
        load_replicate(folder, split_test="test")
    (folder / "train.csv").write_bytes(b"\x80\x04\x95 not a table")  # a pickle named .csv
    with pytest.raises(DMLCoreError, match="pickle"):
        load_replicate(folder, split_test="test")


def test_list_replicates_sorts_by_number_and_explains(tmp_path):
    for k in (10, 2, 0, 1):
        _fake_replicate(tmp_path / "setting" / str(k), rows=5)
    assert [p.name for p in list_replicates(tmp_path / "setting")] == ["0", "1", "2", "10"]
    with pytest.raises(DMLCoreError, match="It has settings: setting"):
        list_replicates(tmp_path)
    with pytest.raises(DMLCoreError, match="does not exist"):
        list_replicates(tmp_path / "missing")


@needs_shared
def test_shared_replicates_load():
    replicates = list_replicates(SETTING)
    assert [p.name for p in replicates] == [str(k) for k in range(20)]
    sim = load_replicate(replicates[0])
    assert len(sim.data.table) == 470
    val = pd.read_csv(replicates[0] / "val.csv")
    assert len(val) == 202
    assert sim.truth.score(TableOracle(val, ["t1", *COVARIATES], "v1")) == {"mse": 0.0}
    assert not {"u1", "d1", "g1", "v1", "w1", "m1"} & set(sim.data.table.columns)


# --------------------------------------------------------------- generator
def _covariates(rows=200, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(3.0, 2.0, size=(rows, 4)), columns=["a", "b", "c", "d"])


def test_semisynthetic_table_and_truth():
    sim = simulate_semisynthetic(_covariates(), n_instrument_levels=3, seed=1)
    data = sim.data
    assert len(data.table) == 180
    assert data.input_columns == ["treatment", "a", "b", "c", "d"]
    assert set(data.table["instrument"]) == {1.0, 2.0, 3.0}
    assert data.table["outcome"].mean() == pytest.approx(0.0, abs=1e-12)
    assert data.table["outcome"].std(ddof=0) == pytest.approx(1.0)
    assert data.table[["a", "b", "c", "d"]].abs().max().max() < 6     # standardized
    mean, sd = sim.params["outcome_mean"], sim.params["outcome_sd"]

    class Oracle:
        def predict(self, frame):
            return (semisynthetic_f(frame["treatment"], frame[["a", "b", "c", "d"]]) - mean) / sd

    assert sim.truth.score(Oracle())["mse"] == pytest.approx(0.0, abs=1e-20)
    curve = sim.truth.curve(Oracle())
    np.testing.assert_allclose(curve["estimate"], curve["truth"])
    # the outcome is f plus noise: its residual variance is about 4 sd_eps² + sd_delta² on the raw scale
    residual = data.table["outcome"] * sd + mean - semisynthetic_f(data.table["treatment"],
                                                                   data.table[["a", "b", "c", "d"]])
    assert residual.std() == pytest.approx(np.sqrt(4 * 0.01 + 1.0), rel=0.2)


def test_semisynthetic_f_and_determinism():
    x = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
    expected = [0.9 * 4 - 3 + 2 + 2 - np.sin(16), 0.9 - 1.5 - 0.5 / 3 + 0 - np.sin(9.5)]
    np.testing.assert_allclose(semisynthetic_f([2.0, -1.0 + 2.0], x), expected)
    a = simulate_semisynthetic(_covariates(), seed=5).data.table
    pd.testing.assert_frame_equal(a, simulate_semisynthetic(_covariates(), seed=5).data.table)
    assert not a.equals(simulate_semisynthetic(_covariates(), seed=6).data.table)


def test_semisynthetic_errors():
    covariates = _covariates()
    with pytest.raises(DMLCoreError, match="must be a pandas DataFrame"):
        simulate_semisynthetic(covariates.to_numpy())
    with pytest.raises(DMLCoreError, match="at least 3 columns"):
        simulate_semisynthetic(covariates[["a", "b"]])
    with pytest.raises(DMLCoreError, match="missing or non-numeric"):
        simulate_semisynthetic(covariates.assign(b=np.where(covariates.index == 4, np.nan, 1.0)))
    with pytest.raises(DMLCoreError, match="constant"):
        simulate_semisynthetic(covariates.assign(c=1.0))
    with pytest.raises(DMLCoreError, match="Rename"):
        simulate_semisynthetic(covariates.rename(columns={"d": "outcome"}))
    with pytest.raises(DMLCoreError, match="n_instrument_levels"):
        simulate_semisynthetic(covariates, n_instrument_levels=1)
    with pytest.raises(DMLCoreError, match="noise_sd"):
        simulate_semisynthetic(covariates, noise_sd=-1.0)


@needs_econml
def test_ihdp_like_uses_the_747_ihdp_children():
    covariates = ihdp_covariates()
    assert covariates.shape == (747, 6)
    sim = simulate_ihdp_like(seed=0)
    assert len(sim.data.table) == 672 and sim.data.name == "ihdp-like"
    assert sim.data.covariates == list(covariates.columns)


@needs_econml
@needs_shared
def test_ihdp_covariates_are_those_of_the_replicates():
    shipped = ihdp_covariates()
    rows = pd.concat([pd.read_csv(SETTING / "0" / f"{s}.csv") for s in ("train", "val", "test")])
    # birth weight, weeks preterm, birth order, mother's age agree exactly (standardized, ddof 1)
    for column, x in (("birth_weight", "x1"), ("weeks_preterm", "x3"), ("birth_order", "x4"),
                      ("mother_age", "x6")):
        values = shipped[column].to_numpy(dtype=float)
        standardized = np.sort((values - values.mean()) / values.std(ddof=1))
        np.testing.assert_allclose(standardized, np.sort(rows[x].to_numpy()), atol=1e-9)

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dmlcore.data.ihdp import (CODE_WEIGHTS, COVARIATES, code_treatment_mean, ihdp_covariates,
                               list_replicates, load_replicate, semisynthetic_f, simulate_ihdp_like,
                               simulate_semisynthetic)
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
    sim = simulate_semisynthetic(_covariates(), n_instrument_levels=3, seed=1, design="text")
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
            return (semisynthetic_f(frame["treatment"], frame[["a", "b", "c", "d"]], "text") - mean) / sd

    assert sim.truth.score(Oracle())["mse"] == pytest.approx(0.0, abs=1e-20)
    curve = sim.truth.curve(Oracle())
    np.testing.assert_allclose(curve["estimate"], curve["truth"])
    # the outcome is f plus noise: its residual variance is about 4 sd_eps² + sd_delta² on the raw scale
    residual = data.table["outcome"] * sd + mean - semisynthetic_f(data.table["treatment"],
                                                                   data.table[["a", "b", "c", "d"]], "text")
    assert residual.std() == pytest.approx(np.sqrt(4 * 0.01 + 1.0), rel=0.2)
    assert sim.params["design"] == "text" and (sim.params["confounder_sd"], sim.params["noise_sd"]) == (0.1, 1.0)


def test_semisynthetic_follows_the_code_by_default():
    covariates = _covariates(rows=400, seed=2)
    sim = simulate_semisynthetic(covariates, n_instrument_levels=4, seed=3)
    data, mean, sd = sim.data, sim.params["outcome_mean"], sim.params["outcome_sd"]
    assert sim.params["design"] == "code" and (sim.params["confounder_sd"], sim.params["noise_sd"]) == (1.0, 0.1)
    # 63 % fitted, 27 % scored, 10 % left out, as the authors' train / validation / test files
    assert len(data.table) == 400 - 108 - 40 and "held-out 108 rows" in sim.truth.description
    assert set(data.table["instrument"]) == {0.0, 1.0, 2.0, 3.0}
    x = data.table[["a", "b", "c", "d"]]
    # covariates standardized with the sample sd (ddof 1), as in the replicates
    for ddof, expected in ((1, True), (0, False)):
        full = (covariates["a"] - covariates["a"].mean()) / covariates["a"].std(ddof=ddof)
        assert np.isin(x["a"].round(10), full.round(10)).all() == expected
    # A = W[Z] X + shift[Z] + 0.2 U + e_A: what the instrument and covariates leave is 0.2 U + e_A,
    # sd sqrt(0.04 + 0.01) (as the replicates' t1 - d1)
    left = data.table["treatment"] - code_treatment_mean(x, data.table["instrument"])
    assert left.std() == pytest.approx(np.sqrt(0.05), rel=0.15)
    # Y = f + 2 U + e_Y, and U is shared with the treatment: corr(Y - f, A - W X - shift) = 2(0.2) / (2.0025 * 0.224)
    rest = data.table["outcome"] * sd + mean - semisynthetic_f(data.table["treatment"], x)
    assert rest.std() == pytest.approx(np.sqrt(4 + 0.01), rel=0.15)
    assert np.corrcoef(rest, left)[0, 1] == pytest.approx(0.4 / (np.sqrt(4.01) * np.sqrt(0.05)), abs=0.05)

    class Oracle:
        def predict(self, frame):
            return (semisynthetic_f(frame["treatment"], frame[["a", "b", "c", "d"]]) - mean) / sd

    assert sim.truth.score(Oracle())["mse"] == pytest.approx(0.0, abs=1e-20)
    assert sim.truth.score(TextOracle(mean, sd))["mse"] > 0.01     # the text's f is another function
    curve = sim.truth.curve(Oracle())
    np.testing.assert_allclose(curve["estimate"], curve["truth"])
    # explicit sds replace the design's
    quiet = simulate_semisynthetic(covariates, n_instrument_levels=4, seed=3, confounder_sd=0.0, noise_sd=0.0)
    q = quiet.data.table
    np.testing.assert_allclose(q["treatment"], code_treatment_mean(q[["a", "b", "c", "d"]], q["instrument"]),
                               atol=1e-12)


class TextOracle:
    """Predicts with the text's f (normalized): wrong on the code's design."""

    def __init__(self, mean, sd):
        self.mean, self.sd = mean, sd

    def predict(self, frame):
        return (semisynthetic_f(frame["treatment"], frame[["a", "b", "c", "d"]], "text") - self.mean) / self.sd


def test_semisynthetic_f_and_determinism():
    x = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
    text = [0.9 * 4 - 3 + 2 + 2 - np.sin(16), 0.9 - 1.5 - 0.5 / 3 + 0 - np.sin(9.5)]
    np.testing.assert_allclose(semisynthetic_f([2.0, -1.0 + 2.0], x, "text"), text)
    code = [0.9 * 4 - 3 + 4 - 2 - np.sin(19), 0.9 - 1.5 - 1 / 3 - 0 - np.sin(10.25)]
    np.testing.assert_allclose(semisynthetic_f([2.0, 1.0], x), code)
    np.testing.assert_allclose(code_treatment_mean(x, [0, 4]), [0.8 - 0.4 - 0.6, 0.2 - 0.25 - 0.8])
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
    with pytest.raises(DMLCoreError, match="design must be one of code, text; got 'paper'"):
        simulate_semisynthetic(covariates, design="paper")
    with pytest.raises(DMLCoreError, match="at most 5 instrument levels.*got 6"):
        simulate_semisynthetic(covariates, n_instrument_levels=6)
    assert len(simulate_semisynthetic(covariates, n_instrument_levels=6, design="text").data.table) == 180
    wide = pd.DataFrame(np.random.default_rng(1).normal(size=(50, 11)), columns=[f"c{i}" for i in range(11)])
    with pytest.raises(DMLCoreError, match="at most 10 covariates.*got 11"):
        simulate_semisynthetic(wide)


@needs_shared
def test_code_design_is_the_generator_of_the_replicates():
    """Every replicate file of both settings obeys the code's equations as dmlcore writes them."""
    raw_a, raw_y, u_all = [], [], []
    for setting in sorted(SHARED_IHDP.glob("3000_*_IHDP_n_0.1")):
        for folder in list_replicates(setting):
            stats = np.load(folder / "mean_std.npz")
            mean, sd = float(stats["mean"]), float(stats["std"])
            np.testing.assert_allclose(np.load(folder / "coefs.npz")["x_coef"], CODE_WEIGHTS)
            for split in ("train", "val", "test"):
                t = pd.read_csv(folder / f"{split}.csv")
                x = t[COVARIATES]
                np.testing.assert_allclose(t["d1"], code_treatment_mean(x, t["z1"]), atol=1e-6)
                np.testing.assert_allclose(t["v1"] * sd + mean, semisynthetic_f(t["t1"], x), atol=1e-9)
                np.testing.assert_allclose(t["g1"] * sd + mean, 0.9 * t["t1"] ** 2 - 1.5 * t["t1"], atol=1e-9)
                raw_a.append(t["t1"] - t["d1"] - 0.2 * t["u1"])
                raw_y.append((t["y1"] - t["v1"]) * sd - 2.0 * t["u1"])
                u_all.append(t["u1"])
    assert len(u_all) == 3 * 40
    # the code's sds (DESIGN_SDS["code"]): confounder 1, noises 0.1
    assert np.std(np.concatenate(u_all)) == pytest.approx(1.0, rel=0.02)
    assert np.std(np.concatenate(raw_a)) == pytest.approx(0.1, rel=0.02)
    assert np.std(np.concatenate(raw_y)) == pytest.approx(0.1, rel=0.02)


@needs_econml
def test_ihdp_like_uses_the_747_ihdp_children():
    covariates = ihdp_covariates()
    assert covariates.shape == (747, 6)
    sim = simulate_ihdp_like(seed=0)
    # the code's design: the sizes of the authors' train (fitted) and validation (scored) files
    assert len(sim.data.table) == 470 and "held-out 202 rows" in sim.truth.description
    assert sim.data.name == "ihdp-like" and sim.params["design"] == "code"
    assert sim.data.covariates == list(covariates.columns)
    text = simulate_ihdp_like(seed=0, design="text")
    assert len(text.data.table) == 672 and "held-out 75 rows" in text.truth.description
    assert text.params["design"] == "text" and text.params["noise_sd"] == 1.0
    with pytest.raises(DMLCoreError, match="design must be one of code, text; got 'TEXT'"):
        simulate_ihdp_like(design="TEXT")


@needs_econml
def test_ihdp_like_design_in_registry_cli_and_studies(capsys, tmp_path):
    from dmlcore.cli import build_parser, main
    from dmlcore.data.registry import dataset_options, load_dataset
    from dmlcore.studies.command import study_spec
    from dmlcore.studies.spec import spec_from_dict
    from test_cli import assert_one_line_error

    assert dataset_options("ihdp-like") == {"design": "code"}
    assert load_dataset("ihdp-like", seed=1).params["design"] == "code"
    text = load_dataset("ihdp-like", seed=1, design="text")
    assert text.params["design"] == "text" and len(text.data.table) == 672
    configs = spec_from_dict({"dataset": "ihdp-like", "data": {"design": "code,text"}, "methods": ["2sls"],
                              "seeds": 0}).configs()
    assert [c["data"] for c in configs] == [{"design": "code"}, {"design": "text"}]
    flags = build_parser().parse_args(["study", "--dataset", "ihdp-like", "--design", "code,text", "--methods",
                                       "2sls", "--seeds", "0"])
    assert study_spec(flags).configs() == configs
    # fit: the record says which design was fitted
    out = tmp_path / "run.json"
    assert main(["fit", "--dataset", "ihdp-like", "--design", "text", "--method", "2sls", "--json", str(out)]) == 0
    assert "n=672" in capsys.readouterr().out
    assert json.loads(out.read_text())["config"]["data"]["design"] == "text"
    # bench: each row records its design
    rows_csv = tmp_path / "b.csv"
    assert main(["bench", "--dataset", "ihdp-like", "--methods", "2sls", "--reps", "1", "--out", str(rows_csv)]) == 0
    rows = pd.read_csv(rows_csv)
    assert list(rows["design"]) == ["code"] and list(rows["n"]) == [470]
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:       # argparse refuses the value before anything runs
        main(["fit", "--dataset", "ihdp-like", "--design", "paper", "--method", "2sls"])
    assert_one_line_error(stop.value.code, capsys.readouterr().err, "--design", "'paper'")


@needs_econml
@pytest.mark.usefixtures("fresh_runtime")        # tests/conftest.py
def test_data_page_offers_both_ihdp_designs():
    from test_app import DATA, start, texts

    at = start(DATA)
    at.selectbox(key="sim_name").set_value("ihdp-like").run()
    radio = at.radio(key="sim_ihdp_design")
    assert radio.value == "code" and len(radio.options) == 2
    assert any(c.startswith("The authors' code behind the paper's numbers") for c in texts(at.caption))
    radio.set_value("text").run()
    assert any(c.startswith("The paper's appendix") for c in texts(at.caption))
    at.button(key="sim_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert {m.label: m.value for m in at.metric}["Rows"] == "672"


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

"""Tests of the command line (dmlcore.cli): ``fit`` and ``bench``, their outputs and their errors."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dmlcore.cli import main, summarize
from dmlcore.data.simulate import simulate_demand_iv

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--n", "200", "--epochs", "2", "--n-draws", "4"]
CONTRACT = ("method", "dataset", "n", "seed", "folds", "learner", "mse", "seconds", "fold_losses")


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *words):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0]


# ------------------------------------------------------------------ fit
@pytest.mark.parametrize("learner, folds", [("nn", 3), ("gb", 2)])
def test_fit_prints_summary_and_writes_contract_json(capsys, tmp_path, learner, folds):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", *TINY, "--learner", learner, "--folds", str(folds), "--seed", "4",
                              "--json", str(path))
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1
    rec = json.loads(path.read_text())
    for key in CONTRACT:
        assert key in rec
    assert rec["method"] == "dml-cmr" and rec["dataset"] == "demand-iv"
    assert rec["n"] == 200 and rec["seed"] == 4 and rec["folds"] == folds and rec["learner"] == learner
    assert isinstance(rec["mse"], float) and np.isfinite(rec["mse"]) and rec["mse"] >= 0
    assert rec["seconds"] > 0
    assert len(rec["fold_losses"]) == folds
    assert [e["fold"] for e in rec["fold_losses"]] == list(range(folds))
    assert sum(e["rows"] for e in rec["fold_losses"]) == 200
    assert all("s" in e and "g" in e and "second_stage_loss" in e for e in rec["fold_losses"])
    line = lines[0]
    assert line.startswith(f"dml-cmr on demand-iv (n=200, learner={learner}, folds={folds}, seed=4)")
    assert f"mse={rec['mse']:.4f}" in line


def test_fit_ce_method_records_one_fold(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", *TINY, "--method", "ce-dml-cmr", "--learner", "linear",
                              "--json", str(path))
    assert code == 0, err
    rec = json.loads(path.read_text())
    assert rec["method"] == "ce-dml-cmr" and rec["folds"] == 1 and len(rec["fold_losses"]) == 1


def test_fit_own_csv(capsys, tmp_path):
    table = simulate_demand_iv(300, seed=1).data.table
    csv_path = tmp_path / "mine.csv"
    table.to_csv(csv_path, index=False)
    out_json, preds = tmp_path / "run.json", tmp_path / "pred.csv"
    code, out, err = run_main(capsys, "fit", "--csv", str(csv_path), "--outcome", "sales", "--treatment", "price",
                              "--instrument", "fuel_price", "--covariates", "time, customer_type",
                              "--learner", "linear", "--folds", "3", "--json", str(out_json),
                              "--predictions", str(preds))
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1 and "mse=n/a (no ground truth)" in out
    rec = json.loads(out_json.read_text())
    assert rec["dataset"] == "mine.csv" and rec["n"] == 300 and rec["mse"] is None
    assert rec["roles"]["covariates"] == ["time", "customer_type"]
    assert len(rec["fold_losses"]) == 3
    with preds.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 300 and set(rows[0]) == {"price", "time", "customer_type", "f_hat"}
    # f-hat is finite and varies with the inputs
    assert all(np.isfinite(float(r["f_hat"])) for r in rows)
    assert len({round(float(r["f_hat"]), 6) for r in rows}) > 10


def test_fit_demand_pcl(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--dataset", "demand-pcl", *TINY, "--learner", "gb", "--folds", "2",
                              "--json", str(path))
    assert code == 0, err
    rec = json.loads(path.read_text())
    assert rec["dataset"] == "demand-pcl" and rec["roles"]["outcome_proxy"] == ["views"]
    assert np.isfinite(rec["mse"]) and len(rec["fold_losses"]) == 2
    assert f"mse={rec['mse']:.4f}" in out


# ------------------------------------------------------------------ bad input
def test_unknown_dataset_via_subprocess():
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "dmlcore", "fit", "--dataset", "nope"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert_one_line_error(proc.returncode, proc.stderr, "'nope'", "demand-iv", "--csv")
    assert proc.stdout == ""


@pytest.mark.parametrize("argv, words", [
    (["fit", "--folds", "1", *TINY], ["folds (K)", "at least 2"]),
    (["fit", "--n", "5", "--epochs", "2"], ["n must be an integer of at least 20", "5"]),
    (["fit", "--n", "30", "--folds", "10", "--epochs", "2"], ["10 folds need at least 100 rows"]),
    (["fit", "--n", "100", "--rho", "1.5", "--epochs", "2"], ["rho"]),
    (["fit", *TINY, "--n-draws", "0"], ["n_draws"]),
    (["bench", "--methods", "naive,magic", "--sizes", "200"], ["'magic'"]),
    (["bench", "--sizes", "200,abc"], ["--sizes"]),
    (["bench", "--reps", "0", "--sizes", "200"], ["--reps"]),
    (["fit", *TINY, "--threads", "0"], ["--threads", "at least 1", "0"]),
])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, argv, words):
    code, out, err = run_main(capsys, *argv, *(["--out", str(tmp_path / "b.csv")] if argv[0] == "bench" else []))
    assert_one_line_error(code, err, *words)


def test_missing_outcome_column_in_csv(capsys, tmp_path):
    csv_path = tmp_path / "mine.csv"
    simulate_demand_iv(100, seed=1).data.table.to_csv(csv_path, index=False)
    code, out, err = run_main(capsys, "fit", "--csv", str(csv_path), "--outcome", "revenue", "--treatment",
                              "price", "--instrument", "fuel_price", "--learner", "linear", "--folds", "2")
    assert_one_line_error(code, err, "'revenue'", "not in the table")
    code, out, err = run_main(capsys, "fit", "--csv", str(csv_path), "--treatment", "price", "--instrument",
                              "fuel_price")
    assert_one_line_error(code, err, "--outcome")


def test_missing_csv_file(capsys, tmp_path):
    code, out, err = run_main(capsys, "fit", "--csv", str(tmp_path / "absent.csv"), "--outcome", "y",
                              "--treatment", "a", "--instrument", "z")
    assert_one_line_error(code, err)


def test_divergence_exits_2(capsys, monkeypatch):
    from dmlcore.learners.tabular import TabularOutcome
    monkeypatch.setattr(TabularOutcome, "predict", lambda self, k, C: np.full(len(C), np.nan))
    code, out, err = run_main(capsys, "fit", *TINY, "--learner", "linear", "--folds", "2")
    assert_one_line_error(code, err, "diverged")


# ------------------------------------------------------------------ bench
def test_bench_writes_rows_and_prints_summary(capsys, tmp_path):
    out_csv = tmp_path / "bench.csv"
    argv = ["bench", "--sizes", "200", "--reps", "2", "--methods", "ce-dml-cmr,naive", "--learner", "linear",
            "--epochs", "2", "--n-draws", "4", "--out", str(out_csv)]
    code, out, err = run_main(capsys, *argv)
    assert code == 0, err
    with out_csv.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4
    assert sorted((r["method"], r["seed"]) for r in rows) == [("ce-dml-cmr", "0"), ("ce-dml-cmr", "1"),
                                                              ("naive", "0"), ("naive", "1")]
    assert all(r["n"] == "200" and r["dataset"] == "demand-iv" and r["learner"] == "linear" for r in rows)
    assert all(r["folds"] == "1" for r in rows)
    assert all(np.isfinite(float(r["mse"])) and np.isfinite(float(r["mse_fresh"])) for r in rows)
    # summary table: header plus one line per (n, method) with median, quartiles and mean of the MSE
    lines = out.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if "median" in line)
    assert lines[header].split() == ["n", "method", "reps", "median", "q1", "q3", "mean", "sec"]
    cells = {line.split()[1]: line.split() for line in lines[header + 1:]}
    assert set(cells) == {"ce-dml-cmr", "naive"}
    for method, cell in cells.items():
        mse = np.array([float(r["mse"]) for r in rows if r["method"] == method])
        assert cell[0] == "200" and cell[2] == "2"
        assert float(cell[3]) == pytest.approx(np.median(mse), abs=1e-4)
        assert float(cell[4]) == pytest.approx(np.quantile(mse, 0.25), abs=1e-4)
        assert float(cell[5]) == pytest.approx(np.quantile(mse, 0.75), abs=1e-4)
        assert float(cell[6]) == pytest.approx(mse.mean(), abs=1e-4)
    # running again appends rows under the same header
    code, out, err = run_main(capsys, *argv)
    assert code == 0
    text = out_csv.read_text().splitlines()
    assert len(text) == 1 + 8 and text.count(text[0]) == 1


def test_bench_rows_record_the_noise_scale(capsys, tmp_path):
    argv = ["bench", "--sizes", "200", "--reps", "1", "--methods", "2sls", "--out"]
    mse = {}
    for scale in ("raw", "standardized"):
        code, out, err = run_main(capsys, *argv, str(tmp_path / f"{scale}.csv"), "--noise-scale", scale)
        assert code == 0, err
        with (tmp_path / f"{scale}.csv").open() as handle:
            rows = list(csv.DictReader(handle))
        assert [r["noise_scale"] for r in rows] == [scale]
        mse[scale] = float(rows[0]["mse"])
    assert mse["raw"] != mse["standardized"]          # the option reached the simulator
    # a file begun before the column existed keeps its header; a note says what its rows leave out
    old = tmp_path / "old.csv"
    old.write_text("dataset,n,seed,method,learner,folds,mse,mse_fresh,seconds\n")
    code, out, err = run_main(capsys, *argv, str(old))
    assert code == 0 and "without the column(s) noise_scale" in err
    lines = old.read_text().splitlines()
    assert len(lines) == 2 and lines[1].count(",") == 8


def test_threads_option_sets_torch_threads(capsys):
    import torch

    before = torch.get_num_threads()
    try:
        code, _, _ = run_main(capsys, "fit", *TINY, "--method", "2sls", "--threads", "2")
        assert code == 0
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_summarize_statistics():
    rows = [{"n": 100, "method": "naive", "mse": m, "seconds": 1.0} for m in (1.0, 2.0, 3.0, 10.0)]
    rows.append({"n": 50, "method": "naive", "mse": 7.0, "seconds": 3.0})
    lines = summarize(rows).splitlines()
    assert len(lines) == 3
    assert lines[1].split() == ["50", "naive", "1", "7.0000", "7.0000", "7.0000", "7.0000", "3.0"]
    assert lines[2].split() == ["100", "naive", "4", "2.5000", "1.7500", "4.7500", "4.0000", "1.0"]


def test_bench_on_data_without_ground_truth(capsys, tmp_path):
    """A real data set has no truth, so bench (whose rows and summary are MSEs) refuses it with exit 2
    and points to `study`, which reports effects and held-out residuals; no CSV is started."""
    pytest.importorskip("linearmodels")
    code, out, err = run_main(capsys, "bench", "--dataset", "mroz", "--sizes", "200", "--reps", "1",
                              "--methods", "naive", "--learner", "linear", "--out", str(tmp_path / "b.csv"))
    assert "unexpected" not in err
    assert code == 2 and "real data set" in err and "study --dataset mroz" in err
    assert not (tmp_path / "b.csv").exists()

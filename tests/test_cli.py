"""Tests of the command line (dmlcore.cli): ``fit`` and ``bench``, their outputs and their errors."""

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dmlcore.cli import build_parser, cli_datasets, main, summarize
from dmlcore.data.registry import DATASET_OPTIONS, dataset_options
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.estimators import METHODS, SETTINGS
from dmlcore.runs import fit_run
from dmlcore.studies.command import OWN_DATA_OPTIONS

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
    # the nuisances as fitted (named: the learner; "-" the outcome model the naive plug-in does not fit); no
    # own-loss pair without auto's scored candidates
    assert {(r["method"], r["nuisance_pair"], r["own_loss_pair"]) for r in rows} == {
        ("ce-dml-cmr", "linear|linear", ""), ("naive", "-|linear", "")}
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


def test_bench_takes_the_target_choice_of_nuisances(capsys, tmp_path):
    """--nuisance-choice reaches DML-CMR's fits in bench (issue 45's cells): the rows say target, and the pair
    fitted is the one the target judged best (its losses are not in the row, so the run's record says it)."""
    out_csv = tmp_path / "target.csv"
    code, out, err = run_main(capsys, "bench", "--sizes", "400", "--reps", "1", "--methods", "dml-cmr",
                              "--learner", "gb", "--folds", "3", "--epochs", "40", "--f-model", "linear",
                              "--no-debias", "--nuisance-choice", "target", "--out", str(out_csv))
    assert code == 0, err
    with out_csv.open() as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["nuisance_choice"] == "target" and row["outcome_learner"] == row["sampler"] == "auto"
    record = fit_run(simulate_demand_iv(400, 0).data, "dml-cmr", learner="gb", folds=3, epochs=40, f_model="linear",
                     nuisance_choice="target", heldout_folds=0, debias=False, seed=0).record
    assert row["nuisance_pair"] == record["nuisances"]["s"]["target_pair"]


def test_bench_rows_record_every_data_option(capsys, tmp_path):
    argv = ["bench", "--sizes", "200", "--reps", "1", "--methods", "2sls", "--iv-strength", "0.5", "--rho", "0.7",
            "--out"]
    mse = {}
    for scale in ("raw", "standardized"):
        code, out, err = run_main(capsys, *argv, str(tmp_path / f"{scale}.csv"), "--noise-scale", scale)
        assert code == 0, err
        with (tmp_path / f"{scale}.csv").open() as handle:
            rows = list(csv.DictReader(handle))
        assert [(r["noise_scale"], r["iv_strength"], r["rho"], r["ood_test"]) for r in rows] == [
            (scale, "0.5", "0.7", "False")]
        mse[scale] = float(rows[0]["mse"])
    assert mse["raw"] != mse["standardized"]          # the option reached the simulator
    # a file begun before the column existed keeps its header; a note says what its rows leave out
    old = tmp_path / "old.csv"
    old.write_text("dataset,n,seed,method,learner,folds,mse,mse_fresh,seconds\n")
    code, out, err = run_main(capsys, *argv, str(old))
    assert code == 0 and "without the column(s) rho, iv_strength, noise_scale, ood_test" in err
    lines = old.read_text().splitlines()
    assert len(lines) == 2 and lines[1].count(",") == 8


def test_threads_option_sets_torch_threads(capsys):
    import torch

    before = torch.get_num_threads()
    try:
        code, _, _ = run_main(capsys, "fit", "--n", "200", "--method", "2sls", "--threads", "2")
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


# ------------------------------------------------------------------ options a data set or method does not use
# a value for every data or own-file option the registries declare (a new declaration without one here fails
# loudly); a fit setting's value is its declaration's example
EXAMPLE = {"n": "200", "rho": "0.5", "iv_strength": "0.5", "noise_scale": "raw", "ood_test": None,
           "design": "text", "data_dir": "somewhere", "problem": "pcl", "categorical": "x", "dropna": None, "outcome": "y", "treatment": "a",
           "instrument": "z", "treatment_proxy": "p", "outcome_proxy": "w", "covariates": "x", "inputs": "a",
           "conditioning": "z"}


def flag(name, value="default"):
    if value == "default":       # a fit setting's example comes from its declaration
        value = EXAMPLE[name] if name in EXAMPLE else SETTINGS[name].text(SETTINGS[name].example())
    return [f"--{name.replace('_', '-')}"] + ([] if value is None else [value])


def fit_options(kind):
    """The options of `fit` that the registries declare as data set options or fit settings with a flag."""
    dests = {a.dest for a in build_parser().commands["fit"]._actions}
    declared = ({o for opts in DATASET_OPTIONS.values() for o in opts} if kind == "data" else
                {name for name, setting in SETTINGS.items() if setting.cli and setting.scope == "method"})
    return sorted(dests & declared)


def test_example_card_with_n_and_rho_is_refused_naming_both(capsys):
    code, out, err = run_main(capsys, "fit", "--dataset", "card", "--n", "100", "--rho", "0.1")
    assert_one_line_error(code, err, "--n", "--rho", "card is a real data set")
    assert out == ""


@pytest.mark.parametrize("dataset", cli_datasets())
def test_every_data_option_a_data_set_does_not_take_is_refused(capsys, dataset):
    """Each data set, with every fit option it does not take at once (even at its default value): exit 2
    naming them all, before any data is made."""
    unused = [o for o in fit_options("data") if o not in dataset_options(dataset)]
    argv = ["fit", "--dataset", dataset, "--method", "2sls"]
    for option in unused:
        argv += flag(option)
    code, out, err = run_main(capsys, *argv)
    assert_one_line_error(code, err, *(f"--{o.replace('_', '-')}" for o in unused))
    named = re.search(r"(?:options? |\()((?:--[\w-]+(?:, )?)+) (?:for|given)", err)[1]
    assert named.split(", ") == [f"--{o.replace('_', '-')}" for o in unused]     # those it takes are not named


def test_an_option_at_its_default_value_is_still_refused(capsys):
    code, out, err = run_main(capsys, "fit", "--dataset", "demand-pcl", "--rho", "0.9", "--method", "2sls")
    assert_one_line_error(code, err, "Unknown option --rho for demand-pcl", "it takes --n")


@pytest.mark.parametrize("method", list(METHODS))
def test_every_setting_a_method_does_not_read_is_refused(capsys, method):
    unused = [s for s in fit_options("settings") if s not in METHODS[method].settings]
    if not unused:
        pytest.skip(f"{method} reads every setting")
    argv = ["fit", "--n", "200", "--method", method]
    for setting in unused:
        argv += flag(setting)
    code, out, err = run_main(capsys, *argv)
    assert_one_line_error(code, err, f"{method} does not use", *(f"--{s.replace('_', '-')}" for s in unused))


def test_naive_refuses_folds_and_records_the_one_fold_it_uses(capsys, tmp_path):
    code, out, err = run_main(capsys, "fit", *TINY, "--method", "naive", "--learner", "linear", "--folds", "5")
    assert_one_line_error(code, err, "naive does not use --folds")
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", *TINY, "--method", "naive", "--learner", "linear", "--json", str(path))
    rec = json.loads(path.read_text())
    assert code == 0 and rec["folds"] == 1 == len(rec["fold_losses"]) and "folds=1" in out


def test_a_method_without_folds_records_none_and_prints_none(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = run_main(capsys, "fit", "--n", "200", "--method", "2sls", "--json", str(path))
    assert code == 0 and json.loads(path.read_text())["folds"] is None and "folds" not in out


@pytest.mark.parametrize("own", [o for o in OWN_DATA_OPTIONS if o != "csv"])
def test_own_data_options_without_csv_are_refused(capsys, own):
    code, out, err = run_main(capsys, "fit", "--dataset", "card", "--method", "2sls", *flag(own))
    assert_one_line_error(code, err, f"--{own.replace('_', '-')}", "--csv FILE")


def test_csv_refuses_dataset_and_simulator_options(capsys, tmp_path):
    path = tmp_path / "mine.csv"
    simulate_demand_iv(100, seed=1).data.table.to_csv(path, index=False)
    code, out, err = run_main(capsys, "fit", "--csv", str(path), "--outcome", "sales", "--treatment", "price",
                              "--instrument", "fuel_price", "--dataset", "card", "--n", "100", "--iv-strength", "2")
    assert_one_line_error(code, err, "--dataset does not apply with --csv", "--n", "--iv-strength")


@pytest.mark.parametrize("argv, words", [
    (["--dataset", "demand-pcl", "--rho", "0.5"], ["Unknown option --rho for demand-pcl", "it takes --sizes"]),
    (["--dataset", "ihdp-like"], ["Unknown option --sizes for ihdp-like"]),
    (["--methods", "2sls", "--learner", "gb", "--epochs", "3"], ["2sls does not use --learner, --epochs"]),
    (["--methods", "2sls,naive", "--folds", "3"], ["None of 2sls, naive uses --folds"]),
    (["--methods", "ce-dml-cmr,naive", "--nuisance-choice", "target"], ["None of ce-dml-cmr, naive uses --nuisance-choice"]),
])
def test_bench_refuses_what_its_data_set_and_methods_do_not_use(capsys, tmp_path, argv, words):
    code, out, err = run_main(capsys, "bench", "--sizes", "200", "--reps", "1", *argv, "--out", str(tmp_path / "b.csv"))
    assert_one_line_error(code, err, *words)
    assert not (tmp_path / "b.csv").exists()


# ------------------------------------------------------------------ list and --help
def test_list_reads_every_data_set_and_method_from_the_registries(capsys):
    code, out, err = run_main(capsys, "list")
    assert code == 0, err
    datasets, methods = out.split("\nMethods (")
    blocks = {b.split()[0]: b for b in datasets.split("\n\n")[1:] if b.strip() and not b.startswith("Your own")}
    assert list(blocks) == cli_datasets()
    assert "card  IV  3,010 rows  real data" in blocks["card"] and "instrument nearc4" in blocks["card"]
    assert "options: none" in blocks["card"] and "Card (1995)" in blocks["card"]
    assert blocks["rhc"].startswith("rhc  PCL  5,735 rows") and "outcome proxy ph1, hema1" in blocks["rhc"]
    assert "--n rows (default 5,000)" in blocks["demand-iv"] and "categorical customer_type" in blocks["demand-iv"]
    assert "options: --n, --rho, --iv-strength, --noise-scale, --ood-test" in blocks["demand-iv"]
    entries = {b.split()[0]: " ".join(b.split()) for b in methods.split("\n\n")[1:] if not b.startswith("Every")}
    assert list(entries) == list(METHODS)
    for name, entry in METHODS.items():
        assert f"problems: {', '.join(p.upper() for p in entry.problems)}" in entries[name]
        for setting in ("folds", "learner", "outcome_learner"):
            assert (f"--{setting.replace('_', '-')}" in entries[name].split("settings:")[1]) == (
                setting in entry.settings), (name, setting)
    code, only, err = run_main(capsys, "list", "methods")
    assert code == 0 and only.startswith("Methods (") and "card" not in only


def test_help_lists_the_choices(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in cli_datasets():
        assert f"{name}," in text or f"{name} (default" in text
    assert "{" + ",".join(METHODS) + "}" in text
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert ", ".join(METHODS) in " ".join(capsys.readouterr().out.split())


# ------------------------------------------------------------------ own data: --categorical, --dropna
def _own_csv(tmp_path, table=None):
    table = simulate_demand_iv(300, seed=1).data.table if table is None else table
    path = tmp_path / "mine.csv"
    table.to_csv(path, index=False)
    return path, ["fit", "--csv", str(path), "--outcome", "sales", "--treatment", "price", "--instrument",
                  "fuel_price", "--covariates", "time,customer_type"]


def test_categorical_is_used_and_recorded(capsys, tmp_path):
    path, argv = _own_csv(tmp_path)
    runs = {}
    for extra in ([], ["--categorical", "customer_type"]):
        out_json = tmp_path / f"run{len(extra)}.json"
        code, out, err = run_main(capsys, *argv, "--method", "2sls", "--heldout-folds", "0", *extra,
                                  "--json", str(out_json))
        assert code == 0, err
        runs[len(extra)] = json.loads(out_json.read_text())
    assert runs[0]["categorical"] == [] and runs[2]["categorical"] == ["customer_type"]
    # 2SLS reads the codes as dummies: one coefficient per level but the first, none for the code itself
    assert "customer_type" in runs[0]["coefficients"] and "customer_type" not in runs[2]["coefficients"]
    assert len(runs[2]["coefficients"]) == len(runs[0]["coefficients"]) + 5
    # the dashboard's runs go through fit_run too: its choice is recorded the same way
    sim = simulate_demand_iv(200, seed=0)
    assert fit_run(sim.data, "2sls", truth=sim.truth).record["categorical"] == ["customer_type"]
    code, out, err = run_main(capsys, *argv, "--categorical", "nope")
    assert_one_line_error(code, err, "'nope' has no role")


def test_missing_values_are_refused_naming_every_column_or_dropped(capsys, tmp_path):
    table = simulate_demand_iv(300, seed=1).data.table
    table.loc[[0, 1, 2], "time"] = np.nan
    table.loc[[2, 5], "fuel_price"] = np.nan
    table["unused"] = np.nan                        # not a role: its gaps do not matter
    path, argv = _own_csv(tmp_path, table)
    code, out, err = run_main(capsys, *argv, "--method", "2sls")
    assert_one_line_error(code, err, "fuel_price (2)", "time (3)", "4 of 300 rows", "--dropna")
    assert "unused" not in err
    out_json = tmp_path / "run.json"
    code, out, err = run_main(capsys, *argv, "--method", "2sls", "--heldout-folds", "0", "--dropna",
                              "--json", str(out_json))
    assert code == 0, err
    assert "--dropna dropped 4 of 300 rows" in err
    assert json.loads(out_json.read_text())["n"] == 296 and "n=296" in out


def test_dropna_keeps_the_rows_the_cluster_column_needs(capsys, tmp_path):
    table = simulate_demand_iv(300, seed=1).data.table.assign(group=lambda t: np.arange(len(t)) % 30)
    table["group"] = table["group"].astype(float)
    table.loc[[7, 8], "group"] = np.nan
    path, argv = _own_csv(tmp_path, table)
    code, out, err = run_main(capsys, *argv, "--method", "2sls", "--heldout-folds", "0", "--cov", "clustered",
                              "--cluster", "group", "--dropna")
    assert code == 0, err
    assert "dropped 2 of 300 rows" in err and "group (2)" in err


@pytest.mark.parametrize("option", ["--weights", "--absorb"])
def test_dropna_keeps_the_rows_the_weights_and_fixed_effects_need(capsys, tmp_path, option):
    table = simulate_demand_iv(300, seed=1).data.table.assign(extra=lambda t: 1.0 + np.arange(len(t)) % 5)
    table.loc[[3, 4, 5], "extra"] = np.nan
    path, argv = _own_csv(tmp_path, table)
    code, out, err = run_main(capsys, *argv, "--method", "2sls", "--heldout-folds", "0", option, "extra")
    assert code == 2 and "extra (3)" in err and "--dropna" in err
    code, out, err = run_main(capsys, *argv, "--method", "2sls", "--heldout-folds", "0", option, "extra", "--dropna")
    assert code == 0, err
    assert "dropped 3 of 300 rows" in err


# ------------------------------------------------------------------ the summary line
def test_2sls_summary_has_standard_errors_and_the_interval(capsys, tmp_path):
    path, argv = _own_csv(tmp_path)
    out_json = tmp_path / "run.json"
    code, out, err = run_main(capsys, *argv, "--method", "2sls", "--cov", "robust", "--heldout-folds", "0",
                              "--json", str(out_json))
    assert code == 0, err
    rec = json.loads(out_json.read_text())
    coef, se, effect = rec["coefficients"]["price"], rec["std_errors"]["price"], rec["effect"]
    assert f"coefficients (s.e. robust): price={coef:.4g} ({se:.4g})" in out
    assert f"effect={effect['estimate']:.4g} [{effect['ci_lower']:.4g}, {effect['ci_upper']:.4g}]" in out
    assert "2SLS s.e., heteroskedasticity-robust" in out
    assert effect["ci_upper"] - effect["ci_lower"] == pytest.approx(2 * 1.959964 * se, rel=1e-4)


# ------------------------------------------------------------------ the console script
def test_setup_installs_the_console_script():
    """scripts/setup.sh installs the checkout itself (so .venv/bin/dmlcore exists), and the script
    pyproject declares calls the CLI's main."""
    import tomllib

    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert any(line.split()[:2] == ["pip", "install"] and line.split("#")[0].rstrip().endswith("-e .")
               for line in setup.splitlines())
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["dmlcore"] == "dmlcore.cli:main"


def test_study_refuses_own_data_options_without_csv(capsys):
    code, out, err = run_main(capsys, "study", "--dataset", "card", "--categorical", "x", "--dropna",
                              "--outcome", "y")
    assert_one_line_error(code, err, "--outcome, --categorical, --dropna apply to your own file only")

"""Studies of the built-in real data sets (no truth: effects and held-out residuals instead of the
MSE) and the readable labels of a study's options and columns."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from dmlcore.cli import main
from dmlcore.data.registry import DATASET_OPTIONS, OPTION_LABELS, load_dataset
from dmlcore.errors import DMLCoreError
from dmlcore.runs import fit_run
from dmlcore.store import RunStore
from dmlcore.studies import run_study, spec_from_dict
from dmlcore.studies.figures import effect_figure, heldout_figure, paired_figure, study_figures
from dmlcore.studies.report import report_html
from dmlcore.studies.summarize import COLUMN_LABELS, readable

from test_studies import assert_one_line_error

CARD = {"dataset": "card", "methods": ["2sls", "sieve-2sls"], "seeds": "0-2"}


@pytest.fixture(scope="module")
def card_study(tmp_path_factory):
    """Three seeds of 2SLS and Sieve 2SLS on Card, written to a folder."""
    out = tmp_path_factory.mktemp("card")
    return run_study(CARD, out / "study", store=RunStore(out / "runs.sqlite3")), out / "study"


def test_real_data_rows_carry_the_effect_and_the_heldout_score(card_study):
    result, _ = card_study
    fits = result.fits
    assert (fits["status"] == "done").all(), fits["error"].tolist()
    assert fits["mse"].isna().all()                                        # no truth, no MSE
    data = load_dataset("card").data
    for seed in (0, 2):
        row = fits[(fits["method"] == "2sls") & (fits["seed"] == seed)].iloc[0]
        direct = fit_run(data, "2sls", seed=seed).record          # as `python -m dmlcore fit` gives it
        effect = direct["effect"]
        assert row["effect_estimate"] == pytest.approx(effect["estimate"])
        assert (row["effect_ci_lower"], row["effect_ci_upper"]) == pytest.approx((effect["ci_lower"],
                                                                                  effect["ci_upper"]))
        assert row["effect_level"] == effect["level"] and row["effect_interval"] == effect["interval"]
        assert row["effect_estimand"] == effect["estimand"] and "educ" in row["effect_estimand"]
        assert row["heldout_relative"] == pytest.approx(direct["heldout"]["relative"])
        assert row["heldout_relative_se"] == pytest.approx(direct["heldout"]["relative_std_error"])
    # Sieve 2SLS's effect is debiased; Card's first-stage F (13.3) is above the weak-identification bar (10),
    # so the rows carry its estimate and its interval
    sieve = fits[fits["method"] == "sieve-2sls"]
    assert sieve["effect_estimate"].notna().all() and sieve["effect_ci_lower"].notna().all()
    assert sieve["effect_interval"].str.startswith("debiased").all()
    # the rows are the same at every seed: 2SLS's effect does not move, its held-out folds do
    tsls = fits[fits["method"] == "2sls"]
    assert tsls["effect_estimate"].nunique() == 1 and tsls["heldout_relative"].nunique() == 3


def test_real_data_summary_and_paired_use_effect_and_heldout(card_study):
    result, out = card_study
    fits, summary = result.fits, result.summary.set_index("arm")
    for arm in ("2sls", "sieve-2sls"):
        mine = fits[fits["arm"] == arm]
        row = summary.loc[arm]
        assert row["reps"] == 3 and pd.isna(row["median"]) and pd.isna(row["sd"])
        assert row["effect_median"] == pytest.approx(mine["effect_estimate"].median())
        assert row["effect_sd"] == pytest.approx(mine["effect_estimate"].astype(float).std(ddof=1), abs=1e-12)
        assert row["effect_ci_lower_median"] == pytest.approx(mine["effect_ci_lower"].median(), nan_ok=True)
        assert row["heldout_relative_median"] == pytest.approx(mine["heldout_relative"].median())
        assert row["heldout_relative_q3"] == pytest.approx(np.quantile(mine["heldout_relative"].astype(float), 0.75))
    pair = result.paired.iloc[0]
    a = fits[fits["arm"] == "2sls"].set_index("seed")["heldout_relative"].astype(float)
    b = fits[fits["arm"] == "sieve-2sls"].set_index("seed")["heldout_relative"].astype(float)
    assert (pair["metric"], pair["pairs"]) == ("heldout_relative", 3)
    assert pair["median_diff"] == pytest.approx((a - b).median())
    assert (pair["wins_a"], pair["wins_b"]) == (((a - b) < 0).sum(), ((a - b) > 0).sum())
    assert pair["wilcoxon_p"] == pytest.approx(wilcoxon(a, b).pvalue)
    written = pd.read_csv(out / "summary.csv")
    assert {"effect_median", "effect_ci_lower_median", "heldout_relative_median", "median"} <= set(written.columns)
    assert pd.read_csv(out / "paired.csv")["metric"].tolist() == ["heldout_relative"]
    assert {"effect_estimate", "effect_ci_upper", "heldout_relative"} <= set(pd.read_csv(out / "fits.csv").columns)


def test_real_data_report_and_figures(card_study):
    result, out = card_study
    figures = study_figures(result.fits)
    assert [f.file for f in figures] == ["effects.png", "heldout_score.png", "paired_differences.png"]
    effects = effect_figure(result.fits)
    assert [t.name for t in effects.data] == ["2SLS", "Sieve 2SLS"] * 2          # plug-in, then debiased
    assert not any(t.name == "true effect" for t in effects.data)                # no truth on real data
    sieve = result.fits[result.fits["method"] == "sieve-2sls"].sort_values("seed")
    for trace, kind in ((effects.data[1], "plug_in"), (effects.data[3], "debiased")):
        assert list(trace.y) == pytest.approx(sieve[f"effect_{kind}"].astype(float).tolist())
        assert list(trace.error_y.array) == pytest.approx(
            (sieve[f"effect_{kind}_ci_upper"] - sieve[f"effect_{kind}"]).astype(float).tolist())
    trace = effects.data[1]
    assert len(set(trace.x)) == 3 and max(effects.data[0].x) < min(trace.x)     # seeds side by side, arms apart
    held = heldout_figure(result.fits)
    assert [t.type for t in held.data] == ["box", "box"] and held.layout.yaxis.type == "linear"
    assert sorted(held.data[0].y) == pytest.approx(sorted(result.fits.loc[result.fits["method"] == "2sls",
                                                                          "heldout_relative"]))
    assert "held-out residual" in paired_figure(result.fits).layout.title.text
    page = (out / "report.html").read_text()
    assert "without a known truth (card)" in page and "Effect estimates" in page and "MSE by N" not in page
    assert "Held-out residual median" in page and "heldout_relative_median" not in page   # readable columns
    assert f"{result.summary['effect_median'].iloc[0]:.4g}" in page
    if Path("/usr/bin/chromium").exists():
        assert result.png_error is None, result.png_error
        assert (out / "effects.png").read_bytes()[:4] == b"\x89PNG"


def test_a_study_mixing_simulated_and_real_data(tmp_path):
    spec = {"grid": [{"dataset": "demand-iv", "data": {"n": 200}, "methods": ["2sls", "naive"],
                      "learner": "linear", "n_draws": 4},
                     {"dataset": "mroz", "methods": ["2sls", "naive"], "learner": "linear", "n_draws": 4}],
            "seeds": "0-1"}
    result = run_study(spec, store=RunStore(tmp_path / "runs.sqlite3"))
    assert (result.fits["status"] == "done").all(), result.fits["error"].tolist()
    assert set(result.paired.groupby("dataset")["metric"].first().items()) == {("demand-iv", "mse"),
                                                                               ("mroz", "heldout_relative")}
    sim = result.fits[result.fits["dataset"] == "demand-iv"]
    assert sim["mse"].notna().all() and sim["effect_estimate"].notna().all() and sim["heldout_relative"].isna().all()
    files = [f.file for f in study_figures(result.fits)]
    assert files == ["mse_by_n.png", "effects.png", "heldout_score.png", "paired_differences.png"]
    assert "without a known truth (mroz)" in report_html(result)


def test_real_data_with_a_simulator_option_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    with pytest.raises(DMLCoreError, match="rhc is a real data set.*'n' given"):
        spec_from_dict({"dataset": "rhc", "data": {"n": [200]}})
    for flag, value, name in (("--sizes", "200", "'n'"), ("--rho", "0.5", "'rho'")):
        assert_one_line_error(main(["study", "--dataset", "card", flag, value]), capsys.readouterr().err,
                              "card is a real data set", name)


def test_study_command_on_real_data(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    assert main(["study", "--dataset", "mroz", "--methods", "2sls", "--seeds", "0",
                 "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    line = next(text for text in out.splitlines() if text.startswith("[1/1]"))
    assert line.startswith("[1/1] mroz seed=0 2sls: effect=") and " [" in line and "heldout=" in line
    assert "effect_median" in out and "heldout_relative_median" in out and "mse_fresh" not in out


# ------------------------------------------------------------------ labels
def test_labels_cover_every_option_and_every_study_column(card_study):
    options = {option for names in DATASET_OPTIONS.values() for option in names}
    assert options <= set(OPTION_LABELS)
    assert all(COLUMN_LABELS[o] == OPTION_LABELS[o] for o in options)
    tiny = run_study({"dataset": "demand-iv", "data": {"n": 200, "rho": [0.5, 0.9]}, "methods": ["2sls"],
                      "seeds": 0}, keep=False)
    result, _ = card_study
    for table in (tiny.fits, tiny.summary, tiny.paired, result.fits, result.summary, result.paired):
        assert set(table.columns) <= set(COLUMN_LABELS), set(table.columns) - set(COLUMN_LABELS)
        shown = readable(table)
        assert not set(shown.columns) & set(table.columns), list(shown.columns)
    assert "Confounding ρ = 0.5" in " ".join(a.text for a in study_figures(tiny.fits)[0].figure.layout.annotations)

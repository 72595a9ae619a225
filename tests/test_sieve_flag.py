"""The sieve check beside the debiased effect (dmlcore.inference.sieve_dimension.flag_reason, add_sieve_effect):
its bars are the calibration of its rows, it flags a moderate-proxies fit and leaves a strong design's alone.

The fits are the stored ones (bench/results/coverage-31, coverage-54, coverage-fonly: DML-CMR's debiased estimate and
standard error per seed); the sieve effect is recomputed here on the same seed's data, which is a few linear
solves."""

from pathlib import Path

import pandas as pd
import pytest

from bench.docgen.tables import is_method
from bench.sieve_dimension import design_data
from dashboard.results import sieve_text
from dmlcore.estimators._registry import PAPER_METHOD
from dmlcore.inference.effect_notes import identification_note
from dmlcore.runs.typed import Effect
from dmlcore.inference.sieve_dimension import (SIEVE_GAP_BAR, SIEVE_SE_RATIO, SOURCE, add_sieve_effect, flag_reason,
                                               sieve_effect)

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def _stored(source: str, design: str, seed: int) -> dict:
    path = RESULTS / source / f"fits-{design}.csv"
    if not path.exists():
        pytest.skip(f"no {source} rows in this checkout")
    rows = pd.read_csv(path)
    row = rows[is_method(rows["arm"], PAPER_METHOD) & rows["seed"].eq(seed)].iloc[0]
    return {"estimate": float(row["effect_debiased"]), "std_error": float(row["effect_debiased_se"]),
            "truth": float(row["effect_truth"]), "weakly_identified": False}


def test_the_bars_are_the_calibration_of_the_rows():
    from bench.sieve_flag import DD_DIR, calibrate, dd_rows, pairs
    if not list(DD_DIR.glob("rows-*.csv")):
        pytest.skip("no sieve-dimension rows in this checkout")
    joined, matches = pairs(dd_rows())
    assert (matches["matched"] == matches["with_dd"]).all(), matches    # the regenerated data are the stored fits'
    whole = {p.name[len("fits-"):-len(".csv")] for p in (RESULTS / "coverage-54").glob("fits-*.csv")}
    served = joined.groupby("design")["source"].agg(set)
    assert all(served[d] == {"coverage-54"} for d in whole & set(served.index)), served   # whole refits replace f-alone rows
    assert calibrate(joined) == (SIEVE_GAP_BAR, SIEVE_SE_RATIO)    # the code's bars are the rows' choice


def test_a_moderate_proxies_fit_is_flagged_with_the_sieve_interval_and_a_strong_one_is_not():
    moderate = _stored("coverage-31", "moderate-pcl", 0)
    loaded, plan, groups = design_data("moderate-pcl", 0)
    dd = sieve_effect(loaded.data, plan, groups=groups)
    reason = flag_reason(moderate, dd)
    assert reason is not None and len(reason) <= 200 and f"{dd['ci_lower']:.4g}" in reason
    assert dd["ci_lower"] <= moderate["truth"] <= dd["ci_upper"]         # the interval shown beside the flag covers
    effect = {"debiased": dict(moderate), "intervals": []}
    add_sieve_effect(effect, loaded.data, plan)
    assert effect["debiased"]["sieve_flag"] and effect["warning"] == f"flagged: {reason}"
    assert effect["intervals"][-1]["source"] == SOURCE
    assert effect["debiased"]["sieve_dimension"]["estimate"] == dd["estimate"]
    assert identification_note(effect) == f"flagged: {reason}"            # the CLI's line and the Results table
    assert sieve_text(Effect.from_dict(effect).debiased) == f"{dd['estimate']:.4g} [{dd['ci_lower']:.4g}, {dd['ci_upper']:.4g}]"

    linear = _stored("coverage-54", "linear", 0)           # a whole refit, as runs do today
    loaded, plan, groups = design_data("linear", 0)
    linear_dd = sieve_effect(loaded.data, plan, groups=groups)
    assert flag_reason(linear, linear_dd) is None
    gap = abs(linear["estimate"] - linear_dd["estimate"]) / (linear["std_error"] ** 2 + linear_dd["std_error"] ** 2) ** 0.5
    assert flag_reason(linear, linear_dd, gap_bar=gap * 1.01) is None                    # the gap bar reads the gap
    assert f"it is {gap:.2g} s.e. of their difference" in flag_reason(linear, linear_dd, gap_bar=gap * 0.99)
    assert flag_reason(moderate, dd, ratio_bar=float("inf"), gap_bar=float("inf")) is None   # both bars off: silent
    effect = {"debiased": dict(linear), "intervals": []}
    add_sieve_effect(effect, loaded.data, plan)
    assert effect["debiased"]["sieve_flag"] is False and "warning" not in effect
    assert "sieve effect's s.e. / this one's" in identification_note(effect)
    # a weakly identified effect shows no interval, and the sieve check does not add a flag to it
    weak = {"debiased": {**moderate, "weakly_identified": True}, "intervals": []}
    loaded, plan, _ = design_data("moderate-pcl", 0)
    add_sieve_effect(weak, loaded.data, plan)
    assert weak["debiased"]["sieve_flag"] is False and "warning" not in weak


def test_the_results_table_shows_the_sieve_effect_and_says_what_it_is():
    import json

    from dashboard.results import SIEVE_COLUMN, ResultItem, effects_table, interval_descriptions
    record = json.loads((Path(__file__).parent / "records" / "dml-cmr.json").read_text())
    sieve = record["effect"]["debiased"]["sieve_dimension"]
    items = [ResultItem("1", "DML-CMR run", record)]
    row = effects_table(items).iloc[0]
    assert row[SIEVE_COLUMN] == f"{sieve['estimate']:.4g} [{sieve['ci_lower']:.4g}, {sieve['ci_upper']:.4g}]"
    assert interval_descriptions(items)[SIEVE_COLUMN].startswith(sieve["interval"].split(": ", 1)[1])


def test_a_flagged_debiased_row_says_so_in_its_own_kind():
    """The row whose interval the sieve check flagged says so itself, not only the line under the table."""
    import copy
    import json

    from dashboard.results import SIEVE_FLAGGED, ResultItem, effects_table
    record = json.loads((Path(__file__).parent / "records" / "dml-cmr.json").read_text())
    assert SIEVE_FLAGGED not in effects_table([ResultItem("1", "run", record)]).iloc[0]["kind"]
    flagged = copy.deepcopy(record)
    flagged["effect"]["debiased"].update(sieve_flag=True, sieve_flag_reason="its s.e. is 0.25 of the sieve effect's")
    assert effects_table([ResultItem("1", "run", flagged)]).iloc[0]["kind"] == f"debiased ({SIEVE_FLAGGED})"

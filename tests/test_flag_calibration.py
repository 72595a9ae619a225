"""The weak-identification flag's first-stage F bar is the one its coverage rows support.

``WEAK_FIRST_STAGE_F`` is documented as calibrated on the issue-31 coverage rows
(bench/results/coverage-31, docs/coverage.md "The weak-identification flag"); this test recomputes
the calibration from those rows, so that a bar changed by hand, or rows rerun without recalibrating,
fails here rather than leaving the docs and the flag disagreeing.
"""

from pathlib import Path

import pandas as pd
import pytest

from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F
from dmlcore.inference.effect_coverage import calibrate_first_stage_f

ROWS = Path(__file__).resolve().parents[1] / "bench" / "results" / "coverage-31"


def test_the_flags_first_stage_bar_is_the_pooled_calibration_of_its_rows():
    files = sorted(ROWS.glob("fits-*.csv"))
    if not files:
        pytest.skip("no coverage-31 rows in this checkout")
    rows = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    per_design, pooled, table = calibrate_first_stage_f(rows)
    assert pooled is not None, table
    assert WEAK_FIRST_STAGE_F == pooled, (WEAK_FIRST_STAGE_F, pooled)

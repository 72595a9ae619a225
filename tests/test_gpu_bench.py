"""bench/gpu_bench.py's seed ranges (``--more-seeds``) and its plan's start thresholds (CPU only, no fit)."""

from __future__ import annotations

import pytest

from bench.gpu_bench import MEASURED, PLAN, SAFETY, _seeds
from dmlcore.errors import DMLCoreError


@pytest.mark.parametrize("text, seeds", [
    (None, []), ("", []), ("7", [7]), ("1-4", [1, 2, 3, 4]), ("3-3", [3]),
    ("1,3,5", [1, 3, 5]), (" 0-2 , 9 ", [0, 1, 2, 9]), ("10-12,4", [10, 11, 12, 4]),
])
def test_seeds_reads_ranges_and_lists(text, seeds):
    assert _seeds(text) == seeds


@pytest.mark.parametrize("text, bad", [
    ("a", "'a'"), ("1-x", "'1-x'"), ("1,,2", "''"), ("5-3", "'5-3'"), ("-2", "'-2'"), ("1-2-3", "'1-2-3'"), ("2.5", "'2.5'"),
])
def test_seeds_refuses_bad_text_naming_it(text, bad):
    with pytest.raises(DMLCoreError, match=f"--more-seeds: {bad} is not a seed"):
        _seeds(text)


def test_plan_leaves_twice_the_measured_time():
    """Each fit starts only with SAFETY x its measured fit and after-fit seconds left, and keeps SAFETY x
    its after-fit seconds (at least 2 s) when the budget stops it."""
    assert len(PLAN) == len(MEASURED) and SAFETY == 2
    for (*fit_id, need, reserve), (*measured_id, fit, after) in zip(PLAN, MEASURED):
        assert fit_id == measured_id
        assert SAFETY * (fit + after) <= need < SAFETY * (fit + after) + 1
        assert reserve >= max(2, SAFETY * after) and reserve < max(2, SAFETY * after) + 1

"""The rule by which docs/benchmarks.md says whether a configuration may replace the default (issue 45): ahead on
some protocol and behind on none; a protocol the rows lack (demand-pcl's fresh draws) is not judged."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.docgen.nuisance import against_default, decision

SEEDS = range(20)


def rows(grid, fresh=None) -> pd.DataFrame:
    return pd.DataFrame({"mse": grid, "mse_fresh": np.nan if fresh is None else fresh}, index=SEEDS)


def test_behind_on_one_protocol_keeps_the_default():
    base = np.linspace(1.0, 2.0, 20)
    default = rows(base, base)
    better_grid_worse_fresh = rows(base * 0.8, base * 1.2)
    pairs = against_default(better_grid_worse_fresh, default)
    assert set(pairs) == {"on the grid", "on fresh draws"}
    assert pairs["on the grid"].a_ahead and pairs["on fresh draws"].b_ahead
    assert decision(pairs).startswith("it loses on fresh draws")


def test_ahead_on_both_supports_it_and_level_changes_nothing():
    base = np.linspace(1.0, 2.0, 20)
    default = rows(base, base)
    assert "support" in decision(against_default(rows(base * 0.8, base * 0.9), default))
    noise = np.where(np.arange(20) % 2, 1.01, 0.99)
    level = against_default(rows(base * noise, base * noise[::-1]), default)
    assert decision(level) == "these rows do not justify changing the default in this cell"


def test_rows_without_fresh_draws_are_judged_on_their_one_test_set():
    base = np.linspace(10.0, 20.0, 20)
    pairs = against_default(rows(base * 1.3), rows(base))
    assert list(pairs) == ["on the grid"]
    assert decision(pairs).startswith("it loses on the grid")


def test_identical_rows_are_level_without_a_p_value():
    from bench.docgen.nuisance import verdict
    from bench.docgen.words import paired

    base = pd.Series(np.linspace(10.0, 20.0, 20), index=SEEDS)
    assert verdict(paired(base, base.copy())) == "level (the same MSE on all 20 seeds)"
    assert "p = " in verdict(paired(base * 1.1, base))

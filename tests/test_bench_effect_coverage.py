"""bench.effect_coverage --methods: the study fits only the arms asked for; an unknown arm is refused by name."""

import pytest

from bench.effect_coverage import ARMS, parse_arms, spec


def _arms(study) -> list[tuple[str, str | None]]:
    return [(m, g.get("f_model")) for g in study["grid"] for m in g["methods"]]


def test_methods_picks_the_arms_and_all_keeps_every_one():
    every = spec(["linear", "clustered-iv-ignored"], [0], 1000, "gb", 5)
    assert parse_arms("all") == ARMS
    assert _arms(every) == [("2sls", None), ("sieve-2sls", None), ("dml-cmr", None), ("naive", None),
                            ("dml-cmr", "sieve"), ("2sls", None), ("dml-cmr", None)]
    two = spec(["linear", "clustered-iv-ignored"], [0], 1000, "gb", 5, parse_arms("dml-cmr,2sls"))
    assert _arms(two) == [("2sls", None), ("dml-cmr", None), ("2sls", None), ("dml-cmr", None)]
    spline = spec(["linear", "clustered-iv-ignored"], [0], 1000, "gb", 5, parse_arms("spline-f"))
    assert _arms(spline) == [("dml-cmr", "sieve")]          # the clusters-ignored comparison has no spline-f arm


def test_an_unknown_arm_is_refused_by_name():
    with pytest.raises(SystemExit, match="'dml'.*choose from 2sls"):
        parse_arms("2sls,dml")

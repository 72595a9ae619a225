"""dmlcore.jobs.costs: a fit's estimated seconds, and the extra cost of DML-CMR's target choice of nuisances."""

from pathlib import Path

import pandas as pd
import pytest

from dmlcore.jobs.costs import COST_FACTORS, CostBook, cost_key

ROWS = Path(__file__).resolve().parents[1] / "bench/results/target-choice-pilot/target-cost-2000.csv"
FACTOR = COST_FACTORS[("nuisance_choice", "target")]


def test_the_target_factor_is_the_median_cpu_ratio_of_the_paired_rows():
    rows = pd.read_csv(ROWS)
    assert len(rows) >= 6 and set(rows["first"]) == {"own", "target"}        # paired, the order alternating
    assert (rows[["command", "date", "machine", "load_before", "load_after"]].notna()).all().all()
    assert rows[["n", "folds", "learner"]].drop_duplicates().values.tolist() == [[2000, 5, "nn"]]
    ratios = rows["target_cpu_seconds"] / rows["own_cpu_seconds"]
    assert ratios.tolist() == pytest.approx(rows["cpu_ratio"].tolist())
    assert FACTOR == round(float(ratios.median()), 1) and FACTOR > 1


def test_a_target_fit_is_keyed_apart_and_costs_the_factor_until_one_is_timed():
    own = {"learner": "nn", "folds": 5}
    target = {**own, "nuisance_choice": "target"}
    assert cost_key("dml-cmr", own) != cost_key("dml-cmr", target)
    assert cost_key("dml-cmr", own) == cost_key("dml-cmr", {**own, "nuisance_choice": "own"})   # the default
    assert cost_key("ce-dml-cmr", own)[-1] is None                           # a method that does not read it
    book = CostBook()
    first_guess = book.estimate(cost_key("dml-cmr", own), 2000)
    assert book.estimate(cost_key("dml-cmr", target), 2000) == pytest.approx(FACTOR * first_guess)
    book = CostBook([{"method": "dml-cmr", "n": 1000, "seconds": 10.0, **own}])        # the default timed
    assert book.estimate(cost_key("dml-cmr", own), 2000) == pytest.approx(20.0)
    assert book.estimate(cost_key("dml-cmr", target), 2000) == pytest.approx(20.0 * FACTOR)
    book.observe(cost_key("dml-cmr", target), 1000, 35.0)                              # then its own timing
    assert book.estimate(cost_key("dml-cmr", target), 2000) == pytest.approx(70.0)
    assert book.estimate(cost_key("dml-cmr", own), 2000) == pytest.approx(20.0)

"""The Results page's loss caption says on what scale each curve is: the boosted second stage reports its
squared error in the outcome's units squared (its loss grows with the outcome's scale), the network's does not."""

import numpy as np

from dashboard.results import loss_caption
from dmlcore.estimators.second_stage import SECOND_STAGES
from dmlcore.progress import Monitor


def _first_loss(name: str, scale: float) -> float:
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(200, 4, 1))
    targets = scale * (np.sin(draws[:, :, 0]).mean(1) + 0.1 * rng.normal(size=200))
    monitor = Monitor()
    params = dict(max_stages=3) if name == "boost" else dict(max_epochs=2)
    SECOND_STAGES[name](params, n_draws=4).fit(targets, draws, draws[:, 0, :], monitor)
    return monitor.histories[("f", None)]["train"][0]


def test_each_second_stage_reports_its_loss_on_the_scale_it_declares():
    for name in ("boost", "nn"):
        ratio = _first_loss(name, 100.0) / _first_loss(name, 1.0)
        expected = {"outcome": 1e4, "standardized": 1.0}[SECOND_STAGES[name].loss_scale]
        assert np.isclose(ratio, expected, rtol=0.05), (name, ratio)


def test_the_caption_names_the_outcome_scale_only_for_a_boosted_f_curve():
    assert "outcome's units squared" in loss_caption("boost", True)
    assert "outcome's units squared" not in loss_caption("boost", False)      # no curve drawn
    assert "outcome's units squared" not in loss_caption("nn", True)
    assert loss_caption(None, False).startswith("Losses are on the standardized scale")

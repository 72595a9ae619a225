"""The Roles page's fixed effects and weights (docs/linear-iv.md), through Streamlit's AppTest."""

from __future__ import annotations

import pytest

from dmlcore.data.datasets import load_real_dataset
from dmlcore.data.roles import CausalData
from dmlcore.inference.first_stage import first_stage
from test_app import DATA, ROLES, start, texts

pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def _f(at) -> float:
    return float({m.label: m.value for m in at.metric}["First-stage F (educ)"].replace(",", ""))


def test_roles_page_absorbs_fixed_effects_and_weights_and_the_first_stage_follows():
    at = start(DATA)
    at.selectbox(key="real_name").set_value("card").run()
    at.button(key="real_load").click().run()
    at.switch_page(ROLES).run()
    assert not at.exception
    plain = _f(at)
    offered = at.multiselect(key="role_absorb").options
    assert "region66" in offered and "lwage" not in offered            # columns without a role only
    at.selectbox(key="role_weights").set_value("weight").run()
    weighted = _f(at)
    assert weighted != pytest.approx(plain, rel=1e-3)
    assert at.session_state["causal"].weights == "weight"
    assert any("weighted by weight" in c.lower() for c in texts(at.caption))
    # absorbing the region while its dummies are covariates: refused by name
    at.multiselect(key="role_absorb").set_value(["region66"]).run()
    assert any("constant within the groups of 'region66'" in e for e in texts(at.error))
    covariates = ["exper", "expersq", "black", "smsa", "south", "smsa66"]
    at.multiselect(key="role_covariates").set_value(covariates).run()
    assert not at.exception and not at.error
    card = load_real_dataset("card")
    expected = first_stage(CausalData(card.table, "iv", "lwage", treatment="educ", instrument="nearc4",
                                      covariates=covariates, absorb="region66", weights="weight"),
                           nonparametric=False, inference=False)["treatments"]["educ"]["f_stat"]
    assert _f(at) == pytest.approx(expected, abs=0.05)     # the metric shows one decimal
    assert at.session_state["causal"].absorb == ["region66"]

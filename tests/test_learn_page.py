"""The Learn page through AppTest: every tab renders without an exception or an error, and the
new tabs state what their experiments show."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from dmlcore.effect_coverage import demand_contrast
from tests.test_app import APP, LEARN, LEARN_TABS, all_text

pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def learn(tab: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(LEARN).run()
    at.session_state["learn_tab"] = tab
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


@pytest.mark.parametrize("tab", [t for t in LEARN_TABS if t not in ("Ticket demand", "Orthogonality that works")])
def test_each_tab_renders(tab):
    at = learn(tab)
    opened = next(t for t in at.tabs if t.label == tab)
    assert len(opened.children) > 2 and not any(len(t.children) for t in at.tabs if t.label != tab)


def test_orthogonality_that_works_draws_the_shipped_histograms_and_the_control():
    from dmlcore.teaching import pliv
    at = learn("Orthogonality that works")
    body = all_text(at).replace("−", "-")
    shipped = pliv.cached().summary.set_index(["score", "cross-fitting"])
    assert f"interval covers θ in **{100 * shipped.loc[('orthogonal', True), 'coverage']:.0f} %**" in body
    assert f"in **{100 * shipped.loc[('naive', True), 'coverage']:.0f} %**" in body
    shown, sentence = demand_contrast()
    table = next(d.value for d in at.dataframe if "mean error (estimate − truth)" in d.value)
    assert table.equals(shown) and sentence.replace("−", "-") in body
    assert table["95 % interval covers the truth"].iloc[0] < table["95 % interval covers the truth"].iloc[1]
    slopes = pliv.second_order().params["slopes"]
    assert f"slope {slopes['orthogonal']:.2f}, measured" in body and "second order" in body
    assert "the slope is 1 by construction" in body
    assert at.button(key="learn_run_pliv-live")
    at.button(key="learn_run_pliv-live").click().run()
    assert not at.exception and not at.error
    assert "computed on this server" in all_text(at)


def test_weak_tab_names_the_strong_bar_of_its_number_of_instruments():
    at = learn("Weak instruments")
    assert "moderate** from 10 to 24.58" in all_text(at)      # 4 instruments: Stock-Yogo, not Lee et al.
    at.session_state["learn_weak_k"] = 1
    at.run()
    assert "moderate** from 10 to 104.7" in all_text(at)

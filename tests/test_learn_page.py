"""The Learn page through AppTest: every tab renders without an exception or an error, and the
new tabs state what their experiments show."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from dmlcore.inference.effect_coverage import demand_contrast
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
    body = all_text(at)
    for present, absent in referee_statements(tab):       # what the referee's read of issue 47 corrected
        assert present in body and (absent is None or absent not in body), (present, absent)


def referee_statements(tab: str) -> list[tuple[str, str | None]]:
    """(a sentence the tab must say, a wrong one it must not) per tab, from the fresh referee's read."""
    if tab == "RHC (real data)":
        from dmlcore.teaching import rhc
        flagged = rhc.flagged_today()         # the intervals the tool refuses today (rhc-effects-31.csv)
        assert flagged, "the rows of today's RHC fits flag DML-CMR's family"
        return [(f"Today the tool prints no interval for {', '.join(flagged)} on these data", None)]
    return {
        "IV and LATE": [("with non-negative weights under monotonicity", "weighted average of the effects on those "
                         "the instrument moves ("), ("Kitagawa 2015", "The data cannot check 2 and 3")],
        "Card (1995)": [("(Staiger & Stock 1997)", "(Staiger & Stock)"),
                        ("Słoczyński", "makes the point with this very instrument")],
        "Orthogonal score": [("KIV, DFIV and KPV learn in their first stage only the conditional mean of features",
                              "never learn the distribution of f's inputs")],
    }.get(tab, [])


def test_orthogonality_that_works_draws_the_shipped_histograms_and_the_control():
    from dmlcore.teaching import pliv
    at = learn("Orthogonality that works")
    body = all_text(at).replace("−", "-")
    from dashboard.learn.common import cover
    exp = pliv.cached()
    shipped, sims = exp.summary.set_index(["score", "cross-fitting"]), exp.params["sims"]
    assert f"interval covers θ in **{cover(shipped.loc[('orthogonal', True), 'coverage'], sims)}**" in body
    assert f"in **{cover(shipped.loc[('naive', True), 'coverage'], sims)}**" in body
    shown, sentence = demand_contrast()
    table = next(d.value for d in at.dataframe if "mean error (estimate − truth)" in d.value)
    assert table.equals(shown) and sentence.replace("−", "-") in body
    assert "each run's effect with its interval and its kind" in body and "coverage for every run" not in body
    assert table["95 % interval covers the truth"].iloc[0] < table["95 % interval covers the truth"].iloc[1]
    # a coverage's Monte-Carlo uncertainty is written as its s.e., never as a bare ± (docs/making.md)
    assert "±" not in sentence and sentence.count(" % (s.e. ") == 2
    slopes = pliv.second_order().params["slopes"]
    assert f"slope {slopes['orthogonal']:.2f}, measured" in body and "second order" in body
    assert "the slope is 1 by construction" in body
    assert at.button(key="learn_run_pliv-live")
    at.button(key="learn_run_pliv-live").click().run()
    assert not at.exception and not at.error
    assert "computed on this server" in all_text(at)


def test_weak_tab_names_the_strong_bar_of_its_number_of_instruments():
    at = learn("Weak IV")
    assert "moderate** from 10 to 24.58" in all_text(at)      # 4 instruments: Stock-Yogo, not Lee et al.
    at.session_state["learn_weak_k"] = 1
    at.run()
    assert "moderate** from 10 to 104.7" in all_text(at)


def test_lessons_group_the_tabs_and_a_named_tab_opens_its_lesson():
    at = learn("Proximal learning")
    assert at.radio(key="learn_lesson").value == "2 · Proxies"
    assert [t.label for t in at.tabs] == ["Proximal learning", "RHC (real data)"]
    at.radio(key="learn_lesson").set_value("3 · Nuisances and orthogonality").run()
    assert not at.exception
    assert [t.label for t in at.tabs][0] == "Orthogonal score" and at.session_state["learn_tab"] == "Orthogonal score"
    assert "Proximal learning" not in [t.label for t in at.tabs]


def test_weak_tab_gives_monte_carlo_errors_and_draws_lee_only_for_one_instrument():
    at = learn("Weak IV")
    body = all_text(at)
    assert "Monte-Carlo s.e." in body and "(s.e. 0.9 %)" in body          # 96.2 % of 500 draws
    fig = next(c for c in at.get("plotly_chart") if "104.7" in str(c.proto.spec) or "Stock-Yogo" in str(c.proto.spec))
    assert "104.7" not in str(fig.proto.spec)                              # four instruments: no Lee et al. line
    at.session_state["learn_weak_k"] = 1
    at.run()
    assert any("104.7" in str(c.proto.spec) for c in at.get("plotly_chart"))


def test_card_tab_says_what_one_binary_instrument_identifies(monkeypatch):
    import json
    from pathlib import Path

    from dmlcore.teaching import card
    saved = json.loads((Path(__file__).resolve().parents[1] / "bench/results/teaching/card.json").read_text())
    from dmlcore.inference.effect_notes import identification_note
    note = identification_note({"debiased": {"first_stage_f": 13.3, "strength": 12.3, "sieve_se_ratio": 1.06}})
    # the saved fit (python -m bench.card_exercise), with the flag's checks as card.dml_cmr adds them
    monkeypatch.setattr(card, "dml_cmr", lambda: {**saved["dml_cmr"], "identification": note})
    at = learn("Card (1995)")
    at.button(key="learn_run_card-dml-cmr").click().run()
    assert not at.exception and not at.error
    body = all_text(at)
    # the run record's description of the debiased effect is read for the class: X is f's inputs there, and
    # "linear in the treatment" names f's basis, not the weight
    assert f"DML-CMR, debiased: **{saved['dml_cmr']['coef']:.3f}**" in body
    assert "the bases in brackets are two" in body and "ξ̂ itself is a function of C only" in body
    # the flag's three checks, each with its bar, as the text above the button promises
    assert f"The weak-identification flag: {note}." in body and "sieve effect's s.e." in note
    assert "The flag has two more checks" in body and "the flag's other rule" not in body
    assert "**not identified**" in body and "Blandhol" in body and "age − schooling − 6" in body
    assert "#### 5. What if growing up near a college" in body or "What if growing up near a college" in body
    assert "Stock & Yogo's 16.38" in body and "but below 104.7" not in body
    assert re.search(r"Here F is \d+\.\d, (below|above) the bar", body) and "{s[" not in body   # the fit's F, filled in
    assert "though not on each of its designs: no bar does that (docs/coverage.md)" in body   # what the bar is


def test_the_timings_the_learn_page_quotes_come_from_the_saved_runs():
    """The cross-fitting and orthogonal-score tabs quote how long the saved runs took from
    bench/results/teaching/run.json (seconds / data sets), not from a literal in the page."""
    import json

    from dashboard.learn.crossfit import _timing as crossfit_timing
    from dashboard.learn.score import _timing as score_timing
    from dmlcore.teaching import nuisance

    runs = json.loads(nuisance.RUN_JSON.read_text())
    simple, overfit = runs["compare-simple"], runs["compare-overfit"]
    draws = int(nuisance.saved_comparison("simple")["draws"].iloc[0])
    text = crossfit_timing()
    assert f"{simple['seconds'] / draws:.1f} s for the first setting" in text
    assert f"{overfit['seconds'] / int(nuisance.saved_comparison('overfit')['draws'].iloc[0]):.1f} s for the second" in text
    assert simple["machine"] in text and f"about {runs['orthogonality']['seconds']:.0f} s" in score_timing()


def test_crossfit_tab_runs_repeated_crossfitting_and_quotes_its_numbers(monkeypatch):
    import functools

    from dmlcore.teaching import nuisance
    # a smaller run of the same experiment (the page's call is unchanged): fast enough for the suite
    monkeypatch.setattr(nuisance, "repeated_crossfit",
                        functools.partial(nuisance.repeated_crossfit, n=200, splits=2, reps=(1, 3)))
    at = learn("Cross-fitting")
    at.button(key="learn_run_crossfit-repeated").click().run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "split spread" in d.value)
    body = all_text(at).replace("−", "-")
    s = table.set_index("R")
    assert list(s.index) == [1, 3]
    assert f"by {s.loc[1, 'split spread']:.3f}; with R = 3, by {s.loc[3, 'split spread']:.3f}" in body

"""The Study page through AppTest: a grid, its cost from stored timings, a background study whose
box plots and tables fill in, the stored-studies list, and downloads.

Fits run in the registry's threads here (tests/conftest.py); tests/test_jobs.py covers worker
processes and tests/test_study_jobs.py the background runner itself.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
STUDY = "pages/7_study.py"

pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def study_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(STUDY).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def small_grid(at):
    at.text_input(key="study_opt_demand-iv_n").set_value("200").run()
    at.multiselect(key="study_methods").set_value(["2sls", "naive"]).run()
    at.selectbox(key="study_learner").set_value("linear").run()
    at.text_input(key="study_seeds").set_value("0-2").run()
    at.text_input(key="study_label").set_value("tiny").run()


def markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def wait_done(at, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        time.sleep(0.5)
        at.run()
        bars = [p for p in at.get("progress")]
        if bars and "· done" in bars[0].proto.text:
            return bars[0].proto.text
    raise AssertionError("the study did not finish")


def test_a_study_runs_in_the_background_and_is_stored():
    at = study_page()
    small_grid(at)
    assert "**6 fits**: 0 already stored (reused), 6 to run." in markdown(at)
    at.button(key="study_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    text = wait_done(at)
    assert text.startswith("6 of 6 fits run, 0 reused")
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    boxes = [t for t in figures[0]["data"] if t["type"] == "box"]
    assert len(boxes) == 2 and all(t["boxpoints"] == "all" for t in boxes)   # one box per method
    summary = at.dataframe[0].value
    assert len(summary) == 2 and set(summary["Finished fits"]) == {3}               # three seeds each
    assert len(at.get("download_button")) >= 3
    stored = at.selectbox(key="study_pick")                          # this browser's studies
    assert stored.options[0].startswith("tiny · 6 fits")

    # another browser, the same grid: the fits are reused, the time comes from stored timings
    again = study_page()
    small_grid(again)
    assert "**6 fits**: 6 already stored (reused), 0 to run." in markdown(again)
    again.text_input(key="study_seeds").set_value("0-3").run()
    assert "**8 fits**: 6 already stored (reused), 2 to run. Estimated compute" in markdown(again)
    assert not [s for s in again.selectbox if s.key == "study_pick"]   # another browser's studies: none


def test_a_bad_grid_is_named_and_nothing_starts():
    at = study_page()
    at.text_input(key="study_seeds").set_value("5-2").run()
    assert not at.exception
    assert any("5-2" in e.value for e in at.error), [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "study_start"]


def test_readable_labels_and_a_study_of_real_data():
    at = study_page()
    assert at.text_input(key="study_opt_demand-iv_n").label == "N (rows)"
    assert at.text_input(key="study_opt_demand-iv_iv_strength").label == "Instrument strength"
    assert at.text_input(key="study_opt_demand-iv_rho").label == "Confounding ρ"
    at.selectbox(key="study_dataset").set_value("card").run()
    assert not [t for t in at.text_input if (t.key or "").startswith("study_opt_")]   # real data: no options
    assert any("without a known truth (card)" in c.value for c in at.caption)
    at.multiselect(key="study_methods").set_value(["2sls"]).run()
    at.text_input(key="study_seeds").set_value("0-1").run()
    assert "**2 fits**: 0 already stored (reused), 2 to run." in markdown(at)
    at.button(key="study_start").click().run()
    assert wait_done(at).startswith("2 of 2 fits run")
    assert not at.exception, [e.value for e in at.exception]
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert titles[0].startswith("Effect estimates") and titles[1].startswith("Held-out residual")
    summary = at.dataframe[0].value
    assert {"Effect median", "Held-out residual median"} <= set(summary.columns)
    assert "MSE median" not in summary.columns and "effect_median" not in summary.columns


def test_a_study_of_an_uploaded_table_with_its_roles():
    from tests.reliability_cases import GOOD_ROLES, base_table, csv_of, set_roles, upload
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    upload(at, "mine.csv", csv_of(base_table()))
    at.switch_page(STUDY).run()
    at.selectbox(key="study_dataset").set_value("table").run()
    assert any("no valid roles yet" in e.value for e in at.error), [e.value for e in at.error]  # next to the choice
    assert not [b for b in at.button if b.key == "study_start"]
    set_roles(at, GOOD_ROLES)
    at.switch_page(STUDY).run()
    assert at.selectbox(key="study_dataset").value == "table"
    assert any("mine.csv" in c.value and "hash" in c.value for c in at.caption)
    at.multiselect(key="study_methods").set_value(["2sls", "naive"]).run()
    at.selectbox(key="study_learner").set_value("linear").run()
    at.text_input(key="study_seeds").set_value("0-4").run()
    assert "**10 fits**: 0 already stored (reused), 10 to run. **Time unknown**" in markdown(at)
    at.button(key="study_start").click().run()
    assert wait_done(at, timeout=240).startswith("10 of 10 fits run")
    assert not at.exception, [e.value for e in at.exception]
    summary = at.dataframe[0].value
    assert set(summary["Finished fits"]) == {5} and "Held-out residual median" in summary.columns

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


def wait_done(at, timeout=120, status="done"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        time.sleep(0.5)
        at.run()
        bars = [p for p in at.get("progress")]
        if bars and f"· {status}" in bars[0].proto.text:
            return bars[0].proto.text
    raise AssertionError(f"the study did not end {status}")


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
    verdicts = markdown(at)
    assert "- 2SLS is level with Naive plug-in (MSE lower on" in verdicts           # the one standard, in words
    assert any("Too few seeds for a verdict: with 3 paired seeds" in w.value for w in at.warning)
    codes = [c.value for c in at.code]
    assert "python -m dmlcore study --spec spec.json --out study" in codes
    assert any(c.startswith("**Study summary: MSE") for c in codes) and any(r"\toprule" in c for c in codes)
    assert any("local worker processes" in c.value or "own threads" in c.value for c in at.caption)
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
    assert titles[0].startswith("Estimated f, one line per seed") and titles[1].startswith("Effect estimates")
    assert titles[2].startswith("Held-out residual")
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


@pytest.mark.parametrize("option, value, words", [
    ("n", "10000000", "larger than this tool supports (1,000,000)"),
    ("n", "0", "n must be an integer of at least 20"),
    ("rho", "1.5", "rho must be in [0, 1)"),
])
def test_an_option_past_the_librarys_limits_is_refused_in_the_form(option, value, words):
    at = study_page()
    at.text_input(key=f"study_opt_demand-iv_{option}").set_value(value).run()
    assert not at.exception
    assert any(words in e.value for e in at.error), [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "study_start"]


def test_a_method_that_cannot_fit_the_data_is_refused_in_the_form():
    at = study_page()
    at.multiselect(key="study_methods").set_value(["naive", "kpv"]).run()
    assert any("KPV cannot fit demand-iv" in e.value for e in at.error), [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "study_start"]


def test_the_nuisance_choice_reaches_the_study_and_is_refused_where_it_cannot_act(monkeypatch):
    from dmlcore.errors import DMLCoreError
    from dmlcore.jobs.study_jobs import Studies

    started = []

    def start(self, owner, spec, label=""):        # the spec the page hands the runner; no fit runs
        started.append(spec)
        raise DMLCoreError("the test stops the study here")

    monkeypatch.setattr(Studies, "start", start)
    at = study_page()
    small_grid(at)                                   # 2SLS and the naive plug-in: neither reads the choice
    box = at.selectbox(key="study_nuisance_choice")
    assert (box.label, box.value, box.options) == ("Nuisance choice (DML-CMR)", "own",
                                                   ["own: by their own held-out losses",
                                                    "target: by DML-CMR's target (held-out projected residual of the pilot f̂)"])
    box.set_value("target").run()
    assert [e.value for e in at.error] == ["Nuisance choice 'target' applies to DML-CMR only, which is not among the "
                                           "methods; add it, or set the choice back to 'own'."]
    assert not [b for b in at.button if b.key == "study_start"]
    at.multiselect(key="study_methods").set_value(["dml-cmr", "naive"]).run()    # with the learner linear: named
    assert any("With learner 'linear' and folds 5: nuisance_choice='target' chooses among auto's candidates"
               in e.value for e in at.error), [e.value for e in at.error]
    at.selectbox(key="study_learner").set_value("gb").run()
    assert not at.error, [e.value for e in at.error]
    assert any(c.value.startswith("Naive plug-in keeps its nuisances chosen by their own held-out losses")
               for c in at.caption)
    at.button(key="study_start").click().run()
    [spec] = started
    assert [g["nuisance_choice"] for g in spec.to_dict()["grid"]] == [["target"]]   # as spec.json records it
    assert [g.settings["nuisance_choice"] for g in spec.grids] == [("target",)]


def test_a_study_whose_fits_fail_is_marked_failed_with_the_reasons(monkeypatch):
    import dmlcore.studies.runner as runner

    def always_fails(data, method, settings=None, **kwargs):
        raise runner.DMLCoreError(f"the test's failure ({method})")

    monkeypatch.setattr(runner, "fit_run", always_fails)
    at = study_page()
    small_grid(at)
    at.button(key="study_start").click().run()
    text = wait_done(at, status="failed")
    assert text.startswith("6 of 6 fits run, 0 reused, 6 failed · failed"), text
    errors = [e.value for e in at.error]
    assert any(e.startswith("Every fit failed (6 of 6). First reasons: the test's failure (2sls) (3 fits); the "
                            "test's failure (naive) (3 fits)") for e in errors), errors


def test_forget_this_browser_gives_it_a_new_empty_identity():
    at = study_page()
    small_grid(at)
    at.button(key="study_start").click().run()
    wait_done(at)
    old = at.session_state["owner"]
    assert at.selectbox(key="study_pick").options[0].startswith("tiny · 6 fits")
    at.button(key="study_forget").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["owner"] != old
    assert not [s for s in at.selectbox if s.key == "study_pick"]              # its studies: no longer listed
    assert any("cookie for 30 days" in c.value for c in at.caption)


def test_a_stored_study_whose_grid_is_refused_now_still_shows_its_fits():
    from dashboard import state

    at = study_page()
    small_grid(at)
    at.button(key="study_start").click().run()
    wait_done(at)
    store = state.store()
    owner = at.session_state["owner"]
    [row] = store.list_studies(owner)
    record = store.load_study(row["id"], owner)
    spec = record["spec"]
    spec["grid"][0]["data"]["n"] = [10_000_000]            # as a grid stored before N was checked
    store.save_study(owner, "old", spec, record["keys"])
    at.run()
    at.selectbox(key="study_pick").set_value(store.list_studies(owner)[0]["id"]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("refused now" in w.value and "1,000,000" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "study_again"]
    # saved as an old study: status "done", every fit reused (no record of what it ran)
    assert any(c.value == "Done: 0 of 6 fits run, 6 reused; 6 of its 6 fits are in the store." for c in at.caption)
    assert len(at.dataframe) == 4 and len(at.dataframe[2].value) == 2   # the live study's tables, then its own
    at.selectbox(key="study_pick").set_value(row["id"]).run()          # the study the page ran, reopened
    assert not at.exception, [e.value for e in at.exception]
    assert any(c.value == "Done: 6 of 6 fits run, 0 reused; 6 of its 6 fits are in the store." for c in at.caption)


def test_a_registered_method_of_your_own_is_offered_and_runs_on_the_page():
    import numpy as np

    import dmlcore
    from dmlcore.estimators import METHOD_TITLES, METHODS

    class MeanOutcome(dmlcore.CMREstimator):
        def __init__(self, seed: int = 0):
            self.seed = seed

        def _fit(self, data, monitor):
            self.mean_ = float(np.mean(data.table[data.outcome]))
            self.input_columns_, self.fold_losses_ = list(data.input_columns), []

        def predict(self, X):
            return np.full(len(X), self.mean_)

    dmlcore.register_method("page-mean", MeanOutcome, title="Mean outcome (page)", problems=("iv",))
    try:
        at = study_page()
        small_grid(at)
        assert "page-mean" in at.multiselect(key="study_methods").options or \
            "Mean outcome (page)" in at.multiselect(key="study_methods").options
        at.multiselect(key="study_methods").set_value(["2sls", "page-mean"]).run()
        at.button(key="study_start").click().run()
        wait_done(at)
        assert not at.exception, [e.value for e in at.exception]
        assert "Mean outcome (page)" in markdown(at) + "".join(str(d.value) for d in at.dataframe)
    finally:
        METHODS.pop("page-mean", None)
        METHOD_TITLES.pop("page-mean", None)

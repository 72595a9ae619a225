"""The dashboard's answers to bad input and training faults (Streamlit AppTest).

Every case of ``tests/reliability_cases.py`` that a user can enter in the dashboard is given to
one session, one after another, the way a user would: a bad file on the Data page, a bad role
choice on the Roles page, an absurd setting on the Estimators page, a diverging fit on Train.
Each must show a message with the expected words, never a traceback, and leave the table
loaded before in place. See docs/reliability.md for the table of answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import reliability_cases as cases

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
GOOD_ROWS = len(cases.base_table())


pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def no_exception(at, case=None):
    assert not at.exception, (getattr(case, "name", None), [e.value for e in at.exception])


def of_kind(kind: str) -> list:
    return [c for c in cases.ALL_CASES if c.dashboard == kind]


def answered(at, case) -> list[str]:
    """Give ``case`` to the session; check no traceback and the expected words; the messages."""
    messages = cases.through_dashboard(at, case)
    no_exception(at, case)
    if case.ok:
        assert cases.LOADED in messages and cases.ROLES_VALID in messages, (case.name, messages)
    else:
        words = case.expect_dashboard or case.expect
        assert any(words in m for m in messages), (case.name, words, messages)
    return messages


def test_every_bad_file_is_answered_and_the_loaded_table_kept():
    at = cases.dashboard_session()
    assert cases.loaded_rows(at) == GOOD_ROWS
    for case in of_kind("upload"):
        answered(at, case)
        assert cases.loaded_rows(at) == GOOD_ROWS, case.name        # nothing loaded before is lost
        no_exception(at, case)


def test_every_bad_role_choice_is_shown_and_the_table_kept():
    at = cases.dashboard_session()
    for case in of_kind("roles"):
        cases.set_roles(at, case.roles)
        no_exception(at, case)
        errors = cases.shown_messages(at)
        assert any(case.expect in m for m in errors), (case.name, errors)
        assert not any("Roles are valid" in s.value for s in at.success), case.name
        assert at.session_state["causal"] is None, case.name             # Train will not start
        cases.set_roles(at, cases.GOOD_ROLES)
        assert any("Roles are valid" in s.value for s in at.success), case.name
    assert cases.loaded_rows(at) == GOOD_ROWS


def test_role_errors_sit_next_to_the_offending_widget():
    at = cases.dashboard_session()
    for roles, key in ((dict(cases.GOOD_ROLES, instrument=["z", "z_double"]), "role_instrument"),
                       (dict(cases.GOOD_ROLES, covariates=["x_nan"]), "role_covariates"),
                       (dict(cases.GOOD_ROLES, instrument=["constant"]), "role_instrument")):
        cases.set_roles(at, roles)
        elements = _flat(at.main)
        where = next(i for i, el in enumerate(elements) if getattr(el, "key", None) == key)
        assert elements[where + 1].type == "error", (key, roles)


def test_every_absurd_setting_is_named_and_blocks_training():
    at = cases.dashboard_session()
    for case in of_kind("estimators"):
        messages = answered(at, case)
        assert cases.START_DISABLED in messages, case.name


def test_a_diverging_run_fails_alone_with_its_message_and_the_rest_is_kept():
    [case] = of_kind("train")
    at = cases.dashboard_session()
    answered(at, case)
    at.switch_page(cases.TRAIN_PAGE).run()
    labels = cases.wait_for_runs(at)
    assert len(labels) == 2
    assert any("failed" in m and "CE-DML-CMR" in m for m in labels), labels
    assert any("done in" in m and "2SLS" in m for m in labels), labels
    at.switch_page(cases.RESULTS_PAGE).run()
    no_exception(at)
    metrics = next(d.value for d in at.dataframe if {"run", "method"} <= set(d.value.columns))
    stored = next(d.value for d in at.dataframe if "label" in d.value.columns)
    assert metrics["method"].tolist() == ["2SLS"]                        # the finished run is there
    assert stored["method"].tolist() == ["2sls"]                         # and in the store


def test_2sls_on_digits_reports_the_constant_pixels_it_left_out():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(cases.DATA_PAGE).run()
    at.selectbox(key="sim_name").set_value("digits-iv").run()
    at.number_input(key="sim_n").set_value(300).run()
    at.button(key="sim_run").click().run()
    at.switch_page(cases.ESTIMATORS_PAGE).run()
    at.multiselect(key="est_methods").set_value(["2sls"]).run()
    at.switch_page(cases.TRAIN_PAGE).run()
    at.button(key="train_start").click().run()
    [label] = cases.wait_for_runs(at)
    assert "done in" in label, label
    assert any("left out" in c.value and "pixel_00" in c.value for c in at.caption)
    at.switch_page(cases.RESULTS_PAGE).run()
    no_exception(at)
    assert any("left out" in i.value and "constant column" in i.value for i in at.info)


def test_a_reload_after_a_server_restart_names_each_run_it_could_not_take_up(tmp_path, monkeypatch):
    import sqlite3
    import time

    from dashboard import state
    from dmlcore.jobs import JobFile

    owner = "a" * 32
    queue = JobFile(tmp_path / "home" / "queue.sqlite3")      # the queue the stopped server left
    with sqlite3.connect(queue.path) as conn:
        conn.execute("INSERT INTO jobs (id, owner, label, seq, created, status, cost, attempts, spec) "
                     "VALUES (?, ?, ?, 1, ?, 'queued', 5.0, 0, ?)",
                     ("b" * 32, owner, "#1 DML-CMR · nn", time.time(), b"not a fit"))
    monkeypatch.setattr(state, "browser_token", lambda: owner)    # the same browser, reloaded
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(cases.TRAIN_PAGE).run()
    no_exception(at)
    assert any("Lost in a server restart" in e.value and "Start it again" in e.value for e in at.error)
    assert any("**#1 DML-CMR · nn**" in m.value for m in at.markdown)
    at.button(key="train_clear").click().run()
    assert not any("Lost in a server restart" in e.value for e in at.error)


def test_a_failing_simulation_keeps_the_loaded_table(monkeypatch):
    from dashboard import training

    at = cases.dashboard_session()

    def broken(name, **params):
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(training, "dataset_from_registry", broken)
    at.switch_page(cases.DATA_PAGE).run()
    at.button(key="sim_run").click().run()
    no_exception(at)
    assert any("Could not simulate" in e.value and "simulated failure" in e.value for e in at.error)
    assert cases.loaded_rows(at) == GOOD_ROWS


def _flat(node) -> list:
    children = getattr(node, "children", None)
    if not children:
        return [node]
    out = []
    for key in sorted(children):
        out += _flat(children[key])
    return out

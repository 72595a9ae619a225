"""Prepare the class (issue 47): the slow Learn results computed once, kept on disk across a server
restart, and shown by the page at once."""

from __future__ import annotations

import pickle

import pytest
from streamlit.testing.v1 import AppTest

from dmlcore.errors import DMLCoreError
from dmlcore.teaching import nuisance, prepared
from tests.test_app import APP, LEARN, all_text


def test_a_prepared_result_survives_on_disk_and_is_refused_from_other_code(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path))
    assert prepared.load("crossfit-repeated") is None
    monkeypatch.setitem(prepared.SLOW, "crossfit-repeated", lambda: {"answer": 42})
    seconds = prepared.prepare(["crossfit-repeated"], echo=lambda line: None)
    assert set(seconds) == {"crossfit-repeated"}
    path = tmp_path / "teaching" / "crossfit-repeated.pkl"
    assert path.exists() and prepared.load("crossfit-repeated") == {"answer": 42}
    # the same file read by other code (another fingerprint) is not used
    kept = pickle.loads(path.read_bytes())
    path.write_bytes(pickle.dumps({**kept, "fingerprint": "other code"}))
    assert prepared.load("crossfit-repeated") is None
    path.write_bytes(b"not a pickle")
    assert prepared.load("crossfit-repeated") is None
    with pytest.raises(DMLCoreError, match="No slow experiment named nope"):
        prepared.prepare(["nope"])


def test_every_slow_button_of_the_page_has_a_preparation():
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "dashboard" / "learn"
    names = set()
    for path in root.glob("*.py"):
        names |= set(re.findall(r'slow\(\s*f?"([^"]+)"', path.read_text()))
    names = {n.replace("{setting}", s).replace("{draws}", "20").replace("{errors}", e)
             for n in names for s in ("simple", "overfit") for e in ("heteroskedastic", "clustered")}
    assert names - set(prepared.LIVE) <= set(prepared.SLOW), names - set(prepared.SLOW) - set(prepared.LIVE)


@pytest.mark.usefixtures("fresh_runtime")
def test_the_page_shows_a_prepared_result_without_its_button(monkeypatch):
    small = nuisance.repeated_crossfit("simple", n=200, splits=2, reps=(1, 2), folds=2)
    monkeypatch.setitem(prepared.SLOW, "crossfit-repeated", lambda: small)
    prepared.prepare(["crossfit-repeated"], echo=lambda line: None)     # into this test's DMLCORE_HOME
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(LEARN).run()
    at.session_state["learn_tab"] = "Cross-fitting"
    at.run()
    assert not at.exception and not at.error
    assert not any(b.key == "learn_run_crossfit-repeated" for b in at.button)
    table = next(d.value for d in at.dataframe if "split spread" in d.value)
    assert table.equals(small.summary) and "R = 2" in all_text(at)

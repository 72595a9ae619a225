"""The class-pooling exercise: the store's records pooled per method, and the teacher's page."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from dmlcore.data.registry import load_dataset
from dmlcore.runs import fit_run
from dmlcore.store import RunStore
from dmlcore.teaching import classroom
from tests.test_app import APP, all_text


def stored(store, owner, seed, method, n=300):
    loaded = load_dataset("demand-iv", n=n, seed=seed)
    kwargs = {} if method == "2sls" else dict(learner="linear", folds=2)
    run = fit_run(loaded.data, method, truth=loaded.truth, dataset="demand-iv",
                  data_params=dict(loaded.params), **kwargs)
    return store.save(run, owner, f"#1 {method}")


def test_pool_reads_every_session_but_names_none(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    stored(store, "old-session", 9, "2sls")
    since = time.time()
    for owner, seed in (("student-a", 1), ("student-b", 2)):
        for method in ("2sls", "dml-cmr"):
            stored(store, owner, seed, method)
    stored(store, "student-c", 3, "2sls", n=400)                     # another size: not the class's demo
    table, sessions = classroom.pool(store, dataset="demand-iv", n=300, since=since)
    assert sessions == 2 and len(table) == 4 and "owner" not in table.columns
    assert sorted(table["data seed"].unique()) == [1, 2] and table["mse"].gt(0).all()
    summary = classroom.summary(table)
    assert set(summary["method"]) == {"2sls", "dml-cmr"} and summary["runs"].tolist() == [2, 2]
    assert summary["lowest MSE on"].sum() == summary.attrs["paired seeds"] == 2
    assert summary["median MSE"].is_monotonic_increasing
    assert classroom.pool(store, dataset="demand-iv", n=300, since=time.time() + 1)[0].empty
    assert classroom.count(1, "session") == "1 session" and classroom.count(3, "session") == "3 sessions"


@pytest.mark.usefixtures("fresh_runtime")
def test_class_page_opens_only_with_the_teacher_code(monkeypatch):
    monkeypatch.setenv("DMLCORE_TEACHER_CODE", "abc123")
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/8_class.py").run()
    assert not at.exception
    at.text_input(key="teacher_typed").input("wrong")
    at.button[0].click().run()
    assert "That is not the teacher's code." in all_text(at) and "No demo runs" not in all_text(at)
    at.text_input(key="teacher_typed").input("abc123")
    at.button[0].click().run()
    assert not at.exception
    assert "No demo runs since" in all_text(at)
    at.button(key="class_leave").click().run()
    assert "No demo runs since" not in all_text(at)
    for _ in range(4):                                # five wrong codes in all: the field locks
        at.text_input(key="teacher_typed").input("nope")
        at.button[0].click().run()
    assert "Too many wrong codes" in all_text(at)


def test_class_histogram_draws_every_run_inside_the_axis():
    """Every run, the worst included, falls in a bin drawn on the axis (bins are half-open, so an
    edge at the largest MSE once put the worst run's bin past the axis: 2 runs showed 1 bar)."""
    import numpy as np
    import pandas as pd

    from dmlcore.teaching import figures

    table = pd.DataFrame({"method": ["dml-cmr", "dml-cmr", "naive", "naive", "naive"],
                          "title": ["DML-CMR"] * 2 + ["Naive"] * 3, "mse": [0.05, 0.4, 0.2, 0.2, 3.0]})
    edges = classroom.log_bins(table["mse"])
    x = np.log10(table["mse"])
    assert ((x >= edges[0]) & (x < edges[-1])).all()
    fig = figures.class_histograms(table, ["dml-cmr", "naive"])
    lo, hi = fig.layout.xaxis.range
    for trace in fig.data:
        bins = trace.xbins
        values = np.asarray(trace.x, dtype=float)
        index = np.floor((values - bins.start) / bins.size)
        assert ((index >= 0) & (bins.start + index * bins.size < bins.end)).all()   # in a bin plotly draws
        assert ((bins.start + index * bins.size >= lo - 1e-12) & (bins.start + (index + 1) * bins.size <= hi + 1e-9)).all()
    assert sum(len(t.x) for t in fig.data) == len(table)

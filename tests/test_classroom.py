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
    # every run's effect beside its own truth: the class view's strip plot and its table
    assert table["truth"].notna().all() and table["effect"].notna().all()
    effects = classroom.effect_summary(table)
    assert set(effects["method"]) == {"2sls", "dml-cmr"} and effects["runs"].tolist() == [2, 2]
    for method, part in table.groupby("method"):
        row = effects.set_index("method").loc[method]
        assert row["mean error"] == pytest.approx((part["effect"] - part["truth"]).mean())
        assert row["RMSE"] == pytest.approx(float(((part["effect"] - part["truth"]) ** 2).mean() ** 0.5))
    assert effects.attrs["truth range"][0] <= effects.attrs["truth"] <= effects.attrs["truth range"][1]
    from dmlcore.teaching import figures
    fig = figures.class_effects(table, list(effects["method"]), effects.attrs["truth"])
    points = [t for t in fig.data if t.mode == "markers"]
    assert sum(len(t.x) for t in points) == len(table)                    # every run drawn
    assert any(abs(shape.x0 - effects.attrs["truth"]) < 1e-12 for shape in fig.layout.shapes)   # the truth marked
    assert classroom.effect_summary(table.assign(truth=None)).empty


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


@pytest.mark.usefixtures("fresh_runtime")
def test_class_page_draws_every_students_effect_around_the_truth(monkeypatch):
    from dashboard import state
    from dashboard.plan import DEMO_DATA

    monkeypatch.setenv("DMLCORE_TEACHER_CODE", "abc123")
    monkeypatch.setitem(DEMO_DATA, "n", 300)          # a smaller demo data set: the same page, faster fits
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/8_class.py").run()
    for owner, seed in (("student-a", 1), ("student-b", 2), ("student-c", 3)):
        loaded = load_dataset(DEMO_DATA["name"], n=DEMO_DATA["n"], seed=seed)
        for method in ("2sls", "regression"):
            run = fit_run(loaded.data, method, truth=loaded.truth, dataset=DEMO_DATA["name"],
                          data_params=dict(loaded.params))
            state.store().save(run, owner, f"#1 {method}")
    at.text_input(key="teacher_typed").input("abc123")
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert "The estimated effects around the truth" in all_text(at)
    chart = next(c for c in at.get("plotly_chart") if "truth" in str(c.proto.spec) and "estimated effect" in str(c.proto.spec))
    assert str(chart.proto.spec).count("seed %{customdata}") == 2          # one row of points per method
    table = next(d.value for d in at.dataframe if "mean error" in d.value)
    assert table["runs"].tolist() == [3, 3]

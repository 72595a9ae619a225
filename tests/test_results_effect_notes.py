"""Beside each effect, the Results page (its effect table and that table's download) and the CLI's
summary line show the weak-identification flag, the specification spread and how the intervals
treat clusters (dmlcore.inference.effect_notes), read from the run record."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.results import BESIDE_TABLE, COVERAGE_COLUMN, ResultItem, effects_table
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F
from dmlcore.inference.effect_notes import NOT_CLUSTERED, clusters_note, identification_note, spread_note
from dmlcore.runs import fit_run
from dmlcore.store import RunStore, default_store_path
from test_app import APP, RESULTS

pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


@pytest.fixture(scope="module")
def runs():
    clustered = load_dataset("clustered-iv", n=1200, seed=3)
    weak = load_dataset("linear-iv", n=1000, seed=2, iv_strength=0.07)    # first-stage F 5.03: flagged
    fit = dict(learner="linear", folds=5, heldout_folds=0)
    return {"clustered": fit_run(clustered.data, "dml-cmr", truth=clustered.truth, cov_type="clustered",
                                 cluster="cluster", **fit),
            "weak": fit_run(weak.data, "dml-cmr", truth=weak.truth, **fit),
            "2sls clustered": fit_run(clustered.data, "2sls", truth=clustered.truth, cov_type="clustered-cr1",
                                      cluster="cluster", heldout_folds=0)}


def test_the_notes_read_the_record(runs):
    effect = runs["clustered"].record["effect"]
    assert clusters_note(effect) == f"clustered by 'cluster' ({effect['clusters']['count']} clusters)"
    assert effect["clusters"]["count"] == runs["clustered"].data.table["cluster"].nunique() > 1
    spread = effect["spread"]
    assert spread_note(effect).startswith(f"{spread['low']:.4g} to {spread['high']:.4g}, "
                                          f"{len(spread['specifications'])} specifications")
    count = effect["clusters"]["count"]     # clustered: the flag reads the effective F under clusters, and says so
    assert identification_note(effect).startswith(f"not flagged: effective F (clustered, {count} clusters) ")
    assert effect["debiased"]["first_stage_f"] == runs["clustered"].record["diagnostics"]["inference"]["effective_f"]
    weak = runs["weak"].record["effect"]
    assert weak["weakly_identified"]
    assert identification_note(weak) == f"flagged: first-stage F {weak['debiased']['first_stage_f']:.3g} < {WEAK_FIRST_STAGE_F:g}"
    assert "first stage's F" in weak["debiased"]["weak_reason"]          # the rule's own reason agrees
    assert clusters_note(weak) == NOT_CLUSTERED
    assert identification_note({"debiased": None}).startswith("not checked")
    alone = {**spread, "specifications": spread["specifications"][:1], "low": spread["estimate"],
             "high": spread["estimate"], "range_over_se": 0.0}
    assert spread_note({"spread": alone}) == "not measured: one specification only"    # not "0 s.e."


def test_two_way_clusters_are_named_as_two_columns():
    loaded = load_dataset("clustered-iv", n=1200, seed=3)
    table = loaded.data.table.assign(half=(loaded.data.table.index % 7).astype(float))
    data = CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=loaded.data.covariates)
    effect = fit_run(data, "2sls", cov_type="clustered", cluster="cluster,half", heldout_folds=0).record["effect"]
    assert effect["clusters"]["count"] == 7                           # the smaller of the two dimensions
    assert clusters_note(effect) == "clustered by 'cluster' and 'half' (7 clusters in the smaller)"


def _stored_results_page(runs) -> tuple[AppTest, dict]:
    """The Results page with the runs of ``runs`` saved for this browser and reloaded from the store."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(RESULTS).run()
    store = RunStore(default_store_path())
    for label, run in runs.items():
        store.save(run, at.session_state["owner"], label=label)
    at.run()
    at.multiselect(key="store_pick").set_value(list(at.multiselect(key="store_pick").options)).run()
    at.button(key="store_load").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(t.value for t in at.table if "effect" in t.value and "kind" in t.value).set_index("run")
    return at, table


def test_results_page_shows_flag_spread_and_clusters_beside_each_effect(runs, monkeypatch):
    import streamlit as st
    downloads, button = {}, st.download_button

    def keep(label, data, *args, **kwargs):          # what each download button would hand the browser
        downloads[kwargs.get("key")] = data
        return button(label, data, *args, **kwargs)
    monkeypatch.setattr(st, "download_button", keep)
    at, shown = _stored_results_page(runs)
    # the page's table shows the numbers; the notes and the measured coverage are in words under it, and the
    # download (the whole frame) carries them all (issue 47: the table fits a projector's 1,024 px)
    table = pd.read_csv(io.StringIO(downloads["dl_effects"])).set_index("run")
    assert list(shown.columns) == [c for c in table.columns if c not in BESIDE_TABLE]
    assert list(shown.index) == list(table.index) and shown["kind"].equals(table["kind"])
    for label in ("clustered", "weak"):
        effect = runs[label].record["effect"]
        row = table.loc[label]
        assert row["weak identification"] == identification_note(effect)
        assert row["spread"] == spread_note(effect)
        assert row["clusters"] == clusters_note(effect)
    assert table.loc["clustered", "clusters"].startswith("clustered by 'cluster' (")
    assert table.loc["weak", "clusters"] == NOT_CLUSTERED
    assert table.loc["weak", "weak identification"].startswith(f"flagged: first-stage F 5.03 < {WEAK_FIRST_STAGE_F:g}")
    assert table.loc["weak", "kind"] == "weakly identified"           # the reason in its own column
    assert table.loc["weak", "95% interval"] == "weakly identified: no confident interval"
    # 2SLS: its coefficient's row (first stage, one specification) and its debiased average derivative's
    coefficient = table.loc["2sls clustered"]
    assert "Anderson-Rubin" in coefficient["weak identification"]
    assert coefficient["clusters"].startswith("clustered by 'cluster' (")
    derivative = table.loc["2sls clustered: debiased average derivative"]
    assert derivative["spread"] == spread_note(runs["2sls clustered"].record["effect"])
    assert derivative["clusters"].startswith("clustered by 'cluster' (")
    # and in words under the table, one line per effect
    lines = next(m.value for m in at.markdown if " — identification: " in m.value).splitlines()
    assert len(lines) == len(table)
    for line, (run, row) in zip(lines, table.iterrows()):
        coverage = row[COVERAGE_COLUMN]
        assert line == (f"- **{run}** — identification: {row['weak identification']} · spread: {row['spread']} "
                        f"· clusters: {row['clusters']}" + (f" · measured coverage: {coverage}" if coverage != "—" else ""))
    # the table's download carries the same columns and notes
    csv = downloads["dl_effects"]
    header = csv.splitlines()[0]
    assert all(col in header for col in ("weak identification", "spread", "clusters"))
    for label in ("clustered", "weak"):
        assert clusters_note(runs[label].record["effect"]) in csv
        assert spread_note(runs[label].record["effect"]) in csv


def test_the_effects_table_itself_carries_the_notes(runs):
    """The table the page shows and offers for download: one frame, so the CSV has the same columns."""
    items = [ResultItem(str(i), label, run.record, run=run) for i, (label, run) in enumerate(runs.items())]
    table = effects_table(items).set_index("run")
    csv = table.to_csv()
    for label in ("clustered", "weak"):
        assert clusters_note(runs[label].record["effect"]) in csv
    assert {"weak identification", "spread", "clusters"} <= set(table.columns)


def test_cli_summary_line_carries_spread_flag_and_clusters(capsys):
    from dmlcore.cli import main
    assert main(["fit", "--dataset", "clustered-iv", "--n", "1200", "--method", "dml-cmr", "--learner", "linear",
                 "--folds", "5", "--cov", "clustered-cr1", "--cluster", "cluster", "--heldout-folds", "0"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert " identification=not flagged: effective F (clustered-cr1, 50 clusters) " in line   # the clustered statistic
    assert " spread=" in line and " specifications, " in line
    assert "clustered by 'cluster' (" in line
    assert "folds=clusters of 'cluster' kept whole (the estimate depends on --cluster)" in line   # issue 46


def test_cli_summary_line_of_2sls_prints_what_2sls_estimates(capsys, tmp_path):
    """2SLS's line gives its coefficient, interval and Anderson-Rubin set, not DML-CMR's debiased average
    derivative, its identification flag, a spread or the learner (issue 46); the run record keeps them."""
    from dmlcore.cli import main
    path = tmp_path / "run.json"
    assert main(["fit", "--dataset", "linear-iv", "--iv-strength", "0.07", "--n", "1000", "--seed", "2",
                 "--method", "2sls", "--heldout-folds", "0", "--json", str(path)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("2sls on linear-iv (n=1000):") and " effect=" in line and "anderson_rubin=" in line
    for noise in ("debiased average derivative", "identification=", "spread=", "learner=", "heldout="):
        assert noise not in line, noise
    record = json.loads(path.read_text())
    assert record["effect"]["debiased"]["weakly_identified"] and record["learner"] == "linear"
    assert f"first-stage F 5.03 < {WEAK_FIRST_STAGE_F:g}" in identification_note(record["effect"])


def test_proximal_2sls_without_an_anderson_rubin_set_shows_the_flag_on_its_coefficient_row():
    from test_debiased import noisy_proxies
    run = fit_run(noisy_proxies(3.0), "2sls", heldout_folds=0)
    table = effects_table([ResultItem("1", "p2sls", run.record, run=run)]).set_index("run")
    assert "Anderson-Rubin set" not in table.columns or table.loc["p2sls", "Anderson-Rubin set"] == "—"
    assert table.loc["p2sls", "weak identification"].startswith("flagged: proxy first-stage F ")

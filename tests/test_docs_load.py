"""A time is quoted in the docs only with the load it was measured under: the timing benches record the
load (bench/perf/load.py), and a study table shows seconds per fit only when every row records it."""

from __future__ import annotations

import json

import numpy as np

from bench.docgen.rows import RESULTS, Rows
from bench.docgen.tables import study_table
from bench.perf import load, speed


def _rows(tmp_path, with_load: bool) -> Rows:
    (tmp_path / "authors").mkdir()
    frame = Rows(RESULTS).csv("authors/demand-iv-nn-5000-pilot.csv")
    if with_load:
        rng = np.random.default_rng(0)
        frame = frame.assign(load_1min_start=rng.uniform(0.5, 1.0, len(frame)).round(2),
                             load_1min_end=rng.uniform(1.0, 1.5, len(frame)).round(2), cores=2, other_work="none")
    frame.to_csv(tmp_path / "authors" / "rows.csv", index=False)
    return Rows(tmp_path)


def test_a_table_of_rows_without_load_quotes_no_seconds(tmp_path):
    table = study_table(_rows(tmp_path, with_load=False).fits("authors/rows.csv"))
    assert "s/fit" not in table and table.splitlines()[1].count("---") == 6


def test_a_table_of_rows_with_load_quotes_seconds_beside_the_load_range(tmp_path):
    rows = _rows(tmp_path, with_load=True)
    fits = rows.fits("authors/rows.csv")
    table = study_table(fits)
    head = table.splitlines()[0]
    assert f"mean s/fit (1-minute load {fits['load_1min_start'].min():g}–{fits['load_1min_end'].max():g})" in head
    assert len(table.splitlines()) == 5          # the load columns do not split the methods' rows
    dml = fits[fits["method"] == "dml-cmr"]["seconds"].mean()
    assert table.splitlines()[2].endswith(f"| {dml:.1f} |")


def test_the_speed_bench_records_the_load_at_start_and_end_cores_and_other_work(tmp_path):
    out = tmp_path / "speed.jsonl"
    speed._append(out, {"method": "dml-cmr", "seconds": 1.0, "load_1min_start": 0.25}, "the test suite")
    row = json.loads(out.read_text())
    assert row["load_1min_start"] == 0.25 and row["load_1min_end"] == row["load_avg_1min"] >= 0
    assert row["cores"] >= 1 and row["other_work"] == "the test suite"
    assert load.fields(0.1)["other_work"] == load.NOT_STATED


def _sprites(tmp_path, with_load: bool) -> Rows:
    frame = Rows(RESULTS).csv("dsprites-pcl-nn.csv")
    if with_load:
        frame = frame.assign(load_1min_start=0.5, load_1min_end=np.linspace(0.6, 1.4, len(frame)).round(2))
    frame.to_csv(tmp_path / "dsprites-pcl-nn.csv", index=False)
    return Rows(tmp_path)


def test_seconds_of_rows_without_load_are_dropped_or_marked_by_the_renderer(tmp_path):
    from bench.docgen.raw import dsprites
    from bench.docgen.tables import UNRECORDED, load_said

    bare = dsprites(_sprites(tmp_path, with_load=False))
    assert " s)" not in bare and "record no load" in bare
    assert load_said() == load_said(Rows(RESULTS).csv("dsprites-pcl-nn.csv")) == UNRECORDED
    timed = dsprites(_sprites(tmp_path, with_load=True))
    first = Rows(tmp_path).csv("dsprites-pcl-nn.csv").sort_values(["n", "seed"]).iloc[0]
    assert f"({first['seconds']:,.0f} s)" in timed and "1-minute load 0.5–1.4" in timed


def test_idle_is_said_only_up_to_the_docs_load_bound():
    from bench.docgen.tables import IDLE_MARGIN, idle

    assert idle([0.4, 1 + IDLE_MARGIN]) and not idle([0.4, 1 + IDLE_MARGIN + 0.1])
    assert idle([2 + IDLE_MARGIN], threads=2) and not idle([2.6], threads=2)

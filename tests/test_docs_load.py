"""A time is quoted in the docs only with the load it was measured under: the timing benches record the
load (bench/perf/load.py), and a study table shows seconds per fit only when every row records it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.docs import blocks, doc_files
from bench.docgen.registry import renderer

from bench.docgen.rows import RESULTS, Rows
from bench.docgen.tables import study_table
from bench.perf import load, speed

ROOT = Path(__file__).resolve().parents[1]


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


# ---------------------------------------------------------------- no time from rows without their load (issue 49)
# a quoted time: a number with a unit of time, or a ratio of times ("1.83 times faster"); a target's bound
# ("≤ 5 s", a design's constant) is not a measured time
TIME = re.compile(r"(?<![≤<>]\s)(?<![≤<>\d.,])\d[\d,]*(?:\.\d+)?\s?(?:s|seconds?|min|ms|h)\b(?![/.]\w)"
                  r"|\d(?:\.\d+)?\s?times (?:faster|as long|slower)")
LOADED = re.compile(r"load(?: average)?(?: of)? \d")     # a load said as a figure ("1-minute load 0.5–1.4", "load average 3.1")
# the blocks that used to quote seconds from rows without a load ("load not recorded")
UNLOADED = ("pilot-selection", "study40", "study40:speed-ups", "executor:vs-fits", "keep-memory", "keep-memory:dml",
            "image-step", "dsprites:process", "speed-idle-authors:vs-tables", "gpu:results", "gpu:summary",
            "gpu:dsprites-1000", "gpu:benchmarks", "figure2-timing", "raw-strength:growth",
            "bands-summary:bands-2026-11-26/coverage-demand-iv-gb.json", "effect-coverage:effect-coverage.csv",
            "rhc:rhc-effects.csv", "rhc:rhc-effects-boot.csv:boot", "rhc-every:rhc-effects-31.csv")


def test_a_time_is_what_the_pattern_finds():
    for said in ("16.1 s", "1,559 s", "86 min", "3 ms", "1.83 times faster", "3.4 times as long", "(945 s)"):
        assert TIME.search(said), said
    for said in ("≤ 5 s", "10 seeds", "5.5x", "0.4 (s.e. 0.1)", "2.06 GiB", "s/step", "N = 5000"):
        assert not TIME.search(said), said


def test_timed_text_gives_the_time_only_with_every_rows_load():
    from bench.docgen.tables import NOT_QUOTED, timed_text

    frame = pd.DataFrame({"seconds": [1.0, 2.0], "load_1min_start": [0.5, 0.7], "load_1min_end": [0.9, np.nan]})
    assert timed_text(frame, "3 s") == NOT_QUOTED and timed_text(None, "3 s", "") == ""
    assert not TIME.search(NOT_QUOTED)
    full = frame.fillna({"load_1min_end": 1.2})
    assert timed_text(full, lambda: "3 s") == "3 s (1-minute load 0.5–1.2)"
    assert timed_text(full, "3 s, {load}; more") == "3 s, 1-minute load 0.5–1.2; more"


@pytest.mark.parametrize("name", UNLOADED)
def test_a_block_of_rows_without_load_quotes_no_time(name):
    text = renderer(name)(Rows(RESULTS))
    assert not TIME.search(text) or LOADED.search(text), (name, TIME.findall(text))


def test_rows_given_their_load_bring_the_seconds_back(tmp_path):
    """The other side of the renderers' rule: the same block quotes the seconds, with the load range,
    once its rows record the load (so that the test above cannot pass on a renderer that quotes nothing)."""
    from bench.docgen.coverage import rhc_every
    from bench.docgen.raw import keep_memory

    bare = rhc_every(Rows(RESULTS), "rhc-effects-31.csv")
    frame = Rows(RESULTS).csv("rhc-effects-31.csv").assign(load_1min_start=0.4, load_1min_end=1.1)
    frame.to_csv(tmp_path / "rhc-effects-31.csv", index=False)
    loaded = rhc_every(Rows(tmp_path), "rhc-effects-31.csv")
    assert "| s (1-minute load 0.4–1.1) |" in loaded.splitlines()[0] and "| s (" not in bare
    assert loaded.splitlines()[2].endswith(f" {frame['seconds'].iloc[0]:,.0f} |")
    for k in (0, 1):
        Rows(RESULTS).csv(f"dsprites-pcl-keep-memory-{k}.csv").assign(load_1min_start=0.3, load_1min_end=0.9) \
            .to_csv(tmp_path / f"dsprites-pcl-keep-memory-{k}.csv", index=False)
        for log in (f"dsprites-pcl-keep-memory-{k}.log",):
            shutil.copy(RESULTS / log, tmp_path / log)
    timed_table = keep_memory(Rows(tmp_path))
    assert "1-minute load 0.3–0.9" in timed_table and TIME.search(timed_table)
    assert not TIME.search(keep_memory(Rows(RESULTS)))


def _records_load(rows: Rows, name: str) -> bool:
    """Whether a rows file records the load: a column (CSV, JSON lines) or a key (JSON) named load...;
    a log (``/usr/bin/time``, a study's) records none."""
    if name.endswith((".csv", ".jsonl")):
        frame = rows.csv(name) if name.endswith(".csv") else rows.jsonl(name)
        return any(str(c).startswith("load") for c in frame)
    return name.endswith(".json") and re.search(r'"load\w*"\s*:', rows.text(name)) is not None


def test_every_block_that_quotes_a_time_in_the_docs_says_its_load():
    """A scan of README.md and docs/: a generated block whose text holds a time also holds its load as a
    figure, or every rows file it reads records the load (a neighbouring block or the prose says it: the
    speed benches' `load_avg_1min`, the class runs' `load_before`)."""
    bare = []
    for path in doc_files(ROOT):
        for m in blocks(path.read_text()):
            if not TIME.search(m["body"]) or LOADED.search(m["body"]):
                continue
            rows = Rows(RESULTS)
            renderer(m["id"])(rows)
            if not rows.read or not all(_records_load(rows, name) for name in sorted(rows.read)):
                bare.append(f"{path.relative_to(ROOT)}: {m['id']}: {TIME.findall(m['body'])[:3]}: "
                            f"rows {sorted(rows.read)}")
    assert bare == []


class _GpuRowsWithLoad(Rows):
    """The stored rows, the GPU runs' given a 1-minute load (as `bench/gpu_bench.py` would, once it records one)."""

    def csv(self, name: str) -> pd.DataFrame:
        frame = super().csv(name)
        return frame.assign(load_1min_start=0.2, load_1min_end=0.8) if name.startswith("gpu/") else frame


def test_gpu_times_and_targets_come_back_with_the_gpu_rows_load():
    from bench.docgen.gpu import summary, results

    bare, loaded = summary(Rows(RESULTS)), summary(_GpuRowsWithLoad(RESULTS))
    assert "not judged" in bare and "not judged" not in loaded
    targets, speed = loaded.splitlines()[0], loaded.splitlines()[1]
    assert "1-minute load 0.2–0.8" in targets and "1-minute load 0.2–0.8" in speed and TIME.search(speed)
    assert "the earlier CPU fit's seconds are not quoted" in speed       # its row records no load: still none
    assert "GPU s (1-minute load 0.2–0.8)" in results(_GpuRowsWithLoad(RESULTS))

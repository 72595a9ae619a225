"""Tests of dmlcore.store: runs saved in SQLite survive a new store object and a killed process."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.runs import fit_run
from dmlcore.store import RunStore, default_store_path, safe_filename

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run():
    sim = simulate_demand_iv(n=300)
    return fit_run(sim.data, "ce-dml-cmr", truth=sim.truth, dataset="demand-iv", learner="nn", epochs=2)


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "runs.sqlite3")


def test_round_trips_record_predictions_and_curve(store, run):
    run_id = store.save(run, "alice", "first try")
    stored = store.load(run_id, "alice")
    assert (stored.id, stored.owner, stored.label) == (run_id, "alice", "first try")
    assert stored.record == json.loads(run.to_json())
    pd.testing.assert_frame_equal(stored.predictions, run.predictions().reset_index(drop=True))
    pd.testing.assert_frame_equal(stored.curve, run.curve().reset_index(drop=True))


def test_lists_summaries_newest_first_and_filters_by_owner(store, run):
    first = store.save(run, "alice", "one")
    second = store.save(run, "bob", "two")
    third = store.save(run, "alice", "three")
    assert [s["id"] for s in store.list()] == [third, second, first]
    summaries = store.list("alice")
    assert [s["id"] for s in summaries] == [third, first]
    assert set(summaries[0]) == {"id", "owner", "label", "method", "dataset", "n", "mse", "seconds", "created"}
    assert summaries[0]["method"] == "ce-dml-cmr" and summaries[0]["dataset"] == "demand-iv"
    assert summaries[0]["n"] == 300 and summaries[0]["mse"] == pytest.approx(run.record["mse"])
    assert [s["id"] for s in store.list(limit=1)] == [third]


def test_another_owner_can_neither_load_nor_delete(store, run):
    run_id = store.save(run, "alice")
    assert store.load(run_id, "mallory") is None
    assert store.load("no-such-id", "alice") is None
    assert store.delete(run_id, "mallory") is False
    assert store.load(run_id) is not None
    assert store.delete(run_id, "alice") is True
    assert store.list() == []


def test_concurrent_saves_from_threads(store, run):
    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(lambda i: store.save(run, "alice", str(i)), range(8)))
    assert sorted(s["id"] for s in store.list("alice")) == sorted(ids)


def test_survives_a_new_store_object_on_the_same_file(tmp_path, run):
    path = tmp_path / "runs.sqlite3"
    run_id = RunStore(path).save(run, "alice", "kept")
    reopened = RunStore(path)
    assert [s["id"] for s in reopened.list("alice")] == [run_id]
    assert reopened.load(run_id, "alice").record["mse"] == pytest.approx(run.record["mse"])


KILLED_SCRIPT = """
    import sys
    from dmlcore.data.simulate import simulate_demand_iv
    from dmlcore.runs import fit_run
    from dmlcore.store import RunStore

    store = RunStore(sys.argv[1])
    sim = simulate_demand_iv(n=300)
    store.save(fit_run(sim.data, "naive", truth=sim.truth, learner="nn", epochs=2), "alice", "finished")
    print("saved", flush=True)

    def announce(event):
        if event["type"] == "loss":
            print("training", flush=True)

    fit_run(sim.data, "ce-dml-cmr", truth=sim.truth, learner="nn", epochs=100000, callback=announce)
"""


def test_finished_run_survives_a_process_killed_mid_run(tmp_path):
    path = tmp_path / "runs.sqlite3"
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(KILLED_SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "saved"
        assert proc.stdout.readline().strip() == "training"
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
    store = RunStore(path)
    [summary] = store.list("alice")
    assert summary["label"] == "finished" and summary["method"] == "naive"
    assert len(store.load(summary["id"], "alice").predictions) == 300


def test_default_store_path_follows_dmlcore_home(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    assert default_store_path() == tmp_path / "home" / "runs.sqlite3"
    assert (tmp_path / "home").is_dir()


@pytest.mark.parametrize("name, expected", [
    ("results.csv", "results.csv"),
    ("../../etc/passwd", "etc_passwd"),
    ("a/b\\c run.csv", "a_b_c_run.csv"),
    ("..", "download"),
    ("", "download"),
    ("Résumé 2026.json", "Resume_2026.json"),
    ("CON.csv", "_CON.csv"),
    (".hidden", "hidden"),
])
def test_safe_filename_examples(name, expected):
    assert safe_filename(name) == expected


@given(st.text())
def test_safe_filename_never_leaves_its_folder(name):
    cleaned = safe_filename(name)
    folder = Path("/downloads")
    assert 0 < len(cleaned) <= 100
    assert (folder / cleaned).parent == folder
    assert not cleaned.startswith(".") and ".." not in cleaned and "/" not in cleaned and "\\" not in cleaned


def test_stored_curve_keeps_its_band_columns(store):
    sim = simulate_demand_iv(n=300)
    banded = fit_run(sim.data, "dml-cmr", truth=sim.truth, learner="gb", folds=3, f_model="sieve",
                     nuisance_params=dict(max_iter=30))
    stored = store.load(store.save(banded, "alice"), "alice")
    assert {"lower", "upper", "band"} <= set(stored.curve.columns)
    pd.testing.assert_frame_equal(stored.curve, banded.curve().reset_index(drop=True))
    assert stored.record["bands"]["confidence"]["mean_width"] == banded.record["band_width"]

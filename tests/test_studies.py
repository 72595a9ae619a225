"""Tests of dmlcore.studies: grids, store reuse, executors (in process, loky workers, Ray), the
summaries and paired tests, the report, the ``study`` command and its bad input."""

import json
import os
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from dmlcore.cli import main
from dmlcore.data.registry import load_dataset
from dmlcore.errors import DMLCoreError
from dmlcore.runs import fit_run
from dmlcore.store import RunStore
from dmlcore.studies import (config_key, get_executor, load_spec, load_study, run_fit_config, run_study,
                             spec_from_dict)
from dmlcore.studies.figures import PANEL_GAP, PANEL_TITLE, mse_figure, paired_figure
from dmlcore.data.simulate import N_MAX, N_MIN
from dmlcore.studies.report import report_html
from dmlcore.studies.spec import parse_seeds

TINY = {"dataset": "demand-iv", "data": {"n": 200}, "methods": ["ce-dml-cmr", "naive", "2sls"],
        "learner": "linear", "n_draws": 4, "seeds": "0-2"}


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "runs.sqlite3")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def assert_one_line_error(code, err, *words):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], lines[0]


# ------------------------------------------------------------------ spec
def test_seeds_ranges_lists_and_repeats():
    assert parse_seeds("0-19") == tuple(range(20))
    assert parse_seeds("0,3,5-7, 3") == (0, 3, 5, 6, 7)
    assert parse_seeds([2, "4-5"]) == (2, 4, 5)
    with pytest.raises(DMLCoreError, match="'5-2' runs backwards; write 2-5"):
        parse_seeds("5-2")
    for bad in ("-1", "a", "1.5", "3-"):
        with pytest.raises(DMLCoreError, match="seeds must be"):
            parse_seeds(bad)


def test_grid_expands_every_combination_with_full_configs():
    spec = spec_from_dict({"dataset": "demand-iv", "data": {"n": "200,400", "iv_strength": [1.0, 0.5]},
                           "methods": ["dml-cmr", "2sls"], "learner": ["linear", "gb"], "folds": 3, "seeds": "0-1"})
    configs = spec.configs()
    # dml-cmr: 2 n x 2 strengths x 2 seeds x 2 learners; 2SLS has no learner, so one fit per design and seed
    assert len(configs) == 16 + 8
    first = configs[0]
    assert first == {"dataset": "demand-iv", "data": {"n": 200, "rho": 0.9, "iv_strength": 1.0,
                                                      "noise_scale": "standardized", "ood_test": False},
                     "method": "dml-cmr", "learner": "linear", "folds": 3, "epochs": None, "n_draws": 8,
                     "f_model": None, "reps_crossfit": 1, "device": "auto", "outcome_learner": None,
                     "sampler": None, "nuisance_choice": "own", "n_knots": None, "small": None, "fixef_k": None, "cluster_df": None, "seed": 0}
    json.dumps(configs)  # plain JSON
    # settings added later are keyed only when set: the fits stored before them are found again
    older = {k: v for k, v in first.items() if k not in ("outcome_learner", "sampler")}
    assert config_key(first) == config_key(older) != config_key({**first, "outcome_learner": "auto"})
    tsls = [c for c in configs if c["method"] == "2sls"]
    assert all(c["learner"] is None and c["folds"] is None and c["n_draws"] is None for c in tsls)
    assert len({config_key(c) for c in configs}) == len(configs)
    # the key follows every value of the config and nothing else
    assert config_key(dict(first)) == config_key(first)
    assert config_key({**first, "seed": 1}) != config_key(first)
    assert config_key({**first, "data": {**first["data"], "rho": 0.5}}) != config_key(first)


def test_debias_off_is_keyed_only_when_off_and_reaches_the_fit(store, tmp_path):
    one = {**TINY, "methods": ["naive"], "seeds": 0}
    on, = spec_from_dict(one).configs()
    off, = spec_from_dict({**one, "debias": False}).configs()
    assert "debias" not in on and off == {**on, "debias": False}       # the default leaves configs as they were
    assert spec_from_dict({**one, "debias": True}).configs() == [on]
    assert config_key(off) != config_key(on)
    assert spec_from_dict(spec_from_dict({**one, "debias": "false"}).to_dict()).configs() == [off]
    first = run_study(one, store=store)
    assert first.fits["effect_debiased"].notna().all()
    assert run_study({**one, "debias": True}, store=store).message == "0 of 1 fits run, 1 reused"   # same key
    result = run_study({**one, "debias": False}, store=store)
    assert result.message == "1 of 1 fits run, 0 reused" and result.fits["effect_debiased"].isna().all()
    assert result.fits["effect_estimate"].iloc[0] == first.fits["effect_plug_in"].iloc[0]
    toml = tmp_path / "off.toml"
    toml.write_text('dataset = "demand-iv"\nmethods = ["naive"]\nlearner = "linear"\nseeds = 0\ndebias = false\n'
                    'data = {n = 200}\n')
    assert load_spec(toml).configs()[0]["debias"] is False
    with pytest.raises(DMLCoreError, match="debias must be true or false; got 'maybe'"):
        spec_from_dict({**one, "debias": "maybe"})


def test_only_dml_cmr_uses_folds():
    configs = spec_from_dict({**TINY, "methods": ["dml-cmr", "naive"], "folds": [2, 5], "seeds": 0}).configs()
    assert sorted((c["method"], c["folds"]) for c in configs) == [("dml-cmr", 2), ("dml-cmr", 5), ("naive", None)]


@pytest.mark.parametrize("spec, words", [
    ({"dataset": "nope"}, ["Unknown dataset 'nope'", "demand-iv"]),
    ({"dataset": "mroz", "data": {"n": 100}}, ["mroz is a real data set", "'n' given"]),
    ({"dataset": "demand-iv", "methods": ["naive", "magic"]}, ["Unknown method 'magic'"]),
    ({"dataset": "demand-pcl", "data": {"rho": 0.5}}, ["Unknown option 'rho' for demand-pcl", "it takes n"]),
    ({"dataset": "demand-iv", "colour": "red"}, ["Unknown key 'colour'"]),
    ({"dataset": "demand-iv", "learner": "svm"}, ["Unknown learner 'svm'"]),
    ({"dataset": "demand-iv", "folds": 1}, ["folds (K) must be at least 2"]),
    ({"dataset": "demand-iv", "data": {"n": "lots"}}, ["n must be an integer", "'lots'"]),
    ({"dataset": "demand-iv", "methods": []}, ["grid is empty"]),
    ({"dataset": "demand-iv", "device": "tpu"}, ["device must be"]),
    ({"dataset": "demand-iv", "data": {"noise_scale": "loud"}}, ["noise_scale must be one of standardized, raw",
                                                               "'loud'"]),
    ({"dataset": "ihdp-like", "data": {"design": "paper"}}, ["design must be one of code, text", "'paper'"]),
    ({"grid": []}, ["non-empty list"]),
])
def test_bad_specs_name_the_problem(spec, words):
    with pytest.raises(DMLCoreError) as info:
        spec_from_dict(spec).configs()
    for word in words:
        assert word in str(info.value)


def test_spec_files_toml_and_json_with_shared_keys(tmp_path):
    toml = tmp_path / "study.toml"
    toml.write_text('seeds = "0-1"\nmethods = ["naive"]\nlearner = "linear"\n'
                    '[[grid]]\ndataset = "demand-iv"\ndata = {n = [200, 300], rho = 0.5}\n'
                    '[[grid]]\ndataset = "demand-pcl"\ndata = {n = 250}\n')
    configs = load_spec(toml).configs()
    assert [(c["dataset"], c["data"]["n"], c["seed"]) for c in configs] == [
        ("demand-iv", 200, 0), ("demand-iv", 200, 1), ("demand-iv", 300, 0), ("demand-iv", 300, 1),
        ("demand-pcl", 250, 0), ("demand-pcl", 250, 1)]
    assert configs[0]["data"]["rho"] == 0.5 and configs[-1]["data"] == {"n": 250}
    as_json = tmp_path / "study.json"
    as_json.write_text(json.dumps({"dataset": "demand-iv", "data": {"n": [200]}, "methods": ["naive"], "seeds": [4]}))
    assert [c["seed"] for c in load_spec(as_json).configs()] == [4]
    bad = tmp_path / "bad.toml"
    bad.write_text("seeds = [1,\n")
    with pytest.raises(DMLCoreError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(DMLCoreError, match=".toml or .json"):
        load_spec(tmp_path / "study.yaml")


# ------------------------------------------------------------------ runner and store
def test_fit_config_is_the_same_fit_as_fit_run():
    config = spec_from_dict({**TINY, "methods": ["naive"], "seeds": 3}).configs()[0]
    row = run_fit_config(config)
    loaded = load_dataset("demand-iv", n=200, seed=3)
    direct = fit_run(loaded.data, "naive", truth=loaded.truth, learner="linear", n_draws=4, seed=3)
    assert row["status"] == "done" and row["error"] is None
    assert row["mse"] == direct.record["mse"] and row["mse_fresh"] == direct.record["metrics"]["mse_fresh"]
    assert row["rows"] == 200 and row["seconds"] > 0 and row["record"]["config"]["n_draws"] == 4
    assert row["effect_estimate"] == direct.record["effect"]["estimate"] and row["effect_level"] == 0.95
    assert row["heldout_relative"] is None          # a simulation is scored by its truth, not held out
    json.dumps(row)


def test_failed_fit_is_a_row_not_an_exception():
    config = spec_from_dict({**TINY, "methods": ["naive"], "seeds": 0}).configs()[0]
    config["data"]["rho"] = 1.5                      # past the spec's checks, as a hand-written config could be
    row = run_fit_config(config)
    assert row["status"] == "failed" and "rho" in row["error"] and "\n" not in row["error"]
    assert row["mse"] is None and row["record"] is None


def test_study_reuses_stored_fits_and_runs_only_missing_ones(store):
    events = []
    first = run_study(TINY, store=store, callback=events.append)
    assert first.message == "9 of 9 fits run, 0 reused"
    assert (first.fits["status"] == "done").all() and first.fits["mse"].notna().all()
    assert events[0] == {"event": "start", "total": 9, "to_run": 9, "reused": 0, "estimate_seconds": None}
    assert [e["done"] for e in events[1:]] == list(range(1, 10))
    again = run_study(TINY, store=store)
    assert again.message == "0 of 9 fits run, 9 reused"
    pd.testing.assert_series_equal(again.fits["mse"], first.fits["mse"])
    more = run_study({**TINY, "seeds": "0-3", "methods": ["ce-dml-cmr", "naive", "2sls", "regression"]}, store=store)
    assert more.message == "7 of 16 fits run, 9 reused"
    assert store.fit_record(first.fits["key"][0])["mse"] == first.fits["mse"][0]
    fresh = run_study(TINY, store=store, reuse=False)
    assert fresh.message == "9 of 9 fits run, 0 reused"


def _fail_at_rho_half(config):
    """A fit that fails (as a library error would) at rho = 0.5."""
    if config["data"]["rho"] == 0.5:
        raise DMLCoreError(f"the test's failure at seed {config['seed'] % 2}")
    return run_fit_config(config)


def test_failed_fits_are_kept_as_rows_with_their_reasons_and_retried(store):
    spec = {**TINY, "methods": ["naive"], "data": {"n": 200, "rho": [0.5, 0.9]}}
    result = run_study(spec, store=store, fit_fn=_fail_at_rho_half)
    failed = result.fits[result.fits["status"] == "failed"]
    assert len(failed) == 3 and (failed["rho"] == 0.5).all()
    assert (result.fits.loc[result.fits["rho"] == 0.9, "status"] == "done").all()
    assert result.message == "6 of 6 fits run, 0 reused, 3 failed"
    assert result.summary.set_index("rho").loc[0.5, "failed"] == 3
    assert result.failure_reasons() == [("the test's failure at seed 0", 2), ("the test's failure at seed 1", 1)]
    text = result.failure_text()
    assert text.startswith("3 of 6 fits failed. First reasons: the test's failure at seed 0 (2 fits)"), text
    report = report_html(result)
    assert "3 of 6 fits failed" in report and "the test's failure at seed 1" in report
    assert run_study(spec, store=store).message == "3 of 6 fits run, 3 reused"    # the rerun retries them
    every = run_study({**spec, "data": {"n": 200, "rho": 0.5}, "seeds": "5-6"}, store=store, fit_fn=_fail_at_rho_half)
    assert every.failure_text().startswith("Every fit failed (2 of 2). First reasons")


@pytest.mark.parametrize("data, words", [
    ({"n": 10_000_000}, f"larger than this tool supports ({N_MAX:,})"),
    ({"n": 0}, f"at least {N_MIN}"),
    ({"rho": 1.5}, "rho must be in [0, 1)"),
    ({"iv_strength": "inf"}, "iv_strength must be a finite number"),
    ({"noise_scale": "loud"}, "noise_scale must be one of"),
])
def test_a_grid_is_refused_by_the_simulators_own_limits_before_any_fit(data, words):
    with pytest.raises(DMLCoreError) as err:
        spec_from_dict({**TINY, "data": {"n": 200, **data}})
    assert words in str(err.value)


def test_methods_and_folds_are_checked_against_the_data_before_any_fit(store):
    from dmlcore.studies.checks import check_study

    with pytest.raises(DMLCoreError, match="KPV cannot fit demand-iv: KPV is a proximal"):
        run_study({**TINY, "methods": ["naive", "kpv"]}, store=store)
    with pytest.raises(DMLCoreError, match="50 folds need at least 500 rows"):
        check_study(spec_from_dict({**TINY, "methods": ["dml-cmr"], "folds": [2, 50]}))
    with pytest.raises(DMLCoreError, match="None of naive, 2sls uses 'folds'"):    # folds only bind DML-CMR
        spec_from_dict({**TINY, "methods": ["naive", "2sls"], "folds": 50})


def test_a_design_needing_more_rows_than_the_simulators_minimum_passes_the_check():
    """clustered-iv needs 100 rows (50 clusters); the check samples at the grid's own smallest N."""
    from dmlcore.studies.checks import check_study

    check_study(spec_from_dict({"dataset": "clustered-iv", "data": {"n": [1000, 2000]}, "methods": ["2sls"],
                                "seeds": "0"}))


def test_should_stop_cancels_the_rest_and_keeps_what_finished(store):
    done = []
    result = run_study(TINY, store=store, callback=lambda e: done.append(e), should_stop=lambda: len(done) >= 3)
    assert result.cancelled and result.ran == 2
    assert (result.fits["status"] == "cancelled").sum() == 7
    assert run_study(TINY, store=store).message == "7 of 9 fits run, 2 reused"


def test_summary_and_paired_tables_match_direct_computation(store):
    result = run_study({**TINY, "seeds": "0-5", "methods": ["naive", "2sls"]}, store=store)
    fits = result.fits
    for arm in ("naive", "2sls"):
        mse = fits.loc[fits["arm"] == arm, "mse"].to_numpy(dtype=float)
        row = result.summary.set_index("arm").loc[arm]
        assert row["reps"] == 6 and row["failed"] == 0
        assert row["median"] == pytest.approx(np.median(mse))
        assert (row["q1"], row["q3"]) == pytest.approx(tuple(np.quantile(mse, [0.25, 0.75])))
        assert row["mean"] == pytest.approx(mse.mean()) and row["sd"] == pytest.approx(mse.std(ddof=1))
    a = fits[fits["arm"] == "naive"].set_index("seed")["mse"].astype(float)
    b = fits[fits["arm"] == "2sls"].set_index("seed")["mse"].astype(float)
    diff = a - b
    pair = result.paired.iloc[0]
    assert (pair["arm_a"], pair["arm_b"], pair["pairs"]) == ("naive", "2sls", 6)
    assert pair["median_diff"] == pytest.approx(diff.median())
    assert (pair["wins_a"], pair["wins_b"]) == ((diff < 0).sum(), (diff > 0).sum())
    assert pair["wilcoxon_p"] == pytest.approx(wilcoxon(a, b).pvalue)


def test_paired_table_uses_only_seeds_both_finished():
    from dmlcore.studies.runner import result_from_rows

    rows = [{"dataset": "demand-iv", "n": 100, "method": m, "seed": s, "mse": v, "mse_fresh": None, "seconds": 1.0,
             "status": "done" if v is not None else "failed", "reused": False, "key": f"{m}{s}"}
            for m, s, v in [("a", 0, 1.0), ("a", 1, 2.0), ("a", 2, 3.0), ("b", 0, 2.0), ("b", 1, 2.0), ("b", 2, None)]]
    pair = result_from_rows(rows).paired.iloc[0]
    assert (pair["pairs"], pair["wins_a"], pair["wins_b"], pair["ties"]) == (2, 1, 0, 1)
    assert pair["median_diff"] == pytest.approx(-0.5)


def test_study_remembered_for_an_owner(store):
    result = run_study(TINY, store=store, owner="alice", label="tiny")
    assert [s["id"] for s in store.list_studies("alice")] == [result.study_id]
    assert store.list_studies("bob") == [] and load_study(result.study_id, store, owner="bob") is None
    back = load_study(result.study_id, store, owner="alice")
    pd.testing.assert_series_equal(back.fits["mse"], result.fits["mse"])
    assert back.summary["median"].tolist() == pytest.approx(result.summary["median"].tolist())


# ------------------------------------------------------------------ executors
def _kill_on_seed_one(config):
    """A fit whose worker process dies (as when killed) for seed 1 of the naive method."""
    if config["seed"] == 1 and config["method"] == "naive":
        os._exit(9)
    return run_fit_config(config)


def test_killed_worker_fails_one_row_keeps_the_rest_and_a_rerun_completes(store):
    result = run_study(TINY, store=store, jobs=2, fit_fn=_kill_on_seed_one)
    dead = result.fits[result.fits["status"] == "failed"]
    assert list(zip(dead["seed"], dead["method"])) == [(1, "naive")]
    assert "worker process died" in dead["error"].iloc[0]
    assert (result.fits.drop(dead.index)["status"] == "done").all()
    rerun = run_study(TINY, store=store)
    assert rerun.message == "1 of 9 fits run, 8 reused"
    assert (rerun.fits["status"] == "done").all()


def _square_or_raise(x):
    if x == 3:
        raise ValueError("three")
    return x * x


def test_executors_yield_results_and_exceptions_by_index():
    with get_executor("local", jobs=1) as inline:
        out = dict(inline.map(_square_or_raise, [1, 2, 3, 4]))
    assert {k: v for k, v in out.items() if k != 2} == {0: 1, 1: 4, 3: 16}
    assert isinstance(out[2], ValueError) and str(out[2]) == "three"


def test_a_pool_that_broke_before_a_submit_is_replaced_not_raised():
    """A worker can die between a wait and the next submit: submit then raises BrokenProcessPool."""
    from concurrent.futures.process import BrokenProcessPool

    from dmlcore.executors import ProcessExecutor

    class Broken:
        def submit(self, *args, **kwargs):
            raise BrokenProcessPool("a worker died")

        def shutdown(self, **kwargs):
            pass

    executor, calls = ProcessExecutor(jobs=1, threads=1), []
    real = executor._get_pool

    def pool():
        calls.append(1)
        if len(calls) == 1:
            executor._pool = Broken()
            return executor._pool
        return real()

    executor._get_pool = pool
    try:
        assert dict(executor.map(_square_or_raise, [1, 2])) == {0: 1, 1: 4}
    finally:
        executor.close()


def test_same_mse_in_process_in_workers_and_on_ray():
    spec = {**TINY, "methods": ["ce-dml-cmr", "naive"], "learner": "gb", "epochs": 3, "seeds": "0-2"}
    results = {}
    for name, kwargs in {"inline": {"jobs": 1}, "workers": {"jobs": 2}, "ray": {"executor": "ray", "jobs": 2}}.items():
        result = run_study(spec, keep=False, **kwargs)
        assert (result.fits["status"] == "done").all(), result.fits["error"].tolist()
        results[name] = result.fits.set_index("key")["mse"]
    assert results["inline"].equals(results["workers"])
    assert results["inline"].equals(results["ray"])
    import ray
    assert not ray.is_initialized()  # the local instance the study started is shut down


def test_unreachable_ray_address_is_one_line(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once closed
    with pytest.raises(DMLCoreError, match=f"Cannot reach a Ray cluster at '127.0.0.1:{port}'"):
        get_executor("ray", address=f"127.0.0.1:{port}")
    with pytest.raises(DMLCoreError, match="host:port"):
        get_executor("ray", address="nonsense:port")
    with pytest.raises(DMLCoreError, match="Unknown executor 'dask'"):
        get_executor("dask")


# ------------------------------------------------------------------ report
def test_report_files_figures_and_self_contained_page(tmp_path, store):
    result = run_study({**TINY, "data": {"n": [200, 300]}}, tmp_path / "out", store=store)
    out = tmp_path / "out"
    fits = pd.read_csv(out / "fits.csv")
    assert len(fits) == 18 and {"dataset", "n", "rho", "method", "seed", "mse", "mse_fresh", "seconds",
                                "status"} <= set(fits.columns)
    summary = pd.read_csv(out / "summary.csv")
    at = list(summary.columns).index("arm")
    assert list(summary.columns[at:at + 11]) == ["arm", "method", "reps", "failed", "median", "q1", "q3", "mean", "sd",
                                                 "mse_fresh_median", "seconds_mean"]   # the contract, then extensions
    assert {"effect_median", "heldout_relative_median"} <= set(summary.columns[at + 11:])
    assert len(summary) == 6 and len(pd.read_csv(out / "paired.csv")) == 6
    assert json.loads((out / "spec.json").read_text())["grid"][0]["data"]["n"] == [200, 300]
    page = (out / "report.html").read_text()
    body = page.split("<body>")[1].lower()       # (the figures' data is base64: look for addresses, not letters)
    assert "<script src" not in page and "https://" not in body and "http://" not in body
    assert len(page) > 1_000_000 and "Plotly.newPlot" in page  # plotly.js inlined: opens offline
    assert "Paired comparisons" in page and f"{result.summary['median'].iloc[0]:.4g}" in page
    if Path("/usr/bin/chromium").exists():
        assert result.png_error is None, result.png_error
        for name in ("mse_by_n.png", "paired_differences.png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert result.png_error.startswith("no PNG figures") and "\n" not in result.png_error


def test_figures_box_per_method_log_scale_and_paired_differences(store):
    result = run_study({**TINY, "data": {"n": [200, 300]}}, store=store)
    fig = mse_figure(result.fits)
    assert fig.layout.yaxis.type == "log"
    assert [t.name for t in fig.data] == ["CE-DML-CMR", "Naive plug-in", "2SLS"]   # methods by their titles
    assert sorted(set(fig.data[0].x)) == ["200", "300"] and len(fig.data[0].y) == 6
    paired = paired_figure(result.fits)
    assert [t.name for t in paired.data] == ["CE-DML-CMR − Naive plug-in", "CE-DML-CMR − 2SLS", "Naive plug-in − 2SLS"]
    fits = result.fits
    naive = fits[fits["method"] == "naive"].set_index(["n", "seed"])["mse"]
    tsls = fits[fits["method"] == "2sls"].set_index(["n", "seed"])["mse"]
    assert sorted(paired.data[2].y) == pytest.approx(sorted(naive - tsls))


def test_figures_with_several_panels_keep_titles_legend_and_axes_apart(store):
    fits = run_study({**TINY, "data": {"n": [200]}}, store=store).fits
    three = pd.concat([fits.assign(rho=rho) for rho in (0.1, 0.5, 0.9)], ignore_index=True)
    for fig in (mse_figure(three), paired_figure(three)):
        plot_height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        domains = sorted((fig.layout[f"yaxis{k if k > 1 else ''}"].domain for k in (1, 2, 3)), reverse=True)
        gaps = [(upper[0] - lower[1]) * plot_height for upper, lower in zip(domains, domains[1:])]
        assert min(gaps) >= PANEL_GAP - 1                     # room for an axis title and the next panel's title
        titles = [a.text for a in fig.layout.annotations][:3]
        assert titles == [f"demand-iv, Confounding ρ = {rho}" for rho in (0.1, 0.5, 0.9)]
        assert (fig.layout.legend.y - 1) * plot_height >= PANEL_TITLE   # the legend clears the first panel's title
        assert fig.layout.title.y * fig.layout.height > fig.layout.height - fig.layout.margin.t / 2


# ------------------------------------------------------------------ command line
def test_study_command_writes_outputs_and_reuses(capsys, tmp_path, home):
    argv = ["study", "--sizes", "200", "--methods", "naive,2sls", "--learner", "linear", "--n-draws", "4",
            "--seeds", "0-1", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "study: 4 fits, 0 stored, 4 to run (local)" in out and "4 of 4 fits run, 0 reused" in out
    assert "[4/4] demand-iv n=200 seed=1 2sls: mse=" in out
    assert (tmp_path / "out" / "report.html").exists() and (home / "runs.sqlite3").exists()
    assert main([*argv[:-2], "--seeds", "0-2"]) == 0
    assert "2 of 6 fits run, 4 reused" in capsys.readouterr().out


def test_study_command_prints_the_verdicts_in_the_standards_words(capsys, home):
    argv = ["study", "--sizes", "200", "--methods", "naive,2sls", "--learner", "linear", "--n-draws", "4",
            "--seeds", "0-2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "verdict: Naive plug-in is level with 2SLS (MSE lower on" in out
    assert "note: Too few seeds for a verdict: with 3 paired seeds" in out


def test_study_command_no_debias_runs_fits_of_their_own(capsys, home):
    argv = ["study", "--sizes", "200", "--methods", "naive", "--learner", "linear", "--n-draws", "4", "--seeds", "0"]
    assert main(argv) == 0 and "1 of 1 fits run, 0 reused" in capsys.readouterr().out
    assert main([*argv, "--no-debias"]) == 0 and "1 of 1 fits run, 0 reused" in capsys.readouterr().out
    assert main([*argv, "--no-debias"]) == 0 and "0 of 1 fits run, 1 reused" in capsys.readouterr().out


def test_study_command_reports_failed_fits_with_exit_1(capsys, home, monkeypatch):
    import dmlcore.studies.runner as runner

    real = runner.fit_run

    def fail_at_rho_half(data, method, settings=None, **kwargs):
        if kwargs["data_params"]["rho"] == 0.5:
            raise DMLCoreError("the test's failure")
        return real(data, method, settings, **kwargs)

    monkeypatch.setattr(runner, "fit_run", fail_at_rho_half)
    code = main(["study", "--sizes", "200", "--methods", "naive", "--learner", "linear", "--seeds", "0",
                 "--rho", "0.5,0.9"])
    out, err = capsys.readouterr()
    assert code == 1 and "1 of 2 fits failed" in err and "the test's failure" in err


@pytest.mark.parametrize("argv, words", [
    (["--dataset", "nope"], ["Unknown dataset 'nope'"]),
    (["--methods", "naive,magic"], ["Unknown method 'magic'"]),
    (["--dataset", "demand-pcl", "--rho", "0.5"], ["Unknown option 'rho' for demand-pcl"]),
    (["--methods", ","], ["grid is empty"]),
    (["--sizes", "10000000"], ["n = 10000000 is larger than this tool supports (1,000,000)"]),
    (["--rho", "0.5,1.5"], ["rho must be in [0, 1); got 1.5"]),
    (["--methods", "nmmr"], ["NMMR-U cannot fit demand-iv"]),
    (["--methods", "dml-cmr", "--folds", "30"], ["30 folds need at least 300 rows"]),
    (["--seeds", "5-2"], ["'5-2' runs backwards"]),
    (["--seeds", "0-10000", "--methods", "naive"], ["10,001 fits", "--yes"]),
    (["--executor", "ray", "--address", "127.0.0.1:9"], ["Cannot reach a Ray cluster at '127.0.0.1:9'"]),
    (["--address", "127.0.0.1:9"], ["--address is for --executor ray"]),
    (["--jobs", "0"], ["--jobs must be an integer of at least 1"]),
    (["--rho", "0.5", "--spec", "x.toml"], ["not both", "--rho"]),
    (["--spec", "absent.toml"], ["Cannot read the study spec"]),
    (["--spec", "x.toml", "--no-debias"], ["debias = false", "not by --no-debias"]),
])
def test_study_bad_input_exits_2_with_one_line(capsys, home, argv, words):
    learner = [] if argv[:2] == ["--methods", "nmmr"] else ["--learner", "linear"]     # NMMR reads no learner
    code = main(["study", *learner, "--sizes", "200", *argv] if "--spec" not in argv else ["study", *argv])
    assert_one_line_error(code, capsys.readouterr().err, *words)


def test_unknown_key_in_spec_file_exits_2(capsys, tmp_path, home):
    spec = tmp_path / "s.toml"
    spec.write_text('dataset = "demand-iv"\n[data]\nn = [200]\ncolour = "red"\n')
    assert_one_line_error(main(["study", "--spec", str(spec)]), capsys.readouterr().err,
                          "Unknown option 'colour' for demand-iv")


def test_a_new_size_is_timed_by_a_line_through_the_sizes_seen():
    from dmlcore.studies.runner import _scaled_by_rows
    # 2 s of fixed cost and 1 ms per row: proportional scaling from 1000 rows would say 6 s at 2000
    seen = {500: [2.5, 2.4, 2.6], 1000: [3.0, 2.9, 3.1]}
    assert _scaled_by_rows(seen, 2000) == pytest.approx(2.0 + 0.001 * 2000)
    assert _scaled_by_rows({1000: [3.0]}, 2000) == 6.0                  # one size: proportional
    assert _scaled_by_rows({500: [3.0], 1000: [1.0]}, 2000) >= 0        # never a negative time


# ------------------------------------------------------------------ verdicts, paper table
def _pair_rows(diffs: list[float]) -> list[dict]:
    """Fits of methods a and b on len(diffs) seeds, a's MSE = b's + diff."""
    rows = []
    for seed, diff in enumerate(diffs):
        for method, mse in (("a", 1.0 + diff), ("b", 1.0)):
            rows.append({"dataset": "demand-iv", "n": 100, "method": method, "seed": seed, "mse": mse,
                         "mse_fresh": None, "seconds": 1.0, "status": "done", "reused": False, "key": f"{method}{seed}"})
    return rows


def test_the_one_standard_needs_p_below_005_and_six_seeds():
    from dmlcore.studies.runner import result_from_rows
    from dmlcore.studies.summarize import min_pairs, smallest_p, verdict, verdict_lines

    assert min_pairs() == 6 and smallest_p(5) == 0.0625 and smallest_p(6) == 0.03125
    assert (verdict(0.03, -1.0), verdict(0.03, 2.0), verdict(0.05, -1.0), verdict(float("nan"), -1.0)) == (
        "ahead", "behind", "level", "level")
    five = result_from_rows(_pair_rows([-0.1, -0.2, -0.3, -0.4, -0.5]))    # a lower on every seed
    pair = five.paired.iloc[0]
    assert pair["wins_a"] == 5 and pair["wilcoxon_p"] == pytest.approx(0.0625) and pair["verdict"] == "level"
    [line] = verdict_lines(five.paired, five.fits)
    assert line.startswith("a is level with b (MSE lower on 5 of 5 seeds; Hodges–Lehmann a − b = -0.3; r = -1.00; "
                           "p = 0.062)") and "at least 6 are needed" in line
    six = result_from_rows(_pair_rows([-0.1, -0.2, -0.3, -0.4, -0.5, -0.6]))
    assert six.paired.iloc[0]["verdict"] == "ahead"
    assert verdict_lines(six.paired, six.fits) == [
        "a is ahead of b (MSE lower on 6 of 6 seeds; Hodges–Lehmann a − b = -0.35 [-0.6, -0.1]; r = -1.00; p = 0.031)"]
    behind = result_from_rows(_pair_rows([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))
    assert verdict_lines(behind.paired, behind.fits)[0].startswith("a is behind b (MSE lower on 0 of 6 seeds")
    report = report_html(five)
    assert "a is level with b" in report and "Too few seeds for a verdict" in report
    assert "Too few seeds" not in report_html(six) and "a is ahead of b" in report_html(six)


def test_the_paper_table_has_median_iqr_per_method_and_cell_and_the_paired_p(store):
    from dmlcore.studies.paper import paper_table

    result = run_study({**TINY, "methods": ["naive", "2sls"], "data": {"n": [200, 300]}, "seeds": "0-5"}, store=store)
    table = paper_table(result)
    frame = table.frame.set_index("Method")
    naive = result.fits[(result.fits["method"] == "naive") & (result.fits["n"] == 300)]["mse"].astype(float)
    q1, median, q3 = np.quantile(naive, [0.25, 0.5, 0.75])
    column = frame["N = 300: median [q1, q3]"]
    places = {len(x.split(".")[1]) for cell in column for x in cell.replace("[", "").replace("]", "").replace(",", "").split()}
    assert len(places) == 1                                   # one rounding in the whole column (issue 50)
    d = places.pop()
    assert column["Naive plug-in"] == f"{median:.{d}f} [{q1:.{d}f}, {q3:.{d}f}]"
    pair = result.paired[(result.paired["n"] == 200)].iloc[0]
    assert frame.loc["2SLS", "N = 200: p vs Naive plug-in"].startswith(f"{pair['p_holm']:.3f}")
    difference = frame.loc["2SLS", "N = 200: difference vs Naive plug-in"]
    assert float(difference.split(" [")[0]) == pytest.approx(-pair["hodges_lehmann"], abs=1e-3 + 1e-3 * abs(pair["hodges_lehmann"]))
    assert frame.loc["Naive plug-in", "N = 200: p vs Naive plug-in"] == "—"
    markdown, latex = table.to_markdown(), table.to_latex()
    assert "| Method | N = 200: median [q1, q3] |" in markdown and "Wilcoxon" in markdown
    assert r"\toprule" in latex and r"N = 300 \\ median [q1, q3]" in latex      # the header on two lines
    files = result.files or {}
    assert files == {}                         # written only with out_dir (below)


def test_report_names_the_mse_protocol_and_marks_the_true_effect(tmp_path, store):
    result = run_study({**TINY, "methods": ["naive", "2sls"]}, tmp_path / "out", store=store)
    assert {"table.md", "table.tex", "spec.json", "report.html"} <= set(result.files)
    page = (tmp_path / "out" / "report.html").read_text()
    assert "2,800-point grid" in page                                        # the MSE protocol, from the records
    assert "python -m dmlcore study --spec spec.json" in page
    from dmlcore.studies.figures import effect_figure, study_figures

    fig = effect_figure(result.fits)
    truth = [t for t in fig.data if t.name == "true effect"]
    assert truth and truth[0].y[0] == pytest.approx(result.fits["effect_truth"].astype(float).mean())
    columns = {t.xaxis for t in fig.data if t.name == "Naive plug-in"}
    assert columns == {"x", "x2"}                                             # plug-in and debiased side by side
    plug = [t for t in fig.data if t.name == "Naive plug-in" and t.xaxis == "x"][0]
    assert list(plug.y) == pytest.approx(result.fits.loc[result.fits["method"] == "naive", "effect_plug_in"].astype(float))
    headings = [f.heading for f in study_figures(result.fits, result.curves)]
    assert "Estimated curves over seeds" in headings
    curves = [f for f in study_figures(result.fits, result.curves) if f.file == "curves.png"][0]
    assert any(t.name == "true f" for t in curves.figure.data)
    note = [f for f in study_figures(result.fits) if f.file == "effects.png"][0].note
    assert "except 2SLS, which reports its own" in note and "dashed black line" in note


def test_durations_read_in_hours_and_minutes():
    from dmlcore.studies.report import about

    assert about(1883 * 60) == "about 31 h 23 min"
    assert (about(12), about(150), about(3600), about(3 * 3600 + 70)) == ("about 10 s", "about 2 min", "about 1 h",
                                                                         "about 3 h 1 min")

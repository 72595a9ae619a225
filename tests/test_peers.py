"""The peer methods (dmlcore.estimators.peers): each recovers a known f or bridge, refuses what it cannot fit,
and runs through fit_run, the CLI and the dashboard's plan like the other methods."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from dashboard import plan
from conftest import make_linear_iv, make_linear_pcl
from dmlcore.cli import main
from dmlcore.data.images import simulate_digits_iv
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import bridge_curve, simulate_demand_pcl
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.estimators import make_estimator
from dmlcore.estimators.peers import DFIV, KIV, KPV, NMMR, PMMR, DeepGMM, deepgmm, kernels
from dmlcore.estimators.peers.nets import OAdam
from dmlcore.estimators import METHODS
from dmlcore.runs import fit_run


def linear_iv(n, seed):
    """y = 2a + 2u + noise, a = 2z + u + noise: OLS of y on a is biased upwards (about 2.4)."""
    return make_linear_iv(n, seed, confounding=2.0, first_noise=0.3, noise=0.3)


def nonlinear_iv(n, seed):
    """f(a) = 1.5 |a|, a = z + u, y = f(a) + 2u + noise."""
    r = np.random.default_rng(seed)
    z, u = r.uniform(-3, 3, n), r.normal(size=n)
    a = z + u
    y = 1.5 * np.abs(a) + 2 * u + 0.3 * r.normal(size=n)
    return CausalData(pd.DataFrame(dict(y=y, a=a, z=z)), "iv", "y", treatment="a", instrument="z")


def linear_pcl(n, seed):
    """Y = 2A + 3U + noise with proxies Z = U + e, W = U + e': the bridge h(a, w) = 2a + 3w, E[Y | do(a)] = 2a."""
    return make_linear_pcl(n, seed)


def slope(x, y):
    return np.polyfit(x, y, 1)[0]


# ---------------------------------------------------------------- recovery
def test_kiv_recovers_a_linear_f_under_confounding():
    data = linear_iv(3000, 0)
    grid = np.linspace(-2, 2, 31)
    est = KIV(seed=0).fit(data)
    kiv, ols = slope(grid, est.predict(pd.DataFrame({"a": grid}))), slope(data.table.a, data.table.y)
    assert abs(kiv - 2) < 0.35 and abs(kiv - 2) < abs(ols - 2) - 0.1
    assert est.lam1_ in est.grid and est.lam2_ in est.grid
    entry = est.fold_losses_[0]
    assert entry["stage1_rows"] + entry["stage2_rows"] == 3000
    assert entry["second_stage_loss"] == min(entry["validation"]["stage2"])


@pytest.mark.parametrize("make", [
    lambda: DFIV(seed=0, epochs=100, stage2_iter=5, lr=3e-3),
    lambda: DeepGMM(seed=0, max_epochs=300, burn_in=100, batch_size=256),
], ids=["dfiv", "deepgmm"])
def test_neural_iv_peers_beat_confounded_regression(make):
    data = nonlinear_iv(1000, 0)
    grid = np.linspace(-2.5, 2.5, 51)
    true = 1.5 * np.abs(grid)
    cubic = np.polyval(np.polyfit(data.table.a, data.table.y, 3), grid)   # ignores the instrument
    est = make().fit(data)
    mse = np.mean((est.predict(pd.DataFrame({"a": grid})) - true) ** 2)
    assert mse < 0.8 * np.mean((cubic - true) ** 2)
    assert est.second_stage_history_["epoch"], "per-epoch losses are recorded"


def test_dfiv_covariate_batch_norm_is_an_option_off_by_default():
    import torch
    r = np.random.default_rng(0)
    n = 200
    x, c, e = r.normal(size=n), r.normal(size=n), r.normal(size=n)
    a = c + e + 0.3 * r.normal(size=n)
    table = pd.DataFrame(dict(y=a + x + e, a=a, x=x, c=c))
    data = CausalData(table, "iv", "y", treatment="a", instrument="c", covariates="x")

    def norms(est):
        return sum(isinstance(m, torch.nn.BatchNorm1d) for m in est.nets_[1].modules())
    assert norms(DFIV(seed=0, epochs=2).fit(data)) == 0
    assert norms(DFIV(seed=0, epochs=2, covariate_norm=True).fit(data)) == 1


@pytest.mark.parametrize("make", [lambda: KPV(seed=0), lambda: PMMR(seed=0), lambda: NMMR(seed=0, epochs=100)],
                         ids=["kpv", "pmmr", "nmmr"])
def test_pcl_peers_recover_a_known_bridge(make):
    data = linear_pcl(1000, 0)
    est = make().fit(data)
    grid = np.linspace(-1.5, 1.5, 21)
    causal = slope(grid, bridge_curve(est, data, grid))
    naive = slope(data.table.a, data.table.y)
    assert abs(causal - 2) < 0.4 and abs(naive - 2) > 1.0
    points = pd.DataFrame({"a": np.repeat(grid, 5), "w": np.tile(np.linspace(-1, 1, 5), len(grid))})
    rmse = np.sqrt(np.mean((est.predict(points) - 2 * points.a - 3 * points.w) ** 2))
    assert rmse < 0.8       # h itself ranges over about +-6 here


def test_nmmr_v_is_the_v_statistic_and_can_keep_its_best_validation_epoch():
    est = make_estimator("nmmr-v", seed=1, epochs=8, f_params={"val_fraction": 0.1})
    assert est.loss == "V" and est.epochs == 8
    est.fit(linear_pcl(300, 1))
    history = est.second_stage_history_
    assert len(history["epoch"]) == 8
    assert est.chosen_epoch_ == history["epoch"][int(np.argmin(history["val"]))]


def test_nmmr_follows_the_nmmr_code_by_default_raw_columns_and_the_last_epoch():
    data = linear_pcl(300, 1)
    data.table["w"] += 50.0          # a column far from 0: kept raw, not standardized
    est = NMMR(seed=0, epochs=6).fit(data)
    assert (est.epochs, est.scale, est.kernel_scale, est.val_fraction) == (6, "raw", "raw", 0.0)
    assert est.chosen_epoch_ == 5 and not any(est.second_stage_history_["val"])
    assert np.all(est.h_cols_.mean_ == 0) and np.all(est.h_cols_.std_ == 1)
    assert (est.scale_.mean, est.scale_.std) == (0.0, 1.0)
    std = NMMR(seed=0, epochs=6, scale="standardized").fit(data)
    assert std.h_cols_.mean_[std.h_cols_.names.index("w")] == pytest.approx(data.table["w"].mean())
    assert std.scale_.std == pytest.approx(data.table["y"].std(ddof=0))
    assert NMMR().epochs == 3000



@pytest.mark.parametrize("loss", ["U", "V"])
def test_nmmr_risk_is_the_kernel_statistic_also_where_rows_are_far_apart(loss):
    rng = np.random.default_rng(0)
    k_in = rng.normal(size=(60, 3)) * np.array([0.5, 1.0, 30.0])   # one wide column: most entries ~ exp(-400)
    r = rng.normal(size=60)
    kernel = np.exp(-0.5 * ((k_in[:, None, :] - k_in[None, :, :]) ** 2).sum(-1))
    if loss == "U":
        np.fill_diagonal(kernel, 0.0)
        exact = r @ kernel @ r / (60 * 59)
    else:
        exact = r @ kernel @ r / 60 ** 2
    got = NMMR(loss=loss)._risk(torch.as_tensor(r, dtype=torch.float32), torch.as_tensor(k_in, dtype=torch.float32))
    assert got.item() == pytest.approx(exact, rel=1e-4, abs=1e-9)


@pytest.mark.parametrize("make, name", [(lambda: NMMR(epochs=2, scale="log"), "scale"),
                                        (lambda: NMMR(epochs=2, out_relu="no"), "out_relu"),
                                        (lambda: DFIV(epochs=2, covariate_norm="yes"), "covariate_norm")])
def test_bad_switches_are_refused_by_name(make, name):
    data = linear_pcl(100, 0) if name != "covariate_norm" else nonlinear_iv(100, 0)
    with pytest.raises(DMLCoreError, match=name):
        make().fit(data)


def test_oadam_is_optimistic():
    """OAdam moves by -2 u_t + u_(t-1): its first step is twice Adam's, then corrects."""
    p = torch_param([1.0])
    opt = OAdam([p], lr=0.1)
    p.grad = torch_tensor([1.0])
    opt.step()
    assert p.item() == pytest.approx(1.0 - 0.2, abs=1e-6)
    p.grad = torch_tensor([1.0])
    opt.step()
    assert p.item() == pytest.approx(0.8 - 0.2 + 0.1, abs=1e-6)


def torch_param(values):
    import torch
    return torch.nn.Parameter(torch.tensor(values))


def torch_tensor(values):
    import torch
    return torch.tensor(values)


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize("method", ["kpv", "pmmr", "nmmr"])
def test_pcl_peers_refuse_iv_roles(method):
    with pytest.raises(DMLCoreError, match="proximal.*IV problem"):
        make_estimator(method).fit(linear_iv(100, 0))


@pytest.mark.parametrize("method", ["kiv", "dfiv", "deepgmm"])
def test_iv_peers_refuse_pcl_roles_and_data_without_an_instrument(method):
    with pytest.raises(DMLCoreError, match="IV method.*proximal"):
        make_estimator(method).fit(linear_pcl(100, 0))
    table = linear_iv(100, 0).table
    no_instrument = CausalData(table, "cmr", "y", inputs=["a", "z"], conditioning=["z"])
    with pytest.raises(DMLCoreError, match="needs an instrument"):
        make_estimator(method).fit(no_instrument)


@pytest.fixture(scope="module")
def digits():
    return simulate_digits_iv(120, 0).data


@pytest.mark.parametrize("method", ["kiv", "kpv", "pmmr"])
def test_kernel_peers_refuse_images(digits, method):
    data = digits if method == "kiv" else _pcl_with_image(digits)
    with pytest.raises(DMLCoreError, match="image pixel columns.*CNN"):
        make_estimator(method).fit(data)


def _pcl_with_image(digits):
    table = digits.table.assign(proxy_z=np.arange(len(digits.table)) % 5, proxy_w=np.arange(len(digits.table)) % 3)
    return CausalData(table, "pcl", "sales", treatment="price", treatment_proxy="proxy_z", outcome_proxy="proxy_w",
                      covariates=digits.covariates, image_columns=digits.image_columns, image_shape=digits.image_shape)


def test_dfiv_reads_images_with_the_cnn(digits):
    est = DFIV(seed=0, epochs=2, stage1_iter=2, covariate_iter=2).fit(digits)
    pred = est.predict(digits.table[digits.input_columns])
    assert pred.shape == (len(digits.table),) and np.all(np.isfinite(pred))
    assert est.nets_[1].image, "the covariate network (time and the digit) reads the picture with the CNN"


def test_kernel_peer_says_how_many_rows_fit_in_memory(monkeypatch):
    monkeypatch.setattr(kernels, "available_memory", lambda: 2 * 200 * 2 ** 20)
    with pytest.raises(DMLCoreError, match=r"about [\d,]+ rows fit.*n_features"):
        KIV(n_features=5000, approximation="nystrom").fit(linear_iv(3000, 0))


def test_diverging_min_max_game_is_a_failed_fit_with_its_reason(monkeypatch):
    monkeypatch.setattr(deepgmm, "DIVERGED_RMS", 0.0)
    with pytest.raises(FitDiverged, match="DeepGMM diverged at epoch 0: .*rms"):
        DeepGMM(max_epochs=3, batch_size=64).fit(linear_iv(200, 0))


def test_neural_peer_cancels():
    with pytest.raises(FitCancelled):
        NMMR(epochs=5).fit(linear_pcl(200, 0), should_stop=lambda: True)


def test_unknown_setting_is_named():
    with pytest.raises(DMLCoreError, match="Unknown KIV setting.*'lam3'.*n_features"):
        make_estimator("kiv", f_params={"lam3": 1.0})
    with pytest.raises(DMLCoreError, match="n_features"):
        KIV(n_features=0).fit(linear_iv(100, 0))


# ---------------------------------------------------------------- plumbing
def test_fit_run_scores_a_pcl_peer_and_records_it():
    sim = simulate_demand_pcl(400, 0)
    run = fit_run(sim.data, "kpv", truth=sim.truth, dataset="demand-pcl")
    rec = run.record
    assert rec["learner"] == "kernel" and rec["folds"] is None
    assert np.isfinite(rec["mse"]) and rec["mse"] < 1000      # predicting 0 would score about 3,300
    assert rec["fold_losses"][0]["stage1_rows"] == 200
    assert set(run.curve().columns) >= {"x", "estimate", "truth"}


def test_fit_run_passes_settings_and_epochs_to_a_neural_peer():
    events = []
    run = fit_run(linear_pcl(200, 0), "nmmr", epochs=3, f_params={"width": 16}, callback=events.append)
    assert run.record["learner"] == "nn" and run.estimator.width == 16
    assert json.loads(run.to_json())["device"] == "cpu"
    assert len(run.record["second_stage_history"]["epoch"]) == 3
    assert any(e["type"] == "loss" and e["model"] == "f" for e in events)


def test_cli_offers_the_peers_and_refuses_wrong_roles_in_one_line(capsys):
    assert {"kiv", "dfiv", "deepgmm", "kpv", "pmmr", "nmmr"} <= set(METHODS)
    code = main(["fit", "--dataset", "demand-pcl", "--n", "200", "--method", "kiv"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "KIV is an IV method" in err[0]


def test_dashboard_offers_only_the_peers_that_suit_the_problem(digits):
    iv, pcl = set(plan.methods_for(linear_iv(100, 0))), set(plan.methods_for(linear_pcl(100, 0)))
    assert {"kiv", "dfiv", "deepgmm"} <= iv and not {"kpv", "pmmr", "nmmr", "nmmr-v"} & iv
    assert {"kpv", "pmmr", "nmmr", "nmmr-v"} <= pcl and not {"kiv", "dfiv", "deepgmm"} & pcl
    assert "kiv" not in plan.methods_for(digits) and "dfiv" in plan.methods_for(digits)
    _, errors = plan.build_plan({"est_methods": ["kpv"]}, linear_iv(100, 0))
    assert "proximal" in errors["est_methods"]
    assert all(m in plan.METHOD_HELP for m in METHODS if METHODS[m].peer)


@pytest.mark.usefixtures("fresh_runtime")
def test_estimators_page_offers_the_peers_of_the_data_problem():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.run()

    def simulate(name):
        at.switch_page("pages/1_data.py").run()
        at.selectbox(key="sim_name").set_value(name).run()
        at.number_input(key="sim_n").set_value(300).run()
        at.button(key="sim_run").click().run()
        at.switch_page("pages/3_estimators.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at.multiselect(key="est_methods")

    methods = simulate("demand-pcl")
    assert {"KPV", "PMMR", "NMMR-U", "NMMR-V"} <= set(methods.options) and "KIV" not in methods.options
    methods.set_value(["dml-cmr", "kpv", "nmmr"]).run()
    assert not at.error and any("Mastouri" in c.value for c in at.caption)
    methods = simulate("demand-iv")        # IV data: the proximal peers are no longer offered nor chosen
    assert "KIV" in methods.options and "KPV" not in methods.options
    assert methods.value == ["dml-cmr"]

"""Tests of the torch device choice (dmlcore.device) and its path through learners, estimators,
runs, the CLI and the dashboard plan, on the CPU with faked CUDA counts."""

import json

import numpy as np
import pytest
import torch

import dmlcore.device as device_mod
from dmlcore.cli import main
from dmlcore.data.registry import load_dataset
from dmlcore.device import gpus_needed, resolve_device
from dmlcore.estimators import trains_networks
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import DMLCMR, NaivePlugIn
from dmlcore.learners.nn import DEFAULTS, _FoldData, dropout_mask, make_network
from dmlcore.runs import fit_run

SMALL = dict(folds=2, epochs=2, n_draws=4)
NN_OWN = dict(outcome_learner="nn", sampler="nn")   # the network nuisances named (the default is "auto")


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(device_mod, "cuda_count", lambda: 0)


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setattr(device_mod, "cuda_count", lambda: 2)


@pytest.fixture(scope="module")
def demand():
    return load_dataset("demand-iv", n=240, seed=5)


def tensors_of(module: torch.nn.Module):
    return list(module.parameters()) + list(module.buffers())


# ------------------------------------------------------------------ resolving
def test_auto_is_the_cpu_and_cuda_is_refused_without_cuda(no_cuda):
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")
    for spec in ("cuda", "cuda:0", torch.device("cuda", 1)):
        with pytest.raises(DMLCoreError) as err:
            resolve_device(spec)
        message = str(err.value)
        assert "\n" not in message and "sees no CUDA device" in message and torch.__version__ in message


def test_two_gpus_accept_cuda_1_and_refuse_cuda_2(two_gpus):
    assert resolve_device("auto") == torch.device("cuda:0")
    assert resolve_device("cuda") == torch.device("cuda:0")
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(DMLCoreError, match=r"'cuda:2': torch sees 2 CUDA device\(s\), cuda:0 to cuda:1"):
        resolve_device("cuda:2")
    with pytest.raises(DMLCoreError, match="device must be auto, cpu, cuda or cuda:N; got 'gpu'"):
        resolve_device("gpu")


def test_auto_on_this_machine_follows_what_torch_sees():
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == want


def test_gpus_needed_for_a_task(no_cuda):
    assert gpus_needed("auto") == 0                                   # nothing here to reserve
    assert gpus_needed("auto", available=4) == 1
    assert gpus_needed("cpu", available=4) == 0
    assert gpus_needed("cuda:1", available=2) == 1                    # one GPU per task
    with pytest.raises(DMLCoreError, match="none is available"):
        gpus_needed("cuda", available=0)
    with pytest.raises(DMLCoreError, match="got 'tpu'"):
        gpus_needed("tpu", available=1)
    def task_gpus(config, available):      # as the study runner asks for a config
        return gpus_needed(config.get("device", "auto"), available, networks=trains_networks(config))

    nn_fit = {"method": "dml-cmr", "learner": "nn", "device": "cuda"}
    assert task_gpus(nn_fit, available=1) == 1
    assert task_gpus({**nn_fit, "learner": "gb"}, available=1) == 0            # trees on the CPU
    assert task_gpus({**nn_fit, "learner": "gb", "f_model": "nn"}, available=1) == 1
    assert task_gpus({**nn_fit, "method": "2sls"}, available=1) == 0
    assert task_gpus({"method": "naive", "learner": "nn"}, available=1) == 1    # device "auto"
    assert task_gpus({"method": "naive", "learner": None, "device": "auto"}, available=1) == 1  # the default
    assert task_gpus({"method": "dfiv", "device": "auto"}, available=1) == 1          # a neural peer
    assert task_gpus({"method": "kiv", "device": "auto"}, available=1) == 0           # kernels: CPU


# ------------------------------------------------------------------ where tensors live
def test_fold_data_and_networks_are_built_on_the_device():
    """The meta device (shapes only) stands in for a GPU: nothing may stay on the CPU."""
    rng = np.random.default_rng(0)
    C, y = rng.random((40, 70)), rng.random((40, 1))
    sets = [np.arange(20), np.arange(20, 40)]
    params = dict(DEFAULTS, dropout=0.1)
    data = _FoldData(C, y, sets, 0.2, rng, "meta")
    assert {t.device.type for t in (data.C, data.T, data.c_mean, data.c_std, data.t_mean, data.t_std)} == {"meta"}
    gen = torch.Generator().manual_seed(0)
    mlp = make_network(2, 70, params, 3, gen, None, data, "meta").eval()
    assert {t.device.type for t in tensors_of(mlp)} == {"meta"}
    assert mlp(torch.zeros(2, 5, 70, device="meta")).shape == (2, 5, 3)
    # pixels scattered among the inputs: their positions are index buffers, which must move too
    image = ([0, 2, *range(4, 66)], (8, 8))
    cnn = make_network(2, 70, params, 1, gen, image, data, "meta")
    assert len(list(cnn.buffers())) == 2
    assert {t.device.type for t in tensors_of(cnn)} == {"meta"}


def test_a_cpu_fit_keeps_every_model_on_the_cpu_and_auto_gives_the_same_numbers(demand, no_cuda):
    est = DMLCMR("nn", device="cpu", seed=1, **SMALL, **NN_OWN).fit(demand.data)
    cpu = resolve_device("cpu")
    assert est.device_ == "cpu"
    for model in (est.s_model_.model_, est.g_model_.model_, est.f_.model_):
        assert {t.device for t in tensors_of(model)} == {cpu}
    for data in (est.s_model_.data_, est.g_model_.data_):
        assert data.C.device == cpu and data.c_std.device == cpu
    X = demand.data.table[demand.data.input_columns]
    pred = est.predict(X)
    assert np.isfinite(pred).all() and pred.std() > 0
    auto = DMLCMR("nn", seed=1, **SMALL, **NN_OWN).fit(demand.data)                # "auto" without CUDA
    assert auto.device == "auto" and auto.device_ == "cpu"
    np.testing.assert_array_equal(auto.predict(X), pred)
    assert auto.fold_losses_ == est.fold_losses_


def test_a_fitted_estimator_moves_to_another_device(demand, no_cuda):
    """``to`` moves every network and its data: checked with the meta device (shapes only)."""
    import pickle

    est = DMLCMR("nn", device="cpu", seed=2, **SMALL, **NN_OWN).fit(demand.data)
    X = demand.data.table[demand.data.input_columns]
    before = est.predict(X)
    moved = pickle.loads(pickle.dumps(est)).to("cpu")        # as a worker's fit travels back
    np.testing.assert_array_equal(moved.predict(X), before)
    with pytest.raises(DMLCoreError, match="sees no CUDA device"):
        est.to("cuda")
    for learner in (est.s_model_, est.g_model_, est.f_):
        learner.to("meta")
    for learner in (est.s_model_, est.g_model_):
        data = learner.data_
        assert {t.device.type for t in (data.C, data.T, data.c_mean, data.c_std, data.t_mean, data.t_std)} == {"meta"}
    for model in (est.s_model_.model_, est.g_model_.model_, est.f_.model_):
        assert {t.device.type for t in tensors_of(model)} == {"meta"}


def test_a_fitted_auto_nuisance_moves_its_networks(no_cuda):
    """auto's kept network (its one candidate on image data) moves with ``to``, as the learner's own does."""
    from dmlcore.learners import make_outcome_learner
    from dmlcore.learners.select import SelectedOutcome
    from dmlcore.progress import Monitor

    rng = np.random.default_rng(0)
    C, y = rng.random((60, 3)), rng.random(60)
    chosen = SelectedOutcome({"nn": make_outcome_learner("nn", {"max_epochs": 2})}).fit(
        C, y, [np.arange(30, 60), np.arange(30)], Monitor())
    assert chosen.to("meta") is chosen
    network = chosen.fitted_["nn"]
    assert {t.device.type for t in tensors_of(network.model_)} == {"meta"}
    assert network.data_.C.device.type == "meta"


def test_a_fit_without_networks_reports_the_cpu(demand, two_gpus):
    est = NaivePlugIn("linear", device="cuda:1", n_draws=4).fit(demand.data)   # no torch model at all
    assert est.device_ == "cpu"


def test_cuda_without_cuda_is_refused_before_any_training(demand, no_cuda):
    events = []
    with pytest.raises(DMLCoreError, match="sees no CUDA device"):
        DMLCMR("nn", device="cuda", **SMALL).fit(demand.data, callback=events.append)
    assert not [e for e in events if e["type"] == "loss"]
    with pytest.raises(DMLCoreError, match="sees no CUDA device"):   # every method, even without torch
        fit_run(demand.data, "2sls", device="cuda")


def test_the_run_record_keeps_the_device(demand, no_cuda):
    record = fit_run(demand.data, "naive", truth=demand.truth, learner="nn", device="cpu",
                     **{k: v for k, v in SMALL.items() if k != "folds"}).record
    assert record["config"]["device"] == "cpu" and record["device"] == "cpu"
    assert np.isfinite(record["mse"])
    record = fit_run(demand.data, "2sls", truth=demand.truth).record
    assert record["config"]["device"] == "auto" and record["device"] is None


# ------------------------------------------------------------------ dropout streams
def test_dropout_masks_from_a_torch_generator_keep_rate_scale_and_seed():
    """The stream used on GPUs (torch.rand on the generator's device), checked on the CPU."""
    rate = 0.3
    draw = lambda seed, active=None: dropout_mask((4, 300, 40), rate, torch.Generator().manual_seed(seed), active)
    mask = draw(3)
    assert set(mask.unique().tolist()) == {0.0, float(np.float32(1 / (1 - rate)))}
    assert abs((mask > 0).float().mean().item() - (1 - rate)) < 0.01
    assert torch.equal(draw(3), mask) and not torch.equal(draw(4), mask)
    assert torch.equal(draw(3, torch.tensor([2, 0])), mask[[2, 0]])       # a fold's mask ignores the others


# ------------------------------------------------------------------ CLI and dashboard
def test_cli_cuda_without_cuda_exits_2_with_one_line(capsys, no_cuda):
    code = main(["fit", "--n", "200", "--device", "cuda"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and "sees no CUDA device" in err[0]


def test_cli_refuses_a_gpu_that_is_not_there(capsys, two_gpus):
    code = main(["fit", "--n", "200", "--method", "2sls", "--device", "cuda:2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "torch sees 2 CUDA device(s)" in err[0]


def test_cli_fit_on_the_cpu_records_the_device(capsys, tmp_path, no_cuda):
    out = tmp_path / "run.json"
    code = main(["fit", "--n", "200", "--epochs", "2", "--n-draws", "4", "--method", "naive",
                 "--device", "cpu", "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    record = json.loads(out.read_text())
    assert record["config"]["device"] == "cpu" and record["device"] == "cpu"


def test_dashboard_offers_the_device_only_with_a_gpu(monkeypatch):
    from dashboard import plan

    data = load_dataset("demand-iv", n=200, seed=0).data
    choices = {**plan.ESTIMATOR_DEFAULTS, "est_methods": ["naive", "2sls"]}
    monkeypatch.setattr(device_mod, "cuda_count", lambda: 0)
    assert plan.device_choices() == []
    fits, errors = plan.build_plan(choices, data)
    assert not errors and all("device" not in fit.kwargs for fit in fits)        # auto is not passed
    _, errors = plan.build_plan({**choices, "est_device": "cuda:0"}, data)       # remembered from a GPU machine
    assert "sees no CUDA device" in errors["est_device"]
    monkeypatch.setattr(device_mod, "cuda_count", lambda: 2)
    assert plan.device_choices() == ["auto", "cpu", "cuda:0", "cuda:1"]
    fits, errors = plan.build_plan({**choices, "est_device": "cuda:1"}, data)
    assert not errors and [fit.kwargs.get("device") for fit in fits] == ["cuda:1", None]   # 2SLS has no networks
    assert "networks on cuda:1" in plan.describe(fits[0])


@pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py: own job registry and run store
@pytest.mark.parametrize("gpus", [0, 2])
def test_estimators_page_shows_the_device_only_with_a_gpu(monkeypatch, gpus):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(device_mod, "cuda_count", lambda: gpus)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/3_estimators.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [box for box in at.selectbox if box.key == "est_device"]
    if not gpus:
        assert not shown
        return
    assert shown and shown[0].options == ["auto", "cpu", "cuda:0", "cuda:1"] and shown[0].value == "auto"
    shown[0].set_value("cuda:1").run()
    assert "networks on cuda:1" in "\n".join(m.value for m in at.markdown)

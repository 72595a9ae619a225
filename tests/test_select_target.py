"""DML-CMR's target choice of nuisances (``nuisance_choice="target"``, dmlcore.estimators.nuisance_target)."""

from __future__ import annotations

import numpy as np
import pytest

from dmlcore.cli import nuisance_pairs
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import CEDMLCMR, DMLCMR
from dmlcore.estimators.nuisance_target import pair_losses
from dmlcore.estimators.second_stage import SECOND_STAGES
from dmlcore.learners.select import describe
from dmlcore.runs import fit_run
from dmlcore.cli import _summary_line, main
from dmlcore.runs.typed import NuisanceChoice, nuisances_chosen


class _Outcome:
    """E[Y | Z] of the linear design below, the same for every fold."""

    def predict(self, k, C):
        return 2.0 * C[:, 0]


class _Sampler:
    """Draws of X given Z: ``uses_c`` True the true law (Z + N(0, 1)), False the marginal (ignores C)."""

    def __init__(self, uses_c):
        self.uses_c = uses_c

    def sample(self, k, C, m, rng):
        centre = C[:, :1] if self.uses_c else np.zeros((len(C), 1))
        spread = 1.0 if self.uses_c else np.sqrt(2.0)
        return (centre[:, None, :] + spread * rng.standard_normal((len(C), m, 1))).astype(np.float32)


def _linear_design(n=1200, seed=0):
    """x = z + e, y = 2 x + 2 e + noise: E[y - 2x | z] = 0, and x is confounded by e."""
    rng = np.random.default_rng(seed)
    z, e = rng.standard_normal(n), rng.standard_normal(n)
    x = z + e
    y = 2.0 * x + 2.0 * e + 0.5 * rng.standard_normal(n)
    held = np.array_split(rng.permutation(n), 5)
    return z[:, None], y, x[:, None], [np.sort(h) for h in held]


def test_the_criterion_ranks_a_distribution_model_that_ignores_c_below_the_true_one():
    C, y, X, held = _linear_design()

    def fit_f(rows, targets, draws, monitor):
        return SECOND_STAGES["linear"]({}, 8, 0).fit(targets, draws, X[rows], monitor)

    losses = pair_losses({"s": _Outcome()}, {"good": _Sampler(True), "flat": _Sampler(False)}, C=C, y=y, inputs=X,
                         assemble=lambda c, draws: draws, held=held, fit_f=fit_f, bank=32, names=["z"],
                         excluded=["z"], seed=0)
    good, flat = losses[("s", "good")], losses[("s", "flat")]
    # the true law gives f-hat near 2x, whose residual 2e + noise has no projection on z; the flat one leaves
    # f-hat without a slope, and y's dependence on z (4 Var(z)) shows in the projected residual
    assert good < 0.1 and flat > 1.0 and flat > 20 * good, losses


@pytest.fixture(scope="module")
def small_demand():
    return simulate_demand_iv(400, 3, iv_strength=1.0)


TINY_RUN = dict(learner="gb", folds=3, epochs=40, f_model="linear", heldout_folds=0, debias=False, seed=3)


@pytest.fixture(scope="module")
def target_run(small_demand):
    return fit_run(small_demand.data, "dml-cmr", nuisance_choice="target", **TINY_RUN)


def test_the_record_says_the_target_chose_and_the_choice_is_its_lowest_pair(target_run):
    run = target_run
    record = run.record
    assert record["config"]["nuisance_choice"] == "target"
    for role, part in (("s", 0), ("g", 1)):
        chosen = record["nuisances"][role]
        assert chosen["criterion"] == "target"
        pair = min(chosen["target_loss"], key=chosen["target_loss"].get)
        assert chosen["target_pair"] == pair and chosen["choice"] == pair.split("|")[part]
        assert set(chosen["choice_per_fold"]) == {chosen["choice"]}
        assert "DML-CMR's target" in describe(chosen, role)
        assert NuisanceChoice.from_dict(chosen).criterion == "target"
    # the pairs: every outcome candidate with each distribution model kept (gb-small / gb: the energy score's)
    assert len(record["nuisances"]["s"]["target_loss"]) == len(record["nuisances"]["s"]["candidates"])
    # one wording, from one function, in the CLI's summary line, the run's summary and the Results page
    s, g = record["nuisances"]["s"]["choice"], record["nuisances"]["g"]["choice"]
    wording = (f"outcome model {s}, distribution model {g}, chosen by DML-CMR's target (held-out projected residual "
               f"of the pilot f̂)")
    assert nuisances_chosen(run.result.nuisances) == nuisances_chosen(record["nuisances"]) == wording
    line = _summary_line(run.result)
    assert f" s-hat=auto:{s} g-hat=auto:{g} nuisances=({wording})" in line and "\n" not in line
    assert f"Nuisances: auto: {wording}" in " ".join(run.summary().split())


def test_bench_rows_name_the_pair_fitted_and_the_pair_the_default_would_have_fitted(small_demand, target_run):
    """A bench row's nuisance_pair is the target's pair; its own_loss_pair is what the default (own) fits on the
    same data and seed, so the rows tell how often the two criteria agree without a second fit."""
    default = fit_run(small_demand.data, "dml-cmr", **TINY_RUN).record
    target = target_run.record
    assert nuisance_pairs(target)["nuisance_pair"] == target["nuisances"]["s"]["target_pair"]
    fitted_by_default = nuisance_pairs(default)["nuisance_pair"]
    assert fitted_by_default == "|".join(default["nuisances"][role]["choice"] for role in ("s", "g"))
    assert nuisance_pairs(target)["own_loss_pair"] == nuisance_pairs(default)["own_loss_pair"] == fitted_by_default


def test_the_default_choice_records_no_criterion_and_target_is_refused_where_it_cannot_act(small_demand):
    est = DMLCMR("gb", 3, epochs=40, f_model="linear", seed=3).fit(small_demand.data)
    assert "criterion" not in est.nuisance_selection_["s"]
    assert "DML-CMR's target" not in describe(est.nuisance_selection_["g"], "g")
    chosen = {role: est.nuisance_selection_[role]["choice"] for role in ("s", "g")}
    assert nuisances_chosen(est.nuisance_selection_) == (f"outcome model {chosen['s']}, distribution model "
                                                         f"{chosen['g']}, chosen by their own held-out losses")
    assert nuisances_chosen({}) is None
    with pytest.raises(DMLCoreError, match="nuisance_choice='target'.*DMLCMR takes it"):
        CEDMLCMR("gb", nuisance_choice="target").fit(small_demand.data)
    with pytest.raises(DMLCoreError, match="nuisance_choice.*ce-dml-cmr|ce-dml-cmr.*nuisance_choice"):
        fit_run(small_demand.data, "ce-dml-cmr", learner="gb", nuisance_choice="target")
    with pytest.raises(DMLCoreError, match="nuisances are named"):
        DMLCMR("gb", 3, outcome_learner="gb", sampler="gb", nuisance_choice="target").fit(small_demand.data)
    with pytest.raises(DMLCoreError, match="more folds"):
        DMLCMR("gb", 2, nuisance_choice="target").fit(small_demand.data)
    with pytest.raises(DMLCoreError, match="Unknown nuisance_choice 'best'"):
        DMLCMR("gb", 3, nuisance_choice="best").fit(small_demand.data)


@pytest.mark.parametrize("argv, words", [
    (["fit", "--n", "300", "--method", "ce-dml-cmr"], "ce-dml-cmr does not use --nuisance-choice"),
    (["fit", "--n", "300", "--method", "naive"], "naive does not use --nuisance-choice"),
    (["fit", "--n", "300", "--learner", "rf", "--folds", "3"], "the nuisances are named (outcome_learner='rf'"),
    (["fit", "--n", "300", "--learner", "gb", "--folds", "2"], "needs more folds than that; got folds=2"),
    (["bench", "--sizes", "300", "--methods", "dml-cmr", "--learner", "rf"], "With learner 'rf' and folds 10: "),
    (["bench", "--sizes", "300", "--methods", "dml-cmr", "--learner", "gb", "--folds", "2"], "got folds=2"),
    (["study", "--sizes", "300", "--methods", "dml-cmr,naive", "--learner", "gb,rf"], "With learner 'rf'"),
    (["study", "--sizes", "300", "--methods", "naive"], "naive does not use 'nuisance_choice'"),
    (["study", "--dataset", "digits-iv", "--sizes", "300", "--methods", "dml-cmr", "--learner", "nn"],
     "DML-CMR cannot fit digits-iv with learner 'nn': nuisance_choice='target' scores the pilot's f-hat by a "
     "regression on a spline basis of the conditioning columns, which cannot take image pixels"),  # the data's refusal
])
def test_fit_bench_and_study_refuse_the_target_choice_in_one_line_before_any_fit(argv, words, capsys, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--nuisance-choice", "target"]) == 2
    out, err = capsys.readouterr()
    assert words in err and err.count("\n") == 1 and err.startswith("error: "), err
    assert not out and not list(tmp_path.glob("*.csv"))

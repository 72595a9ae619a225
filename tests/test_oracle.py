"""Oracle nuisances of demand-iv: the truth hands out E[Y | C] and the distribution of price given C."""

import numpy as np
import pytest

from dmlcore.data.simulate import Y_STD, demand_f0, demand_iv_given, simulate_demand_iv, simulate_demand_pcl
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import DMLCMR

REPEATS = 4000


@pytest.mark.parametrize("iv_strength,noise_scale", [(1.0, "standardized"), (0.4, "standardized"), (1.0, "raw")])
def test_oracles_match_monte_carlo(iv_strength, noise_scale):
    """At 40 rows of C, E[Y | C] and the law of price given C by simulating the design's own
    generator REPEATS times per row: the oracle's s is within Monte-Carlo error of the mean."""
    sim = simulate_demand_iv(500, seed=3, iv_strength=iv_strength, noise_scale=noise_scale)
    c = sim.data.table[sim.truth.conditioning].iloc[:40]
    rng = np.random.default_rng(5)
    rep = np.repeat(np.arange(len(c)), REPEATS)
    draws = demand_iv_given(c["customer_type"].to_numpy()[rep], c["time"].to_numpy()[rep],
                            c["fuel_price"].to_numpy()[rep], rng, 0.9, iv_strength, noise_scale)
    y = draws["sales"].to_numpy().reshape(len(c), REPEATS)
    price = draws["price"].to_numpy().reshape(len(c), REPEATS)

    s_hat = sim.truth.oracle_outcome().fit(c.to_numpy(), None, [np.arange(len(c))], None).predict(0, c.to_numpy())
    standard_error = y.std(1, ddof=1) / np.sqrt(REPEATS)
    held_out = np.mean(((s_hat - y.mean(1)) / standard_error) ** 2)   # ~1 when s-hat is the mean
    assert held_out < 2.0
    # the confounder (rho w in the noise) is in y but has mean zero given C: no oracle without it passes
    assert np.all(np.abs(s_hat - y.mean(1)) < 5 * standard_error)

    sampler = sim.truth.oracle_sampler().fit(c.to_numpy(), price[:, :1], [np.arange(len(c))], None)
    sample = sampler.sample(0, c.to_numpy(), REPEATS, rng)[:, :, 0]
    assert sample.shape == (len(c), REPEATS)
    assert np.all(np.abs(sample.mean(1) - price.mean(1)) < 5 * np.sqrt(2.0 / REPEATS))
    assert np.all(np.abs(sample.std(1) / price.std(1) - 1.0) < 0.1)


def test_both_oracles_and_a_spline_f_recover_f():
    """With the true nuisances DML-CMR's only error is f's own: a spline f comes within 5 % of f0's
    variance where the data are (fresh draws) at N = 1000; a learned s-hat in their place costs more."""
    sim = simulate_demand_iv(1000, seed=0)
    t = sim.data.table
    variance = float(np.var(demand_f0(t["price"], t["time"], t["customer_type"]) / Y_STD))
    oracle = DMLCMR("gb", 2, outcome_learner=sim.truth.oracle_outcome(), sampler=sim.truth.oracle_sampler(),
                    f_model="sieve", seed=0).fit(sim.data)
    learned_s = DMLCMR("gb", 2, sampler=sim.truth.oracle_sampler(), f_model="sieve", seed=0).fit(sim.data)
    mse = sim.truth.score(oracle)["mse_fresh"]
    assert mse < 0.05 * variance
    assert sim.truth.score(learned_s)["mse_fresh"] > 2 * mse
    assert oracle.s_model_.name == "oracle" and oracle.g_model_.name == "oracle"


def test_designs_without_known_nuisances_say_so():
    truth = simulate_demand_pcl(200).truth
    assert not truth.has_oracles
    with pytest.raises(DMLCoreError, match="oracle nuisances exist for demand-iv only"):
        truth.oracle_outcome()


def test_oracle_refuses_other_columns():
    truth = simulate_demand_iv(200).truth
    with pytest.raises(DMLCoreError, match="3 conditioning columns"):
        truth.oracle_outcome().fit(np.zeros((5, 2)), None, [np.arange(5)], None)

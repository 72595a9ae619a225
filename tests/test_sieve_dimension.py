"""The sieve effect of data-driven dimension (dmlcore.inference.sieve_dimension): its rule picks the smallest rung
that agrees with every richer one, it is the Sieve 2SLS effect of that rung, it sums clusters, and it refuses
what it cannot fit in one line."""

import numpy as np
import pytest

from dmlcore.data.registry import load_dataset
from dmlcore.errors import DMLCoreError
from dmlcore.inference.debiased_effect import build_bases, per_row
from dmlcore.inference.sieve_dimension import DD_LADDER, DD_Z, choose, gaps, sieve_effect
from dmlcore.runs.average_effect import contrast
from dmlcore.stats.clusters import groups_of


def _rung(position, psi):
    psi = np.asarray(psi, dtype=float)
    return {"rung": position, "functions": [position + 2, position + 4], "psi": psi, "estimate": float(psi.mean())}


def test_the_rule_takes_the_first_rung_within_z_of_every_richer_one():
    rng = np.random.default_rng(0)
    noise = rng.normal(size=4000)
    biased = _rung(0, 1.0 + noise)                       # off by 1 against rungs 1 and 2: about 30 s.e. of the gap
    right = _rung(1, 2.0 + noise + 0.3 * rng.normal(size=4000))
    richer = _rung(2, 2.0 + noise + 0.3 * rng.normal(size=4000))
    chosen, why = choose([biased, right, richer])
    assert chosen is right, why
    assert "rung 1" in why and "the rung below differs" in why and len(why) <= 200
    g = gaps([biased, right, richer])
    assert g[0, 1] > DD_Z and g[1, 2] <= DD_Z and np.allclose(g, g.T)
    # the same rungs with the biased one removed: the first agrees with the richer, so it is taken
    assert choose([right, richer])[0] is right
    # nothing agrees: the richest is taken
    far = _rung(2, 3.0 + noise + 0.3 * rng.normal(size=4000))
    assert choose([biased, right, far])[0] is far


def test_on_a_linear_design_it_is_the_linear_rungs_sieve_2sls_and_covers():
    loaded = load_dataset("linear-iv", seed=3, n=1000)
    data, plan = loaded.data, contrast(loaded.data)
    out = sieve_effect(data, plan)
    truth = loaded.truth.effect(plan.points, plan.weights)
    assert out["rung"] == 0 and out["basis"] == DD_LADDER[0].describe()
    assert out["ci_lower"] <= truth <= out["ci_upper"]
    assert not out["weakly_identified"] and len(out["why"]) <= 200
    # the estimate is the mean of the cross-fitted Sieve 2SLS score of the chosen rung: recompute its plug-in
    b, q = build_bases(data, DD_LADDER[0])
    bx = b(data.table[[c.name for c in b.columns]].to_numpy(dtype=float))
    qc = q(data.table[[c.name for c in q.columns]].to_numpy(dtype=float))
    y = data.table[data.outcome].to_numpy(dtype=float)
    beta = np.linalg.lstsq(qc @ np.linalg.lstsq(qc, bx, rcond=None)[0], y, rcond=None)[0]   # full-sample sieve 2SLS
    full = float(np.mean(per_row(plan, len(y), basis=b) @ beta))
    assert abs(out["estimate"] - full) < 0.5 * out["std_error"], (out["estimate"], full)
    rungs = [r for r in out["rungs"] if "estimate" in r]
    assert len(rungs) >= 4 and len(out["gaps"]) == len(rungs)


def test_clusters_are_summed_and_what_it_cannot_fit_is_refused():
    loaded = load_dataset("clustered-iv", seed=1, n=1000)
    data, plan = loaded.data, contrast(loaded.data)
    ladder = DD_LADDER[:2]
    rows = sieve_effect(data, plan, ladder=ladder)
    clustered = sieve_effect(data, plan, ladder=ladder, groups=groups_of(data.table, "cluster"))
    assert clustered["std_error"] > 1.5 * rows["std_error"]     # the instrument and the error share cluster parts
    small = load_dataset("linear-iv", seed=0, n=60)
    with pytest.raises(DMLCoreError, match="needs at least 100 rows; the data has 60"):
        sieve_effect(small.data, contrast(small.data))

"""The sieve effect of data-driven dimension (dmlcore.inference.sieve_dimension): its rule picks the smallest rung
that agrees with every richer one, it is the Sieve 2SLS effect of that rung, it sums clusters, and it refuses
what it cannot fit in one line."""

import numpy as np
import pytest

from dmlcore.data.registry import load_dataset
from dmlcore.errors import DMLCoreError
from bench.sieve_dimension import design_data
from dashboard.results import sieve_text
from dmlcore.inference.debiased_effect import Rung, build_bases, per_row
from dmlcore.inference.sieve_dimension import (DD_LADDER, DD_Z, NOT_IDENTIFIED, add_sieve_effect, additivity_unchecked,
                                               choose, flag_reason, gaps, sieve_effect)
from dmlcore.runs.typed import Effect
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


def test_the_proxy_rungs_leave_an_iv_ladder_as_it_was():
    """On IV data the treatment x proxy rungs are the additive rungs again (no proxies): skipped as repeats, so the
    rungs fitted and the estimate are those of the six additive rungs alone."""
    loaded = load_dataset("linear-iv", seed=3, n=500)
    data, plan = loaded.data, contrast(loaded.data)
    assert [r.proxies for r in DD_LADDER] == [False] * 6 + [True] * 2
    for rung in DD_LADDER[6:]:
        plain = Rung(rung.treatment_knots, rung.excluded_knots)
        assert [(x.describe(), x.size) for x in build_bases(data, rung)] == \
               [(x.describe(), x.size) for x in build_bases(data, plain)]
    whole, additive = sieve_effect(data, plan), sieve_effect(data, plan, ladder=DD_LADDER[:6])
    assert [r["rung"] for r in whole["rungs"]] == [r["rung"] for r in additive["rungs"]] and max(
        r["rung"] for r in whole["rungs"]) <= 5
    assert whole["estimate"] == additive["estimate"] and whole["unchecked"] is None


def test_the_proxy_rungs_represent_a_non_additive_bridge_and_its_effect_averages_over_w():
    """f(a, w) = a w + 2 w lies in the first proxy rung's f basis (not in an additive one), and the proximal effect of
    that basis, the average slope in a of the mean over rows of f(a, W_i), is the mean of W over those rows."""
    loaded = load_dataset("demand-pcl", seed=0, n=300)
    data, plan = loaded.data, contrast(loaded.data)
    a, w = (data.table[c].to_numpy(dtype=float) for c in ("price", "views"))
    target = a * w + 2 * w
    for rung, exact in ((DD_LADDER[0], False), (DD_LADDER[6], True)):     # beta: the proxy rung's, last
        b, _ = build_bases(data, rung)
        bx = b(data.table[[c.name for c in b.columns]].to_numpy(dtype=float))
        beta = np.linalg.lstsq(bx, target, rcond=None)[0]
        misfit = np.abs(bx @ beta - target).max() / np.abs(target).max()
        assert (misfit < 1e-8) == exact, (rung, misfit)
    b, _ = build_bases(data, DD_LADDER[6])
    assert "interactions price x views" in b.describe()
    effect = float(np.mean(per_row(plan, len(a), basis=b) @ beta))
    assert effect == pytest.approx(float(np.mean(w)), rel=1e-8)      # the contrast uses every row (n < its cap)
    assert effect == pytest.approx(float(np.sum(plan.weights * (plan.points["price"] * plan.points["views"]
                                                                + 2 * plan.points["views"]))), rel=1e-8)


def test_products_the_data_cannot_identify_mark_the_effect_unchecked():
    """demand-pcl's bridge multiplies price by a function of the page views, and its cubic price x views products
    have a representer strength far below 1 (docs/coverage.md): the sieve effect is weakly identified and says why,
    and the flag beside a debiased effect gives no interval to read. On moderate proxies the products are
    identified and nothing is said."""
    loaded, plan, groups = design_data("demand-pcl", 0)
    dd = sieve_effect(loaded.data, plan, groups=groups)
    products = [r for r in dd["rungs"] if r.get("products")]
    assert len(products) == 2 and min(r["strength"] for r in products) < NOT_IDENTIFIED
    assert dd["weakly_identified"] and dd["unchecked"] and "cannot check the additive bridge" in dd["unchecked"]
    assert dd["unchecked"] == additivity_unchecked(dd["rungs"])
    reason = flag_reason({"estimate": dd["estimate"], "std_error": dd["std_error"]}, dd)   # se ratio 1: only this fires
    assert reason.endswith("no interval to read") and len(reason) <= 200
    # beside a run's debiased effect: flagged with that reason, the record says why, the table shows no interval
    effect = {"debiased": {"estimate": dd["estimate"], "std_error": dd["std_error"], "weakly_identified": False}}
    add_sieve_effect(effect, loaded.data, plan)
    assert effect["debiased"]["sieve_flag"] and effect["warning"] == f"flagged: {reason}"
    assert effect["debiased"]["sieve_dimension"]["unchecked"] == dd["unchecked"]
    assert sieve_text(Effect.from_dict(effect).debiased) == f"{dd['estimate']:.4g} (weakly identified: no interval)"
    loaded, plan, groups = design_data("moderate-pcl", 0)
    fine = sieve_effect(loaded.data, plan, groups=groups)
    assert fine["unchecked"] is None and min(r["strength"] for r in fine["rungs"] if r.get("products")) > 10

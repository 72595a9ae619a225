"""The Results page's effect table under the page's covariance choice (dashboard.results), without a browser:
the choice sets 2SLS's interval, its kind and its Anderson-Rubin set, every other run stays as fitted."""

import numpy as np
import pandas as pd
import pytest

from dashboard.results import ResultItem, effects_table, interval_descriptions, linear_iv_inference
from dmlcore.data.roles import CausalData
from dmlcore.runs import Run, fit_run


@pytest.fixture(scope="module")
def clustered_iv():
    """IV data whose errors share a shock within 40 groups and grow with the instrument's size, so the three
    covariance choices give three different standard errors."""
    rng = np.random.default_rng(3)
    n, groups = 1200, 40
    g = rng.integers(0, groups, n)
    shock = rng.normal(size=groups)[g]
    z = rng.normal(size=n) + 0.5 * rng.normal(size=groups)[g]
    u = rng.normal(size=n)
    a = z + u
    y = 1.5 * a + 2 * u + (1 + np.abs(z)) * rng.normal(size=n) + 2 * shock
    table = pd.DataFrame({"y": y, "a": a, "z": z, "x": rng.normal(size=n), "g": g.astype(float),
                          "h": rng.integers(0, 30, n).astype(float)})     # a second grouping: two-way clusters
    return CausalData(table, "iv", "y", treatment="a", instrument="z", covariates="x")


@pytest.fixture(scope="module")
def runs(clustered_iv):
    fit = dict(heldout_folds=0, debias=False)
    return {"tsls": fit_run(clustered_iv, "2sls", **fit),
            "sieve": fit_run(clustered_iv, "sieve-2sls", **fit)}


def _items(runs, stored_copy=False):
    items = [ResultItem("1", "2SLS run", runs["tsls"].record, run=runs["tsls"]),
             ResultItem("2", "sieve run", runs["sieve"].record, run=runs["sieve"])]
    if stored_copy:      # a stored 2SLS run: its record only, no data to recompute it on
        items.append(ResultItem("3", "stored 2SLS", runs["tsls"].record))
    return items


@pytest.mark.parametrize("cov, cluster, words", [("robust", None, "heteroskedasticity-robust"),
                                                 ("clustered", "g", "clustered by 'g'"),
                                                 ("clustered-cr1", "g", "clustered by 'g', CR1"),
                                                 ("clustered", "g,h", "clustered by 'g' and 'h'")])
def test_the_covariance_choice_sets_2sls_interval_kind_and_anderson_rubin(clustered_iv, runs, cov, cluster, words):
    fitted = effects_table(_items(runs, stored_copy=True)).set_index("run")
    inference = linear_iv_inference(clustered_iv, cov, cluster)
    chosen = effects_table(_items(runs, stored_copy=True), linear=(clustered_iv, inference)).set_index("run")
    wald = inference.wald
    row = chosen.loc["2SLS run"]
    assert row["effect"] == pytest.approx(wald.estimate)          # the coefficient does not move
    assert row["95% interval"] == f"{wald.ci_lower:.4g} to {wald.ci_upper:.4g}"
    assert row["95% interval"] != fitted.loc["2SLS run", "95% interval"]
    assert row["kind"] == f"2SLS s.e. ({words})" and fitted.loc["2SLS run", "kind"] == "2SLS s.e. (homoskedastic)"
    assert row["Anderson-Rubin set"] != fitted.loc["2SLS run", "Anderson-Rubin set"]
    # the clusters column follows the choice for 2SLS's coefficient (the run was fitted without clusters)
    expected = (f"clustered by {words.split('by ')[1].split(',')[0]} ({inference.first.n_clusters} clusters"
                if cluster else "not clustered")
    assert row["clusters"].startswith(expected) and fitted.loc["2SLS run", "clusters"].startswith("not clustered")
    # the linear IV box shows the same interval the table does: one computation
    assert wald.interval.startswith("2SLS") and words in wald.interval
    # the runs the choice does not concern stay as fitted: another method, a stored run without its data
    for run in ("sieve run", "stored 2SLS"):
        assert chosen.loc[run].equals(fitted.loc[run])
    # and the descriptions under the table say the chosen kind in full
    how = interval_descriptions(_items(runs), linear=(clustered_iv, inference))
    assert any(words in text for kind, text in how.items() if kind.startswith("2SLS s.e."))


def test_a_reference_2sls_follows_the_choice_too(clustered_iv, runs):
    inference = linear_iv_inference(clustered_iv, "robust", None)
    items = [ResultItem("2", "sieve run", runs["sieve"].record, run=runs["sieve"])]
    reference: Run = runs["tsls"]
    table = effects_table(items, reference, linear=(clustered_iv, inference)).set_index("run")
    assert table.loc["2SLS (reference)", "kind"] == "2SLS s.e. (heteroskedasticity-robust)"
    other = CausalData(clustered_iv.table.copy(), "iv", "y", treatment="a", instrument="z", covariates="x")
    unchanged = effects_table(items, reference, linear=(other, inference)).set_index("run")   # other data
    assert unchanged.loc["2SLS (reference)", "kind"] == "2SLS s.e. (homoskedastic)"


def test_2sls_without_a_debiased_effect_points_to_its_anderson_rubin_set():
    """With the debiased effect switched off (the demo), 2SLS's coefficient row still says how it is checked
    (its Anderson-Rubin set), not 'not checked'; a method with neither keeps saying it was not checked."""
    import copy
    import json
    from pathlib import Path

    from dashboard.results import ResultItem, effects_table
    records = Path(__file__).parent / "records"
    tsls = json.loads((records / "2sls.json").read_text())
    tsls["effect"]["debiased"] = None
    tsls["effect"]["intervals"] = [e for e in tsls["effect"]["intervals"] if e.get("source") is None
                                   or "debiased" not in str(e.get("source"))]
    row = effects_table([ResultItem("1", "2SLS run", tsls)]).iloc[0]
    assert row["weak identification"].startswith("see the Anderson-Rubin set")
    no_ar = copy.deepcopy(tsls)
    no_ar["effect"]["intervals"] = [e for e in no_ar["effect"]["intervals"]
                                    if not str(e.get("interval", "")).startswith("Anderson-Rubin")]
    assert effects_table([ResultItem("1", "2SLS run", no_ar)]).iloc[0]["weak identification"].startswith("not checked")


@pytest.mark.parametrize("cov, cluster", [("unadjusted", None), ("clustered", "g")])
def test_a_2sls_run_fitted_under_the_choice_gives_the_linear_iv_inference_from_its_record(clustered_iv, cov, cluster):
    """The Results page reads 2SLS, its first stage and its Anderson-Rubin set under the covariance choice off a
    2SLS run fitted under that choice (the demo's, as fitted), instead of refitting them in the page's run
    (about 2.5 s of the server's CPU per page, 20 pages at once in a class): the same numbers as computing them."""
    from dashboard.results import linear_iv_from_record
    run = fit_run(clustered_iv, "2sls", cov_type=cov, cluster=cluster, heldout_folds=0, debias=False)
    read, computed = linear_iv_from_record(run.record, cov, cluster), linear_iv_inference(clustered_iv, cov, cluster)
    assert read is not None
    for key in ("estimate", "ci_lower", "ci_upper", "interval"):
        assert getattr(read.wald, key) == getattr(computed.wald, key), key
    assert read.ar.to_dict() == computed.ar.to_dict()
    assert read.coefficients == computed.coefficients
    assert read.first.to_dict() == computed.first.to_dict()
    assert (read.cov_type, read.cluster) == (computed.cov_type, computed.cluster)
    # another choice, or another linear IV convention than linear_iv_inference fits, is computed, not read
    assert linear_iv_from_record(run.record, "robust", None) is None
    other = fit_run(clustered_iv, "2sls", cov_type=cov, cluster=cluster, small=True, heldout_folds=0, debias=False)
    assert linear_iv_from_record(other.record, cov, cluster) is None
    sieve = fit_run(clustered_iv, "sieve-2sls", cov_type=cov, cluster=cluster, heldout_folds=0, debias=False) \
        if cov == "unadjusted" else None
    if sieve is not None:
        assert linear_iv_from_record(sieve.record, cov, cluster) is None

"""Clusters in the nonparametric methods (dmlcore.stats.clusters, the resampler's groups option in
dmlcore.stats.resample): folds that keep a cluster whole, the debiased effect's clustered standard
error, the cluster bootstrap, and the refusals in run records."""

import numpy as np
import pandas as pd
import pytest

from dmlcore.stats.clusters import mean_se
from dmlcore.stats.resample import check_cluster_folds, cluster_draw, cluster_folds
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F
from dmlcore.runs.average_effect import CLOSED_FORM_REFUSED, bootstrap_effect
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import make_estimator
from dmlcore.runs.heldout_residual import fold_refits
from dmlcore.runs.fit import BANDS_NOT_CLUSTERED
from dmlcore.runs import fit_run


@pytest.fixture(scope="module")
def clustered():
    return load_dataset("clustered-iv", n=1500, seed=3)


def split_clusters(fold_of, groups):
    """How many clusters have rows in more than one fold."""
    frame = pd.DataFrame({"fold": fold_of, "group": groups})
    return int((frame.groupby("group")["fold"].nunique() > 1).sum())


def test_cluster_folds_keep_every_cluster_whole_and_balance_the_rows():
    groups = np.repeat(np.arange(37), np.random.default_rng(0).integers(5, 30, size=37))
    fold_of = cluster_folds(groups, 5, np.random.default_rng(1))
    assert split_clusters(fold_of, groups) == 0 and set(fold_of) == set(range(5))
    sizes = np.bincount(fold_of)
    assert sizes.max() - sizes.min() <= 30          # at most one cluster apart
    with pytest.raises(DMLCoreError, match="at least 5 clusters"):
        cluster_folds(np.repeat([0, 1, 2], 10), 5, np.random.default_rng(0))


def test_too_few_clusters_for_the_folds_or_for_the_standard_errors_are_said_in_one_line():
    from dmlcore.stats.covariance import FEW_CLUSTERS, few_clusters_note

    check_cluster_folds(5, 5)
    with pytest.raises(DMLCoreError, match="5 folds that keep clusters whole need at least 5 clusters; the data has 4"):
        check_cluster_folds(4, 5)
    assert few_clusters_note(FEW_CLUSTERS) is None and few_clusters_note(None) is None
    assert few_clusters_note(9).startswith("Only 9 clusters: ") and "\n" not in few_clusters_note(9)


def test_clustered_standard_error_from_cluster_sums():
    rng = np.random.default_rng(0)
    iid = rng.normal(size=4000)
    assert mean_se(iid, np.arange(4000) % 400) == pytest.approx(mean_se(iid), rel=0.15)
    shared = np.repeat(rng.normal(size=200), 20)       # every row a copy of its cluster's value
    groups = np.repeat(np.arange(200), 20)
    assert mean_se(shared, groups) / mean_se(shared) == pytest.approx(np.sqrt(20), rel=0.05)


def test_resampled_clusters_come_whole():
    groups = np.repeat(np.arange(10), np.arange(1, 11))
    rows = cluster_draw(groups, np.random.default_rng(2))
    drawn = pd.Series(groups[rows]).value_counts()
    assert all(count % (label + 1) == 0 for label, count in drawn.items())   # whole clusters, maybe repeated


def test_dml_cmr_folds_and_refits_never_split_a_cluster(clustered):
    data, groups = clustered.data, clustered.data.table["cluster"].to_numpy()
    kwargs = dict(learner="linear", folds=5, cluster="cluster")
    est = make_estimator("dml-cmr", **kwargs).fit(data)
    assert split_clusters(est.fold_of_, groups) == 0
    ignored = make_estimator("dml-cmr", learner="linear", folds=5).fit(data)
    assert split_clusters(ignored.fold_of_, groups) > 40             # the row split would break them
    for _, held, _ in fold_refits(data, "2sls", {"cov_type": "clustered", "cluster": "cluster"}, 2):
        assert split_clusters(np.isin(np.arange(len(groups)), held), groups) == 0


def test_debiased_interval_widens_by_about_the_design_effect(clustered):
    """The clustered design's score is correlated within clusters: the debiased interval must
    widen by about as much as 2SLS's clustered one does (computed by linearmodels)."""
    ratio = {}
    for method in ("dml-cmr", "2sls"):
        se = {}
        for cov in ("unadjusted", "clustered"):
            own = dict(learner="linear", folds=5) if method == "dml-cmr" else {}
            run = fit_run(clustered.data, method, truth=clustered.truth, **own, cov_type=cov,
                          cluster="cluster" if cov == "clustered" else None, effect_folds=0)
            effect = run.record["effect"]
            se[cov] = (effect["debiased"]["std_error"] if method == "dml-cmr"
                       else run.record["std_errors"]["a"])
            if cov == "clustered" and method == "dml-cmr":
                assert effect["debiased"]["clusters"] == {"column": "cluster", "count": 50}
                assert "sums the score within clusters" in effect["interval"]
                assert effect["clusters"]["count"] == 50
        ratio[method] = se["clustered"] / se["unadjusted"]
    assert ratio["2sls"] > 1.5                                        # the design effect is large
    assert 0.7 < ratio["dml-cmr"] / ratio["2sls"] < 1.4


def test_spline_delta_interval_and_bands_are_refused_with_clusters(clustered):
    run = fit_run(clustered.data, "sieve-2sls", truth=clustered.truth, cov_type="clustered", cluster="cluster",
                  effect_folds=0)
    effect = run.record["effect"]
    refused = [e for e in effect["intervals"] if e.get("refused")]
    assert [e["interval"] for e in refused] == [CLOSED_FORM_REFUSED] and len(CLOSED_FORM_REFUSED) <= 200
    assert effect["plug_in"]["ci_lower"] is None and effect["ci_lower"] is not None   # the debiased one
    assert {e["treatment"] for e in effect["clusters"]["intervals"]} == {"clustered", "refused"}
    tsls = fit_run(clustered.data, "2sls", truth=clustered.truth, cov_type="clustered", cluster="cluster",
                   effect_folds=0).record["effect"]
    assert not any(e.get("refused") for e in tsls["intervals"])        # 2SLS's own errors are clustered
    dml = fit_run(clustered.data, "dml-cmr", truth=clustered.truth, learner="linear", folds=5, f_model="sieve",
                  cov_type="clustered", cluster="cluster", effect_folds=0)
    assert dml.record["bands"]["confidence"]["clusters"] == BANDS_NOT_CLUSTERED
    assert dml.curve()["band"].str.contains("not clustered").all()


def test_bootstrap_resamples_clusters(clustered):
    boot = bootstrap_effect(clustered.data, "2sls", {"cov_type": "clustered", "cluster": "cluster"}, 30, seed=1)
    rows = bootstrap_effect(clustered.data, "2sls", {}, 30, seed=1)
    assert boot["clustered"] and "50 clusters of 'cluster'" in boot["interval"]
    assert not rows["clustered"] and "over rows" in rows["interval"]
    assert boot["sd"] > 1.8 * rows["sd"]                              # the cluster parts move the estimate


def _cluster_level_instrument(seed=2, groups=40, size=25, strength=0.25) -> CausalData:
    """An instrument set per cluster and a first-stage error with a cluster part: counted row by row
    the first stage looks strong (F about 80), counted by cluster it is weak (F about 3)."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(groups), size)
    z = rng.normal(size=groups)[g]
    v = rng.normal(size=groups)[g] + 0.5 * rng.normal(size=groups * size)
    a = strength * z + v
    y = 2 * a + 1.5 * v + rng.normal(size=groups)[g] + rng.normal(size=groups * size)
    table = pd.DataFrame({"y": y, "a": a, "z": z, "g": g.astype(float)})
    return CausalData(table, "iv", "y", treatment="a", instrument="z")


@pytest.mark.parametrize("method", ["dml-cmr", "2sls"])
def test_the_flag_counts_clusters_a_row_count_would_call_strong(method):
    """With the clusters ignored the flag is silent (row-wise F far above the bar); with them respected
    the clustered first stage's F is below the bar and the flag fires, with that reason, and no interval."""
    data = _cluster_level_instrument()
    fit = dict(learner="linear", folds=5, heldout_folds=0) if method == "dml-cmr" else dict(heldout_folds=0)
    ignored = fit_run(data, method, **fit).record["effect"]
    assert ignored["debiased"]["first_stage_f"] > 3 * WEAK_FIRST_STAGE_F and not ignored["weakly_identified"]
    for cov in ("clustered", "clustered-cr1"):
        respected = fit_run(data, method, cov_type=cov, cluster="g", **fit).record["effect"]
        assert respected["debiased"]["first_stage_f"] < WEAK_FIRST_STAGE_F
        assert respected["weakly_identified"] and "first stage's F" in respected["debiased"]["weak_reason"]
        assert respected["clusters"]["count"] == 40
        if method == "dml-cmr":
            assert respected["ci_lower"] is None and respected["interval"].startswith("weakly identified")


@pytest.mark.parametrize("method, f_model", [("naive", None), ("dml-cmr", "sieve")])
def test_every_dml_family_interval_widens_with_clusters(clustered, method, f_model):
    """The naive plug-in and DML-CMR with the spline f: the debiased standard error and the held-out
    residual's come from cluster sums, so they widen on the clustered design, and the spread is read
    against the clustered standard error."""
    fit = dict(learner="linear", f_model=f_model, heldout_folds=2, **({"folds": 5} if method == "dml-cmr" else {}))
    plain = fit_run(clustered.data, method, truth=clustered.truth, **fit).record
    grouped = fit_run(clustered.data, method, truth=clustered.truth, cov_type="clustered", cluster="cluster",
                      **fit).record
    se = grouped["effect"]["debiased"]["std_error"] / plain["effect"]["debiased"]["std_error"]
    assert se > 1.5                                                   # 2SLS's design effect is above 1.5 too
    assert grouped["effect"]["spread"]["std_error"] == grouped["effect"]["debiased"]["std_error"]
    assert grouped["heldout"]["relative_std_error"] > plain["heldout"]["relative_std_error"]


def test_an_error_of_f_hat_inside_f_basis_widens_no_clustered_interval(clustered):
    """f-hat's error inside f's basis (here a wrong slope, level and covariate coefficient) moves the
    debiased estimate by little, since the representer solves G'gamma = M; the clustered standard error
    must not count it (before clustered_score it was twice the standard error at the true f on this seed)."""
    from dmlcore.inference.debiased_effect import debias
    from dmlcore.runs.average_effect import contrast
    from dmlcore.stats.clusters import groups_of

    data, plan = clustered.data, contrast(clustered.data)
    true_f = lambda frame: (2 * frame["a"] + frame["x1"] - frame["x2"]).to_numpy()   # noqa: E731
    wrong = lambda frame: true_f(frame) - 0.8 * frame["a"].to_numpy() + 0.3 + 0.5 * frame["x1"].to_numpy()  # noqa: E731
    groups = groups_of(data.table, "cluster")
    at_f, off = (debias(data, plan, f(plan.points), f(data.table), groups=groups) for f in (true_f, wrong))
    assert at_f["basis"] == off["basis"]
    assert abs(off["estimate"] - at_f["estimate"]) < 0.5 * at_f["std_error"]
    assert off["std_error"] == pytest.approx(at_f["std_error"], rel=1e-6)

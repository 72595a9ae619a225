"""Clusters in the nonparametric methods (dmlcore.inference.clusters): folds that keep a cluster whole, the
debiased effect's clustered standard error, the cluster bootstrap, and the refusals in run records."""

import numpy as np
import pandas as pd
import pytest

from dmlcore.inference.clusters import cluster_folds, mean_se, resample_clusters
from dmlcore.data.registry import load_dataset
from dmlcore.inference.average_effect import CLOSED_FORM_REFUSED, bootstrap_effect
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import make_estimator
from dmlcore.inference.heldout_residual import fold_refits
from dmlcore.runs import BANDS_NOT_CLUSTERED, fit_run


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


def test_clustered_standard_error_from_cluster_sums():
    rng = np.random.default_rng(0)
    iid = rng.normal(size=4000)
    assert mean_se(iid, np.arange(4000) % 400) == pytest.approx(mean_se(iid), rel=0.15)
    shared = np.repeat(rng.normal(size=200), 20)       # every row a copy of its cluster's value
    groups = np.repeat(np.arange(200), 20)
    assert mean_se(shared, groups) / mean_se(shared) == pytest.approx(np.sqrt(20), rel=0.05)


def test_resampled_clusters_come_whole():
    groups = np.repeat(np.arange(10), np.arange(1, 11))
    rows = resample_clusters(groups, np.random.default_rng(2))
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

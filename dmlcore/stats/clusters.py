"""Clusters in the nonparametric methods: folds that keep a cluster whole, the standard error of a
mean score from its cluster sums, and resamples of whole clusters.

With ``cov_type="clustered"`` and a cluster column (:mod:`dmlcore.stats.covariance`), rows of one cluster
may share unobserved shocks. Every fold split of the DML-CMR family (the nuisances' K folds, the
refits that cross-fit f-hat for the debiased effect and the held-out residual, the representer's
folds) then puts a whole cluster in one fold, as DoubleML's cluster data and scikit-learn's
GroupKFold do; the debiased effect's variance is that of the mean of its score with the rows of
a cluster summed first (CR1, the small-sample factor G / (G - 1)); the bootstrap draws clusters,
not rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.stats.covariance import cluster_codes
from dmlcore.errors import DMLCoreError


def groups_of(table: pd.DataFrame, cluster: str | None) -> np.ndarray | None:
    """The rows' cluster numbers 0..G-1 from the column ``cluster`` (None: no clusters)."""
    return None if not cluster else cluster_codes(table, cluster)


def check_cluster_folds(clusters: int, folds: int) -> None:
    """Refuse, in one line, ``folds`` folds that keep clusters whole over only ``clusters`` clusters."""
    if clusters < folds:
        raise DMLCoreError(f"{folds} folds that keep clusters whole need at least {folds} clusters; the data has "
                           f"{clusters}. Use fewer folds, or a cluster column with more groups.")


def cluster_folds(groups: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Each row's fold 0..folds-1, every cluster's rows in one fold.

    The clusters are taken in a random order and each goes to the fold with the fewest rows so
    far, so folds are near-equal in rows when clusters are near-equal in size."""
    groups = np.asarray(groups)
    labels, code = np.unique(groups, return_inverse=True)
    check_cluster_folds(len(labels), folds)
    sizes = np.bincount(code)
    fold_of_cluster, load = np.empty(len(labels), dtype=int), np.zeros(folds)
    for c in rng.permutation(len(labels)):
        k = int(np.argmin(load))
        fold_of_cluster[c], load[k] = k, load[k] + sizes[c]
    return fold_of_cluster[code]


def mean_se(values: np.ndarray, groups: np.ndarray | None = None) -> float:
    """The standard error of mean(values): sd / sqrt(n) for independent rows; with ``groups``, from
    the clusters' sums of the centred values, sqrt(G / (G - 1) sum_g S_g^2) / n (CR1)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if groups is None:
        return float(values.std(ddof=1) / np.sqrt(n))
    _, code = np.unique(groups, return_inverse=True)
    sums = np.bincount(code, weights=values - values.mean())
    g = len(sums)
    return float(np.sqrt(g / (g - 1) * np.sum(sums ** 2)) / n)


def resample_clusters(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row indices of a resample that draws G clusters with replacement, each with all its rows."""
    _, code = np.unique(groups, return_inverse=True)
    members = np.split(np.argsort(code, kind="stable"), np.cumsum(np.bincount(code))[:-1])
    return np.concatenate([members[c] for c in rng.integers(0, len(members), size=len(members))])


def describe(cluster: str, groups: np.ndarray) -> str:
    """"42 clusters of 'village'"."""
    return f"{len(np.unique(groups)):,} clusters of '{cluster}'"

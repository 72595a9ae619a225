"""Clusters in the nonparametric methods: the rows' cluster numbers and the standard error of a mean
score from its cluster sums.

With ``cov_type="clustered"`` and a cluster column (:mod:`dmlcore.stats.covariance`), rows of one cluster
may share unobserved shocks. Every fold split of the DML-CMR family (the nuisances' K folds, the
refits that cross-fit f-hat for the debiased effect and the held-out residual, the representer's
folds) then puts a whole cluster in one fold, as DoubleML's cluster data and scikit-learn's
GroupKFold do, and the bootstrap draws clusters, not rows: both are the ``groups`` option of the
one resampler, :mod:`dmlcore.stats.resample`. The debiased effect's variance is that of the mean of
its score with the rows of a cluster summed first (CR1, the small-sample factor G / (G - 1)):
:func:`mean_se`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.stats.covariance import cluster_codes


def groups_of(table: pd.DataFrame, cluster: str | None) -> np.ndarray | None:
    """The rows' cluster numbers 0..G-1 from the column ``cluster`` (None: no clusters)."""
    return None if not cluster else cluster_codes(table, cluster)


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


def describe(cluster: str, groups: np.ndarray) -> str:
    """"42 clusters of 'village'"."""
    return f"{len(np.unique(groups)):,} clusters of '{cluster}'"

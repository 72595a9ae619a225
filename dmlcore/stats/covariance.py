"""The covariance choice of linear-IV inference: homoskedastic, heteroskedasticity-robust, or clustered
by a column or two (what ``--cov`` and ``--cluster`` name), and the checks of a cluster column.

``clustered`` is CR0 (no small-sample factor; linearmodels' ``debiased=False``), today's default;
``clustered-cr1`` multiplies its variance by ``G/(G-1) * (n-1)/(n-k)``, the CR1 of Stata's
``vce(cluster)`` (k counts the regressors and the absorbed fixed effects). Two cluster columns
(``cluster="a,b"``) give Cameron, Gelbach & Miller's two-way covariance, each of its three terms
with its own ``G/(G-1)`` under CR1 (linearmodels' convention).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.errors import DMLCoreError

COV_TYPES = ("unadjusted", "robust", "clustered")          # the dashboard's choices
COV_CHOICES = COV_TYPES + ("clustered-cr1", "robust-hc1")   # every one the library and the CLI's --cov take
COV_TITLES = {"unadjusted": "homoskedastic (unadjusted)", "robust": "heteroskedasticity-robust (HC0)",
              "clustered": "clustered", "clustered-cr1": "clustered, CR1 (Stata's ivregress vce(cluster) small)",
              "robust-hc1": "heteroskedasticity-robust, HC1 (Stata's vce(robust) small)"}
FIXEF_K = ("full", "nested")          # absorbed levels in the small-sample factor: all, or not those nested in clusters
CLUSTER_DF = ("conventional", "min")  # two-way G/(G-1): each term its own G, or the smaller G for every term
# The defaults of the settings cov_type, small, fixef_k and cluster_df: dmlcore.estimators.settings declares them with
# these values, and the statistics below it (this layer) read them here, so each is typed once
COV_DEFAULT, SMALL_DEFAULT, FIXEF_K_DEFAULT, CLUSTER_DF_DEFAULT = COV_TYPES[0], False, FIXEF_K[0], CLUSTER_DF[0]
FEW_CLUSTERS = 30     # below this many clusters, cluster-robust errors are unreliable (Cameron & Miller 2015)


def few_clusters_note(clusters: int | None) -> str | None:
    """The caveat for fewer than FEW_CLUSTERS clusters, in one line; None with enough (or no clusters)."""
    if clusters is None or clusters >= FEW_CLUSTERS:
        return None
    return (f"Only {clusters} clusters: cluster-robust standard errors and tests are unreliable with fewer than "
            f"about {FEW_CLUSTERS} (Cameron & Miller 2015).")


def check_covariance(cov_type: str, cluster: str | None, table: pd.DataFrame | None = None) -> None:
    """Raise unless ``cov_type`` (and ``cluster``, a column of ``table``) is a valid covariance choice."""
    if cov_type not in COV_CHOICES:
        raise DMLCoreError(f"Unknown covariance {cov_type!r}; choose one of {', '.join(COV_CHOICES)}.")
    if not is_clustered(cov_type):
        if cluster:
            raise DMLCoreError(f"A cluster column ({cluster!r}) is used only with the clustered covariance; "
                               f"choose cov 'clustered' or leave the cluster column out.")
        return
    if not cluster:
        raise DMLCoreError("The clustered covariance needs a cluster column (--cluster COLUMN); name the "
                           "column whose values group the rows (a village, a firm, a year).")
    if table is not None:
        cluster_codes(table, cluster)


def lm_cov(cov_type: str) -> str:
    """linearmodels' ``cov_type`` of a covariance choice ("robust-hc1" is its "robust", CR1 its "clustered")."""
    return "clustered" if is_clustered(cov_type) else "robust" if cov_type == "robust-hc1" else cov_type


def has_small_factor(cov_type: str, small: bool = SMALL_DEFAULT) -> bool:
    """Whether the covariance carries the small-sample factor n/(n-k) (HC1, CR1 with G/(G-1) too): the ``-hc1`` /
    ``-cr1`` choices, and every choice under Stata's ``small``."""
    return bool(small) or cov_type in ("clustered-cr1", "robust-hc1")


def is_clustered(cov_type: str) -> bool:
    """Whether ``cov_type`` clusters (CR0 or CR1): it then needs a cluster column."""
    return cov_type in ("clustered", "clustered-cr1")


def cluster_columns(cluster: str | None) -> list[str]:
    """The one or two columns named by ``cluster`` ("a" or "a,b")."""
    names = [c.strip() for c in str(cluster or "").split(",") if c.strip()]
    if len(names) > 2:
        raise DMLCoreError(f"Cluster by one column or two (two-way clustering); got {len(names)}: {cluster!r}.")
    if len(names) == 2 and names[0] == names[1]:
        raise DMLCoreError(f"The two cluster columns are the same ({names[0]!r}); name two different columns.")
    return names


def cluster_codes(table: pd.DataFrame, cluster: str) -> np.ndarray:
    """The rows' cluster numbers 0..g-1 from the column ``cluster`` (n,), or from two columns
    ``"a,b"`` (n, 2) for two-way clustering; raise for a column that cannot cluster (absent,
    missing values, one level, a level per row)."""
    names = cluster_columns(cluster)
    if len(names) == 2:
        return np.column_stack([cluster_codes(table, name) for name in names])
    cluster = names[0] if names else str(cluster)
    return group_codes(table, cluster, "Cluster column",
                       single="so clustering has nothing to group by; choose a column with several groups, or the "
                              "robust covariance.",
                       per_row=f"({len(table):,} clusters of one row): that is the robust covariance. Choose "
                               f"'robust', or a column that groups rows.")


def group_codes(table: pd.DataFrame, column: str, what: str, *, single: str, per_row: str) -> np.ndarray:
    """The level codes 0..L-1 of ``column``, a column that groups rows (clusters, absorbed fixed effects);
    raise, naming it as ``what``, when it is absent, misses values, has one level (``single`` says what to
    do) or a level per row (``per_row``)."""
    if column not in table.columns:
        raise DMLCoreError(f"{what} '{column}' is not in the table; choose one of its columns.")
    values = table[column]
    if values.isna().any():
        raise DMLCoreError(f"{what} '{column}' has {int(values.isna().sum())} missing value(s); fill them "
                           f"in or choose another column.")
    codes, levels = pd.factorize(values, sort=True)
    if len(levels) < 2:
        raise DMLCoreError(f"{what} '{column}' has a single level, {single}")
    if len(levels) == len(table):
        raise DMLCoreError(f"{what} '{column}' has a different value in every row {per_row}")
    return codes


def covariance_words(estimator) -> str:
    """The 2SLS standard errors' covariance in words, naming linearmodels' equivalent."""
    cov, cluster = getattr(estimator, "cov_type_", COV_DEFAULT), getattr(estimator, "cluster_", None)
    by = " and ".join(f"'{c}'" for c in cluster_columns(cluster))
    small = bool(getattr(estimator, "small_", SMALL_DEFAULT))
    words = {"unadjusted": "homoskedastic", "robust": "heteroskedasticity-robust", "robust-hc1": "heteroskedasticity-robust, HC1",
             "clustered": f"clustered by {by}", "clustered-cr1": f"clustered by {by}, CR1"}[cov]
    if small and cov in ("clustered", "robust"):
        words += ", CR1" if cov == "clustered" else ", HC1"
    kind = f"'{lm_cov(cov)}'" + (", debiased" if has_small_factor(cov, small) else "")
    df = getattr(estimator, "df_", None)
    critical = f", small: t with {df} df" if small and df else ""
    return f"{words}{critical}, as linearmodels IV2SLS {kind}"


def n_clusters(clusters: np.ndarray | None) -> int | None:
    """The number of clusters (of the smaller dimension with two-way clustering), or None."""
    if clusters is None:
        return None
    return int(clusters.max() + 1) if clusters.ndim == 1 else int(clusters.max(axis=0).min() + 1)

"""The covariance choice of linear-IV inference: homoskedastic, heteroskedasticity-robust, or clustered
by a column (what ``--cov`` and ``--cluster`` name), and the checks of a cluster column."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.errors import DMLCoreError

COV_TYPES = ("unadjusted", "robust", "clustered")
COV_TITLES = {"unadjusted": "homoskedastic (unadjusted)", "robust": "heteroskedasticity-robust (HC0)",
              "clustered": "clustered"}
FEW_CLUSTERS = 30     # below this many clusters, cluster-robust errors are unreliable (Cameron & Miller 2015)


def check_covariance(cov_type: str, cluster: str | None, table: pd.DataFrame | None = None) -> None:
    """Raise unless ``cov_type`` (and ``cluster``, a column of ``table``) is a valid covariance choice."""
    if cov_type not in COV_TYPES:
        raise DMLCoreError(f"Unknown covariance {cov_type!r}; choose one of {', '.join(COV_TYPES)}.")
    if cov_type != "clustered":
        if cluster:
            raise DMLCoreError(f"A cluster column ({cluster!r}) is used only with the clustered covariance; "
                               f"choose cov 'clustered' or leave the cluster column out.")
        return
    if not cluster:
        raise DMLCoreError("The clustered covariance needs a cluster column (--cluster COLUMN); name the "
                           "column whose values group the rows (a village, a firm, a year).")
    if table is not None:
        cluster_codes(table, cluster)


def cluster_codes(table: pd.DataFrame, cluster: str) -> np.ndarray:
    """The rows' cluster numbers 0..g-1 from the column ``cluster``; raise for a column that cannot
    cluster (absent, missing values, one level, a level per row)."""
    if cluster not in table.columns:
        raise DMLCoreError(f"Cluster column '{cluster}' is not in the table; choose one of its columns.")
    column = table[cluster]
    if column.isna().any():
        raise DMLCoreError(f"Cluster column '{cluster}' has {int(column.isna().sum())} missing value(s); fill them "
                           f"in or choose another column.")
    codes, levels = pd.factorize(column, sort=True)
    if len(levels) < 2:
        raise DMLCoreError(f"Cluster column '{cluster}' has a single level, so clustering has nothing to group by; "
                           f"choose a column with several groups, or the robust covariance.")
    if len(levels) == len(table):
        raise DMLCoreError(f"Cluster column '{cluster}' has a different value in every row ({len(table):,} "
                           f"clusters of one row): that is the robust covariance. Choose 'robust', or a column "
                           f"that groups rows.")
    return codes


def covariance_words(estimator) -> str:
    """The 2SLS standard errors' covariance in words, naming linearmodels' equivalent."""
    cov, cluster = getattr(estimator, "cov_type_", "unadjusted"), getattr(estimator, "cluster_", None)
    words = {"unadjusted": "homoskedastic", "robust": "heteroskedasticity-robust",
             "clustered": f"clustered by '{cluster}'"}[cov]
    return f"{words}, as linearmodels IV2SLS '{cov}'"

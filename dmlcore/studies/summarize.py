"""Summaries and paired comparisons of a study's fits (the rows of fits.csv).

A *cell* is one data design: the data set and its options (n, rho, ...). An *arm* is a method
with the fit settings that vary in the study ("dml-cmr", or "dml-cmr · learner=gb" when
learners vary). Within a cell every arm is fitted on the same data at the same seed, so two
arms are compared seed by seed:

* ``summary_table``: per cell and arm, over the finished fits, ``reps``, ``failed``, and the
  MSE's ``median``, ``q1``, ``q3``, ``mean``, ``sd`` (sample sd; blank for one fit), with
  ``mse_fresh_median`` and ``seconds_mean``;
* ``paired_table``: per cell and pair of arms (a before b in the study's order), over the seeds
  both finished: ``pairs``, ``median_diff`` (median of MSE(a) − MSE(b); negative: a is better),
  ``wins_a`` / ``wins_b`` (seeds where a's / b's MSE is lower), ``ties``, and ``wilcoxon_p``,
  the two-sided Wilcoxon signed-rank p-value of the differences (scipy; zero differences
  dropped; blank when every difference is zero). No correction for multiple comparisons.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from dmlcore.studies.spec import FIT_SETTINGS

OUTCOME_COLUMNS = ("arm", "mse", "mse_fresh", "seconds", "worker_seconds", "rows", "status", "error", "reused",
                   "key")
NOT_DATA = {"dataset", "method", "seed", *FIT_SETTINGS, *OUTCOME_COLUMNS}


def data_columns(fits: pd.DataFrame) -> list[str]:
    """The data options among the columns (n, rho, ...), in their order."""
    return [c for c in fits.columns if c not in NOT_DATA]


def cell_columns(fits: pd.DataFrame) -> list[str]:
    return ["dataset", *data_columns(fits)]


def varying_settings(fits: pd.DataFrame) -> list[str]:
    """Fit settings with more than one value among the fits."""
    return [s for s in FIT_SETTINGS if s in fits and fits[s].dropna().astype(str).nunique() > 1]


def add_arms(fits: pd.DataFrame) -> pd.DataFrame:
    """``fits`` with an ``arm`` column (method and the settings that vary) before the outcomes."""
    fits = fits.drop(columns="arm", errors="ignore")
    if fits.empty:
        return fits.assign(arm=pd.Series(dtype=object))
    varying = varying_settings(fits)

    def arm(row) -> str:
        parts = [f"{s}={format_value(row[s])}" for s in varying if not _missing(row[s])]
        return row["method"] + (" · " + ", ".join(parts) if parts else "")

    arms = fits.apply(arm, axis=1)
    at = list(fits.columns).index("seed") + 1 if "seed" in fits else len(fits.columns)
    fits.insert(at, "arm", arms)
    return fits


def format_value(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _groups(frame: pd.DataFrame, by: list[str]):
    return frame.groupby(by, dropna=False, sort=False)


def summary_table(fits: pd.DataFrame) -> pd.DataFrame:
    """Per cell and arm: reps, failed, median, q1, q3, mean, sd of the MSE (finished fits)."""
    columns = [*cell_columns(fits), "arm", "method", "reps", "failed", "median", "q1", "q3", "mean", "sd",
               "mse_fresh_median", "seconds_mean"]
    if fits.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, group in _groups(fits, [*cell_columns(fits), "arm"]):
        done = group[group["status"] == "done"]
        mse = done["mse"].to_numpy(dtype=float)
        fresh = done["mse_fresh"].dropna().to_numpy(dtype=float)
        q1, median, q3 = np.quantile(mse, [0.25, 0.5, 0.75]) if len(mse) else (np.nan,) * 3
        rows.append({**dict(zip([*cell_columns(fits), "arm"], key)), "method": group["method"].iloc[0],
                     "reps": len(mse), "failed": int((group["status"] == "failed").sum()),
                     "median": median, "q1": q1, "q3": q3, "mean": mse.mean() if len(mse) else np.nan,
                     "sd": mse.std(ddof=1) if len(mse) > 1 else np.nan,
                     "mse_fresh_median": np.median(fresh) if len(fresh) else np.nan,
                     "seconds_mean": done["seconds"].astype(float).mean() if len(done) else np.nan})
    return pd.DataFrame(rows, columns=columns)


def paired_table(fits: pd.DataFrame) -> pd.DataFrame:
    """Per cell and pair of arms: pairs, median difference, wins of each, ties, Wilcoxon p."""
    cells = cell_columns(fits)
    columns = [*cells, "arm_a", "arm_b", "pairs", "median_diff", "wins_a", "wins_b", "ties", "wilcoxon_p"]
    done = fits[fits["status"] == "done"] if not fits.empty else fits
    if done.empty:
        return pd.DataFrame(columns=columns)
    order = list(dict.fromkeys(fits["arm"]))
    rows = []
    for key, cell in _groups(done, cells):
        wide = cell.pivot(index="seed", columns="arm", values="mse").astype(float)
        arms = [a for a in order if a in wide]
        for a, b in itertools.combinations(arms, 2):
            pair = wide[[a, b]].dropna()
            diff = (pair[a] - pair[b]).to_numpy()
            rows.append({**dict(zip(cells, key if isinstance(key, tuple) else (key,))), "arm_a": a, "arm_b": b,
                         "pairs": len(diff), "median_diff": np.median(diff) if len(diff) else np.nan,
                         "wins_a": int((diff < 0).sum()), "wins_b": int((diff > 0).sum()),
                         "ties": int((diff == 0).sum()), "wilcoxon_p": signed_rank_p(diff)})
    return pd.DataFrame(rows, columns=columns)


def compact(table: pd.DataFrame, fits: pd.DataFrame, drop=("method",)) -> pd.DataFrame:
    """``table`` for display: without the design columns that never vary (dataset and n stay)."""
    cells = cell_columns(fits)
    shown = [c for c in table.columns if c not in drop and (c not in cells or c in ("dataset", "n")
                                                             or table[c].astype(str).nunique() > 1)]
    return table[shown]


def signed_rank_p(diff: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences; NaN when none is non-zero."""
    if not np.any(diff != 0):
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(diff).pvalue)

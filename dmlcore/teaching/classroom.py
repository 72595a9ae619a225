"""A class pools its runs: every student runs the demo with a data seed of their own, and the
teacher's view shows the class's results side by side: one MSE histogram per method, and every
run's estimated effect around the true effect.

Reads the run store (:meth:`dmlcore.store.RunStore.list_records`); returns no owner, only what
each run estimated and how well, so that the pooled view gives away nobody's session.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.estimators import METHOD_TITLES

COLUMNS = ("method", "title", "learner", "data seed", "n", "mse", "effect", "truth", "created")


def pool(store, *, dataset: str, n: int | None = None, since: float | None = None) -> tuple[pd.DataFrame, int]:
    """The runs of ``dataset`` (with ``n`` rows, when given) stored since ``since``: one row per
    run with the columns :data:`COLUMNS`, and the number of sessions they came from."""
    rows, owners = [], set()
    for run in store.list_records(dataset=dataset, since=since):
        record = run["record"]
        if n is not None and record.get("n") != n:
            continue
        owners.add(run["owner"])
        data = (record.get("config") or {}).get("data") or {}
        rows.append({"method": run["method"], "title": METHOD_TITLES.get(run["method"], run["method"]),
                     "learner": record.get("learner"), "data seed": data.get("seed"), "n": record.get("n"),
                     "mse": run["mse"], "effect": (record.get("effect") or {}).get("estimate"),
                     "truth": (record.get("effect") or {}).get("truth"), "created": run["created"]})
    return pd.DataFrame(rows, columns=list(COLUMNS)), len(owners)


def count(n: int, noun: str) -> str:
    """``n`` and the noun, plural when n is not 1 ("1 session", "3 sessions")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per method: runs, distinct data seeds, median MSE with quartiles, and on how many of the
    seeds that every method saw the method had the lowest MSE."""
    if table.empty:
        return pd.DataFrame(columns=["method", "title", "runs", "data seeds", "median MSE", "q25", "q75",
                                     "lowest MSE on"])
    scored = table.dropna(subset=["mse"])
    grouped = scored.groupby(["method", "title"], sort=False)["mse"]
    out = pd.DataFrame({"runs": grouped.size(), "median MSE": grouped.median(), "q25": grouped.quantile(0.25),
                        "q75": grouped.quantile(0.75)}).reset_index()
    out.insert(3, "data seeds", out["method"].map(scored.groupby("method")["data seed"].nunique()))
    wide = scored.pivot_table(index="data seed", columns="method", values="mse", aggfunc="median").dropna()
    wins = wide.idxmin(axis=1).value_counts() if len(wide) else pd.Series(dtype=int)
    out["lowest MSE on"] = out["method"].map(wins).fillna(0).astype(int)
    out.attrs["paired seeds"] = len(wide)
    return out.sort_values("median MSE", kind="stable").reset_index(drop=True)


def effect_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per method, the runs' estimated effects (the headline effect of each run record: the
    average derivative of f in the treatment) against the design's true effect: runs with an
    effect, their median, the mean error (estimate minus each run's own truth), the spread (standard
    deviation) of the estimates over the runs and the root mean squared error. Empty when no run
    has both an effect and a truth."""
    columns = ["method", "title", "runs", "median effect", "mean error", "spread", "RMSE"]
    have = table.dropna(subset=["effect", "truth"]) if len(table) else table
    if have.empty:
        return pd.DataFrame(columns=columns)
    have = have.assign(error=pd.to_numeric(have["effect"]) - pd.to_numeric(have["truth"]))
    grouped = have.groupby(["method", "title"], sort=False)
    out = pd.DataFrame({"runs": grouped.size(), "median effect": grouped["effect"].median(),
                        "mean error": grouped["error"].mean(),
                        "spread": grouped["effect"].std(ddof=1),
                        "RMSE": grouped["error"].apply(lambda e: float(np.sqrt(np.mean(np.square(e)))))}).reset_index()
    out.attrs["truth"] = float(pd.to_numeric(have["truth"]).median())
    out.attrs["truth range"] = (float(pd.to_numeric(have["truth"]).min()), float(pd.to_numeric(have["truth"]).max()))
    return out[columns]


def log_bins(values, count: int = 20) -> np.ndarray:
    """Edges of ``count`` bins evenly spaced in log10 over the positive ``values``, padded by half a
    bin at each end so that every value, the smallest and the largest included, lies strictly inside
    the range (histogram bins are half-open: an edge at the maximum would put it in a bin past the
    last edge, off the axis)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not len(v):
        return np.linspace(-1, 1, count + 1)
    lo, hi = np.log10(v.min()), np.log10(v.max())
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) / (2 * (count - 1)) if count > 1 else 0.5 * (hi - lo)
    return np.linspace(lo - pad, hi + pad, count + 1)

"""What every teaching experiment returns, and the checks of its settings."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dmlcore.errors import DMLCoreError


@dataclass
class Experiment:
    """The outcome of one teaching experiment.

    ``draws`` holds one row per simulation draw (or per data row, for a single data set) in long
    form; ``summary`` the numbers a page states; ``params`` the settings (with anything else the
    page draws); ``truth`` the true value of the estimated quantity, when it is one number;
    ``seconds`` the wall time of the computation.
    """

    name: str
    draws: pd.DataFrame
    summary: pd.DataFrame
    params: dict = field(default_factory=dict)
    truth: float | None = None
    seconds: float = 0.0


def summarize(table: pd.DataFrame, by: list[str], value: str = "estimate") -> pd.DataFrame:
    """Median, quartiles, mean and standard deviation of ``value`` per group, groups in order."""
    grouped = table.groupby(by, sort=False)[value]
    out = pd.DataFrame({"median": grouped.median(), "q25": grouped.quantile(0.25),
                        "q75": grouped.quantile(0.75), "mean": grouped.mean(), "sd": grouped.std(),
                        "draws": grouped.size()})
    return out.reset_index()


def check_count(name: str, value, minimum: int, maximum: int = 1_000_000) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not minimum <= value <= maximum:
        raise DMLCoreError(f"{name} must be a whole number from {minimum:,} to {maximum:,}; got {value!r}.")


def check_range(name: str, value, low: float, high: float) -> None:
    try:
        ok = low <= float(value) <= high
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise DMLCoreError(f"{name} must be a number from {low:g} to {high:g}; got {value!r}.")

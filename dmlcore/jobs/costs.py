"""Estimated seconds of a fit, from the fits of its kind timed before (for the fair queue)."""

from __future__ import annotations

from dmlcore.estimators import METHODS

# Rough seconds per 1,000 rows of one nuisance fit, used until a fit of the kind has been timed.
_FIRST_GUESS = {"gb": 1.0, "rf": 1.0, "nn": 6.0, "linear": 0.05}


def cost_key(method: str, config: dict) -> tuple:
    """What a fit's cost depends on besides its rows: the method and (DML-CMR family) its budget."""
    if method not in METHODS or not METHODS[method].second_stage:
        return (method,)
    return (method, config.get("learner") or "nn", config.get("folds") if method == "dml-cmr" else None,
            config.get("epochs"), config.get("n_draws") or 8, config.get("f_model"),
            config.get("reps_crossfit") or 1)


class CostBook:
    """Estimated seconds of a fit, from fits of the same kind timed before (scaled by rows).

    ``rows``: earlier fits as ``{"method", "n", "seconds", **config}`` (config as in a run record).
    """

    def __init__(self, rows=()):
        self._seen: dict[tuple, tuple[int, float]] = {}
        for row in rows:
            try:
                self.observe(cost_key(row["method"], row), int(row["n"]), float(row["seconds"]))
            except (KeyError, TypeError, ValueError):
                continue

    def observe(self, key: tuple, n: int, seconds: float) -> None:
        if key in self._seen:
            old_n, old = self._seen[key]
            seconds = 0.5 * seconds + 0.5 * old * n / max(old_n, 1)
        self._seen[key] = (n, seconds)

    def estimate(self, key: tuple, n: int) -> float:
        if key in self._seen:
            seen_n, seconds = self._seen[key]
            return max(0.05, seconds * n / max(seen_n, 1))
        method, learner, folds, *_ = key + (None,) * 3
        if method not in METHODS or not METHODS[method].second_stage:
            return 0.5
        fits = folds or 1
        return 1.0 + (fits + 1) * _FIRST_GUESS.get(learner, 6.0) * n / 1000

"""Estimated seconds of a fit, from the fits of its kind timed before (for the fair queue)."""

from __future__ import annotations

from dmlcore.estimators import METHODS
from dmlcore.estimators.settings import SETTINGS
from dmlcore.learners.registry import LEARNER_REGISTRY

# the settings a second-stage fit's cost depends on besides its rows, in the key's order
COST_SETTINGS = ("learner", "folds", "epochs", "n_draws", "f_model", "reps_crossfit", "nuisance_choice")
# A setting's value that costs a known multiple of the same fit with the setting's default, for a fit of its kind
# not timed yet (then the default's timings, else the first guess, times the factor). Measured, not guessed:
# nuisance_choice="target" (DML-CMR's pilot second stages, dmlcore.estimators.nuisance_target) is the median
# target / own ratio of the CPU seconds of paired fits of the same data, one after the other, rounded to one
# decimal (bench.target_cost: demand-iv, N = 2000, K = 5, learner nn, seeds 100-102 at strengths 1 and 0.4; rows
# with their wall seconds and loads in bench/results/target-choice-pilot/target-cost-2000.csv, on a shared 2-core
# machine under load, where the wall seconds' ratio scattered far more; tests/test_costs.py recomputes it from them).
COST_FACTORS = {("nuisance_choice", "target"): 2.0}


def cost_key(method: str, config: dict) -> tuple:
    """What a fit's cost depends on besides its rows: the method and (DML-CMR family) its budget."""
    if method not in METHODS or not METHODS[method].second_stage:
        return (method,)
    reads = METHODS[method].settings
    return (method, *(_value(config, name) if name in reads else None for name in COST_SETTINGS))


def _value(config: dict, name: str):
    """The config's value of the setting ``name``; its declared default when unset (None, or a value of its own)."""
    value = config.get(name)
    return SETTINGS[name].default if value is None and not SETTINGS[name].keeps_none else value


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
        for (name, value), factor in COST_FACTORS.items():   # a costlier choice: its default's estimate, times
            at = 1 + COST_SETTINGS.index(name)
            if len(key) > at and key[at] == value:
                return factor * self.estimate(key[:at] + (SETTINGS[name].default,) + key[at + 1:], n)
        method, learner, folds, *_ = key + (None,) * 3
        if method not in METHODS or not METHODS[method].second_stage:
            return 0.5
        fits = folds or 1
        guess = LEARNER_REGISTRY[learner].seconds_per_1000 if learner in LEARNER_REGISTRY else 6.0
        return 1.0 + (fits + 1) * guess * n / 1000

"""Repeated cross-fitting: one DML-CMR configuration fitted R times on the same data.

Repetition r refits a copy of the estimator with seed ``seed + r``, which redraws everything
the seed controls: the fold split (the resampler's ``"crossfit"`` folds of seed + r,
:mod:`dmlcore.stats.resample`), the learners' own randomness (initial weights, subsamples,
validation splits) and the draws of f's inputs (DoubleML's ``n_rep``, with the learners' seeds
varied too). The point estimate is the pointwise median of the R f-hats.

Two bands:

* ``predict_spread`` -- the (1 - level)/2 and (1 + level)/2 quantiles of the R f-hats at each
  point, for any learner. It measures how much f-hat depends on these arbitrary choices given
  the data (split variability). It is *not* a confidence interval: the data stay fixed, so it
  says nothing about sampling variability, and it does not narrow as R grows.
* ``predict_interval`` -- only when every fit has bands (``f_model="sieve"``): the median
  aggregation of Chernozhukov et al. (2018, Sec. 3.4), centre the median of the R centres and
  se(x)^2 = median_r [se_r(x)^2 + (f_r(x) - f_med(x))^2]: each fit's confidence band widened by
  the split variability.

Measured coverage of both: docs/coverage.md.
"""

from __future__ import annotations

import copy
import time

import numpy as np
from scipy.stats import norm

from dmlcore.errors import DMLCoreError
from dmlcore.estimators._base import CMREstimator
from dmlcore.estimators.dml import _TwoStageCMR


class RepeatedCrossFit(CMREstimator):
    """Fit ``estimator`` (a DMLCMR, CEDMLCMR or NaivePlugIn, unfitted) ``reps`` times.

    Attributes
    ----------
    estimators_ : list
        The R fitted copies, seeds ``estimator.seed + r``.
    seeds_ : list of int
    input_columns_ : list of str
    seconds_ : float
    fold_losses_ : list
        The first fit's.
    second_stage_history_ : list
        The first fit's.
    """

    capabilities = frozenset({"predict_interval", "predict_spread", "linear_functional"})
    fitted_attribute = "estimators_"

    def __init__(self, estimator, reps: int = 5):
        self.estimator = estimator
        self.reps = reps

    def _fit(self, data, monitor) -> None:
        """Fit the R copies in turn; the monitor's callback gets each fit's events with progress over all R."""
        callback, should_stop = monitor.callback, monitor.should_stop
        if not isinstance(self.estimator, _TwoStageCMR):
            raise DMLCoreError(f"Repeated cross-fitting repeats a DML-CMR, CE-DML-CMR or naive estimator; "
                               f"got {type(self.estimator).__name__}.")
        if isinstance(self.reps, bool) or not isinstance(self.reps, (int, np.integer)) or self.reps < 1:
            raise DMLCoreError(f"reps (repeated cross-fits) must be an integer of at least 1; got {self.reps!r}.")
        start = time.perf_counter()
        self.seeds_ = [int(self.estimator.seed) + r for r in range(self.reps)]
        self.estimators_ = []
        for r, seed in enumerate(self.seeds_):
            est = copy.deepcopy(self.estimator)
            est.seed = seed
            report = None if callback is None else (
                lambda event, r=r: callback({**event, "progress": (r + event["progress"]) / self.reps}))
            self.estimators_.append(est.fit(data, callback=report, should_stop=should_stop))
        first = self.estimators_[0]
        self.input_columns_ = first.input_columns_
        self.fold_losses_ = first.fold_losses_
        self.second_stage_history_ = first.second_stage_history_
        self.seconds_ = time.perf_counter() - start

    def record_fields(self) -> dict:
        return {**self.estimators_[0].record_fields(), "fold_losses": self.fold_losses_,
                "second_stage_history": self.second_stage_history_}

    def to(self, device) -> "RepeatedCrossFit":
        """Move every fit's networks to ``device`` (see ``DMLCMR.to``); returns self."""
        self._check_fitted()
        for est in self.estimators_:
            est.to(device)
        return self

    def predict_all(self, X, groups=None) -> np.ndarray:
        """f-hat of every fit, shape (R, rows of X); with ``groups``, each group's mean of f-hat
        (groups in the order of ``np.unique(groups)``)."""
        self._check_fitted()
        out = np.stack([est.predict(X) for est in self.estimators_])
        if groups is None:
            return out
        _, code = np.unique(np.asarray(groups), return_inverse=True)
        counts = np.bincount(code)
        return np.stack([np.bincount(code, weights=row) / counts for row in out])

    def predict(self, X) -> np.ndarray:
        """The pointwise median of the R f-hats."""
        return np.median(self.predict_all(X), axis=0)

    def predict_spread(self, X, level: float = 0.95, *, groups=None):
        """(lower, upper): quantiles of the R f-hats -- split variability, not a confidence band."""
        _check_level(level)
        lower, upper = np.quantile(self.predict_all(X, groups), [0.5 - level / 2, 0.5 + level / 2], axis=0)
        return lower, upper

    def predict_interval(self, X, level: float = 0.95, *, variance: str | None = None, groups=None):
        """(lower, upper): the fits' confidence bands aggregated by the median (module notes)."""
        if not self.has_bands:
            raise DMLCoreError(f"f_model {self.estimators_[0].f_model_name_!r} gives no confidence bands; "
                               f"predict_spread gives the split-to-split spread, or refit with f_model='sieve'.")
        _check_level(level)
        q = norm.ppf(0.5 + level / 2)
        bands = [est.predict_interval(X, level, variance=variance, groups=groups) for est in self.estimators_]
        centres = np.stack([(lo + hi) / 2 for lo, hi in bands])
        ses = np.stack([(hi - lo) / (2 * q) for lo, hi in bands])
        centre = np.median(centres, axis=0)
        se = np.sqrt(np.median(ses ** 2 + (centres - centre) ** 2, axis=0))
        return centre - q * se, centre + q * se

    @property
    def has_bands(self) -> bool:
        self._check_fitted()
        return all(est.f_.has_bands for est in self.estimators_)

    def supports(self, capability: str) -> bool:
        """The spread always; bands and the closed-form effect interval when every fit has a sieve f."""
        if not super().supports(capability) or not hasattr(self, "estimators_"):
            return False
        return capability == "predict_spread" or self.has_bands

    def effect_functional(self, plan) -> tuple[float, float]:
        """The fits' (estimate, standard error) of the effect ``plan``, median-aggregated (module notes)."""
        pairs = np.array([est.effect_functional(plan) for est in self.estimators_])
        estimate = float(np.median(pairs[:, 0]))
        se = float(np.sqrt(np.median(pairs[:, 1] ** 2 + (pairs[:, 0] - estimate) ** 2)))
        return estimate, se

    def interval_how(self, z: float) -> str:
        return (f"delta method on the spline second stage, median-aggregated over {self.reps} cross-fits: "
                f"estimate -/+ {z:.2f} x the aggregated standard error (knots, penalty and nuisances held fixed)")


def _check_level(level):
    if not 0 < level < 1:
        raise DMLCoreError(f"level must be strictly between 0 and 1; got {level!r}.")

"""The bands of a fitted f: a confidence band when the estimator has one, else the spread of repeated cross-fits;
evaluated where a truth scores them (a run record's ``bands``) or along a curve (:meth:`dmlcore.runs.Run.curve`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import GroundTruth
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import supports

BAND_LEVEL = 0.95
STACK_ROWS = 2 ** 20  # rows stacked at once for the band of an averaged curve


def _first_fit(estimator):
    """The estimator itself, or the first of its repeated cross-fits."""
    return estimator.estimators_[0] if supports(estimator, "predict_spread") else estimator


def band_summary(estimator, data: CausalData, truth: GroundTruth | None = None, level: float = BAND_LEVEL) -> dict:
    """The estimator's ``level`` bands, evaluated where the truth is scored when it is known.

    Returns {"confidence": ..., "split_spread": ...} with the entries that exist: a confidence
    band when the estimator has one (``f_model="sieve"``; median-aggregated over repeated
    cross-fits), the spread of repeated cross-fits when there are several. Each entry holds
    ``what`` (the band in words), ``points`` (where it was evaluated), ``n_points``,
    ``mean_width`` and ``coverage``: the fraction of the points where the band contains the
    truth (None without a known truth).
    """
    kinds = _band_kinds(estimator, level)
    if not kinds:
        return {}
    evaluation = truth.evaluation if truth is not None else None
    out = {}
    for key, _, what, interval in kinds:
        if evaluation is None:
            band, true, where = interval(data.table[data.input_columns], None), None, "the data's rows (no known truth)"
        elif evaluation.averaged:
            band, true, where = _averaged(interval, data, evaluation.treatment_values), evaluation.values, evaluation.where
        else:
            band, true, where = interval(evaluation.points, None), evaluation.values, evaluation.where
        out[key] = _band_record(*band, true, what, where, level)
    return out


def _band_kinds(estimator, level: float) -> list[tuple]:
    """The estimator's bands as (key, short label, description, interval(X, groups)), the
    confidence band first; empty when it has none."""
    reps = supports(estimator, "predict_spread")
    kinds = []
    if supports(estimator, "predict_interval"):
        first = _first_fit(estimator)
        what = f"pointwise normal band, sandwich variance '{first.f_.variance_}'"
        how = "sandwich"
        if reps:
            what += f", median-aggregated over {estimator.reps} cross-fits"
            how += f", median over {estimator.reps} cross-fits"
        kinds.append(("confidence", f"{level * 100:g} % confidence band ({how})", what,
                      lambda X, groups: estimator.predict_interval(X, level, groups=groups)))
    if reps:
        kinds.append(("split_spread", f"{level * 100:g} % range of {estimator.reps} cross-fits, not a confidence band",
                      f"{level:.0%} range of {estimator.reps} cross-fits' f-hat: split-to-split variability "
                      f"given the data, not a confidence band",
                      lambda X, groups: estimator.predict_spread(X, level, groups=groups)))
    return kinds


def _averaged(interval, data: CausalData, values) -> tuple[np.ndarray, np.ndarray]:
    """``interval`` of the mean of f over the data's rows with the treatment set to each of
    ``values``, stacking at most about STACK_ROWS rows at once."""
    rows = data.table[data.input_columns]
    step = max(1, STACK_ROWS // max(1, len(rows)))
    parts = []
    for i in range(0, len(values), step):
        chunk = values[i:i + step]
        X = pd.concat([rows.assign(**{data.treatment[0]: a}) for a in chunk], ignore_index=True)
        parts.append(interval(X, np.repeat(np.arange(len(chunk)), len(rows))))
    return tuple(np.concatenate(side) for side in zip(*parts))


def curve_band(estimator, data: CausalData, frame: pd.DataFrame, *, treatment_values=None,
               level: float = BAND_LEVEL) -> pd.DataFrame:
    """``frame`` (a curve) with the estimator's ``level`` band in ``lower``, ``upper`` and ``band``.

    ``band`` says which band it is: a confidence band when the estimator has one
    (``f_model="sieve"``; median-aggregated over repeated cross-fits), otherwise, for repeated
    cross-fits, the range of their f-hats, which is not a confidence band. Pointwise curves are
    evaluated at the frame's own input columns; an averaged curve, the mean of f over the data's
    rows with the treatment set to each of ``treatment_values`` (one per frame row), gets the
    band of that mean. ``frame`` comes back unchanged when the estimator has no band or the
    frame lacks the input columns (image inputs, for instance).
    """
    kinds = _band_kinds(estimator, level)
    if not kinds:
        return frame
    _, label, _, interval = kinds[0]
    if treatment_values is not None:
        values = np.asarray(treatment_values, dtype=float)
        if len(data.treatment) != 1 or len(values) != len(frame):
            raise DMLCoreError(f"An averaged curve's band needs one treatment column and one treatment value "
                               f"per curve row ({len(frame)}); got {len(data.treatment)} column(s) and "
                               f"{len(values)} value(s).")
        lower, upper = _averaged(interval, data, values)
    elif set(data.input_columns) <= set(frame.columns):
        lower, upper = interval(frame[data.input_columns], None)
    else:
        return frame
    return frame.assign(lower=lower, upper=upper, band=label)


def _band_record(lower, upper, true, what, where, level) -> dict:
    return {"what": what, "level": level, "points": where, "n_points": int(len(lower)),
            "mean_width": float(np.mean(upper - lower)),
            "coverage": None if true is None else float(np.mean((lower <= true) & (true <= upper)))}

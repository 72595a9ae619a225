"""A real-data exercise: Card (1995), the return to schooling instrumented by growing up near a
four-year college (``load_dataset("card")``: 3,010 men of the NLS Young Men cohort, log wage
in 1976, years of schooling, the instrument ``nearc4``, experience, its square, race and
region covariates).

:func:`linear_steps` computes, in closed form with the covariates partialled out (all
homoskedastic, as the tool's 2SLS): the first stage (schooling on the instrument), the reduced
form (log wage on the instrument), their ratio, OLS, the tool's 2SLS with its interval, the
first-stage F, the effective F under robust errors (Montiel Olea & Pflueger 2013; with one instrument the
robust F), and the Anderson-Rubin 95 % set (:func:`dmlcore.inference.linear_iv.anderson_rubin_set`, the
one the Results page shows).
:func:`dml_cmr` fits DML-CMR with a spline second stage, whose effect (the average derivative
of f in schooling) has a delta-method interval. ``python -m bench.card_exercise`` writes both for
docs/teaching.md's answer key.
"""

from __future__ import annotations

import numpy as np

from dmlcore.data.registry import load_dataset
from dmlcore.inference.effect_notes import identification_note
from dmlcore.inference.first_stage import LEE_T_TEST_F, STOCK_YOGO_SIZE_10, WEAK_F, first_stage, strength_label
from dmlcore.inference.linear_iv import anderson_rubin_set, clr_set, first_stage_inference
from dmlcore.runs import fit_run
from dmlcore.teaching.tf import tf_interval

DML_SETTINGS = dict(learner="gb", f_model="sieve", folds=5, seed=0, outcome_learner="gb", sampler="gb")  # named, not auto
LEVEL = 0.95


def _partial_out(table, columns, covariates) -> dict[str, np.ndarray]:
    """Each column's residual from its least-squares regression on a constant and ``covariates``."""
    x = np.column_stack([np.ones(len(table)), table[covariates].to_numpy(dtype=float)])
    out = {}
    for name in columns:
        v = table[name].to_numpy(dtype=float)
        out[name] = v - x @ np.linalg.lstsq(x, v, rcond=None)[0]
    return out


def _slope(x: np.ndarray, y: np.ndarray, dof: int) -> tuple[float, float]:
    """Slope of y on x (both partialled out) and its homoskedastic standard error."""
    b = float(x @ y / (x @ x))
    resid = y - b * x
    return b, float(np.sqrt(resid @ resid / dof / (x @ x)))


def linear_steps(level: float = LEVEL) -> dict:
    """The linear IV analysis of Card's data, step by step (module docstring)."""
    data = load_dataset("card").data
    table = data.table
    y, a, z = data.outcome, data.treatment[0], data.instrument[0]
    cov = list(data.covariates)
    r = _partial_out(table, [y, a, z], cov)
    n, k = len(table), len(cov) + 1                 # covariates plus the constant
    dof = n - k - 1
    fs, fs_se = _slope(r[z], r[a], dof)
    rf, rf_se = _slope(r[z], r[y], dof)
    ols, ols_se = _slope(r[a], r[y], dof)
    run = fit_run(data, "2sls", dataset="card")
    effect = run.record["effect"]
    strength = first_stage(data, nonparametric=False)
    ar = anderson_rubin_set(data, level=level)
    # the effective F of Montiel Olea & Pflueger (2013) under heteroskedasticity-robust errors: with one
    # instrument it is the robust first-stage F, the statistic Lee et al.'s (2022) 104.7 and the tF
    # adjustment are stated in (Andrews, Stock & Sun 2019 recommend it for the just-identified case)
    effective = first_stage_inference(data, cov_type="robust")["effective_f"]
    # beside 2SLS: Fuller's modified LIML (LIML itself equals 2SLS with one instrument), the CLR set
    # (equal to the AR set with one instrument) and the tF interval of Lee et al. (2022), homoskedastic
    # as the tool's 2SLS, so with the usual F
    fuller = fit_run(data, "fuller", dataset="card").record
    clr = clr_set(data, level=level)
    f_stat = strength["treatments"][a]["f_stat"]
    se = float(run.record["std_errors"][a])
    return {"n": n, "outcome": y, "treatment": a, "instrument": z, "covariates": cov,
            "first_stage": {"coef": fs, "se": fs_se},
            "reduced_form": {"coef": rf, "se": rf_se}, "ratio": rf / fs,
            "ols": {"coef": ols, "se": ols_se, "lower": ols - 1.96 * ols_se, "upper": ols + 1.96 * ols_se},
            "tsls": {"coef": effect["estimate"], "lower": effect["ci_lower"], "upper": effect["ci_upper"],
                     "se": float(run.record["std_errors"][a]), "interval": effect["interval"]},
            "f_stat": strength["treatments"][a]["f_stat"], "strength": strength["strength"],
            "effective_f": float(effective),
            "fuller": {"coef": float(fuller["effect"]["estimate"]), "lower": fuller["effect"]["ci_lower"],
                       "upper": fuller["effect"]["ci_upper"]},
            "clr": {**_ar_shape(clr["pieces"]), "text": clr["text"]},
            "tf": tf_interval(effect["estimate"], se, f_stat),
            "ar": {**_ar_shape(ar["pieces"]), "text": ar["text"], "level": level}}


def strength_sentence(f_stat: float) -> str:
    """What a first-stage F with one instrument buys, against the three bars, in one sentence."""
    sy = STOCK_YOGO_SIZE_10[1]
    side = lambda bar: "above" if f_stat >= bar else "below"  # noqa: E731
    return (f"{side(WEAK_F)} the rule of thumb {WEAK_F:g} (Staiger & Stock 1997), {side(sy)} Stock & Yogo's {sy:g} "
            f"(at most 10 % size for a nominal 5 % test) and {side(LEE_T_TEST_F)} {LEE_T_TEST_F:g}, above which the "
            f"usual 5 % t-test keeps its size (Lee et al. 2022): **{strength_label(f_stat).level}**. Prefer the "
            "Anderson–Rubin set.")


def _ar_shape(pieces: list[list]) -> dict:
    """The Anderson-Rubin set's pieces in the exercise's terms: an "interval" with its ends, or the
    set's kind in words (two half-lines, the whole line, empty) without ends."""
    if len(pieces) == 1 and None not in pieces[0]:
        return {"shape": "interval", "lower": float(pieces[0][0]), "upper": float(pieces[0][1])}
    shape = ("empty" if not pieces else "whole line" if pieces == [[None, None]]
             else "two half-lines" if len(pieces) == 2 else "a union of intervals and half-lines")
    return {"shape": shape, "lower": None, "upper": None}


def dml_cmr(**overrides) -> dict:
    """DML-CMR on Card's data (:data:`DML_SETTINGS`, spline second stage): its effect, the average
    derivative of f in schooling, as the run record gives it (the debiased effect, or why not, with
    ``weak`` set when it is weakly identified, and ``identification``, every check of the flag with its bar, as
    the CLI's summary line gives it), the plug-in beside it, and the fit's seconds."""
    data = load_dataset("card").data
    run = fit_run(data, "dml-cmr", dataset="card", **{**DML_SETTINGS, **overrides})
    effect = run.record["effect"]
    plug = effect.get("plug_in") or {}
    return {"settings": {**DML_SETTINGS, **overrides}, "estimand": effect["estimand"], "coef": effect["estimate"],
            "lower": effect["ci_lower"], "upper": effect["ci_upper"], "interval": effect["interval"],
            "debiased": effect.get("debiased") is not None, "weak": bool(effect.get("weakly_identified")),
            "why_not": effect.get("debiased_error"), "identification": identification_note(effect),
            "plug_in": {k: plug.get(k) for k in ("estimate", "ci_lower", "ci_upper", "interval")},
            "seconds": run.record["seconds"]}

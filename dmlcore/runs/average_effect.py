"""Effect summaries: one number with an interval for every fitted method.

The effect of the treatment A (the data's single treatment column) is a weighted sum of f
over points built from the data's rows (:func:`contrast`):

* A with two values a0 < a1: the average effect mean_i [f(a1, o_i) - f(a0, o_i)], o_i the
  row's other inputs of f. In proximal learning this is E[Y | do(a1)] - E[Y | do(a0)],
  because E[Y | do(a)] = mean_i h(a, w_i, x_i).
* A with at least MIN_DERIVATIVE_VALUES values: the average derivative mean_i df/da at
  the observed rows (IV, CMR), or in proximal learning the average slope of the curve
  a -> E[Y | do(a)] over PCL_GRID quantiles of A (the curve averaged over at most PCL_ROWS
  rows). Derivatives are central differences with half-step STEP standard deviations of A,
  kept inside A's observed range.
* Three or four values, a categorical A with more than two levels, several treatment columns
  (images): no effect, and :func:`effect_record` says why.

Intervals (:func:`effect_record`, level ``LEVEL``):

* 2SLS: the treatment's coefficient -/+ z * its standard error -- the same numbers as
  ``linearmodels`` ``IV2SLS(...).fit(cov_type=...).conf_int()`` with the estimator's covariance
  (unadjusted, robust or clustered). In IV with one treatment, ``intervals`` also holds the
  Anderson-Rubin set of that coefficient (:func:`anderson_rubin_entry`), robust to weak
  instruments; it is never the headline interval.
* Spline f (Sieve 2SLS, DML-CMR with ``f_model="sieve"``): the effect is linear in the spline
  coefficients, so its standard error is sqrt(d' V d) with d the weighted sum of basis vectors
  and V the sandwich variance behind the bands (delta method; knots, penalty and nuisances
  held fixed, smoothing bias ignored).
* Any method: :func:`bootstrap_effect` refits the method on B resamples of the rows (drawn with
  replacement: the resampler's ``"bootstrap"`` draws, :mod:`dmlcore.stats.resample`) and reports
  the estimate -/+ z * the refits' standard deviation. Refits run through the study runner's
  executor (``dmlcore.executors``), in parallel or on Ray.
  With cross-fitting, a resample's repeated rows can fall in a fold and in its complement, so
  the nuisances see some held-out rows: the coverage measured in docs/coverage.md includes it.

Clusters (``cov_type="clustered"``, ``cluster``): 2SLS's interval and its Anderson-Rubin set use
the clustered covariance, the bootstrap draws whole clusters, the debiased interval sums the score
within clusters (:mod:`dmlcore.stats.clusters`), and the spline second stage's delta-method interval,
whose sandwich takes rows as independent, is refused in one line; ``effect["clusters"]`` says
which interval does what (:func:`cluster_treatment`).

How often each interval covers the truth was measured by simulation: docs/coverage.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm, t as t_dist

from dmlcore.stats import resample
from dmlcore.stats.clusters import describe, groups_of
from dmlcore.stats.covariance import cluster_columns, covariance_words, is_clustered, n_clusters
from dmlcore.data.roles import CausalData
from dmlcore.inference.debiased_effect import LadderBases, add_debiased
from dmlcore.inference.sieve_dimension import add_sieve_effect
from dmlcore.errors import DMLCoreError, FitCancelled
from dmlcore.estimators import for_estimator, make_estimator, supports
from dmlcore.estimators.settings import DEFAULTS, as_settings
from dmlcore.executors import get_executor
from dmlcore.inference.linear_iv import anderson_rubin_set

LEVEL = 0.95
MIN_DERIVATIVE_VALUES = 5   # fewer distinct treatment values (but more than two): no derivative
PCL_GRID = 20               # quantiles of A at which the slope of E[Y | do(a)] is averaged
PCL_ROWS = 10_000           # rows over which E[Y | do(a)] is averaged, at most (a random subset)
STEP = 0.05                 # half-step of the central differences, in standard deviations of A
MIN_BOOTSTRAP, MAX_BOOTSTRAP = 2, 5000
MIN_SUCCESS = 0.8           # share of bootstrap refits that must succeed
STACK_VALUES = 2 ** 23      # values of the points predicted at once
CLOSED_FORM_REFUSED = ("delta method on the spline second stage: not given with clustered errors (its sandwich "
                       "takes rows as independent); the debiased interval is clustered")


@dataclass
class Contrast:
    """The effect as ``sum_k weights[k] * f(points[k])``; ``estimand`` says it in words;
    ``rows[k]`` is the data row that point k comes from."""

    points: pd.DataFrame
    weights: np.ndarray
    estimand: str
    treatment: str
    rows: np.ndarray | None = None


def contrast(data: CausalData) -> Contrast:
    """The points and weights of the data's average effect or derivative (module notes)."""
    if data.problem == "cmr" or len(data.treatment) != 1:
        what = (f"an image ({len(data.treatment):,} pixel columns)" if data.image_columns and len(data.treatment) > 1
                else "not named (a CMR problem)" if data.problem == "cmr" else "several columns")
        raise DMLCoreError(f"An average effect needs one numeric treatment column; the treatment here is {what}.")
    a_name = data.treatment[0]
    a = data.table[a_name].to_numpy(dtype=float)
    values = np.unique(a)
    rows = data.table[data.input_columns].reset_index(drop=True)
    n = len(rows)
    if len(values) == 2:
        a0, a1 = values + 0.0     # (no "-0" in the text)
        points = pd.concat([rows.assign(**{a_name: a1}), rows.assign(**{a_name: a0})], ignore_index=True)
        weights = np.r_[np.full(n, 1.0 / n), np.full(n, -1.0 / n)]
        estimand = (f"average treatment effect E[Y | do({a_name}={a1:g})] - E[Y | do({a_name}={a0:g})]"
                    if data.problem == "pcl" else
                    f"average effect of {a_name} = {a1:g} against {a0:g}: mean over rows of "
                    f"f({a_name}={a1:g}, other inputs) - f({a_name}={a0:g}, other inputs)")
        return Contrast(points, weights, estimand, a_name, np.r_[np.arange(n), np.arange(n)])
    if a_name in data.categorical:
        raise DMLCoreError(f"Treatment '{a_name}' is categorical with {len(values)} levels, so it has no slope. "
                           f"Recode it as two groups (0/1) for an average effect.")
    if len(values) < MIN_DERIVATIVE_VALUES:
        raise DMLCoreError(f"Treatment '{a_name}' takes only {len(values)} distinct values "
                           f"({', '.join(f'{v + 0.0:g}' for v in values)}): too few for a derivative (at least "
                           f"{MIN_DERIVATIVE_VALUES}). Recode it as two groups (0/1) for an average effect.")
    h = STEP * float(np.std(a))
    index = np.arange(n)
    if data.problem == "pcl":
        at = np.quantile(a, (np.arange(PCL_GRID) + 0.5) / PCL_GRID)
        if n > PCL_ROWS:       # the mean over rows of h(a, w, x): a fixed random subset of them
            index = np.sort(np.random.default_rng(0).choice(n, PCL_ROWS, replace=False))
            rows, n = rows.iloc[index], PCL_ROWS
        reps, share = n, 1.0 / (PCL_GRID * n)
    else:
        at, reps, share = a, 1, 1.0 / n
    hi, lo = np.minimum(at + h, values[-1]), np.maximum(at - h, values[0])
    slope_weight = share / (hi - lo)
    if data.problem == "pcl":   # every row at each grid value: the slope of the mean over rows
        base = pd.concat([rows] * PCL_GRID, ignore_index=True)
        index = np.tile(index, PCL_GRID)
        up, down = np.repeat(hi, reps), np.repeat(lo, reps)
        slope_weight = np.repeat(slope_weight, reps)
        estimand = (f"average slope of E[Y | do({a_name})]: mean over {PCL_GRID} quantiles a of {a_name} of "
                    f"d/da E[Y | do({a_name}=a)], per unit of {a_name}" + (
                        f" (E[Y | do(a)] averaged over {n:,} random rows)" if n < len(data.table) else ""))
    else:
        base, up, down = rows, hi, lo
        estimand = (f"average derivative of f in {a_name}: mean over rows of df/d{a_name} at the observed "
                    f"values, per unit of {a_name}")
    points = pd.concat([base.assign(**{a_name: up}), base.assign(**{a_name: down})], ignore_index=True)
    return Contrast(points, np.r_[slope_weight, -slope_weight], estimand, a_name, np.r_[index, index])


def plug_in(estimator, plan: Contrast) -> float:
    """``sum_k weights[k] * f-hat(points[k])``, predicting a block of points at a time."""
    step = max(1, STACK_VALUES // max(1, plan.points.shape[1]))
    total = 0.0
    for i in range(0, len(plan.points), step):
        part = plan.points.iloc[i:i + step]
        total += float(plan.weights[i:i + step] @ np.asarray(estimator.predict(part), dtype=float).ravel())
    return total


def closed_form(estimator, plan: Contrast, level: float = LEVEL) -> dict | None:
    """{estimate, ci_lower, ci_upper, interval} from the estimator's own variance, or None
    when it has none (neural networks, trees, linear second stages without bands): an estimator
    that ``supports("linear_functional")`` gives ``effect_functional(plan)`` and ``interval_how``."""
    if not supports(estimator, "linear_functional"):
        return None
    df = getattr(estimator, "df_", None)       # Stata's small: t with the estimator's degrees of freedom
    z = float(t_dist.ppf(0.5 + level / 2, df) if df else norm.ppf(0.5 + level / 2))
    estimate, se = estimator.effect_functional(plan)
    return {"estimate": estimate, "ci_lower": estimate - z * se, "ci_upper": estimate + z * se,
            "std_error": se, "interval": estimator.interval_how(z)}


def anderson_rubin_entry(estimator, data: CausalData, plan: Contrast, level: float = LEVEL) -> dict | None:
    """The Anderson-Rubin set of 2SLS's treatment coefficient (times the distance between a binary
    treatment's two values) as an entry of ``intervals``, under the estimator's covariance; None
    unless the estimator is 2SLS on IV data.

    ``set`` lists the set's pieces ``[lower, upper]`` with None for an infinite end; ``ci_lower``
    and ``ci_upper`` are its ends when it is one bounded interval, else None (JSON has no
    infinity): read ``set`` and ``kind`` ("bounded", "two rays", "everything", "empty", ...).
    """
    if not supports(estimator, "anderson_rubin") or data.problem != "iv":
        return None
    values = np.unique(plan.points[plan.treatment])
    scale = float(values[-1] - values[0]) if len(values) == 2 and plan.treatment not in data.categorical else 1.0
    head = f"Anderson-Rubin set ({covariance_words(estimator).split(', as linearmodels')[0]}; robust to weak instruments)"
    try:
        ar = anderson_rubin_set(data, estimator.cov_type_, estimator.cluster_, level, scale,
                                small=getattr(estimator, "small_", DEFAULTS.small))
    except DMLCoreError as err:
        return {"interval": f"{head}: not computed: {err}", "ci_lower": None, "ci_upper": None, "set": None,
                "kind": None}
    bounded = ar["kind"] == "bounded"
    return {"interval": f"{head}: {ar['text']}", "ci_lower": ar["pieces"][0][0] if bounded else None,
            "ci_upper": ar["pieces"][0][1] if bounded else None, "set": ar["pieces"], "kind": ar["kind"]}


def effect_record(estimator, data: CausalData, level: float = LEVEL, bootstrap: dict | None = None,
                  crossfit=None, debias: bool = DEFAULTS.debias, cluster: str | None = None,
                  first_stage_f: float | None = None, first_stage_statistic: str | None = None,
                  first_stage_error: str | None = None) -> dict:
    """The run record's ``effect``: {estimand, estimate, ci_lower, ci_upper, level, interval}.

    The interval is the bootstrap's when ``bootstrap`` (from :func:`bootstrap_effect`) is
    given, else the estimator's closed form, else none (``interval`` says how to get one).
    ``intervals`` lists every interval computed. When the data has no effect to summarise
    (see :func:`contrast`), ``estimate`` is None and ``error`` says why. Then the debiased
    effect (:func:`dmlcore.inference.debiased_effect.add_debiased`, f-hat from ``crossfit`` when given) becomes
    the headline and these numbers move to ``plug_in``; with ``debias=False`` it is not computed
    and these numbers stay the headline. Beside it, the sieve effect of data-driven dimension and its flag
    (:func:`dmlcore.inference.sieve_dimension.add_sieve_effect`).

    ``cluster`` (the column of ``cov_type="clustered"``): ``clusters`` says how each interval
    treats them (:func:`cluster_treatment`); the spline second stage's delta-method interval,
    whose sandwich takes rows as independent, is refused in one line. ``first_stage_f`` (the
    run's linear first-stage F) feeds the weak-identification flag.
    """
    try:
        plan = contrast(data)
    except DMLCoreError as err:
        return {"estimand": None, "estimate": None, "ci_lower": None, "ci_upper": None, "level": level,
                "interval": None, "error": str(err)}
    exact = closed_form(estimator, plan, level)
    estimate = exact["estimate"] if exact else plug_in(estimator, plan)
    out = {"estimand": plan.estimand, "treatment": plan.treatment, "estimate": estimate, "ci_lower": None,
           "ci_upper": None, "level": level, "interval": None, "intervals": []}
    if exact and cluster and not is_clustered(getattr(estimator, "cov_type_", None) or ""):   # linear IV's own is
        out["intervals"].append({"interval": CLOSED_FORM_REFUSED, "ci_lower": None, "ci_upper": None,
                                 "refused": True})
    elif exact:
        out["intervals"].append({k: exact[k] for k in ("interval", "ci_lower", "ci_upper")})
    if bootstrap:
        z = float(norm.ppf(0.5 + level / 2))
        out["intervals"].append({"interval": bootstrap["interval"], "ci_lower": estimate - z * bootstrap["sd"],
                                 "ci_upper": estimate + z * bootstrap["sd"]})
        out["bootstrap"] = bootstrap
    if out["intervals"]:
        out.update(out["intervals"][-1])
    else:
        out["interval"] = ("none: this method has no closed-form interval; ask for a bootstrap "
                           "(B refits: --bootstrap B, or 'Bootstrap interval' on Results)")
    weak_robust = anderson_rubin_entry(estimator, data, plan, level)   # listed, never the headline
    if weak_robust is not None:
        out["intervals"].append(weak_robust)
    bases = LadderBases(data, plan)      # the two ladders' bases, each built once (shared rungs, same numbers)
    out = add_debiased(out, estimator, data, plan, level, crossfit, debias, cluster, first_stage_f,
                       first_stage_statistic=first_stage_statistic, first_stage_error=first_stage_error, bases=bases)
    out = add_sieve_effect(out, data, plan, level, cluster, bases)     # beside the debiased effect, its check
    if cluster:
        out["clusters"] = cluster_treatment(out, data, cluster)
    return out


def cluster_treatment(effect: dict, data: CausalData, cluster: str) -> dict:
    """How each interval of ``effect`` treats the clusters of the column ``cluster``: {"column",
    "count", "intervals": [{"interval" (its first words), "treatment": "clustered" | "refused"}],
    "text"} -- the line a page shows beside the effect."""
    groups = groups_of(data.table, cluster)
    entries = []
    for entry in effect.get("intervals", []):
        head = str(entry.get("interval") or "").split(":")[0]
        entries.append({"interval": head, "treatment": "refused" if entry.get("refused") else "clustered"})
    if effect.get("debiased") is None and effect.get("debiased_error"):
        entries.append({"interval": "debiased", "treatment": "not computed"})
    count, columns = n_clusters(groups), cluster_columns(cluster)
    by = (f"'{columns[0]}' and '{columns[1]}' (two-way, {count:,} clusters in the smaller)" if len(columns) == 2
          else f"'{cluster}' ({count:,} clusters)")
    text = (f"clustered by {by}: every interval shown sums the score "
            f"within clusters or resamples whole clusters, and every fold keeps a cluster whole")
    if any(e["treatment"] == "refused" for e in entries):
        text += "; the spline second stage's delta-method interval is refused (rows taken as independent)"
    return {"column": cluster, "count": count, "intervals": entries, "text": text}


# ----------------------------------------------------------------- bootstrap
def check_bootstrap(refits) -> int:
    """``refits`` as an int in [MIN_BOOTSTRAP, MAX_BOOTSTRAP]; a DMLCoreError otherwise."""
    if isinstance(refits, bool) or not isinstance(refits, (int, np.integer)) or not (
            MIN_BOOTSTRAP <= refits <= MAX_BOOTSTRAP):
        raise DMLCoreError(f"The bootstrap needs between {MIN_BOOTSTRAP} and {MAX_BOOTSTRAP:,} refits "
                           f"(200 is common; 50 gives a rough interval); got {refits!r}. Leave it out for none.")
    return int(refits)


def bootstrap_effect(data: CausalData, method: str, settings, refits: int, *, seed: int = DEFAULTS.seed,
                     level: float = LEVEL, executor: str = DEFAULTS.executor, jobs: int = DEFAULTS.jobs, address: str | None = None,
                     callback=None, should_stop=None) -> dict:
    """Refit ``method`` (``make_estimator(method, settings)``: a FitSettings or a dict of settings by name) on ``refits`` resamples of the
    rows and return {"refits", "failed", "sd", "percentile", "interval"}: the standard deviation
    of the refits' effects, their (1 -/+ level)/2 quantiles and the interval in words.

    ``callback`` gets a stage event as each refit ends; ``should_stop()`` cancels between refits.
    At least MIN_SUCCESS of the refits must succeed. With a ``cluster`` in ``settings`` each
    resample draws whole clusters (as many as the data has), not rows.
    """
    refits = check_bootstrap(refits)
    contrast(data)                      # no refit when there is no effect to summarise
    settings = as_settings(settings)
    cluster = settings.cluster
    groups = groups_of(data.table, cluster)
    items = [{"data": data, "method": method, "kwargs": for_estimator(settings, method), "seed": seed, "index": b, "groups": groups}
             for b in range(refits)]
    pool = get_executor(executor, jobs, address)
    estimates, errors = [], []
    try:
        for done, (_, result) in enumerate(pool.map(_refit_effect, items), start=1):
            (errors if isinstance(result, BaseException) else estimates).append(result)
            if callback is not None:
                callback({"type": "stage", "stage": f"bootstrap: {done} of {refits} refits", "fold": None,
                          "progress": done / refits})
            if should_stop is not None and should_stop():
                raise FitCancelled("The bootstrap was cancelled.")
    finally:
        pool.close()
    if len(estimates) < MIN_SUCCESS * refits or len(estimates) < 2:
        first = errors[0] if errors else "no refit finished"
        raise DMLCoreError(f"{len(errors)} of {refits} bootstrap refits failed (first: {first}); "
                           f"the interval would not be trustworthy.")
    values = np.asarray(estimates, dtype=float)
    z = float(norm.ppf(0.5 + level / 2))
    return {"refits": refits, "failed": len(errors), "sd": float(values.std(ddof=1)),
            "percentile": [float(q) for q in np.quantile(values, [0.5 - level / 2, 0.5 + level / 2])],
            "clustered": groups is not None,
            "interval": (f"bootstrap over {'rows' if groups is None else describe(cluster, groups)}, {refits} refits: "
                         f"estimate -/+ {z:.2f} x the refits' standard deviation")}


def _refit_effect(item: dict) -> float:
    """One bootstrap refit: the method's effect on a resample of the rows (picklable)."""
    data = item["data"]
    rows = resample.draws(len(data.table), item["seed"], "bootstrap", item["index"], item.get("groups"))
    sample = data.subset(rows)
    estimator = make_estimator(item["method"], item["kwargs"], seed=item["seed"])
    estimator.fit(sample)
    plan = contrast(sample)
    exact = closed_form(estimator, plan)
    return exact["estimate"] if exact else plug_in(estimator, plan)

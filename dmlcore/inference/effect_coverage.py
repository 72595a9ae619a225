"""Measured coverage of the effect intervals: from per-seed study rows to the tables shown.

``bench/effect_coverage.py`` runs the coverage study (dmlcore.studies) and writes one row per
fit to ``bench/results/coverage/``; :func:`summarize` turns those rows into one line per design,
method and interval kind (the plug-in's own interval, the debiased one); :func:`markdown` is the
table of docs/coverage.md and :data:`SHIPPED` the copy the Results page reads
(:func:`measured_coverage`), so no page quotes a coverage by hand.

Columns: ``seeds`` (fits with an interval), ``coverage`` and its binomial standard error, the
mean ``width``, ``sd`` (the estimates' spread over seeds), ``width_ratio`` = width / (2 z sd)
(1: the width the spread needs), ``bias`` (mean estimate minus the truth), ``weak_share`` (fits
reported weakly identified: they print no interval; their intervals are still counted here,
and ``coverage_strong`` is the coverage of the others).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from dmlcore.data.registry import load_dataset
from dmlcore.inference.debiased_effect import weak_reason
from dmlcore.estimators import METHODS

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "files" / "effect-coverage.csv"
DESIGN_TITLES = {"linear": "linear", "weak": "weak instrument", "demand-iv": "demand-iv (authors')",
                 "demand-pcl": "demand-pcl (average slope)", "nonlinear-iv": "nonlinear first stage and f",
                 "hetero-iv": "heteroscedastic noise", "weak-0.15": "instrument strength 0.15",
                 "weak-0.2": "instrument strength 0.2", "weak-0.3": "instrument strength 0.3",
                 "moderate-pcl": "moderate proxies (PCL)", "clustered-iv": "clustered IV, clusters respected",
                 "clustered-iv-ignored": "clustered IV, clusters ignored"}
F_CANDIDATES = (10.0, 16.4, 23.1, 30.0, 50.0, 104.7)   # Staiger-Stock, Stock-Yogo 10 %, Montiel Olea-Pflueger 10 %, ..., Lee et al. 2022
KINDS = {"plug_in": "plug-in's own", "debiased": "debiased"}
COLUMNS = ("design", "problem", "arm", "kind", "seeds", "coverage", "coverage_se", "width", "sd", "width_ratio", "bias",
           "weak_share", "coverage_strong")


def record_columns(record: dict | None) -> dict:
    """The columns a coverage row takes from its fit's run record beyond the study's own: the
    linear first stage's F (``effect_first_stage_f``: the diagnostics' statistic, effective F
    with a robust or clustered covariance), each representer basis's estimate and standard
    error (``effect_rungs``, JSON [[estimate, se, strength], ...] in the ladder's order, identified
    bases only), the index of the chosen one (``effect_rung``) and the specification spread in
    standard errors (``effect_spread_se``), the sieve check in the representer's bases
    (``effect_sieve_estimate``, ``effect_sieve_se``), and the sieve effect of data-driven dimension with its flag
    (``effect_dd_estimate``, ``effect_dd_se``, ``effect_dd_rung``, ``effect_sieve_flag``)."""
    effect = (record or {}).get("effect") or {}
    debiased = effect.get("debiased") or {}
    strength = ((record or {}).get("diagnostics") or {}).get("strength") or {}
    rungs = [r for r in debiased.get("rungs") or [] if "estimate" in r]
    chosen = next((i for i, r in enumerate(rungs) if r["basis"] == debiased.get("basis")), None)
    sieve = debiased.get("sieve_dimension") or {}
    return {"effect_first_stage_f": strength.get("f_stat"),
            "effect_sieve_estimate": debiased.get("sieve_estimate"), "effect_sieve_se": debiased.get("sieve_std_error"),
            "effect_rungs": json.dumps([[r["estimate"], r["std_error"], r["strength"]] for r in rungs]) if rungs else None,
            "effect_rung": chosen, "effect_spread_se": (effect.get("spread") or {}).get("range_over_se"),
            "effect_dd_estimate": sieve.get("estimate"), "effect_dd_se": sieve.get("std_error"),
            "effect_dd_rung": sieve.get("rung"), "effect_sieve_flag": debiased.get("sieve_flag")}


def weak_mask(rows: pd.DataFrame) -> pd.Series:
    """Which fits the weak-identification flag (:func:`dmlcore.inference.debiased_effect.weak_reason`, today's
    thresholds) catches, from their rows: the representer's strength, the debiased standard error
    and, where the rows have it, the linear first stage's F."""
    columns = [pd.to_numeric(rows.get(c, pd.Series(np.nan, index=rows.index)), errors="coerce")
               for c in ("effect_strength", "effect_debiased_se", "effect_first_stage_f")]
    return pd.Series([weak_reason(s, se, None if np.isnan(f) else f) is not None for s, se, f in zip(*columns)],
                     index=rows.index)


def arm_of(method: str, learner, f_model) -> str:
    """A fit's arm as the tables name it: "2sls", "dml-cmr gb boosted f", "dml-cmr gb spline f", ..."""
    if method in METHODS and not METHODS[method].uses_learner:    # no learner or f to choose: the method is the arm
        return method
    return f"{method} {learner} {'spline f' if f_model == 'sieve' else 'own f'}"


@cache
def _problem(dataset: str) -> str:
    """The problem ("iv" or "pcl") of a registered data set, as the registry's simulator sets it."""
    return load_dataset(dataset, n=100).data.problem


def summarize(rows: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """One line per design, arm and interval kind from the study's per-fit rows (module notes)."""
    z = float(norm.ppf(0.5 + level / 2))
    done = rows[rows["status"] == "done"].copy()
    done["arm"] = [arm_of(m, lr, fm) for m, lr, fm in zip(done["method"], done["learner"], done["f_model"])]
    out = []
    for (design, arm), group in done.groupby(["design", "arm"], sort=False):
        truth = pd.to_numeric(group["effect_truth"], errors="coerce")
        weak = weak_mask(group)
        for kind, (estimate, lower, upper) in {
                "plug_in": ("effect_plug_in", "effect_plug_in_ci_lower", "effect_plug_in_ci_upper"),
                "debiased": ("effect_debiased", "effect_debiased_ci_lower", "effect_debiased_ci_upper")}.items():
            est, lo, hi = (pd.to_numeric(group[c], errors="coerce") for c in (estimate, lower, upper))
            has = lo.notna() & hi.notna() & truth.notna()
            if not has.any():
                continue
            inside = ((lo <= truth) & (truth <= hi))[has]
            sd = float(est[has].std(ddof=1))
            width = float((hi - lo)[has].mean())
            strong = has & ~weak if kind == "debiased" else has
            out.append({"design": design, "problem": _problem(group["dataset"].iloc[0]), "arm": arm, "kind": kind,
                        "seeds": int(has.sum()),
                        "coverage": float(inside.mean()),
                        "coverage_se": float(np.sqrt(inside.mean() * (1 - inside.mean()) / has.sum())),
                        "width": width, "sd": sd, "width_ratio": width / (2 * z * sd) if sd > 0 else np.nan,
                        "bias": float((est - truth)[has].mean()),
                        "weak_share": float(weak[has].mean()) if kind == "debiased" else np.nan,
                        "coverage_strong": (float(((lo <= truth) & (truth <= hi))[strong].mean())
                                            if strong.any() else np.nan)})
    return pd.DataFrame(out, columns=COLUMNS)


def markdown(table: pd.DataFrame) -> str:
    """The summary as a Markdown table (docs/coverage.md)."""
    lines = ["| design | method | interval | seeds | coverage ± s.e. | width | sd of estimates | width / (2·1.96·sd) "
             "| bias | weakly identified | coverage when not |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples():
        weak = "" if np.isnan(row.weak_share) else f"{row.weak_share:.0%}"
        strong = "" if np.isnan(row.coverage_strong) or row.kind != "debiased" else f"{row.coverage_strong:.3f}"
        lines.append(f"| {DESIGN_TITLES.get(row.design, row.design)} | {row.arm} | {KINDS[row.kind]} | {row.seeds} | "
                     f"{row.coverage:.3f} ± {row.coverage_se:.3f} | {row.width:.3g} | {row.sd:.3g} | "
                     f"{row.width_ratio:.2f} | {row.bias:+.3g} | {weak} | {strong} |")
    return "\n".join(lines)


PROCEDURE = "whole refits"   # how every method's debiased effect cross-fits f-hat (the summary's procedure column)
OWN_NUISANCES = "the learner's own"   # the summary's nuisances column: named learners, or "auto" (chosen by held-out loss)


def measured_coverage(path: Path = SHIPPED) -> pd.DataFrame:
    """The shipped summary (empty when it is missing)."""
    return pd.read_csv(path) if Path(path).exists() else pd.DataFrame(columns=COLUMNS)


def coverage_note(record: dict, table: pd.DataFrame | None = None) -> str | None:
    """A run's measured coverage: its arm's coverage of the headline interval's kind on each
    design ("linear 0.95 · weak 0.81 · ... (40+ seeds each)"), or None when that interval was
    not measured (another learner, say)."""
    table = measured_coverage() if table is None else table
    config = record.get("config") or {}
    method = record.get("method")
    effect = record.get("effect") or {}
    if not method or effect.get("estimate") is None or table.empty:
        return None
    kind = "debiased" if effect.get("debiased") and effect["estimate"] == effect["debiased"]["estimate"] else "plug_in"
    part = table[(table["arm"] == arm_of(method, config.get("learner"), config.get("f_model")))
                 & (table["kind"] == kind)]
    if record.get("problem") and "problem" in part:     # only the designs of the run's own problem
        part = part[part["problem"] == record["problem"]]
    if part.empty:
        return None
    shown = " · ".join(f"{r.design} {r.coverage:.2f}" for r in part.itertuples())
    procedure = f"; {part['procedure'].iloc[0]}" if "procedure" in part and part["procedure"].notna().any() else ""
    if record.get("nuisances") and "nuisances" in part and (part["nuisances"] == OWN_NUISANCES).any():
        procedure += f"; with {OWN_NUISANCES} nuisances, where this run's were chosen by auto"
    return f"{shown} ({int(part['seeds'].min())}+ seeds each{procedure})"


DEMAND_ARMS = (("dml-cmr gb spline f", "plug_in", "DML-CMR, spline f: plug-in (delta-method interval)"),
               ("dml-cmr gb spline f", "debiased", "DML-CMR, spline f: debiased"),
               ("dml-cmr gb own f", "debiased", "DML-CMR, boosted f: debiased"),
               ("2sls", "plug_in", "2SLS coefficient (a first-stage-weighted average)"))


def _share(row) -> str:
    """A measured coverage with its Monte-Carlo standard error: "92 % (s.e. 1.9 %)"."""
    return f"{100 * row['coverage']:.0f} % (s.e. {100 * row['coverage_se']:.1f} %)"


def demand_contrast(table: pd.DataFrame | None = None) -> tuple[pd.DataFrame, str] | None:
    """The plug-in against the debiased effect of the ticket-demand f (the average derivative in
    price on demand-iv) from the coverage study: a small table and one sentence that says only
    what it shows; None when the study's summary has no such rows."""
    table = measured_coverage() if table is None else table
    demand = table[table["design"] == "demand-iv"].set_index(["arm", "kind"])
    keys = [(arm, kind) for arm, kind, _ in DEMAND_ARMS]
    if not {keys[0], keys[1]} <= set(demand.index):
        return None
    shown = pd.DataFrame([{"estimate": title, "data sets": int(demand.loc[(arm, kind), "seeds"]),
                           "mean error (estimate − truth)": demand.loc[(arm, kind), "bias"],
                           "sd of estimates": demand.loc[(arm, kind), "sd"],
                           "95 % interval covers the truth": demand.loc[(arm, kind), "coverage"],
                           "width / width needed": demand.loc[(arm, kind), "width_ratio"]}
                          for arm, kind, title in DEMAND_ARMS if (arm, kind) in demand.index])
    plug, debiased = demand.loc[keys[0]], demand.loc[keys[1]]
    text = (f"With the same fitted f (spline second stage, boosted nuisances), the plug-in effect is off by "
            f"{plug['bias']:+.2f} on average ({abs(plug['bias']) / plug['sd']:.1f} times its spread over data sets) "
            f"and its interval covers the true slope in {_share(plug)} of {int(plug['seeds'])} data sets; "
            f"the debiased effect is off by {debiased['bias']:+.2f} and covers in {_share(debiased)}.")
    return shown, text


# ------------------------------------------------------------------ the weak-identification flag (issue 31)
def debiased_fits(rows: pd.DataFrame) -> pd.DataFrame:
    """The fits with a debiased interval and a truth, with ``covered`` and the arm."""
    done = rows[(rows["status"] == "done")].copy()
    for c in ("effect_debiased", "effect_debiased_ci_lower", "effect_debiased_ci_upper", "effect_truth",
              "effect_debiased_se", "effect_strength", "effect_first_stage_f"):
        done[c] = pd.to_numeric(done.get(c, pd.Series(np.nan, index=done.index)), errors="coerce")
    done = done[done["effect_debiased_ci_lower"].notna() & done["effect_truth"].notna()]
    done["covered"] = ((done["effect_debiased_ci_lower"] <= done["effect_truth"])
                       & (done["effect_truth"] <= done["effect_debiased_ci_upper"]))
    done["arm"] = [arm_of(m, lr, fm) for m, lr, fm in zip(done["method"], done["learner"], done["f_model"])]
    return done


def coverage_by(rows: pd.DataFrame, column: str, edges) -> pd.DataFrame:
    """Coverage of the debiased intervals (every arm) per design and bin of ``column``."""
    fits = debiased_fits(rows)
    fits["bin"] = pd.cut(fits[column], edges, right=False)
    return (fits.groupby(["design", "bin"], observed=True)["covered"].agg(["mean", "size"])
            .rename(columns={"mean": "coverage", "size": "fits"}).reset_index())


STRENGTH_SWEEP = ("weak", "weak-0.15", "weak-0.2", "weak-0.3", "linear", "clustered-iv")   # the F bar's designs


def calibrate_first_stage_f(rows: pd.DataFrame, target: float = 0.90, candidates=F_CANDIDATES,
                            min_fits: int = 20, designs=STRENGTH_SWEEP) -> tuple[float | None, float | None, pd.DataFrame]:
    """The first-stage F bar the rows support, among ``candidates``: (the smallest bar at or above
    which the debiased intervals (every arm) cover at least ``target`` on every design of
    ``designs`` with at least ``min_fits`` such fits, the smallest at which the silent fits of
    those designs pooled do, the table behind both: design, threshold, fits at or above, their
    coverage, share flagged). A bar is None when no candidate meets it. ``designs``: the linear
    design at instrument strengths 0.1 to 1, and clustered; designs whose intervals miss for other
    reasons (moderate proxies, clusters ignored) are not calibrated on -- the coverage by F shows
    them."""
    fits = debiased_fits(rows)
    fits = fits[fits["effect_first_stage_f"].notna() & fits["design"].isin(designs)]
    table, per_design, pooled = [], None, None
    for threshold in candidates:
        ok = True
        for design, part in fits.groupby("design", sort=False):
            silent = part[part["effect_first_stage_f"] >= threshold]
            coverage = float(silent["covered"].mean()) if len(silent) else np.nan
            table.append({"design": design, "threshold": threshold, "fits": int(len(silent)), "coverage": coverage,
                          "flagged": float(1 - len(silent) / len(part))})
            ok &= len(silent) < min_fits or coverage >= target
        silent = fits[fits["effect_first_stage_f"] >= threshold]
        table.append({"design": "pooled", "threshold": threshold, "fits": int(len(silent)),
                      "coverage": float(silent["covered"].mean()) if len(silent) else np.nan,
                      "flagged": float(1 - len(silent) / len(fits)) if len(fits) else np.nan})
        if ok and per_design is None:
            per_design = threshold
        if len(silent) >= min_fits and silent["covered"].mean() >= target and pooled is None:
            pooled = threshold
    return per_design, pooled, pd.DataFrame(table)


def variance_rules(rows: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Coverage, width / needed and bias of the debiased effect per design and arm under four
    rules, from the same fits: the score's standard error (today's), the larger of it and the
    sieve check's (``max``), the score's with the representer bases' spread added
    (sqrt(se^2 + mean_j (theta_j - theta)^2) over the identified bases: ``bases``), and the sieve
    check itself (its estimate and standard error: ``sieve``)."""
    z = float(norm.ppf(0.5 + level / 2))
    fits = debiased_fits(rows)
    for c in ("effect_sieve_se", "effect_sieve_estimate"):
        fits[c] = pd.to_numeric(fits.get(c, pd.Series(np.nan, index=fits.index)), errors="coerce")
    spread = []
    for est, rungs in zip(fits["effect_debiased"], fits.get("effect_rungs", pd.Series(None, index=fits.index))):
        values = [r[0] for r in json.loads(rungs)] if isinstance(rungs, str) else []
        spread.append(float(np.mean((np.array(values) - est) ** 2)) if values else np.nan)
    se, est = fits["effect_debiased_se"], fits["effect_debiased"]
    rules = {"score": (est, se), "max": (est, np.maximum(se, fits["effect_sieve_se"])),
             "bases": (est, np.sqrt(se ** 2 + np.array(spread))),
             "sieve": (fits["effect_sieve_estimate"], fits["effect_sieve_se"])}
    out = []
    for (design, arm), part in fits.groupby(["design", "arm"], sort=False):
        for rule, (values, errors) in rules.items():
            e, s = values.loc[part.index], errors.loc[part.index]
            has = s.notna() & e.notna()
            if has.sum() < 2:
                continue
            err, sd = (e - part["effect_truth"])[has], float(e[has].std(ddof=1))
            out.append({"design": design, "arm": arm, "rule": rule, "fits": int(has.sum()),
                        "coverage": float((err.abs() <= z * s[has]).mean()),
                        "width_ratio": float(s[has].mean() / sd) if sd > 0 else np.nan, "bias": float(err.mean())})
    return pd.DataFrame(out)

"""Summaries and paired comparisons of a study's fits (the rows of fits.csv).

A *cell* is one data design: the data set and its options (n, rho, ...). An *arm* is a method
with the fit settings that vary in the study ("dml-cmr", or "dml-cmr · learner=gb" when
learners vary). Within a cell every arm is fitted on the same data at the same seed, so two
arms are compared seed by seed:

* ``summary_table``: per cell and arm, over the finished fits, ``reps``, ``failed``, and the
  MSE's ``median``, ``q1``, ``q3``, ``mean``, ``sd`` (sample sd; blank for one fit, and blank on
  real data, which has no truth), with ``mse_fresh_median`` and ``seconds_mean``; then the
  effect estimates' ``effect_median``, ``effect_q1``, ``effect_q3``, ``effect_sd`` and the
  medians of their interval ends ``effect_ci_lower_median``, ``effect_ci_upper_median``; the
  plug-in's and the debiased effect's (dmlcore.inference.debiased_effect) ``effect_plug_in_median``,
  ``effect_debiased_median``, ``effect_debiased_sd``, ``effect_debiased_se_mean``,
  ``effect_weak_share`` (fits reported weakly identified), ``effect_truth_mean`` and, where the
  truth is known, ``effect_plug_in_coverage`` and ``effect_debiased_coverage``; then the
  held-out residual's (projected residual / Var(Y), real data) ``heldout_relative_median``,
  ``heldout_relative_q1``, ``heldout_relative_q3``; and ``worker_seconds_mean``, the worker's seconds
  per fit with every refit (data, fit, diagnostics, held-out and debiased-effect refits);
* ``fold_loss_table``: the fits' fold losses in long form (fold_losses.csv);
* ``paired_table``: per cell and pair of arms (a before b in the study's order), over the seeds
  both finished: ``pairs``, ``median_diff`` (median of a − b; negative: a is better),
  ``hodges_lehmann`` (the Hodges–Lehmann estimate of a − b) with its 95 % signed-rank interval
  ``ci_lower`` / ``ci_upper``, ``rank_biserial`` (the effect size: −1 when a is lower on every seed),
  ``wins_a`` / ``wins_b`` (seeds where a's / b's value is lower), ``ties``, ``wilcoxon_p``, the
  two-sided Wilcoxon signed-rank p-value of the differences (scipy; zero differences dropped;
  blank when every difference is zero), ``p_holm``, that p corrected by Holm's method over every
  comparison of the study (``comparisons`` of them), and ``metric``,
  what was compared: ``mse`` where the cell has a truth, else ``heldout_relative``, the held-out
  score (:func:`paired_metric`), and ``verdict``: a is "ahead" of b, "behind" it, or the two are
  "level", by the project's one rule (:mod:`dmlcore.studies.verdict`, ``RULE``). On a real data set the rows are the same at every seed, so the
  seeds differ only in the methods' randomness and the held-out folds: the test says whether a
  gap is larger than that randomness, not whether it would hold on new data.

``COLUMN_LABELS`` names every column for readers (``readable``); the CSV files keep the codes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from dmlcore.data.registry import OPTION_LABELS
from dmlcore.estimators import METHOD_TITLES, METHODS
from dmlcore.estimators.settings import SETTINGS, STUDY_SETTINGS
from dmlcore.runs.typed import FoldLosses
from dmlcore.studies.spec import FIT_SETTINGS, settings_used
from dmlcore.studies.verdict import (ALPHA, RULE, compare_many, min_pairs, paired_verdict,  # noqa: F401  (the one rule's)
                                     signed_rank_p, smallest_p, verdict)

EFFECT_FIELDS = ("estimate", "ci_lower", "ci_upper", "level", "interval", "estimand")
# The plug-in and debiased effects beside the headline (dmlcore.inference.debiased_effect), and the truth's value.
DEBIASED_FIELDS = ("effect_plug_in", "effect_plug_in_ci_lower", "effect_plug_in_ci_upper", "effect_debiased",
                   "effect_debiased_se", "effect_debiased_ci_lower", "effect_debiased_ci_upper", "effect_strength",
                   "effect_weak", "effect_truth")
# A fit's outcomes in fits.csv: the MSE (simulations; mse_where: the protocol, the record's truth), the effect with its interval, the held-out residual.
OUTCOMES = ("mse", "mse_fresh", "mse_where", *(f"effect_{k}" for k in EFFECT_FIELDS), *DEBIASED_FIELDS, "heldout_relative",
            "heldout_relative_se")
OUTCOME_COLUMNS = ("arm", *OUTCOMES, "seconds", "worker_seconds", "rows", "status", "error", "reused", "key")
NOT_DATA = {"dataset", "method", "seed", *FIT_SETTINGS, *OUTCOME_COLUMNS}
MSE_STATS = ("median", "q1", "q3", "mean", "sd")
EFFECT_STATS = ("effect_median", "effect_q1", "effect_q3", "effect_sd", "effect_ci_lower_median",
                "effect_ci_upper_median")
DEBIASED_STATS = ("effect_plug_in_median", "effect_debiased_median", "effect_debiased_sd", "effect_debiased_se_mean",
                  "effect_weak_share", "effect_truth_mean", "effect_plug_in_coverage", "effect_debiased_coverage")
HELDOUT_STATS = ("heldout_relative_median", "heldout_relative_q1", "heldout_relative_q3")
SUMMARY_STATS = ("reps", "failed", *MSE_STATS, "mse_fresh_median", "seconds_mean", *EFFECT_STATS, *DEBIASED_STATS,
                 *HELDOUT_STATS, "worker_seconds_mean")
PAIRED_STATS = ("pairs", "median_diff", "wins_a", "wins_b", "ties", "wilcoxon_p", "metric", "verdict",
                "hodges_lehmann", "ci_lower", "ci_upper", "rank_biserial", "p_holm", "comparisons")
# The verdict: the project's one rule, dmlcore.studies.verdict (RULE).
METRIC_LABELS = {"mse": "MSE", "heldout_relative": "held-out residual"}

COLUMN_LABELS = {
    # the design and the fit settings
    "dataset": "Data set", **OPTION_LABELS, "method": "Method (without settings)", "arm": "Method",
    "seed": "Seed", **{name: SETTINGS[name].label for name in STUDY_SETTINGS},   # declared with each setting
    # a fit's outcomes (fits.csv)
    "mse": "MSE", "mse_fresh": "MSE on fresh draws", "mse_where": "MSE scored on", "effect_estimate": "Effect",
    "effect_ci_lower": "Interval lower end", "effect_ci_upper": "Interval upper end",
    "effect_level": "Interval level", "effect_interval": "Interval (how)", "effect_estimand": "Effect (what)",
    "effect_plug_in": "Plug-in effect", "effect_plug_in_ci_lower": "Plug-in interval lower end",
    "effect_plug_in_ci_upper": "Plug-in interval upper end", "effect_debiased": "Debiased effect",
    "effect_debiased_se": "Debiased effect s.e.", "effect_debiased_ci_lower": "Debiased interval lower end",
    "effect_debiased_ci_upper": "Debiased interval upper end", "effect_strength": "Identification strength",
    "effect_weak": "Weakly identified", "effect_truth": "True effect",
    "heldout_relative": "Held-out residual (÷ Var Y)", "heldout_relative_se": "Held-out residual s.e.",
    "seconds": "Seconds", "worker_seconds": "Worker seconds", "rows": "Rows", "status": "Status",
    "error": "Error", "reused": "Reused", "key": "Key",
    # summary.csv
    "reps": "Finished fits", "failed": "Failed", "median": "MSE median", "q1": "MSE q1", "q3": "MSE q3",
    "mean": "MSE mean", "sd": "MSE sd", "mse_fresh_median": "MSE on fresh draws, median",
    "seconds_mean": "Seconds per fit (the fit alone), mean",
    "worker_seconds_mean": "Seconds per fit with every refit, mean", "effect_median": "Effect median", "effect_q1": "Effect q1",
    "effect_q3": "Effect q3", "effect_sd": "Effect sd over seeds",
    "effect_ci_lower_median": "Interval lower end, median", "effect_ci_upper_median": "Interval upper end, median",
    "effect_plug_in_median": "Plug-in effect median", "effect_debiased_median": "Debiased effect median",
    "effect_debiased_sd": "Debiased effect sd over seeds", "effect_debiased_se_mean": "Debiased s.e., mean",
    "effect_weak_share": "Share weakly identified", "effect_truth_mean": "True effect, mean",
    "effect_plug_in_coverage": "Plug-in interval coverage", "effect_debiased_coverage": "Debiased interval coverage",
    "heldout_relative_median": "Held-out residual median", "heldout_relative_q1": "Held-out residual q1",
    "heldout_relative_q3": "Held-out residual q3",
    # paired.csv
    "arm_a": "Method a", "arm_b": "Method b", "pairs": "Seeds paired", "median_diff": "Median difference a − b",
    "wins_a": "Seeds a did better", "wins_b": "Seeds b did better", "ties": "Ties", "wilcoxon_p": "Wilcoxon p",
    "metric": "Compared on", "verdict": "Verdict (a vs b)",
    "hodges_lehmann": "Hodges–Lehmann a − b", "ci_lower": "95 % interval, lower", "ci_upper": "95 % interval, upper",
    "rank_biserial": "Effect size r (rank-biserial)", "p_holm": "Holm p", "comparisons": "Comparisons (Holm)",
}


def label(name: str) -> str:
    """What a reader sees for the column or option ``name`` (the name itself when unknown)."""
    return COLUMN_LABELS.get(name, name)


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with readable column names (and metric names) for a page or report."""
    if "metric" in table:
        table = table.assign(metric=table["metric"].map(lambda m: METRIC_LABELS.get(m, m)))
    return table.rename(columns=label)


def data_columns(fits: pd.DataFrame) -> list[str]:
    """The data options among the columns (n, rho, ...), in their order."""
    return [c for c in fits.columns if c not in NOT_DATA]


def cell_columns(fits: pd.DataFrame) -> list[str]:
    return ["dataset", *data_columns(fits)]


def varying_settings(fits: pd.DataFrame) -> list[str]:
    """Fit settings with more than one value among the fits of the methods that use them (None,
    as in DML-CMR's own f beside f_model="sieve", counts as a value)."""
    uses = {m: settings_used(m) if m in METHODS else frozenset(FIT_SETTINGS)
            for m in fits["method"].unique()} if "method" in fits else {}
    out = []
    for s in FIT_SETTINGS:
        if s not in fits:
            continue
        used = fits["method"].map(lambda m: s in uses.get(m, ())) if uses else pd.Series(True, index=fits.index)
        if fits.loc[used, s].map(lambda v: "None" if _missing(v) else str(v)).nunique() > 1:
            out.append(s)
    return out


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
    """Per cell and arm: reps, failed, the MSE's median, q1, q3, mean, sd, then the effect's and
    the held-out residual's (finished fits; module notes)."""
    columns = [*cell_columns(fits), "arm", "method", *SUMMARY_STATS]
    if fits.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, group in _groups(fits, [*cell_columns(fits), "arm"]):
        done = group[group["status"] == "done"]
        mse, fresh, effect, held, lower, upper = (_numbers(done, c) for c in (
            "mse", "mse_fresh", "effect_estimate", "heldout_relative", "effect_ci_lower", "effect_ci_upper"))
        rows.append({**dict(zip([*cell_columns(fits), "arm"], key)), "method": group["method"].iloc[0],
                     "reps": len(done), "failed": int((group["status"] == "failed").sum()),
                     **dict(zip(MSE_STATS, _stats(mse))),
                     "mse_fresh_median": _median(fresh),
                     "seconds_mean": done["seconds"].astype(float).mean() if len(done) else np.nan,
                     **dict(zip(EFFECT_STATS, (*_stats(effect, ("median", "q1", "q3", "sd")), _median(lower),
                                               _median(upper)))),
                     **debiased_stats(done),
                     **dict(zip(HELDOUT_STATS, _stats(held, ("median", "q1", "q3")))),
                     "worker_seconds_mean": _mean(_numbers(done, "worker_seconds"))})
    return pd.DataFrame(rows, columns=columns)


def debiased_stats(done: pd.DataFrame) -> dict:
    """The plug-in's and the debiased effect's summaries over finished fits; coverage is the share
    of fits with a known truth and an interval whose interval contains it."""
    truth = pd.to_numeric(done.get("effect_truth"), errors="coerce") if "effect_truth" in done else None

    def coverage(kind):
        if truth is None:
            return np.nan
        lower, upper = (pd.to_numeric(done.get(f"effect_{kind}_ci_{end}"), errors="coerce") for end in ("lower", "upper"))
        known = truth.notna() & lower.notna() & upper.notna()
        return float(((lower <= truth) & (truth <= upper))[known].mean()) if known.any() else np.nan

    weak = _numbers(done, "effect_weak")
    return {"effect_plug_in_median": _median(_numbers(done, "effect_plug_in")),
            "effect_debiased_median": _median(_numbers(done, "effect_debiased")),
            "effect_debiased_sd": _stats(_numbers(done, "effect_debiased"), ("sd",))[0],
            "effect_debiased_se_mean": float(np.mean(se)) if len(se := _numbers(done, "effect_debiased_se")) else np.nan,
            "effect_weak_share": float(weak.mean()) if len(weak) else np.nan,
            "effect_truth_mean": float(np.mean(t)) if len(t := _numbers(done, "effect_truth")) else np.nan,
            "effect_plug_in_coverage": coverage("plug_in"), "effect_debiased_coverage": coverage("debiased")}


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The column's finite values as floats (none when the column is absent)."""
    if column not in frame:
        return np.array([])
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    return values[np.isfinite(values)]


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else np.nan


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if len(values) else np.nan


def _stats(values: np.ndarray, which=MSE_STATS) -> list[float]:
    """median, q1, q3, mean, sd (sample; NaN for one value) of ``values``, those in ``which``."""
    q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75]) if len(values) else (np.nan,) * 3
    every = {"median": median, "q1": q1, "q3": q3, "mean": values.mean() if len(values) else np.nan,
             "sd": values.std(ddof=1) if len(values) > 1 else np.nan}
    return [every[name] for name in which]


def paired_metric(cell: pd.DataFrame) -> str | None:
    """What a cell's finished fits are compared on: ``mse`` where the truth is known, else the
    held-out residual ``heldout_relative``; None when neither was computed."""
    for metric in ("mse", "heldout_relative"):
        if len(_numbers(cell, metric)):
            return metric
    return None


def paired_table(fits: pd.DataFrame) -> pd.DataFrame:
    """Per cell and pair of arms: pairs, median difference, wins of each, ties, Wilcoxon p, metric."""
    cells = cell_columns(fits)
    columns = [*cells, "arm_a", "arm_b", *PAIRED_STATS]
    done = fits[fits["status"] == "done"] if not fits.empty else fits
    if done.empty:
        return pd.DataFrame(columns=columns)
    order = list(dict.fromkeys(fits["arm"]))
    rows, diffs = [], []
    for key, cell in _groups(done, cells):
        metric = paired_metric(cell)
        if metric is None:
            continue
        wide = cell.pivot(index="seed", columns="arm", values=metric).astype(float)
        arms = [a for a in order if a in wide]
        for a, b in itertools.combinations(arms, 2):
            pair = wide[[a, b]].dropna()
            diffs.append((pair[a] - pair[b]).to_numpy())
            rows.append({**dict(zip(cells, key if isinstance(key, tuple) else (key,))), "arm_a": a, "arm_b": b,
                         "metric": metric})
    for row, result in zip(rows, compare_many(diffs)):      # Holm over every comparison of the study
        row.update({k: v for k, v in result.as_dict().items() if k in PAIRED_STATS})
    return pd.DataFrame(rows, columns=columns)


FOLD_LOSS_COLUMNS = ("key", "fold", "rows", "model", "epoch", "train", "val")


def fold_loss_table(fits: pd.DataFrame, fold_losses: dict) -> pd.DataFrame:
    """The fits' fold losses (run records' ``fold_losses``), one row per fit, fold, model and epoch: the
    design and arm of the fit, ``fold``, its ``rows``, ``model`` (a nuisance's name, e.g. "s", "g", or "f"
    for the second stage's final loss, which has no epoch), ``epoch``, ``train`` and ``val`` losses."""
    design = [c for c in (*cell_columns(fits), "arm", "method", "seed") if c in fits] if len(fits) else []
    by_key = fits.set_index("key")[design].to_dict("index") if len(fits) and "key" in fits else {}
    rows = []
    for key, folds in fold_losses.items():
        head = {**by_key.get(key, {}), "key": key}
        for entry in folds or ():
            if not isinstance(entry, dict):
                continue
            fold = FoldLosses.from_dict(entry)          # typed (dmlcore.runs.typed)
            base = {**head, "fold": fold.fold, "rows": fold.rows}
            for model, history in fold.histories().items():
                train, val = history.train or [], history.val or []
                for i, epoch in enumerate(history.epoch or []):
                    rows.append({**base, "model": model, "epoch": epoch,
                                 "train": train[i] if i < len(train) else None,
                                 "val": val[i] if i < len(val) else None})
            if fold.second_stage_loss is not None:
                rows.append({**base, "model": "f", "epoch": None, "train": fold.second_stage_loss, "val": None})
    return pd.DataFrame(rows, columns=[*design, *FOLD_LOSS_COLUMNS])


def compact(table: pd.DataFrame, fits: pd.DataFrame, drop=("method",)) -> pd.DataFrame:
    """``table`` for display: without the design columns that never vary (dataset and n stay) and
    without the columns that are blank throughout (the MSE on real data, for instance)."""
    cells = cell_columns(fits)
    shown = [c for c in table.columns if c not in drop and (c not in cells or c in ("dataset", "n")
                                                             or table[c].astype(str).nunique() > 1)
             and (table.empty or table[c].notna().any())]
    return table[shown]


PAIRED_FIRST = ("arm_a", "arm_b", "verdict", "p_holm", "hodges_lehmann", "ci_lower", "ci_upper", "rank_biserial",
                "wilcoxon_p", "pairs", "wins_a", "wins_b", "ties", "median_diff", "metric")
SUMMARY_FIRST = ("arm", "reps", "failed", "median", "q1", "q3", "heldout_relative_median", "effect_median",
                 "effect_truth_mean")


def decimals(values, digits: int = 3) -> int:
    """Decimals that give the largest of ``values`` ``digits`` significant figures (0 to 8): one rounding for
    a whole column, so 0.270 does not sit beside 0.269 as 0.27."""
    finite = np.abs(np.asarray([v for v in values if v is not None], dtype=float))
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if not len(finite):
        return digits - 1
    return int(min(8, max(0, digits - 1 - math.floor(math.log10(finite.max())))))


def fixed(values, digits: int = 4) -> list[str]:
    """``values`` as text with :func:`decimals` of them (blank for NaN or None)."""
    d = decimals(values, digits)
    return ["" if v is None or not np.isfinite(v) else f"{v:.{d}f}" for v in np.asarray(values, dtype=float)]


def arm_title(arm: str) -> str:
    """An arm as readers see it: the method's title, then the settings that vary ("DML-CMR · learner=gb")."""
    method, _, rest = str(arm).partition(" · ")
    return METHOD_TITLES.get(method, method) + (f" · {rest}" if rest else "")


def _titled(table: pd.DataFrame, columns=("arm", "arm_a", "arm_b")) -> pd.DataFrame:
    return table.assign(**{c: table[c].map(arm_title) for c in columns if c in table})


def paired_view(paired: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """The paired table for a page or report: compacted, the design values that vary (N ...) then the arms
    (by title), verdict, Holm p and the difference's interval first (so a narrow screen keeps them in
    view however many columns follow), readable names."""
    table = compact(paired, fits, drop=())
    varying = [c for c in cell_columns(fits) if c in table and table[c].astype(str).nunique() > 1]
    return readable(_titled(_first(table, (*varying, *PAIRED_FIRST))))


def summary_view(summary: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """The summary table for a page or report: compacted, the varying design values, then the method (by
    title) and its main numbers first."""
    table = compact(summary, fits)
    varying = [c for c in cell_columns(fits) if c in table and table[c].astype(str).nunique() > 1]
    return readable(_titled(_first(table, (*varying, *SUMMARY_FIRST))))


def _first(table: pd.DataFrame, first: tuple) -> pd.DataFrame:
    head = [c for c in first if c in table]
    return table[[*head, *(c for c in table.columns if c not in head)]]


def verdict_line(row: dict, title=lambda arm: arm) -> str:
    """One paired comparison in words, by the one rule (:mod:`dmlcore.studies.verdict`): "A is ahead of B
    (MSE lower on W of N seeds; Hodges–Lehmann a − b = ... [95 % interval]; r = ...; p = ..., Holm p = ...
    over K comparisons)", "... behind ...", or "... level with ...", and, with too few seeds for Holm's
    first step to reach ALPHA, why no other word could be reached."""
    a, b, pairs = title(row["arm_a"]), title(row["arm_b"]), int(row["pairs"])
    comparisons = int(row.get("comparisons", 1) or 1) if not _missing(row.get("comparisons", 1)) else 1
    word = {"ahead": "is ahead of", "behind": "is behind"}.get(verdict(row["p_holm"], row["rank_biserial"]),
                                                               "is level with")
    p = row["wilcoxon_p"]
    if np.isfinite(p):
        p_text = f"p = {p:.2g}" + (f", Holm p = {row['p_holm']:.2g} over {comparisons} comparisons"
                                   if comparisons > 1 else "")
    else:
        p_text = "no p: every difference is zero"
    hl = row.get("hodges_lehmann", np.nan)
    hl_text = ""
    if not _missing(hl) and np.isfinite(hl):
        ci = (f" [{row['ci_lower']:.3g}, {row['ci_upper']:.3g}]" if not _missing(row.get("ci_lower"))
              and np.isfinite(row["ci_lower"]) else "")
        hl_text = f"; Hodges–Lehmann a − b = {hl:.3g}{ci}; r = {row['rank_biserial']:.2f}"
    what = METRIC_LABELS.get(row.get("metric"), "value")
    text = f"{a} {word} {b} ({what} lower on {int(row['wins_a'])} of {pairs} seeds{hl_text}; {p_text})"
    need = min_pairs(comparisons=comparisons)
    if pairs < need:
        text += (f": too few seeds for any verdict but level (at least {need} are needed"
                 + (f" with Holm over {comparisons} comparisons)" if comparisons > 1 else ")"))
    return text


def verdict_lines(paired: pd.DataFrame, fits: pd.DataFrame) -> list[str]:
    """:func:`verdict_line` for every pair of the paired table, prefixed by its design cell when the
    study has several (methods by their titles)."""
    if paired.empty:
        return []
    cells = [c for c in cell_columns(fits) if c in paired and paired[c].astype(str).nunique() > 1]
    out = []
    for _, row in paired.iterrows():
        where = ", ".join(f"{label(c).split(' (')[0]} = {format_value(row[c])}" for c in cells if not _missing(row[c]))
        line = verdict_line(row, lambda arm: METHOD_TITLES.get(arm, arm))
        out.append(f"{where}: {line}" if where else line)
    return out

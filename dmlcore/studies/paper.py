"""A study's paper-ready summary table: per method and design cell the median [q1, q3] of what the
study compares (the MSE where the truth is known, else the held-out residual), and the paired
Holm-corrected two-sided Wilcoxon p of each method against the first one, with its verdict by the
one rule (dmlcore.studies.verdict), and the Hodges–Lehmann difference with its 95 % interval.

Written through :class:`dmlcore.export.Table`, the project's one Markdown / LaTeX export
(``paper_table(result).to_markdown()`` / ``.to_latex()``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.estimators import METHOD_TITLES
from dmlcore.export import Table
from dmlcore.studies.summarize import (ALPHA, METRIC_LABELS, cell_columns, decimals, format_value, label,
                                      paired_metric)


def _num(value: float, places: int | None = None) -> str:
    """``value`` with ``places`` decimals (one rounding per column, :func:`decimals`), else 3 significant figures."""
    if value is None or not np.isfinite(value):
        return ""
    return f"{value:.{places}f}" if places is not None else f"{value:.3g}"


def _p(value: float) -> str:
    """A p-value with three decimals in every row ("< 0.001" below)."""
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _cell_name(key: tuple, names: list[str], shown: list[str]) -> str:
    values = dict(zip(names, key))
    parts = [f"{label(n).split(' (')[0]} = {format_value(values[n])}" for n in shown if pd.notna(values[n])]
    return ", ".join(parts) or str(values.get("dataset", ""))


def paper_table(result) -> Table:
    """The summary table of ``result`` (a StudyResult): one row per method, per design cell a column
    "median [q1, q3]", a column "p vs <first method>" (the Holm-corrected p, with "ahead"/"behind" by
    the one rule) and a column "a − b vs <first method>" (Hodges–Lehmann [95 % interval])."""
    fits, summary, paired = result.fits, result.summary, result.paired
    if summary.empty:
        return Table(pd.DataFrame({"Method": []}), caption="Study summary (no finished fits)")
    names = cell_columns(fits)
    shown = [n for n in names if summary[n].astype(str).nunique() > 1] or (["n"] if "n" in names else ["dataset"])
    arms = list(dict.fromkeys(summary["arm"]))
    reference = arms[0]
    title = lambda arm: METHOD_TITLES.get(arm, arm)  # noqa: E731
    table = pd.DataFrame({"Method": arms}).set_index("Method")
    metrics, seeds = set(), []
    for key, cell in summary.groupby(names, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        name = _cell_name(key, names, shown)
        done = fits[(fits["status"] == "done")]
        for column, value in zip(names, key):
            done = done[done[column].isna()] if pd.isna(value) else done[done[column] == value]
        metric = paired_metric(done) or "mse"
        metrics.add(metric)
        prefix = "" if metric == "mse" else "heldout_relative_"
        stats = {"median": f"{prefix}median", "q1": f"{prefix}q1", "q3": f"{prefix}q3"}
        places = decimals(cell[[stats["median"], stats["q1"], stats["q3"]]].to_numpy(dtype=float).ravel())
        for _, row in cell.iterrows():
            seeds.append(int(row["reps"]))
            table.loc[row["arm"], f"{name}: median [q1, q3]"] = (
                f"{_num(row[stats['median']], places)} [{_num(row[stats['q1']], places)}, "
                f"{_num(row[stats['q3']], places)}]" if np.isfinite(row[stats["median"]]) else "")
        pairs = paired.copy()
        for column, value in zip(names, key):
            pairs = pairs[pairs[column].isna()] if pd.isna(value) else pairs[pairs[column] == value]
        column = f"{name}: p vs {title(reference)}"
        shift = f"{name}: difference vs {title(reference)}"
        table.loc[reference, column] = table.loc[reference, shift] = "—"
        mine = pairs[pairs["arm_a"] == reference]
        shift_places = decimals(mine[["hodges_lehmann", "ci_lower", "ci_upper"]].to_numpy(dtype=float).ravel())
        for _, pair in mine.iterrows():
            word = {"ahead": " (behind)", "behind": " (ahead)"}.get(pair["verdict"], "")  # the other arm's word
            table.loc[pair["arm_b"], column] = f"{_p(pair['p_holm'])}{word}" if np.isfinite(
                pair["p_holm"]) else "n/a"
            # b − a: the row's method against the reference (the pair is stored as reference − method)
            hl, lower, upper = -pair["hodges_lehmann"], -pair["ci_upper"], -pair["ci_lower"]
            table.loc[pair["arm_b"], shift] = (f"{_num(hl, shift_places)} [{_num(lower, shift_places)}, "
                                               f"{_num(upper, shift_places)}]" if np.isfinite(lower)
                                               else _num(hl, shift_places))
    what = " / ".join(METRIC_LABELS[m] for m in sorted(metrics))
    comparisons = int(paired["comparisons"].max()) if len(paired) and paired["comparisons"].notna().any() else 0
    span = f"{min(seeds)}" if seeds and min(seeds) == max(seeds) else f"{min(seeds)}–{max(seeds)}" if seeds else "0"
    notes = [f"{what[0].upper() + what[1:]}: median [first quartile, third quartile] over {span} seeds per method and cell (the same "
             "data for every method at a seed).",
             f"p: two-sided Wilcoxon signed-rank test of the paired differences against {title(reference)} on the seeds "
             f"both finished, Holm-corrected over all {comparisons} comparisons of the study; (ahead) / (behind) only "
             f"when that p < {ALPHA:g}, in the direction of the test's signed-rank sums, otherwise the two are level.",
             f"Difference: the method minus {title(reference)}, Hodges–Lehmann estimate with its 95 % signed-rank "
             "interval (uncorrected; no interval below six seeds)."]
    table.index = [title(arm) for arm in table.index]
    table.index.name = "Method"
    return Table(table.fillna("").reset_index(), caption=f"Study summary: {what}, by method and design", notes=notes)

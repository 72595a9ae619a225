"""A study's paper-ready summary table: per method and design cell the median [q1, q3] of what the
study compares (the MSE where the truth is known, else the held-out residual), and the paired
two-sided Wilcoxon p of each method against the first one, with its verdict by the one standard.

Written through :class:`dmlcore.export.Table`, the project's one Markdown / LaTeX export
(``paper_table(result).to_markdown()`` / ``.to_latex()``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.estimators import METHOD_TITLES
from dmlcore.export import Table
from dmlcore.studies.summarize import ALPHA, METRIC_LABELS, cell_columns, format_value, label, paired_metric


def _num(value: float) -> str:
    return "" if value is None or not np.isfinite(value) else f"{value:.3g}"


def _cell_name(key: tuple, names: list[str], shown: list[str]) -> str:
    values = dict(zip(names, key))
    parts = [f"{label(n).split(' (')[0]} = {format_value(values[n])}" for n in shown if pd.notna(values[n])]
    return ", ".join(parts) or str(values.get("dataset", ""))


def paper_table(result) -> Table:
    """The summary table of ``result`` (a StudyResult): one row per method, per design cell a column
    "median [q1, q3]" and a column "p vs <first method>" (with "ahead"/"behind" when p < ALPHA)."""
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
        for _, row in cell.iterrows():
            seeds.append(int(row["reps"]))
            table.loc[row["arm"], f"{name}: median [q1, q3]"] = (
                f"{_num(row[stats['median']])} [{_num(row[stats['q1']])}, {_num(row[stats['q3']])}]"
                if np.isfinite(row[stats["median"]]) else "")
        pairs = paired.copy()
        for column, value in zip(names, key):
            pairs = pairs[pairs[column].isna()] if pd.isna(value) else pairs[pairs[column] == value]
        column = f"{name}: p vs {title(reference)}"
        table.loc[reference, column] = "—"
        for _, pair in pairs[pairs["arm_a"] == reference].iterrows():
            word = {"ahead": " (behind)", "behind": " (ahead)"}.get(pair["verdict"], "")  # the other arm's word
            table.loc[pair["arm_b"], column] = f"{_num(pair['wilcoxon_p'])}{word}" if np.isfinite(
                pair["wilcoxon_p"]) else "n/a"
    what = " / ".join(METRIC_LABELS[m] for m in sorted(metrics))
    span = f"{min(seeds)}" if seeds and min(seeds) == max(seeds) else f"{min(seeds)}–{max(seeds)}" if seeds else "0"
    notes = [f"{what[0].upper() + what[1:]}: median [first quartile, third quartile] over {span} seeds per method and cell (the same "
             "data for every method at a seed).",
             f"p: two-sided Wilcoxon signed-rank test of the paired differences against {title(reference)} on the seeds "
             f"both finished; (ahead) / (behind) only when p < {ALPHA:g}, otherwise the two are level; no correction "
             "for multiple comparisons."]
    table.index = [title(arm) for arm in table.index]
    table.index.name = "Method"
    return Table(table.fillna("").reset_index(), caption=f"Study summary: {what}, by method and design", notes=notes)

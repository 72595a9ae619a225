"""Tables and box plots of bench rows (bench/results/authors/*.csv) for docs/benchmarks.md.

Each FILE[:option=value,...] is a bench CSV; the options name the design the rows were measured
on when the CSV does not say (``iv_strength=0.4``). Prints, per design and N, a markdown table
(median [q1, q3], mean, paired wins and the Wilcoxon p-value against each method's neighbour
DML-CMR, mean seconds) using the study runner's own summaries, and writes one PNG of box plots
per file (as the paper's Figure 2) into --figures.

    python bench/authors_tables.py bench/results/authors/demand-iv-nn-5000.csv \
        bench/results/authors/demand-iv-nn-5000-strength0.4.csv:iv_strength=0.4 --figures docs/img

``--combined NAME.png`` also draws every file in one figure (the paper's Figure 2 by N).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import pandas as pd

from dmlcore.runs import METHOD_TITLES
from dmlcore.studies.figures import mse_figure
from dmlcore.studies.report import write_pngs
from dmlcore.studies.summarize import add_arms, cell_columns, paired_table, summary_table

REFERENCE = "dml-cmr"


def read(spec: str) -> pd.DataFrame:
    path, _, options = spec.partition(":")
    rows = pd.read_csv(path)
    for item in filter(None, options.split(",")):
        key, _, value = item.partition("=")
        rows[key] = float(value)
    rows = rows.drop(columns=["learner", "folds"]).assign(status="done")
    rows["rows"] = rows["n"]
    keep = ["dataset", "n", *[c for c in rows.columns if c not in
                              ("dataset", "n", "seed", "method", "mse", "mse_fresh", "seconds", "status", "rows")],
            "method", "seed", "mse", "mse_fresh", "seconds", "status", "rows"]
    return add_arms(rows[keep])


def markdown(fits: pd.DataFrame) -> str:
    summary, paired = summary_table(fits), paired_table(fits)
    lines = []
    design = cell_columns(fits)
    for key, cell in summary.groupby(design, sort=False):
        lines.append("\n" + ", ".join(f"{c} = {v:g}" if isinstance(v, float) else f"{c} = {v}"
                                      for c, v in zip(design, key)))
        lines.append("\n| method | reps | median MSE [q1, q3] | mean | vs DML-CMR: wins of DML-CMR / of method, "
                     "Wilcoxon p | median fresh-draw MSE | mean s/fit |")
        lines.append("|---|---|---|---|---|---|---|")
        pairs = paired.merge(cell[design].drop_duplicates(), on=design)
        for _, row in cell.iterrows():
            versus = ""
            if row["method"] != REFERENCE:
                match = pairs[((pairs.arm_a == REFERENCE) & (pairs.arm_b == row["arm"]))]
                if len(match):
                    m = match.iloc[0]
                    versus = f"{m.wins_a} / {m.wins_b} of {m.pairs}, p = {m.wilcoxon_p:.2g}"
            fresh = "" if pd.isna(row["mse_fresh_median"]) else f"{row['mse_fresh_median']:.4g}"
            lines.append(f"| {METHOD_TITLES.get(row['method'], row['method'])} | {row['reps']} | "
                         f"{row['median']:.4g} [{row['q1']:.4g}, {row['q3']:.4g}] | {row['mean']:.4g} | {versus} | "
                         f"{fresh} | {row['seconds_mean']:.1f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="bench CSV, optionally :option=value,...")
    parser.add_argument("--figures", help="folder for one PNG of box plots per file")
    parser.add_argument("--combined", help="also one PNG of all files together (by N), this name in --figures")
    parser.add_argument("--methods", help="only these methods in the combined figure (comma-separated)")
    args = parser.parse_args()
    if args.combined and args.figures:
        fits = pd.concat([read(spec) for spec in args.files], ignore_index=True)
        if args.methods:
            fits = fits[fits["method"].isin(args.methods.split(","))]
        error = write_pngs({args.combined: mse_figure(fits)}, Path(args.figures))
        print(f"figure: {Path(args.figures) / args.combined}" if error is None else error)
    for spec in args.files:
        fits = read(spec)
        print(f"\n### {spec}")
        print(markdown(fits))
        if args.figures:
            name = Path(spec.partition(":")[0]).stem + ".png"
            error = write_pngs({name: mse_figure(fits)}, Path(args.figures))
            print(f"\nfigure: {Path(args.figures) / name}" if error is None else f"\n{error}")


if __name__ == "__main__":
    main()

"""Markdown tables (median [q1, q3], mean, mean seconds per fit) from bench CSVs.

    python bench/report.py bench/results/demand-iv-nn.csv [more.csv ...]
"""

import sys

import pandas as pd


def table(path: str) -> str:
    frame = pd.read_csv(path)
    lines = ["| N | method | reps | median MSE [q1, q3] | mean | mean s/fit |", "|---|---|---|---|---|---|"]
    for (n, method), cell in frame.groupby(["n", "method"], sort=True):
        q1, med, q3 = cell["mse"].quantile([0.25, 0.5, 0.75])
        lines.append(f"| {n} | {method} | {len(cell)} | {med:.4f} [{q1:.4f}, {q3:.4f}] | "
                     f"{cell['mse'].mean():.4f} | {cell['seconds'].mean():.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"\n{arg}\n\n{table(arg)}")

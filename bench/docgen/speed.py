"""Timings (docs/benchmarks.md, docs/peers.md, docs/studies.md, docs/gpu.md): the perf scripts' rows
(bench/perf/) and the ``/usr/bin/time -v`` lines of the study logs."""

from __future__ import annotations

import pandas as pd

from .registry import block
from .words import num


@block("nmmr-floor:commands")
def nmmr_floor_commands(rows) -> str:
    frame = rows.csv("nmmr-kernel-floor-speed.csv")
    sizes = ",".join(f"{n}:{e}" for (n, e) in frame[["n", "epochs"]].drop_duplicates().itertuples(index=False))
    return (f"    python -m bench.perf.nmmr_kernel_floor --sizes {sizes} --repeats {frame['repeat'].nunique()} \\\n"
            "        --out bench/results/nmmr-kernel-floor-speed.csv")


@block("nmmr-floor")
def nmmr_floor(rows) -> str:
    frame = rows.csv("nmmr-kernel-floor-speed.csv")
    lines = ["| N | epochs | fits each | s per fit, median: with the floor / without | ratio | last-epoch risk equal | "
             "load average |", "|---|---|---|---|---|---|---|"]
    for (n, epochs), part in frame.groupby(["n", "epochs"], sort=False):
        floor, bare = part[part["min_exponent"] != float("-inf")], part[part["min_exponent"] == float("-inf")]
        same = (floor.set_index("repeat")["last_risk"] == bare.set_index("repeat")["last_risk"]).all()
        lines.append(f"| {n} | {epochs} | {len(floor)} | {floor['seconds'].median():.2f} / {bare['seconds'].median():.2f} | "
                     f"{bare['seconds'].median() / floor['seconds'].median():.2f}x | {'yes' if same else 'no'} | "
                     f"{part['load_avg_1min'].min():.1f}–{part['load_avg_1min'].max():.1f} |")
    return "\n".join(lines)


@block("nmmr-floor:cli")
def nmmr_floor_cli(rows) -> str:
    frame = rows.jsonl("nmmr-kernel-floor-cli.jsonl")
    frame["n"] = frame["args"].str.extract(r"--n (\d+)", expand=False).astype(int)
    new, old = frame["commit"].iloc[0], frame["commit"].iloc[1]
    parts = []
    for n, part in frame.groupby("n", sort=True):
        a, b = (part.loc[part["commit"] == c, "seconds"] for c in (new, old))
        parts.append(f"{'–'.join(f'{x:.0f}' for x in sorted({a.min(), a.max()}))} s against "
                     f"{'–'.join(f'{x:.0f}' for x in sorted({b.min(), b.max()}))} s at N = {n} "
                     f"({len(a)} fit{'s' if len(a) > 1 else ''} each)")
    return (f"Whole CLI fits of the two commits, alternating (with the floor, {new}, against without, {old}): "
            + "; ".join(parts))

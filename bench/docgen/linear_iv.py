"""The linear IV layer (docs/linear-iv.md): the wild cluster bootstrap's size against the CR1 Wald test
(``python -m bench.wild_bootstrap_size``)."""

from __future__ import annotations

from .registry import block


@block("wild-bootstrap-size")
def wild_bootstrap_size(rows) -> str:
    frame = rows.csv("linear-iv/wild-bootstrap-size.csv")
    run = rows.json("linear-iv/run.json")["wild_bootstrap_size"]
    lines = ["| clusters | replicates | rows per data set | CR1 Wald, normal | CR1 Wald, t(G−1) | WRE bootstrap (weights) |",
             "|---|---|---|---|---|---|"]
    for g, part in frame.groupby("clusters"):
        reps = len(part)
        se = lambda p: (p * (1 - p) / reps) ** 0.5   # noqa: E731
        cells = [f"{100 * part[c].mean():.1f} % (s.e. {100 * se(part[c].mean()):.1f} %)"
                 for c in ("reject_cr1_normal", "reject_cr1_t", "reject_wre")]
        lines.append(f"| {g} | {reps:,} | {part['rows'].min()}–{part['rows'].max()} | {cells[0]} | {cells[1]} | "
                     f"{cells[2]} ({', '.join(sorted(part['weights'].unique()))}, B = {part['draws'].iloc[0]}) |")
    lines.append("")
    lines.append(f"Rejection rates of the true coefficient at the 5 % level (s.e.: the Monte-Carlo standard error); "
                 f"run {run['date'][:10]}, {run['machine']}, load average {run['load average']:.1f}.")
    return "\n".join(lines)

"""Which nuisance learners should DML-CMR's network f be given? Cells on the same data, per seed.

Per (seed, IV strength) of demand-iv (the authors' design), the nn and gb nuisances are fitted once
(K-fold, the same folds) and reused; each cell is DML-CMR with a network f and the outcome model
from SOURCE and the distribution model from SOURCE, SOURCE one of ``nn``, ``gb``, ``gb-small`` (the
candidates of dmlcore.learners.select), ``oracle`` (the design's truth) or ``auto`` (the candidate
with the lowest cross-fitted held-out loss, per fold). An ``auto`` cell whose choice equals a fitted cell's is that
cell (same nuisances, draws and f seed: the same numbers), and is written with its choice.

Settings are chosen on seeds outside the benchmark's 0-19 (e.g. 100+). Rows (CSV, appended) have
the design, the cell, ``mse`` / ``mse_fresh``, the nuisance errors of bench/error_budget.py, the
cross-fitted held-out losses of the candidates (``s_loss_nn``, ``s_loss_gb``, ...: squared error on
the raw scale; ``g_loss_nn``, ...: energy score) and the auto choices. A row's ``seconds`` is its
fit's (the reused nuisances' time not counted, except in the nn:nn cell, a whole fit).

    python bench/nuisance_choice.py --seeds 100-103 --iv-strength 1.0,0.4 --jobs 2 \\
        --out bench/results/nuisance-choice-demand-iv.csv
    python bench/nuisance_choice.py --table bench/results/nuisance-benchmark-demand-iv.csv \\
        --versus bench/results/authors/peers-demand-iv-strength.csv:naive,dfiv

The table: per IV strength, each cell's median [q1, q3] and mean MSE on the grid and at fresh draws,
the median s-hat error, and its paired wins against the nn:nn cell (the defaults) with the two-sided
Wilcoxon signed-rank p; ``--versus FILE:method,...`` adds the auto:nn cell's paired wins against
those methods' rows (same design, n and seeds) of a bench CSV; ``--cells a,b`` keeps those cells.
``--pair A.csv B.csv`` compares two bench CSVs of one method (e.g. with and without ``auto``), paired
on the seed.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from error_budget import _ReusedOutcome, _ReusedSampler, nuisance_errors, seeds  # noqa: E402

from dmlcore.data.simulate import simulate_demand_iv  # noqa: E402
from dmlcore.estimators.dml import DMLCMR  # noqa: E402
from dmlcore.learners.select import CANDIDATES, SelectedOutcome, SelectedSampler  # noqa: E402
from dmlcore.studies.summarize import signed_rank_p  # noqa: E402

CELLS = ("nn:nn", "gb:nn", "nn:gb", "gb:gb", "oracle:nn", "nn:oracle", "oracle:oracle", "auto:nn", "auto:auto")


def one(task: dict) -> list[dict]:
    sim = simulate_demand_iv(task["n"], task["seed"], iv_strength=task["iv_strength"])
    base = dict(dataset="demand-iv", noise_scale=sim.params["noise_scale"], iv_strength=task["iv_strength"],
                rho=sim.params["rho"], n=task["n"], seed=task["seed"], method="dml-cmr", f_model="nn",
                folds=task["folds"])
    cells = [cell.split(":") for cell in task["cells"]]
    learned = [k for k in CANDIDATES if any(k in cell or "auto" in cell for cell in cells)]
    fits, outcome, sampler = {}, {}, {}
    start = time.perf_counter()
    fits["nn"] = DMLCMR("nn", task["folds"], seed=task["seed"], device="cpu").fit(sim.data)
    nn_seconds = time.perf_counter() - start
    sizes = [task["n"] - len(rows) for rows in fits["nn"].folds_]
    for k in learned:
        kind, settings = CANDIDATES[k]
        if k != "nn":   # the boosted nuisances; f linear, unused
            fits[k] = DMLCMR(kind, task["folds"], f_model="linear", nuisance_params=settings or None,
                             seed=task["seed"]).fit(sim.data)
        outcome[k], sampler[k] = _ReusedOutcome(fits[k].s_model_, sizes), _ReusedSampler(fits[k].g_model_, sizes)
    outcome["oracle"], sampler["oracle"] = sim.truth.oracle_outcome(), sim.truth.oracle_sampler()
    outcome["auto"] = SelectedOutcome({k: outcome[k] for k in learned}, task["seed"])
    sampler["auto"] = SelectedSampler({k: sampler[k] for k in learned}, task["seed"])
    train_sets = [np.setdiff1d(np.arange(task["n"]), rows) for rows in fits["nn"].folds_]
    losses = {}
    for role, selected, target in (("s", outcome["auto"], sim.data.cmr().y),
                                   ("g", sampler["auto"], sim.data.cmr().modelled)):
        selected.fit(sim.data.cmr().conditioning, target, train_sets, None)
        losses.update({f"{role}_loss_{k}": v for k, v in selected.selection_["heldout_loss"].items()})
        losses[f"{role}_auto"] = "/".join(sorted(set(selected.choices_)))
    rows, done = [], {}
    for cell in task["cells"]:
        s_src, g_src = cell.split(":")
        resolved = (losses["s_auto"] if s_src == "auto" else s_src, losses["g_auto"] if g_src == "auto" else g_src)
        key = ":".join(resolved)
        if key in done:
            row = dict(done[key])
        else:
            t0 = time.perf_counter()
            if key == "nn:nn":
                est, seconds = fits["nn"], nn_seconds
            else:
                est = DMLCMR("nn", task["folds"], seed=task["seed"], device="cpu",
                             outcome_learner=outcome[s_src], sampler=sampler[g_src]).fit(sim.data)
                seconds = time.perf_counter() - t0
            row = {**base, **sim.truth.score(est), "seconds": seconds, **nuisance_errors(est, sim), **losses}
            done[key] = row
        rows.append({**row, "cell": cell, "outcome": s_src, "distribution": g_src, "resolved": key})
        print(f"  strength={task['iv_strength']} seed={task['seed']} {cell} ({key}): mse={row['mse']:.4f}", flush=True)
    return rows


def _paired(a: pd.Series, b: pd.Series) -> str:
    """Wins of a (lower) of the seeds both have, and the Wilcoxon p of a - b."""
    pair = pd.concat([a, b], axis=1).dropna()
    diff = (pair.iloc[:, 0] - pair.iloc[:, 1]).to_numpy()
    return f"{int((diff < 0).sum())} / {int((diff > 0).sum())} of {len(diff)}, p = {signed_rank_p(diff):.2g}"


def _quartiles(values: pd.Series) -> str:
    q1, med, q3 = values.quantile([0.25, 0.5, 0.75])
    return f"{med:.4f} [{q1:.4f}, {q3:.4f}]"


def table(path: str, versus: list[str] = (), cells: list[str] | None = None) -> str:
    """Markdown tables of a rows file (module notes), of ``cells`` only when given."""
    rows = pd.read_csv(path)
    if cells:
        rows = rows[rows.cell.isin(cells)]
    lines = []
    for (strength, n), block in rows.groupby(["iv_strength", "n"], sort=False):
        grid = block.pivot_table(index="seed", columns="cell", values="mse")
        fresh = block.pivot_table(index="seed", columns="cell", values="mse_fresh")
        lines += [f"\nIV strength {strength:g}, N = {n}, {block.seed.nunique()} seeds "
                  f"(seeds {block.seed.min()}-{block.seed.max()})\n",
                  "| s-hat : distribution | median MSE [q1, q3] | mean | vs nn:nn (wins / losses, p) | "
                  "median fresh-draw MSE [q1, q3] | mean fresh | vs nn:nn, fresh | median s-hat error | auto chose |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for cell in dict.fromkeys(block.cell):
            part = block[block.cell == cell]
            chose = ", ".join(f"{k} {v}" for k, v in part.resolved.str.split(":").str[0].value_counts().items()) \
                if cell.startswith("auto") else ""
            ref = "" if cell == "nn:nn" else _paired(grid[cell], grid["nn:nn"])
            ref_fresh = "" if cell == "nn:nn" else _paired(fresh[cell], fresh["nn:nn"])
            lines.append(f"| {cell} | {_quartiles(part.mse)} | {part.mse.mean():.4f} | {ref} | "
                         f"{_quartiles(part.mse_fresh)} | {part.mse_fresh.mean():.4f} | {ref_fresh} | "
                         f"{part.s_mse.median():.4f} | {chose} |")
        for spec in versus:
            file, _, methods = spec.partition(":")
            other = pd.read_csv(file)
            other = other[(other.n == n) & (other.iv_strength == strength)]
            for method in methods.split(","):
                mine = other[other.method == method].set_index("seed")
                if mine.empty or "auto:nn" not in grid:
                    continue
                lines.append(f"\nauto:nn against {method} ({file}, {mine.index.nunique()} seeds): grid "
                             f"{_paired(grid['auto:nn'], mine.mse)}; fresh {_paired(fresh['auto:nn'], mine.mse_fresh)}; "
                             f"{method} median {mine.mse.median():.4f} (fresh {mine.mse_fresh.median():.4f})")
    return "\n".join(lines)


def pair(path_a: str, path_b: str) -> str:
    """Two bench CSVs of one method side by side, paired on the seed (module notes)."""
    a, b = (pd.read_csv(path).set_index("seed") for path in (path_a, path_b))
    lines = ["| rows | fits | median MSE [q1, q3] | mean | median fresh-draw MSE [q1, q3] | mean s/fit |",
             "|---|---|---|---|---|---|"]
    for path, rows in ((path_a, a), (path_b, b)):
        lines.append(f"| `{path}` | {len(rows)} | {_quartiles(rows.mse)} | {rows.mse.mean():.4f} | "
                     f"{_quartiles(rows.mse_fresh)} | {rows.seconds.mean():.1f} |")
    lines.append(f"\nThe first lower than the second (wins / losses, two-sided Wilcoxon p): grid "
                 f"{_paired(a.mse, b.mse)}; fresh draws {_paired(a.mse_fresh, b.mse_fresh)}.")
    return "\n".join(lines)


def main() -> None:
    if sys.argv[1:2] == ["--pair"]:
        print(pair(sys.argv[2], sys.argv[3]))
        return
    if sys.argv[1:2] == ["--table"]:
        versus = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--versus"]
        cells = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--cells"]
        print(table(sys.argv[2], versus, cells[0].split(",") if cells else None))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="100-103")
    p.add_argument("--iv-strength", default="1.0")
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--cells", default=",".join(CELLS))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    out = Path(args.out)
    tasks = [dict(seed=seed, iv_strength=float(k), n=args.n, folds=args.folds, cells=args.cells.split(","))
             for seed in seeds(args.seeds) for k in args.iv_strength.split(",")]
    with ProcessPoolExecutor(args.jobs) as pool:
        for rows in pool.map(one, tasks):
            frame = pd.DataFrame(rows)
            if out.exists():
                frame = pd.concat([pd.read_csv(out), frame], ignore_index=True)
            frame.to_csv(out, index=False)


if __name__ == "__main__":
    main()

"""Which nuisance learners should DML-CMR's network f be given? Cells on the same data, per seed.

Per (seed, IV strength) of demand-iv (the authors' design), the nn and gb nuisances are fitted once
(K-fold, the same folds) and reused; each cell is DML-CMR with a network f and the outcome model
from SOURCE and the distribution model from SOURCE, SOURCE one of ``nn``, ``gb``, ``gb-small`` (the
candidates of dmlcore.learners.select), ``oracle`` (the design's truth) or ``auto`` (the candidate
with the lowest cross-fitted held-out loss, per fold). An ``auto`` cell whose choice equals a fitted cell's is that
cell (same nuisances, draws and f seed: the same numbers), and is written with its choice.

Settings are chosen on seeds outside the benchmark's 0-19 (e.g. 100+). Rows (CSV, appended) have
the design, the cell, ``mse`` / ``mse_fresh``, the nuisance errors of bench.error_budget, the
cross-fitted held-out losses of the candidates (``s_loss_nn``, ``s_loss_gb``, ...: squared error on
the raw scale; ``g_loss_nn``, ...: energy score) and the auto choices. A row's ``seconds`` is its
fit's (the reused nuisances' time not counted, except in the nn:nn cell, a whole fit).

    python -m bench.nuisance_choice --seeds 100-103 --iv-strength 1.0,0.4 --jobs 2 \\
        --out bench/results/nuisance-choice-demand-iv.csv

docs/error-budget.md shows the rows as tables, with paired wins against the defaults (the nn:nn
cell) and against other methods' rows of the same seeds (``python bench/docs.py --write``;
renderers in bench/docgen/nuisance.py).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from bench.csv_rows import append
from bench.error_budget import _ReusedOutcome, _ReusedSampler, nuisance_errors
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.estimators.dml import DMLCMR
from dmlcore.learners.select import CANDIDATES, SelectedOutcome, SelectedSampler
from dmlcore.studies.spec import parse_seeds

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
        if k not in fits:   # the boosted nuisances (the network's fit is above); f linear, unused
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


def main() -> None:
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
             for seed in parse_seeds(args.seeds) for k in args.iv_strength.split(",")]
    with ProcessPoolExecutor(args.jobs) as pool:
        for rows in pool.map(one, tasks):
            append(out, rows)


if __name__ == "__main__":
    main()

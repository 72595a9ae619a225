"""Boosted outcome models s-hat on demand-iv: the held-out loss a user sees against the error only a simulation shows.

Per (seed, IV strength) of demand-iv (the authors' design, N = 5000), each variant of the gb outcome
model is cross-fitted on DML-CMR's K folds; rows (CSV, appended) give its cross-fitted held-out
squared error against y (``heldout``, raw sales scale: what ``outcome_learner="auto"`` compares),
its error against the true s(c) = E[Y | C] (``s_mse``, protocol scale sales / 158), and the slope
of s-hat on s (``s_slope``, < 1: shrunk). In expectation heldout = Var(Y | C) + 158^2 s_mse, so the
held-out loss ranks the variants as their true error does, up to noise. Used to pick the candidates
of ``auto`` on seeds outside the benchmark's (docs/error-budget.md).

    python -m bench.outcome_candidates --seeds 100-103 --iv-strength 1.0,0.4 \\
        --out bench/results/outcome-candidates-demand-iv.csv

docs/error-budget.md shows the rows as a table (``python bench/docs.py --write``; bench/docgen/nuisance.py).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.csv_rows import append
from dmlcore.data.simulate import Y_STD, simulate_demand_iv
from dmlcore.estimators.dml import make_folds
from dmlcore.learners.tabular import TabularOutcome
from dmlcore.progress import Monitor
from dmlcore.studies.spec import parse_seeds

VARIANTS = {"gb": {}, "gb lr 0.05": dict(learning_rate=0.05, max_iter=1000),
            "gb 15 leaves": dict(max_leaf_nodes=15), "gb 7 leaves": dict(max_leaf_nodes=7),
            "gb 4 leaves": dict(max_leaf_nodes=4),
            "gb 15 leaves lr 0.05": dict(max_leaf_nodes=15, learning_rate=0.05, max_iter=1000),
            "gb 7 leaves lr 0.05 (gb-small)": dict(max_leaf_nodes=7, learning_rate=0.05, max_iter=1000)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="100-103")
    p.add_argument("--iv-strength", default="1.0,0.4")
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = []
    for strength in map(float, args.iv_strength.split(",")):
        for seed in parse_seeds(args.seeds):
            sim = simulate_demand_iv(args.n, seed, iv_strength=strength)
            arr = sim.data.cmr()
            s_true = sim.truth.outcome_mean(sim.data.table[arr.conditioning_names])
            folds = make_folds(args.n, args.folds, seed)
            train = [np.setdiff1d(np.arange(args.n), rows) for rows in folds]
            for name, params in VARIANTS.items():
                start = time.perf_counter()
                model = TabularOutcome("gb", params, seed).fit(arr.conditioning, arr.y, train, Monitor())
                s_hat = np.empty(args.n)
                for k, held in enumerate(folds):
                    s_hat[held] = model.predict(k, arr.conditioning[held])
                rows.append(dict(dataset="demand-iv", noise_scale=sim.params["noise_scale"], iv_strength=strength,
                                 n=args.n, seed=seed, folds=args.folds, variant=name, params=str(params),
                                 heldout=float(np.mean((arr.y - s_hat) ** 2)),
                                 s_mse=float(np.mean(((s_hat - s_true) / Y_STD) ** 2)),
                                 s_slope=float(np.cov(s_hat, s_true)[0, 1] / np.var(s_true, ddof=1)),
                                 seconds=time.perf_counter() - start))
                print(f"  strength={strength:g} seed={seed} {name}: heldout={rows[-1]['heldout']:.0f} "
                      f"s_mse={rows[-1]['s_mse']:.4f}", flush=True)
    append(args.out, rows)


if __name__ == "__main__":
    main()

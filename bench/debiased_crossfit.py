"""Must f-hat be cross-fitted for the debiased effect (dmlcore.inference.debiased_effect)? A measurement.

For each seed of a design, DML-CMR (``--learner``, K = ``--folds``) is fitted once on all rows
(the library's default: the debiased effect corrects that fit) and, separately, on the rows
outside each of ``--crossfit`` folds, each fold's rows then predicted by the fit that never saw
them. Both f-hats go through the same debiasing (:func:`dmlcore.inference.debiased_effect.debias`, the same
cross-fitted representer); the rows record both estimates, standard errors and the truth.

    python -m bench.debiased_crossfit --designs linear-iv,nonlinear-iv,demand-iv --seeds 20 \\
        --out bench/results/coverage/debiased-crossfit.csv
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.registry import load_dataset
from dmlcore.inference.debiased_effect import debias, predict
from dmlcore.runs.average_effect import contrast
from dmlcore.estimators import FitSettings, for_method, make_estimator


def one(design: str, seed: int, args) -> dict:
    loaded = load_dataset(design, n=args.n, seed=seed)
    data, plan = loaded.data, contrast(loaded.data)
    truth = loaded.truth.effect(plan.points, plan.weights)
    kwargs = for_method(FitSettings(learner=args.learner, folds=args.folds), args.method)
    start = time.perf_counter()
    full = make_estimator(args.method, kwargs, seed=seed).fit(data)
    points, rows = plan.points[data.input_columns], data.table[data.input_columns]
    whole = debias(data, plan, predict(full, points), predict(full, rows), seed=seed)
    n = len(data.table)
    fold_of = np.random.default_rng([seed, 47]).permutation(n) % args.crossfit
    f_points, f_rows = np.empty(len(points)), np.empty(n)
    for k in range(args.crossfit):
        held = fold_of == k
        est = make_estimator(args.method, kwargs, seed=seed).fit(data.subset(np.flatnonzero(~held)))
        f_rows[held] = predict(est, rows[held])
        at = held[plan.rows]
        f_points[at] = predict(est, points[at])
    crossed = debias(data, plan, f_points, f_rows, seed=seed)
    return {"design": design, "seed": seed, "n": args.n, "method": args.method, "learner": args.learner,
            "truth": truth, "plug_in_full": whole["uncorrected"], "debiased_full": whole["estimate"],
            "se_full": whole["std_error"], "basis_full": whole["basis"], "plug_in_crossfit": crossed["uncorrected"],
            "debiased_crossfit": crossed["estimate"], "se_crossfit": crossed["std_error"],
            "basis_crossfit": crossed["basis"], "seconds": time.perf_counter() - start}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--designs", default="linear-iv,nonlinear-iv,demand-iv")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--seed-offset", type=int, default=1000)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--method", default="dml-cmr")
    p.add_argument("--learner", default="gb")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--crossfit", type=int, default=5)
    p.add_argument("--out", default="bench/results/coverage/debiased-crossfit.csv")
    args = p.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for design in args.designs.split(","):
        for seed in range(args.seed_offset, args.seed_offset + args.seeds):
            row = pd.DataFrame([one(design, seed, args)])
            row.to_csv(out, mode="a", header=not out.exists(), index=False)
            print(row.to_string(index=False, header=False), flush=True)
    frame = pd.read_csv(out)
    for kind in ("full", "crossfit"):
        err = frame[f"debiased_{kind}"] - frame["truth"]
        frame[f"covered_{kind}"] = err.abs() <= 1.96 * frame[f"se_{kind}"]
    print(frame.groupby("design").agg(
        seeds=("seed", "size"), bias_full=("debiased_full", lambda s: float((s - frame.loc[s.index, "truth"]).mean())),
        bias_crossfit=("debiased_crossfit", lambda s: float((s - frame.loc[s.index, "truth"]).mean())),
        sd_full=("debiased_full", "std"), sd_crossfit=("debiased_crossfit", "std"),
        se_full=("se_full", "mean"), se_crossfit=("se_crossfit", "mean"),
        cover_full=("covered_full", "mean"), cover_crossfit=("covered_crossfit", "mean")).to_string())


if __name__ == "__main__":
    main()

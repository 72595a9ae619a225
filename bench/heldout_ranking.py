"""Does the held-out score (dmlcore.runs.heldout_residual) rank methods as the true MSE does?

Each (design, seed) simulates a data set and fits every method through ``fit_run`` with the
held-out score (``--heldout-folds``, default 2); the true MSE of each fit is computed from the
known f. Per data set: Spearman's rank correlation between the methods' held-out scores and
their MSEs, and whether the lowest held-out score picks the lowest-MSE method. Summary per
design: the median and quartiles of the correlation, the share of data sets where it is
positive, the pick rate (and the rate of a random pick, 1 / methods).

Designs (registered simulators, dmlcore.data; each truth scores the MSE):

* ``demand-iv`` -- the authors' design; MSE on the benchmark's 2,800-point grid, protocol scale.
* ``linear``, ``weak`` -- linear-iv (linear f, slope 2) with iv_strength 1 or 0.1; MSE of f-hat
  against f at the data's rows, divided by Var(Y).

Raw rows (one per data set and method) go to ``--out`` (CSV, appended).

    python -m bench.heldout_ranking --designs linear,weak,demand-iv --seeds 30 --n 1000 --learner gb \\
        --jobs 2 --out bench/results/heldout-ranking.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from dmlcore.data.registry import load_dataset
from dmlcore.estimators import FitSettings, for_method
from dmlcore.runs import fit_run
from dmlcore.executors import get_executor

METHODS = ("2sls", "sieve-2sls", "dml-cmr", "ce-dml-cmr", "naive", "regression")
DESIGNS = {"demand-iv": ("demand-iv", {}), "linear": ("linear-iv", {"iv_strength": 1.0}),
           "weak": ("linear-iv", {"iv_strength": 0.1})}


def one(task: dict) -> list[dict]:
    dataset, options = DESIGNS[task["design"]]
    loaded = load_dataset(dataset, n=task["n"], seed=task["seed"], **options)
    rows = []
    for method in task["methods"]:
        settings = for_method(FitSettings(learner=task["learner"], folds=task["folds"]), method)   # what it reads
        start = time.perf_counter()
        try:
            run = fit_run(loaded.data, method, settings, seed=task["seed"], heldout_folds=task["heldout_folds"])
        except Exception as exc:  # noqa: BLE001 -- a failed fit is a row, not the end of the run
            rows.append({"design": task["design"], "seed": task["seed"], "method": method,
                         "error": f"{type(exc).__name__}: {exc}"})
            continue
        held = run.record["heldout"]
        rows.append({"design": task["design"], "n": task["n"], "seed": task["seed"], "learner": task["learner"],
                     "method": method, "mse": loaded.truth.score(run.estimator)["mse"], "heldout": held["relative"],
                     "heldout_se": held["relative_std_error"], "seconds": time.perf_counter() - start, "error": None})
    return rows


def run_tasks(fn, tasks: list, jobs: int, every: int) -> list:
    """The rows of ``fn`` over ``tasks`` on the studies' local executor (``jobs`` worker processes),
    with a progress line every ``every`` tasks; a task that raised stops the benchmark."""
    rows, start = [], time.perf_counter()
    with get_executor("local", jobs) as executor:
        for i, (_, result) in enumerate(executor.map(fn, tasks), start=1):
            if isinstance(result, BaseException):
                raise result
            rows += result
            if i % every == 0 or i == len(tasks):
                print(f"{i}/{len(tasks)} data sets, {time.perf_counter() - start:.0f} s", flush=True)
    return rows


def per_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (design, seed), group in frame[frame["error"].isna()].groupby(["design", "seed"]):
        if len(group) < 3:
            continue
        rho = spearmanr(group["heldout"], group["mse"]).statistic
        picked = group.loc[group["heldout"].idxmin(), "method"] == group.loc[group["mse"].idxmin(), "method"]
        out.append({"design": design, "seed": seed, "methods": len(group), "spearman": rho, "pick": picked})
    return pd.DataFrame(out)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    d = per_dataset(frame)
    return d.groupby("design").agg(
        datasets=("spearman", "size"), median_rho=("spearman", "median"),
        q1_rho=("spearman", lambda s: s.quantile(0.25)), q3_rho=("spearman", lambda s: s.quantile(0.75)),
        positive=("spearman", lambda s: float((s > 0).mean())), pick_rate=("pick", "mean"),
        random_pick=("methods", lambda m: float(np.mean(1 / m))))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--designs", default="linear,weak,demand-iv")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--seed-offset", type=int, default=0)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--learner", default="gb")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--heldout-folds", type=int, default=2)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", default="bench/results/heldout-ranking.csv")
    args = p.parse_args()
    designs = [d for d in args.designs.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    unknown = [d for d in designs if d not in DESIGNS] + [m for m in methods if m not in METHODS]
    if unknown:
        sys.exit(f"error: unknown design or method {unknown[0]!r}; designs {DESIGNS}, methods {METHODS}")
    tasks = [{"design": d, "n": args.n, "seed": s, "learner": args.learner, "folds": args.folds,
              "heldout_folds": args.heldout_folds, "methods": methods}
             for d in designs for s in range(args.seed_offset, args.seed_offset + args.seeds)]
    frame = pd.DataFrame(run_tasks(one, tasks, args.jobs, every=5))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, mode="a", header=not out.exists(), index=False)
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(summarize(frame))
        ok = frame[frame["error"].isna()]
        print(ok.groupby(["design", "method"])[["mse", "heldout", "seconds"]].median())
    print(f"raw rows appended to {out}")


if __name__ == "__main__":
    main()

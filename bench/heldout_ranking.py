"""Does the held-out score (dmlcore.heldout) rank methods as the true MSE does?

Each (design, seed) simulates a data set and fits every method through ``fit_run`` with the
held-out score (``--heldout-folds``, default 2); the true MSE of each fit is computed from the
known f. Per data set: Spearman's rank correlation between the methods' held-out scores and
their MSEs, and whether the lowest held-out score picks the lowest-MSE method. Summary per
design: the median and quartiles of the correlation, the share of data sets where it is
positive, the pick rate (and the rate of a random pick, 1 / methods).

Designs (the effect-coverage designs, dmlcore's bench/effect_coverage.py):

* ``demand-iv`` -- the authors' design; MSE on the benchmark's 2,800-point grid, protocol scale.
* ``linear``, ``weak`` -- linear f (slope 2) with a strong or weak instrument; MSE of f-hat
  against f at the data's rows, divided by Var(Y).

Raw rows (one per data set and method) go to ``--out`` (CSV, appended).

    python bench/heldout_ranking.py --designs linear,weak,demand-iv --seeds 30 --n 1000 --learner gb \\
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from effect_coverage import DESIGNS, linear_design, run_tasks  # noqa: E402

from dmlcore.data.simulate import simulate_demand_iv  # noqa: E402
from dmlcore.runs import fit_run  # noqa: E402

METHODS = ("2sls", "sieve-2sls", "dml-cmr", "ce-dml-cmr", "naive", "regression")


def one(task: dict) -> list[dict]:
    if task["design"] == "demand-iv":
        sim = simulate_demand_iv(task["n"], task["seed"])
        data, mse = sim.data, (lambda est: sim.truth.score(est)["mse"])
    else:
        data, _ = linear_design(task["n"], task["seed"], 1.0 if task["design"] == "linear" else 0.1)
        t = data.table
        scale = float(np.var(t["y"]))
        mse = (lambda est: float(np.mean((est.predict(t[data.input_columns]) - 2.0 * t["a"]
                                          - t["x1"] + t["x2"]) ** 2)) / scale)
    rows = []
    for method in task["methods"]:
        kwargs = {"learner": task["learner"]} if method in ("dml-cmr", "ce-dml-cmr", "naive", "regression") else {}
        if method == "dml-cmr":
            kwargs["folds"] = task["folds"]
        start = time.perf_counter()
        try:
            run = fit_run(data, method, seed=task["seed"], heldout_folds=task["heldout_folds"], **kwargs)
        except Exception as exc:  # noqa: BLE001 -- a failed fit is a row, not the end of the run
            rows.append({"design": task["design"], "seed": task["seed"], "method": method,
                         "error": f"{type(exc).__name__}: {exc}"})
            continue
        held = run.record["heldout"]
        rows.append({"design": task["design"], "n": task["n"], "seed": task["seed"], "learner": task["learner"],
                     "method": method, "mse": mse(run.estimator), "heldout": held["relative"],
                     "heldout_se": held["relative_std_error"], "seconds": time.perf_counter() - start, "error": None})
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

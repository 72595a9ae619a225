"""Coverage of the effect intervals (dmlcore.effects) by simulation, on designs with a known
average derivative.

Each (design, seed) simulates a data set and fits each method through ``fit_run`` (the same
code as the CLI and the dashboard); the record's ``effect`` gives the estimate and its 95 %
interval. The truth is the average derivative of the true f in the treatment at the same rows
(the effect's estimand). Intervals:

* ``2sls``       -- 2SLS coefficient -/+ 1.96 s.e.
* ``sieve-2sls`` -- delta method on Sieve 2SLS
* ``dml-sieve``  -- delta method on DML-CMR with the spline second stage (``--learner``)
* ``dml-boot``   -- DML-CMR with the learner's own second stage and a bootstrap of
  ``--bootstrap`` B refits (only with ``--bootstrap``; B refits per seed: slow)

Designs:

* ``demand-iv`` -- the authors' design (dmlcore.data.simulate, its default noise); truth
  mean_i s_i psi(t_i) - 2 on the raw sales scale.
* ``linear``    -- y = 2a + x1 - x2 + 1.5u + e, a = z + 0.5 x1 + u, x ~ N(0, 1): slope 2.
* ``weak``      -- the linear design with a = 0.1 z + 0.5 x1 + u (first-stage F about 10 at n = 1000).

Raw rows (one per design, seed, interval) go to ``--out`` (CSV, appended); the summary prints
coverage (with its binomial standard error), mean width, bias and RMSE per design and interval.

    python bench/effect_coverage.py --designs linear,weak,demand-iv --seeds 200 --n 1000 --learner gb \\
        --jobs 2 --out bench/results/effect-coverage.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere

from dmlcore.data.roles import CausalData  # noqa: E402
from dmlcore.data.simulate import psi, simulate_demand_iv  # noqa: E402
from dmlcore.runs import fit_run  # noqa: E402
from dmlcore.executors import get_executor  # noqa: E402

DESIGNS = ("demand-iv", "linear", "weak")
INTERVALS = ("2sls", "sieve-2sls", "dml-sieve", "dml-boot")


def linear_design(n: int, seed: int, strength: float) -> tuple[CausalData, float]:
    rng = np.random.default_rng([seed, 41])
    z, u, x1, x2 = (rng.normal(size=n) for _ in range(4))
    a = strength * z + 0.5 * x1 + u
    y = 2.0 * a + x1 - x2 + 1.5 * u + rng.normal(size=n)
    table = pd.DataFrame({"y": y, "a": a, "z": z, "x1": x1, "x2": x2})
    return CausalData(table, "iv", "y", treatment="a", instrument="z", covariates=["x1", "x2"], name="linear"), 2.0


def simulate(design: str, n: int, seed: int) -> tuple[CausalData, float]:
    """The data and its true average derivative at the data's rows."""
    if design == "demand-iv":
        data = simulate_demand_iv(n, seed).data
        t = data.table
        return data, float(np.mean(t["customer_type"] * psi(t["time"])) - 2.0)
    return linear_design(n, seed, 1.0 if design == "linear" else 0.1)


def one(task: dict) -> list[dict]:
    data, truth = simulate(task["design"], task["n"], task["seed"])
    fits = {"2sls": ("2sls", {}), "sieve-2sls": ("sieve-2sls", {}),
            "dml-sieve": ("dml-cmr", {"learner": task["learner"], "folds": task["folds"], "f_model": "sieve"}),
            "dml-boot": ("dml-cmr", {"learner": task["learner"], "folds": task["folds"],
                                     "bootstrap": task["bootstrap"]})}
    rows = []
    for name in task["intervals"]:
        method, kwargs = fits[name]
        start = time.perf_counter()
        try:
            effect = fit_run(data, method, seed=task["seed"], heldout_folds=0, **kwargs).record["effect"]
        except Exception as exc:  # noqa: BLE001 -- a failed fit is a row, not the end of the run
            rows.append({**task, "interval": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        rows.append({"design": task["design"], "n": task["n"], "seed": task["seed"], "learner": task["learner"],
                     "interval": name, "estimate": effect["estimate"], "lower": effect["ci_lower"],
                     "upper": effect["ci_upper"], "truth": truth,
                     "covered": bool(effect["ci_lower"] <= truth <= effect["ci_upper"]),
                     "seconds": time.perf_counter() - start, "how": effect["interval"], "error": None})
    return rows


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    ok = frame[frame["error"].isna()].copy()
    ok["width"] = ok["upper"] - ok["lower"]
    ok["err"] = ok["estimate"] - ok["truth"]
    out = ok.groupby(["design", "interval"]).agg(
        seeds=("covered", "size"), coverage=("covered", "mean"), width=("width", "mean"),
        bias=("err", "mean"), rmse=("err", lambda e: float(np.sqrt(np.mean(e ** 2)))),
        seconds=("seconds", "mean"))
    out["coverage_se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["seeds"])
    failed = frame[frame["error"].notna()].groupby(["design", "interval"]).size()
    out["failed"] = failed.reindex(out.index).fillna(0).astype(int)
    return out


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--designs", default="linear,weak,demand-iv")
    p.add_argument("--intervals", default="2sls,sieve-2sls,dml-sieve")
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--seed-offset", type=int, default=0)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--learner", default="gb")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--bootstrap", type=int, default=50, help="refits of the dml-boot interval")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", default="bench/results/effect-coverage.csv")
    args = p.parse_args()
    intervals = [i for i in args.intervals.split(",") if i]
    unknown = [i for i in intervals if i not in INTERVALS] + [d for d in args.designs.split(",") if d not in DESIGNS]
    if unknown:
        sys.exit(f"error: unknown design or interval {unknown[0]!r}; designs {DESIGNS}, intervals {INTERVALS}")
    tasks = [{"design": d, "n": args.n, "seed": s, "learner": args.learner, "folds": args.folds,
              "bootstrap": args.bootstrap, "intervals": intervals}
             for d in args.designs.split(",") for s in range(args.seed_offset, args.seed_offset + args.seeds)]
    frame = pd.DataFrame(run_tasks(one, tasks, args.jobs, every=10))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.drop(columns=["intervals"], errors="ignore").to_csv(out, mode="a", header=not out.exists(), index=False)
    with pd.option_context("display.width", 160, "display.float_format", "{:.3f}".format):
        print(summarize(frame))
    print(f"raw rows appended to {out}")


if __name__ == "__main__":
    main()

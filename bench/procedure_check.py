"""The debiased effect's two cross-fitting procedures on the same data, fit and code: the DML-CMR
family's f refitted alone (today) against whole refits of the method, forced by switching the
``refit_second_stage`` capability off in :mod:`dmlcore.runs` for the second arm. It separates the
procedure from the other code changes between the 200-seed study and its f-alone rerun
(docs/coverage.md). One row per seed and procedure: estimate, standard error, interval, truth.

    nice -n 19 python -m bench.procedure_check --design linear --method dml-cmr --seeds 0-11 \\
        --out bench/results/coverage-fonly/procedure-check-linear.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from bench.effect_coverage import DESIGNS
from dmlcore import runs
from dmlcore.data.registry import load_dataset
from dmlcore.studies.spec import parse_seeds


def one(design: str, method: str, seed: int, whole: bool, n: int, folds: int, learner: str) -> dict:
    dataset, options = DESIGNS[design]
    loaded = load_dataset(dataset, **{"n": n, **options}, seed=seed)
    real = runs.supports
    if whole:                           # the capability switched off: fit_run refits the whole method
        runs.supports = lambda est, capability: capability != "refit_second_stage" and real(est, capability)
    try:
        record = runs.fit_run(loaded.data, method, truth=loaded.truth, learner=learner, folds=folds, seed=seed,
                              heldout_folds=0).record
    finally:
        runs.supports = real
    d = record["effect"]["debiased"]
    return {"design": design, "method": method, "seed": seed, "procedure": "whole refits" if whole else "f alone",
            "estimate": d["estimate"], "std_error": d["std_error"], "ci_lower": d["ci_lower"],
            "ci_upper": d["ci_upper"], "truth": record["effect"]["truth"], "f_hat": d["f_hat"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--design", default="linear")
    p.add_argument("--method", default="dml-cmr")
    p.add_argument("--seeds", default="0-11")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--learner", default="gb")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = []
    for seed in parse_seeds(args.seeds):
        for whole in (False, True):
            rows.append(one(args.design, args.method, seed, whole, args.n, args.folds, args.learner))
            pd.DataFrame(rows).to_csv(Path(args.out), index=False)
            print(rows[-1]["seed"], rows[-1]["procedure"], f"{rows[-1]['estimate']:.4f} ({rows[-1]['std_error']:.4f})",
                  flush=True)


if __name__ == "__main__":
    main()

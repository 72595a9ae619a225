"""What the debiased effect adds to a fit's time: fit_run with the debiased effect off, then on
(whole refits of the method on each half, every method's procedure), one after another on the same
data so that each seed's runs see about the same machine load. One JSON row per seed and mode, with
the load average, the wall time and this process's CPU time (``cpu``: the fits run in this process,
so it is what the fits cost whatever else the machine runs).

    nice -n 19 python -m bench.debias_cost --dataset linear-iv --n 1000 --seeds 0-4 \\
        --out bench/results/debias-cost-31.jsonl

The rows in bench/results/debias-cost-31.jsonl (committed in 3756301) were made with a third mode,
``second-stage`` (the DML-CMR family's f refitted alone, the nuisances kept), a shortcut since
dropped; their ``whole`` rows are today's procedure.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from dmlcore.data.registry import load_dataset
from dmlcore.estimators import FitSettings, for_method
from dmlcore.runs import fit_run
from dmlcore.studies.spec import parse_seeds
from bench.perf import load as bench_load

MODES = ("off", "whole")


def timed(data, truth, method: str, mode: str, seed: int, kwargs: dict) -> dict:
    """One fit_run in ``mode``: its wall time, the fit's own seconds and the debiased effect."""
    start, cpu = time.perf_counter(), time.process_time()
    record = fit_run(data, method, for_method(FitSettings(**kwargs), method), truth=truth, seed=seed,
                     debias=mode != "off").record
    debiased = record["effect"].get("debiased") or {}
    return {"mode": mode, "wall": time.perf_counter() - start, "cpu": time.process_time() - cpu, "fit": record["seconds"],
            "estimate": debiased.get("estimate"), "std_error": debiased.get("std_error"),
            "truth": record["effect"].get("truth"), "f_hat": debiased.get("f_hat")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="linear-iv")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--methods", default="dml-cmr,naive")
    p.add_argument("--learner", default="gb")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seeds", default="0-4")
    p.add_argument("--out", default="bench/results/debias-cost-31.jsonl")
    p.add_argument("--other-work", help="what else the machine is running (recorded in every row)")
    args = p.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for seed in parse_seeds(args.seeds):
        loaded = load_dataset(args.dataset, n=args.n, seed=seed)
        for method in args.methods.split(","):
            for mode in MODES:
                load_start = bench_load.start()
                row = {"dataset": args.dataset, "n": args.n, "method": method, "learner": args.learner, "seed": seed,
                       **timed(loaded.data, loaded.truth, method, mode, seed,
                               {"learner": args.learner, "folds": args.folds}),
                       "load": os.getloadavg()[0], "cpus": os.cpu_count(),
                       **bench_load.fields(load_start, args.other_work),
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                with out.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
                print(f"{method} seed {seed} {mode}: {row['wall']:.1f} s (fit {row['fit']:.1f} s), load {row['load']:.1f}",
                      flush=True)


if __name__ == "__main__":
    main()

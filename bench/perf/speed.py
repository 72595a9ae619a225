"""Speed of dmlcore on demand-iv: wall time and peak memory per fit, with in-run baselines.

Each configuration runs in a fresh subprocess (so peak RSS is its own) and prints one JSON
line; the summary gives the ratios the speed issue asks for (K-fold / CE, batched / one fold
model at a time) and how the cost grows with N and K.

    python -m bench.perf.speed --out bench/results/speed.jsonl            # the full set
    python -m bench.perf.speed --plan core --seeds 1,2,3 --out bench/results/speed-idle.jsonl  # ratio on an idle machine
    python -m bench.perf.speed --only one --method dml-cmr --learner nn --n 5000 --folds 10
    python -m bench.perf.speed --plan auto --seeds 1,2,3 --out bench/results/speed-auto.jsonl  # outcome_learner="auto"
    python -m bench.perf.speed --only one --outcome-learner auto --out bench/results/speed-auto-one.jsonl  # one fit, its row kept

Every row records the demand-iv design it timed (`noise_scale`; `--noise-scale raw` for the appendix's text)
and the load it was timed under (bench/perf/load.py): the 1-minute load average at the fit's start and end,
the cores, and `--other-work` (what else the machine was running; "not stated" without it); `load_avg_1min`,
the load at the end, is kept for the rows before those fields.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.perf import load

ROOT = Path(__file__).resolve().parents[2]

from dmlcore.data.simulate import NOISE_SCALES
from dmlcore.process import default_threads

PLAN = [  # (method, learner, n, folds)
    ("dml-cmr", "nn", 5000, 10), ("ce-dml-cmr", "nn", 5000, 10), ("naive", "nn", 5000, 10),
    ("dml-cmr", "gb", 5000, 10), ("ce-dml-cmr", "gb", 5000, 10),
    ("dml-cmr", "nn", 2000, 10), ("dml-cmr", "nn", 10000, 10),
    ("dml-cmr", "nn", 5000, 2), ("dml-cmr", "nn", 5000, 5), ("dml-cmr", "nn", 5000, 20),
    ("sequential-folds", "nn", 5000, 10),
]
TWO_THREADS = [("dml-cmr", "nn", 5000, 10), ("ce-dml-cmr", "nn", 5000, 10)]  # DMLCORE_TORCH_THREADS=2
CORE = [("dml-cmr", "nn", 5000, 10), ("ce-dml-cmr", "nn", 5000, 10), ("naive", "nn", 5000, 10)]  # --plan core
AUTO = [("dml-cmr", "nn", 5000, 10), ("ce-dml-cmr", "nn", 5000, 10)]  # --plan auto: each without and with "auto"


def one(method: str, learner: str, n: int, folds: int, seed: int, noise_scale: str = "standardized",
        outcome_learner: str | None = None) -> dict:
    """Fit once in this process and return wall time, MSE and peak RSS."""
    from dmlcore.data.simulate import simulate_demand_iv
    from dmlcore.runs import fit_run
    from dmlcore.estimators import FitSettings, for_method

    sim = simulate_demand_iv(n, seed=seed, noise_scale=noise_scale)
    load_start = load.start()
    if method == "sequential-folds":
        return {**sequential_nuisances(sim.data, folds, seed), "noise_scale": noise_scale, "load_1min_start": load_start}
    shared = FitSettings(learner=learner, folds=folds, seed=seed, outcome_learner=outcome_learner, effect_folds=0)
    run = fit_run(sim.data, method, for_method(shared, method), truth=sim.truth)   # no refits: the fit alone is timed
    return {"method": method, "learner": learner, "n": n, "folds": folds, "seed": seed, "noise_scale": noise_scale,
            "outcome_learner": outcome_learner, "seconds": run.record["seconds"], "mse": run.record["mse"],
            "peak_rss_mb": _peak_mb(), "load_1min_start": load_start}


def sequential_nuisances(data, folds: int, seed: int) -> dict:
    """Baseline: the K fold models of s and of the MDN trained one after another vs batched."""
    from dmlcore.estimators.dml import make_folds
    from dmlcore.learners.nn import MixtureDensity, NeuralOutcome
    from dmlcore.progress import Monitor

    arr = data.cmr()
    parts = make_folds(arr.n, folds, seed)
    train_sets = [np.setdiff1d(np.arange(arr.n), p) for p in parts]
    start = time.perf_counter()
    for rows in train_sets:
        NeuralOutcome(seed=seed).fit(arr.conditioning, arr.y, [rows], Monitor())
        MixtureDensity(seed=seed).fit(arr.conditioning, arr.modelled, [rows], Monitor())
    sequential = time.perf_counter() - start
    start = time.perf_counter()
    NeuralOutcome(seed=seed).fit(arr.conditioning, arr.y, train_sets, Monitor())
    MixtureDensity(seed=seed).fit(arr.conditioning, arr.modelled, train_sets, Monitor())
    batched = time.perf_counter() - start
    return {"method": "sequential-folds", "learner": "nn", "n": arr.n, "folds": folds, "seed": seed,
            "seconds_sequential": sequential, "seconds_batched": batched, "peak_rss_mb": _peak_mb()}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="rows file, appended (default bench/results/speed.jsonl; with --only: "
                                      "printed only, unless given)")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--only", choices=["one"])
    parser.add_argument("--plan", choices=["full", "core", "auto"], default="full",
                        help="core: DML-CMR, CE and naive (nn, N=5000, K=10) with 1 and 2 torch threads; auto: "
                             "DML-CMR and CE (nn) without and with outcome_learner='auto', 1 thread")
    parser.add_argument("--outcome-learner")
    parser.add_argument("--method", default="dml-cmr")
    parser.add_argument("--learner", default="nn")
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--other-work", help="what else the machine is running (recorded in every row)")
    parser.add_argument("--noise-scale", default="standardized", choices=tuple(NOISE_SCALES),
                        help="demand-iv outcome noise: standardized (the authors' code, default) or raw")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.only:
        row = one(args.method, args.learner, args.n, args.folds, seeds[0], args.noise_scale, args.outcome_learner)
        if args.out:
            _append(Path(args.out), {**row, "torch_threads": default_threads()}, args.other_work)
        else:
            print(json.dumps(row), flush=True)
        return
    out = Path(args.out or ROOT / "bench" / "results" / "speed.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.plan == "core":
        jobs = [(cfg, threads, None) for threads in ("1", "2") for cfg in CORE]
    elif args.plan == "auto":
        jobs = [(cfg, "1", chosen) for cfg in AUTO for chosen in (None, "auto")]
    else:
        jobs = [(cfg, "1", None) for cfg in PLAN] + [(cfg, "2", None) for cfg in TWO_THREADS]
    for (method, learner, n, folds), threads, chosen in jobs:
        for seed in seeds:
            cmd = [sys.executable, "-m", __spec__.name, "--only", "one", "--method", method, "--learner", learner,
                   "--n", str(n), "--folds", str(folds), "--seeds", str(seed), "--noise-scale", args.noise_scale,
                   *(["--outcome-learner", chosen] if chosen else [])]
            env = {**os.environ, "DMLCORE_TORCH_THREADS": threads}
            res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
            if res.returncode != 0:
                print(f"{method} {learner} n={n} K={folds}: failed\n{res.stderr[-500:]}", file=sys.stderr)
                continue
            _append(out, {**json.loads(res.stdout.strip().splitlines()[-1]), "torch_threads": int(threads)},
                    args.other_work)


def _append(out: Path, row: dict, other_work: str | None = None) -> None:
    """Append ``row`` with the load it ran under (its start, recorded by the fit; the end, now; the cores;
    ``other_work``) to ``out`` (JSON lines) and print it."""
    end = load.fields(row.pop("load_1min_start", None), other_work)
    line = json.dumps({**row, **end, "load_avg_1min": end["load_1min_end"]})
    with out.open("a") as handle:
        handle.write(line + "\n")
    print(line, flush=True)


if __name__ == "__main__":
    main()

"""Per-fit overhead of each study executor on tiny fits (demand-iv, N = 200, naive, linear).

Each executor maps ``run_fit_config`` over ``--fits`` tiny fits; every fit notes its process and
when it started and ended. One JSON line per executor (appended to --out):

* ``wall_s``: the whole map, executor start and close included;
* ``startup_s``: until the first result came back, less that fit's own time;
* ``fit_s``: median time a fit spent in its worker (data, fit, scoring);
* ``gap_s`` / ``gap_mean_s``: median / mean idle time of a worker between the end of one fit and
  the start of its next: the executor's own cost per fit once it is up;
* ``return_s``: median time from a fit's end in its worker to its result in the caller;
* ``fits_per_s``: results per second after the first;
* ``load_before``: the machine's 1-minute load average when it started (other work slows all);
* ``psutil``: whether psutil is installed (without it loky's workers garbage-collect every second).

    .venv/bin/python -m bench.perf.executor_overhead --fits 40 --out bench/results/executor-overhead.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import time


from dmlcore.studies import get_executor, run_fit_config, spec_from_dict
from bench.perf import load as bench_load

EXECUTORS = {"local-jobs1": ("local", 1), "local-jobs2": ("local", 2), "ray-local-2cpus": ("ray", 2)}


def timed_fit(config: dict) -> tuple:
    start = time.time()
    row = run_fit_config(config)
    return os.getpid(), start, time.time(), row["status"]


def measure(name: str, fits: int, other_work: str | None = None) -> dict:
    configs = spec_from_dict({"dataset": "demand-iv", "data": {"n": 200}, "methods": ["naive"], "learner": "linear",
                              "n_draws": 4, "seeds": f"0-{fits - 1}"}).configs()
    kind, jobs = EXECUTORS[name]
    load, begin = os.getloadavg()[0], time.time()
    executor = get_executor(kind, jobs)
    got = [(*result, time.time()) for _, result in executor.map(timed_fit, configs)]
    executor.close()
    wall = time.time() - begin
    by_worker: dict = {}
    for pid, start, end, _, _ in sorted(got, key=lambda g: g[1]):
        by_worker.setdefault(pid, []).append((start, end))
    gaps = [b[0] - a[1] for runs in by_worker.values() for a, b in zip(runs, runs[1:])]
    first = min(got, key=lambda g: g[4])
    received = sorted(g[4] for g in got)
    return {"executor": name, "fits": fits, "done": sum(g[3] == "done" for g in got), "workers": len(by_worker),
            "wall_s": round(wall, 3), "startup_s": round(first[4] - begin - (first[2] - first[1]), 3),
            "fit_s": round(statistics.median(g[2] - g[1] for g in got), 4),
            "gap_s": round(statistics.median(gaps), 4), "gap_mean_s": round(statistics.mean(gaps), 4),
            "return_s": round(statistics.median(g[4] - g[2] for g in got), 4),
            "fits_per_s": round((len(received) - 1) / (received[-1] - received[0]), 2),
            "load_before": round(load, 2), **bench_load.fields(round(load, 2), other_work),
            "psutil": importlib.util.find_spec("psutil") is not None, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "date": time.strftime("%Y-%m-%d %H:%M")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=40)
    parser.add_argument("--executors", default=",".join(EXECUTORS))
    parser.add_argument("--out", default="bench/results/executor-overhead.jsonl")
    parser.add_argument("--other-work", help="what else the machine is running (recorded in every row)")
    args = parser.parse_args()
    with open(args.out, "a") as handle:
        for name in args.executors.split(","):
            row = measure(name, args.fits, args.other_work)
            print(json.dumps(row), flush=True)
            handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

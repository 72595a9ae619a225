"""What DML-CMR's target choice of nuisances (``nuisance_choice="target"``) costs beside the default (``"own"``).

The pilot rows (bench/results/target-choice-pilot/demand-iv-nn-2000.csv, bench.target_choice) time the target
fit (``target_seconds``) but no default fit of the same data, so this times both, paired: per (seed, IV strength)
of the pilot's design (demand-iv, N = 2000, K = 5, learner nn, CPU; the pilot's seeds), the estimator's fit with
``nuisance_choice="own"`` and with ``"target"``, one after the other in the same process (a small fit warms the
process up first), their order alternating from row to row so that a change of the machine's load falls on both
about equally. One row per pair, with the command, date, machine and the 1-minute load before and after:
``ratio`` is target / own in wall seconds, ``cpu_ratio`` in the CPU seconds of the process (every thread), which
the other work on a shared machine moves much less than the wall clock.

dmlcore/jobs/costs.py's factor for ``nuisance_choice="target"`` (``COST_FACTORS``) is the median ``cpu_ratio`` of
these rows, rounded to one decimal (tests/test_costs.py recomputes it from them). Time it again on an idle
machine before quoting wall seconds as a speed.

    nice -n 10 python -m bench.target_cost --seeds 100-102 --iv-strength 1.0,0.4 \\
        --out bench/results/target-choice-pilot/target-cost-2000.csv
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from pathlib import Path

from bench.csv_rows import append
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.estimators.dml import DMLCMR
from dmlcore.studies.spec import parse_seeds


def timed(sim, seed: int, folds: int, choice: str) -> tuple[float, float, object]:
    """Wall seconds, CPU seconds of this process (every thread) and the fitted estimator."""
    start, cpu = time.perf_counter(), time.process_time()
    est = DMLCMR("nn", folds, seed=seed, device="cpu", nuisance_choice=choice).fit(sim.data)
    return time.perf_counter() - start, time.process_time() - cpu, est


def one(seed: int, strength: float, n: int, folds: int, first: str, command: str) -> dict:
    sim = simulate_demand_iv(n, seed, iv_strength=strength)
    load_before = os.getloadavg()[0]
    seconds, cpu, chosen = {}, {}, None
    for choice in (first, "target" if first == "own" else "own"):
        seconds[choice], cpu[choice], est = timed(sim, seed, folds, choice)
        if choice == "target":
            chosen = (est.nuisance_selection_.get("s") or {}).get("target_pair")
    row = {"dataset": "demand-iv", "iv_strength": strength, "n": n, "folds": folds, "seed": seed, "learner": "nn",
           "method": "dml-cmr", "first": first, "own_seconds": seconds["own"], "target_seconds": seconds["target"],
           "ratio": seconds["target"] / seconds["own"], "own_cpu_seconds": cpu["own"],
           "target_cpu_seconds": cpu["target"], "cpu_ratio": cpu["target"] / cpu["own"], "target_pair": chosen,
           "command": command, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{platform.node()} ({os.cpu_count()} cores, shared)",
           "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}
    print(f"strength={strength} seed={seed}: own {row['own_seconds']:.1f} s, target {row['target_seconds']:.1f} s, "
          f"ratio {row['ratio']:.2f}; CPU {row['own_cpu_seconds']:.1f} s, {row['target_cpu_seconds']:.1f} s, ratio "
          f"{row['cpu_ratio']:.2f} (load {row['load_before']} -> {row['load_after']})", flush=True)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="100-102")
    p.add_argument("--iv-strength", default="1.0,0.4")
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.target_cost " + " ".join(
        f"--{name.replace('_', '-')} {value}" for name, value in vars(args).items())
    DMLCMR("nn", args.folds, seed=0, device="cpu", epochs=2).fit(simulate_demand_iv(300, 0).data)   # warm-up
    i = 0
    for seed in parse_seeds(args.seeds):
        for strength in args.iv_strength.split(","):
            append(out, [one(seed, float(strength), args.n, args.folds, ("own", "target")[i % 2], command)])
            i += 1


if __name__ == "__main__":
    main()

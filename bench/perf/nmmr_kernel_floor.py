"""NMMR fit time with and without the floor on the kernel's exponent (nmmr.MIN_EXPONENT), alternating
in one process on the same data, so that both see the same machine state.

    python -m bench.perf.nmmr_kernel_floor --sizes 1000:300,5000:60,10000:30 --repeats 8 \
        --out bench/results/nmmr-kernel-floor-speed.csv

Each size is N:EPOCHS (few epochs: the time per epoch is what changes). One row per fit: N, epochs,
the floor (-inf: none, as before 2026-11-26), seconds, the training risk of the last epoch (equal for
both up to float32 rounding) and the 1-minute load average.
"""

import argparse
import os
import time


import pandas as pd
import torch

import dmlcore.estimators.peers.nmmr as nmmr
from dmlcore.data.simulate import simulate_demand_pcl


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1000:300,5000:60", help="N:EPOCHS,...")
    p.add_argument("--repeats", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    floors = (nmmr.MIN_EXPONENT, float("-inf"))
    rows = []
    for size in args.sizes.split(","):
        n, epochs = (int(v) for v in size.split(":"))
        data = simulate_demand_pcl(n, seed=args.seed).data
        for repeat in range(args.repeats):
            for floor in floors:
                nmmr.MIN_EXPONENT = floor
                start = time.perf_counter()
                est = nmmr.NMMR(seed=args.seed, epochs=epochs).fit(data)
                rows.append({"n": n, "epochs": epochs, "repeat": repeat, "min_exponent": floor,
                             "seconds": time.perf_counter() - start,
                             "last_risk": est.second_stage_history_["train"][-1],
                             "load_avg_1min": os.getloadavg()[0]})
                print(rows[-1], flush=True)
    nmmr.MIN_EXPONENT = floors[0]
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False)
    print(table.groupby(["n", "epochs", "min_exponent"])["seconds"].describe()[["count", "25%", "50%", "75%"]])


if __name__ == "__main__":
    main()

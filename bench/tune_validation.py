"""Choose the nn optimisation settings by validation loss (never test MSE).

For each candidate (learning rate, batch size) it fits CE-DML-CMR on demand-iv and reports the
best validation loss of s (MSE), of the mixture density network (NLL) and of the second stage
(orthogonal score on held-out rows), with the wall time. Test MSE is not computed.

    python -m bench.tune_validation --n 5000 --seeds 1,2
"""

import argparse
import itertools
import time


import numpy as np

from dmlcore.data.simulate import NOISE_SCALES, simulate_demand_iv
from dmlcore.estimators.dml import CEDMLCMR


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--lrs", default="0.001,0.002")
    parser.add_argument("--batches", default="256,512")
    parser.add_argument("--draws", default="8")
    parser.add_argument("--noise-scale", default="standardized", choices=tuple(NOISE_SCALES),
                        help="demand-iv outcome noise: standardized (the authors' code, default) or raw")
    args = parser.parse_args()
    print(f"# demand-iv, noise_scale={args.noise_scale}, N={args.n}, seeds {args.seeds}")
    print("lr      batch draws  s_val    g_val    f_val    seconds")
    for lr, bs, m in itertools.product([float(x) for x in args.lrs.split(",")],
                                       [int(x) for x in args.batches.split(",")],
                                       [int(x) for x in args.draws.split(",")]):
        rows = []
        for seed in [int(s) for s in args.seeds.split(",")]:
            data = simulate_demand_iv(args.n, seed=seed, noise_scale=args.noise_scale).data
            par = {"lr": lr, "batch_size": bs}
            start = time.perf_counter()
            est = CEDMLCMR("nn", seed=seed, n_draws=m, nuisance_params=par, f_params=par).fit(data)
            sec = time.perf_counter() - start
            h = est.fold_losses_[0]
            rows.append((min(h["s"]["val"]), min(h["g"]["val"]), min(est.second_stage_history_["val"]), sec))
        s, g, f, sec = np.mean(rows, axis=0)
        print(f"{lr:<7} {bs:<5} {m:<5} {s:8.4f} {g:8.4f} {f:8.5f} {sec:7.1f}", flush=True)


if __name__ == "__main__":
    main()

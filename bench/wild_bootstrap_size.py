"""Size of the wild cluster bootstrap (WRE) against the CR1 Wald test of 2SLS, by simulation (docs/linear-iv.md).

    .venv/bin/python -m bench.wild_bootstrap_size [--reps 500] [--draws 199] [--clusters 8,30]

A design with few, unequal clusters where cluster-robust Wald tests over-reject: G clusters of 10 to 90 rows,
one instrument and a covariate varying at the cluster level as well as within, cluster-correlated and
heteroskedastic errors, the true coefficient 1 tested. Each replicate writes a row (G, replicate, the CR1
Wald t statistic, its rejection at 5 % against t(G-1) and against the normal, the WRE p-value with the
automatic weights) to bench/results/linear-iv/wild-bootstrap-size.csv; the run's date, machine and load go
to bench/results/linear-iv/run.json. Print the rejection rates with ``python -m bench.report`` or pandas.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm, t as t_dist

from dmlcore.data.roles import CausalData
from dmlcore.estimators import make_estimator
from dmlcore.inference.wild_bootstrap import wild_cluster_bootstrap

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "linear-iv"


def design(clusters: int, seed: int) -> pd.DataFrame:
    """One data set of the design (module notes); beta = 1."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(10, 91, clusters)
    g = np.repeat(np.arange(clusters), sizes)
    n = len(g)
    zc, uc, vc = (rng.normal(size=clusters)[g] for _ in range(3))
    z = zc + rng.normal(size=n)
    x = rng.normal(size=clusters)[g] + 0.5 * rng.normal(size=n)
    common = rng.normal(size=n)
    v = vc + common + rng.normal(size=n)
    d = 0.5 * z + 0.3 * x + v
    u = uc * (1 + np.abs(z)) + 0.6 * common + rng.normal(size=n)
    return pd.DataFrame(dict(y=d + 0.5 * x + u, d=d, z=z, x=x, g=g))


def replicate(clusters: int, seed: int, draws: int) -> dict:
    frame = design(clusters, seed)
    data = CausalData(frame, "iv", "y", treatment="d", instrument="z", covariates="x")
    est = make_estimator("2sls", cov_type="clustered-cr1", cluster="g").fit(data)
    stat = (float(est.coef_["d"]) - 1.0) / float(est.std_errors_["d"])
    boot = wild_cluster_bootstrap(data, "g", beta0=1.0, draws=draws, seed=seed, interval=False)
    return {"clusters": clusters, "replicate": seed, "rows": len(frame), "t_cr1": stat,
            "reject_cr1_t": int(2 * t_dist.sf(abs(stat), clusters - 1) < 0.05),
            "reject_cr1_normal": int(2 * norm.sf(abs(stat)) < 0.05),
            "wre_pvalue": boot["pvalue"], "reject_wre": int(boot["pvalue"] < 0.05), "weights": boot["weights"],
            "draws": draws}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--draws", type=int, default=199)
    parser.add_argument("--clusters", default="8,30")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = [replicate(int(g), seed, args.draws) for g in args.clusters.split(",") for seed in range(args.reps)]
    OUT.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows)
    frame.to_csv(OUT / "wild-bootstrap-size.csv", index=False, float_format="%.6g")
    print(frame.groupby("clusters")[["reject_cr1_normal", "reject_cr1_t", "reject_wre"]].mean().to_string())
    log = OUT / "run.json"
    runs = json.loads(log.read_text()) if log.exists() else {}
    runs["wild_bootstrap_size"] = {"seconds": round(time.perf_counter() - start, 1),
                                   "date": time.strftime("%Y-%m-%d %H:%M:%S%z"),
                                   "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                                              f"{platform.python_version()}",
                                   "load average": os.getloadavg()[0], "settings": vars(args)}
    log.write_text(json.dumps(runs, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

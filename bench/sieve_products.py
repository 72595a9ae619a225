"""Why the treatment x proxy rungs of the sieve effect do not rescue demand-pcl (issue 54): per design and seed, how
far the proximal effect's evaluation points lie from the data, and what the best fit of the TRUE bridge in each
rung's f basis gives for the effect.

The proximal effect (dmlcore.runs.average_effect.contrast) averages the bridge h(a, W_i) over the rows' W at grid
values a of the treatment: points (a, W_i) that need not lie where the data are. ``off_support``: the share of those
points whose 10th nearest data row (treatment and proxy scaled by their s.d.) is farther than the 99th percentile of
the same distance among the data rows themselves. Then, for each rung of DD_LADDER, the least-squares fit of the
true bridge at the data rows in that rung's f basis (no instruments, no noise: the best that basis can do where the
data are): its R^2 and its effect minus the truth. The true bridges, from the simulators: demand-pcl
(dmlcore/data/simulate.py; W = 7 psi(U) + 45 + noise independent of (A, Z, U)) h(a, w) = a min(exp((w - a)/10), 5)
- 5 (w - 45)/7, since E[-5 psi(U) | A, Z] = -5/7 E[W - 45 | A, Z]; moderate-pcl (dmlcore/data/designs.py's notes)
h(a, w, x) = a + 0.2 a^2 + w + 0.5 x.

    nice -n 10 python -m bench.sieve_products --seeds 0-19
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from bench.sieve_dimension import OUT_DIR, design_data
from dmlcore.inference.debiased_effect import build_bases, per_row
from dmlcore.inference.sieve_dimension import DD_LADDER
from dmlcore.studies.spec import parse_seeds

NEIGHBOUR = 10


def true_bridge(design: str, frame: pd.DataFrame) -> np.ndarray:
    if design == "demand-pcl":
        a, w = frame["price"].to_numpy(dtype=float), frame["views"].to_numpy(dtype=float)
        return a * np.minimum(np.exp((w - a) / 10.0), 5.0) - 5.0 * (w - 45.0) / 7.0
    if design == "moderate-pcl":
        a = frame["a"].to_numpy(dtype=float)
        return a + 0.2 * a ** 2 + frame["w"].to_numpy(dtype=float) + 0.5 * frame["x"].to_numpy(dtype=float)
    raise SystemExit(f"error: no true bridge for {design!r}; choose demand-pcl or moderate-pcl")


def off_support(data, plan) -> float:
    a, w = data.treatment[0], data.outcome_proxy[0]
    scale = data.table[[a, w]].std().to_numpy()
    rows = data.table[[a, w]].to_numpy(dtype=float) / scale
    tree = cKDTree(rows)
    own = tree.query(rows, k=NEIGHBOUR + 1)[0][:, NEIGHBOUR]          # the row itself is its own first neighbour
    far = tree.query(plan.points[[a, w]].to_numpy(dtype=float) / scale, k=NEIGHBOUR)[0][:, NEIGHBOUR - 1]
    return float(np.mean(far > np.quantile(own, 0.99)))


def row(design: str, seed: int) -> dict:
    loaded, plan, _ = design_data(design, seed)
    data = loaded.data
    truth = loaded.truth.effect(plan.points, plan.weights)
    h = true_bridge(design, data.table)
    out = {"design": design, "seed": seed, "truth": truth, "off_support": off_support(data, plan),
           "bridge_effect": float(np.sum(plan.weights * true_bridge(design, plan.points)))}
    for position, rung in enumerate(DD_LADDER):
        b, _ = build_bases(data, rung)
        bx = b(data.table[[c.name for c in b.columns]].to_numpy(dtype=float))
        beta = np.linalg.lstsq(bx, h, rcond=None)[0]
        effect = float(np.nanmean(per_row(plan, len(h), basis=b) @ beta))     # rows the contrast leaves out: NaN
        out[f"r2_{position}"] = float(1 - np.var(h - bx @ beta) / np.var(h))
        out[f"bias_{position}"] = effect - truth
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--designs", default="demand-pcl,moderate-pcl")
    p.add_argument("--seeds", default="0-19")
    p.add_argument("--out", default=str(OUT_DIR / "products.csv"))
    args = p.parse_args(argv)
    frame = pd.DataFrame([row(d, s) for d in args.designs.split(",") for s in parse_seeds(args.seeds)])
    frame.to_csv(args.out, index=False, float_format="%.6g")
    meta = Path(args.out).with_suffix(".json")
    meta.write_text(json.dumps({"command": "python -m bench.sieve_products " + " ".join(argv if argv is not None else sys.argv[1:]),
                                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                "machine": platform.machine(), "cores": os.cpu_count(),
                                "load_1min": os.getloadavg()[0]}, indent=1))
    print(frame.groupby("design").mean(numeric_only=True).round(3).T.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

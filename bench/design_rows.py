"""Figures of the simulators themselves, not of fits, written as rows for docs/benchmarks.md (seconds):
demand-iv's first-stage strength, and the variance of dsprites-pcl's true effect with its proxy's
correlation.

    python -m bench.design_rows     # (re)writes bench/results/raw-design/
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.images import POSITIONS, confounder_weight, dsprites_structural, dsprites_test_grid, render_heart
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.inference.first_stage import first_stage

OUT = Path(__file__).resolve().parent / "results" / "raw-design"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for scale in ("raw", "standardized"):
        for strength in (1.0, 0.4):
            for n in (2000, 5000):
                data = simulate_demand_iv(n, seed=0, iv_strength=strength, noise_scale=scale).data
                stats = first_stage(data, nonparametric=False)["treatments"]["price"]
                rows.append({"noise_scale": scale, "iv_strength": strength, "n": n, "seed": 0,
                             "partial_r2": stats["partial_r2"], "f_stat": stats["f_stat"]})
    pd.DataFrame(rows).to_csv(OUT / "first-stage.csv", index=False)
    grid = dsprites_test_grid()
    images = render_heart(grid["scale"], grid["rotation"], grid["pos_x"], grid["pos_y"]).reshape(len(grid), -1)
    truth = dsprites_structural(images) * float(np.mean(confounder_weight(POSITIONS)))
    sd_u = POSITIONS.std()
    (OUT / "dsprites-truth.json").write_text(json.dumps({
        "test_sprites": len(truth), "truth_variance": float(truth.var()), "truth_mean": float(truth.mean()),
        "proxy_confounder_correlation": float(sd_u / np.sqrt(sd_u ** 2 + 1.0))}, indent=1) + "\n")
    print(f"wrote {OUT / 'first-stage.csv'} and {OUT / 'dsprites-truth.json'}")


if __name__ == "__main__":
    main()

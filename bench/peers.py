"""Small-sample checks of the peer methods (docs/peers.md): a few seeds per cell, rows to a CSV.

Each row is one fit through ``dmlcore.runs.fit_run``: dataset, n, seed, method, variant (the
settings that differ from the method's defaults, as JSON), mse, mse_fresh, seconds. Variants
are diagnostics (what the published numbers' code did), never a choice made on the test grid.
The 20-seed measurements go through the study runner (``python -m dmlcore study``).

    python -m bench.peers --dataset demand-pcl --sizes 1000 --seeds 0-2 --methods kpv,pmmr \
        --variant '{}' --variant '{"center": false}' --out bench/results/peers-center-demand-pcl.csv

``--validation`` adds ``val_score``: the projected residual (``dmlcore.runs.heldout_residual.projected_residual``)
of each fit on a fresh draw of the same simulator (seed + VALIDATION_SEED_OFFSET), which the fit
never saw and the test grid is not part of: the column to choose a variant by.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path


from dmlcore.data.registry import load_dataset
from dmlcore.runs.heldout_residual import projected_residual
from dmlcore.runs import fit_run
from dmlcore.studies.spec import parse_seeds

FIELDS = ["dataset", "n", "seed", "method", "variant", "categories", "mse", "mse_fresh", "seconds", "error",
          "val_score"]
VALIDATION_SEED_OFFSET = 1_000_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="demand-iv")
    p.add_argument("--sizes", default="1000")
    p.add_argument("--seeds", default="0-2")
    p.add_argument("--methods", default="kiv")
    p.add_argument("--variant", action="append", help="a JSON dict of settings (repeatable; default {})")
    p.add_argument("--numeric-categories", action="store_true",
                   help="read categorical columns (demand-iv's customer type) as numbers instead of one-hot")
    p.add_argument("--validation", action="store_true",
                   help="score each fit's projected residual on a fresh validation draw (val_score)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    variants = [json.loads(v) for v in (args.variant or ["{}"])]
    out = Path(args.out)
    new = not out.exists()
    with out.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        for n in (int(s) for s in args.sizes.split(",")):
            for seed in parse_seeds(args.seeds):
                loaded = load_dataset(args.dataset, n=n, seed=seed)
                val = load_dataset(args.dataset, n=n, seed=seed + VALIDATION_SEED_OFFSET) if args.validation else None
                if args.numeric_categories:
                    loaded.data.categorical = []
                    if val is not None:
                        val.data.categorical = []
                for method in args.methods.split(","):
                    for variant in variants:
                        row = {"dataset": args.dataset, "n": n, "seed": seed, "method": method,
                               "variant": json.dumps(variant, sort_keys=True), "error": None,
                               "categories": "numeric" if args.numeric_categories else "one-hot"}
                        try:
                            run = fit_run(loaded.data, method, truth=loaded.truth, seed=seed,
                                          f_params=variant or None)
                            rec = run.record
                            row.update(mse=rec["mse"], mse_fresh=rec["metrics"].get("mse_fresh"),
                                       seconds=round(rec["seconds"], 2))
                            if val is not None:
                                row["val_score"] = projected_residual(run.estimator, val.data, seed)["score"]
                        except Exception as exc:  # a failed fit is a row with its reason
                            row["error"] = f"{type(exc).__name__}: {exc}"
                        writer.writerow(row)
                        handle.flush()
                        print(row, flush=True)


if __name__ == "__main__":
    main()

"""Coverage of the effect intervals by simulation, run as a study (dmlcore.studies).

Each design is a registered simulator whose truth knows the true effect (``truth.effect``), so
every fit's record says whether its intervals contain it; the study runner stores every fit
with its configuration ($DMLCORE_HOME), and a rerun reuses what is stored. Seeds run in batches
across all designs, so that rows stopped early are balanced; after each batch the per-fit rows
go to ``--out-dir`` (``fits-<design>.csv``) and the summary (:mod:`dmlcore.effect_coverage`) is
printed. ``python bench/docs.py --write`` then renders the table of docs/coverage.md (block
``effect-coverage:debiased``) and the copy the Results page reads
(dmlcore/data/files/effect-coverage.csv) from those rows.

Designs (n rows each): ``linear`` (linear-iv), ``weak`` (linear-iv, iv_strength 0.1),
``demand-iv`` (the authors' design, standardized noise), ``demand-pcl`` (the proximal average
slope), ``nonlinear-iv``, ``hetero-iv`` (dmlcore.data.designs). Methods: 2SLS, Sieve 2SLS,
DML-CMR with ``--learner`` nuisances (its own f, and the spline f), the naive plug-in
(``--learner``); every fit also gives the debiased effect (dmlcore.debiased).

    nice -n 10 python -m bench.effect_coverage --seeds 0-199 --batch 5 --n 1000 --folds 5 --jobs 2
    python -m bench.effect_coverage --from-store      # the rows of the fits stored so far (fits nothing)
    python bench/docs.py --write
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from dmlcore.effect_coverage import summarize
from dmlcore.studies import plan_study, run_study
from dmlcore.studies.runner import _row, result_from_rows
from dmlcore.studies.spec import parse_seeds

DESIGNS = {"linear": ("linear-iv", {"iv_strength": 1.0}), "weak": ("linear-iv", {"iv_strength": 0.1}),
           "demand-iv": ("demand-iv", {"noise_scale": "standardized"}), "demand-pcl": ("demand-pcl", {}),
           "nonlinear-iv": ("nonlinear-iv", {}), "hetero-iv": ("hetero-iv", {})}


def spec(designs, seeds, n, learner, folds) -> dict:
    """The study: per design, the linear methods and the learner's methods with their own f, and
    DML-CMR with the spline f."""
    grids = []
    for name in designs:
        dataset, options = DESIGNS[name]
        data = {"n": n, **options}
        grids.append({"dataset": dataset, "data": data, "methods": ["2sls", "sieve-2sls", "dml-cmr", "naive"],
                      "learner": learner, "folds": folds})
        grids.append({"dataset": dataset, "data": data, "methods": ["dml-cmr"], "learner": learner, "folds": folds,
                      "f_model": "sieve"})
    return {"grid": grids, "seeds": list(seeds)}


def label(row) -> str:
    """The design's name in the tables, from a fits row."""
    if row["dataset"] == "linear-iv":
        return "weak" if float(row.get("iv_strength", 1.0)) < 1.0 else "linear"
    return row["dataset"]


def write_rows(fits: pd.DataFrame, out_dir: Path) -> None:
    """One CSV of per-fit rows per design (``fits-<design>.csv``)."""
    fits = fits.assign(design=fits.apply(label, axis=1))
    for design, part in fits.groupby("design"):
        part.to_csv(out_dir / f"fits-{design}.csv", index=False)


def summary(out_dir: Path) -> pd.DataFrame:
    """The summary of every row in ``out_dir``."""
    return summarize(pd.concat([pd.read_csv(p) for p in sorted(out_dir.glob("fits-*.csv"))], ignore_index=True))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--designs", default=",".join(DESIGNS))
    p.add_argument("--seeds", default="0-199")
    p.add_argument("--batch", type=int, default=25, help="seeds per batch (every design runs each batch)")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--learner", default="gb")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out-dir", default="bench/results/coverage")
    p.add_argument("--from-store", action="store_true",
                   help="write the rows of the fits already stored (a run still going, or stopped), fit nothing")
    args = p.parse_args()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    designs = [d for d in args.designs.split(",") if d]
    if args.from_store:
        plan = plan_study(spec(designs, parse_seeds(args.seeds), args.n, args.learner, args.folds))
        rows = [_row(c, k, plan.stored[k], reused=True) for c, k in zip(plan.configs, plan.keys) if k in plan.stored]
        write_rows(result_from_rows(rows).fits, out_dir)
    else:
        unknown = [d for d in designs if d not in DESIGNS]
        if unknown:
            raise SystemExit(f"error: unknown design {unknown[0]!r}; choose from {', '.join(DESIGNS)}")
        seeds = parse_seeds(args.seeds)
        frames = []
        for i in range(0, len(seeds), args.batch):
            start = time.perf_counter()
            result = run_study(spec(designs, seeds[i:i + args.batch], args.n, args.learner, args.folds),
                               executor="local", jobs=args.jobs)
            frames.append(result.fits)
            write_rows(pd.concat(frames, ignore_index=True), out_dir)
            print(f"seeds {seeds[i]}-{seeds[min(i + args.batch, len(seeds)) - 1]}: {result.message}, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    with pd.option_context("display.width", 200, "display.max_rows", 200, "display.float_format", "{:.3f}".format):
        print(summary(out_dir))


if __name__ == "__main__":
    main()

"""Coverage of the effect intervals by simulation, run as a study (dmlcore.studies).

Each design is a registered simulator whose truth knows the true effect (``truth.effect``), so
every fit's record says whether its intervals contain it; the study runner stores every fit
with its configuration ($DMLCORE_HOME), and a rerun reuses what is stored. Seeds run in batches
across all designs, so that rows stopped early are balanced; after each batch the per-fit rows
go to ``--out-dir`` (``fits-<design>.csv``) and the summary (:mod:`dmlcore.inference.effect_coverage`) is
printed. ``python bench/docs.py --write`` then renders the table of docs/coverage.md (block
``effect-coverage:debiased``) and the copy the Results page reads
(dmlcore/data/files/effect-coverage.csv) from those rows.

Designs (n rows each): ``linear`` (linear-iv), ``weak`` (linear-iv, iv_strength 0.1),
``demand-iv`` (the authors' design, standardized noise), ``demand-pcl`` (the proximal average
slope), ``nonlinear-iv``, ``hetero-iv``, and (issue 31) ``weak-0.15``, ``weak-0.2``, ``weak-0.3``
(linear-iv between weak and strong), ``moderate-pcl`` (moderate proxies), ``clustered-iv`` (run
with ``cov_type = "clustered"`` by its cluster column) and ``clustered-iv-ignored`` (the same data
with the clusters ignored: 2SLS and DML-CMR only, a comparison) (dmlcore.data.designs). Methods: 2SLS, Sieve 2SLS,
DML-CMR with ``--learner`` nuisances (its own f, and the spline f), the naive plug-in
(``--learner``); every fit also gives the debiased effect (dmlcore.inference.debiased_effect).

    nice -n 10 python -m bench.effect_coverage --seeds 0-199 --batch 5 --n 1000 --folds 5 --jobs 2
    python -m bench.effect_coverage --from-store      # the rows of the fits stored so far (fits nothing)
    nice -n 19 python -m bench.effect_coverage --designs moderate-pcl,clustered-iv,clustered-iv-ignored,\
        weak-0.15,weak-0.2,weak-0.3 --n 1000 --seeds 0-199 --batch 5 --jobs 1 --out-dir bench/results/coverage-31
    (moderate-pcl has n = 2000 whatever --n says)
    python bench/docs.py --write
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.registry import load_dataset
from dmlcore.inference.effect_coverage import record_columns, summarize
from dmlcore.runs.average_effect import PCL_GRID, contrast
from dmlcore.store import RunStore, default_store_path
from dmlcore.studies import plan_study, run_study
from dmlcore.studies.runner import _row, result_from_rows
from dmlcore.studies.spec import parse_seeds

WEAK_STRENGTHS = (0.15, 0.2, 0.3)   # linear-iv's instrument between weak (0.1) and strong (1): F about 22, 40, 90 at n = 1000

DESIGNS = {"linear": ("linear-iv", {"iv_strength": 1.0}), "weak": ("linear-iv", {"iv_strength": 0.1}),
           "demand-iv": ("demand-iv", {"noise_scale": "standardized"}), "demand-pcl": ("demand-pcl", {}),
           "nonlinear-iv": ("nonlinear-iv", {}), "hetero-iv": ("hetero-iv", {}),
           **{f"weak-{s:g}": ("linear-iv", {"iv_strength": s}) for s in WEAK_STRENGTHS},
           "moderate-pcl": ("moderate-pcl", {"n": 2000}), "clustered-iv": ("clustered-iv", {}),
           "clustered-iv-ignored": ("clustered-iv", {})}
CLUSTERED = {"clustered-iv": {"cov_type": "clustered", "cluster": "cluster"}}   # grid settings per design
FEW_METHODS = {"clustered-iv-ignored": ["2sls", "dml-cmr"]}   # the clusters ignored: a comparison only


ARMS = ("2sls", "sieve-2sls", "dml-cmr", "naive", "spline-f")   # --methods: spline-f is DML-CMR with the spline f


def parse_arms(text: str) -> tuple[str, ...]:
    """The arms of ``--methods`` (comma-separated names of :data:`ARMS`, "all" for every one), in ARMS' order."""
    if text == "all":
        return ARMS
    names = [a for a in text.split(",") if a]
    unknown = [a for a in names if a not in ARMS]
    if unknown or not names:
        raise SystemExit(f"error: unknown --methods entry {(unknown or [text])[0]!r}; "
                         f"choose from {', '.join(ARMS)} (comma-separated) or all")
    return tuple(a for a in ARMS if a in names)


def spec(designs, seeds, n, learner, folds, arms=ARMS) -> dict:
    """The study: per design, the linear methods and the learner's methods with their own f, and
    DML-CMR with the spline f (only the ``arms`` of :data:`ARMS` asked for)."""
    grids = []
    for name in designs:
        dataset, options = DESIGNS[name]
        data, extra = {"n": n, **options}, CLUSTERED.get(name, {})
        methods = [m for m in FEW_METHODS.get(name, ["2sls", "sieve-2sls", "dml-cmr", "naive"]) if m in arms]
        if methods:
            grids.append({"dataset": dataset, "data": data, "methods": methods, "learner": learner, "folds": folds,
                          **extra})
        if name not in FEW_METHODS and "spline-f" in arms:
            grids.append({"dataset": dataset, "data": data, "methods": ["dml-cmr"], "learner": learner,
                          "folds": folds, "f_model": "sieve", **extra})
    return {"grid": grids, "seeds": list(seeds)}


def studies(designs) -> list[list[str]]:
    """The designs split into studies in which no data set appears twice (the clusters ignored
    and respected are two studies)."""
    first = [d for d in designs if d not in FEW_METHODS]
    return [group for group in (first, [d for d in designs if d in FEW_METHODS]) if group]


def label(row, group=()) -> str:
    """The design's name in the tables, from a fits row of the study of the designs ``group``."""
    if row["dataset"] == "linear-iv":
        strength = float(row.get("iv_strength", 1.0))
        return "linear" if strength >= 1.0 else "weak" if strength <= 0.1 else f"weak-{strength:g}"
    if row["dataset"] == "clustered-iv" and "clustered-iv" not in group:
        return "clustered-iv-ignored"
    return row["dataset"]


def labelled(fits: pd.DataFrame, group) -> pd.DataFrame:
    """The fits of the study of the designs ``group`` with their ``design`` column."""
    return fits.assign(design=fits.apply(label, axis=1, group=tuple(group))) if len(fits) else fits


def with_records(fits: pd.DataFrame) -> pd.DataFrame:
    """``fits`` with the columns read from each stored fit's run record
    (:func:`dmlcore.inference.effect_coverage.record_columns`: first-stage F, the representer bases' estimates,
    the specification spread)."""
    store = RunStore(default_store_path())
    extra = [record_columns(store.fit_record(key) if isinstance(key, str) else None) for key in fits["key"]]
    return pd.concat([fits.reset_index(drop=True), pd.DataFrame(extra)], axis=1)


def write_rows(fits: pd.DataFrame, out_dir: Path) -> None:
    """One CSV of per-fit rows per design (``fits-<design>.csv``), with the record columns."""
    fits = with_records(fits)
    for design, part in fits.groupby("design"):
        part.to_csv(out_dir / f"fits-{design}.csv", index=False)


def summary(out_dir: Path) -> pd.DataFrame:
    """The summary of every row in ``out_dir``."""
    return summarize(pd.concat([pd.read_csv(p) for p in sorted(out_dir.glob("fits-*.csv"))], ignore_index=True))


def regression_rows(seeds, n: int = 2000) -> pd.DataFrame:
    """The confounded regressions' average slope on moderate-pcl, per seed: least squares of y on
    (a, a^2, x) and on (a, a^2, w, x), the slope averaged over the effect's grid of a, against the
    truth (what the issue's targets compare the plug-in bias with)."""
    out = []
    for seed in seeds:
        loaded = load_dataset("moderate-pcl", n=n, seed=seed)
        table, plan = loaded.data.table, contrast(loaded.data)
        truth = loaded.truth.effect(plan.points, plan.weights)
        grid = np.quantile(table["a"], (np.arange(PCL_GRID) + 0.5) / PCL_GRID)
        for name, extra in (("y on a, a^2, x", ["x"]), ("y on a, a^2, w, x", ["w", "x"])):
            design = np.column_stack([np.ones(len(table)), table["a"], table["a"] ** 2, table[extra]])
            coef = np.linalg.lstsq(design, table["y"], rcond=None)[0]
            out.append({"seed": seed, "regression": name, "slope": float(np.mean(coef[1] + 2 * coef[2] * grid)),
                        "truth": truth})
    return pd.DataFrame(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--designs", default=",".join(DESIGNS))
    p.add_argument("--seeds", default="0-199")
    p.add_argument("--batch", type=int, default=25, help="seeds per batch (every design runs each batch)")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--learner", default="gb")
    p.add_argument("--methods", default="all",
                   help=f"arms to fit, comma-separated from {', '.join(ARMS)} (spline-f: DML-CMR with the spline f); "
                        "default all")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out-dir", default="bench/results/coverage")
    p.add_argument("--regression", action="store_true",
                   help="write the confounded regressions' slopes on moderate-pcl (regression-moderate-pcl.csv), fit nothing else")
    p.add_argument("--from-store", action="store_true",
                   help="write the rows of the fits already stored (a run still going, or stopped), fit nothing")
    args = p.parse_args()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    designs = [d for d in args.designs.split(",") if d]
    arms = parse_arms(args.methods)
    if args.regression:
        regression_rows(parse_seeds(args.seeds)).to_csv(out_dir / "regression-moderate-pcl.csv", index=False)
        return
    if args.from_store:
        fits = []
        for group in studies(designs):
            plan = plan_study(spec(group, parse_seeds(args.seeds), args.n, args.learner, args.folds, arms))
            rows = [_row(c, k, plan.stored[k], reused=True) for c, k in zip(plan.configs, plan.keys)
                    if k in plan.stored]
            fits.append(labelled(result_from_rows(rows).fits, group))
        write_rows(pd.concat(fits, ignore_index=True), out_dir)
    else:
        unknown = [d for d in designs if d not in DESIGNS]
        if unknown:
            raise SystemExit(f"error: unknown design {unknown[0]!r}; choose from {', '.join(DESIGNS)}")
        seeds = parse_seeds(args.seeds)
        frames = []
        for i in range(0, len(seeds), args.batch):
            start = time.perf_counter()
            for group in studies(designs):       # one study cannot hold one data set under two covariances
                result = run_study(spec(group, seeds[i:i + args.batch], args.n, args.learner, args.folds, arms),
                                   executor="local", jobs=args.jobs)
                frames.append(labelled(result.fits, group))
                write_rows(pd.concat(frames, ignore_index=True), out_dir)
            print(f"seeds {seeds[i]}-{seeds[min(i + args.batch, len(seeds)) - 1]}: {result.message}, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    with pd.option_context("display.width", 200, "display.max_rows", 200, "display.float_format", "{:.3f}".format):
        print(summary(out_dir))


if __name__ == "__main__":
    main()

"""Append a study's finished fits to a bench CSV (the rows the docs' tables are generated from).

The peers' 20-seed studies and the DML family's bench rows share seeds and data, so one file with
both gives tables with paired wins against DML-CMR and one box plot per design:

    python -m dmlcore study --dataset demand-iv --sizes 1000,2000,5000,10000 --methods kiv \\
        --seeds 0-19 --jobs 2 --out /tmp/kiv
    python -m bench.study_rows /tmp/kiv/fits.csv --out bench/results/authors/peers-demand-iv-sizes.csv
    python bench/docs.py --write     # the docs' tables and box plots from the new rows

Rows of ``--out`` with the same (design, n, seed, method) are replaced, so a rerun does not double them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

COLUMNS = ["dataset", "noise_scale", "iv_strength", "rho", "n", "seed", "method", "learner", "folds",
           "mse", "mse_fresh", "seconds"]


def bench_rows(fits: pd.DataFrame) -> pd.DataFrame:
    """The finished fits of a study's fits.csv in the bench CSV's columns (design columns it lacks left out)."""
    done = fits[fits["status"] == "done"]
    return done[[c for c in COLUMNS if c in done.columns]].reset_index(drop=True)


def merge(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """``old`` with ``new`` appended, rows of ``old`` with the same key as a row of ``new`` dropped."""
    key = [c for c in COLUMNS if c in new.columns and c in old.columns and c not in
           ("learner", "folds", "mse", "mse_fresh", "seconds")]
    stale = old[key].astype(str).apply(tuple, axis=1).isin(set(new[key].astype(str).apply(tuple, axis=1)))
    return pd.concat([old[~stale], new], ignore_index=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("fits", nargs="+", help="a study's fits.csv (one or more)")
    p.add_argument("--out", required=True, help="bench CSV to append to (created if missing)")
    args = p.parse_args()
    new = pd.concat([bench_rows(pd.read_csv(f)) for f in args.fits], ignore_index=True)
    out = Path(args.out)
    rows = merge(pd.read_csv(out), new) if out.exists() else new
    rows.to_csv(out, index=False)
    print(f"{len(new)} rows from {len(args.fits)} file(s); {out} has {len(rows)} rows")


if __name__ == "__main__":
    main()

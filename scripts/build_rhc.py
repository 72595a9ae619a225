"""Build dmlcore/data/files/rhc.csv.gz, the shipped copy of the right heart catheterization data.

Source: ../shared/data/rhc/rhc_raw.csv (Connors et al. 1996; the public Vanderbilt Biostatistics
file, as committed in the DML-CMR authors' repository, MIT licence) and its covariate list
RHC_X_allfeatures_list.csv. Run from the project root: python scripts/build_rhc.py [RAW_DIR].

Coding (all columns numeric, one row per patient, all 5,735 rows):
* swang1: 1 = RHC in the first 24 hours, 0 = none; t3d30: days alive up to day 30 (2-30).
* proxies pafi1, paco21, ph1, hema1 and the other continuous covariates in their raw units.
* Yes/No columns: 1 = Yes; sex: 1 = Female; dnr1: 1 = do-not-resuscitate order.
* cat1, cat2, ca, ninsclas, race, income: one 0/1 column per level except the most frequent
  (cat2's most frequent "level" is no secondary category), named column_level.
* As in the authors' preprocessing: urin1 missing -> 0 with urin1_isna_binary = 1; zero
  (missing) meanbp1, hrt1, resp1, wtkilo1 flagged in *_iszero_binary.
"""

import re
import sys
from pathlib import Path

import pandas as pd

RAW = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/rhc")
OUT = Path(__file__).resolve().parents[1] / "dmlcore" / "data" / "files" / "rhc.csv.gz"
CATEGORICAL = ("cat1", "cat2", "ca", "ninsclas", "race", "income")
YES_NO = ("dnr1", "resp", "card", "neuro", "gastr", "renal", "meta", "hema", "seps", "trauma", "ortho")


def slug(text: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", str(text))).strip("_")


def build(raw: pd.DataFrame, covariates: list[str]) -> pd.DataFrame:
    df = raw.copy()
    df["cat2"] = df["cat2"].fillna("none")
    for col in ("meanbp1", "hrt1", "resp1", "wtkilo1"):
        df[f"{col}_iszero_binary"] = (df[col] == 0).astype(int)
    df["urin1_isna_binary"] = df["urin1"].isna().astype(int)
    df["urin1"] = df["urin1"].fillna(0.0)
    df["swang1"] = (df["swang1"] == "RHC").astype(int)
    df["sex"] = (df["sex"] == "Female").astype(int)
    for col in YES_NO:
        df[col] = (df[col] == "Yes").astype(int)
    out = df[["t3d30", "swang1", "pafi1", "paco21", "ph1", "hema1"]].copy()
    for col in covariates:
        if col in CATEGORICAL:
            levels = df[col].value_counts().index[1:]          # the most frequent level is the reference
            for level in sorted(levels):
                out[f"{col}_{slug(level)}"] = (df[col] == level).astype(int)
        else:
            out[col] = df[col]
    return out


if __name__ == "__main__":
    raw = pd.read_csv(RAW / "rhc_raw.csv")
    covariates = pd.read_csv(RAW / "RHC_X_allfeatures_list.csv")["variable"].tolist()
    table = build(raw, covariates)
    assert table.notna().all().all() and len(table) == 5735
    table.to_csv(OUT, index=False, compression={"method": "gzip", "mtime": 0})
    print(f"{OUT}: {table.shape[0]} rows, {table.shape[1]} columns")

"""The project's own benchmark rows (bench/results/*.csv), summarized for the Learn page."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dmlcore.estimators import METHOD_TITLES
from dmlcore.estimators import METHODS as REGISTRY

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
FILES = ("authors/demand-iv-nn-1000-2000.csv", "authors/demand-iv-nn-5000.csv", "authors/demand-iv-nn-10000.csv",
         "authors/demand-iv-gb.csv", "authors/demand-iv-rf.csv",
         "authors/digits-iv-nn-1000.csv", "authors/digits-iv-nn-5000.csv", "demand-iv-nn.csv",
         "authors/demand-pcl-nn.csv")  # the authors' demand-iv design (nn, gb, rf), digits-iv, the raw design, PCL
METHODS = tuple(name for name, entry in REGISTRY.items() if entry.second_stage)   # the DML-CMR family, as in the rows


def measured(files=FILES, folder: Path = RESULTS) -> pd.DataFrame:
    """Median MSE [quartiles] of DML-CMR, CE-DML-CMR and the naive plug-in per benchmark and N,
    with the number of seeds on which the naive plug-in beat DML-CMR (same data, paired):
    ``naive wins`` of ``paired seeds``.

    Reads the raw per-fit rows that docs/benchmarks.md reports; files that are missing are
    skipped (an empty table when none is there). ``design`` is the rows' ``noise_scale`` column;
    demand-iv rows without one were measured before that option existed, with raw noise.
    """
    frames = []
    for name in files:
        path = Path(folder) / name
        if path.exists():
            frames.append(pd.read_csv(path).assign(file=name))
    if not frames:
        return pd.DataFrame()
    rows = pd.concat(frames, ignore_index=True)
    rows = rows[rows["method"].isin(METHODS)]
    out = []
    scale = rows["noise_scale"] if "noise_scale" in rows else pd.Series(pd.NA, index=rows.index)
    rows["design"] = scale.fillna(rows["dataset"].map({"demand-iv": "raw"})).fillna("")
    for (file, dataset, design, learner, n), part in rows.groupby(["file", "dataset", "design", "learner", "n"],
                                                                  sort=False):
        entry = {"benchmark": dataset, "design": design, "learners": learner, "N": int(n),
                 "file": f"bench/results/{file}"}
        for method in METHODS:
            mse = part.loc[part["method"] == method, "mse"]
            entry[METHOD_TITLES[method]] = (f"{mse.median():.3g} [{mse.quantile(0.25):.3g}, {mse.quantile(0.75):.3g}]"
                                            if len(mse) else "")
        wide = part.pivot_table(index="seed", columns="method", values="mse")
        if {"naive", "dml-cmr"} <= set(wide.columns):
            paired = wide[["naive", "dml-cmr"]].dropna()
            entry["naive wins"] = int((paired["naive"] < paired["dml-cmr"]).sum())
            entry["paired seeds"] = len(paired)
        out.append(entry)
    return pd.DataFrame(out)

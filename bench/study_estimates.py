"""How good is a study's cost estimate? Estimated against actual seconds, after a first study of a kind.

For each case a first study stores its fits (and their timings) in a fresh run store; then a
second study is planned (``plan_study``: the estimate the Study page shows) and run, and its
estimate is compared with the seconds its fits actually took (the workers' seconds: data, fit,
diagnostics, held-out refits) and with the wall clock. Rows are appended to
bench/results/study-estimates.csv.

    nice -n 10 .venv/bin/python -m bench.study_estimates
"""

from __future__ import annotations

import csv
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = [  # (name, first study, second study): the second is estimated from the first's timings
    ("card, same configs, new seeds",
     dict(dataset="card", methods=["2sls", "dml-cmr"], learner="linear", folds=2, seeds="0-1"),
     dict(dataset="card", methods=["2sls", "dml-cmr"], learner="linear", folds=2, seeds="2-7")),
    ("demand-iv, new N (scaled by rows)",
     dict(dataset="demand-iv", data={"n": [500, 1000]}, methods=["naive", "2sls"], learner="gb", epochs=30,
          seeds="0-1"),
     dict(dataset="demand-iv", data={"n": [2000]}, methods=["naive", "2sls"], learner="gb", epochs=30, seeds="0-3")),
]
OUT = ROOT / "bench" / "results" / "study-estimates.csv"


def main() -> None:
    home = tempfile.mkdtemp(prefix="dmlcore-estimates-")
    os.environ["DMLCORE_HOME"] = home
    from dmlcore.studies import plan_study, run_study
    from dmlcore.store import RunStore, default_store_path

    store = RunStore(default_store_path())
    rows = []
    for name, first, second in CASES:
        run_study(first, store=store)
        plan = plan_study(second, store)
        start = time.perf_counter()
        result = run_study(second, store=store)
        wall = time.perf_counter() - start
        actual = float(result.fits["worker_seconds"].sum())
        row = {"case": name, "fits": len(plan.to_run), "estimated_fits": plan.estimated,
               "estimate_s": round(plan.estimate_seconds or float("nan"), 2), "actual_s": round(actual, 2),
               "ratio": round((plan.estimate_seconds or float("nan")) / actual, 3), "wall_s": round(wall, 2),
               "load": round(os.getloadavg()[0], 1), "date": time.strftime("%Y-%m-%d %H:%M %Z")}
        rows.append(row)
        print(row, flush=True)
    new = not OUT.exists()
    with OUT.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()

"""What Streamlit's collection after each script run (runner.postScriptGC) costs in the dashboard's
server process, with and without the freeze the dashboard does once (dashboard/state.py).

Imports what the server imports, times gc.collect(2) (best of 5), freezes, times it again, then
keeps one demo batch's runs in memory (as the job registry does) and times it once more.

    python -m bench.perf.gc_cost --out bench/results/gc-cost.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path



def collect_ms() -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        gc.collect(2)
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import dashboard.plan  # noqa: F401  (what the pages import, through the dashboard package)
    import dashboard.results  # noqa: F401
    import dashboard.state  # noqa: F401
    import dmlcore.plots  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    from dashboard.plan import DEMO_DATA, DEMO_SETTINGS
    from dmlcore.data.registry import load_dataset
    from dmlcore.runs import fit_run
    from dmlcore.estimators import FitSettings, for_method

    row = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
           "load": os.getloadavg(), "command": " ".join([Path(sys.executable).name, *sys.argv])}
    row["objects_after_imports"] = len(gc.get_objects())
    row["collect_ms_after_imports"] = collect_ms()
    gc.freeze()
    row["collect_ms_frozen"] = collect_ms()
    params = {k: v for k, v in DEMO_DATA.items() if k != "name"}
    loaded = load_dataset(DEMO_DATA["name"], **params)
    runs = []
    for method in DEMO_SETTINGS["est_methods"]:
        shared = FitSettings(learner=DEMO_SETTINGS["est_learner"], folds=DEMO_SETTINGS["est_folds"])
        run = fit_run(loaded.data, method, for_method(shared, method), truth=loaded.truth)
        run.curve()
        runs.append(run)
    row["objects_tracked_with_one_demo_batch"] = len(gc.get_objects())
    row["collect_ms_frozen_with_one_demo_batch"] = collect_ms()
    print(json.dumps(row, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()

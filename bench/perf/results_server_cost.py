"""The server's CPU for the demo's Linear IV box on Results: refitted in the page's run, or read off the run (issue 47).

The Results page shows 2SLS under its covariance choice with the first stage and the Anderson-Rubin set. It
used to refit them in the page's own run for every session (``dashboard.results.linear_iv_inference``), with
numpy's BLAS at its default threads; now a 2SLS run fitted under the chosen covariance gives them from its record
(``linear_iv_from_record``), and a refit, for another choice, runs BLAS on one thread
(``dmlcore.process.one_blas_thread``). This times the three on the demo's data (demand-iv, 2,000 rows, seed 0)
in a thread other than the main one, as a Streamlit script thread, CPU seconds of the process (``time.process_time``:
every thread, BLAS's included), ``--repeats`` times each, alternating. Other jobs on the machine change these
(BLAS's threads wait for cores); the row records the load before and after.

    python -m bench.perf.results_server_cost --out bench/results/results-server-cost-<date>.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from pathlib import Path

from threadpoolctl import threadpool_info

from bench.perf.default_fit import commit, machine


def in_thread(fn):
    """CPU seconds (process) and wall seconds of ``fn()`` run in a new thread, as a page's script run is."""
    out = {}

    def run():
        cpu, wall = time.process_time(), time.perf_counter()
        out["value"] = fn()
        out["cpu_s"], out["wall_s"] = time.process_time() - cpu, time.perf_counter() - wall

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from dashboard import results
    from dashboard.plan import DEMO_DATA
    from dashboard.training import dataset_from_registry
    from dmlcore.runs import fit_run

    load_before = os.getloadavg()
    params = {k: v for k, v in DEMO_DATA.items() if k != "name"}
    data = dataset_from_registry(DEMO_DATA["name"], **params).suggested
    run = fit_run(data, "2sls", heldout_folds=0, debias=False)      # the demo's 2SLS run, as fitted
    cov = run.record["config"]["cov_type"]
    def before():
        """linear_iv_inference as it was: BLAS at its default threads (the one-thread scopes left out)."""
        from contextlib import nullcontext

        from dashboard import fits
        kept = fits.one_blas_thread, results.one_blas_thread
        fits.one_blas_thread = results.one_blas_thread = nullcontext
        try:
            return results.linear_iv_inference(data, cov, None)
        finally:
            fits.one_blas_thread, results.one_blas_thread = kept

    ways = {"refit_default_blas": before, "refit_one_blas_thread": lambda: results.linear_iv_inference(data, cov, None),
            "from_record": lambda: results.linear_iv_from_record(run.record, cov, None)}
    what = {"refit_default_blas": "refitted in the page's run, BLAS at its default threads (before)",
            "refit_one_blas_thread": "refitted in the page's run on one BLAS thread (now, for another covariance choice)",
            "from_record": "read off the 2SLS run's record (now, the demo as fitted)"}
    times = {name: [] for name in ways}
    values = {}
    for _ in range(args.repeats):
        for name, fn in ways.items():
            got = in_thread(fn)
            times[name].append({"cpu_s": got["cpu_s"], "wall_s": got["wall_s"]})
            values[name] = got["value"]
    same = {name: (value.wald.ci_lower, value.wald.ci_upper, value.ar.to_dict(), value.first.to_dict())
            == (values[next(iter(ways))].wald.ci_lower, values[next(iter(ways))].wald.ci_upper,
                values[next(iter(ways))].ar.to_dict(), values[next(iter(ways))].first.to_dict())
            for name, value in values.items()}
    row = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": machine(), **commit(),
           "command": f"python -m bench.perf.results_server_cost --repeats {args.repeats} --out {args.out}",
           "load_before": load_before, "load_after": os.getloadavg(),
           "blas": [{k: lib[k] for k in ("filepath", "num_threads", "version")} for lib in threadpool_info()
                    if lib["user_api"] == "blas"],
           "repeats": args.repeats, "data": dict(DEMO_DATA, **params), "cov_type": cov,
           "ways": {name: {"what": what[name], "runs": t, "median_cpu_s": statistics.median(r["cpu_s"] for r in t),
                           "median_wall_s": statistics.median(r["wall_s"] for r in t),
                           "same_numbers_as_before": same[name]} for name, t in times.items()}}
    print(json.dumps(row, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""The Learn page's experiments at the page's default settings: the numbers docs/teaching.md quotes.

    .venv/bin/python -m bench.teaching [--out bench/results/teaching] [--skip-slow]

Writes one CSV per experiment (its summary table; the rows of the Wald data set and of the
comparisons too) and ``run.json`` (per experiment: seconds, date, machine, load average). The
closed-form experiments take seconds; those that fit the tool's estimators (the perturbation
experiment, the two comparisons, the ticket-demand fits and bands; ``--skip-slow`` leaves them
out) take a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import pandas as pd
from threadpoolctl import threadpool_limits

from dmlcore.data.registry import load_dataset
from dmlcore.estimators import FitSettings, for_method
from dmlcore.runs import fit_run
from dmlcore.teaching import demand, forbidden, iv, nuisance, pliv, proximal, robust
from dmlcore.teaching.measured import measured

FAST = {
    "wald": lambda: iv.wald(rho=0.9, seed=0),
    "late": lambda: iv.late(compliers=0.4, always=0.3, effect_always=3.0),
    "confounding": lambda: iv.confounding(pi=1.0, n=500),
    "weak-4-instruments": lambda: iv.weak_instruments(instruments=4, rho=0.9),
    "weak-1-instrument": lambda: iv.weak_instruments(instruments=1, rho=0.9),
    "exclusion": lambda: iv.exclusion(pi=0.5),
    "robust-heteroskedastic": lambda: robust.robust_inference("heteroskedastic"),
    "robust-clustered": lambda: robust.robust_inference("clustered"),
    "overid": lambda: robust.overidentification(),
    "forbidden": lambda: forbidden.forbidden_regression(sigma=0.8, n=1000),
    "proximal": lambda: proximal.proximal(proxy_noise=1.0, kappa=0.0, n=1000),
    "proximal-kappa-0.2": lambda: proximal.proximal(proxy_noise=1.0, kappa=0.2, n=1000),
    "late-selection": lambda: _late_selection(),
    "pliv-second-order": lambda: pliv.second_order(),
    "pliv-shipped": lambda: pliv.cached(),
}


def _late_selection():
    """The LATE lesson's decomposition of treated minus untreated (ATT and the gap in U)."""
    p = iv.late(compliers=0.4, always=0.3, effect_always=3.0).params
    return pd.DataFrame([{k: p[k] for k in ("ate", "late", "att", "baseline_gap")}])
def _demand():
    fits = demand.demand_fits(1.0, 0.9, 1000, 0)
    return pd.DataFrame([{"fit": name, "mse": f["mse"], "slope": f["slope"], "true slope": fits["true_slope"],
                          "first-stage F": fits["f_stat"]} for name, f in fits["fits"].items()])


def _demand_rho0():
    fits = demand.demand_fits(1.0, 0.0, 1000, 0)
    return pd.DataFrame([{"fit": name, "mse": f["mse"], "slope": f["slope"], "true slope": fits["true_slope"]}
                         for name, f in fits["fits"].items()])


def _bands():
    rows = []
    for strength in demand.BAND_STRENGTHS:
        r = demand.band_fit(strength, 0.9, 1000, 0)
        rows.append({"instrument strength": strength, "first-stage F": r["f_stat"],
                     "band width (f, test grid)": r["width"], "coverage (f, test grid)": r["coverage"],
                     "band width (average curve)": r["curve_width"]})
    return pd.DataFrame(rows)


def _demo():
    """The Home page's demo (dashboard.plan.DEMO_DATA / DEMO_SETTINGS): four fits on one data set."""
    loaded = load_dataset("demand-iv", n=2000, seed=0, rho=0.9, iv_strength=1.0)
    rows = []
    for method in ("dml-cmr", "naive", "2sls", "regression"):
        # each method takes the settings it reads (for_method): 2SLS none of the learner's
        run = fit_run(loaded.data, method, for_method(FitSettings(learner="gb", folds=5, seed=0), method),
                      truth=loaded.truth)
        rows.append({"method": method, "mse": run.record["mse"], "mse_fresh": run.record["metrics"].get("mse_fresh"),
                     "seconds": run.record["seconds"]})
    return pd.DataFrame(rows)


SLOW = {
    "demo": _demo,
    "demand": _demand,
    "demand-rho-0": _demand_rho0,
    "demand-bands": _bands,
    "orthogonality": lambda: nuisance.orthogonality(),
    "compare-simple": lambda: nuisance.compare_methods("simple", draws=20),
    "compare-overfit": lambda: nuisance.compare_methods("overfit", draws=20),
    "crossfit-swap": lambda: nuisance.swap_nuisances("overfit", seeds=5),
    "crossfit-repeated": lambda: nuisance.repeated_crossfit("simple"),
    "demand-band-coverage": lambda: demand.band_coverage(seeds=10),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "teaching"))
    parser.add_argument("--skip-slow", action="store_true", help="only the closed-form experiments")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these experiments (names as the CSVs)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    todo = dict(FAST) if args.skip_slow else {**FAST, **SLOW}
    if args.only:
        todo = {name: run for name, run in {**FAST, **SLOW}.items() if name in args.only}
    with threadpool_limits(limits=1, user_api="openmp"):
        for name, run in todo.items():
            start = time.perf_counter()
            exp = run()
            seconds[name] = round(time.perf_counter() - start, 2)
            (exp if isinstance(exp, pd.DataFrame) else exp.summary).to_csv(out / f"{name}.csv", index=False)
            if name in ("wald", "compare-simple", "compare-overfit"):
                exp.draws.to_csv(out / f"{name}-rows.csv", index=False)
            print(f"{name}: {seconds[name]} s", flush=True)
    measured().to_csv(out / "measured.csv", index=False)
    log = out / "run.json"
    runs = json.loads(log.read_text()) if log.exists() else {}
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    date = time.strftime("%Y-%m-%d %H:%M:%S%z")
    for name, value in seconds.items():   # one entry per experiment: its latest run
        runs[name] = {"seconds": value, "date": date, "machine": machine, "load average": os.getloadavg()[0]}
    log.write_text(json.dumps(runs, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Would auto choose the same nuisances if it scored one pilot fold instead of two (PILOT 1, a speed cut)?

For each seed the DML-CMR default fit's pilot is made as the fit makes it (``SelectedOutcome`` /
``SelectedSampler.fit_pilot`` on the run's K = 10 folds, the learner nn: candidates nn, gb, gb-small) and its
per-fold held-out losses read: the choice of today's rule (the lowest loss pooled over the first 2 folds' rows)
and the choice the first fold's rows alone would make come from the same fits. Where both choose the same
candidate for both nuisances, the fit with PILOT = 1 is the fit of today (the chosen candidate is then fitted on
every fold either way), so its MSE is the same; only the seeds where they differ could move. No full fit is made.
The boosters' first-fold models are the same fits either way; the network's are not (its fold models train
together, from one generator), so a network's first-fold loss here is close to, not exactly, what a one-fold
pilot would score: ``--fits`` makes both whole fits (the real one-fold pilot) for the seeds named.

    python -m bench.pilot_one_fold --n 2000 --seeds 0-9 --out bench/results/perf/pilot-one-fold.jsonl
    python -m bench.pilot_one_fold --n 2000 --fits 2,5      # DML-CMR's MSE with each pilot where they differ

One JSON line per seed and nuisance, written as it finishes, with the command, date, machine and load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench.perf.default_fit import commit, machine
from dmlcore.data.registry import load_dataset
from dmlcore.estimators.dml import DMLCMR, make_folds
from dmlcore.process import default_threads, fit_threads
from dmlcore.progress import Monitor
from threadpoolctl import threadpool_limits


def pilot_choices(n: int, seed: int, dataset: str = "demand-iv") -> list[dict]:
    """Per nuisance: the candidates' per-fold pilot losses, today's choice and the first fold's."""
    data = load_dataset(dataset, n=n, seed=seed).data
    est = DMLCMR(learner="nn", folds=10, seed=seed)
    arr = data.cmr()
    folds = make_folds(arr.n, 10, seed)
    train_sets = [np.setdiff1d(np.arange(arr.n), rows) for rows in folds]
    out = []
    for role, target in (("s", arr.y), ("g", arr.modelled)):
        model = est._nuisance(role, "auto", data, arr.conditioning_names, None, "cpu")
        start = time.process_time()
        with fit_threads(), threadpool_limits(limits=default_threads()):     # as a fit runs
            model.fit_pilot(arr.conditioning, target, train_sets, Monitor())
        per_fold, names = model._state["per_fold"], model._state["names"]
        rows = [len(part) for part in model._state["scored_rows"]]
        out.append({"role": role, "candidates": names, "loss_per_fold": (per_fold / np.array(rows)[:, None]).tolist(),
                    "choice_pilot_2": names[int(np.argmin(per_fold.sum(0)))],
                    "choice_pilot_1": names[int(np.argmin(per_fold[0]))],
                    "cpu_seconds": round(time.process_time() - start, 2)})
    return out


def mse_both_rules(n: int, seed: int, dataset: str = "demand-iv") -> dict:
    """DML-CMR's MSE (the default fit, debiased effect off: it does not move f) with auto's pilot of 2 folds and
    of 1: the same fit but for the choice (the selection's ``pilot``)."""
    from dmlcore.learners.select import _Selection
    from dmlcore.runs import fit_run

    loaded = load_dataset(dataset, n=n, seed=seed)
    out = {}
    defaults = _Selection.__init__.__defaults__
    try:
        for pilot in (2, 1):
            _Selection.__init__.__defaults__ = (defaults[0], pilot)    # (seed, pilot)
            run = fit_run(loaded.data, "dml-cmr", truth=loaded.truth, learner="nn", folds=10, seed=seed, jobs=1,
                          debias=False)
            out[f"pilot_{pilot}"] = {"mse": run.record["mse"],
                                     "choice": {r: v["choice"] for r, v in run.record["nuisances"].items()}}
    finally:
        _Selection.__init__.__defaults__ = defaults
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seeds", default="0-9", help="first-last")
    parser.add_argument("--dataset", default="demand-iv")
    parser.add_argument("--out", default="bench/results/perf/pilot-one-fold.jsonl")
    parser.add_argument("--fits", help="comma list of seeds: fit DML-CMR with both pilots and record the MSE "
                                       "(for the seeds whose choices differ)")
    args = parser.parse_args(argv)
    if args.fits:
        out = Path(args.out)
        for seed in (int(x) for x in args.fits.split(",")):
            load = os.getloadavg()[0]
            row = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), **commit(),
                   "command": "python -m bench.pilot_one_fold " + " ".join(sys.argv[1:] if argv is None else argv),
                   "dataset": args.dataset, "n": args.n, "seed": seed, "fits": mse_both_rules(args.n, seed, args.dataset),
                   "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}
            with out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(seed, row["fits"], flush=True)
        return 0
    lo, hi = (int(x) for x in args.seeds.split("-"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.pilot_one_fold " + " ".join(sys.argv[1:] if argv is None else argv)
    for seed in range(lo, hi + 1):
        load = os.getloadavg()[0]
        for entry in pilot_choices(args.n, seed, args.dataset):
            row = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), **commit(),
                   "command": command, "dataset": args.dataset, "n": args.n, "seed": seed, **entry,
                   "agree": entry["choice_pilot_1"] == entry["choice_pilot_2"], "load_before": round(load, 2),
                   "load_after": round(os.getloadavg()[0], 2)}
            with out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(seed, entry["role"], entry["choice_pilot_2"], entry["choice_pilot_1"], entry["cpu_seconds"],
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

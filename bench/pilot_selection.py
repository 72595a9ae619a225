"""Does ``auto`` choose the same nuisance when it scores the pilot folds only as when it scores every fold?

``auto`` (dmlcore.learners.select) fits its candidates on the first PILOT fold models only, scores them on
those folds' held-out rows, and fits every fold of the chosen one; before, every candidate's every fold
model was fitted and scored. Where both make the same choice for a fold, that fold's nuisance is the same
fitted model (tests/test_select.py), so the question is how often they agree, and what the pilot saves.

Per (design, seed) both nuisances of DML-CMR with the network as the learner (candidates nn, gb,
gb-small) are selected four times on the same data: with K folds (the run's folds) and with one training
set (CE-DML-CMR and the naive plug-in: inner folds), each by scoring every fold (``every``) and by the
pilot (``pilot``). Rows (CSV, appended): the design, the setting (``kfold`` / ``one-set``), the role
(``s`` / ``g``), the rule, the choice per fold, the held-out losses and the selection's seconds (every
candidate fit it made). Seeds outside the benchmarks' 0-19.

    python -m bench.pilot_selection --designs demand-iv,demand-iv-0.4,demand-pcl --n 1000,5000 \\
        --seeds 100-105 --jobs 2 --out bench/results/pilot-selection.csv

docs/benchmarks.md ("The default fit's time") shows the agreement (``python bench/docs.py --write``).
Rows of rule ``pilot-per-fold`` were made by a first version of the pilot, in which a pilot fold's model
took the choice of the other pilot folds' rows (their folds outside the pilot got today's choice), and
which scored two of the five inner folds with one training set; today that setting scores every inner
fold under both rules, so its rows of a new run are the same twice.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.csv_rows import append
from dmlcore.data.registry import load_dataset
from dmlcore.estimators.dml import DMLCMR, make_folds
from dmlcore.executors import get_executor
from dmlcore.learners.select import PILOT
from dmlcore.studies.spec import parse_seeds

DESIGNS = {"demand-iv": ("demand-iv", {}), "demand-iv-0.4": ("demand-iv", {"iv_strength": 0.4}),
           "demand-pcl": ("demand-pcl", {})}
RULES = {"every": None, "pilot": PILOT}


def one(task: dict) -> list[dict]:
    dataset, options = DESIGNS[task["design"]]
    data = load_dataset(dataset, n=task["n"], seed=task["seed"], **options).data
    arr = data.cmr()
    n = arr.n
    folds = make_folds(n, task["folds"], task["seed"])
    settings = {"kfold": [np.setdiff1d(np.arange(n), rows) for rows in folds], "one-set": [np.arange(n)]}
    est = DMLCMR("nn", task["folds"], seed=task["seed"], device="cpu")
    rows = []
    for setting, train_sets in settings.items():
        for role, target in (("s", arr.y), ("g", arr.modelled)):
            for rule, pilot in RULES.items():
                model = est._nuisance(role, "auto", data, arr.conditioning_names, None, "cpu")
                model.pilot = pilot
                start = time.perf_counter()
                model.fit(arr.conditioning, target, train_sets, None)
                seconds = time.perf_counter() - start
                record = model.selection_
                rows.append({"design": task["design"], "n": n, "seed": task["seed"], "folds": task["folds"],
                             "setting": setting, "role": role, "rule": rule, "scored_folds": record["scored_folds"],
                             "choice": record["choice"], "choice_per_fold": "/".join(record["choice_per_fold"]),
                             **{f"loss_{k}": v for k, v in record["heldout_loss"].items()},
                             "seconds": round(seconds, 2)})
                print(f"  {task['design']} n={n} seed={task['seed']} {setting} {role} {rule}: "
                      f"{record['choice']} ({seconds:.1f} s)", flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--designs", default=",".join(DESIGNS))
    p.add_argument("--n", default="1000,5000")
    p.add_argument("--seeds", default="100-105")
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    tasks = [dict(design=d, n=int(n), seed=seed, folds=args.folds) for n in args.n.split(",")
             for seed in parse_seeds(args.seeds) for d in args.designs.split(",")]
    with get_executor("local", args.jobs, threads=1) as executor:   # one core per task (boosting's OpenMP too)
        for _, rows in executor.map(one, tasks):
            if isinstance(rows, Exception):
                raise rows
            append(args.out, rows)


if __name__ == "__main__":
    main()

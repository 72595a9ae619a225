"""DML-CMR, CE-DML-CMR and the naive plug-in on the 20 pre-generated IHDP replicates.

Scored as the authors did: MSE of f-hat(t1, x) against v1 on each replicate's val.csv.
Needs ../shared/data/ihdp (not part of the product).

    python -m bench.ihdp --root ../shared/data/ihdp/3000_5_6_2_IHDP_n_0.1 --out bench/results/ihdp-nn.csv
"""

import argparse
import csv


from dmlcore.cli import summarize
from dmlcore.data.ihdp import list_replicates, load_replicate
from dmlcore.estimators import FitSettings, for_method
from dmlcore.runs import fit_run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--methods", default="dml-cmr,ce-dml-cmr,naive")
    parser.add_argument("--learner", default="nn")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows = []
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["replicate", "n", "method", "learner", "mse", "seconds"])
        writer.writeheader()
        for folder in list_replicates(args.root):
            sim = load_replicate(folder)
            for method in args.methods.split(","):
                shared = FitSettings(learner=args.learner, folds=args.folds, seed=0)
                rec = fit_run(sim.data, method, for_method(shared, method), truth=sim.truth, dataset="ihdp").record
                row = {"replicate": folder.name, "n": rec["n"], "method": method, "learner": args.learner,
                       "mse": rec["mse"], "seconds": rec["seconds"]}
                writer.writerow(row)
                handle.flush()
                rows.append(row)
                print(f"  replicate {folder.name} {method}: mse={rec['mse']:.4f} ({rec['seconds']:.1f} s)", flush=True)
    print(summarize(rows))


if __name__ == "__main__":
    main()

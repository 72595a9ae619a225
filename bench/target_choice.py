"""A pilot of DML-CMR's target choice of nuisances (``nuisance_choice="target"``) on demand-iv.

Per (seed, IV strength) of demand-iv (the authors' design, as bench.nuisance_choice draws it), with the
network learner and K folds:

* ``target``: DML-CMR with ``nuisance_choice="target"`` (dmlcore.estimators.nuisance_target): its choice
  of pair, the criterion per pair (``tloss_<s>|<g>``, projected residual / Var(Y)) and the auto
  candidates' own held-out losses, all from its run record (``nuisance_selection_``);
* every candidate pair the criterion judged (outcome model nn / gb / gb-small times distribution model
  nn / the energy score's choice), each a whole DML-CMR fit with that pair's nuisances fitted on every
  fold (each candidate fitted once per seed on the same folds and reused, bench.error_budget), its true
  MSE on the grid (``mse_<s>|<g>``). These fits exist only to grade the criterion: the oracle pair is the
  one with the lowest true MSE, which no fit of the tool can know;
* today's ``auto`` (each nuisance by its own held-out loss: the pair of the two own choices) and the
  network for both (``nn|nn``), both among the pairs.

One row per (seed, strength): ``mse_target`` (the fit with the target's choice), ``mse_auto``,
``mse_nn``, ``mse_oracle``, the choices, whether the target picked the oracle's pair, and the target
run's own MSE (``mse_target_run``; equal to its pair's whole fit when the reuse is exact). A pilot: the
benchmark's 20 seeds are not run here, and settings are chosen on seeds outside 0-19 (100+).

    nice -n 10 python -m bench.target_choice --seeds 100-104 --iv-strength 1.0,0.4 --n 2000 --folds 5 \\
        --out bench/results/target-choice-pilot/demand-iv-nn-2000.csv

docs/error-budget.md shows the rows (``python bench/docs.py --write``; renderer in bench/docgen/nuisance.py).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from pathlib import Path

import numpy as np

from bench.csv_rows import append
from bench.error_budget import _ReusedOutcome, _ReusedSampler
from dmlcore.data.simulate import simulate_demand_iv
from dmlcore.estimators.dml import DMLCMR
from dmlcore.learners.select import CANDIDATES
from dmlcore.studies.spec import parse_seeds


def one(task: dict) -> dict:
    seed, folds, n = task["seed"], task["folds"], task["n"]
    sim = simulate_demand_iv(n, seed, iv_strength=task["iv_strength"])
    start = time.perf_counter()
    target = DMLCMR("nn", folds, seed=seed, device="cpu", nuisance_choice="target").fit(sim.data)
    target_seconds = time.perf_counter() - start
    sel = target.nuisance_selection_
    own = {role: min((k for k, v in sel[role]["heldout_loss"].items() if v is not None),
                     key=lambda k: sel[role]["heldout_loss"][k]) for role in ("s", "g")}
    losses = sel["s"]["target_loss"]
    pairs = [tuple(key.split("|")) for key in losses]
    chosen = tuple(sel["s"]["target_pair"].split("|"))
    # every candidate's nuisances on every fold, once (the same folds: they depend on the seed only)
    needed = sorted({a for a, _ in pairs} | {b for _, b in pairs})
    fitted = {}
    for label in needed:
        kind, settings = CANDIDATES[label]
        fitted[label] = DMLCMR(kind, folds, seed=seed, device="cpu", outcome_learner=kind, sampler=kind,
                               f_model="linear" if kind != "nn" else None,
                               nuisance_params=settings or None).fit(sim.data)
    sizes = [n - len(rows) for rows in fitted[needed[0]].folds_]
    mse = {}
    for a, b in pairs:
        if (a, b) == ("nn", "nn"):
            est = fitted["nn"]
        else:
            est = DMLCMR("nn", folds, seed=seed, device="cpu",
                         outcome_learner=_ReusedOutcome(fitted[a].s_model_, sizes),
                         sampler=_ReusedSampler(fitted[b].g_model_, sizes)).fit(sim.data)
        mse[(a, b)] = sim.truth.score(est)["mse"]
    if ("nn", "nn") not in mse:
        mse[("nn", "nn")] = sim.truth.score(fitted["nn"])["mse"]
    auto_pair = (own["s"], own["g"])
    if auto_pair not in mse:       # the energy score's choice is always a pair's distribution model
        raise RuntimeError(f"today's auto pair {auto_pair} is not among the judged pairs {pairs}")
    oracle = min(pairs, key=lambda p: mse[p])
    row = {"dataset": "demand-iv", "iv_strength": task["iv_strength"], "n": n, "folds": folds, "seed": seed,
           "learner": "nn", "method": "dml-cmr",
           "target_pair": "|".join(chosen), "auto_pair": "|".join(auto_pair), "oracle_pair": "|".join(oracle),
           "target_is_oracle": chosen == oracle, "auto_is_oracle": auto_pair == oracle,
           "mse_target": mse[chosen], "mse_auto": mse[auto_pair], "mse_nn": mse[("nn", "nn")],
           "mse_oracle": mse[oracle], "mse_target_run": sim.truth.score(target)["mse"],
           "target_seconds": target_seconds,
           **{f"mse_{a}|{b}": mse[(a, b)] for a, b in pairs},
           **{f"tloss_{k}": v for k, v in losses.items()},
           **{f"s_loss_{k}": v for k, v in sel["s"]["heldout_loss"].items()},
           **{f"g_loss_{k}": v for k, v in sel["g"]["heldout_loss"].items()},
           **task["meta"]}
    print(f"strength={task['iv_strength']} seed={seed}: target {row['target_pair']} {row['mse_target']:.4f}, "
          f"auto {row['auto_pair']} {row['mse_auto']:.4f}, nn|nn {row['mse_nn']:.4f}, oracle {row['oracle_pair']} "
          f"{row['mse_oracle']:.4f} (target run {row['mse_target_run']:.4f}, {target_seconds:.0f} s)", flush=True)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="100-104")
    p.add_argument("--iv-strength", default="1.0,0.4")
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for seed in parse_seeds(args.seeds):
        for k in args.iv_strength.split(","):
            meta = {"command": "python -m bench.target_choice " + " ".join(
                        f"--{name.replace('_', '-')} {value}" for name, value in vars(args).items()),
                    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    "machine": f"{platform.node()} ({os.cpu_count()} cores, shared)",
                    "load": f"{os.getloadavg()[0]:.1f}"}
            append(out, [one(dict(seed=seed, iv_strength=float(k), n=args.n, folds=args.folds, meta=meta))])


if __name__ == "__main__":
    main()

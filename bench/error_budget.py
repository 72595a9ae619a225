"""Error budget of DML-CMR on demand-iv: which nuisance carries the error?

For each seed and learner, DML-CMR is fitted four times on the same data: the outcome model
s(c) = E[Y | C] learned or the oracle (the design's truth, ``GroundTruth.oracle_outcome``) times
the distribution model of price given C learned or the oracle (``oracle_sampler``). The learned
nuisances are fitted once per (seed, learner), in the learned x learned fit, and the same fitted
fold models serve the mixed cells: the four fits share folds, draws' random numbers and f's seed,
so each difference between cells is the part one nuisance carries, paired on the seed. f is the
learner's own second stage (nn: a network; gb: boosting of the score).

Every fit is one row of ``--out`` (CSV, appended; a (learner, seed, cell) already there is
skipped): the design, the cell, the protocol's ``mse`` (2,800-point grid) and ``mse_fresh``, the
seconds of that fit (in a mixed cell: f only, the nuisances were reused), and what the nuisances
got wrong, on the protocol's scale (sales / 158), over every row, cross-fitted:

* ``s_mse``: mean (s-hat(c) - s(c))^2; ``s_slope``: cov(s-hat, s) / var(s) (< 1: shrunk to the mean);
  ``s_heldout``: mean (y - s-hat(c))^2 (the held-out loss a user can see, no truth needed);
* ``g_mean_mse``: mean (mean of the row's draws - E[p | c])^2, price units; ``g_sd``: the mean
  within-row sd of the draws (the truth: 1).

    python -m bench.error_budget --learners nn,gb --seeds 0-19 --n 5000 --folds 10 --jobs 2 \\
        --out bench/results/error-budget-demand-iv.csv

docs/error-budget.md shows the rows as tables (``python bench/docs.py --write``; renderers in
bench/docgen/nuisance.py).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.simulate import Y_STD, demand_iv_price_mean, simulate_demand_iv
from dmlcore.estimators.dml import DMLCMR
from dmlcore.learners.base import ConditionalSampler, OutcomeLearner
from dmlcore.studies.spec import parse_seeds

CELLS = (("learned", "learned"), ("oracle", "learned"), ("learned", "oracle"), ("oracle", "oracle"))


def _check_folds(train_sets, sizes):
    if [len(r) for r in train_sets] != sizes:
        raise RuntimeError("the reused nuisance was fitted on other folds")


class _ReusedOutcome(OutcomeLearner):
    """The outcome model an estimator already fitted on the same folds (its ``s_model_``)."""

    name = "learned"

    def __init__(self, fitted, train_sizes):
        self.fitted, self.train_sizes = fitted, train_sizes

    def fit(self, C, y, train_sets, monitor):
        _check_folds(train_sets, self.train_sizes)
        return self

    def predict(self, k, C):
        return self.fitted.predict(k, C)


class _ReusedSampler(ConditionalSampler):
    """The distribution model an estimator already fitted on the same folds (its ``g_model_``)."""

    name = "learned"

    def __init__(self, fitted, train_sizes):
        self.fitted, self.train_sizes = fitted, train_sizes

    def fit(self, C, X, train_sets, monitor):
        _check_folds(train_sets, self.train_sizes)
        return self

    def sample(self, k, C, n_draws, rng):
        return self.fitted.sample(k, C, n_draws, rng)


def nuisance_errors(est, sim) -> dict:
    """What the fit's nuisances got wrong, cross-fitted, on the protocol's scale (module notes)."""
    frame = sim.data.table
    C = frame[sim.truth.conditioning]
    s_true = sim.truth.outcome_mean(C) / Y_STD
    s_hat = est.targets_ / Y_STD
    y = frame[sim.data.outcome].to_numpy() / Y_STD
    price = est.draws_[:, :, est.input_columns_.index("price")].astype(float)
    cov = np.cov(s_hat, s_true)
    return {"s_mse": float(np.mean((s_hat - s_true) ** 2)), "s_slope": float(cov[0, 1] / cov[1, 1]),
            "s_heldout": float(np.mean((y - s_hat) ** 2)),
            "g_mean_mse": float(np.mean((price.mean(1) - demand_iv_price_mean(C, sim.params["iv_strength"])) ** 2)),
            "g_sd": float(np.mean(price.std(1, ddof=1)))}


def one(task: dict) -> list[dict]:
    sim = simulate_demand_iv(task["n"], task["seed"], iv_strength=task["iv_strength"])
    base = dict(dataset="demand-iv", noise_scale=sim.params["noise_scale"], iv_strength=task["iv_strength"],
                rho=sim.params["rho"], n=task["n"], seed=task["seed"], method="dml-cmr", learner=task["learner"],
                folds=task["folds"])
    rows, learned = [], None
    for outcome, distribution in CELLS:
        if (outcome, distribution) in task["skip"]:
            continue
        kwargs = {}
        if outcome == "oracle":
            kwargs["outcome_learner"] = sim.truth.oracle_outcome()
        if distribution == "oracle":
            kwargs["sampler"] = sim.truth.oracle_sampler()
        if learned is not None:
            sizes = [task["n"] - len(rows) for rows in learned.folds_]
            kwargs.setdefault("outcome_learner", _ReusedOutcome(learned.s_model_, sizes))
            kwargs.setdefault("sampler", _ReusedSampler(learned.g_model_, sizes))
        start = time.perf_counter()
        est = DMLCMR(task["learner"], task["folds"], seed=task["seed"], device="cpu", **kwargs).fit(sim.data)
        seconds = time.perf_counter() - start
        if (outcome, distribution) == ("learned", "learned"):
            learned = est
        rows.append({**base, "outcome": outcome, "distribution": distribution, **sim.truth.score(est),
                     "seconds": seconds, "nuisances_reused": learned is not est and (outcome, distribution) != (
                         "oracle", "oracle"), **nuisance_errors(est, sim)})
        print(f"  {task['learner']} seed={task['seed']} s={outcome} g={distribution}: "
              f"mse={rows[-1]['mse']:.4f} ({seconds:.1f} s)", flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", default="nn,gb")
    p.add_argument("--seeds", default="0-19")
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--iv-strength", type=float, default=1.0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    out = Path(args.out)
    done = pd.read_csv(out) if out.exists() else pd.DataFrame()
    tasks = []
    for learner in args.learners.split(","):
        for seed in parse_seeds(args.seeds):
            skip = set()
            if len(done):
                mine = done[(done.learner == learner) & (done.seed == seed) & (done.n == args.n)
                            & (done.iv_strength == args.iv_strength) & (done.folds == args.folds)]
                skip = set(zip(mine.outcome, mine.distribution))
            if ("learned", "learned") in skip and len(skip) < len(CELLS):
                skip.discard(("learned", "learned"))   # the mixed cells need its nuisances: refit, then drop
            if len(skip) < len(CELLS):
                tasks.append(dict(learner=learner, seed=seed, n=args.n, folds=args.folds,
                                  iv_strength=args.iv_strength, skip=skip))
    print(f"{len(tasks)} tasks", flush=True)
    with ProcessPoolExecutor(args.jobs) as pool:
        for rows in pool.map(one, tasks):
            frame = pd.DataFrame(rows)
            if out.exists():
                old = pd.read_csv(out)
                key = ["learner", "seed", "n", "iv_strength", "folds", "outcome", "distribution"]
                stale = old[key].astype(str).apply(tuple, axis=1).isin(set(frame[key].astype(str).apply(tuple, axis=1)))
                frame = pd.concat([old[~stale], frame], ignore_index=True)
            frame.to_csv(out, index=False)


if __name__ == "__main__":
    main()

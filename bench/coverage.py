"""Coverage of DML-CMR's 95 % pointwise bands (``f_model="sieve"``) by simulation.

Each seed simulates a data set, fits DML-CMR with the sieve second stage and evaluates the
band of every SieveF variance (``outcome``, the default; ``structural``; ``score``, the plug-in
of the paper's Theorem 3.4) at the design's evaluation points. Reported per band:

* ``cover``  -- the fraction of points whose band contains the true f, averaged over seeds;
* ``@point`` -- the fraction of seeds whose band contains the truth at each fixed point;
* ``cover E`` -- the same with the truth replaced by the seeds' mean f-hat: whether the width
  matches f-hat's spread, with the bias taken out;
* ``se/sd``  -- median over points of the mean standard error (half-width / 1.96) over the
  standard deviation of f-hat across seeds;
* ``width``  -- the mean band width (outcome scale), and per design the median MSE.

With ``--reps R`` each seed is fitted R times with seeds seed*1000 + r (RepeatedCrossFit) and
the table adds the median-aggregated confidence bands and the split-spread band (a range of
f-hats over splits, not a confidence band).

``--center-pool`` is a what-if, not the library's behaviour: it centres the residual pool of
the tabular learners' conditional sampler (dmlcore.learners.tabular.ResidualSampler) at zero,
so that the level of g-hat comes from the conditional-mean model fitted on all training rows
rather than from the mean residual of the 25 % pool (see docs/coverage.md).

Designs:

* ``demand-iv`` -- the benchmark, on its 2,800-point grid; MSE on the protocol scale
  ((y + 292.1) / 158). psi's narrow bump at time 5 is hard for a spline: smoothing bias.
  ``--noise-scale`` picks its outcome noise (standardized, the authors' code, by default; raw).
* ``demand-smooth`` -- demand-iv with psi(t) replaced by its smooth part (dmlcore.data.designs):
  f0 is in the span of the sieve. Same grid and scale.
* ``simple-iv`` -- y = 1 + 2a + e, a = z + w, e = 1.8 w + N(0, 1) (dmlcore.data.designs): with
  ``--learner linear`` every nuisance is correctly specified. 21 points a in [-2, 2]; MSE on the
  raw scale. (Called ``linear-iv`` here before the designs moved into dmlcore.)

Every design is a registered simulator (``dmlcore.data.registry.load_dataset``); its truth says
where the bands are scored (``truth.evaluation``).

    python bench/coverage.py --design demand-iv --learner gb --n 2000 --folds 5 --seeds 100
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

from dmlcore.data.registry import load_dataset
from dmlcore.data.simulate import NOISE_SCALES, Y_STD
from dmlcore.estimators.crossfit_reps import RepeatedCrossFit
from dmlcore.estimators.dml import DMLCMR
from dmlcore.estimators.second_stage import VARIANCES

DESIGNS = ("demand-iv", "demand-smooth", "simple-iv")
GRID_POINTS = [(17.89, 2.63, 1), (17.89, 5.26, 4), (17.89, 7.89, 7), (13.95, 9.47, 4)]  # on the grid
LINEAR_POINTS = [-1.6, 0.0, 1.6]


def design(name, noise_scale=None):
    """(simulate(n, seed), evaluation points, true f there, fixed-point rows, MSE scale).

    ``noise_scale`` is demand-iv's ("standardized" when None); the other designs take none."""
    if name not in DESIGNS:
        raise SystemExit(f"unknown design {name!r}; choose {', '.join(DESIGNS)}")
    if noise_scale is not None and name != "demand-iv":
        raise SystemExit(f"--noise-scale applies to --design demand-iv only; {name!r} has its own noise")
    options = {"noise_scale": noise_scale or "standardized"} if name == "demand-iv" else {}

    def simulate(n, seed):
        return load_dataset(name, n=n, seed=seed, **options).data

    evaluation = load_dataset(name, n=50, seed=0, **options).truth.evaluation
    grid, truth = evaluation.points, evaluation.values
    if name == "simple-iv":
        fixed = [int(np.argmin(np.abs(grid["a"] - a))) for a in LINEAR_POINTS]
        return simulate, grid, truth, fixed, 1.0
    fixed = [int(np.argmin(np.abs(grid["price"] - p) + np.abs(grid["time"] - t) + np.abs(grid["customer_type"] - s)))
             for p, t, s in GRID_POINTS]
    return simulate, grid, truth, fixed, Y_STD


def center_pools():
    """Patch ResidualSampler.fit to centre each fold's residual pool (the --center-pool what-if)."""
    from dmlcore.learners.tabular import ResidualSampler
    fit = ResidualSampler.fit

    def centred(self, C, X, train_sets, monitor):
        fit(self, C, X, train_sets, monitor)
        self.pools_ = [pool - pool.mean(axis=0) for pool in self.pools_]
        return self

    ResidualSampler.fit = centred


def one_seed(args, seed, simulate, grid):
    """{band name: (lower, upper)} and the point estimate for one simulated data set."""
    data = simulate(args.n, seed)
    f_params = {} if args.n_knots is None else {"n_knots": args.n_knots}
    est = DMLCMR(args.learner, args.folds, f_model="sieve", seed=seed * 1000, n_draws=args.n_draws,
                 f_params=f_params)
    if args.reps > 1:
        est = RepeatedCrossFit(est, args.reps)
    est.fit(data)
    bands = {v: est.predict_interval(grid, args.level, variance=v) for v in VARIANCES}
    if args.reps > 1:
        bands["split spread"] = est.predict_spread(grid, args.level)
    return est.predict(grid), bands


def summarize(names, estimates, bands, truth, fixed, scale, level):
    est = np.array(estimates)
    mean, sd = est.mean(0), est.std(0, ddof=1)
    z = norm.ppf(0.5 + level / 2)
    rows = []
    for name in names:
        lo = np.array([b[name][0] for b in bands])
        hi = np.array([b[name][1] for b in bands])
        inside = (lo <= truth) & (truth <= hi)
        se = (hi - lo) / (2 * z)
        rows.append({"band": name, "cover": float(inside.mean()),
                     "fixed": [float(inside[:, j].mean()) for j in fixed],
                     "cover_E": float(((lo <= mean) & (mean <= hi)).mean()),
                     "se_sd": float(np.median(se.mean(0) / sd)), "width": float((hi - lo).mean())})
    mse = np.mean(((est - truth) / scale) ** 2, axis=1)
    bias_sd = float(np.median(np.abs(mean - truth) / sd))
    return rows, float(np.median(mse)), bias_sd


def table(rows, fixed_labels):
    head = f"| band | cover | {' | '.join(fixed_labels)} | cover E | se/sd | width |"
    lines = [head, "|" + "---|" * (5 + len(fixed_labels))]
    for r in rows:
        fixed = " | ".join(f"{v:.2f}" for v in r["fixed"])
        lines.append(f"| {r['band']} | {r['cover']:.3f} | {fixed} | {r['cover_E']:.3f} | {r['se_sd']:.2f} | "
                     f"{r['width']:.3g} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--design", default="demand-iv")
    p.add_argument("--learner", default="gb", help="nuisance learner (gb, linear, rf, nn)")
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--n-draws", type=int, default=8)
    p.add_argument("--n-knots", type=int, help="SieveF interior knots (default: its knot rule)")
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--seed-offset", type=int, default=0)
    p.add_argument("--reps", type=int, default=1, help="repeated cross-fits per seed")
    p.add_argument("--level", type=float, default=0.95)
    p.add_argument("--center-pool", action="store_true", help="what-if: centre the residual sampler's pool")
    p.add_argument("--noise-scale", choices=tuple(NOISE_SCALES),
                   help="demand-iv outcome noise: standardized (the authors' code, default) or raw")
    p.add_argument("--out", help="write the summary here (JSON)")
    args = p.parse_args(argv)
    if args.center_pool:
        center_pools()
    simulate, grid, truth, fixed, scale = design(args.design, args.noise_scale)
    if args.design == "demand-iv":
        args.noise_scale = args.noise_scale or "standardized"   # recorded with the results
    names = list(VARIANCES) + (["split spread"] if args.reps > 1 else [])
    estimates, bands, seconds = [], [], []
    for seed in range(args.seed_offset, args.seed_offset + args.seeds):
        start = time.perf_counter()
        est, band = one_seed(args, seed, simulate, grid)
        seconds.append(time.perf_counter() - start)
        estimates.append(est)
        bands.append(band)
        covered = " ".join(f"{k}={np.mean((b[0] <= truth) & (truth <= b[1])):.2f}" for k, b in band.items())
        print(f"  seed {seed}: mse={np.mean(((est - truth) / scale) ** 2):.4f} {covered} "
              f"({seconds[-1]:.1f} s)", flush=True)
    rows, mse, bias_sd = summarize(names, estimates, bands, truth, fixed, scale, args.level)
    labels = [f"@{', '.join(f'{v:.3g}' for v in np.atleast_1d(grid.iloc[j].to_numpy()))}" for j in fixed]
    noise = f" ({args.noise_scale} noise)" if args.noise_scale else ""
    print(f"\n{args.design}{noise}, learner {args.learner}, n={args.n}, K={args.folds}, {args.seeds} seeds"
          f"{f', {args.reps} cross-fits each' if args.reps > 1 else ''}"
          f"{', residual pools centred' if args.center_pool else ''}: median MSE {mse:.4f}, "
          f"median |bias|/sd {bias_sd:.2f}, {np.mean(seconds):.1f} s per seed\n")
    print(table(rows, labels))
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "rows": rows, "median_mse": mse,
                                              "median_bias_over_sd": bias_sd, "fixed_points": labels,
                                              "seconds_per_seed": float(np.mean(seconds))}, indent=2))


if __name__ == "__main__":
    main()

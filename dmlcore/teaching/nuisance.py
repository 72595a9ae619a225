"""Naive plug-in, CE-DML-CMR and DML-CMR on a small nonlinear IV simulation.

The data are those of :mod:`dmlcore.teaching.forbidden` (f0(a) = 2 sin(a), a hidden U, the
instrument Z), optionally with irrelevant extra instrument columns. Two experiments use the
tool's own estimators (:func:`dmlcore.runs.make_estimator`):

* :func:`compare_methods` -- the three methods over many simulated data sets, same learners and
  data for all, the error of f-hat on the grid of the forbidden-regression lesson;
* :func:`orthogonality` -- each method's nuisance values (the targets t_i and the draws x_ij of
  the price that give g(f, c_i)) perturbed by a known amount eps, and the second stage refitted
  in closed form (f linear in the polynomial basis B of the forbidden-regression lesson:
  theta minimises mean_i (t_i - mean_j theta'B(x_ij))^2, the loss of every second stage here).
  In the code the naive plug-in and CE-DML-CMR share the draws (same sampler, same seed) and
  differ only in the target: y_i for the naive plug-in, s-hat(c_i) for CE-DML-CMR.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
import json
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHOD_TITLES, FitSettings, for_method, make_estimator
from dmlcore.estimators import METHODS as REGISTRY
from dmlcore.teaching.forbidden import GRID, basis, f0
from dmlcore.teaching.result import Experiment, check_count, check_range, summarize

# the DML-CMR family from the registry, from the plain plug-in to the cross-fitted orthogonal score
METHODS = tuple(reversed([name for name, entry in REGISTRY.items() if entry.second_stage]))
PERTURBATIONS = {
    "s": "s-hat(c) + eps sd(Y) Delta(c)",
    "shift": "price draws shifted by eps sd(price)",
    "widen": "price draws spread (1 + eps) times wider",
}
EPSILONS = (0.0, 0.05, 0.1, 0.2, 0.3)


@dataclass(frozen=True)
class Setting:
    title: str
    noise_instruments: int
    learner: str
    nuisance_params: dict


SETTINGS = {
    "simple": Setting("one instrument, small gradient-boosting nuisances (early stopping)", 0, "gb",
                      dict(max_iter=60, learning_rate=0.2)),
    "overfit": Setting("10 irrelevant extra instruments, random forests grown to single rows (overfitting "
                       "nuisances)", 10, "rf", dict(n_estimators=30, min_samples_leaf=1, n_jobs=1)),
}
F_PARAMS = dict(n_knots=6)  # spline second stage; its penalty is chosen on validation rows


def simulate(n: int, seed: int, noise_instruments: int = 0, *, sigma: float = 0.8, rho: float = 0.8) -> CausalData:
    """One data set of the forbidden-regression design with ``noise_instruments`` extra
    instrument columns that have nothing to do with the price."""
    rng = np.random.default_rng([seed, 59])
    z, u, v, e = rng.standard_normal((4, n))
    a = z + sigma * (np.sqrt(rho) * u + np.sqrt(1.0 - rho) * v)
    table = pd.DataFrame({"sales": f0(a) + 2.0 * (np.sqrt(rho) * u + np.sqrt(1.0 - rho) * e), "price": a, "z": z})
    extra = [f"z{j + 1}" for j in range(noise_instruments)]
    for name in extra:
        table[name] = rng.standard_normal(n)
    return CausalData(table, "iv", outcome="sales", treatment="price", instrument=["z"] + extra, name="teaching-iv")


def _setting(name: str) -> Setting:
    if name not in SETTINGS:
        raise DMLCoreError(f"Unknown setting {name!r}; choose one of {', '.join(SETTINGS)}.")
    return SETTINGS[name]


def _estimator(method: str, setting: Setting, folds: int, seed: int):
    # the nuisances named (not "auto", the default): the setting's learner is what the experiment varies
    shared = FitSettings(learner=setting.learner, folds=folds, seed=seed, nuisance_params=setting.nuisance_params,
                         f_model="sieve", f_params=F_PARAMS, device="cpu", outcome_learner=setting.learner,
                         sampler=setting.learner)
    return make_estimator(method, for_method(shared, method))


def _progress(callback, should_stop, done: int, total: int, text: str):
    if should_stop is not None and should_stop():
        raise DMLCoreError("The experiment was stopped.")
    if callback is not None:
        callback(done / total, text)


def compare_methods(setting: str = "simple", *, n: int = 500, draws: int = 20, folds: int = 5, seed: int = 0,
                    callback=None, should_stop=None) -> Experiment:
    """The three methods on ``draws`` simulated data sets (the same data for each method).

    ``draws`` table: draw, method, mse (of f-hat against f0 on GRID), seconds. ``summary``:
    median MSE with quartiles per method, and the number of draws on which each method had the
    lowest MSE. ``callback(fraction, text)`` reports progress; ``should_stop()`` cancels.
    """
    chosen = _setting(setting)
    check_count("n", n, 100, 100_000)
    check_count("draws", draws, 1, 1000)
    check_count("folds", folds, 2, 20)
    start = time.perf_counter()
    truth, grid = f0(GRID), pd.DataFrame({"price": GRID})
    rows = []
    for r in range(draws):
        data = simulate(n, seed + r, chosen.noise_instruments)
        for i, method in enumerate(METHODS):
            _progress(callback, should_stop, r * len(METHODS) + i, draws * len(METHODS),
                      f"data set {r + 1} of {draws}: {METHOD_TITLES[method]}")
            t0 = time.perf_counter()
            est = _estimator(method, chosen, folds, seed + r).fit(data)
            rows.append({"draw": r, "method": method, "mse": float(np.mean((est.predict(grid) - truth) ** 2)),
                         "seconds": time.perf_counter() - t0})
    table = pd.DataFrame(rows)
    summary = summarize(table, ["method"], "mse")
    best = table.loc[table.groupby("draw")["mse"].idxmin(), "method"].value_counts()
    summary["lowest MSE on"] = summary["method"].map(best).fillna(0).astype(int)
    summary["title"] = summary["method"].map(METHOD_TITLES)
    _progress(callback, None, 1, 1, "done")
    return Experiment("compare methods", table, summary,
                      dict(setting=setting, title=chosen.title, n=n, draws=draws, folds=folds, seed=seed,
                           learner=chosen.learner, nuisance_params=chosen.nuisance_params), None,
                      time.perf_counter() - start)


def repeated_crossfit(setting: str = "simple", *, n: int = 500, splits: int = 5, reps=(1, 3), folds: int = 5,
                      seed: int = 0, callback=None, should_stop=None) -> Experiment:
    """Repeated cross-fitting (the ``reps_crossfit`` setting, R): how much DML-CMR's f-hat depends on
    the random split into folds, with R = 1 and with the median of R cross-fits.

    One simulated data set (``seed``); DML-CMR fitted ``splits`` times with split seeds 0, 100, 200, ...
    (R = 3 uses seeds s, s + 1, s + 2, so the split seeds' fits share no split). ``draws`` table: R,
    split seed, MSE of f-hat against f0 on GRID, seconds; ``summary`` per R: the median MSE over the
    splits and the split spread, the root mean square over GRID of the differences between each
    split's f-hat and their mean (0 would mean the split does not matter)."""
    chosen = _setting(setting)
    check_count("n", n, 100, 100_000)
    check_count("splits", splits, 2, 50)
    check_count("folds", folds, 2, 20)
    for r in reps:
        check_count("reps", r, 1, 20)
    start = time.perf_counter()
    truth, grid = f0(GRID), pd.DataFrame({"price": GRID})
    data = simulate(n, seed, chosen.noise_instruments)
    rows, curves = [], {}
    total, done = splits * len(reps), 0
    for r in reps:
        for j in range(splits):
            _progress(callback, should_stop, done, total, f"R = {r}: split {j + 1} of {splits}")
            shared = FitSettings(learner=chosen.learner, folds=folds, seed=100 * j,
                                 nuisance_params=chosen.nuisance_params, f_model="sieve", f_params=F_PARAMS,
                                 device="cpu", outcome_learner=chosen.learner, sampler=chosen.learner,
                                 reps_crossfit=r)
            t0 = time.perf_counter()
            est = make_estimator("dml-cmr", for_method(shared, "dml-cmr")).fit(data)
            curve = np.asarray(est.predict(grid), dtype=float)
            curves.setdefault(r, []).append(curve)
            rows.append({"R": r, "split seed": 100 * j, "mse": float(np.mean((curve - truth) ** 2)),
                         "seconds": time.perf_counter() - t0})
            done += 1
    table = pd.DataFrame(rows)
    summary = pd.DataFrame([{"R": r, "median MSE": float(table.loc[table["R"] == r, "mse"].median()),
                             "split spread": float(np.sqrt(np.mean((np.array(c) - np.mean(c, axis=0)) ** 2))),
                             "seconds per fit": float(table.loc[table["R"] == r, "seconds"].mean())}
                            for r, c in curves.items()])
    _progress(callback, None, 1, 1, "done")
    return Experiment("repeated cross-fitting", table, summary,
                      dict(setting=setting, n=n, splits=splits, reps=list(reps), folds=folds, seed=seed), None,
                      time.perf_counter() - start)


def second_stage(targets: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """theta minimising mean_i (t_i - mean_j theta'B(x_ij))^2, with x_ij the price draws."""
    return np.linalg.lstsq(basis(draws).mean(axis=1), targets, rcond=None)[0]


def perturb(kind: str, eps: float, targets: np.ndarray, draws: np.ndarray, delta: np.ndarray,
            y_sd: float, a_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Targets and price draws with the nuisance error ``kind`` of size ``eps`` added."""
    if kind == "s":
        return targets + eps * y_sd * delta, draws
    if kind == "shift":
        return targets, draws + eps * a_sd
    if kind == "widen":
        centre = draws.mean(axis=1, keepdims=True)
        return targets, centre + (1.0 + eps) * (draws - centre)
    raise DMLCoreError(f"Unknown perturbation {kind!r}; choose one of {', '.join(PERTURBATIONS)}.")


def orthogonality(*, n: int = 1000, seeds: int = 5, epsilons=EPSILONS, folds: int = 5, setting: str = "simple",
                  seed: int = 0, callback=None, should_stop=None) -> Experiment:
    """How far f-hat moves when the nuisances are off by a known eps, for each method.

    For each seed: CE-DML-CMR and DML-CMR are fitted once with the tool; the naive plug-in's
    nuisance values are CE-DML-CMR's draws with the outcome y as target (exactly what the tool's
    naive plug-in uses). Then for each perturbation (:data:`PERTURBATIONS`; Delta(c) is the
    standardized instrument z) and each eps the second stage is refitted (:func:`second_stage`).
    The naive plug-in has no s-hat, so the "s" perturbation leaves it unchanged.

    ``draws`` table: seed, perturbation, eps, method, rmse (of f-hat against f0 on GRID) and
    change (root mean square of f-hat(eps) - f-hat(0) on GRID). ``summary``: both averaged over
    seeds per (perturbation, method, eps), plus ``order``: log2 of change(2 e) / change(e) for
    the two smallest positive eps with e and 2 e in the grid -- about 1 when the nuisance error
    moves f-hat at first order, about 2 at second order.
    """
    chosen = _setting(setting)
    check_count("n", n, 100, 100_000)
    check_count("seeds", seeds, 1, 100)
    epsilons = sorted({float(e) for e in epsilons} | {0.0})
    for e in epsilons:
        check_range("eps", e, -0.9, 0.9)
    start = time.perf_counter()
    grid_basis = basis(GRID)
    truth = f0(GRID)
    rows = []
    for k in range(seeds):
        data = simulate(n, seed + k, chosen.noise_instruments)
        fitted = {}
        for i, method in enumerate(("ce-dml-cmr", "dml-cmr")):
            _progress(callback, should_stop, 2 * k + i, 2 * seeds, f"seed {k + 1} of {seeds}: {METHOD_TITLES[method]}")
            fitted[method] = _estimator(method, chosen, folds, seed + k).fit(data)
        col = fitted["dml-cmr"].input_columns_.index("price")
        y = data.table["sales"].to_numpy(dtype=float)
        z = data.table["z"].to_numpy(dtype=float)
        delta = (z - z.mean()) / z.std()
        y_sd, a_sd = float(y.std()), float(data.table["price"].std())
        # each arm's second stage on one fit's nuisances: the naive plug-in on CE-DML-CMR's (the same nuisances,
        # fitted once on all rows) with Y itself where the others have s-hat, since it fits no outcome model
        for method, source in (("naive", "ce-dml-cmr"), ("ce-dml-cmr", "ce-dml-cmr"), ("dml-cmr", "dml-cmr")):
            outcome_model = REGISTRY[method].outcome_model
            targets, draws = (fitted[source].targets_ if outcome_model else y), fitted[source].draws_[:, :, col]
            base = grid_basis @ second_stage(targets, draws.astype(float))
            for kind in PERTURBATIONS:
                for eps in epsilons:
                    size = 0.0 if kind == "s" and not outcome_model else eps  # without s-hat, nothing to perturb
                    t, x = perturb(kind, size, targets, draws.astype(float), delta, y_sd, a_sd)
                    curve = grid_basis @ second_stage(t, x)
                    rows.append({"seed": k, "perturbation": kind, "eps": eps, "method": method,
                                 "rmse": float(np.sqrt(np.mean((curve - truth) ** 2))),
                                 "change": float(np.sqrt(np.mean((curve - base) ** 2)))})
    table = pd.DataFrame(rows)
    summary = table.groupby(["perturbation", "method", "eps"], sort=False)[["rmse", "change"]].mean().reset_index()
    summary["order"] = np.nan
    pairs = [(e, 2 * e) for e in epsilons if e > 0 and any(np.isclose(2 * e, epsilons))]
    if pairs:
        e1, e2 = pairs[0]
        for (kind, method), part in summary.groupby(["perturbation", "method"], sort=False):
            c1 = part.loc[np.isclose(part["eps"], e1), "change"].iloc[0]
            c2 = part.loc[np.isclose(part["eps"], e2), "change"].iloc[0]
            if c1 > 1e-12:
                summary.loc[part.index, "order"] = float(np.log2(c2 / c1))
    _progress(callback, None, 1, 1, "done")
    return Experiment("orthogonality", table, summary,
                      dict(setting=setting, title=chosen.title, n=n, seeds=seeds, folds=folds, seed=seed,
                           epsilons=epsilons, perturbations=dict(PERTURBATIONS)), None, time.perf_counter() - start)


def swap_nuisances(setting: str = "overfit", *, n: int = 500, seeds: int = 3, folds: int = 5,
                   seed: int = 0) -> Experiment:
    """Which overfitted nuisance moves f-hat: CE-DML-CMR's (in-sample) and DML-CMR's (cross-fitted)
    targets and price draws, combined each way, the second stage refitted in closed form
    (:func:`second_stage`). ``draws``: seed, targets, draws ("in-sample" or "cross-fitted") and
    the MSE of f-hat on GRID; ``summary``: the median MSE per combination."""
    chosen = _setting(setting)
    check_count("seeds", seeds, 1, 100)
    start = time.perf_counter()
    rows = []
    for k in range(seeds):
        data = simulate(n, seed + k, chosen.noise_instruments)
        fitted = {"in-sample": _estimator("ce-dml-cmr", chosen, folds, seed + k).fit(data),
                  "cross-fitted": _estimator("dml-cmr", chosen, folds, seed + k).fit(data)}
        col = fitted["cross-fitted"].input_columns_.index("price")
        for targets, t_fit in fitted.items():
            for draws, d_fit in fitted.items():
                theta = second_stage(t_fit.targets_, d_fit.draws_[:, :, col].astype(float))
                rows.append({"seed": k, "targets": targets, "draws": draws,
                             "mse": float(np.mean((basis(GRID) @ theta - f0(GRID)) ** 2))})
    table = pd.DataFrame(rows)
    summary = table.groupby(["targets", "draws"], sort=False)["mse"].agg(["median", "min", "max"]).reset_index()
    return Experiment("swap nuisances", table, summary, dict(setting=setting, n=n, seeds=seeds, folds=folds,
                                                             seed=seed), None, time.perf_counter() - start)


SWAP_CSV = Path(__file__).resolve().parents[2] / "bench" / "results" / "teaching" / "crossfit-swap.csv"


def measured_swap() -> pd.DataFrame | None:
    """:func:`swap_nuisances` as ``python -m bench.teaching`` wrote it (None when the file is not here)."""
    return pd.read_csv(SWAP_CSV) if SWAP_CSV.exists() else None


RUN_JSON = SWAP_CSV.parent / "run.json"


def saved_run(name: str) -> dict | None:
    """How the saved run of experiment ``name`` went (``python -m bench.teaching``'s run.json: its
    seconds, date, machine and load average), or None when it is not there."""
    if not RUN_JSON.exists():
        return None
    return json.loads(RUN_JSON.read_text()).get(name)


def saved_comparison(setting: str) -> pd.DataFrame | None:
    """The saved comparison of the three methods in ``setting`` (bench/results/teaching/compare-SETTING.csv)."""
    path = SWAP_CSV.parent / f"compare-{setting}.csv"
    return pd.read_csv(path) if path.exists() else None

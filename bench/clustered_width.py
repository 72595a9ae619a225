"""Why DML-CMR's clustered debiased interval was too wide on clustered-iv: its standard error taken apart.

For each seed, fit DML-CMR (gb learners, its own f, K = 5, clustered by the design's ``cluster``
column, the defaults otherwise: f-hat cross-fitted by 2 whole refits) on clustered-iv (n = 1,000, 50
clusters), keep what the debiased effect was given (f-hat at the contrast's points and the rows,
the cluster numbers), and take the score of the chosen representer basis apart, knowing the true f
(slope 2):

    psi  = m(W; f-hat) + xi-hat (Y - f-hat)        the score (its mean is the estimate)
    psi0 = m(W; f)     + xi-hat (Y - f)            the same at the true f (the representer kept)
    psi - psi0 = m(W; h) - xi-hat h(X),  h = f-hat - f
    d    = m(W; Pb h) - xi-hat Pb h(X)             the part from h's projection Pb h on f's basis b

Per seed (``width-parts.csv``): the estimate and its mean at the true f; the CR1 standard errors
(the clusters' sums, G / (G - 1)) of psi (the interval before the change), of
:func:`dmlcore.inference.debiased_effect.clustered_score` (after), of psi0, of d, of psi - d and of
psi - psi0 - d (the part outside b alone); and the means of d and of psi - psi0 - d (how far each part
moved the estimate). Over seeds, the sd of the estimates is
the width needed (2 x 1.96 x sd).

    nice -n 10 python -m bench.clustered_width --seeds 0-39 --captures /tmp/clustered-width
    python -m bench.clustered_width --seeds 0-39 --captures /tmp/clustered-width --rows-only \\
        --out bench/results/coverage-44-2026-11-29/width-parts.csv

or, with no fit twice, on the coverage bench's own fits (every arm), kept as they ran:

    PYTHONPATH=.:bench/capture DMLCORE_CAPTURE_DEBIAS=/tmp/clustered-width nice -n 10 python -m \\
        bench.effect_coverage --designs clustered-iv ... --out-dir bench/results/coverage-44-2026-11-29
    python -m bench.clustered_width --captures /tmp/clustered-width \\
        --from-fits bench/results/coverage-44-2026-11-29/fits-clustered-iv.csv

A seed whose capture is in ``--captures`` is not fitted again (two processes can share the folder,
each with its own seeds); ``--rows-only`` fits nothing and writes the rows of the captures there.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dmlcore.inference.debiased_effect as de
from dmlcore.data.registry import load_dataset
from dmlcore.runs.average_effect import contrast
from dmlcore.runs.fit import fit_run
from dmlcore.stats import resample
from dmlcore.stats.clusters import mean_se
from dmlcore.studies.spec import parse_seeds

DESIGN, N, TRUE_SLOPE = "clustered-iv", 1000, 2.0


def true_f(frame: pd.DataFrame) -> np.ndarray:
    """clustered-iv's f (dmlcore.data.designs: linear-iv's)."""
    return (2.0 * frame["a"] + frame["x1"] - frame["x2"]).to_numpy(dtype=float)


def keep(folder, f_points, f_rows, groups, out, y) -> None:
    """Write what one debiased effect was given, and its estimate, to ``folder`` (one file per effect)."""
    kept = {"f_points": np.asarray(f_points, dtype=float), "f_rows": np.asarray(f_rows, dtype=float),
            "groups": groups, "basis": out["basis"], "std_error": out["std_error"], "estimate": out["estimate"],
            "y_head": np.asarray(y[:5], dtype=float)}
    name = hashlib.sha256(kept["f_rows"].tobytes() + kept["f_points"].tobytes()).hexdigest()[:24]
    (Path(folder) / f"{name}.pkl").write_bytes(pickle.dumps(kept))


def install_capture(folder) -> None:
    """Make every debiased effect of this process keep its inputs in ``folder`` (:func:`keep`): the
    bench's own fits, taken apart afterwards with ``--from-fits`` (no fit twice). Set by
    ``DMLCORE_CAPTURE_DEBIAS`` through ``bench/capture/sitecustomize.py``, so that worker processes do it too."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    debias = de.debias

    def spy(data, plan, f_points, f_rows, **kw):
        out = debias(data, plan, f_points, f_rows, **kw)
        keep(folder, f_points, f_rows, kw.get("groups"), out, data.table[data.outcome].to_numpy())
        return out

    de.debias = spy


def capture(seed: int) -> dict:
    """Fit DML-CMR on one seed and keep what its debiased effect was given."""
    kept = {}
    debias = de.debias

    def spy(data, plan, f_points, f_rows, **kw):
        out = debias(data, plan, f_points, f_rows, **kw)
        kept.update(f_points=np.asarray(f_points, dtype=float), f_rows=np.asarray(f_rows, dtype=float),
                    groups=kw["groups"], basis=out["basis"], std_error=out["std_error"], estimate=out["estimate"])
        return out

    loaded = load_dataset(DESIGN, n=N, seed=seed)
    de.debias = spy
    try:
        fit_run(loaded.data, "dml-cmr", truth=loaded.truth, learner="gb", folds=5, seed=seed,
                cov_type="clustered", cluster="cluster")
    finally:
        de.debias = debias
    return {"seed": seed, **kept}


def parts(seed: int, kept: dict) -> dict:
    """One seed's row: the score at f-hat and at the true f, and the part of f-hat's error in b."""
    data = load_dataset(DESIGN, n=N, seed=seed).data
    plan, table, groups = contrast(data), data.table, kept["groups"]
    n = len(table)
    y = table[data.outcome].to_numpy(dtype=float)
    rung = next(r for r in de.LADDER if r.describe() == kept["basis"])
    b, q = de.build_bases(data, rung)
    m_hat = de.per_row(plan, n, kept["f_points"])
    used = np.isfinite(m_hat)
    mb = de.per_row(plan, n, basis=b)
    mb[~used] = 0.0
    mb = de._rescaled(mb, used)
    bx = b(table[[c.name for c in b.columns]].to_numpy(dtype=float))
    qc = q(table[[c.name for c in q.columns]].to_numpy(dtype=float))
    fold_of = resample.fold_labels(n, de.RIESZ_FOLDS, 0, "representer", groups)
    penalty = de.PENALTY / np.sqrt(n)
    xi = de.cross_fitted_xi(bx, qc, mb, fold_of, de.smoothness(b), penalty)
    f_sieve, _ = de.cross_fitted_sieve(bx, qc, mb, y, fold_of, de.smoothness(b), penalty)
    scale = n / used.sum()
    psi = np.where(used, m_hat, 0.0) * scale + xi * (y - kept["f_rows"])
    m0 = de.per_row(plan, n, true_f(plan.points))
    psi0 = np.where(used, m0, 0.0) * scale + xi * (y - true_f(table))
    h = kept["f_rows"] - true_f(table)
    d = (mb - xi[:, None] * bx) @ np.linalg.lstsq(bx, h, rcond=None)[0]
    after = de.clustered_score(psi, mb, bx, xi, kept["f_rows"], f_sieve)
    se = {name: mean_se(v, groups) for name, v in
          (("rows", psi), ("after", after), ("true_f", psi0), ("in_basis", d), ("outside_basis", psi - d),
           ("outside_part", psi - psi0 - d))}
    same = np.isclose(psi.mean(), kept["estimate"]) and any(      # a capture before the change kept the old se
        np.isclose(se[k], kept["std_error"], rtol=1e-6) for k in ("after", "rows"))
    assert same, f"seed {seed}: the recomputed score is not the fit's (the code changed since the capture)"
    return {"seed": seed, "basis": kept["basis"], "clusters": int(len(np.unique(groups))),
            "estimate": float(psi.mean()), "estimate_true_f": float(psi0.mean()), "truth": TRUE_SLOPE,
            "in_basis_mean": float(d.mean()), "outside_basis_mean": float((psi - psi0 - d).mean()),
            **{f"se_{k}": v for k, v in se.items()}}


def from_fits(fits: pd.DataFrame, folder) -> pd.DataFrame:
    """The rows of ``parts`` for every fit of ``fits`` (the coverage bench's rows of clustered-iv) whose
    debiased effect's inputs ``folder`` kept (:func:`install_capture`), matched by the seed's data and
    the estimate; with the fit's method, f model and arm."""
    kept = [pickle.loads(p.read_bytes()) for p in sorted(Path(folder).glob("*.pkl"))]
    out = []
    for _, fit in fits[fits["status"] == "done"].iterrows():
        y = load_dataset(DESIGN, n=N, seed=int(fit["seed"])).data.table["y"].to_numpy()[:5]
        match = [k for k in kept if np.allclose(k["y_head"], y) and np.isclose(k["estimate"], fit["effect_debiased"])]
        if match:
            out.append({"method": fit["method"], "f_model": fit["f_model"], "arm": fit["arm"],
                        **parts(int(fit["seed"]), match[0])})
    return pd.DataFrame(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", default="0-39")
    p.add_argument("--captures", default="/tmp/clustered-width", help="folder of the per-seed captures")
    p.add_argument("--out", default="bench/results/coverage-44-2026-11-29/width-parts.csv")
    p.add_argument("--rows-only", action="store_true", help="fit nothing: the rows of the captures there")
    p.add_argument("--from-fits", help="the coverage bench's fits-clustered-iv.csv: take apart its fits whose "
                                       "inputs --captures kept (DMLCORE_CAPTURE_DEBIAS), fit nothing")
    args = p.parse_args()
    if args.from_fits:
        frame = from_fits(pd.read_csv(args.from_fits), args.captures)
        frame.to_csv(args.out, index=False)
        if len(frame):
            print(frame.drop(columns=["basis", "method", "f_model"]).groupby("arm").agg(["mean", "std"]).T.to_string())
        return
    folder = Path(args.captures)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in parse_seeds(args.seeds):
        path = folder / f"seed-{seed}.pkl"
        if not path.exists():
            if args.rows_only:
                continue
            start = time.perf_counter()
            path.write_bytes(pickle.dumps(capture(seed)))
            print(f"seed {seed}: {time.perf_counter() - start:.0f} s", flush=True)
        rows.append(parts(seed, pickle.loads(path.read_bytes())))
    frame = pd.DataFrame(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    print(frame.drop(columns="basis").describe().T[["mean", "std"]].to_string())


if __name__ == "__main__":
    main()

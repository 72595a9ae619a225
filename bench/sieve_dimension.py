"""Coverage of the sieve effect of data-driven dimension (dmlcore.inference.sieve_dimension), on many seeds.

No learner is fitted: per design and seed the data are simulated as bench/effect_coverage.py's study
simulates them (the same data set, options, n and seed, so a row pairs with that study's fits of the
same seed), and the sieve effect is a few linear solves. Per row: the truth, the sieve effect
(estimate, s.e., interval, plug-in, chosen rung and why, every rung's estimate), 2SLS's plug-in
(linear f with the data's instruments: the check that the data are the study's, compared with the
stored rows by bench/sieve_flag.py) and the confounded regression's effect (least squares of y on f's
basis of the ladder's rung :data:`REGRESSION_RUNG`, the instruments ignored: the bias every
nonparametric fit can collapse to). Rows are appended per seed (a stopped run keeps them); run.json
beside them records the command, date, machine and load.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 python -m bench.sieve_dimension --seeds 0-199 \
        --designs demand-pcl,moderate-pcl            # into OUT_DIR (the ladder with treatment x proxy rungs)
    python -m bench.sieve_dimension --compare bench/results/sieve-dimension-2026-11-29 \
        --designs linear,demand-iv,nonlinear-iv,clustered-iv,weak --seeds 0-39   # the IV rows unchanged: compare.json
    python bench/docs.py --write

One BLAS thread: the rungs' matrices are small, and on a loaded machine BLAS's own threads made a seed four times
slower.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from bench.effect_coverage import CLUSTERED, DESIGNS
from dmlcore.data.registry import load_dataset
from dmlcore.estimators._registry import LINEAR_REFERENCE, make_estimator
from dmlcore.inference.debiased_effect import build_bases, per_row
from dmlcore.inference.sieve_dimension import DD_LADDER, DD_Z, sieve_effect
from dmlcore.runs.average_effect import contrast
from dmlcore.stats.clusters import groups_of
from dmlcore.studies.spec import parse_seeds

REGRESSION_RUNG = 2      # a cubic spline in the treatment with one knot: the confounded regression's basis
N_DEFAULT = 1000
OUT_DIR = Path("bench/results/sieve-dimension-2026-11-29-1115")   # the ladder with treatment x proxy products


def design_data(design: str, seed: int, n: int = N_DEFAULT):
    """(loaded data set, its contrast, the rows' cluster numbers or None) of ``design`` at ``seed``, as
    bench/effect_coverage.py's study loads it."""
    dataset, options = DESIGNS[design]
    loaded = load_dataset(dataset, seed=seed, **{"n": n, **options})
    cluster = CLUSTERED.get(design, {}).get("cluster")
    return loaded, contrast(loaded.data), groups_of(loaded.data.table, cluster)


def regression_effect(data, plan, rung=DD_LADDER[REGRESSION_RUNG]) -> float:
    """The effect of the least-squares fit of y on f's basis of ``rung``: the instruments ignored."""
    b, _ = build_bases(data, rung)
    bx = b(data.table[[c.name for c in b.columns]].to_numpy(dtype=float))
    beta = np.linalg.lstsq(bx, data.table[data.outcome].to_numpy(dtype=float), rcond=None)[0]
    n = len(data.table)
    mb = per_row(plan, n, basis=b)
    used = np.isfinite(mb[:, 0])
    return float(np.mean(mb[used] @ beta))


def tsls_plug_in(data, plan) -> float:
    """2SLS's effect (its f's contrast), as the study's 2SLS row records it."""
    est = make_estimator(LINEAR_REFERENCE).fit(data)
    return float(np.sum(plan.weights * np.asarray(est.predict(plan.points[data.input_columns]), dtype=float)))


def row(design: str, seed: int, n: int = N_DEFAULT) -> dict:
    loaded, plan, groups = design_data(design, seed, n)
    truth = loaded.truth.effect(plan.points, plan.weights)
    start = time.perf_counter()
    r = sieve_effect(loaded.data, plan, groups=groups)
    seconds = time.perf_counter() - start
    return {"design": design, "seed": seed, "n": len(loaded.data.table), "truth": truth,
            "dd_estimate": r["estimate"], "dd_se": r["std_error"], "dd_ci_lower": r["ci_lower"],
            "dd_ci_upper": r["ci_upper"], "dd_plug_in": r["plug_in"], "dd_strength": r["strength"],
            "dd_weak": r["weakly_identified"], "dd_rung": r["rung"], "dd_functions": r["functions"][0],
            "dd_why": r["why"], "dd_seconds": seconds, "dd_unchecked": r["unchecked"] or "",
            "dd_rungs": json.dumps([[x["rung"], x.get("estimate"), x.get("std_error"), x.get("plug_in")]
                                    for x in r["rungs"]]),
            "dd_strengths": json.dumps([[x["rung"], x.get("strength"), x.get("skipped")] for x in r["rungs"]]),
            "dd_gaps": json.dumps([[round(v, 4) for v in line] for line in r["gaps"]]),
            "regression": regression_effect(loaded.data, plan), "tsls": tsls_plug_in(loaded.data, plan),
            "clusters": int(len(np.unique(groups))) if groups is not None else 0}


COMPARED = ("dd_estimate", "dd_se", "dd_ci_lower", "dd_ci_upper", "dd_plug_in", "dd_strength", "dd_rung", "dd_why",
            "dd_rungs", "dd_gaps")


def compare(old_dir: Path, designs: list[str], seeds: list[int], n: int = N_DEFAULT) -> dict:
    """Recompute the sieve effect of ``designs`` x ``seeds`` with today's ladder and compare it with the stored rows of
    ``old_dir`` column by column (:data:`COMPARED`): the check that a ladder change left those designs as they were.
    Returns {"rows", "identical" (rows whose every compared column is equal), "max_abs_diff" per column}."""
    out = {"old_dir": str(old_dir), "designs": designs, "seeds": f"{min(seeds)}-{max(seeds)}", "rows": 0,
           "identical": 0, "max_abs_diff": {c: 0.0 for c in COMPARED}}
    for design in designs:
        old = pd.read_csv(old_dir / f"rows-{design}.csv").drop_duplicates("seed").set_index("seed")
        for seed in seeds:
            loaded, plan, groups = design_data(design, seed, n)
            r = sieve_effect(loaded.data, plan, groups=groups)
            new = {"dd_estimate": r["estimate"], "dd_se": r["std_error"], "dd_ci_lower": r["ci_lower"],
                   "dd_ci_upper": r["ci_upper"], "dd_plug_in": r["plug_in"], "dd_strength": r["strength"],
                   "dd_rung": r["rung"], "dd_why": r["why"],
                   "dd_rungs": json.dumps([[x["rung"], x.get("estimate"), x.get("std_error"), x.get("plug_in")]
                                           for x in r["rungs"]]),
                   "dd_gaps": json.dumps([[round(v, 4) for v in line] for line in r["gaps"]])}
            same = True
            for c in COMPARED:
                a, b = new[c], old.loc[seed, c]
                if isinstance(a, str):
                    ok = a == b or (c == "dd_rungs" and np.allclose(*(np.array(json.loads(x), dtype=float)
                                                                     for x in (a, b)), rtol=1e-9, equal_nan=True))
                    diff = 0.0 if ok else float("inf")
                else:
                    diff = abs(float(a) - float(b))
                    ok = diff <= 1e-9 * (1 + abs(float(b)))
                out["max_abs_diff"][c] = max(out["max_abs_diff"][c], diff)
                same &= ok
            out["rows"] += 1
            out["identical"] += int(same)
    return out


def load_now() -> float:
    return os.getloadavg()[0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--designs", default=",".join(DESIGNS))
    p.add_argument("--seeds", default="0-199")
    p.add_argument("--n", type=int, default=N_DEFAULT, help="rows (moderate-pcl: 2000 whatever this says)")
    p.add_argument("--out-dir", default=str(OUT_DIR))
    p.add_argument("--compare", metavar="OLD_DIR", help="recompute --designs x --seeds and compare them with the rows "
                   "of OLD_DIR (written to compare.json beside the new rows) instead of writing rows")
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    if args.compare:
        designs = [d for d in args.designs.split(",") if d]
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        result = {"command": "python -m bench.sieve_dimension " + " ".join(argv if argv is not None else sys.argv[1:]),
                  "started": started, "load_1min_start": load_now(),
                  **compare(Path(args.compare), designs, parse_seeds(args.seeds), args.n), "load_1min_end": load_now()}
        out.mkdir(parents=True, exist_ok=True)
        path = out / "compare.json"
        done = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(done + [result], indent=1))
        print(json.dumps(result))
        return 0 if result["identical"] == result["rows"] else 1
    out.mkdir(parents=True, exist_ok=True)
    designs = [d for d in args.designs.split(",") if d]
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        raise SystemExit(f"error: unknown design {unknown[0]!r}; choose from {', '.join(DESIGNS)}")
    seeds = parse_seeds(args.seeds)
    meta = {"command": "python -m bench.sieve_dimension " + " ".join(argv if argv is not None else sys.argv[1:]),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": platform.machine(),
            "cores": os.cpu_count(), "python": platform.python_version(), "load_1min_start": load_now(),
            "ladder": [str(r) for r in DD_LADDER], "z": DD_Z, "nice": os.nice(0), "regression_rung": REGRESSION_RUNG,
            "note": "nice -n 10 beside other helpers' benchmarks on a shared 2-core machine"}
    runs_path = out / "run.json"
    runs = json.loads(runs_path.read_text()) if runs_path.exists() else []
    runs.append(meta)
    runs_path.write_text(json.dumps(runs, indent=1))
    for design in designs:
        path = out / f"rows-{design}.csv"
        done = set(pd.read_csv(path)["seed"]) if path.exists() else set()
        for seed in seeds:
            if seed in done:
                continue
            frame = pd.DataFrame([row(design, seed, args.n)])
            frame.to_csv(path, mode="a", header=not path.exists(), index=False)
        print(design, "done", flush=True)
    meta.update(finished=datetime.now(timezone.utc).isoformat(timespec="seconds"), load_1min_end=load_now())
    runs_path.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

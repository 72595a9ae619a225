"""Recompute every figure that docs/benchmarks.md cites from bench/results/, and print it.

Reads only the saved rows (CSV, JSON lines and the ``/usr/bin/time -v`` lines of the logs); no fit
is run. A few figures come from the simulators rather than from fits, in seconds: demand-iv's
first-stage strength, and the variance of dsprites-pcl's true effect with its proxy's
correlation; ``--rows`` writes them to bench/results/raw-design/ first.

    python bench/audit.py            # print every recomputed figure, section by section
    python bench/audit.py --rows     # (re)write the derived rows, then print
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere
RES = ROOT / "bench" / "results"
OLD = RES / "before-fast-dropout"
DERIVED = RES / "raw-design"
NAMES = {"dml-cmr": "DML-CMR", "ce-dml-cmr": "CE-DML-CMR", "naive": "naive", "sieve-2sls": "sieve 2SLS"}


def csv(name: str, root: Path = RES) -> pd.DataFrame:
    return pd.read_csv(root / name)


def jsonl(path: Path) -> pd.DataFrame:
    return pd.DataFrame([json.loads(line) for line in path.read_text().splitlines() if line.strip()])


def summary(mse: pd.Series, seconds: pd.Series | None = None) -> str:
    q1, med, q3 = mse.quantile([0.25, 0.5, 0.75])
    text = f"{med:.4f} [{q1:.4f}, {q3:.4f}] mean {mse.mean():.4f} (n={len(mse)})"
    return text + (f" {seconds.mean():.1f} s/fit" if seconds is not None else "")


def table(frame: pd.DataFrame, keys=("n", "method")) -> None:
    for key, cell in frame.groupby(list(keys), sort=True):
        label = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        print(f"  {label:24s} {summary(cell['mse'], cell['seconds'])}")


def per_seed(frame: pd.DataFrame, n: int, method: str) -> pd.Series:
    cell = frame[(frame["n"] == n) & (frame["method"] == method)]
    return cell.set_index("seed")["mse"]


def paired(a: pd.Series, b: pd.Series) -> str:
    """a - b over the seeds both have: mean ± standard error, and how often a is larger."""
    d = (a - b).dropna()
    se = d.std(ddof=1) / np.sqrt(len(d))
    return f"{d.mean():+.4f} ± {se:.4f} (sd {d.std(ddof=1):.4f}), a > b on {(d > 0).sum()} of {len(d)}"


def wins(frame: pd.DataFrame, n: int, a: str, b: str) -> str:
    x, y = per_seed(frame, n, a), per_seed(frame, n, b)
    both = x.index.intersection(y.index)
    return f"{NAMES[a]} < {NAMES[b]} on {(x[both] < y[both]).sum()} of {len(both)} seeds"


def time_log(path: Path) -> dict:
    """The /usr/bin/time -v figures at the end of a log."""
    text = path.read_text()
    grab = lambda pattern: re.search(pattern, text).group(1)  # noqa: E731
    wall = [float(x) for x in grab(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)").split(":")]
    seconds = sum(v * 60 ** i for i, v in enumerate(reversed(wall)))
    return {"wall_s": seconds, "user_s": float(grab(r"User time \(seconds\): (\S+)")),
            "system_s": float(grab(r"System time \(seconds\): (\S+)")),
            "peak_gib": int(grab(r"Maximum resident set size \(kbytes\): (\d+)")) / 2 ** 20,
            "minor_faults": int(grab(r"Minor \(reclaiming a frame\) page faults: (\d+)"))}


def write_rows() -> None:
    """First-stage strength of demand-iv (seed 0) and the variance of dsprites-pcl's truth."""
    from dmlcore.data.images import (POSITIONS, confounder_weight, dsprites_structural, dsprites_test_grid,
                                      render_heart)
    from dmlcore.data.simulate import simulate_demand_iv
    from dmlcore.diagnostics import first_stage

    DERIVED.mkdir(parents=True, exist_ok=True)
    rows = []
    for scale in ("raw", "standardized"):
        for strength in (1.0, 0.4):
            for n in (2000, 5000):
                data = simulate_demand_iv(n, seed=0, iv_strength=strength, noise_scale=scale).data
                stats = first_stage(data, nonparametric=False)["treatments"]["price"]
                rows.append({"noise_scale": scale, "iv_strength": strength, "n": n, "seed": 0,
                             "partial_r2": stats["partial_r2"], "f_stat": stats["f_stat"]})
    pd.DataFrame(rows).to_csv(DERIVED / "first-stage.csv", index=False)
    grid = dsprites_test_grid()
    images = render_heart(grid["scale"], grid["rotation"], grid["pos_x"], grid["pos_y"]).reshape(len(grid), -1)
    truth = dsprites_structural(images) * float(np.mean(confounder_weight(POSITIONS)))
    sd_u = POSITIONS.std()
    (DERIVED / "dsprites-truth.json").write_text(json.dumps({
        "test_sprites": len(truth), "truth_variance": float(truth.var()), "truth_mean": float(truth.mean()),
        "proxy_confounder_correlation": float(sd_u / np.sqrt(sd_u ** 2 + 1.0))}, indent=1) + "\n")


def demand_iv() -> None:
    print("\n== raw-noise demand-iv, nn (demand-iv-nn.csv)")
    nn = csv("demand-iv-nn.csv")
    table(nn)
    for n in (2000, 5000):
        for m in ("dml-cmr", "ce-dml-cmr", "naive"):
            print(f"  N={n}: {wins(nn, n, m, 'sieve-2sls')}")
        print(f"  N={n}: {wins(nn, n, 'naive', 'dml-cmr')}")
    print("\n== before/after the dropout change, N = 5000 (after - before)")
    rerun = csv("demand-iv-nn-5000-rerun.csv", OLD)
    for m in ("dml-cmr", "ce-dml-cmr", "naive"):
        print(f"  seeds 0-9 {NAMES[m]}: {paired(per_seed(nn, 5000, m), per_seed(rerun, 5000, m))}")
    extra = ("demand-iv-nn-5000-seeds10-14.csv", "demand-iv-nn-5000-seeds15-29.csv")
    after = pd.concat([per_seed(nn, 5000, "dml-cmr")] + [per_seed(csv(f), 5000, "dml-cmr") for f in extra])
    before = pd.concat([per_seed(rerun, 5000, "dml-cmr")] + [per_seed(csv(f, OLD), 5000, "dml-cmr") for f in extra])
    print(f"  DML-CMR 30 seeds: median before {before.median():.4f}, after {after.median():.4f}; "
          f"{paired(after, before)}")
    for lo, hi in ((10, 29), (15, 29)):
        keep = lambda s: s[(s.index >= lo) & (s.index <= hi)]  # noqa: E731
        print(f"  DML-CMR seeds {lo}-{hi}: {paired(keep(after), keep(before))}")
    print(f"  (first before-run, before-fast-dropout/demand-iv-nn.csv, DML-CMR N=5000 median "
          f"{per_seed(csv('demand-iv-nn.csv', OLD), 5000, 'dml-cmr').median():.4f})")

    print("\n== raw-noise demand-iv, gb (demand-iv-gb.csv)")
    table(csv("demand-iv-gb.csv"))

    print("\n== raw-noise demand-iv, IV strength 0.4 (demand-iv-weak-nn.csv); growth = median(0.4) / median(1.0)")
    weak = csv("demand-iv-weak-nn.csv")
    table(weak)
    for n in (2000, 5000):
        growth = {NAMES[m]: per_seed(weak, n, m).median() / per_seed(nn, n, m).median() for m in NAMES}
        print(f"  N={n}: " + ", ".join(f"{k} {v:.1f}x" for k, v in growth.items()))
        for m in ("dml-cmr", "ce-dml-cmr", "sieve-2sls"):
            print(f"  N={n}, strength 0.4: {wins(weak, n, m, 'naive')}")
    rows = DERIVED / "first-stage.csv"
    if rows.exists():
        print("  first stage, seed 0 (raw-design/first-stage.csv):")
        for _, r in pd.read_csv(rows).iterrows():
            print(f"    {r.noise_scale:12s} strength {r.iv_strength} N={r.n}: partial R2 {r.partial_r2:.3f}, "
                  f"F {r.f_stat:,.0f}")

    print("\n== draws per row, CE-DML-CMR, N = 5000, seeds 0-4")
    for label, frame in (("M=1 draws-1.csv", csv("draws-1.csv")), ("M=16 draws-16.csv", csv("draws-16.csv"))):
        print(f"  {label:44s} {summary(frame['mse'], frame['seconds'])}")
    for label, frame in (("M=8 before-fast-dropout/demand-iv-nn.csv", csv("demand-iv-nn.csv", OLD)),
                         ("M=8 demand-iv-nn.csv (after the change)", nn)):
        cell = frame[(frame["n"] == 5000) & (frame["method"] == "ce-dml-cmr") & (frame["seed"] <= 4)]
        print(f"  {label:44s} {summary(cell['mse'], cell['seconds'])}")

    print("\n== raw-noise digits-iv (digits-iv-nn.csv)")
    digits = csv("digits-iv-nn.csv")
    table(digits)
    for n in (1000, 5000):
        print(f"  N={n}: {wins(digits, n, 'naive', 'dml-cmr')}; {wins(digits, n, 'naive', 'ce-dml-cmr')}")


def speed() -> None:
    print("\n== speed on an idle machine (speed-idle.jsonl; before: before-fast-dropout/speed-idle.jsonl, first 18)")
    after = jsonl(RES / "speed-idle.jsonl")
    before = jsonl(OLD / "speed-idle.jsonl").iloc[:18]
    for label, frame in (("before", before), ("after", after)):
        for threads in (1, 2):
            part = frame[frame["torch_threads"] == threads]
            med = part.groupby("method")["seconds"].median()
            sec = part.pivot(index="seed", columns="method", values="seconds")
            ratio = sec["dml-cmr"] / sec["ce-dml-cmr"]
            print(f"  {label:6s} {threads} thread(s): median s DML {med['dml-cmr']:.1f}, CE {med['ce-dml-cmr']:.1f}, "
                  f"naive {med['naive']:.1f}; K-fold/CE per seed {', '.join(f'{r:.2f}' for r in ratio)} -> "
                  f"median {ratio.median():.2f} (ratio of medians {med['dml-cmr'] / med['ce-dml-cmr']:.2f}); "
                  f"load {part['load_avg_1min'].min()}-{part['load_avg_1min'].max()}")

    print("\n== the full plan (speed.jsonl, seed 1, loaded machine)")
    plan = jsonl(RES / "speed.jsonl")
    for _, r in plan.iterrows():
        if r["method"] == "sequential-folds":
            print(f"  sequential {r['seconds_sequential']:.1f} s vs batched {r['seconds_batched']:.1f} s: "
                  f"{r['seconds_sequential'] / r['seconds_batched']:.2f}x")
        else:
            print(f"  {r['method']:10s} {r['learner']} N={r['n']} K={r['folds']} threads={r['torch_threads']}: "
                  f"{r['seconds']:.1f} s, {r['peak_rss_mb']:.0f} MiB, mse {r['mse']:.4f}, load {r['load_avg_1min']}")
    one = plan[plan["torch_threads"] == 1].set_index(["method", "learner", "n", "folds"])["seconds"]
    print(f"  K-fold/CE nn {one['dml-cmr', 'nn', 5000, 10] / one['ce-dml-cmr', 'nn', 5000, 10]:.2f}, "
          f"gb {one['dml-cmr', 'gb', 5000, 10] / one['ce-dml-cmr', 'gb', 5000, 10]:.2f}; two threads loaded / one: "
          f"{plan[plan['torch_threads'] == 2]['seconds'].iloc[0] / one['dml-cmr', 'nn', 5000, 10]:.1f}x")


def other_sections() -> None:
    print("\n== demand-pcl (demand-pcl-nn.csv; before: before-fast-dropout/demand-pcl-nn.csv)")
    table(csv("demand-pcl-nn.csv"))
    old = csv("demand-pcl-nn.csv", OLD)
    print("  before the change: " + "; ".join(f"N={n} {NAMES[m]} {c['mse'].median():.2f}"
                                              for (n, m), c in old.groupby(["n", "method"])))

    print("\n== dsprites-pcl (dsprites-pcl-nn.csv)")
    sprites = csv("dsprites-pcl-nn.csv")
    for _, r in sprites.iterrows():
        print(f"  N={r['n']} seed {r['seed']} {NAMES[r['method']]:10s} {r['mse']:.2f} ({r['seconds']:,.0f} s)")
    truth = DERIVED / "dsprites-truth.json"
    if truth.exists():
        t = json.loads(truth.read_text())
        share = 1.0 - sprites["mse"] / t["truth_variance"]
        print(f"  truth variance {t['truth_variance']:.3f} over {t['test_sprites']} sprites; share explained "
              f"{share.min():.1%} to {share.max():.1%}; corr(W, posY) {t['proxy_confounder_correlation']:.3f}")
    print(f"  N=5000 seed 0 process: {time_log(RES / 'dsprites-pcl-nn-5000-seed0.log')}")

    print("\n== image step (image-step.jsonl) and whole fits (dsprites-pcl-keep-memory-*)")
    for _, r in jsonl(RES / "image-step.jsonl").iterrows():
        print(f"  keep={r['keep_freed_memory']}: {r['wall_s']} s/step, user {r['user_s']}, system {r['system_s']}, "
              f"{r['minor_faults']:,} faults/step, peak {r['peak_rss_mb'] / 1024:.2f} GiB")
    for name in ("dsprites-pcl-keep-memory-0", "dsprites-pcl-keep-memory-1"):
        print(f"  {name}.csv: " + ", ".join(f"{NAMES[r['method']]} {r['seconds']:.1f} s mse {r['mse']:.4f} "
                                           f"(seed {r['seed']})" for _, r in csv(name + ".csv").iterrows()))
    for name in ("dsprites-pcl-keep-memory-0", "dsprites-pcl-keep-memory-1", "dsprites-pcl-keep-memory-1-dml"):
        t = time_log(RES / f"{name}.log")
        print(f"  {name}.log: wall {t['wall_s']:.0f} s, system {t['system_s']:.1f} s, peak {t['peak_gib']:.2f} GiB")

    print("\n== IHDP (ihdp-nn.csv)")
    table(csv("ihdp-nn.csv"), keys=("method",))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="(re)write the derived rows in bench/results/raw-design/")
    args = parser.parse_args()
    if args.rows:
        write_rows()
    demand_iv()
    speed()
    other_sections()


if __name__ == "__main__":
    main()

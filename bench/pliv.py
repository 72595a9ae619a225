"""The Learn page's "Orthogonality that works" at full size: both scores, with and without
cross-fitting, on many simulated partially linear IV data sets (dmlcore.teaching.pliv).

    .venv/bin/python -m bench.pliv [--sims 1000] [--n 1000] [--folds 5]

Writes the per-simulation rows to dmlcore/teaching/pliv.csv (shipped: the page draws its
histograms from it and can recompute a small version live) and the timing, date, machine and
load average to bench/results/teaching/run.json (entry "pliv").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from dmlcore.teaching import pliv


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, value in pliv.CACHE_SETTINGS.items():
        parser.add_argument(f"--{name}", type=int, default=value)
    parser.add_argument("--out", default=str(pliv.CACHE))
    args = parser.parse_args(argv)
    exp = pliv.simulations(n=args.n, sims=args.sims, folds=args.folds, seed=args.seed,
                           callback=lambda f, text: print(text, flush=True) if text.endswith("00 of " + str(args.sims))
                           else None)
    exp.draws[["sim", "score", "cross-fitting", "theta_hat", "se"]].to_csv(args.out, index=False, float_format="%.6g")
    print(exp.summary.to_string(index=False))
    log = ROOT / "bench" / "results" / "teaching" / "run.json"
    runs = json.loads(log.read_text()) if log.exists() else {}
    runs["pliv"] = {"seconds": round(exp.seconds, 2), "date": time.strftime("%Y-%m-%d %H:%M:%S%z"),
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                    "load average": os.getloadavg()[0], "settings": vars(args)}
    log.write_text(json.dumps(runs, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

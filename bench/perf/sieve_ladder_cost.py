"""Issue 54: the sieve effect's time (dmlcore.inference.sieve_dimension.sieve_effect, the default ladder) on demand-pcl,
moderate-pcl (bench/sieve_dimension.py's n, seed 0) and RHC, with this checkout's code and with the code of an
earlier commit (``--before``, default the commit before the treatment x proxy rungs), each timed in its own process,
the two alternated ``--rounds`` times; per round the median of ``--repeats`` calls. A relative figure on a shared
machine: both see the same load; time it again on an idle machine for absolute seconds. Rows (one per code, round
and data set) are appended to ``--out`` with the date, machine and load.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 5 python -m bench.perf.sieve_ladder_cost
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BEFORE = "3362bbc"
OUT = ROOT / "bench" / "results" / "sieve-dimension-2026-11-29-1115" / "cost.jsonl"


def time_here(repeats: int) -> list[dict]:
    """Time sieve_effect with the dmlcore this process imports."""
    from bench.sieve_dimension import design_data
    from dmlcore.data.registry import load_dataset
    from dmlcore.inference.sieve_dimension import sieve_effect
    from dmlcore.runs.average_effect import contrast
    cases = [(d, *design_data(d, 0)) for d in ("demand-pcl", "moderate-pcl")]
    rhc = load_dataset("rhc")
    cases.append(("rhc", rhc, contrast(rhc.data), None))
    out = []
    for name, loaded, plan, groups in cases:
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            r = sieve_effect(loaded.data, plan, groups=groups)
            seconds.append(time.perf_counter() - start)
        import dmlcore
        out.append({"data": name, "seconds": float(np.median(seconds)), "rungs": len(r["rungs"]),
                    "dmlcore": str(Path(dmlcore.__file__).parent)})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default=BEFORE)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(time_here(args.repeats)))
        return 0
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "dmlcore"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        rows = []
        for round_ in range(args.rounds):
            for code, here in ((args.before, old), ("this checkout", str(ROOT))):
                # -m puts the working folder first on the path: the old dmlcore there, bench/ from this checkout
                env = {**os.environ, "PYTHONPATH": f"{here}{os.pathsep}{ROOT}"}
                load = os.getloadavg()[0]
                text = subprocess.run([sys.executable, "-m", "bench.perf.sieve_ladder_cost", "--child", "--repeats",
                                       str(args.repeats)], env=env, cwd=here, check=True, capture_output=True,
                                      text=True).stdout
                for r in json.loads(text.strip().splitlines()[-1]):
                    rows.append({**r, "code": code, "round": round_, "load_1min": load})
                    print(json.dumps(rows[-1]), flush=True)
    meta = {"command": "python -m bench.perf.sieve_ladder_cost " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": platform.machine(),
            "cores": os.cpu_count(), "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}
    with open(args.out, "a") as handle:
        for r in rows:
            handle.write(json.dumps({**r, **meta}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

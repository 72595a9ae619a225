"""Issue 44 / 54: the added time of the sieve effect's treatment x proxy rungs (dmlcore.inference.sieve_dimension.DD_LADDER's
last two) on demand-pcl, moderate-pcl (the bench's n and seed 0) and RHC: the sieve effect with the six additive rungs
and with the whole ladder, alternated ``--repeats`` times in one process, medians reported. A relative figure: on a
shared machine both ladders see the same load; time it again on an idle machine for absolute seconds.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m bench.perf.sieve_ladder_cost --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone

import numpy as np

from bench.sieve_dimension import design_data
from dmlcore.data.registry import load_dataset
from dmlcore.inference.sieve_dimension import DD_LADDER, sieve_effect
from dmlcore.runs.average_effect import contrast


def cases():
    for design in ("demand-pcl", "moderate-pcl"):
        loaded, plan, groups = design_data(design, 0)
        yield design, loaded.data, plan, groups
    rhc = load_dataset("rhc").data
    yield "rhc", rhc, contrast(rhc), None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    out = []
    for name, data, plan, groups in cases():
        times = {"additive": [], "whole": []}
        for _ in range(args.repeats):
            for label, ladder in (("additive", DD_LADDER[:6]), ("whole", DD_LADDER)):
                start = time.perf_counter()
                r = sieve_effect(data, plan, ladder=ladder, groups=groups)
                times[label].append(time.perf_counter() - start)
        row = {"data": name, "rows": len(data.table), "additive_s": float(np.median(times["additive"])),
               "whole_s": float(np.median(times["whole"])), "rung": r["rung"], "unchecked": r["unchecked"],
               "rungs": [[x["rung"], x["functions"], x.get("strength"), x.get("skipped")] for x in r["rungs"]]}
        row["added_s"] = row["whole_s"] - row["additive_s"]
        out.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": platform.machine(),
                      "cores": os.cpu_count(), "load_1min": os.getloadavg()[0],
                      "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The numbers of the real-data exercises (Learn → Card, Learn → RHC; docs/teaching.md's answer keys).

    .venv/bin/python -m bench.card_exercise [--skip-dml]

Computes :func:`dmlcore.teaching.card.linear_steps` and :func:`~dmlcore.teaching.card.dml_cmr`
(bench/results/teaching/card.json), the plausibly-exogenous intervals of
:func:`dmlcore.teaching.plausible.card_sensitivity` (card-plausible.json) and the proximal exercise's
linear steps :func:`dmlcore.teaching.rhc.proxy_steps` (rhc-exercise.json), each with date, machine
and load average. docs/teaching.md shows them through generated blocks (``python bench/docs.py
--write``; bench/docgen/teaching.py). ``--skip-dml`` keeps card.json's DML-CMR fit (minutes under load).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from dmlcore.teaching import card, plausible, rhc

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "teaching"


def meta(start: float) -> dict:
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S%z"), "seconds": round(time.perf_counter() - start, 1),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load average": os.getloadavg()[0]}


def write(name: str, payload: dict) -> None:
    (OUT / name).write_text(json.dumps(payload, indent=1, default=str) + "\n")
    print(f"wrote {OUT / name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-dml", action="store_true", help="keep card.json's DML-CMR fit")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(limits=1, user_api="openmp"):
        start = time.perf_counter()
        steps = card.linear_steps()
        dml = (json.loads((OUT / "card.json").read_text())["dml_cmr"] if args.skip_dml else card.dml_cmr())
        write("card.json", {"linear": steps, "dml_cmr": dml, "run": meta(start)})
        start = time.perf_counter()
        sens = plausible.card_sensitivity()
        write("card-plausible.json", {**{k: v for k, v in sens.items() if k != "table"},
                                      "table": sens["table"].to_dict(orient="records"), "run": meta(start)})
        start = time.perf_counter()
        write("rhc-exercise.json", {**rhc.proxy_steps(), "run": meta(start)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

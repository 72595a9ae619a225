"""The numbers of the Card (1995) exercise (Learn → Card; docs/teaching.md's answer key).

    .venv/bin/python -m bench.card_exercise [--docs docs/teaching.md]

Computes :func:`dmlcore.teaching.card.linear_steps` and :func:`~dmlcore.teaching.card.dml_cmr`,
writes them to bench/results/teaching/card.json (with date, machine, load average) and
rewrites the block between ``<!-- card-numbers:begin -->`` and ``<!-- card-numbers:end -->``
in the docs file, so that the answer key quotes what the tool computes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from threadpoolctl import threadpool_limits

from dmlcore.teaching import card

BEGIN, END = "<!-- card-numbers:begin -->", "<!-- card-numbers:end -->"


def table(s: dict, dml: dict) -> str:
    f3 = "{:.3f}".format
    ar = s["ar"]
    rows = [
        ("First stage: educ on nearc4 (given X)", f3(s["first_stage"]["coef"]), f"s.e. {f3(s['first_stage']['se'])}"),
        ("Reduced form: lwage on nearc4 (given X)", f3(s["reduced_form"]["coef"]), f"s.e. {f3(s['reduced_form']['se'])}"),
        ("Their ratio (= 2SLS)", f3(s["ratio"]), ""),
        ("OLS of lwage on educ (given X)", f3(s["ols"]["coef"]), f"[{f3(s['ols']['lower'])}, {f3(s['ols']['upper'])}]"),
        ("2SLS", f3(s["tsls"]["coef"]), f"[{f3(s['tsls']['lower'])}, {f3(s['tsls']['upper'])}] (s.e. {f3(s['tsls']['se'])})"),
        ("First-stage F", f"{s['f_stat']:.1f}", s["strength"]["level"]),
        ("Anderson-Rubin 95 % set", "", f"[{f3(ar['lower'])}, {f3(ar['upper'])}]" if ar["shape"] == "interval"
         else ar["shape"]),
        (f"DML-CMR ({dml['settings']['learner']}, K = {dml['settings']['folds']}, spline f): average derivative"
         + (", debiased" if dml["debiased"] else ""), f3(dml["coef"]),
         (f"[{f3(dml['lower'])}, {f3(dml['upper'])}]" if dml["lower"] is not None else "no interval")
         + f" ({dml['interval']})"),
        ("DML-CMR: the plug-in (f-hat's own slope)", f3(dml["plug_in"]["estimate"]),
         f"[{f3(dml['plug_in']['ci_lower'])}, {f3(dml['plug_in']['ci_upper'])}] (delta method, nuisances held fixed)"
         if dml["plug_in"]["ci_lower"] is not None else "no interval"),
    ]
    lines = ["| step | estimate | 95 % interval / note |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(ROOT / "docs" / "teaching.md"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "teaching" / "card.json"))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="openmp"):
        steps, dml = card.linear_steps(), card.dml_cmr()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S%z"), "seconds": round(time.perf_counter() - start, 1),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load average": os.getloadavg()[0]}
    Path(args.out).write_text(json.dumps({"linear": steps, "dml_cmr": dml, "run": meta}, indent=1, default=str))
    block = (f"{BEGIN}\n{table(steps, dml)}\n\n*Written by `python -m bench.card_exercise` on {meta['date']} "
             f"(`bench/results/teaching/card.json`).*\n{END}")
    docs = Path(args.docs)
    text = docs.read_text()
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
        docs.write_text(text)
    print(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

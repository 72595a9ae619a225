"""Each method's average treatment effect of right heart catheterization on 30-day survival (rhc).

Fits every method on the built-in ``rhc`` data (dmlcore/data/files/rhc.csv.gz, proximal roles)
through ``fit_run``, as the CLI does, and prints the effect E[Y | do(1)] - E[Y | do(0)] in days
with its 95 % interval and the held-out score. The DML-CMR family runs twice: with the spline
second stage (delta-method interval) and, with ``--bootstrap B``, with the learner's own second
stage and B bootstrap refits. Raw rows go to ``--out`` (CSV, appended).

    python -m bench.rhc_effects --learner gb --folds 5 --bootstrap 100 --jobs 2 \\
        --out bench/results/rhc-effects.csv

``--first-stage FILE`` writes the proxies' linear first stage (its F, which the weak-identification
flag reads) as JSON. ``--every-method`` (issue 31) fits every method the registry offers for these proximal data (the
learners' own f too, no bootstrap) and records, beside each effect, its interval or the one line
that says why there is none (``why``, with its length), and the debiased effect's interval:

    nice -n 19 python -m bench.rhc_effects --every-method --learner gb --folds 5 \\
        --out bench/results/rhc-effects-31.csv
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd


from dmlcore.data.registry import load_dataset
from dmlcore.inference.first_stage import first_stage
from dmlcore.estimators import METHODS, FitSettings, for_method
from dmlcore.runs import fit_run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--learner", default="gb")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bootstrap", type=int, help="also fit the learner's own f with B bootstrap refits")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", default="bench/results/rhc-effects.csv")
    p.add_argument("--methods", help="with --every-method: only these (comma-separated)")
    p.add_argument("--first-stage", metavar="JSON",
                   help="write the proxies' linear first stage (the F the weak-identification flag reads) to JSON")
    p.add_argument("--every-method", action="store_true",
                   help="every method for these data, each with its interval or the line saying why not")
    args = p.parse_args()
    data = load_dataset("rhc").data
    if args.first_stage:
        strength = first_stage(data, nonparametric=False, inference=False)["strength"]
        Path(args.first_stage).write_text(json.dumps({k: strength[k] for k in ("f_stat", "statistic", "text")}, indent=1))
        return
    if args.every_method:
        every_method(data, args)
        return
    family = {"learner": args.learner, "folds": args.folds}
    fits = [("2sls", {}), ("sieve-2sls", {})]
    fits += [(m, {**family, "f_model": "sieve"}) for m in ("dml-cmr", "ce-dml-cmr", "naive")]
    if args.bootstrap:
        fits += [(m, {**family, "bootstrap": args.bootstrap, "jobs": args.jobs}) for m in ("dml-cmr", "naive")]
    rows = []
    for method, kwargs in fits:
        start = time.perf_counter()
        record = fit_run(data, method, for_method(FitSettings(**kwargs), method), dataset="rhc", seed=args.seed).record
        effect, held = record["effect"], record["heldout"]
        rows.append({"method": method, "learner": record["learner"], "f_model": record.get("f_model"),
                     "bootstrap": kwargs.get("bootstrap"), "estimate": effect["estimate"],
                     "lower": effect["ci_lower"], "upper": effect["ci_upper"], "interval": effect["interval"],
                     "heldout": held["relative"], "heldout_se": held["relative_std_error"],
                     "seconds": time.perf_counter() - start, "seed": args.seed})
        print(f"{method:<11} {record.get('f_model') or '':<6} {effect['estimate']:7.2f} "
              f"[{effect['ci_lower']:6.2f}, {effect['ci_upper']:6.2f}]  held-out {held['relative']:.4f} "
              f"(s.e. {held['relative_std_error']:.4f})  {rows[-1]['seconds']:.0f} s  {effect['interval'][:40]}",
              flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
    print(f"raw rows appended to {out}")


def why_not(effect: dict) -> str | None:
    """The line a record gives for a missing headline interval (None when it has one)."""
    if effect.get("ci_lower") is not None:
        return None
    return effect.get("error") or effect.get("interval") or "no interval and no reason given"


def every_method(data, args) -> None:
    """Every method that takes ``data`` (the registry's refusal is None), one row each (module notes)."""
    rows = []
    for method, entry in METHODS.items():
        if entry.refusal(data) is not None or (args.methods and method not in args.methods.split(",")):
            continue
        kwargs = {"learner": args.learner, "folds": args.folds} if entry.uses_learner else {}
        start = time.perf_counter()
        try:
            record = fit_run(data, method, for_method(FitSettings(**kwargs), method), dataset="rhc", seed=args.seed,
                             heldout_folds=0).record
        except Exception as exc:   # a method that fails is a row with its one line, not the end of the table
            rows.append({"method": method, "why": f"fit failed: {exc}".split("\n")[0],
                         "seconds": time.perf_counter() - start})
            continue
        effect = record["effect"]
        debiased = effect.get("debiased") or {}
        why = why_not(effect)
        rows.append({"method": method, "learner": record["learner"], "f_model": record.get("f_model"),
                     "estimate": effect["estimate"], "lower": effect["ci_lower"], "upper": effect["ci_upper"],
                     "interval": (effect.get("interval") or "")[:120], "why": why, "why_chars": len(why) if why else None,
                     "plug_in": (effect.get("plug_in") or {}).get("estimate"),
                     "debiased": debiased.get("estimate"), "debiased_lower": debiased.get("ci_lower"),
                     "debiased_upper": debiased.get("ci_upper"), "debiased_error": effect.get("debiased_error"),
                     "weak": effect.get("weakly_identified"), "seconds": time.perf_counter() - start,
                     "seed": args.seed})
        r = rows[-1]
        shown = (f"[{r['lower']:.2f}, {r['upper']:.2f}]" if r["lower"] is not None else f"no interval: {why}")
        print(f"{method:<11} {r['estimate'] if r['estimate'] is None else round(r['estimate'], 3)} {shown}  "
              f"{r['seconds']:.0f} s", flush=True)
        out = Path(args.out)                       # after every method: a stopped run keeps what it has
        out.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(out, index=False)
    print(f"rows written to {args.out}")


if __name__ == "__main__":
    main()

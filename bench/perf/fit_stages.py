"""Where the default fit's seconds go: one fit, every part in this one process, timed by part (issue 45, item 3).

Run by ``python -m bench.perf.default_fit`` in a fresh process (its row's ``breakdown``), or alone::

    python -m bench.perf.fit_stages --n 5000 --seed 0      # prints the JSON

It imports what ``dmlcore fit`` imports (``dmlcore.cli``) and times that, then makes the default fit's run
(demand-iv, learner nn, K = 10, the nuisances ``auto``, the debiased effect on) with ``jobs`` = 1, so that the
refits run after the fit in this process and each part's CPU seconds are its own (with workers they run beside
the fit, and each worker imports dmlcore again). The parts, from the fit's progress stages (their names in
dmlcore/learners/select.py and dmlcore/estimators/dml.py) and, for the two effects, by timing the calls
``effect_record`` makes:

- ``imports``: ``import dmlcore.cli``; ``data``: simulating the data set;
- ``choice``: auto's pilot, every candidate's fits on the first PILOT folds and their scores;
- ``nuisances``: the chosen candidates fitted on every fold, then the targets and the draws;
- ``second_stage``: f fitted on the targets and draws, and its per-fold losses;
- ``refits``: the debiased effect's refits of the whole method on part of the rows (each with its own choice,
  nuisances and second stage), one after another here;
- ``debiased_effect`` and ``sieve_effect``: the correction's representer ladder and the sieve effect's ladder;
- ``other``: the rest (scoring against the truth, the first-stage diagnostics, the record).

Each part has ``wall`` and ``cpu`` seconds (``time.process_time``: this process's, less noisy on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def classify(stage: str) -> str:
    """The part of the breakdown a progress stage belongs to (module notes)."""
    if stage.startswith(("debiased effect", "held-out residual")):
        return "refits"
    if ": candidate " in stage:
        return "choice"
    if stage == "second stage f":
        return "second_stage"
    if ": the choice, " in stage or stage.startswith(("outcome model", "conditional distribution")):
        return "nuisances"
    return "other"


def breakdown(n: int = 5000, seed: int = 0) -> dict:
    """The parts' wall and CPU seconds of one default fit made here (module notes)."""
    clock = lambda: (time.perf_counter(), time.process_time())   # noqa: E731
    start = clock()
    import dmlcore.cli  # noqa: F401  (what the command imports first)
    from dmlcore.data.registry import load_dataset
    from dmlcore.runs import average_effect, fit_run
    imported = clock()
    loaded = load_dataset("demand-iv", n=n, seed=seed)
    ready = clock()
    parts = {"imports": [imported[0] - start[0], imported[1] - start[1]],
             "data": [ready[0] - imported[0], ready[1] - imported[1]]}
    events = []        # (part, wall, cpu) at each stage's start

    def add(part, since, until):
        total = parts.setdefault(part, [0.0, 0.0])
        total[0] += until[0] - since[0]
        total[1] += until[1] - since[1]

    def timed(part, fn):
        def call(*args, **kwargs):
            began = clock()
            events.append(("effect", *began))      # the stage before it stops here
            try:
                return fn(*args, **kwargs)
            finally:
                add(part, began, clock())
                events.append(("other", *clock()))
        return call

    originals = {name: getattr(average_effect, name) for name in ("add_debiased", "add_sieve_effect")}
    average_effect.add_debiased = timed("debiased_effect", originals["add_debiased"])
    average_effect.add_sieve_effect = timed("sieve_effect", originals["add_sieve_effect"])
    try:
        fit_start = clock()
        events.append(("other", *fit_start))
        run = fit_run(loaded.data, "dml-cmr", truth=loaded.truth, learner="nn", folds=10, seed=seed, jobs=1,
                      callback=lambda e: events.append((classify(e["stage"]), *clock())) if e.get("type") == "stage"
                      else None)
        end = clock()
    finally:
        for name, fn in originals.items():
            setattr(average_effect, name, fn)
    events.append(("end", *end))
    for (part, wall, cpu), (_, next_wall, next_cpu) in zip(events, events[1:]):
        if part != "effect":                        # the effects' own time is added by their wrappers
            add(part, (wall, cpu), (next_wall, next_cpu))
    order = ["imports", "data", "choice", "nuisances", "second_stage", "refits", "debiased_effect", "sieve_effect",
             "other"]
    seconds = {part: {"wall": round(parts[part][0], 2), "cpu": round(parts[part][1], 2)}
               for part in order if part in parts}
    return {"how": ("one default fit in one process (jobs 1: the refits after the fit, here), timed by its progress "
                    "stages and the effect calls (bench/perf/fit_stages.py)"),
            "seconds": seconds,
            "total": {"wall": round(end[0] - start[0], 2), "cpu": round(end[1] - start[1], 2)},
            "fit_seconds": round(run.record["seconds"], 2), "mse": run.record["mse"],
            "nuisances": {role: sel["choice"] for role, sel in (run.record.get("nuisances") or {}).items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(breakdown(args.n, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

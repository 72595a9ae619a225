"""The default fit's time: DML-CMR against CE-DML-CMR, each as a user runs it (issue 32, item 3).

Each method is one run of the command line in a fresh process, with the default effect and the
default nuisances (``auto``), exactly as a user types it::

    dmlcore fit --dataset demand-iv --learner nn --n 5000 --method dml-cmr --folds 10 --json ...
    dmlcore fit --dataset demand-iv --learner nn --n 5000 --method ce-dml-cmr --json ...   (it has no folds)

The row (one JSON line appended to ``--out``) has the date, the machine (CPU model, cores), the load
average before and after each run, the git commit (and whether the tree had uncommitted changes),
the whole command's wall time (what the user waits for, imports included), the fit's own time from
the run record, the nuisances auto chose and their held-out losses, and the targets: DML-CMR's command
within 1.5 times CE-DML-CMR's and within 20 s on 2 idle cores (issue 45; 15 s its goal; 30 s before). ``--named`` adds the same two runs with
the nuisances named (``--outcome-learner nn --sampler nn``, the default before auto) to measure what
auto costs; ``--no-debias-too`` adds both with ``--no-debias`` (what the debiased effect's refits cost);
``--jobs-one-too`` adds both with ``--jobs 1``: the refits one after another in the command's own process
after the fit, as before they ran in worker processes beside it (issue 45), to measure what that saves (the
records must be the same: the row says whether they are). The row also has the machine's load at its start
and end and ``--other-work`` (bench/perf/load.py). Each run has ``cpu_seconds``: the CPU seconds of the command
and its worker processes (``resource.getrusage`` of the finished children: less noisy than wall time on a shared
machine). ``breakdown`` (unless ``--no-breakdown``) is where the default fit's seconds go, part by part (imports,
the nuisances' choice, the chosen nuisances, the second stage, the refits, the debiased effect, the sieve effect):
one more DML-CMR fit with every part in one process, run after the timed ones (bench/perf/fit_stages.py).
docs/benchmarks.md ("The default fit's time") is generated from the newest row::

    python -m bench.perf.default_fit                    # about 2 min on 2 idle cores (with the breakdown)
    python -m bench.perf.default_fit --named            # and the nuisances named nn (auto's cost)
    python -m bench.perf.default_fit --no-debias-too    # and without the debiased effect (its cost)
    python -m bench.perf.default_fit --jobs-one-too --other-work "nothing"   # and the refits in process (issue 45)
    python bench/docs.py --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.perf import load
from dmlcore.estimators import get_method
from dmlcore.studies.provenance import processor

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "results" / "default-fit.jsonl"
SETTINGS = ["--dataset", "demand-iv", "--learner", "nn"]   # and --n (5000); DML-CMR --folds 10 (CE has none)
METHODS = ("dml-cmr", "ce-dml-cmr")
NAMED = ["--outcome-learner", "nn", "--sampler", "nn"]
NO_DEBIAS = ["--no-debias"]
IN_PROCESS = ["--jobs", "1"]      # the refits after the fit in the command's process (before issue 45)
# issue 45's targets for DML-CMR's default command on 2 idle cores: within 20 s at the least, 15 s the goal (the
# rows before 2026-11-29 11:00 carry issue 32's 30 s); and within 1.5 times CE-DML-CMR's
RATIO_TARGET, SECONDS_TARGET, SECONDS_GOAL = 1.5, 20.0, 15.0


def machine() -> str:
    return f"{processor()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def commit() -> dict:
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    changed = [line for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
               if not line[3:].startswith("bench/results/")]
    return {"commit": git("rev-parse", "--short", "HEAD"), "uncommitted_changes": bool(changed)}


def run_once(method: str, extra: list[str], seed: int, n: int) -> dict:
    """One ``dmlcore fit`` in a fresh process: its wall time and what its record says."""
    with tempfile.TemporaryDirectory() as tmp:
        record_path = Path(tmp) / "run.json"
        folds = ["--folds", "10"] if get_method(method).cross_fits else []
        argv = ["fit", *SETTINGS, "--n", str(n), "--method", method, *folds, "--seed", str(seed), *extra, "--json",
                str(record_path)]
        load_before = os.getloadavg()
        cpu_before = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "dmlcore", *argv], cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        cpu = _children_cpu() - cpu_before
        if done.returncode != 0:
            raise SystemExit(f"dmlcore {' '.join(argv)} failed:\n{done.stderr[-2000:]}")
        record = json.loads(record_path.read_text())
    effect = record.get("effect") or {}
    computed = {k: v for k, v in record.items() if k not in ("seconds", "created")}   # what the run computed
    return {"method": method, "command": "dmlcore " + " ".join(a for a in argv if not a.endswith("run.json")
                                                               and a != "--json"),
            "named": NAMED[0] in extra, "debias": NO_DEBIAS[0] not in extra,
            "refits": "in process" if IN_PROCESS[0] in extra else "workers",
            "record_sha256": hashlib.sha256(json.dumps(computed, sort_keys=True).encode()).hexdigest(),
            "command_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "fit_seconds": round(record["seconds"], 2),
            "mse": record.get("mse"), "effect": (effect.get("interval") or "").split(":")[0] or None,
            "nuisances": {role: {"choice": sel["choice"], "heldout_loss": sel["heldout_loss"]}
                          for role, sel in (record.get("nuisances") or {}).items()},
            "outcome_learner": record["config"].get("outcome_learner"), "sampler": record["config"].get("sampler"),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}


def _children_cpu() -> float:
    """User and system CPU seconds of this process's finished children (a command, and the workers it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def breakdown(n: int, seed: int) -> dict:
    """Where the default fit's seconds go (bench/perf/fit_stages.py), measured in a fresh process."""
    done = subprocess.run([sys.executable, "-m", "bench.perf.fit_stages", "--n", str(n), "--seed", str(seed)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench.perf.fit_stages failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(runs: list[dict]) -> dict:
    """The targets on the default (auto) runs: DML-CMR / CE-DML-CMR and DML-CMR's seconds."""
    own = {r["method"]: r["command_seconds"] for r in runs
           if not r["named"] and r.get("debias", True) and r.get("refits") != "in process"}
    ratio = own["dml-cmr"] / own["ce-dml-cmr"]
    out = {"ratio": round(ratio, 3), "ratio_target": RATIO_TARGET, "ratio_met": ratio <= RATIO_TARGET,
           "seconds_target": SECONDS_TARGET, "seconds_met": own["dml-cmr"] <= SECONDS_TARGET,
           "seconds_goal": SECONDS_GOAL, "seconds_goal_met": own["dml-cmr"] <= SECONDS_GOAL}
    named = {r["method"]: r["command_seconds"] for r in runs if r["named"]}
    if named:
        out["auto_cost"] = {m: round(own[m] / named[m], 3) for m in named}   # auto's time over the named nn's
    bare = {r["method"]: r["command_seconds"] for r in runs if not r.get("debias", True)}
    if bare:   # seconds the debiased effect adds to each method's command
        out["effect_seconds"] = {m: round(own[m] - bare[m], 2) for m in bare}
    inline = {r["method"]: r for r in runs if r.get("refits") == "in process"}
    if inline:   # seconds the refits in worker processes save, and whether the records are the same
        same = {r["method"]: r["record_sha256"] for r in runs if r["method"] in inline and not r["named"]
                and r.get("debias", True) and r.get("refits") != "in process"}
        out["workers_save_seconds"] = {m: round(inline[m]["command_seconds"] - own[m], 2) for m in inline}
        out["records_identical"] = all(inline[m]["record_sha256"] == same[m] for m in inline)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(OUT), help="JSONL file the row is appended to")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=5000, help="rows (5000: the issue's setting; smaller to try it)")
    parser.add_argument("--named", action="store_true", help="also time the nuisances named nn (auto's cost)")
    parser.add_argument("--no-debias-too", action="store_true",
                        help="also time both methods with --no-debias (the debiased effect's cost)")
    parser.add_argument("--jobs-one-too", action="store_true",
                        help="also time both methods with --jobs 1 (the refits in process after the fit)")
    parser.add_argument("--no-breakdown", action="store_true",
                        help="leave out the breakdown (one more fit, every part in one process, timed by part)")
    parser.add_argument("--note", default="", help="what the machine was doing (recorded)")
    parser.add_argument("--other-work", help="what else the machine is running (recorded; bench/perf/load.py)")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    code = commit()          # the code the runs import, taken before them
    load_start = load.start()
    runs = [run_once(method, [], args.seed, args.n) for method in METHODS]
    if args.named:
        runs += [run_once(method, NAMED, args.seed, args.n) for method in METHODS]
    if args.no_debias_too:
        runs += [run_once(method, NO_DEBIAS, args.seed, args.n) for method in METHODS]
    if args.jobs_one_too:
        runs += [run_once(method, IN_PROCESS, args.seed, args.n) for method in METHODS]
    parts = None if args.no_breakdown else breakdown(args.n, args.seed)
    row = {"date": started, "machine": machine(), **code, "python": platform.python_version(),
           "n": args.n, "seed": args.seed, "note": args.note, "runs": runs, **summary(runs),
           **({"breakdown": parts} if parts else {}), **load.fields(load_start, args.other_work)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as handle:
        handle.write(json.dumps(row) + "\n")
    for r in runs:
        print(f"{r['command']}: {r['command_seconds']:.1f} s (fit {r['fit_seconds']:.1f} s, {r['cpu_seconds']:.1f} "
              f"CPU s), load {r['load_before'][0]:.2f} -> {r['load_after'][0]:.2f}")
    if parts:
        print("breakdown (one process, jobs 1; wall / CPU s): " + ", ".join(
            f"{k} {v['wall']:.1f} / {v['cpu']:.1f}" for k, v in parts["seconds"].items()))
    print(f"DML-CMR / CE-DML-CMR = {row['ratio']:.2f} (target {RATIO_TARGET}); wrote {out}")
    if "records_identical" in row:
        print(f"refits in workers save {row['workers_save_seconds']} s; records identical: {row['records_identical']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

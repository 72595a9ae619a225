"""What ``dmlcore fit`` spends on imports, before and after a change (issue 45, item 3).

Two source trees (``--before``: a folder holding the old ``dmlcore/``, e.g. made with
``git archive <commit> dmlcore | tar -x -C DIR``; ``--after``: this tree), each measured in fresh processes,
the trees taking turns run by run so that both see the same load:

- ``import``: ``python -X importtime -c "import dmlcore.cli"``: the sum of every module's own import time
  (what the command's process and each loky refit worker import before any work), and its share by top-level
  package;
- ``help``: the wall time of ``python -m dmlcore fit --help``;
- ``fit`` (``--fit-runs``, default 3): ``python -X importtime -m dmlcore fit`` on a tiny network fit
  (demand-iv, N = 300, nn, K = 2, 2 epochs, ``--jobs 1``): its wall time and the import time the fit itself
  adds after ``dmlcore`` is imported (``torch.optim``'s first step imports ``torch._dynamo`` with sympy and
  torch.distributed; dmlcore's own CPU AdamW does not).

Processes run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed, one warm-up run per tree first),
as a user's would; ``--no-pyc-too`` adds ``import`` runs of the after tree with it set, which compiles every
dmlcore module on every start (this project's shells set it). The row records the 1-minute load at the start
and end and around each run (bench/perf/load.py): on a shared machine the figures are relative (after against
before on the same load), never idle seconds::

    git archive 2ce4073 dmlcore | tar -x -C /tmp/before
    python -m bench.perf.import_time --before /tmp/before --other-work "6 helpers' tests"   # ~6 min loaded

A row is one JSON line appended to ``--out`` (bench/results/perf/import-time.jsonl).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.perf import load
from bench.perf.default_fit import commit, machine

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "results" / "perf" / "import-time.jsonl"
FIT = ["fit", "--dataset", "demand-iv", "--learner", "nn", "--n", "300", "--folds", "2", "--epochs", "2",
       "--jobs", "1", "--seed", "0"]
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def parse_importtime(text: str) -> list[tuple[int, int, str]]:
    """``(self µs, depth, module)`` of each line of ``-X importtime`` output, in its order."""
    return [(int(m[1]), len(m[3]) // 2, m[4]) for m in map(_LINE.match, text.splitlines()) if m]


def shares(rows) -> dict:
    """Own import time by top-level package, in ms, largest first (the ten largest and the rest)."""
    by = collections.Counter()
    for own, _, name in rows:
        by[name.split(".")[0]] += own
    top = dict((name, round(us / 1000)) for name, us in by.most_common(10))
    top["(rest)"] = round((sum(by.values()) - sum(us for _, us in by.most_common(10))) / 1000)
    return top


def _env(tree: Path, pyc: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if pyc:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run(tree: Path, args: list[str], pyc: bool = True) -> tuple[float, str, tuple, tuple]:
    before = os.getloadavg()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=tree, env=_env(tree, pyc), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} in {tree} failed:\n{done.stderr[-2000:]}")
    return wall, done.stderr, before, os.getloadavg()


def _loads(before, after) -> dict:
    return {"load_before": round(before[0], 2), "load_after": round(after[0], 2)}


def measure_import(tree: Path, pyc: bool = True) -> dict:
    wall, err, before, after = _run(tree, ["-X", "importtime", "-c", "import dmlcore.cli"], pyc)
    rows = parse_importtime(err)
    return {"import_ms": round(sum(r[0] for r in rows) / 1000), "modules": len(rows), "wall_s": round(wall, 2),
            "shares_ms": shares(rows), **_loads(before, after)}


def measure_help(tree: Path) -> dict:
    wall, _, before, after = _run(tree, ["-m", "dmlcore", "fit", "--help"])
    return {"wall_s": round(wall, 2), **_loads(before, after)}


def measure_fit(tree: Path) -> dict:
    wall, err, before, after = _run(tree, ["-X", "importtime", "-m", "dmlcore", *FIT])
    rows = parse_importtime(err)
    top = max(i for i, (_, depth, name) in enumerate(rows) if name == "dmlcore" and depth == 0)
    late = rows[top + 1:]
    return {"wall_s": round(wall, 2), "import_ms": round(sum(r[0] for r in rows) / 1000),
            "during_fit_import_ms": round(sum(r[0] for r in late) / 1000), "during_fit_modules": len(late),
            "torch_dynamo": any(name == "torch._dynamo" for _, _, name in rows), **_loads(before, after)}


def _median(runs: list[dict], key: str):
    return statistics.median(r[key] for r in runs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="folder holding the old dmlcore/ (see the module notes)")
    parser.add_argument("--before-label", default="", help="what --before is (e.g. its commit); recorded")
    parser.add_argument("--after", default=str(ROOT), help="folder holding the new dmlcore/ (default: this tree)")
    parser.add_argument("--runs", type=int, default=5, help="import and --help runs per tree (default 5)")
    parser.add_argument("--fit-runs", type=int, default=3, help="tiny nn fits per tree (default 3; 0: none)")
    parser.add_argument("--no-pyc-too", action="store_true",
                        help="also time the after tree's import with PYTHONDONTWRITEBYTECODE=1")
    parser.add_argument("--out", default=str(OUT), help="JSONL file the row is appended to")
    parser.add_argument("--other-work", help="what else the machine is running (recorded; bench/perf/load.py)")
    args = parser.parse_args(argv)
    trees = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    for name, tree in trees.items():
        if not (tree / "dmlcore" / "cli.py").is_file():
            raise SystemExit(f"--{name} {tree} holds no dmlcore/cli.py; give the folder above dmlcore/.")
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    code = commit()
    load_start = load.start()
    for tree in trees.values():            # warm-up: writes the bytecode caches
        _run(tree, ["-c", "import dmlcore.cli"])
    runs = {name: {"import": [], "help": [], "fit": []} for name in trees}
    for _ in range(args.runs):             # the trees take turns, so both see the same load
        for name, tree in trees.items():
            runs[name]["import"].append(measure_import(tree))
            runs[name]["help"].append(measure_help(tree))
    for _ in range(args.fit_runs):
        for name, tree in trees.items():
            runs[name]["fit"].append(measure_fit(tree))
    no_pyc = [measure_import(trees["after"], pyc=False) for _ in range(args.runs if args.no_pyc_too else 0)]
    summary = {}
    for name in trees:
        r = runs[name]
        summary[name] = {"import_ms_median": _median(r["import"], "import_ms"),
                         "help_wall_s_median": _median(r["help"], "wall_s")}
        if r["fit"]:
            summary[name] |= {"fit_wall_s_median": _median(r["fit"], "wall_s"),
                              "fit_import_ms_median": _median(r["fit"], "import_ms"),
                              "during_fit_import_ms_median": _median(r["fit"], "during_fit_import_ms")}
    ratio = {key.replace("_median", "_after_over_before"): round(summary["after"][key] / summary["before"][key], 3)
             for key in summary["after"] if summary["before"].get(key)}
    row = {"date": started, "machine": machine(), **code, "python": platform.python_version(),
           "bench": "import-time", "before": args.before_label or str(trees["before"]),
           "commands": {"import": "python -X importtime -c 'import dmlcore.cli'",
                        "help": "python -m dmlcore fit --help",
                        "fit": "python -X importtime -m dmlcore " + " ".join(FIT)},
           "bytecode_cache": True, "summary": summary, "ratio": ratio, "runs": runs,
           **({"no_pyc_import": no_pyc, "no_pyc_import_ms_median": _median(no_pyc, "import_ms")} if no_pyc else {}),
           **load.fields(load_start, args.other_work)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as handle:
        handle.write(json.dumps(row) + "\n")
    print(json.dumps({"summary": summary, "ratio": ratio, "load": [row["load_1min_start"], row["load_1min_end"]],
                      **({"no_pyc_import_ms_median": row["no_pyc_import_ms_median"]} if no_pyc else {})}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

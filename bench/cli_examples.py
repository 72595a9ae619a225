"""The README's worked command-line examples, run and recorded: each command's exact output (stdout and
stderr, in the order printed) becomes a row of ``bench/results/cli-examples.jsonl``, which the README's
``cli:NAME`` blocks show (``python bench/docs.py --write``), so no printed number is pasted by hand.

    python -m bench.cli_examples                  # every example (a few minutes on 2 cores)
    python -m bench.cli_examples --only card-2sls-robust

A row: ``name``, ``command`` (as the README shows it: ``dmlcore ...``), ``output``, ``exit``, ``seconds``,
``date``, ``machine``, ``load`` (the 1-minute load average before and after: the machine is shared).
Commands run in a temporary folder (``card.csv`` is written there by the first Card example).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "bench" / "results" / "cli-examples.jsonl"
CARD_BASE = "exper,expersq,black,smsa,south,smsa66"
CARD_COVARIATES = CARD_BASE + "," + ",".join(f"reg66{r}" for r in range(2, 10))
# name -> the commands as a reader types them (``dmlcore`` is the console script, here run as python -m dmlcore)
EXAMPLES = {
    "card-2sls-robust": ["dmlcore fit --dataset card --method 2sls --cov robust"],
    "card-2sls-clustered": [
        "python -c \"from linearmodels.datasets import card; t = card.load(); "
        "t['region'] = t.filter(like='reg66').to_numpy().argmax(1) + 1; t.to_csv('card.csv', index=False)\"",
        f"dmlcore fit --csv card.csv --outcome lwage --treatment educ --instrument nearc4 --covariates "
        f"{CARD_COVARIATES} --method 2sls --cov clustered --cluster region"],
    "card-table": [
        "python -c \"from linearmodels.datasets import card; t = card.load(); "
        "t['region'] = t.filter(like='reg66').to_numpy().argmax(1) + 1; t.to_csv('card.csv', index=False)\"",
        *(f"dmlcore fit --csv card.csv --outcome lwage --treatment educ --instrument nearc4 {options} --json {name}.json"
          for name, options in (
              ("2sls", f"--covariates {CARD_COVARIATES} --method 2sls --cov robust"),
              ("liml", f"--covariates {CARD_COVARIATES} --method liml --cov robust"),
              ("fe", f"--covariates {CARD_BASE} --absorb region --method 2sls --cov robust"),
              ("clustered", f"--covariates {CARD_BASE} --absorb region --method 2sls --cov clustered --cluster region "
                            f"--small --fixef-k nested"))),
        "dmlcore table ols:2sls.json 2sls.json liml.json fe.json clustered.json --keep educ,exper,expersq,black "
        "--label 'educ=Years of schooling' --label 'lwage=log wage' --title OLS --title 2SLS --title LIML "
        "--title '2SLS, region FE' --title '2SLS, region FE, clustered'"],
    "card-dml-cmr": ["dmlcore fit --dataset card --method dml-cmr --learner gb"],
    "rhc-2sls": ["dmlcore fit --dataset rhc --method 2sls"],
    "rhc-dml-cmr": ["dmlcore fit --dataset rhc --method dml-cmr --learner gb --folds 5"],
}


def run(name: str, folder: Path) -> dict:
    """Run example ``name``'s commands in ``folder``; its row (the output of the last command)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "DMLCORE_HOME": str(folder / "home")}
    load = [os.getloadavg()[0]]
    start = time.perf_counter()
    for command in EXAMPLES[name]:
        argv = shlex.split(command)
        argv = ([sys.executable, "-m", "dmlcore", *argv[1:]] if argv[0] == "dmlcore" else
                [sys.executable, *argv[1:]])
        proc = subprocess.run(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        if proc.returncode:
            break
    load.append(os.getloadavg()[0])
    return {"name": name, "command": EXAMPLES[name][-1], "setup": EXAMPLES[name][:-1], "output": proc.stdout,
            "exit": proc.returncode, "seconds": round(time.perf_counter() - start, 1),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "load": load}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(EXAMPLES), help="run these examples only")
    args = parser.parse_args(argv)
    rows = {}
    if ROWS.exists():
        rows = {row["name"]: row for row in map(json.loads, ROWS.read_text().splitlines())}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or list(EXAMPLES):
            rows[name] = run(name, Path(tmp))
            print(f"{name}: exit {rows[name]['exit']}, {rows[name]['seconds']} s", flush=True)
    ROWS.write_text("".join(json.dumps(rows[n]) + "\n" for n in EXAMPLES if n in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

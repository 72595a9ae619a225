"""Where the default fit's two refits run, arrangement against arrangement, paired and alternating (issue 45, item 3).

The default command (``dmlcore fit --dataset demand-iv --learner nn --n 5000 --method dml-cmr --folds 10 --seed 0``,
bench/perf/default_fit.py) starts the debiased effect's two refits in worker processes beside its own fit. Each
arrangement below is that command in a fresh process, with the arrangement made by patching dmlcore before the
command runs (the code as committed is ``beside-nice``):

- ``beside-nice``: 2 worker processes, one refit each, BESIDE_NICE (10) lower in priority than the command
  (dmlcore/executors.py: the default);
- ``beside-equal``: the same at the command's own priority (BESIDE_NICE 0: the arrangement before);
- ``one-worker``: 1 worker process running both refits one after another beside the fit;
- ``in-process``: ``--jobs 1``: the refits after the fit in the command's own process;
- ``forkserver``: ``beside-nice`` with the workers forked from a multiprocessing forkserver that imported dmlcore
  once (the standard library's pool instead of loky's; an experiment: dmlcore does not do this), so that the two
  workers do not each import it (the server itself imports at the command's priority; the rows before 13:55 UTC
  on 2026-11-29 had its workers at the command's priority too).

Each round runs every arrangement once, in the given order, rotated by one each round; a row per command is
appended to ``--out`` as it finishes (a crash keeps the rows before it), with its wall seconds, CPU seconds
(``resource.getrusage`` of the finished children: the command and its workers; ``tree_cpu_seconds``: every process
under the command as last seen every 0.1 s, which also counts processes the command does not wait for, such as a
forkserver's, and misses at most 0.1 s of each), the fit's own seconds, the sha256
of the record less its times (every arrangement must give the same), the load average before and after, the
commit and the machine. On a shared machine compare CPU seconds and the pairs' ratios, not single walls::

    nice -n 10 python -m bench.perf.refit_arrangements --rounds 3 --other-work "what else runs"
    python -m bench.perf.refit_arrangements --arrangements beside-nice,beside-equal --rounds 3 --n 2000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.perf.default_fit import SETTINGS, _children_cpu, commit, machine

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "results" / "perf" / "refit-arrangements.jsonl"
SAMPLE = 0.1      # seconds between looks at the command's processes (tree_cpu_seconds)
TICKS = os.sysconf("SC_CLK_TCK")
ARRANGEMENTS = ("beside-nice", "beside-equal", "one-worker", "in-process", "forkserver")

# run in the command's fresh process before dmlcore's CLI: argv[1] the arrangement, the rest the command's
LAUNCH = """
import sys
arrangement, argv = sys.argv[1], sys.argv[2:]
import dmlcore.executors as executors
import dmlcore.runs.heldout_residual as heldout_residual
if arrangement == "beside-equal":
    executors.BESIDE_NICE = 0
elif arrangement == "one-worker":
    def one_worker(kind, jobs, address):
        pool = executors.ProcessExecutor(1, executors.default_threads())
        start = pool.start
        def start_all(fn, items, *, should_stop=None):
            pool._get_pool()            # one worker process ...
            pool.workers = len(items)   # ... handed every refit at once: it runs them one after another
            return start(fn, items, should_stop=should_stop)
        pool.start = start_all
        return pool
    heldout_residual.get_executor = one_worker
elif arrangement == "forkserver":
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["dmlcore.runs.heldout_residual"])   # imported once, in the server
    def get_pool(self):
        if self._pool is None:
            nice = {} if self._niceness is None else {"initializer": os.setpriority,
                                                      "initargs": (os.PRIO_PROCESS, 0, self._niceness)}
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context, **nice)
        return self._pool
    def drop_pool(self):
        if self._pool is not None:
            for process in list(self._pool._processes.values()):
                process.terminate()
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
    executors.ProcessExecutor._get_pool, executors.ProcessExecutor._drop_pool = get_pool, drop_pool
from dmlcore.cli import main
sys.exit(main(argv))
"""


def run_once(arrangement: str, n: int, seed: int) -> dict:
    """The default command in a fresh process under ``arrangement``: its times and its record's digest."""
    with tempfile.TemporaryDirectory() as tmp:
        record_path = Path(tmp) / "run.json"
        argv = ["fit", *SETTINGS, "--n", str(n), "--method", "dml-cmr", "--folds", "10", "--seed", str(seed),
                *(["--jobs", "1"] if arrangement == "in-process" else []), "--json", str(record_path)]
        load_before = [round(x, 2) for x in os.getloadavg()]
        cpu_before, start = _children_cpu(), time.perf_counter()
        with tempfile.TemporaryFile() as err:
            command = subprocess.Popen([sys.executable, "-c", LAUNCH, arrangement, *argv], cwd=ROOT,
                                       stdout=subprocess.DEVNULL, stderr=err)
            last: dict[int, float] = {}
            while command.poll() is None:          # every process under the command, as last seen
                last.update(_tree_cpu(command.pid))
                time.sleep(SAMPLE)
            wall, cpu = time.perf_counter() - start, _children_cpu() - cpu_before
            err.seek(0)
            stderr = err.read().decode(errors="replace")
        if command.returncode != 0:
            raise SystemExit(f"{arrangement}: dmlcore {' '.join(argv)} failed:\n{stderr[-2000:]}")
        record = json.loads(record_path.read_text())
    computed = {k: v for k, v in record.items() if k not in ("seconds", "created")}
    return {"arrangement": arrangement,
            "command": "dmlcore " + " ".join(a for a in argv if a != "--json" and not a.endswith("run.json")),
            "command_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "tree_cpu_seconds": round(sum(last.values()), 2), "fit_seconds": round(record["seconds"], 2),
            "record_sha256": hashlib.sha256(json.dumps(computed, sort_keys=True).encode()).hexdigest(),
            "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()]}


def _tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds (user + system, all threads) of ``root`` and every process under it now, by pid (/proc)."""
    parent, cpu = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(name)] = int(fields[1])
            cpu[int(name)] = (int(fields[11]) + int(fields[12])) / TICKS
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in cpu:
            tree[pid] = cpu[pid]
            todo += [child for child, of in parent.items() if of == pid]
    return tree


def summary(rows: list[dict], arrangements: list[str]) -> dict:
    """Per arrangement: median wall and CPU seconds, and the median over rounds of its ratio to the first
    arrangement's in the same round; whether every record was the same."""
    first, out = arrangements[0], {}
    for name in arrangements:
        mine = [r for r in rows if r["arrangement"] == name]
        ratios = {key: [r[key] / base[key] for r in mine for base in rows
                        if base["arrangement"] == first and base["round"] == r["round"]]
                  for key in ("command_seconds", "cpu_seconds", "tree_cpu_seconds")}
        out[name] = {"runs": len(mine),
                     "median_command_seconds": round(statistics.median(r["command_seconds"] for r in mine), 2),
                     "median_cpu_seconds": round(statistics.median(r["cpu_seconds"] for r in mine), 2),
                     "median_tree_cpu_seconds": round(statistics.median(r["tree_cpu_seconds"] for r in mine), 2),
                     f"median_wall_ratio_to_{first}": round(statistics.median(ratios["command_seconds"]), 3),
                     f"median_cpu_ratio_to_{first}": round(statistics.median(ratios["cpu_seconds"]), 3),
                     f"median_tree_cpu_ratio_to_{first}": round(statistics.median(ratios["tree_cpu_seconds"]), 3)}
    return {"arrangements": out, "records_identical": len({r["record_sha256"] for r in rows}) == 1}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arrangements", default=",".join(ARRANGEMENTS[:3]),
                        help=f"comma list of {', '.join(ARRANGEMENTS)} (the first is the ratios' base)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(OUT), help="JSONL file each command's row is appended to")
    parser.add_argument("--other-work", default="not stated", help="what else the machine is running (recorded)")
    args = parser.parse_args(argv)
    arrangements = [a.strip() for a in args.arrangements.split(",") if a.strip()]
    unknown = [a for a in arrangements if a not in ARRANGEMENTS]
    if unknown or not arrangements:
        parser.error(f"unknown arrangement(s) {', '.join(unknown) or '(none given)'}; choose from "
                     f"{', '.join(ARRANGEMENTS)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    session = {"session": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), **commit(),
               "other_work": args.other_work, "bench": "python -m bench.perf.refit_arrangements " +
               " ".join(argv if argv is not None else sys.argv[1:])}
    rows = []
    for round_ in range(args.rounds):
        order = arrangements[round_ % len(arrangements):] + arrangements[:round_ % len(arrangements)]
        for name in order:
            row = {**session, "round": round_, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                   **run_once(name, args.n, args.seed)}
            rows.append(row)
            with out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(f"round {round_} {name}: {row['command_seconds']:.1f} s, {row['cpu_seconds']:.1f} CPU s "
                  f"({row['tree_cpu_seconds']:.1f} seen) (fit "
                  f"{row['fit_seconds']:.1f} s), load {row['load_before'][0]:.2f}", flush=True)
    result = summary(rows, arrangements)
    with out.open("a") as handle:
        handle.write(json.dumps({**session, "summary": result}) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The queue's hand-over between fits, without browsers: N demo batches (the demo's four fits, one owner
each) through a registry set up as the dashboard server's (``server_registry``: DMLCORE_WORKERS
dispatchers, local worker processes). For each fit it records when the dispatcher started it, when
the worker process began and ended it, when the server had its result and when the job was done;
the gaps between one fit's end and the next fit's start in the same worker process are the
hand-over.

    python -m bench.perf.queue_handover --demos 4 --out bench/results/queue-handover-2026-11-27.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dmlcore.jobs import registry as registry_module
from dmlcore.jobs import worker as worker_module


def traced_fit(payload: dict):
    """:func:`dmlcore.jobs.worker.fit_in_worker` with the worker's own start and end times and pid."""
    begun = time.time()
    run = worker_module.fit_in_worker(payload)
    run.record["_worker"] = (begun, time.time(), os.getpid())
    return run


def _run_remote(self, job):
    """The registry's remote run, with the times the server sent the fit and had its result."""
    payload = {"job": job.id, "channel": self._channel.ticket, "fit": job.fit, "server": os.getpid()}
    sent = time.time()
    for _, result in self._executor.map(traced_fit, [payload], resources={"num_cpus": 1}):
        pass
    if isinstance(result, BaseException):
        raise result
    result.record["_server"] = (sent, time.time())
    result.data, result.truth = job.fit.data, job.fit.truth
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demos", type=int, default=4)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    registry_module.JobRegistry._run_remote = _run_remote
    from dashboard.plan import DEMO_DATA, DEMO_SETTINGS, build_plan
    from dmlcore.data.registry import load_dataset
    from dmlcore.jobs.server import server_registry

    reg = server_registry(Path(tempfile.mkdtemp(prefix="queue-handover-")))
    time.sleep(8)   # the workers import torch and the estimators first
    load = os.getloadavg()
    jobs, t0 = [], time.time()
    for i in range(args.demos):
        params = {k: v for k, v in DEMO_DATA.items() if k != "name"} | {"seed": i}
        loaded = load_dataset(DEMO_DATA["name"], **params)
        choices = {k: (list(v) if isinstance(v, list) else v) for k, v in DEMO_SETTINGS.items()}
        fits, errors = build_plan(choices, loaded.data, 1)
        if errors:
            raise SystemExit(f"the demo's plan failed: {errors}")
        for fit in fits:
            jobs.append((f"owner-{i}", reg.submit_fit(f"owner-{i}", fit.label, data=loaded.data, method=fit.method,
                                                      truth=loaded.truth, dataset=DEMO_DATA["name"],
                                                      data_params=dict(loaded.params), **fit.kwargs)))
    for owner, job in jobs:
        reg.wait(job, owner)
    wall = time.time() - t0
    rows = []
    for owner, job in jobs:
        snap = reg.get(job, owner)
        begun, ended, pid = snap.run.record["_worker"]
        sent, got = snap.run.record["_server"]
        rows.append({"owner": owner, "label": snap.label, "method": snap.run.record["method"], "pid": pid,
                     "started": snap.started - t0, "sent": sent - t0, "worker_began": begun - t0,
                     "worker_ended": ended - t0, "server_had_result": got - t0, "done": snap.finished - t0,
                     "fit_seconds": snap.run.record["seconds"]})
    reg.close()
    rows.sort(key=lambda r: r["started"])
    gaps = []
    for pid in {r["pid"] for r in rows}:
        mine = sorted((r for r in rows if r["pid"] == pid), key=lambda r: r["worker_began"])
        gaps += [b["worker_began"] - a["worker_ended"] for a, b in zip(mine, mine[1:])]
    busy = sum(r["worker_ended"] - r["worker_began"] for r in rows)
    first = min(r["started"] for r in rows)      # before it: the workers' warm-up and the demos' data
    summary = {"command": " ".join([Path(sys.executable).name, "-m", "bench.perf.queue_handover", *sys.argv[1:]]),
               "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "load_before": load,
               "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
               "demos": args.demos, "fits": len(rows), "workers": reg.workers, "wall_seconds": wall,
               "first_fit_started_after": first,
               "worker_busy_share": busy / (reg.workers * (wall - first)),
               "handover_gap_seconds": {"n": len(gaps), "median": statistics.median(gaps) if gaps else None,
                                        "max": max(gaps) if gaps else None},
               "fit_seconds_per_demo": sum(r["fit_seconds"] for r in rows) / args.demos}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "fits": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

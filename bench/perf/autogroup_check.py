"""Does ``nice`` keep a process group's CPU away from the server's? Linux with autogroup scheduling
(/proc/sys/kernel/sched_autogroup_enabled = 1) shares the CPU between sessions first and applies nice
only within a session; Playwright starts each browser in a session of its own.

Two busy-looping processes stand for the server's workers (this session, nice 0); two more, started
in a session of their own at nice 19, stand for the students' browsers. Measured: the CPU each pair
got over 4 s, once as is and once with the other session's autogroup niced to 19 as well
(/proc/PID/autogroup). 15 s in all.

    python -m bench.perf.autogroup_check --out bench/results/autogroup-check-2026-11-27.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BURN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"


def cpu_seconds(pids) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def trial(group_nice: bool) -> dict:
    burn = [sys.executable, "-c", BURN.format(seconds=7)]
    others = [subprocess.Popen(["nice", "-n", "19", *burn], start_new_session=True) for _ in range(2)]
    time.sleep(0.3)
    if group_nice:
        for p in others:
            Path(f"/proc/{p.pid}/autogroup").write_text("19")
    ours = [subprocess.Popen([sys.executable, "-c", BURN.format(seconds=6)]) for _ in range(2)]
    time.sleep(1)
    a, b, t = cpu_seconds(p.pid for p in ours), cpu_seconds(p.pid for p in others), time.time()
    time.sleep(4)
    dt = time.time() - t
    out = {"ours_cores": (cpu_seconds(p.pid for p in ours) - a) / dt,
           "others_cores": (cpu_seconds(p.pid for p in others) - b) / dt,
           "others_autogroup": Path(f"/proc/{others[0].pid}/autogroup").read_text().strip()}
    for p in ours + others:
        p.wait()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    enabled = Path("/proc/sys/kernel/sched_autogroup_enabled")
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "load_before": os.getloadavg(),
              "cpus": os.cpu_count(), "autogroup_enabled": enabled.read_text().strip() if enabled.exists() else None,
              "others_nice_19": trial(False), "others_nice_19_and_autogroup_19": trial(True)}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

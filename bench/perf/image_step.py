"""Cost of one training step of the image learner, with and without keeping freed memory.

Each setting runs in a fresh subprocess (``DMLCORE_KEEP_FREED_MEMORY`` is read once per
process) and prints one JSON line: wall, user and system seconds and minor page faults per
step (forward + backward of K fold models on B pictures), and the peak resident memory.

    python -m bench.perf.image_step --out bench/results/image-step.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.perf import load

ROOT = Path(__file__).resolve().parents[2]


def one(folds: int, batch: int, side: int, steps: int, other_work: str | None = None) -> dict:
    import torch

    from dmlcore.learners.image import BatchedImageMLP, keep_freed_memory

    pixels = side * side
    model = BatchedImageMLP(folds, pixels + 3, (128, 64, 32), 1, 0.1, torch.Generator().manual_seed(0),
                            image_index=list(range(pixels)), image_shape=(side, side))
    x = (torch.rand(folds, batch, pixels + 3, generator=torch.Generator().manual_seed(1)) < 0.1).float()

    def step():
        model.zero_grad()
        model(x).pow(2).mean().backward()

    step()                                                   # warm-up
    load_start = load.start()
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(steps):
        step()
    wall = (time.perf_counter() - start) / steps
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"keep_freed_memory": keep_freed_memory(), "folds": folds, "batch": batch, "side": side,
            "steps": steps, "threads": torch.get_num_threads(), "wall_s": round(wall, 3),
            "user_s": round((after.ru_utime - before.ru_utime) / steps, 3),
            "system_s": round((after.ru_stime - before.ru_stime) / steps, 3),
            "minor_faults": (after.ru_minflt - before.ru_minflt) // steps,
            "peak_rss_mb": after.ru_maxrss // 1024, **load.fields(load_start, other_work)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--side", type=int, default=64, help="picture side in pixels")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--repeats", type=int, default=2, help="processes per setting, alternating")
    p.add_argument("--out", help="append the JSON lines here")
    p.add_argument("--other-work", help="what else the machine is running (recorded in every row)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(one(args.folds, args.batch, args.side, args.steps, args.other_work)))
        return 0
    cmd = [sys.executable, "-m", __spec__.name, "--child", "--folds", str(args.folds), "--batch", str(args.batch),
           "--side", str(args.side), "--steps", str(args.steps),
           *(["--other-work", args.other_work] if args.other_work else [])]
    lines = []
    for _ in range(args.repeats):
        for keep in ("0", "1"):
            env = {**os.environ, "DMLCORE_KEEP_FREED_MEMORY": keep}
            line = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip()
            print(line, flush=True)
            lines.append(line)
    if args.out:
        with open(args.out, "a") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

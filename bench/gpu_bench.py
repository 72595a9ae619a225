"""Issue 17's GPU measurements, inside a time budget: MSE and seconds of

* demand-iv, DML-CMR (nn, K = 10), N = 5000, seed 0 -- twice, to see whether the GPU repeats itself;
* dsprites-pcl, N = 1000 and 5000, seed 0: naive plug-in, CE-DML-CMR, DML-CMR (nn, K = 10);
* demand-iv again on the CPU of the same machine, if time is left (same seed: the CPU-GPU gap);
* with ``--more-seeds A-B``, then dsprites-pcl at N = 1000 (naive, CE-DML-CMR, DML-CMR) for those
  seeds, one seed after another, as long as the budget lasts.

Fits run in that order, each started only when the budget left covers its guess of the time it
needs, and stopped (status "stopped") when the budget runs out; what fit_run does after the fit
(scoring, bands, the effect: ``after_fit_seconds``) is not stopped, so a reserve is kept for it. Every row is printed as CSV and appended to the output file as soon as
its fit ends. Run through bench/gpu.sh (docs/gpu.md); on a CPU, ``--quick --device cpu`` tries
the script itself on tiny data in a few seconds.

    python3 -m bench.gpu_bench --budget 480 --out bench/results
"""

from __future__ import annotations

import argparse
import csv
import math
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import torch

from dmlcore.data.registry import load_dataset
from dmlcore.device import resolve_device
from dmlcore.errors import DMLCoreError, FitCancelled
from dmlcore.estimators import FitSettings, for_method, get_method
from dmlcore.runs import fit_run

FIELDS = ["dataset", "n", "seed", "method", "folds", "device", "gpu", "mse", "seconds", "after_fit_seconds",
          "peak_gpu_gb", "status", "started_at_s"]
SAFETY = 2  # a fit starts with SAFETY x (fit + after-fit seconds) left and keeps SAFETY x its after-fit seconds
# (dataset, n, method, on the CPU?, the slowest fit seconds, the slowest seconds after the fit), measured on one
# NVIDIA H100 80GB HBM3 on 2026-11-27 (bench/results/gpu/h100-2026-11-27-run*.csv, 1-15 rows each; the CPU
# entry on that machine's 16 CPUs); after the fit, scoring dsprites-pcl predicts f at 588 pictures x N rows
MEASURED = [
    ("demand-iv", 5000, "dml-cmr", False, 16.13, 0.07),
    ("demand-iv", 5000, "dml-cmr", False, 16.13, 0.07),
    ("dsprites-pcl", 1000, "naive", False, 4.19, 4.61),
    ("dsprites-pcl", 1000, "ce-dml-cmr", False, 5.29, 4.71),
    ("dsprites-pcl", 1000, "dml-cmr", False, 16.23, 4.66),
    ("dsprites-pcl", 5000, "naive", False, 9.61, 18.96),
    ("dsprites-pcl", 5000, "ce-dml-cmr", False, 10.74, 19.80),
    ("dsprites-pcl", 5000, "dml-cmr", False, 41.14, 21.08),
    ("demand-iv", 5000, "dml-cmr", True, 31.10, 0.10),
]
# (dataset, n, method, on the CPU?, seconds to have left before starting, reserve kept for after the fit)
PLAN = [(dataset, n, method, cpu, math.ceil(SAFETY * (fit + after)), max(2, math.ceil(SAFETY * after)))
        for dataset, n, method, cpu, fit, after in MEASURED]
QUICK = {"demand-iv": 400, "dsprites-pcl": 120}   # rows with --quick
# the debiased effect's refits of f-hat came after the H100 run: left out, the fits do what MEASURED timed
EFFECT_FOLDS = 0


def _selected(only: str | None) -> list[tuple]:
    """The PLAN entries named in ``only`` (all without it); a DMLCoreError for an unknown one."""
    if not only:
        return PLAN
    names = {f"{d}:{n}:{m}{':cpu' if cpu else ''}": entry for entry in PLAN for d, n, m, cpu, *_ in [entry]}
    chosen = [part.strip() for part in only.split(",") if part.strip()]
    unknown = [c for c in chosen if c not in names]
    if unknown:
        raise DMLCoreError(f"--only: unknown fit(s) {', '.join(unknown)}; choose from {', '.join(names)}.")
    return [names[c] for c in chosen]


def _seeds(text: str | None) -> list[int]:
    """``"1-19"`` or ``"1,3,5"`` as a list of seeds (none without text); a DMLCoreError otherwise."""
    if not text:
        return []
    seeds = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            first, last = 0, -1
        if last < first:
            raise DMLCoreError(f"--more-seeds: {part.strip()!r} is not a seed or a range like 1-19.")
        seeds += range(first, last + 1)
    return seeds


def environment(device: torch.device) -> list[str]:
    """Lines describing the machine and the libraries, printed first."""
    import numpy
    import pandas
    import scipy
    import sklearn

    lines = [f"python {platform.python_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}, "
             f"cuDNN {torch.backends.cudnn.version()}), numpy {numpy.__version__}, pandas {pandas.__version__}, "
             f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}",
             f"torch threads {torch.get_num_threads()}, CPUs {torch.multiprocessing.cpu_count()}"]
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        lines.append(f"{device}: {props.name}, {props.total_memory / 2**30:.0f} GiB, "
                     f"{props.multi_processor_count} SMs; TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, "
                     f"TF32 cuDNN {torch.backends.cudnn.allow_tf32}, cuDNN benchmark {torch.backends.cudnn.benchmark}")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", help="device of the GPU fits (default cuda)")
    p.add_argument("--budget", type=float, default=420.0, help="seconds for everything, warm-up included")
    p.add_argument("--only", help="run only these fits, comma-separated DATASET:N:METHOD[:cpu], e.g. "
                                  "dsprites-pcl:5000:dml-cmr")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--more-seeds", help="after the plan, dsprites-pcl N = 1000 (three methods) for these seeds, "
                                        "e.g. 1-19, while the budget lasts")
    p.add_argument("--out", default=str(ROOT / "bench" / "results"), help="folder of the CSV")
    p.add_argument("--quick", action="store_true", help="tiny data and 2 epochs: a check of this script")
    args = p.parse_args()
    start = time.monotonic()
    deadline = start + args.budget
    try:
        device = resolve_device(args.device)
        plan = [(args.seed, *entry) for entry in _selected(args.only)]
        plan += [(seed, *entry) for seed in _seeds(args.more_seeds) for entry in PLAN
                 if entry[:2] == ("dsprites-pcl", 1000)]
    except DMLCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in environment(device):
        print("#", line, flush=True)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    out = Path(args.out) / f"gpu-{time.strftime('%Y%m%d-%H%M%S')}{'-quick' if args.quick else ''}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    extra = dict(epochs=2) if args.quick else {}

    # warm-up: CUDA context, cuBLAS and cuDNN handles, kernels' first launches (not timed)
    for name, rows in (("demand-iv", 300), ("dsprites-pcl", 60)):
        warm = load_dataset(name, n=rows, seed=99)
        fit_run(warm.data, "naive", truth=warm.truth, learner="nn", epochs=1, n_draws=2, device=str(device),
                seed=99)
    print(f"# warm-up done at {time.monotonic() - start:.1f} s; rows go to {out}", flush=True)

    cache: dict[tuple, object] = {}
    rows = []
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        print(",".join(FIELDS), flush=True)
        for seed, dataset, n, method, on_cpu, need, reserve in plan:
            n = QUICK[dataset] if args.quick else n
            where = torch.device("cpu") if on_cpu else device
            folds = 2 if args.quick else 10
            row = dict(dataset=dataset, n=n, seed=seed, method=method, folds=folds if get_method(method).cross_fits else 1,
                       device=str(where), gpu=gpu if where.type == "cuda" else "",
                       started_at_s=round(time.monotonic() - start, 1))
            left = deadline - time.monotonic()
            if left < need:
                row["status"] = f"skipped: {left:.0f} s left, needs about {need}"
            else:
                if (dataset, n, seed) not in cache:
                    cache.clear()
                    cache[(dataset, n, seed)] = load_dataset(dataset, n=n, seed=seed)
                loaded = cache[(dataset, n, seed)]
                stop_at = deadline - reserve
                if where.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(where)
                begin = time.perf_counter()
                last = {}
                try:
                    shared = FitSettings(learner="nn", folds=folds, seed=seed, device=str(where),
                                         effect_folds=EFFECT_FOLDS, **extra)
                    rec = fit_run(loaded.data, method, for_method(shared, method), truth=loaded.truth, dataset=dataset,
                                  callback=last.update, should_stop=lambda: time.monotonic() > stop_at).record
                    row.update(mse=rec["mse"], seconds=round(rec["seconds"], 2),
                               after_fit_seconds=round(time.perf_counter() - begin - rec["seconds"], 2), status="ok")
                except FitCancelled:
                    row.update(seconds=round(time.perf_counter() - begin, 2),
                               status=f"stopped: budget spent at {last.get('progress', 0):.0%} of the fit "
                                      f"(model {last.get('model')} epoch {last.get('epoch')})")
                except Exception as exc:  # noqa: BLE001 -- one failed fit must not cost the others
                    row.update(seconds=round(time.perf_counter() - begin, 2),
                               status=f"error: {type(exc).__name__}: {exc}".replace("\n", " ")[:300])
                if where.type == "cuda":
                    row["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated(where) / 2**30, 2)
            writer.writerow(row)
            handle.flush()
            rows.append(row)
            print(",".join(str(row.get(f, "")) for f in FIELDS), flush=True)
    print(f"# done in {time.monotonic() - start:.1f} s of a {args.budget:.0f} s budget", flush=True)
    print(f"# {'dataset':<13} {'n':>5} {'seed':>4} {'method':<11} {'device':<7} {'mse':>9} {'seconds':>8}  status")
    for r in rows:
        mse = f"{r['mse']:.4f}" if isinstance(r.get("mse"), float) else "-"
        print(f"# {r['dataset']:<13} {r['n']:>5} {r['seed']:>4} {r['method']:<11} {r['device']:<7} {mse:>9} "
              f"{r.get('seconds', '-')!s:>8}  {r['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

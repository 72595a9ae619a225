"""The GPU runs (docs/gpu.md, and their summary in docs/benchmarks.md): the rows of bench/gpu_bench.py
in bench/results/gpu/, one CSV per call named ``CARD-YYYY-MM-DD-runK.csv`` beside its log. Only rows
with status "ok" are fits; the others say what the time budget skipped or stopped."""

from __future__ import annotations

import re

import pandas as pd

from .peers import quartiles, seed_text
from .raw import NAMES
from .registry import block
from .tables import LOAD, NOT_QUOTED, is_method, load_said, prose, timed, timed_text
from .words import num, paired, relation

FOLDER = "gpu"
KEY = ["gpu", "dataset", "n", "seed", "method", "device"]
METHODS = ("dml-cmr", "ce-dml-cmr", "naive")
PAIRS = (("dml-cmr", "ce-dml-cmr"), ("dml-cmr", "naive"), ("ce-dml-cmr", "naive"))
# issue 17's targets on one GPU: seconds of the fit
TARGETS = {("demand-iv", 5000, "dml-cmr"): 5, ("dsprites-pcl", 5000, "dml-cmr"): 300}
# the plan's fits on the 2-core development machine's CPU with the code of the GPU run (bench/gpu_bench.py
# --device cpu), and the same seeds' earlier CPU rows (older code), by data set: file and the code's label
CPU_NOW = "gpu-cpu-reference-2026-11-27.csv"
CPU_EARLIER = {"demand-iv": ("gpu-cpu-reference-demand-iv.csv", "2026-11-26"),
               "dsprites-pcl": ("dsprites-pcl-nn.csv", "commit 65a7284")}
IDLE = "authors/speed-idle.jsonl"
MIN_SEEDS = 3  # a time target is "met" only when every fit of at least this many seeds was within it
STATUS_WORDS = {"ok": "fitted"}


def calls(rows) -> pd.DataFrame:
    """Every row of every call, in call order, with its ``file`` and ``date`` (from the file name)."""
    names = rows.names(f"{FOLDER}/*.csv")
    if not names:
        raise FileNotFoundError(f"no rows: {rows.folder / FOLDER}/*.csv")
    frames = []
    for name in names:
        date = re.search(r"\d{4}-\d{2}-\d{2}", name)
        if date is None:
            raise ValueError(f"{name}: no date (YYYY-MM-DD) in the file name")
        frames.append(rows.csv(name).assign(file=name, date=date[0]))
    frame = pd.concat(frames, ignore_index=True)
    frame["gpu"] = frame["gpu"].fillna("")
    return frame


def fits(rows, device: str = "cuda") -> pd.DataFrame:
    """The finished fits on ``device`` ("cuda" for any GPU, or "cpu"), every repeat kept."""
    frame = calls(rows)
    return frame[(frame["status"] == "ok") & frame["device"].str.startswith(device)]


def first_fits(rows) -> pd.DataFrame:
    """One GPU fit per card, data set, seed and method: the first call's, where a seed was fitted twice."""
    return fits(rows).drop_duplicates(KEY, keep="first")


def card(rows) -> str:
    """The one card of the rows (the tables assume one; rows of a second card need a table of their own)."""
    cards = sorted(set(fits(rows)["gpu"]))
    if len(cards) != 1:
        raise ValueError(f"GPU rows of {len(cards)} cards ({', '.join(cards)}); the GPU blocks show one")
    return cards[0]


def _log(rows, name: str) -> dict:
    """The first lines of a gpu_bench log: torch, CUDA, cuDNN, torch threads, CPUs; a ValueError without them."""
    text = rows.text(name)
    torch = re.search(r"torch (\S+) \(CUDA (\S+), cuDNN (\S+)\)", text)
    threads = re.search(r"torch threads (\d+), CPUs (\d+)", text)
    if not (torch and threads):
        raise ValueError(f"{name}: no environment lines (torch ..., torch threads ...)")
    return dict(torch=torch[1], cuda=torch[2], cudnn=torch[3], threads=int(threads[1]), cpus=int(threads[2]))


def environment(rows) -> str:
    """"torch 2.11.0+cu130, CUDA 13.0, cuDNN 91900, 16 CPUs" from the calls' logs."""
    found = [f"torch {e['torch']}, CUDA {e['cuda']}, cuDNN {e['cudnn']}, {e['cpus']} CPUs"
             for e in (_log(rows, name.removesuffix(".csv") + ".log") for name in sorted(set(fits(rows)["file"])))]
    return "; ".join(dict.fromkeys(found))


def cpu_fits(rows) -> pd.DataFrame:
    """The plan's fits on CPUs with the GPU run's code: the GPU machine's and the 2-core machine's, with
    ``where`` ("GPU machine, 16 threads")."""
    machine = fits(rows, "cpu")
    machine = machine.assign(where=[f"GPU machine, {_log(rows, f.removesuffix('.csv') + '.log')['threads']} threads"
                                    for f in machine["file"]])
    here, log = rows.csv(CPU_NOW), CPU_NOW.removesuffix(".csv") + ".log"
    loads = [float(x) for x in re.findall(r"load average: ([\d.]+)", rows.text(log))]
    load = f", load average {loads[0]:.1f} before and {loads[-1]:.1f} after" if loads else ""
    here = here[here["status"] == "ok"].assign(where=f"2-core machine, {_log(rows, log)['threads']} threads{load}")
    if loads:                       # the log's load before and after: these rows' seconds may be quoted (``timed``)
        here = here.assign(**{LOAD[0]: loads[0], LOAD[1]: loads[-1]})
    return pd.concat([machine, here], ignore_index=True)


def _listed(values, fmt) -> str:
    return ", ".join(fmt(v) for v in values)


def _mse(x: float) -> str:
    return num(x, 4)


def _fit_name(dataset: str, n: int, method: str) -> str:
    return f"{dataset} N = {n}, {NAMES[method]}"


def _seeds(seeds) -> str:
    text = seed_text(seeds)
    return f"seed {text}" if text.isdigit() else f"seeds {text}"


def _cpu_earlier(rows, dataset: str, n: int, seed: int, method: str) -> pd.DataFrame:
    """The same seed's CPU rows made with earlier code (none where there are none)."""
    if dataset not in CPU_EARLIER:
        return pd.DataFrame(columns=["mse", "seconds"])
    return _same(rows.csv(CPU_EARLIER[dataset][0]).assign(dataset=dataset), dataset, n, seed, method)


def _of(frame: pd.DataFrame, dataset: str, n: int, method: str) -> pd.DataFrame:
    return frame[(frame["dataset"] == dataset) & (frame["n"] == n) & (frame["method"] == method)]


def _same(frame: pd.DataFrame, dataset: str, n: int, seed: int, method: str) -> pd.DataFrame:
    part = _of(frame, dataset, n, method)
    return part[part["seed"] == seed]


@block("gpu:results")
def results(rows) -> str:
    """The plan's fits (its first seed) on the GPU, each beside the same seed on CPUs."""
    frame, gpu, cpu = calls(rows), fits(rows), cpu_fits(rows)
    seed, seconds = frame["seed"].iloc[0], timed(gpu)      # a time only with the load it was measured under
    lines = [f"**{card(rows)}** ({environment(rows)}), {', '.join(sorted(set(frame['date'])))}; rows: "
             + ", ".join(f"`bench/results/{f}`" for f in sorted(set(gpu["file"]))) + " (each call's log beside it).",
             "", f"| fit, seed {seed} | GPU fits |" + (f" GPU s ({load_said(gpu)}) | s after the fit |" if seconds else "")
             + " peak GPU GB | GPU MSE | CPU, the same code: MSE (s where the row records its load; where) | "
             "CPU, earlier code: MSE |", "|---|---|---|---|---|---|" + "---|---|" * seconds]
    for (dataset, n, method), part in gpu[gpu["seed"] == seed].groupby(["dataset", "n", "method"], sort=False):
        now = [f"{_mse(r.mse)} (" + (f"{r.seconds:.1f} s, " if timed(pd.DataFrame([r._asdict()])) else "") + f"{r.where})"
               for r in _same(cpu, dataset, n, seed, method).itertuples()]
        before = _cpu_earlier(rows, dataset, n, seed, method)
        earlier = [f"{_mse(r.mse)} ({CPU_EARLIER[dataset][1]})" for r in before.itertuples()]   # no load: no seconds
        lines.append(f"| {_fit_name(dataset, n, method)} | {len(part)} | "
                     + (f"{_listed(part['seconds'], '{:.2f}'.format)} | "
                        f"{_listed(part['after_fit_seconds'], '{:.2f}'.format)} | " if seconds else "")
                     + f"{_listed(part['peak_gpu_gb'].unique(), '{:.2f}'.format)} | {_listed(part['mse'], _mse)} | "
                     f"{'; '.join(now) or '—'} | {'; '.join(earlier) or '—'} |")
    if not seconds:
        lines += ["", f"The GPU fits' seconds: {NOT_QUOTED}; the earlier code's CPU seconds likewise."]
    return "\n".join(lines)


def _target_line(rows) -> str:
    gpu = fits(rows)
    parts = []
    for (dataset, n, method), limit in TARGETS.items():
        part = _of(gpu, dataset, n, method)
        if part.empty:
            parts.append(f"{_fit_name(dataset, n, method)} in ≤ {limit} s: not measured")
            continue
        if not timed(part):
            parts.append(f"{_fit_name(dataset, n, method)} in ≤ {limit} s: **not judged**, since their rows record "
                         "no load and their seconds are not quoted")
            continue
        within, seeds = int((part["seconds"] <= limit).sum()), part["seed"].nunique()
        state = ("**not met**" if within == 0 else f"**not decided** ({within} of {len(part)} fits within)"
                 if within < len(part) else "**met**" if seeds >= MIN_SEEDS else
                 f"**within it on {_seeds(part['seed'])} only**: one seed does not establish a target")
        parts.append(f"{_fit_name(dataset, n, method)} in ≤ {limit} s: {state}, "
                     f"{_listed(part['seconds'], '{:.1f} s'.format)} ({_seeds(part['seed'])}; {load_said(part)}; then "
                     f"{_listed(part['after_fit_seconds'], '{:.2f} s'.format)} after the fit)")
    return "; ".join(parts)


def _speed_line(rows) -> str:
    """The GPU's seconds against the CPUs' for the targets' fits."""
    gpu, cpu = fits(rows), cpu_fits(rows)
    if not timed(gpu):
        return "Not measured here: the GPU rows record no load, so their seconds are not quoted"
    idle = rows.jsonl(IDLE)
    idle = idle[is_method(idle["method"], "dml-cmr") & (idle["n"] == 5000) & (idle["folds"] == 10)]
    by_threads = idle.groupby("torch_threads")["seconds"].median()
    demand = _of(gpu, "demand-iv", 5000, "dml-cmr")
    here = _of(cpu, "demand-iv", 5000, "dml-cmr")
    here = here[[timed(here.loc[[i]]) for i in here.index]] if len(here) else here   # a CPU time only with its load
    sprites = _of(gpu, "dsprites-pcl", 5000, "dml-cmr").iloc[0]
    earlier = _cpu_earlier(rows, "dsprites-pcl", 5000, sprites["seed"], "dml-cmr")
    ref = earlier.iloc[0]
    gpu_s = demand["seconds"].median()
    return (f"demand-iv DML-CMR (K = 10, N = 5000), {_seeds(demand['seed'])}, same code: {gpu_s:.1f} s on "
            f"the GPU (median of its fits; {load_said(demand)}), "
            + ", ".join(f"{r.seconds:.1f} s on a CPU ({r.where}; {r.seconds / gpu_s:.1f} times the GPU's)"
                        for r in here.itertuples())
            + f". For scale only, not fit for fit (other seeds, earlier code, another day): {_seeds(idle['seed'])} "
            f"on the 2-core machine (1-minute load {idle['load_avg_1min'].min():.1f}–{idle['load_avg_1min'].max():.1f}, "
            "which counts the fit's own threads) took "
            + ", ".join(f"{s:.1f} s with {t} torch thread{'s' if t > 1 else ''}" for t, s in by_threads.items())
            + f" (medians, `bench/results/{IDLE}`). dsprites-pcl DML-CMR at N = 5000, seed {sprites['seed']}: "
            f"{sprites['seconds']:.1f} s on the GPU"
            + timed_text(earlier, lambda: f", {ref['seconds']:,.0f} s on the 2-core machine's CPU "
                         f"({CPU_EARLIER['dsprites-pcl'][1]}, {{load}}), {ref['seconds'] / sprites['seconds']:.0f} times as long",
                         "; the earlier CPU fit's seconds are not quoted, since its row records no load"))


def _repeat_line(rows) -> str:
    """Every fit the GPU made more than once with one seed: its MSEs, and whether they are equal."""
    gpu = fits(rows)
    parts = []
    for (_, dataset, n, seed, method, _), part in gpu.groupby(KEY, sort=False):
        if len(part) < 2:
            continue
        if part["mse"].nunique() == 1:
            mses = f"{float(part['mse'].iloc[0])!r} each time, equal to the last bit"
        else:
            mses = _listed(part["mse"], _mse)
        parts.append(f"{_fit_name(dataset, n, method)}, seed {seed}, {len(part)} fits: {mses}")
    return "; ".join(parts) if parts else "no fit was repeated"


def _cpu_line(rows) -> str:
    """For each seed fitted on a CPU with the GPU run's code: its MSE there and on the GPU, and the earlier code's."""
    gpu, cpu = fits(rows), cpu_fits(rows)
    parts = []
    for (dataset, n, seed, method), part in cpu.groupby(["dataset", "n", "seed", "method"], sort=False):
        on_gpu = _listed(_same(gpu, dataset, n, seed, method)["mse"].unique(), _mse)
        if len(part) > 1 and part["mse"].nunique() == 1:
            on_cpu = f"{_mse(part['mse'].iloc[0])} on every CPU, equal to the last bit ({'; '.join(part['where'])})"
        else:
            on_cpu = ", ".join(f"{_mse(r.mse)} on a CPU ({r.where})" for r in part.itertuples())
        earlier = _cpu_earlier(rows, dataset, n, seed, method)
        parts.append(f"{_fit_name(dataset, n, method)}, seed {seed}: MSE {on_gpu} on the GPU, {on_cpu}"
                     + (f"; {_listed(earlier['mse'], _mse)} with the earlier code ({CPU_EARLIER[dataset][1]})"
                        if len(earlier) else ""))
    return "; ".join(parts)


def _budget_line(rows) -> str:
    """How many planned fits each call made, skipped or stopped, and which were never made."""
    frame = calls(rows)
    kinds = frame["status"].str.extract(r"^(\w+)", expand=False)
    counts = []
    for name, part in frame.groupby("file", sort=False):
        got = kinds[part.index].value_counts()
        counts.append(f"`{name.split('/')[-1]}` {len(part)} planned: "
                      + ", ".join(f"{got[k]} {STATUS_WORDS.get(k, k)}" for k in got.index))
    done = set(frame[frame["status"] == "ok"][["dataset", "n", "seed", "method"]].itertuples(index=False, name=None))
    never = frame[~frame[["dataset", "n", "seed", "method"]].apply(tuple, axis=1).isin(done)]
    missing = [f"{NAMES[m]} {_seeds(part['seed'])}"
               for m, part in never.drop_duplicates(["dataset", "n", "seed", "method"]).groupby("method", sort=False)]
    return "; ".join(counts) + (f". Never fitted in any call: {', '.join(missing)}" if missing else "")


@block("gpu:summary")
def summary(rows) -> str:
    return "\n".join([f"- **Targets (issue 17).** {_target_line(rows)}.",
                      f"- **Speed beside the CPU.** {_speed_line(rows)}.",
                      f"- **Repeats on the GPU.** {_repeat_line(rows)}.",
                      f"- **CPU and GPU, same seed.** {_cpu_line(rows)}.",
                      f"- **The time budget.** {_budget_line(rows)}."])


def sprites_cell(rows, n: int = 1000) -> pd.DataFrame:
    """The GPU's dsprites-pcl fits at ``n``, one per seed and method."""
    got = first_fits(rows)
    cell = got[(got["dataset"] == "dsprites-pcl") & (got["n"] == n)]
    if cell.empty:
        raise ValueError(f"no GPU rows for dsprites-pcl at N = {n}")
    return cell


def _per_seed(cell: pd.DataFrame, method: str) -> pd.Series:
    return cell[cell["method"] == method].set_index("seed")["mse"]


def comparisons(cell: pd.DataFrame) -> list[str]:
    """The paired sentences of the project's standard (docs/benchmarks.md) for each pair of methods."""
    return [relation(paired(_per_seed(cell, a), _per_seed(cell, b)), prose(a), prose(b)) for a, b in PAIRS]


@block("gpu:dsprites-1000")
def sprites_table(rows) -> str:
    cell = sprites_cell(rows)
    seconds = timed(cell)           # a time only with the load it was measured under
    lines = ["| method | seeds (n) | median MSE [q1, q3] | mean |"
             + (f" mean GPU s per fit ({load_said(cell)}) | mean s after the fit |" if seconds else ""),
             "|---|---|---|---|" + "---|---|" * seconds]
    for method in METHODS:
        part = cell[cell["method"] == method]
        lines.append(f"| {NAMES[method]} | {seed_text(part['seed'])} ({len(part)}) | {quartiles(part['mse'])} | "
                     f"{num(part['mse'].mean())} |"
                     + (f" {part['seconds'].mean():.1f} | {part['after_fit_seconds'].mean():.1f} |" if seconds else ""))
    return "\n".join(lines + [""] + [f"- {line}." for line in comparisons(cell)])


@block("gpu:dsprites-vs-paper")
def sprites_vs_paper(rows) -> str:
    """DML-CMR against CE-DML-CMR (the paper's one stated ordering), and the spread on the common seeds."""
    cell = sprites_cell(rows)
    pair = paired(_per_seed(cell, "dml-cmr"), _per_seed(cell, "ce-dml-cmr"))
    verdict = ("agrees with the paper's ordering" if pair.a_ahead else "is the opposite of the paper's ordering"
               if pair.b_ahead else "does not reproduce the paper's ordering (that needs p < 0.05)")
    wide = cell.pivot(index="seed", columns="method", values="mse").dropna()
    spreads = ", ".join(f"{prose(m)} {num(wide[m].quantile(0.75) - wide[m].quantile(0.25))}" for m in METHODS)
    return (f"{relation(pair, prose('dml-cmr'), prose('ce-dml-cmr'))}, which {verdict}. The spread (q3 − q1 of "
            f"the MSE) on the {len(wide)} seeds all three methods have ({seed_text(wide.index)}): {spreads}")


@block("gpu:benchmarks")
def benchmarks_summary(rows) -> str:
    """The GPU rows in a paragraph for docs/benchmarks.md's dsprites-pcl section."""
    cell, got = sprites_cell(rows), first_fits(rows)
    big = got[(got["dataset"] == "dsprites-pcl") & (got["n"] == 5000)]
    medians = ", ".join(f"{prose(m)} {num(_per_seed(cell, m).median())} ({(cell['method'] == m).sum()} seeds)"
                        for m in METHODS)
    seconds = cell[is_method(cell["method"], "dml-cmr")]["seconds"]
    big_s = timed(big)              # a time only with the load it was measured under
    big_text = "; ".join(f"seed {seed}: " + ", ".join(f"{prose(r.method)} {num(r.mse)}"
                                                      + (f" ({r.seconds:.0f} s)" if big_s else "")
                                                      for r in part.itertuples())
                         for seed, part in big.groupby("seed"))
    took = timed_text(got, lambda: f"A DML-CMR fit took {seconds.min():.0f}–{seconds.max():.0f} s there ({{load}})",
                      f"The fits' seconds: {NOT_QUOTED}")
    return (f"On one **{card(rows)}** ({', '.join(sorted(set(got['date'])))}; docs/gpu.md, rows in "
            f"`bench/results/{FOLDER}/`), N = 1000, median MSE: {medians}. "
            + "; ".join(comparisons(cell)) + f". {took}. N = 5000, {big_text}")

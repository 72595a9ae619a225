"""Timings (docs/benchmarks.md, docs/peers.md, docs/studies.md): the perf scripts' rows
(bench/perf/) and the ``/usr/bin/time -v`` lines of the study logs."""

from __future__ import annotations

import re

import pandas as pd

from dmlcore.learners.registry import is_network

from .registry import block, family
from .tables import (FAMILY, IDLE_MARGIN, NOT_QUOTED, REFERENCE, idle, is_method, load_said, prose, timed,
                     timed_text, title)
from .words import num


@block("nmmr-floor:commands")
def nmmr_floor_commands(rows) -> str:
    frame = rows.csv("nmmr-kernel-floor-speed.csv")
    sizes = ",".join(f"{n}:{e}" for (n, e) in frame[["n", "epochs"]].drop_duplicates().itertuples(index=False))
    return (f"    python -m bench.perf.nmmr_kernel_floor --sizes {sizes} --repeats {frame['repeat'].nunique()} \\\n"
            "        --out bench/results/nmmr-kernel-floor-speed.csv")


@block("nmmr-floor")
def nmmr_floor(rows) -> str:
    frame = rows.csv("nmmr-kernel-floor-speed.csv")
    lines = ["| N | epochs | fits each | s per fit, median: with the floor / without | ratio | last-epoch risk equal | "
             "load average |", "|---|---|---|---|---|---|---|"]
    for (n, epochs), part in frame.groupby(["n", "epochs"], sort=False):
        floor, bare = part[part["min_exponent"] != float("-inf")], part[part["min_exponent"] == float("-inf")]
        same = (floor.set_index("repeat")["last_risk"] == bare.set_index("repeat")["last_risk"]).all()
        lines.append(f"| {n} | {epochs} | {len(floor)} | {floor['seconds'].median():.2f} / {bare['seconds'].median():.2f} | "
                     f"{bare['seconds'].median() / floor['seconds'].median():.2f}x | {'yes' if same else 'no'} | "
                     f"{part['load_avg_1min'].min():.1f}–{part['load_avg_1min'].max():.1f} |")
    return "\n".join(lines)


@block("nmmr-floor:cli")
def nmmr_floor_cli(rows) -> str:
    frame = rows.jsonl("nmmr-kernel-floor-cli.jsonl")
    frame["n"] = frame["args"].str.extract(r"--n (\d+)", expand=False).astype(int)
    new, old = frame["commit"].iloc[0], frame["commit"].iloc[1]
    parts = []
    for n, part in frame.groupby("n", sort=True):
        a, b = (part.loc[part["commit"] == c, "seconds"] for c in (new, old))
        parts.append(f"{'–'.join(f'{x:.0f}' for x in sorted({a.min(), a.max()}))} s against "
                     f"{'–'.join(f'{x:.0f}' for x in sorted({b.min(), b.max()}))} s at N = {n} "
                     f"({len(a)} fit{'s' if len(a) > 1 else ''} each)")
    load = frame["load_avg_1min"]
    return (f"Whole CLI fits of the two commits, alternating (with the floor, {new}, against without, {old}; "
            f"1-minute load {load.min():.1f}–{load.max():.1f}): " + "; ".join(parts))


def _seconds(part: pd.DataFrame) -> str:
    med = part["seconds"].median()
    return f"{med:.1f} s [{part['seconds'].min():.1f}, {part['seconds'].max():.1f}]"


def _ratio(part: pd.DataFrame) -> tuple[float, list]:
    """Median over seeds of each seed's DML-CMR / CE-DML-CMR time, and the per-seed ratios."""
    sec = part.pivot(index="seed", columns="method", values="seconds")
    ratio = sec["dml-cmr"] / sec["ce-dml-cmr"]
    return ratio.median(), list(ratio)


@block("speed-idle-authors")
def speed_idle_authors(rows) -> str:
    """The authors' design, N = 5000, one and two torch threads, idle machine."""
    frame = rows.jsonl("authors/speed-idle.jsonl")
    lines = ["| fit (demand-iv, this design, N = 5000, nn) | 1 torch thread: median [min, max] | 2 torch threads | "
             "peak RSS, largest |", "|---|---|---|---|"]
    for method, name in (("dml-cmr", "DML-CMR, K = 10"), ("ce-dml-cmr", "CE-DML-CMR"), ("naive", "naive plug-in")):
        part = frame[frame["method"] == method]
        one, two = (part[part["torch_threads"] == t] for t in (1, 2))
        lines.append(f"| {name} | {_seconds(one)} | {_seconds(two)} | {part['peak_rss_mb'].max():.0f} MiB |")
    cells = []
    for t in (1, 2):
        med, per_seed = _ratio(frame[frame["torch_threads"] == t])
        cells.append(f"{med:.2f} ({', '.join(f'{r:.2f}' for r in per_seed)})")
    lines.append(f"| K-fold / CE, median of the per-seed ratios | {cells[0]} | {cells[1]} | |")
    return "\n".join(lines)


@block("speed-idle-authors:dml-median")
def speed_idle_authors_dml(rows) -> str:
    """DML-CMR's idle median time on the authors' design (one torch thread), with its seeds."""
    frame = rows.jsonl("authors/speed-idle.jsonl")
    part = frame[is_method(frame["method"], "dml-cmr") & (frame["torch_threads"] == 1)]
    seeds = sorted(part["seed"])
    return f"{part['seconds'].median():.1f} s (seeds {seeds[0]}–{seeds[-1]}, {len(part)} fits)"


@block("speed-idle-authors:load")
def speed_idle_authors_load(rows) -> str:
    """The rows' 1-minute load range, and how many let the docs call the machine idle (``tables.idle``)."""
    return _idle_range(rows.jsonl("authors/speed-idle.jsonl"), "–")


def _idle_range(frame: pd.DataFrame, between: str) -> str:
    """A speed bench's 1-minute load range and how many of its rows were within the bound for idle (the fit's
    own torch threads + ``IDLE_MARGIN``)."""
    load = frame["load_avg_1min"]
    within = sum(idle([x], t) for x, t in zip(load, frame["torch_threads"]))
    return (f"{load.min():.1f}{between}{load.max():.1f}; {within} of {len(frame)} rows within the bound for idle, "
            f"the fit's own torch threads + {IDLE_MARGIN:g}")


@block("speed-idle-authors:vs-tables")
def speed_vs_tables(rows) -> str:
    idle = rows.jsonl("authors/speed-idle.jsonl")
    idle = idle[is_method(idle["method"], "dml-cmr") & (idle["torch_threads"] == 1)]["seconds"].median()
    table = rows.csv("authors/demand-iv-nn-5000.csv")
    loaded = table[is_method(table["method"], "dml-cmr")]
    return timed_text(loaded, lambda: f"about {loaded['seconds'].mean() / idle:.1f} times as long "
                                      f"({loaded['seconds'].mean():.1f} s on average, {{load}})",
                      "their rows record no load, so their seconds are not quoted")


@block("speed-idle-raw")
def speed_idle_raw(rows) -> str:
    """The raw design before and after the cheaper dropout masks (first 18 lines of the old file)."""
    before, after = rows.jsonl("before-fast-dropout/speed-idle.jsonl").iloc[:18], rows.jsonl("speed-idle.jsonl")
    lines = ["| fit (demand-iv, N = 5000, nn) | 1 thread, before | 1 thread, after | 2 threads, before | 2 threads, after |",
             "|---|---|---|---|---|"]
    for method, name in (("dml-cmr", "DML-CMR, K = 10 (median of 3)"), ("ce-dml-cmr", "CE-DML-CMR"),
                         ("naive", "naive plug-in")):
        cells = [f"{frame[(frame['method'] == method) & (frame['torch_threads'] == t)]['seconds'].median():.1f} s"
                 for t in (1, 2) for frame in (before, after)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for t in (1, 2):
        for frame in (before, after):
            med, per_seed = _ratio(frame[frame["torch_threads"] == t])
            cells.append(f"{med:.2f} ({', '.join(f'{r:.2f}' for r in per_seed)})")
    lines.append("| **K-fold / CE**, median of the per-seed ratios (seeds 1, 2, 3) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


@block("speed-idle-raw:load")
def speed_idle_raw_load(rows) -> str:
    return _idle_range(rows.jsonl("speed-idle.jsonl"), " and ")


def _plan(rows) -> pd.DataFrame:
    return rows.jsonl("speed.jsonl")


def _fit(plan, method, learner="nn", n=5000, folds=10, threads=1):
    part = plan[(plan["method"] == method) & (plan["learner"] == learner) & (plan["n"] == n)
                & (plan["folds"] == folds) & (plan["torch_threads"] == threads)]
    return part.iloc[0]


@block("speed-plan")
def speed_plan(rows) -> str:
    plan = _plan(rows)
    lines = ["| fit (N = 5000 unless noted) | wall time | target | peak RSS |", "|---|---|---|---|"]
    for label, args, target in (("DML-CMR, nn, K = 10", ("dml-cmr",), "≤ 60 s"), ("CE-DML-CMR, nn", ("ce-dml-cmr",), "≤ 20 s"),
                                ("naive plug-in, nn", ("naive",), "≤ 20 s"), ("DML-CMR, gb, K = 10", ("dml-cmr", "gb"), "≤ 30 s"),
                                ("CE-DML-CMR, gb", ("ce-dml-cmr", "gb"), ""),
                                ("DML-CMR, nn, K = 10, N = 10000", ("dml-cmr", "nn", 10000), "")):
        fit = _fit(plan, *args)
        lines.append(f"| {label} | {fit['seconds']:.1f} s | {target} | {fit['peak_rss_mb']:.0f} MiB |")
    return "\n".join(lines)


@block("speed-plan:ratios")
def speed_plan_ratios(rows) -> str:
    plan = _plan(rows)
    dml, ce = _fit(plan, "dml-cmr"), _fit(plan, "ce-dml-cmr")
    gb = _fit(plan, "dml-cmr", "gb")["seconds"] / _fit(plan, "ce-dml-cmr", "gb")["seconds"]
    seq = plan[plan["method"] == "sequential-folds"].iloc[0]
    ks = " , ".join(f"K = {k} {_fit(plan, 'dml-cmr', folds=k)['seconds']:.1f} s" for k in (2, 5, 10, 20)).replace(" ,", ",")
    ns = [_fit(plan, "dml-cmr", n=n) for n in (2000, 5000, 10000)]
    two = _fit(plan, "dml-cmr", threads=2)
    return "\n".join([
        f"- **K-fold / CE: {dml['seconds']:.1f} / {ce['seconds']:.1f} = {dml['seconds'] / ce['seconds']:.1f}x** on the "
        f"same seed with nn learners (target ≤ 2.5x: **{'met' if dml['seconds'] / ce['seconds'] <= 2.5 else 'not met'}**), "
        f"{gb:.2f}x with gb. Cross-fitting trains 2K nuisance models on 90 % of the rows each, i.e. 9x the nuisance work "
        "of CE-DML-CMR; the second stage costs the same for both (the nuisance values are computed once per row), so "
        "the ratio is bounded below by how much of CE's time is its second stage.",
        f"- **Batched / one fold model at a time**: the 2K = 20 nuisance networks of K = 10 trained as two batched "
        f"networks take {seq['seconds_batched']:.1f} s, trained one after another {seq['seconds_sequential']:.1f} s: "
        f"**{seq['seconds_sequential'] / seq['seconds_batched']:.1f}x** from batching alone.",
        f"- **Cost in K** (N = 5000): {ks} (each fold model stops on its own validation loss and leaves the batch).",
        f"- **Cost in N** (K = 10): {', '.join(f'N = {f.n} {f.seconds:.1f} s' for f in ns)}; peak memory "
        f"{' → '.join(f'{f.peak_rss_mb:.0f}' for f in ns)} MiB.",
        f"- **Two torch threads on a busy machine**: the same DML-CMR fit took {two['seconds']:.1f} s instead of "
        f"{dml['seconds']:.1f} s ({two['seconds'] / dml['seconds']:.1f}x) with two threads while other processes were "
        f"busy (load {two['load_avg_1min']:.1f}), so the two-thread configurations of the plan were stopped there.",
    ])


@block("speed-plan:load")
def speed_plan_load(rows) -> str:
    plan = _plan(rows)
    one = plan[plan["torch_threads"] == 1]
    return f"{one['load_avg_1min'].min():.1f}–{one['load_avg_1min'].max():.1f}"


def study_seconds(rows, log: str) -> float:
    """The study's own wall time, from its last line ("40 of 40 fits run, 0 reused in 164.2 s")."""
    match = re.search(r"fits run, \d+ reused in ([\d.]+) s", (rows.folder / log).read_text())
    return float(match.group(1))


@block("study40")
def study40(rows) -> str:
    runs = (("jobs1", "in process (`--jobs 1`)", 1), ("jobs2", "loky, 2 workers (`--jobs 2`)", 2),
            ("ray2", "local Ray instance, 2 CPUs (`--executor ray --jobs 2`)", 2))
    every = pd.concat([rows.csv(f"study40-{run}-fits.csv") for run, _, _ in runs])
    if not timed(every):           # its wall times, speed-ups and fit times are times: quoted only with their load
        lines = ["| executor | peak RSS (largest process, `/usr/bin/time`) |", "|---|---|"]
        for run, label, _ in runs:
            lines.append(f"| {label} | {rows.time_log(f'study40-{run}.log')['peak_kib'] / 1024:.0f} MiB |")
        return "\n".join(lines + ["", f"Wall times, speed-ups and fit times: {NOT_QUOTED}."])
    load = load_said(every)
    lines = [f"| executor | study wall time ({load}) | speed-up | sum of the fits' own times | start-up and hand-over "
             "(wall − sum / workers) | DML-CMR fit, median | peak RSS (largest process, `/usr/bin/time`) |",
             "|---|---|---|---|---|---|---|"]
    base = None
    for run, label, workers in runs:
        fits, log = rows.csv(f"study40-{run}-fits.csv"), rows.time_log(f"study40-{run}.log")
        wall = study_seconds(rows, f"study40-{run}.log")
        base = base or wall
        total = fits["seconds"].sum()
        dml = fits.loc[is_method(fits["method"], "dml-cmr"), "seconds"].median()
        lines.append(f"| {label} | {wall:.1f} s | {base / wall:.2f} | {total:.1f} s | "
                     f"{wall - total / workers:.1f} s | {dml:.2f} s | {log['peak_kib'] / 1024:.0f} MiB |")
    return "\n".join(lines)


@block("study40:same")
def study40_same(rows) -> str:
    runs = [rows.csv(f"study40-{run}-fits.csv").set_index(["seed", "method"])["mse"] for run in ("jobs1", "jobs2", "ray2")]
    bench = rows.csv("authors/demand-iv-nn-1000-2000.csv").query("n == 2000").set_index(["seed", "method"])["mse"]
    same = all((r == runs[0]).all() for r in runs) and (bench.reindex(runs[0].index) == runs[0]).all()
    return ("Every fit's MSE was identical, to the last bit, under the three executors and equal to the rows of the "
            "N = 2000 table (in the archive)" if same else "The fits' MSEs differ between the executors or from the N = 2000 table")


@block("tune-validation")
def tune_validation(rows) -> str:
    text = (rows.folder / "authors/tune-validation.log").read_text().splitlines()
    start = next(i for i, line in enumerate(text) if line.split()[:2] == ["lr", "batch"])
    lines = ["| lr | batch | s validation MSE | distribution validation NLL |", "|---|---|---|---|"]   # the log
    for line in text[start + 1:]:                                     # records no load: its seconds are not quoted
        parts = line.split()
        if len(parts) < 7:
            break
        lr, batch, _, s_val, g_val = parts[:5]
        lines.append(f"| {float(lr):g} | {batch} | {s_val} | {g_val} |")
    return "\n".join(lines)


EXECUTOR_NAMES = {"local-jobs1": "in process (`--jobs 1`)", "local-jobs2": "loky, 2 workers (`--jobs 2`)",
                  "ray-local-2cpus": "Ray, local instance, 2 CPUs"}


@family(r"executors:(?P<file>[^:]+\.jsonl)")
def executors(rows, file: str) -> str:
    """One row per executor run of bench/perf/executor_overhead.py."""
    frame = rows.jsonl(file)
    lines = ["| executor | fits | start-up (s) | a fit in its worker, median (s) | idle between fits, median / mean (s) | "
             "results per second | load average before |", "|---|---|---|---|---|---|---|"]
    for r in frame.itertuples():
        lines.append(f"| {EXECUTOR_NAMES[r.executor]} | {r.fits} | {num(r.startup_s, 3)} | {r.fit_s:.3f} | "
                     f"{r.gap_s:.3f} / {r.gap_mean_s:.3f} | {r.fits_per_s:.0f} | {r.load_before:.1f} |")
    return "\n".join(lines)


@block("gc-cost")
def gc_cost(rows) -> str:
    cost = rows.json("gc-cost.json")
    return f"{cost['collect_ms_after_imports'] / 1000:.2f} s at a 1-minute load of {cost['load'][0]:.1f}"


@block("study-estimates")
def study_estimates(rows) -> str:
    """Estimate / actual seconds of a study planned from a first study's timings (bench/study_estimates.py)."""
    frame = rows.csv("study-estimates.csv")
    lines = ["| case | fits | estimate / actual, each run | when (UTC) | load average |", "|---|---|---|---|---|"]
    for case, part in frame.groupby("case", sort=False):
        lines.append(f"| {case} | {part['fits'].iloc[0]} | {', '.join(f'{r:.2f}' for r in part['ratio'])} | "
                     f"{', '.join(d.split()[1] for d in part['date'])} | "
                     f"{part['load'].min():.1f}–{part['load'].max():.1f} |")
    return "\n".join(lines)


@family(r"executor:(?P<file>[^:]+\.jsonl):(?P<executor>[\w-]+):(?P<field>\w+):(?P<fmt>ms|\d)")
def executor_range(rows, file: str, executor: str, field: str, fmt: str) -> str:
    """The lowest–highest ``field`` of one executor's runs (``any``: all runs) in an overhead file;
    ``fmt``: decimals, or ``ms`` (seconds shown as whole milliseconds)."""
    frame = rows.jsonl(file)
    values = frame[field] if executor == "any" else frame.loc[frame["executor"] == executor, field]
    if values.empty:
        raise ValueError(f"no {executor} rows in {file}")
    show = (lambda v: f"{v * 1000:.0f}") if fmt == "ms" else (lambda v: f"{v:.{int(fmt)}f}")
    lo, hi = show(values.min()), show(values.max())
    return lo if lo == hi else f"{lo}–{hi}"


@block("study40:speed-ups")
def study40_speedups(rows) -> str:
    """How much faster two loky workers and a local Ray instance finished the 40-fit study than one process."""
    walls = {run: study_seconds(rows, f"study40-{run}.log") for run in ("jobs1", "jobs2", "ray2")}
    fits = pd.concat([rows.csv(f"study40-{run}-fits.csv") for run in walls])
    dml = fits[is_method(fits["method"], "dml-cmr")]["seconds"].median()
    return timed_text(fits, lambda: f"{dml:.0f} s per DML-CMR fit, {{load}}) two loky workers finished "
                      f"{walls['jobs1'] / walls['jobs2']:.2f} times faster than one process and a local Ray instance "
                      f"{walls['jobs1'] / walls['ray2']:.2f} times",
                      "whose rows record no load) the speed-ups of two loky workers and of a local Ray instance "
                      "are not quoted")


@block("executor:vs-fits")
def executor_vs_fits(rows) -> str:
    """The largest median idle time per fit (loaded machine) against the neural fits' own times."""
    gap = rows.jsonl("executor-overhead.jsonl")["gap_s"].max()
    fits = rows.csv("demand-iv-nn.csv")
    fits = fits[fits["n"].isin((2000, 5000)) & fits["method"].isin(FAMILY)]
    return timed_text(fits, lambda: f"{fits['seconds'].min():.0f}–{fits['seconds'].max():.0f} s each at N = 2000 and "
                      f"5000 on the raw-noise design, {{load}}, bench/results/demand-iv-nn.csv) that is at most "
                      f"{gap / fits['seconds'].min():.1%}",
                      "bench/results/demand-iv-nn.csv, whose rows record no load) their share is not quoted")


@block("study-estimates:spread")
def study_estimates_spread(rows) -> str:
    """The first run's demand-iv estimate / actual, and the widest factor of the later runs, either way."""
    frame = rows.csv("study-estimates.csv")
    first_time = frame["date"].min()
    demand = frame[frame["case"].str.startswith("demand-iv")]
    first = demand.loc[demand["date"] == first_time, "ratio"].iloc[0]
    later = frame.loc[frame["date"] != first_time, "ratio"]
    widest = max(later.max(), 1 / later.min())
    return (f"the demand-iv estimate came out {first:.1f} times the actual seconds (the stored smaller-N fits had "
            f"been timed on a busier machine than the one that then ran the N = 2000 fits); in the later runs it "
            f"was within a factor {widest:.1f} either way")


# ---- the default fit's time (bench/perf/default_fit.py): DML-CMR against CE-DML-CMR as a user runs them
DEFAULT_FIT = "default-fit.jsonl"


@block("default-fit")
def default_fit_newest(rows) -> str:
    """The newest row of bench/results/default-fit.jsonl (a line saying there is none, before the first run)."""
    try:
        frame = rows.jsonl(DEFAULT_FIT)
    except FileNotFoundError:
        return f"No row yet in `bench/results/{DEFAULT_FIT}`: run the command above."
    return default_fit_text(frame.loc[frame["date"].idxmax()])


@family(r"default-fit:(?P<date>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4})")
def default_fit_named(rows, date: str) -> str:
    """The row of bench/results/default-fit.jsonl started at ``date`` (its ``date`` field)."""
    frame = rows.jsonl(DEFAULT_FIT)
    match = frame[frame["date"] == date]
    if match.empty:
        raise ValueError(f"no row of {DEFAULT_FIT} has date {date}")
    return default_fit_text(match.iloc[0])


def _load_words(quiet: bool, other_work) -> str:
    """The load of a default-fit row in words: idle (``tables.idle``, one thread), or above it with what else ran as the row
    says (its ``other_work``, recorded since 2026-11-29; before, nothing was)."""
    if quiet:
        return "idle"
    above = f"above {1 + IDLE_MARGIN:g}, the bound for idle"
    if not isinstance(other_work, str) or not other_work:
        return f"{above}; what else ran was not recorded"
    if other_work.startswith("nothing"):
        return f"{above}; other work: {other_work}, so the command's own processes count in it"
    return f"{above}; other work: {other_work}"


BREAKDOWN_WORDS = {"imports": "imports", "data": "the data", "choice": "auto's choice (the pilot)",
                   "nuisances": "the chosen nuisances on every fold", "second_stage": "the second stage",
                   "refits": "the debiased effect's refits", "debiased_effect": "the representer ladder",
                   "sieve_effect": "the sieve effect", "other": "the rest"}


def default_fit_text(row) -> str:
    runs = row["runs"]
    loads = [x for r in runs for x in (r["load_before"][0], r["load_after"][0])]
    quiet = idle(loads)
    lines = [f"Row of {row['date'][:16].replace('T', ' ')} (`bench/results/{DEFAULT_FIT}`), {row['machine']}, commit "
             f"{row['commit']}{' with uncommitted changes' if row['uncommitted_changes'] else ''}, N = {row['n']}, "
             f"seed {row['seed']}; 1-minute load average {min(loads):.1f}–{max(loads):.1f} "
             f"({_load_words(quiet, row.get('other_work'))}).", "",
             "| command | whole command | the fit alone | nuisances: chosen (s, g) | load before → after |",
             "|---|---|---|---|---|"]
    for r in runs:
        chosen = ", ".join(r["nuisances"][role]["choice"] for role in ("s", "g") if role in r["nuisances"]) or (
            f"named: {r['outcome_learner']}, {r['sampler']}")
        cpu = r.get("cpu_seconds")     # since 2026-11-29: the command's and its workers' CPU seconds
        whole = f"{r['command_seconds']:.1f} s" + (f" ({cpu:.1f} CPU s)" if isinstance(cpu, (int, float)) else "")
        lines.append(f"| `{r['command']}` | {whole} | {r['fit_seconds']:.1f} s | {chosen} | "
                     f"{r['load_before'][0]:.1f} → {r['load_after'][0]:.1f} |")
    dml = next(r for r in runs if r["method"] == REFERENCE and not r["named"] and r.get("debias", True)
               and r.get("refits") != "in process")
    # one row is one fit of each command: it can fall within a target or over it, but not decide it
    verdict = (f"DML-CMR's command takes {row['ratio']:.2f} times CE-DML-CMR's (target ≤ {row['ratio_target']}: "
               f"{'within it' if row['ratio_met'] else 'over it'} on this row) and {dml['command_seconds']:.1f} s "
               f"(target ≤ {row['seconds_target']:.0f} s on 2 idle cores: ")
    verdict += (f"{'within it' if row['seconds_met'] else 'over it'} on this row)" if quiet else
                "this row's load is above the bound for idle, so it does not count)")
    verdict += "; a row is one fit of each command, which does not decide a target"
    per_run = [(r["load_before"][0] + r["load_after"][0]) / 2 for r in runs]
    uneven = not quiet and max(per_run) > 1.5 * min(per_run)
    if uneven:
        verdict += ("; the runs met different loads (mean 1-minute load per run "
                    f"{min(per_run):.1f}–{max(per_run):.1f}), so their ratios mix the methods' costs with the load")
    cost = row.get("auto_cost")
    if isinstance(cost, dict) and cost:
        verdict += ("; auto's time over the nuisances named nn (the default before auto): " +
                    ", ".join(f"{title(m)} {v:.2f}x" for m, v in cost.items()))
    effect = row.get("effect_seconds")
    if isinstance(effect, dict) and effect:
        verdict += ("; the debiased effect (its two refits of the method, the representer and the specification "
                    "spread) adds " + " and ".join(f"{v:.1f} s to {title(m)}'s"
                                                   for m, v in effect.items()) + " command")
    parts = row.get("breakdown")
    if isinstance(parts, dict) and parts.get("seconds"):   # since 2026-11-29 (bench/perf/fit_stages.py)
        verdict += ("; where DML-CMR's seconds go, measured on one more fit with every part in one process (the refits "
                    "after the fit, one after another: wall / CPU s): " +
                    ", ".join(f"{BREAKDOWN_WORDS.get(k, k)} {v['wall']:.1f} / {v['cpu']:.1f}"
                              for k, v in parts["seconds"].items()) +
                    f" (in all {parts['total']['wall']:.1f} / {parts['total']['cpu']:.1f}); with workers, each also "
                    f"imports dmlcore, and the refits run beside the fit")
    saved = row.get("workers_save_seconds")
    if isinstance(saved, dict) and saved:   # --jobs-one-too (issue 45): the refits in process after the fit
        verdict += ("; the refits in worker processes beside the fit (the default) instead of after it in the "
                    "command's process (`--jobs 1`) save " +
                    " and ".join(f"{v:.1f} s of {title(m)}'s" for m, v in
                                 saved.items()) + " command, with "
                    + ("the same record" if row.get("records_identical") else "a DIFFERENT record (a bug)"))
    return "\n".join(lines) + "\n\n" + verdict + "."


@block("auto-candidates")
def auto_candidates(rows) -> str:
    """How often the network had the lowest cross-fitted held-out loss among nn, gb and gb-small in the
    stored selections on demand-iv (bench.nuisance_choice: every candidate fitted on every fold)."""
    frame = pd.concat([rows.csv(name) for name in ("nuisance-benchmark-demand-iv.csv",
                                                    "nuisance-benchmark-demand-iv-1000-2000.csv")])
    once = frame.drop_duplicates(["n", "iv_strength", "seed"])
    won = {role: int(once[f"{role}_auto"].str.split("/").apply(lambda c: any(is_network(name) for name in c)).sum()) for role in ("s", "g")}
    sizes = ", ".join(str(n) for n in sorted(once["n"].unique()))
    return (f"in {len(once)} selections on demand-iv (N = {sizes}; seeds × designs), the network had the lowest "
            f"held-out loss {won['s']} times for the outcome model and {won['g']} times for the distribution model")


# ---- auto's pilot: the choice scored on PILOT folds against every fold (bench/pilot_selection.py)
PILOT_SELECTION = "pilot-selection.csv"
PILOT_FOLDS = 2   # dmlcore.learners.select.PILOT when the rows were made


def _pilot_pairs(rows) -> pd.DataFrame:
    """One row per (design, n, seed, setting, role): the choices per fold of scoring every fold, of the pilot
    (today's rule: every fold the pooled choice) and of the per-fold variant, and the seconds. Rows of the
    per-fold variant (``pilot-per-fold``: a pilot fold chose on the other pilot folds' rows) also give
    today's choice exactly: the pooled choice is the one its folds outside the pilot got, from the same fits."""
    frame = rows.csv(PILOT_SELECTION)
    keys = ["design", "n", "folds", "seed", "setting", "role"]
    wide = frame.pivot_table(index=keys, columns="rule", values=["choice_per_fold", "seconds"], aggfunc="first")
    wide.columns = [f"{value}_{rule}" for value, rule in wide.columns]
    wide = wide.reset_index()
    if "choice_per_fold_pilot" not in wide:
        variant = wide["choice_per_fold_pilot-per-fold"].str.split("/")
        wide["choice_per_fold_pilot"] = variant.apply(lambda c: "/".join([c[min(PILOT_FOLDS, len(c) - 1)]] * len(c)))
        wide["seconds_pilot"] = wide["seconds_pilot-per-fold"]
    wide["same"] = wide["choice_per_fold_every"] == wide["choice_per_fold_pilot"]
    if "choice_per_fold_pilot-per-fold" in wide:
        wide["same_variant"] = wide["choice_per_fold_every"] == wide["choice_per_fold_pilot-per-fold"]
    return wide


@block("pilot-selection")
def pilot_selection_table(rows) -> str:
    """Per design, N and setting: how often the pilot's choice per fold was the every-fold rule's, and the
    selections' seconds under each rule (both nuisances, summed per seed; medians over seeds)."""
    wide, frame = _pilot_pairs(rows), rows.csv(PILOT_SELECTION)
    seconds, load = timed(frame), load_said(frame)     # a time (and a ratio of times) only with its load
    lines = ["| design | N | folds | seeds | same choice for every fold: pilot (per-fold variant), of seeds × 2 "
             "nuisances | where the pilot's choice differs (every fold → pilot) |"
             + (f" seconds, every fold ({load}) | seconds, pilot ({load}) | pilot / every |" if seconds else ""),
             "|---|---|---|---|---|---|" + "---|---|---|" * seconds]
    for (design, n), part in wide[wide["setting"] == "kfold"].groupby(["design", "n"], sort=True):
        per_seed = part.groupby("seed")[["seconds_every", "seconds_pilot"]].sum()
        every, pilot = per_seed["seconds_every"].median(), per_seed["seconds_pilot"].median()
        differ = part[~part["same"]]
        choices = differ.apply(lambda r: f"{r['role']}: {_short(r['choice_per_fold_every'])} → "
                                         f"{_short(r['choice_per_fold_pilot'])}", axis=1)
        kinds = ", ".join(f"{text} ({count})" for text, count in choices.value_counts().sort_index().items()) or "–"
        variant = f" ({int(part['same_variant'].sum())})" if "same_variant" in part else ""
        lines.append(f"| {design} | {n} | {part['folds'].iloc[0]} | {part['seed'].nunique()} | {int(part['same'].sum())}{variant} "
                     f"of {len(part)} | {kinds} |" + (f" {every:.1f} s | {pilot:.1f} s | {pilot / every:.2f} |" if seconds else ""))
    return "\n".join(lines + ([] if seconds else ["", f"The selections' seconds: {NOT_QUOTED}."]))


def _short(per_fold: str) -> str:
    """A choice per fold, "gb-small/gb-small/..." as "gb-small", or the mix with counts."""
    parts = per_fold.split("/")
    kinds = sorted(set(parts))
    return kinds[0] if len(kinds) == 1 else " + ".join(f"{k} ×{parts.count(k)}" for k in kinds)


@block("pilot-selection:summary")
def pilot_selection_summary(rows) -> str:
    """K-fold selections: how many made the same choice for every fold under both rules (and the variant)."""
    wide = _pilot_pairs(rows)
    kfold = wide[wide["setting"] == "kfold"]
    text = f"{int(kfold['same'].sum())} of {len(kfold)} K-fold selections made the same choice for every fold"
    if "same_variant" in kfold:
        text += f" (the per-fold variant {int(kfold['same_variant'].sum())})"
    return text


@block("pilot-selection:inner")
def pilot_selection_inner(rows) -> str:
    """One training set, two of the five inner folds scored (dropped): the bench's agreement, and the 20-seed
    rows of IV strength 0.4 against those made scoring every inner fold."""
    wide = _pilot_pairs(rows)
    one = wide[wide["setting"] == "one-set"]
    two = rows.csv("authors/demand-iv-nn-5000-strength0.4-pilot-inner2.csv")
    every = rows.csv("authors/demand-iv-nn-5000-strength0.4-auto.csv")
    pair = two.merge(every, on=["seed", "method"], suffixes=("_two", "_every"))
    parts = []
    for method in ("ce-dml-cmr", "naive"):
        part = pair[pair["method"] == method]
        moved = part[part["mse_two"] != part["mse_every"]]
        name = prose(method)
        parts.append(f"{name} differed on {len(moved)} of {len(part)} seeds (seeds "
                     f"{', '.join(str(x) for x in sorted(moved['seed']))}), higher on {int((moved['mse_two'] > moved['mse_every']).sum())}")
    return (f"made the every-fold choice in {int(one['same'].sum())} of {len(one)} selections of the bench above, but "
            f"on the {pair['seed'].nunique()} seeds of IV strength 0.4 (N = {two['n'].iloc[0]}) " + "; ".join(parts))


# ---- what `dmlcore fit` imports (bench/perf/import_time.py, issue 45): two source trees measured turn about
IMPORT_TIME = "perf/import-time.jsonl"


@block("import-time")
def import_time_newest(rows) -> str:
    """The newest row of bench/results/perf/import-time.jsonl: before against after, medians, with the load."""
    frame = rows.jsonl(IMPORT_TIME)
    row = frame.loc[frame["date"].idxmax()]
    before, after = row["summary"]["before"], row["summary"]["after"]
    runs = row["runs"]
    loads = [x for tree in runs.values() for kind in tree.values() for r in kind
             for x in (r["load_before"], r["load_after"])]
    lines = [f"Row of {row['date'][:16].replace('T', ' ')} (`bench/results/{IMPORT_TIME}`), {row['machine']}, "
             f"before: {row['before']}, after: commit {row['commit']}"
             f"{' with uncommitted changes' if row['uncommitted_changes'] else ''}; 1-minute load average "
             f"{min(loads):.1f}–{max(loads):.1f} on {row['cores']} cores "
             f"({'idle' if max(loads) <= 1.5 else 'under load: compare before with after, not with idle seconds'}); "
             f"medians of {len(runs['after']['import'])} runs (the fit: {len(runs['after']['fit'])}), the two trees "
             "taking turns.", "",
             "| measure | before | after | after / before |", "|---|---|---|---|"]
    measures = [("`import dmlcore.cli`: the modules' own import times, summed", "import_ms_median", 1000),
                ("`dmlcore fit --help`: wall", "help_wall_s_median", 1),
                ("a tiny nn fit: wall", "fit_wall_s_median", 1),
                ("a tiny nn fit: all its imports", "fit_import_ms_median", 1000),
                ("a tiny nn fit: imports after dmlcore's, during the fit", "during_fit_import_ms_median", 1000)]
    for label, key, scale in measures:
        if key in before and key in after:
            lines.append(f"| {label} | {before[key] / scale:.2f} s | {after[key] / scale:.2f} s | "
                         f"{after[key] / before[key]:.2f} |")
    dynamo = {name: sum(r["torch_dynamo"] for r in runs[name]["fit"]) for name in ("before", "after")}
    text = "\n".join(lines) + "\n\n" + (
        f"`torch._dynamo` was imported in {dynamo['before']} of {len(runs['before']['fit'])} tiny fits before and "
        f"{dynamo['after']} of {len(runs['after']['fit'])} after.")
    if "no_pyc_import_ms_median" in row:
        text += (f" Without the bytecode cache (`PYTHONDONTWRITEBYTECODE=1`, every dmlcore module compiled at each "
                 f"start) `import dmlcore.cli` summed {row['no_pyc_import_ms_median'] / 1000:.2f} s (after's tree).")
    return text

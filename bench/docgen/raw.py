"""The raw-noise sections of docs/benchmarks.md (rows before 2026-11-26) and the other one-off
measurements there: dsprites-pcl, the image step, IHDP's earlier run."""

from __future__ import annotations

import pandas as pd

from .registry import block, family
from .tables import (FAMILY, NOT_QUOTED, PLUG_IN_METHOD, is_method, load_said, per_seed, prose, timed, timed_text,
                     title)
from .words import num, paired, relation

OLD = "before-fast-dropout/"
NAMES = {"dml-cmr": "DML-CMR (K = 10)", "ce-dml-cmr": title("ce-dml-cmr"), "naive": "naive plug-in", "sieve-2sls": "sieve 2SLS"}
ORDER = list(NAMES)


def quartiles(x: pd.Series, fmt: str = ".4f") -> str:
    q1, med, q3 = x.quantile([0.25, 0.5, 0.75])
    return f"{med:{fmt}} [{q1:{fmt}}, {q3:{fmt}}]"


def ordered(frame: pd.DataFrame):
    for n, by_n in frame.groupby("n", sort=True):
        for method in sorted(by_n["method"].unique(), key=ORDER.index):
            yield n, method, by_n[by_n["method"] == method]


@family(r"raw-table:(?P<file>[^:]+)")
def raw_table(rows, file: str) -> str:
    """| N | method | reps | median [q1, q3] | mean | of a bench CSV, four decimals (two for PCL), and the mean
    s/fit where every row records the load it was measured under."""
    frame = rows.csv(file)
    fmt = ".2f" if frame["mse"].median() > 1 else ".4f"
    seconds = timed(frame)
    lines = ["| N | method | reps | median MSE [q1, q3] | mean |" + (" mean s/fit |" if seconds else ""),
             "|---|---|---|---|---|" + "---|" * seconds]
    for n, method, cell in ordered(frame):
        lines.append(f"| {n} | {NAMES[method]} | {len(cell)} | {quartiles(cell['mse'], fmt)} | "
                     f"{cell['mse'].mean():{fmt}} |" + (f" {cell['seconds'].mean():.1f} |" if seconds else ""))
    return "\n".join(lines)


def _cell(rows, file: str, n: str) -> pd.DataFrame:
    frame = rows.csv(file)
    return frame[frame["n"] == int(n)]


@family(r"rawrel:(?P<file>[^:]+):(?P<n>\d+):(?P<a>[^:]+):(?P<b>[^:]+)")
def raw_relation(rows, file: str, n: str, a: str, b: str) -> str:
    fits = _cell(rows, file, n)
    return relation(paired(per_seed(fits, a), per_seed(fits, b)), prose(a), prose(b))


@family(r"rawmed:(?P<file>[^:]+):(?P<n>\d+):(?P<method>[^:]+)")
def raw_median(rows, file: str, n: str, method: str) -> str:
    return num(per_seed(_cell(rows, file, n), method).median())


STRENGTHS = {"1.0": "demand-iv-nn.csv", "0.4": "demand-iv-weak-nn.csv"}


@block("raw-strength")
def raw_strength(rows) -> str:
    lines = ["| strength | N | DML-CMR | CE-DML-CMR | naive plug-in | sieve 2SLS |", "|---|---|---|---|---|---|"]
    for strength, file in STRENGTHS.items():
        frame = rows.csv(file)
        for n, by_n in frame.groupby("n", sort=True):
            cells = [quartiles(by_n.loc[by_n["method"] == m, "mse"]) for m in ORDER]
            lines.append(f"| {strength} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


@block("raw-strength:growth")
def raw_growth(rows) -> str:
    strong, weak = rows.csv(STRENGTHS["1.0"]), rows.csv(STRENGTHS["0.4"])
    parts = []
    for n in (2000, 5000):
        growth = [per_seed(weak[weak["n"] == n], m).median() / per_seed(strong[strong["n"] == n], m).median()
                  for m in ORDER]
        parts.append(f"at N = {n} by {', '.join(f'{g:.1f}x' for g in growth)}")
    cell = weak[weak["n"] == 5000]
    seconds = cell.groupby("method")["seconds"].mean()
    said = timed_text(cell, lambda: " (mean seconds per fit at strength 0.4, N = 5000, {load}: "
                      + " / ".join(f"{seconds[m]:.1f}" for m in ORDER) + ")", "")   # no seconds from rows without load
    return ("From strength 1.0 to 0.4 the median error of DML-CMR, CE-DML-CMR, the naive plug-in and sieve 2SLS "
            f"grows {'; '.join(parts)}{said}")


@block("first-stage")
def first_stage(rows) -> str:
    frame = rows.csv("raw-design/first-stage.csv")
    frame = frame[frame["noise_scale"] == "raw"]
    parts = []
    for strength, part in frame.groupby("iv_strength", sort=False):
        cells = [f"{r.partial_r2:.2f} / {r.f_stat:,.0f} (N = {r.n})" for r in part.itertuples()]
        parts.append(f"{' and '.join(cells)} at strength {strength:g}")
    return "; ".join(parts)


@block("dropout-change")
def dropout_change(rows) -> str:
    """DML-CMR before and after the dropout change on 30 paired seeds (raw design, N = 5000)."""
    extra = ("demand-iv-nn-5000-seeds10-14.csv", "demand-iv-nn-5000-seeds15-29.csv")
    five = lambda f: rows.csv(f).query("n == 5000")  # noqa: E731
    after = pd.concat([per_seed(five("demand-iv-nn.csv"), "dml-cmr")] + [per_seed(five(f), "dml-cmr") for f in extra])
    before = pd.concat([per_seed(five(OLD + "demand-iv-nn-5000-rerun.csv"), "dml-cmr")]
                       + [per_seed(five(OLD + f), "dml-cmr") for f in extra])

    def diff(lo, hi, methods=("dml-cmr",)):
        d = (after - before).loc[lo:hi]
        return f"{d.mean():+.4f} ± {d.std(ddof=1) / len(d) ** 0.5:.4f}", int((d > 0).sum()), len(d)

    first = {}
    for m in ("dml-cmr", "ce-dml-cmr", "naive"):
        d = per_seed(five("demand-iv-nn.csv"), m) - per_seed(five(OLD + "demand-iv-nn-5000-rerun.csv"), m)
        first[m] = (f"{d.mean():+.4f} ± {d.std(ddof=1) / len(d) ** 0.5:.4f}", int((d > 0).sum()), len(d))
    d30, worse30, n30 = diff(0, 29)
    d10, _, _ = diff(10, 29)
    d15, _, _ = diff(15, 29)
    sd = (after - before).std(ddof=1)
    return (f"On seeds 0–9 the orthogonal-score methods looked worse after the change (DML-CMR {first['dml-cmr'][0]}, "
            f"mean paired difference ± standard error, worse on {first['dml-cmr'][1]} of {first['dml-cmr'][2]}; "
            f"CE-DML-CMR {first['ce-dml-cmr'][0]}; naive {first['naive'][0]}), so we ran DML-CMR on 20 more seeds "
            f"with both versions. Over **{n30} paired seeds** DML-CMR has a median of {before.median():.4f} before "
            f"and {after.median():.4f} after, a paired difference of **{d30}**, worse on {worse30} of {n30}. Seeds "
            f"10–29 alone gave {d10} ({d15} on 15–29), so the first ten seeds' gap was chance: a fit moves by this "
            f"much with its random stream alone (the per-seed differences between the two versions have a "
            f"standard deviation of {sd:.4f} over the {n30} seeds)")


@block("draws")
def draws(rows) -> str:
    def cell(frame):
        return frame[(frame["n"] == 5000) & is_method(frame["method"], "ce-dml-cmr") & (frame["seed"] <= 4)]
    parts = [("1", cell(rows.csv("draws-1.csv"))), ("8 (default)", cell(rows.csv(OLD + "demand-iv-nn.csv"))),
             ("16", cell(rows.csv("draws-16.csv")))]
    seconds = all(timed(frame) for _, frame in parts)      # a time only with the load it was measured under
    lines = ["| M (draws per row) | seeds | median MSE [q1, q3] |" + (" mean s/fit |" if seconds else ""),
             "|---|---|---|" + "---|" * seconds]
    for label, frame in parts:
        lines.append(f"| {label} | {len(frame)} | {quartiles(frame['mse'])} |"
                     + (f" {frame['seconds'].mean():.1f} |" if seconds else ""))
    return "\n".join(lines)


@block("draws:after")
def draws_after(rows) -> str:
    frame = rows.csv("demand-iv-nn.csv")
    cell = frame[(frame["n"] == 5000) & is_method(frame["method"], "ce-dml-cmr") & (frame["seed"] <= 4)]
    return quartiles(cell["mse"])


@block("old-pcl")
def old_pcl(rows) -> str:
    frame = rows.csv(OLD + "demand-pcl-nn.csv")
    med = frame.groupby(["method", "n"])["mse"].median()
    return ", ".join(f"{m if m == PLUG_IN_METHOD else prose(m)} {' / '.join(f'{med[(m, n)]:.2f}' for n in (1000, 5000))}"
                     for m in FAMILY)


# ---------------------------------------------------------------- dsprites-pcl and the image learner
@block("dsprites")
def dsprites(rows) -> str:
    """MSE per seed; the fit's seconds beside it only when every row records its load (``timed``)."""
    frame = rows.csv("dsprites-pcl-nn.csv")
    seconds = timed(frame)
    lines = ["| N | seed | DML-CMR (K = 10) | CE-DML-CMR | naive plug-in |", "|---|---|---|---|---|"]
    for (n, seed), part in frame.groupby(["n", "seed"], sort=True):
        got = part.set_index("method")
        cells = [(f"{got.loc[m, 'mse']:.2f}" + (f" ({got.loc[m, 'seconds']:,.0f} s)" if seconds else ""))
                 if m in got.index else "not run" for m in ("dml-cmr", "ce-dml-cmr", "naive")]
        lines.append(f"| {n} | {seed} | " + " | ".join(cells) + " |")
    if seconds:
        lines.append(f"\nIn brackets: the fit's wall time ({load_said(frame)}).")
    else:
        lines.append("\nThe rows record no load, so the fits' seconds are not quoted.")
    return "\n".join(lines)


@block("dsprites:truth")
def dsprites_truth(rows) -> str:
    truth, frame = rows.json("raw-design/dsprites-truth.json"), rows.csv("dsprites-pcl-nn.csv")
    share = 1 - frame["mse"] / truth["truth_variance"]
    lo, hi = frame.loc[share.idxmin()], frame.loc[share.idxmax()]
    return (f"the true effect's variance over the {truth['test_sprites']} test sprites is "
            f"**{truth['truth_variance']:.1f}**, the MSE of the best constant guess; every fit explains between "
            f"{share.min():.0%} ({prose(lo['method'])}, N = {lo['n']}, seed {lo['seed']}) and {share.max():.0%} "
            f"({prose(hi['method'])}, N = {hi['n']}, seed {hi['seed']}) of it. The outcome proxy's correlation "
            f"with posY is {truth['proxy_confounder_correlation']:.3f}")


@block("dsprites:process")
def dsprites_process(rows) -> str:
    t = rows.time_log("dsprites-pcl-nn-5000-seed0.log")
    # a /usr/bin/time log records no load: its wall and CPU seconds are not quoted (timed_text(None, ...))
    return (f"{t['minor_faults'] / 1e9:.1f} billion minor page faults for its three fits, peak memory "
            f"{t['peak_kib'] / 2 ** 20:.1f} GiB; its wall and CPU times are not quoted, since the log records no load")


@block("image-step")
def image_step(rows) -> str:
    frame = rows.jsonl("image-step.jsonl")
    seconds = timed(frame)          # a time only with the load it was measured under
    times = ("wall_s", "user_s", "system_s") if seconds else ()
    lines = ["| freed memory |" + (f" s/step (wall; {load_said(frame)}) | user s | system s |" if seconds else "")
             + " minor faults/step | peak memory |", "|---|" + "---|" * (len(times) + 2)]
    for keep, part in frame.groupby("keep_freed_memory", sort=True):
        faults = sorted({round(f, -3) for f in part["minor_faults"]})
        lines.append(f"| {'kept (now)' if keep else 'returned (before)'} | "
                     + "".join(", ".join(f"{v:.2f}" for v in part[c]) + " | " for c in times)
                     + f"{'–'.join(dict.fromkeys(f'{f:,.0f}' for f in (faults[0], faults[-1])))}"
                     + f" | {'–'.join(dict.fromkeys(f'{v / 1024:.2f}' for v in sorted(part['peak_rss_mb'])))} GiB |")
    return "\n".join(lines + ([] if seconds else ["", f"Seconds per step (wall, user, system): {NOT_QUOTED}."]))


@block("keep-memory")
def keep_memory(rows) -> str:
    runs = {k: rows.csv(f"dsprites-pcl-keep-memory-{k}.csv").set_index("method") for k in (0, 1)}
    logs = {k: rows.time_log(f"dsprites-pcl-keep-memory-{k}.log") for k in (0, 1)}
    both = pd.concat(runs.values())
    if not timed(both):             # the fits' and the processes' seconds: quoted only with their load
        lines = ["| method | MSE, before / now |", "|---|---|"]
        for method in ("naive", "ce-dml-cmr"):
            lines.append(f"| {prose(method)} | {runs[0].loc[method, 'mse']:.4f} / {runs[1].loc[method, 'mse']:.4f} |")
        lines.append(f"| the two, whole process: peak memory before / now | {logs[0]['peak_kib'] / 2 ** 20:.2f} / "
                     f"{logs[1]['peak_kib'] / 2 ** 20:.2f} GiB |")
        return "\n".join(lines + ["", f"The fits' and the processes' seconds: {NOT_QUOTED}."])
    load = load_said(both)
    lines = [f"| method | before ({load}) | now ({load}) | MSE, before / now |", "|---|---|---|---|"]
    for method in ("naive", "ce-dml-cmr"):
        a, b = runs[0].loc[method], runs[1].loc[method]
        lines.append(f"| {prose(method)} | {a['seconds']:.1f} s | **{b['seconds']:.1f} s** | {a['mse']:.4f} / {b['mse']:.4f} |")
    lines.append(f"| the two, whole process | {logs[0]['wall_s']:.0f} s ({logs[0]['system_s']:.0f} s system), peak "
                 f"{logs[0]['peak_kib'] / 2 ** 20:.2f} GiB | **{logs[1]['wall_s']:.0f} s** ({logs[1]['system_s']:.0f} s "
                 f"system), peak {logs[1]['peak_kib'] / 2 ** 20:.2f} GiB | |")
    return "\n".join(lines)


@block("keep-memory:dml")
def keep_memory_dml(rows) -> str:
    old = rows.csv("dsprites-pcl-nn.csv")
    old = old[(old["n"] == 1000) & (old["seed"] == 1) & is_method(old["method"], "dml-cmr")].iloc[0]
    new = rows.csv("dsprites-pcl-keep-memory-1.csv")
    new = new[is_method(new["method"], "dml-cmr")].iloc[0]
    log = rows.time_log("dsprites-pcl-keep-memory-1-dml.log")
    both = pd.concat([old.to_frame().T, new.to_frame().T])
    took = timed_text(both, lambda: f"now **{new['seconds']:.0f} s** ({1 - new['seconds'] / old['seconds']:.0%} less "
                      f"than {old['seconds']:,.0f} s; both runs: {{load}}), {log['system_s']:.0f} s of system time, ",
                      "its seconds not quoted (neither run recorded its load), ")
    return (f"{took}peak {log['peak_kib'] / 2 ** 20:.2f} GiB (not recorded for the earlier fit), "
            f"MSE {new['mse']:.4f} ({old['mse']:.4f} before)")


@block("ihdp-earlier")
def ihdp_earlier(rows) -> str:
    med = rows.csv("ihdp-nn.csv").groupby("method")["mse"].median()
    return " / ".join(f"{med[m]:.3f}" for m in ("dml-cmr", "ce-dml-cmr", "naive"))

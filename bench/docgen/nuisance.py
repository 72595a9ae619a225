"""docs/error-budget.md: which nuisance carries DML-CMR's error on demand-iv (oracle against learned
nuisances), the outcome model chosen by its cross-fitted held-out loss (``outcome_learner="auto"``)
against the defaults and the stored rows of the naive plug-in and DFIV, and issue 23's targets.

Rows: ``bench.error_budget`` (error-budget-demand-iv.csv), ``bench.nuisance_choice``
(nuisance-benchmark-*.csv on the benchmark seeds, nuisance-choice-*.csv on seeds 100+),
``bench.outcome_candidates`` and ``bench.perf.speed`` (speed-auto*.jsonl). A cell ``S:G`` is DML-CMR
with a network f, the outcome model from S and the distribution model from G (``nn:nn``: the defaults,
re-measured on this machine beside the others).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .authors import PAPER, PCL_STORED, PRINTED
from .peers import PCL_SIZES, SIZES, STRENGTH, quartiles
from .registry import block, family
from .tables import PAPER_METHOD, has, is_learner, is_method, prose, timed_text, title
from .words import Paired, num, p_text, paired

BUDGET = "error-budget-demand-iv.csv"
BENCHMARK = ("nuisance-benchmark-demand-iv.csv", "nuisance-benchmark-demand-iv-1000-2000.csv")
CANDIDATES = "outcome-candidates-demand-iv.csv"
CHOICE = "nuisance-choice-demand-iv.csv"
SPEED = ("speed-auto.jsonl", "speed-auto-one.jsonl")
BUDGET_CELLS = (("learned", "learned"), ("oracle", "learned"), ("learned", "oracle"), ("oracle", "oracle"))
CELL_NAMES = {"nn:nn": "nn : nn (the defaults)", "auto:nn": "auto : nn", "oracle:nn": "oracle : nn (the true s)",
              "gb:nn": "gb : nn", "nn:gb": "nn : gb", "gb:gb": "gb : gb", "nn:oracle": "nn : oracle",
              "oracle:oracle": "oracle : oracle", "auto:auto": "auto : auto", "gb-small:nn": "gb-small : nn"}
STORED = {"dml-cmr": "DML-CMR, defaults (stored rows)", "naive": "naive plug-in", "dfiv": title("dfiv")}
TARGET_SECONDS = 60.0


def word(pair: Paired) -> str:
    """"ahead", "behind" or "level": the first of the pair against the second, by the standard of docs/benchmarks.md."""
    return "ahead" if pair.a_ahead else "behind" if pair.b_ahead else "level"


def verdict(pair: Paired) -> str:
    """"ahead (lower on W of N seeds, p = ...)", "behind (...)" or "level (...)"; "level (the same MSE on all N
    seeds)" where no seed differs (the test has nothing to rank)."""
    if pair.pairs and pair.p != pair.p:
        return f"level (the same MSE on all {pair.pairs} seeds)"
    return f"{word(pair)} (lower on {pair.counts()})"


def benchmark(rows, n: int, strength: float) -> pd.DataFrame:
    """The benchmark seeds' cells at (N, IV strength)."""
    frame = pd.concat([rows.csv(name) for name in BENCHMARK], ignore_index=True)
    frame = frame[(frame["n"] == n) & (frame["iv_strength"] == strength)]
    if frame.empty:
        raise ValueError(f"no nuisance-benchmark rows at N = {n}, IV strength {strength:g}")
    return frame


def cell(frame: pd.DataFrame, name: str, column: str = "mse") -> pd.Series:
    """One cell's ``column`` by seed."""
    return frame[frame["cell"] == name].set_index("seed")[column]


def stored(rows, method: str, n: int, strength: float) -> pd.DataFrame:
    """The stored rows of ``method`` (20-seed tables of docs/benchmarks.md, docs/peers.md) at (N, strength)."""
    frame = rows.csv(SIZES if strength == 1.0 else STRENGTH)
    frame = frame[(frame["method"] == method) & (frame["n"] == n) & (frame["iv_strength"] == strength)]
    if frame.empty:
        raise ValueError(f"no stored {method} rows at N = {n}, IV strength {strength:g}")
    return frame.set_index("seed")


@family(r"budget:(?P<learner>nn|gb)")
def budget(rows, learner: str) -> str:
    """Every {learned, oracle} s-hat x {learned, oracle} distribution cell of one learner."""
    frame = rows.csv(BUDGET)
    frame = frame[frame["learner"] == learner]
    base = frame[(frame["outcome"] == "learned") & (frame["distribution"] == "learned")].set_index("seed")
    lines = ["| s-hat (outcome model) | distribution of price | seeds | median MSE [q1, q3] | mean | "
             "median fresh-draw MSE [q1, q3] | median s-hat error | against learned × learned, grid |",
             "|---|---|---|---|---|---|---|---|"]
    for outcome, distribution in BUDGET_CELLS:
        part = frame[(frame["outcome"] == outcome) & (frame["distribution"] == distribution)].set_index("seed")
        versus = "" if (outcome, distribution) == ("learned", "learned") else verdict(paired(part["mse"], base["mse"]))
        lines.append(f"| {outcome} | {distribution} | {len(part)} | {quartiles(part['mse'])} | {num(part['mse'].mean())} | "
                     f"{quartiles(part['mse_fresh'])} | {num(part['s_mse'].median())} | {versus} |")
    return "\n".join(lines)


@block("budget:nuisances")
def budget_nuisances(rows) -> str:
    """What the learned nuisances got wrong against the truth (the learned x learned fits)."""
    frame = rows.csv(BUDGET)
    frame = frame[(frame["outcome"] == "learned") & (frame["distribution"] == "learned")]
    lines = ["| learner | seeds | s-hat error, mean (s-hat − s)², median | slope of s-hat on s, median (truth 1) | "
             "sd of the price draws within a row, median (truth 1) | error of the draws' mean, median (price units²) |",
             "|---|---|---|---|---|---|"]
    for learner, part in frame.groupby("learner", sort=False):
        lines.append(f"| {learner} | {len(part)} | {num(part['s_mse'].median())} | {part['s_slope'].median():.2f} | "
                     f"{part['g_sd'].median():.2f} | {num(part['g_mean_mse'].median(), 2)} |")
    return "\n".join(lines)


@family(r"auto:(?P<n>\d+):(?P<strength>[\d.]+)")
def auto_table(rows, n: str, strength: str) -> str:
    """The benchmark seeds' cells (those fitted on every seed) against the defaults, both protocols."""
    frame = benchmark(rows, int(n), float(strength))
    seeds = frame["seed"].nunique()
    lines = ["| s-hat : distribution | seeds | median MSE [q1, q3] | mean | against the defaults, grid | "
             "median fresh-draw MSE [q1, q3] | against the defaults, fresh draws | median s-hat error | auto chose |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(frame["cell"]):
        part = frame[frame["cell"] == name]
        if len(part) < seeds:
            continue    # a cell fitted on a seed or two only (see the nuisance-choice rows)
        grid, fresh = (cell(frame, name, c) for c in ("mse", "mse_fresh"))
        versus = ["", ""] if name == "nn:nn" else [verdict(paired(x, cell(frame, "nn:nn", c)))
                                                    for x, c in ((grid, "mse"), (fresh, "mse_fresh"))]
        chose = part["resolved"].str.split(":").str[0].value_counts() if name.startswith("auto") else pd.Series()
        lines.append(f"| {CELL_NAMES.get(name, name)} | {len(part)} | {quartiles(grid)} | {num(grid.mean())} | "
                     f"{versus[0]} | {quartiles(fresh)} | {versus[1]} | {num(part['s_mse'].median())} | "
                     f"{', '.join(f'{k} on {v}' for k, v in chose.items())} |")
    return "\n".join(lines)


@family(r"auto-versus:(?P<n>\d+):(?P<strength>[\d.]+)")
def auto_versus(rows, n: str, strength: str) -> str:
    """``auto:nn`` against the stored rows of DML-CMR's defaults, the naive plug-in and DFIV (same data and seeds)."""
    n, k = int(n), float(strength)
    frame = benchmark(rows, n, k)
    grid, fresh = cell(frame, "auto:nn"), cell(frame, "auto:nn", "mse_fresh")
    lines = ["| stored rows (2026-11-26, earlier code, AMD EPYC) | seeds | median MSE [q1, q3] | mean | "
             "auto : nn against it, grid | median fresh-draw MSE | auto : nn against it, fresh draws |",
             "|---|---|---|---|---|---|---|"]
    for method, name in STORED.items():
        other = stored(rows, method, n, k)
        lines.append(f"| {name} | {len(other)} | {quartiles(other['mse'])} | {num(other['mse'].mean())} | "
                     f"{verdict(paired(grid, other['mse']))} | {num(other['mse_fresh'].median())} | "
                     f"{verdict(paired(fresh, other['mse_fresh']))} |")
    return "\n".join(lines)


@block("auto:machine")
def auto_machine(rows) -> str:
    """The defaults re-measured here against the same configuration's stored rows (earlier code, another CPU)."""
    parts = []
    for n, k in ((5000, 1.0), (5000, 0.4), (1000, 1.0), (2000, 1.0)):
        here = cell(benchmark(rows, n, k), "nn:nn")
        there = stored(rows, "dml-cmr", n, k)["mse"]
        same = int((here - there).abs().lt(1e-9).sum())
        parts.append(f"N = {n}, strength {k:g}: median {num(here.median())} here against {num(there.median())} stored "
                     f"({same} of {len(here)} seeds identical)")
    return "; ".join(parts)


@block("candidates")
def candidates(rows) -> str:
    """The gb variants of s-hat (and the network's, from the same folds) on seeds 100+: held-out loss vs true error."""
    frame = rows.csv(CANDIDATES)
    net = rows.csv(CHOICE)
    net = net[net["cell"] == "nn:nn"].assign(variant="nn (the network)", heldout=lambda f: f["s_loss_nn"])
    frame = pd.concat([net[frame.columns.intersection(net.columns)], frame], ignore_index=True)
    best_loss = frame.loc[frame.groupby(["iv_strength", "seed"])["heldout"].idxmin()]
    best_true = frame.loc[frame.groupby(["iv_strength", "seed"])["s_mse"].idxmin()]
    lines = ["| IV strength | s-hat | seeds | mean held-out loss (raw scale) | median error against s | "
             "median slope on s | lowest held-out loss on | lowest true error on |", "|---|---|---|---|---|---|---|---|"]
    for (k, variant), part in frame.groupby(["iv_strength", "variant"], sort=False):
        wins = [int(((best["iv_strength"] == k) & (best["variant"] == variant)).sum()) for best in (best_loss, best_true)]
        lines.append(f"| {k:g} | {variant} | {part['seed'].nunique()} | {part['heldout'].mean():,.0f} | "
                     f"{num(part['s_mse'].median())} | {part['s_slope'].median():.3f} | {wins[0]} of "
                     f"{part['seed'].nunique()} | {wins[1]} of {part['seed'].nunique()} |")
    return "\n".join(lines)


@family(r"choice:(?P<file>[^:]+\.csv)")
def choice(rows, file: str) -> str:
    """Seeds outside the benchmark's (settings were chosen on them): every cell's MSE per seed."""
    frame = rows.csv(file)
    seeds = sorted(frame["seed"].unique())
    lines = [f"| IV strength | s-hat : distribution | grid MSE, seeds {' / '.join(map(str, seeds))} | median | "
             f"fresh-draw MSE, seeds {' / '.join(map(str, seeds))} | median | auto chose |", "|---|---|---|---|---|---|---|"]
    for (k, name), part in frame.groupby(["iv_strength", "cell"], sort=False):
        part = part.set_index("seed").reindex(seeds)
        chose = ", ".join(sorted(set(part["resolved"].dropna()))) if "auto" in name else ""
        lines.append(f"| {k:g} | {CELL_NAMES.get(name, name)} | {' / '.join(num(v) for v in part['mse'])} | "
                     f"{num(part['mse'].median())} | {' / '.join(num(v) for v in part['mse_fresh'])} | "
                     f"{num(part['mse_fresh'].median())} | {chose} |")
    return "\n".join(lines)


def speed_rows(rows) -> pd.DataFrame:
    return pd.concat([rows.jsonl(name).assign(file=name) for name in SPEED], ignore_index=True)


@block("speed-auto")
def speed_auto(rows) -> str:
    frame = speed_rows(rows)
    lines = ["| rows | fit (demand-iv, N = 5000, nn, seed) | outcome_learner | seconds | 1-minute load average at its end |",
             "|---|---|---|---|---|"]
    for r in frame.itertuples():
        fit = f"{title(r.method)}{', K = ' + str(r.folds) if has(r.method, 'cross_fits') else ''}, seed {r.seed}"
        chosen = "unset (the network)" if pd.isna(r.outcome_learner) else r.outcome_learner
        lines.append(f"| `{r.file}` | {fit} | {chosen} | {r.seconds:.0f} | "
                     f"{r.load_avg_1min:g} |")
    return "\n".join(lines)


def _level(value: float, target: float, goal: float | None = None) -> str:
    """"met (0.042 ≤ 0.062; goal ≤ 0.05 met)" or "missed by 0.012 (7 %)"."""
    if value > target:
        return f"missed by {num(value - target, 2)} ({(value - target) / target:.0%})"
    text = f"met, {num(target - value, 2)} below"
    if goal is not None:
        text += "; goal met" if value <= goal else f"; goal missed by {num(value - goal, 2)}"
    return text


def _count(pair: Paired, need: int = 14) -> str:
    met = "met" if pair.wins_a >= need else f"missed ({need - pair.wins_a} seeds short)"
    return f"{pair.wins_a} of {pair.pairs}: {met}; {word(pair)}, {p_text(pair.p)}"


@block("targets")
def targets(rows) -> str:
    """Issue 23's targets (nn, K = 10, the authors' design, 20 seeds, paired) for ``outcome_learner="auto"``."""
    strong, weak = benchmark(rows, 5000, 1.0), benchmark(rows, 5000, 0.4)
    median_target = PAPER["demand-iv-nn-5000"][1]["dml-cmr"]
    mean_target = PAPER["demand-iv-nn-5000-strength0.4"][1]["dml-cmr"]
    lines = ["| target | auto : nn, grid (`mse`) | auto : nn, fresh draws (`mse_fresh`) | the defaults re-measured "
             "here, grid / fresh |", "|---|---|---|---|"]
    med = {c: cell(strong, "auto:nn", c).median() for c in ("mse", "mse_fresh")}
    base = {c: cell(strong, "nn:nn", c).median() for c in ("mse", "mse_fresh")}
    lines.append(f"| DML-CMR median ≤ {median_target:g} at N = 5000, strength 1 (goal ≤ 0.05) | {num(med['mse'])}: "
                 f"{_level(med['mse'], median_target, 0.05)} | {num(med['mse_fresh'])}: "
                 f"{_level(med['mse_fresh'], median_target, 0.05)} | {num(base['mse'])} / {num(base['mse_fresh'])} |")
    mean = {c: cell(weak, "auto:nn", c).mean() for c in ("mse", "mse_fresh")}
    base = {c: cell(weak, "nn:nn", c).mean() for c in ("mse", "mse_fresh")}
    lines.append(f"| DML-CMR mean ≤ {mean_target:g} at N = 5000, strength 0.4 (goal ≤ 0.15) | {num(mean['mse'])}: "
                 f"{_level(mean['mse'], mean_target, 0.15)} | {num(mean['mse_fresh'])}: "
                 f"{_level(mean['mse_fresh'], mean_target, 0.15)} | {num(base['mse'])} / {num(base['mse_fresh'])} |")
    for method in ("naive", "dfiv"):
        for frame, k in ((strong, 1.0), (weak, 0.4)):
            other = stored(rows, method, 5000, k)
            pairs = [paired(cell(frame, "auto:nn", c), other[c]) for c in ("mse", "mse_fresh")]
            lines.append(f"| lower than {prose(method)} on ≥ 14 of 20 seeds, strength {k:g} | {_count(pairs[0])} | "
                         f"{_count(pairs[1])} | |")
    speed = speed_rows(rows)
    fits = speed[is_method(speed["method"], "dml-cmr") & (speed["outcome_learner"] == "auto") & (speed["folds"] == 10)]
    lines.append(f"| DML-CMR K = 10, N = 5000 within {TARGET_SECONDS:.0f} s on 2 cores | {_time_state(fits)} | | |")
    return "\n".join(lines)


def _time_state(fits) -> str:
    """The time target over every timed fit: met only when each was within it, missed when none was."""
    within = int((fits["seconds"] <= TARGET_SECONDS).sum())
    timings = ", ".join(f"{r.seconds:.0f} s (load {r.load_avg_1min:g}, `{r.file}`)"
                        for r in fits.sort_values("seconds").itertuples())
    state = ("met" if within == len(fits) else "missed" if within == 0 else
             f"not decided: {within} of {len(fits)} timed fits within")
    return f"{len(fits)} fits timed (seed {', '.join(map(str, sorted(set(fits['seed']))))}): {timings}: {state}"


STATS = {"median": ("mse", "median"), "mean": ("mse", "mean"), "fresh": ("mse_fresh", "median"),
         "fresh-mean": ("mse_fresh", "mean")}


@family(r"budget:(?P<learner>nn|gb):(?P<outcome>learned|oracle):(?P<distribution>learned|oracle):(?P<stat>[a-z-]+)")
def budget_stat(rows, learner: str, outcome: str, distribution: str, stat: str) -> str:
    """One budget cell's median / mean MSE on the grid or at fresh draws, e.g. ``budget:nn:oracle:learned:median``."""
    frame = rows.csv(BUDGET)
    part = frame[(frame["learner"] == learner) & (frame["outcome"] == outcome) & (frame["distribution"] == distribution)]
    column, how = STATS[stat]
    return num(getattr(part[column], how)())


@family(r"auto:(?P<n>\d+):(?P<strength>[\d.]+):(?P<name>[a-z-]+:[a-z-]+):(?P<stat>[a-z-]+)")
def auto_stat(rows, n: str, strength: str, name: str, stat: str) -> str:
    """One benchmark cell's median / mean MSE, e.g. ``auto:5000:0.4:auto:nn:mean``."""
    column, how = STATS[stat]
    return num(getattr(cell(benchmark(rows, int(n), float(strength)), name, column), how)())


@family(r"auto-wins:(?P<n>\d+):(?P<strength>[\d.]+):(?P<versus>defaults|naive|dfiv)(?P<fresh>:fresh)?")
def auto_wins(rows, n: str, strength: str, versus: str, fresh: str | None) -> str:
    """``auto:nn`` against the defaults or a stored method in words: "ahead of the defaults (lower on ...)"."""
    frame, column = benchmark(rows, int(n), float(strength)), "mse_fresh" if fresh else "mse"
    other = (cell(frame, "nn:nn", column) if versus == "defaults"
             else stored(rows, versus, int(n), float(strength))[column])
    pair = paired(cell(frame, "auto:nn", column), other)
    text = {"ahead": "ahead of", "behind": "behind", "level": "level with"}[word(pair)]
    return f"{text} {'the defaults' if versus == 'defaults' else prose(versus)} (lower on {pair.counts()})"


@block("auto:paper")
def auto_paper(rows) -> str:
    """``auto:nn`` and the defaults against the paper's DML-CMR, on both protocols."""
    lines = ["| N, IV strength | the paper's DML-CMR | auto : nn, the same statistic: grid (`mse`) | fresh draws "
             "(`mse_fresh`) | the defaults here, grid / fresh |", "|---|---|---|---|---|"]
    for key, n, k in (("demand-iv-nn-1000", 1000, 1.0), ("demand-iv-nn-2000", 2000, 1.0),
                      ("demand-iv-nn-5000", 5000, 1.0), ("demand-iv-nn-5000:mean", 5000, 1.0),
                      ("demand-iv-nn-5000-strength0.4", 5000, 0.4)):
        what, values = PAPER[key]
        how = "mean" if "mean" in what else "median"
        frame = benchmark(rows, n, k)
        ours = {c: {name: getattr(cell(frame, name, c), how)() for name in ("auto:nn", "nn:nn")}
                for c in ("mse", "mse_fresh")}
        paper = values["dml-cmr"]
        lines.append(f"| {n}, {k:g} | {'~' if how == 'median' else ''}{paper:g} ({what}) | "
                     f"{num(ours['mse']['auto:nn'])} ({ours['mse']['auto:nn'] / paper:.2f}x) | "
                     f"{num(ours['mse_fresh']['auto:nn'])} ({ours['mse_fresh']['auto:nn'] / paper:.2f}x) | "
                     f"{num(ours['mse']['nn:nn'])} / {num(ours['mse_fresh']['nn:nn'])} |")
    return "\n".join(lines)


@family(r"choice-median:(?P<file>[^:]+\.csv):(?P<strength>[\d.]+):(?P<cell>[a-z-]+:[a-z-]+)")
def choice_median(rows, file: str, strength: str, cell: str) -> str:
    """One cell's median grid MSE over the choice seeds, e.g. ``choice-median:FILE:0.4:nn:oracle``."""
    frame = rows.csv(file)
    part = frame[(frame["iv_strength"] == float(strength)) & (frame["cell"] == cell)]
    if part.empty:
        raise ValueError(f"no rows for strength {strength}, cell {cell} in {file}")
    return num(part["mse"].median())


@block("budget:nn:vs-paper")
def budget_vs_paper(rows) -> str:
    """The learned nn cell's median against the paper's DML-CMR median (N = 5000, strength 1)."""
    frame = rows.csv(BUDGET)
    part = frame[is_learner(frame["learner"], "nn") & (frame["outcome"] == "learned") & (frame["distribution"] == "learned")]
    paper = PAPER["demand-iv-nn-5000"][1]["dml-cmr"]
    return (f"{part['mse'].median() / paper:.1f} times the paper's median on the grid "
            f"({part['mse_fresh'].median() / paper:.1f} times at fresh draws; the paper's figure reads ~{paper:g})")


TARGET_PILOT = "target-choice-pilot"


@family(r"target-pilot:(?P<name>[\w.-]+\.csv)")
def target_pilot(rows, name: str) -> str:
    """bench.target_choice's pilot: per seed, DML-CMR's grid MSE with the pair the target criterion chose
    (``nuisance_choice="target"``), today's auto pair, nn for both, and the oracle pair (lowest true MSE
    among the judged pairs), with how often the target and auto picked the oracle's pair."""
    frame = rows.csv(f"{TARGET_PILOT}/{name}").sort_values(["iv_strength", "seed"], ascending=[False, True])
    lines = ["| IV strength | seed | target chose | its MSE | auto chose | its MSE | nn : nn MSE | oracle pair | "
             "its MSE |", "|---|---|---|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        pair = lambda key: r[key].replace("|", " : ")
        lines.append(f"| {r['iv_strength']:g} | {int(r['seed'])} | {pair('target_pair')} | {num(r['mse_target'])} | "
                     f"{pair('auto_pair')} | {num(r['mse_auto'])} | {num(r['mse_nn'])} | {pair('oracle_pair')} | "
                     f"{num(r['mse_oracle'])} |")
    lines += ["", "| IV strength | seeds (pilot) | median MSE: target / auto / nn : nn / oracle | target against auto, "
              "grid | target against nn : nn, grid | target picked the oracle's pair | auto picked it |",
              "|---|---|---|---|---|---|---|"]
    for k, part in frame.groupby("iv_strength", sort=False):
        part = part.set_index("seed")
        medians = " / ".join(num(part[c].median()) for c in ("mse_target", "mse_auto", "mse_nn", "mse_oracle"))
        lines.append(f"| {k:g} | {len(part)} | {medians} | {verdict(paired(part['mse_target'], part['mse_auto']))} | "
                     f"{verdict(paired(part['mse_target'], part['mse_nn']))} | "
                     f"{int(part['target_is_oracle'].sum())} of {len(part)} | "
                     f"{int(part['auto_is_oracle'].sum())} of {len(part)} |")
    return "\n".join(lines)


@family(r"target-cost:(?P<name>[\w.-]+\.csv)")
def target_cost(rows, name: str) -> str:
    """bench.target_cost: per (seed, IV strength) of the pilot's design, the estimator's fit with
    ``nuisance_choice="own"`` and ``"target"`` one after the other, wall and CPU seconds and their ratio, with the
    load; then the median CPU ratio, the factor dmlcore/jobs/costs.py multiplies a default fit's estimate by."""
    frame = rows.csv(f"{TARGET_PILOT}/{name}").sort_values(["seed", "iv_strength"], ascending=[True, False])
    lines = ["| IV strength | seed | first | own: wall s | target: wall s | own: CPU s | target: CPU s | CPU ratio | "
             "1-minute load (before → after) |", "|---|---|---|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        lines.append(f"| {r['iv_strength']:g} | {int(r['seed'])} | {r['first']} | {r['own_seconds']:.1f} | "
                     f"{r['target_seconds']:.1f} | {r['own_cpu_seconds']:.1f} | {r['target_cpu_seconds']:.1f} | "
                     f"{r['cpu_ratio']:.2f} | {r['load_before']:g} → {r['load_after']:g} |")
    lines += ["", f"Median CPU ratio over {len(frame)} pairs: {frame['cpu_ratio'].median():.1f} (wall: "
              f"{frame['ratio'].median():.1f}); run {frame['date'].min()} to {frame['date'].max()} on "
              f"{frame['machine'].iloc[0]}."]
    return "\n".join(lines)

# ---------------------------------------------------------------- issue 45: the target choice on the benchmark's cells
# bench/target_cells.sh: per seed of a cell of the benchmark's tables (K = 10, learner nn or gb, seeds 0-19),
# DML-CMR with nuisance_choice="target" and today's default (own), and where time allowed the nuisances named nn
# and auto : nn (the outcome model by auto, the network's distribution model), one after another on the same code;
# each command's load in TARGET_LOG. Rows: authors/<stem>-target.csv, -target-default.csv, -target-named.csv,
# -target-autonn.csv. Beside them the stored 20-seed rows of the default and of nn : nn (older code: today's code
# does not give their MSE to the digit, docs/benchmarks.md says by how much).


@dataclass(frozen=True)
class TargetCell:
    """One cell of the benchmark's tables that bench/target_cells.sh measures: its data (``strength`` None for
    demand-pcl, which has no instrument), its rows' file stem, the stored rows of the default and of nn : nn on
    the same seeds, and the authors' figure to hold it against (a key of authors.PAPER; demand-pcl: the authors'
    stored results)."""
    dataset: str
    learner: str
    n: int
    strength: float | None
    stem: str
    stored_default: str
    stored_named: str
    paper: str | None

    @property
    def label(self) -> str:
        what = f"IV strength {self.strength:g}" if self.strength is not None else "proxies"
        return f"{self.dataset}, {self.learner}, N = {self.n}, {what}"

    def file(self, config: str) -> str:
        """The rows file of one configuration (bench/target_cells.sh)."""
        return f"authors/{self.stem}-target{'' if config == 'target' else '-' + config}.csv"

    def figure(self) -> tuple[str, float, str]:
        """(what the figure is, its value, "mean" or "median"): the paper's DML-CMR in this cell."""
        if self.paper is None:
            return "the authors' stored results, median of 20", PCL_STORED["dml-cmr"][PCL_SIZES.index(self.n)], "median"
        what, values = PAPER[self.paper]
        return what, values["dml-cmr"], "mean" if what == PRINTED else "median"


_A = "authors/demand-iv-nn-5000"
TARGET_CELLS = (
    TargetCell("demand-iv", "nn", 5000, 0.4, "demand-iv-nn-5000-strength0.4", f"{_A}-strength0.4-pilot.csv",
               f"{_A}-strength0.4-named.csv", "demand-iv-nn-5000-strength0.4"),
    TargetCell("demand-iv", "nn", 5000, 1.0, "demand-iv-nn-5000", f"{_A}-pilot.csv", f"{_A}.csv",
               "demand-iv-nn-5000:mean"),
    TargetCell("demand-iv", "nn", 5000, 0.01, "demand-iv-nn-5000-strength0.01", f"{_A}-strength0.01-auto.csv",
               f"{_A}-strength0.01.csv", "demand-iv-nn-5000-strength0.01"),
    *(TargetCell("demand-iv", "nn", n, 1.0, f"demand-iv-nn-{n}",
                 f"authors/demand-iv-nn-{'10000' if n == 10000 else '1000-2000'}-auto.csv",
                 f"authors/demand-iv-nn-{'10000' if n == 10000 else '1000-2000'}.csv", f"demand-iv-nn-{n}")
      for n in (1000, 2000, 10000)),
    *(TargetCell("demand-pcl", "nn", n, None, f"demand-pcl-nn-{n}",
                 {5000: "authors/demand-pcl-nn-5000-pilot.csv", 10000: "authors/demand-pcl-nn-10000-auto.csv"}.get(
                     n, "authors/demand-pcl-nn-1000-2000-auto.csv"),
                 "authors/demand-pcl-nn-5000-named.csv" if n == 5000 else "authors/demand-pcl-nn.csv", None)
      for n in PCL_SIZES),
    *(TargetCell("demand-iv", "gb", n, 1.0, f"demand-iv-gb-{n}",
                 "authors/demand-iv-gb-10000-auto.csv" if n == 10000 else "authors/demand-iv-gb-auto.csv",
                 "authors/demand-iv-gb.csv", f"demand-iv-gb-{n}") for n in (2000, 5000, 10000)),
)
TARGET_CONFIGS = {"target": "target (`--nuisance-choice target`)",
                  "default": "today's default (`auto`, each nuisance by its own held-out loss)",
                  "named": "nn : nn (`--outcome-learner nn --sampler nn`)",
                  "autonn": "auto : nn (`--sampler nn`: the outcome model by `auto`, the network's distribution model)"}
SHORT = {"target": "target", "default": "today's default", "named": "nn : nn", "autonn": "auto : nn"}
TARGET_LOG = "authors/target-cells.jsonl"


def target_cells_done(rows) -> list[TargetCell]:
    """The cells with rows of the target and of today's default (bench/target_cells.sh)."""
    done = set(rows.names("authors/*-target*.csv"))
    return [c for c in TARGET_CELLS if all(c.file(k) in done for k in ("target", "default"))]


def target_log(rows, cell: TargetCell) -> pd.DataFrame:
    """TARGET_LOG's finished commands of one cell (its lines before the other cells were added name neither
    dataset, N nor learner: demand-iv, 5000, nn)."""
    log = rows.jsonl(TARGET_LOG)
    for column, value in (("dataset", "demand-iv"), ("n", 5000), ("learner", "nn")):
        log[column] = log[column].fillna(value) if column in log else value
    strength = log["iv_strength"].isna() if cell.strength is None else log["iv_strength"] == cell.strength
    return log[(log["dataset"] == cell.dataset) & (log["n"] == cell.n) & (log["learner"] == cell.learner) & strength
               & (log["rc"] == 0)]


def target_rows(rows, cell: TargetCell) -> dict:
    """{configuration: its DML-CMR rows by seed, with the 1-minute load before and after its command
    (``load_1min_start`` / ``_end``, from TARGET_LOG)}: the target and today's default on the seeds both have
    (a partial run compares only the seeds done both ways), the others where they were re-run (their own seeds)."""
    log = target_log(rows, cell).drop_duplicates(["seed", "config"], keep="last")
    done = set(rows.names("authors/*-target*.csv"))
    out = {}
    for config in TARGET_CONFIGS:
        if cell.file(config) not in done:
            continue
        frame = rows.csv(cell.file(config))
        frame = frame[frame["method"] == PAPER_METHOD].drop_duplicates("seed", keep="last").set_index("seed")
        load = log[log["config"] == config].set_index("seed")
        out[config] = frame.assign(load_1min_start=load["load_before"], load_1min_end=load["load_after"])
    seeds = sorted(set(out["target"].index) & set(out["default"].index))
    out["target"], out["default"] = out["target"].loc[seeds], out["default"].loc[seeds]
    return out


def stored_cell(rows, name: str, cell: TargetCell) -> pd.DataFrame:
    """DML-CMR's stored rows of one cell by seed (older code)."""
    frame = rows.csv(name)
    keep = (frame["method"] == PAPER_METHOD) & (frame["n"] == cell.n) & (frame["learner"] == cell.learner)
    if cell.strength is not None and "iv_strength" in frame:
        keep &= frame["iv_strength"] == cell.strength
    return frame[keep].set_index("seed")


def has_fresh(frame: pd.DataFrame) -> bool:
    """Whether the rows score fresh draws too (demand-pcl's have no such column's values)."""
    return "mse_fresh" in frame and frame["mse_fresh"].notna().any()


def _seeds(index) -> str:
    seeds = sorted(index)
    if len(seeds) == 1:
        return str(seeds[0])
    return f"{seeds[0]}–{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ", ".join(map(str, seeds))


@block("target-cells:run")
def target_run(rows) -> str:
    """When bench/target_cells.sh ran (UTC) and the 1-minute load range before and after its commands."""
    log = rows.jsonl(TARGET_LOG)
    days = sorted(log["start"].str[:10].unique())
    runs = []
    for day in days:
        part = log[log["start"].str[:10] == day]
        runs.append(f"{day}, {part['start'].min()[11:16]}–{part['end'].max()[11:16]} UTC, {len(part)} fits, "
                    f"1-minute load {min(part['load_before'].min(), part['load_after'].min()):g}–"
                    f"{max(part['load_before'].max(), part['load_after'].max()):g}")
    return "; ".join(runs) + " on the 2 cores"


@block("target-cells:stored")
def target_stored(rows) -> str:
    """Per cell: how many of today's default fits have the stored default rows' MSE to the digit, and what
    moved (medians, paired by the one rule)."""
    parts = []
    for c in target_cells_done(rows):
        today = target_rows(rows, c)["default"]["mse"]
        old = stored_cell(rows, c.stored_default, c)["mse"].loc[today.index]
        same = int((today == old).sum())
        text = f"{c.label}: {same} of {len(today)} fits the same MSE"
        if same < len(today):
            pair = paired(today, old)
            word = "lower" if pair.a_ahead else "higher" if pair.b_ahead else "no significant change"
            text += (f", median {num(old.median())} stored → {num(today.median())} today ({word}: lower today on "
                     f"{pair.counts()})")
        parts.append(text)
    return "; ".join(parts)


@block("target-cells")
def target_cells(rows) -> str:
    """Per cell and configuration: seeds, grid MSE (median [q1, q3], mean), fresh-draw median, and the mean
    seconds of a fit only with the load they were measured under; the stored rows on the target's seeds."""
    lines = ["| cell | DML-CMR's nuisances | seeds | median MSE [q1, q3] (demand-iv: on the grid) | mean MSE | "
             "median fresh-draw MSE | mean seconds per fit |", "|---|---|---|---|---|---|---|"]
    for c in target_cells_done(rows):
        r = target_rows(rows, c)
        seeds = r["target"].index
        frames = [(TARGET_CONFIGS[k], f) for k, f in r.items()]
        frames += [(f"{what}, stored rows (older code), the same seeds", stored_cell(rows, name, c).loc[seeds])
                   for what, name in (("today's default", c.stored_default), ("nn : nn", c.stored_named))]
        for name, frame in frames:
            seconds = timed_text(frame, lambda f=frame: f"{f['seconds'].mean():.0f} s ({{load}})")
            fresh = num(frame["mse_fresh"].median()) if has_fresh(frame) else "none (no fresh draws)"
            lines.append(f"| {c.label} | {name} | {_seeds(frame.index)} | {quartiles(frame['mse'])} | "
                         f"{num(frame['mse'].mean())} | {fresh} | {seconds} |")
    return "\n".join(lines)


def _dfiv(rows, c: TargetCell, target: pd.DataFrame) -> str:
    if c.strength is None:
        return "not compared (a peer of IV regression)"
    return verdict(paired(stored(rows, "dfiv", c.n, c.strength)["mse"], target["mse"]))


@block("target-cells:compare")
def target_compare(rows) -> str:
    """Per cell, by the one rule: the target against today's default (grid and fresh draws) and against nn : nn
    (re-run where it was, else the stored rows), how often it fitted the default's pair, its mean or median
    against the paper's, DFIV against it, and what its fit costs against a default fit on the same seed."""
    lines = ["| cell | seeds | target against today's default (demand-iv: grid) | "
             "against today's default, fresh draws | "
             "against nn : nn | fitted the default's pair | target against the paper's DML-CMR | "
             "DFIV (stored rows) against the target, grid | target fit / default fit, seconds (median over seeds) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in target_cells_done(rows):
        r = target_rows(rows, c)
        target, default = r["target"], r["default"]
        named, whose = (r["named"], "re-run") if "named" in r else (stored_cell(rows, c.stored_named, c), "stored rows")
        same = int((target["nuisance_pair"] == default["nuisance_pair"]).sum())
        what, paper, stat = c.figure()
        ours = getattr(target["mse"], stat)()
        fresh = (verdict(paired(target["mse_fresh"], default["mse_fresh"])) if has_fresh(target)
                 else "none (no fresh draws)")
        ratio = timed_text(pd.concat([target, default]),
                           lambda: f"{(target['seconds'] / default['seconds']).median():.2f}x ({{load}})")
        lines.append(f"| {c.label} | {_seeds(target.index)} | {verdict(paired(target['mse'], default['mse']))} | "
                     f"{fresh} | {verdict(paired(target['mse'], named['mse']))} ({whose}) | {same} of {len(target)} | "
                     f"{stat} {num(ours)} against {paper:g} ({what}): {_level(ours, paper)} | "
                     f"{_dfiv(rows, c, target)} | {ratio} |")
    return "\n".join(lines)


@block("target-cells:pairs")
def target_pairs(rows) -> str:
    """Per cell: the pairs (outcome model : distribution model) the target fitted and those the default
    fitted, with the seeds of each; and whether the target rows' own-loss pair is the default rows' pair."""
    lines = ["| cell | the target fitted | today's default fitted | the target's own-loss pair is the pair "
             "the default fitted |", "|---|---|---|---|"]
    pairs = lambda s: ", ".join(f"{p.replace('|', ' : ')} on {v}" for p, v in s.value_counts().items())
    for c in target_cells_done(rows):
        r = target_rows(rows, c)
        agree = int((r["target"]["own_loss_pair"] == r["default"]["nuisance_pair"]).sum())
        lines.append(f"| {c.label} | {pairs(r['target']['nuisance_pair'])} | {pairs(r['default']['nuisance_pair'])} | "
                     f"{agree} of {len(r['target'])} seeds |")
    return "\n".join(lines)


def against_default(a: pd.DataFrame, default: pd.DataFrame) -> dict:
    """{protocol: Paired} of one configuration's rows against today's default's on the seeds both have: the grid
    (or demand-pcl's one test set) and, where the rows have them, fresh draws."""
    out = {"on the grid": paired(a["mse"], default["mse"])}
    if has_fresh(a) and has_fresh(default):
        out["on fresh draws"] = paired(a["mse_fresh"], default["mse_fresh"])
    return out


def decision(pairs: dict) -> str:
    """What the rule of docs/benchmarks.md says of one configuration against today's default: it becomes the
    default only where its rows show it ahead, and not where a row shows it behind."""
    behind = [what for what, v in pairs.items() if v.b_ahead]
    if behind:
        return f"it loses {' and '.join(behind)}, so these rows do not justify making it the default here"
    if any(v.a_ahead for v in pairs.values()):
        return "these rows support making it the default in this cell"
    return "these rows do not justify changing the default in this cell"


@block("target-cells:decision")
def target_decision(rows) -> str:
    """Per cell, whether the rows justify making the target the default, by the rule of docs/benchmarks.md
    and the developers' guide: a default changes only where its rows show it ahead of today's, and not where
    a row shows it behind; both protocols are rows (the paper's numbers may be either, docs/benchmarks.md)."""
    parts = []
    for c in target_cells_done(rows):
        r = target_rows(rows, c)
        n = len(r["target"])
        verdicts = against_default(r["target"], r["default"])
        said = f"{c.label}, {n} seed{'s' if n != 1 else ''}: the target is " + " and ".join(
            f"{v.word} today's default {what} (lower on {v.counts()})" for what, v in verdicts.items())
        said += ": " + decision(verdicts)
        if n < 20:
            said += f" (a partial cell: {n} of the benchmark's 20 seeds)"
        parts.append(f"- {said}.")
    return "\n".join(parts)


def measured(rows, c: TargetCell) -> tuple[pd.DataFrame, list]:
    """Today's default's rows of one cell, and [(configuration, its name, its rows by seed, {protocol: Paired}
    against the default)]: every configuration re-run beside the default, and nn : nn's stored rows (older code)
    where it was not re-run."""
    r = target_rows(rows, c)
    others = [(k, SHORT[k], r[k]) for k in TARGET_CONFIGS if k in r and k != "default"]
    if "named" not in r:
        others.append(("named", f"{SHORT['named']} (stored rows, older code)", stored_cell(rows, c.stored_named, c)))
    return r["default"], [(k, name, frame, against_default(frame, r["default"])) for k, name, frame in others]


@block("target-cells:best")
def target_best(rows) -> str:
    """Issue 45's item 2, cell by cell: every configuration measured on the cell's seeds (re-run beside today's
    default on the same code, or nn : nn's stored rows), against today's default by the one rule on each protocol,
    and what the rule says of making it the default."""
    lines = ["| cell | configuration | seeds | against today's default (demand-iv: grid) | on fresh draws | "
             "by the rule |", "|---|---|---|---|---|---|"]
    for c in target_cells_done(rows):
        default, others = measured(rows, c)
        for _, name, frame, pairs in others:
            fresh = verdict(pairs["on fresh draws"]) if "on fresh draws" in pairs else "none (no fresh draws)"
            lines.append(f"| {c.label} | {name} | {_seeds(frame.index.intersection(default.index))} | "
                         f"{verdict(pairs['on the grid'])} | {fresh} | {decision(pairs)} |")
    return "\n".join(lines)


@block("target-cells:best:summary")
def target_best_summary(rows) -> str:
    """One line per cell: the configurations ahead of today's default on some protocol there, or that none is."""
    parts = []
    for c in target_cells_done(rows):
        ahead = {name: [w for w, v in pairs.items() if v.a_ahead] for _, name, _, pairs in measured(rows, c)[1]}
        named = [f"{k} ({' and '.join(ws)})" for k, ws in ahead.items() if ws]
        parts.append(f"- {c.label}: " + (f"ahead of today's default: {'; '.join(named)}" if named else
                                          f"no configuration measured ({', '.join(ahead)}) is ahead of today's default")
                     + ".")
    return "\n".join(parts)


def _cell_of(strength: float) -> TargetCell:
    """The demand-iv cell (nn, N = 5000) at IV strength ``strength``."""
    stem = "demand-iv-nn-5000" + ("" if strength == 1.0 else f"-strength{strength:g}")
    return next(c for c in TARGET_CELLS if c.stem == stem)


# issue 45's accuracy targets (demand-iv, nn, N = 5000, K = 10, 20 seeds, grid): (IV strength, statistic, bound, goal)
ISSUE45 = ((0.4, "mean", 0.1859, 0.15), (1.0, "median", 0.045, 0.04), (0.01, "mean", 0.4872, None))
# (IV strength, stored peer, seeds of 20 lower than it (None: ahead by the one rule, no count), where its rows are:
# "peers" the stored peers' rows of docs/peers.md, "table" the default's stored table of the cell)
ISSUE45_PEERS = ((0.4, "dfiv", None, "peers"), (1.0, "naive", 18, "table"))


@block("issue45:targets")
def issue45_targets(rows) -> str:
    """Issue 45's accuracy targets, each against today's default and every configuration re-run beside it on the
    same seeds (bench/target_cells.sh): the statistic on the grid and whether it meets the bound (and the goal);
    then DML-CMR against a stored peer's rows on the same seeds (DFIV: docs/peers.md; the naive plug-in: the
    default's table), by the count the issue names and the one rule. "not run": no rows of that configuration."""
    head = [k for k in TARGET_CONFIGS]
    lines = ["| target (demand-iv, nn, N = 5000, 20 seeds, grid) | " + " | ".join(SHORT[k] for k in head) + " |",
             "|---|" + "---|" * len(head)]
    for strength, stat, bound, goal in ISSUE45:
        r = target_rows(rows, _cell_of(strength))
        cells = [f"{num(getattr(r[k]['mse'], stat)())} on {len(r[k])} seeds: "
                 f"{_level(getattr(r[k]['mse'], stat)(), bound, goal)}" if k in r else "not run" for k in head]
        lines.append(f"| DML-CMR {stat} ≤ {bound:g} at IV strength {strength:g}"
                     f"{f' (goal ≤ {goal:g})' if goal is not None else ''} | " + " | ".join(cells) + " |")
    for strength, peer, need, where in ISSUE45_PEERS:
        r = target_rows(rows, _cell_of(strength))
        if where == "peers":
            other = stored(rows, peer, 5000, strength)
        else:
            frame = rows.csv(_cell_of(strength).stored_default)
            other = frame[is_method(frame["method"], peer)].set_index("seed")
        judge = verdict if need is None else (lambda pair: _count(pair, need))
        cells = [judge(paired(r[k]["mse"], other["mse"])) if k in r else "not run" for k in head]
        lines.append(f"| {'ahead of' if need is None else 'lower than'} {prose(peer)} (stored rows)"
                     f"{'' if need is None else f' on ≥ {need} of 20 seeds'} at IV strength {strength:g} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


@block("target-cells:conclusion")
def target_conclusion(rows) -> str:
    """Per configuration over every measured cell (nn : nn's stored rows count as nn : nn): the cells where it is
    ahead of today's default on some protocol and behind on none, and those where it is behind on some; and what
    the rule says of one default for every cell: it is replaced only by a configuration ahead in some cell and
    behind in none."""
    ahead, behind = {}, {}
    for c in target_cells_done(rows):
        for key, _, _, pairs in measured(rows, c)[1]:
            config = SHORT[key]
            ahead.setdefault(config, [])
            behind.setdefault(config, [])
            if any(v.b_ahead for v in pairs.values()):
                behind[config].append(c.label)
            elif any(v.a_ahead for v in pairs.values()):
                ahead[config].append(c.label)
    parts = []
    for config in ahead:
        n = len(ahead[config])
        said = f"- {config}: ahead of today's default in {n} cell{'s' if n != 1 else ''}"
        said += f" ({'; '.join(ahead[config])})" if ahead[config] else ""
        said += f", behind it in {len(behind[config])}"
        said += f" ({'; '.join(behind[config])})" if behind[config] else ""
        said += (": behind somewhere, so it does not replace the default" if behind[config] else
                 ": behind nowhere measured, so the rows support making it the default" if ahead[config] else
                 ": ahead nowhere, so it does not replace the default")
        parts.append(said + ".")
    return "\n".join(parts)

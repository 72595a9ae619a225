"""The DML family on the paper's benchmarks (docs/benchmarks.md): one table per study cell, one box
plot per rows file, and the sentences that quote them."""

from __future__ import annotations

from dmlcore.studies.figures import mse_figure

from .registry import block, family, figure
from .tables import is_method, nuisance_line, timed_text, per_seed, prose, select, study_table, title
from .words import num, paired, relation

DEEP = ("dml-cmr", "ce-dml-cmr", "naive")

# table id -> (rows file under bench/results/, the cell)
TABLES = {
    "demand-iv-nn-1000": ("authors/demand-iv-nn-1000-2000.csv", {"n": 1000}),
    "demand-iv-nn-2000": ("authors/demand-iv-nn-1000-2000.csv", {"n": 2000}),
    "demand-iv-nn-5000": ("authors/demand-iv-nn-5000.csv", {}),
    "demand-iv-nn-5000-auto": ("authors/demand-iv-nn-5000-auto.csv", {}),   # the DML family on auto (issue 32)
    "demand-iv-nn-5000-auto-check": ("authors/demand-iv-nn-5000-auto-check.csv", {}),   # auto with the network too
    "demand-iv-nn-5000-strength0.4-auto": ("authors/demand-iv-nn-5000-strength0.4-auto.csv", {}),
    "demand-iv-nn-5000-strength0.4-auto-boosters": ("authors/demand-iv-nn-5000-strength0.4-auto-boosters.csv", {}),
    "demand-pcl-nn-5000-auto": ("authors/demand-pcl-nn-5000-auto.csv", {}),
    "demand-pcl-nn-5000-auto-boosters": ("authors/demand-pcl-nn-5000-auto-boosters.csv", {}),
    "demand-pcl-nn-5000-named": ("authors/demand-pcl-nn-5000-named.csv", {}),
    "demand-iv-nn-5000-strength0.4-named": ("authors/demand-iv-nn-5000-strength0.4-named.csv", {}),
    "demand-iv-nn-10000": ("authors/demand-iv-nn-10000.csv", {}),
    "demand-iv-nn-5000-strength0.4": ("authors/demand-iv-nn-5000-strength0.4.csv", {}),
    "demand-iv-nn-5000-strength0.01": ("authors/demand-iv-nn-5000-strength0.01.csv", {}),
    **{f"demand-iv-{learner}-{n}": (f"authors/demand-iv-{learner}.csv", {"n": n})
       for learner in ("gb", "rf") for n in (2000, 5000, 10000)},
    "digits-iv-nn-1000": ("authors/digits-iv-nn-1000.csv", {}),
    "digits-iv-nn-5000": ("authors/digits-iv-nn-5000.csv", {}),
    **{f"demand-pcl-nn-{n}": ("authors/demand-pcl-nn.csv", {"n": n}) for n in (1000, 2000, 5000, 10000)},
    # today's auto (candidates scored on the pilot folds, 2026-11-27 evening)
    "demand-iv-nn-5000-pilot": ("authors/demand-iv-nn-5000-pilot.csv", {}),
    "demand-iv-nn-5000-strength0.4-pilot": ("authors/demand-iv-nn-5000-strength0.4-pilot.csv", {}),
    "demand-pcl-nn-5000-pilot": ("authors/demand-pcl-nn-5000-pilot.csv", {}),
    **{f"demand-iv-nn-{n}-auto": ("authors/demand-iv-nn-1000-2000-auto.csv", {"n": n}) for n in (1000, 2000)},
    **{f"demand-pcl-nn-{n}-auto": ("authors/demand-pcl-nn-1000-2000-auto.csv", {"n": n}) for n in (1000, 2000)},
    "demand-iv-nn-5000-strength0.01-auto": ("authors/demand-iv-nn-5000-strength0.01-auto.csv", {}),
    **{f"demand-iv-gb-{n}-auto": ("authors/demand-iv-gb-auto.csv", {"n": n}) for n in (2000, 5000)},
    "demand-iv-nn-10000-auto": ("authors/demand-iv-nn-10000-auto.csv", {}),
    "demand-iv-gb-10000-auto": ("authors/demand-iv-gb-10000-auto.csv", {}),
    "demand-pcl-nn-10000-auto": ("authors/demand-pcl-nn-10000-auto.csv", {}),
}


def cell(rows, table_id: str):
    """The fits of a registered table."""
    if table_id == "ihdp-six-methods":
        return rows.fits("ihdp-six-methods-bench.csv")
    name, where = TABLES[table_id]
    return select(rows.fits(name), **where)


def _register_table(table_id: str) -> None:
    block(f"table:{table_id}")(lambda rows: study_table(cell(rows, table_id)) + nuisances(rows, table_id))


def nuisances(rows, table_id: str) -> str:
    """The line under a table that says which nuisance settings made its DML-family rows."""
    name, where = TABLES[table_id]
    line = nuisance_line(select(rows.csv(name), **where))
    return f"\n\n{line}" if line else ""


for _id in TABLES:
    _register_table(_id)


@block("table:ihdp-six-methods")
def ihdp_table(rows) -> str:
    line = nuisance_line(rows.csv("ihdp-six-methods-bench.csv"))   # rows from before `auto`: the learner's own
    return study_table(rows.fits("ihdp-six-methods-bench.csv"), reps_label="replicates") + (f"\n\n{line}" if line else "")


# box plots: image name -> (rows files, methods or None for all, alt text)
BOXES = {
    "demand-iv-nn-1000-2000.png": (["authors/demand-iv-nn-1000-2000.csv"], None,
                                   "MSE by method, demand-iv, N = 1000 and 2000, {seeds} seeds"),
    "demand-iv-nn-5000.png": (["authors/demand-iv-nn-5000.csv"], None,
                              "MSE by method, demand-iv, N = 5000, {seeds} seeds"),
    "demand-iv-nn-10000.png": (["authors/demand-iv-nn-10000.csv"], None,
                               "MSE by method, demand-iv, N = 10000, {seeds} seeds"),
    "demand-iv-figure2.png": (["authors/demand-iv-nn-1000-2000.csv", "authors/demand-iv-nn-5000.csv",
                               "authors/demand-iv-nn-10000.csv"], DEEP,
                              "MSE by N, DML-CMR, CE-DML-CMR and the naive plug-in, demand-iv, {seeds} seeds"),
    "demand-iv-nn-5000-strength0.4.png": (["authors/demand-iv-nn-5000-strength0.4.csv"], None,
                                          "MSE by method, demand-iv, IV strength 0.4, N = 5000, {seeds} seeds"),
    "demand-iv-nn-5000-strength0.01.png": (["authors/demand-iv-nn-5000-strength0.01.csv"], None,
                                           "MSE by method, demand-iv, IV strength 0.01, N = 5000, {seeds} seeds"),
    "demand-iv-gb.png": (["authors/demand-iv-gb.csv"], None,
                         "MSE by method, demand-iv, gradient boosting, N = 2000, 5000 and 10000, {seeds} seeds"),
    "demand-iv-rf.png": (["authors/demand-iv-rf.csv"], None,
                         "MSE by method, demand-iv, random forests, N = 2000, 5000 and 10000, {seeds} seeds"),
    "digits-iv-nn-1000.png": (["authors/digits-iv-nn-1000.csv"], None,
                              "MSE by method, digits-iv, N = 1000, {seeds} seeds"),
    "digits-iv-nn-5000.png": (["authors/digits-iv-nn-5000.csv"], None,
                              "MSE by method, digits-iv, N = 5000, {seeds} seeds"),
    "demand-pcl-nn.png": (["authors/demand-pcl-nn.csv"], None,
                          "MSE by method, demand-pcl, N = 1000 to 10000, {seeds} seeds"),
    "ihdp-six-methods-bench.png": (["ihdp-six-methods-bench.csv"], None,
                                   "MSE by method, the {seeds} IHDP replicates"),
}


def _register_box(name: str, files: list, methods, alt: str) -> None:
    def fits(rows):
        done = rows.fits(*files)
        return done if methods is None else done[done["method"].isin(methods)]
    figure(name, fits, mse_figure, alt)


for _name, (_files, _methods, _alt) in BOXES.items():
    _register_box(_name, _files, _methods, _alt)


# ---------------------------------------------------------------- numbers and comparisons in sentences
@family(r"rel:(?P<table>[^:]+):(?P<a>[^:]+):(?P<b>[^:]+)")
def relation_text(rows, table: str, a: str, b: str) -> str:
    """"DML-CMR is ahead of the naive plug-in (lower on 16 of 20 seeds, p = 0.0014)", by the standard."""
    fits = cell(rows, table)
    return relation(paired(per_seed(fits, a), per_seed(fits, b)), prose(a), prose(b))


@family(r"wins:(?P<table>[^:]+):(?P<a>[^:]+):(?P<b>[^:]+)")
def wins_text(rows, table: str, a: str, b: str) -> str:
    """"16 of 20 seeds, p = 0.0014": the seeds on which ``a`` was lower than ``b``."""
    fits = cell(rows, table)
    return paired(per_seed(fits, a), per_seed(fits, b)).counts()


@family(r"(?P<stat>med|mean|fresh):(?P<table>[^:]+):(?P<method>[^:]+)")
def stat_text(rows, stat: str, table: str, method: str) -> str:
    """One method's median MSE on the grid (``med``), on fresh draws (``fresh``) or mean grid MSE."""
    fits = cell(rows, table)
    column = "mse_fresh" if stat == "fresh" else "mse"
    values = per_seed(fits, method, column)
    return num(values.mean() if stat == "mean" else values.median())


# The paper's figures (ANCHORS.md) per table: what they are, and the value per method.
FIGURE = "the paper's figure, median of 20"
PRINTED = "the paper's table, mean of 20"
PAPER = {
    "demand-iv-nn-1000": (FIGURE, {"dml-cmr": 0.21, "ce-dml-cmr": 0.21, "naive": 0.27}),
    "demand-iv-nn-2000": (FIGURE, {"dml-cmr": 0.13, "ce-dml-cmr": 0.135, "naive": 0.23}),
    "demand-iv-nn-5000": (FIGURE, {"dml-cmr": 0.062, "ce-dml-cmr": 0.07, "naive": 0.115}),
    "demand-iv-nn-5000:mean": (PRINTED, {"dml-cmr": 0.0676, "ce-dml-cmr": 0.0765, "naive": 0.1213}),
    "demand-iv-nn-10000": (FIGURE, {"dml-cmr": 0.038, "ce-dml-cmr": 0.043, "naive": 0.07}),
    "demand-iv-nn-5000-strength0.4": (PRINTED, {"dml-cmr": 0.1859, "ce-dml-cmr": 0.2070, "naive": 0.4476}),
    "demand-iv-nn-5000-strength0.01": (PRINTED, {"dml-cmr": 0.4872, "ce-dml-cmr": 0.5302, "naive": 0.9293}),
    "demand-iv-gb-2000": (PRINTED, {"dml-cmr": 0.1301, "naive": 0.2052}),
    "demand-iv-gb-5000": (PRINTED, {"dml-cmr": 0.0632, "naive": 0.1020}),
    "demand-iv-gb-10000": (PRINTED, {"dml-cmr": 0.0482, "naive": 0.1017}),
    "demand-iv-rf-2000": (PRINTED, {"dml-cmr": 0.1689, "ce-dml-cmr": 0.1733, "naive": 0.2642}),
    "demand-iv-rf-5000": (PRINTED, {"dml-cmr": 0.1067, "ce-dml-cmr": 0.1154, "naive": 0.1626}),
    "demand-iv-rf-10000": (PRINTED, {"dml-cmr": 0.0657, "ce-dml-cmr": 0.0721, "naive": 0.1106}),
}
# today's defaults (docs/results-today.md) against the same published figures
PAPER.update({f"{old}-{suffix}" if ":" not in old else f"{old.split(':')[0]}-{suffix}:{old.split(':')[1]}": PAPER[old]
              for old, suffix in (("demand-iv-nn-1000", "auto"), ("demand-iv-nn-2000", "auto"),
                                  ("demand-iv-nn-5000", "pilot"), ("demand-iv-nn-5000:mean", "pilot"),
                                  ("demand-iv-nn-10000", "auto"), ("demand-iv-nn-5000-strength0.4", "pilot"),
                                  ("demand-iv-nn-5000-strength0.01", "auto"), ("demand-iv-gb-2000", "auto"),
                                  ("demand-iv-gb-5000", "auto"), ("demand-iv-gb-10000", "auto"))})
PAPER_NAMES = {"naive": "DeepIV (our naive plug-in)"}


@family(r"paper:(?P<key>[^ ]+)")
def paper_table(rows, key: str) -> str:
    """Ours against the paper's figure for one table, on both protocols (grid ``mse``, fresh draws ``mse_fresh``)."""
    what, values = PAPER[key]
    fits = cell(rows, key.split(":")[0])
    stat = "mean" if what == PRINTED else "median"
    lines = [f"| method | paper ({what}) | ours, {stat} on the grid (`mse`) | ratio to the paper | "
             f"ours, {stat} on fresh draws (`mse_fresh`) | ratio to the paper |", "|---|---|---|---|---|---|"]
    for method, published in values.items():
        grid, fresh = per_seed(fits, method), per_seed(fits, method, "mse_fresh")
        g, f = (grid.mean(), fresh.mean()) if stat == "mean" else (grid.median(), fresh.median())
        lines.append(f"| {PAPER_NAMES.get(method, title(method))} | {'~' if what == FIGURE else ''}{published:g} | "
                     f"{num(g)} | {g / published:.2f} | {num(f)} | {f / published:.2f} |")
    return "\n".join(lines)


@block("regression-rho")
def regression_rho(rows) -> str:
    s = rows.csv("authors/regression-rho/summary.csv")
    lines = ["| ρ | regression (gb), authors' design | regression (gb), raw design | 2SLS, authors' | 2SLS, raw |",
             "|---|---|---|---|---|"]
    for rho, part in s.groupby("rho", sort=True):
        get = part.set_index(["method", "noise_scale"])
        reg = [get.loc[("regression", scale)] for scale in ("standardized", "raw")]
        tsls = [get.loc[("2sls", scale)] for scale in ("standardized", "raw")]
        lines.append(f"| {rho:g} | " + " | ".join(f"{num(r['median'], 2)} [{num(r['q1'], 2)}, {num(r['q3'], 2)}]"
                                                     for r in reg)
                     + " | " + " | ".join(num(t["median"]) for t in tsls) + " |")
    return "\n".join(lines)


@block("sieve-change")
def sieve_change(rows) -> str:
    """Sieve 2SLS's medians before and after its spline change, per cell."""
    old = rows.csv("authors/sieve-2sls-before-spline-change.csv")
    parts = {}
    for (n, strength), part in old.groupby(["n", "iv_strength"], sort=True):
        new = rows.csv(f"authors/{part['file'].iloc[0]}")
        new = new[is_method(new["method"], "sieve-2sls") & (new["n"] == n) & (new["iv_strength"] == strength)]
        parts[(n, strength)] = (part["mse"].median(), new["mse"].median())
    def cells(keys):
        return ", ".join(f"{num(parts[k][0])} → {num(parts[k][1])}" for k in keys)
    strong = [k for k in parts if k[1] == 1.0]
    better = [k for k in strong if parts[k][1] < parts[k][0]]
    worse = [k for k in strong if k not in better]
    weak = [k for k in parts if k[1] != 1.0]
    return (f"The change lowered Sieve 2SLS's median at N = {', '.join(str(k[0]) for k in better)} ({cells(better)})"
            + (f", not at N = {', '.join(str(k[0]) for k in worse)} ({cells(worse)})" if worse else "")
            + f", and raised it with a weaker instrument ({cells(weak)} at strength "
            f"{' and '.join(f'{k[1]:g}' for k in weak)})")


@block("figure2-timing")
def figure2_timing(rows) -> str:
    fits = rows.csv("figure2-idle/fits.csv")
    log = rows.time_log("figure2-idle/study.log")
    minutes, seconds = divmod(log["wall_s"], 60)
    by_n = fits.groupby("n")["seconds"].sum()
    dml = fits[is_method(fits["method"], "dml-cmr")].groupby("n")["seconds"].median()
    bench = rows.fits("authors/demand-iv-nn-1000-2000.csv", "authors/demand-iv-nn-5000.csv", "authors/demand-iv-nn-10000.csv")
    key = ["n", "seed", "method"]
    merged = fits[key + ["mse"]].merge(bench[key + ["mse"]], on=key, suffixes=("", "_bench"))
    same = int((merged["mse"] == merged["mse_bench"]).sum())
    took = timed_text(fits, lambda: f"**{int(minutes)} min {seconds:.0f} s** wall ({log['cpu_percent']} % CPU; {{load}}), "
                      f"{by_n.sum():,.0f} s of fitting in all ({' / '.join(f'{v:.0f}' for v in by_n)} s at N = "
                      f"{' / '.join(map(str, by_n.index))}; a DML-CMR fit's median {' / '.join(f'{v:.1f}' for v in dml)} s)",
                      "its times are not quoted, since its rows record no load")
    return (f"{took}. {same} of the {len(fits)} MSEs equal, bit for bit, "
            f"the row of the same seed and method in the three files above, which were measured earlier by other "
            f"commands on a loaded machine")


@block("figure2-summary")
def figure2_summary(rows) -> str:
    sizes = ("demand-iv-nn-1000", "demand-iv-nn-2000", "demand-iv-nn-5000", "demand-iv-nn-10000")
    naive, cross, ratios = [], [], {"mse": [], "mse_fresh": []}
    for table in sizes:
        fits = cell(rows, table)
        n = int(fits["n"].iloc[0])
        pair = paired(per_seed(fits, "dml-cmr"), per_seed(fits, "naive"))
        naive.append(f"N = {n}: {'ahead' if pair.a_ahead else 'behind' if pair.b_ahead else 'level'} "
                     f"({pair.counts()})")
        pair = paired(per_seed(fits, "dml-cmr"), per_seed(fits, "ce-dml-cmr"))
        cross.append(f"N = {n}: {'ahead' if pair.a_ahead else 'behind' if pair.b_ahead else 'level'} "
                     f"({pair.counts()})")
        for method, published in PAPER[table][1].items():
            for column in ratios:
                ratios[column].append(per_seed(fits, method, column).median() / published)
    return (f"DML-CMR against the naive plug-in — {'; '.join(naive)}. DML-CMR against CE-DML-CMR (what cross-fitting "
            f"buys) — {'; '.join(cross)}. Against the paper's medians, each of the three is "
            f"{min(ratios['mse']):.1f}–{max(ratios['mse']):.1f} times the paper's on the grid and "
            f"{min(ratios['mse_fresh']):.2f}–{max(ratios['mse_fresh']):.1f} times on fresh draws")


@family(r"growth:(?P<weak>[^:]+):(?P<strong>[^:]+):(?P<method>[^:]+)")
def growth(rows, weak: str, strong: str, method: str) -> str:
    """How many times ``method``'s median grows from table ``strong`` to table ``weak``."""
    return f"{per_seed(cell(rows, weak), method).median() / per_seed(cell(rows, strong), method).median():.1f}"


@block("rf-vs-gb")
def rf_vs_gb(rows) -> str:
    parts = []
    for n in (2000, 5000, 10000):
        rf, gb = (per_seed(cell(rows, f"demand-iv-{k}-{n}"), "dml-cmr") for k in ("rf", "gb"))
        pair = paired(rf, gb)
        word = "ahead of" if pair.a_ahead else "behind" if pair.b_ahead else "level with"
        parts.append(f"at N = {n} DML-CMR with forests ({num(rf.median())}) is {word} DML-CMR with boosting "
                     f"({num(gb.median())}; forests lower on {pair.counts()})")
    return "; ".join(parts)


PCL_STORED = {"naive": (27.4, 18.2, 10.5, 8.9), "ce-dml-cmr": (37.7, 33.8, 18.4, 26.1),
              "dml-cmr": (36.9, 30.6, 26.6, 16.1), "2sls": (59.5, 58.3, 60.2, 59.6)}


@block("paper:demand-pcl")
def paper_pcl(rows) -> str:
    lines = ["| method | the authors' stored results, median of 20: N = 1000 / 2000 / 5000 / 10000 | ours, median |",
             "|---|---|---|"]
    for method, stored in PCL_STORED.items():
        ours = [per_seed(cell(rows, f"demand-pcl-nn-{n}"), method).median() for n in (1000, 2000, 5000, 10000)]
        lines.append(f"| {title(method)} | {' / '.join(f'{v:g}' for v in stored)} | "
                     f"{' / '.join(num(v) for v in ours)} |")
    return "\n".join(lines)


@block("paper:demand-pcl:ratios")
def paper_pcl_ratios(rows) -> str:
    """Our median over the authors' stored median, per DML variant and N (demand-pcl)."""
    parts = []
    for method in ("ce-dml-cmr", "dml-cmr"):
        ratios = [per_seed(cell(rows, f"demand-pcl-nn-{n}"), method).median() / stored
                  for n, stored in zip((1000, 2000, 5000, 10000), PCL_STORED[method])]
        parts.append(f"{title(method)} {' / '.join(f'{r:.2f}' for r in ratios)}")
    return "; ".join(parts)


@block("regression-rho:ranges")
def regression_rho_ranges(rows) -> str:
    """The regression that ignores the instrument, raw design against the authors', over ρ."""
    s = rows.csv("authors/regression-rho/summary.csv")
    s = s[is_method(s["method"], "regression")]
    raw, authors = (s[s["noise_scale"] == scale]["median"] for scale in ("raw", "standardized"))
    return (f"{num(raw.min(), 2)}–{num(raw.max(), 2)} on the raw design against {num(authors.min(), 2)}–"
            f"{num(authors.max(), 2)} on the authors' (gradient boosting, N = {s['n'].iloc[0]}, "
            f"{int(s['reps'].iloc[0])} seeds, ρ from {s['rho'].min():g} to {s['rho'].max():g})")


@family(r"moved:(?P<new>[^:]+):(?P<old>[^:]+)")
def moved_text(rows, new: str, old: str, column: str = "mse") -> str:
    """What moved from table ``old`` to table ``new`` (the same cell, other settings), per DML-family
    method of ``new``, on the seeds both have: medians of ``column`` (the grid's MSE, or ``mse_fresh``), and
    the seeds on which the new row was lower."""
    after, before = cell(rows, new), cell(rows, old)
    what = "MSE" if column == "mse" else "fresh-draw MSE"
    parts = []
    for method in [m for m in DEEP if m in set(after["method"]) and m in set(before["method"])]:
        a, b = per_seed(after, method, column), per_seed(before, method, column)
        seeds = a.index.intersection(b.index)
        if (a[seeds] == b[seeds]).all():
            parts.append(f"{title(method)} {num(a[seeds].median())} (the same {what} on all {len(seeds)} seeds)")
            continue
        pair = paired(a[seeds], b[seeds])
        word = "lower" if pair.a_ahead else "higher" if pair.b_ahead else "no significant change"
        parts.append(f"{title(method)} {num(b[seeds].median())} → {num(a[seeds].median())} "
                     f"({word}: lower after on {pair.counts()})")
    seeds = sorted(set(after["seed"]))
    span = f"{seeds[0]}–{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ", ".join(map(str, seeds))
    return f"median {what} on seeds {span}, before → after: " + "; ".join(parts)


@family(r"moved-fresh:(?P<new>[^:]+):(?P<old>[^:]+)")
def moved_fresh_text(rows, new: str, old: str) -> str:
    """:func:`moved_text` on fresh draws (``mse_fresh``)."""
    return moved_text(rows, new, old, "mse_fresh")


@family(r"same:(?P<a>[^:]+):(?P<b>[^:]+)")
def same_fits(rows, a: str, b: str) -> str:
    """How many fits of table ``a`` have exactly the MSE of the same seed and method in table ``b``."""
    pair = cell(rows, a).merge(cell(rows, b), on=["seed", "method"], suffixes=("_a", "_b"))
    same = int((pair["mse_a"] == pair["mse_b"]).sum())
    return f"every one of the {len(pair)} fits the same MSE" if same == len(pair) else \
        f"{same} of the {len(pair)} fits the same MSE"

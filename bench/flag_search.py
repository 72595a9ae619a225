"""Issue 44, part 1: is there a rule, read off the project's existing coverage rows (no new fits), that
sees when the debiased effect's f-hat is far from the moment restriction?

For every DML-family fit (DML-CMR with its own f, the naive plug-in, DML-CMR with the spline f) of
bench/results/coverage-31 (whole refits, 52-56 seeds per design) and, for the designs that lack there,
bench/results/coverage-fonly (24 seeds; the debiased effect's refits fitted f alone, a shortcut since
dropped: their estimates are not today's, read them as indicative) it computes the signals the rows hold:

- ``sieve``: |debiased - sieve check| / sqrt(se^2 + se_sieve^2) (two corrections of one functional);
- ``correction``: |debiased - plug-in| / se (the size of the correction against its standard error);
- ``spread``: the specification spread (representer bases, cross-fits) in standard errors;
- ``rungs``: the largest |estimate of a representer basis - debiased| over the debiased se;
- ``se_ratio``: the sieve check's standard error over the debiased one (the same representer, f fitted in its
  bases: noisier than the score of f-hat admits when f-hat's residuals hide part of the error);
- ``sieve_or_spread``, ``se_ratio_or_sieve``: the larger of two (spread halved; sieve disagreement over 1.5);

and evaluates candidate rules "flag when signal > c" (on top of today's weak-identification flag) by,
per design: the flagged share, the coverage of the silent fits (neither flag), and the coverage and
width (over the width the estimates' spread needs) of the interval a user would be shown: the debiased
interval when silent, a better interval beside a flag of this rule (the sieve check's, the hull of
both intervals, or the debiased estimate with the larger standard error: ``wide``), nothing under the
weak flag (a miss). Targets (issue 44): silent coverage >= 0.90 on
every design, flagged <= 10 % on the strong ones. In-sample: the bar is chosen on the same rows; the
leave-one-design-out column picks the bar on the other designs and reports the left-out one.

    python -m bench.flag_search            # writes bench/results/flag-search/{rules,best}.csv
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.inference.effect_coverage import weak_mask

ROOT = Path(__file__).resolve().parents[1] / "bench" / "results"
ARMS = ("dml-cmr", "naive", "dml-cmr · f_model=sieve")
STRONG = ("linear", "demand-iv", "hetero-iv", "clustered-iv", "nonlinear-iv", "weak-0.3")
Z = 1.959964
BARS = (0.5, 1.0, 1.1, 1.2, 1.3, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0)
SIGNALS = ("sieve", "correction", "spread", "rungs", "sieve_or_spread", "se_ratio", "se_ratio_or_sieve")
BETTER = ("none", "sieve", "hull", "wide")


SOURCES = ("coverage-31", "coverage-fonly")   # the folders of rows, the first that has a design serving it


def load_rows(root: Path = ROOT, sources: tuple[str, ...] = SOURCES) -> pd.DataFrame:
    """The DML-family fits with the signals' columns, one source per design: the first of ``sources`` that has
    the design (coverage-31 before coverage-fonly)."""
    frames = []
    for source in sources:
        for path in sorted((root / source).glob("fits-*.csv")):
            frame = pd.read_csv(path)
            frame["source"] = source
            frames.append(frame)
    rows = pd.concat(frames, ignore_index=True)
    rows = rows[rows["arm"].isin(ARMS) & rows["status"].eq("done") & rows["effect_debiased"].notna()
                & rows["effect_sieve_estimate"].notna()].copy()
    first = rows.groupby("design")["source"].transform(lambda s: min(s, key=sources.index))
    rows = rows[rows["source"] == first].reset_index(drop=True)
    return signals(rows)


def signals(rows: pd.DataFrame) -> pd.DataFrame:
    d, se = rows["effect_debiased"].astype(float), rows["effect_debiased_se"].astype(float)
    s, s_se = rows["effect_sieve_estimate"].astype(float), rows["effect_sieve_se"].astype(float)
    rows["sig_sieve"] = (d - s).abs() / np.sqrt(se ** 2 + s_se ** 2)
    rows["sig_correction"] = (d - rows["effect_plug_in"].astype(float)).abs() / se
    rows["sig_spread"] = pd.to_numeric(rows["effect_spread_se"], errors="coerce").fillna(0.0)
    rungs = [json.loads(r) if isinstance(r, str) else [] for r in rows["effect_rungs"]]
    rows["sig_rungs"] = [max([abs(e - di) for e, _, _ in rr], default=0.0) / si for rr, di, si in zip(rungs, d, se)]
    rows["sig_sieve_or_spread"] = np.maximum(rows["sig_sieve"], rows["sig_spread"] / 2)
    rows["sig_se_ratio"] = s_se / se
    rows["sig_se_ratio_or_sieve"] = np.maximum(rows["sig_se_ratio"], rows["sig_sieve"] / 1.5)
    rows["weak"] = weak_mask(rows).to_numpy()
    truth = rows["effect_truth"].astype(float)
    rows["covered"] = (rows["effect_debiased_ci_lower"] <= truth) & (truth <= rows["effect_debiased_ci_upper"])
    rows["sieve_lo"], rows["sieve_hi"] = s - Z * s_se, s + Z * s_se
    rows["hull_lo"] = np.minimum(rows["effect_debiased_ci_lower"], rows["sieve_lo"])
    rows["hull_hi"] = np.maximum(rows["effect_debiased_ci_upper"], rows["sieve_hi"])
    wide = Z * np.maximum(se, s_se)          # the debiased estimate with the larger of the two standard errors
    rows["wide_lo"], rows["wide_hi"] = d - wide, d + wide
    # the width the estimates' spread needs, per design and arm: 2 z sd of the debiased estimates over seeds
    rows["needed"] = 2 * Z * rows.groupby(["design", "arm"])["effect_debiased"].transform("std")
    return rows


def evaluate(rows: pd.DataFrame, signal: str, bar: float, better: str) -> pd.DataFrame:
    """Per design (all DML arms together): fits, flagged share (this rule), weak share, silent coverage,
    shown coverage, shown width / needed."""
    flag = (rows[f"sig_{signal}"] > bar) & ~rows["weak"]
    silent = ~flag & ~rows["weak"]
    truth = rows["effect_truth"].astype(float)
    lo = np.where(silent, rows["effect_debiased_ci_lower"], np.nan)
    hi = np.where(silent, rows["effect_debiased_ci_upper"], np.nan)
    if better != "none":
        lo = np.where(flag, rows[f"{better}_lo"], lo)
        hi = np.where(flag, rows[f"{better}_hi"], hi)
    shown = ~np.isnan(lo)
    covered = shown & (lo <= truth) & (truth <= hi)
    frame = pd.DataFrame({"design": rows["design"], "flag": flag, "weak": rows["weak"], "silent": silent,
                          "silent_covered": silent & rows["covered"], "shown_covered": covered,
                          "width": np.where(shown, hi - lo, np.nan) / rows["needed"]})
    out = frame.groupby("design").agg(fits=("flag", "size"), flagged=("flag", "mean"), weak=("weak", "mean"),
                                      silent=("silent", "sum"), silent_covered=("silent_covered", "sum"),
                                      shown_coverage=("shown_covered", "mean"), width_ratio=("width", "mean"))
    out["silent_coverage"] = out["silent_covered"] / out["silent"].where(out["silent"] > 0)
    out["silent_coverage_se"] = np.sqrt(out["silent_coverage"] * (1 - out["silent_coverage"]) / out["silent"])
    return out.drop(columns="silent_covered").reset_index().assign(signal=signal, bar=bar, better=better)


TODAY = "coverage-31"           # rows whose refits were whole, as today; coverage-fonly's are indicative only
MISUSE = ("clustered-iv-ignored",)   # clusters left out on purpose: its remedy is --cov clustered, not this flag


def shortfalls(table: pd.DataFrame, sources: dict) -> dict:
    """How far a rule's per-design table is from the issue's targets, each 0 when met: ``silent`` the worst
    silent coverage short of 0.90 over today's designs with at least 5 silent fits (the misuse design left
    out), ``strong`` the largest flagged share above 10 % on the strong designs, ``shown`` moderate-pcl's
    shown coverage short of 0.90."""
    today = table[table["design"].map(sources).eq(TODAY) & ~table["design"].isin(MISUSE) & (table["silent"] >= 5)]
    strong = table[table["design"].isin(STRONG)]
    moderate = table[table["design"] == "moderate-pcl"]["shown_coverage"]
    return {"silent": max(0.0, 0.90 - today["silent_coverage"].min()) if len(today) else 0.0,
            "strong": max(0.0, strong["flagged"].max() - 0.10) if len(strong) else 0.0,
            "shown": max(0.0, 0.90 - moderate.iloc[0]) if len(moderate) else 0.0}


def score(table: pd.DataFrame, sources: dict) -> float:
    """The sum of :func:`shortfalls`: 0 when a rule meets the targets on these rows."""
    return float(sum(shortfalls(table, sources).values()))


def leave_one_design_out(rows: pd.DataFrame, signal: str, better: str) -> pd.DataFrame:
    """For each design: the bar that comes closest to the targets on the other designs (the largest such bar
    when several tie: the fewest flags the other designs ask for), and this design's figures at that bar (how
    the choice would carry to a design it was not chosen on)."""
    sources = rows.groupby("design")["source"].first().to_dict()
    out = []
    for design in sorted(rows["design"].unique()):
        others = rows[rows["design"] != design]
        bar = min(BARS, key=lambda b: (score(evaluate(others, signal, b, better), sources), -b))   # ties: fewest flags
        out.append(evaluate(rows[rows["design"] == design], signal, bar, better))
    return pd.concat(out, ignore_index=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(ROOT / "flag-search"))
    args = parser.parse_args(argv)
    rows = load_rows()
    sources = rows.groupby("design")["source"].first().to_dict()
    tables = [evaluate(rows, signal, bar, better) for signal in SIGNALS for bar in BARS for better in BETTER]
    all_rules = pd.concat(tables, ignore_index=True)
    all_rules["rows"] = all_rules["design"].map(sources)
    summary = []
    for (signal, bar, better), t in all_rules.groupby(["signal", "bar", "better"]):
        short = shortfalls(t, sources)
        moderate = t.set_index("design").loc["moderate-pcl"]
        strong = t[t["design"].isin(STRONG)]
        summary.append({"signal": signal, "bar": bar, "better": better, "meets": score(t, sources) == 0,
                        "distance": score(t, sources), **{f"short_{k}": v for k, v in short.items()},
                        "strong_flagged_max": strong["flagged"].max(),
                        "strong_flagged_worst": strong.loc[strong["flagged"].idxmax(), "design"],
                        "moderate_pcl_flagged": moderate["flagged"], "moderate_pcl_silent": moderate["silent"],
                        "moderate_pcl_silent_coverage": moderate["silent_coverage"],
                        "moderate_pcl_shown_coverage": moderate["shown_coverage"],
                        "moderate_pcl_width_ratio": moderate["width_ratio"]})
    summary = pd.DataFrame(summary).sort_values(["distance", "signal", "bar", "better"])
    best = summary.iloc[0]
    lodo = leave_one_design_out(rows, best["signal"], best["better"])
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    all_rules.to_csv(out / "rules.csv", index=False, float_format="%.4g")
    summary.to_csv(out / "summary.csv", index=False, float_format="%.4g")
    lodo.to_csv(out / "leave-one-design-out.csv", index=False, float_format="%.4g")
    pd.set_option("display.width", 200)
    print(summary.head(12).round(3).to_string(index=False))
    print(all_rules[(all_rules["signal"] == best["signal"]) & (all_rules["bar"] == best["bar"])
                    & (all_rules["better"] == best["better"])].to_string(index=False))
    print(lodo.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

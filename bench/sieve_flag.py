"""Issue 44: the sieve effect of data-driven dimension (DD-sieve) as an interval of its own and as the check that
flags the debiased effect.

Reads the DD-sieve rows of bench/sieve_dimension.py (``--dd-dir``: one row per design and seed, no learner) and

1. ``coverage``: per design, the DD-sieve interval's coverage (with its Monte-Carlo s.e.), width over the width
   the estimates' spread needs (2 x 1.96 x their sd), bias, and its bias and its plug-in's bias over the
   confounded regression's (least squares in f's sieve, the instruments ignored); the same for other agreement
   bars ``z`` of the dimension choice, recomputed from each row's stored gaps (no refit);
2. ``pairs``: the DML-family fits of bench/results/coverage-31, coverage-54 and coverage-fonly, the first of
   :data:`SOURCES` that has a design serving it (:func:`bench.flag_search.load_rows`; coverage-54's whole refits
   replace coverage-fonly's f-alone rows on the designs both have), joined to the DD-sieve row of the same design and seed, after checking that the data are the same (the truth
   and 2SLS's estimate of the stored 2SLS fit of that seed equal the DD row's to 1e-6: ``matched``);
3. ``rules``: "flag the debiased effect when |debiased - DD| > bar x sqrt(se^2 + se_dd^2) or se_dd > ratio x se"
   (on top of the weak-identification flag), the DD-sieve interval shown beside a flag, scored per design by
   :func:`bench.flag_search.evaluate` for each (bar, ratio) of :data:`GRID`; ``calibrated.json``: the pair
   :func:`calibrate` picks (the code's bar: dmlcore.inference.sieve_dimension.SIEVE_SE_RATIO); ``lodo``: the pair
   chosen on the other designs when each is left out; ``second``: the DD-sieve interval beside every fit, read on
   its own (the "second reading").

    python -m bench.sieve_flag          # writes bench/results/sieve-flag/*.csv
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from bench.docgen.tables import is_method
from bench.flag_search import MISUSE, ROOT, STRONG, Z, evaluate, load_rows
from dmlcore.estimators._registry import LINEAR_REFERENCE

DD_DIR = ROOT / "sieve-dimension-2026-11-29-1115"   # the ladder with treatment x proxy rungs (IV rows carried over)
OUT = ROOT / "sieve-flag"
ISSUE_STRONG = ("linear", "demand-iv", "hetero-iv", "clustered-iv")   # issue 44's strong designs
BARS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, np.inf)          # the gap |debiased - DD| over sqrt(se^2 + se_dd^2)
RATIOS = (1.25, 1.5, 2.0, 2.5, 3.0, 4.0, np.inf)       # se_dd / se: the debiased interval far narrower than the DD one
GRID = [(b, r) for b in BARS for r in RATIOS]
DIMENSION_Z = (2.0, 2.5, 3.0, 3.5, 4.0)
MATCH = 1e-6
SOURCES = ("coverage-31", "coverage-54", "coverage-fonly")   # folders of fits, the first with a design serving it
WHOLE = ("coverage-31", "coverage-54")      # whole refits, as runs do today; coverage-fonly's f-alone rows are indicative


def dd_rows(root: Path = DD_DIR) -> pd.DataFrame:
    """The DD-sieve rows, one per design and seed (a seed written twice by two runs counted once)."""
    rows = pd.concat([pd.read_csv(p) for p in sorted(root.glob("rows-*.csv"))], ignore_index=True)
    rows["dd_unchecked"] = rows["dd_unchecked"].fillna("").astype(str) if "dd_unchecked" in rows else ""
    return rows.drop_duplicates(["design", "seed"]).reset_index(drop=True)


def rechoose(rungs_json: str, gaps_json: str, z: float) -> tuple[float, float, float, int]:
    """(estimate, se, plug-in, rung) of the rung the dimension rule picks at bar ``z`` from a row's stored rungs
    and gaps (the fitted rungs in ladder order): the first within ``z`` of every richer one."""
    fitted = [r for r in json.loads(rungs_json) if r[1] is not None]
    g = np.asarray(json.loads(gaps_json), dtype=float)
    for j in range(len(fitted)):
        if j == len(fitted) - 1 or g[j, j + 1:].max() <= z:
            return fitted[j][1], fitted[j][2], fitted[j][3], fitted[j][0]


def coverage(dd: pd.DataFrame, z: float | None = None) -> pd.DataFrame:
    """Per design: seeds, coverage and its s.e., mean width, width / needed, bias, bias / the regression's, the
    plug-in's bias / the regression's, the weak share, the share of each chosen rung; at the code's bar when
    ``z`` is None, else at ``z`` (recomputed from the gaps)."""
    dd = dd.copy()
    if z is not None:
        picked = [rechoose(r, g, z) for r, g in zip(dd["dd_rungs"], dd["dd_gaps"])]
        dd["dd_estimate"], dd["dd_se"], dd["dd_plug_in"], dd["dd_rung"] = map(list, zip(*picked))
        dd["dd_ci_lower"], dd["dd_ci_upper"] = dd["dd_estimate"] - Z * dd["dd_se"], dd["dd_estimate"] + Z * dd["dd_se"]
    dd["covered"] = (dd["dd_ci_lower"] <= dd["truth"]) & (dd["truth"] <= dd["dd_ci_upper"])
    dd["width"] = dd["dd_ci_upper"] - dd["dd_ci_lower"]
    out = []
    for design, part in dd.groupby("design", sort=False):
        cov, k = part["covered"].mean(), len(part)
        reg_bias = (part["regression"] - part["truth"]).mean()
        bias = (part["dd_estimate"] - part["truth"]).mean()
        plug_bias = (part["dd_plug_in"] - part["truth"]).mean()
        needed = 2 * Z * part["dd_estimate"].std()
        named = part[~part["dd_weak"].astype(bool)]       # the rows whose sieve effect is not weakly identified
        out.append({"design": design, "z": z, "seeds": k, "coverage": cov, "coverage_se": np.sqrt(cov * (1 - cov) / k),
                    "identified": len(named), "identified_coverage": named["covered"].mean() if len(named) else np.nan,
                    "unchecked": part["dd_unchecked"].fillna("").astype(str).ne("").mean(),
                    "width": part["width"].mean(), "sd": part["dd_estimate"].std(),
                    "width_ratio": part["width"].mean() / needed, "bias": bias, "regression_bias": reg_bias,
                    "bias_ratio": bias / reg_bias, "plug_in_bias_ratio": plug_bias / reg_bias,
                    "weak": part["dd_weak"].mean(),
                    "rungs": " ".join(f"{r}:{c}" for r, c in part["dd_rung"].value_counts().sort_index().items())})
    return pd.DataFrame(out)


def pairs(dd: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the DML-family rows with the DD columns of the same design and seed, the match count per design)."""
    rows = load_rows(sources=SOURCES)
    stored = pd.concat([pd.read_csv(p).assign(source=p.parent.name)
                        for src in SOURCES for p in sorted((ROOT / src).glob("fits-*.csv"))], ignore_index=True)
    tsls = stored[is_method(stored["arm"], LINEAR_REFERENCE) & stored["status"].eq("done")]
    tsls = tsls[tsls["source"] == tsls.groupby("design")["source"].transform(lambda s: min(s, key=SOURCES.index))]
    check = tsls[["design", "seed", "effect_truth", "effect_plug_in"]].merge(
        dd[["design", "seed", "truth", "tsls"]], on=["design", "seed"], how="left")
    check["matched"] = ((check["effect_truth"] - check["truth"]).abs() <= MATCH * (1 + check["truth"].abs())) & \
                       ((check["effect_plug_in"] - check["tsls"]).abs() <= MATCH * (1 + check["tsls"].abs()))
    matches = check.groupby("design").agg(stored_seeds=("seed", "size"), with_dd=("truth", lambda s: s.notna().sum()),
                                          matched=("matched", "sum")).reset_index()
    good = check.loc[check["matched"], ["design", "seed"]]
    cols = ["design", "seed", "dd_estimate", "dd_se", "dd_ci_lower", "dd_ci_upper", "dd_weak", "dd_rung", "dd_unchecked"]
    joined = rows.merge(good, on=["design", "seed"]).merge(dd[cols], on=["design", "seed"])
    se, dse = joined["effect_debiased_se"].astype(float), joined["dd_se"].astype(float)
    joined["sig_dd"] = (joined["effect_debiased"].astype(float) - joined["dd_estimate"]).abs() / np.sqrt(se ** 2 + dse ** 2)
    joined["ratio_dd"] = dse / se
    unchecked = joined["dd_unchecked"].ne("")     # the code flags these whatever the bars, with nothing to read
    joined["dd_lo"] = joined["dd_ci_lower"].where(~unchecked)
    joined["dd_hi"] = joined["dd_ci_upper"].where(~unchecked)
    return joined, matches


def flagged_by(joined: pd.DataFrame, bar: float, ratio: float) -> pd.DataFrame:
    """``joined`` with ``sig_rule``: above 1 when the gap exceeds ``bar`` or the se ratio exceeds ``ratio``, infinite
    where the sieve effect found the additive bridge unchecked (the code flags those whatever the bars)."""
    rule = np.maximum(joined["sig_dd"] / bar, joined["ratio_dd"] / ratio)
    return joined.assign(sig_rule=rule.where(joined["dd_unchecked"].eq(""), np.inf))


def shortfalls(table: pd.DataFrame, sources: dict) -> dict:
    """How far a rule's per-design table is from issue 44's targets, each 0 when met: ``silent`` the worst silent
    coverage short of 0.90 over the designs of whole-refit rows (:data:`WHOLE`) with at least 5 silent
    fits, the misuse design left out; ``strong`` the largest flagged share above 10 % on the issue's strong
    designs (:data:`ISSUE_STRONG`); ``shown`` moderate-pcl's shown coverage short of 0.90; ``width`` its shown
    width / needed outside 0.8-1.5."""
    today = table[table["design"].map(sources).isin(WHOLE) & ~table["design"].isin(MISUSE) & (table["silent"] >= 5)]
    strong = table[table["design"].isin(ISSUE_STRONG)]
    moderate = table[table["design"] == "moderate-pcl"]
    width = moderate_width(table)
    return {"silent": max(0.0, 0.90 - today["silent_coverage"].min()) if len(today) else 0.0,
            "strong": max(0.0, strong["flagged"].max() - 0.10) if len(strong) else 0.0,
            "shown": max(0.0, 0.90 - moderate["shown_coverage"].iloc[0]) if len(moderate) else 0.0,
            "width": max(0.0, 0.8 - width, width - 1.5) if np.isfinite(width) else 0.0}


def moderate_width(table: pd.DataFrame) -> float:
    m = table[table["design"] == "moderate-pcl"]["width_ratio"]
    return float(m.iloc[0]) if len(m) else float("nan")


def rules(joined: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every bar's per-design table, one line per bar against the targets)."""
    sources = joined.groupby("design")["source"].first().to_dict()
    seeds = joined.groupby("design")["seed"].nunique().to_dict()
    tables, summary = [], []
    for bar, ratio in GRID:
        if bar == ratio == np.inf:
            continue
        flagged = flagged_by(joined, bar, ratio)
        t = evaluate(flagged, "rule", 1.0, "dd").assign(bar=bar, ratio=ratio, rows=lambda f: f["design"].map(sources),
                                                        seeds=lambda f: f["design"].map(seeds))
        t["width_ratio_own"] = t["design"].map(own_width(flagged))
        tables.append(t)
        short = shortfalls(t, sources)
        strong = t[t["design"].isin(ISSUE_STRONG)]
        moderate = t.set_index("design").loc["moderate-pcl"] if "moderate-pcl" in set(t["design"]) else None
        silent = t[(t["silent"] >= 5)]
        summary.append({"bar": bar, "ratio": ratio, **{f"short_{k}": v for k, v in short.items()},
                        "distance": score_rule(joined, bar, ratio, sources),
                        "silent_worst": silent.loc[silent["silent_coverage"].idxmin(), "design"],
                        "silent_worst_coverage": silent["silent_coverage"].min(),
                        "issue_strong_flagged_max": strong["flagged"].max(),
                        "issue_strong_flagged_worst": strong.loc[strong["flagged"].idxmax(), "design"],
                        "all_strong_flagged_max": t[t["design"].isin(STRONG)]["flagged"].max(),
                        "moderate_pcl_flagged": None if moderate is None else moderate["flagged"],
                        "moderate_pcl_silent_coverage": None if moderate is None else moderate["silent_coverage"],
                        "moderate_pcl_shown_coverage": None if moderate is None else moderate["shown_coverage"],
                        "moderate_pcl_width_ratio": moderate_width(t),
                        "moderate_pcl_width_ratio_own": None if moderate is None else moderate["width_ratio_own"]})
    return pd.concat(tables, ignore_index=True), pd.DataFrame(summary)


def own_width(rows: pd.DataFrame) -> pd.Series:
    """Per design: the shown interval's mean width over the width the shown estimates' own spread needs (2 x 1.96
    x their sd, per arm), the estimate shown being the DD-sieve's where the rule (``sig_rule`` > 1) flags and the
    debiased one where it is silent; weak-flagged fits (nothing shown) left out."""
    flag = (rows["sig_rule"] > 1.0) & ~rows["weak"]
    shown = rows[~rows["weak"]].assign(
        est=np.where(flag, rows["dd_estimate"], rows["effect_debiased"])[~rows["weak"].to_numpy()],
        width=np.where(flag, rows["dd_hi"] - rows["dd_lo"],
                       rows["effect_debiased_ci_upper"] - rows["effect_debiased_ci_lower"])[~rows["weak"].to_numpy()])
    shown["needed"] = 2 * Z * shown.groupby(["design", "arm"])["est"].transform("std")
    return (shown["width"] / shown["needed"]).groupby(shown["design"]).mean()


def score_rule(rows: pd.DataFrame, bar: float, ratio: float, sources: dict) -> float:
    """How far the rule (``bar``, ``ratio``) is from the targets on ``rows`` (:func:`shortfalls` summed; 0 when met)."""
    return float(sum(shortfalls(evaluate(flagged_by(rows, bar, ratio), "rule", 1.0, "dd"), sources).values()))


def calibrate(joined: pd.DataFrame) -> tuple[float, float]:
    """The (gap bar, se-ratio bar) of :data:`GRID` closest to the targets on all the paired rows (:func:`score_rule`);
    among rules equally close, the one that flags the fewest fits of the issue's strong designs, then the
    largest bars (the fewest flags elsewhere)."""
    sources = joined.groupby("design")["source"].first().to_dict()
    strong = joined[joined["design"].isin(ISSUE_STRONG)]

    def strong_flags(bar, ratio):
        f = flagged_by(strong, bar, ratio)
        return int(((f["sig_rule"] > 1.0) & ~f["weak"]).sum())

    return min((g for g in GRID if g != (np.inf, np.inf)),
               key=lambda g: (round(score_rule(joined, *g, sources), 9), strong_flags(*g), -g[1], -g[0]))


def lodo(joined: pd.DataFrame) -> pd.DataFrame:
    """Each design's figures at the bars :func:`calibrate` chooses on the other designs."""
    out = []
    for design in sorted(joined["design"].unique()):
        others = joined[joined["design"] != design]
        bar, ratio = calibrate(others)
        out.append(evaluate(flagged_by(joined[joined["design"] == design], bar, ratio), "rule", 1.0, "dd")
                   .assign(bar=bar, ratio=ratio))
    return pd.concat(out, ignore_index=True)


def second_reading(joined: pd.DataFrame) -> pd.DataFrame:
    """Per design and arm: the debiased interval's and the DD-sieve interval's coverage and width / needed on
    the same fits (the DD interval shown beside every effect)."""
    out = []
    for (design, arm), part in joined.groupby(["design", "arm"]):
        truth = part["effect_truth"].astype(float)
        deb = (part["effect_debiased_ci_lower"] <= truth) & (truth <= part["effect_debiased_ci_upper"])
        dd = (part["dd_lo"] <= truth) & (truth <= part["dd_hi"])
        out.append({"design": design, "arm": arm, "fits": len(part), "debiased_coverage": deb.mean(),
                    "debiased_width_ratio": (part["effect_debiased_ci_upper"] - part["effect_debiased_ci_lower"]).mean()
                    / (2 * Z * part["effect_debiased"].std()),
                    "dd_coverage": dd.mean(), "dd_width_ratio": (part["dd_hi"] - part["dd_lo"]).mean()
                    / (2 * Z * part["dd_estimate"].std()),
                    "either_covers": (deb | dd).mean()})
    return pd.DataFrame(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dd-dir", default=str(DD_DIR))
    p.add_argument("--out-dir", default=str(OUT))
    args = p.parse_args(argv)
    dd = dd_rows(Path(args.dd_dir))
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cov = pd.concat([coverage(dd)] + [coverage(dd, z) for z in DIMENSION_Z], ignore_index=True)
    joined, matches = pairs(dd)
    per_bar, summary = rules(joined)
    lo = lodo(joined)
    bar, ratio = calibrate(joined)
    (out / "calibrated.json").write_text(json.dumps({"gap_bar": bar, "se_ratio_bar": ratio}))
    print("calibrated: gap bar", bar, "se ratio bar", ratio)
    second = second_reading(joined)
    for name, frame in (("coverage", cov), ("matches", matches), ("rules", per_bar), ("summary", summary),
                        ("leave-one-design-out", lo), ("second-reading", second)):
        frame.to_csv(out / f"{name}.csv", index=False, float_format="%.4g")
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(cov[cov["z"].isna()].round(3).to_string(index=False))
    print(matches.to_string(index=False))
    print(summary.sort_values("distance").head(15).round(3).to_string(index=False))
    print(lo.round(3).to_string(index=False))
    print(second.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

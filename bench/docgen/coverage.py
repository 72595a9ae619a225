"""docs/coverage.md: the band coverage tables (JSON summaries of bench/coverage.py, no per-seed rows),
the effect intervals' coverage, the held-out score's ranking power and the RHC effects."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from dmlcore.inference.effect_coverage import (DESIGN_TITLES, OWN_NUISANCES, PROCEDURE, arm_of, calibrate_first_stage_f, coverage_by,
                                    demand_contrast, markdown, summarize, variance_rules)

from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F

from .registry import block, derived_file, family
from .tables import fact, has, is_method, load_said, timed, title
from .words import num

BAND_NAMES = {"outcome": "outcome", "structural": "structural", "score": "score", "split": "split spread (R = 5)"}


@family(r"bands:(?P<file>\S+\.json)")
def bands(rows, file: str) -> str:
    """A band-coverage table from a JSON summary: cover, coverage at the marked points, cover E, se/sd, width."""
    summary = rows.json(file)
    points = [p.replace("@-", "@−") for p in summary["fixed_points"]]
    lines = ["| band | cover | " + " | ".join(points) + " | cover E | se/sd | width |",
             "|---|---|" + "---|" * len(points) + "---|---|---|"]
    for r in summary["rows"]:
        lines.append(f"| {BAND_NAMES.get(r['band'], r['band'])} | {r['cover']:.3f} | "
                     + " | ".join(f"{v:.2f}" for v in r["fixed"])
                     + f" | {r['cover_E']:.3f} | {r['se_sd']:.2f} | {num(r['width'])} |")
    return "\n".join(lines)


@family(r"bands-summary:(?P<file>\S+\.json)")
def bands_summary(rows, file: str) -> str:
    s = rows.json(file)
    text = f"median MSE {s['median_mse']:.4f}, median |bias|/sd {s['median_bias_over_sd']:.2f}"
    return text   # its seconds per seed are not quoted: a summary records no load (docs/making.md)


INTERVALS = {"2sls": title("2sls"), "dml-sieve": "DML-CMR, spline f (delta)", "sieve-2sls": "Sieve 2SLS (delta)",
             "dml-boot": "DML-CMR, linear learners, bootstrap"}


def effect_summary(frame: pd.DataFrame) -> pd.DataFrame:
    ok = frame[frame["error"].isna()].assign(width=lambda f: f["upper"] - f["lower"],
                                             err=lambda f: f["estimate"] - f["truth"])
    out = ok.groupby(["design", "interval"], sort=False).agg(
        seeds=("covered", "size"), coverage=("covered", "mean"), width=("width", "mean"), bias=("err", "mean"),
        rmse=("err", lambda e: float(np.sqrt(np.mean(e ** 2)))), seconds=("seconds", "mean"),
        sd=("estimate", "std"), se=("width", lambda w: float(np.mean(w) / (2 * 1.959964))),
        estimate=("estimate", "mean"), truth=("truth", "mean")).reset_index()
    out["coverage_se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["seeds"])
    return out


@family(r"effect-coverage:(?P<file>[^:]+\.csv)")
def effect_coverage(rows, file: str) -> str:
    frame = rows.csv(file)
    summary = effect_summary(frame).sort_values(["design", "interval"], kind="stable")
    seconds = timed(frame)          # a time only with the load it was measured under
    lines = ["| design | interval | seeds | coverage ± s.e. | width | bias | RMSE |"
             + (f" s per fit ({load_said(frame)}) |" if seconds else ""), "|---|---|---|---|---|---|---|" + "---|" * seconds]
    for r in summary.itertuples():
        lines.append(f"| {r.design} | {INTERVALS[r.interval]} | {r.seeds} | {r.coverage:.3f} ± {r.coverage_se:.3f} | "
                     f"{num(r.width)} | {r.bias:+.2g} | {num(r.rmse, 2)} |" + (f" {num(r.seconds, 2)} |" if seconds else ""))
    return "\n".join(lines)


@block("effect-coverage:demand-iv")
def effect_demand_iv(rows) -> str:
    s = effect_summary(rows.csv("effect-coverage.csv")).set_index(["design", "interval"]).loc[("demand-iv", "dml-sieve")]
    return (f"its estimates average {s['estimate']:.2f} against a truth of {s['truth']:.2f} (a bias toward zero, whose "
            f"cause we have not isolated), and it covers only {s['coverage']:.0%}; its width matches the spread of its "
            f"estimates (mean standard error {s['se']:.2f}, sd of the estimates over seeds {s['sd']:.3f})")


@block("effect-coverage:linear")
def effect_linear(rows) -> str:
    s = effect_summary(rows.csv("effect-coverage.csv")).set_index(["design", "interval"])
    lin, weak = s.loc[("linear", "dml-sieve")], s.loc[("weak", "dml-sieve")]
    return (f"its delta-method standard error (mean {lin['se']:.3f} on linear, {weak['se']:.3f} on weak) is "
            f"{lin['se'] / lin['sd']:.1f} and {weak['se'] / weak['sd']:.1f} times the spread of its estimates over seeds "
            f"({lin['sd']:.3f}, {weak['sd']:.3f}), so it covers {lin['coverage']:.1%} and {weak['coverage']:.1%}")


@block("effect-coverage:boot")
def effect_boot(rows) -> str:
    s = effect_summary(rows.csv("effect-coverage-boot-linear.csv")).set_index(["design", "interval"])
    boot = [s.loc[(d, "dml-boot")] for d in ("demand-iv", "linear", "weak")]
    return (f"its standard errors (half-width / 1.96, mean {', '.join(num(b['se']) for b in boot)} on demand-iv, "
            f"linear and weak) against the spread of the estimates over seeds ({', '.join(num(b['sd']) for b in boot)})")


def ranking(frame: pd.DataFrame) -> pd.DataFrame:
    ok = frame[frame["error"].isna()]
    out = []
    for (design, seed), g in ok.groupby(["design", "seed"], sort=False):
        best, pick = g.loc[g["mse"].idxmin()], g.loc[g["heldout"].idxmin()]
        out.append({"design": design, "seed": seed, "methods": len(g),
                    "rho": spearmanr(g["heldout"], g["mse"]).statistic, "picked": pick["method"] == best["method"],
                    "ratio": pick["mse"] / best["mse"]})
    return pd.DataFrame(out)


@block("heldout:ranking")
def heldout_ranking(rows) -> str:
    per = ranking(rows.csv("heldout-ranking.csv"))
    lines = ["| design | data sets | median ρ | quartiles | ρ > 0 | best picked | by chance | MSE of the pick / best MSE, median |",
             "|---|---|---|---|---|---|---|---|"]
    for design, g in per.groupby("design", sort=False):
        q1, q3 = g["rho"].quantile([0.25, 0.75])
        lines.append(f"| {design} | {len(g)} | {g['rho'].median():.2f} | {q1:.2f}–{q3:.2f} | {(g['rho'] > 0).sum()}/{len(g)} | "
                     f"{g['picked'].sum()}/{len(g)} | 1/{int(g['methods'].median())} | {g['ratio'].median():.2f} |")
    return "\n".join(lines).replace("–-", "–−").replace("| -", "| −")


@block("heldout:medians")
def heldout_medians(rows) -> str:
    frame = rows.csv("heldout-ranking.csv")
    frame = frame[frame["error"].isna()]
    med = frame.groupby(["method", "design"])[["mse", "heldout"]].median()
    designs = list(dict.fromkeys(frame["design"]))
    lines = ["| method | " + " | ".join(f"{d}: MSE / score" for d in designs) + " |", "|---|" + "---|" * len(designs)]
    for method in dict.fromkeys(frame["method"]):
        lines.append(f"| {title(method)} | " + " | ".join(f"{num(med.loc[(method, d), 'mse'])} / "
                                                          f"{num(med.loc[(method, d), 'heldout'])}" for d in designs) + " |")
    return "\n".join(lines)


RHC_NAMES = {("2sls", "linear", None): "2SLS (linear proximal 2SLS)", ("sieve-2sls", "linear", None): "Sieve 2SLS",
             ("dml-cmr", "gb", "sieve"): "DML-CMR, gb nuisances, spline f", ("ce-dml-cmr", "gb", "sieve"): "CE-DML-CMR, gb, spline f",
             ("naive", "gb", "sieve"): "naive plug-in, gb, spline f", ("dml-cmr", "gb", "boost"): "DML-CMR, gb nuisances, boosted f",
             ("naive", "gb", "boost"): "naive plug-in, gb, boosted f"}


def _rhc(rows, file):
    frame = rows.csv(file)
    frame["name"] = [RHC_NAMES[(m, lrn, None if pd.isna(f) else f)]
                     for m, lrn, f in zip(frame["method"], frame["learner"], frame["f_model"])]
    return frame


def _interval(r) -> str:
    if not pd.isna(r.bootstrap):
        return f"bootstrap, {r.bootstrap:.0f} refits (estimate ± 1.96 × sd of the refits)"
    return "coefficient ± 1.96 × s.e." if has(r.method, "linear_iv") else "delta method"


@family(r"rhc:(?P<file>[^:]+\.csv)(?::(?P<which>boot))?")
def rhc_table(rows, file: str, which: str | None) -> str:
    frame = _rhc(rows, file)
    frame = frame[frame["bootstrap"].notna()] if which else frame
    seconds = timed(frame)          # a time only with the load it was measured under
    lines = ["| method | ATE (days) | 95 % interval | interval | held-out score (s.e.) |"
             + (f" s ({load_said(frame)}) |" if seconds else ""), "|---|---|---|---|---|" + "---|" * seconds]
    for r in frame.itertuples():
        line = (f"| {r.name} | {r.estimate:.2f} | [{r.lower:.2f}, {r.upper:.2f}] | "
                f"{_interval(r)} | {r.heldout:.3f} ({r.heldout_se:.3f}) |" + (f" {r.seconds:,.0f} |" if seconds else ""))
        lines.append(line.replace("| -", "| −").replace(" -", " −").replace("[-", "[−"))
    return "\n".join(lines)


@block("rhc:heldout")
def rhc_heldout(rows) -> str:
    frame = _rhc(rows, "rhc-effects-boot.csv")
    frame = frame.sort_values("heldout")
    best, worst = frame.iloc[0], frame.iloc[-1]
    rest = frame.iloc[1:-1]
    return (f"the lowest is the {best['name']} ({best['heldout']:.3f}, s.e. {best['heldout_se']:.3f}); the others with a "
            f"flexible f lie between {rest['heldout'].min():.3f} and {rest['heldout'].max():.3f} (standard errors "
            f"{rest['heldout_se'].min():.3f}–{rest['heldout_se'].max():.3f}), and the {worst['name']} is the worst "
            f"({worst['heldout']:.3f})")


def _band(summary: dict, band: str) -> dict:
    return next(r for r in summary["rows"] if r["band"] == band)


@block("pool-centring")
def pool_centring(rows) -> str:
    lines = ["| linear-iv, 200 seeds | median MSE | median \\|bias\\|/sd | structural cover / se/sd | outcome cover / se/sd |",
             "|---|---|---|---|---|"]
    for label, file in (("pool as is", "coverage-linear-iv-k0-draws32.json"),
                        ("pool centred", "coverage-linear-iv-k0-draws32-centred.json")):
        s = rows.json(file)
        st, out = _band(s, "structural"), _band(s, "outcome")
        lines.append(f"| {label} | {s['median_mse']:.4f} | {s['median_bias_over_sd']:.2f} | {st['cover']:.3f} / "
                     f"{st['se_sd']:.2f} | {out['cover']:.3f} / {out['se_sd']:.2f} |")
    return "\n".join(lines)


@block("pool-centring:gb")
def pool_centring_gb(rows) -> str:
    parts = []
    for design in ("demand-iv", "demand-smooth"):
        a, b = rows.json(f"coverage-{design}-gb.json"), rows.json(f"coverage-{design}-gb-centred.json")
        parts.append(f"{design}: cover {_band(a, 'outcome')['cover']:.3f} → {_band(b, 'outcome')['cover']:.3f} outcome, "
                     f"{_band(a, 'structural')['cover']:.3f} → {_band(b, 'structural')['cover']:.3f} structural")
    return "; ".join(parts)


@block("attenuation")
def attenuation(rows) -> str:
    a, b = rows.json("coverage-linear-iv-k0.json"), rows.json("coverage-linear-iv-k0-draws32.json")
    return (f"it was {a['median_bias_over_sd']:.2f} sd of f-hat in linear-iv; `--n-draws 32` (M = 128) cut it to "
            f"{b['median_bias_over_sd']:.2f} sd (median MSE {a['median_mse']:.4f} → {b['median_mse']:.4f}, structural "
            f"cover {_band(a, 'structural')['cover']:.3f} → {_band(b, 'structural')['cover']:.3f})")


def debiased_rows(rows) -> pd.DataFrame:
    """The coverage study's per-fit rows (bench/effect_coverage.py: coverage/fits-<design>.csv)."""
    names = sorted(p.name for p in (rows.folder / "coverage").glob("fits-*.csv"))
    if not names:
        raise ValueError("no rows in coverage/fits-*.csv")
    return pd.concat([rows.csv(f"coverage/{name}") for name in names], ignore_index=True)


@block("effect-coverage:debiased")
def debiased_table(rows) -> str:
    """The debiased and plug-in intervals' coverage per design and method (dmlcore.inference.effect_coverage)."""
    return markdown(summarize(debiased_rows(rows))).replace("| coverage |", "| coverage ± s.e. |", 1)


@block("effect-coverage:debiased-seeds")
def debiased_seeds(rows) -> str:
    """How many seeds each design has so far, in words."""
    done = debiased_rows(rows)
    done = done[done["status"] == "done"]
    per = done.groupby("design")["seed"].nunique()
    return ", ".join(f"{design} {count}" for design, count in per.items())


F_ALONE_FAMILY = ("dml-cmr", "ce-dml-cmr", "naive")   # refitted f alone in coverage-fonly's run (a shortcut since dropped)


def f_alone_rows(rows) -> pd.DataFrame:
    """The six designs rerun while the DML-CMR family's debiased effect refitted f alone, the nuisances
    kept (bench/effect_coverage.py --out-dir coverage-fonly, committed 5838704-12bf387; the shortcut was
    dropped for whole refits on this evidence): per-fit rows."""
    names = sorted(p.name for p in (rows.folder / "coverage-fonly").glob("fits-*.csv"))
    if not names:
        raise ValueError("no rows in coverage-fonly/fits-*.csv")
    return pd.concat([rows.csv(f"coverage-fonly/{name}") for name in names], ignore_index=True)


def _refits_f_alone(frame: pd.DataFrame) -> pd.Series:
    return frame["method"].isin(F_ALONE_FAMILY)


@derived_file("dmlcore/data/files/effect-coverage.csv")
def shipped_coverage(rows) -> str:
    """The summary the Results page reads (dmlcore.inference.effect_coverage.measured_coverage): the 200-seed study,
    whose debiased effect cross-fitted f-hat by whole refits of every method as runs do today, its debiased
    rows naming that in ``procedure``."""
    fits = debiased_rows(rows)
    auto = "outcome_learner" in fits and fits["outcome_learner"].eq("auto").any()
    table = summarize(fits).assign(procedure=PROCEDURE, nuisances="auto" if auto else OWN_NUISANCES)
    table.loc[table["kind"] != "debiased", "procedure"] = None      # a plug-in's interval refits nothing
    table.loc[~table["arm"].str.contains(" "), "nuisances"] = None  # the linear methods have none
    return table.to_csv(index=False)


@block("effect-coverage:procedure")
def procedure_table(rows) -> str:
    """The DML-CMR family's debiased intervals on the same designs and seeds, f-hat cross-fitted by whole
    refits (the 200-seed study; today's procedure) and by refitting f alone (the dropped shortcut): coverage,
    width / needed, bias."""
    alone = f_alone_rows(rows)
    alone = alone[(alone["status"] == "done") & _refits_f_alone(alone)]
    whole = debiased_rows(rows)
    whole = whole[_refits_f_alone(whole)]
    paired = whole[whole["seed"].isin(set(alone["seed"]))]
    cells = {name: summarize(frame).query("kind == 'debiased'").set_index(["design", "arm"])
             for name, frame in (("all", whole), ("paired", paired), ("alone", alone))}
    lines = ["| design | method | seeds | coverage, f alone (dropped) | whole refits, same seeds | whole refits, 200 seeds "
             "| width / needed, f alone | whole, same seeds | bias, f alone | whole, same seeds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (design, arm), a in cells["alone"].iterrows():
        p, w = cells["paired"].loc[(design, arm)], cells["all"].loc[(design, arm)]
        lines.append(f"| {DESIGN_TITLES.get(design, design)} | {arm} | {int(a['seeds'])} | "
                     f"{a['coverage']:.2f} ± {a['coverage_se']:.2f} | {p['coverage']:.2f} ± {p['coverage_se']:.2f} | "
                     f"{w['coverage']:.3f} ({int(w['seeds'])}) | {a['width_ratio']:.2f} | {p['width_ratio']:.2f} | "
                     f"{a['bias']:+.3g} | {p['bias']:+.3g} |")
    return "\n".join(lines)


@block("effect-coverage:procedure-pooled")
def procedure_pooled(rows) -> str:
    """The DML-CMR family's debiased intervals pooled over designs and arms, f alone against whole refits on
    the same fits' seeds (paired by design, arm and seed): how many each covered, the pairs where only one
    did, and the exact two-sided sign test on those pairs (McNemar's; "level" unless p < 0.05)."""
    from scipy.stats import binomtest
    keys = ["design", "method", "f_model", "seed"]

    def covered(frame):
        frame = frame[(frame["status"] == "done") & _refits_f_alone(frame)].copy()
        lo, hi, truth = (pd.to_numeric(frame[c], errors="coerce") for c in
                         ("effect_debiased_ci_lower", "effect_debiased_ci_upper", "effect_truth"))
        frame["covered"] = (lo <= truth) & (truth <= hi)
        frame["f_model"] = frame["f_model"].fillna("own")
        return frame[lo.notna() & hi.notna() & truth.notna()][keys + ["covered"]]

    pairs = covered(f_alone_rows(rows)).merge(covered(debiased_rows(rows)), on=keys, suffixes=("_alone", "_whole"))
    n, a, w = len(pairs), int(pairs["covered_alone"].sum()), int(pairs["covered_whole"].sum())
    only_alone = int((pairs["covered_alone"] & ~pairs["covered_whole"]).sum())
    only_whole = int((~pairs["covered_alone"] & pairs["covered_whole"]).sum())
    p = binomtest(only_alone, only_alone + only_whole).pvalue if only_alone + only_whole else 1.0
    verdict = ("level (p ≥ 0.05)" if p >= 0.05 else
               f"{'higher' if only_alone > only_whole else 'lower'} with f refitted alone (p < 0.05)")
    return (f"pooled over the designs and the three arms, {n} paired fits: with f refitted alone the debiased "
            f"interval covered the truth in {a} ({a / n:.2f}), with whole refits in {w} ({w / n:.2f}); only the "
            f"first covered in {only_alone} pairs, only the second in {only_whole} (exact sign test p = {p:.2g}: "
            f"{verdict})")


@block("effect-coverage:procedure-check")
def procedure_check(rows) -> str:
    """bench/procedure_check.py (commit 29e77ff, removed with the f-alone path) on linear, DML-CMR gb own f:
    both procedures with the same code, checked against the two studies' rows for the same seeds, and the
    paired shift of the estimate: a sentence."""
    check = rows.csv("coverage-fonly/procedure-check-linear.csv")
    sources = {"f alone": f_alone_rows(rows), "whole refits": debiased_rows(rows)}
    worst = {}
    for procedure, study in sources.items():
        study = study[(study["design"] == "linear") & is_method(study["method"], "dml-cmr") & study["f_model"].isna()]
        mine = check[check["procedure"] == procedure].merge(study[["seed", "effect_debiased"]], on="seed")
        worst[procedure] = (len(mine), float((mine["estimate"] - mine["effect_debiased"]).abs().max()))
    wide = check.pivot(index="seed", columns="procedure", values="estimate").dropna()
    shift = wide["f alone"] - wide["whole refits"]
    truth = check.groupby("seed")["truth"].first().loc[wide.index]
    return (f"Rerun with the code of commit 29e77ff on seeds {int(wide.index.min())}–{int(wide.index.max())} of the "
            f"linear design (DML-CMR, gb, own f; rows made with `bench/procedure_check.py` at that commit, before its "
            f"removal with the f-alone path; in coverage-fonly/procedure-check-linear.csv), whole refits reproduced the 200-seed study's "
            f"debiased estimates (largest difference {worst['whole refits'][1]:.1g} over {worst['whole refits'][0]} "
            f"seeds) and f refitted alone the rerun's ({worst['f alone'][1]:.1g} over {worst['f alone'][0]}): the "
            f"procedure is the only difference for this arm. On the same fits the estimate with f refitted alone was lower in "
            f"{int((shift < 0).sum())} of {len(shift)} seeds (mean shift {shift.mean():+.3f}; mean error "
            f"{(wide['f alone'] - truth).mean():+.3f} against {(wide['whole refits'] - truth).mean():+.3f} with whole "
            f"refits)")


@block("effect-coverage:procedure-seeds")
def procedure_seeds(rows) -> str:
    alone = f_alone_rows(rows)
    done = alone[(alone["status"] == "done") & _refits_f_alone(alone)]
    per = done.groupby("design")["seed"].nunique()
    return ", ".join(f"{design} {count}" for design, count in per.items())


@block("effect-coverage:crossfit")
def crossfit_table(rows) -> str:
    """Full-sample against cross-fitted f-hat in the debiased effect (bench/debiased_crossfit.py)."""
    lines = ["| design | refits K | seeds | f-hat | bias | sd of estimates | mean se | coverage |",
             "|---|---|---|---|---|---|---|---|"]
    for k in (5, 2):
        frame = rows.csv(f"coverage/debiased-crossfit-k{k}.csv")
        for design, part in frame.groupby("design", sort=False):
            for kind, name in (("full", "full sample"), ("crossfit", "cross-fitted")):
                err = part[f"debiased_{kind}"] - part["truth"]
                covered = (err.abs() <= 1.959964 * part[f"se_{kind}"]).mean()
                lines.append(f"| {design} | {k} | {len(part)} | {name} | {err.mean():+.3f} | "
                             f"{part[f'debiased_{kind}'].std():.3f} | {part[f'se_{kind}'].mean():.3f} | {covered:.2f} |")
    return "\n".join(lines)


@block("effect-coverage:strength")
def strength_table(rows) -> str:
    """Coverage of the debiased intervals by identification strength, linear and weak designs pooled:
    the evidence behind dmlcore.inference.debiased_effect.WEAK_STRENGTH."""
    done = debiased_rows(rows)
    done = done[(done["status"] == "done") & done["design"].isin(["linear", "weak"])]
    inside = (done["effect_debiased_ci_lower"] <= done["effect_truth"]) & (done["effect_truth"] <= done["effect_debiased_ci_upper"])
    bins = pd.cut(done["effect_strength"], [0, 5, 10, 20, 40, 80, np.inf], right=False)
    table = inside.groupby(bins, observed=True).agg(["mean", "size"])
    lines = ["| strength | fits | coverage |", "|---|---|---|"]
    for interval, r in table.iterrows():
        upper = "∞" if np.isinf(interval.right) else f"{interval.right:g}"
        lines.append(f"| {interval.left:g} to {upper} | {int(r['size'])} | {r['mean']:.2f} |")
    return "\n".join(lines)


BAND_SOURCES = (("bands-2026-11-26/coverage-demand-iv-gb.json", ""),
                ("bands-2026-11-26/coverage-demand-smooth-gb.json", ""),
                ("bands-2026-11-26/coverage-demand-iv-linear.json", ", misspecified nuisances"),
                ("bands-2026-11-26/coverage-linear-iv.json", ""),
                ("coverage-demand-iv-gb-reps5.json", "; the earlier raw-noise design and spline"))


@derived_file("dmlcore/data/files/band-coverage.csv")
def shipped_bands(rows) -> str:
    """The band coverage the dashboard quotes (dmlcore.inference.band_coverage)."""
    out = []
    for file, note in BAND_SOURCES:
        s = rows.json(file)
        a = s["args"]
        for r in s["rows"]:
            if r["band"] == "outcome" and a.get("reps", 1) == 1 or r["band"] == "split spread":
                out.append(dict(design=a["design"], learner=a["learner"], n=a["n"], seeds=a["seeds"],
                                reps=a.get("reps", 1), band=r["band"], cover=round(r["cover"], 4), note=note))
    return pd.DataFrame(out).to_csv(index=False)


@block("teaching:demand-debiased")
def teaching_demand_debiased(rows) -> str:
    """The Learn tab's plug-in vs debiased sentence for the ticket-demand f (docs/teaching.md)."""
    return demand_contrast(summarize(debiased_rows(rows)))[1]


def _band_value(rows, file: str, band: str, field: str) -> float:
    """One figure of a band-coverage summary: ``band`` "-" reads the summary's own ``field``;
    ``fixedK`` is the coverage at the K-th marked point; "_" in ``band`` stands for a space."""
    summary = rows.json(file)
    if band == "-":
        return float(summary[field])
    row = {r["band"]: r for r in summary["rows"]}[band.replace("_", " ")]
    return float(row["fixed"][int(field[5:])] if field.startswith("fixed") else row[field])


def _band_text(x: float, fmt: str | None) -> str:
    if fmt == "pct":
        return f"{x:.0%}".replace("%", " %")
    if fmt == "pct1":
        return f"{x:.1%}".replace("%", " %")
    return f"{x:.{int(fmt or 2)}f}"


@family(r"band:(?P<file>[^:]+\.json):(?P<band>[\w-]+):(?P<field>\w+)(?::(?P<fmt>\w+))?")
def band_value(rows, file: str, band: str, field: str, fmt: str | None) -> str:
    """One figure of a band table, in prose (``fmt``: decimals, ``pct`` or ``pct1``)."""
    return _band_text(_band_value(rows, file, band, field), fmt)


@family(r"band-range:(?P<files>[^:]+):(?P<bands>[\w+-]+):(?P<field>\w+)(?::(?P<fmt>\w+))?")
def band_range(rows, files: str, bands: str, field: str, fmt: str | None) -> str:
    """The lowest and highest of a figure over band tables (``files`` and ``bands`` comma / plus separated)."""
    values = [_band_value(rows, f, b, field) for f in files.split(",") for b in bands.split("+")]
    lo, hi = _band_text(min(values), fmt), _band_text(max(values), fmt)
    if lo == hi:
        return lo
    if fmt and fmt.startswith("pct"):
        return f"{lo[:-2]}–{hi}"
    return f"{lo}–{hi}"


@block("effect-coverage:sieve-weak")
def sieve_weak(rows) -> str:
    """How often Sieve 2SLS's debiased interval covers on the weak design, by reported strength."""
    done = debiased_rows(rows)
    done = done[(done["status"] == "done") & (done["design"] == "weak") & is_method(done["arm"], "sieve-2sls")]
    inside = (done["effect_debiased_ci_lower"] <= done["effect_truth"]) & (done["effect_truth"] <= done["effect_debiased_ci_upper"])
    bins = pd.cut(done["effect_strength"], [0, 5, 10, 20, 40, 80, np.inf], right=False)
    table = inside.groupby(bins, observed=True).agg(["sum", "size"])
    parts = [f"{int(r['sum'])} of {int(r['size'])} "
             + (f"below {interval.right:g}" if interval.left == 0 else
                f"at {interval.left:g}–{interval.right:g}" if np.isfinite(interval.right) else f"above {interval.left:g}")
             for interval, r in table.iterrows()]
    return f"it covered {inside.mean():.3f} of the truth overall: " + ", ".join(parts[:-1]) + f" and {parts[-1]}"


@block("effect-coverage:fixes")
def debiased_fixes(rows) -> str:
    """The two plug-in intervals that miss, and their debiased intervals from the same fits."""
    s = summarize(debiased_rows(rows)).set_index(["design", "arm", "kind"])
    pairs = [("demand-iv", "dml-cmr gb spline f", "the spline f on demand-iv"), ("nonlinear-iv", "2sls", "2SLS on nonlinear-iv")]
    parts = [f"{label} {s.loc[(d, arm, 'plug_in'), 'coverage']:.3f} → {s.loc[(d, arm, 'debiased'), 'coverage']:.3f}"
             for d, arm, label in pairs]
    return "; ".join(parts)


@family(r"band-ratio:(?P<new>[^:]+\.json):(?P<old>[^:]+\.json):(?P<band>[\w-]+):(?P<field>\w+)")
def band_ratio(rows, new: str, old: str, band: str, field: str) -> str:
    """A figure of one band table against another: "4.5 times (484 against 108)"."""
    a, b = _band_value(rows, new, band, field), _band_value(rows, old, band, field)
    return f"{num(a / b, 2)} times ({num(a)} against {num(b)})" if a >= b else f"{num(b / a, 2)} times smaller ({num(a)} against {num(b)})"


@block("bands:demand-pcl-log")
def bands_pcl_log(rows) -> str:
    """The demand-pcl band runs, from their log (one line per seed)."""
    found = re.findall(r"seed=(\d+)\): mse=([\d.]+) .*band_coverage=([\d.]+) band_width=([\d.]+)",
                       rows.text("coverage-demand-pcl-gb.log"))
    frame = pd.DataFrame(found, columns=["seed", "mse", "cover", "width"]).astype(float)
    return (f"{len(frame)} seeds: mean coverage {frame['cover'].mean():.2f} (median over seeds "
            f"{frame['cover'].median():.3g}), mean width {frame['width'].mean():.1f}, median MSE {frame['mse'].median():.1f}")


def _excludes_zero(r) -> bool:
    return r.upper < 0 or r.lower > 0


@block("rhc:summary")
def rhc_summary(rows) -> str:
    """Every method's RHC effect in one sentence: sizes, whether the intervals exclude 0, which is smallest."""
    closed = _rhc(rows, "rhc-effects.csv").set_index("method")
    boot = _rhc(rows, "rhc-effects-boot.csv")
    boot = boot[boot["bootstrap"].notna()].set_index("method")
    sizes, boot_sizes = closed["estimate"].abs(), boot["estimate"].abs()
    every = "each of those intervals excluding 0" if all(_excludes_zero(r) for r in closed.itertuples()) \
        else "not every one of those intervals excluding 0"
    dml_zero = "excluding" if _excludes_zero(boot.loc["dml-cmr"]) else "including"
    flexible = sizes.drop("2sls")
    versus = "smaller in size than" if (flexible < sizes["2sls"]).all() else "not all smaller in size than"
    smallest = ("the smallest" if sizes["dml-cmr"] == sizes.min() and boot_sizes["dml-cmr"] == boot_sizes.min()
                else "not the smallest")
    return (f"by {sizes.min():.1f} to {sizes.max():.1f} days with the linear or spline f, {every}; by "
            f"{boot_sizes['dml-cmr']:.2f} (DML-CMR) and {boot_sizes['naive']:.2f} days (naive plug-in) with boosted "
            f"trees for f, DML-CMR's bootstrap interval {dml_zero} 0. The flexible methods' estimates are {versus} "
            f"linear 2SLS's, and DML-CMR's {smallest} with either second stage")


@block("rhc:2sls")
def rhc_2sls(rows) -> str:
    """Our linear proximal 2SLS on RHC: estimate (s.e.), the s.e. from its 95 % interval."""
    r = _rhc(rows, "rhc-effects.csv").set_index("method").loc["2sls"]
    return f"{r['estimate']:.2f} (s.e. {(r['upper'] - r['lower']) / (2 * 1.959964):.2f})".replace("-", "−")


# ------------------------------------------------------------------ issue 31: moderate identification, clusters
def rows31(rows) -> pd.DataFrame:
    """The per-fit rows of the issue-31 coverage run (bench/effect_coverage.py --out-dir coverage-31)."""
    names = sorted(p.name for p in (rows.folder / "coverage-31").glob("fits-*.csv"))
    if not names:
        raise ValueError("no rows in coverage-31/fits-*.csv")
    return pd.concat([rows.csv(f"coverage-31/{name}") for name in names], ignore_index=True)


@block("effect-coverage:moderate")
def moderate_table(rows) -> str:
    """The coverage table of the issue-31 designs, with today's weak-identification flag."""
    return markdown(summarize(rows31(rows)))


@block("effect-coverage:moderate-seeds")
def moderate_seeds(rows) -> str:
    done = rows31(rows)
    per = done[done["status"] == "done"].groupby("design")["seed"].nunique()
    return ", ".join(f"{design} {count}" for design, count in per.items())


F_EDGES = (0, 10, 16.4, 30, 50, 104.7, np.inf)


@block("effect-coverage:flag-f")
def flag_by_f(rows) -> str:
    """Coverage of the debiased intervals (every arm) by the linear first stage's F, per design."""
    table = coverage_by(rows31(rows), "effect_first_stage_f", F_EDGES)
    bins = list(dict.fromkeys(table["bin"]))
    bins.sort(key=lambda b: b.left)
    designs = list(dict.fromkeys(table["design"]))
    head = "| first-stage F | " + " | ".join(DESIGN_TITLES.get(d, d) for d in designs) + " |"
    lines = [head, "|---|" + "---|" * len(designs)]
    cells = table.set_index(["bin", "design"])
    for b in bins:
        upper = "∞" if np.isinf(b.right) else f"{b.right:g}"
        row = [f"{cells.loc[(b, d), 'coverage']:.2f} ({int(cells.loc[(b, d), 'fits'])})" if (b, d) in cells.index else ""
               for d in designs]
        lines.append(f"| {b.left:g} to {upper} | " + " | ".join(row) + " |")
    return "\n".join(lines)


@block("effect-coverage:flag-calibration")
def flag_calibration(rows) -> str:
    """The first-stage F bars the rows support (dmlcore.inference.effect_coverage.calibrate_first_stage_f), in words."""
    per_design, pooled, table = calibrate_first_stage_f(rows31(rows))
    table = table[table["design"] != "pooled"]
    if per_design is not None:
        text = f"every design of the sweep covers at least 90 % where the flag is silent from F = {per_design:g} on"
    else:
        short = table[(table["fits"] >= 20) & (table["coverage"] < 0.90)].sort_values(["design", "threshold"])
        worst = "; ".join(f"{DESIGN_TITLES.get(d, d)} {', '.join(f'{r.coverage:.2f} at {r.threshold:g}' for r in g.itertuples())}"
                          for d, g in short.groupby("design", sort=False))
        text = (f"no candidate bar gives 90 % on every design of the sweep where the flag is silent (coverage of the "
                f"silent fits, at the bars with at least 20 of them: {worst})")
    if pooled is not None:
        text += f"; pooled over the sweep, the silent fits cover at least 90 % from F = {pooled:g} on"
    return text + f"; the code's bar, WEAK_FIRST_STAGE_F, is {WEAK_FIRST_STAGE_F:g}"


@block("effect-coverage:variance-rules")
def variance_rule_table(rows) -> str:
    """Coverage and width / needed of the debiased intervals under three standard errors, same fits."""
    table = variance_rules(rows31(rows))
    names = {"score": "score (today)", "max": "max(score, sieve check)", "bases": "score + bases' spread",
             "sieve": "the sieve check itself"}
    lines = ["| design | method | fits | " + " | ".join(f"{v}: coverage / width ratio / bias" for v in names.values())
             + " |",
             "|---|---|---|" + "---|" * len(names)]
    for (design, arm), part in table.groupby(["design", "arm"], sort=False):
        part = part.set_index("rule")
        cells = [f"{part.loc[r, 'coverage']:.2f} / {part.loc[r, 'width_ratio']:.2f} / {part.loc[r, 'bias']:+.3f}"
                 if r in part.index else ""
                 for r in names]
        lines.append(f"| {DESIGN_TITLES.get(design, design)} | {arm} | {int(part['fits'].max())} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


@block("effect-coverage:cost")
def debias_cost(rows) -> str:
    """What the debiased effect adds to a run (bench/debias_cost.py), medians over seeds: the
    process's CPU seconds, so that other jobs on the machine do not enter; a fit = the run with the
    debiased effect off. Whole refits are every method's procedure; f alone refitted the dropped shortcut."""
    lines = ["| method | seeds | run without it, CPU s (median) | extra with whole refits (today) "
             "| extra with f alone refitted (dropped) | load average |", "|---|---|---|---|---|---|"]
    for method, (wide, extra, load) in _debias_extra(rows).items():
        lines.append(f"| {title(method)} | {len(wide)} | {wide['off'].median():.1f} | {extra['whole']:.2f} fits | "
                     f"{extra['second-stage']:.2f} fits | {load} |")
    return "\n".join(lines)


def _debias_extra(rows) -> dict:
    """Per method: the CPU seconds by seed and mode, the median extra per mode in fits, the load range."""
    frame = rows.jsonl("debias-cost-31.jsonl")
    out = {}
    for method, part in frame.groupby("method", sort=False):
        wide = part.pivot_table(index="seed", columns="mode", values="cpu")
        extra = {mode: ((wide[mode] - wide["off"]) / wide["off"]).median() for mode in ("second-stage", "whole")}
        out[method] = (wide, extra, f"{part['load'].min():.1f}–{part['load'].max():.1f}")
    return out


@block("effect-coverage:cost-target")
def debias_cost_target(rows) -> str:
    """The issue-31 target (the debiased effect's extra cost at most one fit's worth) against the whole
    refits' rows: met or missed, with the figures."""
    extra = {method: e["whole"] for method, (_, e, _) in _debias_extra(rows).items()}
    shown = " and ".join(f"{value:.2f} fits ({title(method)})" for method, value in extra.items())
    verdict = "missed" if max(extra.values()) > 1 else "met"
    return f"with whole refits the debiased effect adds a median {shown}: the target is {verdict}"


def _days(value) -> str:
    """A number of days with a true minus sign; blank when missing."""
    return "" if pd.isna(value) else f"{value:.2f}".replace("-", "−")


@family(r"rhc-every:(?P<file>[^:]+\.csv)")
def rhc_every(rows, file: str) -> str:
    """Every method on RHC: its effect with an interval, or the line saying why not (bench/rhc_effects.py --every-method)."""
    frame = rows.csv(file)
    seconds = timed(frame)          # a time only with the load it was measured under
    lines = ["| method | ATE (days) | 95 % interval, or why none | plug-in | debiased [interval] |"
             + (f" s ({load_said(frame)}) |" if seconds else ""), "|---|---|---|---|---|" + "---|" * seconds]
    for r in frame.itertuples():
        shown = f"{_days(r.lower)} to {_days(r.upper)}" if not pd.isna(r.lower) else str(r.why)
        flagged = str(r.weak).lower() == "true"      # the record's flag: its interval is not shown (the headline's line)
        debiased = (str(r.debiased_error) if pd.isna(r.debiased) else
                    f"{_days(r.debiased)} (flagged: no interval)" if flagged else
                    f"{_days(r.debiased)} [{_days(r.debiased_lower)}, {_days(r.debiased_upper)}]")
        lines.append(f"| {title(r.method)} | {_days(r.estimate)} | {shown} | {_days(r.plug_in)} | {debiased} |"
                     + (f" {r.seconds:,.0f} |" if seconds else ""))
    return "\n".join(lines)


@block("effect-coverage:moderate-misses")
def moderate_misses(rows) -> str:
    """The issue-31 targets against the rows: each design and method whose debiased interval, where
    the flag is silent, covers outside 0.90-0.97 or has width / needed outside 0.9-1.3."""
    table = summarize(rows31(rows))
    part = table[(table["kind"] == "debiased") & fact(table["arm"].str.split().str[0], "uses_learner")]
    misses, met = [], []
    for r in part.itertuples():
        name = f"{DESIGN_TITLES.get(r.design, r.design)}, {r.arm}"
        coverage = r.coverage_strong
        if np.isnan(coverage):
            misses.append(f"{name}: every fit flagged ({r.seeds} fits)")
        elif not (0.90 <= coverage <= 0.97 and 0.9 <= r.width_ratio <= 1.3):
            misses.append(f"{name}: coverage when not flagged {coverage:.2f}, width / needed {r.width_ratio:.2f} "
                          f"({r.seeds} fits, {r.weak_share:.0%} flagged)")
        else:
            met.append(name)
    text = "Met (coverage 0.90–0.97 where not flagged, width / needed 0.9–1.3): " + ("; ".join(met) or "none") + "."
    return text + "\n\nMissed:\n\n" + "\n".join(f"- {m}" for m in misses) if misses else text


@block("rhc-every:flag")
def rhc_flag(rows) -> str:
    """What today's weak-identification flag says of RHC's debiased effects, from the proxies' F."""
    stage = rows.json("rhc-first-stage-31.json")
    bar = WEAK_FIRST_STAGE_F
    verdict = ("below it, so today every debiased effect on RHC is reported weakly identified: its estimate and "
               "standard error are shown, its interval is not, and the reason is the one line of the flag"
               if stage["f_stat"] < bar else "above it, so the flag is silent on RHC")
    return (f"the proxies' {stage['statistic']} is {stage['f_stat']:.1f}, against the flag's "
            f"bar of {bar:g}: {verdict}")


@block("effect-coverage:moderate-bias")
def moderate_bias(rows) -> str:
    """Plug-in and debiased bias per method on moderate-pcl (every fit, with or without an interval)
    against the confounded regression's (coverage-31/regression-moderate-pcl.csv) and the target
    of a quarter of it."""
    regression = rows.csv("coverage-31/regression-moderate-pcl.csv")
    reg = (regression["slope"] - regression["truth"]).groupby(regression["regression"]).mean()
    base = float(reg["y on a, a^2, x"])
    fits = rows31(rows)
    fits = fits[(fits["design"] == "moderate-pcl") & (fits["status"] == "done")]
    arms = pd.Series([arm_of(m, lr, fm) for m, lr, fm in zip(fits["method"], fits["learner"], fits["f_model"])],
                     index=fits.index)
    lines = ["| estimate | seeds | bias | bias / regression's | within a quarter |", "|---|---|---|---|---|"]
    for name, value in reg.items():
        lines.append(f"| least squares of {name.replace('y on ', 'y on (')}) | {len(regression) // len(reg)} | "
                     f"{value:+.3f} | {value / base:.2f} | |")
    for arm, part in fits.groupby(arms, sort=False):
        for kind, column in (("plug-in", "effect_plug_in"), ("debiased", "effect_debiased")):
            err = (pd.to_numeric(part[column], errors="coerce") - part["effect_truth"]).dropna()
            if len(err):
                lines.append(f"| {arm}, {kind} | {len(err)} | {err.mean():+.3f} | {err.mean() / base:.2f} | "
                             f"{'yes' if abs(err.mean()) <= base / 4 else 'no'} |")
    return "\n".join(lines).replace("| -", "| −")


FLAG_SIGNALS = {"sieve": "distance of the debiased estimate from the sieve check / √(se² + se_sieve²)",
                "correction": "size of the correction (debiased − plug-in) / se",
                "spread": "specification spread / se", "rungs": "largest distance of a basis's estimate from the debiased / se",
                "sieve_or_spread": "larger of the sieve disagreement and half the spread",
                "se_ratio": "sieve check's se / debiased se",
                "se_ratio_or_sieve": "larger of the se ratio and the sieve disagreement / 1.5"}
FLAG_BETTER = {"none": "none", "sieve": "the sieve check's", "hull": "the hull of both intervals",
               "wide": "the debiased estimate ± 1.96 × the larger se"}


def _pct(x: float) -> str:
    return "" if pd.isna(x) else f"{x:.0%}"


def _cov(x: float) -> str:
    return "" if pd.isna(x) else f"{x:.2f}"


@block("flag-search:closest")
def flag_search_closest(rows) -> str:
    """Per signal of bench/flag_search.py, the bar and interval beside a flag that come closest to issue 44's targets."""
    summary = rows.csv("flag-search/summary.csv")
    best = summary.sort_values(["distance", "bar"]).groupby("signal", sort=False).head(1)
    lines = ["| flag when | bar | interval beside a flag | strong designs flagged (most) | moderate-pcl flagged | "
             "moderate-pcl silent fits cover | moderate-pcl shown interval covers | its width / needed | short of the targets |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in best.itertuples():
        lines.append(f"| {FLAG_SIGNALS[r.signal]} | {num(r.bar)} | {FLAG_BETTER[r.better]} | "
                     f"{_pct(r.strong_flagged_max)} ({r.strong_flagged_worst}) | {_pct(r.moderate_pcl_flagged)} | "
                     f"{_cov(r.moderate_pcl_silent_coverage)} ({int(r.moderate_pcl_silent)}) | "
                     f"{_cov(r.moderate_pcl_shown_coverage)} | {_cov(r.moderate_pcl_width_ratio)} | {r.distance:.2f} |")
    return "\n".join(lines)


@block("flag-search:designs")
def flag_search_designs(rows) -> str:
    """The closest rule's figures per design, and where the other designs would put its bar."""
    summary = rows.csv("flag-search/summary.csv").sort_values(["distance", "bar"])
    top = summary.iloc[0]
    rules = rows.csv("flag-search/rules.csv")
    table = rules[(rules["signal"] == top["signal"]) & (rules["bar"] == top["bar"]) & (rules["better"] == top["better"])]
    lodo = rows.csv("flag-search/leave-one-design-out.csv").set_index("design")
    lines = [f"Flag when the {FLAG_SIGNALS[top['signal']]} exceeds {num(top['bar'])}, with the interval "
             f"'{FLAG_BETTER[top['better']]}' beside a flag (DML-CMR own f, naive, DML-CMR spline f together; rows: coverage-31, or "
             f"coverage-fonly where a design has none there):", "",
             "| design | rows | fits | flagged | weak flag | silent fits cover (fits) | shown interval covers | "
             "width / needed | bar chosen without it | flagged there | silent cover there |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table.sort_values("design").itertuples():
        left = lodo.loc[r.design]
        lines.append(f"| {DESIGN_TITLES.get(r.design, r.design)} | {r.rows} | {r.fits} | {_pct(r.flagged)} | {_pct(r.weak)} | "
                     f"{_cov(r.silent_coverage)} ({int(r.silent)}) | {_cov(r.shown_coverage)} | {_cov(r.width_ratio)} | "
                     f"{num(left['bar'])} | {_pct(left['flagged'])} | {_cov(left['silent_coverage'])} |")
    return "\n".join(lines)

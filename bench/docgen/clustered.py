"""docs/coverage.md, "Widths where clusters are respected" (issue 44, item 4): the clustered debiased
standard error taken apart (bench/clustered_width.py) and the coverage rerun with the change
(bench/effect_coverage.py --designs clustered-iv), rows in bench/results/coverage-44-2026-11-29/."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from scipy.stats import norm

from dmlcore.inference.effect_coverage import arm_of, markdown, summarize

from .registry import block

FOLDER = "coverage-44-2026-11-29"
Z = float(norm.ppf(0.975))
TARGET = (0.9, 1.3)     # issue 44's band for width / needed where the design is strong and clusters are respected
MAIN_ARMS = ("dml-cmr gb own f", "naive gb own f", "dml-cmr gb spline f")   # the DML family's debiased rows


def _fits(rows) -> pd.DataFrame:
    return rows.csv(f"{FOLDER}/fits-clustered-iv.csv")


def _parts(rows) -> pd.DataFrame:
    parts = rows.csv(f"{FOLDER}/width-parts.csv")
    learner = "gb"
    return parts.assign(arm=[arm_of(m, learner, fm if isinstance(fm, str) else None)
                             for m, fm in zip(parts["method"], parts["f_model"])])


def _per_arm(parts: pd.DataFrame) -> pd.DataFrame:
    out = []
    for arm, g in parts.groupby("arm", sort=False):
        sd = float(g["estimate"].std(ddof=1))
        row = {"arm": arm, "fits": len(g), "sd": sd, "sd_in_basis_mean": float(g["in_basis_mean"].std(ddof=1)),
               "sd_outside_mean": float(g["outside_basis_mean"].std(ddof=1))}
        for name in ("rows", "after", "true_f", "in_basis", "outside_part"):
            row[f"se_{name}"] = float(g[f"se_{name}"].mean())
        for name in ("rows", "after"):
            inside = (g["estimate"] - g["truth"]).abs() <= Z * g[f"se_{name}"]
            row[f"ratio_{name}"] = row[f"se_{name}"] / sd
            row[f"cover_{name}"] = float(inside.mean())
        out.append(row)
    order = {a: i for i, a in enumerate(["2sls", "sieve-2sls", "dml-cmr gb own f", "naive gb own f",
                                         "dml-cmr gb spline f"])}
    return pd.DataFrame(out).sort_values("arm", key=lambda s: s.map(order).fillna(99))


def _cover(p: float, n: int) -> str:
    return f"{p:.2f} ± {np.sqrt(p * (1 - p) / n):.2f}"


@block("clustered-width:parts")
def parts_table(rows) -> str:
    """Per arm: the sd of the estimates (what the width needs), the mean clustered s.e. of the score at
    f-hat (before the change), after it, at the true f, of the part of f-hat's error in f's basis, and
    how far that part moved the estimates (its mean's sd over seeds); width / needed and coverage."""
    lines = ["| method | fits | sd of estimates | s.e. before | s.e. after | s.e. at the true f "
             "| part in f's basis: s.e. / sd of its mean | part outside: s.e. / sd of its mean "
             "| width / needed before → after | coverage before → after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in _per_arm(_parts(rows)).itertuples():
        lines.append(f"| {r.arm} | {r.fits} | {r.sd:.3f} | {r.se_rows:.3f} | {r.se_after:.3f} | {r.se_true_f:.3f} | "
                     f"{r.se_in_basis:.3f} / {r.sd_in_basis_mean:.3f} | "
                     f"{r.se_outside_part:.3f} / {r.sd_outside_mean:.3f} | "
                     f"{r.ratio_rows:.2f} → {r.ratio_after:.2f} | "
                     f"{_cover(r.cover_rows, r.fits)} → {_cover(r.cover_after, r.fits)} |")
    return "\n".join(lines)


@block("clustered-width:basis")
def chosen_basis(rows) -> str:
    """Which representer basis Lepski's rule chose on the taken-apart fits."""
    parts = _parts(rows)
    share = (parts["basis"] == parts["basis"].mode().iloc[0]).mean()
    return f"{share:.0%} of the {len(parts)} fits taken apart used the same basis ({parts['basis'].mode().iloc[0]})"


@block("effect-coverage:clustered-44")
def coverage_table(rows) -> str:
    """The coverage of the clustered-iv rerun with the change (bench/effect_coverage.py)."""
    return markdown(summarize(_fits(rows)))


@block("effect-coverage:clustered-44-verdict")
def verdict(rows) -> str:
    """The target's rows against issue 44's band for width / needed."""
    table = summarize(_fits(rows)).query("kind == 'debiased'").set_index("arm")
    out = []
    for arm in MAIN_ARMS:
        if arm not in table.index:
            continue
        r = table.loc[arm]
        word = "met" if TARGET[0] <= r["width_ratio"] <= TARGET[1] else "missed"
        out.append(f"{arm}: width / needed {r['width_ratio']:.2f}, coverage {r['coverage']:.3f} ± "
                   f"{r['coverage_se']:.3f} over {int(r['seeds'])} seeds ({word})")
    return "; ".join(out)


@block("effect-coverage:clustered-44-run")
def run_facts(rows) -> str:
    """Seeds done, when, and the machine's 1-minute load while the rerun ran (run.log, load.txt)."""
    fits = _fits(rows)
    done = fits[fits["status"] == "done"]
    per_arm = done.groupby("arm")["seed"].nunique()
    log = rows.text(f"{FOLDER}/run.log")
    load = rows.csv(f"{FOLDER}/load.csv")
    start = re.search(r"started ([^,\s]+)", log)
    seeds = f"{per_arm.min()}" if per_arm.min() == per_arm.max() else f"{per_arm.min()}–{per_arm.max()}"
    return (f"{seeds} seeds per method (seeds {done['seed'].min()}–{done['seed'].max()}), "
            f"{len(done)} fits, started {start.group(1) if start else 'see run.log'}, 1-minute load "
            f"{load['load_1min'].min():.1f}–{load['load_1min'].max():.1f} on {int(load['cores'].iloc[0])} cores. "
            f"At {per_arm.min()} seeds a width / needed carries a Monte-Carlo relative standard error of about "
            f"{1 / np.sqrt(2 * (per_arm.min() - 1)):.0%} (that of an sd, 1/√(2(n − 1)))")


@block("clustered-width:reading")
def reading(rows) -> str:
    """The parts table read for DML-CMR with its own f: how much of the clustered s.e. each part carried,
    against how far its mean moved the estimates across seeds."""
    r = _per_arm(_parts(rows)).set_index("arm").loc["dml-cmr gb own f"]
    return (f"for DML-CMR with its own f, the part in b alone had a clustered standard error of "
            f"{r.se_in_basis:.3f}, while its mean moved the estimates by a standard deviation of "
            f"{r.sd_in_basis_mean:.3f} across the {int(r.fits)} seeds; the part outside b alone, "
            f"{r.se_outside_part:.3f} against {r.sd_outside_mean:.3f}")

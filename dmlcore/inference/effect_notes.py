"""Three short notes that go beside an effect wherever one is shown (the Results page's effect
table and its download, the CLI's summary line): whether the weak-identification flag fired and
why, the specification spread, and how the intervals treat clusters. They read a run record's
``effect`` (:func:`dmlcore.runs.average_effect.effect_record`); nothing is computed here.
"""

from __future__ import annotations

import numpy as np

from dmlcore.stats.covariance import cluster_columns
from dmlcore.inference.debiased_effect import WEAK_FIRST_STAGE_F, WEAK_STRENGTH
from dmlcore.inference.sieve_dimension import SIEVE_GAP_BAR, SIEVE_SE_RATIO

NOT_CLUSTERED = "not clustered (rows independent)"


def identification_note(effect: dict) -> str:
    """The flag of the debiased effect in a few words, with the numbers it was checked on against
    their bars (:func:`dmlcore.inference.debiased_effect.weak_reason` decides): "flagged: first-stage F 5.03 < 10",
    "not flagged: first-stage F 244 ≥ 10, representer strength 2.27e+03 ≥ 10, sieve effect's s.e. / this
    one's 1.1 ≤ 1.5" (the sieve check of :mod:`dmlcore.inference.sieve_dimension`; its
    reason when it fires) (the first stage's
    statistic named as the diagnostics chose it: "effective F (clustered, 24 clusters)"), with the
    one line saying the first stage was not checked when its diagnostics failed, or why nothing was
    checked."""
    debiased = effect.get("debiased")
    if not debiased:
        return "not checked: no debiased effect"
    checks = [(debiased.get("first_stage_statistic") or "first-stage F", debiased.get("first_stage_f"),
               WEAK_FIRST_STAGE_F), ("representer strength", debiased.get("strength"), WEAK_STRENGTH)]
    checks = [(name, value, bar) for name, value, bar in checks if value is not None and np.isfinite(value)]
    if debiased.get("weakly_identified"):
        below = [f"{name} {value:.3g} < {bar:g}" for name, value, bar in checks if value < bar]
        return "flagged: " + (", ".join(below) if below else debiased.get("weak_reason") or "see the warning")
    if debiased.get("sieve_flag"):
        return "flagged: " + debiased["sieve_flag_reason"]
    text = "not flagged: " + ", ".join(f"{name} {value:.3g} ≥ {bar:g}" for name, value, bar in checks)
    if debiased.get("sieve_se_ratio") is not None:
        text += f", sieve effect's s.e. / this one's {debiased['sieve_se_ratio']:.3g} ≤ {SIEVE_SE_RATIO:g}"
    if debiased.get("sieve_gap") is not None and np.isfinite(SIEVE_GAP_BAR):
        text += f", its distance from the sieve effect {debiased['sieve_gap']:.3g} s.e. ≤ {SIEVE_GAP_BAR:g}"
    if debiased.get("unchecked_reason"):
        text += "; " + debiased["unchecked_reason"]
    return text


def spread_note(effect: dict) -> str:
    """The specification spread (``effect["spread"]``) in a few words: "low to high, k
    specifications, r s.e.", ": sensitive" when r exceeds the bar; or that there is none."""
    spread = effect.get("spread")
    if not spread:
        return "none: no debiased effect"
    if len(spread["specifications"]) < 2:            # the headline's own basis only: nothing to compare
        return "not measured: one specification only"
    text = (f"{spread['low']:.4g} to {spread['high']:.4g}, {len(spread['specifications'])} specifications, "
            f"{spread['range_over_se']:.2g} s.e.")
    return text + (": sensitive" if spread.get("sensitive") else "")


def clusters_note(effect: dict) -> str:
    """How the effect's intervals treat clusters (``effect["clusters"]``) in a few words, or
    :data:`NOT_CLUSTERED`."""
    clusters = effect.get("clusters")
    if not clusters:
        return NOT_CLUSTERED
    columns = cluster_columns(clusters["column"])
    by = " and ".join(f"'{c}'" for c in columns)
    text = f"clustered by {by} ({clusters['count']:,} clusters{' in the smaller' if len(columns) == 2 else ''})"
    refused = [e["interval"] for e in clusters.get("intervals", []) if e["treatment"] == "refused"]
    if refused:
        text += "; refused: " + ", ".join(refused)
    return text


def notes(effect: dict) -> dict[str, str]:
    """{"identification", "spread", "clusters"}: the three notes of ``effect``."""
    return {"identification": identification_note(effect), "spread": spread_note(effect),
            "clusters": clusters_note(effect)}

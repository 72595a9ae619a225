"""The sieve effect of data-driven dimension: f fitted in a ladder of nested sieve bases, the rung chosen by the data.

The effect theta = E[m(W; f)] (:func:`dmlcore.runs.average_effect.contrast`: the average derivative, the
average effect of a 0/1 treatment, the proximal average slope) of a sieve minimum-distance fit of f in
bases b(X) with instruments q(C) (Sieve 2SLS; Chen and Pouzo 2015) has the influence function

    psi_i = m(W_i; b'beta) + xi(C_i) (Y_i - b(X_i)'beta),   xi = q'gamma,  gamma = Q^-1 G (G'Q^-1 G)^-1 M,

the representer of :mod:`dmlcore.inference.debiased_effect` in the same bases. Here beta and gamma are
cross-fitted (the row's fold left out: :func:`~dmlcore.inference.debiased_effect.cross_fitted_sieve`,
:func:`~dmlcore.inference.debiased_effect.cross_fitted_xi`), and the estimate is mean_i psi_i with the
standard error of that mean (from cluster sums with clusters, :func:`dmlcore.stats.clusters.mean_se`).
No learner is fitted and no truth is used: the fit is a few linear solves per rung.

Its bias is set by the sieve's dimension J: too small a basis cannot represent f (a linear fit of a
quadratic f), too large a one is noisy, and a penalised large one is shrunk toward the smooth part of
the confounded regression (the spline Sieve 2SLS's plug-in on moderate proxies, docs/coverage.md). The
dimension is chosen as in the Lepski-type rule of Chen, Christensen and Kankanala (2024, ReStud), in
its simplest form for one scalar functional: over the nested ladder :data:`DD_LADDER` (f linear in the
treatment, then a cubic, then cubic splines with 1, 2, 3, 4 interior knots, each with instrument bases
at least as rich), the rung is the first whose estimate agrees with the estimate of every richer rung
within :data:`DD_Z` standard errors of their difference, sd_i(psi_i - psi'_i) / sqrt(n): a richer
rung removes bias only by moving the estimate, and a move smaller than the noise of the difference is
not evidence of bias. Where no rung agrees with all richer ones, the richest is taken. Each rung is
unpenalised: the dimension is the regularisation. Rungs whose instruments cannot move every function
of f's basis (G'Q^-1G singular in M's direction) or that need more rows per function of C are skipped.

On proximal data the ladder goes on with two rungs that multiply the treatment's term by the outcome proxy's
in f's basis and by the treatment proxies' in the instruments (``Rung.proxies``: a bridge h(a, w) not
additive in treatment and proxy); on IV data they repeat the additive rungs and are skipped, so an IV ladder
is unchanged. Where a product rung's strength is below :data:`NOT_IDENTIFIED` the data cannot check the
additive bridge the other rungs rest on (:func:`additivity_unchecked`): the sieve effect is weakly identified
with that reason (``unchecked``), and :func:`flag_reason` flags the debiased effect with nothing to read. On
demand-pcl, whose bridge is such a product, this happens on almost every seed (docs/coverage.md: its effect
needs the bridge where price and views rarely meet).

:func:`sieve_effect` returns the effect with its interval, the chosen rung and why, and every rung's
estimate. :func:`add_sieve_effect` puts it beside a run's debiased effect (``effect.debiased.sieve_dimension``,
an entry of ``effect.intervals``) with the check :func:`flag_reason`: the debiased effect is flagged when the
sieve effect's standard error is more than :data:`SIEVE_SE_RATIO` times its own: its interval is far narrower
than a fit of f that its bases can represent allows, as where the learner's f-hat sits near the confounded
regression and its residuals hide its error; or when the two estimates are more than :data:`SIEVE_GAP_BAR`
standard errors of their difference apart (``sieve_gap``, recorded beside the flag; infinite: no bar on it). Both
bars are calibrated on the coverage rows of bench/sieve_flag.py (docs/coverage.md, "The sieve effect of
data-driven dimension", says which it chose and on what rows; tests/test_sieve_flag.py recomputes them). Where
the flag fires, the sieve effect's interval is the one to read.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from dmlcore.stats import resample
from dmlcore.stats.clusters import groups_of, mean_se
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.inference.debiased_effect import (RIESZ_FOLDS, LEPSKI_Z, WEAK_STRENGTH, LadderBases,
                                               Rung, check_spline_data, cross_fitted_sieve,
                                               cross_fitted_xi, lepski, per_row, smoothness, treatment_scale)

DD_LADDER = (Rung(None, 3), Rung(0, 3), Rung(1, 4), Rung(2, 4), Rung(3, 5), Rung(4, 6),
             Rung(None, 3, proxies=True), Rung(0, 3, proxies=True))
# the last two rungs multiply the treatment's term by the outcome proxy's (and the instruments' by the treatment
# proxies'): on proximal data they let the bridge h(a, w) be non-additive; elsewhere they are the additive rungs
# again and are skipped as repeats, so an IV ladder is the six additive rungs
DD_Z = LEPSKI_Z        # the agreement bar in standard errors of the difference (the representer ladder's)
DD_PENALTY = 0.0       # unpenalised rungs: the dimension is the regularisation
NOT_IDENTIFIED = 1.0    # a product rung's strength below this: its products carry no information (an F of no instrument)
SIEVE_SE_RATIO = 1.5   # flag when the sieve effect's s.e. exceeds the debiased one's this many times (calibrated)
SIEVE_GAP_BAR = 3.0    # flag when the two estimates are this many s.e. of their difference apart (calibrated)
SOURCE = "sieve effect, data-driven dimension"   # its entry's ``source`` in ``effect.intervals``

def sieve_effect(data: CausalData, plan, *, level: float = 0.95, seed: int = DEFAULTS.seed,
                 folds: int = RIESZ_FOLDS, ladder=DD_LADDER, groups: np.ndarray | None = None,
                 z: float = DD_Z, penalty: float = DD_PENALTY, bases: LadderBases | None = None) -> dict:
    """The sieve effect of data-driven dimension on ``data`` at the contrast ``plan`` (module notes).

    ``groups``: the rows' cluster numbers (:func:`dmlcore.stats.clusters.groups_of`), which the folds keep
    whole and whose sums give every standard error. Returns {"estimate", "std_error", "ci_lower",
    "ci_upper", "plug_in" (the mean of m(W; f-sieve), uncorrected), "strength", "weakly_identified", "unchecked"
    (:func:`additivity_unchecked`),
    "rung" (its position in the ladder), "basis", "functions" ([size of b, size of q]), "why" (one line),
    "rungs": [{"basis", "functions", "estimate", "std_error", "plug_in", "strength"} or {"basis",
    "skipped"}], "gaps" (:func:`gaps` of the fitted rungs), "interval"}. A DMLCoreError when the data cannot
    take spline bases or no rung identifies the effect. ``penalty`` > 0 smooths each rung's splines as the
    representer's (:func:`~dmlcore.inference.debiased_effect.riesz_gamma`); 0, the default, does not. ``bases``:
    the rungs' bases already built on ``data`` and ``plan`` (:class:`~dmlcore.inference.debiased_effect.LadderBases`,
    shared with the debiased effect's ladder; None: built here).
    """
    n = check_spline_data(data, folds, "the sieve effect")
    y = data.table[data.outcome].to_numpy(dtype=float)
    used = np.isfinite(per_row(plan, n, np.zeros(len(plan.weights))))
    fold_of = resample.fold_labels(n, folds, seed, "representer", groups)
    scale = treatment_scale(data, plan.treatment)
    bases = bases if bases is not None else LadderBases(data, plan)
    results = []
    for position, rung, b, entry, values in bases.rungs(ladder, folds, used):
        entry = {"rung": position, **entry, **({"products": True} if rung.proxies else {})}
        if values is None:
            results.append(entry)
            continue
        bx, qc, mb = values
        grams = bases.grams(rung, fold_of)
        omega = smoothness(b) if penalty > 0 else None
        try:
            xi = cross_fitted_xi(bx, qc, mb, fold_of, omega, penalty / np.sqrt(n), grams)
        except DMLCoreError as exc:
            results.append({**entry, "skipped": str(exc)})
            continue
        f_s, m_s = cross_fitted_sieve(bx, qc, mb, y, fold_of, omega, penalty / np.sqrt(n), grams)
        psi = m_s + xi * (y - f_s)
        results.append({**entry, "psi": psi, "estimate": float(psi.mean()), "std_error": mean_se(psi, groups),
                        "plug_in": float(m_s[used].mean()),
                        "strength": float(n / max(np.mean(xi ** 2) * scale, 1e-300))})
    fitted = [r for r in results if "psi" in r]
    if not fitted:
        reasons = list(dict.fromkeys(r["skipped"] for r in results))
        raise DMLCoreError(f"no sieve rung identifies it: {len(results)} tried; {reasons[0]}")
    chosen, why = choose(fitted, groups, z)
    g = gaps(fitted, groups)
    zq = float(norm.ppf(0.5 + level / 2))
    est, se = chosen["estimate"], chosen["std_error"]
    weak = not (np.isfinite(se) and chosen["strength"] >= WEAK_STRENGTH)
    unchecked = additivity_unchecked(results)
    return {"estimate": est, "std_error": se, "ci_lower": est - zq * se, "ci_upper": est + zq * se,
            "plug_in": chosen["plug_in"], "strength": chosen["strength"], "weakly_identified": weak or bool(unchecked),
            "unchecked": unchecked,
            "rung": chosen["rung"], "basis": chosen["basis"], "functions": chosen["functions"], "why": why,
            "rungs": [{k: v for k, v in r.items() if k != "psi"} for r in results],
            "gaps": [[float(v) for v in line] for line in g],
            "interval": (f"sieve effect of data-driven dimension: Sieve 2SLS in {chosen['basis']} "
                         f"({chosen['functions'][0]} functions of f, {chosen['functions'][1]} of C), cross-fitted over "
                         f"{folds} folds and corrected with its representer; estimate -/+ {zq:.2f} x sd(score)/sqrt(n)")}


def additivity_unchecked(results: list[dict], bar: float = NOT_IDENTIFIED) -> str | None:
    """Why the data cannot check the rungs' additive bridge, or None: on proximal data, a rung with treatment x
    proxy products (module notes) whose representer's strength is below ``bar`` (:data:`NOT_IDENTIFIED`). A rung
    skipped (too few rows, or G'Q^-1G singular in these bases) is passed over: it says nothing either way."""
    for r in results:
        if r.get("products") and "strength" in r and not r["strength"] >= bar:
            return (f"the treatment x proxy products (rung {r['rung']}) have strength {r['strength']:.2g} < {bar:g}, "
                    f"not identified: the data cannot check the additive bridge the effect rests on")
    return None


def gaps(fitted: list[dict], groups: np.ndarray | None = None) -> np.ndarray:
    """|estimate_j - estimate_k| / se(psi_j - psi_k) for every pair of fitted rungs (0 on the diagonal)."""
    out = np.zeros((len(fitted), len(fitted)))
    for j, a in enumerate(fitted):
        for k in range(j + 1, len(fitted)):
            b = fitted[k]
            se = mean_se(a["psi"] - b["psi"], groups)
            out[j, k] = out[k, j] = abs(a["estimate"] - b["estimate"]) / se if se > 0 else 0.0
    return out


def choose(fitted: list[dict], groups: np.ndarray | None = None, z: float = DD_Z) -> tuple[dict, str]:
    """The rung :func:`~dmlcore.inference.debiased_effect.lepski` chooses with the bar ``z`` (the first within
    ``z`` standard errors of the difference of every richer rung's; the richest when none is), and why, in one
    line."""
    rung = lepski(fitted, groups, z)
    j = next(i for i, r in enumerate(fitted) if r is rung)
    g = gaps(fitted, groups)
    richer = g[j, j + 1:]
    agree = (f"within {z:g} s.e. of the {len(richer)} richer rung{'s' * (len(richer) != 1)} "
             f"(largest gap {richer.max():.2g} s.e.)" if len(richer) else "the richest rung")
    before = ""
    if j > 0:
        k = j + int(np.argmax(g[j - 1, j:]))
        before = f"; the rung below differs from rung {fitted[k]['rung']} by {g[j - 1, k]:.2g} s.e."
    return rung, f"rung {rung['rung']} ({rung['functions'][0]} functions of f): {agree}{before}"


def flag_reason(debiased: dict, dd: dict, ratio_bar: float = SIEVE_SE_RATIO,
                gap_bar: float = SIEVE_GAP_BAR) -> str | None:
    """Why the debiased effect ``debiased`` ({"estimate", "std_error"}) is not to be read beside the sieve effect
    ``dd`` (:func:`sieve_effect`), in one line of at most 200 characters, or None (module notes): the sieve effect's
    ``unchecked`` reason (nothing to read), its standard error over ``ratio_bar`` times the debiased one's, or the
    two estimates more than ``gap_bar`` standard errors of their difference apart."""
    if dd.get("unchecked"):
        return f"{dd['unchecked']}; no interval to read"
    se, dse = float(debiased["std_error"]), float(dd["std_error"])
    ratio = dse / se if se > 0 else float("inf")
    read = f"read the sieve effect {dd['estimate']:.4g} [{dd['ci_lower']:.4g}, {dd['ci_upper']:.4g}]"
    if ratio > ratio_bar:
        return (f"its s.e. is {1 / ratio:.2g} of the sieve effect's (bar 1/{ratio_bar:g}): its interval may leave out "
                f"f-hat's own error; {read}")
    gap = abs(float(debiased["estimate"]) - float(dd["estimate"])) / float(np.hypot(se, dse))
    if gap > gap_bar:
        return (f"it is {gap:.2g} s.e. of their difference from the sieve effect (bar {gap_bar:g}): one of the two is "
                f"biased; {read}")
    return None


def add_sieve_effect(effect: dict, data: CausalData, plan, level: float = 0.95, cluster: str | None = None,
                     bases: LadderBases | None = None) -> dict:
    """``effect`` (a run record's, after :func:`dmlcore.inference.debiased_effect.add_debiased`) with the sieve effect
    of data-driven dimension beside its debiased effect: ``debiased["sieve_dimension"]`` (estimate, std_error,
    interval, plug_in, rung, basis, why; ``unchecked`` where the additive bridge cannot be checked),
    ``debiased["sieve_flag"]`` and ``sieve_flag_reason`` (:func:`flag_reason`;
    not checked where the weak-identification flag fired, which shows no interval), ``sieve_gap`` and
    ``sieve_se_ratio`` (the two numbers the flag reads), an entry of ``intervals`` (``source`` :data:`SOURCE`), and
    the reason as ``effect["warning"]`` when it fires and no other warning is there. Without a debiased effect
    nothing is added; when the sieve effect cannot be computed, ``debiased["sieve_dimension_error"]`` says why.
    ``bases``: the rungs' bases the debiased effect built (:class:`~dmlcore.inference.debiased_effect.LadderBases`)."""
    debiased = effect.get("debiased")
    if not debiased:
        return effect
    try:
        dd = sieve_effect(data, plan, level=level, groups=groups_of(data.table, cluster), bases=bases)
    except DMLCoreError as exc:
        debiased.update(sieve_dimension=None, sieve_flag=None, sieve_dimension_error=f"no sieve effect: {exc}.")
        return effect
    kept = {k: dd[k] for k in ("estimate", "std_error", "ci_lower", "ci_upper", "plug_in", "strength",
                               "weakly_identified", "rung", "basis", "functions", "why", "interval")}
    if dd["unchecked"]:                  # only where a product rung is not identified: other records keep their keys
        kept["unchecked"] = dd["unchecked"]
    se, dse = float(debiased["std_error"]), dd["std_error"]
    reason = None if debiased.get("weakly_identified") else flag_reason(debiased, dd)
    debiased.update(sieve_dimension=kept, sieve_flag=reason is not None, sieve_flag_reason=reason,
                    sieve_gap=abs(debiased["estimate"] - dd["estimate"]) / float(np.hypot(se, dse)),
                    sieve_se_ratio=dse / se if se > 0 else float("inf"))
    effect.setdefault("intervals", []).append({"interval": dd["interval"], "ci_lower": dd["ci_lower"],
                                               "ci_upper": dd["ci_upper"], "estimate": dd["estimate"],
                                               "estimand": plan.estimand, "source": SOURCE,
                                               "weakly_identified": dd["weakly_identified"]})
    if reason and not effect.get("warning"):
        effect["warning"] = f"flagged: {reason}"
    return effect

"""The specification spread across learner families: the same method's debiased effect with each
family of learners it offers, beside the headline of the fit as configured.

A fit's record already carries the spread over what it computed
(:func:`dmlcore.inference.debiased_effect.specification_spread`: the representer bases, the cross-fits of a
repeated cross-fitting). :func:`learner_spread` refits the method once per learner family
(``FAMILIES``: boosted trees, random forests, networks, each with its own second stage and with
the spline one) and :func:`with_families` adds those effects to the record's spread, so that a
reader sees how far the answer moves with choices the data cannot settle. Each refit costs a
whole fit with its debiased effect; nothing here runs unless asked.
"""

from __future__ import annotations

import numpy as np

from dmlcore.data.roles import CausalData
from dmlcore.inference.debiased_effect import SPREAD_SE
from dmlcore.errors import DMLCoreError, FitDiverged
from dmlcore.estimators import METHODS
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.runs.fit import fit_run

FAMILIES = (("gb", None), ("gb", "sieve"), ("rf", None), ("nn", None))   # (learner, f_model)


def learner_spread(data: CausalData, method: str, fit_kwargs: dict, families=FAMILIES, *, seed: int = DEFAULTS.seed,
                   truth=None) -> list[dict]:
    """The debiased effect of ``method`` on ``data`` with each (learner, f_model) of ``families``
    (the other settings from ``fit_kwargs``): [{"kind": "learner family", "what", "estimate",
    "std_error"} or {"kind", "what", "error"}]. A method without a learner choice has one family
    (itself): an empty list."""
    if not METHODS[method].uses_learner:
        return []
    out = []
    for learner, f_model in families:
        if f_model is not None and "f_model" not in METHODS[method].settings:
            continue                       # a method without a second stage (the regression): its own f only
        what = f"{learner} nuisances, {'spline f' if f_model == 'sieve' else 'own f'}"
        kwargs = {**fit_kwargs, "learner": learner, "f_model": f_model, "heldout_folds": 0}
        try:
            effect = fit_run(data, method, seed=seed, truth=truth, **kwargs).record["effect"]
        except (DMLCoreError, FitDiverged) as exc:
            out.append({"kind": "learner family", "what": what, "error": str(exc).split("\n")[0][:200]})
            continue
        debiased = effect.get("debiased") or {}
        if debiased.get("estimate") is None:
            out.append({"kind": "learner family", "what": what,
                        "error": (effect.get("debiased_error") or "no debiased effect")[:200]})
            continue
        out.append({"kind": "learner family", "what": what, "estimate": debiased["estimate"],
                    "std_error": debiased["std_error"]})
    return out


def with_families(spread: dict, families: list[dict]) -> dict:
    """``spread`` (a record's ``effect.spread``) with the learner families' effects added and its
    range, ``sensitive`` flag and line recomputed."""
    specs = list(spread["specifications"]) + list(families)
    values = np.array([spread["estimate"]] + [s["estimate"] for s in specs if "estimate" in s], dtype=float)
    low, high, se = float(values.min()), float(values.max()), float(spread["std_error"])
    ratio = (high - low) / se if se > 0 else float("inf")
    sensitive = bool(ratio > SPREAD_SE)
    counted = sum("estimate" in s for s in families)
    text = (f"across {len(values) - 1} specifications (representer bases, cross-fits, {counted} learner families) "
            f"the effect ranges {low:.4g} to {high:.4g}, {ratio:.2g} standard errors"
            + (f": more than {SPREAD_SE:g}, so the choice of specification matters here" if sensitive else ""))
    return {**spread, "specifications": specs, "low": low, "high": high, "range_over_se": ratio,
            "sensitive": sensitive, "text": text}

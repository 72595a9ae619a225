"""Instrument strength diagnostics for IV problems."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import f as f_dist
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import KFold

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.tsls import check_full_rank, dummy_columns, with_dummies

# Thresholds for the first-stage F of one treatment, with their sources.
WEAK_F = 10.0            # Staiger & Stock (1997): the rule of thumb below which an instrument is weak
STOCK_YOGO_SIZE_10 = {1: 16.38, 2: 19.93, 3: 22.30, 4: 24.58}
"""Stock & Yogo (2005), Table 5.2: with one treatment and 1-4 instruments, a first-stage F above
this keeps the true size of a nominal 5 % 2SLS Wald test at most 10 %."""
LEE_T_TEST_F = 104.7     # Lee, McCrary, Moreira & Porter (2022): the usual 5 % t-test is valid above this F
STRENGTH_LEVELS = ("weak", "moderate", "strong")


@dataclass(frozen=True)
class Strength:
    """How strong an instrument is by its first-stage F: ``level`` is "weak" (F < WEAK_F),
    "moderate" (WEAK_F <= F < LEE_T_TEST_F) or "strong"; ``text`` says what that means."""

    level: str
    f_stat: float
    text: str


def strength_label(f_stat: float, n_instruments: int = 1) -> Strength:
    """The strength label of a first-stage F statistic, the one used by Roles, Learn and the CLI."""
    f_stat = float(f_stat)
    sy = STOCK_YOGO_SIZE_10.get(int(n_instruments))
    sy_text = (f"; Stock-Yogo's critical value for at most 10 % size distortion with {n_instruments} "
               f"instrument(s) is {sy:g}" if sy is not None else "")
    if not f_stat >= WEAK_F:  # NaN counts as weak
        return Strength("weak", f_stat, (
            f"weak: first-stage F {f_stat:,.1f} is below {WEAK_F:g}, the Staiger-Stock rule of thumb{sy_text}. "
            f"2SLS is then biased toward the confounded regression and its usual confidence interval is "
            f"too narrow; report a weak-instrument-robust interval (Anderson-Rubin) and look for a "
            f"stronger instrument."))
    if f_stat < LEE_T_TEST_F:
        passes = "" if sy is None else (f" and {'above' if f_stat >= sy else 'below'} Stock-Yogo's {sy:g}")
        return Strength("moderate", f_stat, (
            f"moderate: first-stage F {f_stat:,.1f} is above the rule of thumb {WEAK_F:g}{passes}, but "
            f"below {LEE_T_TEST_F:g}: a usual 5 % t-test of 2SLS then rejects a true value more often than "
            f"5 % of the time (Lee et al. 2022). Prefer Anderson-Rubin intervals."))
    return Strength("strong", f_stat, (
        f"strong: first-stage F {f_stat:,.1f} is above {LEE_T_TEST_F:g}, where the usual 5 % t-test of "
        f"2SLS keeps its size (Lee et al. 2022)."))


def first_stage(data: CausalData, nonparametric: bool = True, folds: int = 5,
                max_rows: int = 20_000, random_state: int = 0) -> dict:
    """First-stage strength of the instruments, linear and nonparametric.

    Linear part (homoskedastic, constant and covariates partialled out): for each treatment,
    the partial R^2 of the excluded instruments and the F statistic of their joint
    significance, ``(R2p / q) / ((1 - R2p) / (n - q - k))`` with q instruments and k
    covariates plus the constant. A categorical covariate or instrument (``data.categorical``)
    enters as dummies of its levels, the first left out, and counts once per dummy in q or k.
    These equal ``partial.rsquared`` and ``f.stat`` of
    ``linearmodels`` ``IV2SLS(...).fit(cov_type="unadjusted", debiased=True).first_stage
    .diagnostics``. The Cragg-Donald Wald F (Stock-Yogo's statistic; equal to F with one
    treatment) is ``(n - q - k) / q * r2 / (1 - r2)`` with r2 the smallest squared canonical
    correlation between the partialled treatments and instruments.

    Nonparametric part: the 5-fold held-out R^2 of a small HistGradientBoostingRegressor of
    the treatment on (instruments, covariates) minus that on the covariates alone (the fold
    mean without covariates), on at most ``max_rows`` random rows; the trees split category
    codes directly.

    ``weak`` is True when any F (or the Cragg-Donald F) is below 10, the Staiger-Stock rule
    of thumb; ``strength`` is :func:`strength_label` of the smallest of them.

    Returns
    -------
    dict
        ``{"n", "instruments", "covariates", "treatments": {name: {"partial_r2", "f_stat",
        "f_pvalue", "df_num", "df_denom", "np_r2", "np_r2_covariates", "np_r2_gain"}},
        "cragg_donald_f", "weak", "strength": {"level", "f_stat", "text"}, "warning"}``; the
        ``np_*`` entries are None when ``nonparametric`` is False. ``warning`` is None unless
        ``weak``.
    """
    if not isinstance(data, CausalData):
        raise DMLCoreError(f"first_stage expects a CausalData; got {type(data).__name__}.")
    if data.problem != "iv":
        raise DMLCoreError(f"First-stage diagnostics are for IV problems; this data defines a "
                           f"'{data.problem}' problem. Use problem='iv' with an instrument column.")
    # categorical covariates and instruments enter as dummies (the first level left out), as in 2SLS
    levels = {c: np.unique(data.table[c].to_numpy(dtype=float)) for c in data.categorical
              if c in data.covariates or c in data.instrument}
    table = with_dummies(data.table, levels, drop_first=True)
    covariates, instruments = (dummy_columns(cols, levels, drop_first=True)
                               for cols in (data.covariates, data.instrument))
    n, q = len(table), len(instruments)
    a = table[data.treatment].to_numpy(dtype=float)
    z = table[instruments].to_numpy(dtype=float)
    x = np.column_stack([np.ones(n), table[covariates].to_numpy(dtype=float)])
    check_full_rank(np.column_stack([x, z]), ["const"] + covariates + instruments, "covariates and instruments")
    a_t, z_t = _residualize(a, x), _residualize(z, x)
    fitted = z_t @ np.linalg.lstsq(z_t, a_t, rcond=None)[0]
    df_denom = n - q - x.shape[1]
    partial = np.sum(fitted ** 2, axis=0) / np.sum(a_t ** 2, axis=0)
    # smallest squared canonical correlation between the partialled treatments and instruments
    r2_min = np.linalg.svd(np.linalg.qr(a_t)[0].T @ np.linalg.qr(z_t)[0], compute_uv=False).min() ** 2
    with np.errstate(divide="ignore"):
        f_stat = partial / q / ((1.0 - partial) / df_denom)
        cragg_donald = float(df_denom / q * r2_min / (1.0 - r2_min))
    np_scores = (_nonparametric(data.table, data, folds, max_rows, random_state) if nonparametric
                 else {name: (None, None) for name in data.treatment})
    treatments = {}
    for j, name in enumerate(data.treatment):
        full, base = np_scores[name]
        treatments[name] = {
            "partial_r2": float(partial[j]), "f_stat": float(f_stat[j]),
            "f_pvalue": float(f_dist.sf(f_stat[j], q, df_denom)),
            "df_num": q, "df_denom": df_denom,
            "np_r2": full, "np_r2_covariates": base,
            "np_r2_gain": None if full is None else full - base,
        }
    label = strength_label(min(f_stat.min(), cragg_donald), q)
    weak = label.level == "weak"
    return {"n": n, "instruments": list(data.instrument), "covariates": list(data.covariates),
            "treatments": treatments, "cragg_donald_f": cragg_donald, "weak": weak,
            "strength": {"level": label.level, "f_stat": label.f_stat, "text": label.text},
            "warning": _warning(data, treatments, cragg_donald, label) if weak else None}


def _residualize(v, x):
    return v - x @ np.linalg.lstsq(x, v, rcond=None)[0]


def _nonparametric(table, data, folds, max_rows, random_state):
    """{treatment: (held-out R^2 on instruments + covariates, on covariates only)}."""
    rng = np.random.default_rng(random_state)
    rows = rng.choice(len(table), max_rows, replace=False) if len(table) > max_rows else slice(None)
    sub = table.iloc[rows]
    split = list(KFold(folds, shuffle=True, random_state=random_state).split(sub))
    out = {}
    for name in data.treatment:
        target = sub[name].to_numpy(dtype=float)
        full = _held_out_r2(sub[data.instrument + data.covariates].to_numpy(dtype=float), target,
                            split, random_state)
        base = (_held_out_r2(sub[data.covariates].to_numpy(dtype=float), target, split,
                             random_state) if data.covariates else
                _held_out_r2(None, target, split, random_state))
        out[name] = (full, base)
    return out


def _held_out_r2(features, target, split, random_state):
    """Pooled out-of-fold R^2; the training-fold mean when ``features`` is None."""
    pred = np.empty_like(target)
    for train, test in split:
        if features is None:
            pred[test] = target[train].mean()
            continue
        model = HistGradientBoostingRegressor(max_iter=100, max_leaf_nodes=15,
                                              early_stopping=False, random_state=random_state)
        pred[test] = model.fit(features[train], target[train]).predict(features[test])
    return float(1.0 - np.sum((target - pred) ** 2) / np.sum((target - target.mean()) ** 2))


def _warning(data, treatments, cragg_donald, label):
    instruments = ", ".join(data.instrument)
    parts = []
    for name, d in treatments.items():
        if d["f_stat"] < WEAK_F:
            parts.append(f"the first-stage F for '{name}' is {d['f_stat']:.2f} (partial R^2 "
                         f"{d['partial_r2']:.4f})")
    if not parts:
        parts.append(f"the Cragg-Donald F is {cragg_donald:.2f}")
    text = f"The instrument(s) {instruments} look {label.text} Here {'; '.join(parts)}."
    gains = [d["np_r2_gain"] for d in treatments.values() if d["np_r2_gain"] is not None]
    if gains and max(gains) > 0.05:
        text += (f" A flexible first stage explains more (held-out R^2 gain {max(gains):.3f}): "
                 f"the instruments may act nonlinearly, which nonparametric estimators can use.")
    return text

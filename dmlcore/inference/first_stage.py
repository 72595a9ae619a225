"""Instrument strength diagnostics: the first stage of an IV problem, the proxies' of a PCL one.

In IV the instruments Z must move the treatment A given the covariates X. In proximal causal
learning (PCL) the linear outcome bridge is an IV regression with the outcome proxies W as the
endogenous columns and the treatment proxies Z as instruments (the treatment and covariates are
exogenous): its "first stage" is how strongly Z predicts W given (A, X). :func:`first_stage`
measures both, linearly, with the same labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import f as f_dist
from sklearn.ensemble import HistGradientBoostingRegressor

from dmlcore.data.roles import ROLE_NAMES, CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.tsls import _RANK_TOL, check_full_rank, check_not_absorbed, dummy_columns, with_dummies
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.stats import resample
from dmlcore.stats.covariance import FEW_CLUSTERS, check_covariance
from dmlcore.stats.fixed_effects import transform_of
from dmlcore.inference.linear_iv import first_stage_inference

# Thresholds of a first-stage F with one endogenous column, with their sources.
WEAK_F = 10.0            # Staiger & Stock (1997): the rule of thumb below which an instrument is weak
STOCK_YOGO_SIZE_10 = {1: 16.38, 2: 19.93, 3: 22.30, 4: 24.58}
"""Stock & Yogo (2005), Table 5.2: with one treatment and 1-4 instruments and homoskedastic errors,
a first-stage (Cragg-Donald) F above this keeps the true size of a nominal 5 % 2SLS Wald test at
most 10 %."""
LEE_T_TEST_F = 104.7     # Lee, McCrary, Moreira & Porter (2022), ONE instrument: the usual 5 % t-test is valid above this F
STRENGTH_LEVELS = ("weak", "moderate", "strong")
NONPARAMETRIC_NOTE = (
    "These labels are about linear 2SLS. For a nonparametric f (DML-CMR, Sieve 2SLS, the peers) the linear "
    "F measures only how much of the treatment the instruments move along a straight line: a small F does not "
    "rule out a strong nonlinear first stage (the boosted held-out R² gain looks for one), and a large F does "
    "not make the nonparametric problem well posed -- how hard it is to recover f from E[f(X) | Z] (its "
    "ill-posedness) is not measured by any F, and no critical value of the table applies to it.")
PROXY_NOTE = (
    "What this measures: how strongly the treatment proxies Z predict each outcome proxy W given the treatment "
    "and covariates, in a linear regression -- the first stage of the linear proximal 2SLS, which needs it. "
    "What it does not: it is not a test of the completeness conditions that identify the bridge function "
    "(they concern the hidden confounder's distribution and cannot be tested from these columns), nor of "
    "whether Z and W are valid proxies. A weak linear link is a warning sign; a strong one is necessary-looking, "
    "not sufficient.")


@dataclass(frozen=True)
class Strength:
    """How strong an instrument is by its first-stage F: ``level`` is "weak" (F < WEAK_F),
    "moderate" or "strong" (above the bar of :func:`strong_bar`, when there is one); ``text`` says
    what that means and whose result it is."""

    level: str
    f_stat: float
    text: str


def strong_bar(n_instruments: int = 1, cov_type: str = DEFAULTS.cov_type, n_endogenous: int = 1):
    """``(F above which "strong", source, what is kept above it, what may fail below it)``, or
    ``(None, why there is no bar, None, None)``: the bar depends on the number of instruments."""
    k = int(n_instruments)
    if n_endogenous != 1:
        return (None, f"with {n_endogenous} endogenous columns no critical value beyond the rule of thumb is "
                      f"used here", None, None)
    if k == 1:
        return (LEE_T_TEST_F, "the bar of Lee et al. 2022 for one instrument",
                "the usual 5 % t-test of 2SLS keeps its size",
                "a usual 5 % t-test of 2SLS can reject a true value more often than 5 % of the time")
    if cov_type != "unadjusted":
        return (None, f"with {k} instruments and {cov_type} errors the relevant critical values are Montiel "
                      f"Olea & Pflueger's (2013) for the effective F, which depend on the estimated covariance "
                      f"and are not computed here", None, None)
    sy = STOCK_YOGO_SIZE_10.get(k)
    if sy is None:
        return (None, f"no critical value for {k} instruments is tabled here", None, None)
    return (sy, f"Stock-Yogo's critical value for {k} instruments, homoskedastic errors",
            "a nominal 5 % Wald test of 2SLS rejects a true value at most 10 % of the time (Lee et al.'s "
            f"{LEE_T_TEST_F:g} is for one instrument and does not apply here)",
            "the true size of a nominal 5 % Wald test of 2SLS may exceed 10 % (Stock & Yogo 2005)")


def strength_label(f_stat: float, n_instruments: int = 1, *, statistic: str = "first-stage F",
                   cov_type: str = DEFAULTS.cov_type, n_endogenous: int = 1, proximal: bool = False) -> Strength:
    """The strength label of a first-stage F (or effective F) with ``n_instruments`` instruments,
    the one used by Roles, Results, Learn and the CLI. NaN counts as weak. ``proximal``: the
    F of treatment proxies for outcome proxies (PCL), with advice in those terms."""
    f_stat = float(f_stat)
    k = int(n_instruments)
    shown = f"{f_stat:,.1f}" if np.isfinite(f_stat) else "not finite"
    bar, source, above, below = strong_bar(k, cov_type, n_endogenous)
    if not f_stat >= WEAK_F:
        sy = STOCK_YOGO_SIZE_10.get(k) if n_endogenous == 1 and cov_type == "unadjusted" else None
        sy_text = (f"; Stock-Yogo's critical value for at most 10 % size distortion with {k} "
                   f"instrument(s) is {sy:g}" if sy is not None else "")
        advice = ("linear proximal 2SLS is then biased toward the regression on the outcome proxies and its "
                  "usual interval is too narrow; look for treatment proxies more strongly tied to the outcome "
                  "proxies." if proximal else
                  "2SLS is then biased toward the confounded regression and its usual confidence interval is "
                  "too narrow; report a weak-instrument-robust interval (Anderson-Rubin) and look for a "
                  "stronger instrument.")
        return Strength("weak", f_stat, (
            f"weak: {statistic} {shown} is below {WEAK_F:g}, the Staiger-Stock rule of thumb{sy_text}. "
            + advice[0].upper() + advice[1:]))
    prefer = ("Read the 2SLS interval with caution." if proximal else "Prefer Anderson-Rubin intervals.")
    if bar is None:
        return Strength("moderate", f_stat, (
            f"moderate: {statistic} {shown} is above the rule of thumb {WEAK_F:g}; {source}. {prefer}"))
    if f_stat < bar:
        extra = ""
        if k == 1 and n_endogenous == 1 and cov_type == "unadjusted":
            sy = STOCK_YOGO_SIZE_10[1]
            extra = f" and {'above' if f_stat >= sy else 'below'} Stock-Yogo's {sy:g}"
        return Strength("moderate", f_stat, (
            f"moderate: {statistic} {shown} is above the rule of thumb {WEAK_F:g}{extra}, but below "
            f"{bar:g} ({source}): {below}. {prefer}"))
    aside = (" In the linear bridge these bars concern tests on the outcome proxies' coefficients; they say the "
             "proxies are linearly related, not that the treatment's effect is identified (completeness)."
             if proximal else "")
    return Strength("strong", f_stat, f"strong: {statistic} {shown} is above {bar:g} ({source}): {above}.{aside}")


def first_stage(data: CausalData, nonparametric: bool = True, folds: int = 5,
                max_rows: int = 20_000, random_state: int = 0, *, cov_type: str = DEFAULTS.cov_type,
                cluster: str | None = None, inference: bool = True) -> dict:
    """First-stage strength, linear and nonparametric: of the instruments for the treatment (IV),
    or of the treatment proxies Z for each outcome proxy W given the treatment (PCL).

    Linear part (homoskedastic, constant and exogenous columns partialled out -- the covariates
    in IV, the treatment and covariates in PCL): for each endogenous column (the treatment; each
    W), the partial R^2 of the q excluded columns and the F statistic of their joint
    significance, computed from the residual sum of squares ``(ESS / q) / (RSS / (n - q - k))``
    with k exogenous columns plus the constant, so never negative (an F without residual, from
    an instrument that copies the treatment, is refused when the roles are set). A categorical
    column enters as dummies of its levels, the first left out, and counts once per dummy. These
    equal ``partial.rsquared`` and ``f.stat`` of ``linearmodels``
    ``IV2SLS(...).fit(cov_type="unadjusted", debiased=True).first_stage.diagnostics``. The
    Cragg-Donald Wald F (Stock-Yogo's statistic; equal to F with one endogenous column) is
    ``(n - q - k) / q * r2 / (1 - r2)`` with r2 the smallest squared canonical correlation between
    the partialled endogenous columns and instruments: with several W it is the rank version.

    ``inference`` holds :func:`dmlcore.inference.linear_iv.first_stage_inference` under the covariance
    choice ``cov_type`` ("unadjusted", "robust", "clustered" by the column ``cluster``): the F
    under that covariance, the effective F (one endogenous column), Kleibergen-Paap and the
    overidentification tests; or ``{"error": why}``; None when ``inference`` is False (it refits
    with linearmodels: about a second on Card, tens of seconds on RHC's 79 covariates under load).

    Nonparametric part: the 5-fold held-out R^2 of a small HistGradientBoostingRegressor of each
    endogenous column on (instruments, exogenous columns) minus that on the exogenous columns
    alone (the fold mean without them), on at most ``max_rows`` random rows.

    ``strength`` is :func:`strength_label` of the one statistic of :func:`identification_statistic`:
    the smallest F (or the Cragg-Donald F) when unadjusted; under a robust or clustered covariance the
    effective F (one endogenous column) or the Kleibergen-Paap rk F, the cluster count in its name and,
    below FEW_CLUSTERS clusters, a caveat beside it (``strength["caveat"]``) -- never a swap to the
    homoskedastic F. ``weak`` is True when that statistic is below 10, the Staiger-Stock rule of
    thumb, and, unadjusted, also when any column's own F is. Covariates that are constant or collinear
    in these rows (:func:`redundant_covariates`) are left out and named in ``dropped`` and the one line
    ``dropped_note``.

    Returns
    -------
    dict
        ``{"problem", "n", "instruments", "covariates", "treatments" (IV) or "outcome_proxies"
        (PCL): {name: {"partial_r2", "f_stat", "f_pvalue", "df_num", "df_denom", "np_r2",
        "np_r2_covariates", "np_r2_gain"}}, "cragg_donald_f", "weak", "strength": {"level",
        "f_stat", "text", "statistic", "n_clusters", "caveat"}, "warning", "dropped", "dropped_note",
        "cov_type", "cluster", "inference", "note"}``;
        the ``np_*`` entries are None when ``nonparametric`` is False or the data absorb fixed effects
        or carry weights (``absorb``, ``weights``: then every linear number above is of the demeaned,
        weighted rows, and ``absorbed_df`` levels count in the F's degrees of freedom); ``warning`` is None unless
        ``weak``. In PCL ``instruments`` are the treatment proxies and ``covariates`` the treatment
        and covariates; ``note`` says what the numbers do and do not mean.
    """
    if not isinstance(data, CausalData):
        raise DMLCoreError(f"first_stage expects a CausalData; got {type(data).__name__}.")
    if data.problem == "iv":
        endogenous, excluded, exogenous, key = data.treatment, data.instrument, data.covariates, "treatments"
    elif data.problem == "pcl":
        endogenous, excluded, exogenous = data.outcome_proxy, data.treatment_proxy, data.treatment + data.covariates
        key = "outcome_proxies"
    else:
        raise DMLCoreError(f"First-stage diagnostics are for IV and PCL problems; this data defines a "
                           f"'{data.problem}' problem. Use problem='iv' with an instrument column.")
    check_covariance(cov_type, cluster, data.table)
    data, dropped = without_redundant_covariates(data)
    exogenous = [c for c in exogenous if c not in {d["column"] for d in dropped}]
    levels = {c: np.unique(data.table[c].to_numpy(dtype=float)) for c in data.categorical
              if c in exogenous or c in excluded}
    table = with_dummies(data.table, levels, drop_first=True)
    covariates, instruments = (dummy_columns(cols, levels, drop_first=True) for cols in (exogenous, excluded))
    n, q = len(table), len(instruments)
    a = table[endogenous].to_numpy(dtype=float)
    z = table[instruments].to_numpy(dtype=float)
    transform = transform_of(data)        # absorbed fixed effects (they replace the constant) and weights
    x = table[covariates].to_numpy(dtype=float).reshape(n, -1)
    x_names = list(covariates)
    if not transform.codes:
        x, x_names = np.column_stack([np.ones(n), x]), ["const"] + x_names
    if transform.active:
        raw = (x, z)
        a, x, z = transform.apply(a), transform.apply(x), transform.apply(z)
        if transform.codes:
            for before, after, names in zip(raw, (x, z), (x_names, instruments)):
                check_not_absorbed(before, after, names, data.absorb)
    check_full_rank(np.column_stack([x, z]), x_names + instruments,
                    "covariates and instruments" if key == "treatments" else "treatment, covariates and treatment proxies")
    a_t, z_t = _residualize(a, x), _residualize(z, x)
    fitted = z_t @ np.linalg.lstsq(z_t, a_t, rcond=None)[0]
    df_denom = n - q - x.shape[1] - transform.df
    explained, residual = np.sum(fitted ** 2, axis=0), np.sum((a_t - fitted) ** 2, axis=0)
    partial = explained / (explained + residual)
    r2_min = min(1.0, np.linalg.svd(np.linalg.qr(a_t)[0].T @ np.linalg.qr(z_t)[0], compute_uv=False).min() ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_stat = np.where(residual > 0, explained / q / (residual / df_denom), np.inf)
        cragg_donald = float(df_denom / q * r2_min / (1.0 - r2_min)) if r2_min < 1 else np.inf
    nonparametric = nonparametric and not transform.active    # the boosted R^2 takes no fixed effects or weights
    np_scores = (_nonparametric(data.table, endogenous, excluded + exogenous, exogenous, folds, max_rows,
                                random_state) if nonparametric else {name: (None, None) for name in endogenous})
    columns = {}
    for j, name in enumerate(endogenous):
        full, base = np_scores[name]
        columns[name] = {
            "partial_r2": float(partial[j]), "f_stat": float(f_stat[j]),
            "f_pvalue": float(f_dist.sf(f_stat[j], q, df_denom)),
            "df_num": q, "df_denom": df_denom,
            "np_r2": full, "np_r2_covariates": base,
            "np_r2_gain": None if full is None else full - base,
        }
    try:
        inference = first_stage_inference(data, cov_type, cluster) if inference else None
    except DMLCoreError as exc:
        inference = {"error": str(exc)}
    chosen = identification_statistic(
        "Cragg-Donald F" if len(endogenous) > 1 else "first-stage F" if key == "treatments" else "proxy first-stage F",
        min(f_stat.min(), cragg_donald), cov_type, inference)
    statistic = chosen["statistic"]
    label = strength_label(chosen["value"], q, statistic=statistic, cov_type=cov_type, n_endogenous=len(endogenous),
                           proximal=key == "outcome_proxies")
    homoskedastic = cov_type == "unadjusted" or chosen["fallback"]
    weak = label.level == "weak" or (homoskedastic and (bool(np.any(f_stat < WEAK_F)) or cragg_donald < WEAK_F))
    text = label.text + (f" Note: {chosen['caveat']}." if chosen["caveat"] else "")
    return {"problem": data.problem, "n": n, "instruments": list(excluded), "covariates": list(exogenous),
            key: columns, "cragg_donald_f": cragg_donald, "weak": weak,
            "strength": {"level": label.level, "f_stat": label.f_stat, "text": text, "statistic": statistic,
                         "n_clusters": chosen["n_clusters"], "caveat": chosen["caveat"]},
            "warning": (_warning(data, key, columns, cragg_donald, label, statistic, homoskedastic, chosen["caveat"])
                        if weak else None),
            "dropped": dropped, "dropped_note": dropped_note(dropped),
            "cov_type": cov_type, "cluster": cluster, "inference": inference,
            "note": PROXY_NOTE if key == "outcome_proxies" else NONPARAMETRIC_NOTE,
            "absorb": list(data.absorb), "weights": data.weights,
            "absorbed_df": transform.df}


def identification_statistic(homoskedastic_name: str, homoskedastic_value: float, cov_type: str,
                             inference: dict | None) -> dict:
    """The one strength statistic of a first stage under the covariance the user chose: what the strength
    label, the warning, the CLI, the run record and the weak-identification flag of the effect all read.

    Homoskedastic (``cov_type`` "unadjusted"): the smallest first-stage F (or the Cragg-Donald F),
    ``homoskedastic_value``. Robust or clustered: Montiel Olea & Pflueger's effective F with one
    endogenous column, the Kleibergen-Paap rk F with several; with clusters their count is named and,
    below FEW_CLUSTERS, ``caveat`` says the statistic is itself imprecise (the statistic is not swapped).
    When the robust statistic could not be computed (``inference`` holds an error or is None) the
    homoskedastic one is used and ``statistic`` and ``caveat`` say so (``fallback`` True).

    Returns ``{"statistic", "value", "n_clusters", "caveat", "fallback"}``.
    """
    out = {"statistic": homoskedastic_name, "value": float(homoskedastic_value), "n_clusters": None,
           "caveat": None, "fallback": False}
    if cov_type == "unadjusted":
        return out
    inference = inference or {"error": "not computed"}
    g = inference.get("n_clusters")
    if inference.get("effective_f") is not None:
        name, value = "effective F", inference["effective_f"]
    elif inference.get("kleibergen_paap_f") is not None:
        name, value = "Kleibergen-Paap rk F", inference["kleibergen_paap_f"]
    else:
        why = inference.get("error") or "no robust statistic"
        out.update(statistic=f"{homoskedastic_name} (homoskedastic)", fallback=True,
                   caveat=f"the {cov_type} statistic could not be computed ({str(why).rstrip('.')}), so this F "
                          f"assumes homoskedastic errors")
        return out
    where = f"{cov_type}, {g:,} clusters" if g is not None else cov_type
    proxy = "proxy " if homoskedastic_name.startswith("proxy") else ""     # PCL: of the treatment proxies for W
    out.update(statistic=f"{proxy}{name} ({where})", value=float(value), n_clusters=g)
    if g is not None and g < FEW_CLUSTERS:
        out["caveat"] = (f"only {g} clusters, fewer than {FEW_CLUSTERS}: a clustered statistic is itself imprecise, "
                         f"read it as a rough guide")
    return out


def redundant_covariates(data: CausalData) -> list[dict]:
    """Covariates the linear diagnostics cannot use: a column that is constant (all zeros, or the
    constant again) or a linear combination of the constant and the covariates before it, in the
    rows at hand (a rare category absent from a subsample, say). ``[{"column", "why"}]`` in column
    order; empty when they are of full rank. Fixed effects and weights: the constant test is of the
    raw column; what the absorbed groups take is checked where the diagnostics are computed."""
    covariates = [c for c in data.covariates if c not in data.categorical]
    if not covariates:
        return []
    table = data.table
    n = len(table)
    kept, out = [np.ones(n) / np.sqrt(n)], []
    basis = kept[0][:, None]
    for c in covariates:
        v = table[c].to_numpy(dtype=float)
        norm = np.linalg.norm(v)
        if norm == 0 or np.ptp(v) == 0:
            out.append({"column": c, "why": "all zeros" if norm == 0 else "constant"})
            continue
        r = v / norm - basis @ (basis.T @ (v / norm))
        if np.linalg.norm(r) < _RANK_TOL * max(1, n) ** 0.5:      # check_full_rank's tolerance
            out.append({"column": c, "why": "a linear combination of the constant and the covariates before it"})
            continue
        basis = np.column_stack([basis, r / np.linalg.norm(r)])
    return out


def without_redundant_covariates(data: CausalData) -> tuple[CausalData, list[dict]]:
    """``data`` less its :func:`redundant_covariates` (the same rows and other roles), and the list."""
    dropped = redundant_covariates(data)
    if not dropped:
        return data, []
    names = {d["column"] for d in dropped}
    roles = {role: getattr(data, role) for role in ROLE_NAMES[1:]}
    roles["covariates"] = [c for c in data.covariates if c not in names]
    return CausalData(data.table, data.problem, data.outcome, name=data.name, image_shape=data.image_shape,
                      image_columns=data.image_columns, categorical=data.categorical, absorb=data.absorb,
                      weights=data.weights, **roles), dropped


def dropped_note(dropped: list[dict]) -> str | None:
    """One line naming the covariates left out of the linear diagnostics and why; None when none were."""
    if not dropped:
        return None
    shown = "; ".join(f"'{d['column']}' ({d['why']})" for d in dropped[:5])
    more = f"; and {len(dropped) - 5} more" if len(dropped) > 5 else ""
    return f"left out of the first-stage diagnostics, which need covariates of full rank: {shown}{more}"


def _residualize(v, x):
    return v - x @ np.linalg.lstsq(x, v, rcond=None)[0] if x.shape[1] else v


def _nonparametric(table, targets, features, base, folds, max_rows, random_state):
    """{target: (held-out R^2 on ``features``, on ``base`` only -- the fold mean when empty)}; the rows
    kept and the folds are the resampler's ``"first-stage rows"`` and ``"first-stage"`` (:mod:`dmlcore.stats.resample`)."""
    rows = (resample.subsample(len(table), max_rows, random_state, "first-stage rows") if len(table) > max_rows
            else slice(None))
    sub = table.iloc[rows]
    split = [(rest, held) for held, rest in resample.splits(len(sub), folds, random_state, "first-stage")]
    out = {}
    for name in targets:
        target = sub[name].to_numpy(dtype=float)
        full = _held_out_r2(sub[features].to_numpy(dtype=float), target, split, random_state)
        reduced = (_held_out_r2(sub[base].to_numpy(dtype=float), target, split, random_state) if base else
                   _held_out_r2(None, target, split, random_state))
        out[name] = (full, reduced)
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


def _warning(data, key, columns, cragg_donald, label, statistic, homoskedastic=True, caveat=None):
    instruments = ", ".join(data.instrument if key == "treatments" else data.treatment_proxy)
    parts = []
    if not homoskedastic:           # the statistic under the covariance chosen is the one the warning quotes
        who = "instrument(s)" if key == "treatments" else "treatment proxies"
        return f"The {who} {instruments} look {label.text} Here the {statistic} is {label.f_stat:.2f}" + (
            f"; {caveat}." if caveat else ".")
    for name, d in columns.items():
        if d["f_stat"] < WEAK_F:
            parts.append(f"the first-stage F for '{name}' is {d['f_stat']:.2f} (partial R^2 "
                         f"{d['partial_r2']:.4f})")
    if not parts and len(columns) > 1:
        each = ", ".join(f"'{name}' {d['f_stat']:,.1f}" for name, d in columns.items())
        parts.append(f"each column's own F is above {WEAK_F:g} ({each}), but the Cragg-Donald F, the rank version, "
                     f"is {cragg_donald:.2f}: together they move the {len(columns)} columns in fewer independent "
                     f"directions than that")
    elif not parts:
        parts.append(f"the {statistic} is {label.f_stat:.2f}")
    who = "instrument(s)" if key == "treatments" else "treatment proxies"
    text = f"The {who} {instruments} look {label.text} Here {'; '.join(parts)}."
    gains = [d["np_r2_gain"] for d in columns.values() if d["np_r2_gain"] is not None]
    if gains and max(gains) > 0.05:
        text += (f" A flexible first stage explains more (held-out R^2 gain {max(gains):.3f}): "
                 f"the instruments may act nonlinearly, which nonparametric estimators can use.")
    return text

"""Linear-IV inference at ivreg2's level, computed by ``linearmodels`` where it already does it.

The linear model of a CausalData (:func:`linear_iv`): in IV, y on the treatment (endogenous),
the covariates and a constant (exogenous), instrumented by the instruments; in PCL, the linear
outcome bridge: y on the outcome proxies W (endogenous), the treatment, the covariates and a
constant (exogenous), with the treatment proxies Z as instruments. A categorical column enters as
dummies of its levels, the first left out.

The covariance choice (``unadjusted``, ``robust``, ``clustered`` by a column) and its checks live
in :mod:`dmlcore.stats.covariance`.
* :func:`first_stage_inference` -- per endogenous column the partial R^2, the first-stage F
  under the covariance choice (linearmodels' Wald statistic divided by the number of
  instruments), the effective F of Montiel Olea & Pflueger (2013) (one endogenous column; not
  in linearmodels, computed here), the Kleibergen-Paap rk Wald F and rank test (linearmodels),
  and overidentification tests when there are more instruments than endogenous columns
  (linearmodels' Sargan, Basmann and Wooldridge score tests).
* :func:`anderson_rubin_set` -- the Anderson-Rubin confidence set of the coefficient of the one
  endogenous column, by exact inversion of the AR test (see its docstring).
* :func:`clr_test`, :func:`clr_set` -- Moreira's conditional likelihood-ratio test and its set
  (homoskedastic), checked against ivmodels.

The data's absorbed fixed effects and weights (:mod:`dmlcore.stats.fixed_effects`) act in every one of
them: :func:`linear_iv` demeans and weights the columns and counts the absorbed levels
(``extra_df``) in each small-sample factor, so that every statistic equals the one with the dummies
entered. Overidentification tests carry ``robust_to``; Hansen's J (efficient GMM under the
covariance choice) is the cluster-robust one.

The effective F, with ``Q = Z'Z/n`` of the instruments after the exogenous columns are partialled
out, the first-stage coefficients ``pi`` and their covariance ``V`` under the covariance choice,
is ``F_eff = pi' Q pi / trace(V Q)`` -- MOP's ``x'ZZ'x / (n trace(W2))`` written without
normalising the instruments. With homoskedastic errors it equals the usual first-stage F.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.linalg import eig
from scipy.optimize import brentq
from scipy.stats import chi2, f as f_dist

from dmlcore.data.roles import CausalData
from dmlcore.stats.covariance import (check_covariance, cluster_codes, few_clusters_note, is_clustered,
                                         lm_cov, n_clusters)
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.tsls import check_full_rank, check_not_absorbed, dummy_columns, with_dummies
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.stats.fixed_effects import transform_of

AR_NAME = "Anderson-Rubin"


@dataclass
class LinearIV:
    """The linear model's columns: outcome, exogenous (with ``const``), endogenous and instruments."""

    y: pd.Series
    exog: pd.DataFrame
    endog: pd.DataFrame
    instruments: pd.DataFrame
    clusters: np.ndarray | None = None
    extra_df: int = 0          # absorbed fixed-effect levels (dmlcore.stats.fixed_effects)

    @property
    def n(self) -> int:
        return len(self.y)


def linear_iv(data: CausalData, cluster: str | None = None) -> LinearIV:
    """The linear IV (or linear proximal) model of ``data``; raise for collinear columns. With the data's
    ``absorb`` and ``weights`` (:mod:`dmlcore.stats.fixed_effects`) every column is demeaned within the
    absorbed groups (the constant dropped) and multiplied by the square root of the weights."""
    if data.problem == "iv":
        endog, instruments, exog = data.treatment, data.instrument, data.covariates
    elif data.problem == "pcl":
        endog, instruments, exog = data.outcome_proxy, data.treatment_proxy, data.treatment + data.covariates
    else:
        raise DMLCoreError("Linear-IV inference needs an IV or PCL problem (instruments or proxies); a general CMR "
                           "problem names neither.")
    used = set(endog) | set(instruments) | set(exog)
    levels = {c: np.unique(data.table[c].to_numpy(dtype=float)) for c in data.categorical if c in used}
    table = with_dummies(data.table, levels, drop_first=True)
    endog, instruments, exog = (dummy_columns(cols, levels, drop_first=True) for cols in (endog, instruments, exog))
    transform = transform_of(data)
    frame = table[exog].astype(float)
    if not transform.codes:
        frame.insert(0, "const", 1.0)
    parts = [table[[data.outcome]].astype(float), frame, table[endog].astype(float), table[instruments].astype(float)]
    if transform.active:
        raw = [part.to_numpy() for part in parts]
        parts = [pd.DataFrame(transform.apply(a), columns=part.columns) for a, part in zip(raw, parts)]
        if transform.codes:
            for a, part in zip(raw[1:], parts[1:]):
                check_not_absorbed(a, part.to_numpy(), list(part.columns), transform.absorb)
    y, frame, endog_frame, instr_frame = parts
    check_full_rank(np.column_stack([frame.to_numpy(), instr_frame.to_numpy()]),
                    list(frame.columns) + instruments, "exogenous columns and instruments")
    return LinearIV(y[data.outcome], frame, endog_frame, instr_frame,
                    cluster_codes(data.table, cluster) if cluster else None, transform.df)


def _lm_options(model: LinearIV, cov_type: str, debiased: bool) -> dict:
    """linearmodels' ``fit`` keywords of the covariance choice: CR1 is its clustered ``debiased=True``;
    absorbed levels count in the small-sample factors (``extra_df``)."""
    clustered = is_clustered(cov_type)
    out = {"cov_type": lm_cov(cov_type), "debiased": debiased or cov_type in ("clustered-cr1", "robust-hc1")}
    if clustered:
        out["clusters"] = model.clusters
    if model.extra_df:
        out["extra_df"] = model.extra_df
    return out


def fit_iv(model: LinearIV, cov_type: str = DEFAULTS.cov_type, debiased: bool = False):
    """linearmodels' IV2SLS of the model with the covariance choice."""
    from linearmodels.iv import IV2SLS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # few clusters: said in our own words
        return IV2SLS(model.y, model.exog if model.exog.shape[1] else None, model.endog, model.instruments).fit(
            **_lm_options(model, cov_type, debiased))


def _ols(dependent, regressors: pd.DataFrame, model: LinearIV, cov_type: str, debiased: bool):
    from linearmodels.iv import IV2SLS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return IV2SLS(dependent, regressors, None, None).fit(**_lm_options(model, cov_type, debiased))


def effective_f(model: LinearIV, first_stage, scale: float = 1.0) -> float:
    """Montiel Olea & Pflueger's effective F of the one endogenous column: ``pi'Q pi / trace(V Q)``
    (module notes); ``first_stage`` is linearmodels' first-stage regression of that column (its
    ``params`` and ``cov`` under the covariance choice), ``V`` its covariance times ``scale``."""
    if model.endog.shape[1] != 1:
        raise DMLCoreError("The effective F is defined for one endogenous column; this model has "
                           f"{model.endog.shape[1]}.")
    names = list(model.instruments.columns)
    pi = first_stage.params[names].to_numpy()
    v = first_stage.cov.loc[names, names].to_numpy() * scale
    z_tilde = _partialled(model, model.instruments.to_numpy())
    q = z_tilde.T @ z_tilde / model.n
    return float(pi @ q @ pi / np.trace(v @ q))


def _partialled(model: LinearIV, values: np.ndarray) -> np.ndarray:
    """``values`` less their least-squares projection on the exogenous columns."""
    x = model.exog.to_numpy()
    return values - x @ np.linalg.lstsq(x, values, rcond=None)[0] if x.shape[1] else values


def first_stage_inference(data: CausalData, cov_type: str = DEFAULTS.cov_type, cluster: str | None = None) -> dict:
    """First-stage strength and overidentification under the covariance choice (module notes).

    Returns ``{"cov_type", "cluster", "n_clusters", "n_instruments", "endogenous": {name:
    {"partial_r2", "f_stat_cov", "f_cov_pvalue", "f_cov_dist", "sanderson_windmeijer_f"}}, "effective_f" (None with several
    endogenous columns), "kleibergen_paap_f", "kleibergen_paap": {"stat", "pvalue", "df", "null"},
    "overid": None or {test: {"stat", "pvalue", "df", "null"}}, "notes": [...]}``. ``f_stat_cov``
    is the Wald statistic of the instruments in linearmodels' first-stage regression under the
    covariance choice, divided by their number q, with linearmodels' small-sample scaling
    (``debiased=True``): with the unadjusted covariance it is the textbook F (p-value from
    F(q, n - k)), otherwise its p-value is that of the Wald statistic (chi2(q)).
    """
    check_covariance(cov_type, cluster, data.table)
    model = linear_iv(data, cluster)
    fit = fit_iv(model, cov_type, debiased=True)
    stage = fit.first_stage
    names = list(model.instruments.columns)
    q = len(names)
    z_tilde = _partialled(model, model.instruments.to_numpy())
    # linearmodels' first-stage regressions drop extra_df: their small-sample factor n-k becomes n-k-df here
    k = model.exog.shape[1] + q
    scale = (model.n - k) / (model.n - k - model.extra_df)
    endogenous = {}
    for name, individual in stage.individual.items():
        pi = individual.params[names].to_numpy()
        wald = float(pi @ np.linalg.solve(individual.cov.loc[names, names].to_numpy() * scale, pi))
        target = _partialled(model, model.endog[name].to_numpy())
        explained = z_tilde @ np.linalg.lstsq(z_tilde, target, rcond=None)[0]
        pvalue = (f_dist.sf(wald / q, q, individual.df_resid - model.extra_df) if cov_type == "unadjusted" else chi2.sf(wald, q))
        endogenous[name] = {"partial_r2": float(explained @ explained / (target @ target)), "f_stat_cov": wald / q,
                            "f_cov_pvalue": float(pvalue),
                            "f_cov_dist": "F" if cov_type == "unadjusted" else "chi2 / q"}
    for name, value in sanderson_windmeijer(model, cov_type).items():
        endogenous[name]["sanderson_windmeijer_f"] = value
    out = {"cov_type": cov_type, "cluster": cluster,
           "n_clusters": n_clusters(model.clusters),
           "n_instruments": q, "endogenous": endogenous,
           "effective_f": (effective_f(model, next(iter(stage.individual.values())), scale)
                           if model.endog.shape[1] == 1 else None),
           "kleibergen_paap_f": _finite(stage.kleibergen_paap_f / scale),
           "kleibergen_paap": _test(stage.kleibergen_paap), "overid": None, "notes": []}
    if q > model.endog.shape[1]:
        out["overid"] = overid_tests(model, fit, cov_type)
        if is_clustered(cov_type):
            out["notes"].append(NOT_CLUSTER_ROBUST)
        if "hansen_j_error" in out["overid"]:
            out["notes"].append(out["overid"].pop("hansen_j_error"))
    if few_clusters_note(out["n_clusters"]):
        out["notes"].append(few_clusters_note(out["n_clusters"]))
    return out


def sanderson_windmeijer(model: LinearIV, cov_type: str = DEFAULTS.cov_type) -> dict:
    """Sanderson & Windmeijer's (2016) conditional first-stage F of each endogenous column: ``{name: F}``.

    For column j of p endogenous columns: the 2SLS residual e_j of d_j on the other endogenous columns
    (instrumented by the instruments, with the exogenous columns), then the Wald statistic of the q instruments
    in the regression of e_j on them and the exogenous columns under the covariance choice (linearmodels,
    ``debiased=True``: homoskedastic, its F form), divided by q - p + 1. It measures whether the instruments move
    d_j apart from the other endogenous columns; with one endogenous column it is the first-stage F. Absorbed
    levels count in the small-sample factor as everywhere (``extra_df``)."""
    names, q = list(model.endog.columns), model.instruments.shape[1]
    p = len(names)
    exog = model.exog if model.exog.shape[1] else None
    out = {}
    for name in names:
        others = [c for c in names if c != name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if others:
                from linearmodels.iv import IV2SLS
                resid = IV2SLS(model.endog[name], exog, model.endog[others], model.instruments).fit().resids
            else:
                resid = model.endog[name]
        regressors = pd.concat([model.exog, model.instruments], axis=1)
        fit = _ols(pd.Series(np.asarray(resid), name=name), regressors, model, cov_type, True)
        instruments = list(model.instruments.columns)
        pi = fit.params[instruments].to_numpy()
        k = regressors.shape[1]
        scale = (model.n - k) / (model.n - k - model.extra_df) if model.extra_df else 1.0
        wald = float(pi @ np.linalg.solve(fit.cov.loc[instruments, instruments].to_numpy() * scale, pi))
        out[name] = _finite(wald / (q - p + 1))
    return out


NOT_CLUSTER_ROBUST = ("Overidentification: Sargan's and Basmann's tests assume homoskedastic errors and "
                      "Wooldridge's score test is heteroskedasticity-robust; none is cluster-robust. Read Hansen's J, "
                      "whose weight matrix is clustered.")
ROBUST_TO = {"sargan": "homoskedastic errors only", "basmann": "homoskedastic errors only",
             "wooldridge": "heteroskedasticity-robust, not cluster-robust"}


def overid_tests(model: LinearIV, fit, cov_type: str) -> dict:
    """Sargan, Basmann and Wooldridge's score test (linearmodels, from the 2SLS ``fit``), and Hansen's J
    of efficient GMM whose weight matrix follows ``cov_type`` (robust; clustered, CR0 -- so
    cluster-robust; None when homoskedastic, where it would be Sargan's); each with ``robust_to``
    saying which errors it allows.
    Two-way clustering has no Hansen J here (None): linearmodels' GMM clusters one way; nor has a
    clustered weight matrix that is singular (fewer clusters than moments): ``hansen_j_error`` says so."""
    out = {name: _test(getattr(fit, attr)) for name, attr in
           (("sargan", "sargan"), ("basmann", "basmann"), ("wooldridge", "wooldridge_overid"))}
    if out["basmann"] is not None and model.extra_df:      # its n - L counts the absorbed levels among L
        instruments = model.exog.shape[1] + model.instruments.shape[1]
        out["basmann"]["stat"] *= (model.n - instruments - model.extra_df) / (model.n - instruments)
        out["basmann"]["pvalue"] = float(chi2.sf(out["basmann"]["stat"], out["basmann"]["df"]))
    for name, test in out.items():
        if test is not None:
            test["robust_to"] = ROBUST_TO[name]
    out["hansen_j"] = None
    if cov_type != "unadjusted" and (model.clusters is None or model.clusters.ndim == 1):
        from linearmodels.iv import IVGMM
        kind = lm_cov(cov_type)
        kwargs = {"clusters": model.clusters} if is_clustered(cov_type) else {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gmm = IVGMM(model.y, model.exog if model.exog.shape[1] else None, model.endog, model.instruments,
                            weight_type=kind, **kwargs).fit(cov_type=kind, **kwargs)
            out["hansen_j"] = _test(gmm.j_stat)
        except (ValueError, np.linalg.LinAlgError) as exc:     # e.g. fewer clusters than moments
            out["hansen_j_error"] = f"Hansen's J not computed: {str(exc).splitlines()[0]}"
        if out["hansen_j"] is not None:
            out["hansen_j"]["robust_to"] = "heteroskedasticity-robust" if kind == "robust" else "cluster-robust"
    return out


def _finite(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def _test(result) -> dict | None:
    """A linearmodels test statistic as plain numbers; None when it is not defined."""
    stat = getattr(result, "stat", None)
    if stat is None or not np.isfinite(stat):
        return None
    return {"stat": float(stat), "pvalue": float(result.pval), "df": int(result.df), "null": str(result.null)}


# ------------------------------------------------------------------ Anderson-Rubin
def anderson_rubin_set(data: CausalData, cov_type: str = DEFAULTS.cov_type, cluster: str | None = None,
                       level: float = 0.95, scale: float = 1.0, small: bool = DEFAULTS.small) -> dict:
    """The Anderson-Rubin ``level`` confidence set of the endogenous column's coefficient beta.

    AR(b) tests that the instruments' coefficients pi(b) are zero in the regression of y - b d on
    the instruments and the exogenous columns (linearmodels, under the covariance choice); the set
    is every b not rejected. Unadjusted: the F form, W(b)/q against F(q, n - k) (exact with normal
    errors); robust or clustered: the Wald statistic W(b) against chi2(q). pi(b) is linear in b and
    its covariance V(b) quadratic, so W(b) <= c exactly where c V(b) - pi(b) pi(b)' is positive
    semi-definite: the boundaries are the real roots of det(c V(b) - pi(b) pi(b)'), a polynomial
    of degree 2q found as the eigenvalues of a quadratic eigenvalue problem (one treatment, one
    instrument: a quadratic inequality). The set is a bounded interval, the union of two rays,
    the whole line, or empty (with several instruments, in general a union of such pieces). It is
    unbounded exactly when the instruments are not significant in the first stage at the same level.
    ``small`` (Stata's): the covariance with its small-sample factor (HC1, CR1) and the F form W(b)/q against
    F(q, n - k), or F(q, G - 1) when clustered.

    ``scale`` multiplies the coefficient (the distance between a binary treatment's two values).
    Returns ``{"pieces": [[lo, hi], ...] (None for an infinite end), "kind", "text", "cov_type",
    "level", "critical", "statistic" ("F" or "chi2")}``.
    """
    check_covariance(cov_type, cluster, data.table)
    if data.problem != "iv" or len(data.treatment) != 1:
        raise DMLCoreError(f"The Anderson-Rubin set is computed for one treatment column of an IV problem; "
                           f"{'this problem is ' + data.problem.upper() if data.problem != 'iv' else 'there are ' + str(len(data.treatment))}"
                           f"{'' if data.problem != 'iv' else ' treatment columns'}.")
    model = linear_iv(data, cluster)
    if model.endog.shape[1] != 1:
        raise DMLCoreError(f"The Anderson-Rubin set needs one endogenous column; the categorical treatment "
                           f"'{data.treatment[0]}' enters as {model.endog.shape[1]} dummies. Recode it as 0/1.")
    debiased = cov_type == "unadjusted" or bool(small)     # CR1's and HC1's factor come with their cov_type
    centre = fit_iv(model, cov_type)
    name = model.endog.columns[0]
    b0 = float(centre.params[name])
    step = max(float(centre.std_errors[name]), 1e-8 * (1.0 + abs(b0)))
    regressors = pd.concat([model.exog, model.instruments], axis=1)
    names = list(model.instruments.columns)
    q = len(names)
    d = model.endog.iloc[:, 0]

    def reduced(b):
        fit = _ols(model.y - b * d, regressors, model, cov_type, debiased)
        return fit.params[names].to_numpy(), fit.cov.loc[names, names].to_numpy(), fit.df_resid - model.extra_df

    (p_minus, v_minus, _), (p_zero, v_zero, df_resid), (p_plus, v_plus, _) = (
        reduced(b0 + step * t) for t in (-1.0, 0.0, 1.0))
    if small and is_clustered(cov_type):
        critical, statistic = q * float(f_dist.ppf(level, q, n_clusters(model.clusters) - 1)), "F"
    elif debiased:
        critical, statistic = q * float(f_dist.ppf(level, q, df_resid)), "F"
    else:
        critical, statistic = float(chi2.ppf(level, q)), "chi2"
    # in t = (b - b0) / step: pi(t) = p0 + t p1, V(t) = V0 + t V1 + t^2 V2
    p0, p1 = p_zero, (p_plus - p_minus) / 2
    v0, v1, v2 = v_zero, (v_plus - v_minus) / 2, (v_plus + v_minus) / 2 - v_zero

    def wald(t):
        p = p0 + t * p1
        return float(p @ np.linalg.solve(v0 + t * v1 + t * t * v2, p))

    roots = _boundaries(critical * v0 - np.outer(p0, p0),
                        critical * v1 - np.outer(p0, p1) - np.outer(p1, p0),
                        critical * v2 - np.outer(p1, p1), lambda t: wald(t) - critical)
    at_infinity = float(p1 @ np.linalg.solve(v2, p1)) if np.linalg.matrix_rank(v2) == q else np.inf
    pieces = _pieces(roots, lambda t: wald(t) <= critical, at_infinity <= critical)
    to_b = lambda t: None if t is None else (b0 + step * t) * scale   # noqa: E731
    pieces = [[to_b(lo), to_b(hi)] for lo, hi in pieces]
    if scale < 0:
        pieces = [[hi, lo] for lo, hi in reversed(pieces)]
    kind = set_kind(pieces)
    return {"pieces": pieces, "kind": kind, "text": describe_set(pieces, level), "cov_type": cov_type,
            "cluster": cluster, "level": level, "critical": critical, "statistic": statistic}


def _boundaries(a0, a1, a2, excess) -> list[float]:
    """Real roots of det(a0 + t a1 + t^2 a2), refined on ``excess`` (W(t) - c) where it changes sign."""
    k = a0.shape[0]
    left = np.block([[np.zeros((k, k)), np.eye(k)], [-a0, -a1]])
    right = np.block([[np.eye(k), np.zeros((k, k))], [np.zeros((k, k)), a2]])
    with np.errstate(all="ignore"):
        values = eig(left, right, right=False)
    real = sorted(float(v.real) for v in values
                  if np.isfinite(v) and abs(v.imag) <= 1e-7 * (1.0 + abs(v.real)))
    out = []
    for t in real:
        width = 1e-6 * (1.0 + abs(t))
        lo, hi = t - width, t + width
        try:
            if excess(lo) * excess(hi) < 0:
                t = brentq(excess, lo, hi, xtol=1e-14 * (1.0 + abs(t)))
        except (ValueError, np.linalg.LinAlgError):
            pass
        if not out or abs(t - out[-1]) > 1e-9 * (1.0 + abs(t)):
            out.append(t)
    return out


def _pieces(roots: list[float], inside, inside_at_infinity: bool) -> list[list]:
    """The stretches of the line between consecutive ``roots`` where ``inside`` holds, merged."""
    if not roots:
        return [[None, None]] if inside_at_infinity or inside(0.0) else []
    edges = [None, *roots, None]
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if lo is None or hi is None:
            keep = inside_at_infinity
        else:
            keep = inside((lo + hi) / 2)
        if not keep:
            continue
        if out and out[-1][1] == lo:
            out[-1][1] = hi
        else:
            out.append([lo, hi])
    return out


def set_kind(pieces: list[list]) -> str:
    """'empty', 'bounded', 'two rays', 'everything', 'ray' or 'several pieces'."""
    if not pieces:
        return "empty"
    if pieces == [[None, None]]:
        return "everything"
    if len(pieces) == 1:
        return "bounded" if None not in pieces[0] else "ray"
    if len(pieces) == 2 and pieces[0][0] is None and pieces[1][1] is None:
        return "two rays"
    return "several pieces"


def set_text(pieces: list[list]) -> str:
    """The pieces as text: ``[0.02, 0.28]``, ``(-inf, -1.2] U [0.5, +inf)``, ``empty``."""
    return " U ".join(_piece_text(p, "inf") for p in pieces) if pieces else "empty"


def describe_set(pieces: list[list], level: float = 0.95) -> str:
    """The set in words, with what its shape means."""
    shown = " ∪ ".join(_piece_text(p) for p in pieces)
    kind = set_kind(pieces)
    lead = f"The {level:.0%} Anderson-Rubin set"
    if kind == "empty":
        return (f"{lead} is empty: every value of the coefficient is rejected, which says the model itself "
                f"(the instruments' exclusion, or linearity) is rejected by the data.")
    if kind == "everything":
        return (f"{lead} is the whole line: the instruments are too weak to exclude any value of the "
                f"coefficient; the data say nothing about it at this level.")
    if kind == "bounded":
        return (f"{lead} is the interval {shown}: bounded, so the instruments are strong enough to locate the "
                f"coefficient at this level.")
    if kind == "two rays":
        return (f"{lead} is {shown}: two rays, unbounded on both sides. The instruments are weak: values "
                f"near the 2SLS estimate's side may be rejected, but arbitrarily large ones are not.")
    return f"{lead} is {shown}: unbounded, so the instruments are weak at this level."


def _piece_text(piece, infinity: str = "∞") -> str:
    lo, hi = piece
    left = f"(-{infinity}" if lo is None else f"[{lo:.4g}"
    right = f"+{infinity})" if hi is None else f"{hi:.4g}]"
    return f"{left}, {right}"


# ------------------------------------------------------------------ conditional likelihood ratio
CLR_ROBUST_TO = "homoskedastic errors only (Moreira 2003)"


def partialled_parts(model: LinearIV):
    """The outcome, endogenous column and instruments with the exogenous columns partialled out, and
    the residual degrees of freedom n - q - (exogenous columns) - (absorbed levels)."""
    z = _partialled(model, model.instruments.to_numpy())
    y = _partialled(model, model.y.to_numpy())
    d = _partialled(model, model.endog.to_numpy()[:, 0])
    dof = model.n - z.shape[1] - model.exog.shape[1] - model.extra_df
    return y, d, z, dof


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(96)


def clr_pvalue(statistic, lam, k: int):
    """P(CLR > ``statistic``) given the conditioning statistic ``lam``, ``k`` instruments, one endogenous
    column (arrays broadcast): with Q1 ~ chi2(1) and s ~ chi2(k-1) independent, CLR > m exactly when
    Q1 > m (lam + m - s) / (lam + m) (Moreira 2003), so the p-value is one integral over s. With
    s = (lam + m) sin^2(phi) the integrand is smooth on [0, pi/2] (no endpoint singularity), and 96-point
    Gauss-Legendre quadrature is exact to rounding."""
    m, lam = np.broadcast_arrays(np.asarray(statistic, dtype=float), np.asarray(lam, dtype=float))
    m = np.maximum(m, 0.0)
    if k == 1:
        return chi2.sf(m, 1)
    cut = (lam + m)[..., None]
    phi = (_NODES + 1.0) * np.pi / 4           # nodes on [0, pi/2]
    sin, cos = np.sin(phi), np.cos(phi)
    s = cut * sin ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        integrand = (chi2.sf(m[..., None] * cos ** 2, 1) * chi2.pdf(s, k - 1) * 2 * cut * sin * cos)
    integrand = np.where(np.isfinite(integrand), integrand, 0.0)
    inside = integrand @ _WEIGHTS * np.pi / 4
    out = np.minimum(1.0, inside + chi2.sf(cut[..., 0], k - 1))
    return np.where(m > 0, out, 1.0)


def clr_test(data: CausalData, beta: float) -> dict:
    """Moreira's (2003) conditional likelihood-ratio test that the coefficient of the one endogenous
    column is ``beta`` (homoskedastic; ivmodels' statistic ``k AR(beta) - k min AR`` and its
    conditioning eigenvalue, with the data's fixed effects and weights): ``{"statistic", "pvalue",
    "lambda"}``."""
    model = _one_endogenous(data, "conditional likelihood-ratio test")
    stat, lam, k = _clr_at(*partialled_parts(model), beta)
    return {"statistic": stat, "pvalue": float(clr_pvalue(stat, lam, k)), "lambda": lam}


def _one_endogenous(data: CausalData, what: str) -> LinearIV:
    if data.problem != "iv" or len(data.treatment) != 1:
        raise DMLCoreError(f"The {what} is computed for one treatment column of an IV problem.")
    model = linear_iv(data)
    if model.endog.shape[1] != 1:
        raise DMLCoreError(f"The {what} needs one endogenous column; the categorical treatment "
                           f"'{data.treatment[0]}' enters as {model.endog.shape[1]} dummies. Recode it as 0/1.")
    return model


def _projector(z: np.ndarray):
    q, _ = np.linalg.qr(z)
    return lambda v: q @ (q.T @ v)


def _clr_at(y, d, z, dof, beta, project=None, ar_min=None):
    project = project or _projector(z)
    if ar_min is None:
        xy = np.column_stack([d, y])
        p_xy = project(xy)
        ar_min = float(np.min(np.real(eig(p_xy.T @ p_xy, (xy - p_xy).T @ (xy - p_xy), right=False))))
    e = y - d * beta
    pe = project(e)
    oe = e - pe
    stat = dof * (pe @ pe / (oe @ oe) - ar_min)
    xt = d - e * (oe @ d) / (oe @ oe)
    pxt = project(xt)
    lam = dof * (pxt @ pxt) / ((xt - pxt) @ (xt - pxt))
    return max(float(stat), 0.0), float(lam), z.shape[1]


def clr_set(data: CausalData, level: float = 0.95, scale: float = 1.0) -> dict:
    """The ``level`` confidence set of the coefficient from inverting :func:`clr_test`: every beta whose
    p-value exceeds 1 - level. The p-value is evaluated on 801 points of beta = b + s tan(t) (b the LIML
    estimate, s 2SLS's standard error, t spanning (-pi/2, pi/2), so the whole line), each crossing refined
    by Brent's method to 1e-13 in t; the ends at +-infinity are the limits there. Homoskedastic errors
    only, whatever the covariance choice (``robust_to`` says so). Returns ``{"pieces", "kind", "text",
    "level", "robust_to"}`` as :func:`anderson_rubin_set`."""
    model = _one_endogenous(data, "conditional likelihood-ratio set")
    y, d, z, dof = partialled_parts(model)
    project = _projector(z)
    xy = np.column_stack([d, y])
    p_xy = project(xy)
    ar_min = float(np.min(np.real(eig(p_xy.T @ p_xy, (xy - p_xy).T @ (xy - p_xy), right=False))))
    centre = fit_iv(model)
    name = model.endog.columns[0]
    step = max(float(centre.std_errors[name]), 1e-8 * (1.0 + abs(float(centre.params[name]))))
    from linearmodels.iv import IVLIML
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b0 = float(IVLIML(model.y, model.exog if model.exog.shape[1] else None, model.endog,
                              model.instruments).fit(cov_type="unadjusted").params[name])
    except (ValueError, np.linalg.LinAlgError):      # linearmodels: the residuals' cross product is singular
        raise DMLCoreError("The conditional likelihood-ratio set is not defined here: the instruments and covariates "
                           "fit the outcome and the treatment jointly without error (their residuals are linearly "
                           "dependent), so LIML's kappa cannot be estimated. Check for an outcome computed from "
                           "the other columns.") from None
    alpha = 1.0 - level

    def excess(t):        # > 0 inside the set
        stat, lam, k = _clr_at(y, d, z, dof, b0 + step * np.tan(t), project, ar_min)
        return float(clr_pvalue(stat, lam, k)) - alpha

    edge = np.pi / 2 - 1e-9
    grid = np.linspace(-edge, edge, 801)
    values = np.array([excess(t) for t in grid])
    roots = [brentq(excess, a, b, xtol=1e-13) for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:])
             if fa * fb < 0]
    bounds = [None, *roots, None]
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        mid = ((lo if lo is not None else -edge) + (hi if hi is not None else edge)) / 2
        if excess(mid) > 0:
            pieces.append([lo, hi])
    to_b = lambda t: None if t is None else (b0 + step * np.tan(t)) * scale   # noqa: E731
    pieces = [[to_b(lo), to_b(hi)] for lo, hi in pieces]
    if scale < 0:
        pieces = [[hi, lo] for lo, hi in reversed(pieces)]
    text = describe_set(pieces, level).replace("Anderson-Rubin", "conditional likelihood-ratio (CLR)")
    return {"pieces": pieces, "kind": set_kind(pieces), "text": text, "level": level, "robust_to": CLR_ROBUST_TO}

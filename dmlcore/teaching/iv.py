"""Linear IV lessons on a small simulation with an explicit hidden confounder U.

Every draw r holds n rows of

    Z ~ N(0, 1)                                      instrument (a fuel-cost shifter)
    U ~ N(0, 1)                                      hidden demand shock, never observed
    A = pi Z + sqrt(rho) U + sqrt(1 - rho) V         price
    Y = beta A + delta Z + sqrt(rho) U + sqrt(1 - rho) E      sales

with V, E ~ N(0, 1). The price's noise (what Z does not explain) and the sales' noise (what A and
Z do not explain) have correlation rho: U drives both. Hence, in large samples, OLS -> beta +
(rho + delta pi) / (pi^2 + 1) and 2SLS -> beta + delta / pi (delta is a direct Z -> Y effect, zero
when the exclusion restriction holds). The expected first-stage F is about 1 + n pi^2. Every
estimator is in closed form and vectorized over draws, so hundreds of draws take milliseconds.
The same random numbers are reused across the settings of one experiment, so settings differ
only in the parameter that changes.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy.stats import f as f_dist
from scipy.stats import norm

from dmlcore.inference.first_stage import strength_label
from dmlcore.inference.linear_iv import clr_pvalue
from dmlcore.errors import DMLCoreError
from dmlcore.teaching.tf import tf_critical_value
from dmlcore.teaching.result import Experiment, check_count, check_range, summarize

BETA = -1.0     # the true effect of price on sales
LEVEL = 0.95


def draw_noise(n: int, draws: int, seed: int, instruments: int = 1) -> dict[str, np.ndarray]:
    """Standard normal U, V, E of shape (draws, n) and Z of shape (draws, n, instruments):
    the randomness of one experiment."""
    rng = np.random.default_rng([seed, 41])
    out = {k: rng.standard_normal((draws, n)) for k in ("u", "v", "e")}
    out["z"] = rng.standard_normal((draws, n, instruments))
    return out


def build(noise: dict, *, pi: float, rho: float, beta: float = BETA, delta: float = 0.0,
          binary_instrument: bool = False) -> dict[str, np.ndarray]:
    """Z, A, Y (and U) of the design from ``noise`` (see the module docstring).

    With several instruments each has coefficient ``pi`` (and ``delta``). With
    ``binary_instrument`` each Z is 0 or 2 (a switch with standard deviation 1), so pi is still
    the change in the expected price per standard deviation of Z.
    """
    z = noise["z"]
    if binary_instrument:
        z = (z > 0).astype(float) * 2.0
    confounder = np.sqrt(rho) * noise["u"]
    a = pi * z.sum(-1) + confounder + np.sqrt(1.0 - rho) * noise["v"]
    y = beta * a + delta * z.sum(-1) + confounder + np.sqrt(1.0 - rho) * noise["e"]
    return {"z": z, "a": a, "y": y, "u": noise["u"]}


def _moments(z, a, y=None):
    """Centered cross products per draw: Szz (.., K, K), Sza (.., K), Szy, Saa, Say, Syy."""
    z = np.asarray(z, dtype=float)
    if z.ndim == a.ndim:
        z = z[..., None]
    z = z - z.mean(axis=-2, keepdims=True)
    a = a - a.mean(axis=-1, keepdims=True)
    m = {"zz": np.einsum("...ik,...il->...kl", z, z), "za": np.einsum("...ik,...i->...k", z, a),
         "aa": (a * a).sum(-1), "n": a.shape[-1], "k": z.shape[-1]}
    if y is not None:
        y = y - y.mean(axis=-1, keepdims=True)
        m.update(zy=np.einsum("...ik,...i->...k", z, y), ay=(a * y).sum(-1), yy=(y * y).sum(-1))
    return m


def _quad(szz, u, v):
    """u' Szz^-1 v per draw."""
    return np.einsum("...k,...k->...", u, np.linalg.solve(szz, v[..., None])[..., 0])


def ols_slope(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Slope of the regression of y on a (with a constant), along the last axis."""
    a = a - a.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    return (a * y).sum(-1) / (a * a).sum(-1)


def first_stage_f(z: np.ndarray, a: np.ndarray) -> np.ndarray:
    """F statistic of the instruments in the regression of a on them and a constant.

    ``z`` has shape (..., n) for one instrument or (..., n, K) for K of them.
    """
    m = _moments(z, a)
    r2 = _quad(m["zz"], m["za"], m["za"]) / m["aa"]
    return (r2 / m["k"]) / ((1.0 - r2) / (m["n"] - m["k"] - 1))


def tsls(z: np.ndarray, a: np.ndarray, y: np.ndarray, level: float = LEVEL) -> dict[str, np.ndarray]:
    """2SLS of y on a with instruments z and a constant, along the rows axis.

    Returns the slope (cov(z, y) / cov(z, a) with one instrument: the Wald ratio when z is
    binary), its usual homoskedastic standard error, the ``level`` Wald interval, and the
    first-stage F.
    """
    m = _moments(z, a, y)
    paa, pay = _quad(m["zz"], m["za"], m["za"]), _quad(m["zz"], m["za"], m["zy"])
    slope = pay / paa
    sigma2 = (m["yy"] - 2 * slope * m["ay"] + slope ** 2 * m["aa"]) / (m["n"] - 2)
    se = np.sqrt(sigma2 / paa)
    q = norm.ppf(0.5 + level / 2)
    r2 = paa / m["aa"]
    f_stat = (r2 / m["k"]) / ((1.0 - r2) / (m["n"] - m["k"] - 1))
    return {"slope": slope, "se": se, "lower": slope - q * se, "upper": slope + q * se, "f_stat": f_stat}


def kclass(z: np.ndarray, a: np.ndarray, y: np.ndarray, fuller_alpha: float | None = None,
           level: float = LEVEL) -> dict[str, np.ndarray]:
    """LIML (``fuller_alpha`` None) or Fuller's modified LIML (``fuller_alpha``, usually 1) of y on a
    with instruments z and a constant, in closed form per draw, with its usual homoskedastic
    standard error and ``level`` Wald interval.

    With W = (a, y) centred, kappa_LIML is the smallest root of det(W'W - kappa W'M W) = 0 (M the
    residual maker of the instruments); Fuller (1977) uses kappa_LIML - alpha / (n - K - 1). The
    estimate is a'(I - kappa M) y / a'(I - kappa M) a. Also returns ``ar_min`` = kappa_LIML - 1, the
    smallest Anderson-Rubin ratio that the CLR statistic subtracts."""
    m = _moments(z, a, y)
    paa, pay, pyy = (_quad(m["zz"], m["za"], m["za"]), _quad(m["zz"], m["za"], m["zy"]),
                     _quad(m["zz"], m["zy"], m["zy"]))
    # W'W and W'MW entries
    waa, way, wyy = m["aa"], m["ay"], m["yy"]
    raa, ray, ryy = waa - paa, way - pay, wyy - pyy
    # det(W'W - k R) = 0: (raa ryy - ray^2) k^2 - (waa ryy + wyy raa - 2 way ray) k + (waa wyy - way^2) = 0
    qa = raa * ryy - ray ** 2
    qb = -(waa * ryy + wyy * raa - 2.0 * way * ray)
    qc = waa * wyy - way ** 2
    kappa_liml = (-qb - np.sqrt(np.clip(qb ** 2 - 4.0 * qa * qc, 0.0, None))) / (2.0 * qa)
    dof = m["n"] - m["k"] - 1
    kappa = kappa_liml if fuller_alpha is None else kappa_liml - fuller_alpha / dof
    num, den = way - kappa * ray, waa - kappa * raa
    slope = num / den
    sigma2 = (wyy - 2 * slope * way + slope ** 2 * waa) / (m["n"] - 2)
    se = np.sqrt(sigma2 / den)
    q = norm.ppf(0.5 + level / 2)
    return {"slope": slope, "se": se, "lower": slope - q * se, "upper": slope + q * se, "kappa": kappa,
            "ar_min": kappa_liml - 1.0}


def clr_covers(z: np.ndarray, a: np.ndarray, y: np.ndarray, beta0: float, level: float = LEVEL) -> np.ndarray:
    """Whether Moreira's (2003) conditional likelihood-ratio set at ``level`` contains ``beta0``, per
    draw (homoskedastic; the statistic and conditioning value of
    :func:`dmlcore.inference.linear_iv.clr_test`, its p-value from
    :func:`~dmlcore.inference.linear_iv.clr_pvalue`), from the centred moments."""
    m = _moments(z, a, y)
    k, dof = m["k"], m["n"] - m["k"] - 1
    ar_min = kclass(z, a, y)["ar_min"]
    # e = y - beta0 a: its projection on Z and the residual's, from the moments
    ze = m["zy"] - beta0 * m["za"]
    ee = m["yy"] - 2 * beta0 * m["ay"] + beta0 ** 2 * m["aa"]
    pe = _quad(m["zz"], ze, ze)
    oe = ee - pe
    stat = np.maximum(dof * (pe / oe - ar_min), 0.0)
    # xt = a - e (e'M a) / (e'M e); its projection and residual
    ea = m["ay"] - beta0 * m["aa"]
    oea = ea - _quad(m["zz"], ze, m["za"])          # e'M a
    c = oea / oe
    zxt = m["za"] - c[..., None] * ze
    xx = m["aa"] - 2 * c * ea + c ** 2 * ee
    pxt = _quad(m["zz"], zxt, zxt)
    lam = dof * pxt / (xx - pxt)
    return clr_pvalue(stat, lam, k) > 1.0 - level


def tf_covers(z: np.ndarray, a: np.ndarray, y: np.ndarray, beta0: float) -> np.ndarray:
    """Whether the 5 % tF interval of Lee et al. (2022) contains ``beta0``, per draw: |t| of 2SLS at
    ``beta0`` against the critical value at the draw's first-stage F (:mod:`dmlcore.teaching.tf`).
    One instrument only; with several the procedure does not apply (NaN)."""
    t = tsls(z, a, y)
    if np.ndim(z) != np.ndim(a) and np.shape(z)[-1] > 1:
        return np.full(np.shape(t["slope"]), np.nan)
    crit = np.array([tf_critical_value(float(f)) for f in np.ravel(t["f_stat"])]).reshape(np.shape(t["f_stat"]))
    return (np.abs(t["slope"] - beta0) <= crit * t["se"]).astype(float)


def ar_statistic(z: np.ndarray, a: np.ndarray, y: np.ndarray, beta0) -> np.ndarray:
    """Anderson-Rubin statistic of H0: beta = beta0: the F statistic of the instruments in the
    regression of y - beta0 a on them and a constant. Under H0 it is F(K, n - K - 1)
    distributed whatever the instruments' strength (normal errors)."""
    beta0 = np.asarray(beta0, dtype=float)
    return first_stage_f(z, y - (beta0[..., None] if beta0.ndim else beta0) * a)


def ar_critical(n: int, k: int = 1, level: float = LEVEL) -> float:
    return float(f_dist.ppf(level, k, n - k - 1))


def ar_covers(z, a, y, beta0, level: float = LEVEL) -> np.ndarray:
    """Whether the Anderson-Rubin set at ``level`` contains ``beta0``, per draw."""
    k = 1 if np.ndim(z) == np.ndim(a) else np.shape(z)[-1]
    return ar_statistic(z, a, y, beta0) <= ar_critical(a.shape[-1], k, level)


def ar_interval(z: np.ndarray, a: np.ndarray, y: np.ndarray, level: float = LEVEL,
                lost: int = 0) -> dict[str, np.ndarray]:
    """The ``level`` Anderson-Rubin confidence set {beta0: AR(beta0) <= F crit}, in closed form.

    ``lost``: degrees of freedom already used, e.g. by covariates partialled out of z, a and y
    beforehand (the F statistic's denominator then has n - K - 1 - lost of them).

    The set solves a quadratic inequality in beta0. With one instrument it is a bounded interval
    exactly when the first-stage F exceeds the AR critical value (about 3.9); otherwise it is
    the whole line or the line minus an interval (two half-lines). With several instruments it
    may also be empty (the instruments disagree). Returns ``lower`` and ``upper`` (the ends, or
    the inner ends of the two half-lines) and ``shape``: "interval", "two half-lines",
    "whole line" or "empty".
    """
    m = _moments(z, a, y)
    k, n = m["k"], m["n"] - lost
    kc = k * ar_critical(n, k, level)
    w = n - k - 1 + kc
    qa = w * _quad(m["zz"], m["za"], m["za"]) - kc * m["aa"]
    qb = -2.0 * w * _quad(m["zz"], m["za"], m["zy"]) + 2.0 * kc * m["ay"]
    qc = w * _quad(m["zz"], m["zy"], m["zy"]) - kc * m["yy"]
    disc = qb ** 2 - 4.0 * qa * qc
    root = np.sqrt(np.clip(disc, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        r1, r2 = (-qb - root) / (2.0 * qa), (-qb + root) / (2.0 * qa)
    lower, upper = np.minimum(r1, r2), np.maximum(r1, r2)
    shape = np.where(qa > 0, np.where(disc >= 0, "interval", "empty"),
                     np.where(disc > 0, "two half-lines", "whole line"))
    lower = np.where(shape == "whole line", -np.inf, np.where(shape == "empty", np.nan, lower))
    upper = np.where(shape == "whole line", np.inf, np.where(shape == "empty", np.nan, upper))
    return {"lower": lower, "upper": upper, "shape": shape}


def pi_for_f(expected_f: float, n: int) -> float:
    """The coefficient pi of each instrument whose expected first-stage F is about ``expected_f``
    (the concentration parameter n K pi^2 equals K (expected_f - 1) with K instruments)."""
    if not expected_f > 1.0:
        raise DMLCoreError(f"expected_f must be above 1 (F is about 1 with a useless instrument); got {expected_f}.")
    return float(np.sqrt((expected_f - 1.0) / n))


# ------------------------------------------------------------------ experiments
def confounding(rhos=(0.0, 0.25, 0.5, 0.75, 0.9), *, n: int = 500, draws: int = 200, pi: float = 1.0,
                seed: int = 0) -> Experiment:
    """OLS and 2SLS over ``draws`` simulations at each confounding strength rho.

    OLS moves with rho (its large-sample value is beta + rho / (1 + pi^2)); 2SLS does not.
    """
    check_count("n", n, 20)
    check_count("draws", draws, 2)
    for rho in rhos:
        check_range("rho", rho, 0.0, 0.99)
    start = time.perf_counter()
    noise = draw_noise(n, draws, seed)
    rows = []
    for rho in rhos:
        d = build(noise, pi=pi, rho=rho)
        rows.append(_long(rho=rho, OLS=ols_slope(d["a"], d["y"]), **{"2SLS": tsls(d["z"], d["a"], d["y"])["slope"]}))
    table = pd.concat(rows, ignore_index=True)
    summary = summarize(table, ["rho", "estimator"])
    summary["large-sample value"] = np.where(summary["estimator"] == "OLS",
                                             BETA + summary["rho"] / (1.0 + pi ** 2), BETA)
    return Experiment("confounding", table, summary, dict(n=n, draws=draws, pi=pi, seed=seed), BETA,
                      time.perf_counter() - start)


def weak_instruments(expected_fs=(1.5, 3.0, 5.0, 10.0, 20.0, 50.0, 105.0), *, instruments: int = 1,
                     n: int = 500, draws: int = 500, rho: float = 0.9, seed: int = 0,
                     level: float = LEVEL) -> Experiment:
    """2SLS against OLS as the instrument weakens, with Wald and Anderson-Rubin intervals, and beside
    them LIML, Fuller (alpha = 1) with its interval, the CLR set and (one instrument) the tF interval.

    For each expected first-stage F (each instrument's coefficient set by :func:`pi_for_f`), over
    ``draws`` simulations: the 2SLS and OLS estimates, the first-stage F, whether the usual
    2SLS interval and the Anderson-Rubin set cover the truth, and the AR set's shape. The
    summary adds the median F, the relative median bias of 2SLS (its median bias divided by
    OLS's: 0 is unbiased, 1 is as biased as OLS), both coverages, the shares of unbounded and
    of empty AR sets, and the share of draws with F below 10.
    """
    check_count("n", n, 20)
    check_count("draws", draws, 2)
    check_range("rho", rho, 0.0, 0.99)
    check_count("instruments", instruments, 1, 20)
    start = time.perf_counter()
    noise = draw_noise(n, draws, seed, instruments)
    parts, rows = [], []
    for target in expected_fs:
        pi = pi_for_f(target, n)
        d = build(noise, pi=pi, rho=rho)
        iv, ols = tsls(d["z"], d["a"], d["y"], level), ols_slope(d["a"], d["y"])
        ar = ar_interval(d["z"], d["a"], d["y"], level)
        covers_ar = ar_covers(d["z"], d["a"], d["y"], BETA, level)
        covers_wald = (iv["lower"] <= BETA) & (BETA <= iv["upper"])
        liml, fuller = kclass(d["z"], d["a"], d["y"], None, level), kclass(d["z"], d["a"], d["y"], 1.0, level)
        covers_fuller = (fuller["lower"] <= BETA) & (BETA <= fuller["upper"])
        covers_clr = clr_covers(d["z"], d["a"], d["y"], BETA, level)
        covers_tf = tf_covers(d["z"], d["a"], d["y"], BETA) if level == LEVEL else np.full(draws, np.nan)
        parts.append(pd.DataFrame({"expected F": target, "draw": np.arange(draws), "2SLS": iv["slope"],
                                   "OLS": ols, "first-stage F": iv["f_stat"], "2SLS covers": covers_wald,
                                   "AR covers": covers_ar, "AR shape": ar["shape"],
                                   "2SLS lower": iv["lower"], "2SLS upper": iv["upper"],
                                   "AR lower": ar["lower"], "AR upper": ar["upper"], "LIML": liml["slope"],
                                   "Fuller": fuller["slope"], "Fuller covers": covers_fuller,
                                   "CLR covers": covers_clr, "tF covers": covers_tf}))
        med_iv, med_ols = float(np.median(iv["slope"])), float(np.median(ols))
        f_med = float(np.median(iv["f_stat"]))
        rows.append({"expected F": target, "pi": pi, "median F": f_med,
                     "strength": strength_label(f_med, instruments).level,
                     "median 2SLS": med_iv, "median OLS": med_ols,
                     "relative median bias": (med_iv - BETA) / (med_ols - BETA),
                     "2SLS interval coverage": float(covers_wald.mean()),
                     "AR coverage": float(covers_ar.mean()),
                     "AR unbounded": float(np.isin(ar["shape"], ("two half-lines", "whole line")).mean()),
                     "AR empty": float(np.mean(ar["shape"] == "empty")),
                     "share F < 10": float(np.mean(iv["f_stat"] < 10)),
                     "median LIML": float(np.median(liml["slope"])),
                     "median Fuller": float(np.median(fuller["slope"])),
                     "LIML relative median bias": (float(np.median(liml["slope"])) - BETA) / (med_ols - BETA),
                     "Fuller relative median bias": (float(np.median(fuller["slope"])) - BETA) / (med_ols - BETA),
                     "Fuller interval coverage": float(covers_fuller.mean()),
                     "CLR coverage": float(covers_clr.mean()),
                     "tF coverage": float(np.mean(covers_tf)) if instruments == 1 else float("nan")})
    table = pd.concat(parts, ignore_index=True)
    return Experiment("weak instruments", table, pd.DataFrame(rows),
                      dict(n=n, draws=draws, rho=rho, seed=seed, level=level, instruments=instruments), BETA,
                      time.perf_counter() - start)


def exclusion(deltas=(0.0, 0.05, 0.1, 0.2, 0.3), *, pi: float = 0.5, n: int = 500, draws: int = 200,
              rho: float = 0.5, seed: int = 0) -> Experiment:
    """2SLS when the instrument also affects the outcome directly by ``delta``.

    2SLS then converges to beta + delta / pi: the violation is divided by the first stage, so
    a weak instrument magnifies it. The summary holds that prediction beside the medians.
    """
    check_count("n", n, 20)
    check_count("draws", draws, 2)
    if not pi:
        raise DMLCoreError("pi must be nonzero: with pi = 0 the instrument does not move the treatment.")
    start = time.perf_counter()
    noise = draw_noise(n, draws, seed)
    rows = []
    for delta in deltas:
        d = build(noise, pi=pi, rho=rho, delta=delta)
        rows.append(_long(**{"direct effect": delta}, OLS=ols_slope(d["a"], d["y"]),
                          **{"2SLS": tsls(d["z"], d["a"], d["y"])["slope"]}))
    table = pd.concat(rows, ignore_index=True)
    summary = summarize(table, ["direct effect", "estimator"])
    predicted = BETA + summary["direct effect"] / pi
    summary["large-sample value"] = np.where(summary["estimator"] == "2SLS", predicted,
                                             BETA + (rho + summary["direct effect"] * pi) / (1.0 + pi ** 2))
    return Experiment("exclusion", table, summary, dict(n=n, draws=draws, pi=pi, rho=rho, seed=seed), BETA,
                      time.perf_counter() - start)


def wald(*, n: int = 300, pi: float = 0.6, rho: float = 0.9, seed: int = 0) -> Experiment:
    """One data set with a binary instrument: the scatter, the group means, the Wald ratio.

    ``draws`` holds the rows (z, price, sales); ``summary`` one row per estimate: the Wald ratio
    (difference of mean sales between the instrument's groups over the difference of mean
    prices, equal to 2SLS with that instrument), OLS, and the group means.
    """
    check_count("n", n, 20)
    start = time.perf_counter()
    d = build(draw_noise(n, 1, seed), pi=pi, rho=rho, binary_instrument=True)
    z, a, y = d["z"][0, :, 0], d["a"][0], d["y"][0]
    on = z > 0
    if on.all() or not on.any():
        raise DMLCoreError("The simulated instrument took one value only; use more rows.")
    means = {g: (float(a[m].mean()), float(y[m].mean())) for g, m in (("off", ~on), ("on", on))}
    ratio = (means["on"][1] - means["off"][1]) / (means["on"][0] - means["off"][0])
    rows = pd.DataFrame({"instrument": np.where(on, "on", "off"), "price": a, "sales": y})
    summary = pd.DataFrame([
        {"estimate": "Wald ratio", "slope": ratio},
        {"estimate": "2SLS", "slope": float(tsls(z, a, y)["slope"])},
        {"estimate": "OLS", "slope": float(ols_slope(a, y))},
        {"estimate": "truth", "slope": BETA}])
    return Experiment("wald", rows, summary, dict(n=n, pi=pi, rho=rho, seed=seed, means=means), BETA,
                      time.perf_counter() - start)


def late(*, n: int = 1000, draws: int = 200, compliers: float = 0.4, always: float = 0.3,
         effect_compliers: float = 1.0, effect_always: float = 3.0, effect_never: float = 0.0,
         seed: int = 0) -> Experiment:
    """A binary treatment whose effect differs across people: Wald estimates the compliers' effect.

    Each person is a complier (takes the treatment when the instrument is on), an always-taker
    or a never-taker (shares ``compliers``, ``always``, the rest); there are no defiers
    (monotonicity). Each type has its own effect. The instrument is a fair coin, independent of
    type and of the hidden U. The summary compares, over ``draws`` simulations, the Wald ratio
    with the average effect over everyone (ATE), over the compliers (LATE), and the naive
    difference in mean outcomes between treated and untreated. That difference is the average
    effect among the treated (``params["att"]``: above the ATE when those who take the treatment
    gain more, selection on gains) plus the gap in untreated outcomes between the two groups
    (``params["baseline_gap"]``: the types differ in U). Both are medians over the draws.
    """
    check_count("n", n, 20)
    check_count("draws", draws, 2)
    never = 1.0 - compliers - always
    if compliers <= 0 or always < 0 or never < -1e-12:
        raise DMLCoreError(f"Shares must be nonnegative with compliers > 0 and compliers + always <= 1; "
                           f"got compliers {compliers}, always {always}.")
    start = time.perf_counter()
    rng = np.random.default_rng([seed, 43])
    kind = rng.choice(3, size=(draws, n), p=[compliers, always, max(never, 0.0)])  # 0 c, 1 a, 2 n
    z = rng.integers(0, 2, size=(draws, n)).astype(float)
    u = rng.standard_normal((draws, n)) + np.choose(kind, [0.0, 1.0, -1.0])  # types differ in U too
    treated = np.where(kind == 0, z, np.where(kind == 1, 1.0, 0.0))
    effect = np.choose(kind, [effect_compliers, effect_always, effect_never])
    y = effect * treated + u + rng.standard_normal((draws, n))
    on = z > 0
    wald_ratio = ((y * on).sum(-1) / on.sum(-1) - (y * ~on).sum(-1) / (~on).sum(-1)) / (
        (treated * on).sum(-1) / on.sum(-1) - (treated * ~on).sum(-1) / (~on).sum(-1))
    t = treated > 0
    naive = (y * t).sum(-1) / t.sum(-1) - (y * ~t).sum(-1) / (~t).sum(-1)
    att = (effect * t).sum(-1) / t.sum(-1)      # the average effect among the treated
    table = _long(Wald=wald_ratio, **{"treated minus untreated": naive})
    summary = summarize(table, ["estimator"])
    ate = compliers * effect_compliers + always * effect_always + max(never, 0.0) * effect_never
    params = dict(n=n, draws=draws, compliers=compliers, always=always, never=max(never, 0.0),
                  effect_compliers=effect_compliers, effect_always=effect_always, effect_never=effect_never,
                  seed=seed, ate=ate, late=effect_compliers, att=float(np.median(att)),
                  baseline_gap=float(np.median(naive - att)))
    return Experiment("late", table, summary, params, effect_compliers, time.perf_counter() - start)


def _long(**columns) -> pd.DataFrame:
    """Estimates per draw as a long table: scalar keywords are settings, arrays are estimators."""
    settings = {k: v for k, v in columns.items() if np.ndim(v) == 0}
    estimates = {k: np.asarray(v) for k, v in columns.items() if np.ndim(v) > 0}
    frames = [pd.DataFrame({**settings, "draw": np.arange(len(v)), "estimator": name, "estimate": v})
              for name, v in estimates.items()]
    return pd.concat(frames, ignore_index=True)

"""Debiased effects: the plug-in plus a one-step correction, whatever f was fitted with.

The effect theta = E[m(W; f)] (:func:`dmlcore.runs.average_effect.contrast`: the average derivative, the
average effect of a 0/1 treatment, the proximal average slope) is linear in f. Where a
representer xi(C) satisfies E[m(W; h)] = E[xi(C) h(X)] for every h in f's model,

    psi_i = m(W_i; f-hat) + xi-hat(C_i) (Y_i - f-hat(X_i)),   theta-hat = mean_i psi_i,
    se = sd_i(psi_i) / sqrt(n),

is first-order insensitive to the error of f-hat (and of xi-hat): a shrunk f-hat is corrected by
the representer-weighted residual. Only f-hat's ``predict`` is used, so every method's f is
corrected the same way (../shared/design/DEBIASED-EFFECTS.md has the derivation).

Representer (sieve minimum distance, Chen and Pouzo 2015): bases b(X) for f and q(C) for xi,
with M = mean_i m(W_i; b), G = mean_i q(C_i) b(X_i)', Q = mean_i q(C_i) q(C_i)',

    xi(C) = q(C)' gamma,   gamma = Q^-1 G (G' Q^-1 G)^-1 M,

the smallest xi (in mean square) with mean_i xi(C_i) b(X_i) = M. M uses the same contrast
points and weights as the plug-in. It is cross-fitted: the xi-hat of a row comes from the
RIESZ_FOLDS - 1 folds without it (the resampler's ``"representer"`` folds,
:mod:`dmlcore.stats.resample`). f-hat is the method's own full-sample fit (measured against a
cross-fitted f-hat in docs/coverage.md).

Bases (:data:`LADDER`): additive, as Sieve 2SLS's: a constant, the treatment (linear, or a cubic
spline), splines in the other inputs drawn given C and in the excluded conditioning columns
(instruments, treatment proxies), and a linear term or level indicators per covariate; richer
rungs use splines in continuous covariates and products of the treatment (instruments) with the
covariates. A rung whose G'Q^-1G is singular (fewer excluded functions than the treatment
needs: one binary instrument identifies only a slope) is skipped. The rung is chosen without
the truth by a Lepski rule: the first rung whose estimate is within LEPSKI_Z standard errors of
the difference (sd_i(psi_i - psi'_i) / sqrt(n)) of every richer rung's.

Weak identification: ``strength`` = n / (mean_i xi-hat(C_i)^2 Var(A | covariates) / D^2), D the
distance of a binary treatment's two values (1 for a slope), Var(A | covariates) the variance of
A's residual on the covariates. In the linear model with one instrument it is n times the first
stage's partial R^2, close to the first-stage F; it falls as the representer explodes. The
effect is reported as weakly identified (:func:`weak_reason`, one line) below WEAK_STRENGTH, or
when the run's linear first-stage F is below WEAK_FIRST_STAGE_F (calibrated on the coverage
measured across instrument strengths, docs/coverage.md).

Clusters (``cluster``): the representer's folds keep each cluster whole and every standard error
comes from the clusters' sums of the score (:mod:`dmlcore.stats.clusters`); the effect's takes
the score with f-hat's error inside f's basis replaced by the sieve fit's (:func:`clustered_score`:
that part moves the estimate very little, but its cluster sums widened the interval: docs/coverage.md).

Beside the headline: ``sieve_estimate`` / ``sieve_std_error``, the sieve minimum-distance fit of f
in the chosen bases corrected with the same representer (a check whose f-hat the bases can
represent), and the specification spread (:func:`specification_spread`: every basis, each
cross-fit of a repeated cross-fitting).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.stats import norm

from dmlcore.stats import resample
from dmlcore.stats.clusters import describe, groups_of, mean_se
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import supports
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.splines import RIDGE_SHARE, AdditiveBasis, ColumnBasis, LinearColumn, is_categorical, spd_solve

RIESZ_FOLDS = 5
EFFECT_FOLDS = 2         # refits of the method that cross-fit f-hat (the held-out score's, when it runs)
MAX_LEVELS = 10          # a covariate with at most this many integer values gets level indicators
ROWS_PER_FUNCTION = 10   # training rows per function of q(C), at least
LEPSKI_Z = 2.5           # about the two-sided Bonferroni 5 % point over four comparisons
WEAK_STRENGTH = 10.0     # representer strength below this: weakly identified (docs/coverage.md)
WEAK_FIRST_STAGE_F = 10.0  # the linear first stage's F below this: weakly identified; the smallest candidate bar at
                           # which the silent fits of the strength sweep, pooled, covered 90 % (docs/coverage.md, whole
                           # refits; per design no bar does; tests/test_flag_calibration.py recomputes it from the rows)
PENALTY = 1.0            # lambda * sqrt(n): the representer's spline terms smoothed less as n grows
SINGULAR = 1e-9          # smallest eigenvalue of G'Q^-1G (columns scaled to unit diagonal) relative to its largest
SINGULAR_TEXT = "the conditioning variables do not move every function of f's basis (G'Q^-1G is singular)"
NULL_LOAD = 1e-6         # share of M (scaled) on G'Q^-1G's null directions above which the effect is not identified
PREDICT_ROWS = 2 ** 16   # points predicted at once
SPREAD_SE = 2.0          # a specification spread wider than this many standard errors is reported as sensitive
SPREAD_RULE = ("headline: the debiased effect of the fit as configured (its learners; with repeated cross-fitting, "
               "the median f-hat), with the representer basis Lepski's rule picks; the spread lists the same effect "
               "under the ladder's other bases and each cross-fit's own f-hat")
SWITCHED_OFF = (f"not computed: switched off for this run (it refits the method {EFFECT_FOLDS} times, or reuses the "
                f"held-out residual's refits where there are any); fit with the debiased effect on to get it")


@dataclass(frozen=True)
class Rung:
    """One pair of bases: ``treatment_knots`` None is linear in the treatment; ``covariates``
    "linear" or "spline"; ``interact`` multiplies the treatment (instruments) by the covariates;
    ``proxies`` (proximal data only; nothing elsewhere) multiplies the treatment's term by each outcome
    proxy's in f's basis and by each treatment proxy's in the instruments', so that a bridge h(a, w)
    that is not additive in (a, w) can be represented and its products identified."""

    treatment_knots: int | None
    excluded_knots: int
    covariates: str = "linear"
    interact: bool = False
    proxies: bool = False

    def describe(self) -> str:
        a = "linear in the treatment" if self.treatment_knots is None else \
            f"a spline in the treatment ({self.treatment_knots} knots)"
        text = (f"{a}, splines in the excluded variables ({self.excluded_knots} knots), "
                f"{self.covariates} covariates")
        return (text + (", treatment x covariate products" if self.interact else "")
                + (", treatment x proxy products" if self.proxies else ""))


LADDER = (Rung(None, 3), Rung(2, 4), Rung(4, 6), Rung(4, 6, "spline"), Rung(4, 6, "spline", True))


# ------------------------------------------------------------------ bases
def _column(x, name, kind, knots):
    """One column's basis: "linear", "spline" (``knots`` interior knots) or "levels"."""
    if kind == "linear":
        return LinearColumn.build(x, name)
    return ColumnBasis.build(x, name, knots, MAX_LEVELS if kind == "levels" else 0)


def _kind(x, default):
    """A linear term for a two-valued column, level indicators for a categorical one, else ``default``."""
    levels = np.unique(x)
    return "linear" if len(levels) <= 2 else "levels" if is_categorical(levels, MAX_LEVELS) else default


def build_bases(data: CausalData, rung: Rung) -> tuple[AdditiveBasis, AdditiveBasis]:
    """(b over the input columns, q over the conditioning columns) for ``rung``."""
    treatment, covariates = data.treatment[0], set(data.covariates)
    inner = rung.treatment_knots or 0

    def column(name, knots):
        x = data.table[name].to_numpy(dtype=float)
        if name == treatment:
            return _column(x, name, _kind(x, "linear" if rung.treatment_knots is None else "spline"), inner)
        if name in covariates:
            return _column(x, name, _kind(x, rung.covariates), rung.excluded_knots)
        return _column(x, name, _kind(x, "spline"), knots)   # drawn inputs, excluded conditioning columns

    def basis(names, knots, lead, proxies):
        pairs = [(i, j) for i, a in enumerate(names) if a in lead for j, c in enumerate(names)
                 if c in covariates] if rung.interact else []
        if rung.proxies:
            pairs += [(names.index(treatment), j) for j, c in enumerate(names) if c in proxies]
        penalized = {j for j, name in enumerate(names) if name not in covariates}
        return AdditiveBasis([column(name, knots) for name in names], pairs, 0, penalized)

    x_names, c_names = data.input_columns, data.conditioning_columns
    return (basis(x_names, inner, {treatment}, set(data.outcome_proxy)),
            basis(c_names, rung.excluded_knots, {n for n in c_names if n not in covariates}, set(data.treatment_proxy)))


# ------------------------------------------------------------------ the representer
def riesz_gamma(qq: np.ndarray, qb: np.ndarray, m: np.ndarray, omega: np.ndarray | None = None,
                penalty: float = 0.0, qinv_g: np.ndarray | None = None) -> np.ndarray:
    """gamma = Q^-1 G (G'Q^-1G + lambda Omega)^-1 M from Q (k x k), G (k x p) and M (p).

    ``omega`` is the P-spline penalty of b (second differences of the spline terms: linear
    functions are not penalised) and lambda = ``penalty`` * tr(G'Q^-1G) / tr(Omega); 0 is the
    exact minimum-distance solution. The solve is on b's columns scaled to a unit diagonal of
    G'Q^-1G and takes the smallest solution where functions of b coincide on these rows (say
    dummies of rare categories in a fold); a DMLCoreError when M loads on the functions that the
    conditioning variables do not move (G'Q^-1G singular in M's direction: not identified in
    these bases). ``qinv_g``: Q^-1 G when already solved (:class:`LadderBases`)."""
    qinv_g = spd_solve(qq, qb) if qinv_g is None else qinv_g
    gram = qb.T @ qinv_g
    d = np.sqrt(np.clip(np.diag(gram), 1e-300, None))       # the checks are blind to the columns' units
    eig, vec = np.linalg.eigh((gram + gram.T) / 2 / np.outer(d, d))
    if not np.isfinite(eig).all():
        raise DMLCoreError(SINGULAR_TEXT)
    null = eig <= SINGULAR * max(eig[-1], 1e-300)
    target = m / d
    if null.all() or np.linalg.norm(vec[:, null].T @ target) > NULL_LOAD * max(np.linalg.norm(target), 1e-300):
        raise DMLCoreError(SINGULAR_TEXT)
    if omega is not None and penalty > 0 and np.trace(omega) > 0:
        gram = gram + penalty * np.trace(gram) / np.trace(omega) * omega
    scaled = (gram + gram.T) / 2 / np.outer(d, d)
    return qinv_g @ (np.linalg.lstsq(scaled, target, rcond=SINGULAR)[0] / d)


def smoothness(basis) -> np.ndarray:
    """The P-spline penalty of ``basis`` alone (without the small ridge sieve.py adds for its
    own solves): zero for linear terms, levels and the constant."""
    return basis.penalty() - RIDGE_SHARE * np.eye(basis.size)


def fold_grams(bx: np.ndarray, qc: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, G, Q^-1 G) on the rows ``train`` (a mask): what the representer and the sieve fit of a fold solve with."""
    n = train.sum()
    qq, qb = qc[train].T @ qc[train] / n, qc[train].T @ bx[train] / n
    return qq, qb, spd_solve(qq, qb)


def cross_fitted_xi(bx: np.ndarray, qc: np.ndarray, mb: np.ndarray, fold_of: np.ndarray,
                    omega: np.ndarray | None = None, penalty: float = 0.0, grams=None) -> np.ndarray:
    """xi-hat(C_i) for each row, gamma fitted on the rows of the other folds.

    ``bx`` (n x p) is b at the rows, ``qc`` (n x k) q at the rows, ``mb`` (n x p) the rows'
    m(W_i; b) (mean over rows: M); ``omega``, ``penalty`` as in :func:`riesz_gamma`; ``grams(k, train)``,
    when given, returns fold k's :func:`fold_grams` (kept by :class:`LadderBases`)."""
    grams = grams or (lambda k, train: fold_grams(bx, qc, train))
    xi = np.empty(len(bx))
    for k in np.unique(fold_of):
        train, held = fold_of != k, fold_of == k
        qq, qb, qinv_g = grams(k, train)
        gamma = riesz_gamma(qq, qb, mb[train].mean(0), omega, penalty, qinv_g)
        xi[held] = qc[held] @ gamma
    return xi


def cross_fitted_sieve(bx: np.ndarray, qc: np.ndarray, mb: np.ndarray, y: np.ndarray, fold_of: np.ndarray,
                       omega: np.ndarray | None = None, penalty: float = 0.0,
                       grams=None) -> tuple[np.ndarray, np.ndarray]:
    """The sieve minimum-distance fit of f in b with the instruments q (Sieve 2SLS in the
    representer's bases, penalised as :func:`riesz_gamma`), cross-fitted like xi-hat: (its f at
    each row, its m(W_i; f) at each row), each from the fit without the row's fold. Corrected with
    the same representer it is the check beside the debiased effect (``sieve_estimate``): an
    estimate whose f-hat the representer's bases can represent. ``grams`` as in :func:`cross_fitted_xi`."""
    grams = grams or (lambda k, train: fold_grams(bx, qc, train))
    f_rows, m_rows = np.empty(len(bx)), np.empty(len(bx))
    for k in np.unique(fold_of):
        train, held = fold_of != k, fold_of == k
        n = train.sum()
        qq, qb, qinv_g = grams(k, train)
        gram = qb.T @ qinv_g
        if omega is not None and penalty > 0 and np.trace(omega) > 0:
            gram = gram + penalty * np.trace(gram) / np.trace(omega) * omega
        beta = np.linalg.lstsq((gram + gram.T) / 2, qinv_g.T @ (qc[train].T @ y[train] / n), rcond=SINGULAR)[0]
        f_rows[held], m_rows[held] = bx[held] @ beta, mb[held] @ beta
    return f_rows, m_rows


class LadderBases:
    """The rungs' bases on one data set and contrast, each built once: the bases b and q of a rung, their values
    at the rows and m(W_i; b), and per fold of the representer's split the cross products Q, G and Q^-1 G.

    A run computes two ladders on the same rows (the representer's :data:`LADDER` for the debiased effect, the
    sieve effect's in :mod:`dmlcore.inference.sieve_dimension`); they share rungs, and within a rung the
    representer and the sieve fit solve with the same Q and G. Each is computed as the functions without this
    object compute it, so the numbers are the same (``effect_record`` hands one to both)."""

    def __init__(self, data: CausalData, plan):
        self.data, self.plan = data, plan
        self._bases, self._values, self._grams = {}, {}, {}

    def bases(self, rung: Rung):
        """(b, q) of ``rung``: :func:`build_bases`."""
        if rung not in self._bases:
            self._bases[rung] = build_bases(self.data, rung)
        return self._bases[rung]

    def values(self, rung: Rung):
        """(b at the rows, q at the rows, m(W_i; b) per row: :func:`per_row`, NaN where the contrast leaves the row
        out), for ``rung``; the caller copies m before changing it."""
        if rung not in self._values:
            b, q = self.bases(rung)
            table = self.data.table
            self._values[rung] = (b(table[[c.name for c in b.columns]].to_numpy(dtype=float)),
                                  q(table[[c.name for c in q.columns]].to_numpy(dtype=float)),
                                  per_row(self.plan, len(table), basis=b))
        return self._values[rung]

    def grams(self, rung: Rung, fold_of: np.ndarray):
        """``grams(k, train)`` for :func:`cross_fitted_xi` and :func:`cross_fitted_sieve`: fold k's
        :func:`fold_grams` of ``rung``'s bases under the split ``fold_of``, computed once."""
        bx, qc, _ = self.values(rung)
        split = fold_of.tobytes()

        def fold(k, train):
            key = (rung, split, int(k))
            if key not in self._grams:
                self._grams[key] = fold_grams(bx, qc, train)
            return self._grams[key]
        return fold

    def rungs(self, ladder, folds: int, used: np.ndarray):
        """The rungs of ``ladder`` whose bases no earlier rung has, each as (position, rung, b, entry, values): entry
        {"basis", "functions"}, with "skipped" (and values None) when q has more functions than the rows of K - 1
        folds can fit; values (b at the rows, q at the rows, m(W_i; b) zero outside ``used`` and rescaled)."""
        n, seen = len(self.data.table), set()
        for position, rung in enumerate(ladder):
            b, q = self.bases(rung)
            sizes = (b.describe(), b.size, q.describe(), q.size)
            if sizes in seen:
                continue
            seen.add(sizes)
            entry = {"basis": rung.describe(), "functions": [int(b.size), int(q.size)]}
            if q.size * ROWS_PER_FUNCTION > n * (folds - 1) / folds:
                yield position, rung, b, {**entry, "skipped": f"{q.size} functions of C need more rows"}, None
                continue
            bx, qc, mb = self.values(rung)
            mb = mb.copy()
            mb[~used] = 0.0
            yield position, rung, b, entry, (bx, qc, _rescaled(mb, used))


# ------------------------------------------------------------------ the contrast per row
def per_row(plan, n: int, values=None, basis=None) -> np.ndarray:
    """m(W_i; .) for each of the ``n`` data rows: ``values`` (one per contrast point), or the
    functions of ``basis`` (n x p, evaluated a block of points at a time), summed with the
    contrast's weights over the row's points and multiplied by the number of rows the contrast
    uses (so that their mean is the contrast). Rows the contrast leaves out are NaN."""
    weigh = coo_matrix((plan.weights, (plan.rows, np.arange(len(plan.rows)))), shape=(n, len(plan.rows))).tocsc()
    if basis is None:
        out = weigh @ np.asarray(values, dtype=float)[:, None]
    else:
        points = plan.points[[c.name for c in basis.columns]].to_numpy(dtype=float)
        out = np.zeros((n, basis.size))
        for i in range(0, len(points), PREDICT_ROWS):
            out += weigh[:, i:i + PREDICT_ROWS] @ basis(points[i:i + PREDICT_ROWS])
    used = np.zeros(n, dtype=bool)
    used[plan.rows] = True
    out = np.asarray(out) * used.sum()
    out[~used] = np.nan
    return out if basis is not None else out[:, 0]


def predict(estimator, frame: pd.DataFrame) -> np.ndarray:
    """f-hat at the rows of ``frame``, a block at a time."""
    return np.concatenate([np.asarray(estimator.predict(frame.iloc[i:i + PREDICT_ROWS]), dtype=float).ravel()
                           for i in range(0, len(frame), PREDICT_ROWS)])


# ------------------------------------------------------------------ the effect
class CrossFitted:
    """f-hat at every data row and contrast point from a refit that never saw the row.

    ``add(held, estimator)`` takes one fold's held-out rows and the method refitted without
    them (:func:`dmlcore.runs.heldout_residual.fold_refits`: whole refits, nuisances included, for every method);
    ``complete`` once every row is covered. ``error``
    says why the refits failed, when they did; ``wanted`` is the number of refits asked for.
    """

    def __init__(self, data: CausalData, plan, wanted: int = 2):
        self.data, self.plan, self.wanted = data, plan, wanted
        self.f_rows = np.full(len(data.table), np.nan)
        self.f_points = np.full(len(plan.weights), np.nan)
        self.folds, self.error = 0, None

    def add(self, held, estimator) -> None:
        mask = np.zeros(len(self.f_rows), dtype=bool)
        mask[held] = True
        self.f_rows[mask] = predict(estimator, self.data.table[self.data.input_columns][mask])
        at = mask[self.plan.rows]
        self.f_points[at] = predict(estimator, self.plan.points[self.data.input_columns][at])
        self.folds += 1

    @property
    def complete(self) -> bool:
        return self.folds > 0 and bool(np.isfinite(self.f_rows).all() and np.isfinite(self.f_points).all())


def debiased_effect(estimator, data: CausalData, plan, *, level: float = 0.95, seed: int = DEFAULTS.seed,
                    folds: int = RIESZ_FOLDS, ladder=LADDER, crossfit: CrossFitted | None = None,
                    cluster: str | None = None, variants: dict | None = None,
                    bases: LadderBases | None = None) -> dict:
    """The debiased effect of a fitted ``estimator`` (anything with ``predict``) on ``data``.

    ``plan`` is :func:`dmlcore.runs.average_effect.contrast` (data) with its ``rows``. With a complete
    ``crossfit``, f-hat at each row comes from the refit that never saw it (the default of
    ``fit_run``: a full-sample f-hat measured biased, docs/coverage.md); otherwise the
    estimator's own. ``cluster`` names the column whose clusters the representer's folds keep
    whole and whose sums of the score give the standard error. Returns the dict of :func:`debias`
    with ``f_hat`` saying which. ``bases``: as in :func:`debias`.
    """
    groups = groups_of(data.table, cluster)
    if crossfit is not None and crossfit.complete:
        out = debias(data, plan, crossfit.f_points, crossfit.f_rows, level=level, seed=seed, folds=folds,
                     ladder=ladder, groups=groups, variants=variants, bases=bases)
        out["f_hat"] = (f"cross-fitted: {crossfit.folds} refits of the method, each row's f-hat from the refit "
                        f"without it")
    else:
        f_points = predict(estimator, plan.points[data.input_columns])
        f_rows = predict(estimator, data.table[data.input_columns])
        out = debias(data, plan, f_points, f_rows, level=level, seed=seed, folds=folds, ladder=ladder,
                     groups=groups, variants=variants, bases=bases)
        why = f" ({crossfit.error})" if crossfit is not None and crossfit.error else ""
        out["f_hat"] = f"the full-sample fit, not cross-fitted{why}"
    out["interval"] += f"; f-hat {out['f_hat']}"
    if groups is not None:
        out["clusters"] = {"column": cluster, "count": int(len(np.unique(groups)))}
        out["interval"] += (f"; clustered: the folds keep each of the {describe(cluster, groups)} whole and the "
                            f"standard error sums the score within clusters (CR1)")
    return out


def debias(data: CausalData, plan, f_points: np.ndarray, f_rows: np.ndarray, *, level: float = 0.95,
           seed: int = DEFAULTS.seed, folds: int = RIESZ_FOLDS, ladder=LADDER, groups: np.ndarray | None = None,
           variants: dict | None = None, bases: LadderBases | None = None) -> dict:
    """The debiased effect from f-hat at the contrast's points (``f_points``) and at the data's
    rows (``f_rows``): these may come from one fit or from cross-fitted ones. With ``groups``
    (the rows' cluster numbers) the representer's folds keep clusters whole and every standard
    error (the effect's, Lepski's differences) comes from cluster sums (:mod:`dmlcore.stats.clusters`).
    ``variants`` ({label: (f_points, f_rows)}, other fits of f such as the cross-fits of repeated
    cross-fitting) are corrected with the chosen representer, for the specification spread. ``bases``: the
    rungs' bases already built on ``data`` and ``plan`` (:class:`LadderBases`; None: built here).

    Returns {"estimate", "std_error", "ci_lower", "ci_upper", "uncorrected" (the mean of m(W; f-hat)
    for the f-hat corrected), "correction",
    "strength", "weakly_identified", "basis", "rungs": [{"basis", "estimate", "std_error",
    "strength"} or {"basis", "skipped"}], "folds", "interval"}. Raises DMLCoreError when no rung
    identifies the effect or the data cannot take spline bases (images).
    """
    n = check_spline_data(data, folds, "its representer")
    y = data.table[data.outcome].to_numpy(dtype=float)
    m_f = per_row(plan, n, f_points)
    used = np.isfinite(m_f)
    residual = y - np.asarray(f_rows, dtype=float)
    fold_of = resample.fold_labels(n, folds, seed, "representer", groups)
    scale = treatment_scale(data, plan.treatment)
    bases = bases if bases is not None else LadderBases(data, plan)
    results = []
    for _, rung, b, entry, values in bases.rungs(ladder, folds, used):
        if values is None:
            results.append(entry)
            continue
        bx, qc, mb = values
        grams = bases.grams(rung, fold_of)
        try:
            xi = cross_fitted_xi(bx, qc, mb, fold_of, smoothness(b), PENALTY / np.sqrt(n), grams)
        except DMLCoreError as exc:
            results.append({**entry, "skipped": str(exc)})
            continue
        psi = np.where(used, m_f, 0.0) * n / used.sum() + xi * residual
        f_s, m_s = cross_fitted_sieve(bx, qc, mb, y, fold_of, smoothness(b), PENALTY / np.sqrt(n), grams)
        psi_s = m_s + xi * (y - f_s)
        scored = psi if groups is None else clustered_score(psi, mb, bx, xi, f_rows, f_s)
        results.append({**entry, "psi": psi, "xi": xi, "estimate": float(psi.mean()),
                        "std_error": mean_se(scored, groups),
                        "strength": float(n / max(np.mean(xi ** 2) * scale, 1e-300)),
                        "sieve_estimate": float(psi_s.mean()), "sieve_std_error": mean_se(psi_s, groups)})
    fitted = [r for r in results if "psi" in r]
    if not fitted:
        reasons = list(dict.fromkeys(r["skipped"] for r in results))
        raise DMLCoreError(f"no basis identifies it: {len(results)} representer bases tried; {reasons[0]}"
                           + (f" (and {len(reasons) - 1} other reason{'s' * (len(reasons) > 2)})"
                              if len(reasons) > 1 else ""))
    chosen = lepski(fitted, groups)
    z = float(norm.ppf(0.5 + level / 2))
    plug = float(np.mean(m_f[used]))
    est, se = chosen["estimate"], chosen["std_error"]
    weak = not (np.isfinite(se) and chosen["strength"] >= WEAK_STRENGTH)
    return {"estimate": est, "std_error": se, "ci_lower": est - z * se, "ci_upper": est + z * se,
            "sieve_estimate": chosen["sieve_estimate"], "sieve_std_error": chosen["sieve_std_error"],
            "uncorrected": plug, "correction": est - plug, "strength": chosen["strength"], "weakly_identified": weak,
            "basis": chosen["basis"], "folds": folds,
            "rungs": [{k: v for k, v in r.items() if k not in ("psi", "xi")} for r in results],
            "variants": [_variant(label, f_p, f_r, plan, y, chosen["xi"], groups)
                         for label, (f_p, f_r) in (variants or {}).items()],
            "interval": (f"debiased: plug-in + mean of xi-hat(C) (Y - f-hat(X)), xi-hat the Riesz representer by "
                         f"sieve minimum distance ({chosen['basis']}), cross-fitted over {folds} folds; "
                         f"estimate -/+ {z:.2f} x sd(score)/sqrt(n)")}


def check_spline_data(data: CausalData, folds: int, what: str) -> int:
    """The rows of ``data`` if ``what`` (a ladder of spline bases cross-fitted over ``folds`` folds: the
    representer, the sieve effect) can be fitted on them; a DMLCoreError saying why not otherwise."""
    if data.image_columns:
        raise DMLCoreError(f"{what} is built from spline bases of f's inputs and of the conditioning columns, "
                           f"which cannot take the {len(data.image_columns):,} image pixel columns")
    n = len(data.table)
    if n < 20 * folds:
        raise DMLCoreError(f"cross-fitting {what} over {folds} folds needs at least {20 * folds} rows; the data "
                           f"has {n}")
    return n


def clustered_score(psi: np.ndarray, mb: np.ndarray, bx: np.ndarray, xi: np.ndarray, f_rows: np.ndarray,
                    f_sieve: np.ndarray) -> np.ndarray:
    """The rows' scores whose cluster sums give the clustered standard error: ``psi`` with the part of
    f-hat's error that f's basis b can represent replaced by the sieve fit's.

    For any coefficients beta, mean_i [m(W_i; b'beta) - xi-hat_i b(X_i)'beta] = (M - G'gamma)'beta is
    close to 0: the representer solves G'gamma = M on its training rows (exactly without its penalty),
    and on the held-out rows up to sampling error. So the part h of f-hat - f in b's span moves the
    estimate very little, yet it adds m(W_i; h) - xi-hat_i h(X_i) to each row's score. Where the
    treatment and the instruments have a cluster part, that term is alike within a cluster, and the
    clusters' sums count it as variance. The variance the theory asks for is that of the score at the
    true f (Chernozhukov et al. 2018, Section 3; with cluster sums, Chiang, Kato, Ma and Sasaki 2022),
    which has no such term. f is unknown, so f-hat's part in b (its least-squares projection on b at
    the rows) is replaced by the cross-fitted sieve fit ``f_sieve``, which estimates f's part in b.
    f-hat's part outside b, whose term does move the estimate, stays. ``mb`` is m(W_i; b) per row
    (rescaled as in :func:`_rescaled`), ``bx`` b at the rows, ``xi`` xi-hat and ``f_rows`` f-hat at the
    rows. The estimate, the mean of ``psi``, is unchanged. Without clusters the score is used as it
    is: the term is there too but not summed within clusters, and those designs were not rerun
    (docs/coverage.md, "Widths where clusters are respected", has the decomposition)."""
    beta = np.linalg.lstsq(bx, np.asarray(f_rows, dtype=float) - f_sieve, rcond=SINGULAR)[0]
    return psi - (mb - xi[:, None] * bx) @ beta


def _variant(label: str, f_points, f_rows, plan, y: np.ndarray, xi: np.ndarray, groups) -> dict:
    """Another fit of f (``f_points``, ``f_rows``) corrected with the representer ``xi``: {"what",
    "plug_in", "estimate", "std_error"}."""
    n = len(y)
    m_f = per_row(plan, n, f_points)
    used = np.isfinite(m_f)
    psi = np.where(used, m_f, 0.0) * n / used.sum() + xi * (y - np.asarray(f_rows, dtype=float))
    return {"what": label, "plug_in": float(np.mean(m_f[used])), "estimate": float(psi.mean()),
            "std_error": mean_se(psi, groups)}


def _rescaled(mb: np.ndarray, used: np.ndarray) -> np.ndarray:
    """m(W_i; b) with the rows the contrast leaves out at 0 and the others scaled up, so that
    the mean over any fold's rows estimates M."""
    return mb * len(used) / used.sum()


def treatment_scale(data: CausalData, treatment: str) -> float:
    """Var(A | covariates) / D^2: the variance of the treatment left after a linear regression on
    the covariates (as in the first-stage F), D the distance of a binary treatment's two values
    (1 for a slope)."""
    a = data.table[treatment].to_numpy(dtype=float)
    values = np.unique(a)
    unit = float(values[-1] - values[0]) if len(values) == 2 else 1.0
    design = np.column_stack([np.ones(len(a)), data.table[data.covariates].to_numpy(dtype=float)])
    residual = a - design @ np.linalg.lstsq(design, a, rcond=None)[0]
    return float(np.var(residual)) / unit ** 2


def lepski(fitted: list[dict], groups: np.ndarray | None = None, z: float = LEPSKI_Z) -> dict:
    """The first rung whose estimate agrees with every richer one's within ``z`` standard errors of
    their difference (from cluster sums with ``groups``); the richest when none does. The one rule of
    both ladders: the representer's here and the sieve effect's (:mod:`dmlcore.inference.sieve_dimension`)."""
    for j, rung in enumerate(fitted):
        if all(abs(rung["estimate"] - other["estimate"])
               <= z * mean_se(rung["psi"] - other["psi"], groups) for other in fitted[j + 1:]):
            return rung
    return fitted[-1]


# ------------------------------------------------------------------ the run record
def check_effect_folds(folds) -> int:
    """``folds`` as 0 (no cross-fitting of f-hat) or an int of at least 2; a DMLCoreError otherwise."""
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds == 1 or folds < 0:
        raise DMLCoreError(f"The debiased effect cross-fits f-hat over at least 2 refits ({EFFECT_FOLDS} is the "
                           f"default; 0 corrects the full-sample fit, measured biased); got {folds!r}.")
    return int(folds)



def add_debiased(effect: dict, estimator, data: CausalData, plan, level: float = 0.95,
                 crossfit: CrossFitted | None = None, debias: bool = DEFAULTS.debias, cluster: str | None = None,
                 first_stage_f: float | None = None, *, first_stage_statistic: str | None = None,
                 first_stage_error: str | None = None, bases: LadderBases | None = None) -> dict:
    """``effect`` (the record of :func:`dmlcore.runs.average_effect.effect_record`) with the debiased effect.

    The plug-in's numbers move to ``effect["plug_in"]``; ``effect["debiased"]`` is
    :func:`debias`'s dict, also an entry of ``intervals``, and becomes the headline estimate and
    interval, except for 2SLS (its coefficient stays, named for what it is) and for the
    regression that ignores C (not corrected: the correction would make it an IV estimate).
    Weakly identified: the headline interval is None and ``interval`` says so in words. When the
    debiased effect cannot be computed, or is switched off (``debias=False``: :data:`SWITCHED_OFF`),
    ``debiased`` is None and ``debiased_error`` says why in one line.
    ``crossfit`` holds the refits' f-hat (:class:`CrossFitted`); ``cluster`` the column whose
    clusters the interval accounts for; ``first_stage_f`` the linear first stage's F of the run's
    diagnostics, which the weak-identification flag reads (:func:`weak_reason`), under the covariance the
    user chose (``first_stage_statistic`` names it: :func:`dmlcore.inference.first_stage.identification_statistic`);
    ``first_stage_error``: why the diagnostics could not be computed, which the effect then says in
    ``debiased["unchecked_reason"]`` and its ``warning`` (never a silent "not flagged"); ``bases``: the rungs'
    bases built once for this effect and the sieve effect beside it (:class:`LadderBases`).
    """
    effect["plug_in"] = {k: effect.get(k) for k in ("estimate", "ci_lower", "ci_upper", "interval")}
    effect["debiased"], effect["weakly_identified"] = None, None
    if supports(estimator, "anderson_rubin") and data.problem == "iv":
        effect["estimand"] = tsls_estimand(plan, data, getattr(estimator, "title", "2SLS"))  # proximal 2SLS: the contrast's
    if supports(estimator, "ignores_conditioning"):
        effect["debiased_error"] = ("not computed: this regression ignores C by design (it is the confounded "
                                    "baseline), and the correction would turn it into an IV estimate")
        return effect
    if not debias:
        effect["debiased_error"] = SWITCHED_OFF
        return effect
    try:
        result = debiased_effect(estimator, data, plan, level=level, crossfit=crossfit, cluster=cluster,
                                 variants=crossfit_variants(estimator, data, plan), bases=bases)
    except DMLCoreError as exc:
        effect["debiased_error"] = f"no debiased effect: {exc}."
        return effect
    reason = weak_reason(result["strength"], result["std_error"], first_stage_f, first_stage_statistic)
    unchecked = (unchecked_text(first_stage_error) if first_stage_error and data.problem in ("iv", "pcl")
                 else None)
    result.update(weakly_identified=reason is not None, weak_reason=reason, first_stage_f=first_stage_f,
                  first_stage_statistic=first_stage_statistic, unchecked_reason=unchecked)
    weak = result["weakly_identified"]
    effect.update(debiased=result, weakly_identified=weak, spread=specification_spread(result))
    effect["intervals"].append({"interval": result["interval"], "ci_lower": result["ci_lower"],
                                "ci_upper": result["ci_upper"], "estimate": result["estimate"],
                                "estimand": plan.estimand, "source": "debiased", "weakly_identified": weak})
    if weak:
        effect["warning"] = weak_text(result)
    elif unchecked:
        effect["warning"] = unchecked
    if supports(estimator, "anderson_rubin"):
        return effect
    effect.update(estimate=result["estimate"], ci_lower=result["ci_lower"], ci_upper=result["ci_upper"],
                  interval=result["interval"])
    if weak:
        effect.update(ci_lower=None, ci_upper=None, interval=weak_text(result))
    return effect


def crossfit_variants(estimator, data: CausalData, plan) -> dict:
    """{label: (f-hat at the contrast's points, at the data's rows)} of each cross-fit of a
    repeated cross-fitting (``reps_crossfit`` > 1; each its own full-sample fit); empty otherwise."""
    if not supports(estimator, "predict_spread"):
        return {}
    return {f"cross-fit {r + 1} of {len(estimator.estimators_)} (seed {seed})":
            (predict(est, plan.points[data.input_columns]), predict(est, data.table[data.input_columns]))
            for r, (seed, est) in enumerate(zip(estimator.seeds_, estimator.estimators_))}


def specification_spread(result: dict) -> dict:
    """The effect under the specifications the fit computed besides its headline: every
    representer basis of the ladder, and each cross-fit of a repeated cross-fitting (its own f-hat
    corrected with the headline's representer). {"rule", "estimate", "std_error", "specifications":
    [{"kind", "what", "estimate"}], "low", "high", "range_over_se", "sensitive", "text"};
    ``sensitive`` when the range exceeds SPREAD_SE standard errors of the headline."""
    specs = [{"kind": "representer basis", "what": r["basis"], "estimate": r["estimate"]}
             for r in result["rungs"] if "estimate" in r]
    specs += [{"kind": "cross-fit", "what": v["what"], "estimate": v["estimate"], "plug_in": v["plug_in"]}
              for v in result.get("variants", [])]
    values = np.array([result["estimate"]] + [s["estimate"] for s in specs], dtype=float)
    low, high, se = float(values.min()), float(values.max()), float(result["std_error"])
    ratio = (high - low) / se if se > 0 else float("inf")
    sensitive = bool(ratio > SPREAD_SE)
    text = (f"across {len(specs)} specifications (representer bases{', cross-fits' * bool(result.get('variants'))}) "
            f"the effect ranges {low:.4g} to {high:.4g}, {ratio:.2g} standard errors"
            + (f": more than {SPREAD_SE:g}, so the choice of specification matters here" if sensitive else ""))
    return {"rule": SPREAD_RULE, "estimate": result["estimate"], "std_error": se, "specifications": specs,
            "low": low, "high": high, "range_over_se": ratio, "sensitive": sensitive, "text": text}


def weak_reason(strength: float, std_error: float, first_stage_f: float | None = None,
                statistic: str | None = None) -> str | None:
    """Why the debiased effect counts as weakly identified, in one line, or None when it does not:
    a standard error that is not finite, the representer's strength below WEAK_STRENGTH, or the
    linear first stage's strength statistic (the run's diagnostics, under the covariance chosen;
    ``statistic`` names it) below WEAK_FIRST_STAGE_F. Both bars come from the coverage measured
    across instrument strengths (docs/coverage.md; the first-stage bar on homoskedastic F)."""
    if not np.isfinite(std_error):
        return "its standard error is not finite"
    if not strength >= WEAK_STRENGTH:
        return (f"the representer's strength {strength:.3g} is below {WEAK_STRENGTH:g}: C barely moves f's inputs "
                f"where the effect needs")
    if first_stage_f is not None and np.isfinite(first_stage_f) and first_stage_f < WEAK_FIRST_STAGE_F:
        which = ("" if statistic in (None, "first-stage F", "proxy first-stage F") else
                 f" ({statistic.replace(' (', ', ').rstrip(')')})")     # the statistic under the covariance chosen
        return (f"the linear first stage's F {first_stage_f:.3g}{which} is below {WEAK_FIRST_STAGE_F:g}, where such "
                f"intervals covered under 90 %")
    return None


def unchecked_text(error: str) -> str:
    """The effect's one line when the first-stage diagnostics could not be computed: the flag then rests on
    the representer's strength alone, and the line says so."""
    why = str(error).strip().rstrip(".")
    if len(why) > 88:                      # the line stays within 200 characters
        why = why[:85] + "..."
    return f"identification not checked on the first stage (its diagnostics failed: {why}); only the representer's strength was"


def weak_text(result: dict) -> str:
    """The weak-identification warning in one line (at most about 200 characters)."""
    reason = result.get("weak_reason") or weak_reason(result["strength"], result["std_error"])
    return (f"weakly identified ({reason}): debiased estimate {result['estimate']:.4g}, s.e. "
            f"{result['std_error']:.3g}, no interval")


def tsls_estimand(plan, data: CausalData, title: str = "2SLS") -> str:
    """What a linear IV coefficient (2SLS, or the k-class/GMM estimator ``title``) estimates, in words."""
    a = plan.treatment
    values = np.unique(data.table[a].to_numpy(dtype=float))
    caveat = ("" if title == "2SLS" else
              f"; with several instruments {title}'s weights need not all be positive when the effect differs "
              f"between rows (Kolesár 2013), with one instrument it is 2SLS's coefficient")
    if len(values) == 2:
        return (f"{title} coefficient of {a} (times {values[-1] - values[0]:g}): a weighted average of the effect of "
                f"{a} over the rows, weights set by the first stage; it equals the average effect only when the "
                f"effect is the same for every row{caveat}")
    return (f"{title} slope of {a}: a first-stage-weighted average of the derivative of f in {a}, per unit of {a}; "
            f"it equals the average derivative only when f is linear in {a}{caveat}")


def score_effect(effect: dict, truth, plan) -> None:
    """Add the true effect (``truth``, the design's GroundTruth, at the contrast ``plan``) and
    whether each interval (headline, plug-in, debiased and every entry of ``intervals``) contains it."""
    value = truth.effect(plan.points, plan.weights)
    if value is None:
        return
    effect["truth"] = value
    for part in (effect, effect.get("plug_in"), effect.get("debiased"), *effect.get("intervals", [])):
        if part and part.get("ci_lower") is not None and part.get("ci_upper") is not None:
            part["covered"] = bool(part["ci_lower"] <= value <= part["ci_upper"])

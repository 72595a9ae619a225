"""Sieve 2SLS: cubic B-spline bases with a penalised two-stage fit.

f(x) = mean(y) + b(x)'theta, where b is the tensor product of one basis per input of f, or,
when that product would be too large for the data (many covariates), an additive basis;
the conditioning variables enter through a basis z(c) built the same way. theta minimises

    (1/n) ||P_Z (y - mean(y) - B theta)||^2 + ridge * theta' Omega theta,

where P_Z = Z (Z'Z + mu Omega_Z)^-1 Z' is a lightly penalised projection on z(c).

The bases (tensor-product or additive) are those of :mod:`dmlcore.estimators.splines`, shared
with the sieve second stage of DML-CMR and the held-out score.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm
from threadpoolctl import threadpool_limits

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._base import CMREstimator, check_fitted, input_matrix
from dmlcore.estimators.splines import (RIDGE_GRID, Cells, TensorBasis, additive_basis, check_tabular, is_categorical,
                                        spd_solve, usable_tensor)
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.tsls import check_identified

KNOT_GRID = (8, 12, 16)
FIRST_STAGE_RIDGE = 1e-6   # mu / n, the penalty of the first stage
VALIDATION_MAX_KNOTS = 100
CHUNK_VALUES = 2 ** 21     # basis values computed at once (16 MB)
MIN_CELL_ROWS = 30         # a tensor design whose smallest cell has fewer rows: additive instead
ROWS_PER_FEATURE = 4       # rows of the smallest cell per basis function, at least


class Sieve2SLS(CMREstimator):
    """Penalised sieve 2SLS with cubic B-spline bases (tensor-product or additive).

    Every input of f and every conditioning column gets a univariate basis: integer columns
    with at most ``max_levels`` distinct values get level indicators, the others cubic
    B-splines with up to ``n_knots`` interior knots at quantiles (values outside the training
    range are clipped to it, so f is extrapolated as a constant). The treatment (the first
    input) and the endogenous inputs always get splines when they take more than two values.
    The bases of f and of the instruments are the tensor products of these, each with fewer
    knots if needed to stay within ``max_features`` functions and one function per
    ROWS_PER_FEATURE rows of the smallest cell (more instruments than that pull 2SLS toward the
    confounded regression). The penalty ``Omega`` sums the
    squared second differences of theta along each spline column (P-splines: functions linear
    in each continuous input are not penalised), plus ``RIDGE_SHARE * I``; levels are not
    smoothed across. The first stage has the same kind of penalty, with weight
    ``FIRST_STAGE_RIDGE * n``.

    Categorical columns that are both inputs and conditioning variables split the data into
    cells, in which f is fitted separately with the same knots and penalty: this is the
    tensor product with their indicators, computed block by block.

    When the tensor product does not fit in ``max_features`` functions with at least
    MIN_TENSOR_KNOTS interior knots, or a cell has fewer than MIN_CELL_ROWS rows (many
    covariates, many categorical combinations), both bases are additive
    instead (:func:`additive_basis`, no cells): f is a spline in the treatment (and in the other
    endogenous inputs) plus a linear or categorical term per covariate; the instruments' basis
    has splines in the excluded instruments and the same covariate terms. ``notes_`` says so.

    Parameters
    ----------
    n_knots : int or None, default None
        Interior knots per continuous column; None chooses from ``KNOT_GRID`` by K-fold
        validation.
    ridge : float or None, default None
        Penalty weight; None chooses from ``RIDGE_GRID`` by K-fold validation.
    val_folds : int, default 5
        Validation folds of the choice of ``n_knots`` and ``ridge``.
    max_levels : int, default 10
    max_features : int, default 800
        Largest basis of f or of the instruments (within a cell).
    seed : int, default 0
        Seed of the fold split.

    Attributes
    ----------
    n_knots_ : int
        The chosen knots (as requested for f's basis).
    ridge_ : float
        The chosen penalty weight.
    cv_loss_ : dict
        ``{(n_knots, ridge): validation loss}``; empty when nothing was chosen.
    theta_ : dict
        ``{cell: coefficients}``.
    cov_ : dict
        ``{cell: their sandwich covariance}``.
    additive_ : bool
        Whether the bases are additive.
    notes_ : list of str
        Says so.
    input_columns_ : list of str
    n_ : int
    fold_losses_ : list, always empty.

    Notes
    -----
    Validation: theta is fitted on K - 1 folds; on the held-out fold its structural residual
    ``r = y - mean(y) - B theta`` is regressed, on the held-out rows only and with the
    first-stage penalty, on a validation basis of the conditioning columns, and the loss is
    the sum of squares of the fitted values, ``||P_Z r||^2``, summed over folds and divided
    by n. The candidate with the smallest loss wins. The loss estimates the projected
    residual ``E[(E[Y - f(X) | C])^2]`` plus the leverage term
    ``(dim Z / m) E[Var(r | C)]``, m the held-out rows per cell, which penalises erratic,
    under-regularised fits that the projected residual alone cannot see. The validation
    basis is the same for all candidates: the instrument basis with the most knots (up to
    ``VALIDATION_MAX_KNOTS``) that has at most ``m / 4`` functions (or the one without
    interior knots if even that is too big).
    """

    capabilities = frozenset({"linear_functional"})

    def __init__(self, n_knots=None, ridge=None, val_folds=5, max_levels=10, max_features=800, seed=DEFAULTS.seed):
        self.n_knots = n_knots
        self.ridge = ridge
        self.val_folds = val_folds
        self.max_levels = max_levels
        self.max_features = max_features
        self.seed = seed

    @classmethod
    def check_roles(cls, data: CausalData) -> None:
        """Sieve 2SLS compares spline bases of the columns: image pixel columns are refused."""
        check_tabular(data, "Sieve 2SLS", "Remove it; use DML-CMR or the naive plug-in with the neural-network "
                                          "learner on image data.")

    def record_fields(self) -> dict:
        return {**super().record_fields(), "notes": list(self.notes_)}

    def _fit(self, data: CausalData, monitor) -> None:
        """Choose the basis size and penalty unless given, then fit theta on all of ``data``.

        BLAS runs on one thread meanwhile: the many small dense solves are faster so, and
        multithreaded BLAS on a busy machine can slow them down a hundredfold.
        """
        with threadpool_limits(limits=1, user_api="blas"):
            self._fit_sieve(data, monitor)

    def _fit_sieve(self, data, monitor):
        check_identified(data)
        knot_grid = _candidates(self.n_knots, KNOT_GRID, "n_knots", integer=True)
        ridge_grid = _candidates(self.ridge, RIDGE_GRID, "ridge", integer=False)
        a = data.cmr()
        y = a.y - a.y.mean()
        smooth = {a.input_names[0], *a.modelled_names}
        cells, free_x, free_c = self._split(a)
        smallest = np.unique(cells.codes(a.inputs), return_counts=True)[1].min()
        bases = (self._bases(a, free_x, free_c, knot_grid, smooth, False, smallest // ROWS_PER_FEATURE)
                 if smallest >= MIN_CELL_ROWS else None)
        self.additive_ = bases is None
        if self.additive_:   # the tensor product is too large or too coarse: additive, no cells
            cells, free_x, free_c = Cells([], []), list(range(len(a.input_names))), \
                list(range(len(a.conditioning_names)))
            bases = self._bases(a, free_x, free_c, knot_grid, smooth, True, a.n // ROWS_PER_FEATURE)
        cell = cells.codes(a.inputs)
        x, c = a.inputs[:, free_x], a.conditioning[:, free_c]
        self.cv_loss_ = {}
        if len(bases) > 1 or len(ridge_grid) > 1:
            data.check_folds(self.val_folds)
            self.cv_loss_ = self._validation_losses(a, x, c, y, cell, bases, ridge_grid, monitor)
            self.n_knots_, self.ridge_ = min(self.cv_loss_, key=self.cv_loss_.get)
        else:
            self.n_knots_, self.ridge_ = next(iter(bases)), ridge_grid[0]
        monitor.stage("sieve final fit", start=0.9, end=1.0)
        fb, cb = bases[self.n_knots_]
        b, z, omega, omega_z = fb(x), cb(c), fb.penalty(), cb.penalty()
        self.theta_, self.cov_ = {}, {}
        for code in np.unique(cell):
            rows = cell == code
            self.theta_[code], self.cov_[code] = _cell_fit(
                b[rows], z[rows], y[rows], omega, omega_z, a.n * self.ridge_,
                a.n * FIRST_STAGE_RIDGE)
        self.basis_, self.cells_, self.free_inputs_ = fb, cells, free_x
        self.notes_ = [f"Sieve 2SLS used an additive spline basis ({fb.describe()}): a full tensor product "
                       f"of the {len(a.input_names)} inputs would have too many functions for "
                       f"{a.n:,} rows."] if self.additive_ else []
        self.intercept_ = float(a.y.mean())
        self.input_columns_ = list(a.input_names)
        self.n_ = a.n
        self.fold_losses_ = []

    def check_rows(self, data: CausalData) -> None:
        """The fit's refusal when even the additive basis (the smallest it tries) has more functions than
        one per ROWS_PER_FEATURE rows of ``data``; asked by a study's pre-check before any fit."""
        a = data.cmr()
        knot_grid = _candidates(self.n_knots, KNOT_GRID, "n_knots", integer=True)
        self._bases(a, list(range(len(a.input_names))), list(range(len(a.conditioning_names))), knot_grid,
                    {a.input_names[0], *a.modelled_names}, True, a.n // ROWS_PER_FEATURE)

    def _bases(self, a, free_x, free_c, knot_grid, smooth, additive, rows_cap):
        """{n_knots: (basis of f, basis of C)}, one entry per distinct pair, each basis of at most
        min(max_features, ``rows_cap``) functions; None when a tensor basis (``additive`` False)
        is too large or too coarse."""
        cap = max(1, min(self.max_features, rows_cap))
        x_names = [a.input_names[j] for j in free_x]
        c_names = [a.conditioning_names[j] for j in free_c]
        x, c = a.inputs[:, free_x], a.conditioning[:, free_c]
        excluded = [n for n in c_names if n not in a.input_names]
        bases = {}
        for k in knot_grid:
            if additive:
                fb = additive_basis(x, x_names, k, self.max_levels, cap, smooth=smooth)
                cb = additive_basis(c, c_names, k, self.max_levels, cap, smooth=excluded)
                if fb is None or cb is None:
                    raise DMLCoreError(
                        f"Even an additive spline basis has more than {cap} functions (at most "
                        f"max_features={self.max_features}, and one per {ROWS_PER_FEATURE} rows) for "
                        f"{len(a.input_names)} inputs and {len(a.conditioning_names)} conditioning columns. "
                        f"Use fewer columns or more rows, or raise max_features.")
            else:
                fb = TensorBasis.build(x, x_names, k, self.max_levels, cap, smooth)
                cb = TensorBasis.build(c, c_names, k, self.max_levels, cap)
                if not (usable_tensor(fb, k) and usable_tensor(cb, k)):
                    return None
            if all((fb.n_knots, cb.n_knots, fb.size, cb.size) != (f.n_knots, g.n_knots, f.size, g.size)
                   for f, g in bases.values()):
                bases[k] = (fb, cb)
        return bases

    def _validation_losses(self, a, x, c, y, cell, bases, ridge_grid, monitor):
        """{(n_knots, ridge): held-out loss} (see Notes)."""
        fold = np.random.default_rng(self.seed).permutation(a.n) % self.val_folds
        names = [col.name for col in next(iter(bases.values()))[1].columns]
        block = a.n / (self.val_folds * len(np.unique(cell)))      # held-out rows per cell
        cap = min(self.max_features, int(block / 4))
        if self.additive_:
            excluded = [n for n in names if n not in a.input_names]
            val_basis = (additive_basis(c, names, VALIDATION_MAX_KNOTS, self.max_levels, cap, smooth=excluded)
                         or additive_basis(c, names, 0, self.max_levels, self.max_features, smooth=excluded))
        else:
            val_basis = (TensorBasis.build(c, names, VALIDATION_MAX_KNOTS, self.max_levels, cap)
                         or TensorBasis.build(c, names, 0, self.max_levels, self.max_features))
        z_val, omega_val = val_basis(c), val_basis.penalty()
        losses = {}
        for i, (k, (fb, cb)) in enumerate(bases.items()):
            monitor.stage(f"sieve validation, {k} knots", start=0.9 * i / len(bases),
                          end=0.9 * (i + 1) / len(bases))
            loss = _validate(fb(x), cb(c), z_val, y, cell, fold,
                             (fb.penalty(), cb.penalty(), omega_val), ridge_grid)
            losses.update({(k, r): float(v) for r, v in zip(ridge_grid, loss)})
        return losses

    def _split(self, a):
        """Cells from the shared categorical columns; positions of the other inputs and
        conditioning columns."""
        shared = [(j, name) for j, name in enumerate(a.input_names) if name in a.conditioning_names
                  and 1 < len(np.unique(a.inputs[:, j]))
                  and is_categorical(np.unique(a.inputs[:, j]), self.max_levels)]
        names = {name for _, name in shared}
        cells = Cells(shared, [np.unique(a.inputs[:, j]) for j, _ in shared])
        free_x = [j for j, name in enumerate(a.input_names) if name not in names]
        free_c = [j for j, name in enumerate(a.conditioning_names) if name not in names]
        return cells, free_x, free_c

    def predict(self, X) -> np.ndarray:
        """f at the rows of ``X`` (DataFrame with the input columns, or an array in their order)."""
        b, cell = self._design(X)
        out = np.full(len(b), self.intercept_)
        for code in np.unique(cell):
            rows = cell == code
            out[rows] += b[rows] @ self.theta_[code]
        return out

    def predict_interval(self, X, level=0.95):
        """Pointwise normal bands ``f(x) -/+ q * se(x)``.

        ``se(x)^2 = b(x)' V b(x)`` with V the heteroskedasticity-robust sandwich
        ``H Z' diag(e^2) Z H'`` of ``theta = H Z' y`` (``e`` the structural residuals),
        assuming independent rows. It treats the knots, the penalties and the mean of y as
        fixed and ignores the smoothing bias, so the band covers the penalised sieve target,
        and f itself only where that bias is small against the standard error.

        Returns
        -------
        lower, upper : ndarray
        """
        if not 0 < level < 1:
            raise DMLCoreError(f"level must be strictly between 0 and 1; got {level!r}.")
        b, cell = self._design(X)
        center, se = np.full(len(b), self.intercept_), np.empty(len(b))
        for code in np.unique(cell):
            rows = cell == code
            center[rows] += b[rows] @ self.theta_[code]
            se[rows] = np.sqrt(np.einsum("ij,jk,ik->i", b[rows], self.cov_[code], b[rows]))
        q = norm.ppf(0.5 + level / 2)
        return center - q * se, center + q * se

    def linear_functional(self, X, weights):
        """(estimate, standard error) of ``sum_k weights[k] * f(X[k])``.

        The variance is ``d' V d`` per cell with ``d = sum_k weights[k] b(X[k])`` and V the
        sandwich of ``predict_interval`` (cells are independent), under the same assumptions:
        knots, penalty and the mean of y fixed, smoothing bias ignored.
        """
        check_fitted(self, "theta_")
        x = input_matrix(X, self.input_columns_, type(self).__name__)
        w = np.asarray(weights, dtype=float)
        if w.shape != (len(x),):
            raise DMLCoreError(f"weights needs one number per row of X ({len(x)}); got shape {w.shape}.")
        d = {}
        step = max(1, CHUNK_VALUES // self.basis_.size)
        for i in range(0, len(x), step):
            part = x[i:i + step]
            cell = self.cells_.fitted_codes(part, self.theta_)
            b = self.basis_(part[:, self.free_inputs_])
            for code in np.unique(cell):
                rows = cell == code
                d[code] = d.get(code, 0.0) + w[i:i + step][rows] @ b[rows]
        estimate = self.intercept_ * w.sum() + sum(d[c] @ self.theta_[c] for c in d)
        variance = sum(d[c] @ self.cov_[c] @ d[c] for c in d)
        return float(estimate), float(np.sqrt(variance))

    def effect_functional(self, plan) -> tuple[float, float]:
        """:meth:`linear_functional` at the points and weights of ``plan`` (an effect)."""
        return self.linear_functional(plan.points, plan.weights)

    @staticmethod
    def interval_how(z: float) -> str:
        return (f"delta method: estimate -/+ {z:.2f} x sqrt(d'Vd), V the sandwich variance of the spline "
                f"coefficients (knots and penalty held fixed)")

    def _design(self, X):
        check_fitted(self, "theta_")
        x = input_matrix(X, self.input_columns_, type(self).__name__)
        cell = self.cells_.fitted_codes(x, self.theta_)
        return self.basis_(x[:, self.free_inputs_]), cell


def _candidates(value, grid, name, integer):
    if value is None:
        return list(grid)
    if integer:
        ok = isinstance(value, (int, np.integer)) and value >= 0
    else:
        ok = isinstance(value, (int, float, np.integer, np.floating)) and 0 < value < np.inf
    if not ok:
        kind = "a non-negative integer" if integer else "a positive number"
        raise DMLCoreError(f"{name} must be {kind} or None (chosen by validation); got {value!r}.")
    return [value]


def _first_stage(zz, zb, zy, omega_z, mu):
    """W^-1 Z'B and W^-1 Z'y with W = Z'Z + mu Omega_Z."""
    both = spd_solve(zz + mu * omega_z, np.column_stack([zb, zy]))
    return both[:, :-1], both[:, -1]


def _validate(b, z, z_val, y, cell, fold, omegas, ridge_grid):
    """Held-out projected residual of each ridge value, summed over cells and folds."""
    omega, omega_z, omega_val = omegas
    loss = np.zeros(len(ridge_grid))
    for code in np.unique(cell):
        rows = np.flatnonzero(cell == code)
        held = [rows[fold[rows] == k] for k in range(fold.max() + 1)]
        parts = [(z[r].T @ z[r], z[r].T @ b[r], z[r].T @ y[r]) for r in held]
        total = [sum(p[i] for p in parts) for i in range(3)]
        for k, (zz, zb, zy) in enumerate(parts):
            if held[k].size == 0:
                continue
            n_train = np.sum(fold != k)
            zb_t = total[1] - zb
            pi_b, pi_y = _first_stage(total[0] - zz, zb_t, total[2] - zy, omega_z,
                                      n_train * FIRST_STAGE_RIDGE)
            m, v = zb_t.T @ pi_b, zb_t.T @ pi_y
            thetas = np.column_stack([spd_solve(m + n_train * r * omega, v) for r in ridge_grid])
            resid = y[held[k], None] - b[held[k]] @ thetas
            zh = z_val[held[k]]
            w = zh.T @ zh + (len(y) - n_train) * FIRST_STAGE_RIDGE * omega_val
            loss += np.sum((zh @ spd_solve(w, zh.T @ resid)) ** 2, axis=0)
    return loss / len(y)


def _cell_fit(b, z, y, omega, omega_z, penalty, mu):
    """theta = H Z'y with H = (M + penalty Omega)^-1 Pi_B', M = B'Z Pi_B, and its sandwich."""
    zb = z.T @ b
    pi_b, pi_y = _first_stage(z.T @ z, zb, z.T @ y, omega_z, mu)
    m = zb.T @ pi_b + penalty * omega
    theta = spd_solve(m, zb.T @ pi_y)
    hz = spd_solve(m, pi_b.T) @ (z * (y - b @ theta)[:, None]).T
    return theta, hz @ hz.T

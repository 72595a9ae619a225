"""Sieve 2SLS: tensor-product cubic B-spline bases with a penalised two-stage fit.

f(x) = mean(y) + b(x)'theta, where b is the tensor product of one basis per input of f;
the conditioning variables enter through the tensor-product basis z(c). theta minimises

    (1/n) ||P_Z (y - mean(y) - B theta)||^2 + ridge * theta' Omega theta,

where P_Z = Z (Z'Z + mu Omega_Z)^-1 Z' is a lightly penalised projection on z(c).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.interpolate import BSpline
from scipy.stats import norm
from threadpoolctl import threadpool_limits

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.tsls import check_data, check_fitted, check_identified, input_matrix

DEGREE = 3
KNOT_GRID = (8, 12, 16)
RIDGE_GRID = tuple(float(f"1e{e}") for e in range(-9, 1))
FIRST_STAGE_RIDGE = 1e-6   # mu / n, the penalty of the first stage
VALIDATION_MAX_KNOTS = 100
RIDGE_SHARE = 1e-6         # weight of the identity in Omega and Omega_Z: keeps them definite


def is_categorical(levels, max_levels):
    """A constant column, or one with few distinct integer values."""
    return len(levels) == 1 or (len(levels) <= max_levels and bool(np.all(levels == np.round(levels))))


def level_codes(x, levels, name):
    """Positions of ``x`` among ``levels``; a DMLCoreError for unseen values."""
    pos = np.searchsorted(levels, x).clip(0, len(levels) - 1)
    unseen = levels[pos] != x
    if unseen.any():
        raise DMLCoreError(f"Column '{name}' is treated as categorical with levels "
                           f"{', '.join(f'{v:g}' for v in levels)}, but takes the unseen value "
                           f"{x[unseen][0]:g}. Predict only at levels seen in training.")
    return pos


@dataclass
class _ColumnBasis:
    """Basis of one column: cubic B-splines on quantile knots, or level indicators."""

    name: str
    knots: np.ndarray | None = None      # full knot vector of the spline
    levels: np.ndarray | None = None     # sorted levels of a categorical column

    @classmethod
    def build(cls, x, name, n_knots, max_levels):
        levels = np.unique(x)
        if is_categorical(levels, max_levels):
            return cls(name, levels=levels)
        lo, hi = levels[0], levels[-1]
        inner = np.unique(np.quantile(x, np.linspace(0, 1, n_knots + 2)[1:-1]))
        inner = inner[(inner > lo) & (inner < hi)]
        return cls(name, knots=np.r_[[lo] * (DEGREE + 1), inner, [hi] * (DEGREE + 1)])

    @property
    def size(self):
        return len(self.levels) if self.levels is not None else len(self.knots) - DEGREE - 1

    def __call__(self, x):
        if self.levels is not None:
            return (level_codes(x, self.levels, self.name)[:, None] == np.arange(self.size)).astype(float)
        b = BSpline.design_matrix(np.clip(x, self.knots[0], self.knots[-1]), self.knots,
                                  DEGREE).toarray()
        b[b < 1e-12] = 0.0     # no subnormal numbers in the cross-products (they are slow)
        return b

    @property
    def penalty(self):
        """Squared second differences of the spline coefficients (zero for levels)."""
        if self.levels is not None:
            return np.zeros((self.size, self.size))
        d = np.diff(np.eye(self.size), n=2, axis=0)
        return d.T @ d


@dataclass
class _TensorBasis:
    columns: list[_ColumnBasis]
    n_knots: int

    @classmethod
    def build(cls, x, names, n_knots, max_levels, max_features):
        """The basis with the most interior knots up to ``n_knots`` that has at most
        ``max_features`` functions, or None."""
        for k in range(n_knots, -1, -1):
            basis = cls([_ColumnBasis.build(x[:, j], name, k, max_levels)
                         for j, name in enumerate(names)], k)
            if basis.size <= max_features:
                return basis
            if all(c.levels is not None for c in basis.columns):
                return None
        return None

    @property
    def size(self):
        return int(np.prod([c.size for c in self.columns]))

    def __call__(self, x):
        out = np.ones((len(x), 1))
        for j, col in enumerate(self.columns):
            out = (out[:, :, None] * col(x[:, j])[:, None, :]).reshape(len(x), -1)
        return out

    def penalty(self):
        """Sum over columns of the difference penalty along that column, plus RIDGE_SHARE * I."""
        sizes = [c.size for c in self.columns]
        total = RIDGE_SHARE * np.eye(self.size)
        for j, col in enumerate(self.columns):
            left, right = int(np.prod(sizes[:j])), int(np.prod(sizes[j + 1:]))
            total += np.kron(np.kron(np.eye(left), col.penalty), np.eye(right))
        return total


@dataclass
class _Cells:
    """Cells defined by the categorical columns that are both inputs and conditioning."""

    columns: list[tuple[int, str]]       # (position among the inputs, name)
    levels: list[np.ndarray]

    def codes(self, inputs):
        cell = np.zeros(len(inputs), dtype=int)
        for (j, name), levels in zip(self.columns, self.levels):
            cell = cell * len(levels) + level_codes(inputs[:, j], levels, name)
        return cell

    def fitted_codes(self, inputs, fitted) -> np.ndarray:
        """``codes(inputs)``, with a DMLCoreError for a cell not in ``fitted`` (never seen in fit)."""
        cell = self.codes(inputs)
        unseen = ~np.isin(cell, list(fitted))
        if unseen.any():
            row = int(np.flatnonzero(unseen)[0])
            combo = ", ".join(f"{name}={inputs[row, j]:g}" for j, name in self.columns)
            raise DMLCoreError(f"Row {row} has {combo}, a combination that never occurs in the "
                               f"training data, so f is not estimated there.")
        return cell


def check_tabular(data: CausalData, what: str, instead: str) -> None:
    """Spline bases need tabular inputs: a DMLCoreError naming the image columns otherwise."""
    if data.image_columns:
        raise DMLCoreError(f"{what} builds a spline basis of every input of f, so it cannot take the "
                           f"{len(data.image_columns):,} image pixel columns of this data. {instead}")


class Sieve2SLS:
    """Penalised sieve 2SLS with tensor-product cubic B-spline bases.

    Every input of f and every conditioning column gets a univariate basis: integer columns
    with at most ``max_levels`` distinct values get level indicators, the others cubic
    B-splines with up to ``n_knots`` interior knots at quantiles (values outside the training
    range are clipped to it, so f is extrapolated as a constant). The bases of f and of the
    instruments are the tensor products of these, each with fewer knots if needed to stay
    within ``max_features`` functions. The penalty ``Omega`` sums the squared second
    differences of theta along each spline column (P-splines: functions linear in each
    continuous input are not penalised), plus ``RIDGE_SHARE * I``; levels are not smoothed
    across. The first stage has the same kind of penalty, with weight
    ``FIRST_STAGE_RIDGE * n``.

    Categorical columns that are both inputs and conditioning variables split the data into
    cells, in which f is fitted separately with the same knots and penalty: this is the
    tensor product with their indicators, computed block by block.

    Parameters
    ----------
    n_knots : int or None, default None
        Interior knots per continuous column; None chooses from ``KNOT_GRID`` by K-fold
        validation.
    ridge : float or None, default None
        Penalty weight; None chooses from ``RIDGE_GRID`` by K-fold validation.
    folds : int, default 5
    max_levels : int, default 10
    max_features : int, default 800
        Largest basis of f or of the instruments (within a cell).
    random_state : int, default 0
        Seed of the fold split.

    Attributes
    ----------
    n_knots_, ridge_ : the chosen values (``n_knots_`` as requested for f's basis).
    cv_loss_ : dict {(n_knots, ridge): validation loss}; empty when nothing was chosen.
    theta_, cov_ : dicts {cell: coefficients}, {cell: their sandwich covariance}.
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

    def __init__(self, n_knots=None, ridge=None, folds=5, max_levels=10, max_features=800,
                 random_state=0):
        self.n_knots = n_knots
        self.ridge = ridge
        self.folds = folds
        self.max_levels = max_levels
        self.max_features = max_features
        self.random_state = random_state

    def fit(self, data: CausalData, monitor=None) -> "Sieve2SLS":
        """Choose the basis size and penalty unless given, then fit theta on all of ``data``.

        BLAS runs on one thread meanwhile: the many small dense solves are faster so, and
        multithreaded BLAS on a busy machine can slow them down a hundredfold.
        """
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(data, monitor)

    def _fit(self, data, monitor):
        check_data(data, type(self).__name__)
        check_tabular(data, "Sieve 2SLS", "Use DML-CMR or the naive plug-in with the neural-network "
                                           "learner on image data.")
        check_identified(data)
        knot_grid = _candidates(self.n_knots, KNOT_GRID, "n_knots", integer=True)
        ridge_grid = _candidates(self.ridge, RIDGE_GRID, "ridge", integer=False)
        a = data.cmr()
        y = a.y - a.y.mean()
        cells, free_x, free_c = self._split(a)
        cell = cells.codes(a.inputs)
        x, c = a.inputs[:, free_x], a.conditioning[:, free_c]
        bases = {}
        for k in knot_grid:
            fb = _TensorBasis.build(x, [a.input_names[j] for j in free_x], k, self.max_levels,
                                    self.max_features)
            cb = _TensorBasis.build(c, [a.conditioning_names[j] for j in free_c], k,
                                    self.max_levels, self.max_features)
            if fb is None or cb is None:
                raise DMLCoreError(
                    f"The tensor-product basis has more than max_features={self.max_features} "
                    f"functions even without interior knots ({len(a.input_names)} inputs, "
                    f"{len(a.conditioning_names)} conditioning columns). Use fewer columns or "
                    f"categorical levels, or raise max_features.")
            if all((fb.n_knots, cb.n_knots) != (f.n_knots, g.n_knots) for f, g in bases.values()):
                bases[k] = (fb, cb)
        self.cv_loss_ = {}
        if len(bases) > 1 or len(ridge_grid) > 1:
            data.check_folds(self.folds)
            self.cv_loss_ = self._validation_losses(a, x, c, y, cell, bases, ridge_grid, monitor)
            self.n_knots_, self.ridge_ = min(self.cv_loss_, key=self.cv_loss_.get)
        else:
            self.n_knots_, self.ridge_ = next(iter(bases)), ridge_grid[0]
        if monitor is not None:
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
        self.intercept_ = float(a.y.mean())
        self.input_columns_ = list(a.input_names)
        self.n_ = a.n
        self.fold_losses_ = []
        return self

    def _validation_losses(self, a, x, c, y, cell, bases, ridge_grid, monitor):
        """{(n_knots, ridge): held-out loss} (see Notes)."""
        fold = np.random.default_rng(self.random_state).permutation(a.n) % self.folds
        names = [col.name for col in next(iter(bases.values()))[1].columns]
        block = a.n / (self.folds * len(np.unique(cell)))      # held-out rows per cell
        val_basis = (_TensorBasis.build(c, names, VALIDATION_MAX_KNOTS, self.max_levels,
                                        min(self.max_features, int(block / 4)))
                     or _TensorBasis.build(c, names, 0, self.max_levels, self.max_features))
        z_val, omega_val = val_basis(c), val_basis.penalty()
        losses = {}
        for i, (k, (fb, cb)) in enumerate(bases.items()):
            if monitor is not None:
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
                  and is_categorical(np.unique(a.inputs[:, j]), self.max_levels)]
        names = {name for _, name in shared}
        cells = _Cells(shared, [np.unique(a.inputs[:, j]) for j, _ in shared])
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


def _spd_solve(a, b):
    """a^-1 b for a symmetric positive definite a (with a relative 1e-10 jitter against rounding)."""
    a = a + 1e-10 * np.trace(a) / len(a) * np.eye(len(a))
    return sla.cho_solve(sla.cho_factor(a, check_finite=False), b, check_finite=False)


def _first_stage(zz, zb, zy, omega_z, mu):
    """W^-1 Z'B and W^-1 Z'y with W = Z'Z + mu Omega_Z."""
    both = _spd_solve(zz + mu * omega_z, np.column_stack([zb, zy]))
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
            thetas = np.column_stack([_spd_solve(m + n_train * r * omega, v) for r in ridge_grid])
            resid = y[held[k], None] - b[held[k]] @ thetas
            zh = z_val[held[k]]
            w = zh.T @ zh + (len(y) - n_train) * FIRST_STAGE_RIDGE * omega_val
            loss += np.sum((zh @ _spd_solve(w, zh.T @ resid)) ** 2, axis=0)
    return loss / len(y)


def _cell_fit(b, z, y, omega, omega_z, penalty, mu):
    """theta = H Z'y with H = (M + penalty Omega)^-1 Pi_B', M = B'Z Pi_B, and its sandwich."""
    zb = z.T @ b
    pi_b, pi_y = _first_stage(z.T @ z, zb, z.T @ y, omega_z, mu)
    m = zb.T @ pi_b + penalty * omega
    theta = _spd_solve(m, zb.T @ pi_y)
    hz = _spd_solve(m, pi_b.T) @ (z * (y - b @ theta)[:, None]).T
    return theta, hz @ hz.T

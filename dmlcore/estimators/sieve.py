"""Sieve 2SLS: cubic B-spline bases with a penalised two-stage fit.

f(x) = mean(y) + b(x)'theta, where b is the tensor product of one basis per input of f, or,
when that product would be too large for the data (many covariates), an additive basis;
the conditioning variables enter through a basis z(c) built the same way. theta minimises

    (1/n) ||P_Z (y - mean(y) - B theta)||^2 + ridge * theta' Omega theta,

where P_Z = Z (Z'Z + mu Omega_Z)^-1 Z' is a lightly penalised projection on z(c).

Bases (shared with the sieve second stage of DML-CMR):

* :class:`_TensorBasis` -- the tensor product of every column's basis: any interaction, but
  its size is the product of the columns' sizes.
* :class:`_AdditiveBasis` -- a constant plus one term per column (a spline, level indicators
  or a linear term, each without its constant part) plus chosen products of two columns'
  terms: a spline in the treatment, additive (linear or spline) in the covariates.
  :func:`additive_basis` picks the richest one within a size limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.interpolate import BSpline
from scipy.stats import norm
from threadpoolctl import threadpool_limits

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators._base import CMREstimator, check_fitted, input_matrix
from dmlcore.estimators.tsls import check_identified

DEGREE = 3
KNOT_GRID = (8, 12, 16)
RIDGE_GRID = tuple(float(f"1e{e}") for e in range(-9, 1))
FIRST_STAGE_RIDGE = 1e-6   # mu / n, the penalty of the first stage
VALIDATION_MAX_KNOTS = 100
RIDGE_SHARE = 1e-6         # weight of the identity in Omega and Omega_Z: keeps them definite
MIN_TENSOR_KNOTS = 2       # a tensor product with fewer interior knots is too coarse: go additive
CHUNK_VALUES = 2 ** 21     # basis values computed at once (16 MB)
MIN_CELL_ROWS = 30         # a tensor design whose smallest cell has fewer rows: additive instead
ROWS_PER_FEATURE = 4       # rows of the smallest cell per basis function, at least


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
    def build(cls, x, name, n_knots, max_levels, smooth=False):
        """Splines, or level indicators for a categorical column; ``smooth`` keeps splines for
        any column with more than two values (a treatment: level indicators have no slope)."""
        levels = np.unique(x)
        if is_categorical(levels, max_levels) and not (smooth and len(levels) > 2):
            return cls(name, levels=levels)
        lo, hi = levels[0], levels[-1]
        inner = np.unique(np.quantile(x, np.linspace(0, 1, n_knots + 2)[1:-1]))
        inner = inner[(inner > lo) & (inner < hi)]
        return cls(name, knots=np.r_[[lo] * (DEGREE + 1), inner, [hi] * (DEGREE + 1)])

    @property
    def size(self):
        return len(self.levels) if self.levels is not None else len(self.knots) - DEGREE - 1

    def __call__(self, x):
        if self.levels is not None and len(self.levels) == 1:   # constant in training: its value is ignored
            return np.ones((len(x), 1))
        if self.levels is not None:
            return (level_codes(x, self.levels, self.name)[:, None] == np.arange(self.size)).astype(float)
        b = BSpline.design_matrix(np.clip(x, self.knots[0], self.knots[-1]), self.knots,
                                  DEGREE).toarray()
        b[b < 1e-12] = 0.0     # no subnormal numbers in the cross-products (they are slow)
        return b

    @property
    def penalty(self):
        """Squared second divided differences of the spline coefficients over their Greville
        abscissae, times the mean spacing squared (zero for levels).

        A linear function's coefficients are linear in the Greville abscissae, so it is not
        penalised even where the clamped end knots crowd the abscissae; with evenly spaced
        abscissae this is the plain second-difference penalty.
        """
        if self.levels is not None:
            return np.zeros((self.size, self.size))
        greville = np.array([self.knots[j + 1:j + DEGREE + 1].mean() for j in range(self.size)])
        step = np.diff(greville)
        d = step.mean() * np.diff(np.diff(np.eye(self.size), axis=0) / step[:, None], axis=0)
        return d.T @ d


@dataclass
class _TensorBasis:
    columns: list[_ColumnBasis]
    n_knots: int

    @classmethod
    def build(cls, x, names, n_knots, max_levels, max_features, smooth=()):
        """The basis with the most interior knots up to ``n_knots`` that has at most
        ``max_features`` functions, or None. Columns named in ``smooth`` stay splines."""
        def build(k):
            return cls([_ColumnBasis.build(x[:, j], name, k, max_levels, name in smooth)
                        for j, name in enumerate(names)], k)

        if build(0).size > max_features:      # too large even without interior knots
            return None
        for k in range(n_knots, -1, -1):
            basis = build(k)
            if basis.size <= max_features:
                return basis
        return None

    @property
    def size(self):
        return math.prod(c.size for c in self.columns)   # Python ints: no overflow with many columns

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

    def describe(self) -> str:
        return f"tensor product of {', '.join(c.name for c in self.columns) or 'no column'}"


@dataclass
class _LinearColumn:
    """A column's linear term (x - center) / scale."""

    name: str
    center: float
    scale: float

    @classmethod
    def build(cls, x, name):
        scale = float(np.std(x))
        return cls(name, float(np.mean(x)), scale if scale > 0 else 1.0)

    size = 1
    levels = None

    def __call__(self, x):
        return ((np.asarray(x, dtype=float) - self.center) / self.scale)[:, None]

    @property
    def penalty(self):
        return np.zeros((1, 1))


def _term(column, x):
    """A column's functions without their constant part (the first spline or level dropped)."""
    values = column(x)
    return values if isinstance(column, _LinearColumn) else values[:, 1:]


def _term_penalty(column):
    return column.penalty if isinstance(column, _LinearColumn) else column.penalty[1:, 1:]


@dataclass
class _AdditiveBasis:
    """1 + sum over columns of their term + products of two columns' terms.

    A column's term is its spline or level-indicator basis without the first function (the
    constant stands for it) or its linear term. ``products`` pairs (i, j) add the row-wise
    products of column i's and column j's terms: an interaction of just those two columns.
    The penalty is the difference penalty of the spline terms of the ``penalized`` columns
    (and of products along such a factor), plus RIDGE_SHARE * I.
    """

    columns: list
    products: list[tuple[int, int]]
    n_knots: int
    penalized: set[int]

    def _blocks(self):
        """The penalty block of each column's term (zero when not penalized)."""
        blocks = [_term_penalty(c) for c in self.columns]
        return [b if j in self.penalized else np.zeros_like(b) for j, b in enumerate(blocks)]

    @property
    def size(self):
        sizes = [len(b) for b in self._blocks()]
        return 1 + sum(sizes) + sum(sizes[i] * sizes[j] for i, j in self.products)

    def __call__(self, x):
        terms = [_term(c, x[:, j]) for j, c in enumerate(self.columns)]
        parts = [np.ones((len(x), 1)), *terms]
        parts += [(terms[i][:, :, None] * terms[j][:, None, :]).reshape(len(x), -1) for i, j in self.products]
        return np.hstack(parts)

    def penalty(self):
        single = self._blocks()
        blocks = [np.zeros((1, 1)), *single]
        for i, j in self.products:
            pi, pj = single[i], single[j]
            blocks.append(np.kron(pi, np.eye(len(pj))) + np.kron(np.eye(len(pi)), pj))
        return sla.block_diag(*blocks) + RIDGE_SHARE * np.eye(self.size)

    def describe(self) -> str:
        kinds = {"spline": [], "linear": [], "levels": []}
        for c in self.columns:
            kinds["linear" if isinstance(c, _LinearColumn) else "levels" if c.levels is not None
                  else "spline"].append(c.name)
        parts = [f"{what} {_shown(names)}" for what, names in (("a spline in", kinds["spline"]),
                 ("linear in", kinds["linear"]), ("categories of", kinds["levels"])) if names]
        text = "additive: " + "; ".join(parts)
        if self.products:
            text += "; interactions " + ", ".join(f"{self.columns[i].name} x {self.columns[j].name}"
                                                  for i, j in self.products)
        return text


def usable_tensor(basis, n_knots) -> bool:
    """Whether a tensor basis exists and keeps at least min(n_knots, MIN_TENSOR_KNOTS) interior
    knots on its spline columns (fewer: too coarse, an additive basis does better)."""
    return basis is not None and (basis.n_knots >= min(n_knots, MIN_TENSOR_KNOTS)
                                  or all(c.levels is not None for c in basis.columns))


def _shown(names, most=4):
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def additive_basis(x, names, n_knots, max_levels, max_features, *, smooth=(), products=(),
                   spline_others=False):
    """The richest additive basis of at most ``max_features`` functions, or None.

    The ``smooth`` columns (a treatment, the endogenous inputs, excluded instruments) get
    penalised splines whenever they take more than two values. The other columns get level
    indicators when categorical, else a linear term, or with ``spline_others`` an unpenalised
    spline: unpenalised because a penalty that shrinks a covariate's term in f, while the
    covariate's full term stays among the conditioning variables, would turn its shrunk part
    into an excluded instrument. ``products`` are (i, j) column pairs to interact. Tried in
    turn, each from ``n_knots`` interior knots down to MIN_TENSOR_KNOTS: as asked; without
    ``spline_others``; without products; and last that one down to no interior knot.
    """
    def build(k, spline_all, pairs):
        columns = []
        for j, name in enumerate(names):
            col = _ColumnBasis.build(x[:, j], name, k, max_levels, name in smooth)
            if col.levels is None and name not in smooth and not spline_all:
                col = _LinearColumn.build(x[:, j], name)
            columns.append(col)
        return _AdditiveBasis(columns, list(pairs), k, {j for j, name in enumerate(names) if name in smooth})

    floor = min(MIN_TENSOR_KNOTS, n_knots)
    tries = [(spline_others, products, floor), (False, products, floor), (False, (), floor), (False, (), 0)]
    for spline_all, pairs, lowest in tries:
        for k in range(n_knots, lowest - 1, -1):
            basis = build(k, spline_all, pairs)
            if basis.size <= max_features:
                return basis
    return None


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
    n_knots_, ridge_ : the chosen values (``n_knots_`` as requested for f's basis).
    cv_loss_ : dict {(n_knots, ridge): validation loss}; empty when nothing was chosen.
    theta_, cov_ : dicts {cell: coefficients}, {cell: their sandwich covariance}.
    additive_ : bool, whether the bases are additive; notes_ : list of str (says so).
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

    def __init__(self, n_knots=None, ridge=None, val_folds=5, max_levels=10, max_features=800, seed=0):
        self.n_knots = n_knots
        self.ridge = ridge
        self.val_folds = val_folds
        self.max_levels = max_levels
        self.max_features = max_features
        self.seed = seed

    def _fit(self, data: CausalData, monitor) -> None:
        """Choose the basis size and penalty unless given, then fit theta on all of ``data``.

        BLAS runs on one thread meanwhile: the many small dense solves are faster so, and
        multithreaded BLAS on a busy machine can slow them down a hundredfold.
        """
        with threadpool_limits(limits=1, user_api="blas"):
            self._fit_sieve(data, monitor)

    def _fit_sieve(self, data, monitor):
        check_tabular(data, "Sieve 2SLS", "Use DML-CMR or the naive plug-in with the neural-network "
                                           "learner on image data.")
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
            cells, free_x, free_c = _Cells([], []), list(range(len(a.input_names))), \
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
                fb = _TensorBasis.build(x, x_names, k, self.max_levels, cap, smooth)
                cb = _TensorBasis.build(c, c_names, k, self.max_levels, cap)
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
            val_basis = (_TensorBasis.build(c, names, VALIDATION_MAX_KNOTS, self.max_levels, cap)
                         or _TensorBasis.build(c, names, 0, self.max_levels, self.max_features))
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

"""Spline bases: the sieve of Sieve 2SLS, of the spline second stage f and of the held-out score.

* :class:`ColumnBasis` -- one column's cubic B-splines on quantile knots, or level indicators;
* :class:`TensorBasis` -- the tensor product of every column's basis: any interaction, but
  its size is the product of the columns' sizes;
* :class:`AdditiveBasis` -- a constant plus one term per column (a spline, level indicators
  or a linear term, :class:`LinearColumn`, each without its constant part) plus chosen
  products of two columns' terms; :func:`additive_basis` picks the richest one within a size limit;
* :class:`Cells` -- the cells of categorical columns shared by f's inputs and the conditioning
  variables; :func:`spd_solve` -- the penalised solves; :func:`check_tabular` -- the refusal of
  image columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.interpolate import BSpline

from dmlcore.errors import DMLCoreError
from dmlcore.stats import resample

DEGREE = 3
RIDGE_GRID = tuple(float(f"1e{e}") for e in range(-9, 1))   # penalty weights tried by validation
RIDGE_SHARE = 1e-6         # weight of the identity in Omega and Omega_Z: keeps them definite
MIN_TENSOR_KNOTS = 2       # a tensor product with fewer interior knots is too coarse: go additive


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
class ColumnBasis:
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
class TensorBasis:
    columns: list[ColumnBasis]
    n_knots: int

    @classmethod
    def build(cls, x, names, n_knots, max_levels, max_features, smooth=()):
        """The basis with the most interior knots up to ``n_knots`` that has at most
        ``max_features`` functions, or None. Columns named in ``smooth`` stay splines."""
        def build(k):
            return cls([ColumnBasis.build(x[:, j], name, k, max_levels, name in smooth)
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
class LinearColumn:
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
    return values if isinstance(column, LinearColumn) else values[:, 1:]


def _term_penalty(column):
    return column.penalty if isinstance(column, LinearColumn) else column.penalty[1:, 1:]


@dataclass
class AdditiveBasis:
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
            kinds["linear" if isinstance(c, LinearColumn) else "levels" if c.levels is not None
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
            col = ColumnBasis.build(x[:, j], name, k, max_levels, name in smooth)
            if col.levels is None and name not in smooth and not spline_all:
                col = LinearColumn.build(x[:, j], name)
            columns.append(col)
        return AdditiveBasis(columns, list(pairs), k, {j for j, name in enumerate(names) if name in smooth})

    floor = min(MIN_TENSOR_KNOTS, n_knots)
    tries = [(spline_others, products, floor), (False, products, floor), (False, (), floor), (False, (), 0)]
    for spline_all, pairs, lowest in tries:
        for k in range(n_knots, lowest - 1, -1):
            basis = build(k, spline_all, pairs)
            if basis.size <= max_features:
                return basis
    return None


@dataclass
class Cells:
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


def check_tabular(data, what: str, instead: str) -> None:
    """Spline bases need tabular inputs: a DMLCoreError naming the image columns otherwise."""
    if data.image_columns:
        raise DMLCoreError(f"{what} builds a spline basis of every input of f, so it cannot take the "
                           f"{len(data.image_columns):,} image pixel columns of this data. {instead}")


def spd_solve(a, b):
    """a^-1 b for a symmetric positive definite a (with a relative 1e-10 jitter against rounding)."""
    a = a + 1e-10 * np.trace(a) / len(a) * np.eye(len(a))
    return sla.cho_solve(sla.cho_factor(a, check_finite=False), b, check_finite=False)


def cross_fitted_projection(c, r, names, excluded, seed, *, knots=6, max_levels=10,
                            ridges=(1e-6, 1e-4, 1e-2, 1.0), inner=5, what="The projection"):
    """g(c_i) = E-hat[r | C = c_i] for each row: a ridge regression of ``r`` on a spline basis of the
    conditioning columns ``c`` (``names``; a tensor product when it fits, else additive, ``excluded`` the
    columns not among f's inputs, smooth terms), each row's value fitted on the other ``inner`` parts (the
    resampler's ``"projection"`` folds); the ridge is the ``ridges`` value with the smallest cross-fitted
    squared error. The held-out residual's projection (:mod:`dmlcore.runs.heldout_residual`) and DML-CMR's
    target choice of nuisances (:mod:`dmlcore.estimators.nuisance_target`)."""
    m = len(r)
    cap = max(2, m // 10)
    basis = TensorBasis.build(c, names, knots, max_levels, cap)
    if not usable_tensor(basis, knots):
        basis = (additive_basis(c, names, knots, max_levels, cap, smooth=excluded)
                 or additive_basis(c, names, 0, max_levels, m // 2, smooth=excluded))
    if basis is None:
        raise DMLCoreError(f"{what}'s regression on the {len(names)} conditioning columns needs "
                           f"more rows per fold than {m}; use fewer folds or more rows.")
    z, omega = basis(c), basis.penalty()
    part = resample.fold_labels(m, inner, seed, "projection")
    fits = {ridge: np.empty(m) for ridge in ridges}
    for j in range(inner):
        fit, out = part != j, part == j
        zz, zr = z[fit].T @ z[fit], z[fit].T @ r[fit]
        for ridge in ridges:
            fits[ridge][out] = z[out] @ spd_solve(zz + fit.sum() * (ridge * omega + RIDGE_SHARE * np.eye(len(zz))), zr)
    best = min(ridges, key=lambda ridge: float(np.mean((r - fits[ridge]) ** 2)))
    return fits[best]

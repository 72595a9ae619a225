"""Absorbed fixed effects and regression weights of the linear IV methods (``--absorb``, ``--weights``).

Weights ``w`` act as in linearmodels' ``weights=``: every column (outcome, regressors, instruments,
the constant) is multiplied by ``sqrt(w)``, so 2SLS minimises the weighted sum of squares and the
covariances are those of the transformed rows. Absorbing the fixed effects of one or two
categorical columns replaces every column by its (weighted) deviation from its group means --
exactly for one column, by alternating projections to a relative change below 1e-13 for two -- and
drops the constant: by Frisch-Waugh-Lovell the coefficients, residuals and the unadjusted, robust
and CR0-clustered covariances equal those of the regression with one dummy per level. The levels
the dummies would use (``df``: ``L`` for one column; ``L1 + L2 - c`` for two, ``c`` the connected
components of their levels) count in every small-sample factor (CR1, F tests' degrees of freedom).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from dmlcore.stats.covariance import FIXEF_K_DEFAULT, group_codes
from dmlcore.errors import DMLCoreError

MAX_ABSORB = 2
_TOL, _MAX_SWEEPS = 1e-13, 100_000


def check_absorb(table: pd.DataFrame, absorb: list[str]) -> list[np.ndarray]:
    """The level codes 0..L-1 of each absorbed column; raise for an unusable column."""
    if len(absorb) > MAX_ABSORB:
        raise DMLCoreError(f"Absorb the fixed effects of one or two columns; got {len(absorb)} "
                           f"({', '.join(absorb)}). Enter further ones as categorical covariates.")
    codes = []
    for col in absorb:
        level = group_codes(table, col, "Absorbed column",
                            single="which the constant already absorbs. Leave it out.",
                            per_row="(its fixed effects would fit every row exactly). Choose a column that "
                                    "groups rows.")
        codes.append(level.astype(np.int64))
    return codes


def check_weights(table: pd.DataFrame, weights: str) -> np.ndarray:
    """The weights column as positive finite floats; raise otherwise."""
    if weights not in table.columns:
        raise DMLCoreError(f"Weights column '{weights}' is not in the table; choose one of its columns.")
    try:
        w = pd.to_numeric(table[weights], errors="raise").to_numpy(dtype=float)
    except (ValueError, TypeError):
        raise DMLCoreError(f"Weights column '{weights}' is not numeric; choose a column of positive "
                           f"numbers.") from None
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        raise DMLCoreError(f"Weights column '{weights}' has {int(bad.sum())} value(s) that are missing, zero or "
                           f"negative (first: {float(w[bad][0]):g}); weights must be positive. Drop those rows first.")
    return w


def absorbed_df(codes: list[np.ndarray]) -> int:
    """The rank of the absorbed columns' dummies (without a constant): the levels they use up."""
    if not codes:
        return 0
    if len(codes) == 1:
        return int(codes[0].max() + 1)
    a, b = codes
    la, lb = int(a.max() + 1), int(b.max() + 1)
    graph = coo_matrix((np.ones(len(a)), (a, la + b)), shape=(la + lb, la + lb))
    components, _ = connected_components(graph, directed=False)
    return la + lb - components


@dataclass
class LinearTransform:
    """The rows' transformation for absorbed fixed effects and weights (module notes).

    ``codes``: the absorbed columns' level codes; ``weights``: the weights or None; ``df``: the
    levels absorbed; ``absorb`` / ``weights_column``: the column names.
    """

    codes: list
    weights: np.ndarray | None
    absorb: list
    weights_column: str | None

    @property
    def df(self) -> int:
        return absorbed_df(self.codes)

    @property
    def active(self) -> bool:
        return bool(self.codes) or self.weights is not None

    def demean(self, a: np.ndarray) -> np.ndarray:
        """``a`` (n,) or (n, k) less its weighted group means of the absorbed columns."""
        out = np.array(a, dtype=float, copy=True)
        if not self.codes:
            return out
        flat = out.ndim == 1
        out = out.reshape(len(out), -1)
        if out.shape[1] == 0:         # no columns (no covariates beside the fixed effects): nothing to demean
            return out
        w = np.ones(len(out)) if self.weights is None else self.weights
        sums = [np.bincount(c, weights=w) for c in self.codes]
        scale = np.maximum(np.abs(out).max(axis=0), 1e-300)

        def sweep(values):
            for c, total in zip(self.codes, sums):
                for j in range(values.shape[1]):
                    values[:, j] -= (np.bincount(c, weights=w * values[:, j]) / total)[c]
            return values

        for _ in range(1 if len(self.codes) == 1 else _MAX_SWEEPS):
            before = out.copy()
            out = sweep(out)
            if len(self.codes) == 1 or np.max(np.abs(out - before).max(axis=0) / scale) < _TOL:
                break
        else:
            raise DMLCoreError(f"The fixed effects of {' and '.join(self.absorb)} did not converge in "
                               f"{_MAX_SWEEPS:,} sweeps; absorb one of them and enter the other as a "
                               f"categorical covariate.")
        return out[:, 0] if flat else out

    def apply(self, a: np.ndarray) -> np.ndarray:
        """``a`` demeaned, then multiplied by ``sqrt(w)`` row by row."""
        out = self.demean(a)
        if self.weights is None:
            return out
        root = np.sqrt(self.weights)
        return out * (root if out.ndim == 1 else root[:, None])


def transform_of(data) -> LinearTransform:
    """The :class:`LinearTransform` of a CausalData's ``absorb`` and ``weights``."""
    absorb, weights = list(getattr(data, "absorb", []) or []), getattr(data, "weights", None)
    return LinearTransform(check_absorb(data.table, absorb) if absorb else [],
                           check_weights(data.table, weights) if weights else None, absorb, weights)


def nested_in(codes: np.ndarray, clusters) -> bool:
    """Whether every level of ``codes`` lies within one cluster of some cluster column (``clusters`` (n,) or
    (n, 2))."""
    if clusters is None:
        return False
    columns = np.asarray(clusters).reshape(len(codes), -1)
    for j in range(columns.shape[1]):
        pairs = np.unique(np.column_stack([codes, columns[:, j]]), axis=0)
        if len(pairs) == len(np.unique(codes)):
            return True
    return False


def counted_df(transform: LinearTransform, clusters=None, fixef_k: str = FIXEF_K_DEFAULT) -> int:
    """The absorbed levels a small-sample factor counts in k: all of them (``"full"``, ``transform.df``), or, with
    ``"nested"`` and clusters, all but those of absorbed columns nested in a cluster column, each such column
    keeping one (fixest's ``fixef.K = "nested"``, pyfixest's ``k_fixef = "nonnested"``: k + sum(L) - (F - 1) -
    sum(L nested) + (nested columns))."""
    full = transform.df
    if fixef_k != "nested" or clusters is None or not transform.codes:
        return full
    nested = [c for c in transform.codes if nested_in(c, clusters)]
    return full - sum(int(c.max() + 1) for c in nested) + len(nested)

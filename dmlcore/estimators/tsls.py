"""Linear two-stage least squares for E[Y - f(inputs) | conditioning] = 0.

f is linear in its inputs (``data.input_columns``) and the conditioning columns are the
instruments. Inputs that are also conditioning variables (covariates; the treatment in
PCL) instrument themselves, so for ``iv`` this is textbook 2SLS and for ``pcl`` it is the
linear proximal 2SLS of Tchetgen Tchetgen et al. (2020).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError

_RANK_TOL = 1e-10


class TwoStageLeastSquares:
    """Linear 2SLS with homoskedastic (unadjusted) standard errors.

    Parameters
    ----------
    add_constant : bool, default True
        Add an intercept named ``"const"`` to the regressors and the instruments.

    Attributes
    ----------
    coef_ : pandas.Series
        Coefficients keyed by input column (and ``"const"``).
    std_errors_ : pandas.Series
        Standard errors ``sqrt(diag(s2 (Xh'Xh)^-1))`` with ``s2 = e'e / n`` and ``Xh`` the
        first-stage fitted regressors, as ``linearmodels`` ``IV2SLS.fit(cov_type="unadjusted")``.
    input_columns_ : list of str
    n_ : int
        Number of rows used.
    fold_losses_ : list
        Always empty (no cross-fitting).
    """

    def __init__(self, add_constant=True):
        self.add_constant = add_constant

    def fit(self, data: CausalData, monitor=None) -> "TwoStageLeastSquares":
        """Estimate the coefficients of f on ``data``; ``monitor`` is only checked for cancellation."""
        check_data(data, type(self).__name__)
        if monitor is not None:
            monitor.stage("2SLS")
        inputs, cond = data.input_columns, data.conditioning_columns
        check_identified(data)
        if self.add_constant and "const" in inputs + cond:
            raise DMLCoreError("A column is named 'const', which clashes with the intercept that "
                               "add_constant=True adds. Rename the column or pass add_constant=False.")
        table = data.table
        y = table[data.outcome].to_numpy(dtype=float)
        x = table[inputs].to_numpy(dtype=float)
        z = table[cond].to_numpy(dtype=float)
        x_names, z_names = list(inputs), list(cond)
        if self.add_constant:
            x, z = _with_constant(x), _with_constant(z)
            x_names, z_names = ["const"] + x_names, ["const"] + z_names
        check_full_rank(x, x_names, "inputs of f (regressors)")
        check_full_rank(z, z_names, "conditioning columns (instruments)")
        q, _ = np.linalg.qr(z)
        x_hat = q @ (q.T @ x)
        check_full_rank(x_hat, x_names, "first-stage projections of the inputs of f",
                        hint="The instruments do not move these inputs independently: the model is "
                             "not identified. Use stronger or more instruments.")
        beta, *_ = np.linalg.lstsq(x_hat, y, rcond=None)
        resid = y - x @ beta
        n = len(y)
        cov = resid @ resid / n * np.linalg.inv(x_hat.T @ x_hat)
        self.coef_ = pd.Series(beta, index=x_names, name="coef")
        self.std_errors_ = pd.Series(np.sqrt(np.diag(cov)), index=x_names, name="std_error")
        self.input_columns_ = list(inputs)
        self.n_ = n
        self.fold_losses_ = []
        return self

    def predict(self, X) -> np.ndarray:
        """f at the rows of ``X`` (DataFrame with the input columns, or an array in their order)."""
        check_fitted(self, "coef_")
        x = input_matrix(X, self.input_columns_, type(self).__name__)
        slopes = self.coef_[self.input_columns_].to_numpy()
        return x @ slopes + self.coef_.get("const", 0.0)


def _with_constant(a: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(a)), a])


def check_data(data, owner: str) -> None:
    """Raise unless ``data`` is a CausalData."""
    if not isinstance(data, CausalData):
        raise DMLCoreError(f"{owner}.fit expects a CausalData; got {type(data).__name__}. "
                           f"Wrap the table with CausalData(table, problem, ...).")


def check_identified(data: CausalData) -> None:
    """Raise unless there are at least as many excluded instruments as endogenous inputs."""
    inputs, cond = data.input_columns, data.conditioning_columns
    endog = [c for c in inputs if c not in cond]
    excluded = [c for c in cond if c not in inputs]
    if len(excluded) < len(endog):
        raise DMLCoreError(
            f"The model is under-identified: {len(endog)} endogenous input(s) of f "
            f"({', '.join(endog)}) but only {len(excluded)} excluded instrument(s) "
            f"({', '.join(excluded) or 'none'}). Add instruments (conditioning columns that are "
            f"not inputs of f) or drop endogenous inputs.")


def check_full_rank(a: np.ndarray, names: list[str], what: str, hint: str | None = None) -> None:
    """Raise a DMLCoreError naming the first column of ``a`` spanned by the columns before it."""
    norms = np.linalg.norm(a, axis=0)
    if np.any(norms == 0):
        raise DMLCoreError(f"Among the {what}, column '{names[int(np.argmin(norms))]}' is all "
                           f"zeros. Drop it.")
    scaled = a / norms
    r = np.linalg.qr(scaled, mode="r")
    small = np.flatnonzero(np.abs(np.diag(r)) < _RANK_TOL * max(1, a.shape[0]) ** 0.5)
    if small.size == 0:
        return
    j = int(small[0])
    weights, *_ = np.linalg.lstsq(scaled[:, :j], scaled[:, j], rcond=None)
    partners = [names[i] for i in np.flatnonzero(np.abs(weights) > 1e-8)]
    raise DMLCoreError(
        f"The {what} are perfectly collinear: column '{names[j]}' is a linear combination of "
        f"{', '.join(repr(p) for p in partners)}. "
        + (hint or "Drop one of these columns."))


def check_fitted(model, attribute: str) -> None:
    if not hasattr(model, attribute):
        raise DMLCoreError(f"This {type(model).__name__} is not fitted yet. Call fit(data) "
                           f"before predict.")


def input_matrix(X, columns: list[str], owner: str) -> np.ndarray:
    """The input columns of ``X`` as a float array (n, len(columns))."""
    if isinstance(X, pd.DataFrame):
        missing = [c for c in columns if c not in X.columns]
        if missing:
            raise DMLCoreError(f"{owner}.predict needs the input columns {', '.join(columns)}; "
                               f"missing: {', '.join(missing)}.")
        x = X[columns].to_numpy(dtype=float)
    else:
        x = np.asarray(X, dtype=float)
        if x.ndim != 2 or x.shape[1] != len(columns):
            raise DMLCoreError(f"{owner}.predict expects a 2-D array with {len(columns)} column(s) "
                               f"({', '.join(columns)}, in this order); got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise DMLCoreError(f"{owner}.predict got missing or infinite input values; remove or "
                           f"impute them first.")
    return x

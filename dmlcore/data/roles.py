"""A table and the roles of its columns, and the conditional moment restriction they define.

Three problems share one form, E[Y - f(inputs) | conditioning] = 0:

* ``iv``:  inputs (treatment, covariates), conditioning (instrument, covariates);
* ``pcl``: inputs (treatment, outcome_proxy, covariates) -- the bridge h --,
  conditioning (treatment, treatment_proxy, covariates);
* ``cmr``: any columns as ``inputs`` and any as ``conditioning``.

Inputs of f that are also conditioning variables are known given C; only the
others (the *modelled* columns) need a conditional distribution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dmlcore.errors import DMLCoreError
from dmlcore.data.io import FORMATTED_NUMBER_HINT, looks_like_formatted_number
from dmlcore.stats.fixed_effects import check_absorb, check_weights
from dmlcore.formula import parse_iv_formula

PROBLEMS = ("iv", "pcl", "cmr")
MIN_ROWS = 4
RANK_TOL = 1e-9          # relative residual under which a column counts as a linear combination
MAX_RANK_COLUMNS = 500   # covariates compared with an instrument at most (the first ones)
MAX_LEVELS = 50          # levels a categorical column may have
ROLE_NAMES = ("outcome", "treatment", "instrument", "treatment_proxy", "outcome_proxy",
              "covariates", "inputs", "conditioning")
REQUIRED = {
    "iv": ("outcome", "treatment", "instrument"),
    "pcl": ("outcome", "treatment", "treatment_proxy", "outcome_proxy"),
    "cmr": ("outcome", "inputs", "conditioning"),
}
ALLOWED = {
    "iv": ("outcome", "treatment", "instrument", "covariates"),
    "pcl": ("outcome", "treatment", "treatment_proxy", "outcome_proxy", "covariates"),
    "cmr": ("outcome", "inputs", "conditioning"),
}


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]


@dataclass
class CausalData:
    """A table with the role of each column: what every method and diagnostic of dmlcore fits.

    The roles are checked when the object is made (columns that exist, are numeric and finite, no
    column in two roles, the roles the problem needs); a problem raises a ``DMLCoreError`` that names the column and
    says what to change. IV: f(treatment, covariates), conditioning on (instrument, covariates). PCL:
    the bridge h(treatment, outcome proxy, covariates), conditioning on (treatment, treatment proxy,
    covariates). General CMR: ``inputs`` and ``conditioning`` given directly.

    Parameters
    ----------
    table : pandas.DataFrame
        The rows; a column without a role is kept (to cluster, absorb or weight by) but not fitted.
    problem : str
        ``"iv"`` (instrumental variables), ``"pcl"`` (proximal causal learning) or ``"cmr"`` (a general
        conditional moment restriction).
    outcome : str
        The outcome column Y.
    treatment, instrument, treatment_proxy, outcome_proxy, covariates : str or list of str, default []
        The roles' columns (a single name is taken as a list of one). IV needs ``treatment`` and
        ``instrument``; PCL needs ``treatment``, ``treatment_proxy`` and ``outcome_proxy``.
    inputs, conditioning : list of str, default []
        f's inputs X and the conditioning columns C, only for ``problem="cmr"``.
    name : str, default "data"
        A label for reports.
    image_shape : tuple of int, default None
        The (height, width) of the images whose pixels are the ``image_columns`` (the image data sets).
    image_columns : list of str, default []
        The pixel columns of an image input.
    categorical : str or list of str, default []
        Columns whose numbers are codes of categories (2 to 50 levels, ``MAX_LEVELS``): networks and
        linear models see one 0/1 column per level, 2SLS uses dummies, trees split on the codes.
    absorb : str or list of str, default []
        One or two columns whose fixed effects the linear IV methods absorb (2SLS, LIML, Fuller, GMM
        and their diagnostics; the other methods refuse them).
    weights : str, default None
        A column of positive regression weights for the same methods.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dmlcore import CausalData, fit_run
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=500); u = rng.normal(size=500); a = z + u + rng.normal(size=500)
    >>> table = pd.DataFrame({"z": z, "a": a, "y": 2 * a + u + rng.normal(size=500)})
    >>> data = CausalData(table, "iv", outcome="y", treatment="a", instrument="z")
    >>> fit_run(data, "2sls").record["effect"]["estimate"]   # close to 2
    """

    table: pd.DataFrame
    problem: str
    outcome: str
    treatment: list[str] = field(default_factory=list)
    instrument: list[str] = field(default_factory=list)
    treatment_proxy: list[str] = field(default_factory=list)
    outcome_proxy: list[str] = field(default_factory=list)
    covariates: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    conditioning: list[str] = field(default_factory=list)
    name: str = "data"
    image_shape: tuple[int, int] | None = None
    image_columns: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    absorb: list[str] = field(default_factory=list)
    weights: str | None = None

    def __post_init__(self):
        if not isinstance(self.table, pd.DataFrame):
            raise DMLCoreError(f"table must be a pandas DataFrame, got {type(self.table).__name__}.")
        if self.problem not in PROBLEMS:
            raise DMLCoreError(f"problem must be one of {', '.join(PROBLEMS)}; got {self.problem!r}.")
        self.outcome = str(self.outcome) if self.outcome is not None else ""
        for role in ROLE_NAMES[1:]:
            setattr(self, role, _as_list(getattr(self, role)))
        self.image_columns = _as_list(self.image_columns)
        self.categorical = _as_list(self.categorical)
        self._check_roles()
        self._check_values()
        self._check_categorical()
        self._check_linear_options()

    # ------------------------------------------------------------------ roles
    def roles(self) -> dict[str, list[str]]:
        """The non-empty roles, each as a list of column names."""
        out = {"outcome": [self.outcome]} if self.outcome else {}
        for role in ROLE_NAMES[1:]:
            cols = getattr(self, role)
            if cols:
                out[role] = list(cols)
        return out

    def _check_roles(self):
        columns = [str(c) for c in self.table.columns]
        if len(set(columns)) != len(columns):
            dup = sorted({c for c in columns if columns.count(c) > 1})
            raise DMLCoreError(f"Column names must be unique; repeated: {', '.join(map(repr, dup))}. "
                               f"Rename them.")
        for role in REQUIRED[self.problem]:
            if not (self.outcome if role == "outcome" else getattr(self, role)):
                raise DMLCoreError(f"The {self.problem.upper()} problem needs a column with the role "
                                   f"'{role}'. Assign one.")
        for role in ROLE_NAMES:
            if role not in ALLOWED[self.problem] and getattr(self, role) not in ("", []):
                raise DMLCoreError(f"The role '{role}' is not used by the {self.problem.upper()} "
                                   f"problem; remove it or choose another problem.")
        if self.problem == "pcl" and len(self.treatment) > 1 and not self.image_columns:
            raise DMLCoreError(f"Give one treatment column; got {len(self.treatment)}: "
                               f"{', '.join(self.treatment)}.")
        # IV with several endogenous treatments: the linear IV estimators only (estimators._base.check_linear_options)
        seen: dict[str, str] = {}
        for role, cols in self.roles().items():
            twice = next((c for c in cols if cols.count(c) > 1), None)
            if twice is not None:
                raise DMLCoreError(f"Column '{twice}' is listed twice as {role}; list it once.")
            for col in cols:
                if col not in self.table.columns:
                    raise DMLCoreError(f"Column '{col}' (role {role}) is not in the table. "
                                       f"Available columns: {', '.join(columns[:20])}"
                                       f"{' ...' if len(columns) > 20 else ''}.")
                if col in seen and not (self.problem == "cmr" and {seen[col], role} == {"inputs", "conditioning"}):
                    raise DMLCoreError(f"Column '{col}' has two roles, {seen[col]} and {role}; "
                                       f"give it one.")
                seen.setdefault(col, role)
        if self.problem == "cmr" and self.outcome in set(self.inputs) | set(self.conditioning):
            raise DMLCoreError(f"The outcome '{self.outcome}' cannot also be an input or a "
                               f"conditioning variable.")

    def _check_values(self):
        rows = len(self.table)
        if rows < MIN_ROWS:
            raise DMLCoreError(f"The table has {rows} row(s); the {self.problem.upper()} problem needs at "
                               f"least {MIN_ROWS} (and cross-fitting 10 per fold). Load more rows.")
        for col in self.used_columns():
            _check_numeric(self.table[col], col)
        for col in self.instrument + self.treatment_proxy:
            if self.table[col].nunique() < 2:
                raise DMLCoreError(f"Column '{col}' ({'instrument' if col in self.instrument else 'treatment proxy'})"
                                   f" is constant; it carries no information. Choose another column.")
        if self.table[self.outcome].nunique() < 2:
            raise DMLCoreError(f"Outcome column '{self.outcome}' is constant; there is nothing to explain. "
                               f"Choose another outcome.")
        for col in self.treatment:
            if self.table[col].nunique() < 2 and col not in self.image_columns:
                raise DMLCoreError(f"Treatment column '{col}' is constant; there is no effect to estimate.")
        self._check_collinear_excluded()

    def _check_categorical(self):
        used = set(self.used_columns())
        for col in self.categorical:
            if col not in used:
                raise DMLCoreError(f"Categorical column '{col}' has no role; give it one or leave it out of "
                                   f"the categorical columns.")
            if col == self.outcome:
                raise DMLCoreError(f"The outcome '{col}' cannot be categorical: every method models its mean. "
                                   f"Code a binary outcome as 0/1 and leave it numeric.")
            if col in self.image_columns:
                raise DMLCoreError(f"Image column '{col}' cannot be categorical.")
            values = self.table[col].to_numpy(dtype=float)
            levels = np.unique(values)
            if len(levels) < 2:
                raise DMLCoreError(f"Categorical column '{col}' has a single level ({levels[0]:g}); it carries no "
                                   f"information. Remove it from the roles.")
            if len(levels) > MAX_LEVELS:
                raise DMLCoreError(f"Categorical column '{col}' has {len(levels)} levels, more than {MAX_LEVELS}; "
                                   f"treat it as a number, or group its levels first.")

    def _check_linear_options(self):
        """``absorb`` and ``weights``: existing columns without a role (checked in full by
        :mod:`dmlcore.stats.fixed_effects`)."""
        self.absorb = _as_list(self.absorb)
        self.weights = str(self.weights) if self.weights not in (None, "") else None
        used = set(self.used_columns())
        for col, what in [(c, "absorbed column") for c in self.absorb] + [(self.weights, "weights column")]:
            if col is not None and col in used:
                raise DMLCoreError(f"Column '{col}' has a role and cannot also be the {what}; give it one use.")
        if self.weights is not None and self.weights in self.absorb:
            raise DMLCoreError(f"Column '{self.weights}' cannot be both absorbed and the weights; give it one use.")
        if self.absorb:
            check_absorb(self.table, self.absorb)
        if self.weights is not None:
            check_weights(self.table, self.weights)

    @classmethod
    def from_formula(cls, formula: str, table: pd.DataFrame, *, name: str = "data", absorb=None,
                     weights: str | None = None) -> "CausalData":
        """The IV problem of ``formula``, ``y ~ 1 + x + [d ~ z]`` (linearmodels' convention; see
        :mod:`dmlcore.formula`), on ``table``; ``absorb`` and ``weights`` as in the constructor. The
        intercept is implicit; removing it (``0`` or ``- 1``) is refused unless fixed effects are absorbed (every
        method fits a constant)."""
        frame, roles, intercept = parse_iv_formula(formula, table)
        if not intercept and not absorb:
            raise DMLCoreError(f"The formula {formula!r} removes the intercept, but every method here fits one; "
                               f"leave out the '0' or '- 1', or absorb fixed effects.")
        return cls(frame, "iv", name=name, absorb=absorb or [], weights=weights, **roles)

    def linear_options(self) -> dict:
        """``{"absorb": [...], "weights": column}``, the entries that are set."""
        out = {"absorb": list(self.absorb)} if self.absorb else {}
        return out | ({"weights": self.weights} if self.weights else {})

    def categorical_levels(self, columns: list[str]) -> dict[int, np.ndarray]:
        """{position in ``columns``: sorted levels} of the categorical columns among ``columns``."""
        return {j: np.unique(self.table[c].to_numpy(dtype=float)) for j, c in enumerate(columns)
                if c in self.categorical}

    def _check_collinear_excluded(self):
        """Raise when an instrument (IV) or treatment proxy (PCL) is a linear combination of others.

        Such a column adds nothing to the conditioning set: the columns before it in the role,
        the covariates (and, in PCL, the treatment) already hold the same information. Image
        pixel columns are left out of the comparison (there are thousands of them).
        """
        if self.problem == "iv":
            role, excluded, base = "instrument", self.instrument, self.covariates
        elif self.problem == "pcl":
            role, excluded, base = "treatment proxy", self.treatment_proxy, self.treatment + self.covariates
        else:
            return
        base = [c for c in base if c not in set(self.image_columns)][:MAX_RANK_COLUMNS]
        if not excluded or len(base) + len(excluded) >= len(self.table):
            return
        for j, col in enumerate(excluded):
            partners = _spanned_by(self.table, col, base + excluded[:j])
            if partners is None:
                continue
            shown = ", ".join(repr(p) for p in partners) or "a constant"
            if role == "instrument" and partners and set(partners) <= set(base):
                why = ("given the covariates it carries no information, so the model is not identified "
                       "with it. Remove it from the instruments or choose another instrument.")
            elif role == "instrument":
                why = "it adds no information (perfectly collinear). Remove it from the instruments."
            else:
                why = "it adds no information (perfectly collinear). Remove it from the treatment proxies."
            raise DMLCoreError(f"Column '{col}' ({role}) is a linear combination of {shown}: {why}")
        self._check_perfect_first_stage(excluded, base)

    def _check_perfect_first_stage(self, excluded: list[str], base: list[str]):
        """Raise when the excluded columns (with the covariates, and in PCL the treatment) explain an
        endogenous column exactly: a treatment in IV, an outcome proxy in PCL (z = d, for instance).

        Then the first-stage R^2 is 1, its F infinite, and 2SLS equals the regression on the
        endogenous column itself: the confounded slope. An excluded column that copies the
        endogenous one cannot be excluded from the outcome's equation.
        """
        role, targets = (("instrument", self.treatment) if self.problem == "iv" else
                         ("treatment proxy", self.outcome_proxy))
        what = "treatment" if self.problem == "iv" else "outcome proxy"
        if len(base) + len(excluded) + 1 >= len(self.table):   # so few rows that any column is spanned
            return
        for target in targets:
            if target in self.image_columns:
                continue
            partners = _spanned_by(self.table, target, base + excluded)
            named = [p for p in partners or [] if p in excluded]
            if not named:
                continue
            others = [p for p in partners if p not in excluded]
            with_base = f" with {', '.join(repr(p) for p in others)}" if others else ""
            raise DMLCoreError(
                f"Column '{named[0]}' ({role}) explains the {what} '{target}' perfectly: '{target}' is a linear "
                f"combination of {', '.join(repr(p) for p in named)}{with_base} (first-stage R² = 1, e.g. a copy "
                f"of it). Such a column carries the {what}'s confounding with it, so 2SLS would return the "
                f"confounded slope. Remove it from the {role.replace('proxy', 'proxies') if 'proxy' in role else role + 's'} "
                f"or choose another.")

    def check_folds(self, folds: int) -> None:
        """Raise unless ``folds`` is a valid number of cross-fitting folds for this table."""
        if not isinstance(folds, (int, np.integer)) or folds < 2:
            raise DMLCoreError(f"folds (K) must be an integer of at least 2; got {folds!r}.")
        need = 10 * folds
        if len(self.table) < need:
            raise DMLCoreError(f"{folds} folds need at least {need} rows (10 per fold); the table has "
                               f"{len(self.table)}. Use fewer folds or more data.")

    # ---------------------------------------------------------------- CMR form
    def used_columns(self) -> list[str]:
        cols: list[str] = []
        for group in self.roles().values():
            cols += [c for c in group if c not in cols]
        return cols

    @property
    def input_columns(self) -> list[str]:
        """Columns that f takes, in order."""
        if self.problem == "iv":
            return self.treatment + self.covariates
        if self.problem == "pcl":
            return self.treatment + self.outcome_proxy + self.covariates
        return list(self.inputs)

    @property
    def conditioning_columns(self) -> list[str]:
        """Columns of C in E[. | C]."""
        if self.problem == "iv":
            return self.instrument + self.covariates
        if self.problem == "pcl":
            return self.treatment + self.treatment_proxy + self.covariates
        return list(self.conditioning)

    @property
    def modelled_columns(self) -> list[str]:
        """Inputs of f not known given C: their conditional distribution is a nuisance."""
        cond = set(self.conditioning_columns)
        return [c for c in self.input_columns if c not in cond]

    def cmr(self) -> "CMRArrays":
        """The arrays an estimator needs."""
        t = self.table
        return CMRArrays(
            y=t[self.outcome].to_numpy(dtype=float),
            inputs=t[self.input_columns].to_numpy(dtype=float),
            conditioning=t[self.conditioning_columns].to_numpy(dtype=float),
            input_names=self.input_columns,
            conditioning_names=self.conditioning_columns,
            modelled_names=self.modelled_columns,
        )

    def subset(self, rows) -> "CausalData":
        """The same roles on a subset of rows."""
        kwargs = {role: getattr(self, role) for role in ROLE_NAMES[1:]}
        return CausalData(self.table.iloc[rows].reset_index(drop=True), self.problem, self.outcome,
                          name=self.name, image_shape=self.image_shape,
                          image_columns=self.image_columns, categorical=self.categorical, absorb=self.absorb,
                          weights=self.weights, **kwargs)

    def describe_roles(self) -> str:
        return "; ".join(f"{r}: {', '.join(c)}" for r, c in self.roles().items())


def check_usable(table: pd.DataFrame, name: str) -> None:
    """Raise unless some roles could be valid on ``table``: at least MIN_ROWS rows and three numeric
    columns (outcome, treatment, and an instrument or proxies). A file that parses but fails this
    should not replace the data a user already has."""
    if len(table) < MIN_ROWS:
        raise DMLCoreError(f"{name} has {len(table)} row(s); every problem needs at least {MIN_ROWS} (and cross-fitting "
                           f"10 per fold). Load a file with more rows.")
    numeric = [str(c) for c in table.columns if pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(table[c])]
    if len(numeric) < 3:
        shown = f" ({', '.join(numeric)})" if numeric else ""
        raise DMLCoreError(f"{name} has {len(numeric)} numeric column(s){shown}; a problem needs at least three "
                           f"(outcome, treatment, and an instrument or proxies). Encode the others as numbers first.")


def suggest_categorical(table: pd.DataFrame, columns: list[str], max_levels: int = 10) -> list[str]:
    """The ``columns`` that hold integers with 3 to ``max_levels`` levels: perhaps category codes
    (a 0/1 column reads the same either way)."""
    out = []
    for c in columns:
        if c not in table or not pd.api.types.is_numeric_dtype(table[c]):
            continue
        values = table[c].dropna().to_numpy(dtype=float)
        if len(values) and np.all(values == np.round(values)) and 3 <= len(np.unique(values)) <= max_levels:
            out.append(c)
    return out


def _check_numeric(series: pd.Series, col: str) -> None:
    """Raise unless ``series`` holds only finite real numbers (or booleans)."""
    dtype = series.dtype
    if pd.api.types.is_complex_dtype(dtype):
        raise DMLCoreError(f"Column '{col}' holds complex numbers. Use real numbers (e.g. split it into "
                           f"real and imaginary parts) or drop it from the roles.")
    if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
        values = series.dropna()
        bad = next((v for v in values if not _is_number(v)), None)
        if bad is not None:
            hint = (FORMATTED_NUMBER_HINT if looks_like_formatted_number(bad) else
                    "Encode it as numbers or drop it from the roles.")
            raise DMLCoreError(f"Column '{col}' is not numeric (for example {bad!r}). {hint}")
        if len(values):
            raise DMLCoreError(f"Column '{col}' is not numeric: it holds numbers stored as {dtype} "
                               f"(for example {values.iloc[0]!r}). Convert it to a numeric type "
                               f"(pandas.to_numeric) or drop it from the roles.")
        if len(series):
            raise DMLCoreError(f"Column '{col}' is not numeric and all its values are missing. Fill it "
                               f"in or drop it from the roles.")
        raise DMLCoreError(f"Column '{col}' is not numeric ({dtype}). Convert it or drop it from the roles.")
    values = series.to_numpy(dtype=float, na_value=np.nan)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        what = "missing (NaN)" if np.isnan(values[row]) else "infinite"
        raise DMLCoreError(f"Column '{col}' has {int(bad.sum())} {what} or non-finite "
                           f"value(s), the first in row {row}. Remove or impute those rows.")


def _spanned_by(table: pd.DataFrame, col: str, others: list[str]) -> list[str] | None:
    """The columns of ``others`` (with a constant) whose combination equals ``col``; None if none does.

    "Equals": the least-squares residual is below RANK_TOL of the column's spread. A random
    subset of the rows is tried first: a column outside the span there is outside it on all rows.
    """
    n = len(table)
    rows = np.arange(n)
    small = 4 * (len(others) + 1) + 200
    if n > 2 * small:
        rows = np.sort(np.random.default_rng(0).choice(n, small, replace=False))
    for subset in ((rows, np.arange(n)) if len(rows) < n else (rows,)):
        v = table[col].to_numpy(dtype=float)[subset]
        spread = np.linalg.norm(v - v.mean())
        if spread == 0:                  # constant on the sample (e.g. a rare dummy): look at all rows
            if len(subset) < n:
                continue
            return []
        basis = np.column_stack([np.ones(len(subset))] +
                                [table[c].to_numpy(dtype=float)[subset] for c in others])
        scale = np.linalg.norm(basis, axis=0)
        scale[scale == 0] = 1.0
        coef, *_ = np.linalg.lstsq(basis / scale, v, rcond=None)
        if np.linalg.norm(v - (basis / scale) @ coef) > RANK_TOL * spread:
            return None
    weights = np.abs(coef[1:]) * np.linalg.norm(basis[:, 1:] - basis[:, 1:].mean(0), axis=0) / scale[1:]
    return [c for c, w in zip(others, weights) if w > 1e-6 * spread]


def _is_number(value) -> bool:
    try:
        float(value)
        return True
    except (TypeError, ValueError):
        return False


@dataclass
class CMRArrays:
    """Numeric arrays of a CMR problem: y, inputs of f, conditioning C."""

    y: np.ndarray
    inputs: np.ndarray
    conditioning: np.ndarray
    input_names: list[str]
    conditioning_names: list[str]
    modelled_names: list[str]

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def modelled_index(self) -> list[int]:
        """Positions in ``inputs`` of the modelled columns."""
        return [self.input_names.index(c) for c in self.modelled_names]

    @property
    def known_map(self) -> list[tuple[int, int]]:
        """(position in inputs, position in conditioning) of the inputs known given C."""
        return [(i, self.conditioning_names.index(c)) for i, c in enumerate(self.input_names)
                if c in self.conditioning_names]

    @property
    def modelled(self) -> np.ndarray:
        return self.inputs[:, self.modelled_index]

    def assemble(self, conditioning: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """Inputs of f from C (n, dc) and draws of the modelled columns (n, m, dm) -> (n, m, d)."""
        n, m = draws.shape[:2]
        out = np.empty((n, m, len(self.input_names)), dtype=draws.dtype)
        for j, i in enumerate(self.modelled_index):
            out[:, :, i] = draws[:, :, j]
        for i, c in self.known_map:
            out[:, :, i] = conditioning[:, None, c]
        return out

"""The formula interface of the linear IV model: ``y ~ 1 + x + [d ~ z1 + z2]`` (linearmodels' convention,
parsed by linearmodels' ``from_formula``, which uses formulaic): the outcome left of ``~``, exogenous covariates (the
intercept ``1`` implicit unless ``0`` or ``- 1`` removes it, as in R and Stata), and in brackets
the endogenous treatment and its instruments. Terms may transform columns (``np.log(wage)``,
``C(region)`` for dummies, ``I(exper**2)``); each term becomes a column of the CausalData's table, named as
the parser names it, beside every column of the original table (so that others can cluster, be absorbed
or weight).
"""

from __future__ import annotations

import re

import pandas as pd

from dmlcore.errors import DMLCoreError


def with_intercept(formula: str) -> str:
    """``formula`` with the intercept ``1 +`` after ``~`` unless it names one (``1``) or removes it (``0``,
    ``- 1``) outside the brackets: implicit, as in R, fixest and Stata (linearmodels wants it written)."""
    left, _, right = formula.partition("~")
    outside = re.sub(r"\[[^\]]*\]", " ", right)
    terms = [t.strip() for t in re.split(r"[+]", outside)]
    if any(t in ("1", "0", "-1", "- 1") or re.search(r"-\s*1\b", t) for t in terms):
        return formula
    return f"{left}~ 1 + {right.lstrip()}"


def parse_iv_formula(formula: str, table: pd.DataFrame) -> tuple[pd.DataFrame, dict, bool]:
    """``(table, roles, intercept)``: the table with the formula's columns (and every other original
    column), the CausalData roles (outcome, treatment, instrument, covariates) and whether the formula
    has the intercept ``1``."""
    from linearmodels.iv import IV2SLS
    if not isinstance(formula, str) or "~" not in formula:
        raise DMLCoreError(f"A formula reads 'y ~ 1 + x + [d ~ z]' (outcome ~ intercept + covariates + "
                           f"[treatment ~ instruments]); got {formula!r}.")
    parsed = with_intercept(formula)
    try:
        model = IV2SLS.from_formula(parsed, table)
        parts = tuple(part.pandas for part in (model.dependent, model.exog, model.endog, model.instruments))
    except Exception as exc:        # formulaic's many error types: one line naming the formula
        raise DMLCoreError(f"Cannot read the formula {formula!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}. "
                           f"Write it as 'y ~ 1 + x + [d ~ z]' with column names of the table.") from None
    dependent, exog, endog, instruments = parts
    if endog is None or instruments is None or endog.shape[1] == 0:
        raise DMLCoreError(f"The formula {formula!r} names no endogenous treatment: put it and its instruments in "
                           f"brackets, e.g. 'y ~ 1 + x + [d ~ z]'.")
    exog = exog if exog is not None else pd.DataFrame(index=dependent.index)
    intercept = "Intercept" in exog.columns
    covariates = exog.drop(columns=["Intercept"], errors="ignore")
    formed = pd.concat([dependent, covariates, endog, instruments], axis=1)
    if formed.columns.duplicated().any():
        twice = formed.columns[formed.columns.duplicated()][0]
        raise DMLCoreError(f"The formula {formula!r} uses '{twice}' in two places; give each column one role.")
    rest = table.loc[formed.index, [c for c in table.columns if c not in formed.columns]]
    out = pd.concat([formed, rest], axis=1).reset_index(drop=True)
    roles = {"outcome": str(dependent.columns[0]), "treatment": [str(c) for c in endog.columns],
             "instrument": [str(c) for c in instruments.columns], "covariates": [str(c) for c in covariates.columns]}
    return out, roles, intercept

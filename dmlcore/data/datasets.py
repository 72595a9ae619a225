"""Real instrumental-variable data sets shipped inside an installed package (no download).

The tables are read from ``linearmodels.datasets`` (bz2-compressed CSV files installed
with ``linearmodels``). Each loads as an IV :class:`CausalData` with the roles of a
published specification, keeping only the columns given a role and the rows complete
in them. The true structural function is unknown: results can be compared with the
published 2SLS estimate quoted in each description, never scored.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError

TRUTH_UNKNOWN = ("Real data: the true causal function is unknown, so no estimate can be "
                 "scored; compare with the published estimate and judge the instrument's "
                 "validity yourself.")


@dataclass(frozen=True)
class DatasetInfo:
    """A real data set and its suggested IV roles.

    Attributes
    ----------
    title : str
    description : str
        What the rows are, the source citation, the published estimate, rows dropped.
    caveat : str
        That the truth is unknown, and the doubts about the instrument.
    outcome, treatment : str
    instrument, covariates : tuple of str
    rows : int
        Rows after dropping those incomplete in the role columns.
    package : str
        The installed package that ships the table.
    loader : callable
        Returns the raw table from ``package`` (all its columns).
    """

    title: str
    description: str
    caveat: str
    outcome: str
    treatment: str
    instrument: tuple[str, ...]
    covariates: tuple[str, ...]
    rows: int
    package: str
    loader: Callable[[], pd.DataFrame] = field(repr=False, compare=False)

    @property
    def columns(self) -> list[str]:
        """The columns given a role, outcome first."""
        return [self.outcome, self.treatment, *self.instrument, *self.covariates]

    @property
    def roles(self) -> dict[str, str | list[str]]:
        """Keyword arguments of :class:`CausalData` for these roles."""
        return {"outcome": self.outcome, "treatment": [self.treatment],
                "instrument": list(self.instrument), "covariates": list(self.covariates)}


def _linearmodels(name: str) -> pd.DataFrame:
    try:
        module = importlib.import_module(f"linearmodels.datasets.{name}")
    except ImportError:
        raise DMLCoreError(f"The '{name}' data set ships with the linearmodels package, which is "
                           f"not installed. Install it: pip install linearmodels.") from None
    return module.load()


def _mroz_workers() -> pd.DataFrame:
    table = _linearmodels("mroz")
    return table[table["inlf"] == 1]


REAL_DATASETS: dict[str, DatasetInfo] = {
    "card": DatasetInfo(
        title="Card (1995): returns to schooling, college proximity as instrument",
        description=(
            "3,010 young men of the US National Longitudinal Survey (NLS Young Men), wages in "
            "1976. Does schooling (educ, years) raise the log hourly wage (lwage)? Instrument: "
            "nearc4, grew up near a four-year college in 1966. Covariates as in Wooldridge, "
            "Introductory Econometrics, Example 15.4: experience, its square, race, region and "
            "urban indicators; 2SLS gives a return of 0.132 (s.e. 0.055) per year of schooling, "
            "OLS about 0.075. No row has a missing value in these columns. Source: D. Card "
            "(1995), 'Using Geographic Variation in College Proximity to Estimate the Return to "
            "Schooling', in Aspects of Labour Market Behavior: Essays in Honour of John "
            "Vanderkamp, University of Toronto Press, 201-222."),
        caveat=(f"{TRUTH_UNKNOWN} Living near a college may go with family background or local "
                "labour markets that raise wages by themselves. Experience is age - educ - 6, so "
                "it moves with schooling; like Wooldridge we treat it as a covariate, whereas "
                "Card instruments it with age."),
        outcome="lwage", treatment="educ", instrument=("nearc4",),
        covariates=("exper", "expersq", "black", "smsa", "south", "smsa66",
                    *(f"reg66{r}" for r in range(2, 10))),
        rows=3010, package="linearmodels", loader=partial(_linearmodels, "card")),
    "mroz": DatasetInfo(
        title="Mroz (1987): married women's wages, parents' schooling as instruments",
        description=(
            "753 married women of the 1975 US Panel Study of Income Dynamics; the 428 in the "
            "labour force (those with a wage) are kept and the other 325 dropped. Does schooling "
            "(educ, years) raise the log hourly wage (lwage)? Instruments: father's and mother's "
            "years of schooling; covariates: experience and its square, as in Wooldridge, "
            "Introductory Econometrics, Example 15.5, where 2SLS gives 0.061 (s.e. 0.031) and "
            "OLS about 0.11. Source: T. A. Mroz (1987), 'The Sensitivity of an Empirical Model of "
            "Married Women's Hours of Work to Economic and Statistical Assumptions', "
            "Econometrica 55, 765-799."),
        caveat=(f"{TRUTH_UNKNOWN} Parents' schooling may affect wages other than through the "
                "daughter's schooling (ability, networks), and only working women are observed, "
                "so the sample is selected."),
        outcome="lwage", treatment="educ", instrument=("fatheduc", "motheduc"),
        covariates=("exper", "expersq"),
        rows=428, package="linearmodels", loader=_mroz_workers),
    "meps": DatasetInfo(
        title="MEPS (2003): employer insurance and drug spending, SSI ratio as instrument",
        description=(
            "10,391 people aged 65 and over in the US Medical Expenditure Panel Survey 2003; "
            "the 302 without income (linc) are dropped, leaving 10,089. Does supplementary "
            "health insurance through an employer or union (hi_empunion, 0/1) change log "
            "out-of-pocket spending on prescription drugs (ldrugexp)? Instrument: ssiratio, "
            "Social Security income as a share of income. Covariates: chronic conditions, age, "
            "female, Black or Hispanic, log income. 2SLS gives -0.898 (robust s.e. 0.221), "
            "OLS about 0.074. Source: A. C. Cameron and P. K. Trivedi (2010), Microeconometrics "
            "Using Stata, revised edition, Stata Press, chapter 6."),
        caveat=(f"{TRUTH_UNKNOWN} The share of income from Social Security reflects income and "
                "work history, which may bear on drug spending directly."),
        outcome="ldrugexp", treatment="hi_empunion", instrument=("ssiratio",),
        covariates=("totchr", "age", "female", "blhisp", "linc"),
        rows=10089, package="linearmodels", loader=partial(_linearmodels, "meps")),
}


def load_real_dataset(name: str) -> CausalData:
    """Load a real data set with its suggested IV roles.

    Parameters
    ----------
    name : str
        A key of :data:`REAL_DATASETS` (case-insensitive), e.g. ``"card"`` or ``"mroz"``.

    Returns
    -------
    CausalData
        ``problem="iv"``; the table holds the role columns only, rows with a missing
        value in them dropped, index 0..n-1.
    """
    key = str(name).strip().lower()
    if key not in REAL_DATASETS:
        raise DMLCoreError(f"Unknown data set {name!r}. Available: {', '.join(REAL_DATASETS)}.")
    info = REAL_DATASETS[key]
    table = info.loader()[info.columns].dropna().reset_index(drop=True)
    return CausalData(table, "iv", name=key, **info.roles)

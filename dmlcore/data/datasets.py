"""Real data sets shipped inside an installed package (no download).

The IV tables are read from ``linearmodels.datasets`` (bz2-compressed CSV files installed
with ``linearmodels``); the proximal table ``rhc`` is this package's own copy,
``dmlcore/data/files/rhc.csv.gz`` (built by ``scripts/build_rhc.py``, provenance in
``dmlcore/data/files/README.md``). Each loads as a :class:`CausalData` with the roles of a
published specification, keeping every column and the rows complete in the role columns. The true causal function is unknown: results can be compared with the published
estimates quoted in each description, never scored.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from typing import Callable

import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError

TRUTH_UNKNOWN = ("Real data: the true causal function is unknown, so no estimate can be "
                 "scored; compare with the published estimate and judge the instrument's "
                 "validity yourself.")
OWN_DATA_UNKNOWN = ("Your data: the true causal function is unknown, so no estimate can be scored. Judge the "
                    "validity of the instruments (or proxies) from what you know of the data, and compare the "
                    "methods through their effect intervals and held-out residuals.")


@dataclass(frozen=True)
class DatasetInfo:
    """A real data set and its suggested roles (IV, or proximal with ``problem="pcl"``).

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
    problem : {"iv", "pcl"}
    treatment_proxy, outcome_proxy : tuple of str
        The proxies of a proximal data set.
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
    problem: str = "iv"
    treatment_proxy: tuple[str, ...] = ()
    outcome_proxy: tuple[str, ...] = ()

    @property
    def columns(self) -> list[str]:
        """The columns given a role, outcome first."""
        return [self.outcome, self.treatment, *self.instrument, *self.treatment_proxy, *self.outcome_proxy,
                *self.covariates]

    @property
    def roles(self) -> dict[str, str | list[str]]:
        """Keyword arguments of :class:`CausalData` for these roles (the non-empty ones)."""
        roles = {"outcome": self.outcome, "treatment": [self.treatment]}
        for role in ("instrument", "treatment_proxy", "outcome_proxy", "covariates"):
            if getattr(self, role):
                roles[role] = list(getattr(self, role))
        return roles

    def roles_text(self, most: int = 12) -> str:
        """The suggested roles in one line of Markdown (long lists cut after ``most`` names)."""
        def names(columns):
            shown = ", ".join(f"`{c}`" for c in columns[:most])
            return shown + (f" and {len(columns) - most} more" if len(columns) > most else "")
        parts = [f"outcome `{self.outcome}`", f"treatment `{self.treatment}`"]
        for role, label in (("instrument", "instrument"), ("treatment_proxy", "treatment proxies"),
                            ("outcome_proxy", "outcome proxies"), ("covariates", "covariates")):
            if getattr(self, role):
                parts.append(f"{label} {names(list(getattr(self, role)))}")
        return ", ".join(parts)


def _linearmodels(name: str) -> pd.DataFrame:
    try:
        module = importlib.import_module(f"linearmodels.datasets.{name}")
    except ImportError:
        raise DMLCoreError(f"The '{name}' data set ships with the linearmodels package, which is "
                           f"not installed. Install it: pip install linearmodels.") from None
    return module.load()


def _shipped(name: str) -> pd.DataFrame:
    """A table shipped in dmlcore/data/files."""
    with resources.files("dmlcore.data").joinpath("files", name).open("rb") as handle:
        return pd.read_csv(handle, compression="gzip")


RHC_ROLES = ("t3d30", "swang1", "pafi1", "paco21", "ph1", "hema1")  # outcome, treatment, proxies


def _rhc_covariates() -> tuple[str, ...]:
    """Every column of the shipped rhc table but the treatment, outcome and proxies."""
    with resources.files("dmlcore.data").joinpath("files", "rhc.csv.gz").open("rb") as handle:
        header = pd.read_csv(handle, compression="gzip", nrows=0)
    return tuple(c for c in header.columns if c not in RHC_ROLES)


def _card() -> pd.DataFrame:
    """Card's table with ``region66`` (1-9) added: the region of 1966 that the dummies reg661-reg669 code, one
    column to cluster or absorb by."""
    table = _linearmodels("card")
    dummies = table[[f"reg66{r}" for r in range(1, 10)]].to_numpy()
    return table.assign(region66=dummies.argmax(axis=1) + 1)


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
            "Vanderkamp, University of Toronto Press, 201-222. Every column of the source is kept (e.g. "
            "weight, the NLS sampling weight), and region66 (1-9) codes the 1966 region dummies in one column "
            "for --cluster or --absorb."),
        caveat=(f"{TRUTH_UNKNOWN} Living near a college may go with family background or local "
                "labour markets that raise wages by themselves. Experience is age - educ - 6, so "
                "it moves with schooling; like Wooldridge we treat it as a covariate, whereas "
                "Card instruments it with age."),
        outcome="lwage", treatment="educ", instrument=("nearc4",),
        covariates=("exper", "expersq", "black", "smsa", "south", "smsa66",
                    *(f"reg66{r}" for r in range(2, 10))),
        rows=3010, package="linearmodels", loader=_card),
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
    "rhc": DatasetInfo(
        title="RHC (Connors et al. 1996): right heart catheterization and 30-day survival, proximal",
        description=(
            "5,735 critically ill adults in intensive care in the SUPPORT study. Did right heart "
            "catheterization in the first 24 hours (swang1, 0/1) change the days alive in the first 30 "
            "days (t3d30)? Hidden confounding (how ill the patient looked to the physician) is handled by "
            "proximal learning, with the roles of Tchetgen Tchetgen et al. (2024, Statistical Science) "
            "and Cui et al. (2023, JASA): treatment proxies pafi1 (PaO2/FiO2 ratio) and paco21 (PaCO2), "
            "outcome proxies ph1 (blood pH) and hema1 (haematocrit), and 73 baseline covariates "
            "(demographics, diagnoses, comorbidities, vital signs, laboratory values; categories as 0/1 "
            "columns). Linear proximal 2SLS on this copy gives -1.80 days (s.e. 0.41); published "
            "analyses report about -1 to -2 days (docs/coverage.md compares them). Source: A. F. Connors "
            "et al. (1996), 'The effectiveness of right heart catheterization in the initial care of "
            "critically ill patients', JAMA 276, 889-897; data from Vanderbilt Biostatistics, as "
            "committed in the DML-CMR authors' repository (MIT licence)."),
        caveat=("Real data: the true effect is unknown, so no estimate can be scored; compare with the "
                "published estimates and judge the proxies yourself: pafi1 and paco21 must not affect "
                "survival, nor the catheterization affect ph1 and hema1, other than through the hidden "
                "confounder, which physiological measurements may not meet. Survival is counted only up to "
                "day 30."),
        outcome="t3d30", treatment="swang1", instrument=(), covariates=_rhc_covariates(),
        rows=5735, package="dmlcore", loader=partial(_shipped, "rhc.csv.gz"), problem="pcl",
        treatment_proxy=("pafi1", "paco21"), outcome_proxy=("ph1", "hema1")),
}


def load_real_dataset(name: str) -> CausalData:
    """Load a real data set with its suggested roles.

    Parameters
    ----------
    name : str
        A key of :data:`REAL_DATASETS` (case-insensitive), e.g. ``"card"`` or ``"rhc"``.

    Returns
    -------
    CausalData
        ``problem`` as the data set's; the table holds the role columns, then every other column of the
        source (so that a column
        without a role can cluster, be absorbed or weight: ``--cluster region``), the rows with a
        missing value in a role column dropped, index 0..n-1. Columns without a role may have
        missing values of their own.
    """
    key = str(name).strip().lower()
    if key not in REAL_DATASETS:
        raise DMLCoreError(f"Unknown data set {name!r}. Available: {', '.join(REAL_DATASETS)}.")
    info = REAL_DATASETS[key]
    raw = info.loader()
    others = [c for c in raw.columns if c not in info.columns]
    table = raw[info.columns + others].dropna(subset=info.columns).reset_index(drop=True)
    return CausalData(table, info.problem, name=key, **info.roles)

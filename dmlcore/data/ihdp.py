"""IV regression on real covariates (the paper's appendix D.1.3).

Two sources:

* :func:`load_replicate` reads one pre-generated replicate of the authors (folders ``k/`` with
  ``train.csv``, ``val.csv``, ``test.csv``; generator of Wu et al. 2023). Roles: outcome ``y1``,
  treatment ``t1``, instrument ``z1``, covariates ``x1..x6``; the other columns (``u1``
  confounder, ``d1``, ``g1``, ``v1``, ``m1..m3``, ``w1``) never enter the data. The truth scores
  f-hat(t1, x) against ``v1`` = E[Y | do(t1), x] on a held-out split, on the normalized outcome
  scale of the files; by default ``val.csv``, as the authors did (``test.csv`` is also available).
* :func:`simulate_semisynthetic` draws instrument, treatment and outcome from the paper's
  equations on any table of continuous covariates; :func:`simulate_ihdp_like` does so on the
  747 IHDP children, whose covariates ship inside the ``econml`` package.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.io import load_table
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import GroundTruth, Simulation
from dmlcore.errors import DMLCoreError

SPLITS = ("train", "val", "test")
COVARIATES = [f"x{i}" for i in range(1, 7)]
INPUTS = ["t1", *COVARIATES]
TRUTH = "v1"


# ----------------------------------------------------------- replicate files
def list_replicates(root) -> list[Path]:
    """The replicate folders (``k/`` holding ``train.csv``) directly under ``root``, by number."""
    root = Path(root)
    if not root.is_dir():
        raise DMLCoreError(f"The IHDP folder {root} does not exist. Give a setting folder such as "
                           f".../ihdp/3000_5_6_2_IHDP_n_0.1, which holds the replicates 0/, 1/, ...")
    found = [p.parent for p in root.glob("*/train.csv")]
    if not found:
        settings = sorted(p.name for p in root.iterdir() if any(p.glob("*/train.csv")))
        hint = (f" It has settings: {', '.join(settings)}; give one of them." if settings else
                " Give a folder whose subfolders 0/, 1/, ... hold train.csv, val.csv and test.csv.")
        raise DMLCoreError(f"No replicate folders (k/train.csv) in {root}.{hint}")
    return sorted(found, key=lambda p: (0, int(p.name), "") if p.name.isdigit() else (1, 0, p.name))


def _read_split(folder: Path, split: str, columns: list[str]) -> pd.DataFrame:
    """``columns`` of ``folder/split.csv``, checked present, numeric and finite."""
    path = folder / f"{split}.csv"
    if not path.is_file():
        raise DMLCoreError(f"The replicate file {path} is missing. A replicate folder holds "
                           f"train.csv, val.csv and test.csv.")
    table = load_table(path)  # the checked loader of users' files: size, encoding, not a pickle
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise DMLCoreError(f"{path} lacks the column(s) {', '.join(missing)}; it has "
                           f"{', '.join(map(str, table.columns))}. Use the replicate files of the "
                           f"IHDP benchmark (columns x1..x6, z1, t1, y1, v1).")
    values = table[columns].apply(pd.to_numeric, errors="coerce")
    bad = [c for c in columns if not np.isfinite(values[c].to_numpy(dtype=float)).all()]
    if bad:
        raise DMLCoreError(f"{path} has missing or non-numeric values in {', '.join(bad)}. "
                           f"Regenerate or repair the file.")
    return values


def load_replicate(path, split_train: str = "train", split_test: str = "val") -> Simulation:
    """One pre-generated IHDP replicate as an IV problem with its ground truth.

    Parameters
    ----------
    path : folder of one replicate (``.../3000_5_6_2_IHDP_n_0.1/0``)
    split_train : the split to fit on, one of "train", "val", "test"
    split_test : the held-out split to score on, "val" (the authors' choice) or "test"

    The score is the MSE of f-hat(t1, x1..x6) against ``v1`` on ``split_test``, on the
    normalized outcome scale of the files.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise DMLCoreError(f"The replicate folder {folder} does not exist. Pick one from "
                           f"list_replicates(setting_folder).")
    for name, split in (("split_train", split_train), ("split_test", split_test)):
        if split not in SPLITS:
            raise DMLCoreError(f"{name} must be one of {', '.join(SPLITS)}; got {split!r}.")
    if split_train == split_test:
        raise DMLCoreError(f"split_train and split_test are both {split_train!r}; score on "
                           f"another split than the one fitted.")
    table = _read_split(folder, split_train, ["y1", "t1", "z1", *COVARIATES])
    held = _read_split(folder, split_test, [*INPUTS, TRUTH])
    name = f"ihdp-{folder.parent.name}-{folder.name}"
    data = CausalData(table, "iv", outcome="y1", treatment="t1", instrument="z1",
                      covariates=COVARIATES, name=name)
    truth = held[TRUTH].to_numpy()

    def predict(model):
        return np.asarray(model.predict(held[INPUTS]), dtype=float).ravel()

    def score(model):
        return {"mse": float(np.mean((predict(model) - truth) ** 2))}

    def curve(model):
        out = held[INPUTS].assign(x=held["t1"], estimate=predict(model), truth=truth,
                                  group=f"{split_test} rows")
        return out.sort_values("x", kind="stable").reset_index(drop=True)

    description = f"MSE of f-hat(t1, x) vs v1 on {split_test}.csv ({len(held)} rows), normalized outcome"
    return Simulation(data, GroundTruth("iv", score, curve, description),
                      dict(dataset="ihdp", path=str(folder), split_train=split_train,
                           split_test=split_test))


# --------------------------------------------------------------- generator
def semisynthetic_f(a, x) -> np.ndarray:
    """Structural function 0.9 A² - 1.5 A + mean_i X_i + |X1 X2| - sin(10 + X2 X3) (raw scale).

    The paper prints 9 A²; its authors' replicates (``g1``) are exactly 0.9 A² - 1.5 A.
    """
    x = np.asarray(x, dtype=float)
    a = np.asarray(a, dtype=float)
    return (0.9 * a ** 2 - 1.5 * a + x.mean(axis=1) + np.abs(x[:, 0] * x[:, 1])
            - np.sin(10.0 + x[:, 1] * x[:, 2]))


def _standardized(covariates) -> pd.DataFrame:
    if not isinstance(covariates, pd.DataFrame):
        raise DMLCoreError(f"covariates must be a pandas DataFrame; got {type(covariates).__name__}.")
    if covariates.shape[1] < 3 or len(covariates) < 20:
        raise DMLCoreError(f"covariates need at least 3 columns and 20 rows; got "
                           f"{covariates.shape[1]} column(s) and {len(covariates)} row(s).")
    clash = {"outcome", "treatment", "instrument"} & set(map(str, covariates.columns))
    if clash:
        raise DMLCoreError(f"Rename the covariate column(s) {', '.join(sorted(clash))}: these names "
                           f"are used for the generated variables.")
    values = covariates.apply(pd.to_numeric, errors="coerce").astype(float)
    bad = [str(c) for c in values.columns if not np.isfinite(values[c]).all()]
    if bad:
        raise DMLCoreError(f"Covariate column(s) {', '.join(bad)} have missing or non-numeric "
                           f"values. Drop or impute them.")
    constant = [str(c) for c in values.columns if values[c].std() == 0]
    if constant:
        raise DMLCoreError(f"Covariate column(s) {', '.join(constant)} are constant. Drop them.")
    return ((values - values.mean()) / values.std(ddof=0)).reset_index(drop=True)


def simulate_semisynthetic(covariates: pd.DataFrame, n_instrument_levels: int = 5, seed: int = 0,
                           confounder_sd: float = 0.1, noise_sd: float = 1.0,
                           name: str = "semisynthetic") -> Simulation:
    """Instrument, treatment and outcome drawn on real covariates (Wu et al. 2023; paper D.1.3).

    With X the covariates, standardized (each column mean 0, sd 1), d their number, K levels:

    * Z ~ Unif{1..K};  w_iz ~ Unif(-1, 1);  f_z(z) = the z-th of K values evenly spaced in [-1, 1];
    * eps ~ N(0, confounder_sd²) the hidden confounder; delta_A, delta_Y ~ N(0, noise_sd²);
    * A = sum_i w_iZ (X_i + 0.2 eps + f_z(Z)) + delta_A;
    * Y = f(A, X) + 2 eps + delta_Y with f = :func:`semisynthetic_f`.

    The paper's values are ``confounder_sd=0.1`` and ``noise_sd=1`` (a weak confounder); the
    authors' pre-generated replicates use a strong one (sd 1) and small noises (sd 0.1).
    A random 10 % of the rows is held out; Y is normalized by the mean and sd of the other
    rows, which form the data. The truth scores the MSE of f-hat against f(A, X), normalized
    the same way, on the held-out rows.
    """
    x_frame = _standardized(covariates)
    if not isinstance(n_instrument_levels, (int, np.integer)) or n_instrument_levels < 2:
        raise DMLCoreError(f"n_instrument_levels must be an integer of at least 2; got "
                           f"{n_instrument_levels!r}.")
    for label, value in (("confounder_sd", confounder_sd), ("noise_sd", noise_sd)):
        if not (np.isfinite(value) and value >= 0):
            raise DMLCoreError(f"{label} must be a finite number >= 0; got {value}.")
    x = x_frame.to_numpy()
    n, k = len(x), n_instrument_levels
    rng = np.random.default_rng(seed)
    weights = rng.uniform(-1.0, 1.0, size=(x.shape[1], k))
    shifts = np.linspace(-1.0, 1.0, k)
    z = rng.integers(k, size=n)
    eps = rng.normal(0.0, confounder_sd, size=n)
    a = np.sum(weights[:, z].T * (x + 0.2 * eps[:, None] + shifts[z][:, None]), axis=1)
    a += rng.normal(0.0, noise_sd, size=n)
    f = semisynthetic_f(a, x)
    y = f + 2.0 * eps + rng.normal(0.0, noise_sd, size=n)
    order, cut = rng.permutation(n), max(1, round(0.1 * n))
    held, kept = np.sort(order[:cut]), np.sort(order[cut:])
    mean, sd = float(y[kept].mean()), float(y[kept].std())

    table = x_frame.assign(instrument=z + 1.0, treatment=a, outcome=(y - mean) / sd)
    covariate_names = list(x_frame.columns)
    data = CausalData(table.iloc[kept].reset_index(drop=True), "iv", outcome="outcome",
                      treatment="treatment", instrument="instrument", covariates=covariate_names,
                      name=name)
    held_inputs = table.iloc[held][data.input_columns].reset_index(drop=True)
    held_truth = (f[held] - mean) / sd

    def score(model):
        est = np.asarray(model.predict(held_inputs), dtype=float).ravel()
        return {"mse": float(np.mean((est - held_truth) ** 2))}

    def curve(model):
        # f against the treatment with every covariate at its mean (0 once standardized)
        grid = np.linspace(*np.quantile(a[kept], [0.01, 0.99]), 60)
        frame = pd.DataFrame(np.zeros((len(grid), len(covariate_names))), columns=covariate_names)
        frame.insert(0, "treatment", grid)
        estimate = np.asarray(model.predict(frame[data.input_columns]), dtype=float).ravel()
        truth = (semisynthetic_f(grid, frame[covariate_names]) - mean) / sd
        return frame.assign(x=grid, estimate=estimate, truth=truth, group="covariates at their mean")

    truth = GroundTruth("iv", score, curve,
                        f"MSE of f-hat vs f(A, X) on the held-out {len(held)} rows, normalized outcome")
    return Simulation(data, truth, dict(dataset=name, n=n, seed=seed,
                                        n_instrument_levels=k, confounder_sd=confounder_sd,
                                        noise_sd=noise_sd, outcome_mean=mean, outcome_sd=sd))


# ------------------------------------------------------------- IHDP covariates
IHDP_COLUMNS = {"bw": "birth_weight", "b.head": "head_circumference", "preterm": "weeks_preterm",
                "birth.o": "birth_order", "nnhealth": "neonatal_health", "momage": "mother_age"}


def ihdp_covariates() -> pd.DataFrame:
    """The six continuous covariates of the 747 IHDP children (Hill 2011), unstandardized.

    Read from the copy of the IHDP data shipped in the ``econml`` package
    (``econml/data/ihdp/sim.csv``, 985 children), without importing econml; treated children of
    non-white mothers are removed, as in Hill (2011) and the IHDP benchmark.
    """
    spec = importlib.util.find_spec("econml")
    path = Path(spec.submodule_search_locations[0]) / "data" / "ihdp" / "sim.csv" if spec else None
    if path is None or not path.is_file():
        raise DMLCoreError("The IHDP covariates come with the econml package, which is not "
                           "installed. Install it (pip install econml).")
    table = pd.read_csv(path)
    keep = ~((table["treat"] == 1) & (table["momwhite"] == 0))
    return table.loc[keep, list(IHDP_COLUMNS)].rename(columns=IHDP_COLUMNS).reset_index(drop=True)


def simulate_ihdp_like(seed: int = 0, n_instrument_levels: int = 5, confounder_sd: float = 0.1,
                       noise_sd: float = 1.0) -> Simulation:
    """:func:`simulate_semisynthetic` on the IHDP covariates (747 rows: 672 fit, 75 held out)."""
    return simulate_semisynthetic(ihdp_covariates(), n_instrument_levels, seed, confounder_sd,
                                  noise_sd, name="ihdp-like")

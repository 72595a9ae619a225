"""IV regression on real covariates (the paper's appendix D.1.3).

Two sources:

* :func:`load_replicate` reads one pre-generated replicate of the authors (folders ``k/`` with
  ``train.csv``, ``val.csv``, ``test.csv``; generator of Wu et al. 2023). Roles: outcome ``y1``,
  treatment ``t1``, instrument ``z1``, covariates ``x1..x6``; the other columns (``u1``
  confounder, ``d1``, ``g1``, ``v1``, ``m1..m3``, ``w1``) never enter the data. The truth scores
  f-hat(t1, x) against ``v1`` = E[Y | do(t1), x] on a held-out split, on the normalized outcome
  scale of the files; by default ``val.csv``, as the authors did (``test.csv`` is also available).
* :func:`simulate_semisynthetic` draws instrument, treatment and outcome on any table of
  continuous covariates; :func:`simulate_ihdp_like` does so on the 747 IHDP children, whose
  covariates ship inside the ``econml`` package. Both follow by default the generator that made
  the authors' replicates (``design="code"``; its equations are checked against the replicate
  files by the tests); ``design="text"`` follows the paper's appendix.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from dmlcore.data.io import load_table
from dmlcore.data.options import DataOption
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import GroundTruth, Simulation
from dmlcore.errors import DMLCoreError
from dmlcore.stats.resample import SEED

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
IHDP_DESIGNS = {
    "code": "the authors' code behind the paper's numbers, the generator of their replicates: hidden "
            "confounder sd 1, noises sd 0.1; fit on 63 % of the rows, scored on 27 %",
    "text": "the paper's appendix: hidden confounder sd 0.1, noises sd 1 (a weak confounder); fit on 90 % "
            "of the rows, scored on 10 %",
}
DESIGN_SDS = {"code": (1.0, 0.1), "text": (0.1, 1.0)}   # design -> (confounder_sd, noise_sd)
# The code's treatment equation, as stored in every replicate's coefs.npz: one row per instrument
# level, one column per covariate (the IHDP uses the first 6), and a shift per level.
CODE_WEIGHTS = np.array([
    [0.8, -0.2, -0.2, -0.4, -0.7, -0.1, -0.1, -0.6, 0.3, -0.1],
    [0.2, -0.9, 0.8, -0.9, 0.4, -0.9, -0.9, -0.2, 0.5, 0.0],
    [-0.8, 0.0, 0.8, -0.1, 0.3, 0.6, -0.2, 0.7, -0.5, 0.1],
    [-0.2, -0.8, 0.7, 0.9, 0.9, 0.4, -0.2, 0.3, 0.7, 0.5],
    [-1.0, -0.2, -0.5, -0.6, -0.9, 0.0, -0.3, -0.4, -0.8, -0.7],
])
CODE_SHIFTS = np.array([0.0, 1.0, 0.0, -0.2, -0.8])
CODE_SCORED, CODE_UNUSED = 0.27, 0.10   # the code's validation (scored) and test (left out) shares


def check_design(design: str) -> str:
    if design not in IHDP_DESIGNS:
        raise DMLCoreError(f"design must be one of {', '.join(IHDP_DESIGNS)}; got {design!r}.")
    return design


# The options of ihdp-like and replicate (dmlcore.data.options)
DESIGN = DataOption("design", "code", "ihdp-like generator: 'code' (the authors' code that made their replicates "
                                      "and the paper's numbers, default) or 'text' (the paper's appendix: a weak "
                                      "confounder)", kind="text", choices=tuple(IHDP_DESIGNS), check=check_design,
                    label="IHDP design")
DATA_DIR = DataOption("data_dir", None, "replicate folder for --dataset replicate", kind="path",
                      label="Replicate folder")
IHDP_LIKE_OPTIONS = (DESIGN,)
REPLICATE_OPTIONS = (DATA_DIR,)


def semisynthetic_f(a, x, design: str = DESIGN.default) -> np.ndarray:
    """The structural function f(A, X) on the raw outcome scale, X the standardized covariates.

    * ``code``: 0.9 A² - 1.5 A + 2 mean_i X_i - |X1 X2| - sin(10 + X3²), which is what the
      replicates' ``v1`` holds (normalized);
    * ``text``: 0.9 A² - 1.5 A + mean_i X_i + |X1 X2| - sin(10 + X2 X3). The paper prints 9 A²;
      the replicates' ``g1`` is exactly 0.9 A² - 1.5 A.
    """
    check_design(design)
    x = np.asarray(x, dtype=float)
    a = np.asarray(a, dtype=float)
    treatment = 0.9 * a ** 2 - 1.5 * a
    if design == "code":
        return treatment + 2.0 * x.mean(axis=1) - np.abs(x[:, 0] * x[:, 1]) - np.sin(10.0 + x[:, 2] ** 2)
    return treatment + x.mean(axis=1) + np.abs(x[:, 0] * x[:, 1]) - np.sin(10.0 + x[:, 1] * x[:, 2])


def code_treatment_mean(x, z) -> np.ndarray:
    """The code's treatment before confounder and noise, sum_i W[z, i] X_i + shift[z] (``d1``)."""
    x = np.asarray(x, dtype=float)
    z = np.asarray(z).astype(int)
    return np.sum(CODE_WEIGHTS[z, :x.shape[1]] * x, axis=1) + CODE_SHIFTS[z]


def _standardized(covariates, ddof: int) -> pd.DataFrame:
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
    return ((values - values.mean()) / values.std(ddof=ddof)).reset_index(drop=True)


def _draw_code(x, k, rng, confounder_sd, noise_sd):
    """(instrument, treatment, Y - f) of the code's equations."""
    n = len(x)
    z = rng.integers(k, size=n)
    u = rng.normal(0.0, confounder_sd, size=n)
    a = code_treatment_mean(x, z) + 0.2 * u + rng.normal(0.0, noise_sd, size=n)
    return z.astype(float), a, 2.0 * u + rng.normal(0.0, noise_sd, size=n)


def _draw_text(x, k, rng, confounder_sd, noise_sd):
    """(instrument, treatment, Y - f) of the paper's equations."""
    n = len(x)
    weights = rng.uniform(-1.0, 1.0, size=(x.shape[1], k))
    shifts = np.linspace(-1.0, 1.0, k)
    z = rng.integers(k, size=n)
    eps = rng.normal(0.0, confounder_sd, size=n)
    a = np.sum(weights[:, z].T * (x + 0.2 * eps[:, None] + shifts[z][:, None]), axis=1)
    a += rng.normal(0.0, noise_sd, size=n)
    return z + 1.0, a, 2.0 * eps + rng.normal(0.0, noise_sd, size=n)


def _split(n, rng, design):
    """(fitted rows, scored rows), sorted."""
    order = rng.permutation(n)
    if design == "code":
        scored = int(round(CODE_SCORED * n))
        fitted = n - scored - int(round(CODE_UNUSED * n))
        return np.sort(order[:fitted]), np.sort(order[fitted:fitted + scored])
    cut = max(1, round(0.1 * n))
    return np.sort(order[cut:]), np.sort(order[:cut])


def simulate_semisynthetic(covariates: pd.DataFrame, n_instrument_levels: int = 5, seed: int = SEED,
                           confounder_sd: float | None = None, noise_sd: float | None = None,
                           name: str = "semisynthetic", design: str = DESIGN.default) -> Simulation:
    """Instrument, treatment and outcome drawn on real covariates (Wu et al. 2023; paper D.1.3).

    X are the covariates standardized (each column mean 0, sd 1; sd with ddof 1 in the code, as
    in its replicates, ddof 0 in the text), K the instrument's levels, U ~ N(0, confounder_sd²)
    the hidden confounder, delta_A, delta_Y ~ N(0, noise_sd²) the noises.

    ``design="code"`` (default), the generator that made the authors' replicates (their
    ``iv/data_generator.py``; the tests check it against the replicate files):

    * Z ~ Unif{0..K-1}, K <= 5;  A = sum_i W[Z, i] X_i + shift[Z] + 0.2 U + delta_A with the fixed
      :data:`CODE_WEIGHTS` (at most 10 covariates) and :data:`CODE_SHIFTS`;
    * Y = f(A, X) + 2 U + delta_Y, f = :func:`semisynthetic_f`; confounder_sd 1, noise_sd 0.1;
    * 63 % of the rows are the data, 27 % are scored (the authors scored their validation
      split), 10 % (their test split) are left out.

    ``design="text"``, the paper's appendix:

    * Z ~ Unif{1..K}; w_iz ~ Unif(-1, 1), drawn with the seed; f_z(z) the z-th of K values evenly
      spaced in [-1, 1];  A = sum_i w_iZ (X_i + 0.2 U + f_z(Z)) + delta_A;
    * Y = f(A, X) + 2 U + delta_Y with the text's f; confounder_sd 0.1, noise_sd 1;
    * a random 10 % of the rows is scored, the other rows are the data.

    ``confounder_sd`` and ``noise_sd``, when given, replace the design's values. Y is normalized
    by the mean and sd (ddof 0) of the data rows; the truth scores the MSE of f-hat against
    f(A, X), normalized the same way, on the scored rows.
    """
    check_design(design)
    x_frame = _standardized(covariates, ddof=1 if design == "code" else 0)
    if not isinstance(n_instrument_levels, (int, np.integer)) or n_instrument_levels < 2:
        raise DMLCoreError(f"n_instrument_levels must be an integer of at least 2; got "
                           f"{n_instrument_levels!r}.")
    if design == "code" and n_instrument_levels > len(CODE_SHIFTS):
        raise DMLCoreError(f"design 'code' has at most {len(CODE_SHIFTS)} instrument levels (the authors' "
                           f"coefficients); got {n_instrument_levels}. Use design 'text' for more.")
    if design == "code" and x_frame.shape[1] > CODE_WEIGHTS.shape[1]:
        raise DMLCoreError(f"design 'code' takes at most {CODE_WEIGHTS.shape[1]} covariates (the authors' "
                           f"coefficients); got {x_frame.shape[1]}. Use design 'text' for more.")
    default_confounder, default_noise = DESIGN_SDS[design]
    confounder_sd = default_confounder if confounder_sd is None else confounder_sd
    noise_sd = default_noise if noise_sd is None else noise_sd
    for label, value in (("confounder_sd", confounder_sd), ("noise_sd", noise_sd)):
        if not (np.isfinite(value) and value >= 0):
            raise DMLCoreError(f"{label} must be a finite number >= 0; got {value}.")
    x = x_frame.to_numpy()
    n, k = len(x), n_instrument_levels
    rng = np.random.default_rng(seed)
    z, a, rest = (_draw_code if design == "code" else _draw_text)(x, k, rng, confounder_sd, noise_sd)
    f = semisynthetic_f(a, x, design)
    y = f + rest
    kept, held = _split(n, rng, design)
    mean, sd = float(y[kept].mean()), float(y[kept].std())

    table = x_frame.assign(instrument=z, treatment=a, outcome=(y - mean) / sd)
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
        truth = (semisynthetic_f(grid, frame[covariate_names], design) - mean) / sd
        return frame.assign(x=grid, estimate=estimate, truth=truth, group="covariates at their mean")

    truth = GroundTruth("iv", score, curve,
                        f"MSE of f-hat vs f(A, X) on the held-out {len(held)} rows, normalized outcome")
    return Simulation(data, truth, dict(dataset=name, n=n, seed=seed, design=design,
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


def simulate_ihdp_like(seed: int = SEED, n_instrument_levels: int = 5, confounder_sd: float | None = None,
                       noise_sd: float | None = None, design: str = DESIGN.default) -> Simulation:
    """:func:`simulate_semisynthetic` on the 747 IHDP children: with ``design="code"`` 470 rows
    are fitted and 202 scored (the sizes of the authors' train and validation files), with
    ``design="text"`` 672 and 75."""
    check_design(design)
    return simulate_semisynthetic(ihdp_covariates(), n_instrument_levels, seed, confounder_sd,
                                  noise_sd, name="ihdp-like", design=design)

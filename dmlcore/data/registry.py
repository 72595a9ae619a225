"""Every built-in data set by name: simulations with ground truth and real data without."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from dmlcore.data.datasets import REAL_DATASETS, load_real_dataset
from dmlcore.data.ihdp import load_replicate, simulate_ihdp_like
from dmlcore.data.images import simulate_digits_iv, simulate_dsprites_pcl
from dmlcore.data.roles import CausalData
from dmlcore.data.designs import DESIGNS, simulate_design
from dmlcore.data.simulate import GroundTruth, simulate_demand_iv, simulate_demand_pcl
from dmlcore.data.tables import load_kept_table
from dmlcore.errors import DMLCoreError

SIMULATED = {
    "demand-iv": "IV ticket demand (Hartford et al. 2017): price, fuel-price instrument, time, customer type",
    "demand-pcl": "Proximal ticket demand (Xu et al. 2021): hidden demand, fuel-price and page-view proxies",
    "digits-iv": "IV ticket demand with the customer type shown as an 8x8 digit image",
    "dsprites-pcl": "Proximal learning with a 64x64 heart-sprite image as treatment",
    "ihdp-like": "Semi-synthetic IV on real covariates (the generator of Wu et al. 2023)",
    **DESIGNS,
}


@dataclass
class Loaded:
    data: CausalData
    truth: GroundTruth | None
    params: dict


def real_dataset_names() -> list[str]:
    return list(REAL_DATASETS)


def dataset_names() -> list[str]:
    """Every data set a study or ``load_dataset`` knows; ``table`` is a file of the user's own
    (:mod:`dmlcore.data.tables`)."""
    return [*SIMULATED, "replicate", *real_dataset_names(), "table"]


def no_truth(name: str) -> bool:
    """Whether the data set ``name`` is data without a known truth (a real data set, a user's table)."""
    return name in real_dataset_names() or name == "table"


def load_dataset(name: str, *, n: int = 5000, seed: int = 0, rho: float = 0.9, iv_strength: float = 1.0,
                 ood_test: bool = False, data_dir: str | None = None, noise_scale: str = "standardized",
                 design: str = "code", table: str | None = None, file: str = "", roles: str = "") -> Loaded:
    """Load or simulate the data set ``name``; simulations come with their ground truth.

    ``noise_scale`` applies to demand-iv and digits-iv ("standardized", the authors' code, or "raw");
    ``design`` to ihdp-like ("code", the generator of the authors' replicates, or "text"); ``table``,
    ``file`` and ``roles`` to ``table``, a user's table kept by its hash (:mod:`dmlcore.data.tables`)."""
    if name == "demand-iv":
        sim = simulate_demand_iv(n, seed, rho=rho, iv_strength=iv_strength, ood_test=ood_test,
                                 noise_scale=noise_scale)
    elif name == "demand-pcl":
        sim = simulate_demand_pcl(n, seed)
    elif name == "digits-iv":
        sim = simulate_digits_iv(n, seed, rho=rho, iv_strength=iv_strength, noise_scale=noise_scale)
    elif name == "dsprites-pcl":
        sim = simulate_dsprites_pcl(n, seed)
    elif name == "ihdp-like":
        sim = simulate_ihdp_like(seed, design=design)
    elif name in DESIGNS:
        sim = simulate_design(name, n, seed, iv_strength=iv_strength)
    elif name == "replicate":
        if not data_dir:
            raise DMLCoreError("--dataset replicate needs --data-dir PATH, a folder with train.csv and val.csv.")
        sim = load_replicate(data_dir)
    elif name == "table":
        data = load_kept_table(table, roles, file)
        return Loaded(data, None, {"dataset": name, "table": table, "file": file, "roles": roles})
    elif name in real_dataset_names():
        data = load_real_dataset(name)
        return Loaded(data, None, {"dataset": name})
    else:
        raise DMLCoreError(f"Unknown dataset {name!r}; choose one of {', '.join(dataset_names())}, "
                           f"or give your own file with --csv.")
    return Loaded(sim.data, sim.truth, dict(sim.params))


# The options of load_dataset that each built-in data set uses besides ``seed``; a study refuses
# any other, so that no grid axis is silently ignored. Real data sets take none.
DATASET_OPTIONS = {
    "demand-iv": ("n", "rho", "iv_strength", "noise_scale", "ood_test"),
    "demand-pcl": ("n",),
    "digits-iv": ("n", "rho", "iv_strength", "noise_scale"),
    "dsprites-pcl": ("n",),
    "ihdp-like": ("design",),
    "replicate": ("data_dir",),
    "table": ("table", "file", "roles"),
    **{name: ("n",) for name in DESIGNS},
    "linear-iv": ("n", "iv_strength"),
}

# What a user reads for each option (forms, tables, figure panels); code and CSV files keep the names.
OPTION_LABELS = {"n": "N (rows)", "rho": "Confounding ρ", "iv_strength": "Instrument strength",
                 "noise_scale": "Outcome noise", "ood_test": "Out-of-distribution test",
                 "data_dir": "Replicate folder", "design": "IHDP design", "table": "Table (content hash)",
                 "file": "File", "roles": "Roles"}


def dataset_options(name: str) -> dict:
    """The options (with load_dataset's defaults) that data set ``name`` uses besides ``seed``."""
    if name not in dataset_names():
        raise DMLCoreError(f"Unknown dataset {name!r}; choose one of {', '.join(dataset_names())}.")
    defaults = {key: p.default for key, p in inspect.signature(load_dataset).parameters.items()}
    return {option: defaults[option] for option in DATASET_OPTIONS.get(name, ())}

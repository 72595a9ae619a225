"""Every built-in data set by name: simulations with ground truth and real data without.

Each simulation's entry (:data:`SIMULATORS`) is its simulator and the options it takes, declared beside the
simulator (:class:`~dmlcore.data.options.DataOption`); ``load_dataset`` passes each option to the
simulator's keyword of the same name, the command line's data flags (:func:`add_data_flags`) and a study's
data keys come from the same declarations, and an option a data set does not take is refused by the CLI and
the study spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from dmlcore.data.datasets import REAL_DATASETS, load_real_dataset
from dmlcore.data.designs import DESIGN_OPTIONS, DESIGNS, simulate_design
from dmlcore.data.ihdp import IHDP_LIKE_OPTIONS, REPLICATE_OPTIONS, load_replicate, simulate_ihdp_like
from dmlcore.data.images import DIGITS_IV_OPTIONS, DSPRITES_PCL_OPTIONS, simulate_digits_iv, simulate_dsprites_pcl
from dmlcore.data.options import DataOption, option_defaults
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import (DEMAND_IV_OPTIONS, DEMAND_PCL_OPTIONS, GroundTruth, simulate_demand_iv,
                                   simulate_demand_pcl)
from dmlcore.data.tables import TABLE_OPTIONS, load_kept_table
from dmlcore.errors import DMLCoreError
from dmlcore.stats.resample import SEED

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


# Each simulation: its simulator (called with seed= and each option by name) and its options, declared beside it
SIMULATORS = {
    "demand-iv": (simulate_demand_iv, DEMAND_IV_OPTIONS),
    "demand-pcl": (simulate_demand_pcl, DEMAND_PCL_OPTIONS),
    "digits-iv": (simulate_digits_iv, DIGITS_IV_OPTIONS),
    "dsprites-pcl": (simulate_dsprites_pcl, DSPRITES_PCL_OPTIONS),
    "ihdp-like": (simulate_ihdp_like, IHDP_LIKE_OPTIONS),
    **{name: (partial(simulate_design, name), DESIGN_OPTIONS[name]) for name in DESIGNS},
}
# Every data set's options (real data sets take none: their rows are fixed)
OPTIONS_OF: dict[str, tuple[DataOption, ...]] = {**{name: options for name, (_, options) in SIMULATORS.items()},
                                                 "replicate": REPLICATE_OPTIONS, "table": TABLE_OPTIONS}


def _every_option() -> dict[str, DataOption]:
    out: dict[str, DataOption] = {}
    for name, options in OPTIONS_OF.items():
        for option in options:
            if out.setdefault(option.name, option) is not option:     # one declaration per name
                raise RuntimeError(f"{name} declares its own option {option.name!r}; share the declared one.")
    return out


DATA_OPTIONS: dict[str, DataOption] = _every_option()
# The options of load_dataset that each built-in data set uses besides ``seed``, by name; a study and the CLI
# refuse any other, so that no grid axis is silently ignored. Real data sets take none.
DATASET_OPTIONS = {name: tuple(option.name for option in options) for name, options in OPTIONS_OF.items()}
# What a user reads for each option (forms, tables, figure panels); code and CSV files keep the names.
OPTION_LABELS = {name: option.label for name, option in DATA_OPTIONS.items()}


def load_dataset(name: str, *, seed: int = SEED, **options) -> Loaded:
    """Load or simulate the data set ``name``; simulations come with their ground truth.

    ``options``: the data set's options by name (:data:`DATA_OPTIONS`, declared beside each simulator: ``n``,
    ``rho``, ``iv_strength``, ``ood_test``, ``noise_scale`` of demand-iv, ``design`` of ihdp-like, ``data_dir`` of
    replicate, ``table``, ``file`` and ``roles`` of ``table``, a user's table kept by its hash); one it does not
    take is not used (the CLI and a study refuse it first); one not given takes its declared default."""
    unknown = [key for key in options if key not in DATA_OPTIONS]
    if unknown:
        raise DMLCoreError(f"Unknown data set option(s) {', '.join(map(repr, unknown))}; known: "
                           f"{', '.join(DATA_OPTIONS)}.")
    given = {**option_defaults(DATA_OPTIONS.values()), **options}
    if name in SIMULATORS:
        simulate, takes = SIMULATORS[name]
        sim = simulate(seed=seed, **{option.name: given[option.name] for option in takes})
    elif name == "replicate":
        if not given["data_dir"]:
            raise DMLCoreError("--dataset replicate needs --data-dir PATH, a folder with train.csv and val.csv.")
        sim = load_replicate(given["data_dir"])
    elif name == "table":
        data = load_kept_table(given["table"], given["roles"], given["file"])
        return Loaded(data, None, {"dataset": name, "table": given["table"], "file": given["file"],
                                   "roles": given["roles"]})
    elif name in real_dataset_names():
        data = load_real_dataset(name)
        return Loaded(data, None, {"dataset": name})
    else:
        raise DMLCoreError(f"Unknown dataset {name!r}; choose one of {', '.join(dataset_names())}, "
                           f"or give your own file with --csv.")
    return Loaded(sim.data, sim.truth, dict(sim.params))


def dataset_options(name: str) -> dict:
    """The options (with their declared defaults) that data set ``name`` uses besides ``seed``."""
    if name not in dataset_names():
        raise DMLCoreError(f"Unknown dataset {name!r}; choose one of {', '.join(dataset_names())}.")
    return option_defaults(OPTIONS_OF.get(name, ()))


def option_users(option: str) -> list[str]:
    """The data sets that take ``option``."""
    return [name for name, options in DATASET_OPTIONS.items() if option in options]


def add_data_flags(parser, command: str = "fit", *, exclude=(), defaults: dict | None = None) -> dict:
    """Add to an argparse parser a flag for every declared data option with ``cli`` (``--rho``, ...), in a "data
    set options" section of ``--help``, each saying which data sets take it: typed, with its choices and
    default in ``fit``; a comma list in ``study`` (every option) and in ``bench`` (those with a ``grid_flag``:
    ``--sizes``). ``exclude``: options the command gives otherwise; ``defaults``: a comma list's default by
    option. Returns ``{argparse name: option name}`` of the flags added."""
    group = parser.add_argument_group("data set options (each for the data sets named)")
    added = {}
    for option in DATA_OPTIONS.values():
        if not option.cli or option.name in exclude:
            continue
        help = f"{option.help} ({', '.join(option_users(option.name))})"
        if command == "study" or (command == "bench" and option.grid_flag):
            flag = option.grid_flag or option.name
            default = (defaults or {}).get(option.name)
            shown = f" (default {option.default})" if default is None and option.default is not None else ""
            kwargs = {"dest": flag, "default": default, "help": f"{help}{shown}; a comma list"}
            if option.kind == "bool":
                kwargs.update(nargs="?", const="true")
            group.add_argument("--" + flag.replace("_", "-"), **kwargs)
            added[flag] = option.name
            continue
        kwargs = {"dest": option.name, "default": option.default, "help": help}
        if option.kind == "bool":
            kwargs["action"] = "store_true"
        else:
            if option.kind in ("int", "float"):
                kwargs["type"] = int if option.kind == "int" else float
            if option.choices is not None:
                kwargs["choices"] = option.choices
        group.add_argument(option.flag, **kwargs)
        added[option.name] = option.name
    return added

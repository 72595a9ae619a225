"""A study's grid and its fits as plain JSON configurations.

A grid names one data set with lists of its options (any option of ``load_dataset`` that data
set uses: ``n``, ``rho``, ``iv_strength``, ``noise_scale``, ...; a built-in real data set such as
``rhc`` or ``card`` takes none), methods, lists of fit settings
(``learner``, ``folds``, ``epochs``, ``n_draws``, ``f_model``, ``reps_crossfit``, ``device``,
``outcome_learner``, ``sampler``) and
seeds; a study is one or more grids. Every combination is one fit, described by a config::

    {"dataset": "demand-iv", "data": {"n": 1000, "rho": 0.9, ...every option of the data set},
     "method": "dml-cmr", "learner": "nn", "folds": 10, "epochs": None, "n_draws": 8,
     "f_model": None, "reps_crossfit": 1, "device": "auto", "seed": 3}

Settings a method does not use are None (2SLS has no learner, only DML-CMR has folds), so two
grid points that differ only there are one fit. The seed draws the data and seeds the fit, so
every method of a cell sees the same data at the same seed: comparisons are paired. A real data
set's rows are the same at every seed: there the seed changes only the methods' randomness
(initial weights, draws, cross-fitting folds) and the folds of the held-out residual.

Written as a dict (``spec_from_dict``), a TOML or JSON file (``load_spec``), or flags
(``spec_from_flags``)::

    seeds = "0-19"                      # shared by every grid below
    methods = ["dml-cmr", "naive"]
    [[grid]]
    dataset = "demand-iv"
    learner = "nn"
    data = {n = [1000, 2000], iv_strength = [1.0, 0.5]}
    [[grid]]
    dataset = "demand-pcl"
    data = {n = [1000]}

A single grid may also be written at the top level, without ``[[grid]]``.

Two choices are made once per grid and enter a config only when they differ from the default, so
that the keys of stored fits made before them still match: the covariance (``cov_type``,
``cluster``) and ``debias = false``, which switches the debiased effect off (no refits for it; the
plug-in effect only), for a study that only compares the methods' MSE. ``time_limit = SECONDS``
stops and fails any fit that runs longer with every refit (dmlcore.runs.fit_run); it is in the
configs but not in the fits' store keys.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from dmlcore.stats.covariance import check_covariance
from dmlcore.data.registry import DATA_OPTIONS, dataset_names, dataset_options, real_dataset_names
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHODS
from dmlcore.estimators.dml import target_problem
from dmlcore.estimators.nuisance_target import TARGET
from dmlcore.estimators.settings import SETTINGS, STUDY_SETTINGS
from dmlcore.learners import AUTO
from dmlcore.learners.select import nuisance_default

# Fit settings with their defaults (those of `python -m dmlcore fit`): the declared ones a grid lists values of
FIT_SETTINGS = STUDY_SETTINGS
# settings added after stores held fits: left out of a config's key while unset, so those fits are still found
LATER_SETTINGS = tuple(name for name in FIT_SETTINGS if SETTINGS[name].later)
INTEGER_SETTINGS = tuple(name for name in FIT_SETTINGS if SETTINGS[name].kind == "int")
DEFAULT_METHODS = ("dml-cmr", "ce-dml-cmr", "naive")
DEFAULT_SEEDS = "0-9"
COVARIANCE = {"cov_type": SETTINGS["cov_type"].default, "cluster": SETTINGS["cluster"].default}  # one per grid
GRID_KEYS = ("dataset", "data", "methods", "seeds", *FIT_SETTINGS, *COVARIANCE, "debias", "time_limit")
# in a fit's config but not its store key: a finished fit is the same fit whatever its time limit was
NOT_KEYED = ("time_limit",)
CONFIRM_ABOVE = 10_000   # a larger grid runs only when confirmed (--yes)
# options with named values, from their declarations (dmlcore.data.options)
OPTION_CHOICES = {name: option.choices for name, option in DATA_OPTIONS.items() if option.choices is not None}
MAX_FITS = 1_000_000     # never expanded
# The simulators' own checks of a data option (dmlcore.data.simulate), asked of every value of a grid
# before any fit starts, so that a form or a spec refuses what every fit would fail on.
OPTION_CHECKS = {name: option.check for name, option in DATA_OPTIONS.items() if option.check is not None}
# What a configuration computes, not the package's version: bump it only when a change (a default, an
# algorithm) alters the fits of stored configurations, so that a store no longer reuses them. "0.2.0" is
# the package version the keys hashed before they stopped doing so: stores made then keep their fits.
# "0.3.0": every fit's effect became the debiased one (dmlcore.inference.debiased_effect), with two more refits.
# "0.4.0": for a while under 0.3.0 the DML family's debiased effect refitted f alone (nuisances kept), which
# covered less; every method refits the whole method again, and stores no longer reuse fits of that window.
# "0.5.0": with the network as the learner, "auto" nuisances count the network among their candidates.
# "0.6.0": with K folds "auto" scores its candidates on the first PILOT fold models only and gives every fold the
# pooled choice (dmlcore.learners.select): the same nuisances where the choice is the same, but the records'
# held-out losses are the pilot's.
# "0.7.0": the clustered debiased effect's standard error counts f-hat's error outside the representer's basis only
# (dmlcore.inference.debiased_effect.clustered_score): stored clustered fits carry the wider standard error.
FIT_KEY_VERSION = "0.7.0"


def settings_used(method: str) -> frozenset[str]:
    """The study's fit settings ``method`` uses (its registry entry's); the others are None in its configs."""
    return METHODS[method].settings & set(FIT_SETTINGS)


def refuse_unused(dataset: str | None, data=(), methods=(), settings=(), spell=None, known=None) -> None:
    """Refuse, in one line naming every one, the ``data`` options that ``dataset`` does not take (its
    registry entry, :data:`~dmlcore.data.registry.DATASET_OPTIONS`; a real data set, or None: the user's
    own file, takes none) and the fit ``settings`` that none of ``methods`` reads (their registry entries'
    ``settings``). ``spell`` writes an option as the user gave it, a command-line flag; by default a key of a
    study file ('rho' where it is refused, rho where it is listed). ``known``: the method settings the caller
    takes (default: a study's keys, :data:`FIT_SETTINGS`), those a refusal lists as what a method reads."""
    known = tuple(FIT_SETTINGS if known is None else known)
    named, listed = (repr, str) if spell is None else (spell, spell)
    problems = []
    options = dataset_options(dataset) if dataset is not None else {}
    unused = [name for name in dict.fromkeys(data) if name not in options]
    if unused:
        names = ", ".join(named(name) for name in unused)
        if dataset is None:
            problems.append(f"Your own file's rows are fixed, so it takes no simulator option ({names} given); "
                            f"leave {'it' if len(unused) == 1 else 'them'} out.")
        elif dataset in real_dataset_names():
            problems.append(f"{dataset} is a real data set: its rows are fixed, so it takes no simulator option "
                            f"({names} given); leave {'it' if len(unused) == 1 else 'them'} out (seeds change only "
                            f"the methods' randomness).")
        else:
            takes = ", ".join(listed(o) for o in options) if options else "no options"
            problems.append(f"Unknown option{'s' if len(unused) > 1 else ''} {names} for {dataset}; it takes "
                            f"{takes}.")
    methods = list(dict.fromkeys(methods))
    unread = [name for name in dict.fromkeys(settings) if not any(name in METHODS[m].settings for m in methods)]
    if unread:
        names = ", ".join(named(name) for name in unread)
        if len(methods) == 1:
            reads = ", ".join(listed(s) for s in known if s in METHODS[methods[0]].settings)
            problems.append(f"{methods[0]} does not use {names} (it reads {reads or 'none of the fit settings'}); "
                            f"leave {'it' if len(unread) == 1 else 'them'} out.")
        else:
            problems.append(f"None of {', '.join(methods)} uses {names}; leave {'it' if len(unread) == 1 else 'them'} "
                            f"out.")
    if problems:
        raise DMLCoreError(" ".join(problems))


@dataclass(frozen=True)
class Grid:
    """One data set's grid: option -> values, methods, setting -> values, seeds."""

    dataset: str
    data: dict
    methods: tuple
    settings: dict
    seeds: tuple
    covariance: tuple = tuple(COVARIANCE.values())
    debias: bool = SETTINGS["debias"].default
    time_limit: int | None = None

    def count(self) -> int:
        """Grid points before settings a method ignores are merged (an upper bound of its fits)."""
        sizes = [len(v) for v in (*self.data.values(), *self.settings.values())]
        total = len(self.methods) * len(self.seeds)
        for size in sizes:
            total *= size
        return total

    def configs(self) -> list[dict]:
        names = list(self.data)
        out = []
        for values in itertools.product(*(self.data[name] for name in names)):
            data = dict(zip(names, values))
            for seed in self.seeds:
                for method in self.methods:
                    used = settings_used(method)
                    axes = [self.settings[s] if s in used else (None,) for s in FIT_SETTINGS]
                    for setting in itertools.product(*axes):
                        fit = _named_default(dict(zip(FIT_SETTINGS, setting)), used)
                        out.append({"dataset": self.dataset, "data": dict(data), "method": method,
                                    **fit, "seed": seed, **self._choices()})
        return out

    def _choices(self) -> dict:
        """The covariance and debias choices that are not the defaults (so the defaults leave fit keys as
        they were)."""
        out = {} if self.covariance == tuple(COVARIANCE.values()) else dict(zip(COVARIANCE, self.covariance))
        out = out if self.debias else {**out, "debias": False}
        return out if self.time_limit is None else {**out, "time_limit": self.time_limit}

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "data": {k: list(v) for k, v in self.data.items()},
                "methods": list(self.methods), "seeds": list(self.seeds),
                **{k: list(v) for k, v in self.settings.items()}, **self._choices()}


@dataclass(frozen=True)
class StudySpec:
    """One or more grids; ``configs()`` lists every distinct fit once, in grid order."""

    grids: tuple

    def count(self) -> int:
        return sum(grid.count() for grid in self.grids)

    def configs(self) -> list[dict]:
        if self.count() > MAX_FITS:
            raise DMLCoreError(f"The grid has {self.count():,} fits, more than one study can hold "
                               f"({MAX_FITS:,}); split it into smaller studies.")
        seen, out = set(), []
        for grid in self.grids:
            for config in grid.configs():
                key = config_key(config)
                if key not in seen:
                    seen.add(key)
                    out.append(config)
        if not out:
            raise DMLCoreError("The grid is empty: give at least one data set, method, seed and value "
                               "of every option.")
        return out

    def to_dict(self) -> dict:
        return {"grid": [grid.to_dict() for grid in self.grids]}


def _named_default(fit: dict, used) -> dict:
    """An unset nuisance whose default is "auto" (learner nn or gb) named so, so that its key differs from
    the fits stored when the default was the learner's own (their None is left out of the key)."""
    for name in LATER_SETTINGS:
        if name in used and fit[name] is None and nuisance_default(None, fit["learner"]) == AUTO:
            fit[name] = AUTO
    return fit


def config_key(config: dict) -> str:
    """The fit's identity in the store: a SHA-256 of its full configuration and ``FIT_KEY_VERSION``."""
    keyed = {k: v for k, v in config.items() if not (k in LATER_SETTINGS and v is None) and k not in NOT_KEYED}
    text = json.dumps({"dmlcore": FIT_KEY_VERSION, **keyed}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def check_size(count: int, yes: bool) -> None:
    """Refuse a grid of more than CONFIRM_ABOVE fits unless confirmed."""
    if count > CONFIRM_ABOVE and not yes:
        raise DMLCoreError(f"The grid has {count:,} fits (more than {CONFIRM_ABOVE:,}); check it, then pass "
                           f"--yes to run it.")


# ------------------------------------------------------------------ parsing
def parse_seeds(value) -> tuple:
    """Seeds from ``"0-19"``, ``"0,3,5-9"``, an int or a list of those; repeats dropped."""
    items = value if isinstance(value, (list, tuple)) else [value]
    seeds: list[int] = []
    for item in items:
        if isinstance(item, bool):
            raise DMLCoreError(f"seeds must be integers or ranges like 0-19; got {item!r}.")
        if isinstance(item, int):
            seeds.append(item)
            continue
        for part in str(item).split(","):
            part = part.strip()
            match = re.fullmatch(r"(\d+)\s*-\s*(\d+)|(\d+)", part)
            if not match:
                raise DMLCoreError(f"seeds must be non-negative integers or ranges like 0-19; got {part!r}.")
            if match.group(3) is not None:
                seeds.append(int(match.group(3)))
                continue
            first, last = int(match.group(1)), int(match.group(2))
            if last < first:
                raise DMLCoreError(f"The seed range {part!r} runs backwards; write {last}-{first}.")
            seeds.extend(range(first, last + 1))
    if any(seed < 0 for seed in seeds):
        raise DMLCoreError(f"seeds must be non-negative; got {min(seeds)}.")
    return tuple(dict.fromkeys(seeds))


def _values(name: str, value) -> list:
    """A grid axis as a list: lists stay, comma-separated text is split, a scalar is one value."""
    if isinstance(value, (list, tuple)):
        values = list(value)
    elif isinstance(value, str):
        values = [v.strip() for v in value.split(",") if v.strip()]
    else:
        values = [value]
    if not values:
        raise DMLCoreError(f"The grid is empty: {name} has no values.")
    return values


def _switch(name: str, default) -> bool:
    """Whether ``name`` is true or false: a bool default, or a data option declared a bool."""
    return isinstance(default, bool) or (name in DATA_OPTIONS and DATA_OPTIONS[name].kind == "bool")


def _coerce(name: str, value, default):
    """``value`` as the type of ``default`` (text from flags and files alike)."""
    text = str(value).strip()
    if text.lower() in ("none", "null", "") and default is None:
        return None
    try:
        if _switch(name, default):
            if isinstance(value, bool):
                return value
            lowered = text.lower()
            if lowered in ("true", "yes", "1"):
                return True
            if lowered in ("false", "no", "0"):
                return False
            raise ValueError
        if isinstance(default, int) or name in INTEGER_SETTINGS:
            number = float(value) if not isinstance(value, int) else value
            if isinstance(value, bool) or number != int(number):
                raise ValueError
            return int(number)
        if isinstance(default, float):
            if isinstance(value, bool):
                raise ValueError
            return float(value)
    except (TypeError, ValueError):
        kind = "true or false" if _switch(name, default) else (
            "an integer" if isinstance(default, int) or default is None else "a number")
        raise DMLCoreError(f"{name} must be {kind}; got {value!r}.") from None
    return text


def _grid(block: dict) -> Grid:
    unknown = [key for key in block if key not in GRID_KEYS]
    if unknown:
        raise DMLCoreError(f"Unknown key {unknown[0]!r} in the study spec; use {', '.join(GRID_KEYS)}.")
    dataset = block.get("dataset")
    if not isinstance(dataset, str) or dataset not in dataset_names():
        raise DMLCoreError(f"Unknown dataset {dataset!r} in the study spec; choose one of "
                           f"{', '.join(dataset_names())}.")
    options = dataset_options(dataset)
    given = block.get("data") or {}
    if not isinstance(given, dict):
        raise DMLCoreError(f"data must be a table of {dataset}'s options; got {given!r}.")
    refuse_unused(dataset, given)
    data = {name: tuple(dict.fromkeys(_coerce(name, v, default) for v in _values(name, given.get(name, default))))
            for name, default in options.items()}
    for name, values in data.items():
        allowed = OPTION_CHOICES.get(name, values)
        for value in values:
            if value not in allowed:
                raise DMLCoreError(f"{name} must be one of {', '.join(allowed)}; got {value!r}.")
            if name in OPTION_CHECKS:
                OPTION_CHECKS[name](value)
    methods = tuple(dict.fromkeys(_values("methods", block.get("methods", list(DEFAULT_METHODS)))))
    for method in methods:
        if method not in METHODS:
            raise DMLCoreError(f"Unknown method {method!r} in the study spec; choose from {', '.join(METHODS)}.")
    given = [name for name, default in FIT_SETTINGS.items()     # a value other than the default (to_dict lists all)
             if any(_coerce(name, v, default) not in (None, default) for v in _values(name, block.get(name, default)))]
    refuse_unused(dataset, (), methods, given)
    settings = {}
    for name, default in FIT_SETTINGS.items():
        values = tuple(dict.fromkeys(_coerce(name, v, default) for v in _values(name, block.get(name, default))))
        for value in values:
            SETTINGS[name].check(value)
        settings[name] = values
    _refuse_target_where_it_cannot_act(methods, settings)
    seeds = parse_seeds(block.get("seeds", DEFAULT_SEEDS))
    covariance = (block.get("cov_type") or COVARIANCE["cov_type"], block.get("cluster") or None)
    check_covariance(*covariance)          # the cluster column is checked against the table by each fit
    debias = _coerce("debias", block.get("debias", SETTINGS["debias"].default), SETTINGS["debias"].default)
    return Grid(dataset, data, methods, settings, seeds, covariance, debias, _time_limit(block.get("time_limit")))


def _refuse_target_where_it_cannot_act(methods, settings: dict) -> None:
    """Refuse, in one line before any fit, a grid whose ``nuisance_choice="target"`` meets a learner, outcome model,
    distribution model or K with which DML-CMR's fit would refuse it (:func:`~dmlcore.estimators.dml.target_problem`,
    the settings' part of that check: the data's is the fit's)."""
    if TARGET not in settings.get("nuisance_choice", ()) or not any("nuisance_choice" in METHODS[m].settings
                                                                     for m in methods):
        return
    for learner, folds, s, g in itertools.product(*(settings[name] for name in
                                                    ("learner", "folds", "outcome_learner", "sampler"))):
        problem = target_problem(nuisance_default(s, learner), nuisance_default(g, learner), folds, False, None)
        if problem:
            raise DMLCoreError(f"With learner {learner!r} and folds {folds}: {problem}")


def _time_limit(value) -> int | None:
    """A grid's ``time_limit``: whole seconds, at least 1 (None: no limit); refused in one line otherwise."""
    if value is None or str(value).strip().lower() in ("", "none", "null"):
        return None
    try:
        number = float(value)
        if isinstance(value, bool) or number != int(number):
            raise ValueError
    except (TypeError, ValueError):
        raise DMLCoreError(f"time_limit must be whole seconds (e.g. 600) or none; got {value!r}.") from None
    SETTINGS["time_limit"].check(int(number))
    return int(number)


def spec_from_dict(spec: dict) -> StudySpec:
    """A study from its dict form (see the module docstring)."""
    if not isinstance(spec, dict):
        raise DMLCoreError(f"A study spec is a table of keys (dataset, data, methods, seeds, ...); "
                           f"got {type(spec).__name__}.")
    if "grid" not in spec:
        return StudySpec((_grid(spec),))
    blocks = spec["grid"]
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        raise DMLCoreError("grid must be a non-empty list of tables ([[grid]] in TOML), one per data set.")
    shared = {key: value for key, value in spec.items() if key != "grid"}
    return StudySpec(tuple(_grid({**shared, **block, "data": {**(shared.get("data") or {}), **(block.get("data") or {})}})
                           for block in blocks))


def load_spec(path: str | Path) -> StudySpec:
    """A study from a TOML (``.toml``) or JSON (``.json``) file."""
    path = Path(path)
    if path.suffix.lower() not in (".toml", ".json"):
        raise DMLCoreError(f"A study spec is a .toml or .json file; got {path.name!r}.")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DMLCoreError(f"Cannot read the study spec {str(path)!r}: {exc.strerror or exc}.") from None
    try:
        spec = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise DMLCoreError(f"The study spec {path.name!r} is not valid {path.suffix[1:].upper()}: "
                           f"{' '.join(str(exc).split())}.") from None
    return spec_from_dict(spec)


def spec_from_flags(dataset: str, *, methods=None, seeds=None, data: dict | None = None,
                    settings: dict | None = None) -> StudySpec:
    """A one-grid study from command-line text (comma lists); None means the default."""
    block = {"dataset": dataset, "data": {k: v for k, v in (data or {}).items() if v is not None}}
    if methods is not None:
        block["methods"] = methods
    if seeds is not None:
        block["seeds"] = seeds
    block.update({k: v for k, v in (settings or {}).items() if v is not None})
    return spec_from_dict(block)

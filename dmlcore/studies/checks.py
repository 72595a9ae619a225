"""A study's grid checked before any fit starts, against the checks its fits would meet.

The options of a data set are checked as the grid is read (:mod:`~dmlcore.studies.spec`, by the
simulators' own checks). What depends on the data's roles is checked here, by
:func:`check_study`: that every method takes the data set's problem (``Method.refusal``: IV or
proximal, no kernel method on images), that its estimator takes the rows of the grid's smallest N
(``CMREstimator.check_rows``: Sieve 2SLS's basis needs four rows per function), that every cell
has the rows its folds need (``CausalData.check_folds``), and that DML-CMR can take ``nuisance_choice="target"``
on the data (:func:`~dmlcore.estimators.dml.target_refusal`, the fit's own refusal: no images, a distribution
model to choose). Both ask the library's own rules of a small sample of each data
set (cached), so a form, the CLI and the background runner refuse alike, in one line.
"""

from __future__ import annotations

import functools
import itertools
import json

from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators import METHODS, make_estimator
from dmlcore.estimators.dml import target_refusal
from dmlcore.estimators.nuisance_target import TARGET


def check_study(spec) -> None:
    """Raise DMLCoreError (one line, naming the value and what to do) for the first grid point whose
    fits would all fail on their roles or folds; None when every one can run."""
    for grid in spec.grids:
        data = _sample(grid.dataset, json.dumps(_first_values(grid.data), sort_keys=True))
        for method in grid.methods:
            why = METHODS[method].refusal(data)
            if why:
                raise DMLCoreError(f"{METHODS[method].title} cannot fit {grid.dataset}: {why} Remove it from "
                                   f"the methods.")
            settings = {name: values[0] for name, values in grid.settings.items()
                        if name in METHODS[method].settings and values and values[0] is not None}
            try:     # the estimator's own rows rule (Sieve 2SLS's basis), on the sample at the smallest N
                make_estimator(method, **settings).check_rows(data)
            except DMLCoreError as err:
                rows = len(data.table)
                raise DMLCoreError(f"{METHODS[method].title} cannot fit {grid.dataset} at N = {rows:,}: {err} "
                                   f"Raise N or remove it from the methods.") from None
        _check_target(grid, data)
        if not any("folds" in METHODS[m].settings for m in grid.methods):
            continue
        rows = min(grid.data["n"]) if "n" in grid.data else len(data.table)
        for folds in grid.settings.get("folds", ()):
            if folds is not None:
                CausalData.check_folds(_Rows(rows), folds)


def _check_target(grid, data) -> None:
    """Refuse a grid whose ``nuisance_choice="target"`` its DML-CMR fits would refuse on this data set, in the
    fit's own words (:func:`~dmlcore.estimators.dml.target_refusal`; the settings alone are checked as the grid is
    read, :mod:`~dmlcore.studies.spec`)."""
    readers = [m for m in grid.methods if "nuisance_choice" in METHODS[m].settings]
    if not readers or TARGET not in grid.settings.get("nuisance_choice", ()):
        return
    names = ("learner", "folds", "outcome_learner", "sampler")
    for learner, folds, s, g in itertools.product(*(grid.settings[name] for name in names)):
        why = target_refusal(data, learner=learner, folds=folds, outcome_learner=s, sampler=g)
        if why:
            raise DMLCoreError(f"{METHODS[readers[0]].title} cannot fit {grid.dataset} with learner {learner!r}: "
                               f"{why}")


class _Rows:
    """A stand-in with ``table`` of ``n`` rows, so that ``CausalData.check_folds`` (which reads only the
    table's length) judges a cell's N without simulating it."""

    def __init__(self, n: int):
        self.table = range(n)


def _first_values(options: dict) -> dict:
    """One value of each data option, N at the grid's smallest (the roles do not depend on the options;
    a design may need more rows than the simulators' minimum, as clustered-iv does)."""
    first = {name: values[0] for name, values in options.items()}
    if "n" in first:
        first["n"] = min(options["n"])
    return first


@functools.lru_cache(maxsize=32)
def _sample(dataset: str, options_json: str):
    """The data set's roles on a small sample (its rows for real data and tables)."""
    return load_dataset(dataset, seed=0, **json.loads(options_json)).data

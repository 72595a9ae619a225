"""Oracle nuisances: the true s(c) = E[Y | C] and the true distribution of f's modelled inputs given C.

A simulated design whose truth knows them hands them out (``GroundTruth.oracle_outcome()`` /
``oracle_sampler()``, :mod:`dmlcore.data.simulate`); they can be passed as ``outcome_learner`` /
``sampler`` of the DML-CMR estimators to measure how much of the error each learned nuisance
carries (docs/error-budget.md). They learn nothing: every fold model is the truth.

``mean(frame)`` and ``draw(frame, n_draws, rng)`` receive the conditioning columns as a DataFrame
named by ``names``; ``draw`` returns an array (rows, n_draws, modelled dims). Module-level
functions (or ``functools.partial`` of them) keep an oracle picklable.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from dmlcore.errors import DMLCoreError
from dmlcore.learners.base import ConditionalSampler, OutcomeLearner


def _frame(C: np.ndarray, names: list[str]) -> pd.DataFrame:
    C = np.asarray(C, dtype=float)
    if C.ndim != 2 or C.shape[1] != len(names):
        raise DMLCoreError(f"The oracle expects the {len(names)} conditioning columns {', '.join(names)}; "
                           f"got an array of shape {C.shape}. Pass it to a fit of the data it was made for.")
    return pd.DataFrame(C, columns=names)


class OracleOutcome(OutcomeLearner):
    """s(c) = E[Y | C = c] as the design defines it; ``fit`` only checks the columns."""

    name = "oracle"

    def __init__(self, mean: Callable[[pd.DataFrame], np.ndarray], names: list[str]):
        self.mean = mean
        self.names = list(names)

    def __repr__(self) -> str:       # a run record's config names the object by it
        return f"OracleOutcome(names={self.names})"

    def fit(self, C, y, train_sets, monitor):
        _frame(C[:1], self.names)
        return self

    def predict(self, k, C):
        return np.asarray(self.mean(_frame(C, self.names)), dtype=float).ravel()


class OracleSampler(ConditionalSampler):
    """Draws from the design's true conditional distribution of f's modelled inputs given C."""

    name = "oracle"

    def __init__(self, draw: Callable[[pd.DataFrame, int, np.random.Generator], np.ndarray], names: list[str]):
        self.draw = draw
        self.names = list(names)

    def __repr__(self) -> str:
        return f"OracleSampler(names={self.names})"

    def fit(self, C, X, train_sets, monitor):
        self.dims_ = X.shape[1]
        _frame(C[:1], self.names)
        return self

    def sample(self, k, C, n_draws, rng):
        draws = np.asarray(self.draw(_frame(C, self.names), n_draws, rng), dtype=float)
        return draws.reshape(len(C), n_draws, -1)

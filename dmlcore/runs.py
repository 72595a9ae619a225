"""One fit from a configuration to a run record: shared by the CLI, the benchmarks and the dashboard.

A run record is a JSON-ready dict with the fields of the CLI contract: ``method``, ``dataset``,
``n``, ``seed``, ``folds``, ``learner``, ``mse`` (None without ground truth), ``seconds`` (wall
time of the fit), ``fold_losses`` (one entry per fold), ``coefficients`` and ``std_errors``
(linear methods), plus ``metrics``, ``config``, ``roles`` and ``second_stage_history``.
"""

from __future__ import annotations

import json
import math
import platform
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import GroundTruth, bridge_curve
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.dml import CEDMLCMR, DMLCMR, NaivePlugIn
from dmlcore.progress import Monitor

NEURAL_METHODS = {"dml-cmr": DMLCMR, "ce-dml-cmr": CEDMLCMR, "naive": NaivePlugIn}
METHOD_TITLES = {"dml-cmr": "DML-CMR", "ce-dml-cmr": "CE-DML-CMR", "naive": "Naive plug-in",
                 "2sls": "2SLS", "sieve-2sls": "Sieve 2SLS"}
METHODS = tuple(METHOD_TITLES)


def make_estimator(method: str, *, learner: str = "nn", folds: int = 10, seed: int = 0,
                   epochs: int | None = None, n_draws: int = 8, nuisance_params: dict | None = None,
                   f_params: dict | None = None):
    """The estimator for ``method`` with the given learners and budget."""
    if method in NEURAL_METHODS:
        return NEURAL_METHODS[method](learner, folds, n_draws=n_draws, epochs=epochs, seed=seed,
                                      nuisance_params=nuisance_params, f_params=f_params)
    if method == "2sls":
        from dmlcore.estimators.tsls import TwoStageLeastSquares
        return TwoStageLeastSquares()
    if method == "sieve-2sls":
        from dmlcore.estimators.sieve import Sieve2SLS
        return Sieve2SLS()
    raise DMLCoreError(f"Unknown method {method!r}; choose one of {', '.join(METHODS)}.")


@dataclass
class Run:
    """A fitted estimator with its record, its data and (for simulations) its ground truth."""

    record: dict
    estimator: object
    data: CausalData
    truth: GroundTruth | None = None
    extra: dict = field(default_factory=dict)

    def curve(self, points: int = 60) -> pd.DataFrame:
        """Estimated (and, when known, true) causal function for plotting.

        With a ground truth, its own curve; otherwise the average structural function
        a -> mean over rows of f(a, other inputs), over the central 98 % of the treatment.
        """
        if self.truth is not None:
            return self.truth.curve(self.estimator)
        if len(self.data.treatment) != 1:
            raise DMLCoreError("A curve needs a single treatment column.")
        a = self.data.table[self.data.treatment[0]].to_numpy(dtype=float)
        grid = np.linspace(*np.quantile(a, [0.01, 0.99]), points)
        return pd.DataFrame({"x": grid, "estimate": bridge_curve(self.estimator, self.data, grid),
                             "truth": np.nan, "group": "average over the data"})

    def predictions(self) -> pd.DataFrame:
        """The data's input columns with f-hat at each row."""
        frame = self.data.table[self.data.input_columns].copy()
        frame["f_hat"] = self.estimator.predict(frame)
        return frame

    def to_json(self) -> str:
        return json.dumps(self.record, indent=2, default=_json_default)


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return None if not math.isfinite(value) else float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def fit_run(data: CausalData, method: str, *, truth: GroundTruth | None = None, dataset: str | None = None,
            learner: str = "nn", folds: int = 10, seed: int = 0, epochs: int | None = None,
            n_draws: int = 8, nuisance_params: dict | None = None, f_params: dict | None = None,
            data_params: dict | None = None, callback=None, should_stop=None) -> Run:
    """Fit ``method`` on ``data`` and score it against ``truth`` when given."""
    estimator = make_estimator(method, learner=learner, folds=folds, seed=seed, epochs=epochs,
                               n_draws=n_draws, nuisance_params=nuisance_params, f_params=f_params)
    start = time.perf_counter()
    if method in NEURAL_METHODS:
        estimator.fit(data, callback=callback, should_stop=should_stop)
    else:
        estimator.fit(data, monitor=Monitor(callback, should_stop))
    seconds = time.perf_counter() - start
    metrics = truth.score(estimator) if truth is not None else {}
    record = {
        "method": method,
        "dataset": dataset or data.name,
        "n": int(len(data.table)),
        "seed": int(seed),
        "folds": int(folds) if method == "dml-cmr" else (1 if method in NEURAL_METHODS else None),
        "learner": learner if method in NEURAL_METHODS else "linear",
        "mse": metrics.get("mse"),
        "metrics": metrics,
        "seconds": seconds,
        "fold_losses": getattr(estimator, "fold_losses_", []),
        "second_stage_history": getattr(estimator, "second_stage_history_", {}),
        "problem": data.problem,
        "roles": data.roles(),
        "config": {"method": method, "learner": learner, "folds": folds, "seed": seed, "epochs": epochs,
                   "n_draws": n_draws, "nuisance_params": nuisance_params, "f_params": f_params,
                   "data": data_params or {}},
        "truth": truth.description if truth is not None else None,
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    for attr, key in (("coef_", "coefficients"), ("std_errors_", "std_errors")):
        value = getattr(estimator, attr, None)
        if value is not None:
            record[key] = {str(k): float(v) for k, v in pd.Series(value).items()}
    return Run(record, estimator, data, truth)

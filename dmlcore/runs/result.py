"""A run: the fitted estimator with its record, its data and its truth (what :func:`dmlcore.runs.fit_run` returns)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import GroundTruth, bridge_curve
from dmlcore.errors import DMLCoreError
from dmlcore.runs.bands import curve_band
from dmlcore.runs.typed import CLR, Band, Config, Effect, FirstStage, Heldout, LinearFit, NuisanceChoice, RunRecord
from dmlcore.stats.covariance import is_clustered

CURVE_POINTS = 60     # treatment values of a curve without a known truth


@dataclass
class Run:
    """A fitted estimator with its record, its data and (for simulations) its ground truth; what
    ``fit_run`` returns, and what the run store keeps.

    Parameters
    ----------
    record : dict
        The run record, JSON-serialisable (``to_json``): ``method``, ``dataset``, ``n``, ``seed``,
        ``config`` (every setting), ``mse`` (None without a truth), ``metrics``, ``seconds``,
        ``fold_losses``, ``effect`` (with its intervals), ``diagnostics``, ``heldout``, ``nuisances``
        and, with a band, ``bands``; the command-line reference (docs/cli.md) lists the fields. Its
        field names are a contract: they are extended, never renamed.
    estimator : object
        The fitted estimator (a ``CMREstimator``).
    data : CausalData
        The data it was fitted on.
    truth : GroundTruth, default None
        The simulation's ground truth (None for real data).

    Examples
    --------
    >>> from dmlcore import fit_run, load_dataset
    >>> sim = load_dataset("demand-iv", n=1000, seed=0)
    >>> run = fit_run(sim.data, "2sls", truth=sim.truth)
    >>> run.mse, run.effect.estimate, run.effect.how()    # typed views of the record (dmlcore.runs.typed)
    >>> print(run.summary())      # the run as text
    >>> run.conf_int()            # the headline interval: a one-row DataFrame (lower, upper)
    >>> run.params                # a linear method's coefficients (a Series)
    >>> run.curve().head()        # estimate and truth of f along the treatment
    >>> run.to_json()[:60]        # the record as JSON

    The typed views (``effect``, ``diagnostics``, ``heldout``, ``config``, ``bands``, ``nuisances``, ``clr``,
    ``linear``, ``result``) are read from ``record`` at each call, so they follow it; ``to_dict()`` writes them
    back and equals ``record``.
    """

    record: dict
    estimator: object
    data: CausalData
    truth: GroundTruth | None = None
    _curve: pd.DataFrame | None = field(default=None, init=False, repr=False)

    def curve(self) -> pd.DataFrame:
        """Estimated (and, when known, true) causal function for plotting, with its band.

        With a ground truth, its own curve; otherwise the average structural function
        a -> mean over rows of f(a, other inputs), over the central 98 % of the treatment (at
        its two values when it is binary).
        Columns ``x``, ``estimate``, ``truth``, ``group`` (and the truth's own columns), plus
        ``lower``, ``upper`` and ``band`` when the estimator has a band (:func:`curve_band`).
        Computed once (the run store and the Results page both draw it); each call gets a copy.
        """
        if self._curve is None:
            self._curve = self._make_curve()
            if is_clustered((self.record.get("config") or {}).get("cov_type") or "") and "band" in self._curve:
                self._curve["band"] = self._curve["band"] + " (rows taken as independent: not clustered)"
        return self._curve.copy()

    def _make_curve(self) -> pd.DataFrame:
        treatment = self.data.treatment[0] if len(self.data.treatment) == 1 else None
        if self.truth is not None:
            frame = self.truth.curve(self.estimator)
            averaged = self.truth.kind == "pcl" and treatment in frame
            values = frame[treatment].to_numpy(dtype=float) if averaged else None
            return curve_band(self.estimator, self.data, frame, treatment_values=values)
        if treatment is None:
            raise DMLCoreError("A curve needs a single treatment column.")
        a = self.data.table[treatment].to_numpy(dtype=float)
        values = np.unique(a)      # a binary treatment: its two values only
        grid = values if len(values) == 2 else np.linspace(*np.quantile(a, [0.01, 0.99]), CURVE_POINTS)
        frame = pd.DataFrame({"x": grid, "estimate": bridge_curve(self.estimator, self.data, grid),
                              "truth": np.nan, "group": "average over the data"})
        return curve_band(self.estimator, self.data, frame, treatment_values=grid)

    def predictions(self) -> pd.DataFrame:
        """The data's input columns with f-hat at each row."""
        frame = self.data.table[self.data.input_columns].copy()
        frame["f_hat"] = self.estimator.predict(frame)
        return frame

    def to_json(self) -> str:
        return json.dumps(self.record, indent=2, default=_json_default)

    # -------------------------------------------------------- typed views of the record (dmlcore.runs.typed)

    @property
    def result(self) -> RunRecord:
        """The whole record, typed."""
        return RunRecord.from_dict(self.record)

    def to_dict(self) -> dict:
        """The record as stored, written from its typed view (equal to ``record``; ``to_json`` its JSON)."""
        return self.result.to_dict()

    @property
    def effect(self) -> Effect | None:
        """The treatment's average effect or derivative with its intervals (``record["effect"]``)."""
        return Effect.from_dict(self.record.get("effect"))

    @property
    def diagnostics(self) -> FirstStage | None:
        """The linear first stage of IV and PCL data (``record["diagnostics"]``; None for other problems)."""
        return FirstStage.from_dict(self.record.get("diagnostics"))

    @property
    def heldout(self) -> Heldout | None:
        """The held-out projected residual (``record["heldout"]``; None when not computed)."""
        return Heldout.from_dict(self.record.get("heldout"))

    @property
    def config(self) -> Config | None:
        """Every setting of the fit, the method and the data set's options (``record["config"]``)."""
        return Config.from_dict(self.record.get("config"))

    @property
    def bands(self) -> dict[str, Band]:
        """f's bands by kind (``record["bands"]``: "confidence", "split_spread"; empty without one)."""
        return self.result.bands or {}

    @property
    def nuisances(self) -> dict[str, NuisanceChoice]:
        """The ``"auto"`` nuisances' choices by role (``record["nuisances"]``; empty without one)."""
        return self.result.nuisances or {}

    @property
    def clr(self) -> CLR | None:
        """A linear IV method's conditional likelihood-ratio set (``record["clr"]``), or None."""
        return CLR.from_dict(self.record.get("clr"))

    @property
    def linear(self) -> LinearFit | None:
        """A linear IV fit's R², kappa, degrees of freedom (``record["linear"]``), or None."""
        return LinearFit.from_dict(self.record.get("linear"))

    @property
    def mse(self) -> float | None:
        """The MSE of f-hat against the truth (None without a truth)."""
        return self.record.get("mse")

    @property
    def params(self):
        """A linear method's coefficients by column (a pandas Series, the treatment's first); refused for a
        method without coefficients."""
        return self.result.params

    @property
    def bse(self):
        """A linear method's standard errors by column (a pandas Series) under the run's covariance."""
        return self.result.bse

    def conf_int(self, level: float | None = None) -> pd.DataFrame:
        """The headline effect's interval (:meth:`dmlcore.runs.typed.RunRecord.conf_int`): a one-row DataFrame
        indexed by the treatment, columns ``lower`` and ``upper``."""
        return self.result.conf_int(level)

    def summary(self) -> str:
        """The run as text (:meth:`dmlcore.runs.typed.RunRecord.summary`)."""
        return self.result.summary()


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return None if not math.isfinite(value) else float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


"""The run layer: one fit of a method with every refit its record needs, above the estimators and inference.

* :mod:`~dmlcore.runs.fit` -- :func:`fit_run`, from data, a method and its settings to a :class:`Run`;
* :mod:`~dmlcore.runs.result` -- :class:`Run`, the fitted estimator with its record;
* :mod:`~dmlcore.runs.typed` -- the record read typed: :class:`~dmlcore.runs.typed.RunRecord` and its parts
  (effect, first stage, held-out residual, ...), with the run's summary and headline interval;
* :mod:`~dmlcore.runs.bands` -- f's bands, as a record's ``bands`` and along a curve;
* :mod:`~dmlcore.runs.average_effect` -- the average effect or derivative with its interval (closed form,
  delta method, bootstrap refits), as a record's ``effect``;
* :mod:`~dmlcore.runs.heldout_residual` -- the held-out projected residual's refits, and the refits the
  debiased effect shares with it;
* :mod:`~dmlcore.runs.learner_spread` -- the debiased effect across learner families (one run per family).
"""

from dmlcore.runs.bands import band_summary, curve_band
from dmlcore.runs.fit import fit_run, fits_in_run
from dmlcore.runs.result import Run

__all__ = ["Run", "band_summary", "curve_band", "fit_run", "fits_in_run"]

"""The estimator contract every method follows (scikit-learn's conventions).

* ``__init__`` stores its arguments unchanged (``get_params`` / ``set_params`` and
  ``sklearn.base.clone`` work as in scikit-learn: :class:`CMREstimator` is a ``BaseEstimator``);
* ``fit(data, *, callback=None, should_stop=None) -> self``: ``data`` a
  :class:`~dmlcore.data.roles.CausalData`; ``callback(event)`` receives the progress events of
  :mod:`dmlcore.progress`; ``should_stop()`` returning True cancels the fit with
  :class:`~dmlcore.errors.FitCancelled`. Learned attributes end in ``_``; a fitted estimator has
  ``input_columns_`` (f's inputs, in the order ``predict`` reads them) and ``fold_losses_``;
* ``predict(X) -> ndarray``: f at the rows of X (a DataFrame with the input columns, or an array
  in their order); before ``fit`` it raises :class:`~dmlcore.errors.NotFittedError`;
* optional capabilities are declared, not guessed from the class: ``supports(name)`` says
  whether this (fitted) estimator offers

  - ``"predict_interval"``: ``predict_interval(X, level=0.95, *, groups=None) -> (lower, upper)``,
    a pointwise confidence band of f (``groups``: of the mean of f over each group's rows);
  - ``"predict_spread"``: ``predict_spread(X, level=0.95, *, groups=None)``, the spread of
    repeated fits (not a confidence band);
  - ``"linear_functional"``: ``effect_functional(plan) -> (estimate, std_error)`` of
    ``sum_k plan.weights[k] * f(plan.points[k])`` (the effects of :mod:`dmlcore.runs.average_effect`), with
    ``interval_how(z)`` saying in words how the interval estimate -/+ z * std_error is formed;
  - ``"anderson_rubin"``: its effect is a linear-IV coefficient whose Anderson-Rubin set
    (:func:`dmlcore.inference.linear_iv.anderson_rubin_set`, under ``cov_type_`` / ``cluster_``) is
    reported beside it, and which is named for what it is (a first-stage-weighted average)
    rather than replaced by the debiased effect;
  - ``"ignores_conditioning"``: f is fitted without C on purpose (the confounded baseline), so
    the debiased effect, which would turn it into an IV estimate, is not computed;
  - ``"absorb_weights"``: it honours the data's ``absorb`` (fixed effects) and ``weights``
    (:mod:`dmlcore.stats.fixed_effects`); ``fit`` refuses them for any other estimator.

Subclasses implement ``_fit(data, monitor)`` (a :class:`~dmlcore.progress.Monitor`) and
``predict``; :meth:`CMREstimator.fit`, the one fit path, checks the data and builds the monitor.
What a run record takes from a fitted estimator comes from its :meth:`CMREstimator.record_fields`,
which a subclass extends with what it has (folds, second stage, nuisances, device, coefficients).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError, NotFittedError
from dmlcore.process import fit_threads
from dmlcore.progress import Monitor

CAPABILITIES = ("predict_interval", "predict_spread", "linear_functional", "anderson_rubin", "ignores_conditioning",
                "absorb_weights")


class CMREstimator(BaseEstimator):
    """Base of every dmlcore estimator (see the module docstring for the contract).

    Class attributes: ``capabilities`` (a subset of :data:`CAPABILITIES` the class can offer;
    ``supports`` may narrow it for a given fit) and ``fitted_attribute`` (set by every fit).
    """

    capabilities: frozenset = frozenset()
    fitted_attribute = "input_columns_"

    def fit(self, data: CausalData, *, callback=None, should_stop=None):
        """Fit on ``data``; ``callback(event)`` gets progress, ``should_stop()`` cancels. Returns self."""
        check_data(data, type(self).__name__)
        self.check_roles(data)
        check_linear_options(self, data)
        with fit_threads():
            self._fit(data, Monitor(callback, should_stop))
        return self

    @classmethod
    def check_roles(cls, data: CausalData) -> None:
        """Raise a one-line DMLCoreError when ``data`` does not suit this method (its problem, image columns);
        ``fit`` and the registry's ``Method.refusal`` both ask it. By default every CausalData suits."""

    def check_rows(self, data: CausalData) -> None:
        """Raise the one-line DMLCoreError the fit would raise for too few rows of ``data`` (a study's
        pre-check asks it of a sample at the grid's smallest N); by default every size passes."""

    def record_fields(self) -> dict:
        """What a run record (:func:`dmlcore.runs.fit_run`) takes from this fitted estimator: ``folds`` (K when
        it cross-fits, 1 when its nuisances saw every row, None without nuisances), ``f_model``, ``nuisances``
        (the ``"auto"`` choices), ``nuisance_learners`` (the nuisances' learners as used, which the
        record's ``config`` names), ``device`` (where its torch models ran; None without any), ``fold_losses``,
        ``second_stage_history``, ``notes`` and, for linear methods, ``coefficients`` and ``std_errors``.
        Subclasses extend this with what they have."""
        self._check_fitted()
        return {"folds": None, "f_model": None, "nuisances": {}, "nuisance_learners": None, "device": None,
                "fold_losses": self.fold_losses_,
                "second_stage_history": {}, "notes": []}

    def _fit(self, data: CausalData, monitor: Monitor) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _fit(data, monitor).")

    def predict(self, X) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement predict(X).")

    def supports(self, capability: str) -> bool:
        """Whether this estimator offers ``capability`` (one of :data:`CAPABILITIES`)."""
        if capability not in CAPABILITIES:
            raise DMLCoreError(f"Unknown capability {capability!r}; known: {', '.join(CAPABILITIES)}.")
        return capability in self.capabilities

    def _check_fitted(self) -> None:
        check_fitted(self, self.fitted_attribute)


def supports(estimator, capability: str) -> bool:
    """``estimator.supports(capability)``, False for an object without the contract's ``supports``."""
    method = getattr(estimator, "supports", None)
    return bool(method(capability)) if callable(method) else False


def check_data(data, owner: str) -> None:
    """Raise unless ``data`` is a CausalData."""
    if not isinstance(data, CausalData):
        raise DMLCoreError(f"{owner}.fit expects a CausalData; got {type(data).__name__}. "
                           f"Wrap the table with CausalData(table, problem, ...).")


def several_treatments(data: CausalData) -> str | None:
    """Why only the linear IV estimators take ``data``: several endogenous treatment columns (not an image's
    pixels) in an IV problem; None otherwise."""
    if data.problem != "iv" or len(data.treatment) < 2 or data.image_columns:
        return None
    return (f"{len(data.treatment)} treatment columns ({', '.join(data.treatment)}) are several endogenous "
            f"regressors, which only the linear IV estimators (2sls, liml, fuller, gmm-iv) take; give one treatment "
            f"column or use one of those.")


def check_linear_options(estimator, data: CausalData) -> None:
    """Raise when ``data`` asks for absorbed fixed effects, weights or several endogenous treatments that
    ``estimator`` cannot honour."""
    several = several_treatments(data)
    if several and "absorb_weights" not in estimator.capabilities:
        raise DMLCoreError(f"{type(estimator).__name__}: {several}")
    asked = data.linear_options()
    if not asked or "absorb_weights" in estimator.capabilities:
        return
    takers = sorted({cls.__name__ for cls in _subclasses(CMREstimator) if "absorb_weights" in cls.capabilities})
    what = " and ".join(f"{k} {','.join(v) if isinstance(v, list) else v}" for k, v in asked.items())
    raise DMLCoreError(f"Absorbed fixed effects and weights ({what}) apply to the linear IV estimators "
                       f"({', '.join(takers)}) only, not to {type(estimator).__name__}; leave them out or use one "
                       f"of those.")


def _subclasses(cls) -> list:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def check_fitted(model, attribute: str) -> None:
    """Raise :class:`~dmlcore.errors.NotFittedError` unless ``model`` has ``attribute`` (set by fit)."""
    if not hasattr(model, attribute):
        raise NotFittedError(f"This {type(model).__name__} is not fitted yet. Call fit(data) before predict.")


def input_matrix(X, columns: list[str], owner: str) -> np.ndarray:
    """The input columns of ``X`` as a float array (n, len(columns))."""
    if isinstance(X, pd.DataFrame):
        missing = [c for c in columns if c not in X.columns]
        if missing:
            raise DMLCoreError(f"{owner}.predict needs the input columns {', '.join(columns)}; "
                               f"missing: {', '.join(missing)}.")
        x = X[columns].to_numpy(dtype=float)
    else:
        x = np.asarray(X, dtype=float)
        if x.ndim != 2 or x.shape[1] != len(columns):
            raise DMLCoreError(f"{owner}.predict expects a 2-D array with {len(columns)} column(s) "
                               f"({', '.join(columns)}, in this order); got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise DMLCoreError(f"{owner}.predict got missing or infinite input values; remove or "
                           f"impute them first.")
    return x

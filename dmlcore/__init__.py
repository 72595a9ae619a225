"""dmlcore: double machine learning for conditional moment restrictions (IV and proximal learning).

The public face: data with roles (:class:`CausalData`, :func:`load_dataset`), the estimators and
their registry (:data:`METHODS`, :func:`make_estimator`; every estimator follows one contract,
:class:`CMREstimator`), learners as objects (any scikit-learn regressor, or
:class:`OutcomeLearner` / :class:`ConditionalSampler`), one fit with its JSON record
(:func:`fit_run`; its record read typed: :class:`RunRecord`, :class:`Effect`, ...), studies (:func:`run_study`) and the run store (:class:`RunStore`). Your own
methods: :func:`register_method`, from the modules listed in ``DMLCORE_PLUGINS`` (:mod:`dmlcore.plugins`).
See docs/architecture.md.
"""

from dmlcore._version import __version__
from dmlcore.data.registry import load_dataset
from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_iv, simulate_demand_pcl
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged, NotFittedError
from dmlcore.estimators import (CEDMLCMR, DFIV, DMLCMR, KIV, KPV, METHODS, NMMR, PMMR, CMREstimator, DeepGMM,
                                NaivePlugIn, OutcomeRegression, RepeatedCrossFit, Sieve2SLS, TwoStageLeastSquares,
                                make_estimator)
from dmlcore.estimators import LIML, Fuller, GMMIV
from dmlcore.estimators._registry import register_method
from dmlcore.learners import ConditionalSampler, OutcomeLearner
from dmlcore.regression_table import regression_table
from dmlcore.runs import Run, fit_run
from dmlcore.runs.typed import Debiased, Effect, FirstStage, Heldout, Interval, RunRecord
from dmlcore.store import RunStore
from dmlcore.studies import StudySpec, run_study, spec_from_dict

__all__ = ["__version__", "CausalData", "load_dataset", "simulate_demand_iv", "simulate_demand_pcl",
           "DMLCoreError", "FitCancelled", "FitDiverged", "NotFittedError", "METHODS", "make_estimator",
           "CMREstimator", "DMLCMR", "CEDMLCMR", "NaivePlugIn", "RepeatedCrossFit", "OutcomeRegression",
           "TwoStageLeastSquares", "Sieve2SLS", "KIV", "DFIV", "DeepGMM", "KPV", "PMMR", "NMMR",
           "OutcomeLearner", "ConditionalSampler", "Run", "fit_run", "RunStore", "StudySpec", "run_study",
           "spec_from_dict", "LIML", "Fuller", "GMMIV", "regression_table", "register_method", "RunRecord", "Effect",
           "Interval", "Debiased", "FirstStage", "Heldout"]

from dmlcore import plugins as _plugins  # noqa: E402  (last: a plugin imports dmlcore, complete by now)

_plugins.load_at_import()

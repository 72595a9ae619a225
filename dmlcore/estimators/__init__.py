"""The estimators, their registry and how to make one by name.

Every class follows one contract (:mod:`dmlcore.estimators._base`); :data:`METHODS` is the one
registry of methods (:mod:`dmlcore.estimators._registry`); :func:`make_estimator` builds one by
its method name with the CLI's settings.
"""

from dmlcore.estimators._base import CAPABILITIES, CMREstimator, supports
from dmlcore.estimators._registry import (METHOD_TITLES, METHODS, Method, for_estimator, for_method, get_method,
                                          make_estimator, record_learner, refuse_unread,
                                          trains_networks)
from dmlcore.estimators.crossfit_reps import RepeatedCrossFit
from dmlcore.estimators.dml import CEDMLCMR, DMLCMR, NaivePlugIn
from dmlcore.estimators.kclass import LIML, Fuller, GMMIV
from dmlcore.estimators.peers import DFIV, KIV, KPV, NMMR, PMMR, DeepGMM
from dmlcore.estimators.regression import OutcomeRegression
from dmlcore.estimators.settings import DEFAULTS, SETTINGS, FitSettings, Setting
from dmlcore.estimators.sieve import Sieve2SLS
from dmlcore.estimators.tsls import TwoStageLeastSquares

__all__ = ["FitSettings", "Setting", "SETTINGS", "DEFAULTS", "for_method", "for_estimator", "refuse_unread", "CMREstimator", "CAPABILITIES", "supports", "METHODS", "METHOD_TITLES", "Method", "get_method", "make_estimator", "trains_networks",
           "record_learner", "DMLCMR", "CEDMLCMR", "NaivePlugIn", "RepeatedCrossFit",
           "OutcomeRegression", "TwoStageLeastSquares", "Sieve2SLS", "KIV", "DFIV", "DeepGMM", "KPV", "PMMR",
           "NMMR", "LIML", "Fuller", "GMMIV"]

"""Pure statistics beneath the estimators: they import no estimator, learner or run.

* :mod:`~dmlcore.stats.covariance` -- the covariance choice (unadjusted, robust, clustered) and its checks;
* :mod:`~dmlcore.stats.clusters` -- what clusters do to folds, standard errors and resamples;
* :mod:`~dmlcore.stats.fixed_effects` -- absorbed fixed effects (within transformation) and weights.
"""

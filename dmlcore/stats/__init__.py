"""Pure statistics beneath the estimators: they import no estimator, learner or run.

* :mod:`~dmlcore.stats.covariance` -- the covariance choice (unadjusted, robust, clustered) and its checks;
* :mod:`~dmlcore.stats.clusters` -- the rows' cluster numbers and the clustered standard error of a mean;
* :mod:`~dmlcore.stats.resample` -- every split of a run (folds, cluster-whole folds, bootstrap draws)
  from one table of seeded streams;
* :mod:`~dmlcore.stats.fixed_effects` -- absorbed fixed effects (within transformation) and weights.
"""

"""Inference about a fitted estimator: the treatment's effect and its intervals, their coverage, and the
diagnostics that say when to believe them.

* :mod:`~dmlcore.inference.average_effect` -- the average effect or derivative with its interval
  (closed form, delta method, bootstrap), as a run record's ``effect``;
* :mod:`~dmlcore.inference.debiased_effect` -- the debiased effect (orthogonal score, cross-fitted f-hat)
  and the weak-identification flag;
* :mod:`~dmlcore.inference.linear_iv` -- linear-IV inference: first-stage statistics, Anderson-Rubin and
  conditional likelihood-ratio sets;
* :mod:`~dmlcore.inference.first_stage` -- the instruments' (or proxies') strength diagnostics;
* :mod:`~dmlcore.inference.covariance` and :mod:`~dmlcore.inference.clusters` -- the covariance choice and
  what clusters do to folds, standard errors and resamples;
* :mod:`~dmlcore.inference.wild_bootstrap` -- the wild cluster bootstrap of a linear IV coefficient;
* :mod:`~dmlcore.inference.heldout_residual` -- the held-out projected residual that compares methods on
  real data;
* :mod:`~dmlcore.inference.learner_spread` -- the debiased effect across learner families;
* :mod:`~dmlcore.inference.band_coverage` and :mod:`~dmlcore.inference.effect_coverage` -- the measured
  coverage of f's bands and of the effect intervals, as the dashboard quotes it.

The package imports none of its modules here, so that an estimator can import one (clusters) without the rest.
"""

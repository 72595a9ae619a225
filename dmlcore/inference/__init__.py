"""Inference about a fitted estimator (above the estimators, below the run layer :mod:`dmlcore.runs`, which
orchestrates the refits): the treatment's effect and its intervals, their coverage, and the
diagnostics that say when to believe them.

* :mod:`~dmlcore.inference.debiased_effect` -- the debiased effect (orthogonal score, cross-fitted f-hat)
  and the weak-identification flag;
* :mod:`~dmlcore.inference.linear_iv` -- linear-IV inference: first-stage statistics, Anderson-Rubin and
  conditional likelihood-ratio sets;
* :mod:`~dmlcore.inference.first_stage` -- the instruments' (or proxies') strength diagnostics;
* :mod:`~dmlcore.inference.wild_bootstrap` -- the wild cluster bootstrap of a linear IV coefficient;
* :mod:`~dmlcore.inference.band_coverage` and :mod:`~dmlcore.inference.effect_coverage` -- the measured
  coverage of f's bands and of the effect intervals, as the dashboard quotes it.

The package imports none of its modules here. The covariance choice and clusters are pure statistics beneath
the estimators (:mod:`dmlcore.stats`).
"""

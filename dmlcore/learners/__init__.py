"""Nuisance learners: by name (``nn``, ``rf``, ``gb``, ``linear``) or as objects.

A learner can be

* a name: ``nn`` (:mod:`~dmlcore.learners.nn`), ``rf``, ``gb``, ``linear``
  (:mod:`~dmlcore.learners.tabular`);
* any scikit-learn regressor (``fit(X, y)``, ``predict(X)``): the outcome model is the regressor,
  the distribution model its conditional mean plus resampled out-of-sample residuals
  (:class:`~dmlcore.learners.tabular.ResidualSampler`); cloned for every fold model;
* an :class:`OutcomeLearner` (for the outcome model) or :class:`ConditionalSampler` (for the
  distribution model): the per-fold interface itself (:mod:`~dmlcore.learners.base`), e.g. an
  oracle that knows the truth; deep-copied for every fit.
"""

from __future__ import annotations

import copy

from dmlcore.errors import DMLCoreError
from dmlcore.learners.base import ConditionalSampler, OutcomeLearner
from dmlcore.learners.nn import MixtureDensity, NeuralOutcome
from dmlcore.learners.registry import LEARNER_REGISTRY, Learner, is_network
from dmlcore.learners.select import AUTO, CANDIDATES, TABULAR_CANDIDATES, SelectedOutcome, SelectedSampler
from dmlcore.learners.tabular import ResidualSampler, TabularOutcome, is_regressor, learner_name
from dmlcore.stats.resample import SEED

LEARNERS = tuple(LEARNER_REGISTRY)
NUISANCE_CHOICES = (*LEARNERS, AUTO)   # outcome_learner / sampler may also be "auto" (dmlcore.learners.select)
LEARNER_TITLES = {name: entry.title for name, entry in LEARNER_REGISTRY.items()}
EXPECTED = (f"one of {', '.join(LEARNERS)}, a scikit-learn regressor (an object with fit(X, y) and "
            f"predict(X)), or an OutcomeLearner / ConditionalSampler (dmlcore.learners.base)")


def check_learner(learner, what: str = "learner") -> None:
    """Raise a one-line DMLCoreError unless ``learner`` is a name, a regressor or a nuisance object;
    ``"auto"`` is a name for ``outcome_learner`` and ``sampler`` only."""
    if isinstance(learner, str):
        names = LEARNERS if what == "learner" else NUISANCE_CHOICES
        if learner not in names:
            hint = (f" ('{AUTO}' applies to outcome_learner and sampler: each nuisance's learner chosen by its "
                    f"cross-fitted held-out loss)") if learner == AUTO else ""
            raise DMLCoreError(f"Unknown {what} {learner!r}; choose one of {', '.join(names)}.{hint}")
        return
    if isinstance(learner, (OutcomeLearner, ConditionalSampler)) or is_regressor(learner):
        return
    raise DMLCoreError(f"The {what} {_shown(learner)} ({type(learner).__name__}) has no fit and predict methods; "
                       f"expected {EXPECTED}.")


def make_outcome_learner(learner, params: dict | None = None, seed: int = SEED, image=None,
                         device="cpu") -> OutcomeLearner:
    """The learner of s(c) = E[Y | C] for ``learner`` (a name, a regressor or an OutcomeLearner);
    ``image`` = (pixel positions in C, shape) and ``device`` (a torch device) for nn."""
    given = _given(learner, OutcomeLearner, "outcome learner", "sampler")
    if given is not None:
        return given
    if is_network(learner):
        return NeuralOutcome(params, seed, image, device)
    return TabularOutcome(learner, params, seed)


def make_sampler(learner, params: dict | None = None, seed: int = SEED, image=None,
                 device="cpu") -> ConditionalSampler:
    """The learner of the conditional distribution of f's modelled inputs given C for ``learner``
    (a name, a regressor: its mean plus residuals, or a ConditionalSampler)."""
    given = _given(learner, ConditionalSampler, "sampler", "outcome learner")
    if given is not None:
        return given
    if is_network(learner):
        return MixtureDensity(params, seed, image, device)
    return ResidualSampler(learner, params, seed)


def _given(learner, kind: type, role: str, other_role: str):
    """A copy of ``learner`` when it is a ``kind`` object (None for names and regressors, which the
    caller builds); a one-line DMLCoreError for anything else, or a nuisance object of the other kind."""
    check_learner(learner)
    if isinstance(learner, kind):
        return copy.deepcopy(learner)
    if isinstance(learner, (OutcomeLearner, ConditionalSampler)):
        kind_name = "ConditionalSampler" if isinstance(learner, ConditionalSampler) else "OutcomeLearner"
        raise DMLCoreError(f"{_shown(learner)} is a {kind_name}: it can be the {other_role}, not the {role}; "
                           f"expected {EXPECTED}.")
    return None


def _shown(obj) -> str:
    text = " ".join(repr(obj).split())
    return text if len(text) <= 80 else text[:77] + "..."


def uses_networks(learner) -> bool:
    """Whether a nuisance ``learner`` (a name) trains torch networks: ``nn``; ``auto`` answers for its boosters
    (it fits the network only with nn as the run's learner, which the callers ask about too)."""
    if not isinstance(learner, str):
        return False
    if learner == AUTO:
        return any(LEARNER_REGISTRY[CANDIDATES[c][0]].networks for c in TABULAR_CANDIDATES)
    return learner in LEARNER_REGISTRY and LEARNER_REGISTRY[learner].networks


__all__ = ["LEARNER_REGISTRY", "Learner", "LEARNERS", "NUISANCE_CHOICES", "AUTO", "SelectedOutcome", "SelectedSampler", "uses_networks", "LEARNER_TITLES", "check_learner", "learner_name", "make_outcome_learner", "make_sampler",
           "OutcomeLearner", "ConditionalSampler"]

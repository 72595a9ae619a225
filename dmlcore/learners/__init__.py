"""Nuisance learners, created by name: ``nn``, ``rf``, ``gb``, ``linear``."""

from __future__ import annotations

from dmlcore.errors import DMLCoreError
from dmlcore.learners.base import ConditionalSampler, OutcomeLearner
from dmlcore.learners.nn import MixtureDensity, NeuralOutcome
from dmlcore.learners.tabular import ResidualSampler, TabularOutcome

LEARNERS = ("nn", "rf", "gb", "linear")
LEARNER_TITLES = {"nn": "neural network", "rf": "random forest", "gb": "gradient boosting",
                  "linear": "linear"}


def _check(name: str) -> str:
    if name not in LEARNERS:
        raise DMLCoreError(f"Unknown learner {name!r}; choose one of {', '.join(LEARNERS)}.")
    return name


def make_outcome_learner(name: str, params: dict | None = None, seed: int = 0, image=None,
                         device="cpu") -> OutcomeLearner:
    """The learner of s(c) = E[Y | C] called ``name``; ``image`` = (pixel positions in C, shape) and
    ``device`` (a torch device) for nn."""
    if _check(name) == "nn":
        return NeuralOutcome(params, seed, image, device)
    return TabularOutcome(name, params, seed)


def make_sampler(name: str, params: dict | None = None, seed: int = 0, image=None,
                 device="cpu") -> ConditionalSampler:
    """The learner of the conditional distribution of f's modelled inputs given C."""
    if _check(name) == "nn":
        return MixtureDensity(params, seed, image, device)
    return ResidualSampler(name, params, seed)


__all__ = ["LEARNERS", "LEARNER_TITLES", "make_outcome_learner", "make_sampler",
           "OutcomeLearner", "ConditionalSampler"]

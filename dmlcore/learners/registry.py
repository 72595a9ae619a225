"""The one registry of named nuisance learners: what each is, what it trains and roughly what it costs.

Every list of learners (the CLI's ``--learner``, a study's ``learner`` key, the dashboard's choices, the
cost guesses of the job queue) reads :data:`LEARNER_REGISTRY`; a scikit-learn regressor object is a
learner too, outside the registry (:mod:`dmlcore.learners`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Learner:
    """One named learner.

    ``f_model``: the second stage f it pairs with when ``f_model`` is not given
    (:mod:`dmlcore.estimators.second_stage`); ``epochs_param``: the setting of its ``DEFAULTS`` that
    ``epochs`` caps (None: ``epochs`` does not apply); ``networks``: it trains torch networks;
    ``seconds_per_1000``: a first guess of one nuisance fit's seconds per 1,000 rows, used by the job
    queue until a fit of the kind has been timed. ``staged``: it holds out its own early-stopping split of the
    training rows and reports a loss per stage (gradient boosting), so no validation split is taken for it.
    """

    name: str
    title: str
    f_model: str
    epochs_param: str | None = None
    networks: bool = False
    seconds_per_1000: float = 1.0
    staged: bool = False


def epochs_param(learner) -> str | None:
    """The setting that ``epochs`` caps for ``learner`` (a named learner; None for an object or a learner without
    epochs)."""
    entry = LEARNER_REGISTRY.get(learner) if isinstance(learner, str) else None
    return entry.epochs_param if entry is not None else None


def is_network(learner) -> bool:
    """Whether ``learner`` is a named learner that trains torch networks (``nn``); False for an object or
    another name."""
    entry = LEARNER_REGISTRY.get(learner) if isinstance(learner, str) else None
    return entry is not None and entry.networks


def is_staged(learner) -> bool:
    """Whether ``learner`` is a named learner with its own early-stopping split and a loss per stage (``gb``)."""
    entry = LEARNER_REGISTRY.get(learner) if isinstance(learner, str) else None
    return entry is not None and entry.staged


LEARNER_REGISTRY: dict[str, Learner] = {entry.name: entry for entry in (
    Learner("nn", "neural network", "nn", "max_epochs", networks=True, seconds_per_1000=6.0),
    Learner("rf", "random forest", "boost"),
    Learner("gb", "gradient boosting", "boost", "max_iter", staged=True),
    Learner("linear", "linear", "linear", seconds_per_1000=0.05),
)}

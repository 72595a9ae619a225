"""The two nuisance interfaces and what they share.

A nuisance learner fits one model per training set ("fold model"): K of them for K-fold
cross-fitting, one for CE-DML-CMR and the naive plug-in. ``fit`` receives the full arrays and
the list of training-row index arrays, and must only read the rows it is given for each model;
fold model k is then asked only about the rows of fold k, which it never saw.

* :class:`OutcomeLearner` learns s(c) = E[Y | C = c]; ``predict(k, C)`` uses fold model k.
* :class:`ConditionalSampler` learns the distribution of the modelled inputs of f given C;
  ``sample(k, C, n_draws, rng)`` returns draws of shape (rows, n_draws, modelled dims).

Both are public: an instance of a subclass can be passed as ``outcome_learner`` / ``sampler``
(or ``learner``) of the DML-CMR estimators, e.g. an "oracle" that returns the true E[Y | C] and
draws from the true conditional distribution. C arrives in the order of the data's conditioning
columns (``CausalData.cmr().conditioning_names``), as raw values (no standardization, no one-hot
encoding); X in the order of its modelled columns (``modelled_names``). ``monitor`` (a
:class:`dmlcore.progress.Monitor`) takes ``loss(name, k, epoch, train, val)`` reports (optional)
and ``check()`` calls, which cancel a fit the user stopped. Each fit works on its own copy of the
object (the estimators deep-copy it), so fold models never share state across fits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from dmlcore.errors import DMLCoreError


class OutcomeLearner(ABC):
    """s(c) = E[Y | C = c], one fold model per training set."""

    name = "base"

    @abstractmethod
    def fit(self, C: np.ndarray, y: np.ndarray, train_sets: list[np.ndarray], monitor) -> "OutcomeLearner":
        """Fit fold model k on the rows ``train_sets[k]`` of C (n, d) and y (n,) only; return self."""

    @abstractmethod
    def predict(self, k: int, C: np.ndarray) -> np.ndarray:
        """Fold model k's E[Y | C] at the rows of C: shape (rows,)."""


class ConditionalSampler(ABC):
    """The conditional distribution of f's modelled inputs X given C, one fold model per training set."""

    name = "base"

    @abstractmethod
    def fit(self, C: np.ndarray, X: np.ndarray, train_sets: list[np.ndarray], monitor) -> "ConditionalSampler":
        """Fit fold model k on the rows ``train_sets[k]`` of C (n, d) and X (n, p) only; return self."""

    @abstractmethod
    def sample(self, k: int, C: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """``n_draws`` draws of X given each row of C from fold model k: shape (rows, n_draws, p)."""


def validation_split(rows: np.ndarray, fraction: float, rng: np.random.Generator):
    """Split training rows into (train, validation); validation never leaves the training set."""
    rows = np.asarray(rows)
    n_val = max(1, int(round(fraction * len(rows))))
    perm = rng.permutation(len(rows))
    return np.sort(rows[perm[n_val:]]), np.sort(rows[perm[:n_val]])


class Scaler:
    """Mean/std standardization fitted on given rows (constant columns get std 1)."""

    def __init__(self, values: np.ndarray):
        values = np.asarray(values, dtype=float)
        self.mean = values.mean(axis=0)
        std = values.std(axis=0)
        self.std = np.where(std > 1e-12, std, 1.0)

    def transform(self, values):
        return (values - self.mean) / self.std

    def inverse(self, values):
        return values * self.std + self.mean


def check_positive(name: str, value, integer: bool = False, allow_zero: bool = False) -> None:
    """Raise a DMLCoreError unless ``value`` is a positive (integer) number."""
    ok_type = isinstance(value, (int, np.integer)) if integer else isinstance(value, (int, float, np.number))
    if isinstance(value, bool) or not ok_type or not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        kind = "integer" if integer else "number"
        raise DMLCoreError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} {kind}; got {value!r}.")


def merge_params(params: dict | None, defaults: dict, what: str) -> dict:
    """``defaults`` updated by ``params``; a DMLCoreError naming any key ``what`` does not know."""
    if params is not None and not isinstance(params, dict):
        raise DMLCoreError(f"The {what} settings must be a dict; got {type(params).__name__}.")
    unknown = sorted(set(params or {}) - set(defaults), key=str)
    if unknown:
        known = ", ".join(sorted(defaults)) or "none"
        raise DMLCoreError(f"Unknown {what} setting(s) {', '.join(map(repr, unknown))}; known: {known}.")
    return {**defaults, **(params or {})}


def check_fraction(name: str, value, *, allow_zero: bool = False, allow_one: bool = True) -> None:
    """Raise a DMLCoreError unless ``value`` is a number in (0, 1] (ends as allowed)."""
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or value > 1 or (value == 0 and not allow_zero) or (value == 1 and not allow_one):
        lo, hi = "[0" if allow_zero else "(0", "1]" if allow_one else "1)"
        raise DMLCoreError(f"{name} must be a number in {lo}, {hi}; got {value!r}.")


def check_hidden(hidden) -> None:
    """Raise a DMLCoreError unless ``hidden`` is a non-empty sequence of positive integer widths."""
    try:
        widths = list(hidden)
    except TypeError:
        widths = []
    if not widths or any(isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1 for w in widths):
        raise DMLCoreError(f"hidden must be a non-empty list of positive layer widths, like (128, 64, 32); "
                           f"got {hidden!r}.")

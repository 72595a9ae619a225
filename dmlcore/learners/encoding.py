"""One-hot encoding of categorical columns for the learners that need it (networks, linear models).

Trees split on category codes directly; networks and linear models would read a code as a
number (type 7 "more" than type 1), so they see one 0/1 column per level instead. The encoded
columns replace the codes at the end of the feature axis; :meth:`OneHot.position` maps an
old column position (an image pixel, say) to its new one.
"""

from __future__ import annotations

import numpy as np

from dmlcore.errors import DMLCoreError
from dmlcore.learners.base import ConditionalSampler, OutcomeLearner

ENCODED_LEARNERS = ("nn", "linear")   # learners and second stages that get one-hot columns
MATCH_TOL = 1e-6                      # a value within this of a level is that level


class OneHot:
    """Replace the columns ``levels`` (position -> sorted levels) of a (..., width) array."""

    def __init__(self, levels: dict[int, np.ndarray], width: int, names: list[str] | None = None):
        self.levels = {int(j): np.asarray(v, dtype=float) for j, v in sorted(levels.items())}
        self.width = int(width)
        self.names = list(names) if names is not None else [f"column {j}" for j in range(width)]
        self.kept = [j for j in range(self.width) if j not in self.levels]

    @property
    def active(self) -> bool:
        return bool(self.levels)

    @property
    def encoded_width(self) -> int:
        return len(self.kept) + sum(len(v) for v in self.levels.values())

    def position(self, j: int) -> int:
        """New position of the (non-categorical) column that was at ``j``."""
        return self.kept.index(j)

    def transform(self, values: np.ndarray) -> np.ndarray:
        """(..., width) -> (..., encoded_width); an unseen level raises DMLCoreError."""
        if not self.active:
            return values
        values = np.asarray(values)
        if values.shape[-1] != self.width:
            raise DMLCoreError(f"expected {self.width} columns ({', '.join(self.names)}); got {values.shape[-1]}.")
        dtype = values.dtype if np.issubdtype(values.dtype, np.floating) else np.float64
        parts = [values[..., self.kept].astype(dtype, copy=False)]
        for j, levels in self.levels.items():
            column = values[..., j]
            hits = np.abs(column[..., None] - levels) < MATCH_TOL
            unseen = ~hits.any(axis=-1)
            if unseen.any():
                bad = float(column[unseen].ravel()[0])
                raise DMLCoreError(f"Categorical column '{self.names[j]}' has the value {bad:g}, a level not seen "
                                   f"in training (levels: {', '.join(f'{v:g}' for v in levels[:10])}). "
                                   f"Predict only at levels present in the data.")
            parts.append(hits.astype(dtype))
        return np.concatenate(parts, axis=-1)


def encoder_for(data, columns: list[str], learner) -> OneHot | None:
    """The one-hot encoder of ``columns`` for ``learner``, or None when it needs none.

    Named learners: ``nn`` and ``linear`` (and those second stages) get one-hot columns, trees
    the codes. A scikit-learn regressor object gets one-hot columns (it may be linear); a nuisance
    object with the per-fold interface (``predict(k, C)`` / ``sample(k, C, ...)``) gets the raw
    columns, as the data hold them (an :class:`~dmlcore.learners.base.OutcomeLearner` or
    :class:`~dmlcore.learners.base.ConditionalSampler`).
    """
    if isinstance(learner, str):
        if learner not in ENCODED_LEARNERS:
            return None
    elif isinstance(learner, (OutcomeLearner, ConditionalSampler)):
        return None
    levels = data.categorical_levels(columns)
    return OneHot(levels, len(columns), columns) if levels else None


def encode_image_spec(image, encoder: OneHot | None):
    """An image spec (pixel positions, shape) with positions moved to the encoded layout."""
    if image is None or encoder is None:
        return image
    positions, shape = image
    return [encoder.position(j) for j in positions], shape


class EncodedStage:
    """A second stage f that sees one-hot columns in place of category codes."""

    def __init__(self, stage, encoder: OneHot):
        self.stage = stage
        self.encoder = encoder

    def fit(self, targets, draws, inputs, monitor, **extra):
        self.stage.fit(targets, self.encoder.transform(draws), self.encoder.transform(inputs), monitor, **extra)
        return self

    def predict(self, X):
        return self.stage.predict(self.encoder.transform(X))

    def score_per_row(self, targets, draws):
        return self.stage.score_per_row(targets, self.encoder.transform(draws))

    def __getattr__(self, name):
        if name in ("stage", "encoder"):  # not set yet (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self.stage, name)


class Encoded:
    """A nuisance learner that sees one-hot columns in place of category codes (``encoder`` None: as is)."""

    def __init__(self, learner, encoder):
        self.learner, self.encoder = learner, encoder

    def _c(self, C):
        return C if self.encoder is None else self.encoder.transform(C)

    def fit(self, C, target, train_sets, monitor, given=None):
        """Fit the learner; ``given`` (an earlier fit, wrapped alike, and how many of its leading fold models to
        take) is handed on to a learner that ``reuses_folds`` (:func:`dmlcore.learners.tabular.same_leading_sets`)."""
        if given is not None and getattr(self.learner, "reuses_folds", False):
            self.learner.fit(self._c(C), target, train_sets, monitor, given=(given[0].learner, given[1]))
        else:
            self.learner.fit(self._c(C), target, train_sets, monitor)
        return self

    def predict(self, k, C):
        return self.learner.predict(k, self._c(C))

    def sample(self, k, C, n_draws, rng):
        return self.learner.sample(k, self._c(C), n_draws, rng)

    def __getattr__(self, name):  # the fitted learner's own attributes (models_, histories, ...)
        if name in ("learner", "encoder"):
            raise AttributeError(name)
        return getattr(self.learner, name)


def image_spec(data, names: list[str]):
    """(positions of the image columns in ``names``, image shape), or None without images."""
    if not data.image_columns or data.image_shape is None or not set(data.image_columns) <= set(names):
        return None
    return [names.index(c) for c in data.image_columns], tuple(data.image_shape)

"""scikit-learn nuisances: random forests (``rf``), gradient boosting (``gb``) and ``linear``.

s(c) is a regression of Y on C. The conditional distribution of the modelled inputs given C
is represented as *conditional mean plus out-of-sample residuals*: a regression m(c) of each
modelled column on C, fitted on 75 % of the training rows, gives residuals on the other 25 %;
m is then refitted on all training rows, and a draw for row c is m(c) + r with r a residual
vector picked at random from that pool. This assumes the noise of the treatment around its
conditional mean does not depend on c (homoskedastic errors); the residuals are out of
sample so that an overfitted m does not shrink them.

Each fold model sees only its own training rows. Losses are on the standardized scale:
gradient boosting reports train and validation loss per boosting stage (its own early-stopping
split of the training rows), forests and linear models report them once, at the end.

``kind`` is ``rf``, ``gb``, ``linear``, or any scikit-learn regressor (an object with ``fit(X, y)``
and ``predict(X)``, e.g. a tuned ``HistGradientBoostingRegressor`` or a ``Pipeline``). A regressor
object is cloned (``sklearn.base.clone``) for every model, so fold models share no state; it sees
the same standardized columns, and is fitted exactly as ``rf`` and ``linear`` are: the outcome
model on 90 % of a fold's training rows for the reported validation loss, then again on all of
them; the sampler's mean on 75 % (residuals on the other 25 %), then again on all. Its own
settings stay as the user set them (``nuisance_params`` and ``epochs`` apply to named learners).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import Ridge

from dmlcore.errors import DMLCoreError
from dmlcore.learners.base import (ConditionalSampler, OutcomeLearner, Scaler, check_fraction, check_positive,
                                   merge_params, validation_split)
from dmlcore.learners.registry import is_staged
from dmlcore.stats.resample import SEED

DEFAULTS = {
    "gb": dict(learning_rate=0.1, max_iter=500, max_leaf_nodes=31, min_samples_leaf=20,
               l2_regularization=0.0, n_iter_no_change=20, validation_fraction=0.1),
    "rf": dict(n_estimators=200, min_samples_leaf=5, max_features=1.0, n_jobs=-1),
    "linear": dict(alpha=1e-6),
}


# (setting, integer?, allow zero?) of the positive numbers, and the fractions in (0, 1]
_POSITIVE = {"gb": [("learning_rate", False, False), ("max_iter", True, False), ("max_leaf_nodes", True, False),
                    ("min_samples_leaf", True, False), ("l2_regularization", False, True),
                    ("n_iter_no_change", True, False)],
             "rf": [("n_estimators", True, False), ("min_samples_leaf", True, False)],
             "linear": [("alpha", False, True)]}
_FRACTIONS = {"gb": ["validation_fraction"], "rf": ["max_features"], "linear": []}
# how each named learner's regressor is made from its seed and settings (beside DEFAULTS, its settings)
_REGRESSORS = {"gb": lambda seed, p: HistGradientBoostingRegressor(early_stopping=True, scoring="loss",
                                                                   random_state=seed, **p),
               "rf": lambda seed, p: RandomForestRegressor(random_state=seed, **p),
               "linear": lambda seed, p: Ridge(**p)}


def learner_name(kind) -> str:
    """A learner's name: the string itself, or a regressor object's repr (its changed settings)."""
    return kind if isinstance(kind, str) else repr(kind)


def is_regressor(obj) -> bool:
    """Whether ``obj`` looks like a scikit-learn regressor: callable ``fit`` and ``predict``."""
    return callable(getattr(obj, "fit", None)) and callable(getattr(obj, "predict", None))


def make_regressor(kind, params: dict | None, seed: int):
    """A fresh regressor: the named one with ``params`` and ``seed``, or a clone of a regressor object."""
    if not isinstance(kind, str):
        if params:
            raise DMLCoreError(f"nuisance settings {sorted(params)} apply to the named learners (nn, rf, gb, "
                               f"linear); set them on your regressor {learner_name(kind)} instead.")
        return clone(kind)
    p = merge_params(params, DEFAULTS[kind], f"{kind} nuisance")
    for key, integer, zero in _POSITIVE[kind]:
        check_positive(key, p[key], integer=integer, allow_zero=zero)
    for key in _FRACTIONS[kind]:
        check_fraction(key, p[key], allow_one=key != "validation_fraction")
    if p.get("max_leaf_nodes", 2) < 2:
        raise DMLCoreError(f"max_leaf_nodes must be at least 2; got {p['max_leaf_nodes']!r}.")
    return _REGRESSORS[kind](seed, p)


def _fit_with_history(kind, params, seed, C, y, fit_rows, val_rows, monitor, name, k):
    """Fit one regressor on ``fit_rows`` and report its loss history; returns the model."""
    model = fit_regressor(make_regressor(kind, params, seed), C[fit_rows], y[fit_rows], kind, name)
    if is_staged(kind) and hasattr(model, "train_score_"):
        # scoring="loss": scores are minus half the squared error, on the model's own split
        train, val = -2.0 * model.train_score_, -2.0 * model.validation_score_
        for stage, (a, b) in enumerate(zip(train, val)):
            monitor.loss(name, k, stage, float(a), float(b), of=len(train))
    else:
        train = float(np.mean((model.predict(C[fit_rows]) - y[fit_rows]) ** 2))
        val = float(np.mean((model.predict(C[val_rows]) - y[val_rows]) ** 2)) if len(val_rows) else None
        monitor.loss(name, k, 0, train, val, of=1)
    return model


ROLES = {"s": "outcome model s(c) = E[Y | C]", "g": "conditional mean of the distribution model"}


def fit_regressor(model, X, y, kind, role: str):
    """``model.fit(X, y)``; for a regressor object of the user's, an error becomes one DMLCoreError line
    that names it and says what is expected."""
    if isinstance(kind, str):
        return model.fit(X, y)
    try:
        fitted = model.fit(X, y)
        prediction = np.asarray(fitted.predict(X[:2]), dtype=float)
    except Exception as exc:
        message = " ".join(str(exc).split())[:300]
        raise DMLCoreError(f"The learner {learner_name(kind)} failed as the {ROLES.get(role, role)}: "
                           f"{type(exc).__name__}: {message}. Expected a scikit-learn regressor: fit(X, y) "
                           f"with X a 2-D float array and y 1-D returns the fitted model, and predict(X) "
                           f"returns one number per row.") from None
    if prediction.shape != (min(2, len(X)),):
        raise DMLCoreError(f"The learner {learner_name(kind)} predicts an array of shape {prediction.shape} "
                           f"for {min(2, len(X))} rows; a regressor must return one number per row.")
    return fitted


def same_leading_sets(before, train_sets) -> int:
    """How many leading training sets ``before`` and ``train_sets`` share (the same rows in the same place):
    the fold models of a fit on ``before`` that a fit of the same learner on ``train_sets`` may take as they
    are (``fit(..., given=(fitted, count))``). Each fold model of the tabular learners depends only on its own
    training rows, the seed and the random draws of the folds before it (replayed), so a taken fold model is
    the one the fit would make."""
    same = 0
    for a, b in zip(before, train_sets):
        if len(a) != len(b) or not np.array_equal(a, b):
            break
        same += 1
    return same


class TabularOutcome(OutcomeLearner):
    """s(c) = E[Y | C] by a scikit-learn regressor, one per training set."""

    reuses_folds = True     # fit(..., given=(fitted, count)) takes an earlier fit's leading fold models

    def __init__(self, kind, params: dict | None = None, seed: int = SEED):
        self.kind = kind
        self.name = learner_name(kind)
        self.params = params
        self.seed = seed

    def fit(self, C, y, train_sets, monitor, given=None):
        """Fit a model per training set. ``given`` = (an earlier fit of this learner with the same settings and
        seed, count): its first ``count`` fold models are taken as they are, their training sets being the first
        ``count`` of these (:func:`same_leading_sets`; auto's pilot fits); their losses are not reported again
        (the caller holds them)."""
        rng = np.random.default_rng(self.seed)
        given, reuse = given if given is not None else (None, 0)
        self.models_, self.scales_ = [], []
        for k, rows in enumerate(train_sets):
            if k < reuse:     # the same model this loop would fit: its random draws replayed, the fit taken
                if not is_staged(self.kind):
                    validation_split(rows, 0.1, rng)
                self.models_.append(given.models_[k])
                self.scales_.append(given.scales_[k])
                monitor.check()
                continue
            cs, ys = Scaler(C[rows]), Scaler(y[rows])
            Cs, ysd = cs.transform(C), ys.transform(y)
            if is_staged(self.kind):  # boosting holds out its own validation split
                fit_rows, val_rows = rows, rows[:0]
            else:
                fit_rows, val_rows = validation_split(rows, 0.1, rng)
            model = _fit_with_history(self.kind, self.params, self.seed, Cs, ysd, fit_rows, val_rows,
                                      monitor, "s", k)
            if len(val_rows):  # the held-out rows were only for the report: refit on all
                model = fit_regressor(make_regressor(self.kind, self.params, self.seed), Cs[rows], ysd[rows],
                                      self.kind, "s")
            self.models_.append(model)
            self.scales_.append((cs, ys))
            monitor.check()
        return self

    def predict(self, k, C):
        cs, ys = self.scales_[k]
        return ys.inverse(self.models_[k].predict(cs.transform(C)))


class ResidualSampler(ConditionalSampler):
    """Draws m(c) + r: a conditional-mean regressor plus a pool of out-of-sample residuals."""

    reuses_folds = True     # fit(..., given=(fitted, count)) takes an earlier fit's leading fold models

    def __init__(self, kind, params: dict | None = None, seed: int = SEED, pool_fraction: float = 0.25):
        self.kind = kind
        self.name = learner_name(kind)
        self.params = params
        self.seed = seed
        self.pool_fraction = pool_fraction

    def fit(self, C, X, train_sets, monitor, given=None):
        """Fit a mean model and a residual pool per training set; ``given`` as in :meth:`TabularOutcome.fit`."""
        rng = np.random.default_rng(self.seed + 1)
        given, reuse = given if given is not None else (None, 0)
        self.models_, self.pools_, self.scales_ = [], [], []
        for k, rows in enumerate(train_sets):
            if k < reuse:     # the same models this loop would fit: the pool's split replayed, the fits taken
                validation_split(rows, self.pool_fraction, rng)
                self.models_.append(given.models_[k])
                self.pools_.append(given.pools_[k])
                self.scales_.append(given.scales_[k])
                monitor.check()
                continue
            cs, xs = Scaler(C[rows]), Scaler(X[rows])
            Cs, Xs = cs.transform(C), xs.transform(X)
            fit_rows, pool_rows = validation_split(rows, self.pool_fraction, rng)
            residuals = np.empty((len(pool_rows), X.shape[1]))
            models = []
            for j in range(X.shape[1]):
                first = _fit_with_history(self.kind, self.params, self.seed, Cs, Xs[:, j], fit_rows,
                                          pool_rows, monitor if j == 0 else _Silent(monitor), "g", k)
                residuals[:, j] = Xs[pool_rows, j] - first.predict(Cs[pool_rows])
                models.append(fit_regressor(make_regressor(self.kind, self.params, self.seed), Cs[rows], Xs[rows, j],
                                            self.kind, "g"))
            self.models_.append(models)
            self.pools_.append(residuals)
            self.scales_.append((cs, xs))
            monitor.check()
        return self

    def sample(self, k, C, n_draws, rng):
        cs, xs = self.scales_[k]
        Cs = cs.transform(C)
        mean = np.column_stack([m.predict(Cs) for m in self.models_[k]])
        pool = self.pools_[k]
        picks = rng.integers(0, len(pool), size=(len(C), n_draws))
        return xs.inverse(mean[:, None, :] + pool[picks])


class _Silent:
    """A monitor stand-in that records nothing (losses of extra modelled columns)."""

    def __init__(self, monitor):
        self.check = monitor.check

    def loss(self, *args, **kwargs):
        pass

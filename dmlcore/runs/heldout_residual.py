"""A held-out residual that needs no truth: how far f-hat is from E[Y - f(X) | C] = 0.

Every method targets the conditional moment restriction E[Y - f(X) | C] = 0, so the size of
E[Y - f-hat(X) | C] on rows the fit never saw measures how well f-hat meets it -- on real data,
where no true f is known to score against. :func:`heldout_score` splits the rows into K folds
(HELDOUT_FOLDS); for each fold it refits the method on the other folds and computes the
structural residual r = y - f-hat(x) on the fold's rows. The projection g(c) = E[r | C = c] is
estimated on those rows by a ridge regression on a spline basis of C (tensor product when it
fits, else additive, as Sieve 2SLS), cross-fitted over INNER parts of the fold, and the fold's
score is

    mean_i r_i * g_-(i)(c_i),    g_-(i) fitted without row i's part,

which estimates E[g(C)^2] (the projected residual) without the upward bias of squaring a noisy
fit. It is 0 for a function that satisfies the restriction and can come out slightly negative
by chance; lower is better. ``relative`` divides it by Var(Y). The refits use the fold's other
rows only, so the score describes the method at (K - 1)/K of the data. The K folds and the INNER
parts are the resampler's ``"heldout"`` and ``"projection"`` folds (:mod:`dmlcore.stats.resample`).

What it can and cannot tell: it ranks fits by how well they solve the restriction on this
data, never by their distance to the true f (which can be far even when the projected
residual is small, under a weak instrument); docs/coverage.md measures how often its ranking
agrees with the true MSE's in simulations.
"""

from __future__ import annotations

import weakref

import numpy as np

from dmlcore.executors import get_executor
from dmlcore.stats import resample
from dmlcore.stats.clusters import groups_of, mean_se
from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError, FitDiverged
from dmlcore.estimators import for_estimator, make_estimator
from dmlcore.estimators.settings import DEFAULTS, as_settings
from dmlcore.estimators.splines import cross_fitted_projection

HELDOUT_FOLDS = 2
INNER = 5
KNOTS = 6
RIDGES = (1e-6, 1e-4, 1e-2, 1.0)
MAX_LEVELS = 10


def check_folds(folds) -> int:
    """``folds`` as an int of at least 2; a DMLCoreError otherwise."""
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise DMLCoreError(f"The held-out residual needs at least 2 folds (2 is the default; 0 turns it off); "
                           f"got {folds!r}.")
    return int(folds)


def heldout_score(data: CausalData, method: str, settings, folds: int = HELDOUT_FOLDS, *,
                  seed: int = DEFAULTS.seed, callback=None, should_stop=None, on_fold=None, started=None) -> dict:
    """The held-out projected residual of ``method`` (module notes).

    ``settings`` (a FitSettings, or a dict of settings by name) make the estimator; ``callback`` gets each refit's events with
    ``progress`` over all folds; ``should_stop()`` cancels; ``on_fold(held, estimator)``, when
    given, gets each fold's held-out rows and the refit that never saw them (the debiased effect
    reuses them); ``started`` (:func:`start_refits`) gives refits already running in workers. Returns {"score", "relative", "std_error", "relative_std_error", "folds":
    [{"fold", "rows", "score"}], "k", "what"}: ``relative`` and its standard error are divided
    by Var(Y); the standard error is that of the mean over rows of r_i * g(c_i) (from cluster sums
    with a ``cluster`` in ``settings``).
    """
    folds = check_folds(folds)
    _check_tabular(data, "The held-out residual")
    n = len(data.table)
    if n < 20 * folds:
        raise DMLCoreError(f"The held-out residual with {folds} folds needs at least {20 * folds} rows; "
                           f"the data has {n}.")
    y = data.table[data.outcome].to_numpy(dtype=float)
    products, entries = np.empty(n), []
    for k, held, estimator in fold_refits(data, method, settings, folds, seed=seed, callback=callback,
                                          should_stop=should_stop, started=started):
        if on_fold is not None:
            on_fold(held, estimator)
        products[held] = _residual_products(estimator, data.subset(held), seed)
        entries.append({"fold": k, "rows": int(len(held)), "score": float(products[held].mean())})
    groups = groups_of(data.table, as_settings(settings).cluster)      # its standard error from cluster sums
    score, se, var = float(products.mean()), mean_se(products, groups), float(np.var(y))
    return {"score": score, "relative": score / var, "std_error": se, "relative_std_error": se / var,
            "folds": entries, "k": folds,
            "what": (f"held-out projected residual: mean of r x E-hat[r | C] over rows the fit never saw "
                     f"({folds} folds), r = Y - f-hat(X); 0 when f-hat meets E[Y - f(X) | C] = 0, lower is better")}


def fold_refits(data: CausalData, method: str, settings, folds: int, *, seed: int = DEFAULTS.seed, callback=None,
                should_stop=None, label: str = "held-out residual", started=None):
    """Yield (k, held-out rows, the method refitted on the other rows) for each of ``folds``
    random folds (the held-out residual's split; with a ``cluster`` in ``settings``, each
    cluster in one fold); ``callback`` gets the refits' events with ``progress`` over all folds,
    their stages named after ``label``. ``started`` (:func:`start_refits`, holding these folds)
    yields the refits its workers fitted instead, in the same order and with the same numbers."""
    if started is not None and started.has(folds):
        yield from started.take(folds, callback=callback, should_stop=should_stop, label=label)
        return
    settings = as_settings(settings)
    for k, (held, train) in enumerate(fold_split(data, folds, seed, settings.cluster)):
        report = None if callback is None else (lambda event, k=k: callback(_in_fold(event, k, folds, label)))
        estimator = make_estimator(method, for_estimator(settings, method), seed=seed)
        estimator.fit(data.subset(train), callback=report, should_stop=should_stop)
        yield k, held, estimator


def start_refits(data: CausalData, method: str, settings, fold_counts, *, seed: int = DEFAULTS.seed):
    """The refits of :func:`fold_refits` for each count in ``fold_counts``, started now on ``settings``'
    executor (``executor``, ``jobs`` workers, ``address``) so that they run beside the caller's own fit;
    None when that executor runs in this process (local, 1 job), for image data, or with nothing to refit.
    Each refit is the one :func:`fold_refits` makes here (same split, settings and seed; its workers run
    it with the executors' threads), so the numbers do not depend on where it ran."""
    settings = as_settings(settings)
    counts = sorted({int(c) for c in fold_counts if c})
    if not counts or data.image_columns or (settings.executor == "local" and settings.jobs == 1):
        return None
    return StartedRefits(data, method, settings, counts, seed)


class StartedRefits:
    """Fold refits running on an executor's workers (:func:`start_refits`); ``take`` yields one
    count's refits in fold order as they finish, ``close`` stops the workers (also when dropped)."""

    def __init__(self, data: CausalData, method: str, settings, counts: list[int], seed: int):
        kwargs = for_estimator(settings, method)
        self.keys, items = [], []
        for folds in counts:
            for k, (held, train) in enumerate(fold_split(data, folds, seed, settings.cluster)):
                self.keys.append((folds, k, held))
                items.append({"data": data.subset(train), "method": method, "kwargs": kwargs, "seed": seed})
        self._pool = get_executor(settings.executor, settings.jobs, settings.address)
        self._close = weakref.finalize(self, self._pool.close)
        self._should_stop = None
        self._results = self._pool.start(_refit, items, should_stop=lambda: bool(self._should_stop and
                                                                                 self._should_stop()))
        self._ready: dict = {}

    def has(self, folds: int) -> bool:
        return any(key[0] == folds for key in self.keys)

    def take(self, folds: int, *, callback=None, should_stop=None, label: str = "held-out residual"):
        self._should_stop = should_stop
        wanted = [i for i, key in enumerate(self.keys) if key[0] == folds]
        for done, i in enumerate(wanted, start=1):
            while i not in self._ready:
                try:
                    index, result = next(self._results)
                except BaseException:      # cancelled (FitCancelled), or the executor failed: stop the workers
                    self.close()
                    raise
                self._ready[index] = result
            result = self._ready.pop(i)
            if isinstance(result, BaseException):
                if not isinstance(result, (DMLCoreError, FitDiverged)):   # a run keeps its other refits after these
                    self.close()
                raise result
            if callback is not None:
                callback({"type": "stage", "stage": f"{label}: {done} of {folds} refits done (worker processes)",
                          "fold": None, "progress": done / folds})
            _, k, held = self.keys[i]
            yield k, held, result

    def close(self) -> None:
        self._close()


def _refit(item: dict):
    """One fold refit (picklable): the method fitted on the fold's other rows."""
    estimator = make_estimator(item["method"], item["kwargs"], seed=item["seed"])
    return estimator.fit(item["data"])


def fold_split(data: CausalData, folds: int, seed: int = DEFAULTS.seed, cluster: str | None = None) -> list[tuple]:
    """(held-out rows, the other rows) of each of ``folds`` random folds: the held-out residual's
    split, shared by the debiased effect's refits; each cluster of the column ``cluster`` whole: the
    resampler's ``"heldout"`` splits (:mod:`dmlcore.stats.resample`)."""
    return resample.splits(len(data.table), folds, seed, "heldout", groups_of(data.table, cluster))


def projected_residual(estimator, data: CausalData, seed: int = DEFAULTS.seed) -> dict:
    """The projected residual of a fitted ``estimator`` on ``data`` it never saw (a validation set).

    Returns {"score", "relative", "std_error"}: the mean of r_i * E-hat_-(i)[r | C = c_i] over
    the rows, as one fold of :func:`heldout_score`; lower is better, 0 meets the restriction.
    Used to choose between settings of a method on validation data, never on the test grid.
    """
    _check_tabular(data, "The projected residual")
    products = _residual_products(estimator, data, seed)
    var = float(np.var(data.table[data.outcome].to_numpy(dtype=float)))
    score, se = float(products.mean()), float(products.std(ddof=1) / np.sqrt(len(products)))
    return {"score": score, "relative": score / var, "std_error": se}


def _check_tabular(data: CausalData, what: str) -> None:
    if data.image_columns:
        raise DMLCoreError(f"{what} regresses residuals on a spline basis of the conditioning columns, which "
                           "cannot take image pixels; it is not available for image data.")


def _residual_products(estimator, data: CausalData, seed: int) -> np.ndarray:
    """r_i * g_-(i)(c_i) for each row of ``data``, r = y - f-hat(x) (module notes)."""
    y = data.table[data.outcome].to_numpy(dtype=float)
    c = data.table[data.conditioning_columns].to_numpy(dtype=float)
    excluded = [name for name in data.conditioning_columns if name not in data.input_columns]
    r = y - np.asarray(estimator.predict(data.table[data.input_columns]), dtype=float).ravel()
    return r * _cross_fitted_projection(c, r, data.conditioning_columns, excluded, seed)


def _in_fold(event: dict, k: int, folds: int, label: str = "held-out residual") -> dict:
    """A refit's progress event as part of the refits named ``label``: progress over all folds, stages named."""
    out = {**event, "progress": (k + event.get("progress", 0.0)) / folds}
    if event.get("type") == "stage":
        out["stage"] = f"{label}, fold {k + 1} of {folds}: {event['stage']}"
    return out


def _cross_fitted_projection(c, r, names, excluded, seed):
    """g(c_i) = E-hat[r | C = c_i], each row's value fitted on the other INNER parts; the ridge
    is the RIDGES value with the smallest cross-fitted squared error (:func:`dmlcore.estimators.splines.
    cross_fitted_projection`, shared with DML-CMR's target choice of nuisances)."""
    return cross_fitted_projection(c, r, names, excluded, seed, knots=KNOTS, max_levels=MAX_LEVELS,
                                   ridges=RIDGES, inner=INNER, what="The held-out residual")

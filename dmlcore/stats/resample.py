"""One resampler: every split of the rows a run makes, from one seed rule.

A split is drawn for a *purpose*, a named stream of :data:`STREAMS`, and a seed (the run's):

* :func:`fold_labels` / :func:`folds` / :func:`splits`: each row's fold, the rows of each fold
  (sorted), or (held-out rows, the other rows) of each fold -- the nuisances' cross-fitting folds,
  the held-out residual's refits (shared by the debiased effect's refits), the representer's folds,
  the held-out residual's inner projection, the ``"auto"`` learner's inner folds, the nonparametric
  first stage's folds;
* :func:`draws`: the row indices of a resample with replacement (the bootstrap's refits);
* :func:`subsample`: rows drawn without replacement (the first stage's cap on rows).

The seed rule: a purpose with key (k, ...) draws from ``numpy.random.default_rng([seed, k, ...,
index])``, so no two purposes of :data:`STREAMS` share random numbers and the seed given fixes them
all; ``index`` numbers the draws of one purpose (the bootstrap's refit b). The keys are the constants
each caller used before this module existed, so every split is the one it was, bit for bit
(tests/test_resample.py recomputes them from the old code). One stream is the exception, kept for that reason: the first
stage's folds are scikit-learn's ``KFold(shuffle=True, random_state=seed)``, a legacy
``numpy.random.RandomState(seed)`` permutation.

Two ways to turn a permutation into K folds, per stream (``assign``): ``"parts"`` cuts the permuted
rows into K consecutive parts of near-equal size (the first n mod K one row longer, as
``numpy.array_split`` and ``KFold`` do); ``"modulo"`` gives row i the fold perm[i] mod K.

Clusters (``groups``, the rows' cluster numbers; :func:`dmlcore.stats.clusters.groups_of`) are an
option of the same functions, not another path: folds keep every cluster whole -- the clusters are
taken in an order drawn from the purpose's stream and each goes to the fold with the fewest rows so
far, as DoubleML's cluster data and scikit-learn's GroupKFold keep groups whole -- and a draw
takes G clusters with replacement, each with all its rows.

Splits that are a learner's own (a network's validation rows and minibatches, the spline second
stage's and Sieve 2SLS's penalty-validation folds, the peers' sample splits) stay with the learner:
they are part of how that learner fits, seeded from the seed it is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlcore.errors import DMLCoreError


@dataclass(frozen=True)
class Stream:
    """One purpose's random numbers: ``key`` follows the seed in ``default_rng([seed, *key, index])``;
    ``assign`` how a permutation becomes folds (``"parts"``, ``"modulo"``), or ``"draws"`` / ``"rows"``
    for resamples with / without replacement; ``legacy``: a ``RandomState(seed)`` instead, and K from 2
    to n (scikit-learn's KFold); ``used_by`` the caller, in words."""

    key: tuple[int, ...]
    assign: str
    used_by: str
    legacy: bool = False


STREAMS: dict[str, Stream] = {
    "crossfit": Stream((7,), "parts", "the nuisances' K folds of the DML-CMR family (estimators.dml.make_folds)"),
    "heldout": Stream((29,), "modulo", "the held-out residual's refits, shared by the debiased effect's refits "
                                       "(runs.heldout_residual.fold_split)"),
    "representer": Stream((43,), "modulo", "the debiased effect's representer folds (inference.debiased_effect)"),
    "projection": Stream((37,), "modulo", "the held-out residual's inner projection of the residual on C "
                                          "(runs.heldout_residual)"),
    "selection": Stream((41,), "parts", "the inner folds of one training set that score the 'auto' learner's "
                                        "candidates (learners.select.inner_folds)"),
    "first-stage": Stream((), "parts", "the nonparametric first stage's folds (inference.first_stage)", legacy=True),
    "first-stage rows": Stream((), "rows", "the rows the nonparametric first stage keeps above its cap "
                                           "(inference.first_stage)"),
    "bootstrap": Stream((31,), "draws", "the bootstrap's resample b of the rows or clusters "
                                        "(runs.average_effect.bootstrap_effect)"),
}
SEED = 0   # the seed setting's default (dmlcore.estimators.settings declares it with this value, for the layers below it)
FOLD_ASSIGN = ("parts", "modulo")


def _stream(purpose: str, kinds: tuple[str, ...], what: str) -> Stream:
    stream = STREAMS.get(purpose)
    if stream is None:
        raise DMLCoreError(f"No resampling purpose {purpose!r}; the purposes are {', '.join(map(repr, STREAMS))} "
                           f"(dmlcore.stats.resample.STREAMS).")
    if stream.assign not in kinds:
        fitting = [name for name, s in STREAMS.items() if s.assign in kinds]
        raise DMLCoreError(f"The resampling purpose {purpose!r} makes {stream.assign}, not {what}; "
                           f"{what} come from {', '.join(map(repr, fitting))}.")
    return stream


def _count(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise DMLCoreError(f"The resampler's {name} must be an integer of at least {least}; got {value!r}.")
    return int(value)


def generator(seed: int, purpose: str, index: int | None = None):
    """The random numbers of ``purpose`` for ``seed`` (and draw ``index``): module notes."""
    seed = _count(seed, "seed", 0)
    stream = _stream(purpose, FOLD_ASSIGN + ("draws", "rows"), "splits")
    if stream.legacy:
        if index is not None:
            raise DMLCoreError(f"The resampling purpose {purpose!r} has one draw per seed; got index {index!r}.")
        return np.random.RandomState(seed)
    return np.random.default_rng([seed, *stream.key] + ([] if index is None else [_count(index, "index", 0)]))


def check_cluster_folds(clusters: int, folds: int) -> None:
    """Refuse, in one line, ``folds`` folds that keep clusters whole over only ``clusters`` clusters."""
    if clusters < folds:
        raise DMLCoreError(f"{folds} folds that keep clusters whole need at least {folds} clusters; the data has "
                           f"{clusters}. Use fewer folds, or a cluster column with more groups.")


def _groups(groups, n: int) -> np.ndarray:
    groups = np.asarray(groups)
    if groups.shape != (n,):
        raise DMLCoreError(f"The rows' cluster numbers (groups) must give one number per row: {n:,} rows, "
                           f"groups of shape {groups.shape}.")
    return groups


def cluster_folds(groups: np.ndarray, folds: int, rng) -> np.ndarray:
    """Each row's fold 0..folds-1, every cluster's rows in one fold: the clusters are taken in the order
    ``rng.permutation`` gives and each goes to the fold with the fewest rows so far, so folds are
    near-equal in rows when clusters are near-equal in size."""
    groups = np.asarray(groups)
    labels, code = np.unique(groups, return_inverse=True)
    check_cluster_folds(len(labels), folds)
    sizes = np.bincount(code)
    fold_of_cluster, load = np.empty(len(labels), dtype=int), np.zeros(folds)
    for c in rng.permutation(len(labels)):
        k = int(np.argmin(load))
        fold_of_cluster[c], load[k] = k, load[k] + sizes[c]
    return fold_of_cluster[code]


def cluster_draw(groups: np.ndarray, rng) -> np.ndarray:
    """Row indices of a resample that draws G clusters with replacement, each with all its rows."""
    _, code = np.unique(groups, return_inverse=True)
    members = np.split(np.argsort(code, kind="stable"), np.cumsum(np.bincount(code))[:-1])
    return np.concatenate([members[c] for c in rng.integers(0, len(members), size=len(members))])


def fold_labels(n: int, k: int, seed: int, purpose: str, groups: np.ndarray | None = None) -> np.ndarray:
    """Each of the ``n`` rows' fold 0..k-1 for ``purpose`` (a key of :data:`STREAMS`) and ``seed``; with
    ``groups`` every cluster's rows in one fold (module notes)."""
    stream = _stream(purpose, FOLD_ASSIGN, "folds")
    n, k = _count(n, "number of rows", 0), _count(k, "number of folds", 1)
    if stream.legacy and not 2 <= k <= n:       # refused as scikit-learn's KFold refuses it
        raise DMLCoreError(f"The {purpose} folds need from 2 to as many folds as rows ({n:,}); got {k}.")
    rng = generator(seed, purpose)
    if groups is not None:
        return cluster_folds(_groups(groups, n), k, rng)
    perm = rng.permutation(n)
    if stream.assign == "modulo":
        return perm % k
    out = np.empty(n, dtype=int)
    for j, part in enumerate(np.array_split(perm, k)):
        out[part] = j
    return out


def folds(n: int, k: int, seed: int, purpose: str, groups: np.ndarray | None = None) -> list[np.ndarray]:
    """The sorted rows of each of the ``k`` folds (:func:`fold_labels`)."""
    fold_of = fold_labels(n, k, seed, purpose, groups)
    return [np.flatnonzero(fold_of == j) for j in range(k)]


def splits(n: int, k: int, seed: int, purpose: str, groups: np.ndarray | None = None) -> list[tuple]:
    """(held-out rows, the other rows) of each of the ``k`` folds (:func:`fold_labels`), both sorted."""
    fold_of = fold_labels(n, k, seed, purpose, groups)
    return [(np.flatnonzero(fold_of == j), np.flatnonzero(fold_of != j)) for j in range(k)]


def draws(n: int, seed: int, purpose: str, index: int | None = None, groups: np.ndarray | None = None) -> np.ndarray:
    """Row indices of a resample with replacement: ``n`` rows, or with ``groups`` as many clusters as the
    data has, each with all its rows; ``index`` numbers the resamples of one seed."""
    _stream(purpose, ("draws",), "draws with replacement")
    n = _count(n, "number of rows", 0)
    rng = generator(seed, purpose, index)
    return rng.integers(0, n, size=n) if groups is None else cluster_draw(_groups(groups, n), rng)


def subsample(n: int, m: int, seed: int, purpose: str) -> np.ndarray:
    """``m`` of the ``n`` rows drawn without replacement, in the order drawn."""
    _stream(purpose, ("rows",), "subsamples")
    n, m = _count(n, "number of rows", 1), _count(m, "subsample size", 1)
    if m > n:
        raise DMLCoreError(f"A subsample of {m:,} rows needs at least as many rows; there are {n:,}.")
    return generator(seed, purpose).choice(n, m, replace=False)
